/* test_fleet.c - the fleet builder, lookups, NVLink domain rules, the summary,
 * host range expansion and the string map under it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fleet.h"
#include "strmap.h"

/* A fleet with one site, fabric and leaf; indices written to the globals-free
 * struct so each test states what it builds on. */
struct base {
	struct fleet f;
	int site, fabric, leaf, h100, gb200, gb300;
};

static int setup_base(void **state)
{
	struct base *b = calloc(1, sizeof(*b));
	assert_non_null(b);
	assert_int_equal(fleet_init(&b->f), SL_OK);
	assert_int_equal(fleet_add_site(&b->f, "fuzhou-a", "cn-east", &b->site, NULL), SL_OK);
	assert_int_equal(fleet_add_fabric(&b->f, b->site, "ib-a", FABRIC_INFINIBAND, 400,
					  &b->fabric, NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&b->f, b->fabric, "leaf-01", &b->leaf, NULL), SL_OK);
	b->h100 = fleet_find_type(&b->f, "hgx-h100-8");
	b->gb200 = fleet_find_type(&b->f, "gb200-nvl72-tray");
	b->gb300 = fleet_find_type(&b->f, "gb300-nvl72-tray");
	assert_true(b->h100 >= 0 && b->gb200 >= 0 && b->gb300 >= 0);
	*state = b;
	return 0;
}

static int teardown_base(void **state)
{
	struct base *b = *state;
	fleet_release(&b->f);
	free(b);
	return 0;
}

static void add_nodes(struct base *b, const char *fmt, int from, int to, int type, int *idx)
{
	char name[64];
	for (int i = from; i <= to; i++) {
		snprintf(name, sizeof(name), fmt, i);
		assert_int_equal(fleet_add_node(&b->f, b->leaf, name, type,
						idx ? &idx[i - from] : NULL, NULL), SL_OK);
	}
}

static void test_init_knows_builtin_types(void **state)
{
	(void)state;
	struct fleet f;
	assert_int_equal(fleet_init(&f), SL_OK);
	assert_int_equal(f.ntypes, topo_builtin_count());
	for (int i = 0; i < topo_builtin_count(); i++) {
		int t = fleet_find_type(&f, topo_builtin_name(i));
		assert_int_equal(t, i);
		assert_string_equal(f.types[t].name, topo_builtin_name(i));
	}
	assert_int_equal(f.nnodes + f.nsites + f.nfabrics + f.nleaves + f.ndomains + f.nowners, 0);
	assert_int_equal(fleet_find_type(&f, "no-such-type"), -1);
	fleet_release(&f);
}

static void test_builder_links_and_lookups(void **state)
{
	struct base *b = *state;
	int site2, fab2, leaf2, n1, n2;
	assert_int_equal(fleet_add_site(&b->f, "beijing-b", "cn-north", &site2, NULL), SL_OK);
	assert_int_equal(fleet_add_fabric(&b->f, site2, "roce-b", FABRIC_ROCE, 200, &fab2, NULL),
			 SL_OK);
	assert_int_equal(fleet_add_leaf(&b->f, fab2, "leaf-01", &leaf2, NULL), SL_OK);
	assert_int_equal(fleet_add_node(&b->f, b->leaf, "fza-h100-001", b->h100, &n1, NULL), SL_OK);
	assert_int_equal(fleet_add_node(&b->f, leaf2, "bjb-h100-001", b->h100, &n2, NULL), SL_OK);

	const struct fleet_node *a = &b->f.nodes[n1], *c = &b->f.nodes[n2];
	assert_int_equal(a->site, b->site);
	assert_int_equal(c->site, site2);
	assert_int_equal(c->leaf, leaf2);
	assert_int_equal(b->f.leaves[leaf2].site, site2);
	assert_int_equal(a->domain, -1);
	assert_int_equal(a->owner, -1);
	assert_false(a->shareable);
	assert_int_equal(fleet_node_type(&b->f, n2)->ngpus, 8);
	assert_string_equal(b->f.sites[site2].region, "cn-north");
	assert_int_equal(b->f.fabrics[fab2].kind, FABRIC_ROCE);
	assert_int_equal(b->f.fabrics[fab2].gbps, 200);

	assert_int_equal(fleet_find_node(&b->f, "bjb-h100-001"), n2);
	assert_int_equal(fleet_find_node(&b->f, "bjb-h100-002"), -1);
	assert_int_equal(fleet_find_site(&b->f, "beijing-b"), site2);
	assert_int_equal(fleet_find_fabric(&b->f, site2, "roce-b"), fab2);
	assert_int_equal(fleet_find_fabric(&b->f, b->site, "roce-b"), -1);
	assert_int_equal(fleet_find_leaf(&b->f, fab2, "leaf-01"), leaf2);
	assert_int_equal(fleet_find_leaf(&b->f, b->fabric, "leaf-01"), b->leaf);
	/* Namespaces are separate: a site name is not a node name. */
	assert_int_equal(fleet_find_node(&b->f, "beijing-b"), -1);
	assert_int_equal(fleet_find_site(&b->f, "fza-h100-001"), -1);
}

enum what { W_SITE, W_FABRIC, W_LEAF, W_NODE, W_TYPE, W_DOMAIN };

static enum sl_err add_named(struct base *b, enum what w, const char *name)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	enum sl_err e = SL_OK;
	switch (w) {
	case W_SITE:
		e = fleet_add_site(&b->f, name, "cn-east", NULL, &d);
		break;
	case W_FABRIC:
		e = fleet_add_fabric(&b->f, b->site, name, FABRIC_ROCE, 100, NULL, &d);
		break;
	case W_LEAF:
		e = fleet_add_leaf(&b->f, b->fabric, name, NULL, &d);
		break;
	case W_NODE:
		e = fleet_add_node(&b->f, b->leaf, name, b->h100, NULL, &d);
		break;
	case W_TYPE: {
		struct node_type t = b->f.types[b->h100];
		memset(t.name, 0, sizeof(t.name));
		if (name)
			snprintf(t.name, sizeof(t.name), "%s", name);
		e = fleet_add_type(&b->f, &t, NULL, &d);
		break;
	}
	case W_DOMAIN: {
		int n;
		char nn[80];
		snprintf(nn, sizeof(nn), "t-%d", b->f.nnodes);
		assert_int_equal(fleet_add_node(&b->f, b->leaf, nn, b->gb200, &n, NULL), SL_OK);
		e = fleet_add_domain(&b->f, name, &n, 1, NULL, &d);
		break;
	}
	}
	if (e != SL_OK)
		assert_true(d.msg[0] != '\0'); /* every failure explains itself */
	return e;
}

static int fleet_total(const struct fleet *f)
{
	return f->ntypes + f->nsites + f->nfabrics + f->nleaves + f->nnodes + f->ndomains +
	       f->nowners;
}

static void test_duplicate_names(void **state)
{
	struct base *b = *state;
	static const struct {
		enum what w;
		const char *name;
	} cases[] = {
		{W_SITE, "fuzhou-a"}, {W_FABRIC, "ib-a"}, {W_LEAF, "leaf-01"},
		{W_TYPE, "hgx-h100-8"}, {W_NODE, "n1"}, {W_DOMAIN, "dom1"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].w == W_NODE || cases[i].w == W_DOMAIN)
			assert_int_equal(add_named(b, cases[i].w, cases[i].name), SL_OK);
		int before = fleet_total(&b->f);
		assert_int_equal(add_named(b, cases[i].w, cases[i].name), SL_EEXIST);
		/* W_DOMAIN adds its node before failing; nothing else may change. */
		assert_int_equal(fleet_total(&b->f), before + (cases[i].w == W_DOMAIN));
	}
	/* A custom type with a new name is fine and gets the next index. */
	assert_int_equal(add_named(b, W_TYPE, "my-type"), SL_OK);
	assert_int_equal(fleet_find_type(&b->f, "my-type"), b->f.ntypes - 1);
}

static void test_scoped_names(void **state)
{
	struct base *b = *state;
	int site2, fab2;
	/* Fabric names are per site and leaf names per fabric. */
	assert_int_equal(fleet_add_site(&b->f, "s2", "cn-east", &site2, NULL), SL_OK);
	assert_int_equal(fleet_add_fabric(&b->f, site2, "ib-a", FABRIC_INFINIBAND, 400, &fab2, NULL),
			 SL_OK);
	assert_int_equal(fleet_add_leaf(&b->f, fab2, "leaf-01", NULL, NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&b->f, fab2, "leaf-01", NULL, NULL), SL_EEXIST);
}

static void test_bad_names(void **state)
{
	struct base *b = *state;
	char long63[64], long64[65];
	memset(long63, 'a', 63);
	long63[63] = '\0';
	memset(long64, 'b', 64);
	long64[64] = '\0';
	const char *bad[] = {"", "a b", "a/b", "a|b", "n\xc3\xa9", "x\ty", "[1-2]", long64, NULL};
	for (int w = W_SITE; w <= W_DOMAIN; w++) {
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			if (w == W_TYPE && bad[i] == long64)
				continue; /* cannot be stored in a node_type */
			int before = fleet_total(&b->f);
			assert_int_equal(add_named(b, (enum what)w, bad[i]), SL_EINVAL);
			assert_int_equal(fleet_total(&b->f), before + (w == W_DOMAIN));
		}
		assert_int_equal(add_named(b, (enum what)w, long63), SL_OK);
		assert_int_equal(add_named(b, (enum what)w, "A.b_c-9"), SL_OK);
	}
	assert_true(fleet_name_valid("x"));
	assert_false(fleet_name_valid(long64));
	assert_false(fleet_name_valid(NULL));
}

static void test_bad_references(void **state)
{
	struct base *b = *state;
	struct sl_diag d;
	int before = fleet_total(&b->f);
	assert_int_equal(fleet_add_fabric(&b->f, 7, "x", FABRIC_ROCE, 100, NULL, &d), SL_EINVAL);
	assert_int_equal(fleet_add_fabric(&b->f, b->site, "x", FABRIC_ROCE, 0, NULL, &d), SL_EINVAL);
	assert_int_equal(fleet_add_fabric(&b->f, b->site, "x", FABRIC_ROCE, FLEET_MAX_GBPS + 1,
					  NULL, &d), SL_EINVAL);
	assert_int_equal(fleet_add_fabric(&b->f, b->site, "x", (enum fabric_kind)9, 100, NULL, &d),
			 SL_EINVAL);
	assert_int_equal(fleet_add_leaf(&b->f, -1, "x", NULL, &d), SL_EINVAL);
	assert_int_equal(fleet_add_node(&b->f, 3, "x", b->h100, NULL, &d), SL_EINVAL);
	assert_int_equal(fleet_add_node(&b->f, b->leaf, "x", b->f.ntypes, NULL, &d), SL_EINVAL);
	assert_int_equal(fleet_add_site(&b->f, "x", "bad region", NULL, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "region"));
	struct node_type t = b->f.types[b->h100];
	snprintf(t.name, sizeof(t.name), "nogpu");
	t.gpu = NULL;
	assert_int_equal(fleet_add_type(&b->f, &t, NULL, &d), SL_EINVAL);
	t = b->f.types[b->h100];
	snprintf(t.name, sizeof(t.name), "toomany");
	t.ngpus = TOPO_MAX_GPUS + 1;
	assert_int_equal(fleet_add_type(&b->f, &t, NULL, &d), SL_EINVAL);
	assert_int_equal(fleet_total(&b->f), before);
}

static void test_many_nodes_and_node_limit(void **state)
{
	struct base *b = *state;
	char name[32];
	for (int i = 0; i < FLEET_MAX_NODES; i++) {
		snprintf(name, sizeof(name), "n%06d", i);
		int idx;
		if (fleet_add_node(&b->f, b->leaf, name, b->h100, &idx, NULL) != SL_OK || idx != i)
			fail_msg("node %d not added", i);
	}
	struct sl_diag d;
	assert_int_equal(fleet_add_node(&b->f, b->leaf, "one-more", b->h100, NULL, &d), SL_ELIMIT);
	assert_non_null(strstr(d.msg, "200000"));
	assert_int_equal(b->f.nnodes, FLEET_MAX_NODES);
	for (int i = 0; i < FLEET_MAX_NODES; i += 997) {
		snprintf(name, sizeof(name), "n%06d", i);
		assert_int_equal(fleet_find_node(&b->f, name), i);
		assert_string_equal(b->f.nodes[i].name, name);
	}
	assert_int_equal(fleet_find_node(&b->f, "one-more"), -1);
}

/* Sites and node types are bounded too: sites are compared pairwise when
 * summarised (200,000 sites once took a minute in `fleet check`), and a node
 * type costs ~2 KiB in the fleet and ~1.3 MB in a placer from one short line
 * of a fleet file. Past the bound: SL_ELIMIT and nothing added. */
static void test_site_and_type_limits(void **state)
{
	struct base *b = *state;
	char name[32];
	struct sl_diag d;
	for (int i = b->f.nsites; i < FLEET_MAX_SITES; i++) {
		snprintf(name, sizeof(name), "s%05d", i);
		if (fleet_add_site(&b->f, name, name, NULL, NULL) != SL_OK)
			fail_msg("site %d not added", i);
	}
	assert_int_equal(fleet_add_site(&b->f, "one-more", "r", NULL, &d), SL_ELIMIT);
	assert_non_null(strstr(d.msg, "at most 4096 sites"));
	assert_int_equal(b->f.nsites, FLEET_MAX_SITES);
	assert_int_equal(fleet_find_site(&b->f, "one-more"), -1);
	struct fleet_summary sum;
	fleet_summarize(&b->f, &sum);
	assert_int_equal(sum.regions, FLEET_MAX_SITES);

	struct node_type t = b->f.types[b->h100];
	for (int i = b->f.ntypes; i < FLEET_MAX_TYPES; i++) {
		snprintf(t.name, sizeof(t.name), "t%05d", i);
		if (fleet_add_type(&b->f, &t, NULL, NULL) != SL_OK)
			fail_msg("type %d not added", i);
	}
	snprintf(t.name, sizeof(t.name), "one-more");
	assert_int_equal(fleet_add_type(&b->f, &t, NULL, &d), SL_ELIMIT);
	char want[64];
	snprintf(want, sizeof(want), "at most %d node types", FLEET_MAX_TYPES);
	assert_non_null(strstr(d.msg, want));
	assert_int_equal(b->f.ntypes, FLEET_MAX_TYPES);
	assert_int_equal(fleet_find_type(&b->f, "one-more"), -1);
}

static void test_owners(void **state)
{
	struct base *b = *state;
	int a, c, a2;
	assert_int_equal(fleet_find_owner(&b->f, "acme"), -1);
	assert_int_equal(fleet_owner_index(&b->f, "acme", &a, NULL), SL_OK);
	assert_int_equal(fleet_owner_index(&b->f, "beta", &c, NULL), SL_OK);
	assert_int_equal(fleet_owner_index(&b->f, "acme", &a2, NULL), SL_OK);
	assert_int_equal(a, a2);
	assert_int_not_equal(a, c);
	assert_int_equal(b->f.nowners, 2);
	assert_string_equal(b->f.owners[c], "beta");
	assert_int_equal(fleet_find_owner(&b->f, "beta"), c);
	assert_int_equal(fleet_owner_index(&b->f, "no spaces", &a, NULL), SL_EINVAL);
}

static void test_domain_accepts_a_full_rack(void **state)
{
	struct base *b = *state;
	int trays[18], dom;
	add_nodes(b, "r01-t%02d", 1, 18, b->gb200, trays);
	assert_int_equal(fleet_add_domain(&b->f, "r01", trays, 18, &dom, NULL), SL_OK);
	assert_int_equal(b->f.ndomains, 1);
	assert_int_equal(b->f.domains[dom].nnodes, 18);
	assert_memory_equal(b->f.domains[dom].nodes, trays, sizeof(trays));
	for (int i = 0; i < 18; i++)
		assert_int_equal(b->f.nodes[trays[i]].domain, dom);
	assert_int_equal(fleet_find_domain(&b->f, "r01"), dom);
}

static void test_domain_rules(void **state)
{
	struct base *b = *state;
	int g2[19], g3, h, other_site_node, in_dom;
	add_nodes(b, "g2-%02d", 1, 19, b->gb200, g2);
	add_nodes(b, "g3-%02d", 1, 1, b->gb300, &g3);
	add_nodes(b, "h-%02d", 1, 1, b->h100, &h);
	add_nodes(b, "in-%02d", 1, 1, b->gb200, &in_dom);
	int s2, fb2, lf2;
	assert_int_equal(fleet_add_site(&b->f, "other", "cn-east", &s2, NULL), SL_OK);
	assert_int_equal(fleet_add_fabric(&b->f, s2, "ib", FABRIC_INFINIBAND, 400, &fb2, NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&b->f, fb2, "l", &lf2, NULL), SL_OK);
	assert_int_equal(fleet_add_node(&b->f, lf2, "far", b->gb200, &other_site_node, NULL), SL_OK);
	assert_int_equal(fleet_add_domain(&b->f, "taken", &in_dom, 1, NULL, NULL), SL_OK);

	const struct {
		int nodes[3];
		int n;
		enum sl_err want;
		const char *msg;
	} cases[] = {
		{{h}, 1, SL_EINVAL, "multi-node NVLink"},
		{{g2[0], g3}, 2, SL_EINVAL, "one GPU model"},
		{{g2[0], other_site_node}, 2, SL_EINVAL, "one site"},
		{{g2[0], in_dom}, 2, SL_ECONFLICT, "already in NVLink domain 'taken'"},
		{{g2[0], g2[0]}, 2, SL_EINVAL, "listed twice"},
		{{g2[0], -1}, 2, SL_EINVAL, "no node"},
		{{0}, 0, SL_EINVAL, "no nodes"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sl_diag d;
		sl_diag_clear(&d);
		assert_int_equal(fleet_add_domain(&b->f, "d", cases[i].nodes, cases[i].n, NULL, &d),
				 cases[i].want);
		if (!strstr(d.msg, cases[i].msg))
			fail_msg("case %zu: '%s' lacks '%s'", i, d.msg, cases[i].msg);
	}
	/* 19 trays x 4 GPUs = 76 > 72. */
	struct sl_diag d;
	assert_int_equal(fleet_add_domain(&b->f, "d", g2, 19, NULL, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "76 GPUs"));
	/* Nothing was marked by the failures. */
	assert_int_equal(b->f.ndomains, 1);
	for (int i = 0; i < 19; i++)
		assert_int_equal(b->f.nodes[g2[i]].domain, -1);
	assert_int_equal(fleet_add_domain(&b->f, "d", g2, 18, NULL, NULL), SL_OK);
}

static void test_summary(void **state)
{
	struct base *b = *state;
	int s2, fb2, lf2, n, own;
	add_nodes(b, "h-%02d", 1, 3, b->h100, NULL);
	add_nodes(b, "g-%02d", 1, 2, b->gb200, NULL);
	assert_int_equal(fleet_add_site(&b->f, "s2", "cn-east", NULL, NULL), SL_OK);
	assert_int_equal(fleet_add_site(&b->f, "s3", "cn-north", &s2, NULL), SL_OK);
	assert_int_equal(fleet_add_fabric(&b->f, s2, "ib", FABRIC_INFINIBAND, 400, &fb2, NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&b->f, fb2, "l", &lf2, NULL), SL_OK);
	assert_int_equal(fleet_add_node(&b->f, lf2, "x", b->h100, &n, NULL), SL_OK);
	assert_int_equal(fleet_owner_index(&b->f, "acme", &own, NULL), SL_OK);
	b->f.nodes[n].owner = own;
	int gb[2] = {fleet_find_node(&b->f, "g-01"), fleet_find_node(&b->f, "g-02")};
	assert_int_equal(fleet_add_domain(&b->f, "r", gb, 2, NULL, NULL), SL_OK);

	struct fleet_summary s;
	fleet_summarize(&b->f, &s);
	assert_int_equal(s.sites, 3);
	assert_int_equal(s.regions, 2);
	assert_int_equal(s.fabrics, 2);
	assert_int_equal(s.leaves, 2);
	assert_int_equal(s.domains, 1);
	assert_int_equal(s.nodes, 6);
	assert_int_equal(s.gpus, 4 * 8 + 2 * 4);
	assert_int_equal(s.owners, 1);
	assert_int_equal(s.nodes_by_type[b->h100], 4);
	assert_int_equal(s.nodes_by_type[b->gb200], 2);
	int h100_model = -1, gb200_model = -1;
	for (size_t i = 0; i < catalog_gpu_count(); i++) {
		if (catalog_gpu_at(i) == b->f.types[b->h100].gpu)
			h100_model = (int)i;
		if (catalog_gpu_at(i) == b->f.types[b->gb200].gpu)
			gb200_model = (int)i;
	}
	assert_int_equal(s.gpus_by_model[h100_model], 32);
	assert_int_equal(s.gpus_by_model[gb200_model], 8);
}

/* Range expansion. */

struct collect {
	char out[4096];
	int calls, fail_at;
};

static enum sl_err collect_fn(void *arg, const char *name)
{
	struct collect *c = arg;
	if (++c->calls == c->fail_at)
		return SL_EEXIST;
	size_t n = strlen(c->out);
	snprintf(c->out + n, sizeof(c->out) - n, "%s%s", n ? " " : "", name);
	return SL_OK;
}

static void test_range_table(void **state)
{
	(void)state;
	static const struct {
		const char *expr;
		enum sl_err want;
		const char *out; /* names, or a message substring on error */
		int col;
	} cases[] = {
		{"fza-h100-001", SL_OK, "fza-h100-001", 0},
		{"fza-h100-[002-005]", SL_OK, "fza-h100-002 fza-h100-003 fza-h100-004 fza-h100-005", 0},
		{"n[1-3,7,10-12]", SL_OK, "n1 n2 n3 n7 n10 n11 n12", 0},
		{"n[8-11]", SL_OK, "n8 n9 n10 n11", 0},
		{"n[098-101]", SL_OK, "n098 n099 n100 n101", 0},
		{"n[007]", SL_OK, "n007", 0},
		{"n[5-5]", SL_OK, "n5", 0},
		{"[1-2]x", SL_OK, "1x 2x", 0},
		{"r[1-2]-ib", SL_OK, "r1-ib r2-ib", 0},
		{"n[01-2,005]", SL_OK, "n01 n02 n005", 0},
		{"", SL_EINVAL, "empty", 1},
		{"n[1-3", SL_EINVAL, "never closed", 2},
		{"n1-3]", SL_EINVAL, "']' without '['", 5},
		{"n]1[", SL_EINVAL, "']' without '['", 2},
		{"n[3-1]", SL_EINVAL, "backwards", 3},
		{"n[1-a]", SL_EINVAL, "expected a digit", 5},
		{"n[a]", SL_EINVAL, "expected a digit", 3},
		{"n[]", SL_EINVAL, "expected a digit", 3},
		{"n[1,]", SL_EINVAL, "expected a digit", 5},
		{"n[1 ,2]", SL_EINVAL, "expected a digit, '-', ',' or ']'", 4},
		{"n[1-2][3]", SL_EINVAL, "one bracket group", 7},
		{"n[1-2]x]", SL_EINVAL, "one bracket group", 8},
		{"n[1-100001]", SL_ELIMIT, "more than 100000", 2},
		{"n[1-50000,50001-100001]", SL_ELIMIT, "more than 100000", 2},
		{"n[1234567890]", SL_ELIMIT, "more than 9 digits", 3},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa[1-10]", SL_EINVAL,
		 "longer than 63", 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct collect c = {.fail_at = -1};
		struct sl_diag d;
		sl_diag_clear(&d);
		enum sl_err e = fleet_expand_range(cases[i].expr, collect_fn, &c, &d);
		if (e != cases[i].want)
			fail_msg("'%s': got %s, want %s (%s)", cases[i].expr, sl_err_code(e),
				 sl_err_code(cases[i].want), d.msg);
		if (e == SL_OK) {
			if (strcmp(c.out, cases[i].out) != 0)
				fail_msg("'%s': got '%s'", cases[i].expr, c.out);
			continue;
		}
		assert_int_equal(c.calls, 0); /* errors come before any name */
		if (!strstr(d.msg, cases[i].out) || d.col != cases[i].col)
			fail_msg("'%s': col %d '%s', want col %d '%s'", cases[i].expr, d.col, d.msg,
				 cases[i].col, cases[i].out);
	}
}

static void test_range_callback_error_stops(void **state)
{
	(void)state;
	struct collect c = {.fail_at = 3};
	assert_int_equal(fleet_expand_range("n[1-9]", collect_fn, &c, NULL), SL_EEXIST);
	assert_int_equal(c.calls, 3);
	assert_string_equal(c.out, "n1 n2");
}

static enum sl_err count_fn(void *arg, const char *name)
{
	(void)name;
	++*(int *)arg;
	return SL_OK;
}

static void test_range_at_limit(void **state)
{
	(void)state;
	int n = 0;
	assert_int_equal(fleet_expand_range("n[000001-100000]", count_fn, &n, NULL), SL_OK);
	assert_int_equal(n, FLEET_MAX_RANGE);
}

static void test_strmap(void **state)
{
	(void)state;
	struct strmap *m;
	char key[32];
	assert_int_equal(strmap_new(&m), SL_OK);
	assert_int_equal(strmap_get(m, "x", -7), -7);
	assert_int_equal(strmap_slots(m), 0);
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_int_equal(strmap_add(m, key, i * 3), SL_OK);
		/* grows past 3/4 load: 12,288 entries fit 16,384 slots */
		if (i + 1 == 12288)
			assert_int_equal(strmap_slots(m), 16384);
		if (i + 1 == 12289)
			assert_int_equal(strmap_slots(m), 32768);
	}
	assert_int_equal(strmap_add(m, "k5", 1), SL_EEXIST);
	assert_int_equal(strmap_count(m), 20000);
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		if (strmap_get(m, key, -1) != i * 3)
			fail_msg("key %s", key);
	}
	assert_int_equal(strmap_get(m, "k20000", -1), -1);
	assert_int_equal(strmap_get(m, "", -1), -1);
	assert_int_equal(strmap_add(m, "", 9), SL_OK);
	assert_int_equal(strmap_get(m, "", -1), 9);
	/* Deleting every other key keeps the rest findable (backward shift). */
	for (int i = 0; i < 20000; i += 2) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_true(strmap_del(m, key));
		assert_false(strmap_del(m, key));
	}
	assert_int_equal(strmap_count(m), 10001);
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		if (strmap_get(m, key, -1) != (i % 2 ? i * 3 : -1))
			fail_msg("after delete: key %s", key);
	}
	assert_int_equal(strmap_add(m, "k4", 4), SL_OK);
	assert_int_equal(strmap_get(m, "k4", -1), 4);
	assert_false(strmap_del(NULL, "x"));
	strmap_free(m);
	strmap_free(NULL);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup_base, teardown_base)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_knows_builtin_types),
		T(test_builder_links_and_lookups),
		T(test_duplicate_names),
		T(test_scoped_names),
		T(test_bad_names),
		T(test_bad_references),
		T(test_many_nodes_and_node_limit),
		T(test_site_and_type_limits),
		T(test_owners),
		T(test_domain_accepts_a_full_rack),
		T(test_domain_rules),
		T(test_summary),
		cmocka_unit_test(test_range_table),
		cmocka_unit_test(test_range_callback_error_stops),
		cmocka_unit_test(test_range_at_limit),
		cmocka_unit_test(test_strmap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

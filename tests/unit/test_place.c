/* test_place.c - single-node placement, shares, constraints, refusals, state.
 *
 * Fleets are built in each test with the fleet builder. The differential test
 * at the end checks the fleet index against a reference that scans every node
 * and asks ptab_best() directly, over a fixed-seed stream of claims, releases,
 * service changes and placements. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "place.h"

/* ---- fleet helpers ------------------------------------------------------- */

struct fx {
	struct fleet f;
	int leaf[4]; /* leaf 0,1 at site s1 (region r1); 2,3 at s2 (region r2) */
};

static void fx_init(struct fx *x)
{
	int s1, s2, fa, fb;
	assert_int_equal(fleet_init(&x->f), SL_OK);
	assert_int_equal(fleet_add_site(&x->f, "s1", "r1", &s1, NULL), SL_OK);
	assert_int_equal(fleet_add_site(&x->f, "s2", "r2", &s2, NULL), SL_OK);
	assert_int_equal(fleet_add_fabric(&x->f, s1, "ib1", FABRIC_INFINIBAND, 400, &fa, NULL),
			 SL_OK);
	assert_int_equal(fleet_add_fabric(&x->f, s2, "ib2", FABRIC_ROCE, 200, &fb, NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&x->f, fa, "l1", &x->leaf[0], NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&x->f, fa, "l2", &x->leaf[1], NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&x->f, fb, "l3", &x->leaf[2], NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&x->f, fb, "l4", &x->leaf[3], NULL), SL_OK);
}

static int fx_node(struct fx *x, int leaf, const char *name, const char *type)
{
	int t = fleet_find_type(&x->f, type), idx;
	assert_true(t >= 0);
	assert_int_equal(fleet_add_node(&x->f, x->leaf[leaf], name, t, &idx, NULL), SL_OK);
	return idx;
}

static struct place_request req_gpus(int gpus)
{
	struct place_request r;
	memset(&r, 0, sizeof(r));
	r.gpus = gpus;
	return r;
}

/* Claims whole GPUs on a node by hand (mask), with no CPUs or memory. */
static void use_mask(struct placer *p, int node, gpumask_t m)
{
	struct placement pl;
	placement_init(&pl);
	struct place_pick k = {.node = node, .gpus = m, .gpu = -1};
	assert_int_equal(placement_add(&pl, &k), SL_OK);
	assert_int_equal(placer_claim(p, &pl, NULL), SL_OK);
	placement_release(&pl);
}

static enum sl_err place(struct placer *p, const struct place_request *r,
			 struct placement *out)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	return placer_place(p, r, out, &d);
}

static const char *picked(struct placer *p, const struct placement *pl)
{
	assert_int_equal(pl->npicks, 1);
	return placer_fleet(p)->nodes[pl->picks[0].node].name;
}

/* ---- best node ----------------------------------------------------------- */

struct tn {
	const char *name, *type;
	int64_t price;
	gpumask_t used;
};

static const struct {
	const char *what;
	struct tn nodes[4];
	int k;
	const char *want;
	gpumask_t want_set; /* 0 = do not check */
} best_cases[] = {
	{"quality beats name", {{"a-l40s", "pcie-l40s-8", 0, 0}, {"b-h100", "hgx-h100-8", 0, 0}},
	 2, "b-h100", 0},
	{"best fit beats name", {{"a", "hgx-h100-8", 0, 0}, {"b", "hgx-h100-8", 0, 0x0f}},
	 2, "b", 0},
	{"best fit beats price", {{"a", "hgx-h100-8", 100, 0}, {"b", "hgx-h100-8", 900, 0x3f}},
	 1, "b", 0},
	{"price beats name", {{"a", "hgx-h100-8", 300, 0}, {"b", "hgx-h100-8", 200, 0}},
	 4, "b", 0},
	{"name breaks ties", {{"b", "hgx-h100-8", 0, 0}, {"a", "hgx-h100-8", 0, 0}}, 4, "a", 0},
	/* One GPU from {0,2,4} strands the rest; from {0,1,2} the PIX pair stays. */
	{"leftover shape", {{"a", "pcie-l40s-8", 0, 0xea}, {"b", "pcie-l40s-8", 0, 0xf8}},
	 1, "b", 0x04},
	{"pair on one switch", {{"a", "pcie-l40s-8", 0, 0}}, 2, "a", 0x03},
	{"quality before fit", {{"a", "pcie-h100nvl-8", 0, 0xaa}, {"b", "pcie-h100nvl-8", 0, 0}},
	 2, "b", 0},
	{"ascend ring", {{"a", "atlas-800-9000", 0, 0x01}}, 4, "a", 0xf0},
};

static void test_best_node(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(best_cases) / sizeof(best_cases[0]); c++) {
		struct fx x;
		fx_init(&x);
		int idx[4], n = 0;
		for (; n < 4 && best_cases[c].nodes[n].name; n++) {
			idx[n] = fx_node(&x, 0, best_cases[c].nodes[n].name,
					 best_cases[c].nodes[n].type);
			x.f.nodes[idx[n]].price_hint = best_cases[c].nodes[n].price;
		}
		struct placer *p;
		assert_int_equal(placer_new(&x.f, &p), SL_OK);
		for (int i = 0; i < n; i++)
			if (best_cases[c].nodes[i].used)
				use_mask(p, idx[i], best_cases[c].nodes[i].used);
		struct place_request r = req_gpus(best_cases[c].k);
		struct placement pl;
		placement_init(&pl);
		assert_int_equal(place(p, &r, &pl), SL_OK);
		if (strcmp(picked(p, &pl), best_cases[c].want))
			fail_msg("case '%s': picked %s, want %s", best_cases[c].what,
				 picked(p, &pl), best_cases[c].want);
		if (best_cases[c].want_set && pl.picks[0].gpus != best_cases[c].want_set)
			fail_msg("case '%s': set 0x%x, want 0x%x", best_cases[c].what,
				 (unsigned)pl.picks[0].gpus, (unsigned)best_cases[c].want_set);
		assert_int_equal(__builtin_popcount(pl.picks[0].gpus), best_cases[c].k);
		assert_int_equal(pl.score.nodes, 1);
		if (best_cases[c].k > 1)
			assert_true(pl.score.bottleneck_gbps > 0);
		assert_int_equal(pl.picks[0].q.bottleneck_gbps, pl.score.bottleneck_gbps);
		placement_release(&pl);
		placer_free(p);
		fleet_release(&x.f);
	}
}

/* ---- refusals and invalid requests --------------------------------------- */

struct refusal_fx {
	struct fx x;
	struct placer *p;
	int h[3], l[2];
};

static void refusal_setup(struct refusal_fx *r)
{
	fx_init(&r->x);
	r->h[0] = fx_node(&r->x, 0, "fza-h100-001", "hgx-h100-8");
	r->h[1] = fx_node(&r->x, 0, "fza-h100-002", "hgx-h100-8");
	r->h[2] = fx_node(&r->x, 1, "fza-h100-003", "hgx-h100-8");
	r->l[0] = fx_node(&r->x, 2, "fzb-l40s-01", "pcie-l40s-8");
	r->l[1] = fx_node(&r->x, 3, "fzb-l40s-02", "pcie-l40s-8");
	int acme;
	assert_int_equal(fleet_owner_index(&r->x.f, "acme", &acme, NULL), SL_OK);
	r->x.f.nodes[r->h[2]].owner = acme;
	assert_int_equal(placer_new(&r->x.f, &r->p), SL_OK);
}

static void refusal_teardown(struct refusal_fx *r)
{
	placer_free(r->p);
	fleet_release(&r->x.f);
}

enum prep { PREP_NONE, PREP_BUSY, PREP_DRAIN };

static const char *const h100[] = {"h100-sxm"};
static const char *const b200[] = {"b200"};

static const struct {
	const char *what;
	enum prep prep;
	int gpus, per_node, milli, min_mem, min_bw, cpus;
	const char *const *models;
	const char *region, *site, *tenant;
	bool pool_owned, exclusive;
	enum place_constraint failed;
	const char *why; /* substring */
} refusal_cases[] = {
	{"model", PREP_NONE, 1, 0, 0, 0, 0, 0, b200, NULL, NULL, NULL, false, false,
	 PLACE_C_MODEL, "[b200]"},
	{"memory", PREP_NONE, 1, 0, 0, 96, 0, 0, h100, NULL, NULL, NULL, false, false,
	 PLACE_C_MEMORY, "h100-sxm has 80"},
	{"region", PREP_NONE, 1, 0, 0, 0, 0, 0, h100, "r2", NULL, NULL, false, false,
	 PLACE_C_REGION, "r1"},
	{"site", PREP_NONE, 1, 0, 0, 0, 0, 0, h100, NULL, "s2", NULL, false, false,
	 PLACE_C_SITE, "s1"},
	{"owner pool", PREP_NONE, 1, 0, 0, 0, 0, 0, NULL, NULL, NULL, "zed", true, false,
	 PLACE_C_OWNER, "zed owns no"},
	{"node size", PREP_NONE, 16, 16, 0, 0, 0, 0, NULL, NULL, NULL, NULL, false, false,
	 PLACE_C_SIZE, "largest: hgx-h100-8 with 8"},
	{"bandwidth", PREP_NONE, 2, 0, 0, 0, 5000, 0, NULL, NULL, NULL, NULL, false, false,
	 PLACE_C_BANDWIDTH, ">= 5000 GB/s"},
	{"in service", PREP_DRAIN, 1, 0, 0, 0, 0, 0, h100, NULL, NULL, NULL, false, false,
	 PLACE_C_HEALTH, "out of service"},
	{"free", PREP_BUSY, 4, 0, 0, 0, 0, 0, h100, "r1", NULL, NULL, false, false,
	 PLACE_C_FREE, "no node in region r1 has 4 free h100-sxm GPUs; closest: fza-h100-002 with 3 free"},
	{"exclusive", PREP_BUSY, 1, 0, 0, 0, 0, 0, h100, NULL, NULL, NULL, false, true,
	 PLACE_C_FREE, "every GPU free"},
	{"cpu", PREP_NONE, 1, 0, 0, 0, 0, 500, NULL, NULL, NULL, NULL, false, false,
	 PLACE_C_CPU_MEM, "500 CPUs"},
	{"share", PREP_NONE, 0, 0, 500, 0, 0, 0, NULL, NULL, NULL, NULL, false, false,
	 PLACE_C_REQUEST, "shareable"},
	{"gang free", PREP_BUSY, 16, 0, 0, 0, 0, 0, h100, NULL, NULL, NULL, false, false,
	 PLACE_C_FREE, "gang needs 2 nodes"},
};

static void test_refusals(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(refusal_cases) / sizeof(refusal_cases[0]); c++) {
		struct refusal_fx r;
		refusal_setup(&r);
		if (refusal_cases[c].prep == PREP_BUSY) {
			use_mask(r.p, r.h[0], 0x3f);
			use_mask(r.p, r.h[1], 0x1f);
		} else if (refusal_cases[c].prep == PREP_DRAIN) {
			for (int i = 0; i < 3; i++)
				placer_set_node_usable(r.p, r.h[i], false);
		}
		struct place_request q = req_gpus(refusal_cases[c].gpus);
		q.per_node = refusal_cases[c].per_node;
		q.gpu_milli = refusal_cases[c].milli;
		q.min_mem_gib = refusal_cases[c].min_mem;
		q.min_bw_gbps = refusal_cases[c].min_bw;
		q.cpus = refusal_cases[c].cpus;
		if (refusal_cases[c].models) {
			q.nmodels = 1;
			q.models[0] = refusal_cases[c].models[0];
		}
		q.region = refusal_cases[c].region;
		q.site = refusal_cases[c].site;
		q.tenant = refusal_cases[c].tenant;
		q.pool_owned = refusal_cases[c].pool_owned;
		q.exclusive = refusal_cases[c].exclusive;
		struct placement pl;
		placement_init(&pl);
		enum sl_err e = place(r.p, &q, &pl);
		if (e != SL_ENOSPACE)
			fail_msg("case '%s': got %s", refusal_cases[c].what, sl_err_code(e));
		if (pl.failed != refusal_cases[c].failed)
			fail_msg("case '%s': failed=%s want %s (%s)", refusal_cases[c].what,
				 place_constraint_name(pl.failed),
				 place_constraint_name(refusal_cases[c].failed), pl.why);
		if (!strstr(pl.why, refusal_cases[c].why))
			fail_msg("case '%s': why '%s' lacks '%s'", refusal_cases[c].what, pl.why,
				 refusal_cases[c].why);
		assert_int_equal(pl.npicks, 0);
		placement_release(&pl);
		refusal_teardown(&r);
	}
}

static void test_invalid(void **state)
{
	(void)state;
	struct refusal_fx r;
	refusal_setup(&r);
	struct placement pl;
	placement_init(&pl);
	struct sl_diag d;
	struct place_request q = req_gpus(1);
	q.nmodels = 1;
	q.models[0] = "h1000";
	sl_diag_clear(&d);
	assert_int_equal(placer_place(r.p, &q, &pl, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "h1000"));
	assert_non_null(strstr(d.hint, "h100-sxm"));
	q = req_gpus(1);
	q.region = "mars";
	sl_diag_clear(&d);
	assert_int_equal(placer_place(r.p, &q, &pl, &d), SL_EINVAL);
	assert_non_null(strstr(d.hint, "r1"));
	q = req_gpus(1);
	q.site = "nowhere";
	sl_diag_clear(&d);
	assert_int_equal(placer_place(r.p, &q, &pl, &d), SL_EINVAL);
	assert_non_null(strstr(d.hint, "s2"));
	const int bad[][3] = {{0, 0, 0}, {-1, 0, 0}, {1, 500, 0}, {0, 1000, 0},
			      {1, 0, -1}, {PLACE_MAX_GPUS + 1, 0, 0}, {0, 500, 2}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		q = req_gpus(bad[i][0]);
		q.gpu_milli = bad[i][1];
		q.per_node = bad[i][2];
		assert_int_equal(placer_place(r.p, &q, &pl, NULL), SL_EINVAL);
	}
	placement_release(&pl);
	refusal_teardown(&r);
}

/* ---- owners and exclusive ------------------------------------------------ */

static void test_owners(void **state)
{
	(void)state;
	struct refusal_fx r;
	refusal_setup(&r);
	/* Leave only the colocated node free among the H100s. */
	use_mask(r.p, r.h[0], 0xff);
	use_mask(r.p, r.h[1], 0xff);
	struct place_request q = req_gpus(8);
	q.nmodels = 1;
	q.models[0] = "h100-sxm";
	struct placement pl;
	placement_init(&pl);
	assert_int_equal(place(r.p, &q, &pl), SL_ENOSPACE);
	assert_int_equal(pl.failed, PLACE_C_FREE); /* a provider node exists, just busy */
	q.tenant = "other";
	assert_int_equal(place(r.p, &q, &pl), SL_ENOSPACE);
	q.tenant = "acme";
	assert_int_equal(place(r.p, &q, &pl), SL_OK);
	assert_string_equal(picked(r.p, &pl), "fza-h100-003");
	/* pool_owned: only acme's node, even when provider nodes are free. */
	struct place_request q2 = req_gpus(1);
	q2.tenant = "acme";
	q2.pool_owned = true;
	assert_int_equal(place(r.p, &q2, &pl), SL_OK);
	assert_string_equal(picked(r.p, &pl), "fza-h100-003");
	q2.tenant = NULL;
	assert_int_equal(place(r.p, &q2, &pl), SL_ENOSPACE);
	assert_int_equal(pl.failed, PLACE_C_OWNER);
	/* Without a tenant the l40s (provider) serve, never the colocated node. */
	struct place_request q3 = req_gpus(1);
	assert_int_equal(place(r.p, &q3, &pl), SL_OK);
	assert_string_not_equal(picked(r.p, &pl), "fza-h100-003");
	placement_release(&pl);
	refusal_teardown(&r);
}

static void test_exclusive(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x);
	int a = fx_node(&x, 0, "a", "hgx-h100-8");
	fx_node(&x, 0, "b", "hgx-h100-8");
	struct placer *p;
	assert_int_equal(placer_new(&x.f, &p), SL_OK);
	use_mask(p, a, 0x01);
	struct place_request q = req_gpus(2);
	q.exclusive = true;
	struct placement pl;
	placement_init(&pl);
	assert_int_equal(place(p, &q, &pl), SL_OK);
	assert_string_equal(picked(p, &pl), "b");
	assert_int_equal(pl.picks[0].gpus, 0xff);
	assert_int_equal(pl.picks[0].cpus, 112);
	assert_int_equal(pl.picks[0].mem_mib, 2048 * 1024);
	assert_int_equal(placer_claim(p, &pl, NULL), SL_OK);
	assert_int_equal(place(p, &q, &pl), SL_ENOSPACE);
	assert_int_equal(pl.failed, PLACE_C_FREE);
	/* A non-exclusive request still fits on a. */
	q.exclusive = false;
	assert_int_equal(place(p, &q, &pl), SL_OK);
	assert_string_equal(picked(p, &pl), "a");
	placement_release(&pl);
	placer_free(p);
	fleet_release(&x.f);
}

/* ---- claim / release ----------------------------------------------------- */

struct snap {
	gpumask_t free[4];
	int cpus[4];
	int64_t mem[4];
};

static void snap(struct placer *p, struct snap *s)
{
	for (int i = 0; i < 4; i++) {
		s->free[i] = placer_free_mask(p, i);
		s->cpus[i] = placer_cpus_used(p, i);
		s->mem[i] = placer_mem_used_mib(p, i);
	}
}

static void test_claim_release(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x);
	for (int i = 0; i < 4; i++) {
		char name[16];
		snprintf(name, sizeof(name), "n%d", i);
		fx_node(&x, i, name, "hgx-h100-8");
	}
	struct placer *p;
	assert_int_equal(placer_new(&x.f, &p), SL_OK);
	struct snap s0, s1, s2;
	snap(p, &s0);
	struct place_request q = req_gpus(4);
	struct placement pl;
	placement_init(&pl);
	assert_int_equal(place(p, &q, &pl), SL_OK);
	int node = pl.picks[0].node;
	assert_int_equal(pl.picks[0].cpus, 56);
	assert_int_equal(pl.picks[0].mem_mib, 1024 * 1024);
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(placer_claim(p, &pl, &d), SL_OK);
	snap(p, &s1);
	assert_int_equal(s1.free[node], 0xff & ~pl.picks[0].gpus);
	assert_int_equal(s1.cpus[node], 56);
	/* Double claim: conflict, nothing changed. */
	assert_int_equal(placer_claim(p, &pl, &d), SL_ECONFLICT);
	snap(p, &s2);
	assert_memory_equal(&s1, &s2, sizeof(s1));
	/* A two-pick placement whose second pick conflicts changes nothing. */
	struct placement two;
	placement_init(&two);
	struct place_pick ok = {.node = (node + 1) % 4, .gpus = 0x01, .gpu = -1, .cpus = 1};
	assert_int_equal(placement_add(&two, &ok), SL_OK);
	assert_int_equal(placement_add(&two, &pl.picks[0]), SL_OK);
	assert_int_equal(placer_claim(p, &two, &d), SL_ECONFLICT);
	snap(p, &s2);
	assert_memory_equal(&s1, &s2, sizeof(s1));
	/* A pick that names the same GPU twice inside one placement. */
	struct placement dup;
	placement_init(&dup);
	assert_int_equal(placement_add(&dup, &ok), SL_OK);
	assert_int_equal(placement_add(&dup, &ok), SL_OK);
	assert_int_equal(placer_claim(p, &dup, &d), SL_ECONFLICT);
	snap(p, &s2);
	assert_memory_equal(&s1, &s2, sizeof(s1));
	/* Malformed picks are invalid, not conflicts. */
	struct place_pick badk = {.node = 99, .gpu = -1};
	struct placement bad;
	placement_init(&bad);
	assert_int_equal(placement_add(&bad, &badk), SL_OK);
	assert_int_equal(placer_claim(p, &bad, &d), SL_EINVAL);
	bad.picks[0] = (struct place_pick){.node = 0, .gpus = 0x100, .gpu = -1};
	assert_int_equal(placer_claim(p, &bad, &d), SL_EINVAL);
	/* Copy, release, release again. */
	struct placement cp;
	placement_init(&cp);
	assert_int_equal(placement_copy(&cp, &pl), SL_OK);
	assert_int_equal(cp.npicks, 1);
	assert_memory_equal(cp.picks, pl.picks, sizeof(*pl.picks));
	assert_int_equal(placer_release(p, &cp, &d), SL_OK);
	snap(p, &s2);
	assert_memory_equal(&s0, &s2, sizeof(s0));
	assert_int_equal(placer_release(p, &cp, &d), SL_ECONFLICT);
	snap(p, &s2);
	assert_memory_equal(&s0, &s2, sizeof(s0));
	placement_release(&cp);
	placement_release(&bad);
	placement_release(&dup);
	placement_release(&two);
	placement_release(&pl);
	placer_free(p);
	fleet_release(&x.f);
}

/* CPUs and memory asked from outside reach the placer as they are: a request
 * for INT64_MAX MiB or INT_MAX CPUs on a node already partly in use is refused,
 * not an arithmetic overflow (used + asked once overflowed), and so is a claim
 * of such a pick. */
static void test_huge_cpu_mem(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x);
	int node = fx_node(&x, 0, "n0", "hgx-h100-8");
	struct placer *p;
	assert_int_equal(placer_new(&x.f, &p), SL_OK);
	struct placement pl, big;
	placement_init(&pl);
	placement_init(&big);
	struct place_request q = req_gpus(1);
	assert_int_equal(place(p, &q, &pl), SL_OK);
	assert_int_equal(placer_claim(p, &pl, NULL), SL_OK);
	assert_true(placer_cpus_used(p, node) > 0 && placer_mem_used_mib(p, node) > 0);
	struct place_request hm = req_gpus(1), hc = req_gpus(1);
	hm.mem_mib = INT64_MAX;
	hc.cpus = INT_MAX;
	assert_int_equal(place(p, &hm, &big), SL_ENOSPACE);
	assert_int_equal(big.failed, PLACE_C_CPU_MEM);
	assert_int_equal(place(p, &hc, &big), SL_ENOSPACE);
	assert_int_equal(big.failed, PLACE_C_CPU_MEM);
	struct place_pick k = {.node = node, .gpus = 0x80, .gpu = -1, .cpus = INT_MAX};
	assert_int_equal(placement_add(&big, &k), SL_OK);
	assert_int_equal(placer_claim(p, &big, NULL), SL_ECONFLICT);
	big.picks[0].cpus = 0;
	big.picks[0].mem_mib = INT64_MAX;
	assert_int_equal(placer_claim(p, &big, NULL), SL_ECONFLICT);
	assert_int_equal(placer_free_mask(p, node), 0xff & ~pl.picks[0].gpus);
	placement_release(&big);
	placement_release(&pl);
	placer_free(p);
	fleet_release(&x.f);
}

/* cpu_milli: rounded up to whole cores on a node type counted in cores. */
static void test_cpu_milli_cores(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x);
	int node = fx_node(&x, 0, "n0", "hgx-h100-8");
	struct placer *p;
	assert_int_equal(placer_new(&x.f, &p), SL_OK);
	struct placement pl;
	placement_init(&pl);
	struct place_request q = req_gpus(1);
	q.cpu_milli = 2500;
	q.mem_mib = 4096;
	q.exact_cpu_mem = true;
	assert_int_equal(place(p, &q, &pl), SL_OK);
	assert_int_equal(pl.picks[0].cpus, 3);
	assert_int_equal(pl.picks[0].mem_mib, 4096);
	assert_int_equal(placer_claim(p, &pl, NULL), SL_OK);
	assert_int_equal(placer_cpus_used(p, node), 3);
	/* CPUs alone (no GPUs) are a valid request; a negative share is not. */
	struct place_request c = {.cpu_milli = 1, .exact_cpu_mem = true};
	assert_int_equal(place(p, &c, &pl), SL_OK);
	assert_int_equal(pl.picks[0].cpus, 1);
	c.cpu_milli = -1;
	assert_int_equal(placer_place(p, &c, &pl, NULL), SL_EINVAL);
	placement_release(&pl);
	placer_free(p);
	fleet_release(&x.f);
}

static void test_unusable(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x);
	int a = fx_node(&x, 0, "a", "hgx-h100-8");
	int b = fx_node(&x, 0, "b", "hgx-h100-8");
	struct placer *p;
	assert_int_equal(placer_new(&x.f, &p), SL_OK);
	use_mask(p, b, 0x0f); /* b is the better fit for 4 */
	placer_set_node_usable(p, b, false);
	assert_false(placer_node_usable(p, b));
	assert_int_equal(placer_free_mask(p, b), 0);
	struct place_request q = req_gpus(4);
	struct placement pl;
	placement_init(&pl);
	assert_int_equal(place(p, &q, &pl), SL_OK);
	assert_string_equal(picked(p, &pl), "a");
	placer_set_node_usable(p, b, true);
	assert_int_equal(place(p, &q, &pl), SL_OK);
	assert_string_equal(picked(p, &pl), "b");
	/* One sick GPU on b: 3 free left there, so 4 go to a, avoiding nothing. */
	placer_set_gpu_usable(p, b, 5, false);
	assert_int_equal(placer_free_mask(p, b), 0xd0);
	assert_int_equal(place(p, &q, &pl), SL_OK);
	assert_string_equal(picked(p, &pl), "a");
	/* Sick GPU on a: a set of 2 never includes it. */
	placer_set_gpu_usable(p, a, 0, false);
	for (int i = 0; i < 6; i++) {
		struct place_request q1 = req_gpus(1);
		assert_int_equal(place(p, &q1, &pl), SL_OK);
		assert_false(pl.picks[0].node == a && (pl.picks[0].gpus & 1));
		assert_false(pl.picks[0].node == b && (pl.picks[0].gpus & 0x2f));
		assert_int_equal(placer_claim(p, &pl, NULL), SL_OK);
	}
	/* Claiming a GPU that is out of service conflicts. */
	struct placement bad;
	placement_init(&bad);
	struct place_pick k = {.node = a, .gpus = 0x01, .gpu = -1};
	assert_int_equal(placement_add(&bad, &k), SL_OK);
	assert_int_equal(placer_claim(p, &bad, NULL), SL_ECONFLICT);
	placement_release(&bad);
	placement_release(&pl);
	placer_free(p);
	fleet_release(&x.f);
}

/* ---- shares -------------------------------------------------------------- */

static int share(struct placer *p, int milli, int *gpu)
{
	struct place_request q;
	memset(&q, 0, sizeof(q));
	q.gpu_milli = milli;
	struct placement pl;
	placement_init(&pl);
	assert_int_equal(place(p, &q, &pl), SL_OK);
	assert_int_equal(pl.npicks, 1);
	assert_int_equal(pl.picks[0].gpus, 0);
	assert_int_equal(pl.picks[0].milli, milli);
	assert_int_equal(placer_claim(p, &pl, NULL), SL_OK);
	int node = pl.picks[0].node;
	*gpu = pl.picks[0].gpu;
	placement_release(&pl);
	return node;
}

static void test_shares(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x);
	int a = fx_node(&x, 0, "a", "pcie-l40s-8");
	int b = fx_node(&x, 0, "b", "pcie-l40s-8");
	fx_node(&x, 0, "c", "hgx-h100-8"); /* not shareable */
	x.f.nodes[a].shareable = true;
	x.f.nodes[b].shareable = true;
	struct placer *p;
	assert_int_equal(placer_new(&x.f, &p), SL_OK);
	use_mask(p, b, 0xfe); /* b has one free GPU: best fit for breaking one */
	int g1, g2, g3, g4, g5;
	int n1 = share(p, 500, &g1);
	assert_int_equal(n1, b);
	assert_int_equal(g1, 0);
	assert_int_equal(placer_gpu_used_milli(p, b, 0), 500);
	assert_int_equal(placer_free_mask(p, b), 0);
	int n2 = share(p, 300, &g2); /* packs onto the same GPU */
	assert_int_equal(n2, b);
	assert_int_equal(g2, 0);
	assert_int_equal(placer_gpu_used_milli(p, b, 0), 800);
	int n3 = share(p, 600, &g3); /* does not fit in 200: breaks a whole GPU on a */
	assert_int_equal(n3, a);
	assert_int_equal(placer_gpu_used_milli(p, a, g3), 600);
	int n4 = share(p, 200, &g4); /* best fit: exactly the 200 left on b */
	assert_int_equal(n4, b);
	assert_int_equal(g4, 0);
	assert_int_equal(placer_gpu_used_milli(p, b, 0), 1000);
	int n5 = share(p, 400, &g5); /* the 400 left on a */
	assert_int_equal(n5, a);
	assert_int_equal(g5, g3);
	assert_int_equal(placer_gpu_used_milli(p, a, g3), 1000);
	/* Releasing a share returns its thousandths; the GPU is whole again at 0. */
	struct placement pl;
	placement_init(&pl);
	struct place_pick k = {.node = a, .gpu = g3, .milli = 600};
	pl.npicks = 0;
	assert_int_equal(placement_add(&pl, &k), SL_OK);
	k.milli = 400;
	assert_int_equal(placement_add(&pl, &k), SL_OK);
	assert_int_equal(placer_release(p, &pl, NULL), SL_OK);
	assert_int_equal(placer_gpu_used_milli(p, a, g3), 0);
	assert_int_equal(placer_free_mask(p, a), 0xff);
	assert_int_equal(placer_release(p, &pl, NULL), SL_ECONFLICT);
	/* A share on a whole-claimed GPU or a non-shareable node is refused. */
	struct placement bad;
	placement_init(&bad);
	struct place_pick kb = {.node = b, .gpu = 3, .milli = 100};
	assert_int_equal(placement_add(&bad, &kb), SL_OK);
	assert_int_equal(placer_claim(p, &bad, NULL), SL_ECONFLICT);
	bad.picks[0].node = 2;
	assert_int_equal(placer_claim(p, &bad, NULL), SL_EINVAL);
	placement_release(&bad);
	placement_release(&pl);
	placer_free(p);
	fleet_release(&x.f);
}

/* ---- score ------------------------------------------------------------- */

static void test_score(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x);
	int a = fx_node(&x, 0, "a", "pcie-l40s-8");
	int b = fx_node(&x, 1, "b", "hgx-h100-8");
	x.f.nodes[a].price_hint = 450;
	struct placer *p;
	assert_int_equal(placer_new(&x.f, &p), SL_OK);
	use_mask(p, a, 0xf8); /* free {0,1,2}: the PIX pair {0,1} and GPU 2 */
	use_mask(p, b, 0xff);
	assert_int_equal(placer_node_stranded(p, a), 1);
	struct place_request q = req_gpus(1);
	struct placement pl;
	placement_init(&pl);
	assert_int_equal(place(p, &q, &pl), SL_OK);
	assert_int_equal(pl.picks[0].gpus, 0x04);
	const struct place_score *s = &pl.score;
	assert_int_equal(s->free_after, 2);
	assert_int_equal(s->stranded_after, 0);
	assert_int_equal(s->price_hint, 450);
	assert_int_equal(s->nodes, 1);
	assert_int_equal(s->leaves, 1);
	assert_int_equal(s->domains, 0);
	assert_true(s->full_quality);
	assert_true(s->rails_aligned);
	assert_int_equal(s->numa_spanned, 1);
	/* Two GPUs: only the pair is left at full quality. */
	q.gpus = 2;
	assert_int_equal(place(p, &q, &pl), SL_OK);
	assert_int_equal(pl.picks[0].gpus, 0x03);
	assert_int_equal(pl.score.stranded_after, 1);
	assert_true(pl.score.total_gbps > 0);
	assert_string_equal(place_constraint_name(PLACE_C_CPU_MEM), "cpu-memory");
	assert_string_equal(place_constraint_name(PLACE_C_GANG), "gang");
	placement_release(&pl);
	placer_free(p);
	fleet_release(&x.f);
}

/* A refusal names the closest node first by name among equals, also when
 * price hints put another first in its index group. */
static void test_refusal_closest_by_name(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x);
	int b = fx_node(&x, 0, "b", "hgx-h100-8");
	int a = fx_node(&x, 0, "a", "hgx-h100-8");
	int c = fx_node(&x, 0, "c", "hgx-h100-8");
	x.f.nodes[a].price_hint = 900; /* b and c (0) come before a in the group */
	struct placer *p;
	assert_int_equal(placer_new(&x.f, &p), SL_OK);
	use_mask(p, a, 0xf8); /* 3 free */
	use_mask(p, b, 0xf8); /* 3 free */
	use_mask(p, c, 0xfc); /* 2 free */
	struct place_request q = req_gpus(4);
	struct placement pl;
	placement_init(&pl);
	assert_int_equal(place(p, &q, &pl), SL_ENOSPACE);
	assert_int_equal(pl.failed, PLACE_C_FREE);
	assert_non_null(strstr(pl.why, "closest: a with 3 free"));
	x.f.nodes[a].price_hint = 0; /* one price: positions in name order */
	placer_free(p);
	assert_int_equal(placer_new(&x.f, &p), SL_OK);
	use_mask(p, a, 0xfc); /* 2 free */
	use_mask(p, b, 0xf8); /* 3 free */
	use_mask(p, c, 0xf8); /* 3 free */
	assert_int_equal(place(p, &q, &pl), SL_ENOSPACE);
	assert_non_null(strstr(pl.why, "closest: b with 3 free"));
	placement_release(&pl);
	placer_free(p);
	fleet_release(&x.f);
}

/* ---- differential test against a full scan ------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int rng_below(uint64_t *s, int n)
{
	return (int)(rng_next(s) % (uint64_t)n);
}

struct ref {
	const struct fleet *f;
	struct ptab *pt[64];
};

static bool ref_model_ok(const struct place_request *q, const struct node_type *t)
{
	if (!q->nmodels)
		return true;
	for (int i = 0; i < q->nmodels; i++)
		if (!strcmp(q->models[i], t->gpu->name))
			return true;
	return false;
}

/* In service, every GPU free, nothing used (the leaf term's whole node). */
static bool ref_whole(struct placer *p, int i)
{
	const struct node_type *t = fleet_node_type(placer_fleet(p), i);
	if (!placer_node_usable(p, i) || placer_cpus_used(p, i) || placer_mem_used_mib(p, i) ||
	    placer_free_mask(p, i) != (gpumask_t)((1u << t->ngpus) - 1))
		return false;
	for (int g = 0; g < t->ngpus; g++)
		if (placer_gpu_used_milli(p, i, g))
			return false;
	return true;
}

static int ref_leaf_whole(struct placer *p, int leaf)
{
	int n = 0;
	for (int i = 0; i < placer_fleet(p)->nnodes; i++)
		n += placer_fleet(p)->nodes[i].leaf == leaf && ref_whole(p, i);
	return n;
}

/* The leaf term (place.h): a whole node chosen for whole GPUs moves to the
 * whole node of the same kind (site, owner, type, shareable, price) whose leaf
 * has the fewest whole nodes, then the first by name; not for types of more
 * GPUs than the index's buckets cover (place_leaf.c). */
static int ref_leaf_term(struct placer *p, int b)
{
	const struct fleet *f = placer_fleet(p);
	if (b < 0 || !ref_whole(p, b) || fleet_node_type(f, b)->ngpus > PTAB_EAGER_GPUS)
		return b;
	const struct fleet_node *bn = &f->nodes[b];
	int best = b, bw = ref_leaf_whole(p, bn->leaf);
	for (int i = 0; i < f->nnodes; i++) {
		const struct fleet_node *fn = &f->nodes[i];
		if (fn->site != bn->site || fn->owner != bn->owner || fn->type != bn->type ||
		    fn->shareable != bn->shareable || fn->price_hint != bn->price_hint ||
		    !ref_whole(p, i))
			continue;
		int w = ref_leaf_whole(p, fn->leaf);
		if (w < bw || (w == bw && strcmp(fn->name, f->nodes[best].name) < 0)) {
			best = i;
			bw = w;
		}
	}
	return best;
}

/* Best node for k GPUs (or, when milli > 0, for breaking one whole GPU for a
 * share) by a full scan; returns the node or -1, with its pick. */
static int ref_best(struct ref *rf, struct placer *p, const struct place_request *q,
		    int k, int milli, struct node_pick *out, int *maxg)
{
	const struct fleet *f = rf->f;
	int best = -1, bfree = 0;
	*maxg = 0;
	int tenant = q->tenant ? fleet_find_owner(f, q->tenant) : -1;
	for (int i = 0; i < f->nnodes; i++) {
		const struct fleet_node *fn = &f->nodes[i];
		const struct node_type *t = &f->types[fn->type];
		if (!ref_model_ok(q, t) || t->gpu->mem_gib < q->min_mem_gib)
			continue;
		if (q->region && strcmp(f->sites[fn->site].region, q->region))
			continue;
		if (fn->owner >= 0 && fn->owner != tenant)
			continue;
		if (q->pool_owned && (tenant < 0 || fn->owner != tenant))
			continue;
		if (milli > 0 && !fn->shareable)
			continue;
		if (t->ngpus > *maxg)
			*maxg = t->ngpus;
		if (t->ngpus < k || !placer_node_usable(p, i))
			continue;
		gpumask_t free = placer_free_mask(p, i);
		struct node_pick pk;
		if (!ptab_best(rf->pt[fn->type], free, k, &pk) ||
		    pk.q.bottleneck_gbps < q->min_bw_gbps)
			continue;
		int64_t part = milli > 0 ? milli : k * 1000;
		int cpus = (int)(t->cpus * part / (t->ngpus * 1000));
		int64_t mem = (int64_t)t->mem_gib * 1024 * part / (t->ngpus * 1000);
		if (placer_cpus_used(p, i) + cpus > t->cpus ||
		    placer_mem_used_mib(p, i) + mem > (int64_t)t->mem_gib * 1024)
			continue;
		int nfree = __builtin_popcount(free);
		int c = 0;
		if (best >= 0) {
			c = -node_quality_cmp(&pk.q, &out->q);
			if (!c && nfree != bfree)
				c = nfree < bfree ? -1 : 1;
			if (!c)
				c = -node_leftover_cmp(&pk.left, &out->left);
			if (!c && fn->price_hint != f->nodes[best].price_hint)
				c = fn->price_hint < f->nodes[best].price_hint ? -1 : 1;
			if (!c)
				c = strcmp(fn->name, f->nodes[best].name);
		}
		if (best < 0 || c < 0) {
			best = i;
			bfree = nfree;
			*out = pk;
		}
	}
	return milli > 0 ? best : ref_leaf_term(p, best);
}

/* Best partly used GPU for a share by a full scan: least room that still
 * fits, then node name, then GPU index. Returns the node or -1. */
static int ref_share(struct ref *rf, struct placer *p, const struct place_request *q,
		     const gpumask_t *bad, int *gpu)
{
	const struct fleet *f = rf->f;
	int best = -1, brem = 0;
	int tenant = q->tenant ? fleet_find_owner(f, q->tenant) : -1;
	for (int i = 0; i < f->nnodes; i++) {
		const struct fleet_node *fn = &f->nodes[i];
		const struct node_type *t = &f->types[fn->type];
		if (!fn->shareable || !placer_node_usable(p, i))
			continue;
		if (q->region && strcmp(f->sites[fn->site].region, q->region))
			continue;
		if ((fn->owner >= 0 && fn->owner != tenant) ||
		    (q->pool_owned && (tenant < 0 || fn->owner != tenant)))
			continue;
		int cpus = t->cpus * q->gpu_milli / (t->ngpus * 1000);
		int64_t mem = (int64_t)t->mem_gib * 1024 * q->gpu_milli / (t->ngpus * 1000);
		if (placer_cpus_used(p, i) + cpus > t->cpus ||
		    placer_mem_used_mib(p, i) + mem > (int64_t)t->mem_gib * 1024)
			continue;
		for (int g = 0; g < t->ngpus; g++) {
			int used = placer_gpu_used_milli(p, i, g);
			int rem = 1000 - used;
			if (used == 0 || used == 1000 || (bad[i] >> g & 1) || rem < q->gpu_milli)
				continue;
			if (best < 0 || rem < brem ||
			    (rem == brem && strcmp(fn->name, f->nodes[best].name) < 0)) {
				best = i;
				brem = rem;
				*gpu = g;
			}
		}
	}
	return best;
}

static void diff_fleet(struct fx *x)
{
	static const char *const types[] = {"hgx-h100-8", "pcie-l40s-8", "pcie-h100nvl-8",
					    "atlas-800-9000", "gb200-nvl72-tray", "hgx-a100-8"};
	int acme;
	assert_int_equal(fleet_owner_index(&x->f, "acme", &acme, NULL), SL_OK);
	/* A 16-GPU custom type exercises the large-type path of the index. */
	struct node_type big;
	int8_t numa[16];
	for (int i = 0; i < 16; i++)
		numa[i] = (int8_t)(i / 8);
	assert_int_equal(topo_type_init(&big, "pcie-l40s-16", catalog_gpu_find("l40s"), 16, 128,
					2048, numa, NULL),
			 SL_OK);
	int bt;
	assert_int_equal(fleet_add_type(&x->f, &big, &bt, NULL), SL_OK);
	uint64_t seed = 7;
	for (int i = 0; i < 48; i++) {
		char name[32];
		int t = i % 8 == 7 ? -1 : rng_below(&seed, 6);
		snprintf(name, sizeof(name), "n%02d", (i * 37) % 48);
		int leaf = rng_below(&seed, 4), idx;
		int type = t < 0 ? bt : fleet_find_type(&x->f, types[t]);
		assert_int_equal(fleet_add_node(&x->f, x->leaf[leaf], name, type, &idx, NULL),
				 SL_OK);
		x->f.nodes[idx].price_hint = rng_below(&seed, 3) * 100;
		if (rng_below(&seed, 10) == 0)
			x->f.nodes[idx].owner = acme;
		x->f.nodes[idx].shareable = t == 1 || t < 0 || rng_below(&seed, 5) == 0;
	}
}

static void test_differential(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x);
	diff_fleet(&x);
	struct ref rf = {.f = &x.f};
	assert_true(x.f.ntypes <= 64);
	for (int t = 0; t < x.f.ntypes; t++)
		assert_int_equal(ptab_new(&x.f.types[t], &rf.pt[t]), SL_OK);
	struct placer *p;
	assert_int_equal(placer_new(&x.f, &p), SL_OK);
	enum { HELD = 64 };
	struct placement held[HELD];
	int nheld = 0;
	for (int i = 0; i < HELD; i++)
		placement_init(&held[i]);
	static const int sizes[] = {1, 1, 2, 2, 3, 4, 4, 6, 8, 12, 16};
	static const char *const models[] = {"h100-sxm", "l40s", "ascend-910", "gb200"};
	uint64_t seed = 42;
	int placed = 0, refused = 0, shares = 0, packed = 0;
	gpumask_t bad[64] = {0};
	for (int step = 0; step < 2000; step++) {
		int op = rng_below(&seed, 10);
		if (op < 3 && nheld > 0) {
			int i = rng_below(&seed, nheld);
			assert_int_equal(placer_release(p, &held[i], NULL), SL_OK);
			struct placement tmp = held[i];
			held[i] = held[nheld - 1];
			held[nheld - 1] = tmp;
			nheld--;
			continue;
		}
		if (op == 3) {
			int n = rng_below(&seed, x.f.nnodes);
			if (rng_below(&seed, 2))
				placer_set_node_usable(p, n, !placer_node_usable(p, n));
			else {
				int g = rng_below(&seed, 8);
				bool up = rng_below(&seed, 3) > 0;
				placer_set_gpu_usable(p, n, g, up);
				bad[n] = up ? bad[n] & ~(1u << g) : bad[n] | (1u << g);
			}
			continue;
		}
		if (op == 4) {
			struct place_request q;
			memset(&q, 0, sizeof(q));
			q.gpu_milli = 100 * (1 + rng_below(&seed, 9));
			if (rng_below(&seed, 5) == 0)
				q.region = rng_below(&seed, 2) ? "r1" : "r2";
			if (rng_below(&seed, 6) == 0)
				q.tenant = "acme";
			struct node_pick want;
			int maxg, gpu = -1;
			int rn = ref_share(&rf, p, &q, bad, &gpu);
			if (rn >= 0)
				packed++;
			else if ((rn = ref_best(&rf, p, &q, 1, q.gpu_milli, &want, &maxg)) >= 0)
				gpu = __builtin_ctz(want.set);
			struct placement pl;
			placement_init(&pl);
			enum sl_err e = placer_place(p, &q, &pl, NULL);
			if (rn < 0) {
				assert_int_equal(e, SL_ENOSPACE);
			} else {
				assert_int_equal(e, SL_OK);
				if (pl.picks[0].node != rn || pl.picks[0].gpu != gpu)
					fail_msg("step %d: share %d placer %s/%d, reference %s/%d", step,
						 q.gpu_milli, x.f.nodes[pl.picks[0].node].name,
						 pl.picks[0].gpu, x.f.nodes[rn].name, gpu);
				shares++;
				if (nheld < HELD) {
					assert_int_equal(placer_claim(p, &pl, NULL), SL_OK);
					struct placement tmp = held[nheld];
					held[nheld++] = pl;
					pl = tmp;
				}
			}
			placement_release(&pl);
			continue;
		}
		struct place_request q = req_gpus(sizes[rng_below(&seed, 11)]);
		if (rng_below(&seed, 3) == 0) {
			q.nmodels = 1;
			q.models[0] = models[rng_below(&seed, 4)];
		}
		if (rng_below(&seed, 4) == 0)
			q.min_bw_gbps = rng_below(&seed, 2) ? 100 : 400;
		if (rng_below(&seed, 5) == 0)
			q.region = rng_below(&seed, 2) ? "r1" : "r2";
		if (rng_below(&seed, 6) == 0)
			q.tenant = "acme";
		if (q.tenant && rng_below(&seed, 2))
			q.pool_owned = true;
		struct node_pick want;
		int maxg;
		int rn = ref_best(&rf, p, &q, q.gpus, 0, &want, &maxg);
		if (q.gpus > maxg)
			continue; /* a gang: test_place_gang.c */
		struct placement pl;
		placement_init(&pl);
		struct sl_diag d;
		sl_diag_clear(&d);
		enum sl_err e = placer_place(p, &q, &pl, &d);
		if (rn < 0) {
			if (e != SL_ENOSPACE)
				fail_msg("step %d: reference refuses, placer says %s (%s)", step,
					 sl_err_code(e), d.msg);
			assert_int_not_equal(pl.failed, PLACE_C_NONE);
			refused++;
			placement_release(&pl);
			continue;
		}
		if (e != SL_OK)
			fail_msg("step %d: reference picks %s, placer says %s (%s)", step,
				 x.f.nodes[rn].name, sl_err_code(e), pl.why);
		assert_int_equal(pl.npicks, 1);
		int got = pl.picks[0].node;
		if (got != rn || pl.picks[0].gpus != want.set)
			fail_msg("step %d: k=%d placer %s/0x%x, reference %s/0x%x", step, q.gpus,
				 x.f.nodes[got].name, (unsigned)pl.picks[0].gpus,
				 x.f.nodes[rn].name, (unsigned)want.set);
		assert_int_equal(node_quality_cmp(&pl.picks[0].q, &want.q), 0);
		placed++;
		if (nheld < HELD && rng_below(&seed, 4) > 0) {
			assert_int_equal(placer_claim(p, &pl, NULL), SL_OK);
			struct placement tmp = held[nheld];
			held[nheld++] = pl;
			pl = tmp;
		}
		placement_release(&pl);
	}
	assert_true(placed > 300);
	assert_true(refused > 20);
	assert_true(shares > 50 && packed > 20);
	for (int i = 0; i < HELD; i++)
		placement_release(&held[i]);
	for (int t = 0; t < x.f.ntypes; t++)
		ptab_free(rf.pt[t]);
	placer_free(p);
	fleet_release(&x.f);
}

/* Kept picks are counted: a copy "like" an equal array shares it, a
 * different one does not; own gives a private copy to edit; each holder
 * releases its own (leaks show under ASan). */
static void test_kept_shared(void **state)
{
	(void)state;
	struct place_pick k[2];
	memset(k, 0, sizeof(k));
	k[0].node = 3;
	k[0].gpus = 0x3;
	k[0].gpu = -1;
	k[1].node = 4;
	k[1].gpus = 0x1;
	k[1].gpu = -1;
	struct placement src;
	placement_init(&src);
	assert_int_equal(placement_add(&src, &k[0]), SL_OK);
	assert_int_equal(placement_add(&src, &k[1]), SL_OK);
	struct place_picks sp = {NULL, 0, 0};
	assert_int_equal(place_picks_copy(&sp, &src), SL_OK);
	assert_ptr_not_equal(sp.picks, src.picks);
	struct place_picks a = {NULL, 0, 0}, b = {NULL, 0, 0};
	assert_int_equal(place_picks_copy_like(&a, &src, &sp), SL_OK);
	assert_ptr_equal(a.picks, sp.picks); /* shared */
	assert_int_equal(a.npicks, 2);
	/* Editing one holder's picks leaves the other's alone. */
	assert_int_equal(place_picks_own(&a), SL_OK);
	assert_ptr_not_equal(a.picks, sp.picks);
	a.picks[0].node = 9;
	assert_int_equal(sp.picks[0].node, 3);
	/* Not equal to like: a copy of its own. */
	assert_int_equal(place_picks_copy_like(&b, place_picks_view(&a, &(struct placement){0}), &sp),
			 SL_OK);
	assert_ptr_not_equal(b.picks, sp.picks);
	assert_ptr_not_equal(b.picks, a.picks);
	assert_int_equal(b.picks[0].node, 9);
	/* Alone already: own changes nothing. */
	struct place_pick *was = b.picks;
	assert_int_equal(place_picks_own(&b), SL_OK);
	assert_ptr_equal(b.picks, was);
	/* Shared, then the sharer goes first. */
	assert_int_equal(place_picks_copy_like(&b, &src, &sp), SL_OK);
	assert_ptr_equal(b.picks, sp.picks);
	place_picks_release(&sp);
	assert_int_equal(b.picks[1].node, 4);
	assert_int_equal(place_picks_take(&a, &src), SL_OK);
	assert_null(src.picks);
	assert_int_equal(a.picks[0].node, 3);
	place_picks_release(&a);
	place_picks_release(&b);
	/* Again from one holder (the controller's lease beside the scheduler's). */
	struct place_picks c1 = {NULL, 0, 0}, c2 = {NULL, 0, 0};
	assert_int_equal(placement_add(&src, &k[0]), SL_OK);
	assert_int_equal(place_picks_copy(&c1, &src), SL_OK);
	assert_int_equal(place_picks_copy_like(&c2, &src, &c1), SL_OK);
	assert_ptr_equal(c2.picks, c1.picks);
	assert_int_equal(c2.npicks, 1);
	assert_int_equal(place_picks_copy_like(&c2, &src, &c1), SL_OK); /* again: still one ref more */
	place_picks_release(&c1);
	assert_int_equal(c2.picks[0].node, 3);
	assert_int_equal(place_picks_own(&c2), SL_OK);
	assert_int_equal(placement_add(&src, &k[1]), SL_OK);
	assert_int_equal(place_picks_copy_like(&c2, &src, NULL), SL_OK); /* no like: a copy */
	assert_int_equal(c2.npicks, 2);
	assert_int_equal(c2.picks[1].node, 4);
	place_picks_release(&c2);
	placement_release(&src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_best_node),   cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_invalid),     cmocka_unit_test(test_owners),
		cmocka_unit_test(test_exclusive),   cmocka_unit_test(test_claim_release),
		cmocka_unit_test(test_unusable),    cmocka_unit_test(test_shares),
		cmocka_unit_test(test_huge_cpu_mem), cmocka_unit_test(test_cpu_milli_cores),
		cmocka_unit_test(test_score),       cmocka_unit_test(test_refusal_closest_by_name),
		cmocka_unit_test(test_differential),
		cmocka_unit_test(test_kept_shared),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

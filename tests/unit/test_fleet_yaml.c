/* test_fleet_yaml.c - the fleet file loader: the DESIGN.md example in flow and
 * block style, a node type pasted from `nvidia-smi topo -m`, a table of bad
 * files with the position and message each must produce (and the fleet left
 * untouched), and a generated 10,000-node file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testdata.h"

#include "fleet.h"

static char *read_data(const char *name, size_t *len)
{
	char rel[256];
	snprintf(rel, sizeof(rel), "fleet/%s", name);
	return testdata_read(rel, len);
}

/* The fleet is exactly as fleet_init() left it. */
static void assert_pristine(const struct fleet *f)
{
	assert_int_equal(f->ntypes, topo_builtin_count());
	assert_int_equal(f->nsites + f->nfabrics + f->nleaves + f->nnodes + f->ndomains + f->nowners, 0);
	assert_int_equal(fleet_find_node(f, "fza-h100-001"), -1);
}

static int node(const struct fleet *f, const char *name)
{
	int n = fleet_find_node(f, name);
	if (n < 0)
		fail_msg("node %s missing", name);
	return n;
}

/* What DESIGN.md §3's file (with its GB200 trays declared) describes. */
static void check_example(const struct fleet *f)
{
	assert_int_equal(f->nsites, 1);
	assert_string_equal(f->sites[0].name, "fuzhou-a");
	assert_string_equal(f->sites[0].region, "cn-east");
	assert_int_equal(f->nfabrics, 1);
	assert_string_equal(f->fabrics[0].name, "ib-a");
	assert_int_equal(f->fabrics[0].kind, FABRIC_INFINIBAND);
	assert_int_equal(f->fabrics[0].gbps, 400);
	assert_int_equal(f->nleaves, 3);
	int l1 = fleet_find_leaf(f, 0, "leaf-01"), l2 = fleet_find_leaf(f, 0, "leaf-02"),
	    l3 = fleet_find_leaf(f, 0, "leaf-03");
	assert_true(l1 >= 0 && l2 >= 0 && l3 >= 0);
	assert_int_equal(f->nnodes, 16 + 8 + 18);

	/* Nodes in file order, ranges expanded with their zero padding. */
	assert_string_equal(f->nodes[0].name, "fza-h100-001");
	assert_string_equal(f->nodes[1].name, "fza-h100-002");
	assert_string_equal(f->nodes[15].name, "fza-h100-016");
	assert_string_equal(f->nodes[16].name, "fza-l40s-01");
	assert_string_equal(f->nodes[23].name, "fza-l40s-08");
	int h100 = fleet_find_type(f, "hgx-h100-8"), l40s = fleet_find_type(f, "pcie-l40s-8");
	int gb200 = fleet_find_type(f, "gb200-nvl72-tray");
	for (int i = 0; i < 16; i++) {
		assert_int_equal(f->nodes[i].type, h100);
		assert_int_equal(f->nodes[i].leaf, l1);
		assert_int_equal(f->nodes[i].site, 0);
	}
	for (int i = 16; i < 24; i++) {
		assert_int_equal(f->nodes[i].type, l40s);
		assert_int_equal(f->nodes[i].leaf, l2);
	}
	assert_int_equal(fleet_find_node(f, "fza-h100-017"), -1);
	assert_int_equal(fleet_find_node(f, "fza-l40s-09"), -1);

	/* The GB200 rack is one NVLink domain, listed in order. */
	assert_int_equal(f->ndomains, 1);
	assert_string_equal(f->domains[0].name, "fza-nvl72-r01");
	assert_int_equal(f->domains[0].nnodes, 18);
	for (int i = 0; i < 18; i++) {
		char name[32];
		snprintf(name, sizeof(name), "fza-gb200-r01-t%02d", i + 1);
		int n = node(f, name);
		assert_int_equal(f->domains[0].nodes[i], n);
		assert_int_equal(f->nodes[n].domain, 0);
		assert_int_equal(f->nodes[n].type, gb200);
		assert_int_equal(f->nodes[n].leaf, l3);
		assert_int_equal(f->nodes[n].price_hint, 4200);
		assert_false(f->nodes[n].shareable);
	}
	assert_int_equal(f->nodes[node(f, "fza-h100-001")].domain, -1);

	/* Only fza-h100-016 is colocated. */
	assert_int_equal(f->nowners, 1);
	assert_string_equal(f->owners[0], "acme");
	assert_int_equal(f->nodes[node(f, "fza-h100-016")].owner, 0);
	assert_int_equal(f->nodes[node(f, "fza-h100-015")].owner, -1);

	/* The custom type: NUMA, NVLink pairs, PCIe switches, the fallback, NICs. */
	int ct = fleet_find_type(f, "pcie-h100nvl-8-custom");
	assert_int_equal(ct, topo_builtin_count());
	const struct node_type *t = &f->types[ct];
	assert_string_equal(t->gpu->name, "h100-nvl");
	assert_int_equal(t->ngpus, 8);
	assert_int_equal(t->cpus, 128);
	assert_int_equal(t->mem_gib, 1024);
	static const int8_t numa[8] = {0, 0, 0, 0, 1, 1, 1, 1};
	assert_memory_equal(t->numa, numa, sizeof(numa));
	for (int p = 0; p < 8; p += 2) {
		assert_int_equal(t->link[p][p + 1].kind, LINK_NVLINK);
		assert_int_equal(t->link[p][p + 1].count, 12);
		assert_int_equal(t->link[p + 1][p].kind, LINK_NVLINK);
	}
	assert_int_equal(t->link[0][2].kind, LINK_NUMA);
	assert_int_equal(t->link[1][5].kind, LINK_CROSS_SOCKET);
	assert_true(t->link[0][1].gbps > t->link[0][2].gbps);
	assert_int_equal(t->nnics, 2);
	assert_string_equal(t->nics[1].name, "mlx5_1");
	assert_int_equal(t->nics[1].gbps, 400);
	assert_int_equal(t->nics[1].gpus, 0x0cu);
}

static void load_file_ok(const char *name, struct fleet *f)
{
	size_t len;
	char *text = read_data(name, &len);
	struct sl_diag d;
	assert_int_equal(fleet_init(f), SL_OK);
	enum sl_err e = fleet_load_yaml(f, text, len, name, &d);
	if (e != SL_OK) {
		char msg[1024];
		sl_diag_format(&d, msg, sizeof(msg));
		fail_msg("%s", msg);
	}
	free(text);
}

static void test_example_flow_style(void **state)
{
	(void)state;
	struct fleet f;
	load_file_ok("example.yaml", &f);
	check_example(&f);
	fleet_release(&f);
}

static void test_example_block_style(void **state)
{
	(void)state;
	struct fleet f;
	load_file_ok("example-block.yaml", &f);
	check_example(&f);
	fleet_release(&f);
}

/* DESIGN.md §3 verbatim names GB200 trays in nvlink_domains that its sites never
 * declare; the loader must say so at that spot and build nothing. */
static void test_design_excerpt_verbatim(void **state)
{
	(void)state;
	size_t len;
	char *text = read_data("design-example.yaml", &len);
	struct fleet f;
	struct sl_diag d;
	assert_int_equal(fleet_init(&f), SL_OK);
	assert_int_equal(fleet_load_yaml(&f, text, len, "design-example.yaml", &d), SL_ENOTFOUND);
	assert_string_equal(d.file, "design-example.yaml");
	assert_int_equal(d.line, 17);
	assert_int_equal(d.col, 34);
	assert_non_null(strstr(d.msg, "unknown node 'fza-gb200-r01-t01' in NVLink domain 'fza-nvl72-r01'"));
	assert_pristine(&f);
	fleet_release(&f);
	free(text);
}

static void test_topo_matrix_type(void **state)
{
	(void)state;
	struct fleet f;
	load_file_ok("topo-matrix.yaml", &f);
	int ty = fleet_find_type(&f, "dgx-a100-smi");
	assert_true(ty >= topo_builtin_count());
	const struct node_type *t = &f.types[ty];
	assert_int_equal(t->ngpus, 8);
	assert_int_equal(t->mem_gib, 2048);
	/* From the matrix: NVLink between every pair, the NUMA affinity column,
	 * eight NICs with their PCIe-switch rails. */
	for (int a = 0; a < 8; a++)
		for (int b = 0; b < 8; b++)
			if (a != b && t->link[a][b].kind < LINK_NVLINK)
				fail_msg("pair %d-%d is %d", a, b, t->link[a][b].kind);
	assert_int_equal(t->numa[3], 0);
	assert_int_equal(t->numa[4], 1);
	assert_int_equal(t->nnics, 8);
	assert_true(t->nics[0].gpus & 1u);
	/* Keys given next to the matrix still apply. */
	assert_int_equal(t->ngroups, 2);
	assert_int_equal(t->groups[1], 0xf0u);
	assert_true(t->groups_strict);
	assert_int_equal(f.nnodes, 4);
	assert_int_equal(f.nodes[node(&f, "hz-dgx-03")].type, ty);
	assert_true(f.nodes[0].shareable);
	fleet_release(&f);
}

/* A bad file: its text (or a file under tests/data/fleet), where the error must
 * point, what the message and hint must contain. */
struct bad {
	const char *text, *file;
	enum sl_err err;
	int line, col;
	const char *msg, *hint;
};

#define SITE_HEAD                                                           \
	"sites:\n"                                                          \
	"  - name: s1\n"                                                    \
	"    region: cn-east\n"                                             \
	"    fabrics:\n"                                                    \
	"      - {name: ib, kind: infiniband, gbps: 400, leaves: [{name: l1, nodes: [\n"
/* Node entries follow on line 6, 8 spaces in. */

#define TYPE_HEAD                                                           \
	"node_types:\n"                                                     \
	"  - name: t1\n"                                                    \
	"    gpu: h100-nvl\n"                                               \
	"    gpus: 2\n"                                                     \
	"    cpus: 32\n"                                                    \
	"    memory_gib: 256\n"
/* Further keys of t1 follow on line 7. */

static const struct bad bad_files[] = {
	{.file = "bad-unknown-type.yaml", .err = SL_EINVAL, .line = 12, .col = 44,
	 .msg = "unknown node type 'hgx-h100-9'; expected one of the built-in types (hgx-h100-8, ",
	 .hint = "did you mean 'hgx-h100-8'?"},
	{.file = "bad-topo-matrix.yaml", .err = SL_EPARSE, .line = 16, .col = 29,
	 .msg = "'NV1Z'"},
	/* structure and keys */
	{"", NULL, SL_EINVAL, 1, 1, "fleet file is empty", NULL},
	{"- a\n- b\n", NULL, SL_EINVAL, 1, 1, "expected the fleet file as a mapping", NULL},
	{"sites: []\nowner: []\n", NULL, SL_EINVAL, 2, 1,
	 "unknown key 'owner' in the fleet file; expected sites, nvlink_domains, node_types, owners",
	 "did you mean 'owners'?"},
	{"sites:\n  - name: s1\n    regoin: cn-east\n", NULL, SL_EINVAL, 3, 5,
	 "unknown key 'regoin' in site; expected name, region, fabrics", "did you mean 'region'?"},
	{"sites:\n  - name: s1\n    color: red\n", NULL, SL_EINVAL, 3, 5, "unknown key 'color'", ""},
	{"sites: fuzhou\n", NULL, SL_EINVAL, 1, 8, "expected a list of sites for 'sites', got a scalar",
	 NULL},
	{"sites:\n  - name: s1\n", NULL, SL_EINVAL, 2, 5, "site is missing 'region'", NULL},
	{"sites:\n  - {name: s1, region: a, name: s2}\n", NULL, SL_EINVAL, 2, 27,
	 "duplicate key 'name' in site (first at line 2)", NULL},
	{"sites:\n  - name: [s1]\n    region: x\n", NULL, SL_EINVAL, 2, 11,
	 "expected a string for 'name', got a list", NULL},
	{"sites:\n  - fuzhou\n", NULL, SL_EINVAL, 2, 5, "expected site as a mapping", NULL},
	{"sites:\n  - {name: s1, region: cn-east, fabrics: [{name: ib, kind: infiniband}]}\n",
	 NULL, SL_EINVAL, 2, 43, "fabric is missing 'gbps'", NULL},
	{"sites:\n  - {name: s1, region: cn-east, fabrics: [{name: ib, kind: ethernet, gbps: 1}]}\n",
	 NULL, SL_EINVAL, 2, 60, "unknown fabric kind 'ethernet'; expected infiniband or roce", NULL},
	{"sites:\n  - {name: s1, region: cn-east, fabrics: [{name: ib, kind: roce, gbps: fast}]}\n",
	 NULL, SL_EINVAL, 2, 72, "expected an integer from 1 to 100000 for 'gbps', got 'fast'", NULL},
	{"sites:\n  - {name: s1, region: cn east}\n", NULL, SL_EINVAL, 2, 24, "bad region name 'cn east'",
	 NULL},
	{"sites:\n  - {name: s1, region: a}\n  - {name: s1, region: b}\n", NULL, SL_EEXIST, 3, 12,
	 "duplicate site name 's1'", NULL},
	/* node entries */
	{SITE_HEAD "        {name: n1, type: hgx-h100-8}, {name: n1, type: hgx-h100-8}]}]}\n", NULL,
	 SL_EEXIST, 6, 46, "duplicate node name 'n1'", NULL},
	{SITE_HEAD "        {range: \"n[1-4]\", type: hgx-h100-8}, {range: \"n[4-6]\", type: hgx-h100-8}]}]}\n",
	 NULL, SL_EEXIST, 6, 54, "duplicate node name 'n4'", NULL},
	{SITE_HEAD "        {range: \"n[1-4\", type: hgx-h100-8}]}]}\n", NULL, SL_EINVAL, 6, 19,
	 "'[' is never closed", NULL},
	{"sites:\n  - name: s1\n    region: r\n    fabrics:\n      - name: ib\n        kind: roce\n"
	 "        gbps: 100\n        leaves:\n          - name: l1\n            nodes:\n"
	 "              - range: n[9-4]\n                type: hgx-h100-8\n",
	 NULL, SL_EINVAL, 11, 26, "range runs backwards", NULL},
	/* In {...}, brackets end a plain value, so ranges there need quotes. */
	{SITE_HEAD "        {range: n[1-4], type: hgx-h100-8}]}]}\n", NULL, SL_EPARSE, 6, 18,
	 "YAML syntax error", "quote"},
	{SITE_HEAD "        {range: 'n[1-x]', type: hgx-h100-8}]}]}\n", NULL, SL_EINVAL, 6, 22,
	 "expected a digit", NULL},
	{SITE_HEAD "        {range: \"n[1-100001]\", type: hgx-h100-8}]}]}\n", NULL, SL_ELIMIT, 6, 19,
	 "more than 100000", NULL},
	{SITE_HEAD "        {name: n1, range: \"n[2-3]\", type: hgx-h100-8}]}]}\n", NULL, SL_EINVAL, 6,
	 20, "either 'name' or 'range', not both", NULL},
	{SITE_HEAD "        {type: hgx-h100-8}]}]}\n", NULL, SL_EINVAL, 6, 9,
	 "node entry is missing 'name' or 'range'", NULL},
	{SITE_HEAD "        {name: n1}]}]}\n", NULL, SL_EINVAL, 6, 9, "node entry is missing 'type'",
	 NULL},
	{SITE_HEAD "        n1]}]}\n", NULL, SL_EINVAL, 6, 9, "expected node entry as a mapping", NULL},
	{SITE_HEAD "        {name: n1, type: hgx-h100-8, shareable: yes}]}]}\n", NULL, SL_EINVAL, 6, 49,
	 "expected true or false for 'shareable', got 'yes'", NULL},
	{SITE_HEAD "        {name: n1, type: hgx-h100-8, price_hint: -5}]}]}\n", NULL, SL_EINVAL, 6,
	 50, "expected an integer from 0 to 100000000000 for 'price_hint'", NULL},
	{SITE_HEAD "        {name: n1, type: hgx-h100-8, price_hint: 1.5}]}]}\n", NULL, SL_EINVAL, 6,
	 50, "got '1.5'", NULL},
	{SITE_HEAD "        {name: n 1, type: hgx-h100-8}]}]}\n", NULL, SL_EINVAL, 6, 16,
	 "bad node name 'n 1'", NULL},
	{SITE_HEAD "        {name: n1, type: h100}]}]}\n", NULL, SL_EINVAL, 6, 26,
	 "unknown node type 'h100'", "declare 'h100' under node_types"},
	{SITE_HEAD "        {name: \"n\\0x\", type: hgx-h100-8}]}]}\n", NULL, SL_EINVAL, 6, 16,
	 "contains a NUL character", NULL},
	{"sites:\n  - {name: s1, region: r1, \"fabrics\\0x\": []}\n", NULL, SL_EINVAL, 2, 28,
	 "a key in site contains a NUL character", NULL},
	{SITE_HEAD "        {range: \"a[000001-100000]\", type: pcie-l40s-8},\n"
		   "        {range: \"b[000001-100000]\", type: pcie-l40s-8},\n"
		   "        {name: c, type: pcie-l40s-8}]}]}\n", NULL, SL_ELIMIT, 8, 16,
	 "a fleet holds at most 200000 nodes", NULL},
	/* NVLink domains and owners */
	{SITE_HEAD "        {range: \"h[1-2]\", type: hgx-h100-8}]}]}\n"
		   "nvlink_domains:\n  - {name: d1, nodes: \"h[1-2]\"}\n", NULL, SL_EINVAL, 8, 23,
	 "cannot be in NVLink domain 'd1'", NULL},
	{SITE_HEAD "        {range: \"t[01-19]\", type: gb200-nvl72-tray}]}]}\n"
		   "nvlink_domains:\n  - {name: d1, nodes: \"t[01-19]\"}\n", NULL, SL_EINVAL, 8, 23,
	 "76 GPUs; a gb200 domain holds at most 72", NULL},
	/* Refused after the first 19 trays, not after a quadratic scan of all
	 * 100,000 (which took seconds); the message still counts every GPU. */
	{SITE_HEAD "        {range: \"t[000001-100000]\", type: gb200-nvl72-tray}]}]}\n"
		   "nvlink_domains:\n  - {name: d1, nodes: \"t[000001-100000]\"}\n", NULL, SL_EINVAL,
	 8, 23, "400000 GPUs; a gb200 domain holds at most 72", NULL},
	{SITE_HEAD "        {range: \"t[01-04]\", type: gb200-nvl72-tray}]}]}\n"
		   "nvlink_domains:\n  - {name: d1, nodes: [\"t[01-02]\", t03]}\n"
		   "  - {name: d2, nodes: [t04, t03]}\n", NULL, SL_ECONFLICT, 9, 23,
	 "node 't03' is already in NVLink domain 'd1'", NULL},
	{SITE_HEAD "        {range: \"t[01-04]\", type: gb200-nvl72-tray}]}]}\n"
		   "nvlink_domains:\n  - {name: d1, nodes: \"t[01-05]\"}\n", NULL, SL_ENOTFOUND, 8, 23,
	 "unknown node 't05' in NVLink domain 'd1'", NULL},
	{SITE_HEAD "        {name: n1, type: hgx-h100-8}]}]}\n"
		   "owners:\n  - {tenant: acme, nodes: n2}\n", NULL, SL_ENOTFOUND, 8, 27,
	 "unknown node 'n2' in owners of tenant 'acme'", NULL},
	{SITE_HEAD "        {name: n1, type: hgx-h100-8}]}]}\n"
		   "owners:\n  - {tenant: acme, nodes: n1}\n  - {tenant: beta, nodes: [n1]}\n", NULL,
	 SL_ECONFLICT, 9, 28, "node 'n1' is already owned by tenant 'acme'", NULL},
	{"owners:\n  - {tenant: acme}\n", NULL, SL_EINVAL, 2, 5, "owner is missing 'nodes'", NULL},
	/* node types */
	{TYPE_HEAD "    gpu: h100\n", NULL, SL_EINVAL, 7, 5, "duplicate key 'gpu' in node type", NULL},
	{"node_types:\n  - {name: t1, gpu: h100-sxn, gpus: 8, cpus: 1, memory_gib: 1}\n", NULL,
	 SL_EINVAL, 2, 21, "unknown GPU model 'h100-sxn'; expected one of h100-sxm, ",
	 "did you mean 'h100-sxm'?"},
	{"node_types:\n  - {name: hgx-h100-8, gpu: h100-sxm, gpus: 8, cpus: 1, memory_gib: 1}\n",
	 NULL, SL_EEXIST, 2, 12, "node type 'hgx-h100-8' already exists (a built-in type", NULL},
	{"node_types:\n  - {name: t1, gpu: h100-sxm, gpus: 17, cpus: 1, memory_gib: 1}\n", NULL,
	 SL_EINVAL, 2, 37, "expected an integer from 1 to 16 for 'gpus'", NULL},
	{"node_types:\n  - {name: t1, gpu: h100-sxm, gpus: 8, memory_gib: 1}\n", NULL, SL_EINVAL, 2,
	 5, "node type is missing 'cpus'", NULL},
	{"node_types:\n  - {name: t1, gpu: h100-sxm, gpus: 8, cpus: 1, cpu_milli: 1000, memory_gib: 1}\n",
	 NULL, SL_EINVAL, 2, 49, "node type has both 'cpus' and 'cpu_milli'; give one", NULL},
	{"node_types:\n  - {name: t1, gpu: h100-sxm, gpus: 8, cpu_milli: 0, memory_gib: 1}\n",
	 NULL, SL_EINVAL, 2, 51, "for 'cpu_milli'", NULL},
	{TYPE_HEAD "    numa: [0, 1, 1]\n", NULL, SL_EINVAL, 7, 11,
	 "'numa' lists 3 NUMA nodes; expected one per GPU (2)", NULL},
	{TYPE_HEAD "    links: [{gpus: [0, 2], kind: nvlink}]\n", NULL, SL_EINVAL, 7, 24,
	 "expected an integer from 0 to 1 for 'gpus', got '2'", NULL},
	{TYPE_HEAD "    links: [{gpus: [0, 1], kind: nvlinc}]\n", NULL, SL_EINVAL, 7, 34,
	 "unknown link kind 'nvlinc'; expected one of cross-socket, ", "did you mean 'nvlink'?"},
	{TYPE_HEAD "    links: [{gpus: [0], kind: nvlink}]\n", NULL, SL_EINVAL, 7, 20,
	 "a link joins two GPUs", NULL},
	{TYPE_HEAD "    links: [{gpus: [0, 1], kind: nvlink}, {gpus: [1, 0], kind: pcie-switch}]\n", NULL,
	 SL_EINVAL, 7, 50, "the link between GPUs 0 and 1 is listed twice", NULL},
	{TYPE_HEAD "    links: [{gpus: [0, 1], kind: pcie-switch, count: 3}]\n", NULL, SL_EINVAL, 7,
	 13, "a link count only applies to nvlink and hccs", NULL},
	{TYPE_HEAD "    nics: [{name: mlx5_0, gbps: 400, gpus: [0, 0]}]\n", NULL, SL_EINVAL, 7, 48,
	 "GPU 0 is listed twice in 'gpus'", NULL},
	{TYPE_HEAD "    groups: [[0], [0, 1]]\n", NULL, SL_EINVAL, 7, 19, "overlap", NULL},
	{TYPE_HEAD "    groups_strict: maybe\n", NULL, SL_EINVAL, 7, 20, "expected true or false", NULL},
	{TYPE_HEAD "    numa: [0, 0]\n    topo_matrix: |\n      GPU0 GPU1\n", NULL, SL_EINVAL, 7, 5,
	 "'numa' cannot be combined with 'topo_matrix'", NULL},
	{TYPE_HEAD "    topo_matrix: [x]\n", NULL, SL_EINVAL, 7, 18,
	 "expected a string for 'topo_matrix', got a list", NULL},
	/* YAML itself and the bounds */
	{"sites: [\n", NULL, SL_EPARSE, 2, 1, "YAML syntax error", NULL},
	{"sites: []\nowners: [\xff]\n", NULL, SL_EPARSE, 2, 10, "expected UTF-8 text", NULL},
	{"sites:\n", NULL, SL_EINVAL, 1, 7, "expected a list of sites for 'sites', got nothing", NULL},
	{SITE_HEAD "        {range: \"a[000001-100000]\", type: l40s-pcie-8}]}]}\n", NULL, SL_EINVAL,
	 6, 43, "unknown node type 'l40s-pcie-8'", "declare 'l40s-pcie-8' under node_types"},
	{"sites:\n  - name: a\n   region: b\n", NULL, SL_EPARSE, 3, 4, "YAML syntax error", NULL},
	{"sites:\n\t- name: a\n", NULL, SL_EPARSE, 2, 1, "YAML syntax error", NULL},
	{"x: 1\n---\ny: 2\n", NULL, SL_EPARSE, 2, 1, "second YAML document", NULL},
	{"sites: &s []\n", NULL, SL_EPARSE, 1, 8, "anchors (&name) are not supported", NULL},
	{"sites: *s\n", NULL, SL_EPARSE, 1, 8, "aliases (*name) are not supported", NULL},
	{"sites: !!seq []\n", NULL, SL_EPARSE, 1, 8, "tags (such as !!str) are not supported", NULL},
	{"sites: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n", NULL,
	 SL_ELIMIT, 1, 39, "nesting deeper than 32 levels", NULL},
};

/* A node type may count its CPUs in thousandths of a core (cpu_milli): what a
 * fleet made from the openb traces needs (sim openb --write-fleet). */
static void test_cpu_milli_type(void **state)
{
	(void)state;
	static const char text[] =
		"node_types:\n  - {name: milli, gpu: l40s, gpus: 2, cpu_milli: 64500, memory_gib: 256}\n"
		"  - {name: cores, gpu: l40s, gpus: 2, cpus: 64, memory_gib: 256}\n";
	struct fleet f;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(fleet_init(&f), SL_OK);
	assert_int_equal(fleet_load_yaml(&f, text, strlen(text), "t.yaml", &d), SL_OK);
	const struct node_type *m = &f.types[fleet_find_type(&f, "milli")];
	const struct node_type *c = &f.types[fleet_find_type(&f, "cores")];
	assert_int_equal(m->cpus, 64500);
	assert_true(m->cpu_milli);
	assert_int_equal(c->cpus, 64);
	assert_false(c->cpu_milli);
	fleet_release(&f);
}

static void test_bad_files(void **state)
{
	(void)state;
	int failures = 0; /* report every case that is off, then fail */
	for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		const struct bad *b = &bad_files[i];
		size_t len;
		char *owned = NULL;
		const char *text = b->text;
		if (b->file) {
			owned = read_data(b->file, &len);
			text = owned;
		} else {
			len = strlen(text);
		}
		struct fleet f;
		struct sl_diag d;
		char msg[1024];
		assert_int_equal(fleet_init(&f), SL_OK);
		enum sl_err e = fleet_load_yaml(&f, text, len, "fleet.yaml", &d);
		sl_diag_format(&d, msg, sizeof(msg));
		if (e != b->err || d.line != b->line || d.col != b->col || !strstr(d.msg, b->msg) ||
		    (b->hint && !strstr(d.hint, b->hint)))
			print_error("case %zu (%s): got %s at %d:%d '%s' hint '%s'; want %s at %d:%d '%s'\n",
				    i, b->file ? b->file : "inline", sl_err_code(e), d.line, d.col,
				    d.msg, d.hint, sl_err_code(b->err), b->line, b->col, b->msg),
				failures++;
		assert_string_equal(d.file, "fleet.yaml");
		assert_true(strncmp(msg, "fleet.yaml:", 11) == 0);
		assert_pristine(&f);
		fleet_release(&f);
		free(owned);
	}
	assert_int_equal(failures, 0);
}

/* A YAML error inside a 'topo_matrix: |' block is a pasted `nvidia-smi topo
 * -m` table whose first line YAML cannot place: the hint says to write '|2'.
 * An error elsewhere, or in a block that has its indicator, keeps the usual
 * hint. */
struct matrix_case {
	const char *text;
	int line, col;
	bool fix; /* the hint says topo_matrix: |2 */
};

#define MX_HEAD TYPE_HEAD "    topo_matrix: |\n" /* the block starts on line 7 */

static void test_pasted_matrix_hint(void **state)
{
	(void)state;
	static const struct matrix_case cases[] = {
		/* As printed: the header row begins with a tab. */
		{MX_HEAD "      \tGPU0\tGPU1\tCPU Affinity\n      GPU0\t X \tNV12\t0-31\n", 8, 7, true},
		/* Copied from a terminal: the tab became spaces, wider than the rows. */
		{MX_HEAD "              GPU0    GPU1    CPU Affinity\n"
			 "      GPU0     X      NV12    0-31\n      GPU1    NV12     X      0-31\n",
		 9, 7, true},
		/* A row pasted without the block's indentation. */
		{MX_HEAD "      GPU0    GPU1\n      GPU0     X      NV12\n\tGPU1    NV12     X\n", 10, 1,
		 true},
		/* In a list item, with a chomping indicator and a comment. */
		{"node_types:\n  - topo_matrix: |-  # from dgx-01\n              GPU0    GPU1\n"
		 "      GPU0     X      NV12\n",
		 4, 7, true},
		/* The block ended; the error is in what follows. */
		{MX_HEAD "      GPU0 GPU1\n    links: [\n", 10, 1, false},
		/* The indicator is there already: the usual hint. */
		{TYPE_HEAD "    topo_matrix: |2\n\tGPU0\tGPU1\n", 8, 1, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct matrix_case *c = &cases[i];
		struct fleet f;
		struct sl_diag d;
		assert_int_equal(fleet_init(&f), SL_OK);
		enum sl_err e = fleet_load_yaml(&f, c->text, strlen(c->text), "fleet.yaml", &d);
		bool fix = strstr(d.hint, "'topo_matrix: |2'") != NULL;
		if (e != SL_EPARSE || d.line != c->line || d.col != c->col || fix != c->fix)
			fail_msg("case %zu: got %s at %d:%d '%s' hint '%s'; want %d:%d, fix %d", i,
				 sl_err_code(e), d.line, d.col, d.msg, d.hint, c->line, c->col, c->fix);
		if (fix)
			assert_non_null(strstr(d.hint, "block of line"));
		fleet_release(&f);
	}
}

/* A failed load leaves f usable: the same fleet then takes a good file. */
static void test_failed_load_leaves_fleet_usable(void **state)
{
	(void)state;
	struct fleet f;
	struct sl_diag d;
	size_t len;
	char *good = read_data("example.yaml", &len);
	assert_int_equal(fleet_init(&f), SL_OK);
	/* Fails late (owners), after sites, types and domains were built. */
	static const char late[] = "sites:\n  - {name: s1, region: r, fabrics: [{name: f, kind: roce, "
				   "gbps: 1, leaves: [{name: l, nodes: [{name: n1, type: hgx-h100-8}]}]}]}\n"
				   "node_types:\n  - {name: t1, gpu: l40s, gpus: 1, cpus: 1, memory_gib: 1}\n"
				   "owners:\n  - {tenant: acme, nodes: zz}\n";
	assert_int_equal(fleet_load_yaml(&f, late, sizeof(late) - 1, "late.yaml", &d), SL_ENOTFOUND);
	assert_pristine(&f);
	assert_int_equal(fleet_find_type(&f, "t1"), -1);
	assert_int_equal(fleet_load_yaml(&f, good, len, "example.yaml", &d), SL_OK);
	check_example(&f);
	fleet_release(&f);
	free(good);
}

static void test_file_size_limit(void **state)
{
	(void)state;
	size_t len = (size_t)FLEET_MAX_FILE + 1;
	char *text = malloc(len);
	assert_non_null(text);
	memset(text, ' ', len);
	struct fleet f;
	struct sl_diag d;
	assert_int_equal(fleet_init(&f), SL_OK);
	assert_int_equal(fleet_load_yaml(&f, text, len, "big.yaml", &d), SL_ELIMIT);
	assert_non_null(strstr(d.msg, "at most 67108864"));
	assert_pristine(&f);
	fleet_release(&f);
	free(text);
}

/* The text need not be NUL-terminated: only len bytes are read. */
static void test_text_is_bounded_by_len(void **state)
{
	(void)state;
	static const char text[] = "sites: []\nowners: zz-not-part";
	struct fleet f;
	struct sl_diag d;
	assert_int_equal(fleet_init(&f), SL_OK);
	assert_int_equal(fleet_load_yaml(&f, text, 10, "x.yaml", &d), SL_OK);
	assert_int_equal(fleet_load_yaml(&f, text, sizeof(text) - 1, "x.yaml", &d), SL_EINVAL);
	/* Diagnostics are optional. */
	assert_int_equal(fleet_load_yaml(&f, text, sizeof(text) - 1, "x.yaml", NULL), SL_EINVAL);
	assert_int_equal(fleet_load_yaml(&f, "sites: [", 8, "x.yaml", NULL), SL_EPARSE);
	assert_int_equal(fleet_load_yaml(&f, "a: [1-", 6, NULL, &d), SL_EPARSE);
	assert_null(d.file);
	fleet_release(&f);
}

/* 10,000 nodes: half one entry per line, half in ranges of 100. */
static char *gen_big(size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	n += (size_t)snprintf(buf + n, cap - n,
			      "sites:\n  - name: big\n    region: cn-east\n    fabrics:\n"
			      "      - name: ib\n        kind: infiniband\n        gbps: 400\n"
			      "        leaves:\n");
	for (int leaf = 0; leaf < 100; leaf++) {
		n += (size_t)snprintf(buf + n, cap - n,
				      "          - name: leaf-%03d\n            nodes:\n", leaf);
		if (leaf < 50) {
			for (int i = 0; i < 100; i++)
				n += (size_t)snprintf(buf + n, cap - n,
						      "              - {name: n-%03d-%03d, type: hgx-h100-8}\n",
						      leaf, i);
		} else {
			n += (size_t)snprintf(buf + n, cap - n,
					      "              - {range: \"n-%03d-[000-099]\", type: hgx-h200-8}\n",
					      leaf);
		}
		assert_true(n < cap - 8192);
	}
	*len = n;
	return buf;
}

static void test_ten_thousand_nodes(void **state)
{
	(void)state;
	size_t len;
	char *text = gen_big(&len);
	struct fleet f;
	struct sl_diag d;
	assert_int_equal(fleet_init(&f), SL_OK);
	assert_int_equal(fleet_load_yaml(&f, text, len, "big.yaml", &d), SL_OK);
	assert_int_equal(f.nnodes, 10000);
	assert_int_equal(f.nleaves, 100);
	assert_int_equal(node(&f, "n-000-000"), 0);
	assert_int_equal(node(&f, "n-099-099"), 9999);
	int n = node(&f, "n-073-042");
	assert_string_equal(f.leaves[f.nodes[n].leaf].name, "leaf-073");
	assert_string_equal(fleet_node_type(&f, n)->name, "hgx-h200-8");
	struct fleet_summary s;
	fleet_summarize(&f, &s);
	assert_int_equal(s.gpus, 80000);
	fleet_release(&f);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example_flow_style),
		cmocka_unit_test(test_example_block_style),
		cmocka_unit_test(test_design_excerpt_verbatim),
		cmocka_unit_test(test_topo_matrix_type),
		cmocka_unit_test(test_bad_files), cmocka_unit_test(test_cpu_milli_type),
		cmocka_unit_test(test_pasted_matrix_hint),
		cmocka_unit_test(test_failed_load_leaves_fleet_usable),
		cmocka_unit_test(test_file_size_limit),
		cmocka_unit_test(test_text_is_bounded_by_len),
		cmocka_unit_test(test_ten_thousand_nodes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

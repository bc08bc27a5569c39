/* test_slurm_import.c - Slurm sites to fleet files (slurm_import.h).
 *
 * Four sites of the shapes published Slurm configurations take
 * (tests/data/slurm/SOURCES.md): a flat campus cluster, an H200 pod with a
 * gres.conf of NVML Links and a two-leaf tree, two GB200 NVL72 racks as
 * topology/block blocks, and a mixed site with PCIe pairs, unknown GPUs, a
 * mixed node and a three-level tree. Each result must load as a fleet file,
 * say what it left out with file and line, and place as the hardware would. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "place.h"
#include "slurm_import.h"
#include "testdata.h"

struct site {
	char *text[3];
	struct slurm_input in;
	struct slurm_result r;
	struct fleet f;
};

static void load(struct site *s, const char *dir, bool gres, bool topo)
{
	static const char *const files[3] = {"slurm.conf", "gres.conf", "topology.conf"};
	bool want[3] = {true, gres, topo};
	memset(s, 0, sizeof(*s));
	struct slurm_text *tx[3] = {&s->in.slurm, &s->in.gres, &s->in.topo};
	for (int i = 0; i < 3; i++) {
		if (!want[i])
			continue;
		char rel[256];
		snprintf(rel, sizeof(rel), "slurm/%s/%s", dir, files[i]);
		s->text[i] = testdata_read(rel, &tx[i]->len);
		tx[i]->text = s->text[i];
		tx[i]->name = files[i];
	}
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(slurm_import(&s->in, &s->r, &d), SL_OK);
	assert_int_equal(fleet_init(&s->f), SL_OK);
	enum sl_err e = fleet_load_yaml(&s->f, s->r.yaml, s->r.len, "imported", &d);
	if (e)
		fail_msg("%s: the imported fleet does not load: %d:%d %s\n%s", dir, d.line, d.col,
			 d.msg, s->r.yaml);
}

static void drop(struct site *s)
{
	fleet_release(&s->f);
	slurm_result_release(&s->r);
	for (int i = 0; i < 3; i++)
		free(s->text[i]);
}

/* The note at file:line whose message contains what (untranslated or not). */
static const struct slurm_note *find_note(const struct site *s, const char *file, int line,
					  const char *what)
{
	for (int i = 0; i < s->r.nnotes; i++) {
		const struct slurm_note *n = &s->r.notes[i];
		if (!strcmp(n->file, file) && (line < 0 || n->line == line) && strstr(n->msg, what))
			return n;
	}
	return NULL;
}

static struct placement place_ok(struct placer *p, int gpus, int per_node)
{
	struct place_request r;
	memset(&r, 0, sizeof(r));
	r.gpus = gpus;
	r.per_node = per_node;
	struct placement pl;
	placement_init(&pl);
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(placer_place(p, &r, &pl, &d), SL_OK);
	return pl;
}

static void test_gpu_models(void **state)
{
	(void)state;
	static const struct {
		const char *slurm, *model;
	} t[] = {{"a100", "a100-sxm"},        {"nvidia_a100-sxm4-80gb", "a100-sxm"},
		 {"a100_pcie", NULL},         {"nvidia_h100_80gb_hbm3", "h100-sxm"},
		 {"H100NVL", "h100-nvl"},     {"nvidia_h200", "h200-sxm"},
		 {"gb200", "gb200"},          {"b200", "b200"},
		 {"l40s", "l40s"},            {"rtx_a6000", NULL},
		 {"tesla_v100", NULL},        {"ascend910b", "ascend-910b"}};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		const char *m = slurm_gpu_model(t[i].slurm);
		if (t[i].model)
			assert_string_equal(m, t[i].model);
		else
			assert_null(m);
	}
}

static void test_flat_campus(void **state)
{
	(void)state;
	struct site s;
	load(&s, "flat-a100", false, false);
	assert_int_equal(s.r.nodes, 4);
	assert_int_equal(s.r.gpus, 32);
	assert_int_equal(s.f.nleaves, 1);
	/* 1031000 MB is not the built-in's 1024 GiB: a copy with the site's figures. */
	assert_non_null(strstr(s.r.yaml, "hgx-a100-8-128c-1006g"));
	assert_non_null(find_note(&s, "slurm.conf", 25, "partition cpu"));
	assert_non_null(find_note(&s, "slurm.conf", 26, "partition gpu"));
	assert_non_null(find_note(&s, "slurm.conf", 23, "Feature=a100,ib"));
	assert_non_null(find_note(&s, "slurm.conf", 22, "no GPUs"));
	assert_non_null(find_note(&s, "slurm.conf", 0, "no topology.conf"));
	struct placer *p;
	assert_int_equal(placer_new(&s.f, &p), SL_OK);
	struct placement pl = place_ok(p, 8, 0);
	assert_int_equal(pl.score.bottleneck_gbps, 600); /* NVSwitch A100 */
	placement_release(&pl);
	placer_free(p);
	drop(&s);
}

static void test_h200_tree(void **state)
{
	(void)state;
	struct site s;
	load(&s, "h200-tree", true, true);
	assert_int_equal(s.r.nodes, 8);
	assert_int_equal(s.f.nleaves, 2);
	assert_int_equal(s.f.nfabrics, 1);
	assert_string_equal(s.f.fabrics[0].name, "ib-spine");
	/* Links= all 1 with the GPU itself at 7-i: an NVSwitch board, the built-in's. */
	assert_non_null(strstr(s.r.yaml, "type: hgx-h200-8-112c-2014g"));
	assert_null(find_note(&s, "gres.conf", -1, "links ignored"));
	assert_non_null(find_note(&s, "topology.conf", 2, "LinkSpeed"));
	assert_non_null(find_note(&s, "slurm.conf", 9, "partition batch"));
	/* A 4-node gang fits one leaf; a 5-node one needs both. */
	struct placer *p;
	assert_int_equal(placer_new(&s.f, &p), SL_OK);
	struct placement pl = place_ok(p, 32, 8);
	assert_int_equal(pl.score.leaves, 1);
	placement_release(&pl);
	pl = place_ok(p, 40, 8);
	assert_int_equal(pl.score.leaves, 2);
	placement_release(&pl);
	placer_free(p);
	drop(&s);
}

static void test_nvl72_blocks(void **state)
{
	(void)state;
	struct site s;
	load(&s, "nvl72-blocks", false, true);
	assert_int_equal(s.r.nodes, 36);
	assert_int_equal(s.f.ndomains, 2);
	assert_non_null(find_note(&s, "topology.conf", 4, "BlockSizes"));
	const struct slurm_note *n = find_note(&s, "slurm.conf", 6, "differ from built-in");
	assert_non_null(n);
	assert_int_equal(n->more, 35); /* once per line, not once per tray */
	struct placer *p;
	assert_int_equal(placer_new(&s.f, &p), SL_OK);
	struct placement pl = place_ok(p, 72, 4); /* one whole rack */
	assert_int_equal(pl.score.domains, 1);
	assert_int_equal(pl.npicks, 18);
	placement_release(&pl);
	placer_free(p);
	drop(&s);
}

static void test_mixed_site(void **state)
{
	(void)state;
	struct site s;
	load(&s, "mixed-site", true, true);
	assert_int_equal(s.r.nodes, 8); /* nvl01-04, inf01-04 */
	assert_int_equal(s.f.nleaves, 3);
	assert_string_equal(s.f.fabrics[0].name, "core");
	assert_non_null(find_note(&s, "slurm.conf", 8, "rtx_a6000"));
	assert_non_null(find_note(&s, "slurm.conf", 9, "two kinds"));
	assert_non_null(find_note(&s, "slurm.conf", 10, "without a type"));
	assert_non_null(find_note(&s, "slurm.conf", 7, "mps"));
	assert_non_null(find_note(&s, "gres.conf", 18, "mps"));
	assert_non_null(find_note(&s, "topology.conf", 5, "middle level"));
	for (int i = 0; i < s.r.nnotes; i++)
		assert_true(s.r.notes[i].msg[0] != '\0');
	/* H100 NVL pairs from Links=12: a 2-GPU lease gets a bridged pair. */
	struct placer *p;
	assert_int_equal(placer_new(&s.f, &p), SL_OK);
	struct place_request r;
	memset(&r, 0, sizeof(r));
	r.gpus = 2;
	r.models[0] = "h100-nvl";
	r.nmodels = 1;
	struct placement pl;
	placement_init(&pl);
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(placer_place(p, &r, &pl, &d), SL_OK);
	assert_int_equal(pl.score.bottleneck_gbps, 600);
	assert_int_equal(__builtin_popcount(pl.picks[0].gpus), 2);
	placement_release(&pl);
	placer_free(p);
	drop(&s);
}

static void test_errors(void **state)
{
	(void)state;
	struct slurm_input in;
	memset(&in, 0, sizeof(in));
	struct slurm_result r;
	struct sl_diag d;
	sl_diag_clear(&d);
	static const char none[] = "NodeName=c[1-2] CPUs=8 RealMemory=1000\n";
	in.slurm = (struct slurm_text){"slurm.conf", none, sizeof(none) - 1};
	assert_int_equal(slurm_import(&in, &r, &d), SL_EINVAL);
	slurm_result_release(&r);
	static const char bad[] = "NodeName=g[1-x] Gres=gpu:h100:8\n";
	in.slurm = (struct slurm_text){"slurm.conf", bad, sizeof(bad) - 1};
	assert_int_equal(slurm_import(&in, &r, &d), SL_EPARSE);
	assert_non_null(strstr(d.msg, "slurm.conf:1"));
	slurm_result_release(&r);
	/* Two bracket groups and a continuation line. */
	static const char two[] = "NodeName=r[1-2]n[01-03] \\\n  Gres=gpu:h100:8 CPUs=224 "
				  "ThreadsPerCore=2 RealMemory=2097152\n";
	in.slurm = (struct slurm_text){"slurm.conf", two, sizeof(two) - 1};
	assert_int_equal(slurm_import(&in, &r, &d), SL_OK);
	assert_int_equal(r.nodes, 6);
	assert_non_null(strstr(r.yaml, "{name: r2n03, type: hgx-h100-8}"));
	assert_int_equal(r.custom_types, 0); /* exactly the built-in */
	slurm_result_release(&r);
}

/* Found by fuzz_slurm: blocks of topology/block are NVLink domains, so the
 * fleet's domain rules apply to them - nodes without multi-node NVLink, a
 * second GPU model, a node in two blocks, a block past the model's domain
 * size and bad names are left out with a note instead of writing a fleet
 * file that does not load. */
static void test_block_rules(void **state)
{
	(void)state;
	static const char conf[] =
		"ClusterName=bad:name\n"
		"NodeName=h[1-2] Gres=gpu:h200:8 CPUs=112 RealMemory=2063000\n"
		"NodeName=g[01-20] Gres=gpu:gb200:4 CPUs=144 RealMemory=884000\n"
		"NodeName=b1 Gres=gpu:b200:8 CPUs=112 RealMemory=2063000\n";
	static const char topo[] =
		"BlockName=rack1 Nodes=h[1-2],g[01-19],b1\n"
		"BlockName=rack2 Nodes=g[01-02],g20\n"
		"BlockName=rack1 Nodes=g20\n"
		"SwitchName=fabric-1 Nodes=g[01-10]\n"
		"SwitchName=bad{name} Nodes=g[11-20]\n";
	struct slurm_input in;
	memset(&in, 0, sizeof(in));
	in.slurm = (struct slurm_text){"slurm.conf", conf, sizeof(conf) - 1};
	in.topo = (struct slurm_text){"topology.conf", topo, sizeof(topo) - 1};
	struct site s;
	memset(&s, 0, sizeof(s));
	s.in = in;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(slurm_import(&s.in, &s.r, &d), SL_OK);
	assert_int_equal(fleet_init(&s.f), SL_OK);
	if (fleet_load_yaml(&s.f, s.r.yaml, s.r.len, "imported", &d))
		fail_msg("the imported fleet does not load: %d:%d %s\n%s", d.line, d.col, d.msg,
			 s.r.yaml);
	assert_int_equal(s.f.ndomains, 2);
	assert_int_equal(s.f.domains[0].nnodes, 18); /* 72 GPUs: g01-g18 */
	assert_int_equal(s.f.domains[1].nnodes, 1);  /* g20 */
	assert_non_null(find_note(&s, "topology.conf", 1, "no multi-node NVLink"));
	assert_non_null(find_note(&s, "topology.conf", 1, "at most 72 GPUs"));
	assert_non_null(find_note(&s, "topology.conf", 2, "already in block rack1"));
	assert_non_null(find_note(&s, "topology.conf", 3, "defined again"));
	assert_non_null(find_note(&s, "topology.conf", 5, "not a valid suanli name"));
	assert_non_null(find_note(&s, "slurm.conf", 1, "ClusterName"));
	drop(&s);
}

/* Found by fuzz_slurm: a custom one-GPU type was written with "links:" and
 * no list, which the fleet file refuses. */
static void test_one_gpu_type(void **state)
{
	(void)state;
	static const char conf[] = "NodeName=g[1-2] Gres=gpu:a100:1 CPUs=128 RealMemory=1031000\n";
	struct site s;
	memset(&s, 0, sizeof(s));
	s.in.slurm = (struct slurm_text){"slurm.conf", conf, sizeof(conf) - 1};
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(slurm_import(&s.in, &s.r, &d), SL_OK);
	assert_int_equal(s.r.custom_types, 1);
	assert_int_equal(fleet_init(&s.f), SL_OK);
	if (fleet_load_yaml(&s.f, s.r.yaml, s.r.len, "imported", &d))
		fail_msg("the imported fleet does not load: %d:%d %s\n%s", d.line, d.col, d.msg,
			 s.r.yaml);
	assert_int_equal(s.f.nnodes, 2);
	drop(&s);
}

/* Found by fuzz_slurm: the import must stay inside the fleet file's bounds -
 * CPUs and memory of a node type, and the number of node types - leaving a
 * node out with a note rather than writing a file that does not load. */
static void test_fleet_bounds(void **state)
{
	(void)state;
	struct sl_buf b = SL_BUF_INIT(1u << 20);
	sl_buf_addf(&b, "NodeName=big Gres=gpu:h100:8 CPUs=84000 RealMemory=1000000\n");
	for (int i = 0; i < 300; i++) /* 300 shapes: more custom types than a fleet holds */
		sl_buf_addf(&b, "NodeName=n%d Gres=gpu:h100:8 CPUs=%d RealMemory=1000000\n", i, 100 + i);
	assert_int_equal(sl_buf_err(&b), SL_OK);
	struct site s;
	memset(&s, 0, sizeof(s));
	s.in.slurm = (struct slurm_text){"slurm.conf", sl_buf_str(&b), b.len};
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(slurm_import(&s.in, &s.r, &d), SL_OK);
	assert_int_equal(fleet_init(&s.f), SL_OK);
	if (fleet_load_yaml(&s.f, s.r.yaml, s.r.len, "imported", &d))
		fail_msg("the imported fleet does not load: %d:%d %s", d.line, d.col, d.msg);
	assert_true(s.f.ntypes <= FLEET_MAX_TYPES);
	assert_true(s.r.nodes > 100 && s.r.nodes < 300);
	assert_non_null(find_note(&s, "slurm.conf", 1, "more than a fleet file takes"));
	assert_non_null(find_note(&s, "slurm.conf", 301, "one node type more"));
	drop(&s);
	sl_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpu_models), cmocka_unit_test(test_flat_campus),
		cmocka_unit_test(test_h200_tree),  cmocka_unit_test(test_nvl72_blocks),
		cmocka_unit_test(test_mixed_site), cmocka_unit_test(test_errors),
		cmocka_unit_test(test_block_rules), cmocka_unit_test(test_one_gpu_type),
		cmocka_unit_test(test_fleet_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

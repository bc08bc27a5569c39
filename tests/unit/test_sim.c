/* test_sim.c - `suanli sim` core: trace CSV parsing, fleets from node lists,
 * custom GPU models, the saturation loop on hand-made traces (exact curves),
 * gpu_spec filtering, shares, CPU-only requests, the fragmentation-aware
 * policy against best fit, the time replay and the SVG writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"
#include "sim_history.h"
#include "svg_plot.h"

/* ---- helpers ------------------------------------------------------------- */

struct world {
	struct fleet f;
	struct sim_node *nodes;
	int nnodes;
	struct sim_pod *pods;
	int npods;
	struct placer *p;
	struct place_class *cls;
	int ncls;
};

static void world_load(struct world *w, const char *nodes, const char *pods, bool frag)
{
	struct sl_diag d;
	int skipped;
	memset(w, 0, sizeof(*w));
	assert_int_equal(sim_parse_nodes(nodes, strlen(nodes), "n.csv", &w->nodes, &w->nnodes, &d),
			 SL_OK);
	assert_int_equal(fleet_init(&w->f), SL_OK);
	assert_int_equal(sim_build_fleet(&w->f, w->nodes, w->nnodes, &skipped, &d), SL_OK);
	assert_int_equal(sim_parse_pods(pods, strlen(pods), "p.csv", &w->pods, &w->npods, &d),
			 SL_OK);
	assert_int_equal(placer_new(&w->f, &w->p), SL_OK);
	if (frag) {
		assert_int_equal(sim_workload(&w->f, w->pods, w->npods, &w->cls, &w->ncls, &d), SL_OK);
		assert_int_equal(placer_set_workload(w->p, w->cls, w->ncls, &d), SL_OK);
	}
}

static void world_free(struct world *w)
{
	placer_free(w->p);
	fleet_release(&w->f);
	free(w->nodes);
	free(w->pods);
	free(w->cls);
}

/* ---- parsing ------------------------------------------------------------- */

static void test_parse_nodes(void **state)
{
	(void)state;
	const char *t = "sn,cpu_milli,memory_mib,gpu,model\r\n"
			"n1,64000,262144,2,P100\r\n\n"
			"cpu1,32000,131072,0,\n";
	struct sim_node *n;
	int cnt;
	struct sl_diag d;
	assert_int_equal(sim_parse_nodes(t, strlen(t), "n.csv", &n, &cnt, &d), SL_OK);
	assert_int_equal(cnt, 2);
	assert_string_equal(n[0].name, "n1");
	assert_int_equal(n[0].cpu_milli, 64000);
	assert_int_equal(n[0].mem_mib, 262144);
	assert_int_equal(n[0].gpus, 2);
	assert_string_equal(n[0].model, "P100");
	assert_int_equal(n[1].gpus, 0);
	struct fleet f;
	int skipped;
	assert_int_equal(fleet_init(&f), SL_OK);
	assert_int_equal(sim_build_fleet(&f, n, cnt, &skipped, &d), SL_OK);
	assert_int_equal(skipped, 1);
	assert_int_equal(f.nnodes, 1);
	const struct node_type *ty = fleet_node_type(&f, 0);
	assert_int_equal(ty->cpus, 64000);
	assert_int_equal(ty->mem_gib, 256);
	assert_string_equal(ty->gpu->name, "P100");
	assert_true(f.nodes[0].shareable);
	assert_ptr_equal(fleet_find_model(&f, "P100"), ty->gpu);
	assert_non_null(fleet_find_model(&f, "h100-sxm"));
	assert_null(fleet_find_model(&f, "T4"));
	fleet_release(&f);
	free(n);
}

static void expect_error(const char *text, bool pods, const char *want)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	int cnt = -1;
	enum sl_err e;
	if (pods) {
		struct sim_pod *p = (void *)1;
		e = sim_parse_pods(text, strlen(text), "p.csv", &p, &cnt, &d);
		assert_null(p);
	} else {
		struct sim_node *n = (void *)1;
		e = sim_parse_nodes(text, strlen(text), "n.csv", &n, &cnt, &d);
		assert_null(n);
	}
	assert_int_not_equal(e, SL_OK);
	assert_int_equal(cnt, 0);
	if (!strstr(d.msg, want))
		fail_msg("error '%s' lacks '%s'", d.msg, want);
}

static void test_parse_errors(void **state)
{
	(void)state;
	expect_error("sn,cpu_milli,memory_mib,gpu\nn1,1,1,1\n", false,
		     "n.csv:1: header has no column 'model'");
	expect_error("sn,cpu_milli,memory_mib,gpu,model\nn1,64x00,1,1,T4\n", false,
		     "n.csv:2:4: cpu_milli: expected an integer");
	expect_error("sn,cpu_milli,memory_mib,gpu,model\nn1,1,1,17,T4\n", false,
		     "n.csv:2:8: gpu: expected an integer 0..16, got '17'");
	expect_error("sn,cpu_milli,memory_mib,gpu,model\nn1,1,1,2,\n", false,
		     "n.csv:2:10: model: expected non-empty text");
	expect_error("sn,cpu_milli,memory_mib,gpu,model\nn1,1,1\n", false,
		     "n.csv:2: row has 3 fields; column 'gpu' missing");
	expect_error("", false, "empty file");
	const char *h = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n";
	char buf[256];
	snprintf(buf, sizeof(buf), "%sp1,1000,1024,1,1000,\np2,1000,1024,2,500,\n", h);
	expect_error(buf, true, "p.csv:3:16: gpu_milli: expected 1000 (or 0) for whole GPUs");
	snprintf(buf, sizeof(buf), "%sp1,1000,1024,0,300,\n", h);
	expect_error(buf, true, "p.csv:2:14: num_gpu: expected 1 when gpu_milli is set");
	snprintf(buf, sizeof(buf), "%sp1,-5,1024,0,0,\n", h);
	expect_error(buf, true, "p.csv:2:4: cpu_milli");
	snprintf(buf, sizeof(buf), "%sp1,1,1,1,1000,A||B\n", h);
	expect_error(buf, true, "p.csv:2:15: gpu_spec: expected model names");
}

static void test_parse_pods_and_jobs(void **state)
{
	(void)state;
	const char *t = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,creation_time,"
			"deletion_time\n"
			"p1,12000,16384,1,1000,,LS,5,105\n"
			"p2,6000,12288,1,460,V100M16|V100M32,BE,7,\n"
			"p3,500,0,0,0,,BE,,\n"
			"p4,88000,327680,8,1000,,LS,9,8\n";
	struct sim_pod *p;
	int n;
	struct sl_diag d;
	assert_int_equal(sim_parse_pods(t, strlen(t), "p.csv", &p, &n, &d), SL_OK);
	assert_int_equal(n, 4);
	assert_int_equal(p[0].gpus, 1);
	assert_int_equal(p[0].gpu_milli, 0);
	assert_int_equal(p[0].start, 5);
	assert_int_equal(p[0].duration, 100);
	assert_int_equal(p[1].gpus, 0);
	assert_int_equal(p[1].gpu_milli, 460);
	assert_int_equal(p[1].nmodels, 2);
	assert_string_equal(p[1].models[1], "V100M32");
	assert_int_equal(p[1].duration, -1);
	assert_int_equal(p[2].start, -1);
	assert_int_equal(sim_pod_milli(&p[2]), 0);
	assert_int_equal(sim_pod_milli(&p[3]), 8000);
	assert_int_equal(p[3].duration, -1); /* deleted before created: unknown */
	struct place_request r;
	sim_pod_request(&p[1], &r);
	assert_int_equal(r.gpu_milli, 460);
	assert_int_equal(r.cpu_milli, 6000);
	assert_true(r.exact_cpu_mem);
	assert_string_equal(r.models[0], "V100M16");
	free(p);

	const char *j = "submit_time,duration,gpus,gpus_per_node,model,plan\n"
			"0,60,16,8,h100-sxm,on-demand\n"
			"10,5,1,0,,spot\n";
	assert_int_equal(sim_parse_jobs(j, strlen(j), "j.csv", &p, &n, &d), SL_OK);
	assert_int_equal(n, 2);
	assert_int_equal(p[0].per_node, 8);
	assert_int_equal(p[0].gpus, 16);
	assert_string_equal(p[0].plan, "on-demand");
	assert_string_equal(p[0].name, "job-1");
	assert_int_equal(p[1].per_node, 0);
	assert_int_equal(p[1].start, 10);
	assert_int_equal(p[1].duration, 5);
	free(p);
	const char *bad = "submit_time,duration,gpus,gpus_per_node,model,plan\n0,60,12,8,,x\n";
	p = NULL;
	assert_int_equal(sim_parse_jobs(bad, strlen(bad), "j.csv", &p, &n, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "j.csv:2:9: gpus_per_node: expected a divisor of gpus"));
	assert_null(p);
}

/* Mutated files: every outcome is SL_OK with rows or an error with nothing,
 * never a crash (ASan) or a leak. */
static void test_parse_mutations(void **state)
{
	(void)state;
	const char *seed = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time,"
			   "deletion_time\np1,12000,16384,1,1000,,5,105\np2,6000,12288,1,460,"
			   "V100M16|V100M32,7,9\nsubmit_time,duration,gpus,gpus_per_node,model,plan\n";
	static const char alphabet[] = ",|\n\r0123456789-abc ";
	size_t n = strlen(seed);
	char buf[512];
	uint64_t x = 88172645463325252ULL;
	for (int it = 0; it < 20000; it++) {
		memcpy(buf, seed, n);
		size_t len = n;
		for (int k = 0; k < 1 + it % 4; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			size_t at = (size_t)(x % len);
			if (x & (1u << 20))
				buf[at] = alphabet[(x >> 32) % (sizeof(alphabet) - 1)];
			else
				len = at + 1; /* truncate */
		}
		struct sim_pod *p = NULL;
		struct sim_node *nd = NULL;
		int cnt = -1;
		struct sl_diag d;
		enum sl_err e = sim_parse_pods(buf, len, "m", &p, &cnt, &d);
		assert_true(e == SL_OK ? cnt >= 0 : (p == NULL && cnt == 0));
		free(p);
		e = sim_parse_jobs(buf, len, "m", &p, &cnt, &d);
		assert_true(e == SL_OK || p == NULL);
		free(p);
		e = sim_parse_nodes(buf, len, "m", &nd, &cnt, &d);
		assert_true(e == SL_OK || nd == NULL);
		free(nd);
	}
}

/* ---- custom models ------------------------------------------------------- */

static void test_fleet_models(void **state)
{
	(void)state;
	struct fleet f;
	struct sl_diag d;
	const struct gpu_model *m;
	assert_int_equal(fleet_init(&f), SL_OK);
	struct gpu_model g = {.name = "T4", .mem_gib = 16, .pcie_gen = 3};
	assert_int_equal(fleet_add_model(&f, &g, &m, &d), SL_OK);
	assert_string_equal(m->name, "T4");
	assert_string_equal(m->vendor, "unknown");
	assert_int_equal(m->mem_gib, 16);
	assert_int_equal(fleet_add_model(&f, &g, NULL, &d), SL_EEXIST);
	g.name = "h100-sxm";
	assert_int_equal(fleet_add_model(&f, &g, NULL, &d), SL_EEXIST);
	g.name = "bad name";
	assert_int_equal(fleet_add_model(&f, &g, NULL, &d), SL_EINVAL);
	g.name = "G9";
	g.pcie_gen = 9;
	assert_int_equal(fleet_add_model(&f, &g, NULL, &d), SL_EINVAL);
	assert_int_equal(f.nmodels, 1);
	fleet_release(&f);
}

static void test_fleet_yaml_models(void **state)
{
	(void)state;
	const char *y = "gpu_models:\n"
			"  - {name: T4, vendor: nvidia, memory_gib: 16, pcie_gen: 3}\n"
			"node_types:\n"
			"  - {name: t4x2, gpu: T4, gpus: 2, cpus: 104, memory_gib: 512}\n"
			"sites:\n"
			"  - name: s1\n"
			"    region: r1\n"
			"    fabrics:\n"
			"      - name: f1\n"
			"        kind: roce\n"
			"        gbps: 100\n"
			"        leaves:\n"
			"          - name: l1\n"
			"            nodes: [{name: n1, type: t4x2, shareable: true}]\n";
	struct fleet f;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(fleet_init(&f), SL_OK);
	if (fleet_load_yaml(&f, y, strlen(y), "f.yaml", &d) != SL_OK)
		fail_msg("%d:%d: %s", d.line, d.col, d.msg);
	const struct node_type *t = fleet_node_type(&f, 0);
	assert_string_equal(t->gpu->name, "T4");
	assert_string_equal(t->gpu->vendor, "nvidia");
	/* A request may name the fleet's own model. */
	struct placer *p;
	assert_int_equal(placer_new(&f, &p), SL_OK);
	struct place_request r = {.gpus = 1, .nmodels = 1, .models = {"T4"}};
	struct placement pl;
	placement_init(&pl);
	assert_int_equal(placer_place(p, &r, &pl, &d), SL_OK);
	r.models[0] = "P100";
	assert_int_equal(placer_place(p, &r, &pl, &d), SL_EINVAL);
	placement_release(&pl);
	placer_free(p);
	fleet_release(&f);
	/* An unknown model names where, and a duplicate of a catalog model fails. */
	const char *bad = "node_types:\n  - {name: x, gpu: T4, gpus: 2, cpus: 4, memory_gib: 8}\n";
	assert_int_equal(fleet_init(&f), SL_OK);
	assert_int_equal(fleet_load_yaml(&f, bad, strlen(bad), "f.yaml", &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "or one declared under gpu_models"));
	assert_int_equal(d.line, 2);
	fleet_release(&f);
	const char *dup = "gpu_models:\n  - {name: h100-sxm, memory_gib: 80}\n";
	assert_int_equal(fleet_init(&f), SL_OK);
	assert_int_equal(fleet_load_yaml(&f, dup, strlen(dup), "f.yaml", &d), SL_EEXIST);
	assert_int_equal(f.nmodels, 0);
	fleet_release(&f);
}

/* ---- saturation ---------------------------------------------------------- */

static const char *tiny_nodes = "sn,cpu_milli,memory_mib,gpu,model\n"
				"n1,8000,16384,2,T4\n"
				"n2,4000,8192,1,V100M16\n";

static void test_saturation_exact_curve(void **state)
{
	(void)state;
	/* 3 GPUs (3000 thousandths). Demand: 1000, 500, 500, 1000 fill the fleet
	 * exactly (100%), then 300 and 1000 fail (110%, 143%). */
	const char *pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
			   "p1,1000,1024,1,1000\n"
			   "p2,1000,1024,1,500\n"
			   "p3,1000,1024,1,500\n"
			   "p4,1000,1024,1,1000\n"
			   "p5,1000,1024,1,300\n"
			   "p6,1000,1024,1,1000\n";
	for (int frag = 0; frag < 2; frag++) {
		struct world w;
		world_load(&w, tiny_nodes, pods, frag);
		struct sim_sat_result r;
		struct sl_diag d;
		assert_int_equal(sim_saturate(w.p, w.pods, w.npods, 130, 42, false, &r, &d), SL_OK);
		assert_int_equal(r.capacity_milli, 3000);
		assert_int_equal(r.pods, 6); /* 143% >= 130%: nothing sampled */
		assert_int_equal(r.failed, 2);
		assert_int_equal(r.failed_milli, 1300);
		assert_int_equal(r.reached, SIM_CURVE_POINTS);
		for (int i = 0; i < SIM_CURVE_POINTS; i++) {
			int64_t want = i <= 33 ? 1000 : i <= 50 ? 1500 : i <= 66 ? 2000 : 3000;
			if (r.alloc_at[i] != want)
				fail_msg("frag %d: alloc_at[%d] = %lld, want %lld", frag, i,
					 (long long)r.alloc_at[i], (long long)want);
		}
		/* The two halves share one GPU. */
		int halves = 0;
		for (int g = 0; g < 2; g++)
			halves += placer_gpu_used_milli(w.p, 0, g) == 1000;
		assert_int_equal(halves, 2);
		world_free(&w);
	}
}

static void test_saturation_samples_to_inflate(void **state)
{
	(void)state;
	const char *pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
			   "p1,100,100,1,250\n";
	struct world w;
	world_load(&w, tiny_nodes, pods, true);
	struct sim_sat_result r, r2;
	struct sl_diag d;
	assert_int_equal(sim_saturate(w.p, w.pods, w.npods, 130, 7, false, &r, &d), SL_OK);
	/* 250 each until 130% of 3000: 16 pods (4000 >= 3900); 12 fit. */
	assert_int_equal(r.pods, 16);
	assert_int_equal(r.failed, 4);
	assert_int_equal(r.alloc_at[100], 3000);
	assert_int_equal(r.alloc_at[50], 1500);
	assert_int_equal(r.alloc_at[0], 250);
	placer_free(w.p);
	assert_int_equal(placer_new(&w.f, &w.p), SL_OK);
	assert_int_equal(sim_saturate(w.p, w.pods, w.npods, 1, 7, false, &r2, &d), SL_OK);
	assert_int_equal(r2.pods, 1);
	assert_int_equal(sim_saturate(w.p, w.pods, w.npods, 0, 7, false, &r2, &d), SL_EINVAL);
	world_free(&w);
}

/* The stream a live run sends (bench/openb_live.c) is the one sim_saturate
 * offers: trace order, then the seeded samples, the same length. And on the
 * sim's node types (CPUs in thousandths) a request's cpu_milli is exact. */
static void test_saturate_order(void **state)
{
	(void)state;
	const char *pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
			   "p1,100,100,1,250\np2,3152,100,1,1000\np3,0,0,0,0\n";
	struct world w;
	world_load(&w, tiny_nodes, pods, true);
	struct sim_sat_result r;
	struct sl_diag d;
	assert_int_equal(sim_saturate(w.p, w.pods, w.npods, 130, 9, false, &r, &d), SL_OK);
	int *ord, n, *again, n2;
	assert_int_equal(sim_saturate_order(w.pods, w.npods, r.capacity_milli, 130, 9, false, &ord,
					    &n, &d), SL_OK);
	assert_int_equal(n, r.pods);
	for (int i = 0; i < w.npods; i++)
		assert_int_equal(ord[i], i);
	int64_t arrived = 0;
	for (int i = 0; i < n; i++)
		arrived += sim_pod_milli(&w.pods[ord[i]]);
	assert_int_equal(arrived, r.arrived_milli);
	assert_int_equal(sim_saturate_order(w.pods, w.npods, r.capacity_milli, 130, 9, false,
					    &again, &n2, &d), SL_OK);
	assert_int_equal(n2, n);
	assert_memory_equal(again, ord, (size_t)n * sizeof(*ord));
	free(again);
	assert_int_equal(sim_saturate_order(w.pods, w.npods, r.capacity_milli, 0, 9, false, &again,
					    &n2, &d), SL_EINVAL);
	assert_null(again);
	free(ord);
	/* cpu_milli on a node type counted in thousandths: exact. */
	placer_free(w.p);
	assert_int_equal(placer_new(&w.f, &w.p), SL_OK);
	assert_true(fleet_node_type(&w.f, 0)->cpu_milli);
	struct place_request q = {.gpus = 1, .cpu_milli = 3152, .mem_mib = 100, .exact_cpu_mem = true};
	struct placement pl;
	placement_init(&pl);
	assert_int_equal(placer_place(w.p, &q, &pl, &d), SL_OK);
	assert_int_equal(pl.picks[0].cpus, 3152);
	placement_release(&pl);
	world_free(&w);
}

/* A controller's history with a share (gpus 0, gpu_milli) and a lease without
 * GPUs replays; a share with whole GPUs, or gpus 0 asking nothing, does not. */
static void test_history_shares(void **state)
{
	(void)state;
	static const char ok[] =
		"{\"fleet\":\"x\",\"leases\":[{\"id\":\"ls-1\",\"gpus\":0,\"gpu_milli\":500,"
		"\"submit_s\":10,\"start_s\":10,\"end_s\":null},{\"id\":\"ls-2\",\"gpus\":0,"
		"\"cpu_milli\":2500,\"memory_mib\":4096,\"submit_s\":12,\"start_s\":12,\"end_s\":20}]}";
	struct sim_pod *p = NULL;
	char *fleet = NULL;
	int n = 0, skipped = 0;
	int64_t t0;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(sim_parse_history(ok, strlen(ok), "h", &p, &n, &fleet, &t0, &skipped, &d),
			 SL_OK);
	assert_int_equal(n, 2);
	assert_int_equal(p[0].gpus, 0);
	assert_int_equal(p[0].gpu_milli, 500);
	assert_int_equal(sim_pod_milli(&p[0]), 500);
	assert_int_equal(p[1].cpu_milli, 2500);
	assert_int_equal(p[1].mem_mib, 4096);
	assert_int_equal(p[1].duration, 8);
	free(p);
	free(fleet);
	static const char *const bad[] = {
		"{\"fleet\":\"x\",\"leases\":[{\"gpus\":1,\"gpu_milli\":500,\"submit_s\":1}]}",
		"{\"fleet\":\"x\",\"leases\":[{\"gpus\":0,\"submit_s\":1}]}",
		"{\"fleet\":\"x\",\"leases\":[{\"gpus\":0,\"gpu_milli\":1000,\"submit_s\":1}]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = NULL;
		fleet = NULL;
		assert_int_equal(sim_parse_history(bad[i], strlen(bad[i]), "h", &p, &n, &fleet, &t0,
						   &skipped, &d), SL_EPARSE);
		assert_non_null(strstr(d.msg, "gpu_milli 1..999"));
		assert_null(p);
	}
}

static void test_gpu_spec_filtering(void **state)
{
	(void)state;
	const char *pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
			   "v,1000,1024,1,1000,V100M16|V100M32\n"
			   "v2,1000,1024,1,1000,V100M32|V100M16\n"
			   "a,1000,1024,1,1000,A10\n"
			   "t,1000,1024,1,200,A10|T4\n";
	struct world w;
	world_load(&w, tiny_nodes, pods, false);
	struct sim_sat_result r;
	struct sl_diag d;
	assert_int_equal(sim_saturate(w.p, w.pods, w.npods, 100, 1, false, &r, &d), SL_OK);
	/* v takes n2's only GPU; v2 finds no V100 left; a names no model the
	 * fleet has; t lands on a T4 of n1. */
	assert_int_equal(placer_gpu_used_milli(w.p, 1, 0), 1000);
	assert_int_equal(placer_gpu_used_milli(w.p, 0, 0) + placer_gpu_used_milli(w.p, 0, 1), 200);
	assert_true(r.failed >= 2);
	world_free(&w);
}

static void test_shares_and_cpu_only(void **state)
{
	(void)state;
	struct world w;
	world_load(&w, tiny_nodes, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n", false);
	struct place_request req = {.gpu_milli = 600, .cpus = 1000, .mem_mib = 10,
				    .exact_cpu_mem = true};
	struct placement pl;
	struct sl_diag d;
	placement_init(&pl);
	/* 600 then 500: the second cannot share the first's GPU. */
	assert_int_equal(placer_place(w.p, &req, &pl, &d), SL_OK);
	assert_int_equal(placer_claim(w.p, &pl, &d), SL_OK);
	int n0 = pl.picks[0].node, g0 = pl.picks[0].gpu;
	req.gpu_milli = 500;
	assert_int_equal(placer_place(w.p, &req, &pl, &d), SL_OK);
	assert_true(pl.picks[0].node != n0 || pl.picks[0].gpu != g0);
	assert_int_equal(pl.picks[0].cpus, 1000);
	assert_int_equal(pl.picks[0].mem_mib, 10);
	/* 400 fits beside the 600. */
	req.gpu_milli = 400;
	assert_int_equal(placer_place(w.p, &req, &pl, &d), SL_OK);
	assert_int_equal(pl.picks[0].node, n0);
	assert_int_equal(pl.picks[0].gpu, g0);
	/* CPU-only: needs exact CPUs or memory; lands where no GPU is free. */
	struct place_request cpu = {.cpus = 3000, .exact_cpu_mem = true};
	assert_int_equal(placer_place(w.p, &cpu, &pl, &d), SL_OK);
	assert_int_equal(pl.npicks, 1);
	assert_int_equal(pl.picks[0].gpus, 0);
	assert_int_equal(pl.picks[0].gpu, -1);
	assert_int_equal(placer_claim(w.p, &pl, &d), SL_OK);
	assert_int_equal(placer_cpus_used(w.p, pl.picks[0].node),
			 3000 + (pl.picks[0].node == n0 ? 1000 : 0));
	cpu.cpus = 9000;
	assert_int_equal(placer_place(w.p, &cpu, &pl, &d), SL_ENOSPACE);
	assert_int_equal(pl.failed, PLACE_C_CPU_MEM);
	struct place_request none = {.exact_cpu_mem = true};
	assert_int_equal(placer_place(w.p, &none, &pl, &d), SL_EINVAL);
	struct place_request plain = {.cpus = 5};
	assert_int_equal(placer_place(w.p, &plain, &pl, &d), SL_EINVAL);
	struct place_request gang = {.cpus = 5, .exact_cpu_mem = true, .per_node = 2};
	assert_int_equal(placer_place(w.p, &gang, &pl, &d), SL_EINVAL);
	placement_release(&pl);
	world_free(&w);
}

/* A CPU-rich and a CPU-poor node, pods light and heavy on CPU: best fit puts
 * the first light pod on the rich node (name order) and strands a GPU of the
 * poor one; the fragmentation-aware policy keeps the rich node for heavy pods. */
static void test_frag_beats_best_fit(void **state)
{
	(void)state;
	const char *nodes = "sn,cpu_milli,memory_mib,gpu,model\n"
			    "a-rich,16000,65536,2,T4\n"
			    "b-poor,2000,65536,2,T4\n";
	const char *pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
			   "light1,1000,1024,1,1000\n"
			   "heavy1,8000,1024,1,1000\n"
			   "heavy2,8000,1024,1,1000\n"
			   "light2,1000,1024,1,1000\n";
	int64_t got[2];
	for (int frag = 0; frag < 2; frag++) {
		struct world w;
		world_load(&w, nodes, pods, frag);
		struct sim_sat_result r;
		struct sl_diag d;
		assert_int_equal(sim_saturate(w.p, w.pods, w.npods, 100, 1, false, &r, &d), SL_OK);
		got[frag] = r.alloc_milli;
		if (frag)
			assert_true(placer_node_frag(w.p, 0) == 0);
		world_free(&w);
	}
	assert_int_equal(got[0], 3000);
	assert_int_equal(got[1], 4000);
}

static void test_workload_checks(void **state)
{
	(void)state;
	struct world w;
	world_load(&w, tiny_nodes, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n", false);
	struct sl_diag d;
	struct place_class c = {.gpus = 1, .cpus = 1, .weight = 1, .nmodels = 1,
				.models = {"nope"}};
	assert_int_equal(placer_set_workload(w.p, &c, 1, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "unknown GPU model 'nope'"));
	c.nmodels = 0;
	c.weight = 0;
	assert_int_equal(placer_set_workload(w.p, &c, 1, &d), SL_EINVAL);
	c.weight = 3;
	c.gpu_milli = 1000;
	assert_int_equal(placer_set_workload(w.p, &c, 1, &d), SL_EINVAL);
	c.gpu_milli = 500;
	c.cpus = 1000;
	assert_int_equal(placer_set_workload(w.p, &c, 1, &d), SL_OK);
	/* n1 empty: a 500 share fits on either GPU and its CPUs carry all 2000
	 * free thousandths at 2 CPUs each: nothing stranded. */
	assert_int_equal(placer_node_frag(w.p, 0), 0);
	c.cpus = 6000;
	assert_int_equal(placer_set_workload(w.p, &c, 1, &d), SL_OK);
	/* At 12 CPUs per thousandth its 8000 CPUs carry 666.7 of the 2000 free:
	 * 1333.3 stranded, times the total weight 3. */
	assert_int_equal(placer_node_frag(w.p, 0), 4000);
	assert_int_equal(placer_set_workload(w.p, NULL, 0, &d), SL_OK);
	assert_int_equal(placer_node_frag(w.p, 0), 0);
	world_free(&w);
}

/* Random placements and releases under the policy: every decision claims
 * cleanly, and the per-node cache of F always equals a fresh computation. */
static void test_frag_cache_stress(void **state)
{
	(void)state;
	const char *nodes = "sn,cpu_milli,memory_mib,gpu,model\n"
			    "a,16000,65536,8,G2\nb,8000,32768,4,T4\nc,4000,16384,2,T4\n"
			    "d,64000,65536,1,P100\ne,12000,65536,8,G2\n";
	const char *pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
			   "s1,1000,1024,1,300,\ns2,2000,2048,1,700,T4|G2\nw1,2000,4096,1,1000,\n"
			   "w2,4000,8192,2,1000,\nw4,6000,8192,4,1000,G2\nc0,1500,1024,0,0,\n";
	struct world w;
	world_load(&w, nodes, pods, true);
	struct placement held[64];
	int nheld = 0;
	struct sl_diag d;
	uint64_t x = 12345;
	for (int it = 0; it < 3000; it++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (nheld > 0 && (nheld == 64 || x % 3 == 0)) {
			int k = (int)((x >> 8) % (uint64_t)nheld);
			assert_int_equal(placer_release(w.p, &held[k], &d), SL_OK);
			placement_release(&held[k]);
			held[k] = held[--nheld];
		} else {
			struct place_request r;
			sim_pod_request(&w.pods[(x >> 16) % (uint64_t)w.npods], &r);
			placement_init(&held[nheld]);
			enum sl_err e = placer_place(w.p, &r, &held[nheld], &d);
			if (e == SL_OK) {
				assert_int_equal(placer_claim(w.p, &held[nheld], &d), SL_OK);
				nheld++;
			} else {
				assert_int_equal(e, SL_ENOSPACE);
				placement_release(&held[nheld]);
			}
		}
		if (it % 97 == 0) {
			int64_t cached[5];
			for (int n = 0; n < 5; n++)
				cached[n] = placer_node_frag(w.p, n);
			assert_int_equal(placer_set_workload(w.p, w.cls, w.ncls, &d), SL_OK);
			for (int n = 0; n < 5; n++)
				assert_int_equal(placer_node_frag(w.p, n), cached[n]);
		}
	}
	for (int k = 0; k < nheld; k++) {
		assert_int_equal(placer_release(w.p, &held[k], &d), SL_OK);
		placement_release(&held[k]);
	}
	for (int n = 0; n < 5; n++)
		assert_int_equal(placer_cpus_used(w.p, n), 0);
	world_free(&w);
}

/* ---- time replay ----------------------------------------------------------- */

static void test_replay_fifo(void **state)
{
	(void)state;
	const char *nodes = "sn,cpu_milli,memory_mib,gpu,model\nn1,8000,16384,2,T4\n";
	const char *jobs = "submit_time,duration,gpus,gpus_per_node,model,plan\n"
			   "0,10,2,0,,a\n"
			   "1,5,1,0,,b\n"
			   "2,5,1,0,T4,c\n"
			   "3,5,4,0,,too-big\n";
	struct sl_diag d;
	struct sim_node *n;
	struct sim_pod *p;
	int nn, np, skipped;
	struct fleet f;
	struct placer *pl;
	assert_int_equal(sim_parse_nodes(nodes, strlen(nodes), "n", &n, &nn, &d), SL_OK);
	assert_int_equal(fleet_init(&f), SL_OK);
	assert_int_equal(sim_build_fleet(&f, n, nn, &skipped, &d), SL_OK);
	assert_int_equal(sim_parse_jobs(jobs, strlen(jobs), "j", &p, &np, &d), SL_OK);
	assert_int_equal(placer_new(&f, &pl), SL_OK);
	struct sim_replay_result r;
	assert_int_equal(sim_replay(pl, p, np, 11, NULL, NULL, &r, &d), SL_OK);
	assert_int_equal(r.pods, 4);
	assert_int_equal(r.unplaceable, 1);
	assert_int_equal(r.started, 3);
	assert_int_equal(r.never_started, 0);
	/* b and c wait for a until t = 10: delays 0, 9, 8. */
	assert_int_equal(r.delay_max, 9);
	assert_int_equal(r.delay_median, 8);
	assert_true(r.delay_mean > 5.66 && r.delay_mean < 5.67);
	assert_int_equal(r.t0, 0);
	assert_int_equal(r.t1, 10);
	assert_int_equal(r.max_queue, 2);
	assert_int_equal(r.nsamples, 11);
	assert_int_equal(r.samples[5].alloc_milli, 2000);
	assert_int_equal(r.samples[5].queue, 2);
	/* Both GPUs busy while b and c wait: nothing stranded. */
	assert_true(r.stranded_max == 0);
	assert_true(r.util_mean > 0.99);
	sim_replay_result_release(&r);
	p[0].start = -1;
	assert_int_equal(sim_replay(pl, p, np, 11, NULL, NULL, &r, &d), SL_EINVAL);
	placer_free(pl);
	fleet_release(&f);
	free(n);
	free(p);
}

/* ---- SVG -------------------------------------------------------------------- */

static void test_svg(void **state)
{
	(void)state;
	double x[3] = {0, 1, 2}, y[3] = {0, 50, 100}, q[3] = {3, 0, 1};
	struct svg_chart c = {.title = "a <b> & \"c\"", .xlabel = "days", .x = x, .npoints = 3,
			      .npanels = 2};
	c.panels[0] = (struct svg_panel){"util (%)", y, 100, NULL};
	c.panels[1] = (struct svg_panel){"queue", q, 0, "#d62728"};
	char *s;
	size_t len;
	struct sl_diag d;
	assert_int_equal(svg_render(&c, &s, &len, &d), SL_OK);
	assert_int_equal(strlen(s), len);
	assert_non_null(strstr(s, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_non_null(strstr(s, "a &lt;b&gt; &amp; &quot;c&quot;"));
	assert_non_null(strstr(s, "points=\"80.0,240.0 480.0,140.0 880.0,40.0\""));
	assert_non_null(strstr(s, "</svg>\n"));
	free(s);
	y[1] = 0.0 / 0.0;
	assert_int_equal(svg_render(&c, &s, &len, &d), SL_EINVAL);
	c.npanels = 0;
	y[1] = 1;
	assert_int_equal(svg_render(&c, &s, &len, &d), SL_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_nodes),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_pods_and_jobs),
		cmocka_unit_test(test_parse_mutations),
		cmocka_unit_test(test_fleet_models),
		cmocka_unit_test(test_fleet_yaml_models),
		cmocka_unit_test(test_saturation_exact_curve),
		cmocka_unit_test(test_saturation_samples_to_inflate),
		cmocka_unit_test(test_saturate_order), cmocka_unit_test(test_history_shares), cmocka_unit_test(test_gpu_spec_filtering),
		cmocka_unit_test(test_shares_and_cpu_only),
		cmocka_unit_test(test_frag_beats_best_fit),
		cmocka_unit_test(test_workload_checks),
		cmocka_unit_test(test_frag_cache_stress),
		cmocka_unit_test(test_replay_fifo),
		cmocka_unit_test(test_svg),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

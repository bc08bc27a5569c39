/* test_place_frag.c - the fragmentation-aware policy's ranked tables give the
 * answers of the full scan.
 *
 * Two placers on one fleet get the same learned workload (place_wmodel.h);
 * one judges nodes per free mask (the default), the other scans every node
 * (placer_set_frag_index(p, false)). A fixed-seed stream of whole-GPU and
 * share requests with model, region and bandwidth constraints, claims,
 * releases, node and GPU service changes and reservation pools (index
 * rebuilds) must give identical placements throughout: among them those of
 * nodes holding shares, which the default judges through F's levels
 * (place_fragjudge.c) and, for the workload's heaviest share sizes, as soon
 * as they change. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "place_frag.h"
#include "place_json.h"
#include "place_wmodel.h"

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int below(uint64_t *s, int n)
{
	return (int)(rng(s) % (uint64_t)n);
}

static const char *const types[] = {"hgx-h100-8", "pcie-l40s-8", "atlas-800-9000",
				    "pcie-h100nvl-8", "gb200-nvl72-tray"};
static const char *const models[] = {"h100-sxm", "l40s", "ascend-910", "h100-nvl", "gb200"};
#define NT 5

static void build(struct fleet *f, uint64_t *seed)
{
	int site[2], fab[2], leaf[4];
	assert_int_equal(fleet_init(f), SL_OK);
	assert_int_equal(fleet_add_site(f, "s1", "r1", &site[0], NULL), SL_OK);
	assert_int_equal(fleet_add_site(f, "s2", "r2", &site[1], NULL), SL_OK);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(fleet_add_fabric(f, site[s], s ? "ib2" : "ib1", FABRIC_INFINIBAND,
						  400, &fab[s], NULL), SL_OK);
		for (int l = 0; l < 2; l++) {
			char name[16];
			snprintf(name, sizeof(name), "l%d", s * 2 + l);
			assert_int_equal(fleet_add_leaf(f, fab[s], name, &leaf[s * 2 + l], NULL), SL_OK);
		}
	}
	for (int i = 0; i < 160; i++) {
		char name[16];
		int t = below(seed, NT), idx;
		snprintf(name, sizeof(name), "n%03d", i);
		assert_int_equal(fleet_add_node(f, leaf[below(seed, 4)], name,
						fleet_find_type(f, types[t]), &idx, NULL), SL_OK);
		f->nodes[idx].price_hint = 100 * below(seed, 3);
		f->nodes[idx].shareable = t == 1 || (t == 0 && below(seed, 4) == 0);
	}
}

static void request(uint64_t *seed, struct place_request *r)
{
	static const int sizes[] = {1, 1, 1, 2, 2, 3, 4, 4, 8};
	memset(r, 0, sizeof(*r));
	if (below(seed, 5) == 0)
		r->gpu_milli = 100 * (1 + below(seed, 9));
	else
		r->gpus = sizes[below(seed, 9)];
	if (below(seed, 3) == 0) {
		r->nmodels = 1;
		r->models[0] = models[below(seed, NT)];
	}
	if (below(seed, 5) == 0)
		r->region = below(seed, 2) ? "r1" : "r2";
	if (below(seed, 10) == 0)
		r->min_bw_gbps = 400;
}

static void test_index_equals_scan(void **state)
{
	(void)state;
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	struct fleet f;
	build(&f, &seed);
	struct placer *fast, *scan;
	assert_int_equal(placer_new(&f, &fast), SL_OK);
	assert_int_equal(placer_new(&f, &scan), SL_OK);
	struct place_wmodel *m;
	assert_int_equal(place_wmodel_new(256, &m), SL_OK);
	uint64_t ws = 42;
	for (int i = 0; i < 256; i++) {
		struct place_request r;
		request(&ws, &r);
		(void)place_wmodel_observe(m, &r);
	}
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(place_wmodel_apply(m, fast, &d), SL_OK);
	assert_int_equal(place_wmodel_apply(m, scan, &d), SL_OK);
	placer_set_frag_index(scan, false);

	enum { CAP = 4096 };
	struct placement *held = calloc(CAP, sizeof(*held));
	assert_non_null(held);
	int nheld = 0, placed = 0, shares = 0, explained = 0;
	struct placement a, b;
	placement_init(&a);
	placement_init(&b);
	for (int step = 0; step < 6000; step++) {
		int x = below(&seed, 100);
		if (x < 25 && nheld > 0) {
			int i = below(&seed, nheld);
			assert_int_equal(placer_release(fast, &held[i], &d), SL_OK);
			assert_int_equal(placer_release(scan, &held[i], &d), SL_OK);
			placement_release(&held[i]);
			held[i] = held[--nheld];
			continue;
		}
		if (x < 27) {
			int node = below(&seed, f.nnodes);
			bool on = below(&seed, 2);
			placer_set_node_usable(fast, node, on);
			placer_set_node_usable(scan, node, on);
			continue;
		}
		if (x == 29) {
			int node = below(&seed, f.nnodes), gpu = below(&seed, 8);
			bool on = below(&seed, 3) != 0;
			placer_set_gpu_usable(fast, node, gpu, on);
			placer_set_gpu_usable(scan, node, gpu, on);
			continue;
		}
		if (x == 28) {
			/* A reservation window opens or closes: the index is rebuilt. */
			int node = below(&seed, f.nnodes);
			const char *t = below(&seed, 2) ? "t1" : NULL;
			assert_int_equal(placer_set_node_pool(fast, node, t, &d), SL_OK);
			assert_int_equal(placer_set_node_pool(scan, node, t, &d), SL_OK);
			continue;
		}
		if (x == 27 && step % 500 == 0) {
			/* A refresh mid-stream, as the controller does. */
			assert_int_equal(place_wmodel_apply(m, fast, &d), SL_OK);
			assert_int_equal(place_wmodel_apply(m, scan, &d), SL_OK);
			placer_set_frag_index(scan, false);
		}
		struct place_request r;
		request(&seed, &r);
		(void)place_wmodel_observe(m, &r);
		enum sl_err ea = placer_place(fast, &r, &a, &d);
		enum sl_err eb = placer_place(scan, &r, &b, &d);
		assert_int_equal(ea, eb);
		if (ea != SL_OK)
			continue;
		assert_int_equal(a.npicks, b.npicks);
		for (int k = 0; k < a.npicks; k++) {
			if (a.picks[k].node != b.picks[k].node || a.picks[k].gpus != b.picks[k].gpus ||
			    a.picks[k].gpu != b.picks[k].gpu)
				fail_msg("step %d: index chose %s gpus %x gpu %d, scan %s gpus %x gpu %d",
					 step, f.nodes[a.picks[k].node].name, a.picks[k].gpus,
					 a.picks[k].gpu, f.nodes[b.picks[k].node].name, b.picks[k].gpus,
					 b.picks[k].gpu);
		}
		/* The explanation too: the fragmentation term's figure and best
		 * fit's, judged through the tables and kept entries, or by scan. */
		assert_int_equal(a.score.frag, b.score.frag);
		assert_int_equal(a.score.frag_milli, b.score.frag_milli);
		assert_int_equal(a.score.bestfit_same, b.score.bestfit_same);
		if (a.score.bestfit_milli != b.score.bestfit_milli)
			fail_msg("step %d: best fit's figure %lld through the index, %lld by scan",
				 step, (long long)a.score.bestfit_milli,
				 (long long)b.score.bestfit_milli);
		explained += !a.score.bestfit_same;
		assert_int_equal(placer_claim(fast, &a, &d), SL_OK);
		assert_int_equal(placer_claim(scan, &a, &d), SL_OK);
		placed++;
		shares += a.picks[0].gpu >= 0;
		if (nheld < CAP) {
			placement_init(&held[nheld]);
			assert_int_equal(placement_copy(&held[nheld++], &a), SL_OK);
		}
	}
	/* The stream must have exercised both kinds, on a busy fleet. */
	assert_true(placed > 1000);
	assert_true(shares > 100);
	assert_true(explained > 100); /* best fit chose another node */
	for (int i = 0; i < nheld; i++)
		placement_release(&held[i]);
	free(held);
	placement_release(&a);
	placement_release(&b);
	place_wmodel_free(m);
	placer_free(fast);
	placer_free(scan);
	fleet_release(&f);
}

static void use_mask(struct placer *p, int node, gpumask_t m)
{
	struct placement pl;
	placement_init(&pl);
	struct place_pick k = {.node = node, .gpus = m, .gpu = -1};
	assert_int_equal(placement_add(&pl, &k), SL_OK);
	assert_int_equal(placer_claim(p, &pl, NULL), SL_OK);
	placement_release(&pl);
}

/* A fleet that asks for pairs: one GPU goes to the node with three free
 * rather than break the last free pair of the fuller node (best fit's
 * choice), and the score says so against best fit's node. */
static void test_explains_against_bestfit(void **state)
{
	(void)state;
	struct fleet f;
	int s, fa, l, a, b;
	assert_int_equal(fleet_init(&f), SL_OK);
	assert_int_equal(fleet_add_site(&f, "s1", "r1", &s, NULL), SL_OK);
	assert_int_equal(fleet_add_fabric(&f, s, "ib", FABRIC_INFINIBAND, 400, &fa, NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&f, fa, "l1", &l, NULL), SL_OK);
	int t = fleet_find_type(&f, "hgx-h100-8");
	assert_int_equal(fleet_add_node(&f, l, "a", t, &a, NULL), SL_OK);
	assert_int_equal(fleet_add_node(&f, l, "b", t, &b, NULL), SL_OK);
	struct placer *p;
	assert_int_equal(placer_new(&f, &p), SL_OK);
	use_mask(p, a, 0x1f); /* a: 3 free */
	use_mask(p, b, 0x3f); /* b: 2 free */
	struct place_request r;
	memset(&r, 0, sizeof(r));
	r.gpus = 1;
	struct placement pl;
	placement_init(&pl);
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(placer_place(p, &r, &pl, &d), SL_OK);
	assert_int_equal(pl.picks[0].node, b); /* best fit */
	assert_false(pl.score.frag);
	struct place_wmodel *m;
	assert_int_equal(place_wmodel_new(0, &m), SL_OK);
	struct place_request two = r;
	two.gpus = 2;
	for (int i = 0; i < 200; i++)
		(void)place_wmodel_observe(m, &two);
	assert_int_equal(place_wmodel_apply(m, p, &d), SL_OK);
	assert_int_equal(placer_place(p, &r, &pl, &d), SL_OK);
	assert_int_equal(pl.picks[0].node, a);
	assert_true(pl.score.frag);
	assert_false(pl.score.bestfit_same);
	assert_true(pl.score.frag_milli < pl.score.bestfit_milli);
	json_t *j = place_to_json(&f, &pl);
	json_t *fr = json_object_get(json_object_get(j, "score"), "fragmentation");
	assert_non_null(fr);
	assert_false(json_is_true(json_object_get(fr, "bestfit_same")));
	json_decref(j);
	/* Quiet decisions (scheduler retries) skip the comparison. */
	assert_int_equal(placer_place_quiet(p, &r, &pl, &d), SL_OK);
	assert_false(pl.score.frag);
	placement_release(&pl);
	place_wmodel_free(m);
	placer_free(p);
	fleet_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_index_equals_scan),
		cmocka_unit_test(test_explains_against_bestfit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

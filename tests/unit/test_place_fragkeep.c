/* test_place_fragkeep.c - what the fragmentation-aware policy keeps between
 * decisions (place_frag.c) never goes stale.
 *
 * Kept: each node's F, the judged candidates of nodes holding shares (per
 * node version), each ranked table's per-group answers and best fit's
 * per-group answers for the explanation (per group version). Three placers on
 * one fleet follow the same fixed-seed stream of claims, releases, node and
 * GPU service changes, reservation pools (index rebuilds), workload refreshes
 * and nodes joining (some appended to their group, one forcing a rebuild):
 *   - kept: the default, everything kept;
 *   - fresh: the same workload, everything kept from the state dropped before
 *     every look (placer_set_frag_balance), the reference;
 *   - bf: no workload, plain best fit, the reference for the explanation.
 * Every decision (placer_place, explained, refusals with their sentences)
 * must be the reference one, the explanation's "best fit agrees" must match
 * best fit's own decision, and every node's F must equal the one computed
 * afresh.
 *
 * (Not the node-by-node scan of placer_set_frag_index(p, false) as the
 * reference here: with a GPU out of service the scan judges a share on the
 * first of the GPUs with equal free thousandths, the per-mask tables on the
 * one that leaves the best shape, so the two may pick different GPUs of one
 * node; test_place_frag.c compares them on fleets without such GPUs.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "place_frag.h"
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
				    "pcie-h100nvl-8"};
static const char *const models[] = {"h100-sxm", "l40s", "ascend-910", "h100-nvl"};
#define NT 4
#define NP 3 /* placers: kept, fresh, bf */

static int leaves[4];

static void add_node(struct fleet *f, uint64_t *seed, const char *name)
{
	int t = below(seed, NT), idx;
	assert_int_equal(fleet_add_node(f, leaves[below(seed, 4)], name,
					fleet_find_type(f, types[t]), &idx, NULL), SL_OK);
	f->nodes[idx].price_hint = 100 * below(seed, 3);
	f->nodes[idx].shareable = t == 1 || (t == 0 && below(seed, 4) == 0);
}

static void build(struct fleet *f, uint64_t *seed)
{
	int site[2], fab[2];
	assert_int_equal(fleet_init(f), SL_OK);
	assert_int_equal(fleet_add_site(f, "s1", "r1", &site[0], NULL), SL_OK);
	assert_int_equal(fleet_add_site(f, "s2", "r2", &site[1], NULL), SL_OK);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(fleet_add_fabric(f, site[s], s ? "ib2" : "ib1", FABRIC_INFINIBAND,
						  400, &fab[s], NULL), SL_OK);
		for (int l = 0; l < 2; l++) {
			char name[16];
			snprintf(name, sizeof(name), "l%d", s * 2 + l);
			assert_int_equal(fleet_add_leaf(f, fab[s], name, &leaves[s * 2 + l], NULL),
					 SL_OK);
		}
	}
	for (int i = 0; i < 120; i++) {
		char name[16];
		snprintf(name, sizeof(name), "n%03d", i);
		add_node(f, seed, name);
	}
}

static void request(uint64_t *seed, struct place_request *r)
{
	static const int sizes[] = {1, 1, 1, 2, 2, 3, 4, 4, 8, 16};
	memset(r, 0, sizeof(*r));
	if (below(seed, 4) == 0)
		r->gpu_milli = 100 * (1 + below(seed, 9));
	else
		r->gpus = sizes[below(seed, 10)];
	if (below(seed, 3) == 0) {
		r->nmodels = 1;
		r->models[0] = models[below(seed, NT)];
	}
	if (below(seed, 5) == 0)
		r->region = below(seed, 2) ? "r1" : "r2";
	if (below(seed, 10) == 0)
		r->min_bw_gbps = 400;
}

static bool same_picks(const struct placement *a, const struct placement *b)
{
	if (a->npicks != b->npicks)
		return false;
	for (int k = 0; k < a->npicks; k++)
		if (a->picks[k].node != b->picks[k].node || a->picks[k].gpus != b->picks[k].gpus ||
		    a->picks[k].gpu != b->picks[k].gpu || a->picks[k].milli != b->picks[k].milli)
			return false;
	return true;
}

static void apply_workload(struct place_wmodel *m, struct placer **p)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	for (int i = 0; i < 2; i++)
		assert_int_equal(place_wmodel_apply(m, p[i], &d), SL_OK);
}

static void kept_never_stale(uint64_t seed)
{
	struct fleet f;
	build(&f, &seed);
	struct placer *p[NP];
	for (int i = 0; i < NP; i++)
		assert_int_equal(placer_new(&f, &p[i]), SL_OK);
	struct place_wmodel *m;
	assert_int_equal(place_wmodel_new(256, &m), SL_OK);
	uint64_t ws = 7;
	for (int i = 0; i < 256; i++) {
		struct place_request r;
		request(&ws, &r);
		(void)place_wmodel_observe(m, &r);
	}
	apply_workload(m, p);
	struct sl_diag d;
	sl_diag_clear(&d);

	enum { CAP = 4096 };
	struct placement *held = calloc(CAP, sizeof(*held));
	assert_non_null(held);
	int nheld = 0, placed = 0, shares = 0, differ = 0, agree = 0, refused = 0, joined = 0;
	struct placement pl[NP];
	for (int i = 0; i < NP; i++)
		placement_init(&pl[i]);
	for (int step = 0; step < 8000; step++) {
		if (step == 3000 || step == 5000) {
			/* Joins: named to sort last (appended to their group), then
			 * one that sorts first (the index is rebuilt). */
			char name[16];
			for (int j = 0; j < 6; j++) {
				snprintf(name, sizeof(name), "z%d%02d", step, j);
				add_node(&f, &seed, name);
			}
			if (step == 5000)
				add_node(&f, &seed, "a000");
			for (int q = 0; q < NP; q++)
				assert_int_equal(placer_nodes_added(p[q]), SL_OK);
			joined++;
		}
		int x = below(&seed, 100);
		if (x < 22 && nheld > 0) {
			int i = below(&seed, nheld);
			for (int q = 0; q < NP; q++)
				assert_int_equal(placer_release(p[q], &held[i], &d), SL_OK);
			placement_release(&held[i]);
			held[i] = held[--nheld];
			continue;
		}
		if (x < 24) {
			int node = below(&seed, f.nnodes);
			bool on = below(&seed, 3) != 0;
			for (int q = 0; q < NP; q++)
				placer_set_node_usable(p[q], node, on);
			continue;
		}
		if (x < 26) {
			int node = below(&seed, f.nnodes), gpu = below(&seed, 8);
			bool on = below(&seed, 3) != 0;
			for (int q = 0; q < NP; q++)
				placer_set_gpu_usable(p[q], node, gpu, on);
			continue;
		}
		if (x == 26) {
			/* A reservation window opens or closes: the index is rebuilt. */
			int node = below(&seed, f.nnodes);
			const char *t = below(&seed, 2) ? "t1" : NULL;
			for (int q = 0; q < NP; q++)
				assert_int_equal(placer_set_node_pool(p[q], node, t, &d), SL_OK);
			continue;
		}
		if (x == 27 && step % 400 == 0) {
			apply_workload(m, p); /* the controller's refresh */
			continue;
		}
		struct place_request r;
		request(&seed, &r);
		(void)place_wmodel_observe(m, &r);
		enum sl_err e[NP];
		for (int q = 0; q < NP; q++) {
			if (q == 1)
				placer_set_frag_balance(p[1], true); /* drops what it kept */
			e[q] = placer_place(p[q], &r, &pl[q], &d);
		}
		assert_int_equal(e[0], e[1]);
		/* F of a few nodes, kept against afresh. */
		for (int j = 0; j < 4; j++) {
			int node = below(&seed, f.nnodes);
			placer_set_frag_balance(p[1], true);
			if (placer_node_frag(p[0], node) != placer_node_frag(p[1], node))
				fail_msg("step %d: node %s kept F %lld, afresh %lld", step,
					 f.nodes[node].name, (long long)placer_node_frag(p[0], node),
					 (long long)placer_node_frag(p[1], node));
		}
		if (e[0] != SL_OK) {
			if (e[0] == SL_ENOSPACE) {
				refused++;
				assert_int_equal(pl[0].failed, pl[1].failed);
				assert_string_equal(pl[0].why, pl[1].why);
			}
			continue;
		}
		if (!same_picks(&pl[0], &pl[1]))
			fail_msg("step %d: kept chose %s gpus %x gpu %d, afresh %s gpus %x gpu %d",
				 step, f.nodes[pl[0].picks[0].node].name, pl[0].picks[0].gpus,
				 pl[0].picks[0].gpu, f.nodes[pl[1].picks[0].node].name,
				 pl[1].picks[0].gpus, pl[1].picks[0].gpu);
		const struct place_score *s0 = &pl[0].score, *s1 = &pl[1].score;
		assert_int_equal(s0->frag, s1->frag);
		assert_int_equal(s0->bestfit_same, s1->bestfit_same);
		assert_int_equal(s0->frag_milli, s1->frag_milli);
		assert_int_equal(s0->bestfit_milli, s1->bestfit_milli);
		if (s0->frag && e[2] == SL_OK && pl[0].npicks == 1) {
			/* The explanation's best fit is best fit's own decision
			 * (it says "agrees" when best fit takes the same node). */
			bool same = pl[0].picks[0].node == pl[2].picks[0].node;
			if (same != s0->bestfit_same)
				fail_msg("step %d: explanation says best fit %s, best fit chose "
					 "%s gpus %x gpu %d, frag %s gpus %x gpu %d", step,
					 s0->bestfit_same ? "agrees" : "differs",
					 f.nodes[pl[2].picks[0].node].name, pl[2].picks[0].gpus,
					 pl[2].picks[0].gpu, f.nodes[pl[0].picks[0].node].name,
					 pl[0].picks[0].gpus, pl[0].picks[0].gpu);
			differ += !same;
			agree += same;
		}
		for (int q = 0; q < NP; q++)
			assert_int_equal(placer_claim(p[q], &pl[0], &d), SL_OK);
		placed++;
		shares += pl[0].picks[0].gpu >= 0;
		if (nheld < CAP) {
			placement_init(&held[nheld]);
			assert_int_equal(placement_copy(&held[nheld++], &pl[0]), SL_OK);
		}
	}
	/* The stream exercised what it is about, on a busy fleet. */
	assert_true(placed > 1000);
	assert_true(shares > 200);
	assert_true(differ > 50 && agree > 50);
	assert_true(refused > 50);
	assert_int_equal(joined, 2);
	for (int i = 0; i < nheld; i++)
		placement_release(&held[i]);
	free(held);
	for (int q = 0; q < NP; q++) {
		placement_release(&pl[q]);
		placer_free(p[q]);
	}
	place_wmodel_free(m);
	fleet_release(&f);
}

/* Several streams: a stale answer shows only where a node changes in a
 * particular order (say, its last share released while its group's walk is
 * kept and its answer is not), which one stream may never do. */
static void test_kept_never_stale(void **state)
{
	(void)state;
	static const uint64_t seeds[] = {0x2545f4914f6cdd1dULL, 1, 2, 3, 4, 5, 6, 7};
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		kept_never_stale(seeds[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_never_stale),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

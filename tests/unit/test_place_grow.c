/* test_place_grow.c - a placer told of nodes added to its fleet
 * (placer_nodes_added, how the controller takes a join without rebuilding)
 * places exactly as a placer built afresh on the grown fleet.
 *
 * One placer lives through a fixed-seed stream of whole-GPU and share
 * requests, claims, releases and service changes while the fleet grows in
 * batches (names sorting before, between and after the earlier ones, and a
 * type no node had yet; the batch sorting last is appended to its groups,
 * widening their bitsets, the others rebuild the index); after each batch the reference is built new, given
 * the same workload, claims and service states, and every placement of both
 * must be identical. With and without the fragmentation-aware workload. */
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

static const char *const types[] = {"hgx-h100-8", "pcie-l40s-8", "hgx-a100-8", "hgx-b200-8"};
#define NT 4
#define MAXN 1000

struct world {
	struct fleet f;
	int leaf[4];
	bool usable[MAXN];
};

static void build(struct world *w)
{
	int site[2], fab[2];
	assert_int_equal(fleet_init(&w->f), SL_OK);
	assert_int_equal(fleet_add_site(&w->f, "s1", "r1", &site[0], NULL), SL_OK);
	assert_int_equal(fleet_add_site(&w->f, "s2", "r2", &site[1], NULL), SL_OK);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(fleet_add_fabric(&w->f, site[s], s ? "ib2" : "ib1",
						  FABRIC_INFINIBAND, 400, &fab[s], NULL), SL_OK);
		for (int l = 0; l < 2; l++) {
			char name[16];
			snprintf(name, sizeof(name), "l%d", s * 2 + l);
			assert_int_equal(fleet_add_leaf(&w->f, fab[s], name, &w->leaf[s * 2 + l], NULL),
					 SL_OK);
		}
	}
}

/* Adds n nodes named prefix%03d; batch 0 uses the first NT - 1 types only. */
static void add_nodes(struct world *w, uint64_t *seed, const char *prefix, int n, int ntypes)
{
	for (int i = 0; i < n; i++) {
		char name[16];
		int t = below(seed, ntypes), idx;
		snprintf(name, sizeof(name), "%s%03d", prefix, i);
		assert_int_equal(fleet_add_node(&w->f, w->leaf[below(seed, 4)], name,
						fleet_find_type(&w->f, types[t]), &idx, NULL), SL_OK);
		w->f.nodes[idx].price_hint = 100 * below(seed, 3);
		w->f.nodes[idx].shareable = t == 1;
		w->usable[idx] = true;
	}
}

static void request(uint64_t *seed, struct place_request *r)
{
	static const int sizes[] = {1, 1, 2, 2, 4, 8};
	memset(r, 0, sizeof(*r));
	if (below(seed, 6) == 0)
		r->gpu_milli = 250 * (1 + below(seed, 3));
	else
		r->gpus = sizes[below(seed, 6)];
	if (below(seed, 5) == 0)
		r->region = below(seed, 2) ? "r1" : "r2";
}

static void same(const struct placement *a, const struct placement *b)
{
	assert_int_equal(a->npicks, b->npicks);
	for (int k = 0; k < a->npicks; k++) {
		assert_int_equal(a->picks[k].node, b->picks[k].node);
		assert_int_equal(a->picks[k].gpus, b->picks[k].gpus);
		assert_int_equal(a->picks[k].gpu, b->picks[k].gpu);
	}
}

static struct placer *fresh(struct world *w, struct place_wmodel *m, struct placement *held,
			    int nheld)
{
	struct placer *p;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(placer_new(&w->f, &p), SL_OK);
	if (m)
		assert_int_equal(place_wmodel_apply(m, p, &d), SL_OK);
	for (int i = 0; i < nheld; i++)
		assert_int_equal(placer_claim(p, &held[i], &d), SL_OK);
	for (int i = 0; i < w->f.nnodes; i++)
		if (!w->usable[i])
			placer_set_node_usable(p, i, false);
	return p;
}

static void run(bool frag)
{
	uint64_t seed = frag ? 0x9e3779b97f4a7c15ULL : 0x5eedULL;
	struct world w;
	memset(&w, 0, sizeof(w));
	build(&w);
	add_nodes(&w, &seed, "n", 60, NT - 1);
	struct place_wmodel *m = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (frag) {
		assert_int_equal(place_wmodel_new(128, &m), SL_OK);
		uint64_t ws = 42;
		for (int i = 0; i < 128; i++) {
			struct place_request r;
			request(&ws, &r);
			(void)place_wmodel_observe(m, &r);
		}
	}
	enum { CAP = 4096 };
	struct placement *held = calloc(CAP, sizeof(*held));
	assert_non_null(held);
	int nheld = 0, placed = 0;
	struct placer *grown = fresh(&w, m, held, 0), *ref = fresh(&w, m, held, 0);
	static const char *const prefixes[] = {"a", "m", "z", "p", "b"};
	struct placement a, b;
	placement_init(&a);
	placement_init(&b);
	for (int step = 0; step < 3000; step++) {
		if (step % 600 == 599) {
			/* A batch joins: names before, between and after; the last
			 * batches bring a type no node had. */
			int batch = step / 600;
			if (batch == 2) /* one type, many: groups grow past a bitset word */
				add_nodes(&w, &seed, prefixes[batch], 300, 1);
			else
				add_nodes(&w, &seed, prefixes[batch], 1 + below(&seed, 60),
					  batch >= 3 ? NT : NT - 1);
			assert_int_equal(placer_nodes_added(grown), SL_OK);
			placer_free(ref);
			ref = fresh(&w, m, held, nheld);
			continue;
		}
		int x = below(&seed, 100);
		if (x < 30 && nheld > 0) {
			int i = below(&seed, nheld);
			assert_int_equal(placer_release(grown, &held[i], &d), SL_OK);
			assert_int_equal(placer_release(ref, &held[i], &d), SL_OK);
			placement_release(&held[i]);
			held[i] = held[--nheld];
			continue;
		}
		if (x < 33) {
			int node = below(&seed, w.f.nnodes);
			w.usable[node] = below(&seed, 2);
			placer_set_node_usable(grown, node, w.usable[node]);
			placer_set_node_usable(ref, node, w.usable[node]);
			continue;
		}
		struct place_request r;
		request(&seed, &r);
		enum sl_err ea = placer_place(grown, &r, &a, &d);
		enum sl_err eb = placer_place(ref, &r, &b, &d);
		assert_int_equal(ea, eb);
		if (ea != SL_OK || nheld == CAP)
			continue;
		same(&a, &b);
		placed++;
		assert_int_equal(placer_claim(grown, &a, &d), SL_OK);
		assert_int_equal(placer_claim(ref, &a, &d), SL_OK);
		placement_init(&held[nheld]);
		assert_int_equal(placement_copy(&held[nheld], &a), SL_OK);
		nheld++;
	}
	assert_true(placed > 100);
	assert_true(w.f.nnodes > 60);
	/* Nothing added: a no-op. */
	assert_int_equal(placer_nodes_added(grown), SL_OK);
	for (int i = 0; i < nheld; i++)
		placement_release(&held[i]);
	free(held);
	placement_release(&a);
	placement_release(&b);
	placer_free(grown);
	placer_free(ref);
	place_wmodel_free(m);
	fleet_release(&w.f);
}

static void test_grow_bestfit(void **state)
{
	(void)state;
	run(false);
}

static void test_grow_frag(void **state)
{
	(void)state;
	run(true);
}

/* A fleet that lost nodes is refused (the caller builds a new placer). */
static void test_grow_refused(void **state)
{
	(void)state;
	struct world w;
	uint64_t seed = 7;
	memset(&w, 0, sizeof(w));
	build(&w);
	add_nodes(&w, &seed, "n", 10, NT);
	struct placer *p;
	assert_int_equal(placer_new(&w.f, &p), SL_OK);
	w.f.nnodes--;
	assert_int_equal(placer_nodes_added(p), SL_EINVAL);
	w.f.nnodes++;
	assert_int_equal(placer_nodes_added(p), SL_OK);
	assert_int_equal(placer_nodes_added(NULL), SL_EINVAL);
	placer_free(p);
	fleet_release(&w.f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grow_bestfit),
		cmocka_unit_test(test_grow_frag),
		cmocka_unit_test(test_grow_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_place_leaf.c - the leaf term (place.h, place_leaf.c, place_gang.c):
 * single-node work takes a whole node in a partly used leaf rather than break
 * an empty one (best fit and frag alike), whole nodes are counted per leaf, a
 * gang that fits one leaf gets one leaf and breaks the fewest whole nodes,
 * and the choice is the same every time for the same state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "place.h"
#include "place_wmodel.h"

#define TYPE "hgx-h100-8"

struct lx {
	struct fleet f;
	int leaf[4];
	struct placer *p;
};

/* nleaves leaves "leaf-1".. of per nodes each, named a01.. in leaf order, so
 * that name order alone would always pick the first leaf. */
static void lx_init(struct lx *x, int nleaves, int per)
{
	int s, fab, t, idx;
	memset(x, 0, sizeof(*x));
	assert_int_equal(fleet_init(&x->f), SL_OK);
	assert_int_equal(fleet_add_site(&x->f, "s1", "r1", &s, NULL), SL_OK);
	assert_int_equal(fleet_add_fabric(&x->f, s, "ib", FABRIC_INFINIBAND, 400, &fab, NULL),
			 SL_OK);
	t = fleet_find_type(&x->f, TYPE);
	assert_true(t >= 0);
	for (int l = 0; l < nleaves; l++) {
		char name[32];
		snprintf(name, sizeof(name), "leaf-%d", l + 1);
		assert_int_equal(fleet_add_leaf(&x->f, fab, name, &x->leaf[l], NULL), SL_OK);
		for (int i = 0; i < per; i++) {
			snprintf(name, sizeof(name), "a%02d", l * per + i + 1);
			assert_int_equal(fleet_add_node(&x->f, x->leaf[l], name, t, &idx, NULL),
					 SL_OK);
		}
	}
	assert_int_equal(placer_new(&x->f, &x->p), SL_OK);
}

static void lx_done(struct lx *x)
{
	placer_free(x->p);
	fleet_release(&x->f);
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

static int leaf_of(const struct lx *x, const struct placement *pl, int i)
{
	return x->f.nodes[pl->picks[i].node].leaf;
}

static void frag_on(struct placer *p)
{
	struct place_wmodel *m;
	assert_int_equal(place_wmodel_new(0, &m), SL_OK);
	assert_int_equal(place_wmodel_apply(m, p, NULL), SL_OK); /* the cold-start prior */
	place_wmodel_free(m);
}

/* Whole nodes per leaf follow claims, releases and service. */
static void test_whole_counts(void **state)
{
	(void)state;
	struct lx x;
	lx_init(&x, 2, 4);
	assert_int_equal(placer_leaf_whole(x.p, x.leaf[0]), 4);
	assert_int_equal(placer_leaf_whole(x.p, x.leaf[1]), 4);
	use_mask(x.p, 5, 0x01);
	assert_int_equal(placer_leaf_whole(x.p, x.leaf[1]), 3);
	placer_set_node_usable(x.p, 0, false);
	assert_int_equal(placer_leaf_whole(x.p, x.leaf[0]), 3);
	placer_set_node_usable(x.p, 0, true);
	assert_int_equal(placer_leaf_whole(x.p, x.leaf[0]), 4);
	struct placement pl;
	placement_init(&pl);
	struct place_pick k = {.node = 5, .gpus = 0x01, .gpu = -1};
	assert_int_equal(placement_add(&pl, &k), SL_OK);
	assert_int_equal(placer_release(x.p, &pl, NULL), SL_OK);
	assert_int_equal(placer_leaf_whole(x.p, x.leaf[1]), 4);
	assert_int_equal(placer_leaf_whole(x.p, 99), 0);
	placement_release(&pl);
	lx_done(&x);
}

/* An 8-GPU job (a whole node) goes to the partly used leaf, not to the
 * first empty one by name; with both policies. */
static void test_single_partly_used_leaf(void **state)
{
	(void)state;
	for (int frag = 0; frag < 2; frag++) {
		struct lx x;
		lx_init(&x, 3, 4);
		if (frag)
			frag_on(x.p);
		use_mask(x.p, 8, 0xff); /* leaf-3: a09 full, three whole nodes left */
		struct placement pl;
		placement_init(&pl);
		struct place_request r = {.gpus = 8};
		assert_int_equal(placer_place(x.p, &r, &pl, NULL), SL_OK);
		assert_int_equal(pl.npicks, 1);
		assert_int_equal(leaf_of(&x, &pl, 0), x.leaf[2]);
		assert_string_equal(x.f.nodes[pl.picks[0].node].name, "a10");
		assert_int_equal(pl.score.leaf_kept, 4); /* leaf-1, with 4 whole nodes, spared */
		assert_int_equal(pl.score.frag, frag == 1);
		/* Fill leaf-3: the next whole-node jobs still go there first. */
		for (int i = 0; i < 3; i++) {
			assert_int_equal(placer_place(x.p, &r, &pl, NULL), SL_OK);
			assert_int_equal(leaf_of(&x, &pl, 0), x.leaf[2]);
			assert_int_equal(placer_claim(x.p, &pl, NULL), SL_OK);
		}
		assert_int_equal(placer_leaf_whole(x.p, x.leaf[2]), 0);
		/* Now every leaf with a whole node is empty: name order (leaf-1),
		 * and the leaf term did not change anything. */
		assert_int_equal(placer_place(x.p, &r, &pl, NULL), SL_OK);
		assert_int_equal(leaf_of(&x, &pl, 0), x.leaf[0]);
		assert_int_equal(pl.score.leaf_kept, 0);
		/* With a01 taken, leaf-1 has the fewest whole nodes (3 against
		 * leaf-2's 4): a 4-GPU job that needs a whole node (no half-free
		 * one anywhere) goes there, where name order puts it too. */
		assert_int_equal(placer_claim(x.p, &pl, NULL), SL_OK); /* a01 full */
		r.gpus = 4;
		assert_int_equal(placer_place(x.p, &r, &pl, NULL), SL_OK);
		assert_int_equal(leaf_of(&x, &pl, 0), x.leaf[0]); /* 3 whole vs 4 */
		assert_int_equal(pl.score.leaf_kept, 0);           /* best fit agrees */
		placement_release(&pl);
		lx_done(&x);
	}
}

/* A job that fits a partly used node stays node-level best fit: the leaf
 * term only chooses among whole nodes. */
static void test_single_node_fit_first(void **state)
{
	(void)state;
	struct lx x;
	lx_init(&x, 2, 4);
	use_mask(x.p, 0, 0x0f); /* a01 in leaf-1: 4 free */
	use_mask(x.p, 5, 0xff); /* leaf-2 partly used */
	struct placement pl;
	placement_init(&pl);
	struct place_request r = {.gpus = 4};
	assert_int_equal(placer_place(x.p, &r, &pl, NULL), SL_OK);
	assert_string_equal(x.f.nodes[pl.picks[0].node].name, "a01");
	assert_int_equal(pl.score.leaf_kept, 0);
	placement_release(&pl);
	lx_done(&x);
}

/* A gang that fits one leaf gets one leaf: the one where it breaks the
 * fewest whole nodes, taking the partly used nodes; plain best fit (fewest
 * candidates) would have taken leaf-1 and broken two whole nodes. */
static void test_gang_leaf(void **state)
{
	(void)state;
	struct lx x;
	lx_init(&x, 2, 4);
	use_mask(x.p, 0, 0xff); /* leaf-1: a01 full, a02..a04 whole (3 candidates) */
	use_mask(x.p, 4, 0x0f); /* leaf-2: a05, a06 half used, a07, a08 whole */
	use_mask(x.p, 5, 0x0f);
	struct placement pl;
	placement_init(&pl);
	struct place_request r = {.gpus = 8, .per_node = 4};
	assert_int_equal(placer_place(x.p, &r, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 2);
	assert_int_equal(pl.score.leaves, 1);
	assert_int_equal(leaf_of(&x, &pl, 0), x.leaf[1]);
	assert_true(pl.score.rails_aligned);
	for (int i = 0; i < 2; i++) {
		const char *n = x.f.nodes[pl.picks[i].node].name;
		assert_true(!strcmp(n, "a05") || !strcmp(n, "a06"));
		assert_int_equal(pl.picks[i].gpus, 0xf0);
	}
	assert_int_equal(pl.score.leaf_kept, 2);
	assert_int_equal(placer_claim(x.p, &pl, NULL), SL_OK);
	/* Whole-node gang pieces: every pick breaks a whole node wherever it
	 * goes, so best fit decides (leaf-2 has 2 candidates, leaf-1 3). */
	r = (struct place_request){.gpus = 16, .per_node = 8};
	assert_int_equal(placer_place(x.p, &r, &pl, NULL), SL_OK);
	assert_int_equal(pl.score.leaves, 1);
	assert_int_equal(leaf_of(&x, &pl, 0), x.leaf[1]);
	assert_int_equal(pl.score.leaf_kept, 0);
	/* Three whole nodes only fit leaf-1. */
	r.gpus = 24;
	assert_int_equal(placer_place(x.p, &r, &pl, NULL), SL_OK);
	assert_int_equal(pl.score.leaves, 1);
	assert_int_equal(leaf_of(&x, &pl, 0), x.leaf[0]);
	placement_release(&pl);
	lx_done(&x);
}

/* Between node types that tie on leaves, alignment and fit, a gang goes to
 * the type where it fills its leaf exactly, else to the type with more room,
 * not to the first by name: gangs that may use any type then do not drain one
 * while the others stay whole. */
static void test_gang_type_room(void **state)
{
	(void)state;
	struct fleet f;
	int s, fab, la, lb, idx;
	assert_int_equal(fleet_init(&f), SL_OK);
	assert_int_equal(fleet_add_site(&f, "s1", "r1", &s, NULL), SL_OK);
	assert_int_equal(fleet_add_fabric(&f, s, "ib", FABRIC_INFINIBAND, 400, &fab, NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&f, fab, "leaf-a", &la, NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&f, fab, "leaf-b", &lb, NULL), SL_OK);
	int ta = fleet_find_type(&f, "hgx-h100-8"), tb = fleet_find_type(&f, "hgx-a100-8");
	assert_true(ta >= 0 && tb >= 0);
	static const char *const an[] = {"a1", "a2", "a3"}, *const bn[] = {"b1", "b2", "b3", "b4"};
	for (int i = 0; i < 3; i++)
		assert_int_equal(fleet_add_node(&f, la, an[i], ta, &idx, NULL), SL_OK);
	for (int i = 0; i < 4; i++)
		assert_int_equal(fleet_add_node(&f, lb, bn[i], tb, &idx, NULL), SL_OK);
	struct placer *p;
	assert_int_equal(placer_new(&f, &p), SL_OK);
	struct placement pl;
	placement_init(&pl);
	struct place_request r = {.gpus = 16, .per_node = 8};
	assert_int_equal(placer_place(p, &r, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 2);
	for (int i = 0; i < 2; i++)
		assert_int_equal(f.nodes[pl.picks[i].node].type, tb);
	assert_int_equal(placer_claim(p, &pl, NULL), SL_OK);
	/* Now b3, b4 fill leaf-b exactly (a1..a3 would leave one): b again. */
	assert_int_equal(placer_place(p, &r, &pl, NULL), SL_OK);
	for (int i = 0; i < 2; i++)
		assert_int_equal(f.nodes[pl.picks[i].node].type, tb);
	assert_int_equal(placer_claim(p, &pl, NULL), SL_OK);
	assert_int_equal(placer_place(p, &r, &pl, NULL), SL_OK);
	assert_int_equal(f.nodes[pl.picks[0].node].type, ta);
	placement_release(&pl);
	placer_free(p);
	fleet_release(&f);
}

/* The same state and request give the same placement, in one placer and in
 * a second one built the same way. */
static void test_deterministic(void **state)
{
	(void)state;
	struct lx a, b;
	lx_init(&a, 4, 4);
	lx_init(&b, 4, 4);
	frag_on(a.p);
	frag_on(b.p);
	static const struct {
		int gpus, per_node;
	} seq[] = {{8, 0}, {4, 0}, {8, 4}, {16, 8}, {1, 0}, {8, 0}, {12, 4}, {2, 0}, {8, 0}};
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		struct place_request r = {.gpus = seq[i].gpus, .per_node = seq[i].per_node};
		struct placement x, y, z;
		placement_init(&x);
		placement_init(&y);
		placement_init(&z);
		assert_int_equal(placer_place(a.p, &r, &x, NULL), SL_OK);
		assert_int_equal(placer_place(a.p, &r, &z, NULL), SL_OK);
		assert_int_equal(placer_place(b.p, &r, &y, NULL), SL_OK);
		assert_int_equal(x.npicks, y.npicks);
		assert_int_equal(x.npicks, z.npicks);
		for (int k = 0; k < x.npicks; k++) {
			assert_int_equal(x.picks[k].node, y.picks[k].node);
			assert_int_equal(x.picks[k].gpus, y.picks[k].gpus);
			assert_int_equal(x.picks[k].node, z.picks[k].node);
		}
		assert_int_equal(x.score.leaf_kept, y.score.leaf_kept);
		assert_int_equal(placer_claim(a.p, &x, NULL), SL_OK);
		assert_int_equal(placer_claim(b.p, &y, NULL), SL_OK);
		placement_release(&x);
		placement_release(&y);
		placement_release(&z);
	}
	lx_done(&a);
	lx_done(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_counts),
		cmocka_unit_test(test_single_partly_used_leaf),
		cmocka_unit_test(test_single_node_fit_first),
		cmocka_unit_test(test_gang_leaf),
		cmocka_unit_test(test_gang_type_room),
		cmocka_unit_test(test_deterministic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

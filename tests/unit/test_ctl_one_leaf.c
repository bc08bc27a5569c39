/* test_ctl_one_leaf.c - the one_leaf request option (Slurm's --switches=1):
 * a gang that no single leaf switch can hold is refused (it waits in the
 * queue) instead of spanning leaves; the lease request field reaches the
 * placer and a wrong type is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_int.h"
#include "place.h"

struct lx {
	struct fleet f;
	int leaf[4];
	int node[4][4]; /* [leaf][i] */
	struct placer *p;
};

/* nleaves leaves of 4 hgx-h100-8 nodes each. */
static void lx_init(struct lx *x, int nleaves)
{
	int s, fab;
	memset(x, 0, sizeof(*x));
	assert_int_equal(fleet_init(&x->f), SL_OK);
	assert_int_equal(fleet_add_site(&x->f, "s1", "r1", &s, NULL), SL_OK);
	assert_int_equal(fleet_add_fabric(&x->f, s, "ib", FABRIC_INFINIBAND, 400, &fab, NULL),
			 SL_OK);
	int t = fleet_find_type(&x->f, "hgx-h100-8");
	assert_true(t >= 0);
	for (int l = 0; l < nleaves; l++) {
		char name[32];
		snprintf(name, sizeof(name), "leaf-%d", l);
		assert_int_equal(fleet_add_leaf(&x->f, fab, name, &x->leaf[l], NULL), SL_OK);
		for (int i = 0; i < 4; i++) {
			snprintf(name, sizeof(name), "n%d%d", l, i);
			assert_int_equal(fleet_add_node(&x->f, x->leaf[l], name, t, &x->node[l][i],
							NULL),
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

static void use_gpu0(struct lx *x, int node, struct placement *keep)
{
	struct place_pick k = {.node = node, .gpus = 1, .gpu = -1};
	placement_init(keep);
	assert_int_equal(placement_add(keep, &k), SL_OK);
	assert_int_equal(placer_claim(x->p, keep, NULL), SL_OK);
}

static int leaves_of(const struct lx *x, const struct placement *pl)
{
	unsigned seen = 0;
	for (int i = 0; i < pl->npicks; i++)
		seen |= 1u << x->f.nodes[pl->picks[i].node].leaf;
	return __builtin_popcount(seen);
}

static struct place_request gang(int nodes, bool one_leaf)
{
	struct place_request r;
	memset(&r, 0, sizeof(r));
	r.gpus = nodes * 8;
	r.per_node = 8;
	r.one_leaf = one_leaf;
	return r;
}

/* Two leaves with two whole free nodes each: a 3-node gang spans two leaves
 * without one_leaf, is refused with it (saying why), and fits once a leaf
 * has three whole nodes again. */
static void test_refused_rather_than_spread(void **state)
{
	(void)state;
	struct lx x;
	lx_init(&x, 2);
	struct placement busy[4], pl;
	use_gpu0(&x, x.node[0][0], &busy[0]);
	use_gpu0(&x, x.node[0][1], &busy[1]);
	use_gpu0(&x, x.node[1][0], &busy[2]);
	use_gpu0(&x, x.node[1][1], &busy[3]);

	struct place_request q = gang(3, false);
	placement_init(&pl);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 3);
	assert_int_equal(leaves_of(&x, &pl), 2);
	placement_release(&pl);

	q = gang(3, true);
	placement_init(&pl);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_ENOSPACE);
	assert_int_equal(pl.npicks, 0);
	assert_int_equal(pl.failed, PLACE_C_GANG);
	assert_non_null(strstr(pl.why, "one leaf switch"));
	placement_release(&pl);
	/* the quiet variant decides the same */
	placement_init(&pl);
	assert_int_equal(placer_place_quiet(x.p, &q, &pl, NULL), SL_ENOSPACE);
	placement_release(&pl);

	/* a 2-node gang fits one leaf either way */
	q = gang(2, true);
	placement_init(&pl);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_OK);
	assert_int_equal(leaves_of(&x, &pl), 1);
	placement_release(&pl);

	/* leaf 1 gets a third whole node: the one-leaf gang goes there */
	assert_int_equal(placer_release(x.p, &busy[3], NULL), SL_OK);
	q = gang(3, true);
	placement_init(&pl);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 3);
	assert_int_equal(leaves_of(&x, &pl), 1);
	assert_int_equal(x.f.nodes[pl.picks[0].node].leaf, x.leaf[1]);
	placement_release(&pl);
	for (int i = 0; i < 4; i++)
		placement_release(&busy[i]);
	lx_done(&x);
}

/* Larger than any leaf: refused with one_leaf; single-node requests ignore it. */
static void test_bigger_than_a_leaf_and_single_node(void **state)
{
	(void)state;
	struct lx x;
	lx_init(&x, 3);
	struct placement pl;
	struct place_request q = gang(5, true);
	placement_init(&pl);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_ENOSPACE);
	assert_int_equal(pl.failed, PLACE_C_GANG);
	placement_release(&pl);
	q = gang(5, false);
	placement_init(&pl);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_OK);
	assert_int_equal(leaves_of(&x, &pl), 2);
	placement_release(&pl);
	memset(&q, 0, sizeof(q));
	q.gpus = 4;
	q.one_leaf = true;
	placement_init(&pl);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 1);
	placement_release(&pl);
	lx_done(&x);
}

/* The lease request field: parsed, handed to the placer, type-checked. */
static void test_request_field(void **state)
{
	(void)state;
	struct lease_req r;
	struct place_request pr;
	struct sl_diag d;
	sl_diag_clear(&d);
	json_t *o = json_loads("{\"gpus\":16,\"per_node\":8,\"one_leaf\":true}", 0, NULL);
	assert_int_equal(lease_req_parse(o, &r, &d), SL_OK);
	json_decref(o);
	assert_true(r.one_leaf);
	lease_req_to_place(&r, "acme", &pr);
	assert_true(pr.one_leaf);

	o = json_loads("{\"gpus\":16}", 0, NULL);
	assert_int_equal(lease_req_parse(o, &r, &d), SL_OK);
	json_decref(o);
	assert_false(r.one_leaf);

	o = json_loads("{\"gpus\":16,\"one_leaf\":1}", 0, NULL);
	assert_int_equal(lease_req_parse(o, &r, &d), SL_EINVAL);
	json_decref(o);
	assert_non_null(strstr(d.msg, "one_leaf"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused_rather_than_spread),
		cmocka_unit_test(test_bigger_than_a_leaf_and_single_node),
		cmocka_unit_test(test_request_field),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

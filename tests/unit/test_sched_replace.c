/* test_sched_replace.c - sched_replace_node: a running lease moves off a
 * failed node to GPUs of the same leaf first, then the site; no GPU is ever
 * held twice; a refusal leaves the lease as it was; the failed node's other
 * leases still end through sched_node_failed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "scheduler.h"

#define S(x) ((int64_t)(x) * 1000000000LL)

struct fx {
	struct fleet f;
	int node[8];
	struct placer *p;
	struct sched *s;
};

/* n0, n1 on leaf l1; n2, n3 on leaf l2; 8-GPU nodes. */
static void fx_init(struct fx *x)
{
	int site, fab, l[2];
	memset(x, 0, sizeof(*x));
	assert_int_equal(fleet_init(&x->f), SL_OK);
	assert_int_equal(fleet_add_site(&x->f, "s1", "r1", &site, NULL), SL_OK);
	assert_int_equal(fleet_add_fabric(&x->f, site, "ib", FABRIC_INFINIBAND, 400, &fab, NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&x->f, fab, "l1", &l[0], NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&x->f, fab, "l2", &l[1], NULL), SL_OK);
	int t = fleet_find_type(&x->f, "hgx-h100-8");
	for (int i = 0; i < 4; i++) {
		char name[8];
		snprintf(name, sizeof(name), "n%d", i);
		assert_int_equal(fleet_add_node(&x->f, l[i / 2], name, t, &x->node[i], NULL), SL_OK);
	}
	assert_int_equal(placer_new(&x->f, &x->p), SL_OK);
	assert_int_equal(sched_new(x->p, &x->s), SL_OK);
}

static void fx_free(struct fx *x)
{
	sched_free(x->s);
	placer_free(x->p);
	fleet_release(&x->f);
}

static void submit(struct fx *x, uint64_t id, int gpus, int64_t now)
{
	struct place_request r;
	struct sched_spec sp;
	memset(&r, 0, sizeof(r));
	memset(&sp, 0, sizeof(sp));
	r.gpus = gpus;
	sp.tenant = "t";
	sp.plan = PLAN_HOURLY;
	sp.req = &r;
	assert_int_equal(sched_submit(x->s, id, &sp, now, NULL), SL_OK);
	assert_int_equal(sched_lease_state(x->s, id), SCHED_RUNNING);
}

static int used(const struct fx *x, int node)
{
	int n = 0;
	for (int g = 0; g < 8; g++)
		n += placer_gpu_used_milli(x->p, node, g) == 1000;
	return n;
}

static void test_same_leaf_first(void **st)
{
	(void)st;
	struct fx x;
	fx_init(&x);
	submit(&x, 1, 4, S(1)); /* best fit: lands on some node */
	struct placement out;
	placement_init(&out);
	int n = -1;
	for (int i = 0; i < 4; i++)
		if (used(&x, i) == 4)
			n = i;
	assert_true(n >= 0);
	int buddy = n ^ 1; /* the other node of its leaf */
	assert_int_equal(sched_replace_node(x.s, 1, n, S(2), &out, NULL), SL_OK);
	assert_int_equal(out.npicks, 1);
	assert_int_equal(out.picks[0].node, buddy);
	assert_int_equal(__builtin_popcount(out.picks[0].gpus), 4);
	assert_int_equal(used(&x, n), 0);     /* old GPUs released */
	assert_int_equal(used(&x, buddy), 4); /* new ones claimed */
	assert_false(placer_node_usable(x.p, n));
	/* the failure ends nothing: the lease is elsewhere now */
	sched_events_clear(x.s);
	assert_int_equal(sched_node_failed(x.s, n, S(3)), SL_OK);
	assert_int_equal(sched_lease_state(x.s, 1), SCHED_RUNNING);
	placement_release(&out);
	fx_free(&x);
}

static void test_other_leaf_when_full(void **st)
{
	(void)st;
	struct fx x;
	fx_init(&x);
	submit(&x, 1, 8, S(1));
	submit(&x, 2, 8, S(1));
	int a = -1;
	for (int i = 0; i < 4; i++)
		if (used(&x, i) == 8 && used(&x, i ^ 1) == 8)
			a = i;
	assert_true(a >= 0); /* both on one leaf (best fit keeps leaves full) */
	/* lease 1's node fails; its leaf buddy is full: the other leaf */
	struct placement out;
	placement_init(&out);
	int n1 = -1;
	for (int i = 0; i < 4; i++)
		if (used(&x, i) == 8)
			n1 = n1 < 0 ? i : n1;
	assert_int_equal(sched_replace_node(x.s, 1, n1, S(2), &out, NULL) == SL_OK ||
				 sched_replace_node(x.s, 2, n1, S(2), &out, NULL) == SL_OK,
			 1);
	assert_int_equal(out.npicks, 1);
	assert_true(out.picks[0].node / 2 != n1 / 2);
	assert_int_equal(used(&x, n1), 0);
	placement_release(&out);
	fx_free(&x);
}

static void test_no_room_changes_nothing(void **st)
{
	(void)st;
	struct fx x;
	struct sl_diag d;
	fx_init(&x);
	for (uint64_t id = 1; id <= 4; id++)
		submit(&x, id, 8, S(1));
	struct placement out;
	placement_init(&out);
	int nospace = 0, notused = 0;
	for (int i = 0; i < 4; i++) {
		sl_diag_clear(&d);
		enum sl_err e = sched_replace_node(x.s, 1, i, S(2), &out, &d);
		nospace += e == SL_ENOSPACE;
		notused += e == SL_EINVAL;
		if (e == SL_ENOSPACE)
			assert_non_null(strstr(d.msg, "no free GPUs"));
	}
	assert_int_equal(nospace, 1);
	assert_int_equal(notused, 3);
	for (int i = 0; i < 4; i++)
		assert_int_equal(used(&x, i), 8);
	assert_int_equal(sched_lease_state(x.s, 1), SCHED_RUNNING);
	assert_int_equal(sched_replace_node(x.s, 77, 0, S(3), &out, NULL), SL_ENOTFOUND);
	assert_int_equal(sched_replace_node(x.s, 1, 99, S(3), &out, NULL), SL_EINVAL);
	placement_release(&out);
	fx_free(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_leaf_first),
		cmocka_unit_test(test_other_leaf_when_full),
		cmocka_unit_test(test_no_room_changes_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_sched.c - the scheduler: gangs, order, fair share, backfill, spot
 * preemption, reservations, quotas, elastic leases, expiry, events, and a
 * randomized invariant check.
 *
 * Fleets are small and built with the fleet builder; time is passed in whole
 * seconds (S()) so scenarios read like timelines. The randomized test uses a
 * fixed-seed generator and checks, after every call, that no GPU is in two
 * leases and the placer agrees with the leases, that every running lease got
 * what it asked for, and that the queue is in the documented order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "catalog.h"
#include "scheduler.h"

#define S(x) ((int64_t)(x) * 1000000000LL)
#define MAXN 16

/* ---- fixture -------------------------------------------------------------- */

struct fx {
	struct fleet f;
	int leaf[2];
	int node[MAXN];
	int n;
	struct placer *p;
	struct sched *s;
};

/* n nodes "n0".."n{n-1}" of type; the first half on leaf l1, the rest on l2. */
static void fx_init(struct fx *x, int n, const char *type)
{
	int site, fab;
	memset(x, 0, sizeof(*x));
	assert_int_equal(fleet_init(&x->f), SL_OK);
	assert_int_equal(fleet_add_site(&x->f, "s1", "r1", &site, NULL), SL_OK);
	assert_int_equal(fleet_add_fabric(&x->f, site, "ib", FABRIC_INFINIBAND, 400, &fab, NULL),
			 SL_OK);
	assert_int_equal(fleet_add_leaf(&x->f, fab, "l1", &x->leaf[0], NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&x->f, fab, "l2", &x->leaf[1], NULL), SL_OK);
	int t = fleet_find_type(&x->f, type);
	assert_true(t >= 0);
	/* The smaller half under l1, so that the leaf term (place.h: a whole
	 * node from the leaf with the fewest) agrees with name order at first. */
	for (int i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "n%d", i);
		assert_int_equal(fleet_add_node(&x->f, x->leaf[i < n / 2 ? 0 : 1], name, t,
						&x->node[i], NULL),
				 SL_OK);
	}
	x->n = n;
	assert_int_equal(placer_new(&x->f, &x->p), SL_OK);
	assert_int_equal(sched_new(x->p, &x->s), SL_OK);
}

static void fx_free(struct fx *x)
{
	sched_free(x->s);
	placer_free(x->p);
	fleet_release(&x->f);
}

/* The lease plans in priority order, as the random tests draw them. */
static const enum plan lease_plans[3] = {PLAN_MONTHLY, PLAN_HOURLY, PLAN_SPOT};

struct opt {
	enum plan plan;
	int64_t dur_s;
	int emin, emax;
	const char *model;
};

static enum sl_err sub_opt(struct fx *x, uint64_t id, const char *tenant, int gpus,
			   int64_t now_s, const struct opt *o, struct sl_diag *d)
{
	struct place_request r;
	memset(&r, 0, sizeof(r));
	r.gpus = gpus;
	if (o->model) {
		r.nmodels = 1;
		r.models[0] = o->model;
	}
	struct sched_spec sp = {tenant, o->plan, &r, S(o->dur_s), o->emin, o->emax};
	return sched_submit(x->s, id, &sp, S(now_s), d);
}

/* Hourly, open-ended. */
static enum sl_err sub(struct fx *x, uint64_t id, const char *tenant, int gpus, int64_t now_s)
{
	struct opt o = {PLAN_HOURLY, 0, 0, 0, NULL};
	return sub_opt(x, id, tenant, gpus, now_s, &o, NULL);
}

static enum sched_state st(struct fx *x, uint64_t id)
{
	return sched_lease_state(x->s, id);
}

static int nevents(struct fx *x)
{
	const struct sched_event *ev;
	int n;
	sched_events(x->s, &ev, &n);
	return n;
}

static const struct sched_event *ev_at(struct fx *x, int i)
{
	const struct sched_event *ev;
	int n;
	sched_events(x->s, &ev, &n);
	assert_true(i >= 0 && i < n);
	return &ev[i];
}

/* Index of the first event of type t for id, or -1. */
static int ev_find(struct fx *x, enum sched_event_type t, uint64_t id)
{
	const struct sched_event *ev;
	int n;
	sched_events(x->s, &ev, &n);
	for (int i = 0; i < n; i++)
		if (ev[i].type == t && ev[i].id == id)
			return i;
	return -1;
}

static int lease_gpus_on(struct fx *x, uint64_t id, int node)
{
	const struct placement *pl = sched_lease_placement(x->s, id);
	int n = 0;
	for (int i = 0; pl && i < pl->npicks; i++)
		if (pl->picks[i].node == node)
			n += __builtin_popcount(pl->picks[i].gpus);
	return n;
}

static int lease_total(struct fx *x, uint64_t id)
{
	int n = 0;
	for (int i = 0; i < x->n; i++)
		n += lease_gpus_on(x, id, x->node[i]);
	return n;
}

static int free_gpus(struct fx *x, int node)
{
	return __builtin_popcount(placer_free_mask(x->p, node));
}

/* ---- gangs, order, fair share ---------------------------------------------- */

static void test_gang_all_or_nothing(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 3, "hgx-h100-8");
	assert_int_equal(sub(&x, 1, "acme", 4, 0), SL_OK);
	assert_int_equal(sub(&x, 2, "acme", 4, 1), SL_OK);
	assert_int_equal(st(&x, 1), SCHED_RUNNING);
	/* Best fit packs both on n0; take 4 on another node by hand-free trick:
	 * a third lease of 4 goes to n1, leaving only n2 whole. */
	assert_int_equal(sub(&x, 3, "acme", 4, 2), SL_OK);
	assert_int_equal(lease_gpus_on(&x, 1, x.node[0]) + lease_gpus_on(&x, 2, x.node[0]), 8);
	assert_int_equal(sched_release(x.s, 2, S(3), NULL), SL_OK);
	assert_int_equal(sub(&x, 4, "acme", 4, 4), SL_OK); /* best fit: back onto n0 */
	assert_int_equal(lease_gpus_on(&x, 4, x.node[0]), 4);
	/* Free now: 0 + 4 + 8 = 12 GPUs, one whole node; 16 in one gang must wait. */
	int before[3];
	for (int i = 0; i < 3; i++)
		before[i] = free_gpus(&x, x.node[i]);
	sched_events_clear(x.s);
	assert_int_equal(sub(&x, 10, "gang", 16, 5), SL_OK);
	assert_int_equal(st(&x, 10), SCHED_PENDING);
	assert_null(sched_lease_placement(x.s, 10));
	for (int i = 0; i < 3; i++)
		assert_int_equal(free_gpus(&x, x.node[i]), before[i]);
	int q = ev_find(&x, SCHED_EV_QUEUED, 10);
	assert_true(q >= 0);
	assert_int_equal(ev_at(&x, q)->position, 1);
	assert_true(ev_at(&x, q)->constraint == PLACE_C_GANG ||
		    ev_at(&x, q)->constraint == PLACE_C_FREE);
	assert_true(strlen(ev_at(&x, q)->reason) > 0);
	/* Freeing n1 half way is still not enough... */
	assert_int_equal(sched_release(x.s, 1, S(6), NULL), SL_OK);
	assert_int_equal(st(&x, 10), SCHED_PENDING);
	/* ...until a second node is whole; then the gang takes two whole nodes. */
	assert_int_equal(sched_release(x.s, 3, S(7), NULL), SL_OK);
	assert_int_equal(st(&x, 10), SCHED_RUNNING);
	const struct placement *pl = sched_lease_placement(x.s, 10);
	assert_non_null(pl);
	assert_int_equal(pl->npicks, 2);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pl->picks[i].gpus, 0xff);
	fx_free(&x);
}

static void test_priority_order(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 1, "hgx-h100-8");
	assert_int_equal(sub(&x, 1, "ops", 8, 0), SL_OK);
	struct opt spot = {PLAN_SPOT, 0, 0, 0, NULL}, mon = {PLAN_MONTHLY, 0, 0, 0, NULL};
	assert_int_equal(sub_opt(&x, 2, "a", 8, 1, &spot, NULL), SL_OK);
	assert_int_equal(sub(&x, 3, "a", 8, 2), SL_OK);
	assert_int_equal(sub_opt(&x, 4, "a", 8, 3, &mon, NULL), SL_OK);
	const struct sched_queue_entry *q;
	int n;
	assert_int_equal(sched_queue(x.s, &q, &n), SL_OK);
	assert_int_equal(n, 3);
	uint64_t want[] = {4, 3, 2};
	for (int i = 0; i < 3; i++) {
		assert_int_equal(q[i].id, want[i]);
		assert_int_equal(q[i].position, i + 1);
	}
	/* One lease's place is its place in the listing. */
	for (int i = 0; i < 3; i++) {
		int pos = 0;
		const char *why = NULL;
		char listed[SCHED_REASON_MAX];
		snprintf(listed, sizeof(listed), "%s", q[i].reason);
		assert_true(sched_queue_position(x.s, want[i], &pos, &why));
		assert_int_equal(pos, i + 1);
		assert_string_equal(why, listed);
	}
	int pos = 0;
	const char *why = NULL;
	assert_false(sched_queue_position(x.s, 1, &pos, &why)); /* running */
	assert_false(sched_queue_position(x.s, 99, &pos, &why)); /* unknown */
	/* The monthly lease was queued at position 1, ahead of those before it. */
	assert_int_equal(ev_at(&x, ev_find(&x, SCHED_EV_QUEUED, 4))->position, 1);
	assert_int_equal(ev_at(&x, ev_find(&x, SCHED_EV_QUEUED, 2))->position, 1);
	uint64_t prev = 1;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(sched_release(x.s, prev, S(10 + i), NULL), SL_OK);
		assert_int_equal(st(&x, want[i]), SCHED_RUNNING);
		prev = want[i];
	}
	fx_free(&x);
}

static void test_fair_share(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 1, "hgx-h100-8");
	assert_int_equal(sub(&x, 100, "ops", 8, 0), SL_OK);
	for (int i = 0; i < 4; i++)
		assert_int_equal(sub(&x, 10 + (uint64_t)i, "a", 2, 1 + i), SL_OK);
	for (int i = 0; i < 4; i++)
		assert_int_equal(sub(&x, 20 + (uint64_t)i, "b", 2, 5 + i), SL_OK);
	sched_events_clear(x.s);
	assert_int_equal(sched_release(x.s, 100, S(10), NULL), SL_OK);
	/* Four 2-GPU leases fit; the tenants alternate although a submitted first. */
	uint64_t want[] = {10, 20, 11, 21};
	int k = 0;
	for (int i = 0; i < nevents(&x); i++)
		if (ev_at(&x, i)->type == SCHED_EV_STARTED) {
			assert_true(k < 4);
			assert_int_equal(ev_at(&x, i)->id, want[k++]);
		}
	assert_int_equal(k, 4);
	/* Now equal: the queue is a's next, then b's. A weight of 3 for b makes b
	 * count as running less, so b goes first. */
	const struct sched_queue_entry *q;
	int n;
	assert_int_equal(sched_queue(x.s, &q, &n), SL_OK);
	assert_int_equal(n, 4);
	assert_int_equal(q[0].id, 12);
	assert_int_equal(sched_set_tenant_weight(x.s, "b", 3, NULL), SL_OK);
	assert_int_equal(sched_queue(x.s, &q, &n), SL_OK);
	assert_int_equal(q[0].id, 22);
	assert_int_equal(sched_set_tenant_weight(x.s, "b", 0, NULL), SL_EINVAL);
	fx_free(&x);
}

/* ---- backfill -------------------------------------------------------------- */

static void test_backfill(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 3, "hgx-h100-8");
	/* n2 has half its GPUs out of service, so it is never a whole node. */
	for (int g = 4; g < 8; g++)
		placer_set_gpu_usable(x.p, x.node[2], g, false);
	struct opt d100 = {PLAN_HOURLY, 100, 0, 0, NULL}, d200 = {PLAN_HOURLY, 200, 0, 0, NULL};
	assert_int_equal(sub_opt(&x, 1, "a", 8, 0, &d100, NULL), SL_OK); /* n0 until 100 */
	assert_int_equal(sub_opt(&x, 2, "a", 6, 0, &d200, NULL), SL_OK); /* n1 until 200 */
	assert_int_equal(lease_gpus_on(&x, 1, x.node[0]), 8);
	assert_int_equal(lease_gpus_on(&x, 2, x.node[1]), 6);
	/* Head: 16 GPUs in whole nodes; can start at 200 on n0 + n1. */
	assert_int_equal(sub(&x, 10, "h", 16, 1), SL_OK);
	assert_int_equal(st(&x, 10), SCHED_PENDING);
	const struct sched_queue_entry *q;
	int n;
	assert_int_equal(sched_queue(x.s, &q, &n), SL_OK);
	assert_non_null(strstr(q[0].reason, "can start in about 199 s"));
	struct opt d300 = {PLAN_HOURLY, 300, 0, 0, NULL}, d149 = {PLAN_HOURLY, 149, 0, 0, NULL};
	sched_events_clear(x.s);
	/* A long lease on a node the head does not need starts. */
	assert_int_equal(sub_opt(&x, 20, "b", 4, 2, &d300, NULL), SL_OK);
	assert_int_equal(st(&x, 20), SCHED_RUNNING);
	assert_int_equal(lease_gpus_on(&x, 20, x.node[2]), 4);
	assert_true(ev_at(&x, ev_find(&x, SCHED_EV_STARTED, 20))->backfilled);
	/* A long one that could only go to n1 would delay the head: refused. */
	assert_int_equal(sub_opt(&x, 21, "b", 2, 3, &d300, NULL), SL_OK);
	assert_int_equal(st(&x, 21), SCHED_PENDING);
	const struct sched_event *qe = ev_at(&x, ev_find(&x, SCHED_EV_QUEUED, 21));
	assert_non_null(strstr(qe->reason, "delay lease 10"));
	assert_int_equal(qe->constraint, PLACE_C_NONE);
	/* No duration: never ahead of the head. */
	assert_int_equal(sub(&x, 22, "b", 2, 4), SL_OK);
	assert_int_equal(st(&x, 22), SCHED_PENDING);
	/* Ends by the shadow time (4 + 149 <= 200): starts on n1. */
	assert_int_equal(sub_opt(&x, 23, "b", 2, 4, &d149, NULL), SL_OK);
	assert_int_equal(st(&x, 23), SCHED_RUNNING);
	assert_int_equal(lease_gpus_on(&x, 23, x.node[1]), 2);
	assert_true(ev_at(&x, ev_find(&x, SCHED_EV_STARTED, 23))->backfilled);
	/* The head starts at its shadow time. */
	assert_int_equal(sched_tick(x.s, S(100)), SL_OK);
	assert_int_equal(st(&x, 1), SCHED_NONE);
	assert_int_equal(st(&x, 10), SCHED_PENDING);
	assert_int_equal(sched_tick(x.s, S(153)), SL_OK);
	assert_int_equal(st(&x, 23), SCHED_NONE);
	assert_int_equal(st(&x, 10), SCHED_PENDING);
	assert_int_equal(sched_tick(x.s, S(200)), SL_OK);
	assert_int_equal(st(&x, 10), SCHED_RUNNING);
	assert_int_equal(lease_gpus_on(&x, 10, x.node[0]), 8);
	assert_int_equal(lease_gpus_on(&x, 10, x.node[1]), 8);
	assert_int_equal(st(&x, 21), SCHED_PENDING);
	fx_free(&x);
}

/* ---- preemption ------------------------------------------------------------ */

/* A lease that fits now only on a node the head's shadow placement uses
 * still starts when the head can start as early, on as few leaves, on other
 * nodes that free up by then; not when that would spread the head. */
static void test_backfill_exact(void **state)
{
	(void)state;
	struct fx x;
	/* n0, n1 under l1; n2, n3 under l2. */
	fx_init(&x, 4, "hgx-h100-8");
	struct opt d100 = {PLAN_HOURLY, 100, 0, 0, NULL}, d300 = {PLAN_HOURLY, 300, 0, 0, NULL};
	assert_int_equal(sub_opt(&x, 1, "a", 8, 0, &d300, NULL), SL_OK);
	assert_int_equal(sub_opt(&x, 2, "a", 4, 0, &d100, NULL), SL_OK);
	assert_int_equal(sub_opt(&x, 3, "a", 8, 0, &d100, NULL), SL_OK);
	assert_int_equal(sub_opt(&x, 4, "a", 8, 0, &d300, NULL), SL_OK);
	assert_int_equal(lease_gpus_on(&x, 1, x.node[0]), 8);
	assert_int_equal(lease_gpus_on(&x, 2, x.node[1]), 4);
	assert_int_equal(lease_gpus_on(&x, 3, x.node[2]), 8);
	assert_int_equal(lease_gpus_on(&x, 4, x.node[3]), 8);
	/* Head: a whole node; at 100 n1 and n2 are whole, and the shadow
	 * placement is n1 (name order), the only node with GPUs free now. */
	assert_int_equal(sub(&x, 10, "h", 8, 1), SL_OK);
	assert_int_equal(st(&x, 10), SCHED_PENDING);
	sched_events_clear(x.s);
	/* Four GPUs past 100 fit only on n1; the head can have n2 at 100. */
	assert_int_equal(sub_opt(&x, 11, "b", 4, 2, &d300, NULL), SL_OK);
	assert_int_equal(st(&x, 11), SCHED_RUNNING);
	assert_int_equal(lease_gpus_on(&x, 11, x.node[1]), 4);
	assert_true(ev_at(&x, ev_find(&x, SCHED_EV_STARTED, 11))->backfilled);
	/* The head starts at its time all the same. */
	assert_int_equal(sched_tick(x.s, S(100)), SL_OK);
	assert_int_equal(st(&x, 10), SCHED_RUNNING);
	assert_int_equal(lease_gpus_on(&x, 10, x.node[2]), 8);
	fx_free(&x);

	/* A gang head of two whole nodes: at 100 n0 + n1 under l1 (n2 too). */
	fx_init(&x, 4, "hgx-h100-8");
	assert_int_equal(sub_opt(&x, 1, "a", 4, 0, &d100, NULL), SL_OK);
	assert_int_equal(sub_opt(&x, 2, "a", 8, 0, &d100, NULL), SL_OK);
	assert_int_equal(sub_opt(&x, 3, "a", 8, 0, &d100, NULL), SL_OK);
	assert_int_equal(sub_opt(&x, 4, "a", 8, 0, &d300, NULL), SL_OK);
	assert_int_equal(lease_gpus_on(&x, 1, x.node[0]), 4);
	assert_int_equal(lease_gpus_on(&x, 2, x.node[1]), 8);
	assert_int_equal(lease_gpus_on(&x, 3, x.node[2]), 8);
	assert_int_equal(lease_gpus_on(&x, 4, x.node[3]), 8);
	assert_int_equal(sub(&x, 10, "h", 16, 1), SL_OK);
	assert_int_equal(st(&x, 10), SCHED_PENDING);
	/* On n0 it would leave the head n1 + n2 at 100: two leaves, refused. */
	sched_events_clear(x.s);
	assert_int_equal(sub_opt(&x, 11, "b", 4, 2, &d300, NULL), SL_OK);
	assert_int_equal(st(&x, 11), SCHED_PENDING);
	assert_non_null(strstr(ev_at(&x, ev_find(&x, SCHED_EV_QUEUED, 11))->reason,
			       "delay lease 10"));
	assert_int_equal(sched_tick(x.s, S(100)), SL_OK);
	assert_int_equal(st(&x, 10), SCHED_RUNNING);
	assert_int_equal(lease_gpus_on(&x, 10, x.node[0]), 8);
	assert_int_equal(lease_gpus_on(&x, 10, x.node[1]), 8);
	fx_free(&x);
}

static void test_spot_preemption(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 2, "hgx-h100-8");
	struct opt spot = {PLAN_SPOT, 0, 0, 0, NULL};
	assert_int_equal(sub_opt(&x, 1, "s", 8, 0, &spot, NULL), SL_OK);
	assert_int_equal(sub_opt(&x, 2, "s", 8, 1, &spot, NULL), SL_OK);
	int n2 = lease_gpus_on(&x, 2, x.node[0]) ? x.node[0] : x.node[1];
	sched_events_clear(x.s);
	/* Hourly needs 8: the newest spot lease (2) gets a 30 s notice. */
	assert_int_equal(sub(&x, 10, "acme", 8, 10), SL_OK);
	assert_int_equal(st(&x, 10), SCHED_PENDING);
	assert_int_equal(st(&x, 2), SCHED_PREEMPTING);
	assert_int_equal(st(&x, 1), SCHED_RUNNING);
	int k = ev_find(&x, SCHED_EV_PREEMPT_NOTICE, 2);
	assert_true(k >= 0);
	assert_int_equal(ev_at(&x, k)->deadline_ns, S(40));
	assert_int_equal(ev_at(&x, k)->by, 10);
	assert_int_equal(ev_find(&x, SCHED_EV_PREEMPT_NOTICE, 1), -1);
	struct sched_lease_info info;
	assert_true(sched_lease_get(x.s, 2, &info));
	assert_int_equal(info.deadline_ns, S(40));
	/* Another hourly request arrives during the notice; it ranks after 10. */
	assert_int_equal(sub(&x, 11, "zeta", 8, 12), SL_OK);
	assert_int_equal(st(&x, 11), SCHED_PENDING);
	assert_int_equal(sched_tick(x.s, S(39)), SL_OK);
	assert_int_equal(st(&x, 2), SCHED_PREEMPTING);
	assert_int_equal(free_gpus(&x, n2), 0); /* GPUs still with the spot lease */
	sched_events_clear(x.s);
	assert_int_equal(sched_tick(x.s, S(40)), SL_OK);
	int e = ev_find(&x, SCHED_EV_ENDED, 2), s = ev_find(&x, SCHED_EV_STARTED, 10);
	assert_true(e >= 0 && s > e);
	assert_int_equal(ev_at(&x, e)->end, SCHED_END_PREEMPTED);
	assert_int_equal(st(&x, 10), SCHED_RUNNING);
	assert_int_equal(lease_gpus_on(&x, 10, n2), 8);
	/* 11 did not get them; now it is the head and preempts spot lease 1. */
	assert_int_equal(ev_find(&x, SCHED_EV_STARTED, 11), -1);
	assert_int_equal(st(&x, 1), SCHED_PREEMPTING);
	assert_int_equal(sched_tick(x.s, S(70)), SL_OK);
	assert_int_equal(st(&x, 11), SCHED_RUNNING);
	fx_free(&x);
}

static void test_spot_not_preempted_for_spot(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 1, "hgx-h100-8");
	struct opt spot = {PLAN_SPOT, 0, 0, 0, NULL};
	assert_int_equal(sub_opt(&x, 1, "s", 8, 0, &spot, NULL), SL_OK);
	assert_int_equal(sub_opt(&x, 2, "t", 8, 1, &spot, NULL), SL_OK);
	assert_int_equal(st(&x, 1), SCHED_RUNNING);
	assert_int_equal(st(&x, 2), SCHED_PENDING);
	/* Zero notice: the hourly lease starts in the same call. */
	sched_set_preempt_notice(x.s, 0);
	assert_int_equal(sub(&x, 3, "h", 8, 2), SL_OK);
	assert_int_equal(st(&x, 1), SCHED_NONE);
	assert_int_equal(st(&x, 3), SCHED_RUNNING);
	assert_int_equal(st(&x, 2), SCHED_PENDING);
	fx_free(&x);
}

/* ---- reservations ---------------------------------------------------------- */

static void test_reservation(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 3, "hgx-h100-8");
	int nodes[] = {x.node[0], x.node[1]};
	assert_int_equal(sched_reserve(x.s, 1, "acme", nodes, 2, S(100), S(200), S(0), NULL),
			 SL_OK);
	/* Before the window, anyone: bob lands on n0 and keeps it. */
	assert_int_equal(sub(&x, 1, "bob", 8, 50), SL_OK);
	assert_int_equal(lease_gpus_on(&x, 1, x.node[0]), 8);
	sched_events_clear(x.s);
	assert_int_equal(sched_tick(x.s, S(100)), SL_OK);
	int k = ev_find(&x, SCHED_EV_RESV_STARTED, 1);
	assert_true(k >= 0);
	assert_int_equal(ev_at(&x, k)->placement.npicks, 2);
	assert_int_equal(st(&x, 1), SCHED_RUNNING); /* keeps running in the window */
	/* In the window bob gets only n2, even though n1 is free. */
	assert_int_equal(sub(&x, 2, "bob", 8, 110), SL_OK);
	assert_int_equal(lease_gpus_on(&x, 2, x.node[2]), 8);
	assert_int_equal(sub(&x, 3, "bob", 8, 111), SL_OK);
	assert_int_equal(st(&x, 3), SCHED_PENDING);
	assert_int_equal(free_gpus(&x, x.node[1]), 8);
	/* The owner can. */
	assert_int_equal(sub(&x, 4, "acme", 8, 112), SL_OK);
	assert_int_equal(lease_gpus_on(&x, 4, x.node[1]), 8);
	assert_int_equal(sched_release(x.s, 4, S(150), NULL), SL_OK);
	assert_int_equal(st(&x, 3), SCHED_PENDING);
	/* After the window, bob's waiting lease takes n1. */
	sched_events_clear(x.s);
	assert_int_equal(sched_tick(x.s, S(200)), SL_OK);
	assert_true(ev_find(&x, SCHED_EV_RESV_ENDED, 1) >= 0);
	assert_int_equal(st(&x, 3), SCHED_RUNNING);
	assert_int_equal(lease_gpus_on(&x, 3, x.node[1]), 8);
	fx_free(&x);
}

static void test_reservation_checks(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 4, "hgx-h100-8");
	int a[] = {x.node[0], x.node[1]}, b[] = {x.node[1]}, dup[] = {x.node[2], x.node[2]};
	int bad[] = {99};
	assert_int_equal(sched_reserve(x.s, 1, "acme", a, 2, S(100), S(200), 0, NULL), SL_OK);
	assert_int_equal(sched_reserve(x.s, 1, "acme", b, 1, S(300), S(400), 0, NULL), SL_EEXIST);
	assert_int_equal(sched_reserve(x.s, 2, "zed", b, 1, S(150), S(250), 0, NULL),
			 SL_ECONFLICT);
	assert_int_equal(sched_reserve(x.s, 2, "zed", b, 1, S(200), S(250), 0, NULL), SL_OK);
	assert_int_equal(sched_reserve(x.s, 3, "zed", dup, 2, S(0), S(10), 0, NULL), SL_EINVAL);
	assert_int_equal(sched_reserve(x.s, 3, "zed", bad, 1, S(0), S(10), 0, NULL), SL_EINVAL);
	assert_int_equal(sched_reserve(x.s, 3, "zed", b, 1, S(10), S(10), 0, NULL), SL_EINVAL);
	/* By count: 16 GPUs for acme now -> two whole nodes, not n0/n1 which a
	 * node reservation holds later in the same window. */
	assert_int_equal(sched_reserve_count(x.s, 5, "acme", "h100-sxm", 16, S(0), S(150), 0,
					     NULL),
			 SL_OK);
	int k = ev_find(&x, SCHED_EV_RESV_STARTED, 5);
	assert_true(k >= 0);
	const struct placement *pl = &ev_at(&x, k)->placement;
	assert_int_equal(pl->npicks, 2);
	for (int i = 0; i < 2; i++)
		assert_true(pl->picks[i].node == x.node[2] || pl->picks[i].node == x.node[3]);
	assert_int_equal(sub(&x, 10, "bob", 8, 1), SL_OK);
	assert_int_equal(lease_gpus_on(&x, 10, x.node[0]), 8);
	assert_int_equal(sched_reserve_count(x.s, 6, "acme", "a100-sxm", 8, S(0), S(5), 0, NULL),
			 SL_EINVAL);
	assert_int_equal(sched_unreserve(x.s, 5, S(2), NULL), SL_OK);
	assert_true(ev_find(&x, SCHED_EV_RESV_ENDED, 5) >= 0);
	assert_int_equal(sub(&x, 11, "bob", 8, 3), SL_OK);
	assert_int_equal(st(&x, 11), SCHED_RUNNING);
	assert_int_equal(sched_unreserve(x.s, 5, S(2), NULL), SL_ENOTFOUND);
	fx_free(&x);
}

/* ---- quotas ---------------------------------------------------------------- */

static void test_quota(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 2, "hgx-h100-8");
	assert_int_equal(sched_set_quota(x.s, "acme", "h100-sxm", 16, NULL), SL_OK);
	assert_int_equal(sched_set_quota(x.s, "acme", "nope", 16, NULL), SL_EINVAL);
	assert_int_equal(sub(&x, 1, "acme", 8, 0), SL_OK);
	assert_int_equal(sub(&x, 2, "acme", 4, 1), SL_OK);
	sched_events_clear(x.s);
	gpumask_t m0 = placer_free_mask(x.p, x.node[0]), m1 = placer_free_mask(x.p, x.node[1]);
	struct sl_diag d;
	sl_diag_clear(&d);
	struct opt h = {PLAN_HOURLY, 0, 0, 0, "h100-sxm"};
	assert_int_equal(sub_opt(&x, 3, "acme", 8, 2, &h, &d), SL_EQUOTA);
	assert_string_equal(d.msg, "tenant acme's quota for h100-sxm is 16 GPUs; 12 in use, "
				   "this request needs 8");
	assert_int_equal(sl_err_http_status(SL_EQUOTA), 403);
	/* Nothing changed. */
	assert_int_equal(nevents(&x), 0);
	assert_int_equal(st(&x, 3), SCHED_NONE);
	assert_int_equal(placer_free_mask(x.p, x.node[0]), m0);
	assert_int_equal(placer_free_mask(x.p, x.node[1]), m1);
	assert_int_equal(sched_pending_count(x.s), 0);
	/* Other tenants are not limited; acme can still use its last 4. */
	assert_int_equal(sub(&x, 4, "bob", 4, 3), SL_OK);
	assert_int_equal(sub(&x, 5, "acme", 4, 4), SL_OK);
	/* Pending leases count too: all GPUs are in use, a queued 2 is refused. */
	assert_int_equal(st(&x, 5), SCHED_PENDING);
	assert_int_equal(sub(&x, 6, "acme", 1, 5), SL_EQUOTA);
	/* Releasing frees quota. */
	assert_int_equal(sched_release(x.s, 2, S(6), NULL), SL_OK);
	assert_int_equal(st(&x, 5), SCHED_RUNNING);
	assert_int_equal(sched_release(x.s, 1, S(7), NULL), SL_OK);
	assert_int_equal(sub(&x, 6, "acme", 8, 8), SL_OK);
	assert_int_equal(sched_set_quota(x.s, "acme", "h100-sxm", -1, NULL), SL_OK);
	assert_int_equal(sub(&x, 7, "acme", 4, 9), SL_OK);
	fx_free(&x);
}

/* ---- elastic, expiry, events, failures ------------------------------------- */

static void test_elastic(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 2, "hgx-h100-8");
	struct opt el = {PLAN_HOURLY, 0, 2, 12, NULL};
	assert_int_equal(sub_opt(&x, 1, "a", 4, 0, &el, NULL), SL_OK);
	int home = lease_gpus_on(&x, 1, x.node[0]) ? x.node[0] : x.node[1];
	int other = home == x.node[0] ? x.node[1] : x.node[0];
	sched_events_clear(x.s);
	assert_int_equal(sched_scale(x.s, 1, 8, S(1), NULL), SL_OK);
	assert_int_equal(lease_gpus_on(&x, 1, home), 8); /* grew in place */
	assert_int_equal(sched_lease_placement(x.s, 1)->npicks, 1);
	int k = ev_find(&x, SCHED_EV_SCALED, 1);
	assert_true(k >= 0);
	assert_int_equal(ev_at(&x, k)->gpus, 8);
	assert_int_equal(sched_scale(x.s, 1, 12, S(2), NULL), SL_OK);
	assert_int_equal(lease_gpus_on(&x, 1, other), 4);
	assert_int_equal(sched_scale(x.s, 1, 13, S(3), NULL), SL_EINVAL);
	assert_int_equal(sched_scale(x.s, 1, 1, S(3), NULL), SL_EINVAL);
	assert_int_equal(lease_total(&x, 1), 12);
	/* Shrink from the end: the whole pick on the other node first. */
	assert_int_equal(sched_scale(x.s, 1, 6, S(4), NULL), SL_OK);
	assert_int_equal(lease_total(&x, 1), 6);
	assert_int_equal(lease_gpus_on(&x, 1, other), 0);
	assert_int_equal(free_gpus(&x, other), 8);
	assert_int_equal(free_gpus(&x, home), 2);
	/* Grow refused when there is no room; nothing changes. */
	assert_int_equal(sub(&x, 2, "b", 8, 5), SL_OK);
	sched_events_clear(x.s);
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(sched_scale(x.s, 1, 10, S(6), &d), SL_ENOSPACE);
	assert_true(strlen(d.msg) > 0);
	assert_int_equal(lease_total(&x, 1), 6);
	assert_int_equal(nevents(&x), 0);
	assert_int_equal(sched_scale(x.s, 2, 4, S(6), NULL), SL_EINVAL); /* not elastic */
	assert_int_equal(sched_scale(x.s, 9, 4, S(6), NULL), SL_ENOTFOUND);
	/* Quota applies to grows. */
	assert_int_equal(sched_set_quota(x.s, "a", "h100-sxm", 7, NULL), SL_OK);
	assert_int_equal(sched_scale(x.s, 1, 8, S(7), NULL), SL_EQUOTA);
	assert_int_equal(sched_scale(x.s, 1, 7, S(7), NULL), SL_OK);
	assert_int_equal(lease_total(&x, 1), 7);
	/* A pending elastic lease that shrinks to what is free starts. */
	struct opt el8 = {PLAN_HOURLY, 0, 1, 8, NULL};
	assert_int_equal(sub_opt(&x, 3, "c", 8, 8, &el8, NULL), SL_OK);
	assert_int_equal(st(&x, 3), SCHED_PENDING);
	assert_int_equal(sched_scale(x.s, 3, 1, S(9), NULL), SL_OK);
	assert_int_equal(st(&x, 3), SCHED_RUNNING);
	assert_int_equal(lease_gpus_on(&x, 3, home), 1);
	fx_free(&x);
}

static void test_expiry_and_extend(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 1, "hgx-h100-8");
	struct opt d60 = {PLAN_HOURLY, 60, 0, 0, NULL};
	assert_int_equal(sub_opt(&x, 1, "a", 8, 0, &d60, NULL), SL_OK);
	assert_int_equal(sub_opt(&x, 2, "a", 8, 0, &d60, NULL), SL_OK);
	assert_int_equal(sched_tick(x.s, S(59)), SL_OK);
	assert_int_equal(st(&x, 1), SCHED_RUNNING);
	sched_events_clear(x.s);
	assert_int_equal(sched_tick(x.s, S(60)), SL_OK);
	assert_int_equal(st(&x, 1), SCHED_NONE);
	assert_int_equal(ev_at(&x, ev_find(&x, SCHED_EV_ENDED, 1))->end, SCHED_END_EXPIRED);
	assert_int_equal(st(&x, 2), SCHED_RUNNING); /* its 60 s count from its start */
	assert_int_equal(sched_extend(x.s, 2, S(100), NULL), SL_OK);
	assert_int_equal(sched_tick(x.s, S(120)), SL_OK);
	assert_int_equal(st(&x, 2), SCHED_RUNNING);
	assert_int_equal(sched_tick(x.s, S(160)), SL_OK);
	assert_int_equal(st(&x, 2), SCHED_NONE);
	assert_int_equal(free_gpus(&x, x.node[0]), 8);
	assert_int_equal(sched_extend(x.s, 2, S(1), NULL), SL_ENOTFOUND);
	fx_free(&x);
}

static void test_event_order(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 1, "hgx-h100-8");
	assert_int_equal(sub(&x, 1, "a", 8, 0), SL_OK);
	assert_int_equal(sub(&x, 2, "a", 4, 1), SL_OK);
	assert_int_equal(sub(&x, 3, "b", 4, 2), SL_OK);
	assert_int_equal(sched_release(x.s, 1, S(3), NULL), SL_OK);
	assert_int_equal(sched_release(x.s, 3, S(4), NULL), SL_OK);
	struct {
		enum sched_event_type t;
		uint64_t id;
		int64_t at;
	} want[] = {
		{SCHED_EV_STARTED, 1, S(0)}, {SCHED_EV_QUEUED, 2, S(1)},
		{SCHED_EV_QUEUED, 3, S(2)},  {SCHED_EV_ENDED, 1, S(3)},
		{SCHED_EV_STARTED, 2, S(3)}, {SCHED_EV_STARTED, 3, S(3)},
		{SCHED_EV_ENDED, 3, S(4)},
	};
	assert_int_equal(nevents(&x), 7);
	for (int i = 0; i < 7; i++) {
		assert_int_equal(ev_at(&x, i)->type, want[i].t);
		assert_int_equal(ev_at(&x, i)->id, want[i].id);
		assert_int_equal(ev_at(&x, i)->at_ns, want[i].at);
	}
	/* b runs nothing while a runs 8, so fair share puts b's lease first. */
	assert_int_equal(ev_at(&x, 1)->position, 1);
	assert_int_equal(ev_at(&x, 2)->position, 1);
	assert_int_equal(ev_at(&x, 4)->placement.npicks, 1);
	assert_string_equal(sched_event_name(ev_at(&x, 3)->type), "ended");
	assert_string_equal(sched_end_name(ev_at(&x, 3)->end), "released");
	sched_events_clear(x.s);
	assert_int_equal(nevents(&x), 0);
	fx_free(&x);
}

static void test_node_failed(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 2, "hgx-h100-8");
	assert_int_equal(sub(&x, 1, "a", 8, 0), SL_OK);
	assert_int_equal(sub(&x, 2, "a", 8, 0), SL_OK);
	assert_int_equal(sub(&x, 3, "a", 8, 0), SL_OK);
	int n = lease_gpus_on(&x, 1, x.node[0]) ? x.node[0] : x.node[1];
	sched_events_clear(x.s);
	assert_int_equal(sched_node_failed(x.s, n, S(5)), SL_OK);
	assert_int_equal(st(&x, 1), SCHED_NONE);
	assert_int_equal(ev_at(&x, ev_find(&x, SCHED_EV_ENDED, 1))->end, SCHED_END_FAILED);
	assert_int_equal(st(&x, 3), SCHED_PENDING); /* the node is out of service */
	assert_int_equal(sched_node_restored(x.s, n, S(6)), SL_OK);
	assert_int_equal(st(&x, 3), SCHED_RUNNING);
	assert_int_equal(sched_node_failed(x.s, 99, S(6)), SL_EINVAL);
	fx_free(&x);
}

static void test_submit_errors(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 1, "hgx-h100-8");
	struct sl_diag d;
	sl_diag_clear(&d);
	struct opt a100 = {PLAN_HOURLY, 0, 0, 0, "a100-sxm"};
	struct opt bogus = {PLAN_HOURLY, 0, 0, 0, "bogus"};
	struct opt badel = {PLAN_HOURLY, 0, 4, 2, NULL};
	assert_int_equal(sub_opt(&x, 1, "a", 8, 0, &a100, &d), SL_ENOSPACE); /* never */
	assert_int_equal(sub_opt(&x, 1, "a", 8, 0, &bogus, NULL), SL_EINVAL);
	assert_int_equal(sub_opt(&x, 1, "a", 8, 0, &badel, NULL), SL_EINVAL);
	assert_int_equal(sub(&x, 1, "bad name!", 8, 0), SL_EINVAL);
	assert_int_equal(nevents(&x), 0);
	assert_int_equal(sub(&x, 1, "a", 8, 0), SL_OK);
	assert_int_equal(sub(&x, 1, "a", 8, 0), SL_EEXIST);
	assert_int_equal(sched_release(x.s, 42, 0, NULL), SL_ENOTFOUND);
	/* A pending lease leaves the queue on release. */
	assert_int_equal(sub(&x, 2, "a", 8, 1), SL_OK);
	assert_int_equal(sched_release(x.s, 2, S(2), NULL), SL_OK);
	assert_int_equal(sched_pending_count(x.s), 0);
	assert_int_equal(st(&x, 2), SCHED_NONE);
	/* An ended lease is forgotten; its id may name a new one. */
	assert_int_equal(sched_release(x.s, 1, S(3), NULL), SL_OK);
	assert_int_equal(sub(&x, 1, "b", 4, 4), SL_OK);
	assert_int_equal(st(&x, 1), SCHED_RUNNING);
	fx_free(&x);
}

static void test_placer_pool(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 3, "hgx-h100-8");
	struct place_request r;
	memset(&r, 0, sizeof(r));
	r.gpus = 8;
	r.tenant = "bob";
	struct placement pl;
	placement_init(&pl);
	int two[] = {x.node[0], x.node[1]};
	assert_int_equal(placer_set_pool(x.p, two, 2, "acme", NULL), SL_OK);
	assert_string_equal(placer_node_owner(x.p, x.node[1]), "acme");
	assert_null(placer_node_owner(x.p, x.node[2]));
	assert_int_equal(placer_place(x.p, &r, &pl, NULL), SL_OK);
	assert_int_equal(pl.picks[0].node, x.node[2]);
	assert_int_equal(placer_claim(x.p, &pl, NULL), SL_OK);
	assert_int_equal(placer_place(x.p, &r, &pl, NULL), SL_ENOSPACE);
	r.tenant = "acme";
	r.pool_owned = true;
	assert_int_equal(placer_place(x.p, &r, &pl, NULL), SL_OK);
	assert_int_equal(pl.picks[0].node, x.node[0]);
	/* Back to the provider; the claimed node keeps its work. */
	assert_int_equal(placer_set_node_pool(x.p, x.node[2], "zed", NULL), SL_OK);
	assert_int_equal(placer_free_mask(x.p, x.node[2]), 0);
	assert_int_equal(placer_set_pool(x.p, two, 2, NULL, NULL), SL_OK);
	r.tenant = "bob";
	r.pool_owned = false;
	assert_int_equal(placer_place(x.p, &r, &pl, NULL), SL_OK);
	assert_int_equal(pl.picks[0].node, x.node[0]);
	assert_int_equal(placer_set_node_pool(x.p, 99, "acme", NULL), SL_EINVAL);
	assert_int_equal(placer_set_node_pool(x.p, 0, "bad name", NULL), SL_EINVAL);
	placement_release(&pl);
	fx_free(&x);
}

static void test_restore(void **state)
{
	(void)state;
	struct fx x;
	fx_init(&x, 2, "hgx-h100-8");
	struct opt spot = {PLAN_SPOT, 0, 0, 0, NULL};
	assert_int_equal(sub(&x, 1, "a", 8, 0), SL_OK);
	assert_int_equal(sub_opt(&x, 2, "s", 8, 1, &spot, NULL), SL_OK);
	assert_int_equal(sub(&x, 3, "b", 4, 2), SL_OK);
	assert_int_equal(sub(&x, 4, "b", 4, 3), SL_OK);
	struct placement p1, p2;
	placement_init(&p1);
	placement_init(&p2);
	assert_int_equal(placement_copy(&p1, sched_lease_placement(x.s, 1)), SL_OK);
	assert_int_equal(placement_copy(&p2, sched_lease_placement(x.s, 2)), SL_OK);
	/* Restart: a fresh placer and scheduler rebuilt from what was stored,
	 * pending leases given in the "wrong" order. */
	sched_free(x.s);
	placer_free(x.p);
	assert_int_equal(placer_new(&x.f, &x.p), SL_OK);
	assert_int_equal(sched_new(x.p, &x.s), SL_OK);
	struct place_request r8, r4;
	memset(&r8, 0, sizeof(r8));
	r8.gpus = 8;
	r4 = r8;
	r4.gpus = 4;
	struct sched_spec sa = {"a", PLAN_HOURLY, &r8, 0, 0, 0};
	struct sched_spec ss = {"s", PLAN_SPOT, &r8, 0, 0, 0};
	struct sched_spec sb = {"b", PLAN_HOURLY, &r4, 0, 0, 0};
	struct sched_restore ra = {&sa, S(0), &p1, S(0), 0}, rs = {&ss, S(1), &p2, S(1), 0};
	struct sched_restore r3 = {&sb, S(2), NULL, 0, 0}, r4b = {&sb, S(3), NULL, 0, 0};
	assert_int_equal(sched_restore(x.s, 4, &r4b, NULL), SL_OK);
	assert_int_equal(sched_restore(x.s, 3, &r3, NULL), SL_OK);
	assert_int_equal(sched_restore(x.s, 1, &ra, NULL), SL_OK);
	assert_int_equal(sched_restore(x.s, 1, &ra, NULL), SL_EEXIST);
	assert_int_equal(sched_restore(x.s, 9, &ra, NULL), SL_ECONFLICT); /* GPUs taken */
	assert_int_equal(st(&x, 9), SCHED_NONE);
	assert_int_equal(sched_restore(x.s, 2, &rs, NULL), SL_OK);
	assert_int_equal(nevents(&x), 0);
	assert_int_equal(st(&x, 1), SCHED_RUNNING);
	assert_int_equal(free_gpus(&x, p1.picks[0].node), 0);
	assert_int_equal(sched_tick(x.s, S(10)), SL_OK);
	const struct sched_queue_entry *q;
	int n;
	assert_int_equal(sched_queue(x.s, &q, &n), SL_OK);
	assert_int_equal(n, 2);
	assert_int_equal(q[0].id, 3); /* its old submission time */
	/* The head preempted the restored spot lease at the tick. */
	assert_int_equal(st(&x, 2), SCHED_PREEMPTING);
	assert_int_equal(sched_tick(x.s, S(40)), SL_OK);
	assert_int_equal(st(&x, 3), SCHED_RUNNING);
	assert_int_equal(st(&x, 4), SCHED_RUNNING);
	/* A restored notice ends at its deadline. */
	assert_int_equal(sched_release(x.s, 3, S(41), NULL), SL_OK);
	assert_int_equal(sched_release(x.s, 4, S(41), NULL), SL_OK);
	struct placement p5;
	placement_init(&p5);
	assert_int_equal(placement_copy(&p5, &p2), SL_OK);
	struct sched_restore r5 = {&ss, S(42), &p5, S(42), S(60)};
	assert_int_equal(sched_restore(x.s, 5, &r5, NULL), SL_OK);
	assert_int_equal(st(&x, 5), SCHED_PREEMPTING);
	sched_events_clear(x.s);
	assert_int_equal(sched_tick(x.s, S(60)), SL_OK);
	assert_int_equal(ev_at(&x, ev_find(&x, SCHED_EV_ENDED, 5))->end, SCHED_END_PREEMPTED);
	/* Capacity freed behind the scheduler's back: sched_capacity_changed. */
	struct placement direct;
	placement_init(&direct);
	assert_int_equal(placer_place(x.p, &r8, &direct, NULL), SL_OK);
	assert_int_equal(placer_claim(x.p, &direct, NULL), SL_OK);
	assert_int_equal(sub(&x, 6, "c", 8, 61), SL_OK);
	assert_int_equal(st(&x, 6), SCHED_PENDING);
	assert_int_equal(placer_release(x.p, &direct, NULL), SL_OK);
	assert_int_equal(sched_capacity_changed(x.s, S(62)), SL_OK);
	assert_int_equal(st(&x, 6), SCHED_RUNNING);
	placement_release(&direct);
	placement_release(&p1);
	placement_release(&p2);
	placement_release(&p5);
	fx_free(&x);
}

/* ---- randomized invariants ------------------------------------------------- */

struct rng {
	uint64_t s;
};

static uint32_t rnd(struct rng *r, uint32_t n)
{
	r->s = r->s * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(r->s >> 33) % n;
}

#define RMAX 1000

struct model_lease {
	bool live;
	const char *tenant;
	int gpus; /* asked */
	const char *model;
	int64_t dur_s;
};

static const char *const tenants[] = {"a", "b", "c"};

static void check_invariants(struct fx *x, struct model_lease *ls)
{
	gpumask_t used[MAXN] = {0};
	int64_t run[3] = {0};
	for (uint64_t id = 1; id < RMAX; id++) {
		enum sched_state s = st(x, id);
		assert_int_equal(s != SCHED_NONE, ls[id].live);
		if (s != SCHED_RUNNING && s != SCHED_PREEMPTING)
			continue;
		const struct placement *pl = sched_lease_placement(x->s, id);
		struct sched_lease_info info;
		assert_true(sched_lease_get(x->s, id, &info));
		int total = 0;
		for (int i = 0; i < pl->npicks; i++) {
			const struct place_pick *k = &pl->picks[i];
			assert_int_equal(used[k->node] & k->gpus, 0); /* no GPU in two leases */
			used[k->node] |= k->gpus;
			total += __builtin_popcount(k->gpus);
			if (ls[id].model)
				assert_string_equal(fleet_node_type(&x->f, k->node)->gpu->name,
						    ls[id].model);
		}
		assert_int_equal(total, info.gpus);
		for (int t = 0; t < 3; t++)
			if (!strcmp(info.tenant, tenants[t]))
				run[t] += total;
	}
	for (int i = 0; i < x->n; i++) {
		gpumask_t full = ((gpumask_t)1 << fleet_node_type(&x->f, x->node[i])->ngpus) - 1;
		if (placer_node_usable(x->p, x->node[i]))
			assert_int_equal(used[x->node[i]],
					 full & ~placer_free_mask(x->p, x->node[i]));
		else
			assert_int_equal(used[x->node[i]], 0); /* failed: its leases ended */
	}
	const struct sched_queue_entry *q;
	int n;
	assert_int_equal(sched_queue(x->s, &q, &n), SL_OK);
	for (int i = 0; i < n; i++) {
		int pos = 0;
		const char *why = NULL;
		char listed[SCHED_REASON_MAX];
		snprintf(listed, sizeof(listed), "%s", q[i].reason);
		assert_true(sched_queue_position(x->s, q[i].id, &pos, &why));
		assert_int_equal(pos, q[i].position);
		assert_string_equal(why, listed);
	}
	for (int i = 1; i < n; i++) {
		const struct sched_queue_entry *a = &q[i - 1], *b = &q[i];
		assert_int_equal(b->position, i + 1);
		assert_true(plan_priority(a->plan) <= plan_priority(b->plan));
		if (a->plan != b->plan)
			continue;
		int64_t ra = 0, rb = 0;
		for (int t = 0; t < 3; t++) {
			if (!strcmp(a->tenant, tenants[t]))
				ra = run[t];
			if (!strcmp(b->tenant, tenants[t]))
				rb = run[t];
		}
		assert_true(ra <= rb || !strcmp(a->tenant, b->tenant));
		if (ra == rb || !strcmp(a->tenant, b->tenant))
			assert_true(a->submit_ns < b->submit_ns ||
				    (a->submit_ns == b->submit_ns && a->id < b->id));
	}
}

#define RRESV 400
static const char *resv_tenant[RRESV]; /* by reservation id */
static uint64_t resv_on[MAXN];         /* by node: reservation with an open window */

static void drain(struct fx *x, struct model_lease *ls)
{
	const struct sched_event *ev;
	int n;
	sched_events(x->s, &ev, &n);
	for (int i = 0; i < n; i++) {
		const struct placement *pl = &ev[i].placement;
		if (ev[i].type == SCHED_EV_RESV_STARTED)
			for (int k = 0; k < pl->npicks; k++) {
				assert_int_equal(resv_on[pl->picks[k].node], 0);
				resv_on[pl->picks[k].node] = ev[i].id;
			}
		if (ev[i].type == SCHED_EV_RESV_ENDED)
			for (int k = 0; k < MAXN; k++)
				if (resv_on[k] == ev[i].id)
					resv_on[k] = 0;
		/* No lease of another tenant starts on a node in a reservation window. */
		if (ev[i].type == SCHED_EV_STARTED)
			for (int k = 0; k < pl->npicks; k++) {
				uint64_t rid = resv_on[pl->picks[k].node];
				assert_true(!rid || !strcmp(resv_tenant[rid], ls[ev[i].id].tenant));
			}
		if (ev[i].type == SCHED_EV_ENDED)
			ls[ev[i].id].live = false;
		/* Only leases with a declared duration may pass a waiting head. */
		if (ev[i].type == SCHED_EV_STARTED && ev[i].backfilled)
			assert_true(ls[ev[i].id].dur_s > 0);
	}
	sched_events_clear(x->s);
}

static void test_random_invariants(void **state)
{
	(void)state;
	struct fx x;
	memset(&x, 0, sizeof(x));
	int site, fab;
	assert_int_equal(fleet_init(&x.f), SL_OK);
	assert_int_equal(fleet_add_site(&x.f, "s1", "r1", &site, NULL), SL_OK);
	assert_int_equal(fleet_add_fabric(&x.f, site, "ib", FABRIC_INFINIBAND, 400, &fab, NULL),
			 SL_OK);
	assert_int_equal(fleet_add_leaf(&x.f, fab, "l1", &x.leaf[0], NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&x.f, fab, "l2", &x.leaf[1], NULL), SL_OK);
	const char *types[] = {"hgx-h100-8", "hgx-h100-8", "hgx-h100-8", "hgx-h100-8",
			       "hgx-h100-8", "pcie-l40s-8", "pcie-l40s-8", "hgx-a100-8"};
	for (int i = 0; i < 8; i++) {
		char name[16];
		snprintf(name, sizeof(name), "n%d", i);
		assert_int_equal(fleet_add_node(&x.f, x.leaf[i % 2], name,
						fleet_find_type(&x.f, types[i]), &x.node[i], NULL),
				 SL_OK);
	}
	x.n = 8;
	assert_int_equal(placer_new(&x.f, &x.p), SL_OK);
	assert_int_equal(sched_new(x.p, &x.s), SL_OK);
	sched_set_preempt_notice(x.s, S(20));
	assert_int_equal(sched_set_quota(x.s, "c", "l40s", 12, NULL), SL_OK);
	static struct model_lease ls[RMAX];
	memset(ls, 0, sizeof(ls));
	memset(resv_on, 0, sizeof(resv_on));
	/* Fixed seed; SL_SCHED_SEED overrides it for manual exploration only. */
	const char *seed = getenv("SL_SCHED_SEED");
	struct rng r = {seed ? strtoull(seed, NULL, 10) : 20261130};
	const char *models[] = {NULL, "h100-sxm", "l40s", "a100-sxm"};
	const int sizes[] = {1, 2, 4, 8, 8, 16, 3};
	int64_t now = 0;
	uint64_t next = 1;
	int starts = 0, preempts = 0, backfills = 0, scaled = 0, resv = 0, failed = -1;
	uint64_t next_resv = 1;
	for (int step = 0; step < 3000; step++) {
		uint32_t op = rnd(&r, 10);
		now += S(rnd(&r, 5));
		if (rnd(&r, 40) == 0) {
			/* Rarely: a reservation of one node, or a node failing/coming back. */
			int node = x.node[rnd(&r, 8)];
			int64_t a = now + S(rnd(&r, 50)), b = a + S(1 + rnd(&r, 100));
			if (rnd(&r, 3)) {
				const char *t = tenants[rnd(&r, 3)];
				assert_true(next_resv < RRESV);
				resv_tenant[next_resv] = t;
				enum sl_err e = sched_reserve(x.s, next_resv++, t, &node, 1, a, b,
							      now, NULL);
				assert_true(e == SL_OK || e == SL_ECONFLICT);
			} else if (failed < 0) {
				assert_int_equal(sched_node_failed(x.s, node, now), SL_OK);
				failed = node;
			} else {
				assert_int_equal(sched_node_restored(x.s, failed, now), SL_OK);
				failed = -1;
			}
		} else if (op < 4 && next < RMAX) {
			struct opt o = {lease_plans[rnd(&r, 3)], rnd(&r, 3) ? rnd(&r, 200) : 0,
					0, 0, models[rnd(&r, 4)]};
			int g = sizes[rnd(&r, 7)];
			if (g <= 8 && rnd(&r, 4) == 0) {
				o.emin = 1;
				o.emax = 16;
			}
			const char *t = tenants[rnd(&r, 3)];
			enum sl_err e = sub_opt(&x, next, t, g, now / S(1), &o, NULL);
			assert_true(e == SL_OK || e == SL_EQUOTA || e == SL_ENOSPACE);
			if (e == SL_OK)
				ls[next] = (struct model_lease){true, t, g, o.model, o.dur_s};
			next++;
		} else if (op < 6 && next > 1) {
			uint64_t id = 1 + rnd(&r, (uint32_t)(next - 1));
			enum sl_err e = sched_release(x.s, id, now, NULL);
			assert_int_equal(e, ls[id].live ? SL_OK : SL_ENOTFOUND);
		} else if (op < 8) {
			assert_int_equal(sched_tick(x.s, now), SL_OK);
		} else if (next > 1) {
			uint64_t id = 1 + rnd(&r, (uint32_t)(next - 1));
			enum sl_err e = sched_scale(x.s, id, 1 + (int)rnd(&r, 16), now, NULL);
			assert_true(e == SL_OK || e == SL_EINVAL || e == SL_ENOTFOUND ||
				    e == SL_ENOSPACE || e == SL_EQUOTA || e == SL_ECONFLICT);
		}
		const struct sched_event *ev;
		int n;
		sched_events(x.s, &ev, &n);
		for (int i = 0; i < n; i++) {
			starts += ev[i].type == SCHED_EV_STARTED;
			backfills += ev[i].type == SCHED_EV_STARTED && ev[i].backfilled;
			preempts += ev[i].type == SCHED_EV_PREEMPT_NOTICE;
			scaled += ev[i].type == SCHED_EV_SCALED;
			resv += ev[i].type == SCHED_EV_RESV_STARTED;
		}
		drain(&x, ls);
		check_invariants(&x, ls);
	}
	/* The stream exercised the interesting paths. */
	assert_true(starts > 100);
	assert_true(preempts > 0);
	assert_true(backfills > 0);
	assert_true(scaled > 0);
	assert_true(resv > 0);
	if (getenv("SL_TEST_VERBOSE"))
		fprintf(stderr, "starts %d backfills %d preempts %d scaled %d resv %d\n", starts,
			backfills, preempts, scaled, resv);
	fx_free(&x);
}

/* The incremental pass after a submit must decide exactly as a full pass:
 * run one stream on two schedulers, one of them forced to full passes (a
 * weight set to its current value marks the queue order as changed), and
 * compare every event. */
static void test_incremental_matches_full(void **state)
{
	(void)state;
	struct fx a, b;
	fx_init(&a, 6, "hgx-h100-8");
	fx_init(&b, 6, "hgx-h100-8");
	struct rng r = {77};
	const int sizes[] = {1, 2, 4, 8, 16, 3};
	int64_t now = 0;
	uint64_t next = 1;
	int compared = 0;
	for (int step = 0; step < 1500; step++) {
		uint32_t op = rnd(&r, 10);
		now += rnd(&r, 3);
		enum sl_err ea, eb;
		if (op < 6) {
			const char *t = tenants[rnd(&r, 3)];
			struct opt o = {lease_plans[rnd(&r, 3)], rnd(&r, 2) ? rnd(&r, 60) : 0, 0,
					0, NULL};
			int g = sizes[rnd(&r, 6)];
			assert_int_equal(sched_set_tenant_weight(b.s, t, 1, NULL), SL_OK);
			ea = sub_opt(&a, next, t, g, now, &o, NULL);
			eb = sub_opt(&b, next, t, g, now, &o, NULL);
			next++;
		} else if (op < 8 && next > 1) {
			uint64_t id = 1 + rnd(&r, (uint32_t)(next - 1));
			ea = sched_release(a.s, id, S(now), NULL);
			eb = sched_release(b.s, id, S(now), NULL);
		} else {
			ea = sched_tick(a.s, S(now));
			eb = sched_tick(b.s, S(now));
		}
		assert_int_equal(ea, eb);
		const struct sched_event *va, *vb;
		int na, nb;
		sched_events(a.s, &va, &na);
		sched_events(b.s, &vb, &nb);
		assert_int_equal(na, nb);
		for (int i = 0; i < na; i++, compared++) {
			assert_int_equal(va[i].type, vb[i].type);
			assert_int_equal(va[i].id, vb[i].id);
			assert_int_equal(va[i].backfilled, vb[i].backfilled);
			assert_int_equal(va[i].position, vb[i].position);
			assert_string_equal(va[i].reason, vb[i].reason);
			assert_int_equal(va[i].placement.npicks, vb[i].placement.npicks);
			for (int k = 0; k < va[i].placement.npicks; k++) {
				assert_int_equal(va[i].placement.picks[k].node,
						 vb[i].placement.picks[k].node);
				assert_int_equal(va[i].placement.picks[k].gpus,
						 vb[i].placement.picks[k].gpus);
			}
		}
		sched_events_clear(a.s);
		sched_events_clear(b.s);
	}
	assert_true(compared > 1000);
	fx_free(&a);
	fx_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gang_all_or_nothing),
		cmocka_unit_test(test_priority_order),
		cmocka_unit_test(test_fair_share),
		cmocka_unit_test(test_backfill),
		cmocka_unit_test(test_backfill_exact),
		cmocka_unit_test(test_spot_preemption),
		cmocka_unit_test(test_spot_not_preempted_for_spot),
		cmocka_unit_test(test_reservation),
		cmocka_unit_test(test_reservation_checks),
		cmocka_unit_test(test_quota),
		cmocka_unit_test(test_elastic),
		cmocka_unit_test(test_expiry_and_extend),
		cmocka_unit_test(test_event_order),
		cmocka_unit_test(test_node_failed),
		cmocka_unit_test(test_submit_errors),
		cmocka_unit_test(test_placer_pool),
		cmocka_unit_test(test_restore),
		cmocka_unit_test(test_random_invariants),
		cmocka_unit_test(test_incremental_matches_full),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

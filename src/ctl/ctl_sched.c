/* ctl_sched.c - the controller's side of the scheduler (src/core/scheduler.h).
 *
 * The scheduler decides (queue order, fair share, backfill, preemption,
 * reservations, quotas, elastic scale, expiry) and reports what happened as
 * events; this file turns requests into scheduler calls and events into lease
 * state, history, log lines and store rows, all inside the turn's transaction.
 *
 * Restoring running leases. The scheduler has no call to take over a running
 * lease with its placement, so a new scheduler (at start, after a fleet
 * replacement) gets each running lease through sched_submit while only that
 * lease's nodes are in service and only its GPUs free on them: the placer,
 * deterministic and the only way in, can choose nothing else. The result is
 * checked; a lease the scheduler places otherwise, or refuses (an elastic
 * lease whose shape the placer would not choose, a quota lowered since), or
 * one under a preemption notice stays adopted: claimed on the placer directly
 * ("claimed by whoever will not release them through the scheduler") and
 * ended or scaled by the controller itself, after which the scheduler is told
 * that capacity came back (sched_node_restored on the lease's in-service
 * nodes, the public way to make it look again). Adopted GPUs do not count in
 * fair share or quotas and adopted spot leases are not preempted; a
 * sched_restore() in sched.h would make this whole path unnecessary. Pending
 * leases are simply submitted again, in their old order.
 *
 * Time: the scheduler is given the wall clock in ns, like every lease instant,
 * because durations must survive a restart (a monotonic clock does not). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_int.h"
#include "log.h"
#include "place_json.h"

static enum sched_plan plan_to_sched(enum lease_plan p)
{
	return p == PLAN_MONTHLY ? SCHED_MONTHLY : p == PLAN_SPOT ? SCHED_SPOT : SCHED_HOURLY;
}

static void fatal(struct ctl *c, const char *what, enum sl_err e)
{
	sl_log_error("scheduler failed", "call=%s error=%s", what, sl_err_message(e));
	c->fatal = true;
}

/* The deadline heap holds lease ends, preemption deadlines and reservation
 * edges; any of them passing means a tick. */
static void deadline(struct ctl *c, int64_t at, int idx)
{
	if (at > 0 && ctl_expiry_push(c, at, idx))
		c->fatal = true;
}

static struct ctl_lease *lease_of(struct ctl *c, uint64_t id)
{
	return id >= 1 && id <= (uint64_t)c->nleases ? c->leases[id - 1] : NULL;
}

static const char *end_state_reason(enum sched_end e, enum lease_state *st)
{
	switch (e) {
	case SCHED_END_RELEASED: *st = LS_RELEASED; return "released";
	case SCHED_END_EXPIRED: *st = LS_EXPIRED; return "its duration ended";
	case SCHED_END_PREEMPTED: *st = LS_PREEMPTED; return "preempted after its notice";
	case SCHED_END_FAILED: *st = LS_FAILED; return "a node it used failed";
	}
	*st = LS_FAILED;
	return "?";
}

static void ev_started(struct ctl *c, struct ctl_lease *l, const struct sched_event *ev)
{
	placement_release(&l->pl);
	placement_init(&l->pl);
	if (placement_copy(&l->pl, &ev->placement)) {
		fatal(c, "placement_copy", SL_ENOMEM);
		return;
	}
	json_decref(l->score);
	l->score = place_score_to_json(&ev->placement.score);
	l->gpus = ev->gpus;
	l->reason[0] = 0;
	l->started_ns = ev->at_ns;
	l->expires_ns = l->req.duration_s ? ev->at_ns + l->req.duration_s * 1000000000 : 0;
	l->epoch++;
	l->simulated = c->simulate;
	c->nactive++;
	deadline(c, l->expires_ns, (int)(l->seq - 1));
	ctl_lease_set_state(c, l, LS_ACTIVE, ev->backfilled ? "placed (backfilled)" : "placed");
}

/* Applies and clears the scheduler's events; every lease touched is saved. */
void ctl_sched_events(struct ctl *c)
{
	const struct sched_event *evs;
	int n;
	char why[128];
	sched_events(c->sched, &evs, &n);
	for (int i = 0; i < n && !c->fatal; i++) {
		const struct sched_event *ev = &evs[i];
		if (ev->type == SCHED_EV_RESV_STARTED || ev->type == SCHED_EV_RESV_ENDED) {
			sl_log_info(ev->type == SCHED_EV_RESV_STARTED ? "reservation window opened"
								     : "reservation window closed",
				    "reservation=rsv-%06llu", (unsigned long long)ev->id);
			continue;
		}
		struct ctl_lease *l = lease_of(c, ev->id);
		if (!l) {
			sl_log_error("scheduler event for an unknown lease", "id=%llu",
				     (unsigned long long)ev->id);
			continue;
		}
		switch (ev->type) {
		case SCHED_EV_STARTED:
			ev_started(c, l, ev);
			break;
		case SCHED_EV_QUEUED:
			snprintf(l->reason, sizeof(l->reason), "%s", ev->reason);
			/* Queued again after a restart: the history already says so. */
			if (l->state != LS_PENDING || json_array_size(l->history) == 0)
				ctl_lease_set_state(c, l, LS_PENDING, l->reason);
			break;
		case SCHED_EV_PREEMPT_NOTICE: {
			const struct ctl_lease *by = lease_of(c, ev->by);
			l->preempt_ns = ev->deadline_ns;
			deadline(c, ev->deadline_ns, (int)(l->seq - 1));
			snprintf(why, sizeof(why), "preemption notice: its GPUs go to %s",
				 by ? by->id : "a higher plan");
			ctl_lease_set_state(c, l, LS_PREEMPTING, why);
			break;
		}
		case SCHED_EV_ENDED: {
			enum lease_state st;
			const char *r = end_state_reason(ev->end, &st);
			if (l->state == LS_ACTIVE || l->state == LS_PREEMPTING)
				c->nactive--;
			l->in_sched = false;
			l->ended_ns = ev->at_ns;
			ctl_lease_set_state(c, l, st, l->end_reason[0] ? l->end_reason : r);
			ctl_lease_ended(c, l);
			break;
		}
		case SCHED_EV_SCALED:
			placement_release(&l->pl);
			placement_init(&l->pl);
			if (placement_copy(&l->pl, &ev->placement)) {
				fatal(c, "placement_copy", SL_ENOMEM);
				break;
			}
			snprintf(why, sizeof(why), "scaled from %d to %d GPUs", l->gpus, ev->gpus);
			l->gpus = ev->gpus;
			l->epoch++;
			ctl_lease_set_state(c, l, l->state, why);
			break;
		default:
			break;
		}
		ctl_lease_save(c, l);
	}
	sched_events_clear(c->sched);
}

enum sl_err ctl_sched_check(struct ctl *c, enum sl_err e, const char *what)
{
	if (e == SL_ENOMEM)
		fatal(c, what, e);
	if (!c->fatal)
		ctl_sched_events(c);
	return e;
}

static void spec_of(const struct ctl_lease *l, struct place_request *pr, struct sched_spec *sp)
{
	lease_req_to_place(&l->req, l->tenant, pr);
	pr->gpus = l->gpus;
	memset(sp, 0, sizeof(*sp));
	sp->tenant = l->tenant;
	sp->plan = plan_to_sched(l->req.plan);
	sp->req = pr;
	sp->duration_ns = l->req.duration_s * 1000000000;
	sp->elastic_min = l->req.el_min;
	sp->elastic_max = l->req.el_max;
}

enum sl_err ctl_sched_submit(struct ctl *c, struct ctl_lease *l, struct sl_diag *d)
{
	struct place_request pr;
	struct sched_spec sp;
	spec_of(l, &pr, &sp);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	enum sl_err e = sched_submit(c->sched, l->seq, &sp, c->now_ns, d);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* The submit is the placement decision (and the pass it triggers). */
	ctl_metrics_observe(c, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (e == SL_OK)
		l->in_sched = true;
	return ctl_sched_check(c, e, "sched_submit");
}

/* Tells the scheduler that capacity came back on the nodes of pl (an adopted
 * lease ended): the only public way to make it look at the queue again. */
void ctl_sched_capacity_back(struct ctl *c, const struct placement *pl)
{
	for (int i = 0; i < pl->npicks && !c->fatal; i++) {
		int node = pl->picks[i].node;
		if (node < 0 || !placer_node_usable(c->placer, node))
			continue;
		ctl_sched_check(c, sched_node_restored(c->sched, node, c->now_ns), "sched_node_restored");
	}
}

static enum sl_err set_quotas(struct ctl *c, const struct ctl_tenant *t, struct sl_diag *d)
{
	const char *model;
	json_t *v;
	json_object_foreach(t->quotas, model, v) {
		enum sl_err e = sched_set_quota(c->sched, t->name, model, (int)json_integer_value(v), d);
		if (e)
			return e;
	}
	return SL_OK;
}

enum sl_err ctl_sched_tenant(struct ctl *c, const struct ctl_tenant *t, struct sl_diag *d)
{
	return set_quotas(c, t, d);
}

/* Node indices of a reservation in the current fleet (unknown names are
 * skipped: the fleet may have changed since). */
static int resv_nodes(struct ctl *c, const struct ctl_resv *r, int *out)
{
	int n = 0;
	for (size_t i = 0; i < json_array_size(r->nodes); i++) {
		int k = fleet_find_node(c->fleet, json_string_value(json_array_get(r->nodes, i)));
		if (k >= 0)
			out[n++] = k;
	}
	return n;
}

enum sl_err ctl_sched_reserve(struct ctl *c, const struct ctl_resv *r, struct sl_diag *d)
{
	int *nodes = malloc((json_array_size(r->nodes) + 1) * sizeof(int));
	if (!nodes)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	unsigned long long id = strtoull(r->id + 4, NULL, 10);
	int n = resv_nodes(c, r, nodes);
	enum sl_err e = SL_OK;
	if (n > 0 && r->end_ns > c->now_ns)
		e = sched_reserve(c->sched, id, r->tenant, nodes, n, r->start_ns, r->end_ns,
				  c->now_ns, d);
	free(nodes);
	if (e == SL_OK) {
		deadline(c, r->start_ns > c->now_ns ? r->start_ns : 0, -1);
		deadline(c, r->end_ns, -1);
	}
	return e;
}

/* A pending lease the new scheduler refuses (the fleet changed under it). */
static void fail_pending(struct ctl *c, struct ctl_lease *l, const struct sl_diag *d)
{
	char why[600];
	snprintf(why, sizeof(why), "refused after a restart or fleet change: %.500s", d->msg);
	l->ended_ns = c->now_ns;
	ctl_lease_set_state(c, l, LS_FAILED, why);
	ctl_lease_save(c, l);
	ctl_lease_ended(c, l);
}

static bool same_placement(const struct placement *a, const struct placement *b)
{
	if (!a || a->npicks != b->npicks)
		return false;
	for (int i = 0; i < a->npicks; i++) {
		int k;
		for (k = 0; k < b->npicks; k++)
			if (a->picks[i].node == b->picks[k].node && a->picks[i].gpus == b->picks[k].gpus &&
			    a->picks[i].milli == b->picks[k].milli)
				break;
		if (k == b->npicks)
			return false;
	}
	return true;
}

/* Hands one running lease to the scheduler with exactly its placement: only
 * its nodes are in service and only its GPUs free there while it is
 * submitted, so the placer (deterministic, and the only way in) can choose
 * nothing else. The scheduler counts it from now, so its duration is what is
 * left. Returns false (nothing changed, the lease still claimed directly) when
 * the scheduler refuses or chooses otherwise; the lease then stays adopted. */
static bool restore_one(struct ctl *c, struct ctl_lease *l)
{
	struct sl_diag d;
	bool ok = false;
	sl_diag_clear(&d);
	if (placer_release(c->placer, &l->pl, &d))
		return false;
	for (int i = 0; i < l->pl.npicks; i++) {
		int node = l->pl.picks[i].node;
		placer_set_node_usable(c->placer, node, true);
		for (int g = 0; g < fleet_node_type(c->fleet, node)->ngpus; g++)
			if (!(l->pl.picks[i].gpus & (1u << g)) && placer_gpu_used_milli(c->placer, node, g) == 0)
				placer_set_gpu_usable(c->placer, node, g, false);
	}
	struct place_request pr;
	struct sched_spec sp;
	spec_of(l, &pr, &sp);
	if (sched_submit(c->sched, l->seq, &sp, c->now_ns, &d) == SL_OK) {
		ok = same_placement(sched_lease_placement(c->sched, l->seq), &l->pl);
		int64_t left = l->expires_ns ? l->expires_ns - c->now_ns : 0;
		if (ok && l->expires_ns)
			ok = sched_extend(c->sched, l->seq, left > 0 ? left : 1, &d) == SL_OK;
		if (!ok && sched_release(c->sched, l->seq, c->now_ns, &d))
			c->fatal = true; /* it knows the lease: cannot happen */
	}
	/* Its own STARTED (or QUEUED, ENDED) events say nothing new. */
	sched_events_clear(c->sched);
	for (int i = 0; i < l->pl.npicks; i++) {
		int node = l->pl.picks[i].node;
		for (int g = 0; g < fleet_node_type(c->fleet, node)->ngpus; g++)
			placer_set_gpu_usable(c->placer, node, g, true);
		if (!ok)
			placer_set_node_usable(c->placer, node, true);
	}
	if (!ok && placer_claim(c->placer, &l->pl, &d)) {
		sl_log_error("lease lost its GPUs during restore", "lease=%s error=%s", l->id, d.msg);
		c->fatal = true;
	}
	for (int i = 0; i < l->pl.npicks; i++)
		placer_set_node_usable(c->placer, l->pl.picks[i].node, false);
	l->in_sched = ok;
	return ok;
}

/* Running leases back into a new scheduler, oldest start first (so "newest
 * started" keeps its meaning for preemption). Leases under a preemption
 * notice stay adopted: the notice they were given must hold. */
static void restore_running(struct ctl *c)
{
	int n = c->fleet->nnodes, *order = NULL, nrun = 0, adopted = 0;
	bool *usable = calloc((size_t)n + 1, sizeof(bool));
	order = malloc(((size_t)c->nleases + 1) * sizeof(int));
	if (!usable || !order) {
		free(usable);
		free(order);
		return; /* they stay adopted */
	}
	for (int i = 0; i < c->nleases; i++)
		if (c->leases[i] && c->leases[i]->state == LS_ACTIVE && c->leases[i]->pl.npicks > 0)
			order[nrun++] = i;
	for (int i = 1; i < nrun; i++) /* insertion sort by start time; mostly sorted */
		for (int k = i; k > 0 && c->leases[order[k - 1]]->started_ns > c->leases[order[k]]->started_ns; k--) {
			int t = order[k];
			order[k] = order[k - 1];
			order[k - 1] = t;
		}
	for (int i = 0; i < n; i++) {
		usable[i] = placer_node_usable(c->placer, i);
		if (nrun)
			placer_set_node_usable(c->placer, i, false);
	}
	for (int i = 0; i < nrun && !c->fatal; i++)
		adopted += !restore_one(c, c->leases[order[i]]);
	for (int i = 0; nrun && i < n; i++)
		placer_set_node_usable(c->placer, i, usable[i]);
	if (nrun)
		sl_log_info("running leases restored", "scheduled=%d adopted=%d", nrun - adopted, adopted);
	free(usable);
	free(order);
}

enum sl_err ctl_sched_start(struct ctl *c, struct sl_diag *d)
{
	enum sl_err e = sched_new(c->placer, &c->sched);
	if (e)
		return sl_diag_set(d, e, "out of memory");
	if (c->notice_ns >= 0)
		sched_set_preempt_notice(c->sched, c->notice_ns);
	for (int i = 0; i < c->ntenants; i++)
		if ((e = set_quotas(c, &c->tenants[i], d)))
			return e;
	for (int i = 0; i < c->nresvs; i++) {
		struct sl_diag rd;
		sl_diag_clear(&rd);
		if ((e = ctl_sched_reserve(c, &c->resvs[i], &rd)) == SL_ENOMEM)
			return sl_diag_set(d, e, "out of memory");
		if (e) /* the fleet changed under it: keep the record, log why */
			sl_log_warn("reservation not honoured", "reservation=%s error=%s",
				    c->resvs[i].id, rd.msg);
	}
	restore_running(c);
	int *pend = malloc(((size_t)c->nleases + 1) * sizeof(int)), np = 0;
	if (!pend)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	/* The old order: plan first, then submission (ids grow with time). */
	for (int plan = 0; plan < PLAN__COUNT; plan++)
		for (int i = 0; i < c->nleases; i++)
			if (c->leases[i] && c->leases[i]->state == LS_PENDING &&
			    (int)c->leases[i]->req.plan == plan)
				pend[np++] = i;
	for (int i = 0; i < np && !c->fatal; i++) {
		struct ctl_lease *l = c->leases[pend[i]];
		struct sl_diag ld;
		sl_diag_clear(&ld);
		e = ctl_sched_submit(c, l, &ld);
		if (e == SL_ENOMEM)
			break;
		if (e)
			fail_pending(c, l, &ld);
		e = SL_OK;
	}
	free(pend);
	if (c->fatal)
		return sl_diag_set(d, SL_EIO, "could not store the scheduler's decisions");
	return e ? sl_diag_set(d, e, "out of memory") : SL_OK;
}

void ctl_sched_stop(struct ctl *c)
{
	if (!c->sched)
		return;
	/* Running leases stay claimed on the placer; they become adopted. */
	for (int i = 0; i < c->nleases; i++)
		if (c->leases[i])
			c->leases[i]->in_sched = false;
	sched_free(c->sched);
	c->sched = NULL;
}

bool ctl_sched_queue_pos(struct ctl *c, const struct ctl_lease *l, int *pos, const char **reason)
{
	/* One lease's place, not the whole listing: a queued create would
	 * otherwise cost O(queue) reasons (bench/results/api-profile.md). */
	return c->sched && sched_queue_position(c->sched, l->seq, pos, reason);
}

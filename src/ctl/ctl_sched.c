/* ctl_sched.c - the controller's side of the scheduler (src/core/scheduler.h).
 *
 * The scheduler decides (queue order, fair share, backfill, preemption,
 * reservations, quotas, elastic scale, expiry) and reports what happened as
 * events; this file turns requests into scheduler calls and events into lease
 * state, history, log lines and store rows, all inside the turn's transaction.
 *
 * Restoring leases. A new scheduler (at start, after a fleet replacement)
 * gets every live lease back through sched_restore: pending ones with their
 * submission time, running ones with their placement, start and any
 * preemption notice, so they count in fair share and quotas and can be
 * preempted like any other; one sched_tick then applies what changed while
 * the controller was away (ends, notices, starts).
 *
 * Time: the scheduler is given the wall clock in ns, like every lease instant,
 * because durations must survive a restart (a monotonic clock does not). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agents.h"
#include "ctl_int.h"
#include "ctl_workload.h"
#include "log.h"
#include "place_json.h"

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
	return id >= 1 && id <= (uint64_t)c->lt.nleases ? c->lt.leases[id - 1] : NULL;
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
	/* One array of picks for the scheduler's record and this one. */
	if (place_picks_copy_like(&l->pl, &ev->placement, sched_lease_picks(c->sched, l->seq)) ||
	    !lease_score_set(c, l, &ev->placement.score)) {
		fatal(c, "placement_copy", SL_ENOMEM);
		return;
	}
	l->placed = true; /* lease_score(l), kept above, is its score */
	l->gpus = ev->gpus;
	lease_set_reason(l, NULL);
	l->started_ns = ev->at_ns;
	l->expires_ns = l->req->duration_s ? ev->at_ns + l->req->duration_s * 1000000000 : 0;
	l->epoch++;
	l->simulated = c->simulate;
	c->lt.nactive++;
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
			if (!lease_set_reason(l, ev->reason))
				fatal(c, "lease_set_reason", SL_ENOMEM);
			lease_share_reason(l, lease_of(c, ev->id - 1));
			/* Queued again after a restart: the history already says so. */
			if (l->state != LS_PENDING || l->nhist == 0)
				ctl_lease_set_state(c, l, LS_PENDING, ev->reason);
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
				c->lt.nactive--;
			/* A node failure ends billing at the node's last report. */
			l->ended_ns = ev->end == SCHED_END_FAILED ? agents_lease_end_ns(c, l, ev->at_ns) : ev->at_ns;
			ctl_lease_set_state(c, l, st, l->end_reason ? l->end_reason : r);
			lease_set_end_reason(l, NULL); /* used: an ended lease keeps none */
			ctl_lease_ended(c, l);
			break;
		}
		case SCHED_EV_SCALED: {
			/* The event has no score: the lease keeps its own. */
			if (place_picks_copy_like(&l->pl, &ev->placement,
						  sched_lease_picks(c->sched, l->seq))) {
				fatal(c, "placement_copy", SL_ENOMEM);
				break;
			}
			snprintf(why, sizeof(why), "scaled from %d to %d GPUs", l->gpus, ev->gpus);
			l->gpus = ev->gpus;
			l->epoch++;
			ctl_lease_set_state(c, l, l->state, why);
			break;
		}
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
	lease_req_to_place(l->req, l->tenant, pr);
	pr->gpus = l->gpus;
	memset(sp, 0, sizeof(*sp));
	sp->tenant = l->tenant;
	sp->plan = l->req->plan;
	sp->req = pr;
	sp->duration_ns = l->req->duration_s * 1000000000;
	sp->elastic_min = l->req->el_min;
	sp->elastic_max = l->req->el_max;
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
		ctl_workload_observe(c, &pr);
	return ctl_sched_check(c, e, "sched_submit");
}

enum sl_err ctl_sched_place_now(struct ctl *c, struct ctl_lease *l, const struct placement *pl,
				struct sl_diag *d)
{
	struct place_request pr;
	struct sched_spec sp;
	spec_of(l, &pr, &sp);
	/* A running lease from now with this placement: what a restore does
	 * (claimed here, counted in fair share; no pass, no events), then the
	 * start as the STARTED event would apply it. */
	struct sched_restore r = {&sp, c->now_ns, pl, c->now_ns, 0};
	enum sl_err e = sched_restore(c->sched, l->seq, &r, d);
	if (e)
		return e;
	struct sched_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = SCHED_EV_STARTED;
	ev.id = l->seq;
	ev.at_ns = c->now_ns;
	ev.placement = *pl; /* borrowed: ev_started copies it */
	ev.gpus = l->gpus;
	ev_started(c, l, &ev);
	ctl_lease_save(c, l);
	return SL_OK;
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

/* A lease the new scheduler refuses (the fleet changed under it). */
static void fail_restore(struct ctl *c, struct ctl_lease *l, const struct sl_diag *d)
{
	char why[600];
	snprintf(why, sizeof(why), "refused after a restart or fleet change: %.500s", d->msg);
	if (l->state == LS_ACTIVE || l->state == LS_PREEMPTING)
		c->lt.nactive--;
	l->ended_ns = c->now_ns;
	ctl_lease_set_state(c, l, LS_FAILED, why);
	ctl_lease_save(c, l);
	ctl_lease_ended(c, l);
}

static bool running(const struct ctl_lease *l)
{
	return l && (l->state == LS_ACTIVE || l->state == LS_PREEMPTING) && l->pl.npicks > 0;
}

/* Order of restore: running leases oldest start first (the scheduler starts
 * them in call order, which "newest started" preemption relies on), then
 * pending ones (their submission time keeps their queue order). */
static int *restore_order(struct ctl *c, int *nrun, int *n)
{
	int *order = malloc(((size_t)c->lt.nleases + 1) * sizeof(int));
	if (!order)
		return NULL;
	*n = 0;
	for (int i = 0; i < c->lt.nleases; i++)
		if (running(c->lt.leases[i]))
			order[(*n)++] = i;
	*nrun = *n;
	for (int i = 1; i < *nrun; i++) /* insertion sort by start time; mostly sorted */
		for (int k = i; k > 0 && c->lt.leases[order[k - 1]]->started_ns > c->lt.leases[order[k]]->started_ns; k--) {
			int t = order[k];
			order[k] = order[k - 1];
			order[k - 1] = t;
		}
	for (int i = 0; i < c->lt.nleases; i++)
		if (c->lt.leases[i] && c->lt.leases[i]->state == LS_PENDING)
			order[(*n)++] = i;
	return order;
}

/* Hands lease l to the scheduler as it was. A running lease is claimed on the
 * placer already (ctl.c and h_fleet.c claim it to check it fits): that claim
 * moves to the scheduler, which makes it again. SL_ENOMEM or SL_OK; a
 * refusal fails the lease. */
static enum sl_err restore_one(struct ctl *c, struct ctl_lease *l, bool run)
{
	struct place_request pr;
	struct sched_spec sp;
	struct sl_diag d;
	sl_diag_clear(&d);
	spec_of(l, &pr, &sp);
	struct placement v;
	struct sched_restore r = {&sp, l->created_ns, run ? lease_pl_view(l, &v) : NULL,
				  run ? l->started_ns : 0,
				  run && l->state == LS_PREEMPTING ? l->preempt_ns : 0};
	if (run && placer_release(c->placer, r.placement, &d)) {
		sl_log_error("lease lost its GPUs during restore", "lease=%s error=%s", l->id, d.msg);
		c->fatal = true;
		return SL_OK;
	}
	enum sl_err e = sched_restore(c->sched, l->seq, &r, &d);
	if (e == SL_ENOMEM)
		return e;
	if (e) {
		fail_restore(c, l, &d);
		return SL_OK;
	}
	/* The scheduler copied the picks: one copy for both (SL_ENOMEM or SL_OK);
	 * r.placement is l's own view, so the score stays. */
	return run ? place_picks_copy_like(&l->pl, r.placement, sched_lease_picks(c->sched, l->seq))
		   : SL_OK;
}

/* Pending leases keep the reason the scheduler gives them now (what a
 * QUEUED event used to say); saved only when it changed. */
static enum sl_err refresh_reasons(struct ctl *c)
{
	const struct sched_queue_entry *q;
	int n;
	enum sl_err e = sched_queue(c->sched, &q, &n);
	for (int i = 0; e == SL_OK && i < n; i++) {
		struct ctl_lease *l = lease_of(c, q[i].id);
		if (!l || l->state != LS_PENDING || !strcmp(ctl_lease_reason(l), q[i].reason))
			continue;
		lease_set_reason(l, q[i].reason);
		ctl_lease_save(c, l);
	}
	return e;
}

/* Every live lease into the new scheduler, then one tick. The placer refuses
 * claims on nodes out of service, so all are in service while restoring. */
static enum sl_err restore_leases(struct ctl *c)
{
	int nnodes = c->fleet->nnodes, nrun = 0, n = 0;
	bool *usable = calloc((size_t)nnodes + 1, sizeof(bool));
	int *order = restore_order(c, &nrun, &n);
	enum sl_err e = usable && order ? SL_OK : SL_ENOMEM;
	for (int i = 0; e == SL_OK && i < nnodes; i++) {
		usable[i] = placer_node_usable(c->placer, i);
		placer_set_node_usable(c->placer, i, true);
	}
	for (int i = 0; e == SL_OK && i < n && !c->fatal; i++)
		e = restore_one(c, c->lt.leases[order[i]], i < nrun);
	for (int i = 0; usable && order && i < nnodes; i++)
		placer_set_node_usable(c->placer, i, usable[i]);
	free(usable);
	free(order);
	if (e == SL_OK && nrun)
		sl_log_info("running leases restored", "scheduled=%d", sched_running_count(c->sched));
	if (e == SL_OK && !c->fatal)
		e = ctl_sched_check(c, sched_tick(c->sched, c->now_ns), "sched_tick");
	if (e == SL_OK && !c->fatal)
		e = refresh_reasons(c);
	return e;
}

enum sl_err ctl_sched_start(struct ctl *c, struct sl_diag *d)
{
	/* The policy first: restoring may start waiting leases. */
	enum sl_err e = ctl_workload_apply(c, d);
	if (e)
		return e;
	e = sched_new(c->placer, &c->sched);
	if (e)
		return sl_diag_set(d, e, "out of memory");
	if (c->notice_ns >= 0)
		sched_set_preempt_notice(c->sched, c->notice_ns);
	for (int i = 0; i < c->tenants.ntenants; i++)
		if ((e = set_quotas(c, &c->tenants.tenants[i], d)))
			return e;
	for (int i = 0; i < c->tenants.nresvs; i++) {
		struct sl_diag rd;
		sl_diag_clear(&rd);
		if ((e = ctl_sched_reserve(c, &c->tenants.resvs[i], &rd)) == SL_ENOMEM)
			return sl_diag_set(d, e, "out of memory");
		if (e) /* the fleet changed under it: keep the record, log why */
			sl_log_warn("reservation not honoured", "reservation=%s error=%s",
				    c->tenants.resvs[i].id, rd.msg);
	}
	e = restore_leases(c);
	if (c->fatal)
		return sl_diag_set(d, SL_EIO, "could not store the scheduler's decisions");
	return e ? sl_diag_set(d, e, "out of memory") : SL_OK;
}

void ctl_sched_stop(struct ctl *c)
{
	if (!c->sched)
		return;
	/* Running leases stay claimed on the placer (sched_free releases
	 * nothing); the next ctl_sched_start() hands them to the new one. */
	sched_free(c->sched);
	c->sched = NULL;
}

bool ctl_sched_queue_pos(struct ctl *c, const struct ctl_lease *l, int *pos, const char **reason)
{
	/* One lease's place, not the whole listing: a queued create would
	 * otherwise cost O(queue) reasons (bench/results/api-profile.md). */
	return c->sched && sched_queue_position(c->sched, l->seq, pos, reason);
}

/* sched.c - the scheduler's state: leases, tenants, quotas, events, and the
 * calls that change one lease (submit, release, extend, node failure).
 *
 * The decisions that involve the whole queue (order, backfill, preemption)
 * are in sched_pass.c, reservations in sched_resv.c, elastic scaling in
 * sched_elastic.c, read-only answers in sched_query.c. Each public call here
 * changes what it was asked to, then runs a pass, so after every call the
 * queue holds only leases that cannot start now (sched_restore excepted: a
 * restart rebuilds everything first and then ticks once). Leases are found by id in an
 * open-addressing table (linear probing, deletion by backward shift, so there
 * are no tombstones to age) because the controller names leases by id at
 * several thousand calls per second. */
#include "sched_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

#define SCHED_MAX_TENANTS (1 << 20) /* tenants known to the scheduler */
#define SCHED_MAX_QUOTAS 4096       /* quota entries (one per GPU model) of a tenant */
#define SCHED_MAX_EVENTS (1 << 26)  /* events not yet taken by the caller */

/* ---- lease table ---------------------------------------------------------- */

static size_t slot_of(uint64_t id, size_t nslots)
{
	uint64_t h = id * 0x9e3779b97f4a7c15ULL;
	return (size_t)(h >> 17) & (nslots - 1);
}

struct sched_lease *sched_find(const struct sched *s, uint64_t id)
{
	for (size_t i = slot_of(id, s->nslots);; i = (i + 1) & (s->nslots - 1)) {
		struct sched_lease *l = s->slots[i];
		if (!l || l->id == id)
			return l;
	}
}

static void slot_put(struct sched_lease **slots, size_t nslots, struct sched_lease *l)
{
	size_t i = slot_of(l->id, nslots);
	while (slots[i])
		i = (i + 1) & (nslots - 1);
	slots[i] = l;
}

static enum sl_err table_add(struct sched *s, struct sched_lease *l)
{
	if ((s->nleases + 1) * 2 > s->nslots) {
		size_t n = s->nslots * 2;
		struct sched_lease **ns = calloc(n, sizeof(*ns));
		if (!ns)
			return SL_ENOMEM;
		for (size_t i = 0; i < s->nslots; i++)
			if (s->slots[i])
				slot_put(ns, n, s->slots[i]);
		free(s->slots);
		s->slots = ns;
		s->nslots = n;
	}
	slot_put(s->slots, s->nslots, l);
	s->nleases++;
	return SL_OK;
}

static void table_del(struct sched *s, uint64_t id)
{
	size_t mask = s->nslots - 1, i = slot_of(id, s->nslots);
	while (s->slots[i]->id != id)
		i = (i + 1) & mask;
	s->slots[i] = NULL;
	/* Backward shift: move later entries of the run into the hole when their
	 * home slot does not lie cyclically in (hole, j]. */
	for (size_t j = (i + 1) & mask; s->slots[j]; j = (j + 1) & mask) {
		size_t home = slot_of(s->slots[j]->id, s->nslots);
		bool between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (between)
			continue;
		s->slots[i] = s->slots[j];
		s->slots[j] = NULL;
		i = j;
	}
	s->nleases--;
}

static enum sl_err arr_push(struct sched_lease ***arr, int *n, int *cap, struct sched_lease *l)
{
	enum sl_err ge = sl_grow(arr, cap, *n + 1, SCHED_MAX_LEASES);
	if (ge)
		return ge;
	l->pos = *n;
	(*arr)[(*n)++] = l;
	return SL_OK;
}

static void arr_del(struct sched_lease **arr, int *n, struct sched_lease *l)
{
	struct sched_lease *last = arr[--*n];
	arr[l->pos] = last;
	last->pos = l->pos;
	l->pos = -1;
}

enum sl_err snap_reserve(struct sched *s, int n)
{
	if (n <= s->capsnap)
		return SL_OK;
	struct sched_lease **t = realloc(s->snap, (size_t)n * sizeof(*t));
	if (!t)
		return SL_ENOMEM;
	s->snap = t;
	s->capsnap = n;
	return SL_OK;
}

enum sl_err tmp_reserve(struct sched *s, int n)
{
	if (n <= s->captmp)
		return SL_OK;
	struct sched_lease **t = realloc(s->tmp, (size_t)n * sizeof(*t));
	if (!t)
		return SL_ENOMEM;
	s->tmp = t;
	s->captmp = n;
	return SL_OK;
}

void lease_set_why(const struct sched *s, struct sched_lease *l, const char *why)
{
	if (l->why && why && !strcmp(l->why, why))
		return;
	sl_ctext_drop(l->why);
	l->why = sl_ctext_dup(why);
	/* Leases that wait for the same reason share one copy of it: the lease
	 * submitted before this one is the likeliest to. */
	const struct sched_lease *prev = l->id > 1 ? sched_find(s, l->id - 1) : NULL;
	if (prev && prev->state == SCHED_PENDING)
		sl_ctext_share(&l->why, prev->why);
}

/* ---- lifecycle ------------------------------------------------------------ */

enum sl_err sched_new(struct placer *p, struct sched **out)
{
	*out = NULL;
	if (!p)
		return SL_EINVAL;
	struct sched *s = calloc(1, sizeof(*s));
	if (!s)
		return SL_ENOMEM;
	s->p = p;
	s->f = placer_fleet(p);
	s->notice_ns = SCHED_DEFAULT_NOTICE_NS;
	s->gen = 1;
	s->dirty = true;
	s->nslots = 64;
	s->slots = calloc(s->nslots, sizeof(*s->slots));
	s->mark = calloc((size_t)s->f->nnodes + 1, sizeof(*s->mark));
	s->nmark = s->f->nnodes;
	s->view = malloc(sizeof(*s->view));
	if (!s->slots || !s->mark || !s->view) {
		sched_free(s);
		return SL_ENOMEM;
	}
	*out = s;
	return SL_OK;
}

enum sl_err sched_nodes_added(struct sched *s)
{
	int nn = s->f->nnodes;
	if (nn < s->nmark)
		return SL_EINVAL;
	bool *m = realloc(s->mark, ((size_t)nn + 1) * sizeof(*m));
	if (!m)
		return SL_ENOMEM;
	memset(m + s->nmark, 0, ((size_t)(nn - s->nmark) + 1) * sizeof(*m));
	s->mark = m;
	s->nmark = nn;
	s->dirty = true; /* waiting leases may fit on the new nodes */
	return SL_OK;
}

/* Frees what the pending part of l holds (the record's bytes are then the
 * running part's to fill). */
static void pending_release(struct sched_lease *l)
{
	if (l->hold)
		placement_release(&l->hold->pl);
	free(l->hold);
	sl_ctext_drop(l->why);
	l->hold = NULL;
	l->why = NULL;
}

static void lease_free(struct sched *s, struct sched_lease *l)
{
	sched_shape_put(s, l->shape);
	if (l->state == SCHED_PENDING)
		pending_release(l);
	else
		place_picks_release(&l->pl);
	free(l);
}

void sched_free(struct sched *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->slots && i < s->nslots; i++)
		if (s->slots[i])
			lease_free(s, s->slots[i]);
	free(s->slots);
	free(s->pending);
	free(s->running);
	for (int i = 0; i < s->ntenants; i++) {
		free(s->tenants[i]->name);
		free(s->tenants[i]->quotas);
		free(s->tenants[i]);
	}
	sched_shapes_free(s); /* after the leases, before their tenants' names */
	free(s->tenants);
	resv_free_all(s);
	sched_events_clear(s);
	free(s->ev);
	free(s->mark);
	free(s->tmp);
	free(s->queue);
	free(s->snap);
	free(s->qtext);
	free(s->view);
	free(s);
}

void sched_set_preempt_notice(struct sched *s, int64_t notice_ns)
{
	if (s && notice_ns >= 0)
		s->notice_ns = notice_ns;
}

/* ---- tenants and quotas --------------------------------------------------- */

struct sched_tenant *tenant_get(struct sched *s, const char *name, bool add)
{
	for (int i = 0; i < s->ntenants; i++)
		if (!strcmp(s->tenants[i]->name, name))
			return s->tenants[i];
	if (!add)
		return NULL;
	if (sl_grow(&s->tenants, &s->captenants, s->ntenants + 1, SCHED_MAX_TENANTS))
		return NULL;
	struct sched_tenant *t = calloc(1, sizeof(*t));
	size_t len = strlen(name) + 1;
	char *copy = malloc(len);
	if (!t || !copy) {
		free(t);
		free(copy);
		return NULL;
	}
	memcpy(copy, name, len);
	t->name = copy;
	t->weight = 1;
	s->tenants[s->ntenants++] = t;
	return t;
}

enum sl_err sched_set_tenant_weight(struct sched *s, const char *tenant, int weight,
				    struct sl_diag *d)
{
	if (!s || !tenant || !fleet_name_valid(tenant))
		return sl_diag_set(d, SL_EINVAL, "bad tenant name");
	if (weight < 1 || weight > SCHED_MAX_WEIGHT)
		return sl_diag_set(d, SL_EINVAL, "weight %d out of range 1..%d", weight,
				   SCHED_MAX_WEIGHT);
	struct sched_tenant *t = tenant_get(s, tenant, true);
	if (!t)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	t->weight = weight;
	s->dirty = true; /* the order changed */
	return SL_OK;
}

int lease_gpus(const struct sched_lease *l)
{
	return l->shape->req.gpu_milli > 0 ? 1 : l->gpus;
}

static bool req_may_use(const struct place_request *r, const struct gpu_model *m)
{
	if (r->nmodels == 0)
		return true;
	for (int i = 0; i < r->nmodels; i++)
		if (!strcmp(r->models[i], m->name))
			return true;
	return false;
}

static int64_t placement_model_gpus(const struct sched *s, const struct place_pick *picks,
				    int npicks, const struct gpu_model *m)
{
	int64_t n = 0;
	for (int i = 0; i < npicks; i++) {
		const struct place_pick *k = &picks[i];
		const struct gpu_model *g = fleet_node_type(s->f, k->node)->gpu;
		if (g && !strcmp(g->name, m->name))
			n += k->gpu >= 0 ? 1 : __builtin_popcount(k->gpus);
	}
	return n;
}

/* GPUs of lease l that count against a quota on model m. */
static int64_t quota_share(const struct sched *s, const struct sched_lease *l,
			   const struct gpu_model *m)
{
	if (l->state == SCHED_PENDING)
		return req_may_use(&l->shape->req, m) ? lease_gpus(l) : 0;
	return placement_model_gpus(s, l->pl.picks, l->pl.npicks, m);
}

void lease_account(struct sched *s, struct sched_lease *l, int sign)
{
	struct sched_tenant *t = l->tenant;
	if (l->state == SCHED_RUNNING || l->state == SCHED_PREEMPTING) {
		int n = 0;
		for (int i = 0; i < l->pl.npicks; i++)
			n += l->pl.picks[i].gpu >= 0 ? 1 : __builtin_popcount(l->pl.picks[i].gpus);
		t->running += sign * n;
	}
	for (int i = 0; i < t->nquotas; i++)
		t->quotas[i].used += sign * quota_share(s, l, t->quotas[i].model);
}

enum sl_err sched_set_quota(struct sched *s, const char *tenant, const char *model,
			    int max_gpus, struct sl_diag *d)
{
	if (!s || !tenant || !fleet_name_valid(tenant))
		return sl_diag_set(d, SL_EINVAL, "bad tenant name");
	const struct gpu_model *m = model ? catalog_gpu_find(model) : NULL;
	if (!m)
		return sl_diag_set(d, SL_EINVAL, "unknown GPU model '%s'",
				   model ? model : "(null)");
	if (max_gpus < -1 || max_gpus > PLACE_MAX_GPUS)
		return sl_diag_set(d, SL_EINVAL, "quota %d out of range 0..%d (-1 removes it)",
				   max_gpus, PLACE_MAX_GPUS);
	struct sched_tenant *t = tenant_get(s, tenant, true);
	if (!t)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	int i = 0;
	while (i < t->nquotas && t->quotas[i].model != m)
		i++;
	if (max_gpus < 0) {
		if (i < t->nquotas)
			t->quotas[i] = t->quotas[--t->nquotas];
		return SL_OK;
	}
	if (i == t->nquotas) {
		enum sl_err ge = sl_grow(&t->quotas, &t->capquotas, t->nquotas + 1, SCHED_MAX_QUOTAS);
		if (ge)
			return sl_diag_set(d, ge, "%s", sl_err_message(ge));
		struct sched_quota *q = &t->quotas[t->nquotas++];
		q->model = m;
		q->used = 0;
		for (int k = 0; k < s->npending; k++)
			if (s->pending[k]->tenant == t)
				q->used += quota_share(s, s->pending[k], m);
		for (int k = 0; k < s->nrunning; k++)
			if (s->running[k]->tenant == t)
				q->used += quota_share(s, s->running[k], m);
	}
	t->quotas[i].max = max_gpus;
	return SL_OK;
}

enum sl_err quota_check(const struct sched *s, const struct sched_lease *l,
			const struct placement *extra, struct sl_diag *d)
{
	const struct sched_tenant *t = l->tenant;
	for (int i = 0; i < t->nquotas; i++) {
		const struct sched_quota *q = &t->quotas[i];
		int64_t need = extra ? placement_model_gpus(s, extra->picks, extra->npicks, q->model)
				     : quota_share(s, l, q->model);
		if (need > 0 && q->used + need > q->max) {
			sl_diag_set(d, SL_EQUOTA,
				    "tenant %s's quota for %s is %d GPUs; %lld in use, this "
				    "request needs %lld",
				    t->name, q->model->name, q->max, (long long)q->used,
				    (long long)need);
			sl_diag_hint(d, "release or shrink leases of %s, name another model, or "
				     "ask the operator to raise the quota", q->model->name);
			return SL_EQUOTA;
		}
	}
	return SL_OK;
}

/* ---- events --------------------------------------------------------------- */

enum sl_err ev_push(struct sched *s, enum sched_event_type t, uint64_t id, int64_t now,
		    struct sched_event **out)
{
	enum sl_err ge = sl_grow(&s->ev, &s->capev, s->nev + 1, SCHED_MAX_EVENTS);
	if (ge)
		return ge;
	struct sched_event *e = &s->ev[s->nev++];
	memset(e, 0, sizeof(*e));
	placement_init(&e->placement);
	e->type = t;
	e->id = id;
	e->at_ns = now;
	if (out)
		*out = e;
	return SL_OK;
}

void sched_events(const struct sched *s, const struct sched_event **arr, int *n)
{
	*arr = s->ev;
	*n = s->nev;
}

void sched_events_clear(struct sched *s)
{
	for (int i = 0; i < s->nev; i++)
		placement_release(&s->ev[i].placement);
	s->nev = 0;
}

/* ---- lease transitions ---------------------------------------------------- */

static int64_t declared_end(const struct sched_lease *l)
{
	if (l->duration_ns > 0 && l->start_ns <= INT64_MAX - l->duration_ns)
		return l->start_ns + l->duration_ns;
	return INT64_MAX;
}

int64_t lease_end_ns(const struct sched_lease *l)
{
	int64_t end = declared_end(l);
	if (l->state == SCHED_PREEMPTING && l->deadline_ns < end)
		end = l->deadline_ns;
	return end;
}

bool pl_touches(const struct placement *pl, const bool *mark)
{
	for (int i = 0; i < pl->npicks; i++)
		if (mark[pl->picks[i].node])
			return true;
	return false;
}

enum sl_err lease_start(struct sched *s, struct sched_lease *l, const struct placement *pl,
			int64_t now, bool backfilled)
{
	enum sl_err e = SL_OK;
	if (s->nrunning == s->caprunning) {
		/* Grow the running array first so nothing fails after the claim. */
		e = sl_grow(&s->running, &s->caprunning, s->nrunning + 1, SCHED_MAX_LEASES);
	}
	struct sched_event *ev = NULL;
	struct place_picks picks = {NULL, 0, 0};
	if (e == SL_OK)
		e = placer_claim(s->p, pl, NULL);
	if (e == SL_OK && (e = place_picks_copy(&picks, pl)) != SL_OK)
		sched_cannot_fail(placer_release(s->p, pl, NULL));
	if (e != SL_OK)
		return e;
	lease_account(s, l, -1);
	arr_del(s->pending, &s->npending, l);
	if (s->last_head == l->id)
		s->last_head = 0; /* ids may be reused: never mistake a new lease for it */
	/* The event's copy first: pl may be l's own reserved placement, which
	 * goes with the rest of the pending part. */
	e = ev_push(s, SCHED_EV_STARTED, l->id, now, &ev);
	if (e == SL_OK)
		e = placement_copy(&ev->placement, pl); /* with its score */
	pending_release(l);
	l->pl = picks;
	l->state = SCHED_RUNNING;
	l->start_ns = now;
	l->start_seq = ++s->start_seq;
	l->deadline_ns = 0;
	l->victim_for = 0;
	l->has_rsv = false;
	l->wait_c = PLACE_C_NONE;
	(void)arr_push(&s->running, &s->nrunning, &s->caprunning, l);
	lease_account(s, l, 1);
	if (ev) {
		ev->gpus = lease_gpus(l);
		ev->backfilled = backfilled;
	}
	return e;
}

enum sl_err lease_end(struct sched *s, struct sched_lease *l, enum sched_end why,
		      int64_t now)
{
	lease_account(s, l, -1);
	if (l->state == SCHED_PENDING) {
		arr_del(s->pending, &s->npending, l);
	} else {
		/* The placement was claimed by this scheduler, so release cannot fail. */
		struct placement v;
		sched_cannot_fail(placer_release(s->p, place_picks_view(&l->pl, &v), NULL));
		arr_del(s->running, &s->nrunning, l);
		s->gen++;
	}
	if (l->victim) {
		struct sched_lease *w = sched_find(s, l->victim_for);
		if (w && w->has_rsv && w->hold->victims_left > 0)
			w->hold->victims_left--;
	}
	table_del(s, l->id);
	if (s->last_head == l->id)
		s->last_head = 0;
	uint64_t id = l->id;
	lease_free(s, l);
	struct sched_event *ev;
	enum sl_err e = ev_push(s, SCHED_EV_ENDED, id, now, &ev);
	if (e == SL_OK)
		ev->end = why;
	return e;
}

/* ---- submit --------------------------------------------------------------- */

static enum sl_err spec_check(const struct sched_spec *sp, struct sl_diag *d)
{
	if (!sp || !sp->req)
		return sl_diag_set(d, SL_EINVAL, "no lease spec or request");
	if (!sp->tenant || !fleet_name_valid(sp->tenant))
		return sl_diag_set(d, SL_EINVAL, "bad tenant name '%s'",
				   sp->tenant ? sp->tenant : "(null)");
	if (!plan_is_lease(sp->plan))
		return sl_diag_set(d, SL_EINVAL, "plan %d (%s) is not a lease plan", (int)sp->plan,
				   plan_name(sp->plan));
	if (sp->duration_ns < 0)
		return sl_diag_set(d, SL_EINVAL, "negative duration");
	const struct place_request *r = sp->req;
	if (sp->elastic_min == 0 && sp->elastic_max == 0)
		return SL_OK;
	if (r->gpu_milli > 0 || r->exclusive)
		return sl_diag_set(d, SL_EINVAL, "a GPU share or an exclusive lease cannot "
				   "be elastic");
	if (sp->elastic_min < 1 || sp->elastic_min > r->gpus || r->gpus > sp->elastic_max ||
	    sp->elastic_max > PLACE_MAX_GPUS)
		return sl_diag_set(d, SL_EINVAL,
				   "elastic range %d..%d must hold the %d GPUs asked for "
				   "(1 <= min <= gpus <= max <= %d)",
				   sp->elastic_min, sp->elastic_max, r->gpus, PLACE_MAX_GPUS);
	return SL_OK;
}

static struct sched_lease *lease_new(struct sched *s, uint64_t id,
				     const struct sched_spec *sp, int64_t now)
{
	struct sched_tenant *t = tenant_get(s, sp->tenant, true);
	struct sched_lease *l = t ? calloc(1, sizeof(*l)) : NULL;
	if (!l)
		return NULL;
	l->id = id;
	l->tenant = t;
	l->plan = sp->plan;
	l->state = SCHED_PENDING;
	l->shape = sched_shape_get(s, sp->req, t->name);
	l->gpus = sp->req->gpus;
	bool ok = l->shape != NULL;
	l->duration_ns = sp->duration_ns;
	l->submit_ns = now;
	l->emin = sp->elastic_min;
	l->emax = sp->elastic_max;
	l->pos = -1;
	l->note = NOTE_PLACE;
	l->note_shadow = INT64_MIN;
	if (!ok) {
		lease_free(s, l);
		return NULL;
	}
	return l;
}

/* Constraints no change of state can satisfy: refuse instead of queueing forever. */
static bool static_refusal(enum place_constraint c)
{
	return c == PLACE_C_REQUEST || c == PLACE_C_MODEL || c == PLACE_C_MEMORY ||
	       c == PLACE_C_REGION || c == PLACE_C_SITE || c == PLACE_C_SIZE ||
	       c == PLACE_C_BANDWIDTH;
}

static int queue_position(const struct sched *s, const struct sched_lease *l)
{
	int pos = 1;
	for (int i = 0; i < s->npending; i++)
		if (s->pending[i] != l && lease_order_cmp(s->pending[i], l) < 0)
			pos++;
	return pos;
}

enum sl_err sched_submit(struct sched *s, uint64_t id, const struct sched_spec *spec,
			 int64_t now_ns, struct sl_diag *d)
{
	if (!s)
		return sl_diag_set(d, SL_EINVAL, "no scheduler");
	enum sl_err e = spec_check(spec, d);
	if (e != SL_OK)
		return e;
	if (sched_find(s, id))
		return sl_diag_set(d, SL_EEXIST, "lease %llu already exists",
				   (unsigned long long)id);
	struct sched_lease *l = lease_new(s, id, spec, now_ns);
	if (!l)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	struct placement pl;
	placement_init(&pl);
	struct place_request rq;
	e = placer_place(s->p, lease_req(l, &rq), &pl, d);
	if (e == SL_ENOSPACE && static_refusal(pl.failed)) {
		sl_diag_set(d, SL_ENOSPACE, "%s", pl.why);
		sl_diag_hint(d, "no node of the fleet meets the %s constraint, so the "
			     "request would wait forever", place_constraint_name(pl.failed));
	} else if (e == SL_ENOSPACE) {
		e = SL_OK;
		l->fail_gen = s->gen;
		l->wait_c = pl.failed;
		l->why_gen = s->gen;
		lease_set_why(s, l, pl.why);
	}
	if (e == SL_OK)
		e = quota_check(s, l, NULL, d);
	if (e == SL_OK && table_add(s, l) != SL_OK)
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	if (e == SL_OK && arr_push(&s->pending, &s->npending, &s->cappending, l) != SL_OK) {
		table_del(s, id);
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	if (e != SL_OK) {
		placement_release(&pl);
		lease_free(s, l);
		return e;
	}
	lease_account(s, l, 1);
	/* Alone in the queue and placeable: it is first in any order. */
	if (s->npending == 1 && pl.npicks > 0 && l->fail_gen != s->gen)
		e = lease_start(s, l, &pl, now_ns, false);
	else
		e = sched_pass_new(s, l, now_ns);
	placement_release(&pl);
	if (e == SL_OK && l->state == SCHED_PENDING) {
		struct sched_event *ev;
		e = ev_push(s, SCHED_EV_QUEUED, id, now_ns, &ev);
		if (e == SL_OK) {
			lease_reason(s, l, ev->reason, sizeof(ev->reason));
			ev->position = queue_position(s, l);
			ev->constraint = l->wait_c;
		}
	}
	return e;
}

/* ---- restart ---------------------------------------------------------------- */

enum sl_err sched_restore(struct sched *s, uint64_t id, const struct sched_restore *r,
			  struct sl_diag *d)
{
	if (!s || !r)
		return sl_diag_set(d, SL_EINVAL, "no scheduler or lease to restore");
	enum sl_err e = spec_check(r->spec, d);
	if (e != SL_OK)
		return e;
	if (sched_find(s, id))
		return sl_diag_set(d, SL_EEXIST, "lease %llu already exists",
				   (unsigned long long)id);
	struct sched_lease *l = lease_new(s, id, r->spec, r->submit_ns);
	if (!l)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	struct placement pl;
	placement_init(&pl);
	struct place_picks picks = {NULL, 0, 0}; /* l's once it runs */
	bool claimed = false;
	if (!r->placement) {
		/* Pending: the fleet may have changed under it since it was admitted. */
		struct place_request rq;
		e = placer_place(s->p, lease_req(l, &rq), &pl, d);
		if (e == SL_ENOSPACE && static_refusal(pl.failed))
			sl_diag_set(d, SL_ENOSPACE, "%s", pl.why);
		else if (e == SL_ENOSPACE)
			e = SL_OK;
		placement_release(&pl);
	} else {
		e = placer_claim(s->p, r->placement, d);
		claimed = e == SL_OK;
		if (e == SL_OK && place_picks_copy(&picks, r->placement) != SL_OK)
			e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	if (e == SL_OK && table_add(s, l) != SL_OK)
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	else if (e == SL_OK && (r->placement ? arr_push(&s->running, &s->nrunning,
							 &s->caprunning, l)
					     : arr_push(&s->pending, &s->npending,
							 &s->cappending, l)) != SL_OK) {
		table_del(s, id);
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	if (e != SL_OK) {
		if (claimed)
			sched_cannot_fail(placer_release(s->p, r->placement, NULL));
		place_picks_release(&picks);
		lease_free(s, l);
		return e;
	}
	if (r->placement) {
		pending_release(l); /* holds nothing yet: the bytes become the running part */
		l->pl = picks;
		l->victim_for = 0;
		l->state = r->deadline_ns > 0 ? SCHED_PREEMPTING : SCHED_RUNNING;
		l->deadline_ns = r->deadline_ns;
		l->start_ns = r->start_ns;
		l->start_seq = ++s->start_seq;
	}
	lease_account(s, l, 1);
	s->dirty = true;
	return SL_OK;
}

enum sl_err sched_capacity_changed(struct sched *s, int64_t now_ns)
{
	if (!s)
		return SL_EINVAL;
	s->gen++;
	return sched_pass(s, now_ns);
}

/* ---- release, extend ----------------------------------------------- */

struct sched_lease *find_or_diag(struct sched *s, uint64_t id, struct sl_diag *d)
{
	struct sched_lease *l = s ? sched_find(s, id) : NULL;
	if (!l)
		sl_diag_set(d, SL_ENOTFOUND, "no lease %llu", (unsigned long long)id);
	return l;
}

enum sl_err sched_release(struct sched *s, uint64_t id, int64_t now_ns, struct sl_diag *d)
{
	struct sched_lease *l = find_or_diag(s, id, d);
	if (!l)
		return SL_ENOTFOUND;
	enum sl_err e = lease_end(s, l, SCHED_END_RELEASED, now_ns);
	return e == SL_OK ? sched_pass(s, now_ns) : e;
}

enum sl_err sched_extend(struct sched *s, uint64_t id, int64_t duration_ns,
			 struct sl_diag *d)
{
	struct sched_lease *l = find_or_diag(s, id, d);
	if (!l)
		return SL_ENOTFOUND;
	if (duration_ns < 0)
		return sl_diag_set(d, SL_EINVAL, "negative duration");
	l->duration_ns = duration_ns;
	s->dirty = true; /* shadows depend on declared ends */
	return SL_OK;
}

/* ---- time and failures ---------------------------------------------------- */

enum sl_err sched_tick(struct sched *s, int64_t now_ns)
{
	if (!s)
		return SL_EINVAL;
	enum sl_err e = resv_tick(s, now_ns, true);
	/* Collect first: ending a lease reorders the running array. */
	int n = 0;
	if (e == SL_OK)
		e = tmp_reserve(s, s->nrunning + 1);
	for (int i = 0; e == SL_OK && i < s->nrunning; i++)
		if (declared_end(s->running[i]) <= now_ns)
			s->tmp[n++] = s->running[i];
	for (int i = 0; e == SL_OK && i < n; i++)
		e = lease_end(s, s->tmp[i], SCHED_END_EXPIRED, now_ns);
	if (e == SL_OK)
		e = preempt_complete(s, now_ns);
	if (e == SL_OK)
		e = resv_tick(s, now_ns, false);
	return e == SL_OK ? sched_pass(s, now_ns) : e;
}

static enum sl_err end_on_node(struct sched *s, int node, int64_t now)
{
	int n = 0;
	enum sl_err e = tmp_reserve(s, s->nrunning + 1);
	for (int i = 0; e == SL_OK && i < s->nrunning; i++)
		for (int k = 0; k < s->running[i]->pl.npicks; k++)
			if (s->running[i]->pl.picks[k].node == node) {
				s->tmp[n++] = s->running[i];
				break;
			}
	for (int i = 0; e == SL_OK && i < n; i++)
		e = lease_end(s, s->tmp[i], SCHED_END_FAILED, now);
	/* A waiting head whose reserved placement used the node must wait anew. */
	for (int i = 0; e == SL_OK && i < s->npending; i++) {
		struct sched_lease *l = s->pending[i];
		for (int k = 0; l->has_rsv && k < l->hold->pl.npicks; k++)
			if (l->hold->pl.picks[k].node == node)
				l->has_rsv = false;
	}
	return e;
}

enum sl_err sched_node_failed(struct sched *s, int node, int64_t now_ns)
{
	if (!s || node < 0 || node >= s->f->nnodes)
		return SL_EINVAL;
	placer_set_node_usable(s->p, node, false);
	enum sl_err e = end_on_node(s, node, now_ns);
	return e == SL_OK ? sched_pass(s, now_ns) : e;
}

enum sl_err sched_node_restored(struct sched *s, int node, int64_t now_ns)
{
	if (!s || node < 0 || node >= s->f->nnodes)
		return SL_EINVAL;
	placer_set_node_usable(s->p, node, true);
	s->gen++;
	return sched_pass(s, now_ns);
}

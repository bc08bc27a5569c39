/* h_lease_list.c - GET /v1/leases: every lease, or one page of them.
 *
 * Live leases are in memory; ended ones are in the store's lease history
 * (history.h), which may hold millions. Unpaged, the answer is the plain
 * array it always was: everything, history scanned whole. With ?limit=N
 * (paging.h) the answer is one page in id order (byte order, as the store
 * keeps ids): the live leases after the cursor from memory, merged with the
 * next rows of the history read by its primary key, so a page costs the
 * same at any history size. ?state=ended selects every final state
 * (released, expired, preempted, failed): history only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ctl_int.h"
#include "paging.h"

#define ST_ANY (-1)
#define ST_ENDED (-2)

struct list_item {
	uint64_t seq;
	const char *id; /* the item's own "id" (borrowed from o) */
	json_t *o;
};

struct list_arg {
	struct ctl *c;
	const char *own, *tenant;
	int st;
	const struct sched_queue_entry *q;
	int nq;
	int *pos;
	const char *after; /* paged: only ids byte-greater; NULL: all */
	bool live_only;    /* paged: history comes from the store separately */
	struct list_item *items;
	int n, cap;
	bool oom;
};

static bool state_match(int st, enum lease_state s)
{
	return st == ST_ANY || (st == ST_ENDED && lease_state_final(s)) || (int)s == st;
}

static bool push_item(struct list_arg *a, uint64_t seq, json_t *o)
{
	const char *id = json_string_value(json_object_get(o, "id"));
	if (!o || !id || sl_grow(&a->items, &a->cap, a->n + 1, CTL_MAX_LEASES)) {
		json_decref(o);
		a->oom = true;
		return false;
	}
	a->items[a->n++] = (struct list_item){seq, id, o};
	return true;
}

static void list_one(void *arg, const struct ctl_lease *l)
{
	struct list_arg *a = arg;
	if ((a->own && strcmp(a->own, l->tenant)) || (a->tenant && strcmp(a->tenant, l->tenant)) ||
	    !state_match(a->st, l->state) || a->oom ||
	    (a->live_only && lease_state_final(l->state)) || (a->after && strcmp(l->id, a->after) <= 0))
		return;
	json_t *o = lease_to_json(a->c, l, false);
	int i = (int)l->seq - 1;
	if (o && a->pos && i < a->c->lt.nleases && a->pos[i]) {
		const struct sched_queue_entry *e = &a->q[a->pos[i] - 1];
		json_object_set_new(o, "queue", json_pack("{s:i, s:s}", "position", e->position,
							  "reason", e->reason ? e->reason : ""));
	}
	push_item(a, l->seq, o);
}

static int item_cmp(const void *x, const void *y)
{
	const struct list_item *a = x, *b = y;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int item_id_cmp(const void *x, const void *y)
{
	const struct list_item *a = x, *b = y;
	return strcmp(a->id, b->id);
}

static void items_free(struct list_arg *a)
{
	for (int i = 0; i < a->n; i++)
		json_decref(a->items[i].o);
	free(a->items);
	a->items = NULL;
	a->n = 0;
}

/* One page of history rows, filtered; the cursor moves past every row read. */
struct page_arg {
	struct list_arg *a;
	const char *want_tenant; /* the other tenant filter, when both are given */
	char last[STORE_MAX_ID + 1];
	int rows, found;
};

static enum sl_err page_row(void *arg, const char *id, const char *tenant, const char *json)
{
	struct page_arg *p = arg;
	p->rows++;
	snprintf(p->last, sizeof(p->last), "%s", id);
	if (p->want_tenant && (!tenant || strcmp(tenant, p->want_tenant)))
		return SL_OK;
	json_t *o = json_loads(json, 0, NULL);
	int s = lease_state_parse(json_string_value(json_object_get(o, "state")));
	if (!o || s < 0 || !state_match(p->a->st, (enum lease_state)s)) {
		json_decref(o); /* an unreadable row is left out */
		return SL_OK;
	}
	if (!push_item(p->a, 0, o))
		return SL_ENOMEM;
	p->found++;
	return SL_OK;
}

/* Appends to a up to `want` history rows after `after` that match. */
static enum sl_err history_page(struct ctl *c, struct list_arg *a, const char *after, int want,
				struct sl_diag *d)
{
	struct page_arg p = {a, NULL, "", 0, 0};
	const char *tenant = a->own ? a->own : a->tenant;
	if (a->own && a->tenant)
		p.want_tenant = a->tenant;
	snprintf(p.last, sizeof(p.last), "%s", after ? after : "");
	for (;;) {
		char from[STORE_MAX_ID + 1];
		snprintf(from, sizeof(from), "%s", p.last);
		p.rows = 0;
		int chunk = want - p.found;
		enum sl_err e = store_page(c->store, STORE_LEASE_HISTORY, from, tenant, chunk, page_row,
					   &p, d);
		if (e)
			return e;
		if (p.found >= want || p.rows < chunk)
			return SL_OK;
	}
}

static void answer_items(struct ctl_call *call, struct list_arg *a, const struct ctl_page *pg)
{
	json_t *arr = json_array();
	int n = pg->paged && a->n > pg->limit ? pg->limit : a->n;
	for (int i = 0; i < a->n; i++) {
		if (arr && i < n)
			json_array_append(arr, a->items[i].o);
	}
	const char *next = pg->paged && n > 0 && a->n > pg->limit ? a->items[n - 1].id : NULL;
	json_t *ans = ctl_page_answer(pg, arr, next);
	if (!ans)
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
	else
		ctl_answer_json(call, 200, ans);
	items_free(a);
}

void h_lease_list(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	const char *own = ctl_call_tenant(call);
	const char *state = http_request_param(call->req, "state");
	const char *tenant = http_request_param(call->req, "tenant");
	int st = ST_ANY;
	if (state && !strcmp(state, "ended"))
		st = ST_ENDED;
	else if (state && (st = lease_state_parse(state)) < 0) {
		ctl_answer_error(call, SL_EINVAL, "unknown lease state in ?state=",
				 "states: pending, active, preempting, released, expired, preempted, "
				 "failed, or ended for any of the last four");
		return;
	}
	struct ctl_page pg;
	if (!ctl_page_parse(call, &pg))
		return;
	if (pg.after && strlen(pg.after) > STORE_MAX_ID) {
		ctl_answer_error(call, SL_EINVAL, "?after: not a lease id", "follow \"next\"");
		return;
	}
	/* Queue positions for the whole list at once, not one queue per lease. */
	struct list_arg la = {c, own, tenant, st, NULL, 0, NULL, pg.paged ? (pg.after ? pg.after : "") : NULL,
			      pg.paged, NULL, 0, 0, false};
	bool want_live = st == ST_ANY || (st >= 0 && !lease_state_final((enum lease_state)st));
	bool want_hist = !want_live || st == ST_ANY;
	if (want_live && c->sched && sched_queue(c->sched, &la.q, &la.nq))
		la.nq = 0;
	la.pos = la.nq ? calloc((size_t)c->lt.nleases + 1, sizeof(int)) : NULL;
	for (int i = 0; la.pos && i < la.nq; i++)
		if (la.q[i].id >= 1 && la.q[i].id <= (uint64_t)c->lt.nleases)
			la.pos[la.q[i].id - 1] = i + 1;
	struct sl_diag d;
	sl_diag_clear(&d);
	enum sl_err e = SL_OK;
	if (!pg.paged) {
		e = ctl_lease_each(c, list_one, &la, &d);
	} else {
		for (int i = 0; want_live && i < c->lt.nleases && !la.oom; i++) {
			const struct ctl_lease *l = ctl_lease_at(c, i);
			if (l)
				list_one(&la, l);
		}
		/* limit + 1 of each side: the merged first limit, and whether more follow. */
		if (!la.oom && want_hist)
			e = history_page(c, &la, pg.after, pg.limit + 1, &d);
	}
	free(la.pos);
	if (e || la.oom) {
		items_free(&la);
		ctl_answer_error(call, e ? e : SL_ENOMEM, e ? d.msg : NULL, NULL);
		return;
	}
	/* Unpaged: id order by seq, as always; paged: the store's byte order. */
	if (la.n > 1)
		qsort(la.items, (size_t)la.n, sizeof(*la.items), pg.paged ? item_id_cmp : item_cmp);
	answer_items(call, &la, &pg);
}

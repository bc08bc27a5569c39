/* billing_store.c - billing's rows in the store, and why a restart does not
 * read billing's past (issue 17).
 *
 * - Usage records: a record lives in `usage` (and in memory) while it runs;
 *   when it ends, after its final charge is posted, its row moves to
 *   `usage_history` in the same transaction and leaves memory
 *   (bill_usage_retire). A start loads only `usage`. Invoices, usage and
 *   revenue read the history back by tenant (bill_hist_read), an ended
 *   meter's amount by id (bill_hist_get); a record in history is never
 *   started again (bill_usage_in_history).
 * - Ledger: each posting rewrites the two accounts it moves money between in
 *   `ledger_accounts` ("<kind>:<key>", debits and credits) and the meta key
 *   billing.post_seq, so the write cost per posting is O(1); a start gives
 *   those totals back to the ledger (ledger_restore) instead of replaying
 *   every posting. A posting row's updated_ns is its seq, so a tenant's
 *   postings page in posting order (store_page_since: the statement, and
 *   the credits an invoice lists). The ledger keeps in memory only the
 *   postings of this run, and forgets them in bulk now and then: a posting
 *   id it does not know is looked up in `postings` before it is applied, so
 *   a replayed id stays a no-op (bill_posting_known).
 * - A store from before schema 9 has no account rows: its first start
 *   replays the postings once more, then writes the accounts, renumbers the
 *   posting rows' updated_ns and sets billing.snapshot (billing_start). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing_int.h"
#include "buf.h"
#include "ctl_int.h"
#include "log.h"

#define BILL_HIST_PAGE 1000    /* rows per store read of the history */
#define BILL_HIST_MAX (1 << 24) /* ended records one answer reads */

/* ---- usage rows ---- */

static json_t *usage_json(const struct bill_usage *u)
{
	static const char *const kinds[] = {"started", "scaled", "ended"};
	static const char *const ends[] = {"released", "expired", "preempted", "failed"};
	json_t *ev = json_array();
	for (size_t i = 0; ev && i < u->nev; i++) {
		const struct rating_event *e = &u->ev[i];
		json_t *o = json_pack("{s:I, s:s, s:i}", "at_ms", (json_int_t)e->at_ms, "kind",
				      kinds[e->kind], "gpus", e->gpus);
		if (o && e->kind == RATING_ENDED)
			json_object_set_new(o, "end", json_string(ends[e->end]));
		json_array_append_new(ev, o);
	}
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:b, s:o, s:I, s:i, s:i, s:I, s:I}",
			 "lease", u->lease, "tenant", u->tenant, "site", u->site, "region",
			 u->region, "model", u->model, "plan", plan_name(u->plan), "priced",
			 u->priced, "ended", u->ended, "events", ev, "bought_ms",
			 (json_int_t)u->bought_ms, "term_months", u->term_months, "gpus", u->gpus,
			 "charged", (json_int_t)u->charged, "last_post_ms",
			 (json_int_t)u->last_post_ms);
}

void bill_usage_save(struct ctl *c, const struct bill_usage *u)
{
	ctl_put(c, STORE_USAGE, u->lease, u->tenant, usage_json(u));
}

static void copy_str(char *dst, size_t n, const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	snprintf(dst, n, "%s", s ? s : "");
}

enum sl_err bill_usage_parse(const char *id, const char *json, struct bill_usage *u)
{
	json_t *o = json_loads(json, 0, NULL);
	/* A plan that is not one (a corrupt or foreign row) is refused, as any
	 * unreadable stored row is: read as hourly it would bill the wrong price. */
	struct sl_diag d;
	enum plan plan;
	sl_diag_clear(&d);
	memset(u, 0, sizeof(*u));
	if (!o || plan_parse(json_string_value(json_object_get(o, "plan")), &plan, &d)) {
		sl_log_error("stored usage unreadable", "id=%s error=%s", id, o ? d.msg : "not JSON");
		json_decref(o);
		return SL_EPARSE;
	}
	snprintf(u->lease, sizeof(u->lease), "%s", id);
	copy_str(u->tenant, sizeof(u->tenant), o, "tenant");
	copy_str(u->site, sizeof(u->site), o, "site");
	copy_str(u->region, sizeof(u->region), o, "region");
	copy_str(u->model, sizeof(u->model), o, "model");
	u->plan = plan;
	u->priced = json_is_true(json_object_get(o, "priced"));
	u->ended = json_is_true(json_object_get(o, "ended"));
	u->bought_ms = json_integer_value(json_object_get(o, "bought_ms"));
	u->term_months = (int)json_integer_value(json_object_get(o, "term_months"));
	u->gpus = (int)json_integer_value(json_object_get(o, "gpus"));
	u->charged = json_integer_value(json_object_get(o, "charged"));
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(o, "events"), i, e) {
		const char *k = json_string_value(json_object_get(e, "kind"));
		const char *end = json_string_value(json_object_get(e, "end"));
		enum rating_ev kind = !k || !strcmp(k, "started") ? RATING_STARTED
				      : !strcmp(k, "scaled")      ? RATING_SCALED
								  : RATING_ENDED;
		enum rating_end re = !end || !strcmp(end, "released") ? RATING_END_RELEASED
				     : !strcmp(end, "expired")        ? RATING_END_EXPIRED
				     : !strcmp(end, "preempted")      ? RATING_END_PREEMPTED
								      : RATING_END_FAILED;
		if (!bill_usage_push(u, json_integer_value(json_object_get(e, "at_ms")), kind,
				     (int)json_integer_value(json_object_get(e, "gpus")), re)) {
			json_decref(o);
			free(u->ev);
			u->ev = NULL;
			return SL_ENOMEM;
		}
	}
	/* The hourly posting clock goes on from the last charge; a row from
	 * before schema 9 has none, and billing_start moves it on from the
	 * replayed charges. Left at 0, every running lease would be charged at
	 * the first tick after each restart. */
	json_t *lp = json_object_get(o, "last_post_ms");
	u->last_post_ms = lp ? json_integer_value(lp) : u->nev ? u->ev[0].at_ms : u->bought_ms;
	json_decref(o);
	return SL_OK;
}

/* ---- usage history ---- */

bool bill_usage_in_history(struct ctl *c, const char *id)
{
	struct ctl_billing *b = c->billing;
	if (strmap_get(b->hist_ids, id, -1) >= 0)
		return true;
	char *row = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	enum sl_err e = store_get(c->store, STORE_USAGE_HISTORY, id, &row, &d);
	free(row);
	if (e && e != SL_ENOTFOUND) {
		sl_log_error("usage history unreadable", "id=%s error=%s", id, d.msg);
		c->fatal = true;
		return true; /* never meter twice, also when the store cannot say */
	}
	if (!e && strmap_add(b->hist_ids, id, 1) == SL_ENOMEM)
		c->fatal = true;
	return !e;
}

void bill_usage_retire(struct ctl *c, struct bill_usage *u)
{
	struct ctl_billing *b = c->billing;
	int idx = (int)(u - b->u), last = b->nu - 1;
	if (ctl_put(c, STORE_USAGE_HISTORY, u->lease, u->tenant, usage_json(u)))
		ctl_delete(c, STORE_USAGE, u->lease);
	/* Hosting asks every tick whether a node's record ended: remember. */
	if (u->plan == PLAN_HOSTING && strmap_get(b->hist_ids, u->lease, -1) < 0 &&
	    strmap_add(b->hist_ids, u->lease, 1))
		c->fatal = true;
	bill_live_del(b, idx);
	strmap_del(b->u_by_lease, u->lease);
	free(u->ev);
	if (idx != last) {
		b->u[idx] = b->u[last];
		strmap_del(b->u_by_lease, b->u[idx].lease);
		if (strmap_add(b->u_by_lease, b->u[idx].lease, idx))
			c->fatal = true;
		for (int k = 0; k < b->nlive; k++)
			if (b->live[k] == last)
				b->live[k] = idx;
	}
	b->nu--;
}

enum sl_err bill_hist_get(struct ctl *c, const char *id, struct bill_usage *out, bool *found)
{
	char *row = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	*found = false;
	enum sl_err e = store_get(c->store, STORE_USAGE_HISTORY, id, &row, &d);
	if (e == SL_ENOTFOUND)
		return SL_OK;
	if (!e)
		e = bill_usage_parse(id, row, out);
	else
		sl_log_error("usage history unreadable", "id=%s error=%s", id, d.msg);
	free(row);
	*found = !e;
	return e;
}

struct hist_read {
	struct bill_usages *v;
	char last[STORE_MAX_ID + 1];
	int n;
};

static enum sl_err hist_row(void *arg, const char *id, const char *tenant, const char *json)
{
	struct hist_read *r = arg;
	(void)tenant;
	snprintf(r->last, sizeof(r->last), "%s", id);
	r->n++;
	if (sl_grow(&r->v->v, &r->v->cap, r->v->n + 1, BILL_HIST_MAX))
		return SL_ENOMEM;
	enum sl_err e = bill_usage_parse(id, json, &r->v->v[r->v->n]);
	if (!e)
		r->v->n++;
	return e;
}

enum sl_err bill_hist_read(struct ctl *c, const char *tenant, struct bill_usages *out,
			   struct sl_diag *d)
{
	struct hist_read r = {out, "", 0};
	enum sl_err e;
	do {
		r.n = 0;
		e = store_page(c->store, STORE_USAGE_HISTORY, r.last, tenant, BILL_HIST_PAGE,
			       hist_row, &r, d);
	} while (!e && r.n == BILL_HIST_PAGE);
	return e;
}

void bill_usages_release(struct bill_usages *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->v[i].ev);
	free(v->v);
	memset(v, 0, sizeof(*v));
}

/* ---- postings ---- */

static json_t *posting_json(const struct ledger_posting *p, uint64_t seq)
{
	return json_pack("{s:I, s:s, s:s, s:s, s:s, s:I, s:I, s:s}", "seq", (json_int_t)seq, "id",
			 p->id, "type", ledger_type_name(p->type), "tenant", p->tenant, "plan",
			 plan_name(p->plan), "amount", (json_int_t)p->amount, "at_ms",
			 (json_int_t)p->at_ms, "reason", p->reason);
}

static int ledger_type_parse(const char *s)
{
	for (int t = 0; s && t < LEDGER_TYPE__COUNT; t++)
		if (!strcmp(s, ledger_type_name((enum ledger_type)t)))
			return t;
	return -1;
}

enum sl_err bill_posting_parse(const char *id, const char *json, struct ledger_posting *p,
			       uint64_t *seq, struct sl_diag *d)
{
	json_t *o = json_loads(json, 0, NULL);
	if (!o)
		return sl_diag_set(d, SL_EPARSE, "stored posting %s is not JSON", id);
	enum plan plan = PLAN_HOURLY;
	int type = ledger_type_parse(json_string_value(json_object_get(o, "type")));
	*seq = (uint64_t)json_integer_value(json_object_get(o, "seq"));
	/* Every posting is stored with its plan (posting_json); one that is not
	 * a plan is refused like any unreadable row, not read as hourly. */
	enum sl_err e = plan_parse(json_string_value(json_object_get(o, "plan")), &plan, d);
	if (!e)
		e = type < 0 ? sl_diag_set(d, SL_EPARSE, "unknown posting type")
			     : ledger_posting_init(p, id, (enum ledger_type)type,
						   json_string_value(json_object_get(o, "tenant")),
						   plan, json_integer_value(json_object_get(o, "amount")),
						   json_integer_value(json_object_get(o, "at_ms")),
						   json_string_value(json_object_get(o, "reason")), d);
	json_decref(o);
	if (e)
		sl_log_error("stored posting unreadable", "id=%s error=%s", id, d->msg);
	return e ? SL_EPARSE : SL_OK;
}

bool bill_posting_put(struct ctl *c, const struct ledger_posting *p, uint64_t seq)
{
	json_t *o = posting_json(p, seq);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	bool ok = ctl_put_text_ns(c, STORE_POSTINGS, p->id, p->tenant, s, (int64_t)seq);
	free(s);
	return ok;
}

enum sl_err bill_posting_known(struct ctl *c, const struct ledger_posting *p, bool *known,
			       struct sl_diag *d)
{
	char *row = NULL;
	*known = false;
	enum sl_err e = store_get(c->store, STORE_POSTINGS, p->id, &row, d);
	if (e == SL_ENOTFOUND) {
		sl_diag_clear(d);
		return SL_OK;
	}
	struct ledger_posting old;
	uint64_t seq;
	if (!e)
		e = bill_posting_parse(p->id, row, &old, &seq, d);
	free(row);
	if (e)
		return e;
	if (!ledger_posting_same(&old, p)) {
		e = sl_diag_set(d, SL_ECONFLICT, "posting id %s was already applied with "
				"different content", p->id);
		sl_diag_hint(d, "a posting id names one posting forever; use a new id for a new "
				"posting");
		return e;
	}
	*known = true;
	return SL_OK;
}

struct since_read {
	bill_posting_fn fn;
	void *arg;
	uint64_t last;
	int n;
	bool stop;
};

static enum sl_err since_row(void *arg, const char *id, const char *tenant, const char *json)
{
	struct since_read *r = arg;
	struct ledger_posting p;
	struct sl_diag d;
	(void)tenant;
	sl_diag_clear(&d);
	r->n++;
	if (r->stop)
		return SL_OK;
	enum sl_err e = bill_posting_parse(id, json, &p, &r->last, &d);
	if (!e && !r->fn(r->arg, &p, r->last))
		r->stop = true;
	return e;
}

enum sl_err bill_postings_since(struct ctl *c, const char *tenant, uint64_t after_seq,
				bill_posting_fn fn, void *arg, struct sl_diag *d)
{
	struct since_read r = {fn, arg, after_seq, 0, false};
	enum sl_err e;
	do {
		r.n = 0;
		e = store_page_since(c->store, STORE_POSTINGS, tenant, (int64_t)r.last,
				     BILL_HIST_PAGE, since_row, &r, d);
	} while (!e && !r.stop && r.n == BILL_HIST_PAGE);
	return e;
}

/* ---- the ledger's accounts ---- */

static bool by_tenant(enum ledger_kind k)
{
	return k == LEDGER_ACCT_TENANT || k == LEDGER_ACCT_CREDIT_LINE;
}

static void acct_save(struct ctl *c, const struct ledger_account *a)
{
	char id[LEDGER_TENANT_MAX + 32];
	snprintf(id, sizeof(id), "%s:%s", ledger_kind_name(a->kind), a->key);
	ctl_put(c, STORE_LEDGER_ACCOUNTS, id, by_tenant(a->kind) ? a->key : NULL,
		json_pack("{s:s, s:s, s:I, s:I}", "kind", ledger_kind_name(a->kind), "key", a->key,
			  "debits", (json_int_t)a->debits, "credits", (json_int_t)a->credits));
}

static void seq_save(struct ctl *c)
{
	char v[24];
	snprintf(v, sizeof(v), "%" PRIu64, c->billing->post_seq);
	ctl_meta_set(c, "billing.post_seq", v);
}

void bill_accounts_save(struct ctl *c, const struct ledger_posting *p)
{
	struct ledger_account da, ca;
	ledger_posting_accounts(p, &da, &ca);
	const struct ledger_account *x = ledger_account_find(c->billing->ledger, da.kind, da.key);
	const struct ledger_account *y = ledger_account_find(c->billing->ledger, ca.kind, ca.key);
	if (!x || !y) {
		c->fatal = true; /* cannot happen: the posting was just applied */
		return;
	}
	acct_save(c, x);
	acct_save(c, y);
	seq_save(c);
}

void bill_accounts_save_all(struct ctl *c)
{
	const struct ledger *l = c->billing->ledger;
	for (size_t i = 0; i < ledger_account_count(l); i++)
		acct_save(c, ledger_account_at(l, i));
	seq_save(c);
}

static enum sl_err load_account(void *arg, const char *id, const char *tenant, const char *json)
{
	struct ctl *c = arg;
	struct ledger_account a;
	struct sl_diag d;
	(void)tenant;
	sl_diag_clear(&d);
	memset(&a, 0, sizeof(a));
	json_t *o = json_loads(json, 0, NULL);
	const char *kind = json_string_value(json_object_get(o, "kind"));
	const char *key = json_string_value(json_object_get(o, "key"));
	int k = LEDGER_KIND__COUNT;
	for (int i = 0; kind && i < LEDGER_KIND__COUNT; i++)
		if (!strcmp(kind, ledger_kind_name((enum ledger_kind)i)))
			k = i;
	a.kind = (enum ledger_kind)k;
	snprintf(a.key, sizeof(a.key), "%s", key ? key : "");
	a.debits = json_integer_value(json_object_get(o, "debits"));
	a.credits = json_integer_value(json_object_get(o, "credits"));
	enum sl_err e = o ? ledger_restore(c->billing->ledger, &a, &d)
			  : sl_diag_set(&d, SL_EPARSE, "not JSON");
	json_decref(o);
	if (e)
		sl_log_error("stored ledger account unreadable", "id=%s error=%s", id, d.msg);
	return e;
}

enum sl_err bill_accounts_load(struct ctl *c, struct sl_diag *d)
{
	struct ctl_billing *b = c->billing;
	char *v = NULL, *end = NULL;
	enum sl_err e = store_scan(c->store, STORE_LEDGER_ACCOUNTS, load_account, c, d);
	if (!e)
		e = store_meta_get(c->store, "billing.post_seq", &v, d);
	if (e == SL_ENOTFOUND) { /* no posting yet */
		sl_diag_clear(d);
		e = SL_OK;
	} else if (!e) {
		unsigned long long x = strtoull(v, &end, 10);
		if (end == v || *end)
			e = sl_diag_set(d, SL_EPARSE, "meta billing.post_seq is not a number: "
					"'%.40s'", v);
		b->post_seq = x;
	}
	free(v);
	int64_t deb, cre;
	ledger_totals(b->ledger, &deb, &cre);
	if (!e && deb != cre) {
		e = sl_diag_set(d, SL_EPARSE, "the stored ledger accounts do not balance: debits "
				"%lld, credits %lld", (long long)deb, (long long)cre);
		sl_diag_hint(d, "restore the store from a backup");
	}
	return e;
}

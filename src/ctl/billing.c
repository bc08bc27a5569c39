/* billing.c - metering, the ledger's postings and the balance rules inside
 * the controller.
 *
 * Why it is built this way:
 * - Usage is recorded from lease state changes at the lease's own instants
 *   (started_at, scale instants, ended_at, in milliseconds), so an invoice
 *   line's GPU-ms is exactly what `lease show` says ran. The events live in
 *   their own table (usage) beside the lease row and survive restarts; an
 *   ended record moves to usage_history (billing_store.c).
 * - Charges are not posted every second: the ledger gets a CHARGE when a
 *   lease ends and hourly while it runs, each for the rated amount not yet
 *   posted, with the id "chg.<lease>.<cumulative amount>". The cumulative
 *   amount only grows, so ids never repeat and a replayed posting is a no-op.
 *   The balance shown and checked is the ledger's minus the running usage
 *   not yet posted, so it is exact to the fen at every instant.
 * - Leases that start while no price applies to them run free and get no
 *   usage record at all (so an installation without prices pays nothing for
 *   billing); a price set later never re-prices them.
 * - The balance rules run from the loop once a second while priced leases
 *   run: at zero (balance plus credit line), the tenant's leases get the
 *   grace period, then stop (released, reason says why); each step is a
 *   history entry on the leases and a state on the balance answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "account_rules.h"
#include "billing.h"
#include "billing_int.h"
#include "buf.h"
#include "catalog.h"
#include "ctl_int.h"
#include "history.h"
#include "instances.h"
#include "log.h"

#define BILL_MAX_TENANTS LEDGER_MAX_ACCOUNTS /* tenants billed */
#define BILL_MAX_USAGE CTL_MAX_LEASES       /* leases with usage in memory */
#define BILL_POSTINGS_KEPT 65536            /* postings the ledger keeps in memory */

/* ---- lookups ---- */

struct bill_usage *billing_usage_find(struct ctl *c, const char *lease)
{
	struct ctl_billing *b = c->billing;
	int i = b ? strmap_get(b->u_by_lease, lease, -1) : -1;
	return i >= 0 ? &b->u[i] : NULL;
}

struct bill_tenant *billing_tenant(struct ctl *c, const char *tenant, bool create)
{
	struct ctl_billing *b = c->billing;
	int i = strmap_get(b->t_by_name, tenant, -1);
	if (i >= 0)
		return &b->t[i];
	if (!create)
		return NULL;
	if (sl_grow(&b->t, &b->capt, b->nt + 1, BILL_MAX_TENANTS))
		return NULL;
	if (strmap_add(b->t_by_name, tenant, b->nt))
		return NULL;
	struct bill_tenant *t = &b->t[b->nt++];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", tenant);
	return t;
}

struct bill_usage *bill_usage_add(struct ctl *c, const char *lease)
{
	struct ctl_billing *b = c->billing;
	if (sl_grow(&b->u, &b->capu, b->nu + 1, BILL_MAX_USAGE))
		return NULL;
	if (strmap_add(b->u_by_lease, lease, b->nu))
		return NULL;
	struct bill_usage *u = &b->u[b->nu++];
	memset(u, 0, sizeof(*u));
	snprintf(u->lease, sizeof(u->lease), "%s", lease);
	return u;
}

bool bill_live_add(struct ctl_billing *b, int idx)
{
	if (sl_grow(&b->live, &b->caplive, b->nlive + 1, BILL_MAX_USAGE))
		return false;
	b->live[b->nlive++] = idx;
	return true;
}

void bill_live_del(struct ctl_billing *b, int idx)
{
	for (int k = 0; k < b->nlive; k++)
		if (b->live[k] == idx) {
			b->live[k] = b->live[--b->nlive];
			return;
		}
}

bool bill_usage_push(struct bill_usage *u, int64_t at, enum rating_ev kind, int gpus,
		       enum rating_end end)
{
	if (sl_grow(&u->ev, &u->cap, u->nev + 1, RATING_MAX_EVENTS))
		return false;
	if (u->nev && at < u->ev[u->nev - 1].at_ms)
		at = u->ev[u->nev - 1].at_ms; /* never backwards (clock steps) */
	u->ev[u->nev++] = (struct rating_event){at, kind, gpus, end};
	return true;
}

void billing_rating_lease(const struct bill_usage *u, struct rating_lease *rl)
{
	memset(rl, 0, sizeof(*rl));
	rl->id = u->lease;
	rl->tenant = u->tenant;
	rl->site = u->site;
	rl->region = u->region;
	rl->model = u->model;
	rl->plan = u->plan;
	rl->events = u->ev;
	rl->nevents = u->nev;
	rl->bought_ms = u->bought_ms;
	rl->term_months = u->term_months;
	rl->gpus = u->gpus;
}

int64_t billing_accrued(struct ctl *c, const struct bill_usage *u, int64_t to_ms)
{
	struct ctl_billing *b = c->billing;
	if (!u->priced || u->nev == 0)
		return 0;
	struct rating_lease rl;
	struct rating_lines ls;
	struct sl_diag d;
	sl_diag_clear(&d);
	billing_rating_lease(u, &rl);
	rating_lines_init(&ls);
	if (to_ms < u->ev[0].at_ms)
		to_ms = u->ev[0].at_ms;
	int64_t sum = 0;
	if (rating_rate(b->prices, &b->zone, &rl, CAL_MIN_MS, to_ms, &ls, &d)) {
		sl_log_error("rating failed", "lease=%s error=%s", u->lease, d.msg);
	} else {
		for (size_t i = 0; i < ls.n; i++)
			sum += ls.v[i].amount;
	}
	rating_lines_release(&ls);
	return sum;
}

int64_t billing_balance_now(struct ctl *c, const char *tenant, int64_t *unposted)
{
	struct ctl_billing *b = c->billing;
	int64_t now = billing_ms(c->now_ns), open = 0;
	for (int k = 0; k < b->nlive; k++) {
		const struct bill_usage *u = &b->u[b->live[k]];
		if (!u->ended && u->priced && !strcmp(u->tenant, tenant))
			open += billing_accrued(c, u, now) - u->charged;
	}
	if (unposted)
		*unposted = open;
	return ledger_tenant_balance(b->ledger, tenant) - open;
}

/* ---- store rows (billing_store.c has the usage, posting and account rows) ---- */

static void tenant_save(struct ctl *c, const struct bill_tenant *t)
{
	ctl_put(c, STORE_BILLING, t->name, t->name,
		json_pack("{s:s, s:I, s:I}", "tenant", t->name, "grace_since_ms",
			  (json_int_t)t->grace_since_ms, "stopped_ms", (json_int_t)t->stopped_ms));
}

/* Live records into memory; an ended one (a store from before schema 9) is
 * noted to move to the history. */
static enum sl_err load_usage(void *arg, const char *id, const char *tenant, const char *json)
{
	struct ctl *c = arg;
	struct ctl_billing *b = c->billing;
	struct bill_usage t;
	enum sl_err e = bill_usage_parse(id, json, &t);
	if (e)
		return e;
	if (t.ended) {
		free(t.ev);
		return ctl_hist_note(&b->moves, id, tenant);
	}
	struct bill_usage *u = bill_usage_add(c, id);
	if (!u) {
		free(t.ev);
		return SL_ENOMEM;
	}
	*u = t;
	return bill_live_add(b, (int)(u - b->u)) ? SL_OK : SL_ENOMEM;
}

struct post_row {
	uint64_t seq;
	struct ledger_posting p;
};

struct post_rows {
	struct post_row *v;
	size_t n, cap;
};

static enum sl_err load_posting(void *arg, const char *id, const char *tenant, const char *json)
{
	struct post_rows *rows = arg;
	struct sl_diag d;
	(void)tenant;
	sl_diag_clear(&d);
	enum sl_err e = sl_grow(&rows->v, &rows->cap, rows->n + 1, LEDGER_MAX_POSTINGS);
	if (!e)
		e = bill_posting_parse(id, json, &rows->v[rows->n].p, &rows->v[rows->n].seq, &d);
	if (!e)
		rows->n++;
	return e;
}

static int cmp_post(const void *a, const void *b)
{
	const struct post_row *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static enum sl_err load_price(void *arg, const char *id, const char *tenant, const char *json)
{
	struct ctl *c = arg;
	struct ctl_billing *b = c->billing;
	struct price_entry e;
	struct sl_diag d;
	enum plan plan;
	(void)tenant;
	sl_diag_clear(&d);
	json_t *o = json_loads(json, 0, NULL);
	const char *sc = json_string_value(json_object_get(o, "scope"));
	enum price_scope scope = sc && !strcmp(sc, "site")     ? PRICE_SITE
				 : sc && !strcmp(sc, "region") ? PRICE_REGION
							       : PRICE_GLOBAL;
	const char *ps = json_string_value(json_object_get(o, "plan"));
	enum sl_err r = !o || !ps ? SL_EPARSE : plan_parse(ps, &plan, &d);
	if (!r)
		r = price_entry_init(&e, scope, json_string_value(json_object_get(o, "scope_name")),
				     json_string_value(json_object_get(o, "model")), plan,
				     json_integer_value(json_object_get(o, "from_ms")),
				     json_integer_value(json_object_get(o, "price")), &d);
	if (!r)
		r = pricebook_restore(b->prices, &e, &d);
	if (!r && e.plan == PLAN_HOSTING)
		b->has_hosting = true;
	uint64_t seq;
	if (sscanf(id, "pr-%llu", (unsigned long long *)&seq) == 1 && seq > b->price_seq)
		b->price_seq = seq;
	json_decref(o);
	if (r)
		sl_log_error("stored price unreadable", "id=%s error=%s", id, d.msg);
	return r;
}

static enum sl_err load_tenant_state(void *arg, const char *id, const char *tenant,
				     const char *json)
{
	struct ctl *c = arg;
	(void)tenant;
	json_t *o = json_loads(json, 0, NULL);
	struct bill_tenant *t = o ? billing_tenant(c, id, true) : NULL;
	if (t) {
		t->grace_since_ms = json_integer_value(json_object_get(o, "grace_since_ms"));
		t->stopped_ms = json_integer_value(json_object_get(o, "stopped_ms"));
	}
	json_decref(o);
	return t ? SL_OK : SL_EPARSE;
}

/* ---- postings ---- */

void billing_next_id(struct ctl *c, const char *prefix, char *buf, size_t n)
{
	snprintf(buf, n, "%s.%llu", prefix, (unsigned long long)c->billing->post_seq + 1);
}

enum sl_err billing_post(struct ctl *c, struct ledger_posting *p, bool *applied,
			 struct sl_diag *d)
{
	struct ctl_billing *b = c->billing;
	bool done = false, known = false;
	if (applied)
		*applied = false;
	/* The ledger knows this run's postings; older ones are in the store. */
	enum sl_err e = ledger_find(b->ledger, p->id) ? SL_OK : bill_posting_known(c, p, &known, d);
	if (e || known)
		return e;
	e = ledger_apply(b->ledger, p, &done, d);
	if (applied)
		*applied = done;
	if (e || !done)
		return e;
	b->post_seq++;
	bill_posting_put(c, p, b->post_seq);
	bill_accounts_save(c, p);
	int64_t deb, cre;
	ledger_totals(b->ledger, &deb, &cre);
	if (deb != cre) { /* cannot happen: the core balances by construction */
		sl_log_error("ledger out of balance", "debits=%lld credits=%lld", (long long)deb,
			     (long long)cre);
		c->fatal = true;
	}
	/* Stored in this turn's transaction (the store sees its own writes), so
	 * the ledger need not keep them: its memory stays bounded. */
	if (ledger_posting_count(b->ledger) >= BILL_POSTINGS_KEPT && ledger_forget_postings(b->ledger))
		c->fatal = true;
	return SL_OK;
}

/* Posts u's rated usage up to now that is not posted yet. */
void bill_post_charge(struct ctl *c, struct bill_usage *u)
{
	int64_t now = billing_ms(c->now_ns);
	int64_t acc = billing_accrued(c, u, now);
	u->last_post_ms = now;
	if (acc <= u->charged)
		return;
	struct ledger_posting p;
	struct sl_diag d;
	char id[LEDGER_ID_MAX], reason[LEDGER_REASON_MAX], when[32];
	sl_diag_clear(&d);
	snprintf(id, sizeof(id), "chg.%.80s.%lld", u->lease, (long long)acc);
	ctl_time_fmt(c->now_ns, when);
	snprintf(reason, sizeof(reason), "%s usage of %.80s up to %s", plan_name(u->plan),
		 u->lease, when);
	if (ledger_posting_init(&p, id, u->plan == PLAN_HOSTING ? LEDGER_HOSTING_FEE : LEDGER_CHARGE,
				u->tenant, u->plan, acc - u->charged, now,
				reason, &d) ||
	    billing_post(c, &p, NULL, &d)) {
		sl_log_error("charge not posted", "lease=%s error=%s", u->lease, d.msg);
		return;
	}
	u->charged = acc;
}

/* ---- metering ---- */

static enum rating_end end_of(int state)
{
	switch (state) {
	case LS_EXPIRED: return RATING_END_EXPIRED;
	case LS_PREEMPTED: return RATING_END_PREEMPTED;
	case LS_FAILED: return RATING_END_FAILED;
	default: return RATING_END_RELEASED;
	}
}

static bool priced_at(struct ctl *c, const struct bill_usage *u, int64_t at)
{
	struct price_key k = {u->site, u->region, u->model, u->plan};
	struct price_quote q;
	struct sl_diag d;
	sl_diag_clear(&d);
	return (u->model[0] || !plan_has_model(u->plan)) &&
	       pricebook_at(c->billing->prices, &k, at, &q, &d) == SL_OK;
}

/* The usage record of a lease that just started, or NULL with *oom false
 * when no price applied at its start: such a lease runs free and needs no
 * record (prices are never set backwards, so the answer never changes, and a
 * restart reaches the same one from the stored price book). */
static struct bill_usage *usage_start(struct ctl *c, const struct ctl_lease *l, bool *oom)
{
	struct bill_usage t;
	memset(&t, 0, sizeof(t));
	*oom = false;
	snprintf(t.tenant, sizeof(t.tenant), "%s", l->tenant);
	if (l->pl.npicks > 0) {
		const struct fleet_node *n = &c->fleet->nodes[l->pl.picks[0].node];
		const struct fleet_site *s = &c->fleet->sites[n->site];
		snprintf(t.model, sizeof(t.model), "%s", fleet_node_type(c->fleet, l->pl.picks[0].node)->gpu->name);
		snprintf(t.site, sizeof(t.site), "%s", s->name);
		snprintf(t.region, sizeof(t.region), "%s", s->region ? s->region : "");
	}
	t.plan = l->req->plan;
	int64_t at = billing_ms(l->started_ns ? l->started_ns : c->now_ns);
	if (!priced_at(c, &t, at) || bill_usage_in_history(c, l->id))
		return NULL; /* free, or metered once already */
	t.priced = true;
	t.bought_ms = at;
	t.gpus = l->gpus;
	int64_t month_s = 30 * 86400;
	int64_t term = l->req->duration_s ? (l->req->duration_s + month_s - 1) / month_s : 1;
	t.term_months = (int)(term < 1 ? 1 : term > RATING_MAX_TERM_MONTHS ? RATING_MAX_TERM_MONTHS : term);
	t.last_post_ms = at;
	struct bill_usage *u = bill_usage_add(c, l->id);
	if (!u) {
		*oom = true;
		return NULL;
	}
	snprintf(t.lease, sizeof(t.lease), "%s", u->lease);
	*u = t;
	if (!bill_usage_push(u, at, RATING_STARTED, l->gpus, RATING_END_RELEASED) ||
	    !bill_live_add(c->billing, (int)(u - c->billing->u))) {
		*oom = true;
		return NULL;
	}
	return u;
}

void billing_lease_outage(struct ctl *c, struct ctl_lease *l, int64_t from_ns, int lost)
{
	struct bill_usage *u = c->billing && lost > 0 ? billing_usage_find(c, l->id) : NULL;
	if (!u || u->ended || !u->nev)
		return;
	int64_t from = billing_ms(from_ns), to = billing_ms(c->now_ns);
	int held = u->ev[u->nev - 1].gpus;
	if (from >= to)
		return;
	if (!bill_usage_push(u, from, RATING_SCALED, held > lost ? held - lost : 0, RATING_END_RELEASED) ||
	    !bill_usage_push(u, to, RATING_SCALED, held, RATING_END_RELEASED))
		c->fatal = true;
	bill_usage_save(c, u);
}

void billing_lease_changed(struct ctl *c, struct ctl_lease *l)
{
	if (!c->billing || instances_own_lease(c, l))
		return; /* an instance meters its lease's GPUs from "running" */
	bool live = l->state == LS_ACTIVE || l->state == LS_PREEMPTING;
	bool ended = l->state == LS_RELEASED || l->state == LS_EXPIRED ||
		     l->state == LS_PREEMPTED || l->state == LS_FAILED;
	struct bill_usage *u = billing_usage_find(c, l->id);
	if (live && !u) {
		bool oom;
		if (l->gpus == 0)
			return; /* CPU and memory only: GPU-hours are what is billed */
		if ((u = usage_start(c, l, &oom)))
			bill_usage_save(c, u);
		else if (oom)
			c->fatal = true;
		return;
	}
	if (!u || u->ended)
		return;
	if (live && u->ev[u->nev - 1].gpus != l->gpus) {
		if (!bill_usage_push(u, billing_ms(c->now_ns), RATING_SCALED, l->gpus, RATING_END_RELEASED))
			c->fatal = true;
		bill_usage_save(c, u);
	} else if (ended) {
		int last = u->ev[u->nev - 1].gpus;
		if (!bill_usage_push(u, billing_ms(l->ended_ns ? l->ended_ns : c->now_ns), RATING_ENDED, last,
				end_of(l->state)))
			c->fatal = true;
		u->ended = true;
		bill_live_del(c->billing, (int)(u - c->billing->u));
		bill_post_charge(c, u);
		bill_usage_retire(c, u);
	}
}

/* ---- balance rules ---- */

static int64_t first_hour_min(struct ctl *c, const struct lease_req *r, bool *any)
{
	struct ctl_billing *b = c->billing;
	enum plan plan = r->plan; /* hourly or spot: billing_can_start skips monthly */
	int64_t best = 0;
	*any = false;
	size_t n = r->nmodels ? (size_t)r->nmodels : catalog_gpu_count();
	for (size_t i = 0; i < n; i++) {
		const char *m = r->nmodels ? lease_req_model(r, (int)i) : catalog_gpu_at(i)->name;
		struct price_key k = {r->site[0] ? r->site : NULL, r->region[0] ? r->region : NULL, m,
				      plan};
		int64_t cost;
		struct sl_diag d;
		sl_diag_clear(&d);
		/* A share of one GPU is billed as the whole GPU it runs on (docs/billing.md) */
		int gpus = r->gpu_milli > 0 ? 1 : r->gpus;
		if (rating_first_hour(b->prices, &k, gpus, billing_ms(c->now_ns), &cost, &d))
			continue;
		if (!*any || cost < best)
			best = cost;
		*any = true;
	}
	return best;
}

enum sl_err billing_can_start(struct ctl *c, const char *tenant, const struct lease_req *r,
			      struct sl_diag *d)
{
	struct ctl_billing *b = c->billing;
	if (!b || r->plan == PLAN_MONTHLY || (r->gpus == 0 && r->gpu_milli == 0))
		return SL_OK;
	bool any;
	int64_t cost = first_hour_min(c, r, &any);
	if (!any)
		return SL_OK; /* no price applies: it runs free */
	int64_t bal = billing_balance_now(c, tenant, NULL);
	int64_t line = ledger_credit_line(b->ledger, tenant);
	if (acct_may_start(bal + line, true, cost))
		return SL_OK;
	char sb[MONEY_FMT_SIZE] = "?", sl[MONEY_FMT_SIZE] = "?", sc[MONEY_FMT_SIZE] = "?";
	struct sl_diag ignore;
	if (money_format(bal, b->cur, sb, sizeof(sb), &ignore) ||
	    money_format(line, b->cur, sl, sizeof(sl), &ignore) ||
	    money_format(cost, b->cur, sc, sizeof(sc), &ignore))
		sl_log_warn("amount out of range", "tenant=%s", tenant);
	sl_diag_hint(d, "top up with 'suanli topup --tenant %s --amount FEN' or ask for a credit line",
		     tenant);
	return sl_diag_set(d, SL_EFUNDS,
			   "tenant %s's balance %s %s plus credit line %s %s does not cover the first "
			   "hour of this lease (%d GPUs: %s %s)",
			   tenant, sb, b->cur->code, sl, b->cur->code,
			   r->gpu_milli > 0 ? 1 : r->gpus, sc, b->cur->code);
}

/* Stops a running lease because its tenant's balance ran out. */
static void stop_lease(struct ctl *c, struct ctl_lease *l, const char *why)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	if (!c->sched)
		return; /* billing_tick runs from the loop, after ctl_sched_start */
	lease_set_end_reason(l, "%s", why);
	if (ctl_sched_check(c, sched_release(c->sched, l->seq, c->now_ns, &d), "sched_release"))
		sl_log_error("balance stop failed", "lease=%s error=%s", l->id, d.msg);
	lease_set_end_reason(l, NULL);
}

/* Adds a history entry to each running priced lease of tenant (or stops
 * them when stop is true). */
static void tenant_leases(struct ctl *c, const char *tenant, const char *msg, bool stop)
{
	struct ctl_billing *b = c->billing;
	/* Stopping ends records (they leave b->u); collect lease ids first. */
	int n = 0;
	char (*ids)[RATING_ID_MAX] = malloc((size_t)(b->nlive ? b->nlive : 1) * sizeof(*ids));
	if (!ids) {
		c->fatal = true;
		return;
	}
	for (int k = 0; k < b->nlive; k++) {
		const struct bill_usage *u = &b->u[b->live[k]];
		if (!u->ended && u->priced && acct_plan_pay_as_you_go(u->plan) &&
		    !strcmp(u->tenant, tenant))
			memcpy(ids[n++], u->lease, RATING_ID_MAX);
	}
	for (int k = 0; k < n; k++) {
		struct ctl_lease *l = ctl_lease_find(c, ids[k]);
		if (!l || (l->state != LS_ACTIVE && l->state != LS_PREEMPTING))
			continue;
		if (stop) {
			stop_lease(c, l, msg);
		} else {
			ctl_lease_set_state(c, l, l->state, msg);
			ctl_lease_save(c, l);
		}
	}
	free(ids);
}

static void tenant_rules(struct ctl *c, const char *tenant, int64_t now)
{
	struct ctl_billing *b = c->billing;
	int64_t avail = billing_balance_now(c, tenant, NULL) + ledger_credit_line(b->ledger, tenant);
	struct bill_tenant *t = billing_tenant(c, tenant, avail <= 0);
	char msg[256], when[32];
	if (!t)
		return;
	switch (acct_balance_step(avail, b->grace_ms, now, &t->grace_since_ms, &t->stopped_ms)) {
	case ACCT_FUNDED:
	case ACCT_IN_GRACE:
		break;
	case ACCT_RESTORED:
		tenant_save(c, t);
		tenant_leases(c, tenant, "balance restored: the grace period is over, the lease keeps running",
			      false);
		sl_log_info("balance restored", "tenant=%s", tenant);
		break;
	case ACCT_GRACE_STARTS:
		ctl_time_fmt(acct_grace_until(t->grace_since_ms, b->grace_ms) * 1000000, when);
		snprintf(msg, sizeof(msg),
			 "balance exhausted: the lease stops at %s (grace period) unless the tenant tops up",
			 when);
		tenant_save(c, t);
		tenant_leases(c, tenant, msg, false);
		sl_log_info("balance exhausted", "tenant=%s grace_until=%s", tenant, when);
		break;
	case ACCT_STOP:
		tenant_save(c, t);
		tenant_leases(c, tenant, "stopped: balance exhausted and the grace period ended", true);
		instances_balance_stop(c, tenant, "stopped: balance exhausted and the grace period ended; disks kept");
		sl_log_info("leases stopped for balance", "tenant=%s", tenant);
		break;
	}
}

/* ---- hosting: colocated servers pay a monthly fee ---- */

/* Meters the fleet's colocated servers as usage records "host.<node>" of
 * plan hosting (one "GPU" = one server): a record starts when its node is
 * owned and a hosting price applies, and ends when the node leaves the fleet
 * or changes owner. The fleet can change under any request, so this runs
 * from the loop (only once a hosting price exists). A node that comes back
 * after its record ended is not metered again (one record per node id). */
static void hosting_sync(struct ctl *c)
{
	struct ctl_billing *b = c->billing;
	const struct fleet *f = c->fleet;
	int64_t now = billing_ms(c->now_ns);
	for (int k = b->nlive - 1; k >= 0; k--) {
		struct bill_usage *u = &b->u[b->live[k]];
		if (u->plan != PLAN_HOSTING)
			continue;
		const char *node = acct_hosting_node(u->lease);
		int n = node ? fleet_find_node(f, node) : -1;
		const char *owner = n >= 0 && f->nodes[n].owner >= 0 ? f->owners[f->nodes[n].owner] : NULL;
		if (acct_hosting_continues(owner, u->tenant))
			continue;
		if (!bill_usage_push(u, now, RATING_ENDED, 1, RATING_END_RELEASED))
			c->fatal = true;
		u->ended = true;
		bill_live_del(b, (int)(u - b->u));
		bill_post_charge(c, u);
		bill_usage_retire(c, u);
	}
	for (int n = 0; n < f->nnodes; n++) {
		const struct fleet_node *fn = &f->nodes[n];
		char id[RATING_ID_MAX];
		if (fn->owner < 0)
			continue;
		acct_hosting_id(fn->name, id, sizeof(id));
		if (billing_usage_find(c, id))
			continue;
		struct bill_usage t;
		memset(&t, 0, sizeof(t));
		snprintf(t.tenant, sizeof(t.tenant), "%s", f->owners[fn->owner]);
		snprintf(t.site, sizeof(t.site), "%s", f->sites[fn->site].name);
		snprintf(t.region, sizeof(t.region), "%s",
			 f->sites[fn->site].region ? f->sites[fn->site].region : "");
		t.plan = PLAN_HOSTING;
		if (!priced_at(c, &t, now) || bill_usage_in_history(c, id))
			continue;
		struct bill_usage *u = bill_usage_add(c, id);
		if (!u) {
			c->fatal = true;
			return;
		}
		snprintf(t.lease, sizeof(t.lease), "%s", id);
		t.priced = true;
		t.gpus = 1;
		t.bought_ms = t.last_post_ms = now;
		*u = t;
		if (!bill_usage_push(u, now, RATING_STARTED, 1, RATING_END_RELEASED) ||
		    !bill_live_add(b, (int)(u - b->u))) {
			c->fatal = true;
			return;
		}
		bill_usage_save(c, u);
		sl_log_info("hosting metered", "node=%s tenant=%s", fn->name, u->tenant);
	}
}

static bool tenant_running(struct ctl *c, const char *tenant)
{
	struct ctl_billing *b = c->billing;
	for (int k = 0; k < b->nlive; k++) {
		const struct bill_usage *u = &b->u[b->live[k]];
		if (!u->ended && u->priced && acct_plan_pay_as_you_go(u->plan) &&
		    !strcmp(u->tenant, tenant))
			return true;
	}
	return false;
}

/* A tenant with nothing running has no grace period to count down. */
static void tenant_idle(struct ctl *c, const char *tenant)
{
	struct bill_tenant *t = billing_tenant(c, tenant, false);
	if (t && acct_idle(&t->grace_since_ms))
		tenant_save(c, t);
}

void billing_tick(struct ctl *c)
{
	struct ctl_billing *b = c->billing;
	if (!b || c->fatal)
		return;
	int64_t now = billing_ms(c->now_ns);
	bool running = false;
	for (int k = 0; k < b->nlive && !running; k++)
		running = b->u[b->live[k]].priced;
	bool grace = false;
	for (int i = 0; i < b->nt && !grace; i++)
		grace = b->t[i].grace_since_ms != 0;
	if (!running && !grace && !b->has_hosting)
		return;
	if (now >= b->next_ms) {
		b->next_ms = now + BILLING_TICK_MS;
		if (b->has_hosting)
			hosting_sync(c);
		for (int k = 0; k < b->nlive; k++) {
			struct bill_usage *u = &b->u[b->live[k]];
			if (!u->ended && u->priced && acct_charge_due(u->last_post_ms, now)) {
				int64_t before = u->charged;
				bill_post_charge(c, u);
				if (u->charged != before)
					bill_usage_save(c, u); /* what is charged survives a restart */
			}
		}
		for (int i = 0; i < c->tenants.ntenants && !c->fatal; i++)
			if (tenant_running(c, c->tenants.tenants[i].name))
				tenant_rules(c, c->tenants.tenants[i].name, now);
			else
				tenant_idle(c, c->tenants.tenants[i].name);
	}
	int64_t at = b->next_ms * 1000000;
	if (!c->next_deadline || at < c->next_deadline)
		c->next_deadline = at;
}

/* ---- prices ---- */

static json_t *price_row(const struct price_entry *e)
{
	char from[CAL_RFC3339_SIZE] = "";
	struct cal_zone utc;
	struct sl_diag d;
	cal_zone_utc(&utc);
	if (cal_format_rfc3339(e->from_ms, &utc, from, sizeof(from), &d))
		from[0] = 0;
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I}", "scope", price_scope_name(e->scope),
			 "scope_name", e->scope_name, "model", e->model, "plan",
			 plan_name(e->plan), "from", from, "from_ms", (json_int_t)e->from_ms,
			 "price", (json_int_t)e->price);
}

enum sl_err billing_price_add(struct ctl *c, const struct price_entry *e, struct sl_diag *d)
{
	struct ctl_billing *b = c->billing;
	enum sl_err r = pricebook_set(b->prices, e, billing_ms(c->now_ns), d);
	if (r)
		return r;
	char id[32];
	if (e->plan == PLAN_HOSTING)
		b->has_hosting = true;
	snprintf(id, sizeof(id), "pr-%010llu", (unsigned long long)++b->price_seq);
	ctl_put(c, STORE_PRICES, id, NULL, price_row(e));
	return SL_OK;
}

/* ---- lifecycle ---- */

/* Every stored amount is in the currency the store was first served with;
 * serving it with another would silently change what they mean. */
static enum sl_err currency_fixed(struct ctl *c, struct sl_diag *d)
{
	const char *code = c->billing->cur->code;
	char *cur = NULL;
	enum sl_err e = store_meta_get(c->store, "billing.currency", &cur, d);
	if (e == SL_ENOTFOUND) {
		sl_diag_clear(d);
		return ctl_meta_set(c, "billing.currency", code)
			       ? SL_OK
			       : sl_diag_set(d, SL_EIO, "could not store the billing currency");
	}
	if (!e && strcmp(cur, code)) {
		sl_diag_hint(d, "serve it with --currency %s", cur);
		e = sl_diag_set(d, SL_ECONFLICT, "this store bills in %s, not %s", cur, code);
	}
	free(cur);
	return e;
}

/* The ledger of a store without account rows (from before schema 9, or
 * new): every posting replayed once more, then the accounts and post_seq
 * stored, each posting row's updated_ns set to its seq (statement order) and
 * the live records' charges saved, so later starts load the snapshot. */
static enum sl_err snapshot_build(struct ctl *c, struct sl_diag *d)
{
	struct ctl_billing *b = c->billing;
	struct post_rows rows = {0};
	enum sl_err e = store_scan(c->store, STORE_POSTINGS, load_posting, &rows, d);
	if (!e && rows.n)
		qsort(rows.v, rows.n, sizeof(*rows.v), cmp_post);
	for (int i = 0; i < b->nu; i++)
		b->u[i].charged = 0; /* summed from the charges below */
	for (size_t i = 0; !e && i < rows.n; i++) {
		const struct ledger_posting *p = &rows.v[i].p;
		e = ledger_apply(b->ledger, p, NULL, d);
		if (rows.v[i].seq > b->post_seq)
			b->post_seq = rows.v[i].seq;
		if (!e && !bill_posting_put(c, p, rows.v[i].seq))
			e = sl_diag_set(d, SL_EIO, "could not store posting %s", p->id);
		if (!e && (p->type == LEDGER_CHARGE || p->type == LEDGER_HOSTING_FEE) &&
		    !strncmp(p->id, "chg.", 4)) {
			char lease[RATING_ID_MAX];
			const char *dot = strrchr(p->id, '.');
			size_t len = (size_t)(dot - (p->id + 4));
			if (len < sizeof(lease)) {
				memcpy(lease, p->id + 4, len);
				lease[len] = 0;
				struct bill_usage *u = billing_usage_find(c, lease);
				if (u) {
					u->charged += p->amount;
					u->last_post_ms = p->at_ms;
				}
			}
		}
	}
	if (!e) {
		bill_accounts_save_all(c);
		for (int i = 0; i < b->nu; i++)
			bill_usage_save(c, &b->u[i]);
		if (!ctl_meta_set(c, "billing.snapshot", "1") || c->fatal)
			e = sl_diag_set(d, SL_EIO, "could not store the ledger's accounts");
		else if (rows.n)
			sl_log_info("ledger accounts built from postings", "postings=%zu accounts=%zu",
				    rows.n, ledger_account_count(b->ledger));
	}
	free(rows.v);
	if (!e && ledger_forget_postings(b->ledger))
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	return e;
}

enum sl_err billing_start(struct ctl *c, const struct billing_opts *o, struct sl_diag *d)
{
	struct ctl_billing *b = calloc(1, sizeof(*b));
	if (!b)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	c->billing = b;
	enum sl_err e = money_currency_get(o->currency ? o->currency : "CNY", &b->cur, d);
	if (!e && o->zone)
		e = cal_zone_parse(o->zone, &b->zone, d);
	else if (!e)
		cal_zone_utc(&b->zone);
	b->grace_ms = (o->grace_s >= 0 ? o->grace_s : BILLING_GRACE_DEFAULT_S) * 1000;
	if (!e && ((e = pricebook_new(&b->prices)) || (e = ledger_new(&b->ledger)) ||
		   (e = strmap_new(&b->u_by_lease)) || (e = strmap_new(&b->t_by_name)) ||
		   (e = strmap_new(&b->hist_ids))))
		sl_diag_set(d, e, "out of memory");
	if (!e)
		e = currency_fixed(c, d);
	if (!e)
		e = store_scan(c->store, STORE_PRICES, load_price, c, d);
	if (!e)
		e = store_scan(c->store, STORE_USAGE, load_usage, c, d);
	if (!e)
		e = ctl_hist_move(c, STORE_USAGE, STORE_USAGE_HISTORY, &b->moves, d);
	ctl_hist_release(&b->moves);
	if (!e)
		e = store_scan(c->store, STORE_BILLING, load_tenant_state, c, d);
	/* The ledger: its stored accounts (billing_store.c), not its postings. */
	char *snap = NULL;
	if (!e) {
		e = store_meta_get(c->store, "billing.snapshot", &snap, d);
		if (e == SL_ENOTFOUND) {
			sl_diag_clear(d);
			e = snapshot_build(c, d);
		} else if (!e) {
			e = bill_accounts_load(c, d);
		}
	}
	free(snap);
	/* Running leases from before billing existed start being metered now. */
	for (int i = 0; !e && i < c->lt.nleases; i++) {
		struct ctl_lease *l = c->lt.leases[i];
		if (l && (l->state == LS_ACTIVE || l->state == LS_PREEMPTING) &&
		    !billing_usage_find(c, l->id))
			billing_lease_changed(c, l);
	}
	return e;
}

void billing_free(struct ctl *c)
{
	struct ctl_billing *b = c->billing;
	if (!b)
		return;
	for (int i = 0; i < b->nu; i++)
		free(b->u[i].ev);
	free(b->u);
	free(b->live);
	free(b->t);
	strmap_free(b->u_by_lease);
	strmap_free(b->t_by_name);
	strmap_free(b->hist_ids);
	pricebook_free(b->prices);
	ledger_free(b->ledger);
	free(b);
	c->billing = NULL;
}

/* h_billing.c - the billing API: prices, top-ups, credits, credit lines,
 * balances, invoices, usage and revenue.
 *
 * Amounts cross the API as JSON integers in minor units (fen), never as
 * decimals, so nothing is rounded on the way in; a fraction, a string or a
 * negative amount is refused with 400 and nothing changes. Invoices are
 * computed on request from the usage records and the price book by the core
 * (invoice.h) and sent as its bytes, so regenerating one gives the same
 * bytes. Tenant-scoped callers see their own tenant only: another tenant's
 * balance or invoice is the same 404 as a tenant that does not exist. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing.h"
#include "billing_int.h"
#include "catalog.h"
#include "ctl_int.h"
#include "instances.h"
#include "invoice.h"
#include "log.h"

const struct ctl_tenant *billing_path_tenant(struct ctl_call *call, const char *name)
{
	const char *own = ctl_call_tenant(call);
	const struct ctl_tenant *t = ctl_tenant_find(call->ctl, name);
	if (!t || (own && strcmp(own, t->name))) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "no tenant called '%.64s'", name);
		ctl_answer_error(call, SL_ENOTFOUND, msg, NULL);
		return NULL;
	}
	return t;
}

static json_t *money_json(struct ctl *c, int64_t amount)
{
	char buf[MONEY_FMT_SIZE];
	struct sl_diag d;
	if (money_format(amount, c->billing->cur, buf, sizeof(buf), &d))
		return json_null();
	return json_string(buf);
}

static json_t *ms_json(int64_t ms)
{
	return ctl_time_json(ms * 1000000);
}

static json_t *balance_json(struct ctl *c, const char *tenant)
{
	struct ctl_billing *b = c->billing;
	int64_t unposted, bal = billing_balance_now(c, tenant, &unposted);
	int64_t line = ledger_credit_line(b->ledger, tenant);
	const struct bill_tenant *t = billing_tenant(c, tenant, false);
	const char *state = t && t->grace_since_ms ? "grace" : "ok";
	json_t *o = json_pack("{s:s, s:s, s:I, s:o, s:I, s:I, s:I, s:s}", "tenant", tenant,
			      "currency", b->cur->code, "balance", (json_int_t)bal, "balance_text",
			      money_json(c, bal), "credit_line", (json_int_t)line, "available",
			      (json_int_t)(bal + line), "unposted_usage", (json_int_t)unposted,
			      "state", state);
	if (o) {
		json_object_set_new(o, "grace_since",
				    ms_json(t && t->grace_since_ms ? t->grace_since_ms : 0));
		json_object_set_new(o, "grace_until",
				    ms_json(t && t->grace_since_ms ? t->grace_since_ms + b->grace_ms : 0));
		json_object_set_new(o, "last_stopped", ms_json(t ? t->stopped_ms : 0));
		json_object_set_new(o, "grace_period_s", json_integer(b->grace_ms / 1000));
	}
	return o;
}

/* A positive (or, with zero_ok, non-negative) whole amount of minor units;
 * answers 400 otherwise. */
static bool amount_field(struct ctl_call *call, const char *name, bool zero_ok, int64_t *out)
{
	json_int_t v = json_integer_value(json_object_get(call->body, name));
	char msg[SL_DIAG_MSG];
	if (v < (zero_ok ? 0 : 1) || v > MONEY_MAX) {
		snprintf(msg, sizeof(msg), "field '%s' must be a whole number of minor units %s..%lld, got %lld",
			 name, zero_ok ? "0" : "1", (long long)MONEY_MAX, (long long)v);
		ctl_answer_error(call, SL_EINVAL, msg, "amounts are integers in fen (1 CNY = 100)");
		return false;
	}
	*out = v;
	return true;
}

/* ---- prices ---- */

void h_price_set(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {
		{"model", FT_STRING, false}, {"plan", FT_STRING, true}, {"price", FT_INT, true},
		{"region", FT_STRING, false}, {"site", FT_STRING, false}, {"from", FT_STRING, false},
		{"currency", FT_STRING, false}};
	struct ctl *c = call->ctl;
	struct ctl_billing *b = c->billing;
	struct sl_diag d;
	char msg[SL_DIAG_MSG];
	sl_diag_clear(&d);
	if (!ctl_check_fields(call, call->body, fields, sizeof(fields) / sizeof(fields[0]), "a price"))
		return;
	const json_t *o = call->body;
	const char *model = json_string_value(json_object_get(o, "model"));
	const char *region = json_string_value(json_object_get(o, "region"));
	const char *site = json_string_value(json_object_get(o, "site"));
	const char *from = json_string_value(json_object_get(o, "from"));
	const char *cur = json_string_value(json_object_get(o, "currency"));
	enum plan plan;
	if (plan_parse(json_string_value(json_object_get(o, "plan")), &plan, &d)) {
		ctl_answer_diag(call, SL_EINVAL, &d);
		return;
	}
	if (cur && strcmp(cur, b->cur->code)) {
		const struct money_currency *mc;
		if (money_currency_get(cur, &mc, &d)) {
			ctl_answer_diag(call, SL_EINVAL, &d);
			return;
		}
		snprintf(msg, sizeof(msg), "this controller bills in %s, not %s", b->cur->code, cur);
		ctl_answer_error(call, SL_EINVAL, msg, "suanlid serve --currency sets it");
		return;
	}
	if (!plan_has_model(plan)) {
		if (model) {
			snprintf(msg, sizeof(msg), "a %s price is per %s, not per GPU model",
				 plan_name(plan), plan == PLAN_HOSTING ? "server"
						  : plan == PLAN_STORAGE ? "GiB-month of data disk"
									 : "instance-hour");
			ctl_answer_error(call, SL_EINVAL, msg, "leave out 'model' with this plan");
			return;
		}
		model = "";
	} else if (!model || !catalog_gpu_find(model)) {
		snprintf(msg, sizeof(msg), "%s GPU model%s%.64s%s", model ? "unknown" : "missing",
			 model ? " '" : "", model ? model : "", model ? "'" : "");
		char names[SL_DIAG_HINT - 16], hint[SL_DIAG_HINT];
		(void)catalog_gpu_names(names, sizeof(names));
		snprintf(hint, sizeof(hint), "known models: %s", names);
		ctl_answer_error(call, SL_EINVAL, msg, hint);
		return;
	}
	if (region && site) {
		ctl_answer_error(call, SL_EINVAL, "give 'region' or 'site', not both", NULL);
		return;
	}
	int64_t price;
	if (!amount_field(call, "price", true, &price))
		return;
	int64_t now = billing_ms(c->now_ns), at = now;
	if (from && cal_parse_rfc3339(from, &at, &d)) {
		ctl_answer_diag(call, SL_EINVAL, &d);
		return;
	}
	if (at < now) {
		char nows[32];
		ctl_time_fmt(c->now_ns, nows);
		snprintf(msg, sizeof(msg),
			 "effective-from %.64s is in the past (now %s): it would re-price time already used",
			 from, nows);
		ctl_answer_error(call, SL_EINVAL, msg, "give an instant from now on, or leave out 'from'");
		return;
	}
	struct price_entry e;
	enum sl_err r = price_entry_init(&e, site ? PRICE_SITE : region ? PRICE_REGION : PRICE_GLOBAL,
					 site ? site : region ? region : "", model, plan, at, price, &d);
	if (!r)
		r = billing_price_add(c, &e, &d);
	if (r) {
		ctl_answer_diag(call, r, &d);
		return;
	}
	sl_log_info("price set", "model=%s plan=%s price=%lld by=%s", model, plan_name(plan),
		    (long long)price, call->tok->id);
	json_t *row = json_pack("{s:s, s:s, s:s, s:s, s:o, s:I, s:I, s:s}", "scope",
				price_scope_name(e.scope), "scope_name", e.scope_name, "model", e.model,
				"plan", plan_name(e.plan), "from", ms_json(e.from_ms), "from_ms",
				(json_int_t)e.from_ms, "price", (json_int_t)e.price, "currency",
				b->cur->code);
	ctl_answer_json(call, 201, row);
}

static bool same_key(const struct price_entry *a, const struct price_entry *b)
{
	return a->scope == b->scope && a->plan == b->plan && !strcmp(a->scope_name, b->scope_name) &&
	       !strcmp(a->model, b->model);
}

void h_price_list(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct ctl_billing *b = c->billing;
	const char *h = http_request_param(call->req, "history");
	bool history = h && (!strcmp(h, "true") || !strcmp(h, "1"));
	int64_t now = billing_ms(c->now_ns);
	json_t *a = json_array();
	size_t n = pricebook_count(b->prices);
	for (size_t i = 0; a && i < n; i++) {
		const struct price_entry *e = pricebook_entry(b->prices, i);
		const struct price_entry *next = i + 1 < n ? pricebook_entry(b->prices, i + 1) : NULL;
		bool superseded = next && same_key(e, next) && next->from_ms <= now;
		bool in_force = e->from_ms <= now && !superseded;
		if (!history && superseded)
			continue;
		json_array_append_new(
			a, json_pack("{s:s, s:s, s:s, s:s, s:o, s:I, s:I, s:b}", "scope",
				     price_scope_name(e->scope), "scope_name", e->scope_name, "model",
				     e->model, "plan", plan_name(e->plan), "from",
				     ms_json(e->from_ms), "from_ms", (json_int_t)e->from_ms, "price",
				     (json_int_t)e->price, "in_force", in_force));
	}
	ctl_answer_json(call, 200,
			json_pack("{s:s, s:s, s:o}", "currency", b->cur->code, "zone", b->zone.name,
				  "prices", a));
}

/* ---- money in ---- */

static void post_and_answer(struct ctl_call *call, const struct ctl_tenant *t,
			    enum ledger_type type, const char *prefix, int64_t amount,
			    const char *reason, int status)
{
	struct ctl *c = call->ctl;
	struct ledger_posting p;
	struct sl_diag d;
	char id[LEDGER_ID_MAX];
	sl_diag_clear(&d);
	billing_next_id(c, prefix, id, sizeof(id));
	enum sl_err e = ledger_posting_init(&p, id, type, t->name, PLAN_HOURLY, amount,
					    billing_ms(c->now_ns), reason, &d);
	if (!e)
		e = billing_post(c, &p, NULL, &d);
	if (e) {
		ctl_answer_diag(call, e, &d);
		return;
	}
	sl_log_info("posting", "id=%s type=%s tenant=%s amount=%lld by=%s", id,
		    ledger_type_name(type), t->name, (long long)amount, call->tok->id);
	json_t *o = balance_json(c, t->name);
	if (o)
		json_object_set_new(o, "posting",
				    json_pack("{s:s, s:s, s:I, s:o, s:s}", "id", p.id, "type",
					      ledger_type_name(p.type), "amount", (json_int_t)p.amount,
					      "at", ms_json(p.at_ms), "reason", p.reason));
	ctl_answer_json(call, status, o);
}

/* The shared prelude of the money posts: the body's fields, the tenant of
 * the path, its amount (zero allowed only for credit lines) and reason
 * (NULL when absent). False once an error was answered. */
static bool money_request(struct ctl_call *call, const struct ctl_field *fields, size_t n,
			  const char *what, bool zero_ok, const struct ctl_tenant **t,
			  int64_t *amount, const char **reason)
{
	bool bad = false;
	if (!ctl_check_fields(call, call->body, fields, n, what))
		return false;
	*t = billing_path_tenant(call, call->param[0]);
	if (!*t || !amount_field(call, "amount", zero_ok, amount))
		return false;
	*reason = ctl_str_field(call, call->body, "reason", LEDGER_REASON_MAX - 1, &bad);
	return !bad;
}

void h_topup(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {{"amount", FT_INT, true},
						  {"reason", FT_STRING, false}};
	const struct ctl_tenant *t;
	int64_t amount;
	const char *reason;
	if (money_request(call, fields, 2, "a top-up", false, &t, &amount, &reason))
		post_and_answer(call, t, LEDGER_TOPUP, "top", amount, reason ? reason : "top-up",
				201);
}

void h_credit(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {
		{"amount", FT_INT, true}, {"reason", FT_STRING, true}, {"refund", FT_BOOL, false}};
	const struct ctl_tenant *t;
	int64_t amount;
	const char *reason;
	if (!money_request(call, fields, 3, "a credit", false, &t, &amount, &reason) || !reason)
		return;
	bool refund = json_is_true(json_object_get(call->body, "refund"));
	post_and_answer(call, t, refund ? LEDGER_REFUND : LEDGER_CREDIT, refund ? "ref" : "crd",
			amount, reason, 201);
}

void h_credit_line(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {{"amount", FT_INT, true},
						  {"reason", FT_STRING, false}};
	struct ctl *c = call->ctl;
	const struct ctl_tenant *t;
	int64_t amount;
	const char *reason;
	if (!money_request(call, fields, 2, "a credit line", true, &t, &amount, &reason))
		return;
	int64_t cur = ledger_credit_line(c->billing->ledger, t->name);
	if (amount == cur) {
		ctl_answer_json(call, 200, balance_json(c, t->name));
		return;
	}
	post_and_answer(call, t, amount > cur ? LEDGER_CREDIT_LINE_UP : LEDGER_CREDIT_LINE_DOWN,
			"cl", amount > cur ? amount - cur : cur - amount,
			reason ? reason : "credit line set", 200);
}

void h_balance(struct ctl_call *call)
{
	const struct ctl_tenant *t = billing_path_tenant(call, call->param[0]);
	if (!t)
		return;
	json_t *o = balance_json(call->ctl, t->name);
	/* What its instances still cost, stopped ones included (instances.h). */
	json_t *in = o ? instances_balance_json(call->ctl, t->name) : NULL;
	if (in)
		json_object_update(o, in);
	json_decref(in);
	ctl_answer_json(call, 200, o);
}

/* ---- invoices, usage, revenue ---- */

/* The rating inputs of tenant's priced leases (all tenants' when NULL): the
 * running ones from memory, the ended ones from the history (read into *hist,
 * which the answer borrows; bill_usages_release). NULL on error. */
static struct rating_lease *priced_leases(struct ctl *c, const char *tenant, struct bill_usages *hist,
					  size_t *n)
{
	struct ctl_billing *b = c->billing;
	struct sl_diag d;
	sl_diag_clear(&d);
	memset(hist, 0, sizeof(*hist));
	*n = 0;
	if (bill_hist_read(c, tenant, hist, &d)) {
		sl_log_error("usage history unreadable", "error=%s", d.msg);
		return NULL;
	}
	struct rating_lease *v = calloc((size_t)b->nu + hist->n + 1, sizeof(*v));
	for (int i = 0; v && i < b->nu; i++)
		if (b->u[i].priced && b->u[i].nev && (!tenant || !strcmp(b->u[i].tenant, tenant)))
			billing_rating_lease(&b->u[i], &v[(*n)++]);
	for (size_t i = 0; v && i < hist->n; i++)
		if (hist->v[i].priced && hist->v[i].nev)
			billing_rating_lease(&hist->v[i], &v[(*n)++]);
	return v;
}

static bool add_credit(void *arg, const struct ledger_posting *p, uint64_t seq)
{
	(void)seq;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (p->type == LEDGER_CREDIT || p->type == LEDGER_REFUND)
		return ledger_apply(arg, p, NULL, &d) == SL_OK;
	return true;
}

/* A ledger of tenant's credits and refunds, read from the stored postings
 * (the invoice's credit lines); NULL on error. */
static struct ledger *tenant_credits(struct ctl *c, const char *tenant)
{
	struct ledger *l = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (ledger_new(&l))
		return NULL;
	if (bill_postings_since(c, tenant, 0, add_credit, l, &d)) {
		sl_log_error("postings unreadable", "tenant=%s error=%s", tenant, d.msg);
		ledger_free(l);
		return NULL;
	}
	return l;
}

static bool month_param(struct ctl_call *call, const char *s, struct cal_month *m)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	if (cal_month_parse(s, m, &d)) {
		ctl_answer_diag(call, SL_EINVAL, &d);
		return false;
	}
	return true;
}

static void invoice_input(struct ctl *c, struct invoice_input *in, const char *tenant,
			  struct cal_month m, const struct rating_lease *v, size_t n,
			  const struct ledger *credits)
{
	struct ctl_billing *b = c->billing;
	memset(in, 0, sizeof(*in));
	in->tenant = tenant;
	in->month = m;
	in->zone = &b->zone;
	in->currency = b->cur;
	in->prices = b->prices;
	in->leases = v;
	in->nleases = n;
	in->ledger = credits;
	in->now_ms = billing_ms(c->now_ns);
}

void h_invoice(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	const struct ctl_tenant *t = billing_path_tenant(call, call->param[0]);
	struct cal_month m;
	if (!t || !month_param(call, call->param[1], &m))
		return;
	const char *fmt = http_request_param(call->req, "format");
	bool csv = fmt && !strcmp(fmt, "csv");
	if (fmt && !csv && strcmp(fmt, "json")) {
		ctl_answer_error(call, SL_EINVAL, "format must be json or csv", NULL);
		return;
	}
	size_t n;
	struct bill_usages hist;
	struct rating_lease *v = priced_leases(c, t->name, &hist, &n);
	struct ledger *credits = v ? tenant_credits(c, t->name) : NULL;
	struct invoice_input in;
	struct invoice inv;
	struct sl_diag d;
	char *out = NULL;
	size_t len = 0;
	sl_diag_clear(&d);
	invoice_input(c, &in, t->name, m, v, n, credits);
	invoice_init(&inv);
	enum sl_err e = v && credits ? invoice_build(&inv, &in, &d)
				     : sl_diag_set(&d, SL_EIO, "the billing history could not be read");
	if (!e)
		e = csv ? invoice_csv(&inv, &out, &len, &d) : invoice_json(&inv, &out, &len, &d);
	invoice_release(&inv);
	free(v);
	ledger_free(credits);
	bill_usages_release(&hist);
	if (e) {
		ctl_answer_diag(call, e, &d);
		return;
	}
	ctl_answer(call, 200, csv ? "text/csv" : "application/json", out, len);
}

/* GPU-ms of u up to to_ms, from its events. */
static int64_t gpu_ms(const struct bill_usage *u, int64_t to_ms)
{
	int64_t sum = 0;
	for (size_t i = 0; i < u->nev; i++) {
		if (u->ev[i].kind == RATING_ENDED)
			break;
		int64_t end = i + 1 < u->nev ? u->ev[i + 1].at_ms : to_ms;
		if (end > to_ms)
			end = to_ms;
		if (end > u->ev[i].at_ms)
			sum += (end - u->ev[i].at_ms) * u->ev[i].gpus;
	}
	return sum;
}

static json_t *tenant_usage(struct ctl *c, const char *tenant, struct cal_month m)
{
	struct ctl_billing *b = c->billing;
	int64_t now = billing_ms(c->now_ns);
	json_t *run = json_array();
	for (int k = 0; run && k < b->nlive; k++) {
		const struct bill_usage *u = &b->u[b->live[k]];
		if (u->ended || strcmp(u->tenant, tenant))
			continue;
		json_array_append_new(
			run, json_pack("{s:s, s:s, s:s, s:i, s:o, s:I, s:I, s:b}", "lease", u->lease,
				       "model", u->model, "plan", plan_name(u->plan), "gpus",
				       u->ev[u->nev - 1].gpus, "started_at", ms_json(u->ev[0].at_ms),
				       "gpu_ms", (json_int_t)gpu_ms(u, now), "amount",
				       (json_int_t)billing_accrued(c, u, now), "priced", u->priced));
	}
	size_t n;
	struct bill_usages hist;
	struct rating_lease *v = priced_leases(c, tenant, &hist, &n);
	struct ledger *credits = v ? tenant_credits(c, tenant) : NULL;
	struct invoice_input in;
	struct invoice inv;
	struct sl_diag d;
	sl_diag_clear(&d);
	invoice_input(c, &in, tenant, m, v, n, credits);
	invoice_init(&inv);
	int64_t gms = 0;
	json_t *mtd = NULL;
	if (v && credits && !invoice_build(&inv, &in, &d)) {
		for (size_t i = 0; i < inv.nlines; i++)
			if (inv.lines[i].kind == INVOICE_USAGE)
				gms += inv.lines[i].quantity;
		mtd = json_pack("{s:I, s:I, s:I, s:I, s:I}", "gpu_ms", (json_int_t)gms, "usage",
				(json_int_t)inv.usage, "monthly", (json_int_t)inv.monthly, "credits",
				(json_int_t)inv.credits, "total", (json_int_t)inv.total);
	}
	invoice_release(&inv);
	free(v);
	ledger_free(credits);
	bill_usages_release(&hist);
	return json_pack("{s:s, s:o, s:o, s:o}", "tenant", tenant, "running", run ? run : json_array(),
			 "month_to_date", mtd ? mtd : json_null(), "balance", balance_json(c, tenant));
}

void h_usage(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct ctl_billing *b = c->billing;
	const char *want = http_request_param(call->req, "tenant");
	const char *own = ctl_call_tenant(call);
	struct cal_month m;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (want && !billing_path_tenant(call, want))
		return;
	if (cal_month_of(&b->zone, billing_ms(c->now_ns), &m, &d)) {
		ctl_answer_diag(call, SL_EIO, &d);
		return;
	}
	char ms[CAL_MONTH_FMT_SIZE];
	cal_month_format(m, ms, sizeof(ms));
	json_t *a = json_array();
	for (int i = 0; a && i < c->tenants.ntenants; i++) {
		const char *name = c->tenants.tenants[i].name;
		if ((want && strcmp(want, name)) || (own && strcmp(own, name)))
			continue;
		json_array_append_new(a, tenant_usage(c, name, m));
	}
	ctl_answer_json(call, 200,
			json_pack("{s:o, s:s, s:s, s:s, s:o}", "as_of", ctl_time_json(c->now_ns),
				  "month", ms, "zone", b->zone.name, "currency", b->cur->code,
				  "tenants", a));
}

void h_revenue(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct cal_month m;
	if (!month_param(call, call->param[0], &m))
		return;
	size_t n, nrows = 0;
	struct bill_usages hist;
	struct rating_lease *v = priced_leases(c, NULL, &hist, &n);
	struct invoice_input in;
	struct invoice_revenue_row *rows = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	invoice_input(c, &in, NULL, m, v, n, NULL);
	enum sl_err e = v ? invoice_revenue(&in, &rows, &nrows, &d)
			  : sl_diag_set(&d, SL_EIO, "the billing history could not be read");
	free(v);
	bill_usages_release(&hist);
	if (e) {
		ctl_answer_diag(call, e, &d);
		return;
	}
	json_t *a = json_array();
	int64_t total = 0;
	for (size_t i = 0; a && i < nrows; i++) {
		total += rows[i].amount;
		json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:I, s:I}", "region", rows[i].region,
						   "model", rows[i].model, "plan",
						   plan_name(rows[i].plan), "quantity",
						   (json_int_t)rows[i].quantity, "amount",
						   (json_int_t)rows[i].amount));
	}
	free(rows);
	char ms[CAL_MONTH_FMT_SIZE];
	cal_month_format(m, ms, sizeof(ms));
	ctl_answer_json(call, 200,
			json_pack("{s:s, s:s, s:s, s:o, s:I}", "month", ms, "zone",
				  c->billing->zone.name, "currency", c->billing->cur->code, "rows", a,
				  "total", (json_int_t)total));
}

/* billing_meter.c - meters: usage that is not a lease's own (billing.h,
 * "meters"), for instances: GPU time from the instant every node reports the
 * container running to the stop, no-GPU time, and the data disk from creation
 * to release.
 *
 * A meter is a usage record like a lease's (the same table, rating, postings,
 * invoice lines and balance rules), under its own id ("in-000001.gpu"). A
 * pause is a scale to 0 units, a resume a scale back, so one record carries
 * every run of an instance and its invoice line is one per month and price:
 *   GPU:     units = GPUs, the lease's plan and model (per GPU-hour);
 *   no-gpu:  units = 1, plan no-gpu (per instance-hour, no model);
 *   storage: units = GiB, plan storage (per GiB-month of the calendar month
 *            in the billing zone, per millisecond, like hosting fees). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing.h"
#include "billing_int.h"
#include "ctl_int.h"
#include "log.h"

static bool priced(struct ctl *c, const struct billing_meter *m, int64_t at_ms, int64_t *price)
{
	struct price_key k = {m->site, m->region, m->model, m->plan};
	struct price_quote q;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (pricebook_at(c->billing->prices, &k, at_ms, &q, &d))
		return false;
	if (price)
		*price = q.price;
	return true;
}

bool billing_meter_on(struct ctl *c, const struct billing_meter *m, int64_t at_ns)
{
	struct ctl_billing *b = c->billing;
	if (!b || m->units < 1)
		return false;
	int64_t at = billing_ms(at_ns);
	struct bill_usage *u = billing_usage_find(c, m->id);
	if (u) {
		if (u->ended || !u->nev)
			return false;
		if (u->ev[u->nev - 1].gpus != m->units) {
			if (!bill_usage_push(u, at, RATING_SCALED, m->units, RATING_END_RELEASED))
				c->fatal = true;
			bill_usage_save(c, u);
		}
		return true;
	}
	if (!priced(c, m, at, NULL) || bill_usage_in_history(c, m->id))
		return false; /* runs free, like a lease no price applies to; or ended */
	if (!(u = bill_usage_add(c, m->id))) {
		c->fatal = true;
		return false;
	}
	snprintf(u->tenant, sizeof(u->tenant), "%s", m->tenant);
	snprintf(u->site, sizeof(u->site), "%s", m->site ? m->site : "");
	snprintf(u->region, sizeof(u->region), "%s", m->region ? m->region : "");
	snprintf(u->model, sizeof(u->model), "%s", m->model ? m->model : "");
	u->plan = m->plan;
	u->priced = true;
	u->bought_ms = u->last_post_ms = at;
	u->gpus = m->units;
	u->term_months = 1;
	if (!bill_usage_push(u, at, RATING_STARTED, m->units, RATING_END_RELEASED) ||
	    !bill_live_add(b, (int)(u - b->u))) {
		c->fatal = true;
		return false;
	}
	bill_usage_save(c, u);
	sl_log_info("meter started", "id=%s tenant=%s plan=%s units=%d", m->id, m->tenant,
		    plan_name(m->plan), m->units);
	return true;
}

void billing_meter_off(struct ctl *c, const char *id, int64_t at_ns)
{
	struct bill_usage *u = c->billing ? billing_usage_find(c, id) : NULL;
	if (!u || u->ended || !u->nev || u->ev[u->nev - 1].gpus == 0)
		return;
	if (!bill_usage_push(u, billing_ms(at_ns), RATING_SCALED, 0, RATING_END_RELEASED))
		c->fatal = true;
	bill_usage_save(c, u);
}

void billing_meter_end(struct ctl *c, const char *id, int64_t at_ns)
{
	struct bill_usage *u = c->billing ? billing_usage_find(c, id) : NULL;
	if (!u || u->ended || !u->nev)
		return;
	int last = u->ev[u->nev - 1].gpus;
	if (!bill_usage_push(u, billing_ms(at_ns), RATING_ENDED, last, RATING_END_RELEASED))
		c->fatal = true;
	u->ended = true;
	bill_live_del(c->billing, (int)(u - c->billing->u));
	bill_post_charge(c, u);
	bill_usage_retire(c, u);
}

int64_t billing_meter_amount(struct ctl *c, const char *id)
{
	if (!c->billing)
		return 0;
	const struct bill_usage *u = billing_usage_find(c, id);
	if (u)
		return billing_accrued(c, u, billing_ms(c->now_ns));
	/* An ended meter's record is in the history. */
	struct bill_usage h;
	bool found = false;
	if (bill_hist_get(c, id, &h, &found) || !found)
		return 0;
	int64_t amount = billing_accrued(c, &h, billing_ms(c->now_ns));
	free(h.ev);
	return amount;
}

bool billing_meter_running(struct ctl *c, const char *id)
{
	const struct bill_usage *u = c->billing ? billing_usage_find(c, id) : NULL;
	return u && !u->ended && u->nev && u->ev[u->nev - 1].gpus > 0;
}

int64_t billing_meter_per_day(struct ctl *c, const struct billing_meter *m)
{
	struct ctl_billing *b = c->billing;
	int64_t now = billing_ms(c->now_ns), price = 0, per = 0;
	if (!b || m->units < 1 || !priced(c, m, now, &price))
		return 0;
	struct sl_diag d;
	sl_diag_clear(&d);
	int64_t div = RATING_MS_PER_HOUR;
	if (m->plan == PLAN_STORAGE || m->plan == PLAN_HOSTING) {
		struct cal_month mo;
		int64_t ms0, ms1;
		if (cal_month_of(&b->zone, now, &mo, &d) || cal_month_start(&b->zone, mo, &ms0, &d) ||
		    cal_month_end(&b->zone, mo, &ms1, &d))
			return 0;
		div = ms1 - ms0;
	}
	if (money_mul_div_half_up((int64_t)m->units * 86400000, price, div, &per, &d))
		return 0;
	return per;
}

int64_t billing_available(struct ctl *c, const char *tenant)
{
	if (!c->billing)
		return INT64_MAX;
	return billing_balance_now(c, tenant, NULL) + ledger_credit_line(c->billing->ledger, tenant);
}

int64_t billing_grace_end_ns(struct ctl *c, const char *tenant)
{
	struct bill_tenant *t = c->billing ? billing_tenant(c, tenant, false) : NULL;
	if (!t || !t->grace_since_ms)
		return 0;
	return (t->grace_since_ms + c->billing->grace_ms) * 1000000;
}

const char *billing_currency(const struct ctl *c)
{
	return c->billing ? c->billing->cur->code : "CNY";
}

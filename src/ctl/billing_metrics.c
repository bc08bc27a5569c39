/* billing_metrics.c - tenants' balances against their grace in /metrics
 * (billing_metrics in billing.h): balance (the ledger's, less running usage
 * not yet posted), credit line, whether the grace period runs and how long
 * it has left before the tenant's leases are stopped.
 *
 * Built on the loop thread when scraped: one pass over the running usages
 * sums what is not yet posted per tenant (billing_balance_now per tenant
 * would cost tenants x running leases), then one line per tenant and
 * family, at most BILLING_METRICS_TENANTS_MAX tenants. Amounts are in the
 * currency's major unit (yuan, not fen), as dashboards show money. */
#include <stdlib.h>
#include <string.h>

#include "account_rules.h"
#include "billing_int.h"
#include "buf.h"
#include "ctl_int.h"

static void head(struct sl_buf *b, const char *name, const char *help)
{
	sl_buf_addf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

void billing_metrics(struct ctl *c, struct sl_buf *b)
{
	struct ctl_billing *bl = c->billing;
	const struct ctl_tenants *ts = &c->tenants;
	int n = ts->ntenants < BILLING_METRICS_TENANTS_MAX ? ts->ntenants : BILLING_METRICS_TENANTS_MAX;
	if (!bl)
		return;
	int64_t *open = calloc((size_t)n + 1, sizeof(*open));
	if (!open) {
		sl_buf_set_err(b, SL_ENOMEM);
		return;
	}
	int64_t now = billing_ms(c->now_ns);
	for (int k = 0; k < bl->nlive; k++) {
		const struct bill_usage *u = &bl->u[bl->live[k]];
		int t = strmap_get(ts->tenant_by_name, u->tenant, -1);
		if (!u->ended && u->priced && t >= 0 && t < n)
			open[t] += billing_accrued(c, u, now) - u->charged;
	}
	const char *cur = bl->cur->code;
	double unit = (double)bl->cur->unit;
	head(b, "suanli_tenant_balance", "The tenant's balance less running usage not yet posted (major unit).");
	for (int t = 0; t < n; t++)
		sl_buf_addf(b, "suanli_tenant_balance{tenant=\"%s\",currency=\"%s\"} %.2f\n", ts->tenants[t].name,
			    cur, (double)(ledger_tenant_balance(bl->ledger, ts->tenants[t].name) - open[t]) / unit);
	head(b, "suanli_tenant_credit_line", "How far below zero the tenant's balance may go (major unit).");
	for (int t = 0; t < n; t++)
		sl_buf_addf(b, "suanli_tenant_credit_line{tenant=\"%s\",currency=\"%s\"} %.2f\n",
			    ts->tenants[t].name, cur,
			    (double)ledger_credit_line(bl->ledger, ts->tenants[t].name) / unit);
	head(b, "suanli_tenant_in_grace", "1 while the tenant's balance plus credit line is exhausted and "
					  "its grace period runs.");
	for (int t = 0; t < n; t++) {
		const struct bill_tenant *bt = billing_tenant(c, ts->tenants[t].name, false);
		sl_buf_addf(b, "suanli_tenant_in_grace{tenant=\"%s\"} %d\n", ts->tenants[t].name,
			    bt && bt->grace_since_ms ? 1 : 0);
	}
	head(b, "suanli_tenant_grace_remaining_seconds",
	     "Time left before an exhausted tenant's leases are stopped (tenants in grace only).");
	for (int t = 0; t < n; t++) {
		const struct bill_tenant *bt = billing_tenant(c, ts->tenants[t].name, false);
		if (!bt || !bt->grace_since_ms)
			continue;
		int64_t left = acct_grace_until(bt->grace_since_ms, bl->grace_ms) - now;
		sl_buf_addf(b, "suanli_tenant_grace_remaining_seconds{tenant=\"%s\"} %.3f\n", ts->tenants[t].name,
			    left > 0 ? (double)left / 1e3 : 0.0);
	}
	head(b, "suanli_tenant_grace_period_seconds", "How long a tenant's grace period lasts.");
	sl_buf_addf(b, "suanli_tenant_grace_period_seconds %.3f\n", (double)bl->grace_ms / 1e3);
	free(open);
}

/* billing.h - the controller's side of money: price book, usage metering,
 * ledger, balance rules and invoices (DESIGN.md §6), over the pure core
 * (money.h, calendar.h, pricebook.h, rating.h, ledger.h, invoice.h, and
 * account_rules.h, which decides the balance, grace, stop and hosting rules).
 *
 * Private to src/ctl. State lives in memory (struct ctl_billing, owned by
 * struct ctl) and every change is written to the store in the turn's
 * transaction (tables prices, postings, usage, billing), so it commits with
 * the lease change that caused it. Metering follows lease state changes
 * through one lease-change hook (billing_lease_changed, lease.c's table);
 * the balance rules run from the loop (billing_tick). */
#ifndef SL_CTL_BILLING_H
#define SL_CTL_BILLING_H

#include <stdbool.h>
#include <stdint.h>

#include "calendar.h"
#include "err.h"
#include "ledger.h"
#include "money.h"
#include "pricebook.h"
#include "rating.h"
#include "strmap.h"

struct ctl;
struct ctl_lease;
struct ctl_call;
struct lease_req;

#define BILLING_GRACE_DEFAULT_S 600      /* grace period once a balance runs out */
#define BILLING_GRACE_MAX_S (30 * 86400) /* bound on --grace */
#define BILLING_TICK_MS 1000             /* balance checks while leases run */
/* Running usage is posted hourly: ACCT_POST_EVERY_MS (account_rules.h). */

/* What `suanlid serve` was asked for (strings borrowed for billing_new). */
struct billing_opts {
	const char *currency; /* ISO code; NULL: CNY */
	const char *zone;     /* billing time zone; NULL: UTC */
	int64_t grace_s;      /* < 0: the default */
};

/* Checks opts (unknown currency or zone: SL_EINVAL) and creates c's billing
 * state, reading prices, postings, usage and tenant states from the store.
 * Call after leases are loaded. */
enum sl_err billing_start(struct ctl *c, const struct billing_opts *o,
			  struct sl_diag *d) SL_MUST_USE;
void billing_free(struct ctl *c);

/* Records lease l's usage after a state or size change (started, scaled,
 * ended) at its instants; posts the final charge when it ended. */
void billing_lease_changed(struct ctl *c, struct ctl_lease *l);
/* Lease l lost `lost` of its GPUs from from_ns (its node's last healthy
 * report) until now, when replacements took their place: those GPUs are not
 * billed for that window. */
void billing_lease_outage(struct ctl *c, struct ctl_lease *l, int64_t from_ns, int lost);

/* SL_OK when tenant may start lease request r (hourly or spot) now: its
 * balance plus credit line covers the first hour at the cheapest price of
 * the models r allows; a lease no price applies to runs free. SL_EFUNDS with
 * d saying the amounts otherwise. */
enum sl_err billing_can_start(struct ctl *c, const char *tenant, const struct lease_req *r,
			      struct sl_diag *d) SL_MUST_USE;

/* ---- meters (billing_meter.c): usage that is not a lease's own, for
 * instances (docs/instances.md): GPU time from running to stop, no-GPU
 * time, the data disk from creation to release. One usage record per meter
 * id; a pause is 0 units from its instant on, so every run of an instance is
 * one record and its invoice lines are their own (lease = the meter id). */
struct billing_meter {
	const char *id;                    /* "in-000001.gpu", ".nogpu", ".disk" */
	const char *tenant, *site, *region; /* price lookup like a lease's */
	const char *model;                 /* "" for no-gpu and storage */
	enum plan plan;
	int units;                         /* GPUs; 1 (no-gpu); GiB (storage) */
};
/* Starts metering m at at_ns, or resumes a paused meter (m->units from at_ns
 * on). False when no price applies at at_ns (nothing is recorded: it runs
 * free, like a lease no price applies to) or the meter ended; a store
 * failure marks the turn fatal. */
bool billing_meter_on(struct ctl *c, const struct billing_meter *m, int64_t at_ns);
/* Pauses meter id from at_ns on (0 units); nothing when absent or paused. */
void billing_meter_off(struct ctl *c, const char *id, int64_t at_ns);
/* Ends meter id at at_ns for good and posts its charge. */
void billing_meter_end(struct ctl *c, const char *id, int64_t at_ns);
/* The meter's rated amount up to now in minor units (0: no such meter). */
int64_t billing_meter_amount(struct ctl *c, const char *id);
/* Whether meter id counts units now (started, not paused or ended). */
bool billing_meter_running(struct ctl *c, const char *id);
/* What m would cost per day at today's price (storage: in the current
 * calendar month of the billing zone); 0 when no price applies. */
int64_t billing_meter_per_day(struct ctl *c, const struct billing_meter *m);
/* The tenant's balance now plus its credit line (INT64_MAX without billing). */
int64_t billing_available(struct ctl *c, const char *tenant);
/* When the tenant's grace period ends (ns), 0 when it is not in one. */
int64_t billing_grace_end_ns(struct ctl *c, const char *tenant);
/* The billing currency's code. */
const char *billing_currency(const struct ctl *c);

/* Runs the balance rules and the hourly postings when due; lowers
 * c->next_deadline to its own next check. */
void billing_tick(struct ctl *c);

#define BILLING_METRICS_TENANTS_MAX 10000 /* tenants with series in /metrics */
struct sl_buf;
/* Appends the tenants' balance and grace series to b (Prometheus text; an
 * error stays in b). No samples before billing starts. */
void billing_metrics(struct ctl *c, struct sl_buf *b);

/* handlers (h_billing.c) */
void h_price_set(struct ctl_call *c);
void h_price_list(struct ctl_call *c);
void h_topup(struct ctl_call *c);
void h_credit(struct ctl_call *c);
void h_credit_line(struct ctl_call *c);
void h_balance(struct ctl_call *c);
void h_ledger(struct ctl_call *c);
void h_invoice(struct ctl_call *c);
void h_usage(struct ctl_call *c);
void h_revenue(struct ctl_call *c);

#endif

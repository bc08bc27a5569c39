/* billing.h - the controller's side of money: price book, usage metering,
 * ledger, balance rules and invoices (DESIGN.md §6), over the pure core
 * (money.h, calendar.h, pricebook.h, rating.h, ledger.h, invoice.h).
 *
 * Private to src/ctl. State lives in memory (struct ctl_billing, owned by
 * struct ctl) and every change is written to the store in the turn's
 * transaction (tables prices, postings, usage, billing), so it commits with
 * the lease change that caused it. Metering follows lease state changes
 * through one hook (billing_lease_changed, called by ctl_lease_set_state);
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
#define BILLING_POST_EVERY_MS (3600 * INT64_C(1000)) /* running usage posted hourly */

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

/* Runs the balance rules and the hourly postings when due; lowers
 * c->next_deadline to its own next check. */
void billing_tick(struct ctl *c);

/* ---- state shared by billing.c and h_billing.c ---- */

/* One lease's metered usage: what rating needs, plus what has been posted. */
struct bill_usage {
	char lease[RATING_ID_MAX];
	char tenant[LEDGER_TENANT_MAX];
	char site[PRICE_NAME_MAX], region[PRICE_NAME_MAX], model[PRICE_NAME_MAX];
	enum plan plan;
	bool priced; /* a price applied when it started; else it runs free */
	bool ended;
	struct rating_event *ev;
	size_t nev, cap;
	int64_t bought_ms; /* monthly: its start */
	int term_months;   /* monthly: its term */
	int gpus;          /* monthly: GPUs bought */
	int64_t charged;   /* sum of the CHARGE postings made for it */
	int64_t last_post_ms;
};

/* A tenant's balance state (the grace period). */
struct bill_tenant {
	char name[LEDGER_TENANT_MAX];
	int64_t grace_since_ms; /* 0: not in grace */
	int64_t stopped_ms;     /* last time its leases were stopped, 0: never */
};

struct ctl_billing {
	struct pricebook *prices;
	struct ledger *ledger;
	const struct money_currency *cur;
	struct cal_zone zone;
	int64_t grace_ms;
	struct bill_usage *u;
	int nu, capu;
	struct strmap *u_by_lease;
	int *live; /* indices into u of usages not ended, so the per-second
		      rules cost O(running leases), not O(every lease ever) */
	int nlive, caplive;
	struct bill_tenant *t;
	int nt, capt;
	struct strmap *t_by_name;
	uint64_t price_seq, post_seq;
	bool has_hosting; /* a hosting price exists: colocated servers are metered */
	int64_t next_ms;
};

/* The usage record of a lease, NULL when it never ran. */
struct bill_usage *billing_usage_find(struct ctl *c, const char *lease);
/* u as rating input (borrows u). */
void billing_rating_lease(const struct bill_usage *u, struct rating_lease *rl);
/* Rated amount of u up to to_ms (0 when unpriced or on a rating error). */
int64_t billing_accrued(struct ctl *c, const struct bill_usage *u, int64_t to_ms);
/* Tenant's ledger balance minus its running usage not yet posted (*unposted). */
int64_t billing_balance_now(struct ctl *c, const char *tenant, int64_t *unposted);
/* The tenant's state record (created when create is true; NULL otherwise). */
struct bill_tenant *billing_tenant(struct ctl *c, const char *tenant, bool create);
/* Applies posting p to the ledger and stores it. SL_OK with *applied false
 * for a replay; errors leave everything unchanged. */
enum sl_err billing_post(struct ctl *c, struct ledger_posting *p, bool *applied,
			 struct sl_diag *d) SL_MUST_USE;
/* A new posting id "<prefix>.<seq>". */
void billing_next_id(struct ctl *c, const char *prefix, char *buf, size_t n);
/* Adds price e (refused before now) and stores it. */
enum sl_err billing_price_add(struct ctl *c, const struct price_entry *e,
			      struct sl_diag *d) SL_MUST_USE;
/* Milliseconds of ns. */
static inline int64_t billing_ms(int64_t ns) { return ns / 1000000; }

/* handlers (h_billing.c) */
void h_price_set(struct ctl_call *c);
void h_price_list(struct ctl_call *c);
void h_topup(struct ctl_call *c);
void h_credit(struct ctl_call *c);
void h_credit_line(struct ctl_call *c);
void h_balance(struct ctl_call *c);
void h_invoice(struct ctl_call *c);
void h_usage(struct ctl_call *c);
void h_revenue(struct ctl_call *c);

#endif

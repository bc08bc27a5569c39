/* billing_int.h - what billing.c (metering, postings, the balance rules) and
 * h_billing.c (its HTTP handlers) share, and billing_metrics.c (its part of
 * /metrics) reads: the usage and tenant records and the billing state
 * behind struct ctl's billing handle. Private to them:
 * other parts of the controller see only billing.h. */
#ifndef SL_CTL_BILLING_INT_H
#define SL_CTL_BILLING_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "billing.h"
#include "calendar.h"
#include "err.h"
#include "history.h"
#include "ledger.h"
#include "money.h"
#include "pricebook.h"
#include "rating.h"
#include "strmap.h"

struct ctl;

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
	struct strmap *hist_ids; /* ids known to be in usage_history (hosting asks each tick) */
	int *live; /* indices into u of usages not ended, so the per-second
		      rules cost O(running leases), not O(every lease ever) */
	int nlive, caplive;
	struct bill_tenant *t;
	int nt, capt;
	struct strmap *t_by_name;
	uint64_t price_seq, post_seq;
	bool has_hosting; /* a hosting price exists: colocated servers are metered */
	struct ctl_hist_moves moves; /* start-up: ended rows of an old store to move */
	int64_t next_ms;
};

/* The running usage record of a lease, NULL when it never ran or has ended
 * (an ended record is in usage_history: bill_hist_get). */
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
/* The record-keeping steps of billing.c, shared with billing_meter.c (the
 * instances' meters): a new usage record for id (not yet in the live set),
 * the live set, one more event (never before the last: clock steps), the
 * record's row, and the charge of what is rated and not yet posted. */
struct bill_usage *bill_usage_add(struct ctl *c, const char *id);
bool bill_live_add(struct ctl_billing *b, int idx);
void bill_live_del(struct ctl_billing *b, int idx);
bool bill_usage_push(struct bill_usage *u, int64_t at, enum rating_ev kind, int gpus,
		     enum rating_end end);
void bill_usage_save(struct ctl *c, const struct bill_usage *u);
void bill_post_charge(struct ctl *c, struct bill_usage *u);
/* ---- billing_store.c: rows, history, the ledger's accounts ---- */

/* Usage records read back from the history (owned: bill_usages_release). */
struct bill_usages {
	struct bill_usage *v;
	size_t n, cap;
};

/* Parses a stored usage row into *u (its events allocated; free(u->ev)). */
enum sl_err bill_usage_parse(const char *id, const char *json, struct bill_usage *u) SL_MUST_USE;
/* Whether id's record is in usage_history (ended: never start it again).
 * A store that cannot say fails the controller and answers true. */
bool bill_usage_in_history(struct ctl *c, const char *id);
/* Moves ended record u to usage_history in the turn's transaction and drops
 * it from memory (u and indices into b->u are invalid after). */
void bill_usage_retire(struct ctl *c, struct bill_usage *u);
/* The ended record id from usage_history into *out (*found false if none). */
enum sl_err bill_hist_get(struct ctl *c, const char *id, struct bill_usage *out,
			  bool *found) SL_MUST_USE;
/* Appends every ended record of tenant (NULL: all) to *out. */
enum sl_err bill_hist_read(struct ctl *c, const char *tenant, struct bill_usages *out,
			   struct sl_diag *d) SL_MUST_USE;
void bill_usages_release(struct bill_usages *v);
/* A stored posting row; *seq its posting seq. */
enum sl_err bill_posting_parse(const char *id, const char *json, struct ledger_posting *p,
			       uint64_t *seq, struct sl_diag *d) SL_MUST_USE;
/* Stores posting p with seq (updated_ns = seq: store_page_since order). */
bool bill_posting_put(struct ctl *c, const struct ledger_posting *p, uint64_t seq);
/* Whether p's id is stored already with the same content (*known: a replay);
 * SL_ECONFLICT when with different content. */
enum sl_err bill_posting_known(struct ctl *c, const struct ledger_posting *p, bool *known,
			       struct sl_diag *d) SL_MUST_USE;
/* Calls fn for tenant's postings after after_seq in posting order until it
 * returns false. */
typedef bool (*bill_posting_fn)(void *arg, const struct ledger_posting *p, uint64_t seq);
enum sl_err bill_postings_since(struct ctl *c, const char *tenant, uint64_t after_seq,
				bill_posting_fn fn, void *arg, struct sl_diag *d) SL_MUST_USE;
/* Stores the two accounts p moved money between, and post_seq. */
void bill_accounts_save(struct ctl *c, const struct ledger_posting *p);
/* Stores every account and post_seq (building the snapshot of an old store). */
void bill_accounts_save_all(struct ctl *c);
/* Restores the ledger's accounts and post_seq from the store. */
enum sl_err bill_accounts_load(struct ctl *c, struct sl_diag *d) SL_MUST_USE;

/* Milliseconds of ns. */
/* The tenant named in the path and visible to the caller (h_billing.c);
 * NULL after answering 404, also for another tenant's. */
const struct ctl_tenant *billing_path_tenant(struct ctl_call *call, const char *name);

static inline int64_t billing_ms(int64_t ns) { return ns / 1000000; }

#endif

/* ledger.h - balances as a double-entry ledger (DESIGN.md §6).
 *
 * Every change of money is a posting: a unique id, a type, an amount > 0 in
 * minor units, an instant and a reason. The type fixes the two accounts the
 * amount moves between (debit one, credit the other), so the books balance
 * by construction: the sum of all debits equals the sum of all credits after
 * every posting. Applying a posting whose id was applied before changes
 * nothing (a retried request, a replayed log); the same id with different
 * content is refused as a conflict. An account's balance is its credits
 * minus its debits, so a tenant's balance is the money it has with the
 * provider and may go below zero as far as its credit line allows.
 *
 *   type             debit                  credit
 *   TOPUP            cash                   tenant(t)      money paid in
 *   CHARGE           tenant(t)              revenue(plan)  usage, per plan
 *   HOSTING_FEE      tenant(t)              hosting        colocation fee
 *   CREDIT           credits                tenant(t)      operator credit
 *   REFUND           refunds                tenant(t)      a charge given back
 *   CREDIT_LINE_UP   credit-limits          credit-line(t) raise the line
 *   CREDIT_LINE_DOWN credit-line(t)         credit-limits  lower the line
 *
 * Credit-line accounts are memo accounts: they hold the line, not money, and
 * keep their own pair so money balances are never mixed with limits. Pure:
 * no I/O, no clock; the caller gives every posting its instant. */
#ifndef SL_LEDGER_H
#define SL_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "pricebook.h"

#define LEDGER_ID_MAX 128        /* posting id, bytes with NUL */
#define LEDGER_TENANT_MAX 64     /* tenant name, bytes with NUL */
#define LEDGER_REASON_MAX 256    /* reason, bytes with NUL (UTF-8) */
#define LEDGER_MAX_POSTINGS 10000000
#define LEDGER_MAX_ACCOUNTS 1000000

enum ledger_type {
	LEDGER_TOPUP,
	LEDGER_CHARGE,
	LEDGER_HOSTING_FEE,
	LEDGER_CREDIT,
	LEDGER_REFUND,
	LEDGER_CREDIT_LINE_UP,
	LEDGER_CREDIT_LINE_DOWN,
};
#define LEDGER_TYPE__COUNT 7

enum ledger_kind {
	LEDGER_ACCT_TENANT,        /* key: tenant */
	LEDGER_ACCT_REVENUE,       /* key: plan name */
	LEDGER_ACCT_HOSTING,       /* hosting revenue; key "" */
	LEDGER_ACCT_CREDITS,       /* operator credits granted; key "" */
	LEDGER_ACCT_REFUNDS,       /* refunds granted; key "" */
	LEDGER_ACCT_CASH,          /* money received; key "" */
	LEDGER_ACCT_CREDIT_LINE,   /* memo: a tenant's line; key: tenant */
	LEDGER_ACCT_CREDIT_LIMITS, /* memo: the other side; key "" */
};
#define LEDGER_KIND__COUNT 8

struct ledger_posting {
	char id[LEDGER_ID_MAX];         /* 1..127 printable ASCII, no space */
	enum ledger_type type;
	char tenant[LEDGER_TENANT_MAX]; /* [A-Za-z0-9._-], 1..63 */
	enum plan plan;           /* CHARGE only: revenue account */
	int64_t amount;                 /* 1..MONEY_MAX minor units */
	int64_t at_ms;                  /* when it happened (for invoices) */
	char reason[LEDGER_REASON_MAX]; /* UTF-8 without control characters */
};

struct ledger_account {
	enum ledger_kind kind;
	char key[LEDGER_TENANT_MAX];
	int64_t debits, credits; /* totals, each within 0..MONEY_MAX */
};

/* "topup", "charge", ...; "?" for a bad value. */
const char *ledger_type_name(enum ledger_type t);
/* "tenant", "revenue", "hosting", "credits", "refunds", "cash",
 * "credit_line", "credit_limits"; "?" for a bad value. */
const char *ledger_kind_name(enum ledger_kind k);

/* Fills p after checking every field as ledger_apply does; strings are
 * copied; reason may be NULL (""); plan matters for CHARGE only. */
enum sl_err ledger_posting_init(struct ledger_posting *p, const char *id,
				enum ledger_type type, const char *tenant,
				enum plan plan, int64_t amount,
				int64_t at_ms, const char *reason,
				struct sl_diag *d) SL_MUST_USE;

/* The accounts p debits and credits (kind and key only). */
void ledger_posting_accounts(const struct ledger_posting *p,
			     struct ledger_account *debit,
			     struct ledger_account *credit);

struct ledger;

enum sl_err ledger_new(struct ledger **out) SL_MUST_USE;
void ledger_free(struct ledger *l);

/* Applies p. A posting with an id already applied and the same content is
 * a no-op (SL_OK, *applied = false); with different content SL_ECONFLICT.
 * Errors, with the ledger unchanged: SL_EINVAL for a bad field (id, tenant,
 * type, plan, amount <= 0, reason, instant outside the calendar, or a
 * CREDIT_LINE_DOWN larger than the tenant's line: lines never go negative),
 * SL_ELIMIT when an account's totals or the ledger's (ledger_totals) would
 * pass MONEY_MAX or the ledger is full, SL_ECONFLICT as above, SL_ENOMEM. applied may be NULL. */
enum sl_err ledger_apply(struct ledger *l, const struct ledger_posting *p,
			 bool *applied, struct sl_diag *d) SL_MUST_USE;

/* Balance (credits - debits) of an account; 0 for one never touched. */
int64_t ledger_balance(const struct ledger *l, enum ledger_kind kind,
		       const char *key);
/* The tenant's money balance and its credit line. */
int64_t ledger_tenant_balance(const struct ledger *l, const char *tenant);
int64_t ledger_credit_line(const struct ledger *l, const char *tenant);

/* Whether tenant may start on-demand or spot work whose first hour costs
 * first_hour (rating_first_hour): SL_OK when balance + credit line >=
 * first_hour, else SL_EQUOTA with the balance, line and cost in the message
 * and a hint to top up. SL_EINVAL for a negative cost. */
enum sl_err ledger_can_start(const struct ledger *l, const char *tenant,
			     int64_t first_hour,
			     struct sl_diag *d) SL_MUST_USE;

/* Sum of debits and of credits over all accounts (they are always equal). */
void ledger_totals(const struct ledger *l, int64_t *debits, int64_t *credits);

/* Postings in the order they were applied; i < count. */
size_t ledger_posting_count(const struct ledger *l);
const struct ledger_posting *ledger_posting_at(const struct ledger *l,
					       size_t i);
/* The posting with this id, or NULL. */
const struct ledger_posting *ledger_find(const struct ledger *l,
					 const char *id);
/* The account of this kind and key, or NULL when never touched. */
const struct ledger_account *ledger_account_find(const struct ledger *l,
						 enum ledger_kind kind,
						 const char *key);
/* Whether a and b are the same posting in every field but the id (what
 * makes a replayed id a no-op rather than a conflict). */
bool ledger_posting_same(const struct ledger_posting *a,
			 const struct ledger_posting *b);

/* ---- starting from stored balances (a restart without replaying postings) ----
 *
 * A controller keeps each account's totals in its store beside the postings
 * and, at start, gives them back here instead of re-applying every posting.
 * The postings themselves stay in the store; the ledger then knows only the
 * ones applied since (ledger_find), so a caller that must refuse a replayed id
 * from before asks its store too (ledger_posting_same). */

/* Sets account a (kind, key, debits, credits) as stored. SL_EINVAL for a bad
 * kind or key (a tenant-keyed kind needs a tenant name), totals outside
 * 0..MONEY_MAX, or an account already present (restore each once, before any
 * posting); SL_ELIMIT when the ledger's totals would pass MONEY_MAX or it has
 * LEDGER_MAX_ACCOUNTS; SL_ENOMEM. The ledger is unchanged on error. After the
 * last account the caller checks ledger_totals: debits == credits. */
enum sl_err ledger_restore(struct ledger *l, const struct ledger_account *a,
			   struct sl_diag *d) SL_MUST_USE;
/* Forgets the postings held in memory (ledger_posting_count becomes 0,
 * ledger_find finds none); balances stay. What keeps a long-running
 * controller's ledger bounded once its postings are safely stored. */
enum sl_err ledger_forget_postings(struct ledger *l) SL_MUST_USE;

/* Accounts in the order they were first touched; i < count. */
size_t ledger_account_count(const struct ledger *l);
const struct ledger_account *ledger_account_at(const struct ledger *l,
					       size_t i);

#endif

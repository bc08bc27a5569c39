/* account_rules.h - the rules a prepaid tenant account lives by (DESIGN.md
 * §6): when a lease may start, when running usage is posted, when a tenant
 * whose money ran out enters its grace period, leaves it or has its leases
 * stopped, and which colocated servers pay a hosting fee.
 *
 * These are decisions only: the controller (src/ctl/billing.c) reads the
 * balance, the credit line and the fleet, asks these functions what to do and
 * then does it (store rows, history entries, scheduler calls); `suanli sim`
 * can replay them with the same answers. Pure: no I/O, no clock; every
 * instant is an argument, in milliseconds since the Unix epoch. */
#ifndef SL_ACCOUNT_RULES_H
#define SL_ACCOUNT_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pricebook.h"

/* Running usage is posted to the ledger at least this often (and when the
 * lease ends), so the ledger never lags the meter by more than an hour. */
#define ACCT_POST_EVERY_MS (3600 * INT64_C(1000))

/* Hosting records are named ACCT_HOSTING_PREFIX + node name, at most
 * ACCT_HOSTING_NODE_MAX bytes of it. */
#define ACCT_HOSTING_PREFIX "host."
#define ACCT_HOSTING_NODE_MAX 100

/* What the balance rules decided for a tenant with priced pay-as-you-go work
 * running (acct_balance_step). */
enum acct_step {
	ACCT_FUNDED,       /* money left, not in grace: nothing to do */
	ACCT_RESTORED,     /* money again while in grace: the grace period is over */
	ACCT_GRACE_STARTS, /* the money just ran out: the grace period starts now */
	ACCT_IN_GRACE,     /* still out of money, the grace period not yet over */
	ACCT_STOP,         /* the grace period is over: stop the tenant's leases */
};

/* True for the plans whose usage the balance rules watch: hourly and spot.
 * Monthly terms are bought up front and hosting is a monthly fee, so neither
 * can run a balance out by the second. */
bool acct_plan_pay_as_you_go(enum plan p);

/* Whether a tenant with `available` (balance, less running usage not yet
 * posted, plus credit line) may start a lease whose first hour costs at
 * least first_hour; priced false (no price applies to the lease) always may:
 * such a lease runs free. */
bool acct_may_start(int64_t available, bool priced, int64_t first_hour);

/* Whether running usage last posted at last_post_ms is due a posting at now_ms. */
bool acct_charge_due(int64_t last_post_ms, int64_t now_ms);

/* The balance rules for one tenant with pay-as-you-go work running, at now_ms
 * with `available` as for acct_may_start and a grace period of grace_ms.
 * *grace_since_ms (0: not in grace) and *stopped_ms (the last stop, 0: never)
 * are the tenant's stored state, updated in place; the result says what
 * happened. At zero or below the grace period starts; money back ends it;
 * once it has lasted grace_ms the leases stop and the state is cleared, so a
 * tenant still out of money starts a new grace period with its next lease. */
enum acct_step acct_balance_step(int64_t available, int64_t grace_ms, int64_t now_ms,
				 int64_t *grace_since_ms, int64_t *stopped_ms);

/* A tenant with nothing pay-as-you-go running has no grace period to count
 * down: clears *grace_since_ms and returns true when it was set. */
bool acct_idle(int64_t *grace_since_ms);

/* The end of a grace period that began at grace_since_ms (0: none, giving 0). */
int64_t acct_grace_until(int64_t grace_since_ms, int64_t grace_ms);

/* The hosting record id of colocated server node ("host.<node>", the node's
 * name cut at ACCT_HOSTING_NODE_MAX bytes) into buf[0..n). */
void acct_hosting_id(const char *node, char *buf, size_t n);
/* The server a hosting record id names (borrowed from id), NULL when id is
 * not a hosting record's. */
const char *acct_hosting_node(const char *id);
/* Whether the hosting fee of tenant's server goes on: the server is still in
 * the fleet and still owned by tenant. owner_now: its owner now, NULL when
 * it is gone from the fleet or owned by the provider. */
bool acct_hosting_continues(const char *owner_now, const char *tenant);

#endif

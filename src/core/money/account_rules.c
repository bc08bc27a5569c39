/* account_rules.c - the prepaid account's decisions (account_rules.h).
 *
 * Moved out of the controller's billing.c so that the rules are unit-tested
 * and replayable on their own; the controller keeps what they act on (store
 * rows, lease history, the scheduler). Each rule is a few comparisons: they
 * are here for one place to read and test them, not for their size. */
#include <stdio.h>
#include <string.h>

#include "account_rules.h"

bool acct_plan_pay_as_you_go(enum plan p)
{
	return p != PLAN_MONTHLY && p != PLAN_HOSTING;
}

bool acct_may_start(int64_t available, bool priced, int64_t first_hour)
{
	return !priced || available >= first_hour;
}

bool acct_charge_due(int64_t last_post_ms, int64_t now_ms)
{
	return now_ms - last_post_ms >= ACCT_POST_EVERY_MS;
}

enum acct_step acct_balance_step(int64_t available, int64_t grace_ms, int64_t now_ms,
				 int64_t *grace_since_ms, int64_t *stopped_ms)
{
	if (available > 0) {
		if (!*grace_since_ms)
			return ACCT_FUNDED;
		*grace_since_ms = 0;
		return ACCT_RESTORED;
	}
	if (!*grace_since_ms) {
		*grace_since_ms = now_ms;
		return ACCT_GRACE_STARTS;
	}
	if (now_ms < *grace_since_ms + grace_ms)
		return ACCT_IN_GRACE;
	*grace_since_ms = 0;
	*stopped_ms = now_ms;
	return ACCT_STOP;
}

bool acct_idle(int64_t *grace_since_ms)
{
	if (!*grace_since_ms)
		return false;
	*grace_since_ms = 0;
	return true;
}

int64_t acct_grace_until(int64_t grace_since_ms, int64_t grace_ms)
{
	return grace_since_ms ? grace_since_ms + grace_ms : 0;
}

void acct_hosting_id(const char *node, char *buf, size_t n)
{
	snprintf(buf, n, ACCT_HOSTING_PREFIX "%.*s", ACCT_HOSTING_NODE_MAX, node);
}

const char *acct_hosting_node(const char *id)
{
	size_t k = sizeof(ACCT_HOSTING_PREFIX) - 1;
	return strncmp(id, ACCT_HOSTING_PREFIX, k) ? NULL : id + k;
}

bool acct_hosting_continues(const char *owner_now, const char *tenant)
{
	return owner_now && !strcmp(owner_now, tenant);
}

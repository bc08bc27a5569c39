/* plan.c - the one table of plans: name, whether a lease takes it, and its
 * scheduling priority. Indexed by enum plan; test_plan checks every row is
 * filled, so a plan added to the enum without a row fails the unit tests. */
#include "plan.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	bool lease;
	int priority; /* 0 first: monthly > hourly > spot */
} plans[PLAN__COUNT] = {
	[PLAN_HOURLY] = {"hourly", true, 1},
	[PLAN_SPOT] = {"spot", true, 2},
	[PLAN_MONTHLY] = {"monthly", true, 0},
	[PLAN_HOSTING] = {"hosting", false, 3},
	[PLAN_NOGPU] = {"no-gpu", false, 3},
	[PLAN_STORAGE] = {"storage", false, 3},
};

const char *plan_name(enum plan p)
{
	return (unsigned)p < PLAN__COUNT && plans[p].name ? plans[p].name : "?";
}

enum sl_err plan_parse(const char *s, enum plan *p, struct sl_diag *d)
{
	for (int i = 0; s && i < PLAN__COUNT; i++)
		if (plans[i].name && strcmp(s, plans[i].name) == 0) {
			*p = (enum plan)i;
			return SL_OK;
		}
	enum sl_err e = sl_diag_set(d, SL_EINVAL, "unknown plan '%.32s'", s ? s : "");
	char list[96] = "";
	size_t n = 0;
	for (int i = 0; i < PLAN__COUNT && n < sizeof(list); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "",
				      plan_name((enum plan)i));
	sl_diag_hint(d, "plans: %s", list); /* "plans: hourly, spot, monthly, hosting" */
	return e;
}

bool plan_is_lease(enum plan p)
{
	return (unsigned)p < PLAN__COUNT && plans[p].lease;
}

int plan_priority(enum plan p)
{
	return (unsigned)p < PLAN__COUNT ? plans[p].priority : PLAN__COUNT;
}

bool plan_has_model(enum plan p)
{
	return p == PLAN_HOURLY || p == PLAN_SPOT || p == PLAN_MONTHLY;
}

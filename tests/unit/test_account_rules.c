/* test_account_rules.c - the prepaid account's rules (account_rules.h): the
 * start check, the posting cadence, the grace period walked through a
 * tenant's money running out, coming back and running out for good, and
 * which colocated servers keep paying a hosting fee. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "account_rules.h"

#define T0 INT64_C(1796017410123) /* 2026-11-30T05:43:30.123Z, ms */
#define GRACE INT64_C(600000)      /* 10 minutes */

static void test_plans(void **state)
{
	(void)state;
	assert_true(acct_plan_pay_as_you_go(PLAN_HOURLY));
	assert_true(acct_plan_pay_as_you_go(PLAN_SPOT));
	assert_false(acct_plan_pay_as_you_go(PLAN_MONTHLY));
	assert_false(acct_plan_pay_as_you_go(PLAN_HOSTING));
}

static void test_may_start(void **state)
{
	(void)state;
	static const struct {
		int64_t available;
		bool priced;
		int64_t first_hour;
		bool want;
	} cases[] = {
		{1000, true, 1000, true},  /* exactly covered */
		{999, true, 1000, false},
		{0, true, 1, false},
		{-500, true, 0, false},    /* in debt: not even a free first hour of a priced lease */
		{-500, false, 1000, true}, /* no price applies: runs free */
		{0, true, 0, true},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(acct_may_start(cases[i].available, cases[i].priced, cases[i].first_hour),
				 cases[i].want);
}

static void test_charge_due(void **state)
{
	(void)state;
	assert_false(acct_charge_due(T0, T0));
	assert_false(acct_charge_due(T0, T0 + ACCT_POST_EVERY_MS - 1));
	assert_true(acct_charge_due(T0, T0 + ACCT_POST_EVERY_MS));
	assert_int_equal(ACCT_POST_EVERY_MS, 3600000);
}

/* One tenant's money over time, step by step. */
static void test_grace_walk(void **state)
{
	(void)state;
	static const struct {
		int64_t at, available;
		enum acct_step want;
		int64_t since_after, stopped_after;
	} steps[] = {
		{T0, 500, ACCT_FUNDED, 0, 0},
		{T0 + 1000, 0, ACCT_GRACE_STARTS, T0 + 1000, 0},      /* zero counts as out */
		{T0 + 2000, -10, ACCT_IN_GRACE, T0 + 1000, 0},
		{T0 + 3000, 1, ACCT_RESTORED, 0, 0},                  /* topped up */
		{T0 + 4000, 1, ACCT_FUNDED, 0, 0},
		{T0 + 5000, -1, ACCT_GRACE_STARTS, T0 + 5000, 0},     /* a fresh, whole grace period */
		{T0 + 5000 + GRACE - 1, -1, ACCT_IN_GRACE, T0 + 5000, 0},
		{T0 + 5000 + GRACE, -1, ACCT_STOP, 0, T0 + 5000 + GRACE},
		{T0 + 5000 + GRACE + 1, -1, ACCT_GRACE_STARTS, T0 + 5000 + GRACE + 1,
		 T0 + 5000 + GRACE}, /* still out with work running: another period */
	};
	int64_t since = 0, stopped = 0;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		assert_int_equal(acct_balance_step(steps[i].available, GRACE, steps[i].at, &since, &stopped),
				 steps[i].want);
		assert_int_equal(since, steps[i].since_after);
		assert_int_equal(stopped, steps[i].stopped_after);
	}
	assert_int_equal(acct_grace_until(since, GRACE), since + GRACE);
	assert_int_equal(acct_grace_until(0, GRACE), 0);
}

static void test_no_grace_period(void **state)
{
	(void)state;
	int64_t since = 0, stopped = 0;
	assert_int_equal(acct_balance_step(0, 0, T0, &since, &stopped), ACCT_GRACE_STARTS);
	assert_int_equal(acct_balance_step(0, 0, T0, &since, &stopped), ACCT_STOP);
	assert_int_equal(stopped, T0);
}

static void test_idle(void **state)
{
	(void)state;
	int64_t since = 0;
	assert_false(acct_idle(&since));
	since = T0;
	assert_true(acct_idle(&since));
	assert_int_equal(since, 0);
	assert_false(acct_idle(&since));
}

static void test_hosting(void **state)
{
	(void)state;
	char id[128];
	acct_hosting_id("fza-h100-016", id, sizeof(id));
	assert_string_equal(id, "host.fza-h100-016");
	assert_string_equal(acct_hosting_node(id), "fza-h100-016");
	assert_null(acct_hosting_node("ls-12"));
	assert_null(acct_hosting_node("host"));
	char longname[300];
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	acct_hosting_id(longname, id, sizeof(id));
	assert_int_equal(strlen(id), strlen(ACCT_HOSTING_PREFIX) + ACCT_HOSTING_NODE_MAX);
	acct_hosting_id("x", id, 4); /* bounded by the buffer */
	assert_string_equal(id, "hos");
	assert_true(acct_hosting_continues("acme", "acme"));
	assert_false(acct_hosting_continues("globex", "acme")); /* changed owner */
	assert_false(acct_hosting_continues(NULL, "acme"));     /* gone, or the provider's now */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plans),      cmocka_unit_test(test_may_start),
		cmocka_unit_test(test_charge_due), cmocka_unit_test(test_grace_walk),
		cmocka_unit_test(test_no_grace_period), cmocka_unit_test(test_idle),
		cmocka_unit_test(test_hosting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_plan.c - the one plan table: every plan has a name that parses back to
 * it, the stored names and the enum's order stay what stored data and sorted
 * listings depend on, unknown names are refused, and the lease and priority
 * columns say what the scheduler relies on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plan.h"

static void test_round_trip(void **state)
{
	(void)state;
	for (int i = 0; i < PLAN__COUNT; i++) {
		const char *n = plan_name((enum plan)i);
		assert_string_not_equal(n, "?"); /* a plan without a table row */
		enum plan p = PLAN__COUNT;
		assert_int_equal(plan_parse(n, &p, NULL), SL_OK);
		assert_int_equal(p, i);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(n, plan_name((enum plan)j));
	}
}

/* Stored rows and JSON carry these names, and prices and invoice lines are
 * sorted by this order: neither may change. */
static void test_names_and_order_are_fixed(void **state)
{
	(void)state;
	static const char *const want[] = {"hourly", "spot", "monthly", "hosting", "no-gpu",
					   "storage"};
	assert_int_equal(PLAN__COUNT, sizeof(want) / sizeof(want[0]));
	assert_int_equal(PLAN_HOURLY, 0);
	for (int i = 0; i < PLAN__COUNT; i++)
		assert_string_equal(plan_name((enum plan)i), want[i]);
	assert_string_equal(plan_name(PLAN__COUNT), "?");
	assert_string_equal(plan_name((enum plan)-1), "?");
}

static void test_refuses_unknown(void **state)
{
	(void)state;
	static const char *const bad[] = {"weekly", "", "Hourly", "hourly ", " spot",
					  "monthl", "monthlyx", "?"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum plan p = PLAN_SPOT;
		struct sl_diag d;
		sl_diag_clear(&d);
		assert_int_equal(plan_parse(bad[i], &p, &d), SL_EINVAL);
		assert_int_equal(p, PLAN_SPOT); /* untouched */
		assert_non_null(strstr(d.msg, "unknown plan"));
		assert_string_equal(d.hint, "plans: hourly, spot, monthly, hosting, no-gpu, storage");
	}
	enum plan p = PLAN_SPOT;
	assert_int_equal(plan_parse(NULL, &p, NULL), SL_EINVAL);
	assert_int_equal(p, PLAN_SPOT);
}

static void test_lease_and_priority(void **state)
{
	(void)state;
	assert_true(plan_is_lease(PLAN_MONTHLY));
	assert_true(plan_is_lease(PLAN_HOURLY));
	assert_true(plan_is_lease(PLAN_SPOT));
	assert_false(plan_is_lease(PLAN_HOSTING));
	assert_false(plan_is_lease(PLAN__COUNT));
	assert_false(plan_is_lease(PLAN_NOGPU));
	assert_false(plan_is_lease(PLAN_STORAGE));
	/* GPU prices name a model; hosting, no-gpu and storage prices do not. */
	assert_true(plan_has_model(PLAN_HOURLY) && plan_has_model(PLAN_SPOT) &&
		    plan_has_model(PLAN_MONTHLY));
	assert_false(plan_has_model(PLAN_HOSTING) || plan_has_model(PLAN_NOGPU) ||
		     plan_has_model(PLAN_STORAGE));
	/* monthly > hourly > spot (DESIGN.md §5); hosting is never scheduled. */
	assert_true(plan_priority(PLAN_MONTHLY) < plan_priority(PLAN_HOURLY));
	assert_true(plan_priority(PLAN_HOURLY) < plan_priority(PLAN_SPOT));
	assert_true(plan_priority(PLAN_SPOT) < plan_priority(PLAN_HOSTING));
	assert_true(plan_priority(PLAN_HOSTING) <= plan_priority(PLAN__COUNT));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_names_and_order_are_fixed),
		cmocka_unit_test(test_refuses_unknown),
		cmocka_unit_test(test_lease_and_priority),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

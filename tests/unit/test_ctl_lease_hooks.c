/* test_ctl_lease_hooks.c - the lease-change hooks run in their declared
 * order (lease.c's table): audit, then billing, then jobs. A reordering is a
 * decision to make in that table's comment, so this test pins it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_int.h"

static void test_hook_order(void **state)
{
	(void)state;
	static const char *const want[] = {"audit", "billing", "jobs", "instances", "events"};
	size_t n = 0;
	const struct lease_hook *h = ctl_lease_hooks(&n);
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(h[i].name, want[i]);
		assert_non_null(h[i].fn);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_hook_order)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

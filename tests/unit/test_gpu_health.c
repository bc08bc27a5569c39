/* test_gpu_health.c - the XID policy: transient XIDs drain and re-qualify,
 * non-transient ones and the third within 24 h fail, resume clears. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gpu_health.h"

#define H (3600LL * 1000000000LL)

static void test_transient_set(void **st)
{
	(void)st;
	int yes[] = {13, 31, 43, 45, 68, 69, 94};
	int no[] = {0, 48, 63, 64, 74, 79, 92, 95, -1, 100000};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(gpu_xid_transient(yes[i]));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(gpu_xid_transient(no[i]));
}

static void test_drain_requalify(void **st)
{
	(void)st;
	struct gpu_health g;
	gpu_health_init(&g);
	assert_int_equal(gpu_health_report(&g, true, 1 * H), GPU_OK);
	assert_int_equal(gpu_health_xid(&g, 13, 2 * H), GPU_DRAINING);
	assert_non_null(strstr(g.reason, "XID 13"));
	assert_int_equal(g.since_ns, 2 * H);
	/* unhealthy keeps it drained */
	assert_int_equal(gpu_health_report(&g, false, 3 * H), GPU_DRAINING);
	assert_int_equal(gpu_health_report(&g, true, 4 * H), GPU_OK);
	assert_string_equal(g.reason, "");
	assert_int_equal(g.last_code, 13);
	/* an unhealthy report drains an ok GPU */
	assert_int_equal(gpu_health_report(&g, false, 5 * H), GPU_DRAINING);
	assert_non_null(strstr(g.reason, "health check"));
}

static void test_non_transient_fails(void **st)
{
	(void)st;
	struct gpu_health g;
	gpu_health_init(&g);
	assert_int_equal(gpu_health_xid(&g, 79, 1 * H), GPU_FAILED);
	assert_non_null(strstr(g.reason, "XID 79"));
	/* nothing but resume brings it back */
	assert_int_equal(gpu_health_report(&g, true, 2 * H), GPU_FAILED);
	assert_int_equal(gpu_health_xid(&g, 13, 3 * H), GPU_FAILED);
	gpu_health_resume(&g, 4 * H);
	assert_int_equal(g.state, GPU_OK);
	/* the window starts empty after resume */
	assert_int_equal(gpu_health_xid(&g, 13, 5 * H), GPU_DRAINING);
}

static void test_three_in_window(void **st)
{
	(void)st;
	struct gpu_health g;
	gpu_health_init(&g);
	assert_int_equal(gpu_health_xid(&g, 13, 1 * H), GPU_DRAINING);
	assert_int_equal(gpu_health_report(&g, true, 2 * H), GPU_OK);
	assert_int_equal(gpu_health_xid(&g, 31, 10 * H), GPU_DRAINING);
	assert_int_equal(gpu_health_report(&g, true, 11 * H), GPU_OK);
	/* third within 24 h of the first */
	assert_int_equal(gpu_health_xid(&g, 43, 24 * H), GPU_FAILED);
	assert_non_null(strstr(g.reason, "3 XIDs"));
}

static void test_three_spread_out(void **st)
{
	(void)st;
	struct gpu_health g;
	gpu_health_init(&g);
	assert_int_equal(gpu_health_xid(&g, 13, 1 * H), GPU_DRAINING);
	gpu_health_report(&g, true, 2 * H);
	assert_int_equal(gpu_health_xid(&g, 13, 20 * H), GPU_DRAINING);
	gpu_health_report(&g, true, 21 * H);
	/* 26 h after the first: only two inside any 24 h window */
	assert_int_equal(gpu_health_xid(&g, 13, 26 * H), GPU_DRAINING);
	gpu_health_report(&g, true, 27 * H);
	/* now 20 h, 26 h, 30 h are within 24 h */
	assert_int_equal(gpu_health_xid(&g, 13, 30 * H), GPU_FAILED);
}

static void test_out_of_order(void **st)
{
	(void)st;
	struct gpu_health g;
	gpu_health_init(&g);
	assert_int_equal(gpu_health_xid(&g, 13, 10 * H), GPU_DRAINING);
	assert_int_equal(gpu_health_xid(&g, 13, 5 * H), GPU_DRAINING);
	assert_int_equal(g.last_code, 13);
	assert_int_equal(g.last_ns, 10 * H);
	assert_int_equal(gpu_health_xid(&g, 94, 7 * H), GPU_FAILED);
	assert_int_equal(g.recent[0], 10 * H);
	assert_int_equal(g.recent[2], 5 * H);
}

static void test_names(void **st)
{
	(void)st;
	for (int s = GPU_OK; s <= GPU_FAILED; s++)
		assert_int_equal(gpu_hstate_parse(gpu_hstate_name((enum gpu_hstate)s)), s);
	assert_int_equal(gpu_hstate_parse("broken"), -1);
	assert_int_equal(gpu_hstate_parse(NULL), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transient_set),   cmocka_unit_test(test_drain_requalify),
		cmocka_unit_test(test_non_transient_fails), cmocka_unit_test(test_three_in_window),
		cmocka_unit_test(test_three_spread_out), cmocka_unit_test(test_out_of_order),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_agent_start.c - a rank that cannot be started is reported as a start
 * failure with its errno, not as the command's exit code (issue 17: "rank 0
 * exited with code 127" for a `sleep` that was there).
 *
 * The rank's log path is made a directory, so opening it fails (EISDIR) -
 * a start failure that is not transient and must not be retried. (EAGAIN
 * from fork or exec, which is retried, cannot be provoked reliably here: the
 * tests run as root, which RLIMIT_NPROC does not bind.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "state.h"
#include "work.h"

static void test_start_failure_reported_with_errno(void **state)
{
	(void)state;
	char dir[64], p[256];
	snprintf(dir, sizeof(dir), "/tmp/test_agent_start.XXXXXX");
	assert_non_null(mkdtemp(dir));
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(state_dir_init(dir, &d), SL_OK);
	sl_log_init(NULL, SL_LOG_ERROR);
	struct work_sup *sup;
	assert_int_equal(work_sup_new(dir, NULL, work_now_ns(), &sup, &d), SL_OK);
	snprintf(p, sizeof(p), "%s/jobs", dir);
	(void)mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/jobs/job-s", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/jobs/job-s/rank-0.log", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	json_t *a = json_pack("[{s:s, s:i, s:s, s:i, s:s, s:[s,s], s:{}, s:[], s:[], s:s, s:i}]",
			      "job", "job-s", "rank", 0, "lease", "lease-1", "epoch", 1, "state",
			      "run", "argv", "sleep", "5", "env", "gpus", "nics", "restart", "never",
			      "stop_grace_s", 1);
	int refused = -1;
	assert_int_equal(work_sup_apply(sup, a, work_now_ns(), &refused, &d), SL_OK);
	assert_int_equal(refused, 0);
	json_decref(a);
	json_t *e = NULL;
	for (int i = 0; i < 500 && !e; i++) {
		(void)work_sup_tick(sup, work_now_ns());
		json_t *r = work_sup_report(sup);
		json_t *v = json_array_get(r, 0);
		if (v && !strcmp(json_string_value(json_object_get(v, "state")), "exited"))
			e = json_incref(v);
		json_decref(r);
		if (!e)
			usleep(10000);
	}
	assert_non_null(e);
	const char *why = json_string_value(json_object_get(e, "error"));
	assert_non_null(why);
	assert_non_null(strstr(why, "errno 21")); /* EISDIR */
	assert_int_equal(json_integer_value(json_object_get(e, "restarts")), 0);
	assert_null(json_object_get(e, "started_at")); /* it never ran */
	json_decref(e);
	work_sup_free(sup);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start_failure_reported_with_errno),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_store_lead.c - leadership on a shared (PostgreSQL) store: the first
 * leader, standbys that see it, takeover when the leader's session ends, when
 * its lease runs out while it is stopped (its open transaction is aborted and
 * never lands), and after a release; a deposed leader's writes and renewals
 * fail. Against SQLite (no argument) only the refusals are checked: a store one
 * process owns has no leadership. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "store.h"
#include "store_target.h"

static struct store *open_pg(void)
{
	struct store *s = NULL;
	struct sl_diag d;
	enum sl_err e = store_open(target_where(NULL), &s, &d);
	if (e != SL_OK)
		fail_msg("store_open: %s: %s", sl_err_code(e), d.msg);
	assert_true(store_shared(s));
	return s;
}

static bool try_lead(struct store *s, const char *me, int64_t lease_ms, struct store_leader *l)
{
	bool won = false;
	struct sl_diag d;
	enum sl_err e = store_lead_try(s, me, "http://x/", lease_ms, &won, l, &d);
	if (e != SL_OK)
		fail_msg("store_lead_try %s: %s: %s", me, sl_err_code(e), d.msg);
	return won;
}

static void sleep_ms(int ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
	nanosleep(&t, NULL);
}

static int fresh(void **state)
{
	(void)state;
	target_fresh();
	return 0;
}

static void test_first_leader_and_standby(void **state)
{
	(void)state;
	struct store *a = open_pg(), *b = open_pg();
	struct store_leader l;
	assert_true(try_lead(a, "ctl-a", 5000, &l));
	assert_int_equal(l.epoch, 1);
	assert_true(l.mine);
	assert_int_equal(store_lead_epoch(a), 1);
	assert_false(try_lead(b, "ctl-b", 5000, &l));
	assert_string_equal(l.holder, "ctl-a");
	assert_string_equal(l.url, "http://x/");
	assert_false(l.mine);
	assert_false(l.expired);
	assert_int_equal(store_lead_epoch(b), 0);
	assert_int_equal(store_lead_renew(a, 5000, NULL), SL_OK);
	/* the leader writes; the standby reads what it wrote */
	assert_int_equal(store_put(a, STORE_LEASES, "l1", "acme", "{}", 1, NULL), SL_OK);
	char *v = NULL;
	assert_int_equal(store_get(b, STORE_LEASES, "l1", &v, NULL), SL_OK);
	free(v);
	store_close(a);
	store_close(b);
}

static void test_takeover_when_session_ends(void **state)
{
	(void)state;
	struct store *a = open_pg(), *b = open_pg();
	struct store_leader l;
	assert_true(try_lead(a, "ctl-a", 60000, &l));
	store_close(a); /* as if killed: the session ends, the lock goes */
	bool won = false;
	for (int i = 0; i < 50 && !won; i++) { /* the server notices the close asynchronously */
		won = try_lead(b, "ctl-b", 60000, &l);
		if (!won)
			sleep_ms(20);
	}
	assert_true(won);
	assert_int_equal(l.epoch, 2); /* long before the 60 s lease ran out */
	store_close(b);
}

static void test_expired_lease_of_live_session_is_taken_and_its_tx_aborted(void **state)
{
	(void)state;
	struct store *a = open_pg(), *b = open_pg();
	struct store_leader l;
	assert_true(try_lead(a, "ctl-a", 200, &l));
	assert_int_equal(store_put(a, STORE_LEASES, "before", NULL, "{}", 1, NULL), SL_OK);
	/* a stops mid-transaction: a share lock on the leader row is held */
	assert_int_equal(store_begin(a, NULL), SL_OK);
	assert_int_equal(store_put(a, STORE_LEASES, "in-flight", NULL, "{}", 1, NULL), SL_OK);
	assert_false(try_lead(b, "ctl-b", 200, &l)); /* not expired yet */
	sleep_ms(400);
	assert_true(try_lead(b, "ctl-b", 5000, &l));
	assert_int_equal(l.epoch, 2);
	/* a wakes up: its commit fails, the store fails, the write never landed */
	struct sl_diag d;
	assert_int_not_equal(store_commit(a, &d), SL_OK);
	assert_true(store_failed(a));
	assert_int_equal(store_lead_epoch(a), 0);
	char *v = NULL;
	assert_int_equal(store_get(b, STORE_LEASES, "in-flight", &v, NULL), SL_ENOTFOUND);
	assert_int_equal(store_get(b, STORE_LEASES, "before", &v, NULL), SL_OK);
	free(v);
	store_close(a);
	store_close(b);
}

static void test_deposed_renewal_fails(void **state)
{
	(void)state;
	struct store *a = open_pg(), *b = open_pg();
	struct store_leader l;
	assert_true(try_lead(a, "ctl-a", 200, &l));
	sleep_ms(400);
	assert_true(try_lead(b, "ctl-b", 5000, &l));
	/* a's session was terminated: its renewal cannot succeed either way */
	assert_int_not_equal(store_lead_renew(a, 200, NULL), SL_OK);
	assert_true(store_failed(a));
	assert_int_equal(store_put(a, STORE_LEASES, "late", NULL, "{}", 1, NULL), SL_EIO);
	char *v = NULL;
	assert_int_equal(store_get(b, STORE_LEASES, "late", &v, NULL), SL_ENOTFOUND);
	store_close(a);
	store_close(b);
}

static void test_release_hands_over_at_once(void **state)
{
	(void)state;
	struct store *a = open_pg(), *b = open_pg();
	struct store_leader l;
	assert_true(try_lead(a, "ctl-a", 60000, &l));
	assert_int_equal(store_lead_release(a, NULL), SL_OK);
	assert_int_equal(store_lead_epoch(a), 0);
	assert_true(try_lead(b, "ctl-b", 60000, &l));
	assert_int_equal(l.epoch, 2);
	/* a, no longer leading, writes nothing behind the new leader's back
	 * only if it asks again: it does not lead */
	assert_false(try_lead(a, "ctl-a", 60000, &l));
	assert_string_equal(l.holder, "ctl-b");
	store_close(a);
	store_close(b);
}

static void test_sqlite_has_no_leadership(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_store_lead.XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct store *s = NULL;
	assert_int_equal(store_open(dir, &s, NULL), SL_OK);
	assert_false(store_shared(s));
	bool won = true;
	struct sl_diag d;
	assert_int_equal(store_lead_try(s, "ctl", "", 1000, &won, NULL, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "shared"));
	assert_int_equal(store_lead_epoch(s), 0);
	assert_false(store_failed(s));
	store_close(s);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(int argc, char **argv)
{
	int rc = target_init(argc, argv);
	if (rc)
		return rc;
	const struct CMUnitTest pg[] = {
		cmocka_unit_test_setup(test_first_leader_and_standby, fresh),
		cmocka_unit_test_setup(test_takeover_when_session_ends, fresh),
		cmocka_unit_test_setup(test_expired_lease_of_live_session_is_taken_and_its_tx_aborted, fresh),
		cmocka_unit_test_setup(test_deposed_renewal_fails, fresh),
		cmocka_unit_test_setup(test_release_hands_over_at_once, fresh),
	};
	const struct CMUnitTest sq[] = {
		cmocka_unit_test(test_sqlite_has_no_leadership),
	};
	return tgt.pg ? cmocka_run_group_tests_name("leadership on postgres", pg, NULL, NULL)
		      : cmocka_run_group_tests_name("leadership on sqlite", sq, NULL, NULL);
}

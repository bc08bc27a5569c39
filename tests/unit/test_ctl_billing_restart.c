/* test_ctl_billing_restart.c - a restart loads the ledger's stored account
 * totals, not its postings (billing_store.c), and still refuses to apply a
 * posting twice: a posting replayed with the same id after a restart, or
 * after the ledger forgot the postings it held, is a no-op; the same id with
 * other content is a conflict; balances and debits == credits are the same
 * as before the restart.
 *
 * A real controller (ctl_new, not run) on a fresh data directory; postings go
 * through billing_post and are committed as a loop turn would commit them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <time.h>
#include <unistd.h>

#include "billing_int.h"
#include "ctl.h"
#include "ctl_int.h"

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct ctl *open_ctl(const char *data)
{
	struct ctl_opts o = {.data_dir = data, .listen = "127.0.0.1:0", .preempt_notice_s = -1};
	struct ctl *c = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (ctl_new(&o, wall_ns(), &c, &d))
		fail_msg("ctl_new: %s", d.msg);
	return c;
}

static void commit(struct ctl *c)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_false(c->fatal);
	if (c->tx_open && store_commit(c->store, &d))
		fail_msg("commit: %s", d.msg);
	c->tx_open = false;
}

/* Posts (id, type, tenant, amount); returns the error, *applied set. */
static enum sl_err post(struct ctl *c, const char *id, enum ledger_type t, const char *tenant,
			int64_t amount, bool *applied)
{
	struct ledger_posting p;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (ledger_posting_init(&p, id, t, tenant, PLAN_HOURLY, amount, 1796017410123, "test", &d))
		fail_msg("posting %s: %s", id, d.msg);
	return billing_post(c, &p, applied, &d);
}

static void assert_books(struct ctl *c, int64_t acme, int64_t beta, int64_t line)
{
	const struct ledger *l = c->billing->ledger;
	int64_t deb, cre;
	assert_int_equal(ledger_tenant_balance(l, "acme"), acme);
	assert_int_equal(ledger_tenant_balance(l, "beta"), beta);
	assert_int_equal(ledger_credit_line(l, "acme"), line);
	ledger_totals(l, &deb, &cre);
	assert_int_equal(deb, cre);
}

static void test_restart_keeps_balances_and_refuses_replays(void **state)
{
	(void)state;
	char dir[] = "/tmp/sl-billrestart-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char data[sizeof(dir) + 8];
	snprintf(data, sizeof(data), "%s/data", dir);
	char *admin = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(ctl_init_data(data, wall_ns(), &admin, &d), SL_OK);
	free(admin);

	bool applied = false;
	struct ctl *c = open_ctl(data);
	assert_int_equal(post(c, "top.1", LEDGER_TOPUP, "acme", 10000, &applied), SL_OK);
	assert_true(applied);
	assert_int_equal(post(c, "chg.ls-000001.250", LEDGER_CHARGE, "acme", 250, &applied), SL_OK);
	assert_int_equal(post(c, "cl.3", LEDGER_CREDIT_LINE_UP, "acme", 700, &applied), SL_OK);
	assert_int_equal(post(c, "crd.4", LEDGER_CREDIT, "beta", 40, &applied), SL_OK);
	assert_int_equal(post(c, "top.1", LEDGER_TOPUP, "acme", 10000, &applied), SL_OK);
	assert_false(applied); /* known to the ledger */
	commit(c);
	assert_books(c, 9750, 40, 700);
	uint64_t seq = c->billing->post_seq;
	ctl_free(c);

	c = open_ctl(data);
	assert_books(c, 9750, 40, 700);
	assert_int_equal(c->billing->post_seq, seq);
	assert_int_equal(ledger_posting_count(c->billing->ledger), 0); /* nothing replayed */
	/* Replays from before the restart: no-ops found in the store. */
	assert_int_equal(post(c, "chg.ls-000001.250", LEDGER_CHARGE, "acme", 250, &applied), SL_OK);
	assert_false(applied);
	assert_int_equal(post(c, "top.1", LEDGER_TOPUP, "acme", 10000, &applied), SL_OK);
	assert_false(applied);
	assert_int_equal(post(c, "top.1", LEDGER_TOPUP, "acme", 10001, &applied), SL_ECONFLICT);
	assert_books(c, 9750, 40, 700);
	/* A new posting, then the ledger forgets what it holds: still a no-op. */
	assert_int_equal(post(c, "chg.ls-000002.100", LEDGER_CHARGE, "beta", 100, &applied), SL_OK);
	assert_true(applied);
	assert_int_equal(ledger_forget_postings(c->billing->ledger), SL_OK);
	assert_int_equal(post(c, "chg.ls-000002.100", LEDGER_CHARGE, "beta", 100, &applied), SL_OK);
	assert_false(applied);
	assert_int_equal(c->billing->post_seq, seq + 1);
	commit(c);
	ctl_free(c);

	c = open_ctl(data);
	assert_books(c, 9750, -60, 700);
	assert_int_equal(c->billing->post_seq, seq + 1);
	ctl_free(c);
	char cmd[sizeof(dir) + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restart_keeps_balances_and_refuses_replays),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

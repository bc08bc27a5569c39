/* test_ledger.c - double entry: each type moves money between its two
 * accounts, replays are no-ops, conflicting replays and bad postings change
 * nothing, the start check, and a long random sequence with replays that
 * keeps debits == credits and matches a plain per-tenant tally. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "calendar.h"
#include "ledger.h"
#include "money.h"

#define T0 INT64_C(1796017410123) /* 2026-11-30T05:43:30.123Z */

static struct ledger *mk(void)
{
	struct ledger *l = NULL;
	assert_int_equal(ledger_new(&l), SL_OK);
	return l;
}

static void post(struct ledger *l, const char *id, enum ledger_type t,
		 const char *tenant, enum plan plan, int64_t amount,
		 bool want_applied)
{
	struct ledger_posting p;
	struct sl_diag d;
	bool applied = !want_applied;
	sl_diag_clear(&d);
	if (ledger_posting_init(&p, id, t, tenant, plan, amount, T0, "test",
				&d) != SL_OK ||
	    ledger_apply(l, &p, &applied, &d) != SL_OK)
		fail_msg("post %s: %s", id, d.msg);
	assert_int_equal(applied, want_applied);
}

static void assert_balanced(const struct ledger *l)
{
	int64_t dsum, csum, bal = 0;
	ledger_totals(l, &dsum, &csum);
	assert_int_equal(dsum, csum);
	for (size_t i = 0; i < ledger_account_count(l); i++) {
		const struct ledger_account *a = ledger_account_at(l, i);
		bal += a->credits - a->debits;
	}
	assert_int_equal(bal, 0);
}

static void test_types(void **state)
{
	(void)state;
	struct ledger *l = mk();
	post(l, "p1", LEDGER_TOPUP, "acme", PLAN_HOURLY, 100000, true);
	post(l, "p2", LEDGER_CHARGE, "acme", PLAN_SPOT, 2500, true);
	post(l, "p3", LEDGER_CHARGE, "acme", PLAN_HOURLY, 500, true);
	post(l, "p4", LEDGER_HOSTING_FEE, "acme", PLAN_HOURLY, 30000, true);
	post(l, "p5", LEDGER_CREDIT, "acme", PLAN_HOURLY, 1000, true);
	post(l, "p6", LEDGER_REFUND, "acme", PLAN_HOURLY, 200, true);
	post(l, "p7", LEDGER_CREDIT_LINE_UP, "acme", PLAN_HOURLY, 50000, true);
	post(l, "p8", LEDGER_CREDIT_LINE_DOWN, "acme", PLAN_HOURLY, 20000, true);
	struct ledger_posting down;
	struct sl_diag d;
	assert_int_equal(ledger_posting_init(&down, "p9", LEDGER_CREDIT_LINE_DOWN,
					     "acme", PLAN_HOURLY, 30001, T0, NULL,
					     &d), SL_OK);
	sl_diag_clear(&d);
	assert_int_equal(ledger_apply(l, &down, NULL, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "negative"));
	assert_int_equal(ledger_tenant_balance(l, "acme"),
			 100000 - 2500 - 500 - 30000 + 1000 + 200);
	assert_int_equal(ledger_credit_line(l, "acme"), 30000);
	assert_int_equal(ledger_balance(l, LEDGER_ACCT_REVENUE, "spot"), 2500);
	assert_int_equal(ledger_balance(l, LEDGER_ACCT_REVENUE, "hourly"), 500);
	assert_int_equal(ledger_balance(l, LEDGER_ACCT_HOSTING, ""), 30000);
	assert_int_equal(ledger_balance(l, LEDGER_ACCT_CASH, ""), -100000);
	assert_int_equal(ledger_balance(l, LEDGER_ACCT_CREDITS, ""), -1000);
	assert_int_equal(ledger_balance(l, LEDGER_ACCT_REFUNDS, ""), -200);
	assert_int_equal(ledger_tenant_balance(l, "nobody"), 0);
	assert_balanced(l);
	assert_int_equal(ledger_posting_count(l), 8);
	assert_string_equal(ledger_posting_at(l, 1)->id, "p2");
	assert_non_null(ledger_find(l, "p5"));
	assert_null(ledger_find(l, "p9"));
	assert_string_equal(ledger_type_name(LEDGER_HOSTING_FEE), "hosting_fee");
	assert_string_equal(ledger_kind_name(LEDGER_ACCT_CREDIT_LINE),
			    "credit_line");
	ledger_free(l);
}

static void test_replay_and_conflict(void **state)
{
	(void)state;
	struct ledger *l = mk();
	post(l, "topup-1", LEDGER_TOPUP, "acme", PLAN_HOURLY, 5000, true);
	post(l, "topup-1", LEDGER_TOPUP, "acme", PLAN_HOURLY, 5000, false);
	assert_int_equal(ledger_tenant_balance(l, "acme"), 5000);
	assert_int_equal(ledger_posting_count(l), 1);
	struct ledger_posting p;
	struct sl_diag d;
	assert_int_equal(ledger_posting_init(&p, "topup-1", LEDGER_TOPUP, "acme",
					     PLAN_HOURLY, 6000, T0, "test", &d),
			 SL_OK);
	bool applied = true;
	sl_diag_clear(&d);
	assert_int_equal(ledger_apply(l, &p, &applied, &d), SL_ECONFLICT);
	assert_false(applied);
	assert_non_null(strstr(d.msg, "different"));
	assert_int_equal(ledger_tenant_balance(l, "acme"), 5000);
	ledger_free(l);
}

static void test_bad_postings(void **state)
{
	(void)state;
	struct ledger *l = mk();
	post(l, "seed", LEDGER_TOPUP, "acme", PLAN_HOURLY, 5000, true);
	struct {
		const char *id, *tenant, *reason;
		int type;
		int64_t amount, at;
		enum sl_err want;
	} cases[] = {
		{"x1", "acme", "r", LEDGER_TOPUP, -5, T0, SL_EINVAL},
		{"x2", "acme", "r", LEDGER_TOPUP, 0, T0, SL_EINVAL},
		{"x3", "acme", "r", LEDGER_TOPUP, MONEY_MAX + 1, T0, SL_ELIMIT},
		{"", "acme", "r", LEDGER_TOPUP, 5, T0, SL_EINVAL},
		{"has space", "acme", "r", LEDGER_TOPUP, 5, T0, SL_EINVAL},
		{"x4", "", "r", LEDGER_TOPUP, 5, T0, SL_EINVAL},
		{"x5", "a/b", "r", LEDGER_TOPUP, 5, T0, SL_EINVAL},
		{"x6", "acme", "tab\there", LEDGER_TOPUP, 5, T0, SL_EINVAL},
		{"x7", "acme", "\xc3\x28", LEDGER_TOPUP, 5, T0, SL_EINVAL},
		{"x8", "acme", "\xed\xa0\x80", LEDGER_TOPUP, 5, T0, SL_EINVAL},
		{"x9", "acme", "r", 99, 5, T0, SL_EINVAL},
		{"x10", "acme", "r", LEDGER_TOPUP, 5, 0, SL_EINVAL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ledger_posting p;
		struct sl_diag d;
		sl_diag_clear(&d);
		enum sl_err e = ledger_posting_init(
			&p, cases[i].id, (enum ledger_type)cases[i].type,
			cases[i].tenant, PLAN_HOURLY, cases[i].amount, cases[i].at,
			cases[i].reason, &d);
		if (e != cases[i].want)
			fail_msg("case %zu: %s (%s)", i, sl_err_code(e), d.msg);
		assert_true(d.msg[0] != 0);
		/* The same posting forced past init is refused by apply too. */
		memset(&p, 0, sizeof(p));
		snprintf(p.id, sizeof(p.id), "%s", cases[i].id);
		snprintf(p.tenant, sizeof(p.tenant), "%s", cases[i].tenant);
		snprintf(p.reason, sizeof(p.reason), "%s", cases[i].reason);
		p.type = (enum ledger_type)cases[i].type;
		p.amount = cases[i].amount;
		p.at_ms = cases[i].at;
		assert_int_equal(ledger_apply(l, &p, NULL, &d), cases[i].want);
	}
	/* UTF-8 reasons are fine. */
	post(l, "cn", LEDGER_CREDIT, "acme", PLAN_HOURLY, 1, true);
	struct ledger_posting p;
	assert_int_equal(ledger_posting_init(&p, "cn2", LEDGER_CREDIT, "acme",
					     PLAN_HOURLY, 1, T0,
					     "SLA \xe8\xa1\xa5\xe5\x81\xbf", NULL),
			 SL_OK);
	assert_int_equal(ledger_apply(l, &p, NULL, NULL), SL_OK);
	assert_int_equal(ledger_posting_count(l), 3);
	assert_int_equal(ledger_tenant_balance(l, "acme"), 5002);
	/* Totals past MONEY_MAX: refused, nothing changed. */
	post(l, "big", LEDGER_TOPUP, "acme", PLAN_HOURLY, MONEY_MAX - 5002 - 2,
	     true);
	struct sl_diag d;
	assert_int_equal(ledger_posting_init(&p, "big2", LEDGER_TOPUP, "acme",
					     PLAN_HOURLY, 10, T0, NULL, &d),
			 SL_OK);
	assert_int_equal(ledger_apply(l, &p, NULL, &d), SL_ELIMIT);
	assert_int_equal(ledger_posting_count(l), 4);
	assert_balanced(l);
	ledger_free(l);
}

static void test_can_start(void **state)
{
	(void)state;
	struct ledger *l = mk();
	struct sl_diag d;
	assert_int_equal(ledger_can_start(l, "acme", 0, &d), SL_OK);
	assert_int_equal(ledger_can_start(l, "acme", 1, &d), SL_EQUOTA);
	post(l, "t", LEDGER_TOPUP, "acme", PLAN_HOURLY, 1000, true);
	post(l, "c", LEDGER_CREDIT_LINE_UP, "acme", PLAN_HOURLY, 500, true);
	assert_int_equal(ledger_can_start(l, "acme", 1500, &d), SL_OK);
	sl_diag_clear(&d);
	assert_int_equal(ledger_can_start(l, "acme", 1501, &d), SL_EQUOTA);
	assert_non_null(strstr(d.msg, "1501"));
	assert_non_null(strstr(d.hint, "top up"));
	/* Usage beyond the balance is still booked; the line covers it. */
	post(l, "u", LEDGER_CHARGE, "acme", PLAN_HOURLY, 1200, true);
	assert_int_equal(ledger_tenant_balance(l, "acme"), -200);
	assert_int_equal(ledger_can_start(l, "acme", 300, &d), SL_OK);
	assert_int_equal(ledger_can_start(l, "acme", 301, &d), SL_EQUOTA);
	assert_int_equal(ledger_can_start(l, "acme", -1, &d), SL_EINVAL);
	ledger_free(l);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_random_with_replays(void **state)
{
	(void)state;
	static const char *tenants[] = {"acme", "beta", "gamma", "delta"};
	int64_t bal[4] = {0}, line[4] = {0};
	struct ledger *l = mk();
	uint64_t s = 0x1edbe7ULL;
	size_t fresh = 0;
	for (int i = 0; i < 20000; i++) {
		struct ledger_posting p;
		char id[32];
		bool replay = i > 0 && rnd(&s) % 3 == 0;
		if (replay) {
			/* Replay an earlier posting exactly: nothing moves. */
			size_t k = (size_t)(rnd(&s) % ledger_posting_count(l));
			p = *ledger_posting_at(l, k);
			int64_t before = ledger_tenant_balance(l, p.tenant);
			bool applied = true;
			assert_int_equal(ledger_apply(l, &p, &applied, NULL), SL_OK);
			assert_false(applied);
			assert_int_equal(ledger_tenant_balance(l, p.tenant), before);
			/* The same id with other content: refused, no change. */
			p.amount += 1;
			assert_int_equal(ledger_apply(l, &p, &applied, NULL),
					 SL_ECONFLICT);
			assert_int_equal(ledger_tenant_balance(l, p.tenant), before);
			continue;
		}
		int t = (int)(rnd(&s) % 4);
		enum ledger_type ty = (enum ledger_type)(rnd(&s) % LEDGER_TYPE__COUNT);
		int64_t amt = (int64_t)(rnd(&s) % 100000) + 1;
		snprintf(id, sizeof(id), "p-%d", i);
		assert_int_equal(ledger_posting_init(&p, id, ty, tenants[t],
						     (enum plan)(rnd(&s) % 3),
						     amt, T0 + i, "r", NULL),
				 SL_OK);
		if (ty == LEDGER_CREDIT_LINE_DOWN && amt > line[t]) {
			/* A line never goes below zero: refused, no change. */
			assert_int_equal(ledger_apply(l, &p, NULL, NULL), SL_EINVAL);
			assert_null(ledger_find(l, id));
			continue;
		}
		assert_int_equal(ledger_apply(l, &p, NULL, NULL), SL_OK);
		fresh++;
		switch (ty) {
		case LEDGER_TOPUP:
		case LEDGER_CREDIT:
		case LEDGER_REFUND: bal[t] += amt; break;
		case LEDGER_CHARGE:
		case LEDGER_HOSTING_FEE: bal[t] -= amt; break;
		case LEDGER_CREDIT_LINE_UP: line[t] += amt; break;
		case LEDGER_CREDIT_LINE_DOWN: line[t] -= amt; break;
		}
		if (i % 997 == 0)
			assert_balanced(l);
	}
	assert_balanced(l);
	assert_int_equal(ledger_posting_count(l), fresh);
	for (int t = 0; t < 4; t++) {
		assert_int_equal(ledger_tenant_balance(l, tenants[t]), bal[t]);
		assert_int_equal(ledger_credit_line(l, tenants[t]), line[t]);
	}
	ledger_free(l);
}

/* A ledger restored from another's account totals has the same balances
 * and totals; a bad or repeated account is refused without change; after
 * forgetting its postings the balances stay and the ids are unknown. */
static void test_restore_and_forget(void **state)
{
	(void)state;
	struct ledger *a = mk(), *b = mk();
	struct sl_diag d;
	sl_diag_clear(&d);
	post(a, "t1", LEDGER_TOPUP, "acme", PLAN_HOURLY, 10000, true);
	post(a, "c1", LEDGER_CHARGE, "acme", PLAN_SPOT, 2500, true);
	post(a, "l1", LEDGER_CREDIT_LINE_UP, "acme", PLAN_HOURLY, 700, true);
	post(a, "h1", LEDGER_HOSTING_FEE, "beta", PLAN_HOURLY, 300, true);
	for (size_t i = 0; i < ledger_account_count(a); i++)
		assert_int_equal(ledger_restore(b, ledger_account_at(a, i), &d), SL_OK);
	assert_int_equal(ledger_tenant_balance(b, "acme"), 7500);
	assert_int_equal(ledger_tenant_balance(b, "beta"), -300);
	assert_int_equal(ledger_credit_line(b, "acme"), 700);
	assert_int_equal(ledger_balance(b, LEDGER_ACCT_REVENUE, "spot"), 2500);
	assert_balanced(b);
	int64_t da, ca, db, cb;
	ledger_totals(a, &da, &ca);
	ledger_totals(b, &db, &cb);
	assert_int_equal(da, db);
	assert_int_equal(ca, cb);
	assert_int_equal(ledger_posting_count(b), 0);
	const struct ledger_account *x = ledger_account_find(b, LEDGER_ACCT_TENANT, "acme");
	assert_non_null(x);
	assert_int_equal(x->debits, 2500);
	assert_null(ledger_account_find(b, LEDGER_ACCT_TENANT, "nobody"));
	/* Refused: twice, bad kind, bad key, negative totals. */
	assert_int_equal(ledger_restore(b, x, &d), SL_EINVAL);
	struct ledger_account bad = *x;
	bad.kind = (enum ledger_kind)LEDGER_KIND__COUNT;
	assert_int_equal(ledger_restore(b, &bad, &d), SL_EINVAL);
	bad = *x;
	snprintf(bad.key, sizeof(bad.key), "no spaces");
	assert_int_equal(ledger_restore(b, &bad, &d), SL_EINVAL);
	bad = *x;
	snprintf(bad.key, sizeof(bad.key), "other");
	bad.debits = -1;
	assert_int_equal(ledger_restore(b, &bad, &d), SL_EINVAL);
	bad.kind = LEDGER_ACCT_CASH;
	bad.debits = 0;
	assert_int_equal(ledger_restore(b, &bad, &d), SL_EINVAL); /* cash has key "" */
	assert_int_equal(ledger_account_count(b), ledger_account_count(a));
	/* Posting goes on from the restored totals. */
	post(b, "c2", LEDGER_CHARGE, "acme", PLAN_SPOT, 500, true);
	assert_int_equal(ledger_tenant_balance(b, "acme"), 7000);
	assert_balanced(b);
	/* A posting is the same as another in every field but the id. */
	struct ledger_posting p = *ledger_find(b, "c2"), q = p;
	assert_true(ledger_posting_same(&p, &q));
	q.amount++;
	assert_false(ledger_posting_same(&p, &q));
	/* Forgetting postings keeps balances; the id is then new to the ledger. */
	assert_int_equal(ledger_forget_postings(b), SL_OK);
	assert_int_equal(ledger_posting_count(b), 0);
	assert_null(ledger_find(b, "c2"));
	assert_int_equal(ledger_tenant_balance(b, "acme"), 7000);
	post(b, "c3", LEDGER_CHARGE, "acme", PLAN_SPOT, 1, true);
	assert_int_equal(ledger_posting_count(b), 1);
	assert_balanced(b);
	ledger_free(a);
	ledger_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_replay_and_conflict),
		cmocka_unit_test(test_bad_postings),
		cmocka_unit_test(test_can_start),
		cmocka_unit_test(test_random_with_replays),
		cmocka_unit_test(test_restore_and_forget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

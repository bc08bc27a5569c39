/* test_rating.c - the price book and rating.
 *
 * The centre is a reference biller written separately here with the plainest
 * arithmetic: collect every instant where anything could change (events,
 * every price entry's start, every month start of its own month table), walk
 * the elementary intervals between them, look the price up by a linear scan,
 * add GPU-ms into a flat array per (month, price), and round each sum half up
 * with 128-bit integers. It shares no code with rating.c, pricebook.c or
 * calendar.c, and must agree with them to the fen over thousands of random
 * histories (fixed seed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "calendar.h"
#include "money.h"
#include "pricebook.h"
#include "rating.h"

#define H INT64_C(3600000)
#define DAY (24 * H)

static int64_t at(const char *s)
{
	int64_t ms = 0;
	struct sl_diag d;
	if (cal_parse_rfc3339(s, &ms, &d) != SL_OK)
		fail_msg("parse '%s': %s", s, d.msg);
	return ms;
}

static struct pricebook *book(void)
{
	struct pricebook *pb = NULL;
	assert_int_equal(pricebook_new(&pb), SL_OK);
	return pb;
}

static void put(struct pricebook *pb, enum price_scope sc, const char *name,
		const char *model, enum plan plan, int64_t from,
		int64_t price)
{
	struct price_entry e;
	struct sl_diag d;
	if (price_entry_init(&e, sc, name, model, plan, from, price, &d) != SL_OK ||
	    pricebook_restore(pb, &e, &d) != SL_OK)
		fail_msg("put: %s", d.msg);
}

/* ---------------------------------------------------------------- book */

static void test_book_scopes(void **state)
{
	(void)state;
	struct pricebook *pb = book();
	int64_t t0 = at("2026-01-01T00:00:00Z");
	put(pb, PRICE_GLOBAL, "", "h100-sxm", PLAN_HOURLY, t0, 2000);
	put(pb, PRICE_REGION, "cn-east", "h100-sxm", PLAN_HOURLY, t0 + 10 * DAY,
	    1800);
	put(pb, PRICE_SITE, "sh-1", "h100-sxm", PLAN_HOURLY, t0 + 20 * DAY, 1500);
	put(pb, PRICE_GLOBAL, "", "h100-sxm", PLAN_SPOT, t0, 700);
	struct price_key k = {"sh-1", "cn-east", "h100-sxm", PLAN_HOURLY};
	struct price_quote q;
	assert_int_equal(pricebook_at(pb, &k, t0 + DAY, &q, NULL), SL_OK);
	assert_int_equal(q.price, 2000);
	assert_int_equal(q.scope, PRICE_GLOBAL);
	assert_int_equal(q.until_ms, t0 + 10 * DAY); /* the region takes over */
	assert_int_equal(pricebook_at(pb, &k, t0 + 15 * DAY, &q, NULL), SL_OK);
	assert_int_equal(q.price, 1800);
	assert_int_equal(q.until_ms, t0 + 20 * DAY);
	assert_int_equal(pricebook_at(pb, &k, t0 + 25 * DAY, &q, NULL), SL_OK);
	assert_int_equal(q.price, 1500);
	assert_int_equal(q.scope, PRICE_SITE);
	assert_int_equal(q.until_ms, INT64_MAX);
	/* Another site of the region gets the region's price. */
	struct price_key k2 = {"sh-2", "cn-east", "h100-sxm", PLAN_HOURLY};
	assert_int_equal(pricebook_at(pb, &k2, t0 + 25 * DAY, &q, NULL), SL_OK);
	assert_int_equal(q.price, 1800);
	/* No site or region known: the global price. */
	struct price_key k3 = {NULL, NULL, "h100-sxm", PLAN_SPOT};
	assert_int_equal(pricebook_at(pb, &k3, t0 + 25 * DAY, &q, NULL), SL_OK);
	assert_int_equal(q.price, 700);
	/* Before any entry, or another model: not found, with the key named. */
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(pricebook_at(pb, &k, t0 - 1, &q, &d), SL_ENOTFOUND);
	assert_non_null(strstr(d.msg, "h100-sxm"));
	struct price_key k4 = {"sh-1", "cn-east", "l40s", PLAN_HOURLY};
	assert_int_equal(pricebook_at(pb, &k4, t0 + DAY, &q, NULL), SL_ENOTFOUND);
	/* Listing is in a stable key order. */
	assert_int_equal(pricebook_count(pb), 4);
	assert_int_equal(pricebook_entry(pb, 0)->scope, PRICE_GLOBAL);
	assert_int_equal(pricebook_entry(pb, 0)->plan, PLAN_HOURLY);
	assert_int_equal(pricebook_entry(pb, 1)->plan, PLAN_SPOT);
	assert_int_equal(pricebook_entry(pb, 3)->scope, PRICE_SITE);
	assert_null(pricebook_entry(pb, 4));
	pricebook_free(pb);
}

static void test_book_refusals(void **state)
{
	(void)state;
	struct pricebook *pb = book();
	int64_t now = at("2026-11-30T05:00:00Z");
	struct price_entry e;
	struct sl_diag d;
	assert_int_equal(price_entry_init(&e, PRICE_GLOBAL, NULL, "h100-sxm",
					  PLAN_HOURLY, now - 1, 1000, &d), SL_OK);
	sl_diag_clear(&d);
	assert_int_equal(pricebook_set(pb, &e, now, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "re-price"));
	assert_int_equal(pricebook_count(pb), 0);
	e.from_ms = now;
	assert_int_equal(pricebook_set(pb, &e, now, &d), SL_OK);
	assert_int_equal(pricebook_set(pb, &e, now, &d), SL_EEXIST);
	assert_int_equal(pricebook_count(pb), 1);
	e.from_ms = now + H;
	e.price = 1100;
	assert_int_equal(pricebook_set(pb, &e, now, &d), SL_OK);
	struct {
		enum price_scope sc;
		const char *name, *model;
		enum plan plan;
		int64_t from, price;
		enum sl_err want;
	} bad[] = {
		{PRICE_GLOBAL, "", "h100-sxm", PLAN_HOURLY, now, -1, SL_EINVAL},
		{PRICE_GLOBAL, "", "h100-sxm", PLAN_HOURLY, now, PRICE_MAX + 1,
		 SL_ELIMIT},
		{PRICE_REGION, "", "h100-sxm", PLAN_HOURLY, now, 1, SL_EINVAL},
		{PRICE_SITE, "a b", "h100-sxm", PLAN_HOURLY, now, 1, SL_EINVAL},
		{PRICE_GLOBAL, "", "", PLAN_HOURLY, now, 1, SL_EINVAL},
		{PRICE_GLOBAL, "", "h100-sxm", PLAN_HOSTING, now, 1, SL_EINVAL},
		{PRICE_GLOBAL, "", "h100\"", PLAN_SPOT, now, 1, SL_EINVAL},
		{PRICE_GLOBAL, "", "h100-sxm", PLAN_HOURLY, 5, 1, SL_EINVAL},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sl_diag_clear(&d);
		enum sl_err r = price_entry_init(&e, bad[i].sc, bad[i].name,
						 bad[i].model, bad[i].plan,
						 bad[i].from, bad[i].price, &d);
		if (r != bad[i].want)
			fail_msg("case %zu: %s", i, sl_err_code(r));
		assert_true(d.msg[0] != 0);
	}
	char longname[80];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[79] = 0;
	assert_int_equal(price_entry_init(&e, PRICE_SITE, longname, "m",
					  PLAN_HOURLY, now, 1, &d), SL_ELIMIT);
	assert_int_equal(pricebook_count(pb), 2);
	enum plan p;
	assert_int_equal(plan_parse("spot", &p, NULL), SL_OK);
	assert_int_equal(p, PLAN_SPOT);
	assert_int_equal(plan_parse("weekly", &p, &d), SL_EINVAL);
	assert_string_equal(plan_name(PLAN_MONTHLY), "monthly");
	pricebook_free(pb);
}

/* -------------------------------------------------------- table tests */

static void rate_ok(struct pricebook *pb, const struct cal_zone *z,
		    const struct rating_lease *l, int64_t from, int64_t to,
		    struct rating_lines *out)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	if (rating_rate(pb, z, l, from, to, out, &d) != SL_OK)
		fail_msg("rate: %s", d.msg);
}

static void test_round_once_per_line(void **state)
{
	(void)state;
	struct pricebook *pb = book();
	struct cal_zone utc;
	cal_zone_utc(&utc);
	int64_t t0 = at("2026-11-02T00:00:00Z");
	put(pb, PRICE_GLOBAL, "", "m", PLAN_HOURLY, CAL_MIN_MS, 1);
	/* 15 min + 15 min at 1 fen/h: per interval 0.25+0.25 -> 0, once -> 0.5
	 * -> 1 (half up). */
	struct rating_event ev[] = {
		{t0, RATING_STARTED, 1, 0},
		{t0 + H / 4, RATING_SCALED, 0, 0},
		{t0 + H, RATING_SCALED, 1, 0},
		{t0 + H + H / 4, RATING_ENDED, 0, RATING_END_RELEASED},
	};
	struct rating_lease l = {"L1", "t", NULL, NULL, "m", PLAN_HOURLY, ev, 4,
				 0, 0, 0};
	struct rating_lines out;
	rating_lines_init(&out);
	rate_ok(pb, &utc, &l, CAL_MIN_MS, CAL_END_MS, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.v[0].quantity, H / 2);
	assert_int_equal(out.v[0].amount, 1);
	assert_int_equal(out.v[0].first_ms, t0);
	assert_int_equal(out.v[0].end_ms, t0 + H + H / 4);
	assert_string_equal(out.v[0].lease, "L1");
	/* Just under half a fen rounds down. */
	ev[3].at_ms -= 1;
	out.n = 0;
	rate_ok(pb, &utc, &l, CAL_MIN_MS, CAL_END_MS, &out);
	assert_int_equal(out.v[0].amount, 0);
	/* 2.5 fen -> 3 (not to even). */
	ev[0].gpus = 5;
	ev[2].gpus = 5;
	ev[3].at_ms += 1;
	out.n = 0;
	rate_ok(pb, &utc, &l, CAL_MIN_MS, CAL_END_MS, &out);
	assert_int_equal(out.v[0].amount, 3);
	rating_lines_release(&out);
	pricebook_free(pb);
}

static void test_splits(void **state)
{
	(void)state;
	struct pricebook *pb = book();
	struct cal_zone sh;
	assert_int_equal(cal_zone_parse("Asia/Shanghai", &sh, NULL), SL_OK);
	int64_t p1 = at("2026-12-31T20:00:00+08:00");
	int64_t p2 = at("2027-01-01T04:00:00+08:00");
	put(pb, PRICE_GLOBAL, "", "h100-sxm", PLAN_HOURLY, CAL_MIN_MS, 1000);
	put(pb, PRICE_GLOBAL, "", "h100-sxm", PLAN_HOURLY, p1, 1200);
	put(pb, PRICE_GLOBAL, "", "h100-sxm", PLAN_HOURLY, p2, 1000);
	/* 8 GPUs from Dec 31 18:00 to Jan 1 06:00 Shanghai, 4 GPUs from 02:00. */
	struct rating_event ev[] = {
		{at("2026-12-31T18:00:00+08:00"), RATING_STARTED, 8, 0},
		{at("2027-01-01T02:00:00+08:00"), RATING_SCALED, 4, 0},
		{at("2027-01-01T06:00:00+08:00"), RATING_ENDED, 0,
		 RATING_END_PREEMPTED},
	};
	struct rating_lease l = {"L", "t", "s", "r", "h100-sxm", PLAN_HOURLY, ev,
				 3, 0, 0, 0};
	struct rating_lines out;
	rating_lines_init(&out);
	rate_ok(pb, &sh, &l, CAL_MIN_MS, CAL_END_MS, &out);
	/* Dec: 2h x8 @1000, 4h x8 @1200. Jan: 2h x8 @1200 + 2h x4 @1200,
	 * 2h x4 @1000. */
	assert_int_equal(out.n, 4);
	assert_int_equal(out.v[0].month.month, 12);
	assert_int_equal(out.v[0].unit_price, 1000);
	assert_int_equal(out.v[0].quantity, 16 * H);
	assert_int_equal(out.v[0].amount, 16000);
	assert_int_equal(out.v[1].month.month, 12);
	assert_int_equal(out.v[1].unit_price, 1200);
	assert_int_equal(out.v[1].amount, 32 * 1200);
	assert_int_equal(out.v[2].month.year, 2027);
	assert_int_equal(out.v[2].unit_price, 1200);
	assert_int_equal(out.v[2].quantity, 24 * H);
	assert_int_equal(out.v[3].unit_price, 1000);
	assert_int_equal(out.v[3].quantity, 8 * H);
	/* The invoice window of January alone gives January's lines. */
	out.n = 0;
	int64_t js, je;
	assert_int_equal(cal_month_start(&sh, (struct cal_month){2027, 1}, &js,
					 NULL), SL_OK);
	assert_int_equal(cal_month_end(&sh, (struct cal_month){2027, 1}, &je,
				       NULL), SL_OK);
	rate_ok(pb, &sh, &l, js, je, &out);
	assert_int_equal(out.n, 2);
	assert_int_equal(out.v[0].quantity, 24 * H);
	/* A->B->A in one month is one line per price. */
	struct rating_event ev2[] = {
		{at("2026-12-31T19:00:00+08:00"), RATING_STARTED, 1, 0},
		{at("2026-12-31T23:00:00+08:00"), RATING_ENDED, 0, 0},
	};
	put(pb, PRICE_GLOBAL, "", "h100-sxm", PLAN_HOURLY,
	    at("2026-12-31T21:00:00+08:00"), 1000);
	struct rating_lease l2 = {"L2", "t", NULL, NULL, "h100-sxm", PLAN_HOURLY,
				  ev2, 2, 0, 0, 0};
	out.n = 0;
	rate_ok(pb, &sh, &l2, CAL_MIN_MS, CAL_END_MS, &out);
	assert_int_equal(out.n, 2);
	assert_int_equal(out.v[0].unit_price, 1000);
	assert_int_equal(out.v[0].quantity, 3 * H); /* 19-20 and 21-23 */
	assert_int_equal(out.v[1].unit_price, 1200);
	assert_int_equal(out.v[1].quantity, H);     /* 20-21 */
	rating_lines_release(&out);
	pricebook_free(pb);
}

static void test_running_and_zero(void **state)
{
	(void)state;
	struct pricebook *pb = book();
	struct cal_zone utc;
	cal_zone_utc(&utc);
	put(pb, PRICE_GLOBAL, "", "m", PLAN_SPOT, CAL_MIN_MS, 360);
	int64_t t0 = at("2026-11-10T00:00:00Z");
	struct rating_event ev[] = {{t0, RATING_STARTED, 2, 0},
				    {t0, RATING_ENDED, 0, RATING_END_FAILED}};
	struct rating_lease l = {"Z", "t", NULL, NULL, "m", PLAN_SPOT, ev, 2, 0,
				 0, 0};
	struct rating_lines out;
	rating_lines_init(&out);
	rate_ok(pb, &utc, &l, CAL_MIN_MS, CAL_END_MS, &out);
	assert_int_equal(out.n, 0); /* zero-length: nothing */
	l.nevents = 1;              /* still running: counts up to to_ms */
	rate_ok(pb, &utc, &l, CAL_MIN_MS, t0 + 1000, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.v[0].quantity, 2000);
	assert_int_equal(out.v[0].amount, 0); /* 2000 GPU-ms x 360 / 3.6e6 = 0.2 */
	l.nevents = 0; /* never started */
	out.n = 0;
	rate_ok(pb, &utc, &l, CAL_MIN_MS, CAL_END_MS, &out);
	assert_int_equal(out.n, 0);
	rating_lines_release(&out);
	pricebook_free(pb);
}

static void test_monthly(void **state)
{
	(void)state;
	struct pricebook *pb = book();
	struct cal_zone sh;
	assert_int_equal(cal_zone_parse("Asia/Shanghai", &sh, NULL), SL_OK);
	int64_t bought = at("2028-01-31T10:00:00+08:00");
	put(pb, PRICE_GLOBAL, "", "h100-sxm", PLAN_MONTHLY, CAL_MIN_MS, 900000);
	put(pb, PRICE_GLOBAL, "", "h100-sxm", PLAN_MONTHLY, bought + 1, 1);
	/* Released after a day: the events do not matter, the term does. */
	struct rating_event ev[] = {{bought, RATING_STARTED, 8, 0},
				    {bought + DAY, RATING_ENDED, 0, 0}};
	struct rating_lease l = {"M", "t", NULL, NULL, "h100-sxm", PLAN_MONTHLY,
				 ev, 2, bought, 3, 8};
	struct rating_lines out;
	rating_lines_init(&out);
	rate_ok(pb, &sh, &l, CAL_MIN_MS, CAL_END_MS, &out);
	assert_int_equal(out.n, 3);
	int want_month[3] = {1, 2, 3};
	const char *due[3] = {"2028-01-31T10:00:00+08:00",
			      "2028-02-29T10:00:00+08:00",
			      "2028-03-31T10:00:00+08:00"};
	for (int i = 0; i < 3; i++) {
		assert_int_equal(out.v[i].month.month, want_month[i]);
		assert_int_equal(out.v[i].first_ms, at(due[i]));
		assert_int_equal(out.v[i].quantity, 8);
		assert_int_equal(out.v[i].unit_price, 900000);
		assert_int_equal(out.v[i].amount, 7200000);
		assert_int_equal(out.v[i].plan, PLAN_MONTHLY);
	}
	assert_int_equal(out.v[0].end_ms, at(due[1]));
	/* February's invoice window holds one installment. */
	int64_t fs, fe;
	assert_int_equal(cal_month_start(&sh, (struct cal_month){2028, 2}, &fs,
					 NULL), SL_OK);
	assert_int_equal(cal_month_end(&sh, (struct cal_month){2028, 2}, &fe,
				       NULL), SL_OK);
	out.n = 0;
	rate_ok(pb, &sh, &l, fs, fe, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.v[0].first_ms, at(due[1]));
	struct sl_diag d;
	l.term_months = 0;
	assert_int_equal(rating_rate(pb, &sh, &l, CAL_MIN_MS, CAL_END_MS, &out, &d),
			 SL_EINVAL);
	l.term_months = RATING_MAX_TERM_MONTHS + 1;
	assert_int_equal(rating_rate(pb, &sh, &l, CAL_MIN_MS, CAL_END_MS, &out, &d),
			 SL_ELIMIT);
	l.term_months = 1;
	l.gpus = RATING_MAX_GPUS + 1;
	assert_int_equal(rating_rate(pb, &sh, &l, CAL_MIN_MS, CAL_END_MS, &out, &d),
			 SL_ELIMIT);
	assert_int_equal(out.n, 1);
	rating_lines_release(&out);
	pricebook_free(pb);
}

static void test_hosting(void **state)
{
	(void)state;
	struct pricebook *pb = book();
	struct cal_zone utc;
	cal_zone_utc(&utc);
	put(pb, PRICE_SITE, "sh-1", "", PLAN_HOSTING, CAL_MIN_MS, 3000000);
	/* Whole February 2028 (29 days) pays exactly the fee; half of
	 * March 1..16 00:00 (15 of 31 days) pays 15/31 of it, rounded once. */
	struct rating_event ev[] = {
		{at("2028-02-01T00:00:00Z"), RATING_STARTED, 1, 0},
		{at("2028-03-16T00:00:00Z"), RATING_ENDED, 0, 0},
	};
	struct rating_lease l = {"srv-7", "t", "sh-1", "cn-east", "",
				 PLAN_HOSTING, ev, 2, 0, 0, 0};
	struct rating_lines out;
	rating_lines_init(&out);
	rate_ok(pb, &utc, &l, CAL_MIN_MS, CAL_END_MS, &out);
	assert_int_equal(out.n, 2);
	assert_int_equal(out.v[0].amount, 3000000);
	assert_int_equal(out.v[0].quantity, 29 * DAY);
	assert_int_equal(out.v[1].amount, (3000000 * 15 + 15) / 31); /* 1451613 */
	rating_lines_release(&out);
	pricebook_free(pb);
}

/* An instance's data disk (plan storage): GiB-ms over the calendar month's
 * ms, like hosting; paused meters (0 units) and no-GPU time (per hour, no
 * model) rate as the events say. */
static void test_storage_and_nogpu(void **state)
{
	(void)state;
	struct pricebook *pb = book();
	struct cal_zone utc;
	cal_zone_utc(&utc);
	put(pb, PRICE_GLOBAL, "", "", PLAN_STORAGE, CAL_MIN_MS, 3000); /* 30.00 per GiB-month */
	put(pb, PRICE_GLOBAL, "", "", PLAN_NOGPU, CAL_MIN_MS, 120);    /* 1.20 per hour */
	struct rating_event ev[] = {
		{at("2028-02-01T00:00:00Z"), RATING_STARTED, 10, 0},
		{at("2028-02-15T12:00:00Z"), RATING_ENDED, 10, 0},
	};
	struct rating_lease l = {"in-000001.disk", "t", "s1", "r1", "", PLAN_STORAGE, ev, 2, 0, 0, 0};
	struct rating_lines out;
	rating_lines_init(&out);
	rate_ok(pb, &utc, &l, CAL_MIN_MS, CAL_END_MS, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.v[0].quantity, 10 * (14 * DAY + 12 * H));
	/* 10 GiB * 14.5 days of 29 = 10 * 3000 / 2, exactly */
	assert_int_equal(out.v[0].amount, 15000);
	rating_lines_release(&out);
	struct rating_event nv[] = {
		{at("2028-02-01T00:00:00Z"), RATING_STARTED, 1, 0},
		{at("2028-02-01T00:30:00Z"), RATING_SCALED, 0, 0},
		{at("2028-02-01T05:00:00Z"), RATING_SCALED, 1, 0},
		{at("2028-02-01T05:15:00Z"), RATING_ENDED, 1, 0},
	};
	struct rating_lease nl = {"in-000001.nogpu", "t", "s1", "r1", "", PLAN_NOGPU, nv, 4, 0, 0, 0};
	rating_lines_init(&out);
	rate_ok(pb, &utc, &nl, CAL_MIN_MS, CAL_END_MS, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.v[0].quantity, 45 * 60000);
	assert_int_equal(out.v[0].amount, 90); /* 0.75 h * 120 */
	rating_lines_release(&out);
	/* a storage price names no model; a GPU price must */
	struct price_entry e;
	struct sl_diag d;
	assert_int_not_equal(price_entry_init(&e, PRICE_GLOBAL, "", "h100-sxm", PLAN_STORAGE, 0, 1, &d) ||
				     pricebook_restore(pb, &e, &d),
			     SL_OK);
	pricebook_free(pb);
}

static void test_bad_histories(void **state)
{
	(void)state;
	struct pricebook *pb = book();
	struct cal_zone utc;
	cal_zone_utc(&utc);
	put(pb, PRICE_GLOBAL, "", "m", PLAN_HOURLY, CAL_MIN_MS, PRICE_MAX);
	int64_t t = at("2026-11-01T00:00:00Z");
	struct {
		struct rating_event ev[3];
		size_t n;
		enum sl_err want;
		const char *why;
	} cases[] = {
		{{{t, RATING_SCALED, 1, 0}}, 1, SL_EINVAL, "begin"},
		{{{t, RATING_STARTED, 1, 0}, {t, RATING_STARTED, 1, 0}}, 2,
		 SL_EINVAL, "only"},
		{{{t, RATING_STARTED, 1, 0}, {t - 1, RATING_ENDED, 0, 0}}, 2,
		 SL_EINVAL, "earlier"},
		{{{t, RATING_STARTED, 1, 0},
		  {t + 1, RATING_ENDED, 0, 0},
		  {t + 2, RATING_SCALED, 1, 0}},
		 3, SL_EINVAL, "after"},
		{{{t, RATING_STARTED, 0, 0}}, 1, SL_EINVAL, "GPU count"},
		{{{t, RATING_STARTED, 1, 0}, {t + 1, RATING_SCALED, -1, 0}}, 2,
		 SL_EINVAL, "GPU count"},
		{{{t, RATING_STARTED, RATING_MAX_GPUS + 1, 0}}, 1, SL_ELIMIT,
		 "bound"},
		{{{5, RATING_STARTED, 1, 0}}, 1, SL_EINVAL, "calendar"},
		/* Max duration: a lease running past the named span. */
		{{{t, RATING_STARTED, 1, 0},
		  {t + RATING_MAX_SPAN_MS + 1, RATING_ENDED, 0, 0}},
		 2, SL_ELIMIT, "spans"},
		/* Max GPUs for a whole month at the max price: above MONEY_MAX. */
		{{{t, RATING_STARTED, RATING_MAX_GPUS, 0},
		  {t + 30 * DAY, RATING_ENDED, 0, 0}},
		 2, SL_ELIMIT, "exceeds"},
	};
	struct rating_lines out;
	rating_lines_init(&out);
	/* A line already in the array must survive every failed call. */
	struct rating_event okev[] = {{t, RATING_STARTED, 1, 0},
				      {t + H, RATING_ENDED, 0, 0}};
	struct rating_lease ok = {"ok", "t", NULL, NULL, "m", PLAN_HOURLY, okev,
				  2, 0, 0, 0};
	rate_ok(pb, &utc, &ok, CAL_MIN_MS, CAL_END_MS, &out);
	assert_int_equal(out.n, 1);
	struct rating_line keep = out.v[0];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rating_lease l = {"bad", "t", NULL, NULL, "m",
					 PLAN_HOURLY, cases[i].ev, cases[i].n,
					 0, 0, 0};
		struct sl_diag d;
		sl_diag_clear(&d);
		enum sl_err e = rating_rate(pb, &utc, &l, CAL_MIN_MS, CAL_END_MS,
					    &out, &d);
		if (e != cases[i].want || !strstr(d.msg, cases[i].why))
			fail_msg("case %zu: %s '%s'", i, sl_err_code(e), d.msg);
		assert_int_equal(out.n, 1);
		assert_memory_equal(&out.v[0], &keep, sizeof(keep));
	}
	/* No price for a used instant; bad ids; window backwards. */
	struct rating_lease np = ok;
	np.model = "other";
	struct sl_diag d;
	assert_int_equal(rating_rate(pb, &utc, &np, CAL_MIN_MS, CAL_END_MS, &out,
				     &d), SL_ENOTFOUND);
	np = ok;
	np.id = "";
	assert_int_equal(rating_rate(pb, &utc, &np, CAL_MIN_MS, CAL_END_MS, &out,
				     &d), SL_EINVAL);
	assert_int_equal(rating_rate(pb, &utc, &ok, t + 1, t, &out, &d), SL_EINVAL);
	assert_int_equal(out.n, 1);
	rating_lines_release(&out);
	pricebook_free(pb);
}

static void test_first_hour(void **state)
{
	(void)state;
	struct pricebook *pb = book();
	int64_t t = at("2026-11-01T00:00:00Z");
	put(pb, PRICE_GLOBAL, "", "m", PLAN_HOURLY, CAL_MIN_MS, 1000);
	put(pb, PRICE_GLOBAL, "", "m", PLAN_HOURLY, t + H / 2, 2000);
	struct price_key k = {NULL, NULL, "m", PLAN_HOURLY};
	int64_t c = 0;
	assert_int_equal(rating_first_hour(pb, &k, 4, t, &c, NULL), SL_OK);
	assert_int_equal(c, 2000 + 4000);
	assert_int_equal(rating_first_hour(pb, &k, 4, t + H, &c, NULL), SL_OK);
	assert_int_equal(c, 8000);
	assert_int_equal(rating_first_hour(pb, &k, 0, t, &c, NULL), SL_EINVAL);
	k.plan = PLAN_MONTHLY;
	assert_int_equal(rating_first_hour(pb, &k, 1, t, &c, NULL), SL_EINVAL);
	pricebook_free(pb);
}

/* ------------------------------------------------- reference biller */

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return r->s;
}

static int64_t rnd_in(struct rng *r, int64_t lo, int64_t hi) /* [lo, hi] */
{
	return lo + (int64_t)(rnd(r) % (uint64_t)(hi - lo + 1));
}

/* Month starts 2000-01..2040-12 as UTC ms, by summing month lengths. */
#define REF_Y0 2000
#define REF_MONTHS (41 * 12)
static int64_t ref_month_utc[REF_MONTHS + 1];

static void ref_init_months(void)
{
	int64_t days = 10957; /* 1970-01-01 .. 2000-01-01 */
	for (int i = 0; i <= REF_MONTHS; i++) {
		ref_month_utc[i] = days * DAY;
		int y = REF_Y0 + i / 12, m = i % 12 + 1;
		static const int len[12] = {31, 28, 31, 30, 31, 30,
					    31, 31, 30, 31, 30, 31};
		int l = len[m - 1];
		if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
			l = 29;
		days += l;
	}
}

/* Index of the zone-local month containing t. */
static int ref_month_index(int64_t t, int64_t off_ms)
{
	int i = 0;
	while (i + 1 <= REF_MONTHS && ref_month_utc[i + 1] - off_ms <= t)
		i++;
	return i;
}

struct ref_price {
	int scope; /* 0 global, 1 region, 2 site */
	const char *name, *model;
	enum plan plan;
	int64_t from, price;
};

static int64_t ref_price_at(const struct ref_price *ps, int np, int64_t t,
			    const char *site, const char *region,
			    const char *model, enum plan plan)
{
	for (int scope = 2; scope >= 0; scope--) {
		const char *want = scope == 2 ? site : scope == 1 ? region : "";
		int64_t best_from = -1, best = -1;
		for (int i = 0; i < np; i++) {
			const struct ref_price *p = &ps[i];
			if (p->scope == scope && strcmp(p->name, want) == 0 &&
			    strcmp(p->model, model) == 0 && p->plan == plan &&
			    p->from <= t && p->from > best_from) {
				best_from = p->from;
				best = p->price;
			}
		}
		if (best >= 0)
			return best;
	}
	return -1;
}

struct ref_line {
	int month;
	int64_t price, qty, amount;
};

#define REF_MAX_CUTS 4096
#define REF_MAX_LINES 512

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The reference biller. Returns the number of lines. */
static int ref_bill(const struct ref_price *ps, int np,
		    const struct rating_lease *l, int64_t off_ms, int64_t to_ms,
		    struct ref_line *lines)
{
	static int64_t cuts[REF_MAX_CUTS];
	int nc = 0, nl = 0;
	if (l->nevents == 0)
		return 0;
	int64_t start = l->events[0].at_ms;
	int64_t stop = to_ms;
	if (l->events[l->nevents - 1].kind == RATING_ENDED &&
	    l->events[l->nevents - 1].at_ms < stop)
		stop = l->events[l->nevents - 1].at_ms;
	for (size_t i = 0; i < l->nevents; i++)
		cuts[nc++] = l->events[i].at_ms;
	for (int i = 0; i < np; i++)
		cuts[nc++] = ps[i].from;
	for (int i = 0; i <= REF_MONTHS; i++)
		if (ref_month_utc[i] - off_ms > start &&
		    ref_month_utc[i] - off_ms < stop)
			cuts[nc++] = ref_month_utc[i] - off_ms;
	cuts[nc++] = stop;
	qsort(cuts, (size_t)nc, sizeof(cuts[0]), cmp_i64);
	for (int c = 0; c + 1 < nc; c++) {
		int64_t a = cuts[c], b = cuts[c + 1];
		if (a < start || b > stop || a >= b)
			continue;
		int gpus = 0; /* the count of the last event at or before a */
		for (size_t i = 0; i < l->nevents; i++)
			if (l->events[i].at_ms <= a &&
			    l->events[i].kind != RATING_ENDED)
				gpus = l->events[i].gpus;
		if (gpus == 0)
			continue;
		int64_t price = ref_price_at(ps, np, a, l->site ? l->site : "",
					     l->region ? l->region : "", l->model,
					     l->plan);
		assert_true(price >= 0);
		int month = ref_month_index(a, off_ms);
		int k = 0;
		while (k < nl && !(lines[k].month == month && lines[k].price == price))
			k++;
		if (k == nl) {
			assert_true(nl < REF_MAX_LINES);
			lines[nl++] = (struct ref_line){month, price, 0, 0};
		}
		lines[k].qty += gpus * (b - a);
	}
	for (int k = 0; k < nl; k++) {
		unsigned __int128 div = 3600000;
		if (l->plan == PLAN_HOSTING)
			div = (unsigned __int128)(ref_month_utc[lines[k].month + 1] -
						  ref_month_utc[lines[k].month]);
		unsigned __int128 x = (unsigned __int128)lines[k].qty *
				      (unsigned __int128)lines[k].price;
		/* Half up: floor((2x + div) / (2 div)). */
		lines[k].amount = (int64_t)((2 * x + div) / (2 * div));
	}
	return nl;
}

/* Interesting instants: month starts in both zones around year ends and the
 * leap day, and the leap day itself. */
static int64_t pick_anchor(struct rng *r)
{
	static const char *anchors[] = {
		"2026-11-01T00:00:00Z",      "2026-12-01T00:00:00Z",
		"2027-01-01T00:00:00Z",      "2026-12-31T16:00:00Z",
		"2028-02-28T16:00:00Z",      "2028-02-29T00:00:00Z",
		"2028-02-29T16:00:00Z",      "2028-03-01T00:00:00Z",
		"2027-12-31T16:00:00Z",      "2028-01-01T00:00:00Z",
		"2027-06-15T12:34:56.789Z",  "2029-01-01T00:00:00Z",
	};
	int64_t a = at(anchors[rnd(r) % (sizeof(anchors) / sizeof(anchors[0]))]);
	return a + rnd_in(r, -40 * DAY, 10 * DAY);
}

static int64_t pick_step(struct rng *r)
{
	switch (rnd(r) % 6) {
	case 0: return 0;
	case 1: return rnd_in(r, 1, 5000);
	case 2: return rnd_in(r, 1, 3 * H);
	case 3: return rnd_in(r, 1, 5 * DAY);
	case 4: return rnd_in(r, 1, 70 * DAY);
	default: return rnd_in(r, 1, 20) * (H / 2);
	}
}

static const char *const sites[] = {"sh-1", "sh-2", "bj-1"};
static const char *const regions[] = {"cn-east", "cn-north"};
static const char *const models[] = {"h100-sxm", "l40s"};

static void test_against_reference(void **state)
{
	(void)state;
	ref_init_months();
	struct rng r = {0x5ca1ab1e5eedULL};
	struct cal_zone zones[2];
	cal_zone_utc(&zones[0]);
	assert_int_equal(cal_zone_parse("Asia/Shanghai", &zones[1], NULL), SL_OK);
	struct rating_lines out;
	rating_lines_init(&out);
	long nlines = 0, nsplit = 0;
	for (int iter = 0; iter < 4000; iter++) {
		const struct cal_zone *z = &zones[rnd(&r) % 2];
		int64_t off = (int64_t)z->offset_s * 1000;
		enum plan plan = (enum plan)(rnd(&r) % 5 == 0
							 ? PLAN_HOSTING
							 : rnd(&r) % 2);
		const char *model = plan == PLAN_HOSTING ? "" : models[rnd(&r) % 2];
		const char *site = rnd(&r) % 4 ? sites[rnd(&r) % 3] : NULL;
		const char *region = rnd(&r) % 4 ? regions[rnd(&r) % 2] : NULL;
		/* The history. */
		struct rating_event ev[12];
		size_t n = 0;
		int64_t t = pick_anchor(&r);
		int64_t first = t;
		int maxg = rnd(&r) % 10 == 0 ? 1000 : 16;
		ev[n++] = (struct rating_event){t, RATING_STARTED,
						(int)rnd_in(&r, 1, maxg), 0};
		int nscale = (int)(rnd(&r) % 6);
		for (int i = 0; i < nscale; i++) {
			t += pick_step(&r);
			ev[n++] = (struct rating_event){t, RATING_SCALED,
							(int)rnd_in(&r, 0, maxg), 0};
		}
		bool ended = rnd(&r) % 5 != 0;
		if (ended) {
			t += pick_step(&r);
			ev[n++] = (struct rating_event){
				t, RATING_ENDED, 0,
				(enum rating_end)(rnd(&r) % 4)};
		}
		int64_t to_ms = t + rnd_in(&r, 0, 3 * DAY);
		/* The price book: a global floor, then changes around the
		 * history, in every scope, including keys that do not apply. */
		struct ref_price ps[40];
		int np = 0;
		ps[np++] = (struct ref_price){0, "", model, plan, CAL_MIN_MS,
					      rnd_in(&r, 0, 100000)};
		int nchg = (int)(rnd(&r) % 12);
		for (int i = 0; i < nchg; i++) {
			int scope = (int)(rnd(&r) % 3);
			const char *name = scope == 0 ? ""
					   : scope == 1 ? regions[rnd(&r) % 2]
							: sites[rnd(&r) % 3];
			const char *m = rnd(&r) % 5 == 0 && plan != PLAN_HOSTING
						? models[rnd(&r) % 2]
						: model;
			int64_t from = first + rnd_in(&r, -5 * DAY, t - first + DAY);
			int64_t price = rnd(&r) % 4 == 0 ? rnd_in(&r, 0, 9)
							 : rnd_in(&r, 0, 100000);
			bool dup = false;
			for (int j = 0; j < np; j++)
				dup |= ps[j].scope == scope &&
				       strcmp(ps[j].name, name) == 0 &&
				       strcmp(ps[j].model, m) == 0 &&
				       ps[j].from == from;
			if (!dup)
				ps[np++] = (struct ref_price){scope, name, m, plan,
							      from, price};
		}
		/* Another plan's prices must never be used. */
		if (plan != PLAN_HOSTING)
			ps[np++] = (struct ref_price){
				0, "", model,
				plan == PLAN_SPOT ? PLAN_HOURLY : PLAN_SPOT,
				first, 99999999};
		struct pricebook *pb = book();
		for (int i = 0; i < np; i++)
			put(pb, (enum price_scope)ps[i].scope, ps[i].name,
			    ps[i].model, ps[i].plan, ps[i].from, ps[i].price);
		struct rating_lease l = {"lease-x", "t", site, region, model, plan,
					 ev, n, 0, 0, 0};
		out.n = 0;
		rate_ok(pb, z, &l, CAL_MIN_MS, to_ms, &out);
		struct ref_line want[REF_MAX_LINES];
		int nw = ref_bill(ps, np, &l, off, to_ms, want);
		if ((size_t)nw != out.n)
			fail_msg("iter %d: %zu lines, reference %d", iter, out.n, nw);
		for (int k = 0; k < nw; k++) {
			const struct rating_line *g = &out.v[k];
			int gm = (g->month.year - REF_Y0) * 12 + g->month.month - 1;
			if (gm != want[k].month || g->unit_price != want[k].price ||
			    g->quantity != want[k].qty || g->amount != want[k].amount)
				fail_msg("iter %d line %d: month %d/%d price "
					 "%lld/%lld qty %lld/%lld amount %lld/%lld",
					 iter, k, gm, want[k].month,
					 (long long)g->unit_price,
					 (long long)want[k].price,
					 (long long)g->quantity,
					 (long long)want[k].qty,
					 (long long)g->amount,
					 (long long)want[k].amount);
		}
		/* Month by month through the invoice windows gives the same
		 * lines as the whole span at once. */
		struct rating_lines per;
		rating_lines_init(&per);
		if (nw > 0) {
			struct cal_month m = out.v[0].month;
			struct cal_month last = out.v[out.n - 1].month;
			for (; cal_month_cmp(m, last) <= 0; m = cal_month_next(m)) {
				int64_t s, e;
				assert_int_equal(cal_month_start(z, m, &s, NULL), SL_OK);
				assert_int_equal(cal_month_end(z, m, &e, NULL), SL_OK);
				rate_ok(pb, z, &l, s, e < to_ms ? e : to_ms, &per);
			}
		}
		assert_int_equal(per.n, out.n);
		for (size_t k = 0; k < per.n; k++) {
			assert_int_equal(per.v[k].amount, out.v[k].amount);
			assert_int_equal(per.v[k].quantity, out.v[k].quantity);
		}
		rating_lines_release(&per);
		nlines += nw;
		nsplit += nw > 1;
		pricebook_free(pb);
	}
	/* The generator must really exercise splitting. */
	assert_true(nlines > 4000);
	assert_true(nsplit > 1000);
	rating_lines_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_book_scopes),
		cmocka_unit_test(test_book_refusals),
		cmocka_unit_test(test_round_once_per_line),
		cmocka_unit_test(test_splits),
		cmocka_unit_test(test_running_and_zero),
		cmocka_unit_test(test_monthly),
		cmocka_unit_test(test_hosting),
		cmocka_unit_test(test_storage_and_nogpu),
		cmocka_unit_test(test_bad_histories),
		cmocka_unit_test(test_first_hour),
		cmocka_unit_test(test_against_reference),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_calendar.c - day arithmetic against a day-by-day count, zones, month
 * bounds in UTC and Asia/Shanghai (incl. Dec->Jan and 2028-02-29), adding
 * months, and RFC 3339 both ways. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "calendar.h"

/* Walks day by day from 1970-01-01 with a naive month-length rule, so the
 * era arithmetic is checked against something that shares none of it. */
static void test_days_against_walk(void **state)
{
	(void)state;
	int64_t y = 1970;
	int m = 1, d = 1;
	for (int64_t days = 0; days < 40000; days++) {
		assert_int_equal(cal_days_from_civil(y, m, d), days);
		int64_t yy;
		int mm, dd;
		cal_civil_from_days(days, &yy, &mm, &dd);
		assert_int_equal(yy, y);
		assert_int_equal(mm, m);
		assert_int_equal(dd, d);
		int len = (m == 4 || m == 6 || m == 9 || m == 11) ? 30 : 31;
		if (m == 2)
			len = (y % 400 == 0 || (y % 4 == 0 && y % 100 != 0)) ? 29 : 28;
		if (++d > len) {
			d = 1;
			if (++m > 12) {
				m = 1;
				y++;
			}
		}
	}
	assert_int_equal(cal_days_from_civil(1969, 12, 31), -1);
	assert_int_equal(cal_days_from_civil(2000, 3, 1), 11017);
	assert_true(cal_is_leap(2028));
	assert_true(cal_is_leap(2000));
	assert_false(cal_is_leap(2100));
	assert_false(cal_is_leap(2026));
	assert_int_equal(cal_days_in_month(2028, 2), 29);
	assert_int_equal(cal_days_in_month(2100, 2), 28);
	assert_int_equal(cal_days_in_month(2026, 13), 0);
}

static void test_zones(void **state)
{
	(void)state;
	struct {
		const char *name;
		int ok;
		int32_t off;
	} cases[] = {
		{"UTC", 1, 0},
		{"Etc/UTC", 1, 0},
		{"Asia/Shanghai", 1, 28800},
		{"Asia/Tokyo", 1, 32400},
		{"Asia/Kolkata", 1, 19800},
		{"UTC+8", 1, 28800},
		{"UTC+08:00", 1, 28800},
		{"UTC-05:30", 1, -19800},
		{"+0800", 1, 28800},
		{"-03", 1, -10800},
		{"+14:00", 1, 50400},
		{"+14:01", 0, 0},
		{"+08:60", 0, 0},
		{"UTC+", 0, 0},
		{"Europe/Berlin", 0, 0},
		{"America/New_York", 0, 0},
		{"asia/shanghai", 0, 0},
		{"", 0, 0},
		{"+080", 0, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cal_zone z;
		struct sl_diag d;
		sl_diag_clear(&d);
		enum sl_err e = cal_zone_parse(cases[i].name, &z, &d);
		if ((e == SL_OK) != (cases[i].ok != 0))
			fail_msg("zone '%s': %s", cases[i].name, sl_err_code(e));
		if (e == SL_OK) {
			assert_int_equal(z.offset_s, cases[i].off);
			assert_string_equal(z.name, cases[i].name);
		} else {
			assert_non_null(strstr(d.msg, "zone"));
		}
	}
	struct sl_diag d;
	struct cal_zone z;
	assert_int_equal(cal_zone_parse("Europe/Berlin", &z, &d), SL_EINVAL);
	assert_non_null(strstr(d.hint, "daylight saving"));
	char longname[64];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[63] = 0;
	assert_int_equal(cal_zone_parse(longname, &z, &d), SL_ELIMIT);
}

static int64_t at(const char *s)
{
	int64_t ms = 0;
	struct sl_diag d;
	if (cal_parse_rfc3339(s, &ms, &d) != SL_OK)
		fail_msg("parse '%s': %s", s, d.msg);
	return ms;
}

static void test_month_bounds(void **state)
{
	(void)state;
	struct cal_zone utc, sh;
	cal_zone_utc(&utc);
	assert_int_equal(cal_zone_parse("Asia/Shanghai", &sh, NULL), SL_OK);
	struct {
		const struct cal_zone *z;
		struct cal_month m;
		const char *start, *end;
	} cases[] = {
		{&utc, {2026, 11}, "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"},
		{&utc, {2026, 12}, "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{&sh, {2026, 12}, "2026-11-30T16:00:00Z", "2026-12-31T16:00:00Z"},
		{&sh, {2027, 1}, "2026-12-31T16:00:00Z", "2027-01-31T16:00:00Z"},
		{&utc, {2028, 2}, "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z"},
		{&sh, {2028, 2}, "2028-01-31T16:00:00Z", "2028-02-29T16:00:00Z"},
		{&utc, {2027, 2}, "2027-02-01T00:00:00Z", "2027-03-01T00:00:00Z"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t s, e;
		assert_int_equal(cal_month_start(cases[i].z, cases[i].m, &s, NULL),
				 SL_OK);
		assert_int_equal(cal_month_end(cases[i].z, cases[i].m, &e, NULL),
				 SL_OK);
		assert_int_equal(s, at(cases[i].start));
		assert_int_equal(e, at(cases[i].end));
		struct cal_month m;
		assert_int_equal(cal_month_of(cases[i].z, s, &m, NULL), SL_OK);
		assert_int_equal(cal_month_cmp(m, cases[i].m), 0);
		assert_int_equal(cal_month_of(cases[i].z, e - 1, &m, NULL), SL_OK);
		assert_int_equal(cal_month_cmp(m, cases[i].m), 0);
		assert_int_equal(cal_month_of(cases[i].z, e, &m, NULL), SL_OK);
		assert_int_equal(cal_month_cmp(m, cal_month_next(cases[i].m)), 0);
	}
	/* The leap day exists and belongs to February. */
	struct cal_month m;
	assert_int_equal(cal_month_of(&sh, at("2028-02-29T12:00:00+08:00"), &m,
				      NULL), SL_OK);
	assert_int_equal(m.month, 2);
	int64_t x;
	struct sl_diag d;
	assert_int_equal(cal_parse_rfc3339("2027-02-29T00:00:00Z", &x, &d),
			 SL_EINVAL);
	/* Outside the calendar. */
	assert_int_equal(cal_month_start(&utc, (struct cal_month){1999, 12}, &x,
					 &d), SL_EINVAL);
	assert_int_equal(cal_month_start(&sh, (struct cal_month){2000, 1}, &x, &d),
			 SL_EINVAL); /* starts in 1999 UTC */
	assert_int_equal(cal_month_start(&utc, (struct cal_month){2026, 13}, &x,
					 &d), SL_EINVAL);
	assert_int_equal(cal_month_of(&utc, 0, &m, &d), SL_EINVAL);
	assert_int_equal(cal_month_end(&utc, (struct cal_month){9998, 12}, &x, &d),
			 SL_OK);
	assert_int_equal(x, CAL_END_MS);
}

static void test_month_text(void **state)
{
	(void)state;
	struct cal_month m;
	char buf[CAL_MONTH_FMT_SIZE];
	struct sl_diag d;
	assert_int_equal(cal_month_parse("2026-11", &m, &d), SL_OK);
	assert_int_equal(m.year, 2026);
	assert_int_equal(m.month, 11);
	cal_month_format(m, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11");
	const char *bad[] = {"2026-13", "2026-00", "2026-1", "26-11", "2026/11",
			     "2026-11-01", "1999-12", "x", ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sl_diag_clear(&d);
		assert_int_equal(cal_month_parse(bad[i], &m, &d), SL_EINVAL);
		assert_non_null(strstr(d.hint, "YYYY-MM"));
	}
	assert_int_equal(cal_month_parse(NULL, &m, &d), SL_EINVAL);
	struct cal_month a = {2026, 12};
	struct cal_month n = cal_month_next(a);
	assert_int_equal(n.year, 2027);
	assert_int_equal(n.month, 1);
	n = cal_month_add(a, 14);
	assert_int_equal(n.year, 2028);
	assert_int_equal(n.month, 2);
	assert_true(cal_month_cmp(a, n) < 0);
	assert_true(cal_month_cmp(n, a) > 0);
}

static void test_add_months(void **state)
{
	(void)state;
	struct cal_zone utc, sh;
	cal_zone_utc(&utc);
	assert_int_equal(cal_zone_parse("Asia/Shanghai", &sh, NULL), SL_OK);
	struct {
		const struct cal_zone *z;
		const char *from;
		int k;
		const char *want;
	} cases[] = {
		{&utc, "2026-01-31T10:00:00Z", 1, "2026-02-28T10:00:00Z"},
		{&utc, "2028-01-31T10:00:00Z", 1, "2028-02-29T10:00:00Z"},
		{&utc, "2026-01-31T10:00:00Z", 2, "2026-03-31T10:00:00Z"},
		{&utc, "2026-11-15T00:00:00.250Z", 2, "2027-01-15T00:00:00.250Z"},
		{&utc, "2026-05-05T00:00:00Z", 0, "2026-05-05T00:00:00Z"},
		/* Local day in Shanghai: Jan 31 local is Jan 30 UTC 16:00+. */
		{&sh, "2027-01-31T01:00:00+08:00", 1, "2027-02-28T01:00:00+08:00"},
		{&sh, "2027-12-31T23:30:00+08:00", 2, "2028-02-29T23:30:00+08:00"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t r;
		assert_int_equal(cal_add_months(cases[i].z, at(cases[i].from),
						cases[i].k, &r, NULL), SL_OK);
		if (r != at(cases[i].want))
			fail_msg("case %zu", i);
	}
	int64_t r;
	assert_int_equal(cal_add_months(&utc, at("2026-01-01T00:00:00Z"), -1, &r,
					NULL), SL_EINVAL);
}

static void test_rfc3339(void **state)
{
	(void)state;
	struct cal_zone utc, sh;
	cal_zone_utc(&utc);
	assert_int_equal(cal_zone_parse("Asia/Shanghai", &sh, NULL), SL_OK);
	char buf[CAL_RFC3339_SIZE];
	int64_t t = at("2026-11-30T05:43:30.123Z");
	assert_int_equal(t, INT64_C(1796017410123));
	assert_int_equal(cal_format_rfc3339(t, &utc, buf, sizeof(buf), NULL), SL_OK);
	assert_string_equal(buf, "2026-11-30T05:43:30.123Z");
	assert_int_equal(cal_format_rfc3339(t, &sh, buf, sizeof(buf), NULL), SL_OK);
	assert_string_equal(buf, "2026-11-30T13:43:30.123+08:00");
	assert_int_equal(at(buf), t);
	struct cal_zone neg;
	assert_int_equal(cal_zone_parse("UTC-05:30", &neg, NULL), SL_OK);
	assert_int_equal(cal_format_rfc3339(t, &neg, buf, sizeof(buf), NULL), SL_OK);
	assert_string_equal(buf, "2026-11-30T00:13:30.123-05:30");
	assert_int_equal(at(buf), t);
	assert_int_equal(at("2026-11-30 05:43:30.1z"), t - 23);
	assert_int_equal(at("2026-11-30t05:43:30.12Z"), t - 3);
	const char *bad[] = {
		"2026-11-30T05:43:30",         "2026-11-30T05:43:30.1234Z",
		"2026-11-30T24:00:00Z",        "2026-11-31T00:00:00Z",
		"2026-11-30T05:43:30.Z",       "2026-11-30T05:43:30+0800",
		"2026-11-30T05:43:30+08:00x",  "1999-12-31T23:59:59Z",
		"2026-11-30T05:61:00Z",        "2026-11-30X05:43:30Z",
		"2026-02-31T00:00:00Z",        "2026-11-30T05:43:60Z",
		"2026-12-31T23:59:60Z",        "2026-11-30T05:43:30.123456789Z",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t x = 5;
		struct sl_diag d;
		sl_diag_clear(&d);
		if (cal_parse_rfc3339(bad[i], &x, &d) != SL_EINVAL)
			fail_msg("accepted '%s'", bad[i]);
		assert_int_equal(x, 5);
		assert_true(d.msg[0] != 0);
	}
	assert_int_equal(cal_format_rfc3339(0, &utc, buf, sizeof(buf), NULL),
			 SL_EINVAL);
	assert_int_equal(cal_check_instant(CAL_MIN_MS, NULL), SL_OK);
	assert_int_equal(cal_check_instant(CAL_MIN_MS - 1, NULL), SL_EINVAL);
	assert_int_equal(cal_check_instant(CAL_END_MS, NULL), SL_EINVAL);
	/* Round trip over a spread of instants and both zones. */
	for (int64_t x = CAL_MIN_MS; x < INT64_C(4102444800000);
	     x += INT64_C(98765432101)) {
		assert_int_equal(cal_format_rfc3339(x, &sh, buf, sizeof(buf), NULL),
				 SL_OK);
		assert_int_equal(at(buf), x);
	}
}

/* The nanosecond variant: the same grammar and checks, nine fraction digits,
 * and an end where int64 nanoseconds would overflow. */
static void test_rfc3339_ns(void **state)
{
	(void)state;
	struct sl_diag d;
	int64_t ns = 0;
	assert_int_equal(cal_parse_rfc3339_ns("2026-11-30T05:43:30.123456789Z", &ns, &d), SL_OK);
	assert_int_equal(ns, INT64_C(1796017410123456789));
	assert_int_equal(cal_parse_rfc3339_ns("2026-11-30T13:43:30.1+08:00", &ns, &d), SL_OK);
	assert_int_equal(ns, INT64_C(1796017410100000000));
	/* Every instant the ms parser takes in range, the ns one takes alike. */
	const char *same[] = {"2026-11-30T05:43:30Z", "2026-11-30t05:43:30.12z",
			      "2026-11-30 05:43:30.1-05:30", "2000-01-01T00:00:00Z"};
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		int64_t ms = 0;
		assert_int_equal(cal_parse_rfc3339(same[i], &ms, NULL), SL_OK);
		assert_int_equal(cal_parse_rfc3339_ns(same[i], &ns, NULL), SL_OK);
		assert_int_equal(ns, ms * 1000000);
	}
	assert_int_equal(cal_parse_rfc3339_ns("2261-12-31T23:59:59.999999999Z", &ns, &d), SL_OK);
	assert_int_equal(ns, CAL_NS_END_MS * 1000000 - 1);
	assert_int_equal(cal_parse_rfc3339_ns("2262-01-01T01:00:00+02:00", &ns, &d), SL_OK);
	const char *bad[] = {
		"2026-02-31T00:00:00Z",           /* not a day: was 3 March */
		"2028-02-30T00:00:00Z",           "2027-02-29T00:00:00Z",
		"2026-11-30T05:43:60Z",           /* no second 60 */
		"2026-11-30T05:43:30.1234567891Z", /* past the nanosecond */
		"2026-11-30T05:43:30.Z",          "1999-12-31T23:59:59.999999999Z",
		"2262-01-01T00:00:00Z",           "9998-12-31T23:59:59Z",
		"2026-11-30T05:43:30+15:00",      NULL,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t x = 5;
		sl_diag_clear(&d);
		if (cal_parse_rfc3339_ns(bad[i], &x, &d) != SL_EINVAL)
			fail_msg("accepted '%s'", bad[i] ? bad[i] : "(null)");
		assert_int_equal(x, 5);
		assert_true(d.msg[0] != 0);
	}
	assert_int_equal(cal_parse_rfc3339_ns("2026-11-30T05:43:30.1234567891Z", &ns, &d),
			 SL_EINVAL);
	assert_non_null(strstr(d.msg, "more than nanosecond precision"));
	assert_non_null(strstr(d.hint, "at most 9 fractional digits"));
	assert_int_equal(cal_parse_rfc3339("2026-11-30T05:43:30.1234Z", &ns, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "more than millisecond precision"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_days_against_walk),
		cmocka_unit_test(test_zones),
		cmocka_unit_test(test_month_bounds),
		cmocka_unit_test(test_month_text),
		cmocka_unit_test(test_add_months),
		cmocka_unit_test(test_rfc3339_ns),
		cmocka_unit_test(test_rfc3339),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

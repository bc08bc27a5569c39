/* test_money.c - exact parse/format of amounts, the currency table, checked
 * sums and the one rounding step (half up at exactly .5 of the minor unit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "money.h"

struct parse_case {
	const char *ccy, *text;
	int allow_neg;
	enum sl_err want;
	int64_t value;
	const char *msg_has; /* substring of the diagnostic on error */
};

static const struct parse_case parse_cases[] = {
	{"CNY", "12.34", 0, SL_OK, 1234, NULL},
	{"CNY", "12", 0, SL_OK, 1200, NULL},
	{"CNY", "12.3", 0, SL_OK, 1230, NULL},
	{"CNY", "0.05", 0, SL_OK, 5, NULL},
	{"CNY", "0", 0, SL_OK, 0, NULL},
	{"CNY", "-0", 0, SL_OK, 0, NULL},
	{"CNY", "007.10", 0, SL_OK, 710, NULL},
	{"CNY", "-3.5", 1, SL_OK, -350, NULL},
	{"CNY", "-3.5", 0, SL_EINVAL, 0, "negative"},
	{"CNY", "0.001", 0, SL_EINVAL, 0, "whole number"},
	{"CNY", "1.234", 0, SL_EINVAL, 0, "whole number"},
	{"CNY", "1.", 0, SL_EINVAL, 0, "digits after"},
	{"CNY", ".5", 0, SL_EINVAL, 0, "not an amount"},
	{"CNY", "+5", 0, SL_EINVAL, 0, "not an amount"},
	{"CNY", " 5", 0, SL_EINVAL, 0, "not an amount"},
	{"CNY", "5 ", 0, SL_EINVAL, 0, "unexpected"},
	{"CNY", "1e3", 0, SL_EINVAL, 0, "unexpected"},
	{"CNY", "", 0, SL_EINVAL, 0, "empty"},
	{"CNY", "--1", 1, SL_EINVAL, 0, "not an amount"},
	{"CNY", "10000000000000000", 0, SL_OK, MONEY_MAX, NULL},
	{"CNY", "10000000000000000.01", 0, SL_ELIMIT, 0, "bound"},
	{"CNY", "99999999999999999999999", 0, SL_ELIMIT, 0, "bound"},
	{"CNY", "-10000000000000000.01", 1, SL_ELIMIT, 0, "bound"},
	{"CNY", "1111111111111111111111111111111111111111111", 0, SL_ELIMIT, 0,
	 "longer"},
	{"JPY", "1234", 0, SL_OK, 1234, NULL},
	{"JPY", "12.5", 0, SL_EINVAL, 0, "whole number"},
	{"USD", "0.99", 0, SL_OK, 99, NULL},
};

static void test_parse_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const struct parse_case *c = &parse_cases[i];
		const struct money_currency *cur = money_currency_find(c->ccy);
		assert_non_null(cur);
		struct sl_diag d;
		sl_diag_clear(&d);
		int64_t v = 777;
		enum sl_err e = money_parse(c->text, cur, c->allow_neg != 0, &v, &d);
		if (e != c->want)
			fail_msg("case %zu '%s': got %s want %s (%s)", i, c->text,
				 sl_err_code(e), sl_err_code(c->want), d.msg);
		if (c->want == SL_OK) {
			assert_int_equal(v, c->value);
		} else {
			assert_int_equal(v, 777); /* nothing written */
			if (!strstr(d.msg, c->msg_has))
				fail_msg("case %zu: message '%s' lacks '%s'", i,
					 d.msg, c->msg_has);
		}
	}
}

static void test_parse_minor(void **state)
{
	(void)state;
	int64_t v = 0;
	assert_int_equal(money_parse_minor("1234", false, &v, NULL), SL_OK);
	assert_int_equal(v, 1234);
	assert_int_equal(money_parse_minor("12.34", false, &v, NULL), SL_EINVAL);
	assert_int_equal(money_parse_minor("-1", false, &v, NULL), SL_EINVAL);
	assert_int_equal(money_parse_minor("-1", true, &v, NULL), SL_OK);
	assert_int_equal(v, -1);
	assert_int_equal(money_parse_minor("1000000000000000001", false, &v, NULL),
			 SL_ELIMIT);
	assert_int_equal(money_parse(NULL, money_currency_find("CNY"), false, &v,
				     NULL), SL_EINVAL);
	assert_int_equal(money_parse("1", NULL, false, &v, NULL), SL_EINVAL);
}

static void test_format_roundtrip(void **state)
{
	(void)state;
	const struct money_currency *cny = money_currency_find("CNY");
	const struct money_currency *jpy = money_currency_find("JPY");
	char buf[MONEY_FMT_SIZE];
	struct {
		const struct money_currency *c;
		int64_t v;
		const char *s;
	} cases[] = {
		{cny, 1234, "12.34"}, {cny, 5, "0.05"},    {cny, -5, "-0.05"},
		{cny, 0, "0.00"},     {cny, 100, "1.00"},  {jpy, 1234, "1234"},
		{jpy, -7, "-7"},      {cny, MONEY_MAX, "10000000000000000.00"},
		{cny, -MONEY_MAX, "-10000000000000000.00"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(money_format(cases[i].v, cases[i].c, buf,
					      sizeof(buf), NULL), SL_OK);
		assert_string_equal(buf, cases[i].s);
		int64_t back = 0;
		assert_int_equal(money_parse(buf, cases[i].c, true, &back, NULL),
				 SL_OK);
		assert_int_equal(back, cases[i].v);
	}
	assert_int_equal(money_format(MONEY_MAX + 1, cny, buf, sizeof(buf), NULL),
			 SL_ELIMIT);
	assert_int_equal(money_format(1, cny, buf, 4, NULL), SL_EINVAL);
	/* Every fen value in a range round-trips exactly. */
	for (int64_t v = -20000; v <= 20000; v += 7) {
		int64_t back;
		assert_int_equal(money_format(v, cny, buf, sizeof(buf), NULL), SL_OK);
		assert_int_equal(money_parse(buf, cny, true, &back, NULL), SL_OK);
		assert_int_equal(back, v);
	}
}

static void test_currencies(void **state)
{
	(void)state;
	const struct money_currency *c = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(money_currency_get("CNY", &c, &d), SL_OK);
	assert_int_equal(c->digits, 2);
	assert_int_equal(c->unit, 100);
	assert_int_equal(money_currency_get("JPY", &c, &d), SL_OK);
	assert_int_equal(c->digits, 0);
	const struct money_currency *keep = c;
	assert_int_equal(money_currency_get("XYZ", &c, &d), SL_EINVAL);
	assert_ptr_equal(c, keep);
	assert_non_null(strstr(d.msg, "unknown currency"));
	assert_non_null(strstr(d.hint, "CNY"));
	assert_int_equal(money_currency_get("cny", &c, &d), SL_EINVAL);
	assert_int_equal(money_currency_get(NULL, &c, &d), SL_EINVAL);
	assert_true(money_currency_count() >= 8);
	for (size_t i = 0; i < money_currency_count(); i++) {
		const struct money_currency *x = money_currency_at(i);
		int64_t u = 1;
		for (int k = 0; k < x->digits; k++)
			u *= 10;
		assert_int_equal(x->unit, u);
		assert_true(x->digits <= MONEY_MAX_DIGITS);
		assert_ptr_equal(money_currency_find(x->code), x);
	}
	assert_null(money_currency_at(money_currency_count()));
}

static void test_add(void **state)
{
	(void)state;
	int64_t v = 0;
	assert_int_equal(money_add(1, 2, &v, NULL), SL_OK);
	assert_int_equal(v, 3);
	assert_int_equal(money_add(MONEY_MAX, 0, &v, NULL), SL_OK);
	v = 9;
	assert_int_equal(money_add(MONEY_MAX, 1, &v, NULL), SL_ELIMIT);
	assert_int_equal(v, 9);
	assert_int_equal(money_add(-MONEY_MAX, -1, &v, NULL), SL_ELIMIT);
	assert_int_equal(money_add(INT64_MAX, -INT64_MAX, &v, NULL), SL_ELIMIT);
	assert_int_equal(money_add(MONEY_MAX, -MONEY_MAX, &v, NULL), SL_OK);
	assert_int_equal(v, 0);
}

/* Plain reference: exact with 128-bit integers. */
static int64_t ref_mul_div(int64_t q, int64_t p, int64_t div)
{
	unsigned __int128 x = (unsigned __int128)q * (unsigned __int128)p;
	unsigned __int128 r = x / (unsigned __int128)div;
	if ((x % (unsigned __int128)div) * 2 >= (unsigned __int128)div)
		r++;
	return (int64_t)r;
}

static void test_round_half_up(void **state)
{
	(void)state;
	struct {
		int64_t q, p, div, want;
	} cases[] = {
		/* 1800000 GPU-ms = half a GPU-hour; at 1 fen/h that is 0.5 fen. */
		{1800000, 1, 3600000, 1},
		{1799999, 1, 3600000, 0},
		{5400000, 1, 3600000, 2},  /* 1.5 -> 2 */
		{9000000, 1, 3600000, 3},  /* 2.5 -> 3, not banker's 2 */
		{1, 1800000, 3600000, 1},  /* 0.5 */
		{3600000, 1234, 3600000, 1234},
		{1000, 1999, 3600000, 1},  /* 0.555 */
		{0, 5, 3600000, 0},
		{7, 0, 3600000, 0},
		{1, 1, 2, 1},
		{1, 1, 3, 0},
		{2, 1, 3, 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t v = -1;
		assert_int_equal(money_mul_div_half_up(cases[i].q, cases[i].p,
						       cases[i].div, &v, NULL),
				 SL_OK);
		if (v != cases[i].want)
			fail_msg("case %zu: %lld want %lld", i, (long long)v,
				 (long long)cases[i].want);
	}
	/* Against the 128-bit reference over a spread of sizes. */
	uint64_t s = 12345;
	for (int i = 0; i < 20000; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		int64_t q = (int64_t)((s >> 11) % (1ULL << (s % 48)));
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		int64_t p = (int64_t)((s >> 11) % 100000000000ULL);
		int64_t div = (i & 1) ? 3600000 : 2678400000;
		int64_t want = ref_mul_div(q, p, div), v;
		enum sl_err e = money_mul_div_half_up(q, p, div, &v, NULL);
		if (want > MONEY_MAX) {
			assert_int_equal(e, SL_ELIMIT);
		} else {
			assert_int_equal(e, SL_OK);
			assert_int_equal(v, want);
		}
	}
	int64_t v = 42;
	assert_int_equal(money_mul_div_half_up(INT64_MAX, INT64_C(100000000000), 3600000,
					       &v, NULL), SL_ELIMIT);
	assert_int_equal(v, 42);
	assert_int_equal(money_mul_div_half_up(-1, 1, 3600000, &v, NULL), SL_EINVAL);
	assert_int_equal(money_mul_div_half_up(1, -1, 3600000, &v, NULL), SL_EINVAL);
	assert_int_equal(money_mul_div_half_up(1, 1, 0, &v, NULL), SL_EINVAL);
	assert_int_equal(money_mul_div_half_up(1, 1, MONEY_MAX_DIV + 1, &v, NULL),
			 SL_EINVAL);
	assert_int_equal(v, 42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_table),
		cmocka_unit_test(test_parse_minor),
		cmocka_unit_test(test_format_roundtrip),
		cmocka_unit_test(test_currencies),
		cmocka_unit_test(test_add),
		cmocka_unit_test(test_round_half_up),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

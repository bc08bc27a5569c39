/* money.c - exact decimal text <-> minor units, and overflow-checked
 * arithmetic for bills.
 *
 * Parsing is a hand-written digit loop rather than strtoll/strtod: strtod is
 * floating point, and strtoll accepts spaces, '+' and other forms a price
 * should not have. Every multiplication is checked against MONEY_MAX before it
 * happens, so a too-large input is an error and never a wrapped number. */
#include "money.h"

#include <stdio.h>
#include <string.h>

static const struct money_currency currencies[] = {
	{"CNY", 2, 100}, {"USD", 2, 100}, {"EUR", 2, 100}, {"GBP", 2, 100},
	{"HKD", 2, 100}, {"SGD", 2, 100}, {"JPY", 0, 1},   {"KRW", 0, 1},
};

#define NCURRENCIES (sizeof(currencies) / sizeof(currencies[0]))

const struct money_currency *money_currency_find(const char *code)
{
	if (!code)
		return NULL;
	for (size_t i = 0; i < NCURRENCIES; i++)
		if (strcmp(currencies[i].code, code) == 0)
			return &currencies[i];
	return NULL;
}

enum sl_err money_currency_get(const char *code,
			       const struct money_currency **out,
			       struct sl_diag *d)
{
	const struct money_currency *c = money_currency_find(code);
	if (!c) {
		enum sl_err e = sl_diag_set(d, SL_EINVAL, "unknown currency '%.16s'",
					    code ? code : "(none)");
		sl_diag_hint(d, "known currencies: CNY USD EUR GBP HKD SGD JPY KRW "
				"(ISO 4217, upper case)");
		return e;
	}
	*out = c;
	return SL_OK;
}

size_t money_currency_count(void)
{
	return NCURRENCIES;
}

const struct money_currency *money_currency_at(size_t i)
{
	return i < NCURRENCIES ? &currencies[i] : NULL;
}

/* Accumulates one decimal digit into *v, refusing to pass MONEY_MAX. */
static bool push_digit(int64_t *v, char ch)
{
	int64_t dig = ch - '0';
	if (*v > (MONEY_MAX - dig) / 10)
		return false;
	*v = *v * 10 + dig;
	return true;
}

static enum sl_err parse_common(const char *text, int digits, int64_t unit,
				bool allow_negative, int64_t *out,
				struct sl_diag *d)
{
	if (!text || !*text)
		return sl_diag_set(d, SL_EINVAL, "empty amount");
	size_t len = strnlen(text, MONEY_TEXT_MAX + 1);
	if (len > MONEY_TEXT_MAX)
		return sl_diag_set(d, SL_ELIMIT, "amount longer than %d characters",
				   MONEY_TEXT_MAX);
	const char *p = text;
	bool neg = false;
	if (*p == '-') {
		neg = true;
		p++;
	}
	if (*p < '0' || *p > '9') {
		enum sl_err e = sl_diag_set(d, SL_EINVAL, "'%s' is not an amount",
					    text);
		sl_diag_hint(d, "write digits with an optional '.', e.g. 12.34");
		return e;
	}
	int64_t whole = 0;
	for (; *p >= '0' && *p <= '9'; p++)
		if (!push_digit(&whole, *p) || whole > MONEY_MAX / unit)
			return sl_diag_set(d, SL_ELIMIT,
					   "amount '%s' exceeds the bound of "
					   "%lld minor units", text,
					   (long long)MONEY_MAX);
	int64_t frac = 0;
	int nfrac = 0;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return sl_diag_set(d, SL_EINVAL,
					   "'%s': expected digits after '.'", text);
		for (; *p >= '0' && *p <= '9'; p++, nfrac++) {
			if (nfrac >= digits) {
				enum sl_err e = sl_diag_set(
					d, SL_EINVAL,
					"'%s' is not a whole number of the minor "
					"unit", text);
				sl_diag_hint(d, "this currency has %d decimal "
						"digit(s)", digits);
				return e;
			}
			frac = frac * 10 + (*p - '0');
		}
	}
	if (*p) {
		enum sl_err e = sl_diag_set(d, SL_EINVAL,
					    "'%s' is not an amount (unexpected "
					    "'%c')", text, *p);
		sl_diag_hint(d, "write digits with an optional '.', e.g. 12.34");
		return e;
	}
	for (; nfrac < digits; nfrac++)
		frac *= 10;
	int64_t v = whole * unit;
	if (v > MONEY_MAX - frac)
		return sl_diag_set(d, SL_ELIMIT,
				   "amount '%s' exceeds the bound of %lld minor "
				   "units", text, (long long)MONEY_MAX);
	v += frac;
	if (neg && v != 0 && !allow_negative) {
		enum sl_err e = sl_diag_set(d, SL_EINVAL,
					    "negative amount '%s' not allowed "
					    "here", text);
		sl_diag_hint(d, "amounts here are zero or more");
		return e;
	}
	*out = neg ? -v : v;
	return SL_OK;
}

enum sl_err money_parse(const char *text, const struct money_currency *c,
			bool allow_negative, int64_t *out, struct sl_diag *d)
{
	if (!c)
		return sl_diag_set(d, SL_EINVAL, "no currency given");
	return parse_common(text, c->digits, c->unit, allow_negative, out, d);
}

enum sl_err money_parse_minor(const char *text, bool allow_negative,
			      int64_t *out, struct sl_diag *d)
{
	return parse_common(text, 0, 1, allow_negative, out, d);
}

enum sl_err money_format(int64_t amount, const struct money_currency *c,
			 char *buf, size_t n, struct sl_diag *d)
{
	if (!c || !buf || n < MONEY_FMT_SIZE)
		return sl_diag_set(d, SL_EINVAL, "money_format: bad arguments");
	if (amount > MONEY_MAX || amount < -MONEY_MAX)
		return sl_diag_set(d, SL_ELIMIT, "amount %lld exceeds the bound "
				   "of %lld minor units", (long long)amount,
				   (long long)MONEY_MAX);
	int64_t mag = amount < 0 ? -amount : amount;
	const char *sign = amount < 0 ? "-" : "";
	if (c->digits == 0)
		snprintf(buf, n, "%s%lld", sign, (long long)mag);
	else
		snprintf(buf, n, "%s%lld.%0*lld", sign,
			 (long long)(mag / c->unit), c->digits,
			 (long long)(mag % c->unit));
	return SL_OK;
}

enum sl_err money_add(int64_t a, int64_t b, int64_t *out, struct sl_diag *d)
{
	/* Inputs within ±MONEY_MAX cannot overflow int64_t when added. */
	if (a > MONEY_MAX || a < -MONEY_MAX || b > MONEY_MAX || b < -MONEY_MAX ||
	    a + b > MONEY_MAX || a + b < -MONEY_MAX)
		return sl_diag_set(d, SL_ELIMIT, "sum of amounts exceeds the bound "
				   "of %lld minor units", (long long)MONEY_MAX);
	*out = a + b;
	return SL_OK;
}

/* *out = a * b for a, b >= 0, false when it would exceed MONEY_MAX. */
static bool mul_bounded(int64_t a, int64_t b, int64_t *out)
{
	if (a != 0 && b > MONEY_MAX / a)
		return false;
	*out = a * b;
	return true;
}

enum sl_err money_mul_div_half_up(int64_t qty, int64_t price, int64_t div,
				  int64_t *out, struct sl_diag *d)
{
	if (qty < 0 || price < 0 || price > MONEY_MAX || div <= 0 ||
	    div > MONEY_MAX_DIV)
		return sl_diag_set(d, SL_EINVAL, "money_mul_div_half_up: "
				   "quantity %lld, price %lld, divisor %lld out "
				   "of range", (long long)qty, (long long)price,
				   (long long)div);
	/* qty = qh*div + ql, price = ph*div + pl; then
	 * qty*price/div = qh*ph*div + qh*pl + ql*ph + ql*pl/div, and only the
	 * last term has a fraction. ql, pl < div <= 3e9, so ql*pl < 2^63. */
	int64_t qh = qty / div, ql = qty % div;
	int64_t ph = price / div, pl = price % div;
	int64_t t1, t2, t3, sum;
	int64_t rest = ql * pl;
	int64_t t4 = rest / div + (2 * (rest % div) >= div ? 1 : 0);
	if (!mul_bounded(qh, ph, &t1) || !mul_bounded(t1, div, &t1) ||
	    !mul_bounded(qh, pl, &t2) || !mul_bounded(ql, ph, &t3))
		goto too_big;
	sum = t1;
	if (sum > MONEY_MAX - t2)
		goto too_big;
	sum += t2;
	if (sum > MONEY_MAX - t3)
		goto too_big;
	sum += t3;
	if (sum > MONEY_MAX - t4)
		goto too_big;
	*out = sum + t4;
	return SL_OK;
too_big:
	return sl_diag_set(d, SL_ELIMIT, "%lld units at %lld per %lld exceeds "
			   "the bound of %lld minor units", (long long)qty,
			   (long long)price, (long long)div, (long long)MONEY_MAX);
}

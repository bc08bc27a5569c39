/* money.h - amounts of money as integers in a currency's minor unit.
 *
 * No floating point touches money (DESIGN.md §6): an amount is an int64_t
 * count of the currency's minor unit (fen for CNY, cent for USD, yen for JPY).
 * Text crosses the boundary only through money_parse()/money_format(), which
 * are exact: "12.34" CNY is 1234 and 1234 formats back as "12.34". Every
 * amount the billing code handles stays within ±MONEY_MAX, so sums of a few
 * amounts never wrap an int64_t before the checks below catch them. */
#ifndef SL_MONEY_H
#define SL_MONEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Bound on the magnitude of any amount, balance or total (minor units):
 * 10^18 fen is 10^16 CNY, far beyond any bill, and leaves int64_t headroom. */
#define MONEY_MAX INT64_C(1000000000000000000)
/* Bound on the text money_parse() accepts (characters, without NUL). */
#define MONEY_TEXT_MAX 40
/* Buffer size that always holds money_format()'s output. */
#define MONEY_FMT_SIZE 32
/* Most minor-unit digits any known currency has. */
#define MONEY_MAX_DIGITS 3

struct money_currency {
	const char *code;  /* ISO 4217, upper case: "CNY" */
	int digits;        /* minor-unit digits: 2 for CNY (fen), 0 for JPY */
	int64_t unit;      /* 10^digits: minor units per major unit */
};

/* The currency with ISO code `code` (exact, upper case), or NULL when the
 * table does not know it. Known: CNY, USD, EUR, GBP, HKD, SGD, JPY, KRW. */
const struct money_currency *money_currency_find(const char *code);

/* Like money_currency_find, with an error: SL_EINVAL "unknown currency" (and a
 * hint listing the known ones) when code is NULL or not in the table. */
enum sl_err money_currency_get(const char *code,
			       const struct money_currency **out,
			       struct sl_diag *d) SL_MUST_USE;

/* Number of known currencies and the i-th (i < count), for listings. */
size_t money_currency_count(void);
const struct money_currency *money_currency_at(size_t i);

/* Parses a decimal amount in major units ("12.34", "12", "0.05", "-3.5" when
 * allow_negative) into minor units of c. Accepted: optional '-', digits, and
 * optionally '.' followed by 1..c->digits digits. Errors (*out unchanged):
 * SL_EINVAL for a negative amount when !allow_negative, for more fractional
 * digits than the currency has ("0.001" CNY is not a whole number of fen),
 * for a '+', spaces, exponents or anything else; SL_ELIMIT when the magnitude
 * exceeds MONEY_MAX or the text exceeds MONEY_TEXT_MAX. */
enum sl_err money_parse(const char *text, const struct money_currency *c,
			bool allow_negative, int64_t *out,
			struct sl_diag *d) SL_MUST_USE;

/* Parses a whole number of minor units ("1234" fen), as the CLI's --price FEN
 * takes it. Same rules and errors as money_parse without a fraction. */
enum sl_err money_parse_minor(const char *text, bool allow_negative,
			      int64_t *out, struct sl_diag *d) SL_MUST_USE;

/* Formats amount (minor units of c) as major units with exactly c->digits
 * fractional digits: 1234 -> "12.34", -5 -> "-0.05", JPY 1234 -> "1234".
 * buf must hold MONEY_FMT_SIZE bytes. SL_ELIMIT when |amount| > MONEY_MAX. */
enum sl_err money_format(int64_t amount, const struct money_currency *c,
			 char *buf, size_t n, struct sl_diag *d) SL_MUST_USE;

/* *out = a + b. SL_ELIMIT (and *out unchanged) when either input or the
 * result lies outside ±MONEY_MAX. */
enum sl_err money_add(int64_t a, int64_t b, int64_t *out,
		      struct sl_diag *d) SL_MUST_USE;

/* Bound on money_mul_div_half_up's divisor: remainders below it multiply
 * without overflow (3e9^2 < 2^63); a 31-day month is 2.68e9 ms. */
#define MONEY_MAX_DIV INT64_C(3000000000)

/* *out = qty * price / div rounded half up (x.5 goes to x+1), computed
 * exactly with 64-bit integers and no intermediate overflow (both factors
 * are split into a multiple of div and a remainder). Requires qty >= 0,
 * 0 <= price <= MONEY_MAX, 0 < div <= MONEY_MAX_DIV, else SL_EINVAL;
 * SL_ELIMIT when the result exceeds MONEY_MAX. This is the one rounding step
 * of a bill line. */
enum sl_err money_mul_div_half_up(int64_t qty, int64_t price, int64_t div,
				  int64_t *out, struct sl_diag *d) SL_MUST_USE;

#endif

/* fleet_range.c - host range expressions ("fza-h100-[002-016]", "n[1-3,7]").
 *
 * The whole expression is parsed and counted before the first name is handed
 * to the callback, so a syntax error or an oversized range never produces a
 * partial set of names. Zero padding follows the start of each range (as in
 * Slurm's hostlists), so "[008-012]" gives 008..012 and "[8-12]" gives 8..12. */
#include "fleet.h"

#include <stdio.h>
#include <string.h>

#define RANGE_MAX_DIGITS 9  /* bound on one number: fits an int */
#define RANGE_MAX_ITEMS 1024 /* bound on comma-separated items in one group */

struct range_item {
	long lo, hi;
	int width; /* digits of lo as written (zero padding) */
};

struct range_expr {
	const char *prefix, *suffix;
	size_t nprefix;
	struct range_item items[RANGE_MAX_ITEMS];
	int nitems;
	long total;
};

static enum sl_err range_err(struct sl_diag *d, enum sl_err e, const char *expr, size_t at,
			     const char *what)
{
	sl_diag_at(d, e, 1, (int)at + 1, "bad range '%.80s' at column %d: %s", expr,
		   (int)at + 1, what);
	sl_diag_hint(d, "write a name, or one bracket group of numbers and ranges such as "
			"node-[001-016] or n[1-3,7]");
	return e;
}

/* Reads a number at expr[*at]; advances *at. */
static enum sl_err range_number(const char *expr, size_t *at, long *val, int *width,
				struct sl_diag *d)
{
	size_t i = *at;
	long v = 0;
	while (expr[i] >= '0' && expr[i] <= '9') {
		if (i - *at >= RANGE_MAX_DIGITS)
			return range_err(d, SL_ELIMIT, expr, *at,
					 "number has more than 9 digits");
		v = v * 10 + (expr[i] - '0');
		i++;
	}
	if (i == *at)
		return range_err(d, SL_EINVAL, expr, i, "expected a digit");
	*val = v;
	*width = (int)(i - *at);
	*at = i;
	return SL_OK;
}

static enum sl_err range_item(const char *expr, size_t *at, struct range_item *it,
			      struct sl_diag *d)
{
	size_t start = *at;
	int w2;
	enum sl_err e = range_number(expr, at, &it->lo, &it->width, d);
	if (e != SL_OK)
		return e;
	it->hi = it->lo;
	if (expr[*at] == '-') {
		(*at)++;
		e = range_number(expr, at, &it->hi, &w2, d);
		if (e != SL_OK)
			return e;
		if (it->hi < it->lo)
			return range_err(d, SL_EINVAL, expr, start,
					 "range runs backwards; expected start <= end");
	}
	return SL_OK;
}

static enum sl_err range_parse(const char *expr, struct range_expr *r, struct sl_diag *d)
{
	const char *open = strchr(expr, '[');
	const char *close = strchr(expr, ']');
	memset(r, 0, sizeof(*r));
	if (!*expr)
		return range_err(d, SL_EINVAL, expr, 0, "empty; expected a node name or range");
	if (!open) {
		if (close)
			return range_err(d, SL_EINVAL, expr, (size_t)(close - expr),
					 "']' without '['");
		r->prefix = expr;
		r->nprefix = strlen(expr);
		r->total = 1;
		return SL_OK;
	}
	if (close && close < open)
		return range_err(d, SL_EINVAL, expr, (size_t)(close - expr), "']' without '['");
	if (!close)
		return range_err(d, SL_EINVAL, expr, (size_t)(open - expr),
				 "'[' is never closed; expected ']'");
	r->prefix = expr;
	r->nprefix = (size_t)(open - expr);
	r->suffix = close + 1;
	if (strpbrk(r->suffix, "[]")) {
		size_t at = (size_t)(strpbrk(r->suffix, "[]") - expr);
		return range_err(d, SL_EINVAL, expr, at, "only one bracket group is allowed");
	}
	size_t at = (size_t)(open - expr) + 1;
	for (;;) {
		if (r->nitems >= (int)(sizeof(r->items) / sizeof(r->items[0])))
			return range_err(d, SL_ELIMIT, expr, at, "more than 1024 items in the list");
		struct range_item *it = &r->items[r->nitems];
		enum sl_err e = range_item(expr, &at, it, d);
		if (e != SL_OK)
			return e;
		r->nitems++;
		r->total += it->hi - it->lo + 1;
		if (r->total > FLEET_MAX_RANGE)
			return range_err(d, SL_ELIMIT, expr, (size_t)(open - expr),
					 "expands to more than 100000 names");
		if (expr[at] == ']')
			return SL_OK;
		if (expr[at] != ',')
			return range_err(d, SL_EINVAL, expr, at,
					 "expected a digit, '-', ',' or ']'");
		at++;
	}
}

enum sl_err fleet_expand_range(const char *expr, enum sl_err (*fn)(void *arg, const char *name),
			       void *arg, struct sl_diag *d)
{
	struct range_expr r;
	enum sl_err e = range_parse(expr, &r, d);
	if (e != SL_OK)
		return e;
	if (r.nitems == 0)
		return fn(arg, expr);
	/* Longest name: prefix + widest number + suffix. */
	size_t nsuffix = strlen(r.suffix);
	for (int i = 0; i < r.nitems; i++) {
		int digits = snprintf(NULL, 0, "%0*ld", r.items[i].width, r.items[i].hi);
		if (r.nprefix + (size_t)digits + nsuffix > FLEET_NAME_MAX)
			return range_err(d, SL_EINVAL, expr, 0,
					 "names would be longer than 63 characters");
	}
	char name[FLEET_NAME_MAX + 1];
	for (int i = 0; i < r.nitems; i++)
		for (long v = r.items[i].lo; v <= r.items[i].hi; v++) {
			snprintf(name, sizeof(name), "%.*s%0*ld%s", (int)r.nprefix, r.prefix,
				 r.items[i].width, v, r.suffix);
			e = fn(arg, name);
			if (e != SL_OK)
				return e;
		}
	return SL_OK;
}

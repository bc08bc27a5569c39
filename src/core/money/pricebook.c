/* pricebook.c - one sorted array of price entries.
 *
 * Entries are kept sorted by (scope, scope name, model, plan, from), so one
 * key's series is a contiguous run found by binary search, and listing is in
 * a stable order without sorting on the way out. Prices change rarely and are
 * read on every rating step, so inserts pay the memmove and reads are
 * O(log n). */
#include "pricebook.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "calendar.h"

struct pricebook {
	struct price_entry *v;
	size_t n, cap;
};

const char *price_scope_name(enum price_scope s)
{
	switch (s) {
	case PRICE_GLOBAL: return "global";
	case PRICE_REGION: return "region";
	case PRICE_SITE: return "site";
	}
	return "?";
}

/* 1..PRICE_NAME_MAX-1 characters of [A-Za-z0-9._-], as fleet names. */
static bool name_ok(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++) {
		char c = s[n];
		if (n >= PRICE_NAME_MAX - 1 ||
		    !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return n > 0;
}

static enum sl_err entry_check(const struct price_entry *e, struct sl_diag *d)
{
	if ((unsigned)e->plan >= PLAN__COUNT ||
	    (unsigned)e->scope > PRICE_SITE)
		return sl_diag_set(d, SL_EINVAL, "bad plan or scope");
	if (e->scope == PRICE_GLOBAL ? e->scope_name[0] != 0
				     : !name_ok(e->scope_name)) {
		enum sl_err r = sl_diag_set(d, SL_EINVAL, "bad %s name '%.63s'",
					    price_scope_name(e->scope),
					    e->scope_name);
		sl_diag_hint(d, "names are 1..%d characters of [A-Za-z0-9._-]; "
				"the global scope has none", PRICE_NAME_MAX - 1);
		return r;
	}
	if (!plan_has_model(e->plan) ? e->model[0] != 0 : !name_ok(e->model)) {
		enum sl_err r = sl_diag_set(d, SL_EINVAL, "bad GPU model '%.63s' "
					    "for plan %s", e->model,
					    plan_name(e->plan));
		sl_diag_hint(d, "a GPU price names its model; a hosting fee, a "
				"no-gpu or a storage price names none");
		return r;
	}
	if (e->price < 0)
		return sl_diag_set(d, SL_EINVAL, "negative price %lld",
				   (long long)e->price);
	if (e->price > PRICE_MAX)
		return sl_diag_set(d, SL_ELIMIT, "price %lld exceeds the bound of "
				   "%lld minor units", (long long)e->price,
				   (long long)PRICE_MAX);
	return cal_check_instant(e->from_ms, d);
}

static enum sl_err copy_name(char *dst, const char *src, const char *what,
			     struct sl_diag *d)
{
	size_t n = src ? strnlen(src, PRICE_NAME_MAX) : 0;
	if (n >= PRICE_NAME_MAX)
		return sl_diag_set(d, SL_ELIMIT, "%s name longer than %d "
				   "characters", what, PRICE_NAME_MAX - 1);
	memset(dst, 0, PRICE_NAME_MAX);
	if (n)
		memcpy(dst, src, n);
	return SL_OK;
}

enum sl_err price_entry_init(struct price_entry *e, enum price_scope scope,
			     const char *scope_name, const char *model,
			     enum plan plan, int64_t from_ms,
			     int64_t price, struct sl_diag *d)
{
	struct price_entry t;
	memset(&t, 0, sizeof(t));
	t.scope = scope;
	t.plan = plan;
	t.from_ms = from_ms;
	t.price = price;
	enum sl_err r = copy_name(t.scope_name,
				  scope == PRICE_GLOBAL ? "" : scope_name,
				  "scope", d);
	if (!r)
		r = copy_name(t.model, model, "model", d);
	if (!r)
		r = entry_check(&t, d);
	if (!r)
		*e = t;
	return r;
}

/* Orders by key; from_ms only when with_from. */
static int entry_cmp(const struct price_entry *a, const struct price_entry *b,
		     bool with_from)
{
	if (a->scope != b->scope)
		return a->scope < b->scope ? -1 : 1;
	int c = strcmp(a->scope_name, b->scope_name);
	if (c)
		return c;
	c = strcmp(a->model, b->model);
	if (c)
		return c;
	if (a->plan != b->plan) /* enum order: the listing order (plan.h) */
		return a->plan < b->plan ? -1 : 1;
	if (with_from && a->from_ms != b->from_ms)
		return a->from_ms < b->from_ms ? -1 : 1;
	return 0;
}

/* First index whose entry is not before e. */
static size_t lower_bound(const struct pricebook *pb,
			  const struct price_entry *e, bool with_from)
{
	size_t lo = 0, hi = pb->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (entry_cmp(&pb->v[mid], e, with_from) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

enum sl_err pricebook_new(struct pricebook **out)
{
	struct pricebook *pb = calloc(1, sizeof(*pb));
	if (!pb)
		return SL_ENOMEM;
	*out = pb;
	return SL_OK;
}

void pricebook_free(struct pricebook *pb)
{
	if (!pb)
		return;
	free(pb->v);
	free(pb);
}

enum sl_err pricebook_restore(struct pricebook *pb,
			      const struct price_entry *e, struct sl_diag *d)
{
	enum sl_err r = entry_check(e, d);
	if (r)
		return r;
	size_t at = lower_bound(pb, e, true);
	if (at < pb->n && entry_cmp(&pb->v[at], e, true) == 0)
		return sl_diag_set(d, SL_EEXIST, "a %s price for %s '%s' model "
				   "'%s' already starts at %lld ms",
				   plan_name(e->plan),
				   price_scope_name(e->scope), e->scope_name,
				   e->model, (long long)e->from_ms);
	if (pb->n >= PRICEBOOK_MAX_ENTRIES)
		return sl_diag_set(d, SL_ELIMIT, "price book holds at most %d "
				   "entries", PRICEBOOK_MAX_ENTRIES);
	if (sl_grow(&pb->v, &pb->cap, pb->n + 1, PRICEBOOK_MAX_ENTRIES))
		return SL_ENOMEM;
	memmove(&pb->v[at + 1], &pb->v[at], (pb->n - at) * sizeof(*pb->v));
	pb->v[at] = *e;
	pb->n++;
	return SL_OK;
}

enum sl_err pricebook_set(struct pricebook *pb, const struct price_entry *e,
			  int64_t now_ms, struct sl_diag *d)
{
	if (e->from_ms < now_ms) {
		enum sl_err r = sl_diag_set(d, SL_EINVAL, "a price effective from "
					    "%lld ms is in the past (now is "
					    "%lld ms): it would re-price used "
					    "time", (long long)e->from_ms,
					    (long long)now_ms);
		sl_diag_hint(d, "give an effective-from instant of now or later");
		return r;
	}
	return pricebook_restore(pb, e, d);
}

/* The series of one key: the run [*lo, *hi) of entries equal to probe. */
static void series(const struct pricebook *pb, const struct price_entry *probe,
		   size_t *lo, size_t *hi)
{
	*lo = lower_bound(pb, probe, false);
	size_t h = *lo;
	while (h < pb->n && entry_cmp(&pb->v[h], probe, false) == 0)
		h++;
	*hi = h;
}

/* In series [lo, hi): the entry in force at t (or NULL), and the first
 * from_ms after t (INT64_MAX if none). */
static const struct price_entry *series_at(const struct pricebook *pb,
					   size_t lo, size_t hi, int64_t t,
					   int64_t *next)
{
	const struct price_entry *cur = NULL;
	*next = INT64_MAX;
	/* The run is short (one key's history); a linear walk is enough. */
	for (size_t i = lo; i < hi; i++) {
		if (pb->v[i].from_ms <= t) {
			cur = &pb->v[i];
		} else {
			*next = pb->v[i].from_ms;
			break;
		}
	}
	return cur;
}

enum sl_err pricebook_at(const struct pricebook *pb, const struct price_key *k,
			 int64_t at_ms, struct price_quote *q, struct sl_diag *d)
{
	struct price_entry probe;
	int64_t until = INT64_MAX;
	memset(&probe, 0, sizeof(probe));
	probe.plan = k->plan;
	if (k->model && strlen(k->model) < PRICE_NAME_MAX)
		sl_strcpy(probe.model, sizeof(probe.model), k->model);
	const char *names[3] = {k->site, k->region, ""};
	const enum price_scope scopes[3] = {PRICE_SITE, PRICE_REGION,
					    PRICE_GLOBAL};
	for (int s = 0; s < 3; s++) {
		const char *nm = names[s];
		if (!nm || (s < 2 && !*nm) || strlen(nm) >= PRICE_NAME_MAX)
			continue;
		probe.scope = scopes[s];
		sl_strcpy(probe.scope_name, sizeof(probe.scope_name), nm);
		size_t lo, hi;
		int64_t next;
		series(pb, &probe, &lo, &hi);
		const struct price_entry *cur = series_at(pb, lo, hi, at_ms, &next);
		/* A more specific series that starts later takes over then. */
		if (next < until)
			until = next;
		if (cur) {
			q->price = cur->price;
			q->from_ms = cur->from_ms;
			q->until_ms = until;
			q->scope = cur->scope;
			return SL_OK;
		}
	}
	enum sl_err r = sl_diag_set(d, SL_ENOTFOUND, "no %s price for model "
				    "'%.63s' at site '%.63s' / region '%.63s' "
				    "at %lld ms", plan_name(k->plan),
				    k->model ? k->model : "",
				    k->site ? k->site : "",
				    k->region ? k->region : "",
				    (long long)at_ms);
	sl_diag_hint(d, "set one with `suanli price set` (a global price "
			"applies everywhere)");
	return r;
}

size_t pricebook_count(const struct pricebook *pb)
{
	return pb->n;
}

const struct price_entry *pricebook_entry(const struct pricebook *pb, size_t i)
{
	return i < pb->n ? &pb->v[i] : NULL;
}

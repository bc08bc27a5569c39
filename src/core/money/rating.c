/* rating.c - usage history -> bill lines, split at prices and months.
 *
 * The walk is chronological: each constant-GPU segment of the history is cut
 * at the earliest of (segment end, month end, next price change), and each
 * piece's GPU-ms are added to the line for (month, unit price). Lines are
 * created in order of first use, so the output order needs no sort. Amounts
 * are computed only after all pieces are added, which is what makes the
 * rounding happen once per line. Lines are appended to the caller's array and
 * cut back on any error, so a failed call leaves it as it was. */
#include "rating.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "money.h"

#define RATING_MAX_LINES (1 << 20) /* rated lines of one lease */

void rating_lines_init(struct rating_lines *ls)
{
	memset(ls, 0, sizeof(*ls));
}

void rating_lines_release(struct rating_lines *ls)
{
	free(ls->v);
	memset(ls, 0, sizeof(*ls));
}

static enum sl_err lines_push(struct rating_lines *ls, struct rating_line **out)
{
	enum sl_err ge = sl_grow(&ls->v, &ls->cap, ls->n + 1, RATING_MAX_LINES);
	if (ge)
		return ge;
	*out = &ls->v[ls->n++];
	memset(*out, 0, sizeof(**out));
	return SL_OK;
}

static enum sl_err check_lease(const struct rating_lease *l, struct sl_diag *d)
{
	size_t idn = l->id ? strnlen(l->id, RATING_ID_MAX) : 0;
	if (idn == 0 || idn >= RATING_ID_MAX)
		return sl_diag_set(d, SL_EINVAL, "lease id must be 1..%d bytes",
				   RATING_ID_MAX - 1);
	if ((unsigned)l->plan >= PLAN__COUNT)
		return sl_diag_set(d, SL_EINVAL, "lease %s: bad plan", l->id);
	if (l->model && strnlen(l->model, PRICE_NAME_MAX) >= PRICE_NAME_MAX)
		return sl_diag_set(d, SL_ELIMIT, "lease %s: model name too long",
				   l->id);
	return SL_OK;
}

static enum sl_err check_events(const struct rating_lease *l,
				struct sl_diag *d)
{
	if (l->nevents > RATING_MAX_EVENTS)
		return sl_diag_set(d, SL_ELIMIT, "lease %s has %zu events; at most "
				   "%d are rated", l->id, l->nevents,
				   RATING_MAX_EVENTS);
	if (l->nevents > 0 && !l->events)
		return sl_diag_set(d, SL_EINVAL, "lease %s: no event array",
				   l->id);
	for (size_t i = 0; i < l->nevents; i++) {
		const struct rating_event *ev = &l->events[i];
		enum sl_err e = cal_check_instant(ev->at_ms, d);
		if (e)
			return e;
		if ((ev->kind == RATING_STARTED) != (i == 0))
			return sl_diag_set(d, SL_EINVAL, "lease %s: event %zu: the "
					   "history must begin with its only "
					   "'started'", l->id, i);
		if ((unsigned)ev->kind > RATING_ENDED)
			return sl_diag_set(d, SL_EINVAL, "lease %s: event %zu: "
					   "unknown kind", l->id, i);
		if (i > 0 && ev->at_ms < l->events[i - 1].at_ms)
			return sl_diag_set(d, SL_EINVAL, "lease %s: event %zu is "
					   "earlier than the one before",
					   l->id, i);
		if (ev->kind == RATING_ENDED && i + 1 != l->nevents)
			return sl_diag_set(d, SL_EINVAL, "lease %s: events after "
					   "'ended'", l->id);
		if (ev->kind == RATING_ENDED)
			continue;
		if (ev->gpus > RATING_MAX_GPUS)
			return sl_diag_set(d, SL_ELIMIT, "lease %s: %d GPUs exceed "
					   "the bound of %d", l->id, ev->gpus,
					   RATING_MAX_GPUS);
		if (ev->gpus < (ev->kind == RATING_STARTED ? 1 : 0))
			return sl_diag_set(d, SL_EINVAL, "lease %s: event %zu: bad "
					   "GPU count %d", l->id, i, ev->gpus);
	}
	return SL_OK;
}

/* The line of this lease (lines from index base on) for (month, price), or a
 * new one. */
static enum sl_err line_for(struct rating_lines *out, size_t base,
			    const struct rating_lease *l, struct cal_month m,
			    int64_t price, int64_t t, struct rating_line **ln)
{
	for (size_t i = base; i < out->n; i++)
		if (cal_month_cmp(out->v[i].month, m) == 0 &&
		    out->v[i].unit_price == price) {
			*ln = &out->v[i];
			return SL_OK;
		}
	enum sl_err e = lines_push(out, ln);
	if (e)
		return e;
	sl_strcpy((*ln)->lease, sizeof((*ln)->lease), l->id);
	if (l->model)
		sl_strcpy((*ln)->model, sizeof((*ln)->model), l->model);
	(*ln)->plan = l->plan;
	(*ln)->month = m;
	(*ln)->first_ms = t;
	(*ln)->unit_price = price;
	return SL_OK;
}

/* Adds gpus GPUs over [a, b) (already clipped to the window). */
static enum sl_err rate_piece_range(const struct pricebook *pb,
				    const struct cal_zone *z,
				    const struct rating_lease *l,
				    const struct price_key *k, int gpus,
				    int64_t a, int64_t b,
				    struct rating_lines *out, size_t base,
				    struct sl_diag *d)
{
	int64_t t = a;
	while (t < b) {
		struct cal_month m;
		int64_t mend;
		struct price_quote q;
		enum sl_err e = cal_month_of(z, t, &m, d);
		if (!e)
			e = cal_month_end(z, m, &mend, d);
		if (!e)
			e = pricebook_at(pb, k, t, &q, d);
		if (e)
			return e;
		int64_t u = b < mend ? b : mend;
		if (q.until_ms < u)
			u = q.until_ms;
		struct rating_line *ln;
		e = line_for(out, base, l, m, q.price, t, &ln);
		if (e)
			return e;
		/* Bounded: gpus <= 1e5 and a month's pieces sum to < 2.7e9 ms. */
		ln->quantity += (int64_t)gpus * (u - t);
		ln->end_ms = u;
		t = u;
	}
	return SL_OK;
}

static enum sl_err rate_usage(const struct pricebook *pb,
			      const struct cal_zone *z,
			      const struct rating_lease *l, int64_t from_ms,
			      int64_t to_ms, struct rating_lines *out,
			      size_t base, struct sl_diag *d)
{
	enum sl_err e = check_events(l, d);
	if (e || l->nevents == 0)
		return e;
	const struct rating_event *ev = l->events;
	size_t n = l->nevents;
	int64_t stop = ev[n - 1].kind == RATING_ENDED ? ev[n - 1].at_ms : to_ms;
	if (stop > to_ms)
		stop = to_ms;
	if (stop - ev[0].at_ms > RATING_MAX_SPAN_MS)
		return sl_diag_set(d, SL_ELIMIT, "lease %s: usage spans more "
				   "than %lld ms", l->id,
				   (long long)RATING_MAX_SPAN_MS);
	struct price_key k = {l->site, l->region, l->model, l->plan};
	for (size_t i = 0; i < n && ev[i].kind != RATING_ENDED; i++) {
		int64_t a = ev[i].at_ms;
		int64_t b = i + 1 < n ? ev[i + 1].at_ms : to_ms;
		if (a < from_ms)
			a = from_ms;
		if (b > stop)
			b = stop;
		if (a >= b || ev[i].gpus == 0)
			continue;
		e = rate_piece_range(pb, z, l, &k, ev[i].gpus, a, b, out, base, d);
		if (e)
			return e;
	}
	/* The one rounding step per line. */
	for (size_t i = base; i < out->n; i++) {
		struct rating_line *ln = &out->v[i];
		int64_t div = RATING_MS_PER_HOUR;
		if (l->plan == PLAN_HOSTING || l->plan == PLAN_STORAGE) {
			int64_t ms0, ms1;
			e = cal_month_start(z, ln->month, &ms0, d);
			if (!e)
				e = cal_month_end(z, ln->month, &ms1, d);
			if (e)
				return e;
			div = ms1 - ms0;
		}
		e = money_mul_div_half_up(ln->quantity, ln->unit_price, div,
					  &ln->amount, d);
		if (e)
			return e;
	}
	return SL_OK;
}

static enum sl_err rate_monthly(const struct pricebook *pb,
				const struct cal_zone *z,
				const struct rating_lease *l, int64_t from_ms,
				int64_t to_ms, struct rating_lines *out,
				struct sl_diag *d)
{
	if (l->gpus < 1 || l->gpus > RATING_MAX_GPUS)
		return sl_diag_set(d, l->gpus < 1 ? SL_EINVAL : SL_ELIMIT,
				   "lease %s: %d GPUs; a monthly lease has 1..%d",
				   l->id, l->gpus, RATING_MAX_GPUS);
	if (l->term_months < 1 || l->term_months > RATING_MAX_TERM_MONTHS)
		return sl_diag_set(d, l->term_months < 1 ? SL_EINVAL : SL_ELIMIT,
				   "lease %s: a term of %d months; terms are "
				   "1..%d", l->id, l->term_months,
				   RATING_MAX_TERM_MONTHS);
	struct price_key k = {l->site, l->region, l->model, PLAN_MONTHLY};
	struct price_quote q;
	enum sl_err e = cal_check_instant(l->bought_ms, d);
	if (!e)
		e = pricebook_at(pb, &k, l->bought_ms, &q, d);
	if (e)
		return e;
	int64_t due = l->bought_ms;
	for (int i = 0; i < l->term_months; i++) {
		int64_t next;
		struct cal_month m;
		e = cal_add_months(z, l->bought_ms, i + 1, &next, d);
		if (!e)
			e = cal_month_of(z, due, &m, d);
		if (e)
			return e;
		if (due >= from_ms && due < to_ms) {
			struct rating_line *ln;
			e = lines_push(out, &ln);
			if (e)
				return e;
			sl_strcpy(ln->lease, sizeof(ln->lease), l->id);
			if (l->model)
				sl_strcpy(ln->model, sizeof(ln->model), l->model);
			ln->plan = PLAN_MONTHLY;
			ln->month = m;
			ln->first_ms = due;
			ln->end_ms = next;
			ln->quantity = l->gpus;
			ln->unit_price = q.price;
			/* gpus <= 1e5 and price <= 1e11 cannot pass MONEY_MAX. */
			ln->amount = (int64_t)l->gpus * q.price;
		}
		due = next;
	}
	return SL_OK;
}

enum sl_err rating_rate(const struct pricebook *pb, const struct cal_zone *z,
			const struct rating_lease *l, int64_t from_ms,
			int64_t to_ms, struct rating_lines *out,
			struct sl_diag *d)
{
	size_t base = out->n;
	enum sl_err e = check_lease(l, d);
	if (!e && from_ms > to_ms)
		e = sl_diag_set(d, SL_EINVAL, "rating window ends before it "
				"starts");
	if (!e)
		e = cal_check_instant(from_ms, d);
	if (!e && to_ms != CAL_END_MS)
		e = cal_check_instant(to_ms, d);
	if (!e && l->plan == PLAN_MONTHLY)
		e = rate_monthly(pb, z, l, from_ms, to_ms, out, d);
	else if (!e)
		e = rate_usage(pb, z, l, from_ms, to_ms, out, base, d);
	if (e)
		out->n = base;
	return e;
}

enum sl_err rating_first_hour(const struct pricebook *pb,
			      const struct price_key *k, int gpus,
			      int64_t at_ms, int64_t *cost, struct sl_diag *d)
{
	if (k->plan != PLAN_HOURLY && k->plan != PLAN_SPOT)
		return sl_diag_set(d, SL_EINVAL, "first-hour cost is for hourly "
				   "and spot plans");
	if (gpus < 1 || gpus > RATING_MAX_GPUS)
		return sl_diag_set(d, gpus < 1 ? SL_EINVAL : SL_ELIMIT,
				   "%d GPUs; expected 1..%d", gpus,
				   RATING_MAX_GPUS);
	enum sl_err e = cal_check_instant(at_ms, d);
	if (e)
		return e;
	int64_t end = at_ms + RATING_MS_PER_HOUR, t = at_ms, total = 0;
	while (t < end) {
		struct price_quote q;
		int64_t part;
		e = pricebook_at(pb, k, t, &q, d);
		if (e)
			return e;
		int64_t u = q.until_ms < end ? q.until_ms : end;
		e = money_mul_div_half_up((int64_t)gpus * (u - t), q.price,
					  RATING_MS_PER_HOUR, &part, d);
		if (!e)
			e = money_add(total, part, &total, d);
		if (e)
			return e;
		t = u;
	}
	*cost = total;
	return SL_OK;
}

/* invoice.c - build a month's invoice from rating and the ledger, and write
 * it as JSON and CSV by hand.
 *
 * The encoders print with fixed formats into a bounded growable buffer
 * instead of going through a JSON library: byte-for-byte reproducibility
 * then depends only on this file (key order, integer formatting, escaping),
 * not on a library's version or settings. Errors in the buffer are sticky,
 * so the writers read straight through and check once at the end. */
#include "invoice.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

#define INVOICE_MAX_REVENUE_ROWS INVOICE_MAX_LINES /* (region, model, plan) rows of a summary */

static const char *const kind_names[] = {"usage", "monthly", "hosting", "no-gpu",
					  "storage", "credit", "refund"};

const char *invoice_kind_name(enum invoice_kind k)
{
	return (unsigned)k <= INVOICE_REFUND ? kind_names[k] : "?";
}

void invoice_init(struct invoice *inv)
{
	memset(inv, 0, sizeof(*inv));
}

void invoice_release(struct invoice *inv)
{
	free(inv->lines);
	invoice_init(inv);
}

/* ------------------------------------------------------------ building */

struct line_vec {
	struct invoice_line *v;
	size_t n, cap;
};

/* A new zeroed line at the end of lv, or NULL with *e and d saying why. */
static struct invoice_line *push_line(struct line_vec *lv, enum sl_err *e,
				      struct sl_diag *d)
{
	if (lv->n >= INVOICE_MAX_LINES) {
		*e = sl_diag_set(d, SL_ELIMIT, "an invoice holds at most %d lines",
				 INVOICE_MAX_LINES);
		return NULL;
	}
	if (sl_grow(&lv->v, &lv->cap, lv->n + 1, INVOICE_MAX_LINES)) {
		*e = sl_diag_set(d, SL_ENOMEM, "out of memory building an invoice");
		return NULL;
	}
	struct invoice_line *ln = &lv->v[lv->n++];
	memset(ln, 0, sizeof(*ln));
	return ln;
}

static int cmp_i64(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

static int line_cmp(const void *pa, const void *pb)
{
	const struct invoice_line *a = pa, *b = pb;
	int c;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if ((c = strcmp(a->lease, b->lease)) || (c = strcmp(a->posting, b->posting)))
		return c;
	if ((c = cmp_i64(a->from_ms, b->from_ms)) ||
	    (c = cmp_i64(a->unit_price, b->unit_price)))
		return c;
	if (a->plan != b->plan) /* enum order, fixed in plan.h: invoices reproduce */
		return a->plan < b->plan ? -1 : 1;
	if ((c = strcmp(a->model, b->model)) ||
	    (c = cmp_i64(a->quantity, b->quantity)) ||
	    (c = cmp_i64(a->amount, b->amount)) || (c = cmp_i64(a->to_ms, b->to_ms)))
		return c;
	return strcmp(a->reason, b->reason);
}

static enum invoice_kind kind_of(enum plan p)
{
	return p == PLAN_MONTHLY ? INVOICE_MONTHLY
	       : p == PLAN_HOSTING ? INVOICE_HOSTING
	       : p == PLAN_NOGPU   ? INVOICE_NOGPU
	       : p == PLAN_STORAGE ? INVOICE_STORAGE : INVOICE_USAGE;
}

static enum sl_err add_rated(const struct invoice_input *in, int64_t start,
			     int64_t as_of, struct line_vec *lv,
			     struct sl_diag *d)
{
	struct rating_lines rl;
	rating_lines_init(&rl);
	enum sl_err e = SL_OK;
	for (size_t i = 0; i < in->nleases && !e; i++) {
		const struct rating_lease *l = &in->leases[i];
		if (!l->tenant) {
			e = sl_diag_set(d, SL_EINVAL, "lease %.127s has no tenant",
					l->id ? l->id : "");
			break;
		}
		if (strcmp(l->tenant, in->tenant) != 0)
			continue;
		rl.n = 0;
		e = rating_rate(in->prices, in->zone, l, start, as_of, &rl, d);
		for (size_t k = 0; k < rl.n && !e; k++) {
			const struct rating_line *r = &rl.v[k];
			struct invoice_line *ln = push_line(lv, &e, d);
			if (!ln)
				break;
			ln->kind = kind_of(r->plan);
			sl_strcpy(ln->lease, sizeof(ln->lease), r->lease);
			sl_strcpy(ln->model, sizeof(ln->model), r->model);
			ln->plan = r->plan;
			ln->from_ms = r->first_ms;
			ln->to_ms = r->end_ms;
			ln->quantity = r->quantity;
			ln->unit_price = r->unit_price;
			ln->amount = r->amount;
		}
	}
	rating_lines_release(&rl);
	return e;
}

static enum sl_err add_credits(const struct invoice_input *in, int64_t start,
			       int64_t as_of, struct line_vec *lv,
			       struct sl_diag *d)
{
	if (!in->ledger)
		return SL_OK;
	size_t n = ledger_posting_count(in->ledger);
	for (size_t i = 0; i < n; i++) {
		const struct ledger_posting *p = ledger_posting_at(in->ledger, i);
		if ((p->type != LEDGER_CREDIT && p->type != LEDGER_REFUND) ||
		    strcmp(p->tenant, in->tenant) != 0 || p->at_ms < start ||
		    p->at_ms >= as_of)
			continue;
		enum sl_err e = SL_OK;
		struct invoice_line *ln = push_line(lv, &e, d);
		if (!ln)
			return e;
		ln->kind = p->type == LEDGER_CREDIT ? INVOICE_CREDIT : INVOICE_REFUND;
		sl_strcpy(ln->posting, sizeof(ln->posting), p->id);
		ln->from_ms = ln->to_ms = p->at_ms;
		ln->amount = -p->amount;
		sl_strcpy(ln->reason, sizeof(ln->reason), p->reason);
	}
	return SL_OK;
}

static enum sl_err sum_lines(struct invoice *inv, struct sl_diag *d)
{
	enum sl_err e = SL_OK;
	for (size_t i = 0; i < inv->nlines && !e; i++) {
		const struct invoice_line *ln = &inv->lines[i];
		int64_t *sub = ln->kind == INVOICE_USAGE     ? &inv->usage
			       : ln->kind == INVOICE_MONTHLY ? &inv->monthly
			       : ln->kind == INVOICE_HOSTING ? &inv->hosting
			       : ln->kind == INVOICE_NOGPU   ? &inv->nogpu
			       : ln->kind == INVOICE_STORAGE ? &inv->storage
							     : &inv->credits;
		e = money_add(*sub, ln->amount, sub, d);
		if (!e)
			e = money_add(inv->total, ln->amount, &inv->total, d);
	}
	return e;
}

static enum sl_err window(const struct invoice_input *in, int64_t *start,
			  int64_t *end, int64_t *as_of, struct sl_diag *d);

static enum sl_err check_input(const struct invoice_input *in,
			       struct sl_diag *d)
{
	if (!in->zone || !in->currency || !in->prices ||
	    (in->nleases && !in->leases))
		return sl_diag_set(d, SL_EINVAL, "invoice: zone, currency, price "
				   "book and leases are required");
	size_t n = in->tenant ? strnlen(in->tenant, LEDGER_TENANT_MAX) : 0;
	if (n == 0 || n >= LEDGER_TENANT_MAX)
		return sl_diag_set(d, SL_EINVAL, "invoice: bad tenant name");
	return SL_OK;
}

enum sl_err invoice_build(struct invoice *inv, const struct invoice_input *in,
			  struct sl_diag *d)
{
	invoice_release(inv);
	enum sl_err e = check_input(in, d);
	int64_t start = 0, end = 0, as_of = 0;
	if (!e)
		e = window(in, &start, &end, &as_of, d);
	if (e)
		return e;
	struct line_vec lv = {NULL, 0, 0};
	e = add_rated(in, start, as_of, &lv, d);
	if (!e)
		e = add_credits(in, start, as_of, &lv, d);
	if (e) {
		free(lv.v);
		return e;
	}
	if (lv.n > 1)
		qsort(lv.v, lv.n, sizeof(lv.v[0]), line_cmp);
	sl_strcpy(inv->tenant, sizeof(inv->tenant), in->tenant);
	inv->month = in->month;
	inv->zone = *in->zone;
	inv->currency = in->currency;
	inv->start_ms = start;
	inv->end_ms = end;
	inv->as_of_ms = as_of;
	inv->complete = in->now_ms >= end;
	inv->lines = lv.v;
	inv->nlines = lv.n;
	e = sum_lines(inv, d);
	if (e)
		invoice_release(inv);
	return e;
}

/* The month's rating window [*start, *as_of) at in->now_ms. */
static enum sl_err window(const struct invoice_input *in, int64_t *start,
			  int64_t *end, int64_t *as_of, struct sl_diag *d)
{
	enum sl_err e = cal_month_start(in->zone, in->month, start, d);
	if (!e)
		e = cal_month_end(in->zone, in->month, end, d);
	if (e)
		return e;
	if (in->now_ms < *start) {
		char m[CAL_MONTH_FMT_SIZE];
		cal_month_format(in->month, m, sizeof(m));
		e = sl_diag_set(d, SL_EINVAL, "month %s is in the future (it "
				"starts at %lld ms, now is %lld ms)", m,
				(long long)*start, (long long)in->now_ms);
		sl_diag_hint(d, "ask for the current month or an earlier one");
		return e;
	}
	*as_of = in->now_ms < *end ? in->now_ms : *end;
	return SL_OK;
}

static int row_cmp(const void *pa, const void *pb)
{
	const struct invoice_revenue_row *a = pa, *b = pb;
	int c = strcmp(a->region, b->region);
	if (!c)
		c = strcmp(a->model, b->model);
	if (!c && a->plan != b->plan) /* enum order, fixed in plan.h */
		c = a->plan < b->plan ? -1 : 1;
	return c;
}

/* Adds one lease's rated lines into the rows. */
static enum sl_err add_revenue(struct invoice_revenue_row **rows, size_t *n,
			       size_t *cap, const struct rating_lease *l,
			       const struct rating_lines *rl, struct sl_diag *d)
{
	const char *region = l->region ? l->region : "";
	if (strlen(region) >= PRICE_NAME_MAX)
		return sl_diag_set(d, SL_ELIMIT, "lease %s: region name too long",
				   l->id);
	for (size_t k = 0; k < rl->n; k++) {
		const struct rating_line *r = &rl->v[k];
		size_t i = 0;
		while (i < *n && !(strcmp((*rows)[i].region, region) == 0 &&
				   strcmp((*rows)[i].model, r->model) == 0 &&
				   (*rows)[i].plan == r->plan))
			i++;
		if (i == *n) {
			enum sl_err ge = sl_grow(rows, cap, *n + 1, INVOICE_MAX_REVENUE_ROWS);
			if (ge)
				return ge;
			memset(&(*rows)[i], 0, sizeof((*rows)[i]));
			sl_strcpy((*rows)[i].region, sizeof((*rows)[i].region), region);
			sl_strcpy((*rows)[i].model, sizeof((*rows)[i].model), r->model);
			(*rows)[i].plan = r->plan;
			(*n)++;
		}
		enum sl_err e = money_add((*rows)[i].amount, r->amount,
					  &(*rows)[i].amount, d);
		if (e)
			return e;
		/* Quantities are bounded per line; a sum past the bound is
		 * refused like an amount. */
		e = money_add((*rows)[i].quantity, r->quantity,
			      &(*rows)[i].quantity, d);
		if (e)
			return e;
	}
	return SL_OK;
}

enum sl_err invoice_revenue(const struct invoice_input *in,
			    struct invoice_revenue_row **rows, size_t *n,
			    struct sl_diag *d)
{
	*rows = NULL;
	*n = 0;
	if (!in->zone || !in->prices || (in->nleases && !in->leases))
		return sl_diag_set(d, SL_EINVAL, "revenue: zone, price book and "
				   "leases are required");
	int64_t start, end, as_of;
	enum sl_err e = window(in, &start, &end, &as_of, d);
	if (e)
		return e;
	struct invoice_revenue_row *v = NULL;
	size_t nv = 0, cap = 0;
	struct rating_lines rl;
	rating_lines_init(&rl);
	for (size_t i = 0; i < in->nleases && !e; i++) {
		rl.n = 0;
		e = rating_rate(in->prices, in->zone, &in->leases[i], start, as_of,
				&rl, d);
		if (!e)
			e = add_revenue(&v, &nv, &cap, &in->leases[i], &rl, d);
	}
	rating_lines_release(&rl);
	if (e) {
		free(v);
		return e;
	}
	if (nv > 1)
		qsort(v, nv, sizeof(v[0]), row_cmp);
	*rows = v;
	*n = nv;
	return SL_OK;
}

/* ------------------------------------------------------------ encoding */

static void json_str(struct sl_buf *b, const char *s)
{
	sl_buf_adds(b, "\"");
	for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
		if (*u == '"' || *u == '\\') {
			char esc[2] = {'\\', (char)*u};
			sl_buf_add(b, esc, 2);
		} else if (*u < 0x20) {
			sl_buf_addf(b, "\\u%04x", *u);
		} else {
			sl_buf_add(b, (const char *)u, 1);
		}
	}
	sl_buf_adds(b, "\"");
}

static void json_key_str(struct sl_buf *b, const char *key, const char *val)
{
	sl_buf_addf(b, "\"%s\":", key);
	json_str(b, val);
}

static void json_key_int(struct sl_buf *b, const char *key, int64_t v)
{
	sl_buf_addf(b, "\"%s\":%lld", key, (long long)v);
}

static void fmt_instant(const struct invoice *inv, int64_t ms, char *buf)
{
	if (cal_format_rfc3339(ms, &inv->zone, buf, CAL_RFC3339_SIZE, NULL))
		buf[0] = 0; /* only for instants outside the calendar */
}

static void fmt_amount(const struct invoice *inv, int64_t v, char *buf)
{
	if (money_format(v, inv->currency, buf, MONEY_FMT_SIZE, NULL))
		buf[0] = 0;
}

static const char *unit_name(const struct invoice_line *ln)
{
	switch (ln->kind) {
	case INVOICE_USAGE: return "gpu_ms";
	case INVOICE_MONTHLY: return "gpu_month";
	case INVOICE_HOSTING: return "server_ms";
	case INVOICE_NOGPU: return "instance_ms";
	case INVOICE_STORAGE: return "gib_ms";
	default: return "none";
	}
}

static bool rated(const struct invoice_line *ln)
{
	return ln->kind <= INVOICE_STORAGE;
}

static void json_line(struct sl_buf *b, const struct invoice *inv,
		      const struct invoice_line *ln)
{
	char from[CAL_RFC3339_SIZE], to[CAL_RFC3339_SIZE], amt[MONEY_FMT_SIZE];
	fmt_instant(inv, ln->from_ms, from);
	fmt_instant(inv, ln->to_ms, to);
	fmt_amount(inv, ln->amount, amt);
	sl_buf_adds(b, "{");
	json_key_str(b, "kind", invoice_kind_name(ln->kind));
	sl_buf_adds(b, ",");
	json_key_str(b, "lease", ln->lease);
	sl_buf_adds(b, ",");
	json_key_str(b, "posting", ln->posting);
	sl_buf_adds(b, ",");
	json_key_str(b, "plan", rated(ln) ? plan_name(ln->plan) : "");
	sl_buf_adds(b, ",");
	json_key_str(b, "model", ln->model);
	sl_buf_adds(b, ",");
	json_key_str(b, "from", from);
	sl_buf_adds(b, ",");
	json_key_str(b, "to", to);
	sl_buf_adds(b, ",");
	json_key_int(b, "gpu_ms", ln->kind == INVOICE_USAGE ? ln->quantity : 0);
	sl_buf_adds(b, ",");
	json_key_int(b, "quantity", ln->quantity);
	sl_buf_adds(b, ",");
	json_key_str(b, "unit", unit_name(ln));
	sl_buf_adds(b, ",");
	json_key_int(b, "unit_price", ln->unit_price);
	sl_buf_adds(b, ",");
	json_key_int(b, "amount", ln->amount);
	sl_buf_adds(b, ",");
	json_key_str(b, "amount_text", amt);
	sl_buf_adds(b, ",");
	json_key_str(b, "reason", ln->reason);
	sl_buf_adds(b, "}");
}

static enum sl_err finish(struct sl_buf *b, char **out, size_t *len,
			  struct sl_diag *d)
{
	enum sl_err e = sl_buf_detach(b, out, len);
	if (e)
		return sl_diag_set(d, e, "encoding the invoice: %s",
				   e == SL_ELIMIT ? "larger than the bound"
						  : sl_err_message(e));
	return SL_OK;
}

enum sl_err invoice_json(const struct invoice *inv, char **out, size_t *len,
			 struct sl_diag *d)
{
	struct sl_buf b = SL_BUF_INIT(INVOICE_MAX_BYTES);
	char m[CAL_MONTH_FMT_SIZE], s[CAL_RFC3339_SIZE], e[CAL_RFC3339_SIZE],
		a[CAL_RFC3339_SIZE], tot[MONEY_FMT_SIZE];
	if (!inv->currency)
		return sl_diag_set(d, SL_EINVAL, "invoice_json: empty invoice");
	cal_month_format(inv->month, m, sizeof(m));
	fmt_instant(inv, inv->start_ms, s);
	fmt_instant(inv, inv->end_ms, e);
	fmt_instant(inv, inv->as_of_ms, a);
	fmt_amount(inv, inv->total, tot);
	sl_buf_adds(&b, "{");
	json_key_str(&b, "tenant", inv->tenant);
	sl_buf_adds(&b, ",");
	json_key_str(&b, "month", m);
	sl_buf_adds(&b, ",");
	json_key_str(&b, "zone", inv->zone.name);
	sl_buf_adds(&b, ",");
	json_key_str(&b, "currency", inv->currency->code);
	sl_buf_adds(&b, ",");
	json_key_str(&b, "period_start", s);
	sl_buf_adds(&b, ",");
	json_key_str(&b, "period_end", e);
	sl_buf_adds(&b, ",");
	json_key_str(&b, "as_of", a);
	sl_buf_addf(&b, ",\"complete\":%s,\"lines\":[", inv->complete ? "true"
								    : "false");
	for (size_t i = 0; i < inv->nlines; i++) {
		if (i)
			sl_buf_adds(&b, ",");
		json_line(&b, inv, &inv->lines[i]);
	}
	sl_buf_adds(&b, "],\"subtotals\":{");
	json_key_int(&b, "usage", inv->usage);
	sl_buf_adds(&b, ",");
	json_key_int(&b, "monthly", inv->monthly);
	sl_buf_adds(&b, ",");
	json_key_int(&b, "hosting", inv->hosting);
	sl_buf_adds(&b, ",");
	json_key_int(&b, "no_gpu", inv->nogpu);
	sl_buf_adds(&b, ",");
	json_key_int(&b, "storage", inv->storage);
	sl_buf_adds(&b, ",");
	json_key_int(&b, "credits", inv->credits);
	sl_buf_adds(&b, "},");
	json_key_int(&b, "total", inv->total);
	sl_buf_adds(&b, ",");
	json_key_str(&b, "total_text", tot);
	sl_buf_adds(&b, "}\n");
	return finish(&b, out, len, d);
}

/* RFC 4180: quote a field holding a comma, quote or line break. */
static void csv_field(struct sl_buf *b, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		sl_buf_adds(b, s);
		return;
	}
	sl_buf_adds(b, "\"");
	for (; *s; s++)
		sl_buf_add(b, *s == '"' ? "\"\"" : s, *s == '"' ? 2 : 1);
	sl_buf_adds(b, "\"");
}

enum sl_err invoice_csv(const struct invoice *inv, char **out, size_t *len,
			struct sl_diag *d)
{
	struct sl_buf b = SL_BUF_INIT(INVOICE_MAX_BYTES);
	if (!inv->currency)
		return sl_diag_set(d, SL_EINVAL, "invoice_csv: empty invoice");
	sl_buf_adds(&b, "kind,lease,posting,plan,model,from,to,gpu_ms,gpu_seconds,"
		    "quantity,unit,unit_price,amount,reason\n");
	for (size_t i = 0; i < inv->nlines; i++) {
		const struct invoice_line *ln = &inv->lines[i];
		char from[CAL_RFC3339_SIZE], to[CAL_RFC3339_SIZE];
		int64_t gms = ln->kind == INVOICE_USAGE ? ln->quantity : 0;
		fmt_instant(inv, ln->from_ms, from);
		fmt_instant(inv, ln->to_ms, to);
		sl_buf_addf(&b, "%s,", invoice_kind_name(ln->kind));
		csv_field(&b, ln->lease);
		sl_buf_adds(&b, ",");
		csv_field(&b, ln->posting);
		sl_buf_addf(&b, ",%s,", rated(ln) ? plan_name(ln->plan) : "");
		csv_field(&b, ln->model);
		sl_buf_addf(&b, ",%s,%s,%lld,%lld.%03lld,%lld,%s,%lld,%lld,", from, to,
			  (long long)gms, (long long)(gms / 1000),
			  (long long)(gms % 1000), (long long)ln->quantity,
			  unit_name(ln), (long long)ln->unit_price,
			  (long long)ln->amount);
		csv_field(&b, ln->reason);
		sl_buf_adds(&b, "\n");
	}
	sl_buf_addf(&b, "total,,,,,,,,,,,,%lld,\n", (long long)inv->total);
	return finish(&b, out, len, d);
}

/* invoice.h - a tenant's bill for one calendar month, and its JSON and CSV.
 *
 * An invoice is computed, never stored: from the tenant's lease histories
 * and hosted servers (rated with rating_rate over the month's bounds in the
 * billing zone), the price book, and the ledger's credits and refunds dated
 * inside the month. The same inputs give the same invoice, and the encoders
 * give the same bytes: lines in a fixed order, integers only (amounts in
 * minor units, with an exact decimal text beside them), instants as RFC 3339
 * in the billing zone, keys in a fixed order. A month still running is
 * billed up to now and marked incomplete; a month that has not begun is
 * refused. Pure: no I/O, no clock. */
#ifndef SL_INVOICE_H
#define SL_INVOICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calendar.h"
#include "err.h"
#include "ledger.h"
#include "money.h"
#include "pricebook.h"
#include "rating.h"

#define INVOICE_MAX_LINES 1000000
#define INVOICE_MAX_BYTES (256u << 20) /* bound on one encoded invoice */

enum invoice_kind {
	INVOICE_USAGE,   /* hourly or spot GPU time */
	INVOICE_MONTHLY, /* a monthly plan's installment */
	INVOICE_HOSTING, /* a colocated server's fee */
	INVOICE_NOGPU,   /* an instance run without GPUs (plan no-gpu) */
	INVOICE_STORAGE, /* an instance's data disk (plan storage) */
	INVOICE_CREDIT,  /* an operator credit (negative amount) */
	INVOICE_REFUND,  /* a refund (negative amount) */
};

struct invoice_line {
	enum invoice_kind kind;
	char lease[RATING_ID_MAX];     /* lease or server id; "" for credits */
	char posting[LEDGER_ID_MAX];   /* credits and refunds; "" otherwise */
	enum plan plan;          /* rated lines */
	char model[PRICE_NAME_MAX];
	int64_t from_ms, to_ms;        /* span counted; credits: at, at */
	/* GPU-ms (usage), server-ms (hosting), GPU-months (monthly), 0. */
	int64_t quantity;
	int64_t unit_price;
	int64_t amount; /* minor units; negative for credits and refunds */
	char reason[LEDGER_REASON_MAX];
};

struct invoice_input {
	const char *tenant;
	struct cal_month month;
	const struct cal_zone *zone;
	const struct money_currency *currency;
	const struct pricebook *prices;
	/* The tenant's leases and hosted servers (others' are skipped). */
	const struct rating_lease *leases;
	size_t nleases;
	const struct ledger *ledger; /* credits and refunds; may be NULL */
	int64_t now_ms;
};

struct invoice {
	char tenant[LEDGER_TENANT_MAX];
	struct cal_month month;
	struct cal_zone zone;
	const struct money_currency *currency;
	int64_t start_ms, end_ms; /* the month in the billing zone */
	int64_t as_of_ms;         /* min(end_ms, now) */
	bool complete;            /* the month is over */
	struct invoice_line *lines;
	size_t nlines;
	int64_t usage, monthly, hosting, nogpu, storage, credits; /* subtotals (credits <= 0) */
	int64_t total;
};

void invoice_init(struct invoice *inv);
void invoice_release(struct invoice *inv);

/* Builds inv (released and refilled) for in->tenant and in->month. Lines
 * are ordered usage, monthly, hosting, credits, refunds; within a kind by
 * lease (or posting) id, then start instant, then unit price. Errors, with
 * inv left empty: SL_EINVAL for a month not yet begun at now ("in the
 * future"), a bad tenant, zone or currency missing, a lease without a tenant,
 * or any rating error of a lease (the message names it); SL_ENOTFOUND when a
 * used instant has no price; SL_ELIMIT past INVOICE_MAX_LINES or when a
 * total would pass MONEY_MAX; SL_ENOMEM. */
enum sl_err invoice_build(struct invoice *inv, const struct invoice_input *in,
			  struct sl_diag *d) SL_MUST_USE;

/* "usage", "monthly", "hosting", "no-gpu", "storage", "credit", "refund". */
const char *invoice_kind_name(enum invoice_kind k);

/* The invoice as JSON into a new NUL-terminated string *out (length *len),
 * which the caller frees. Shape:
 *   {"tenant":..,"month":"2026-11","zone":..,"currency":"CNY",
 *    "period_start":..,"period_end":..,"as_of":..,"complete":true,
 *    "lines":[{"kind":..,"lease":..,"posting":..,"plan":..,"model":..,
 *              "from":..,"to":..,"gpu_ms":N,"quantity":N,"unit":..,
 *              "unit_price":N,"amount":N,"amount_text":"12.34",
 *              "reason":..}],
 *    "subtotals":{"usage":N,"monthly":N,"hosting":N,"no_gpu":N,"storage":N,
 *                 "credits":N},
 *    "total":N,"total_text":"12.34"}
 * unit is "gpu_ms", "gpu_month", "server_ms", "instance_ms" (no-gpu),
 * "gib_ms" (storage) or "none"; gpu_ms repeats the
 * quantity for usage lines and is 0 otherwise. SL_ELIMIT past
 * INVOICE_MAX_BYTES, SL_ENOMEM. */
enum sl_err invoice_json(const struct invoice *inv, char **out, size_t *len,
			 struct sl_diag *d) SL_MUST_USE;

/* The invoice as CSV (RFC 4180 quoting, "\n" line ends): a header row
 *   kind,lease,posting,plan,model,from,to,gpu_ms,gpu_seconds,quantity,unit,
 *   unit_price,amount,reason
 * one row per line (gpu_seconds exact with 3 decimals), and a final row of
 * kind "total" carrying the total in the amount column. Same errors as
 * invoice_json. */
enum sl_err invoice_csv(const struct invoice *inv, char **out, size_t *len,
			struct sl_diag *d) SL_MUST_USE;

/* One row of the operators' revenue summary. */
struct invoice_revenue_row {
	char region[PRICE_NAME_MAX]; /* "" when a lease names none */
	char model[PRICE_NAME_MAX];  /* "" for hosting */
	enum plan plan;
	int64_t quantity; /* as in invoice lines, summed */
	int64_t amount;   /* sum of the invoice lines' rounded amounts */
};

/* Revenue of in->month (up to now, as invoice_build) over the leases of all
 * tenants (in->tenant and in->ledger are ignored), summed per (region,
 * model, plan) from the same lines the invoices carry, so the summary adds
 * up to the invoices. Rows are sorted by region, model, plan; *rows is a new
 * array the caller frees (NULL when *n is 0). Errors as invoice_build. */
enum sl_err invoice_revenue(const struct invoice_input *in,
			    struct invoice_revenue_row **rows, size_t *n,
			    struct sl_diag *d) SL_MUST_USE;

#endif

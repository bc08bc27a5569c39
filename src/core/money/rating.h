/* rating.h - turning a lease's usage history into priced bill lines.
 *
 * A lease's history is its events: started (with a GPU count), scaled (the
 * count from that instant on: elastic changes, GPUs lost to a failed node)
 * and ended (released, expired, preempted, failed). Between consecutive
 * events the lease used a constant number of GPUs. Rating cuts that usage at
 * every price change (pricebook_at's until_ms) and at every month boundary of
 * the billing zone, and adds up GPU-milliseconds per (month, unit price):
 * one line per lease per unit price per month. Each line is rounded once:
 *   amount = round_half_up(GPU-ms * price per GPU-hour / 3,600,000)
 * so no rounding ever happens per interval (DESIGN.md §6).
 *
 * Plans:
 * - hourly, spot: as above, from the events.
 * - hosting: the "GPUs" are colocated servers (1 for one server); a line is
 *   round_half_up(server-ms * fee per month / ms in that calendar month), so
 *   a server hosted for a whole month pays exactly the fee, and a part month
 *   pays its share to the millisecond.
 * - monthly: the events are ignored. A term of N months bought at instant b
 *   is N installments of gpus * (price per GPU-month in force at b); the k-th
 *   (k = 0..N-1) falls due at b + k months (same local day and time in the
 *   billing zone, clamped to the month's last day) and lands on the invoice
 *   of the month it falls due in. Releasing early refunds nothing (an operator
 *   credit can).
 * Pure: no I/O, no clock; to_ms stands for "now" for leases still running. */
#ifndef SL_RATING_H
#define SL_RATING_H

#include <stddef.h>
#include <stdint.h>

#include "calendar.h"
#include "err.h"
#include "pricebook.h"

#define RATING_ID_MAX 128          /* lease id, bytes with NUL */
#define RATING_MAX_GPUS 100000     /* bound on a lease's GPUs (or servers) */
#define RATING_MAX_EVENTS 100000   /* bound on one lease's events */
#define RATING_MAX_TERM_MONTHS 120 /* bound on a monthly term */
/* Bound on the usage span rated for one lease (first event to the last
 * instant counted): 20 years of 366 days. */
#define RATING_MAX_SPAN_MS (20 * 366 * INT64_C(86400000))
#define RATING_MS_PER_HOUR INT64_C(3600000)

enum rating_ev {
	RATING_STARTED, /* gpus: the count from at_ms on (>= 1) */
	RATING_SCALED,  /* gpus: the new count from at_ms on (>= 0) */
	RATING_ENDED,   /* usage stops at at_ms; end says why */
};

enum rating_end {
	RATING_END_RELEASED,
	RATING_END_EXPIRED,
	RATING_END_PREEMPTED,
	RATING_END_FAILED,
};

struct rating_event {
	int64_t at_ms;
	enum rating_ev kind;
	int gpus;
	enum rating_end end;
};

/* One lease (or one hosted server, plan PLAN_HOSTING). All pointers are
 * borrowed for the call. */
struct rating_lease {
	const char *id;     /* 1..RATING_ID_MAX-1 bytes */
	const char *tenant; /* owner; used by invoice_build to filter */
	const char *site, *region, *model; /* price lookup (model "" hosting) */
	enum plan plan;
	/* hourly, spot, hosting: the history, in time order. */
	const struct rating_event *events;
	size_t nevents;
	/* monthly: when it was bought, its term and its GPU count. */
	int64_t bought_ms;
	int term_months;
	int gpus;
};

struct rating_line {
	char lease[RATING_ID_MAX];
	char model[PRICE_NAME_MAX];
	enum plan plan;
	struct cal_month month; /* billing month the line belongs to */
	/* hourly/spot/hosting: first instant counted and the end of the last
	 * interval counted; monthly: the installment's period [due, next due). */
	int64_t first_ms, end_ms;
	/* GPU-ms (hourly, spot), server-ms (hosting), GPU-months (monthly). */
	int64_t quantity;
	int64_t unit_price; /* per GPU-hour, per server-month, per GPU-month */
	int64_t amount;     /* minor units, rounded once */
};

/* A growable array of lines the caller owns. */
struct rating_lines {
	struct rating_line *v;
	size_t n, cap;
};

void rating_lines_init(struct rating_lines *ls);
void rating_lines_release(struct rating_lines *ls);

/* Appends to out the lines of lease l for usage inside [from_ms, to_ms):
 * usage before from_ms or at/after to_ms is not counted, and a lease that has
 * not ended counts up to to_ms. For the invoice of month M pass M's bounds
 * (cal_month_start/cal_month_end) and to_ms = min(month end, now). Lines come
 * in order of month, then of the first instant counted; lines with nothing
 * used are left out (a zero-length lease has none).
 * Errors, with out unchanged: SL_EINVAL for a malformed history (not starting
 * with started, a second started, events out of time order or after ended,
 * a GPU count < 0, or < 1 at start), a bad id or plan, an instant outside the
 * billing calendar, from_ms > to_ms; SL_ELIMIT past RATING_MAX_GPUS,
 * RATING_MAX_EVENTS, RATING_MAX_TERM_MONTHS, RATING_MAX_SPAN_MS or an
 * amount above MONEY_MAX; SL_ENOTFOUND when some used instant has no price
 * (message names the key and instant); SL_ENOMEM. */
enum sl_err rating_rate(const struct pricebook *pb, const struct cal_zone *z,
			const struct rating_lease *l, int64_t from_ms,
			int64_t to_ms, struct rating_lines *out,
			struct sl_diag *d) SL_MUST_USE;

/* The cost of gpus GPUs of plan (hourly or spot) for their first hour from
 * at_ms: sum over the prices in force during [at_ms, at_ms + 1 h) of the
 * GPU-ms at each, rounded once per price as a bill line would be. For the
 * "can this tenant start" check (ledger_can_start). SL_ENOTFOUND without a
 * price, SL_EINVAL/SL_ELIMIT for bad counts or instants. */
enum sl_err rating_first_hour(const struct pricebook *pb,
			      const struct price_key *k, int gpus,
			      int64_t at_ms, int64_t *cost,
			      struct sl_diag *d) SL_MUST_USE;

#endif

/* plan.h - the plans GPUs are sold under, declared once for every layer: the
 * scheduler, the price book and the ledger, the controller, the store and the
 * command line (DESIGN.md §5, §6).
 *
 * Leases take monthly, hourly or spot. The price book also prices hosting
 * (a colocated server per month), which no lease takes (plan_is_lease).
 *
 * What must not change, because it is stored or sent:
 *  - the names ("hourly", "spot", "monthly", "hosting", "no-gpu",
 *    "storage"): lease, usage, price
 *    and posting rows, JSON answers and ledger account names carry them;
 *  - the order of the enum: price listings and invoice lines are sorted by
 *    it (hourly, spot, monthly, hosting), and an invoice is reproduced byte for
 *    byte from the ledger. A new plan goes at the end, before PLAN__COUNT.
 * Scheduling priority (monthly > hourly > spot) is not this order; it is its
 * own column, plan_priority(). Adding a plan is one enumerator here and one
 * row in plan.c's table. */
#ifndef SL_PLAN_H
#define SL_PLAN_H

#include <stdbool.h>

#include "err.h"

enum plan {
	PLAN_HOURLY,  /* per GPU-hour, on demand */
	PLAN_SPOT,    /* per GPU-hour, preemptible */
	PLAN_MONTHLY, /* per GPU-month, reserved */
	PLAN_HOSTING, /* per colocated server per month; not a lease plan */
	PLAN_NOGPU,   /* "no-gpu": an instance started without GPUs, per hour; not a lease plan */
	PLAN_STORAGE, /* an instance's data disk, per GiB-month; not a lease plan */
	PLAN__COUNT
};

/* The stored name: "hourly", "spot", "monthly", "hosting"; "?" for a value
 * outside the enum. Static storage. */
const char *plan_name(enum plan p);
/* The inverse of plan_name, exact and case-sensitive; any plan, hosting too
 * (callers that want a lease plan check plan_is_lease). SL_EINVAL for NULL or
 * an unknown name, with "unknown plan '...'" and the accepted names as hint;
 * *p is left alone then. d may be NULL. */
enum sl_err plan_parse(const char *s, enum plan *p, struct sl_diag *d) SL_MUST_USE;
/* Whether a lease may take p: monthly, hourly and spot; false for hosting
 * and for values outside the enum. */
bool plan_is_lease(enum plan p);
/* Scheduling priority, 0 first: monthly 0, hourly 1, spot 2 (DESIGN.md §5);
 * hosting, which is never scheduled, and bad values rank after all. */
int plan_priority(enum plan p);
/* Whether a price of plan p names a GPU model: hourly, spot and monthly do;
 * hosting (per server), no-gpu (per instance) and storage (per GiB) name
 * none. */
bool plan_has_model(enum plan p);

#endif

/* pricebook.h - prices per (scope, GPU model, plan) with effective-from
 * instants, and the hosting fee for colocated servers (DESIGN.md §6).
 *
 * A price is a series of entries per key; the entry in force at instant t is
 * the one with the latest from_ms <= t. Scopes nest: a site's price beats its
 * region's, which beats the global default, whenever the more specific series
 * has an entry in force. Prices are never changed backwards: pricebook_set()
 * refuses an entry that starts before `now`, because it would re-price time
 * already used. Amounts are minor units (fen) per GPU-hour for hourly and
 * spot, per GPU-month for monthly, and per server-month for hosting.
 * Pure: no I/O, no clock; the caller passes now. */
#ifndef SL_PRICEBOOK_H
#define SL_PRICEBOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "plan.h" /* enum plan: hourly, spot, monthly, hosting */

#define PRICE_NAME_MAX 64 /* scope and model names, bytes with NUL */
/* Bound on one price (minor units per unit): the fleet's price hint bound. */
#define PRICE_MAX INT64_C(100000000000)
#define PRICEBOOK_MAX_ENTRIES 100000

enum price_scope {
	PRICE_GLOBAL, /* scope name "" */
	PRICE_REGION,
	PRICE_SITE,
};

struct price_entry {
	enum price_scope scope;
	char scope_name[PRICE_NAME_MAX]; /* region or site; "" for global */
	char model[PRICE_NAME_MAX];      /* GPU model; "" for hosting */
	enum plan plan;
	int64_t from_ms; /* effective from this instant (ms since epoch) on */
	int64_t price;   /* minor units per unit of the plan, 0..PRICE_MAX */
};

/* Where a price is looked up: a lease's (or server's) site and region, GPU
 * model and plan. site and region may be NULL or "" when unknown. */
struct price_key {
	const char *site, *region, *model;
	enum plan plan;
};

/* The answer of pricebook_at(). */
struct price_quote {
	int64_t price;
	int64_t from_ms;  /* the entry's effective-from */
	int64_t until_ms; /* the answer holds for [at, until); INT64_MAX: no
			     scheduled change */
	enum price_scope scope;
};

/* "global", "region", "site"; "?" for a bad value. */
const char *price_scope_name(enum price_scope s);

/* Fills e; strings are copied (and must fit, else SL_ELIMIT). scope_name is
 * ignored for PRICE_GLOBAL. Validates like pricebook_set. */
enum sl_err price_entry_init(struct price_entry *e, enum price_scope scope,
			     const char *scope_name, const char *model,
			     enum plan plan, int64_t from_ms,
			     int64_t price, struct sl_diag *d) SL_MUST_USE;

struct pricebook;

/* An empty book into *out. SL_ENOMEM. */
enum sl_err pricebook_new(struct pricebook **out) SL_MUST_USE;
/* Frees pb; NULL is fine. */
void pricebook_free(struct pricebook *pb);

/* Adds a price effective from e->from_ms. Errors, with pb unchanged:
 * SL_EINVAL when e->from_ms < now_ms (it would re-price used time), for a
 * bad name (1..63 characters of [A-Za-z0-9._-]; model "" exactly for
 * hosting), a negative price or an instant outside the billing calendar;
 * SL_ELIMIT for a price above PRICE_MAX or a full book; SL_EEXIST when the
 * same key already has an entry at that instant; SL_ENOMEM. */
enum sl_err pricebook_set(struct pricebook *pb, const struct price_entry *e,
			  int64_t now_ms, struct sl_diag *d) SL_MUST_USE;
/* Like pricebook_set without the check against now: for rebuilding the book
 * from stored history. */
enum sl_err pricebook_restore(struct pricebook *pb,
			      const struct price_entry *e,
			      struct sl_diag *d) SL_MUST_USE;

/* The price in force for k at at_ms: the site's series when it has an entry
 * in force, else the region's, else the global one. SL_ENOTFOUND (message
 * names the key and instant) when none applies. */
enum sl_err pricebook_at(const struct pricebook *pb, const struct price_key *k,
			 int64_t at_ms, struct price_quote *q,
			 struct sl_diag *d) SL_MUST_USE;

/* Entries in a stable order: scope, scope name, model, plan, from_ms.
 * i < pricebook_count(pb); the pointer is valid until the next change. */
size_t pricebook_count(const struct pricebook *pb);
const struct price_entry *pricebook_entry(const struct pricebook *pb, size_t i);

#endif

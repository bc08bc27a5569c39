/* store_copy.h - `suanlid store copy`: moving an installation's store from a
 * data directory (SQLite) into PostgreSQL. */
#ifndef SL_STORE_COPY_H
#define SL_STORE_COPY_H

#include <stdint.h>

#include "err.h"

struct store_copy_stats {
	uint64_t rows, meta, audit_entries, subtrees, checkpoints;
};

/* Copies every row of every kind, the meta keys and the audit log (entries,
 * cached subtrees, checkpoints) from the store in from_dir into the empty
 * database to_url, in one transaction while holding leadership (so no
 * controller writes meanwhile), then reads both back and compares them.
 * Errors: SL_ENOTFOUND (no store in from_dir), SL_EEXIST (the target is not
 * empty), SL_ECONFLICT (a controller leads the target, or the copy differs),
 * the stores' errors. Nothing is left half-copied: the transaction commits
 * whole or not at all. Rows get the copy's time as their updated_ns. */
enum sl_err ctl_store_copy(const char *from_dir, const char *to_url, int64_t now_ns,
			   struct store_copy_stats *st, struct sl_diag *d) SL_MUST_USE;

#endif

/* history.h - leases, jobs and instances in a final state, kept in the
 * store's history tables (store.h: STORE_LEASE_HISTORY, ...).
 *
 * When a lease, job or instance reaches a final state its row moves from the
 * live table to the history table in the turn's transaction, the one that
 * records the change: a crash leaves it in exactly one of them. A restart
 * then reads only the live tables, so its cost follows what is running, not
 * what ever ran. Whatever asks for an ended object by id (show, invoices,
 * audit) finds it through its part's find function, which falls back to the
 * history table; lists page through it (store_page).
 *
 * Ids are dense per kind (ls-, job-, in- then a sequence number), and each
 * part sizes its in-memory index by the highest seq; the highest seq that
 * moved to history is kept in meta (history.KIND.seq), so a restart with an
 * empty live table still knows where numbering goes on.
 *
 * Old stores (before schema 8) hold ended rows in the live tables; each part
 * notes them while it loads (ctl_hist_note) and moves them at the end of its
 * load (ctl_hist_move), in the start-up transaction. Loop thread only. */
#ifndef SL_CTL_HISTORY_H
#define SL_CTL_HISTORY_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "store.h"

struct ctl;

/* Rows noted during a load scan, to move once the scan is over. */
struct ctl_hist_moves {
	char **ids, **tenants; /* tenants[i] may be NULL */
	int n, cap;
};

/* Notes row id (tenant may be NULL) to move; SL_ENOMEM when out of memory. */
enum sl_err ctl_hist_note(struct ctl_hist_moves *m, const char *id, const char *tenant) SL_MUST_USE;
/* Moves every noted row from live to hist in the open (start-up) transaction
 * and empties m (also on error). */
enum sl_err ctl_hist_move(struct ctl *c, enum store_kind live, enum store_kind hist,
			  struct ctl_hist_moves *m, struct sl_diag *d) SL_MUST_USE;
/* Frees m's contents. */
void ctl_hist_release(struct ctl_hist_moves *m);

/* The highest seq of kind `what` ("leases", "jobs", "instances") that moved
 * to history, from meta (0: none). */
enum sl_err ctl_hist_seq_get(struct ctl *c, const char *what, uint64_t *out,
			     struct sl_diag *d) SL_MUST_USE;
/* Records that seq moved to history: raises *mem and meta when seq is
 * higher (in the turn's transaction; a failure marks the turn fatal). */
void ctl_hist_seq_note(struct ctl *c, const char *what, uint64_t *mem, uint64_t seq);

#endif

/* store_sqlite_int.h - what the SQLite backend's files share (store_sqlite.c:
 * open, migrations, objects and meta; store_sqlite_audit.c: the audit
 * tables): the connection with its prepared statements and the error
 * helpers. Internal to src/store. */
#ifndef SL_STORE_SQLITE_INT_H
#define SL_STORE_SQLITE_INT_H

#include <sqlite3.h>

#include "store_backend.h"

enum sq_verb { SQ_PUT, SQ_DEL, SQ_GET, SQ_SCAN, SQ_PAGE, SQ_RECENT, SQ_SINCE, SQ_VERB__COUNT };

struct sq {
	sqlite3 *db;
	int version;
	int wal_frames; /* pages in the WAL after the last commit */
	sqlite3_stmt *kind_stmt[STORE_KIND__COUNT][SQ_VERB__COUNT];
	sqlite3_stmt *begin, *commit, *rollback, *meta_get, *meta_set;
	/* audit: scan[tenant filter][action filter] */
	sqlite3_stmt *a_append, *a_last, *a_leaf, *a_scan[2][2], *a_sub_put, *a_sub_get,
		*a_cp_put, *a_cp_scan, *a_cp_latest, *a_sub_scan, *a_heads;
};

/* What an operation was doing, formatted only when it fails: "writing" +
 * "leases" + "l-1" reads "writing leases 'l-1'". obj and id may be NULL. */
struct sq_what {
	const char *verb, *obj, *id;
};

/* Sets d from SQLite's error rc while doing w; SL_ENOMEM or SL_EIO. */
enum sl_err sq_error_on(struct sq *q, int rc, struct sl_diag *d, struct sq_what w);
enum sl_err sq_error(struct sq *q, int rc, struct sl_diag *d, const char *what);
/* Runs a prepared statement that returns no rows, then makes it reusable. */
enum sl_err sq_run(struct sq *q, sqlite3_stmt *st, struct sl_diag *d, struct sq_what w);
enum sl_err sq_prepare(struct sq *q, const char *sql, sqlite3_stmt **st, struct sl_diag *d);
/* After a durable write outside a transaction: the checkpoint we run
 * instead of SQLite's (store_sqlite.c). */
enum sl_err sq_after_write(struct sq *q, struct sl_diag *d);

/* store_sqlite_audit.c: prepares the audit statements, and the audit
 * operations of store_sqlite_ops. */
enum sl_err sq_prepare_audit(struct sq *q, struct sl_diag *d);
enum sl_err sq_audit_append(void *impl, const struct store_audit_row *r,
			    struct sl_diag *d);
enum sl_err sq_audit_last(void *impl, uint64_t *seq_out, struct sl_diag *d);
enum sl_err sq_audit_leaf(void *impl, uint64_t seq, uint8_t out[STORE_AUDIT_HASH],
			  struct sl_diag *d);
enum sl_err sq_audit_scan(void *impl, const struct store_audit_filter *f,
			  store_audit_fn fn, void *arg, struct sl_diag *d);
enum sl_err sq_audit_subtree_put(void *impl, unsigned level, uint64_t index,
				 const uint8_t hash[STORE_AUDIT_HASH], struct sl_diag *d);
enum sl_err sq_audit_subtree_get(void *impl, unsigned level, uint64_t index,
				 uint8_t out[STORE_AUDIT_HASH], struct sl_diag *d);
enum sl_err sq_audit_subtree_scan(void *impl, store_audit_subtree_fn fn, void *arg,
				  struct sl_diag *d);
enum sl_err sq_audit_heads(void *impl, uint64_t max_seq, store_audit_fn fn, void *arg,
			   struct sl_diag *d);
enum sl_err sq_audit_cp_put(void *impl, uint64_t size, const char *note, size_t len,
			    struct sl_diag *d);
enum sl_err sq_audit_cp_scan(void *impl, store_audit_note_fn fn, void *arg,
			     struct sl_diag *d);
enum sl_err sq_audit_cp_latest(void *impl, uint64_t *size_out, char **note_out,
			       struct sl_diag *d);

#endif

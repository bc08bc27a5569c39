/* store_pg_int.h - what the PostgreSQL backend's files share (internal to
 * src/store): the connection state and the statement helpers of store_pg.c,
 * used by the audit tables (store_pg_audit.c) and leadership
 * (store_pg_lead.c). */
#ifndef SL_STORE_PG_INT_H
#define SL_STORE_PG_INT_H

#define PG_MAX_PIPELINED (1 << 22) /* statements sent ahead in one transaction */

#include <libpq-fe.h>

#include "store_backend.h"

enum pg_verb { PG_PUT, PG_DEL, PG_GET, PG_SCAN, PG_PAGE, PG_RECENT, PG_SINCE, PG_VERB__COUNT };

/* What a pipelined statement's result must be (store_pg.c, group commit). */
enum pg_expect { PX_CMD, PX_EPOCH, PX_COMMIT };

struct pg {
	PGconn *conn;
	int version;
	bool in_tx;
	uint64_t epoch; /* the epoch this store leads in; 0: not leading */
	bool locked;    /* holds the leader's session advisory lock */
	int64_t lag_ms; /* replicas' replay lag at the last renewal; -1: unknown */
	/* the pipeline: statements sent, results not read yet */
	bool piped;
	enum pg_expect *pend;
	size_t npend, cap_pend; /* at most PG_MAX_PIPELINED */
};

/* Reads every pipelined result and leaves pipeline mode; SL_EIO (d says
 * which statement failed, or that the epoch is gone) on the first bad one.
 * A no-op when nothing is pipelined. Every synchronous call runs it first. */
enum sl_err pg_pipe_sync(struct pg *g, struct sl_diag *d);

/* The SQLite schema text in PostgreSQL's types (store_pg.c's top); NULL when
 * out of memory. The caller frees. */
char *pg_translate(const char *sql);
/* SL_EIO with the server's message (r may be NULL) and what was being done. */
enum sl_err pg_error(struct pg *g, const PGresult *r, struct sl_diag *d, const char *what,
		     const char *obj, const char *id);
enum sl_err pg_exec(struct pg *g, const char *sql, struct sl_diag *d, const char *what);
/* Runs prepared statement stmt expecting status want; *res (when res is not
 * NULL) is the result to PQclear(). */
enum sl_err pg_run(struct pg *g, const char *stmt, int n, const char *const *vals,
		   const int *lens, const int *fmts, int result_fmt, ExecStatusType want,
		   PGresult **res, struct sl_diag *d, const char *what, const char *obj,
		   const char *id);
/* A write: wrapped in a transaction with the epoch check when leading and no
 * transaction is open. */
enum sl_err pg_write_stmt(struct pg *g, const char *stmt, int n, const char *const *vals,
			  const int *lens, const int *fmts, struct sl_diag *d, const char *obj);
/* Streams a query's rows (single-row mode) to fn, which sees a one-row result.
 * fn's error stops the calls (the rest is drained) and is returned. */
typedef enum sl_err (*pg_row_fn)(void *arg, const PGresult *r);
enum sl_err pg_stream(struct pg *g, const char *stmt, int n, const char *const *vals,
		      const int *lens, const int *fmts, int result_fmt, pg_row_fn fn, void *arg,
		      struct sl_diag *d, const char *what);

/* store_pg_audit.c */
enum sl_err pg_audit_append(void *impl, const struct store_audit_row *r, struct sl_diag *d);
enum sl_err pg_audit_last(void *impl, uint64_t *seq_out, struct sl_diag *d);
enum sl_err pg_audit_leaf(void *impl, uint64_t seq, uint8_t out[STORE_AUDIT_HASH],
			  struct sl_diag *d);
enum sl_err pg_audit_scan(void *impl, const struct store_audit_filter *f, store_audit_fn fn,
			  void *arg, struct sl_diag *d);
enum sl_err pg_audit_subtree_put(void *impl, unsigned level, uint64_t index,
				 const uint8_t hash[STORE_AUDIT_HASH], struct sl_diag *d);
enum sl_err pg_audit_subtree_get(void *impl, unsigned level, uint64_t index,
				 uint8_t out[STORE_AUDIT_HASH], struct sl_diag *d);
enum sl_err pg_audit_cp_put(void *impl, uint64_t size, const char *note, size_t len,
			    struct sl_diag *d);
enum sl_err pg_audit_cp_scan(void *impl, store_audit_note_fn fn, void *arg, struct sl_diag *d);
enum sl_err pg_audit_subtree_scan(void *impl, store_audit_subtree_fn fn, void *arg,
				  struct sl_diag *d);
enum sl_err pg_audit_heads(void *impl, uint64_t max_seq, store_audit_fn fn, void *arg,
			   struct sl_diag *d);
enum sl_err pg_audit_cp_latest(void *impl, uint64_t *size_out, char **note_out,
			       struct sl_diag *d);

/* store_pg_lead.c */
enum sl_err pg_lead_prepare(struct pg *g, struct sl_diag *d);
enum sl_err pg_lead_try(void *impl, const char *holder, const char *url, int64_t lease_ms,
			bool *won, struct store_leader *out, struct sl_diag *d);
enum sl_err pg_lead_renew(void *impl, int64_t lease_ms, struct sl_diag *d);
enum sl_err pg_lead_read(void *impl, struct store_leader *out, struct sl_diag *d);
enum sl_err pg_lead_release(void *impl, struct sl_diag *d);
int64_t pg_lead_lag(const void *impl);

#endif

/* store_backend.h - what a store backend implements (internal to src/store).
 *
 * The front (store.c) validates every argument, tracks transaction and scan
 * state and owns the failed state, so a backend only translates calls into its
 * database and reports errors: SL_ENOMEM, SL_ENOTFOUND where the contract says
 * so, and SL_EIO for anything else. The front treats any backend error on a
 * write (other than SL_ENOTFOUND) and SL_EIO on a read as the end of the store.
 * Arguments reach a backend already checked: valid kind, bounded ids, non-NULL
 * json, d non-NULL. */
#ifndef SL_STORE_BACKEND_H
#define SL_STORE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct store_ops {
	const char *name;
	enum sl_err (*open)(const char *dir, const struct store_opts *opts, void **impl,
			    struct sl_diag *d);
	/* failed: the store failed; write nothing more (no checkpoint). */
	void (*close)(void *impl, bool failed);
	int (*schema_version)(const void *impl);
	enum sl_err (*begin)(void *impl, struct sl_diag *d);
	enum sl_err (*commit)(void *impl, struct sl_diag *d);
	enum sl_err (*rollback)(void *impl, struct sl_diag *d);
	enum sl_err (*put)(void *impl, enum store_kind k, const char *id, const char *tenant,
			   const char *json, size_t json_len, int64_t updated_ns,
			   struct sl_diag *d);
	enum sl_err (*del)(void *impl, enum store_kind k, const char *id, struct sl_diag *d);
	/* store_forget: del without the existence check (pipelined where it can be). */
	enum sl_err (*forget)(void *impl, enum store_kind k, const char *id, struct sl_diag *d);
	enum sl_err (*get)(void *impl, enum store_kind k, const char *id, char **json_out,
			   struct sl_diag *d);
	enum sl_err (*scan)(void *impl, enum store_kind k, store_scan_fn fn, void *arg,
			    struct sl_diag *d);
	/* store_page / store_recent (store.h); after is never NULL ("": all),
	 * tenant may be NULL. */
	enum sl_err (*page)(void *impl, enum store_kind k, const char *after, const char *tenant,
			    int limit, store_scan_fn fn, void *arg, struct sl_diag *d);
	enum sl_err (*recent)(void *impl, enum store_kind k, int limit, store_scan_fn fn,
			      void *arg, struct sl_diag *d);
	/* store_page_since (store.h); tenant is never NULL. */
	enum sl_err (*since)(void *impl, enum store_kind k, const char *tenant, int64_t after_ns,
			     int limit, store_scan_fn fn, void *arg, struct sl_diag *d);
	enum sl_err (*meta_get)(void *impl, const char *key, char **value_out,
				struct sl_diag *d);
	enum sl_err (*meta_set)(void *impl, const char *key, const char *value,
				size_t value_len, struct sl_diag *d);
	enum sl_err (*meta_scan)(void *impl, store_scan_fn fn, void *arg, struct sl_diag *d);
	/* The audit tables (store.h); arguments checked by the front. */
	enum sl_err (*audit_append)(void *impl, const struct store_audit_row *r,
				    struct sl_diag *d);
	enum sl_err (*audit_last)(void *impl, uint64_t *seq_out, struct sl_diag *d);
	enum sl_err (*audit_leaf)(void *impl, uint64_t seq, uint8_t out[STORE_AUDIT_HASH],
				  struct sl_diag *d);
	enum sl_err (*audit_scan)(void *impl, const struct store_audit_filter *f,
				  store_audit_fn fn, void *arg, struct sl_diag *d);
	enum sl_err (*audit_subtree_put)(void *impl, unsigned level, uint64_t index,
					 const uint8_t hash[STORE_AUDIT_HASH], struct sl_diag *d);
	enum sl_err (*audit_subtree_get)(void *impl, unsigned level, uint64_t index,
					 uint8_t out[STORE_AUDIT_HASH], struct sl_diag *d);
	enum sl_err (*audit_subtree_scan)(void *impl, store_audit_subtree_fn fn, void *arg,
					  struct sl_diag *d);
	enum sl_err (*audit_heads)(void *impl, uint64_t max_seq, store_audit_fn fn, void *arg,
				   struct sl_diag *d);
	enum sl_err (*audit_cp_put)(void *impl, uint64_t size, const char *note, size_t len,
				    struct sl_diag *d);
	enum sl_err (*audit_cp_scan)(void *impl, store_audit_note_fn fn, void *arg,
				     struct sl_diag *d);
	enum sl_err (*audit_cp_latest)(void *impl, uint64_t *size_out, char **note_out,
				       struct sl_diag *d);
	/* Leadership (store.h); NULL in a backend that one process owns. */
	enum sl_err (*lead_try)(void *impl, const char *holder, const char *url,
				int64_t lease_ms, bool *won, struct store_leader *out,
				struct sl_diag *d);
	enum sl_err (*lead_renew)(void *impl, int64_t lease_ms, struct sl_diag *d);
	enum sl_err (*lead_read)(void *impl, struct store_leader *out, struct sl_diag *d);
	enum sl_err (*lead_release)(void *impl, struct sl_diag *d);
	int64_t (*lead_lag)(const void *impl);
};

extern const struct store_ops store_sqlite_ops;
extern const struct store_ops store_pg_ops;

/* The schema, as SQLite text: store_migrations[i] takes version i to i+1
 * (store_sqlite.c). The PostgreSQL backend translates the types. */
extern const char *const store_migrations[];
extern const int store_migrations_count;

#endif

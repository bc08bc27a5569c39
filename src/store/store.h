/* store.h - the controller's durable store: what makes in-memory state survive.
 *
 * The controller keeps all state in memory (DESIGN.md §8) and writes every change
 * here before acknowledging it; on start it rebuilds memory by scanning the store.
 * So the store is deliberately dumb: a few tables of objects, one per kind, each
 * row an id, an optional owning tenant, a JSON body the controller wrote and a
 * timestamp, plus a small key-value table ("meta") for singletons such as the
 * admin token id or an epoch counter. The store never interprets bodies.
 *
 * Backends sit behind an operations table (store_backend.h). SQLite is the one
 * backend today; a PostgreSQL one can follow without touching the controller.
 *
 * Transactions: store_begin() .. store_commit() groups changes (the controller
 * commits once per event-loop turn: group commit). A put, delete or meta_set
 * outside a transaction commits on its own. A store is used by one thread.
 *
 * Durability and the failed state: when a commit (or any other write) fails, the
 * data may or may not have reached the disk, and after a failed fsync the kernel
 * may already have dropped the dirty pages; retrying cannot make that right
 * (PostgreSQL's "fsyncgate"). So the first such error puts the store into a
 * FAILED state: that call and every later call except store_close() return
 * SL_EIO carrying the original message, and nothing more is written. The
 * controller must then exit without acknowledging the failed changes; on restart
 * it rebuilds from the last good commit. A transaction whose commit failed is
 * atomic: after a restart it is either wholly present or wholly absent.
 * Validation errors (bad kind, id, size) are found before anything is written and
 * never fail the store.
 *
 * One store per data directory: the SQLite backend holds an exclusive lock on
 * the database while open, so a second controller on the same directory is
 * refused with SL_ECONFLICT instead of silently forking the state. */
#ifndef SL_STORE_H
#define SL_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

#define STORE_MAX_ID 256              /* bound on an id's or tenant's length, bytes */
#define STORE_MAX_BODY (128u << 20)   /* bound on a body: room for a 64 MiB fleet file quoted in JSON */
#define STORE_MAX_META_KEY 64         /* bound on a meta key's length */
#define STORE_MAX_META_VALUE (64u << 10) /* bound on a meta value's length */
#define STORE_DB_FILE "suanli.db"     /* the SQLite file inside the data directory */

/* The object tables. Names (store_kind_name) are stable: they are table names. */
enum store_kind {
	STORE_TENANTS,
	STORE_TOKENS,
	STORE_LEASES,
	STORE_RESERVATIONS,
	STORE_NODES,       /* per-node admin state (drained, reason) */
	STORE_FLEETS,      /* loaded fleet file texts, one row per version */
	STORE_IDEMPOTENCY, /* Idempotency-Key -> the saved answer */
	STORE_PRICES,      /* billing: price book entries (src/ctl/billing.c) */
	STORE_POSTINGS,    /* billing: ledger postings, keyed by posting id */
	STORE_USAGE,       /* billing: a lease's usage events (started, scaled, ended) */
	STORE_BILLING,     /* billing: per-tenant balance state (grace period) */
	STORE_AGENTS,      /* agents: per-node registration (discovery, address, GPU health) */
	STORE_JOBS,        /* jobs run on leases by agents (src/ctl/jobs.c) */
	STORE_IMAGES,      /* the operator's image catalog (src/ctl/images.c) */
	STORE_USERS,       /* people who sign in with a password (src/ctl/users.c) */
	STORE_SESSIONS,    /* signed-in sessions, keyed by the SHA-256 of the cookie */
	STORE_INSTANCES,   /* instances (src/ctl/instances.c) */
	STORE_SSH_KEYS,    /* users' SSH public keys (src/ctl/ssh_keys.c) */
	/* History: rows of leases, jobs and instances that reached a final
	 * state, moved out of their live table in the transaction of that
	 * change (same row format), so a restart reads only live rows. Indexed
	 * by (tenant, id) and updated_ns for store_page() and store_recent(). */
	STORE_LEASE_HISTORY,
	STORE_JOB_HISTORY,
	STORE_INSTANCE_HISTORY,
	/* Billing history (schema 9): a usage record that ended (its final
	 * charge posted) moves here from usage, same row format. */
	STORE_USAGE_HISTORY,
	/* The ledger's account totals, one row per account ("tenant:acme",
	 * "cash:"), rewritten with each posting, so a start loads balances
	 * instead of replaying every posting (src/ctl/billing_store.c). */
	STORE_LEDGER_ACCOUNTS,
	STORE_KIND__COUNT
};

struct store;

/* Options for store_open_with(); zero-initialise and set what you need. */
struct store_opts {
	/* Name of a registered SQLite VFS to use instead of the default; tests
	 * use it to inject I/O faults. NULL: the default VFS. */
	const char *sqlite_vfs;
};

/* Called once per row by store_scan(), in ascending id order. id and json are
 * never NULL; tenant is NULL when the row has none. All three are borrowed for
 * the duration of the call. Returning anything but SL_OK stops the scan, and
 * store_scan() returns that value. The callback must not call the store
 * (such calls fail with SL_EINVAL). */
typedef enum sl_err (*store_scan_fn)(void *arg, const char *id, const char *tenant,
				     const char *json);

/* Stable lower-case name of a kind ("leases"), or NULL if k is not a kind. */
const char *store_kind_name(enum store_kind k);
/* Parses a kind name as given by store_kind_name(). SL_EINVAL if unknown. */
enum sl_err store_kind_parse(const char *name, enum store_kind *out,
			     struct sl_diag *d) SL_MUST_USE;

/* True when `where` names a PostgreSQL database (postgres://... or
 * postgresql://...) rather than a data directory. */
bool store_is_url(const char *where);

/* Opens the store in directory dir, creating dir (mode 0700, one level) and the
 * database DIR/suanli.db (mode 0600) if missing, and migrating its schema to the
 * newest version this code knows, each migration step in its own transaction.
 * Errors: SL_ECONFLICT if another process has the store open, or if the
 * database's schema is newer than this code (the hint says what to do); SL_EIO
 * for file-system errors or a file that is not a database; SL_ENOMEM.
 * On success *out is a store to release with store_close(). */
enum sl_err store_open(const char *dir, struct store **out,
		       struct sl_diag *d) SL_MUST_USE;
/* When dir is a URL (store_is_url), the store is that PostgreSQL database
 * (store_pg.c): the same tables, migrated the same way (two processes
 * migrating at once are serialised), every commit synchronous on the server.
 * Several processes may open one database at once; which of them may write is
 * decided by leadership (below). A lost connection fails the store like a
 * failed fsync: the backend never reconnects behind the caller's back, since
 * a commit whose answer was lost may or may not have happened. */
/* store_open() with options; opts may be NULL. */
enum sl_err store_open_with(const char *dir, const struct store_opts *opts,
			    struct store **out, struct sl_diag *d) SL_MUST_USE;
/* Closes the store; an open transaction is rolled back. A failed store is closed
 * without writing anything more. NULL is a no-op. */
void store_close(struct store *s);

/* True once the store has failed (see the top of this file). */
bool store_failed(const struct store *s);
/* Schema version of the open database (after migrations: the newest known). */
int store_schema_version(const struct store *s);

/* Starts a transaction. SL_EINVAL if one is already open. */
enum sl_err store_begin(struct store *s, struct sl_diag *d) SL_MUST_USE;
/* Commits the open transaction durably (fsync'd before it returns SL_OK).
 * SL_EINVAL if none is open; SL_EIO if the commit failed: the store is then
 * failed and the caller must not acknowledge anything of this transaction. */
enum sl_err store_commit(struct store *s, struct sl_diag *d) SL_MUST_USE;
/* Discards the open transaction. SL_EINVAL if none is open. */
enum sl_err store_rollback(struct store *s, struct sl_diag *d) SL_MUST_USE;

/* Inserts or replaces row id of kind k (inside a transaction on PostgreSQL, a
 * server-side failure surfaces at the next read or the commit: see
 * store_audit_append). tenant may be NULL; json is the body
 * (non-empty, NUL-terminated, at most STORE_MAX_BODY bytes; not parsed here).
 * ids and tenants are 1..STORE_MAX_ID printable ASCII characters without spaces.
 * updated_ns >= 0. Errors: SL_EINVAL (bad kind, id, tenant, json or time),
 * SL_ELIMIT (too long), both before anything is written; SL_EIO (store failed). */
enum sl_err store_put(struct store *s, enum store_kind k, const char *id,
		      const char *tenant, const char *json, int64_t updated_ns,
		      struct sl_diag *d) SL_MUST_USE;
/* Deletes row id of kind k. SL_ENOTFOUND if there is no such row (nothing
 * changes and the store stays healthy). */
enum sl_err store_delete(struct store *s, enum store_kind k, const char *id,
			 struct sl_diag *d) SL_MUST_USE;
/* Deletes row id of kind k if there is one: unlike store_delete a missing
 * row is no error and nothing is read back, so inside a PostgreSQL
 * transaction it is pipelined like store_put (its failure surfaces at the
 * next read or the commit). What a row moving to history uses. */
enum sl_err store_forget(struct store *s, enum store_kind k, const char *id,
			 struct sl_diag *d) SL_MUST_USE;
/* Reads the body of row id of kind k into *json_out (NUL-terminated, the caller
 * free()s it). SL_ENOTFOUND if there is no such row. Sees the open
 * transaction's own changes. */
enum sl_err store_get(struct store *s, enum store_kind k, const char *id,
		      char **json_out, struct sl_diag *d) SL_MUST_USE;
/* Calls fn for every row of kind k in ascending id order (byte order). Returns
 * the callback's error if it stopped the scan (d says at which id). */
enum sl_err store_scan(struct store *s, enum store_kind k, store_scan_fn fn, void *arg,
		       struct sl_diag *d) SL_MUST_USE;

/* Calls fn for at most limit rows (1..STORE_MAX_PAGE) of kind k whose id
 * is byte-greater than after (NULL or "": from the first) and whose tenant
 * equals tenant (NULL: any), in ascending id order: one page of a listing,
 * read by the primary key, so its cost does not grow with the table. Same
 * callback rules as store_scan. */
#define STORE_MAX_PAGE 100000
enum sl_err store_page(struct store *s, enum store_kind k, const char *after,
		       const char *tenant, int limit, store_scan_fn fn, void *arg,
		       struct sl_diag *d) SL_MUST_USE;
/* Calls fn for the limit (1..STORE_MAX_PAGE) rows of kind k most recently
 * written (highest updated_ns; ties by id), newest first. Indexed on the
 * history kinds; on the others it reads the whole table. */
enum sl_err store_recent(struct store *s, enum store_kind k, int limit, store_scan_fn fn,
			 void *arg, struct sl_diag *d) SL_MUST_USE;

/* Calls fn for at most limit rows (1..STORE_MAX_PAGE) of kind k whose tenant
 * equals tenant and whose updated_ns is greater than after_ns, in ascending
 * (updated_ns, id) order: a tenant's rows in the order they were written
 * where the writer stores a sequence number as updated_ns (postings store
 * their seq there, so a tenant's statement pages in posting order). Indexed
 * by (tenant, updated_ns) on postings; on other kinds it reads the tenant's
 * rows. Same callback rules as store_scan. */
enum sl_err store_page_since(struct store *s, enum store_kind k, const char *tenant,
			     int64_t after_ns, int limit, store_scan_fn fn, void *arg,
			     struct sl_diag *d) SL_MUST_USE;

/* Reads meta key into *value_out (NUL-terminated, the caller free()s it).
 * Keys are 1..STORE_MAX_META_KEY characters of [a-z0-9_.-]. SL_ENOTFOUND if
 * unset. */
enum sl_err store_meta_get(struct store *s, const char *key, char **value_out,
			   struct sl_diag *d) SL_MUST_USE;
/* Sets meta key to value (at most STORE_MAX_META_VALUE bytes, may be empty);
 * transactional like store_put(). */
enum sl_err store_meta_set(struct store *s, const char *key, const char *value,
			   struct sl_diag *d) SL_MUST_USE;

/* Calls fn(arg, key, NULL, value) for every meta key in ascending order (for
 * `suanlid store copy`); same rules as store_scan. */
enum sl_err store_meta_scan(struct store *s, store_scan_fn fn, void *arg,
			    struct sl_diag *d) SL_MUST_USE;

/* ---- the audit log (DESIGN.md §7) ----
 *
 * Append-only tables beside the objects: audit_entries (one row per entry:
 * seq, time, tenant, action, the entry's canonical bytes and its Merkle leaf
 * hash), audit_subtrees (cached hashes of completed perfect subtrees, so
 * proofs and restarts read O(log n) rows instead of n) and audit_checkpoints
 * (signed checkpoint notes by tree size). The store does not interpret the
 * bytes; src/core/audit.h defines them. Writes are transactional like
 * store_put() and fail the store the same way, which is what makes the
 * controller's audit fail closed. */
#define STORE_AUDIT_ENTRY_MAX 2048   /* bound on an entry's canonical bytes */
#define STORE_AUDIT_NOTE_MAX 2048    /* bound on a checkpoint note */
#define STORE_AUDIT_HASH 32          /* leaf and subtree hashes (SHA-256) */

/* One stored entry as a scan sees it; everything is borrowed for the call.
 * tenant and action are "" when the row has none. leaf_len is the stored
 * leaf hash's length (STORE_AUDIT_HASH unless someone edited the file). */
struct store_audit_row {
	uint64_t seq;
	int64_t time_ns;
	const char *tenant, *action;
	const uint8_t *canonical;
	size_t len;
	const uint8_t *leaf_hash;
	size_t leaf_len;
};

/* Which entries store_audit_scan() returns: seq > since, tenant and action
 * equal when not NULL, at most limit rows (0: all), ascending seq. */
struct store_audit_filter {
	uint64_t since;
	const char *tenant, *action;
	uint64_t limit;
};

typedef enum sl_err (*store_audit_fn)(void *arg, const struct store_audit_row *r);
typedef enum sl_err (*store_audit_note_fn)(void *arg, uint64_t size, const char *note);
typedef enum sl_err (*store_audit_subtree_fn)(void *arg, unsigned level, uint64_t index,
					      const uint8_t *hash, size_t len);

/* Appends entry r (r->leaf_hash of STORE_AUDIT_HASH bytes; tenant and action
 * may be "" or NULL). SL_EINVAL/SL_ELIMIT for bad arguments (nothing written);
 * SL_EIO when the write fails (the store is then failed), including a seq
 * that is already taken. Inside a transaction, the PostgreSQL backend
 * pipelines writes: a write the server refuses then fails the transaction's
 * next read or its commit instead (the same SL_EIO and failed store), so
 * nothing of it is committed either way. */
enum sl_err store_audit_append(struct store *s, const struct store_audit_row *r,
			       struct sl_diag *d) SL_MUST_USE;
/* The highest stored seq, 0 when the log is empty. */
enum sl_err store_audit_last(struct store *s, uint64_t *seq_out, struct sl_diag *d) SL_MUST_USE;
/* The stored leaf hash of seq. SL_ENOTFOUND when there is no such row or its
 * hash is not STORE_AUDIT_HASH bytes. */
enum sl_err store_audit_leaf(struct store *s, uint64_t seq, uint8_t out[STORE_AUDIT_HASH],
			     struct sl_diag *d) SL_MUST_USE;
/* Calls fn per matching entry (see store_audit_filter). The callback must not
 * call the store; its error stops the scan and is returned. */
enum sl_err store_audit_scan(struct store *s, const struct store_audit_filter *f,
			     store_audit_fn fn, void *arg, struct sl_diag *d) SL_MUST_USE;
/* Cached perfect-subtree hash of 2^level leaves starting at leaf index *
 * 2^level (merkle.h). put replaces; get answers SL_ENOTFOUND when absent. */
enum sl_err store_audit_subtree_put(struct store *s, unsigned level, uint64_t index,
				    const uint8_t hash[STORE_AUDIT_HASH],
				    struct sl_diag *d) SL_MUST_USE;
enum sl_err store_audit_subtree_get(struct store *s, unsigned level, uint64_t index,
				    uint8_t out[STORE_AUDIT_HASH], struct sl_diag *d) SL_MUST_USE;
/* Calls fn per cached subtree row, ascending (level, index); len is the
 * stored hash's length. Same rules as the scan. */
enum sl_err store_audit_subtree_scan(struct store *s, store_audit_subtree_fn fn, void *arg,
				     struct sl_diag *d) SL_MUST_USE;
/* Calls fn, ascending seq, for the newest entry of each indexed tenant among
 * the entries with seq <= max_seq: the tenant heads (tenant_chain.h) at that
 * size. Rows whose tenant column is empty are not heads. Same rules as the
 * scan. */
enum sl_err store_audit_heads(struct store *s, uint64_t max_seq, store_audit_fn fn, void *arg,
			      struct sl_diag *d) SL_MUST_USE;
/* Stores the checkpoint note for tree size `size` (1..STORE_AUDIT_NOTE_MAX
 * bytes), replacing one of the same size. */
enum sl_err store_audit_checkpoint_put(struct store *s, uint64_t size, const char *note,
				       struct sl_diag *d) SL_MUST_USE;
/* Calls fn per stored checkpoint, ascending size; same rules as the scan. */
enum sl_err store_audit_checkpoint_scan(struct store *s, store_audit_note_fn fn, void *arg,
					struct sl_diag *d) SL_MUST_USE;
/* The checkpoint of the largest size, *note_out to free(). SL_ENOTFOUND when
 * there is none. */
enum sl_err store_audit_checkpoint_latest(struct store *s, uint64_t *size_out, char **note_out,
					  struct sl_diag *d) SL_MUST_USE;

/* ---- leadership (PostgreSQL only; DESIGN.md §8, docs/ha.md) ----
 *
 * Several controllers share one database; one leads. The leader row (table
 * suanli_leader, one row) holds an epoch that each new leader increments, who
 * leads, where it answers, and when its lease expires (the server's clock, so
 * no two clocks are compared). The leader also holds a session advisory lock:
 * when its connection dies, PostgreSQL drops the lock at once and a standby
 * may take over without waiting for the lease to run out. When the lease ran
 * out while the lock is still held (a stopped or cut-off leader), the standby
 * terminates the old leader's session, which aborts its open transaction.
 * Once leading, every transaction of this store first checks, under a share
 * lock on the leader row, that the epoch is still its own; so a deposed
 * leader's writes fail (SL_ECONFLICT, and the store fails) and no takeover can
 * slip between that check and the commit. */
#define STORE_MAX_LEADER_URL 512

struct store_leader {
	uint64_t epoch;                       /* 0: nobody has led yet */
	char holder[STORE_MAX_ID + 1];        /* the leader's name */
	char url[STORE_MAX_LEADER_URL + 1];   /* where it answers ("" if unknown) */
	int64_t since_renew_ms;               /* server clock: now - last renewal */
	int64_t lease_ms;                     /* how long a renewal holds */
	bool expired;                         /* the lease has run out */
	bool mine;                            /* this store holds it */
};

/* True when the store may be shared by several controllers (PostgreSQL), so
 * that a controller must lead before it writes. */
bool store_shared(const struct store *s);
/* Tries once to become the leader as `holder` (1..STORE_MAX_ID printable
 * characters) answering at url (may be ""), with a lease of lease_ms
 * (100..600000). *won tells whether this store now leads; *out (may be NULL)
 * describes the leader either way. Takes over when the leader's session is
 * gone or its lease has expired; never blocks on a stopped leader.
 * SL_EINVAL on a store that is not shared. */
enum sl_err store_lead_try(struct store *s, const char *holder, const char *url,
			   int64_t lease_ms, bool *won, struct store_leader *out,
			   struct sl_diag *d) SL_MUST_USE;
/* Renews this store's lease for lease_ms. SL_ECONFLICT when another leader
 * has taken over (the store is then failed); SL_EIO as for any write. */
enum sl_err store_lead_renew(struct store *s, int64_t lease_ms, struct sl_diag *d) SL_MUST_USE;
/* Reads the leader row (a plain read; decides nothing). */
enum sl_err store_lead_read(struct store *s, struct store_leader *out,
			    struct sl_diag *d) SL_MUST_USE;
/* Gives leadership up at once (expires the lease, drops the lock), so a
 * standby need not wait; a clean shutdown calls it. */
enum sl_err store_lead_release(struct store *s, struct sl_diag *d) SL_MUST_USE;
/* The epoch this store leads in, 0 when it does not lead. */
uint64_t store_lead_epoch(const struct store *s);
/* The streaming replicas' replay lag (ms) as the last renewal saw it in
 * pg_stat_replication; -1 when unknown (no replica, no renewal yet, or the
 * role may not see it: grant pg_monitor). */
int64_t store_lead_replication_lag_ms(const struct store *s);

#endif

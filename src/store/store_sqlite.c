/* store_sqlite.c - the SQLite backend of the store, and the schema's migrations.
 *
 * Settings, each for a reason:
 * - journal_mode=WAL with synchronous=FULL: a commit appends to the log and
 *   fsyncs it before COMMIT returns, so an acknowledged change survives a crash
 *   or power loss, and a commit costs one sequential write plus one fsync.
 * - locking_mode=EXCLUSIVE: the database is locked for as long as the store is
 *   open, so a second controller on the same data directory fails at open
 *   instead of diverging from the first; it also keeps the WAL index in heap
 *   memory (no -shm file).
 * - The file is created 0600 by us before SQLite opens it (SQLite gives its WAL
 *   the database's mode), and the directory is fsync'd so the new name is
 *   durable too.
 * - Every statement is prepared once at open (per kind: put, delete, get,
 *   scan), so the per-request cost is binding and stepping only.
 * - Checkpoints (copying the WAL into the database file) are run by us after a
 *   commit, not by SQLite's automatic hook, whose errors are silently dropped:
 *   a failed fsync there must fail the store like any other.
 *
 * Migrations: sq_migrations[i] takes the schema from version i to i+1 and is
 * applied, with PRAGMA user_version, in one transaction, so a crash between
 * steps leaves a database at a well-defined version. A step, once released, is
 * never edited: a new table or column is a new step appended to the array.
 *
 * Errors: every SQLite failure is reported as SL_EIO with SQLite's message and
 * which operation failed (SL_ENOMEM for SQLITE_NOMEM); the front decides what
 * fails the store. After a failure the connection is closed without a
 * checkpoint, so nothing more is written. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_sqlite_int.h"

#define SQ_BUSY_TIMEOUT_MS 200       /* how long open waits for another holder of the lock */
#define SQ_CHECKPOINT_FRAMES 1000     /* checkpoint once the WAL holds this many pages */
#define SQ_WAL_LIMIT_BYTES (64 << 20) /* a reset WAL is truncated back to this size */

/* v1: the object tables, one per kind, and meta. */
static const char sq_migration_1[] =
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
	"CREATE TABLE tenants (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX tenants_tenant ON tenants(tenant);\n"
	"CREATE TABLE tokens (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX tokens_tenant ON tokens(tenant);\n"
	"CREATE TABLE leases (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX leases_tenant ON leases(tenant);\n"
	"CREATE TABLE reservations (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX reservations_tenant ON reservations(tenant);\n"
	"CREATE TABLE nodes (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX nodes_tenant ON nodes(tenant);\n"
	"CREATE TABLE fleets (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX fleets_tenant ON fleets(tenant);\n"
	"CREATE TABLE idempotency (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX idempotency_tenant ON idempotency(tenant);\n";

/* v2: the audit log (store.h). Entries are keyed by seq alone so that a
 * verifier can read them in order; tenant and action are indexed with seq for
 * the filtered listings. Subtree hashes are a cache (rebuildable from the
 * entries) and carry no trust: verification never reads them. */
static const char sq_migration_2[] =
	"CREATE TABLE audit_entries (seq INTEGER PRIMARY KEY, time_ns INTEGER NOT NULL,"
	" tenant TEXT, action TEXT, canonical BLOB NOT NULL, leaf_hash BLOB NOT NULL);\n"
	"CREATE INDEX audit_entries_tenant ON audit_entries(tenant, seq);\n"
	"CREATE INDEX audit_entries_action ON audit_entries(action, seq);\n"
	"CREATE TABLE audit_subtrees (level INTEGER NOT NULL, idx INTEGER NOT NULL,"
	" hash BLOB NOT NULL, PRIMARY KEY (level, idx)) WITHOUT ROWID;\n"
	"CREATE TABLE audit_checkpoints (size INTEGER PRIMARY KEY, note TEXT NOT NULL);\n";

/* v3: billing (src/ctl/billing.c): price book entries, ledger postings keyed
 * by posting id, per-lease usage events and per-tenant balance state, as
 * object tables like v1's. */
static const char sq_migration_3[] =
	"CREATE TABLE prices (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX prices_tenant ON prices(tenant);\n"
	"CREATE TABLE postings (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX postings_tenant ON postings(tenant);\n"
	"CREATE TABLE usage (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX usage_tenant ON usage(tenant);\n"
	"CREATE TABLE billing (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX billing_tenant ON billing(tenant);\n";

/* v4: node agents' registrations and the jobs they run (src/ctl/agents.c,
 * src/ctl/jobs.c), as object tables like v1's. */
static const char sq_migration_4[] =
	"CREATE TABLE agents (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX agents_tenant ON agents(tenant);\n"
	"CREATE TABLE jobs (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX jobs_tenant ON jobs(tenant);\n";

/* v5: the image catalog (src/ctl/images.c), an object table like v1's. */
static const char sq_migration_5[] =
	"CREATE TABLE images (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX images_tenant ON images(tenant);\n";

/* v6: the console's people (src/ctl/users.c): users with password hashes
 * and their sessions (keyed by the SHA-256 of the session cookie, never the
 * cookie itself), object tables like v1's. */
static const char sq_migration_6[] =
	"CREATE TABLE users (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX users_tenant ON users(tenant);\n"
	"CREATE TABLE sessions (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX sessions_tenant ON sessions(tenant);\n";

/* v7: instances and users' SSH keys (src/ctl/instances.c, ssh_keys.c). */
static const char sq_migration_7[] =
	"CREATE TABLE instances (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX instances_tenant ON instances(tenant);\n"
	"CREATE TABLE ssh_keys (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX ssh_keys_tenant ON ssh_keys(tenant);\n";

/* v8: history (store.h); an old store's ended rows are moved by the controller
 * at its first start (it knows which states are final; the store never reads bodies). */
#define SQ_HISTORY(t)                                                                          \
	"CREATE TABLE " t "_history (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"       \
	" updated_ns INTEGER NOT NULL);\nCREATE INDEX " t "_history_tenant ON " t "_history"     \
	"(tenant, id);\nCREATE INDEX " t "_history_updated ON " t "_history(updated_ns, id);\n"
static const char sq_migration_8[] = SQ_HISTORY("lease") SQ_HISTORY("job") SQ_HISTORY("instance");

/* v9: billing history (store.h): ended usage records, the ledger's account
 * totals, and postings by (tenant, updated_ns) for a tenant's statement in
 * posting order (billing stores a posting's seq as its updated_ns). The
 * controller moves an old store's ended usage and builds the account rows
 * from its postings at its first start. */
static const char sq_migration_9[] =
	SQ_HISTORY("usage")
	"CREATE TABLE ledger_accounts (id TEXT PRIMARY KEY, tenant TEXT, body TEXT NOT NULL,"
	" updated_ns INTEGER NOT NULL);\n"
	"CREATE INDEX ledger_accounts_tenant ON ledger_accounts(tenant);\n"
	"CREATE INDEX postings_tenant_seq ON postings(tenant, updated_ns, id);\n";

/* Shared with the PostgreSQL backend (store_pg.c), which translates the
 * column types, so both backends always have the same schema. */
const char *const store_migrations[] = {sq_migration_1, sq_migration_2, sq_migration_3,
					sq_migration_4, sq_migration_5, sq_migration_6,
					sq_migration_7, sq_migration_8, sq_migration_9};
#define sq_migrations store_migrations
#define SQ_SCHEMA_VERSION ((int)(sizeof(sq_migrations) / sizeof(sq_migrations[0])))
const int store_migrations_count = SQ_SCHEMA_VERSION;

/* %s is a table name from store_kind_name(), never outside input. */
static const char *const sq_verb_sql[SQ_VERB__COUNT] = {
	[SQ_PUT] = "INSERT INTO %s (id, tenant, body, updated_ns) VALUES (?1, ?2, ?3, ?4)"
		   " ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant,"
		   " body = excluded.body, updated_ns = excluded.updated_ns",
	[SQ_DEL] = "DELETE FROM %s WHERE id = ?1",
	[SQ_GET] = "SELECT body FROM %s WHERE id = ?1",
	[SQ_SCAN] = "SELECT id, tenant, body FROM %s ORDER BY id",
	[SQ_PAGE] = "SELECT id, tenant, body FROM %s WHERE id > ?1 AND (?2 IS NULL OR tenant = ?2)"
		    " ORDER BY id LIMIT ?3",
	[SQ_RECENT] = "SELECT id, tenant, body FROM %s ORDER BY updated_ns DESC, id DESC LIMIT ?1",
	[SQ_SINCE] = "SELECT id, tenant, body FROM %s WHERE tenant = ?1 AND updated_ns > ?2"
		     " ORDER BY updated_ns, id LIMIT ?3",
};

/* Names the extended codes an operator is most likely to meet, so a log line
 * says "fsync" rather than only "disk I/O error". */
static const char *sq_code_detail(int rc)
{
	switch (rc) {
	case SQLITE_IOERR_FSYNC: return " (fsync failed)";
	case SQLITE_IOERR_DIR_FSYNC: return " (directory fsync failed)";
	case SQLITE_IOERR_WRITE: return " (write failed)";
	case SQLITE_IOERR_READ: return " (read failed)";
	case SQLITE_IOERR_SHORT_READ: return " (short read)";
	case SQLITE_IOERR_TRUNCATE: return " (truncate failed)";
	case SQLITE_FULL: return " (disk full)";
	case SQLITE_CORRUPT: return " (database corrupt)";
	case SQLITE_NOTADB: return " (not an SQLite database)";
	default: return "";
	}
}

enum sl_err sq_error_on(struct sq *q, int rc, struct sl_diag *d, struct sq_what w)
{
	const char *msg = q && q->db ? sqlite3_errmsg(q->db) : sqlite3_errstr(rc);
	sl_diag_set(d, rc == SQLITE_NOMEM ? SL_ENOMEM : SL_EIO, "sqlite: %s%s%s%s%s%s: %s%s [code %d]",
		    w.verb, w.obj ? " " : "", w.obj ? w.obj : "", w.id ? " '" : "",
		    w.id ? w.id : "", w.id ? "'" : "", msg, sq_code_detail(rc), rc);
	return rc == SQLITE_NOMEM ? SL_ENOMEM : SL_EIO;
}

enum sl_err sq_error(struct sq *q, int rc, struct sl_diag *d, const char *what)
{
	return sq_error_on(q, rc, d, (struct sq_what){what, NULL, NULL});
}

/* Runs a prepared statement that returns no rows, then makes it reusable. */
enum sl_err sq_run(struct sq *q, sqlite3_stmt *st, struct sl_diag *d, struct sq_what w)
{
	int rc = sqlite3_step(st);
	enum sl_err e = rc == SQLITE_DONE ? SL_OK : sq_error_on(q, rc, d, w);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return e;
}

static enum sl_err sq_exec(struct sq *q, const char *sql, struct sl_diag *d, const char *what)
{
	int rc = sqlite3_exec(q->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? SL_OK : sq_error(q, rc, d, what);
}

enum sl_err sq_prepare(struct sq *q, const char *sql, sqlite3_stmt **st,
		       struct sl_diag *d)
{
	int rc = sqlite3_prepare_v3(q->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
	return rc == SQLITE_OK ? SL_OK : sq_error(q, rc, d, "preparing a statement");
}

/* Replaces SQLite's automatic checkpoint, which runs inside COMMIT and drops
 * its errors: a failed fsync of the database file would go unnoticed and be
 * tried again by the next checkpoint. Here the commit only counts pages... */
static int sq_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	(void)db, (void)name;
	((struct sq *)arg)->wal_frames = frames;
	return SQLITE_OK;
}

/* ...and after a durable write outside a transaction, the checkpoint runs here
 * and its failure is an I/O error like any other, so the store fails. The
 * change itself was committed (it is in the fsync'd WAL). */
enum sl_err sq_after_write(struct sq *q, struct sl_diag *d)
{
	if (q->wal_frames < SQ_CHECKPOINT_FRAMES || !sqlite3_get_autocommit(q->db))
		return SL_OK;
	int rc = sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	if (rc != SQLITE_OK)
		return sq_error(q, rc, d, "checkpointing after a commit (the commit itself is durable)");
	q->wal_frames = 0;
	return SL_OK;
}

/* Creates the data directory and an empty 0600 database file if missing; a
 * created name is made durable by fsync'ing the directory that holds it. */
static enum sl_err sq_sync_dir(const char *dir, struct sl_diag *d)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0) {
		sl_diag_set(d, SL_EIO, "cannot fsync directory %s: %s", dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		return SL_EIO;
	}
	close(fd);
	return SL_OK;
}

static enum sl_err sq_create_files(const char *dir, const char *path, struct sl_diag *d)
{
	if (mkdir(dir, 0700) == 0) {
		/* the parent must learn the new directory's name too */
		char parent[PATH_MAX];
		snprintf(parent, sizeof(parent), "%s/..", dir);
		enum sl_err e = sq_sync_dir(parent, d);
		if (e != SL_OK)
			return e;
	} else if (errno != EEXIST) {
		sl_diag_set(d, SL_EIO, "cannot create data directory %s: %s", dir, strerror(errno));
		sl_diag_hint(d, "create its parent directory first");
		return SL_EIO;
	}
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		close(fd);
		return sq_sync_dir(dir, d);
	}
	if (errno == EEXIST)
		return SL_OK;
	return sl_diag_set(d, SL_EIO, "cannot create %s: %s", path, strerror(errno));
}

static enum sl_err sq_read_version(struct sq *q, int *version, struct sl_diag *d)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(q->db, "PRAGMA user_version", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			*version = sqlite3_column_int(st, 0);
			rc = SQLITE_OK;
		}
		sqlite3_finalize(st);
	}
	return rc == SQLITE_OK ? SL_OK : sq_error(q, rc, d, "reading the schema version");
}

static enum sl_err sq_migrate(struct sq *q, const char *path, struct sl_diag *d)
{
	enum sl_err e = sq_read_version(q, &q->version, d);
	if (e != SL_OK)
		return e;
	if (q->version > SQ_SCHEMA_VERSION || q->version < 0) {
		sl_diag_set(d, SL_ECONFLICT,
			    "%s has schema version %d, newer than this program knows (%d)", path,
			    q->version, SQ_SCHEMA_VERSION);
		sl_diag_hint(d, "run a suanlid at least as new as the one that wrote it, or "
				"restore a backup made by this version");
		return SL_ECONFLICT;
	}
	for (int v = q->version; v < SQ_SCHEMA_VERSION; v++) {
		char what[64], pragma[48];
		snprintf(what, sizeof(what), "migrating the schema to version %d", v + 1);
		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", v + 1);
		e = sq_exec(q, "BEGIN IMMEDIATE", d, what);
		if (e != SL_OK)
			return e;
		e = sq_exec(q, sq_migrations[v], d, what);
		if (e == SL_OK)
			e = sq_exec(q, pragma, d, what);
		if (e == SL_OK)
			e = sq_exec(q, "COMMIT", d, what);
		if (e != SL_OK) {
			/* the message is already in d; a failed rollback adds nothing */
			sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
			return e;
		}
		q->version = v + 1;
	}
	return SL_OK;
}

static enum sl_err sq_prepare_all(struct sq *q, struct sl_diag *d)
{
	char sql[256];
	enum sl_err e = SL_OK;
	for (int k = 0; e == SL_OK && k < STORE_KIND__COUNT; k++) {
		for (int v = 0; e == SL_OK && v < SQ_VERB__COUNT; v++) {
			snprintf(sql, sizeof(sql), sq_verb_sql[v], store_kind_name((enum store_kind)k));
			e = sq_prepare(q, sql, &q->kind_stmt[k][v], d);
		}
	}
	if (e == SL_OK)
		e = sq_prepare(q, "BEGIN IMMEDIATE", &q->begin, d);
	if (e == SL_OK)
		e = sq_prepare(q, "COMMIT", &q->commit, d);
	if (e == SL_OK)
		e = sq_prepare(q, "ROLLBACK", &q->rollback, d);
	if (e == SL_OK)
		e = sq_prepare(q, "SELECT value FROM meta WHERE key = ?1", &q->meta_get, d);
	if (e == SL_OK)
		e = sq_prepare(q, "INSERT INTO meta (key, value) VALUES (?1, ?2)"
				  " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
			       &q->meta_set, d);
	return e == SL_OK ? sq_prepare_audit(q, d) : e;
}

/* Sets the pragmas described at the top. A lock held by another process shows
 * up here first (entering WAL reads the database). */
static enum sl_err sq_configure(struct sq *q, const char *path, struct sl_diag *d)
{
	sqlite3_busy_timeout(q->db, SQ_BUSY_TIMEOUT_MS);
	enum sl_err e = sq_exec(q, "PRAGMA locking_mode = EXCLUSIVE", d, "setting the locking mode");
	if (e != SL_OK)
		return e;
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(q->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			const char *mode = (const char *)sqlite3_column_text(st, 0);
			rc = mode && strcmp(mode, "wal") == 0 ? SQLITE_OK : SQLITE_ERROR;
		}
		sqlite3_finalize(st);
	}
	if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
		sl_diag_set(d, SL_ECONFLICT, "%s is in use by another process", path);
		sl_diag_hint(d, "another suanlid already serves this data directory");
		return SL_ECONFLICT;
	}
	if (rc != SQLITE_OK)
		return sq_error(q, rc, d, "switching to WAL");
	sqlite3_wal_hook(q->db, sq_wal_hook, q);
	char limit[64];
	snprintf(limit, sizeof(limit), "PRAGMA journal_size_limit = %d", SQ_WAL_LIMIT_BYTES);
	e = sq_exec(q, limit, d, "limiting the WAL size");
	if (e == SL_OK)
		e = sq_exec(q, "PRAGMA synchronous = FULL", d, "setting synchronous");
	if (e == SL_OK)
		e = sq_exec(q, "PRAGMA foreign_keys = ON", d, "enabling foreign keys");
	if (e == SL_OK)
		e = sq_exec(q, "PRAGMA trusted_schema = OFF", d, "distrusting the schema");
	return e;
}

static void sq_close(void *impl, bool failed)
{
	struct sq *q = impl;
	if (!q)
		return;
	for (int k = 0; k < STORE_KIND__COUNT; k++)
		for (int v = 0; v < SQ_VERB__COUNT; v++)
			sqlite3_finalize(q->kind_stmt[k][v]);
	sqlite3_finalize(q->begin);
	sqlite3_finalize(q->commit);
	sqlite3_finalize(q->rollback);
	sqlite3_finalize(q->meta_get);
	sqlite3_finalize(q->meta_set);
	sqlite3_finalize(q->a_sub_scan);
	sqlite3_finalize(q->a_heads);
	sqlite3_stmt *audit[] = {q->a_append, q->a_last, q->a_leaf, q->a_scan[0][0],
				 q->a_scan[0][1], q->a_scan[1][0], q->a_scan[1][1], q->a_sub_put,
				 q->a_sub_get, q->a_cp_put, q->a_cp_scan, q->a_cp_latest};
	for (size_t i = 0; i < sizeof(audit) / sizeof(audit[0]); i++)
		sqlite3_finalize(audit[i]);
	/* After a failure a checkpoint would copy pages and fsync again: the next
	 * open recovers from the log instead. */
	if (failed && q->db)
		sqlite3_db_config(q->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
	sqlite3_close_v2(q->db);
	free(q);
}

static enum sl_err sq_open(const char *dir, const struct store_opts *opts, void **impl,
			   struct sl_diag *d)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, STORE_DB_FILE) >= sizeof(path))
		return sl_diag_set(d, SL_ELIMIT, "data directory path is longer than %d bytes",
				   PATH_MAX - (int)sizeof(STORE_DB_FILE) - 1);
	enum sl_err e = sq_create_files(dir, path, d);
	if (e != SL_OK)
		return e;
	struct sq *q = calloc(1, sizeof(*q));
	if (!q)
		return sl_diag_set(d, SL_ENOMEM, "out of memory opening %s", path);
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_EXRESCODE |
		    SQLITE_OPEN_NOMUTEX;
	int rc = sqlite3_open_v2(path, &q->db, flags, opts->sqlite_vfs);
	if (rc != SQLITE_OK) {
		e = sq_error(q, rc, d, "opening the database");
		sl_diag_hint(d, "path %s", path);
	}
	if (e == SL_OK)
		e = sq_configure(q, path, d);
	if (e == SL_OK)
		e = sq_migrate(q, path, d);
	if (e == SL_OK)
		e = sq_prepare_all(q, d);
	if (e != SL_OK) {
		sq_close(q, true);
		return e;
	}
	*impl = q;
	return SL_OK;
}

static int sq_schema_version(const void *impl)
{
	return ((const struct sq *)impl)->version;
}

static enum sl_err sq_begin(void *impl, struct sl_diag *d)
{
	struct sq *q = impl;
	return sq_run(q, q->begin, d, (struct sq_what){"beginning a transaction", NULL, NULL});
}

static enum sl_err sq_commit(void *impl, struct sl_diag *d)
{
	struct sq *q = impl;
	enum sl_err e = sq_run(q, q->commit, d, (struct sq_what){"committing", NULL, NULL});
	return e == SL_OK ? sq_after_write(q, d) : e;
}

static enum sl_err sq_rollback(void *impl, struct sl_diag *d)
{
	struct sq *q = impl;
	return sq_run(q, q->rollback, d, (struct sq_what){"rolling back", NULL, NULL});
}

static enum sl_err sq_put(void *impl, enum store_kind k, const char *id, const char *tenant,
			  const char *json, size_t json_len, int64_t updated_ns,
			  struct sl_diag *d)
{
	struct sq *q = impl;
	sqlite3_stmt *st = q->kind_stmt[k][SQ_PUT];
	int rc = sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = tenant ? sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC)
			    : sqlite3_bind_null(st, 2);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text64(st, 3, json, json_len, SQLITE_STATIC, SQLITE_UTF8);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 4, updated_ns);
	struct sq_what w = {"writing", store_kind_name(k), id};
	if (rc != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return sq_error_on(q, rc, d, w);
	}
	enum sl_err e = sq_run(q, st, d, w);
	return e == SL_OK ? sq_after_write(q, d) : e;
}

static enum sl_err sq_del(void *impl, enum store_kind k, const char *id, struct sl_diag *d)
{
	struct sq *q = impl;
	sqlite3_stmt *st = q->kind_stmt[k][SQ_DEL];
	struct sq_what w = {"deleting", store_kind_name(k), id};
	int rc = sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if (rc != SQLITE_OK)
		return sq_error_on(q, rc, d, w);
	enum sl_err e = sq_run(q, st, d, w);
	if (e == SL_OK && sqlite3_changes(q->db) == 0)
		return sl_diag_set(d, SL_ENOTFOUND, "no %s row '%s' to delete", store_kind_name(k), id);
	return e == SL_OK ? sq_after_write(q, d) : e;
}

static enum sl_err sq_forget(void *impl, enum store_kind k, const char *id, struct sl_diag *d)
{
	enum sl_err e = sq_del(impl, k, id, d);
	if (e == SL_ENOTFOUND)
		sl_diag_clear(d);
	return e == SL_ENOTFOUND ? SL_OK : e;
}

/* Copies column 0 of the current row, which may hold NUL-free text only. */
static enum sl_err sq_copy_text(struct sq *q, sqlite3_stmt *st, char **out, struct sl_diag *d)
{
	const unsigned char *t = sqlite3_column_text(st, 0);
	int n = sqlite3_column_bytes(st, 0);
	if (!t)
		return sq_error(q, sqlite3_errcode(q->db), d, "reading a value");
	char *c = malloc((size_t)n + 1);
	if (!c)
		return sl_diag_set(d, SL_ENOMEM, "out of memory reading a %d-byte value", n);
	memcpy(c, t, (size_t)n);
	c[n] = '\0';
	*out = c;
	return SL_OK;
}

/* Steps a one-row lookup whose key is bound at ?1. */
static enum sl_err sq_lookup(struct sq *q, sqlite3_stmt *st, const char *key, char **out,
			     struct sl_diag *d, struct sq_what w)
{
	int rc = sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	enum sl_err e;
	if (rc == SQLITE_ROW)
		e = sq_copy_text(q, st, out, d);
	else if (rc == SQLITE_DONE)
		e = sl_diag_set(d, SL_ENOTFOUND, "%s '%s' not found", w.obj, key);
	else
		e = sq_error_on(q, rc, d, w);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return e;
}

static enum sl_err sq_get(void *impl, enum store_kind k, const char *id, char **json_out,
			  struct sl_diag *d)
{
	struct sq *q = impl;
	return sq_lookup(q, q->kind_stmt[k][SQ_GET], id, json_out, d,
			 (struct sq_what){"reading", store_kind_name(k), id});
}

/* Steps st (bound) to the end, calling fn per row; resets it. */
static enum sl_err sq_rows(struct sq *q, enum store_kind k, sqlite3_stmt *st, store_scan_fn fn,
			   void *arg, struct sl_diag *d)
{
	enum sl_err e = SL_OK;
	int rc = SQLITE_DONE;
	while (e == SL_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(st, 0);
		const char *tenant = (const char *)sqlite3_column_text(st, 1);
		const char *json = (const char *)sqlite3_column_text(st, 2);
		if (!id || !json) {
			e = sq_error(q, sqlite3_errcode(q->db), d, "scanning (a NULL id or body)");
			break;
		}
		e = fn(arg, id, tenant, json);
	}
	if (e == SL_OK && rc != SQLITE_DONE) {
		e = sq_error_on(q, rc, d, (struct sq_what){"scanning", store_kind_name(k), NULL});
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return e;
}

static enum sl_err sq_scan(void *impl, enum store_kind k, store_scan_fn fn, void *arg,
			   struct sl_diag *d)
{
	struct sq *q = impl;
	return sq_rows(q, k, q->kind_stmt[k][SQ_SCAN], fn, arg, d);
}

/* Unbound parameters are NULL (a page's tenant when it has none). */
static enum sl_err sq_page(void *impl, enum store_kind k, const char *after, const char *tenant,
			   int limit, store_scan_fn fn, void *arg, struct sl_diag *d)
{
	struct sq *q = impl;
	sqlite3_stmt *st = q->kind_stmt[k][after ? SQ_PAGE : SQ_RECENT];
	int p = after ? 3 : 1;
	if ((after && sqlite3_bind_text(st, 1, after, -1, SQLITE_STATIC)) ||
	    (tenant && sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC)) ||
	    sqlite3_bind_int(st, p, limit)) {
		sqlite3_clear_bindings(st);
		return sq_error(q, sqlite3_errcode(q->db), d, "binding a page query");
	}
	return sq_rows(q, k, st, fn, arg, d);
}

static enum sl_err sq_recent(void *impl, enum store_kind k, int limit, store_scan_fn fn,
			     void *arg, struct sl_diag *d)
{
	return sq_page(impl, k, NULL, NULL, limit, fn, arg, d);
}

static enum sl_err sq_since(void *impl, enum store_kind k, const char *tenant, int64_t after_ns,
			    int limit, store_scan_fn fn, void *arg, struct sl_diag *d)
{
	struct sq *q = impl;
	sqlite3_stmt *st = q->kind_stmt[k][SQ_SINCE];
	if (sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC) ||
	    sqlite3_bind_int64(st, 2, after_ns) || sqlite3_bind_int(st, 3, limit)) {
		sqlite3_clear_bindings(st);
		return sq_error(q, sqlite3_errcode(q->db), d, "binding a page query");
	}
	return sq_rows(q, k, st, fn, arg, d);
}

static enum sl_err sq_meta_get(void *impl, const char *key, char **value_out,
			       struct sl_diag *d)
{
	struct sq *q = impl;
	return sq_lookup(q, q->meta_get, key, value_out, d, (struct sq_what){"reading", "meta", key});
}

static enum sl_err sq_meta_set(void *impl, const char *key, const char *value,
			       size_t value_len, struct sl_diag *d)
{
	struct sq *q = impl;
	struct sq_what w = {"writing", "meta", key};
	int rc = sqlite3_bind_text(q->meta_set, 1, key, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text64(q->meta_set, 2, value, value_len, SQLITE_STATIC,
					 SQLITE_UTF8);
	if (rc != SQLITE_OK) {
		sqlite3_clear_bindings(q->meta_set);
		return sq_error_on(q, rc, d, w);
	}
	enum sl_err e = sq_run(q, q->meta_set, d, w);
	return e == SL_OK ? sq_after_write(q, d) : e;
}

/* ---- the audit tables ---- */

/* Rare (store copy): prepared per call. */
static enum sl_err sq_meta_scan(void *impl, store_scan_fn fn, void *arg, struct sl_diag *d)
{
	struct sq *q = impl;
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(q->db, "SELECT key, value FROM meta ORDER BY key", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sq_error(q, rc, d, "scanning meta");
	enum sl_err e = SL_OK;
	while (e == SL_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(st, 0);
		const char *v = (const char *)sqlite3_column_text(st, 1);
		e = fn(arg, k ? k : "", NULL, v ? v : "");
	}
	if (e == SL_OK && rc != SQLITE_DONE)
		e = sq_error(q, rc, d, "scanning meta");
	sqlite3_finalize(st);
	return e;
}

const struct store_ops store_sqlite_ops = {
	.name = "sqlite",
	.open = sq_open,
	.close = sq_close,
	.schema_version = sq_schema_version,
	.begin = sq_begin,
	.commit = sq_commit,
	.rollback = sq_rollback,
	.put = sq_put,
	.del = sq_del,
	.forget = sq_forget,
	.get = sq_get,
	.scan = sq_scan,
	.page = sq_page,
	.recent = sq_recent,
	.since = sq_since,
	.meta_get = sq_meta_get,
	.meta_set = sq_meta_set,
	.meta_scan = sq_meta_scan,
	.audit_append = sq_audit_append,
	.audit_last = sq_audit_last,
	.audit_leaf = sq_audit_leaf,
	.audit_scan = sq_audit_scan,
	.audit_subtree_put = sq_audit_subtree_put,
	.audit_subtree_get = sq_audit_subtree_get,
	.audit_subtree_scan = sq_audit_subtree_scan,
	.audit_heads = sq_audit_heads,
	.audit_cp_put = sq_audit_cp_put,
	.audit_cp_scan = sq_audit_cp_scan,
	.audit_cp_latest = sq_audit_cp_latest,
};

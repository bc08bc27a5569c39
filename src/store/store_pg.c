/* store_pg.c - the PostgreSQL backend of the store (libpq).
 *
 * The schema is SQLite's migration list (store_sqlite.c) with the types
 * translated word by word: INTEGER -> BIGINT (nanosecond times do not fit 32
 * bits), BLOB -> BYTEA, REAL -> DOUBLE PRECISION, TEXT -> TEXT COLLATE "C"
 * (scans order ids by bytes, as SQLite does), and WITHOUT ROWID dropped
 * (tests/unit/test_schema_pg.c checks every step). A new migration step appended there
 * reaches both backends, and suanli_schema holds the version. Migration steps
 * run under a transaction-level advisory lock, so controllers starting at once
 * migrate one after the other.
 *
 * Settings, each for a reason:
 * - TCP keepalives and a user timeout on the client side (libpq keywords) and
 *   on the server side (the same GUCs, set per session): a dead peer is noticed
 *   in seconds, not after the two-hour Linux default, so a dead leader's lock
 *   goes away and a cut-off leader's calls fail. The URL may override them.
 * - Every statement is prepared once at open; text parameters except bytea.
 * - COMMIT is checked by its command tag: on an aborted transaction PostgreSQL
 *   answers COMMIT with "ROLLBACK", which must not read as success.
 * - No reconnection: a lost connection fails the store (store.h).
 *
 * Group commit, pipelined: inside a transaction, BEGIN, the epoch check and
 * every write are sent without waiting (libpq pipeline mode) and their
 * results are read at COMMIT, so a loop turn costs one round trip to the
 * server however many rows it writes. A read in the middle first reads the
 * results so far (it must see the transaction's own writes). The price: a
 * write the server refuses (a taken audit seq) is reported at the commit or
 * the next read rather than by its own call; either way the store fails and
 * the transaction is not committed, which is what the contract needs.
 *
 * Leadership (store.h) lives in store_pg_lead.c; here begin() sends the epoch
 * check when this store leads, and a write outside a transaction is wrapped
 * in one so that it is checked too. */
#include <ctype.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "store_pg_int.h"

#define PG_MIGRATE_LOCK 0x73756131 /* advisory lock key of the migrations ("sua1") */

/* Appends src to the growing string *out (len *n, capacity *cap). */
static bool pg_append(char **out, size_t *n, size_t *cap, const char *src, size_t len)
{
	if (*n + len + 1 > *cap) {
		size_t c = (*cap ? *cap : 256);
		while (c < *n + len + 1)
			c *= 2;
		char *p = realloc(*out, c);
		if (!p)
			return false;
		*out = p;
		*cap = c;
	}
	memcpy(*out + *n, src, len);
	*n += len;
	(*out)[*n] = '\0';
	return true;
}

char *pg_translate(const char *sql)
{
	static const struct {
		const char *from, *to;
	} words[] = {
		{"INTEGER", "BIGINT"},
		{"BLOB", "BYTEA"},
		{"REAL", "DOUBLE PRECISION"}, /* SQLite's REAL is 8 bytes, PostgreSQL's 4 */
		{"TEXT", "TEXT COLLATE \"C\""},
		{"WITHOUT", NULL}, /* WITHOUT ROWID: dropped with the next word */
	};
	char *out = NULL;
	size_t n = 0, cap = 0;
	const char *p = sql;
	bool ok = pg_append(&out, &n, &cap, "", 0);
	while (ok && *p) {
		if (!isalpha((unsigned char)*p)) {
			ok = pg_append(&out, &n, &cap, p, 1);
			p++;
			continue;
		}
		const char *w = p;
		while (isalnum((unsigned char)*p) || *p == '_')
			p++;
		size_t len = (size_t)(p - w), i;
		for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
			if (strlen(words[i].from) == len && memcmp(w, words[i].from, len) == 0)
				break;
		if (i == sizeof(words) / sizeof(words[0])) {
			ok = pg_append(&out, &n, &cap, w, len);
		} else if (words[i].to) {
			ok = pg_append(&out, &n, &cap, words[i].to, strlen(words[i].to));
		} else {
			while (*p == ' ')
				p++;
			while (isalnum((unsigned char)*p) || *p == '_')
				p++;
			while (n > 0 && out[n - 1] == ' ')
				out[--n] = '\0';
		}
	}
	if (!ok) {
		free(out);
		return NULL;
	}
	return out;
}

enum sl_err pg_error(struct pg *g, const PGresult *r, struct sl_diag *d, const char *what,
		     const char *obj, const char *id)
{
	const char *msg = r ? PQresultErrorMessage(r) : "";
	if (!msg || !msg[0])
		msg = g && g->conn ? PQerrorMessage(g->conn) : "no connection";
	char clean[SL_DIAG_MSG];
	snprintf(clean, sizeof(clean), "%s", msg);
	for (char *c = clean; *c; c++)
		if (*c == '\n')
			*c = ' ';
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	sl_diag_set(d, SL_EIO, "postgres: %s%s%s%s%s%s: %s%s%s%s", what, obj ? " " : "",
		    obj ? obj : "", id ? " '" : "", id ? id : "", id ? "'" : "", clean,
		    state ? " [" : "", state ? state : "", state ? "]" : "");
	if (g && g->conn && PQstatus(g->conn) != CONNECTION_OK)
		sl_diag_hint(d, "the connection to PostgreSQL is lost; the controller stops and "
				"rebuilds from the database on restart");
	return SL_EIO;
}

/* Runs a prepared statement; *res is the result to PQclear() when it is wanted
 * (res NULL: cleared here). want: PGRES_COMMAND_OK or PGRES_TUPLES_OK. */
enum sl_err pg_run(struct pg *g, const char *stmt, int n, const char *const *vals,
		   const int *lens, const int *fmts, int result_fmt, ExecStatusType want,
		   PGresult **res, struct sl_diag *d, const char *what, const char *obj,
		   const char *id)
{
	enum sl_err pe = pg_pipe_sync(g, d);
	if (pe)
		return pe;
	PGresult *r = PQexecPrepared(g->conn, stmt, n, vals, lens, fmts, result_fmt);
	if (!r || PQresultStatus(r) != want) {
		enum sl_err e = pg_error(g, r, d, what, obj, id);
		PQclear(r);
		return e;
	}
	if (res)
		*res = r;
	else
		PQclear(r);
	return SL_OK;
}

enum sl_err pg_exec(struct pg *g, const char *sql, struct sl_diag *d, const char *what)
{
	enum sl_err pe = pg_pipe_sync(g, d);
	if (pe)
		return pe;
	PGresult *r = PQexec(g->conn, sql);
	ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
	enum sl_err e = SL_OK;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		e = pg_error(g, r, d, what, NULL, NULL);
	PQclear(r);
	return e;
}

static enum sl_err pg_prepare(struct pg *g, const char *name, const char *sql,
			      struct sl_diag *d)
{
	PGresult *r = PQprepare(g->conn, name, sql, 0, NULL);
	enum sl_err e = SL_OK;
	if (!r || PQresultStatus(r) != PGRES_COMMAND_OK)
		e = pg_error(g, r, d, "preparing", name, NULL);
	PQclear(r);
	return e;
}

static void pg_quiet(void *arg, const char *msg)
{
	(void)arg, (void)msg; /* NOTICEs ("relation already exists, skipping") */
}

/* ---- migrations ---- */

static const char pg_schema_sql[] =
	"CREATE TABLE IF NOT EXISTS suanli_schema (version integer NOT NULL)";

/* Leadership tables (store_pg_lead.c): PostgreSQL only, so outside the shared
 * list; created idempotently on every open. */
static const char pg_leader_sql[] =
	"CREATE TABLE IF NOT EXISTS suanli_leader (id integer PRIMARY KEY CHECK (id = 1),"
	" epoch bigint NOT NULL, holder text NOT NULL, url text NOT NULL, pid integer NOT NULL,"
	" renewed_at timestamptz NOT NULL, expires_at timestamptz NOT NULL);\n"
	"INSERT INTO suanli_leader VALUES (1, 0, '', '', 0, 'epoch', 'epoch')"
	" ON CONFLICT (id) DO NOTHING;\n"
	"CREATE TABLE IF NOT EXISTS suanli_leader_log (epoch bigint PRIMARY KEY,"
	" holder text NOT NULL, url text NOT NULL, started_at timestamptz NOT NULL,"
	" took_over_from text NOT NULL, reason text NOT NULL);\n";

/* Reads the version inside the migration transaction. */
static enum sl_err pg_read_version(struct pg *g, int *v, struct sl_diag *d)
{
	PGresult *r = PQexec(g->conn, "SELECT version FROM suanli_schema");
	if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) {
		enum sl_err e = pg_error(g, r, d, "reading the schema version", NULL, NULL);
		PQclear(r);
		return e;
	}
	*v = PQntuples(r) > 0 ? atoi(PQgetvalue(r, 0, 0)) : -1;
	PQclear(r);
	return SL_OK;
}

/* One step (or, at v == the newest, the check) per transaction. *more tells
 * whether another step follows. */
static enum sl_err pg_migrate_step(struct pg *g, bool *more, struct sl_diag *d)
{
	char lock[80], what[64];
	*more = false;
	snprintf(lock, sizeof(lock), "SELECT pg_advisory_xact_lock(%d)", PG_MIGRATE_LOCK);
	enum sl_err e = pg_exec(g, "BEGIN", d, "starting a migration");
	if (!e)
		e = pg_exec(g, lock, d, "waiting for other migrations");
	if (!e)
		e = pg_exec(g, pg_schema_sql, d, "creating the schema table");
	if (!e)
		e = pg_exec(g, pg_leader_sql, d, "creating the leader tables");
	int v = 0;
	if (!e)
		e = pg_read_version(g, &v, d);
	if (!e && v < 0) {
		e = pg_exec(g, "INSERT INTO suanli_schema VALUES (0)", d, "recording the schema version");
		v = 0;
	}
	if (!e && v > store_migrations_count) {
		sl_diag_set(d, SL_ECONFLICT,
			    "the database has schema version %d, newer than this program knows (%d)",
			    v, store_migrations_count);
		sl_diag_hint(d, "run a suanlid at least as new as the one that wrote it");
		e = SL_ECONFLICT;
	}
	if (!e && v < store_migrations_count) {
		snprintf(what, sizeof(what), "migrating the schema to version %d", v + 1);
		char *sql = pg_translate(store_migrations[v]);
		e = sql ? pg_exec(g, sql, d, what) : sl_diag_set(d, SL_ENOMEM, "out of memory");
		free(sql);
		char up[64];
		snprintf(up, sizeof(up), "UPDATE suanli_schema SET version = %d", v + 1);
		if (!e)
			e = pg_exec(g, up, d, what);
		*more = !e && v + 1 < store_migrations_count;
		v++;
	}
	if (!e)
		e = pg_exec(g, "COMMIT", d, "committing a migration");
	if (e) {
		PQclear(PQexec(g->conn, "ROLLBACK"));
		return e;
	}
	g->version = v;
	return SL_OK;
}

static enum sl_err pg_migrate(struct pg *g, struct sl_diag *d)
{
	bool more = true;
	enum sl_err e = SL_OK;
	while (!e && more)
		e = pg_migrate_step(g, &more, d);
	return e;
}

/* ---- statements ---- */

static const char *const pg_verb_sql[PG_VERB__COUNT] = {
	[PG_PUT] = "INSERT INTO %s (id, tenant, body, updated_ns) VALUES ($1, $2, $3, $4)"
		   " ON CONFLICT (id) DO UPDATE SET tenant = EXCLUDED.tenant,"
		   " body = EXCLUDED.body, updated_ns = EXCLUDED.updated_ns",
	[PG_DEL] = "DELETE FROM %s WHERE id = $1",
	[PG_GET] = "SELECT body FROM %s WHERE id = $1",
	[PG_SCAN] = "SELECT id, tenant, body FROM %s ORDER BY id",
	[PG_PAGE] = "SELECT id, tenant, body FROM %s WHERE id > $1::text"
		    " AND ($2::text IS NULL OR tenant = $2::text) ORDER BY id LIMIT $3::bigint",
	[PG_RECENT] = "SELECT id, tenant, body FROM %s ORDER BY updated_ns DESC, id DESC"
		      " LIMIT $1::bigint",
	[PG_SINCE] = "SELECT id, tenant, body FROM %s WHERE tenant = $1::text"
		     " AND updated_ns > $2::bigint ORDER BY updated_ns, id LIMIT $3::bigint",
};

static const struct {
	const char *name, *sql;
} pg_stmts[] = {
	{"meta_get", "SELECT value FROM meta WHERE key = $1"},
	{"meta_scan", "SELECT key, value FROM meta ORDER BY key"},
	{"meta_set", "INSERT INTO meta (key, value) VALUES ($1, $2)"
		     " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"},
	{"a_append", "INSERT INTO audit_entries (seq, time_ns, tenant, action, canonical,"
		     " leaf_hash) VALUES ($1, $2, $3, $4, $5, $6)"},
	{"a_last", "SELECT coalesce(max(seq), 0) FROM audit_entries"},
	{"a_leaf", "SELECT leaf_hash FROM audit_entries WHERE seq = $1"},
	{"a_scan", "SELECT seq, time_ns, coalesce(tenant, ''), coalesce(action, ''), canonical,"
		   " leaf_hash FROM audit_entries WHERE seq > $1::bigint"
		   " AND ($2::text IS NULL OR tenant = $2) AND ($3::text IS NULL OR action = $3)"
		   " ORDER BY seq LIMIT $4::bigint"},
	{"a_sub_put", "INSERT INTO audit_subtrees (level, idx, hash) VALUES ($1, $2, $3)"
		      " ON CONFLICT (level, idx) DO UPDATE SET hash = EXCLUDED.hash"},
	{"a_sub_get", "SELECT hash FROM audit_subtrees WHERE level = $1 AND idx = $2"},
	{"a_cp_put", "INSERT INTO audit_checkpoints (size, note) VALUES ($1, $2)"
		     " ON CONFLICT (size) DO UPDATE SET note = EXCLUDED.note"},
	{"a_cp_scan", "SELECT size, note FROM audit_checkpoints ORDER BY size"},
	{"a_cp_latest", "SELECT size, note FROM audit_checkpoints ORDER BY size DESC LIMIT 1"},
	{"a_sub_scan", "SELECT level::bigint, idx::bigint, hash FROM audit_subtrees"
		       " ORDER BY level, idx"},
	{"a_heads", "SELECT seq, time_ns, tenant, action, canonical, leaf_hash FROM audit_entries"
		    " WHERE seq IN (SELECT max(seq) FROM audit_entries WHERE seq <= $1::bigint"
		    " AND tenant IS NOT NULL GROUP BY tenant) ORDER BY seq"},
	{"epoch_check", "SELECT epoch FROM suanli_leader WHERE id = 1 AND epoch = $1::bigint"
			" FOR SHARE"},
};

static enum sl_err pg_prepare_all(struct pg *g, struct sl_diag *d)
{
	char sql[256], name[32];
	enum sl_err e = SL_OK;
	for (int k = 0; !e && k < STORE_KIND__COUNT; k++)
		for (int v = 0; !e && v < PG_VERB__COUNT; v++) {
			snprintf(sql, sizeof(sql), pg_verb_sql[v], store_kind_name((enum store_kind)k));
			snprintf(name, sizeof(name), "k%d_%d", k, v);
			e = pg_prepare(g, name, sql, d);
		}
	for (size_t i = 0; !e && i < sizeof(pg_stmts) / sizeof(pg_stmts[0]); i++)
		e = pg_prepare(g, pg_stmts[i].name, pg_stmts[i].sql, d);
	return e ? e : pg_lead_prepare(g, d);
}

/* ---- open and close ---- */

static enum sl_err pg_open(const char *url, const struct store_opts *opts, void **impl,
			   struct sl_diag *d)
{
	(void)opts;
	/* Defaults first: keywords in the URL come later and win. */
	/* target_session_attrs: never a read-only server (a streaming standby),
	 * so no decision is made on a replica's possibly stale rows. */
	const char *const keys[] = {"connect_timeout", "keepalives", "keepalives_idle",
				    "keepalives_interval", "keepalives_count", "tcp_user_timeout",
				    "target_session_attrs", "application_name", "options",
				    "dbname", NULL};
	const char *const vals[] = {"5", "1", "5", "2", "3", "10000", "read-write", "suanlid",
				    "-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2"
				    " -c tcp_keepalives_count=3 -c tcp_user_timeout=10000"
				    " -c client_min_messages=warning",
				    url, NULL};
	struct pg *g = calloc(1, sizeof(*g));
	if (!g)
		return sl_diag_set(d, SL_ENOMEM, "out of memory opening %s", url);
	g->lag_ms = -1;
	g->conn = PQconnectdbParams(keys, vals, 1);
	enum sl_err e = SL_OK;
	if (!g->conn) {
		e = sl_diag_set(d, SL_ENOMEM, "out of memory connecting to PostgreSQL");
	} else if (PQstatus(g->conn) != CONNECTION_OK) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "%s", PQerrorMessage(g->conn));
		for (char *c = msg; *c; c++)
			if (*c == '\n')
				*c = ' ';
		e = sl_diag_set(d, SL_EIO, "postgres: cannot connect: %s", msg);
		sl_diag_hint(d, "check the URL (postgres://USER@HOST:PORT/DB) and that the server runs");
	}
	if (!e) {
		PQsetNoticeProcessor(g->conn, pg_quiet, NULL);
		e = pg_migrate(g, d);
	}
	if (!e)
		e = pg_prepare_all(g, d);
	if (e) {
		PQfinish(g->conn);
		free(g);
		return e;
	}
	*impl = g;
	return SL_OK;
}

static void pg_close(void *impl, bool failed)
{
	struct pg *g = impl;
	(void)failed; /* closing the session rolls back anything open */
	if (!g)
		return;
	PQfinish(g->conn);
	free(g->pend);
	free(g);
}

static int pg_schema_version(const void *impl)
{
	return ((const struct pg *)impl)->version;
}

/* ---- transactions ---- */

/* BEGIN, and when this store leads, the epoch check under a share lock on the
 * leader row (store.h): held to the end of the transaction, it keeps a new
 * leader from committing its takeover before we are done. */
/* Sends a statement into the pipeline (entering pipeline mode); stmt NULL:
 * sql, unprepared. */
static enum sl_err pg_pipe_send(struct pg *g, const char *stmt, const char *sql, int n,
				const char *const *vals, const int *lens, const int *fmts,
				enum pg_expect px, struct sl_diag *d)
{
	enum sl_err ge = sl_grow(&g->pend, &g->cap_pend, g->npend + 1, PG_MAX_PIPELINED);
	if (ge)
		return sl_diag_set(d, ge, "more than %d statements in one transaction, or out of memory",
				   PG_MAX_PIPELINED);
	if (!g->piped) {
		if (!PQenterPipelineMode(g->conn))
			return pg_error(g, NULL, d, "entering pipeline mode", NULL, NULL);
		g->piped = true;
	}
	int ok = stmt ? PQsendQueryPrepared(g->conn, stmt, n, vals, lens, fmts, 0)
		      : PQsendQueryParams(g->conn, sql, 0, NULL, NULL, NULL, NULL, 0);
	if (!ok)
		return pg_error(g, NULL, d, "sending", stmt ? stmt : sql, NULL);
	g->pend[g->npend++] = px;
	/* on its way now, so the server works on the turn's writes while the
	 * loop still handles requests, not all at once after COMMIT */
	if (PQflush(g->conn) < 0)
		return pg_error(g, NULL, d, "sending", stmt ? stmt : sql, NULL);
	return SL_OK;
}

/* Checks one pipelined result against what it must be; SL_OK or the error
 * (set in d) of the first bad one. */
static enum sl_err pg_pipe_check(struct pg *g, PGresult *r, enum pg_expect px, struct sl_diag *d)
{
	ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
	if (st == PGRES_PIPELINE_ABORTED)
		return sl_diag_set(d, SL_EIO, "postgres: a statement of the transaction was aborted");
	if (px == PX_EPOCH) {
		if (st != PGRES_TUPLES_OK)
			return pg_error(g, r, d, "checking the leader epoch", NULL, NULL);
		if (PQntuples(r) != 1) {
			sl_diag_set(d, SL_EIO, "deposed: leader epoch %" PRIu64
				    " is no longer current; another controller leads", g->epoch);
			sl_diag_hint(d, "this controller steps down; it stands by after its restart");
			return SL_EIO;
		}
		return SL_OK;
	}
	if (st != PGRES_COMMAND_OK)
		return pg_error(g, r, d, px == PX_COMMIT ? "committing" : "writing (pipelined)", NULL, NULL);
	if (px == PX_COMMIT && strcmp(PQcmdStatus(r), "COMMIT") != 0)
		return sl_diag_set(d, SL_EIO, "postgres: committing: the transaction was aborted (%s)",
				   PQcmdStatus(r));
	return SL_OK;
}

enum sl_err pg_pipe_sync(struct pg *g, struct sl_diag *d)
{
	if (!g->piped)
		return SL_OK;
	enum sl_err e = SL_OK;
	if (!PQpipelineSync(g->conn))
		e = pg_error(g, NULL, d, "sending the pipeline", NULL, NULL);
	for (size_t i = 0; !e && i < g->npend; i++) {
		PGresult *r = PQgetResult(g->conn);
		enum sl_err ce = pg_pipe_check(g, r, g->pend[i], d);
		PQclear(r);
		if (ce && !e)
			e = ce;
		while ((r = PQgetResult(g->conn)) && PQresultStatus(r) != PGRES_PIPELINE_SYNC)
			PQclear(r); /* the NULL that ends this statement's results */
		if (r) { /* a sync already: the connection is in trouble */
			PQclear(r);
			if (!e)
				e = sl_diag_set(d, SL_EIO, "postgres: the pipeline ended early");
			g->npend = 0;
			g->piped = !PQexitPipelineMode(g->conn);
			return e;
		}
	}
	if (!e) {
		PGresult *r = PQgetResult(g->conn);
		if (!r || PQresultStatus(r) != PGRES_PIPELINE_SYNC)
			e = pg_error(g, r, d, "ending the pipeline", NULL, NULL);
		PQclear(r);
	}
	g->npend = 0;
	if (!PQexitPipelineMode(g->conn) && !e)
		e = pg_error(g, NULL, d, "leaving pipeline mode", NULL, NULL);
	g->piped = false;
	return e;
}

static enum sl_err pg_tx_open(struct pg *g, struct sl_diag *d)
{
	enum sl_err e = pg_pipe_send(g, NULL, "BEGIN", 0, NULL, NULL, NULL, PX_CMD, d);
	if (e || !g->epoch)
		return e;
	char ep[24];
	snprintf(ep, sizeof(ep), "%" PRIu64, g->epoch);
	const char *v[] = {ep};
	return pg_pipe_send(g, "epoch_check", NULL, 1, v, NULL, NULL, PX_EPOCH, d);
}

static enum sl_err pg_tx_close(struct pg *g, bool commit, struct sl_diag *d)
{
	enum sl_err e = pg_pipe_send(g, NULL, commit ? "COMMIT" : "ROLLBACK", 0, NULL, NULL, NULL,
				     commit ? PX_COMMIT : PX_CMD, d);
	enum sl_err s = pg_pipe_sync(g, d);
	return e ? e : s;
}

static enum sl_err pg_begin(void *impl, struct sl_diag *d)
{
	struct pg *g = impl;
	enum sl_err e = pg_tx_open(g, d);
	g->in_tx = e == SL_OK;
	return e;
}

static enum sl_err pg_commit(void *impl, struct sl_diag *d)
{
	struct pg *g = impl;
	g->in_tx = false;
	return pg_tx_close(g, true, d);
}

static enum sl_err pg_rollback(void *impl, struct sl_diag *d)
{
	struct pg *g = impl;
	g->in_tx = false;
	return pg_tx_close(g, false, d);
}

/* A write outside a transaction: when leading, it is wrapped in one so the
 * epoch is checked; otherwise it commits on its own (autocommit). */
static enum sl_err pg_write(struct pg *g, const char *stmt, int n, const char *const *vals,
			    const int *lens, const int *fmts, PGresult **res, struct sl_diag *d,
			    const char *obj, const char *id)
{
	bool wrap = !g->in_tx && g->epoch;
	enum sl_err e = wrap ? pg_tx_open(g, d) : SL_OK;
	if (!e && (g->in_tx || wrap) && !res)
		e = pg_pipe_send(g, stmt, NULL, n, vals, lens, fmts, PX_CMD, d);
	else if (!e)
		e = pg_run(g, stmt, n, vals, lens, fmts, 0, PGRES_COMMAND_OK, res, d, "writing", obj, id);
	if (wrap && !e)
		e = pg_tx_close(g, true, d);
	else if (wrap && g->piped) {
		struct sl_diag ignore;
		(void)!pg_pipe_sync(g, &ignore);
	}
	if (e && res && *res) {
		PQclear(*res);
		*res = NULL;
	}
	return e;
}

/* ---- objects and meta ---- */

static void pg_kind_stmt(char name[32], enum store_kind k, enum pg_verb v)
{
	snprintf(name, 32, "k%d_%d", (int)k, (int)v);
}

static enum sl_err pg_put(void *impl, enum store_kind k, const char *id, const char *tenant,
			  const char *json, size_t json_len, int64_t updated_ns,
			  struct sl_diag *d)
{
	struct pg *g = impl;
	char name[32], ns[24];
	pg_kind_stmt(name, k, PG_PUT);
	snprintf(ns, sizeof(ns), "%" PRId64, updated_ns);
	(void)json_len;
	const char *v[] = {id, tenant, json, ns};
	return pg_write(g, name, 4, v, NULL, NULL, NULL, d, store_kind_name(k), id);
}

static enum sl_err pg_del(void *impl, enum store_kind k, const char *id, struct sl_diag *d)
{
	struct pg *g = impl;
	char name[32];
	pg_kind_stmt(name, k, PG_DEL);
	const char *v[] = {id};
	PGresult *r = NULL;
	enum sl_err e = pg_write(g, name, 1, v, NULL, NULL, &r, d, store_kind_name(k), id);
	if (!e && strcmp(PQcmdTuples(r), "0") == 0)
		e = sl_diag_set(d, SL_ENOTFOUND, "no %s row '%s' to delete", store_kind_name(k), id);
	PQclear(r);
	return e;
}

static enum sl_err pg_forget(void *impl, enum store_kind k, const char *id, struct sl_diag *d)
{
	char name[32];
	pg_kind_stmt(name, k, PG_DEL);
	const char *v[] = {id};
	return pg_write(impl, name, 1, v, NULL, NULL, NULL, d, store_kind_name(k), id);
}

/* A one-row, one-column text lookup. */
static enum sl_err pg_lookup(struct pg *g, const char *stmt, const char *key, char **out,
			     struct sl_diag *d, const char *obj)
{
	const char *v[] = {key};
	PGresult *r = NULL;
	enum sl_err e = pg_run(g, stmt, 1, v, NULL, NULL, 0, PGRES_TUPLES_OK, &r, d, "reading", obj, key);
	if (e)
		return e;
	if (PQntuples(r) == 0) {
		e = sl_diag_set(d, SL_ENOTFOUND, "%s '%s' not found", obj, key);
	} else if (!(*out = strdup(PQgetvalue(r, 0, 0)))) {
		e = sl_diag_set(d, SL_ENOMEM, "out of memory reading %s '%s'", obj, key);
	}
	PQclear(r);
	return e;
}

static enum sl_err pg_get(void *impl, enum store_kind k, const char *id, char **json_out,
			  struct sl_diag *d)
{
	char name[32];
	pg_kind_stmt(name, k, PG_GET);
	return pg_lookup(impl, name, id, json_out, d, store_kind_name(k));
}

enum sl_err pg_stream(struct pg *g, const char *stmt, int n, const char *const *vals,
		      const int *lens, const int *fmts, int result_fmt, pg_row_fn fn, void *arg,
		      struct sl_diag *d, const char *what)
{
	enum sl_err pe = pg_pipe_sync(g, d);
	if (pe)
		return pe;
	if (!PQsendQueryPrepared(g->conn, stmt, n, vals, lens, fmts, result_fmt) ||
	    !PQsetSingleRowMode(g->conn))
		return pg_error(g, NULL, d, what, NULL, NULL);
	enum sl_err e = SL_OK, cb = SL_OK;
	PGresult *r;
	while ((r = PQgetResult(g->conn))) {
		ExecStatusType st = PQresultStatus(r);
		if (st == PGRES_SINGLE_TUPLE) {
			if (cb == SL_OK)
				cb = fn(arg, r); /* after a stop, the rest is drained */
		} else if (st != PGRES_TUPLES_OK && e == SL_OK) {
			e = pg_error(g, r, d, what, NULL, NULL);
		}
		PQclear(r);
	}
	return e ? e : cb;
}

struct pg_scan_arg {
	store_scan_fn fn;
	void *arg;
};

static enum sl_err pg_scan_row(void *arg, const PGresult *r)
{
	struct pg_scan_arg *a = arg;
	return a->fn(a->arg, PQgetvalue(r, 0, 0), PQgetisnull(r, 0, 1) ? NULL : PQgetvalue(r, 0, 1),
		     PQgetvalue(r, 0, 2));
}

static enum sl_err pg_scan(void *impl, enum store_kind k, store_scan_fn fn, void *arg,
			   struct sl_diag *d)
{
	char name[32];
	pg_kind_stmt(name, k, PG_SCAN);
	struct pg_scan_arg a = {fn, arg};
	return pg_stream(impl, name, 0, NULL, NULL, NULL, 0, pg_scan_row, &a, d, "scanning");
}

static enum sl_err pg_page(void *impl, enum store_kind k, const char *after, const char *tenant,
			   int limit, store_scan_fn fn, void *arg, struct sl_diag *d)
{
	char name[32], lim[16];
	pg_kind_stmt(name, k, PG_PAGE);
	snprintf(lim, sizeof(lim), "%d", limit);
	const char *v[] = {after, tenant, lim};
	struct pg_scan_arg a = {fn, arg};
	return pg_stream(impl, name, 3, v, NULL, NULL, 0, pg_scan_row, &a, d, "reading a page");
}

static enum sl_err pg_recent(void *impl, enum store_kind k, int limit, store_scan_fn fn,
			     void *arg, struct sl_diag *d)
{
	char name[32], lim[16];
	pg_kind_stmt(name, k, PG_RECENT);
	snprintf(lim, sizeof(lim), "%d", limit);
	const char *v[] = {lim};
	struct pg_scan_arg a = {fn, arg};
	return pg_stream(impl, name, 1, v, NULL, NULL, 0, pg_scan_row, &a, d,
			 "reading the most recent rows");
}

static enum sl_err pg_since(void *impl, enum store_kind k, const char *tenant, int64_t after_ns,
			    int limit, store_scan_fn fn, void *arg, struct sl_diag *d)
{
	char name[32], lim[16], after[24];
	pg_kind_stmt(name, k, PG_SINCE);
	snprintf(lim, sizeof(lim), "%d", limit);
	snprintf(after, sizeof(after), "%lld", (long long)after_ns);
	const char *v[] = {tenant, after, lim};
	struct pg_scan_arg a = {fn, arg};
	return pg_stream(impl, name, 3, v, NULL, NULL, 0, pg_scan_row, &a, d, "reading a page");
}

static enum sl_err pg_meta_get(void *impl, const char *key, char **value_out,
			       struct sl_diag *d)
{
	return pg_lookup(impl, "meta_get", key, value_out, d, "meta");
}

static enum sl_err pg_meta_set(void *impl, const char *key, const char *value,
			       size_t value_len, struct sl_diag *d)
{
	(void)value_len;
	const char *v[] = {key, value};
	return pg_write(impl, "meta_set", 2, v, NULL, NULL, NULL, d, "meta", key);
}

static enum sl_err pg_meta_row(void *arg, const PGresult *r)
{
	struct pg_scan_arg *a = arg;
	return a->fn(a->arg, PQgetvalue(r, 0, 0), NULL, PQgetvalue(r, 0, 1));
}

static enum sl_err pg_meta_scan(void *impl, store_scan_fn fn, void *arg, struct sl_diag *d)
{
	struct pg_scan_arg a = {fn, arg};
	return pg_stream(impl, "meta_scan", 0, NULL, NULL, NULL, 0, pg_meta_row, &a, d,
			 "scanning meta");
}

const struct store_ops store_pg_ops = {
	.name = "postgres",
	.open = pg_open,
	.close = pg_close,
	.schema_version = pg_schema_version,
	.begin = pg_begin,
	.commit = pg_commit,
	.rollback = pg_rollback,
	.put = pg_put,
	.del = pg_del,
	.forget = pg_forget,
	.get = pg_get,
	.scan = pg_scan,
	.page = pg_page,
	.recent = pg_recent,
	.since = pg_since,
	.meta_get = pg_meta_get,
	.meta_set = pg_meta_set,
	.meta_scan = pg_meta_scan,
	.audit_append = pg_audit_append,
	.audit_last = pg_audit_last,
	.audit_leaf = pg_audit_leaf,
	.audit_scan = pg_audit_scan,
	.audit_subtree_put = pg_audit_subtree_put,
	.audit_subtree_get = pg_audit_subtree_get,
	.audit_cp_put = pg_audit_cp_put,
	.audit_cp_scan = pg_audit_cp_scan,
	.audit_cp_latest = pg_audit_cp_latest,
	.audit_subtree_scan = pg_audit_subtree_scan,
	.audit_heads = pg_audit_heads,
	.lead_try = pg_lead_try,
	.lead_renew = pg_lead_renew,
	.lead_read = pg_lead_read,
	.lead_release = pg_lead_release,
	.lead_lag = pg_lead_lag,
};

/* Exposed for store_pg_audit.c and store_pg_lead.c. */
enum sl_err pg_write_stmt(struct pg *g, const char *stmt, int n, const char *const *vals,
			  const int *lens, const int *fmts, struct sl_diag *d, const char *obj)
{
	return pg_write(g, stmt, n, vals, lens, fmts, NULL, d, obj, NULL);
}

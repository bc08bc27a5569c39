/* store_sqlite_audit.c - the SQLite backend's audit tables (store.h: entries,
 * cached subtrees, checkpoints), as store_pg_audit.c is PostgreSQL's: the
 * statements are prepared at open with the others (sq_prepare_audit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_sqlite_int.h"

enum sl_err sq_prepare_audit(struct sq *q, struct sl_diag *d)
{
	struct {
		sqlite3_stmt **st;
		const char *sql;
	} t[] = {
		{&q->a_append, "INSERT INTO audit_entries (seq, time_ns, tenant, action, canonical,"
			       " leaf_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"},
		{&q->a_last, "SELECT max(seq) FROM audit_entries"},
		{&q->a_leaf, "SELECT leaf_hash FROM audit_entries WHERE seq = ?1"},
		{&q->a_sub_put, "INSERT OR REPLACE INTO audit_subtrees (level, idx, hash)"
				" VALUES (?1, ?2, ?3)"},
		{&q->a_sub_get, "SELECT hash FROM audit_subtrees WHERE level = ?1 AND idx = ?2"},
		{&q->a_cp_put, "INSERT OR REPLACE INTO audit_checkpoints (size, note) VALUES (?1, ?2)"},
		{&q->a_cp_scan, "SELECT size, note FROM audit_checkpoints ORDER BY size"},
		{&q->a_cp_latest, "SELECT size, note FROM audit_checkpoints ORDER BY size DESC LIMIT 1"},
		{&q->a_sub_scan, "SELECT level, idx, hash FROM audit_subtrees ORDER BY level, idx"},
		{&q->a_heads, "SELECT seq, time_ns, tenant, action, canonical, leaf_hash"
			      " FROM audit_entries WHERE seq IN (SELECT max(seq) FROM audit_entries"
			      " WHERE seq <= ?1 AND tenant IS NOT NULL GROUP BY tenant) ORDER BY seq"},
	};
	enum sl_err e = SL_OK;
	for (size_t i = 0; e == SL_OK && i < sizeof(t) / sizeof(t[0]); i++)
		e = sq_prepare(q, t[i].sql, t[i].st, d);
	for (int ten = 0; e == SL_OK && ten < 2; ten++)
		for (int act = 0; e == SL_OK && act < 2; act++) {
			char sql[320];
			snprintf(sql, sizeof(sql),
				 "SELECT seq, time_ns, tenant, action, canonical, leaf_hash"
				 " FROM audit_entries WHERE seq > :since%s%s ORDER BY seq LIMIT :limit",
				 ten ? " AND tenant = :tenant" : "", act ? " AND action = :action" : "");
			e = sq_prepare(q, sql, &q->a_scan[ten][act], d);
		}
	return e;
}

enum sl_err sq_audit_append(void *impl, const struct store_audit_row *r,
			    struct sl_diag *d)
{
	struct sq *q = impl;
	sqlite3_stmt *st = q->a_append;
	char id[32];
	snprintf(id, sizeof(id), "%llu", (unsigned long long)r->seq);
	struct sq_what w = {"appending", "audit entry", id};
	int rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)r->seq);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 2, r->time_ns);
	if (rc == SQLITE_OK)
		rc = r->tenant && r->tenant[0] ? sqlite3_bind_text(st, 3, r->tenant, -1, SQLITE_STATIC)
					       : sqlite3_bind_null(st, 3);
	if (rc == SQLITE_OK)
		rc = r->action && r->action[0] ? sqlite3_bind_text(st, 4, r->action, -1, SQLITE_STATIC)
					       : sqlite3_bind_null(st, 4);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_blob(st, 5, r->canonical, (int)r->len, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_blob(st, 6, r->leaf_hash, (int)r->leaf_len, SQLITE_STATIC);
	if (rc != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return sq_error_on(q, rc, d, w);
	}
	enum sl_err e = sq_run(q, st, d, w);
	return e == SL_OK ? sq_after_write(q, d) : e;
}

/* Steps a statement expected to give at most one row; *row tells whether it
 * did. The caller reads the columns, then resets. */
static enum sl_err sq_step_one(struct sq *q, sqlite3_stmt *st, bool *row, struct sl_diag *d,
			       struct sq_what w)
{
	int rc = sqlite3_step(st);
	*row = rc == SQLITE_ROW;
	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		return SL_OK;
	enum sl_err e = sq_error_on(q, rc, d, w);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return e;
}

static void sq_done(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

enum sl_err sq_audit_last(void *impl, uint64_t *seq_out, struct sl_diag *d)
{
	struct sq *q = impl;
	bool row;
	enum sl_err e = sq_step_one(q, q->a_last, &row, d, (struct sq_what){"reading", "audit size", NULL});
	if (e != SL_OK)
		return e;
	sqlite3_int64 v = row ? sqlite3_column_int64(q->a_last, 0) : 0;
	*seq_out = v > 0 ? (uint64_t)v : 0;
	sq_done(q->a_last);
	return SL_OK;
}

/* Copies a blob column that must be exactly STORE_AUDIT_HASH bytes. */
static bool sq_hash_col(sqlite3_stmt *st, int col, uint8_t out[STORE_AUDIT_HASH])
{
	const void *b = sqlite3_column_blob(st, col);
	if (!b || sqlite3_column_bytes(st, col) != STORE_AUDIT_HASH)
		return false;
	memcpy(out, b, STORE_AUDIT_HASH);
	return true;
}

enum sl_err sq_audit_leaf(void *impl, uint64_t seq, uint8_t out[STORE_AUDIT_HASH],
			  struct sl_diag *d)
{
	struct sq *q = impl;
	bool row;
	sqlite3_bind_int64(q->a_leaf, 1, (sqlite3_int64)seq);
	enum sl_err e = sq_step_one(q, q->a_leaf, &row, d, (struct sq_what){"reading", "audit leaf", NULL});
	if (e != SL_OK)
		return e;
	if (!row || !sq_hash_col(q->a_leaf, 0, out))
		e = sl_diag_set(d, SL_ENOTFOUND, "audit entry %llu is missing or has no 32-byte leaf hash",
				(unsigned long long)seq);
	sq_done(q->a_leaf);
	return e;
}

static enum sl_err sq_audit_rows(struct sq *q, sqlite3_stmt *st, store_audit_fn fn, void *arg,
				 struct sl_diag *d);

enum sl_err sq_audit_scan(void *impl, const struct store_audit_filter *f,
			  store_audit_fn fn, void *arg, struct sl_diag *d)
{
	struct sq *q = impl;
	bool ten = f->tenant && f->tenant[0], act = f->action && f->action[0];
	sqlite3_stmt *st = q->a_scan[ten][act];
	sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":since"), (sqlite3_int64)f->since);
	sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":limit"),
			   f->limit ? (sqlite3_int64)f->limit : -1);
	if (ten)
		sqlite3_bind_text(st, sqlite3_bind_parameter_index(st, ":tenant"), f->tenant, -1,
				  SQLITE_STATIC);
	if (act)
		sqlite3_bind_text(st, sqlite3_bind_parameter_index(st, ":action"), f->action, -1,
				  SQLITE_STATIC);
	return sq_audit_rows(q, st, fn, arg, d);
}

/* Steps st (columns seq, time_ns, tenant, action, canonical, leaf_hash) and
 * hands each row to fn; resets st. */
static enum sl_err sq_audit_rows(struct sq *q, sqlite3_stmt *st, store_audit_fn fn, void *arg,
				 struct sl_diag *d)
{
	enum sl_err e = SL_OK;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		sqlite3_int64 seq = sqlite3_column_int64(st, 0);
		const char *t = (const char *)sqlite3_column_text(st, 2);
		const char *a = (const char *)sqlite3_column_text(st, 3);
		struct store_audit_row r = {
			.seq = seq > 0 ? (uint64_t)seq : 0,
			.time_ns = sqlite3_column_int64(st, 1),
			.tenant = t ? t : "",
			.action = a ? a : "",
			.canonical = sqlite3_column_blob(st, 4),
			.len = (size_t)sqlite3_column_bytes(st, 4),
			.leaf_hash = sqlite3_column_blob(st, 5),
			.leaf_len = (size_t)sqlite3_column_bytes(st, 5),
		};
		if ((e = fn(arg, &r)) != SL_OK)
			break;
	}
	if (e == SL_OK && rc != SQLITE_DONE)
		e = sq_error_on(q, rc, d, (struct sq_what){"scanning", "audit entries", NULL});
	sq_done(st);
	return e;
}

enum sl_err sq_audit_subtree_put(void *impl, unsigned level, uint64_t index,
				 const uint8_t hash[STORE_AUDIT_HASH], struct sl_diag *d)
{
	struct sq *q = impl;
	sqlite3_stmt *st = q->a_sub_put;
	int rc = sqlite3_bind_int(st, 1, (int)level);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 2, (sqlite3_int64)index);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_blob(st, 3, hash, STORE_AUDIT_HASH, SQLITE_STATIC);
	struct sq_what w = {"writing", "audit subtree", NULL};
	if (rc != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return sq_error_on(q, rc, d, w);
	}
	enum sl_err e = sq_run(q, st, d, w);
	return e == SL_OK ? sq_after_write(q, d) : e;
}

enum sl_err sq_audit_subtree_get(void *impl, unsigned level, uint64_t index,
				 uint8_t out[STORE_AUDIT_HASH], struct sl_diag *d)
{
	struct sq *q = impl;
	bool row;
	sqlite3_bind_int(q->a_sub_get, 1, (int)level);
	sqlite3_bind_int64(q->a_sub_get, 2, (sqlite3_int64)index);
	enum sl_err e = sq_step_one(q, q->a_sub_get, &row, d,
				    (struct sq_what){"reading", "audit subtree", NULL});
	if (e != SL_OK)
		return e;
	if (!row || !sq_hash_col(q->a_sub_get, 0, out))
		e = sl_diag_set(d, SL_ENOTFOUND, "no cached audit subtree (%u, %llu)", level,
				(unsigned long long)index);
	sq_done(q->a_sub_get);
	return e;
}

enum sl_err sq_audit_cp_put(void *impl, uint64_t size, const char *note, size_t len,
			    struct sl_diag *d)
{
	struct sq *q = impl;
	sqlite3_stmt *st = q->a_cp_put;
	int rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)size);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text64(st, 2, note, len, SQLITE_STATIC, SQLITE_UTF8);
	struct sq_what w = {"writing", "audit checkpoint", NULL};
	if (rc != SQLITE_OK) {
		sqlite3_clear_bindings(st);
		return sq_error_on(q, rc, d, w);
	}
	enum sl_err e = sq_run(q, st, d, w);
	return e == SL_OK ? sq_after_write(q, d) : e;
}

enum sl_err sq_audit_cp_scan(void *impl, store_audit_note_fn fn, void *arg,
			     struct sl_diag *d)
{
	struct sq *q = impl;
	sqlite3_stmt *st = q->a_cp_scan;
	enum sl_err e = SL_OK;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		sqlite3_int64 size = sqlite3_column_int64(st, 0);
		const char *note = (const char *)sqlite3_column_text(st, 1);
		if ((e = fn(arg, size > 0 ? (uint64_t)size : 0, note ? note : "")) != SL_OK)
			break;
	}
	if (e == SL_OK && rc != SQLITE_DONE)
		e = sq_error_on(q, rc, d, (struct sq_what){"scanning", "audit checkpoints", NULL});
	sq_done(st);
	return e;
}

enum sl_err sq_audit_cp_latest(void *impl, uint64_t *size_out, char **note_out,
			       struct sl_diag *d)
{
	struct sq *q = impl;
	bool row;
	sqlite3_stmt *st = q->a_cp_latest;
	enum sl_err e = sq_step_one(q, st, &row, d, (struct sq_what){"reading", "audit checkpoint", NULL});
	if (e != SL_OK)
		return e;
	if (!row) {
		e = sl_diag_set(d, SL_ENOTFOUND, "no audit checkpoint yet");
	} else {
		sqlite3_int64 size = sqlite3_column_int64(st, 0);
		*size_out = size > 0 ? (uint64_t)size : 0;
		const unsigned char *t = sqlite3_column_text(st, 1);
		*note_out = strdup(t ? (const char *)t : "");
		if (!*note_out)
			e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	sq_done(st);
	return e;
}

enum sl_err sq_audit_heads(void *impl, uint64_t max_seq, store_audit_fn fn, void *arg,
			   struct sl_diag *d)
{
	struct sq *q = impl;
	sqlite3_bind_int64(q->a_heads, 1, (sqlite3_int64)max_seq);
	return sq_audit_rows(q, q->a_heads, fn, arg, d);
}

enum sl_err sq_audit_subtree_scan(void *impl, store_audit_subtree_fn fn, void *arg,
				  struct sl_diag *d)
{
	struct sq *q = impl;
	sqlite3_stmt *st = q->a_sub_scan;
	enum sl_err e = SL_OK;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		sqlite3_int64 level = sqlite3_column_int64(st, 0), idx = sqlite3_column_int64(st, 1);
		e = fn(arg, level > 0 && level < 64 ? (unsigned)level : 64,
		       idx > 0 ? (uint64_t)idx : 0, sqlite3_column_blob(st, 2),
		       (size_t)sqlite3_column_bytes(st, 2));
		if (e != SL_OK)
			break;
	}
	if (e == SL_OK && rc != SQLITE_DONE)
		e = sq_error_on(q, rc, d, (struct sq_what){"scanning", "audit subtrees", NULL});
	sq_done(st);
	return e;
}

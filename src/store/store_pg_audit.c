/* store_pg_audit.c - the audit tables (store.h) in the PostgreSQL backend.
 *
 * Hashes and canonical bytes travel as binary bytea (parameters and results
 * in binary format: no hex escaping of every entry); numbers as text, except
 * in the scan, whose results are binary too and whose bigints are decoded
 * from network byte order here. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_pg_int.h"

static int64_t pg_be64(const char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | (uint8_t)p[i];
	return (int64_t)v;
}

enum sl_err pg_audit_append(void *impl, const struct store_audit_row *r, struct sl_diag *d)
{
	char seq[24], t[24];
	snprintf(seq, sizeof(seq), "%" PRIu64, r->seq);
	snprintf(t, sizeof(t), "%" PRId64, r->time_ns);
	const char *v[] = {seq, t, r->tenant && r->tenant[0] ? r->tenant : NULL,
			   r->action && r->action[0] ? r->action : NULL,
			   (const char *)r->canonical, (const char *)r->leaf_hash};
	int lens[] = {0, 0, 0, 0, (int)r->len, (int)r->leaf_len};
	int fmts[] = {0, 0, 0, 0, 1, 1};
	return pg_write_stmt(impl, "a_append", 6, v, lens, fmts, d, "audit entry");
}

enum sl_err pg_audit_last(void *impl, uint64_t *seq_out, struct sl_diag *d)
{
	PGresult *r = NULL;
	enum sl_err e = pg_run(impl, "a_last", 0, NULL, NULL, NULL, 0, PGRES_TUPLES_OK, &r, d,
			       "reading", "audit size", NULL);
	if (e)
		return e;
	*seq_out = PQntuples(r) ? strtoull(PQgetvalue(r, 0, 0), NULL, 10) : 0;
	PQclear(r);
	return SL_OK;
}

/* A one-row lookup of a 32-byte hash (binary result). */
static enum sl_err pg_hash_get(struct pg *g, const char *stmt, int n, const char *const *v,
			       uint8_t out[STORE_AUDIT_HASH], struct sl_diag *d, const char *obj)
{
	PGresult *r = NULL;
	enum sl_err e = pg_run(g, stmt, n, v, NULL, NULL, 1, PGRES_TUPLES_OK, &r, d, "reading", obj, v[0]);
	if (e)
		return e;
	if (PQntuples(r) != 1 || PQgetlength(r, 0, 0) != STORE_AUDIT_HASH)
		e = SL_ENOTFOUND;
	else
		memcpy(out, PQgetvalue(r, 0, 0), STORE_AUDIT_HASH);
	PQclear(r);
	return e;
}

enum sl_err pg_audit_leaf(void *impl, uint64_t seq, uint8_t out[STORE_AUDIT_HASH],
			  struct sl_diag *d)
{
	char s[24];
	snprintf(s, sizeof(s), "%" PRIu64, seq);
	const char *v[] = {s};
	enum sl_err e = pg_hash_get(impl, "a_leaf", 1, v, out, d, "audit leaf");
	if (e == SL_ENOTFOUND)
		sl_diag_set(d, SL_ENOTFOUND, "audit entry %s is missing or has no 32-byte leaf hash", s);
	return e;
}

struct pg_audit_arg {
	store_audit_fn fn;
	void *arg;
};

static enum sl_err pg_audit_row(void *arg, const PGresult *res)
{
	struct pg_audit_arg *a = arg;
	if (PQgetlength(res, 0, 0) != 8 || PQgetlength(res, 0, 1) != 8)
		return SL_EIO;
	int64_t seq = pg_be64(PQgetvalue(res, 0, 0));
	struct store_audit_row r = {
		.seq = seq > 0 ? (uint64_t)seq : 0,
		.time_ns = pg_be64(PQgetvalue(res, 0, 1)),
		.tenant = PQgetvalue(res, 0, 2),
		.action = PQgetvalue(res, 0, 3),
		.canonical = (const uint8_t *)PQgetvalue(res, 0, 4),
		.len = (size_t)PQgetlength(res, 0, 4),
		.leaf_hash = (const uint8_t *)PQgetvalue(res, 0, 5),
		.leaf_len = (size_t)PQgetlength(res, 0, 5),
	};
	return a->fn(a->arg, &r);
}

enum sl_err pg_audit_scan(void *impl, const struct store_audit_filter *f, store_audit_fn fn,
			  void *arg, struct sl_diag *d)
{
	char since[24], limit[24];
	snprintf(since, sizeof(since), "%" PRIu64, f->since);
	snprintf(limit, sizeof(limit), "%" PRIu64, f->limit);
	const char *v[] = {since, f->tenant && f->tenant[0] ? f->tenant : NULL,
			   f->action && f->action[0] ? f->action : NULL, f->limit ? limit : NULL};
	struct pg_audit_arg a = {fn, arg};
	return pg_stream(impl, "a_scan", 4, v, NULL, NULL, 1, pg_audit_row, &a, d,
			 "scanning audit entries");
}

enum sl_err pg_audit_subtree_put(void *impl, unsigned level, uint64_t index,
				 const uint8_t hash[STORE_AUDIT_HASH], struct sl_diag *d)
{
	char l[16], i[24];
	snprintf(l, sizeof(l), "%u", level);
	snprintf(i, sizeof(i), "%" PRIu64, index);
	const char *v[] = {l, i, (const char *)hash};
	int lens[] = {0, 0, STORE_AUDIT_HASH}, fmts[] = {0, 0, 1};
	return pg_write_stmt(impl, "a_sub_put", 3, v, lens, fmts, d, "audit subtree");
}

enum sl_err pg_audit_subtree_get(void *impl, unsigned level, uint64_t index,
				 uint8_t out[STORE_AUDIT_HASH], struct sl_diag *d)
{
	char l[16], i[24];
	snprintf(l, sizeof(l), "%u", level);
	snprintf(i, sizeof(i), "%" PRIu64, index);
	const char *v[] = {l, i};
	enum sl_err e = pg_hash_get(impl, "a_sub_get", 2, v, out, d, "audit subtree");
	if (e == SL_ENOTFOUND)
		sl_diag_set(d, SL_ENOTFOUND, "no cached audit subtree (%u, %s)", level, i);
	return e;
}

enum sl_err pg_audit_cp_put(void *impl, uint64_t size, const char *note, size_t len,
			    struct sl_diag *d)
{
	(void)len;
	char s[24];
	snprintf(s, sizeof(s), "%" PRIu64, size);
	const char *v[] = {s, note};
	return pg_write_stmt(impl, "a_cp_put", 2, v, NULL, NULL, d, "audit checkpoint");
}

struct pg_note_arg {
	store_audit_note_fn fn;
	void *arg;
};

static enum sl_err pg_note_row(void *arg, const PGresult *r)
{
	struct pg_note_arg *a = arg;
	return a->fn(a->arg, strtoull(PQgetvalue(r, 0, 0), NULL, 10), PQgetvalue(r, 0, 1));
}

enum sl_err pg_audit_cp_scan(void *impl, store_audit_note_fn fn, void *arg, struct sl_diag *d)
{
	struct pg_note_arg a = {fn, arg};
	return pg_stream(impl, "a_cp_scan", 0, NULL, NULL, NULL, 0, pg_note_row, &a, d,
			 "scanning audit checkpoints");
}

enum sl_err pg_audit_cp_latest(void *impl, uint64_t *size_out, char **note_out,
			       struct sl_diag *d)
{
	PGresult *r = NULL;
	enum sl_err e = pg_run(impl, "a_cp_latest", 0, NULL, NULL, NULL, 0, PGRES_TUPLES_OK, &r, d,
			       "reading", "audit checkpoint", NULL);
	if (e)
		return e;
	if (PQntuples(r) == 0) {
		e = sl_diag_set(d, SL_ENOTFOUND, "no audit checkpoint yet");
	} else {
		*size_out = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
		if (!(*note_out = strdup(PQgetvalue(r, 0, 1))))
			e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	PQclear(r);
	return e;
}

/* The newest entry of each tenant up to max_seq (the checkpoint's heads). */
enum sl_err pg_audit_heads(void *impl, uint64_t max_seq, store_audit_fn fn, void *arg,
			   struct sl_diag *d)
{
	char m[24];
	snprintf(m, sizeof(m), "%" PRIu64, max_seq);
	const char *v[] = {m};
	struct pg_audit_arg a = {fn, arg};
	return pg_stream(impl, "a_heads", 1, v, NULL, NULL, 1, pg_audit_row, &a, d,
			 "reading the tenants' newest audit entries");
}

struct pg_sub_arg {
	store_audit_subtree_fn fn;
	void *arg;
};

static enum sl_err pg_sub_row(void *arg, const PGresult *r)
{
	struct pg_sub_arg *a = arg;
	if (PQgetlength(r, 0, 0) != 8 || PQgetlength(r, 0, 1) != 8)
		return SL_EIO;
	int64_t level = pg_be64(PQgetvalue(r, 0, 0)), idx = pg_be64(PQgetvalue(r, 0, 1));
	return a->fn(a->arg, level > 0 && level < 64 ? (unsigned)level : 64,
		     idx > 0 ? (uint64_t)idx : 0, (const uint8_t *)PQgetvalue(r, 0, 2),
		     (size_t)PQgetlength(r, 0, 2));
}

enum sl_err pg_audit_subtree_scan(void *impl, store_audit_subtree_fn fn, void *arg,
				  struct sl_diag *d)
{
	struct pg_sub_arg a = {fn, arg};
	return pg_stream(impl, "a_sub_scan", 0, NULL, NULL, NULL, 1, pg_sub_row, &a, d,
			 "scanning audit subtrees");
}

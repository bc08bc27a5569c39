/* store_copy.c - `suanlid store copy --from DIR --to postgres://...`.
 *
 * The copy runs in one target transaction, so a failure leaves the target as
 * empty as it was; it holds the target's leadership meanwhile (holder
 * "store-copy"), so a controller started against the target stands by until
 * the copy is done. Verification reads both stores again after the commit and
 * compares a BLAKE2b digest and a count per table (objects per kind, meta,
 * audit entries with every column, checkpoints), so a row lost, added or
 * altered on the way fails the copy loudly. */
#include "store_copy.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <sys/stat.h>

#include "store.h"

#define COPY_LEASE_MS 600000 /* the copy's leadership: long enough for a big store */

struct copy_row {
	struct store *to;
	enum store_kind kind;
	int64_t now_ns;
	uint64_t n;
	struct sl_diag *d;
	bool meta;
};

/* A posting row's updated_ns is its seq (billing_store.c: a tenant's
 * statement pages in that order), so it is kept; other rows get the copy's
 * time. */
static int64_t row_ns(const struct copy_row *c, const char *json)
{
	if (c->kind != STORE_POSTINGS)
		return c->now_ns;
	json_t *o = json_loads(json, 0, NULL);
	json_int_t seq = json_integer_value(json_object_get(o, "seq"));
	json_decref(o);
	return seq > 0 ? (int64_t)seq : c->now_ns;
}

static enum sl_err copy_row(void *arg, const char *id, const char *tenant, const char *json)
{
	struct copy_row *c = arg;
	c->n++;
	return c->meta ? store_meta_set(c->to, id, json, c->d)
		       : store_put(c->to, c->kind, id, tenant, json, row_ns(c, json), c->d);
}

static enum sl_err copy_audit_row(void *arg, const struct store_audit_row *r)
{
	struct copy_row *c = arg;
	c->n++;
	return store_audit_append(c->to, r, c->d);
}

static enum sl_err copy_note(void *arg, uint64_t size, const char *note)
{
	struct copy_row *c = arg;
	c->n++;
	return store_audit_checkpoint_put(c->to, size, note, c->d);
}

/* The cached subtrees have no scan: every (level, index) a log of n entries
 * can have is asked for. */
static enum sl_err copy_subtrees(struct store *from, struct store *to, uint64_t n,
				 uint64_t *count, struct sl_diag *d)
{
	for (unsigned level = 1; level < 64 && (n >> level); level++)
		for (uint64_t i = 0; i < (n >> level); i++) {
			uint8_t h[STORE_AUDIT_HASH];
			enum sl_err e = store_audit_subtree_get(from, level, i, h, d);
			if (e == SL_ENOTFOUND)
				continue;
			if (e || (e = store_audit_subtree_put(to, level, i, h, d)))
				return e;
			(*count)++;
		}
	return SL_OK;
}

/* ---- verification ---- */

struct digest {
	crypto_generichash_state st;
	uint64_t n;
};

static void dg_add(struct digest *g, const void *p, size_t len)
{
	uint64_t l = len;
	crypto_generichash_update(&g->st, (const unsigned char *)&l, sizeof(l));
	crypto_generichash_update(&g->st, p, len);
}

static enum sl_err dg_row(void *arg, const char *id, const char *tenant, const char *json)
{
	struct digest *g = arg;
	g->n++;
	dg_add(g, id, strlen(id));
	dg_add(g, tenant ? tenant : "\x01", tenant ? strlen(tenant) : 1);
	dg_add(g, json, strlen(json));
	return SL_OK;
}

static enum sl_err dg_audit(void *arg, const struct store_audit_row *r)
{
	struct digest *g = arg;
	g->n++;
	dg_add(g, &r->seq, sizeof(r->seq));
	dg_add(g, &r->time_ns, sizeof(r->time_ns));
	dg_add(g, r->tenant, strlen(r->tenant));
	dg_add(g, r->action, strlen(r->action));
	dg_add(g, r->canonical, r->len);
	dg_add(g, r->leaf_hash, r->leaf_len);
	return SL_OK;
}

static enum sl_err dg_note(void *arg, uint64_t size, const char *note)
{
	struct digest *g = arg;
	g->n++;
	dg_add(g, &size, sizeof(size));
	dg_add(g, note, strlen(note));
	return SL_OK;
}

/* Table t (0..STORE_KIND__COUNT-1: objects; then meta, audit, checkpoints). */
#define DG_META STORE_KIND__COUNT
#define DG_AUDIT (STORE_KIND__COUNT + 1)
#define DG_NOTES (STORE_KIND__COUNT + 2)
#define DG__COUNT (STORE_KIND__COUNT + 3)

static enum sl_err dg_table(struct store *s, int t, unsigned char out[32], uint64_t *n,
			    struct sl_diag *d)
{
	struct digest g = {.n = 0};
	crypto_generichash_init(&g.st, NULL, 0, 32);
	enum sl_err e = t < STORE_KIND__COUNT ? store_scan(s, (enum store_kind)t, dg_row, &g, d)
			: t == DG_META	      ? store_meta_scan(s, dg_row, &g, d)
			: t == DG_AUDIT	      ? store_audit_scan(s, NULL, dg_audit, &g, d)
					      : store_audit_checkpoint_scan(s, dg_note, &g, d);
	crypto_generichash_final(&g.st, out, 32);
	*n = g.n;
	return e;
}

static const char *dg_name(int t)
{
	return t < STORE_KIND__COUNT ? store_kind_name((enum store_kind)t)
	       : t == DG_META	     ? "meta"
	       : t == DG_AUDIT	     ? "audit entries"
				     : "audit checkpoints";
}

static enum sl_err verify(struct store *a, struct store *b, struct sl_diag *d)
{
	for (int t = 0; t < DG__COUNT; t++) {
		unsigned char ha[32], hb[32];
		uint64_t na, nb;
		enum sl_err e = dg_table(a, t, ha, &na, d);
		if (!e)
			e = dg_table(b, t, hb, &nb, d);
		if (e)
			return e;
		if (na != nb || memcmp(ha, hb, 32) != 0) {
			sl_diag_set(d, SL_ECONFLICT, "verification failed: %s differ (%" PRIu64
				    " rows in the source, %" PRIu64 " in the copy)", dg_name(t), na, nb);
			sl_diag_hint(d, "the copy is not usable; drop the database and copy again");
			return SL_ECONFLICT;
		}
	}
	return SL_OK;
}

/* ---- the copy ---- */

static enum sl_err check_empty(struct store *to, struct sl_diag *d)
{
	for (int t = 0; t < DG__COUNT; t++) {
		unsigned char h[32];
		uint64_t n;
		enum sl_err e = dg_table(to, t, h, &n, d);
		if (e)
			return e;
		if (n) {
			sl_diag_set(d, SL_EEXIST, "the target database is not empty (%s: %" PRIu64 " rows)",
				    dg_name(t), n);
			sl_diag_hint(d, "copy into a new, empty database");
			return SL_EEXIST;
		}
	}
	return SL_OK;
}

static enum sl_err copy_all(struct store *from, struct store *to, int64_t now_ns,
			    struct store_copy_stats *st, struct sl_diag *d)
{
	struct copy_row c = {.to = to, .now_ns = now_ns, .d = d};
	enum sl_err e = store_begin(to, d);
	for (int k = 0; !e && k < STORE_KIND__COUNT; k++) {
		c.kind = (enum store_kind)k;
		e = store_scan(from, c.kind, copy_row, &c, d);
	}
	st->rows = c.n;
	c.n = 0;
	c.meta = true;
	if (!e)
		e = store_meta_scan(from, copy_row, &c, d);
	st->meta = c.n;
	c.n = 0;
	if (!e)
		e = store_audit_scan(from, NULL, copy_audit_row, &c, d);
	st->audit_entries = c.n;
	c.n = 0;
	if (!e)
		e = copy_subtrees(from, to, st->audit_entries, &st->subtrees, d);
	if (!e)
		e = store_audit_checkpoint_scan(from, copy_note, &c, d);
	st->checkpoints = c.n;
	if (!e)
		return store_commit(to, d);
	if (!store_failed(to)) {
		struct sl_diag ignore;
		(void)!store_rollback(to, &ignore);
	}
	return e;
}

enum sl_err ctl_store_copy(const char *from_dir, const char *to_url, int64_t now_ns,
			   struct store_copy_stats *st, struct sl_diag *d)
{
	memset(st, 0, sizeof(*st));
	char path[4096];
	struct stat sb;
	snprintf(path, sizeof(path), "%s/%s", from_dir, STORE_DB_FILE);
	if (stat(path, &sb) != 0) {
		sl_diag_hint(d, "give the data directory of an installation (suanlid init --data DIR)");
		return sl_diag_set(d, SL_ENOTFOUND, "%.200s holds no suanli store", from_dir);
	}
	if (!store_is_url(to_url))
		return sl_diag_set(d, SL_EINVAL, "--to takes a postgres://... URL");
	if (sodium_init() < 0)
		return sl_diag_set(d, SL_EIO, "libsodium failed to initialise");
	struct store *from = NULL, *to = NULL;
	enum sl_err e = store_open(from_dir, &from, d);
	if (!e)
		e = store_open(to_url, &to, d);
	bool won = false;
	struct store_leader l;
	if (!e)
		e = store_lead_try(to, "store-copy", "", COPY_LEASE_MS, &won, &l, d);
	if (!e && !won) {
		sl_diag_set(d, SL_ECONFLICT, "controller %s (epoch %" PRIu64 ") leads the target",
			    l.holder, l.epoch);
		sl_diag_hint(d, "stop every controller on the target first");
		e = SL_ECONFLICT;
	}
	if (!e)
		e = check_empty(to, d);
	if (!e)
		e = copy_all(from, to, now_ns, st, d);
	if (!e)
		e = verify(from, to, d);
	if (won && !store_failed(to)) {
		struct sl_diag ignore;
		(void)!store_lead_release(to, &ignore);
	}
	store_close(to);
	store_close(from);
	return e;
}

/* audit_query.c - a tenant's entries, read through its chain.
 *
 * The tenant and action columns of audit_entries are an index, not the log:
 * whoever can write the database file can change them without touching the
 * hashed bytes, and a listing that trusted them would silently drop (or show
 * a stranger) an entry. So a tenant's listing starts from the tenant's head
 * (kept in memory, from the canonical entries) and follows each entry's link
 * to the previous one, reading by seq (the primary key). The index only
 * proposes candidates, which saves point reads when it is honest; where it
 * is not, the walk reads the entry it needs and counts a repair. Entries
 * written before the chain (format 1) have no link: for them the walk falls
 * back to the candidates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "audit_log_int.h"
#include "ctl_int.h"
#include "log.h"

struct rows {
	struct audit_row_copy *v;
	size_t n, cap;
	bool failed;
};

static bool rows_push(struct rows *r, const struct store_audit_row *s)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct audit_row_copy *v = realloc(r->v, cap * sizeof(*v));
		if (!v)
			return false;
		r->v = v;
		r->cap = cap;
	}
	struct audit_row_copy *c = &r->v[r->n];
	memset(c, 0, sizeof(*c));
	c->seq = s->seq;
	c->time_ns = s->time_ns;
	snprintf(c->tenant, sizeof(c->tenant), "%s", s->tenant ? s->tenant : "");
	snprintf(c->action, sizeof(c->action), "%s", s->action ? s->action : "");
	c->len = s->len;
	c->canonical = malloc(s->len ? s->len : 1);
	if (!c->canonical)
		return false;
	if (s->len)
		memcpy(c->canonical, s->canonical, s->len);
	c->leaf_len = s->leaf_len < MERKLE_HASH_SIZE ? s->leaf_len : MERKLE_HASH_SIZE;
	if (c->leaf_len)
		memcpy(c->leaf, s->leaf_hash, c->leaf_len);
	r->n++;
	return true;
}

static enum sl_err rows_cb(void *arg, const struct store_audit_row *s)
{
	return rows_push(arg, s) ? SL_OK : SL_ENOMEM;
}

void audit_rows_free(struct audit_row_copy *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(rows[i].canonical);
	free(rows);
}

struct store_audit_row audit_row_view(const struct audit_row_copy *r)
{
	return (struct store_audit_row){r->seq, r->time_ns, r->tenant, r->action, r->canonical,
					r->len, r->leaf, r->leaf_len};
}

/* The row of seq, read by its key: a copy appended to *one (n = 1) or none. */
static enum sl_err read_seq(struct ctl *c, uint64_t seq, struct rows *one, struct sl_diag *d)
{
	struct store_audit_filter f = {seq - 1, NULL, NULL, 1};
	enum sl_err e = store_audit_scan(c->store, &f, rows_cb, one, d);
	if (!e && one->n && one->v[one->n - 1].seq != seq) {
		free(one->v[--one->n].canonical);
	}
	return e;
}

/* Largest candidate index with seq < below, or SIZE_MAX. */
static size_t cand_below(const struct rows *cand, uint64_t below)
{
	size_t lo = 0, hi = cand->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cand->v[mid].seq < below)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : SIZE_MAX;
}

enum sl_err audit_tenant_rows(struct ctl *c, const char *tenant, uint64_t since, uint64_t limit,
			      struct audit_row_copy **out, size_t *n, size_t *repaired,
			      struct sl_diag *d)
{
	struct ctl_audit *a = c->audit;
	struct rows cand = {0}, walk = {0};
	struct store_audit_filter f = {since, tenant, NULL, limit};
	*out = NULL;
	*n = *repaired = 0;
	enum sl_err e = store_audit_scan(c->store, &f, rows_cb, &cand, d);
	uint64_t upper = 0;
	if (!e) {
		const struct audit_head *h = audit_heads_get(&a->heads, tenant);
		if (limit && cand.n == limit)
			upper = cand.v[cand.n - 1].seq;
		else
			upper = h ? h->seq : (cand.n ? cand.v[cand.n - 1].seq : 0);
	}
	/* Walk down from upper, newest first. */
	uint64_t cur = upper;
	while (!e && cur > since) {
		struct rows one = {0};
		const struct audit_row_copy *row = NULL;
		size_t ci = cand_below(&cand, cur + 1);
		if (ci != SIZE_MAX && cand.v[ci].seq == cur) {
			row = &cand.v[ci];
		} else if (!(e = read_seq(c, cur, &one, d)) && one.n) {
			row = &one.v[0];
			(*repaired)++;
		}
		struct audit_entry en;
		bool mine = row && audit_entry_decode(row->canonical, row->len, &en, NULL) == SL_OK &&
			    !strcmp(en.tenant, tenant) && en.seq == cur;
		uint64_t next;
		if (!e && mine) {
			if (!rows_push(&walk, &(struct store_audit_row){row->seq, row->time_ns, row->tenant,
									row->action, row->canonical,
									row->len, row->leaf,
									row->leaf_len}))
				e = sl_diag_set(d, SL_ENOMEM, "out of memory");
			if (en.version == AUDIT_FORMAT_V1 || en.prev_seq >= cur) {
				size_t b = cand_below(&cand, cur);
				next = b == SIZE_MAX ? 0 : cand.v[b].seq;
			} else {
				next = en.prev_seq;
			}
		} else {
			/* Gone or not the tenant's: the chain cannot go on; the
			 * candidates below are what is left. */
			if (row && !mine)
				(*repaired)++;
			size_t b = cand_below(&cand, cur);
			next = b == SIZE_MAX ? 0 : cand.v[b].seq;
		}
		audit_rows_free(one.v, one.n);
		cur = next;
	}
	audit_rows_free(cand.v, cand.n);
	if (e) {
		audit_rows_free(walk.v, walk.n);
		return e;
	}
	/* Oldest first, at most limit. */
	for (size_t i = 0; i < walk.n / 2; i++) {
		struct audit_row_copy t = walk.v[i];
		walk.v[i] = walk.v[walk.n - 1 - i];
		walk.v[walk.n - 1 - i] = t;
	}
	while (limit && walk.n > limit)
		free(walk.v[--walk.n].canonical);
	if (*repaired)
		sl_log_warn("the audit index disagrees with the entries; run 'suanli audit verify'",
			    "tenant=%s repaired=%zu", tenant, *repaired);
	*out = walk.v;
	*n = walk.n;
	return SL_OK;
}

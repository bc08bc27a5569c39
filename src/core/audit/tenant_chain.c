/* tenant_chain.c - tenant heads, the heads tree and a tenant's own check.
 *
 * The heads live in a growable array indexed by a strmap: tenants are never
 * removed from the log, so the map only grows. The tree is rebuilt at each
 * checkpoint (O(T log T) for T tenants, every thousand entries at most),
 * which keeps the state a plain list that a restart can reload from the
 * store with one query. */
#include "tenant_chain.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_verify.h"
#include "strmap.h"

#define LABEL_MAX 256 /* the store's bound on an indexed label */

const char *audit_index_label(const char *s)
{
	size_t n = strnlen(s, LABEL_MAX + 1);
	if (n == 0 || n > LABEL_MAX)
		return "";
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return "";
	return s;
}

bool audit_tenant_chained(const char *tenant)
{
	return audit_index_label(tenant)[0] != 0;
}

enum sl_err audit_heads_init(struct audit_heads *h)
{
	memset(h, 0, sizeof(*h));
	return strmap_new(&h->map);
}

void audit_heads_free(struct audit_heads *h)
{
	strmap_free(h->map);
	free(h->v);
	memset(h, 0, sizeof(*h));
}

const struct audit_head *audit_heads_get(const struct audit_heads *h, const char *tenant)
{
	if (!h->map)
		return NULL;
	int i = strmap_get(h->map, tenant, -1);
	return i < 0 ? NULL : &h->v[i];
}

enum sl_err audit_heads_set(struct audit_heads *h, const char *tenant, uint64_t seq,
			    const uint8_t hash[AUDIT_HASH_SIZE])
{
	if (!audit_tenant_chained(tenant) || strlen(tenant) > AUDIT_TENANT_MAX)
		return SL_EINVAL;
	int i = strmap_get(h->map, tenant, -1);
	if (i < 0) {
		if (h->n == h->cap) {
			size_t cap = h->cap ? h->cap * 2 : 16;
			struct audit_head *v = realloc(h->v, cap * sizeof(*v));
			if (!v)
				return SL_ENOMEM;
			h->v = v;
			h->cap = cap;
		}
		if (h->n >= STRMAP_MAX_ENTRIES)
			return SL_ELIMIT;
		enum sl_err e = strmap_add(h->map, tenant, (int)h->n);
		if (e)
			return e;
		i = (int)h->n++;
		snprintf(h->v[i].tenant, sizeof(h->v[i].tenant), "%s", tenant);
	}
	h->v[i].seq = seq;
	memcpy(h->v[i].hash, hash, AUDIT_HASH_SIZE);
	return SL_OK;
}

enum sl_err audit_heads_copy(struct audit_heads *dst, const struct audit_heads *src)
{
	struct audit_heads n;
	enum sl_err e = audit_heads_init(&n);
	for (size_t i = 0; !e && i < src->n; i++)
		e = audit_heads_set(&n, src->v[i].tenant, src->v[i].seq, src->v[i].hash);
	if (e) {
		audit_heads_free(&n);
		return e;
	}
	if (dst->map)
		audit_heads_free(dst);
	*dst = n;
	return SL_OK;
}

void audit_heads_link(const struct audit_heads *h, struct audit_entry *e)
{
	const struct audit_head *x = audit_tenant_chained(e->tenant) ? audit_heads_get(h, e->tenant)
								       : NULL;
	e->prev_seq = x ? x->seq : 0;
	if (x)
		memcpy(e->prev_hash, x->hash, AUDIT_HASH_SIZE);
	else
		memset(e->prev_hash, 0, AUDIT_HASH_SIZE);
}

enum sl_err audit_heads_advance(struct audit_heads *h, const struct audit_entry *e,
				const uint8_t leaf[AUDIT_HASH_SIZE])
{
	if (!audit_tenant_chained(e->tenant))
		return SL_OK;
	return audit_heads_set(h, e->tenant, e->seq, leaf);
}

void audit_head_leaf(const struct audit_head *x, uint8_t out[AUDIT_HASH_SIZE])
{
	uint8_t buf[2 + AUDIT_TENANT_MAX + 8 + AUDIT_HASH_SIZE];
	size_t n = strnlen(x->tenant, AUDIT_TENANT_MAX), p = 0;
	buf[p++] = (uint8_t)(n >> 8);
	buf[p++] = (uint8_t)n;
	memcpy(buf + p, x->tenant, n);
	p += n;
	for (int i = 7; i >= 0; i--)
		buf[p++] = (uint8_t)(x->seq >> (8 * i));
	memcpy(buf + p, x->hash, AUDIT_HASH_SIZE);
	p += AUDIT_HASH_SIZE;
	merkle_leaf_hash(buf, p, out);
}

static int head_cmp(const void *a, const void *b)
{
	const struct audit_head *const *x = a, *const *y = b;
	return strcmp((*x)->tenant, (*y)->tenant);
}

/* The leaves in tree order; *out to free(). */
static enum sl_err heads_leaves(const struct audit_heads *h, uint8_t (**out)[AUDIT_HASH_SIZE],
				const struct audit_head ***order)
{
	const struct audit_head **o = calloc(h->n ? h->n : 1, sizeof(*o));
	uint8_t (*l)[AUDIT_HASH_SIZE] = calloc(h->n ? h->n : 1, sizeof(*l));
	if (!o || !l) {
		free(o);
		free(l);
		return SL_ENOMEM;
	}
	for (size_t i = 0; i < h->n; i++)
		o[i] = &h->v[i];
	qsort(o, h->n, sizeof(*o), head_cmp);
	for (size_t i = 0; i < h->n; i++)
		audit_head_leaf(o[i], l[i]);
	*out = l;
	*order = o;
	return SL_OK;
}

enum sl_err audit_heads_root(const struct audit_heads *h, uint8_t out[AUDIT_HASH_SIZE],
			     struct sl_diag *d)
{
	uint8_t (*l)[AUDIT_HASH_SIZE];
	const struct audit_head **o;
	if (heads_leaves(h, &l, &o))
		return sl_diag_set(d, SL_ENOMEM, "no memory for %zu tenant heads", h->n);
	struct merkle_array a = {(const uint8_t (*)[MERKLE_HASH_SIZE])l, h->n};
	struct merkle_source src = merkle_array_source(&a);
	enum sl_err e = merkle_range_root(&src, 0, h->n, out);
	free(l);
	free(o);
	return e ? sl_diag_set(d, e, "cannot compute the heads root") : SL_OK;
}

enum sl_err audit_heads_prove(const struct audit_heads *h, const char *tenant,
			      struct audit_head *head, uint64_t *index, uint64_t *count,
			      struct merkle_proof *proof, struct sl_diag *d)
{
	const struct audit_head *x = audit_heads_get(h, tenant);
	if (!x)
		return sl_diag_set(d, SL_ENOTFOUND, "tenant '%s' has no audit entry yet", tenant);
	uint8_t (*l)[AUDIT_HASH_SIZE];
	const struct audit_head **o;
	if (heads_leaves(h, &l, &o))
		return sl_diag_set(d, SL_ENOMEM, "no memory for %zu tenant heads", h->n);
	size_t at = 0;
	while (at < h->n && o[at] != x)
		at++;
	struct merkle_array a = {(const uint8_t (*)[MERKLE_HASH_SIZE])l, h->n};
	struct merkle_source src = merkle_array_source(&a);
	enum sl_err e = merkle_inclusion_proof(&src, at, h->n, proof, d);
	free(l);
	free(o);
	if (e)
		return e;
	*head = *x;
	*index = at;
	*count = h->n;
	return SL_OK;
}

/* ---- the tenant's check ---- */

static void tc_decide(struct audit_tenant_check *t, enum audit_fault f, uint64_t seq,
		      const char *fmt, ...) SL_PRINTF(4, 5);

static void tc_decide(struct audit_tenant_check *t, enum audit_fault f, uint64_t seq,
		      const char *fmt, ...)
{
	t->report.fault = (int)f;
	t->report.seq = seq;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->report.detail, sizeof(t->report.detail), fmt, ap);
	va_end(ap);
}

bool audit_tenant_decided(const struct audit_tenant_check *t)
{
	return t->report.fault != AUDIT_FAULT_NONE;
}

void audit_tenant_check_init(struct audit_tenant_check *t, const char *tenant,
			     uint64_t first_seq, uint64_t cp_size)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->tenant, sizeof(t->tenant), "%s", tenant);
	t->first_seq = first_seq;
	t->cp_size = cp_size;
}

void audit_tenant_add(struct audit_tenant_check *t, uint64_t seq, const uint8_t *bytes,
		      size_t len)
{
	struct audit_entry e;
	struct sl_diag d;
	if (audit_tenant_decided(t))
		return;
	t->report.entries++;
	sl_diag_clear(&d);
	if (audit_entry_decode(bytes, len, &e, &d)) {
		tc_decide(t, AUDIT_FAULT_ENTRY_ALTERED, seq, "entry %llu does not decode: %s",
			  (unsigned long long)seq, d.msg);
		return;
	}
	if (strcmp(e.tenant, t->tenant)) {
		tc_decide(t, AUDIT_FAULT_ENTRY_ALTERED, e.seq,
			  "entry %llu is tenant '%s''s, not '%s''s", (unsigned long long)e.seq,
			  e.tenant, t->tenant);
		return;
	}
	if (e.seq <= t->last_seq) {
		tc_decide(t, AUDIT_FAULT_REORDERED, e.seq, "entry %llu comes after entry %llu",
			  (unsigned long long)e.seq, (unsigned long long)t->last_seq);
		return;
	}
	if (e.version == AUDIT_FORMAT_V1) {
		t->report.legacy++;
	} else if (e.prev_seq > t->last_seq) {
		tc_decide(t, AUDIT_FAULT_ENTRY_MISSING, e.prev_seq,
			  "entry %llu of tenant '%s' is missing: entry %llu links to it, the entries before hold %llu",
			  (unsigned long long)e.prev_seq, t->tenant, (unsigned long long)e.seq,
			  (unsigned long long)t->last_seq);
		return;
	} else if (e.prev_seq < t->last_seq) {
		tc_decide(t, AUDIT_FAULT_ENTRY_ALTERED, t->last_seq,
			  "entry %llu is not in tenant '%s''s chain: entry %llu links to %llu",
			  (unsigned long long)t->last_seq, t->tenant, (unsigned long long)e.seq,
			  (unsigned long long)e.prev_seq);
		return;
	} else if (t->last_seq && memcmp(e.prev_hash, t->last_hash, AUDIT_HASH_SIZE)) {
		tc_decide(t, AUDIT_FAULT_ENTRY_ALTERED, t->last_seq,
			  "entry %llu does not match the hash entry %llu links to",
			  (unsigned long long)t->last_seq, (unsigned long long)e.seq);
		return;
	} else {
		t->report.linked++;
	}
	t->last_seq = e.seq;
	audit_leaf_hash(bytes, len, t->last_hash);
	if (t->cp_size && e.seq >= t->first_seq && e.seq - t->first_seq < t->cp_size) {
		t->covered_seq = e.seq;
		memcpy(t->covered_hash, t->last_hash, AUDIT_HASH_SIZE);
	}
}

static void tc_head(struct audit_tenant_check *t, const struct checkpoint *cp,
		    const struct audit_head *head, uint64_t index, uint64_t count,
		    const struct merkle_proof *proof)
{
	struct sl_diag d;
	unsigned long long size = (unsigned long long)cp->size;
	if (!head) {
		if (t->covered_seq)
			tc_decide(t, AUDIT_FAULT_CHECKPOINT_INCONSISTENT, t->first_seq,
				  "the export has no proof of tenant '%s''s newest entry in the checkpoint of %llu entries",
				  t->tenant, size);
		return;
	}
	t->report.head_seq = head->seq;
	uint8_t leaf[AUDIT_HASH_SIZE];
	audit_head_leaf(head, leaf);
	sl_diag_clear(&d);
	if (strcmp(head->tenant, t->tenant) ||
	    merkle_inclusion_verify(leaf, index, count, proof, cp->heads, &d) ||
	    head->seq < t->first_seq || head->seq - t->first_seq >= cp->size) {
		tc_decide(t, AUDIT_FAULT_CHECKPOINT_INCONSISTENT, t->first_seq,
			  "the proof of tenant '%s''s newest entry does not hold in the checkpoint of %llu entries%s%s",
			  t->tenant, size, d.msg[0] ? ": " : "", d.msg);
		return;
	}
	if (head->seq > t->covered_seq)
		tc_decide(t, AUDIT_FAULT_ENTRY_MISSING, head->seq,
			  "entry %llu of tenant '%s' is missing: the checkpoint of %llu entries names it as the tenant's newest, the entries end at %llu",
			  (unsigned long long)head->seq, t->tenant, size,
			  (unsigned long long)t->covered_seq);
	else if (head->seq < t->covered_seq)
		tc_decide(t, AUDIT_FAULT_ENTRY_ALTERED, t->covered_seq,
			  "entry %llu is not tenant '%s''s: the checkpoint names %llu as its newest",
			  (unsigned long long)t->covered_seq, t->tenant,
			  (unsigned long long)head->seq);
	else if (memcmp(head->hash, t->covered_hash, AUDIT_HASH_SIZE))
		tc_decide(t, AUDIT_FAULT_ENTRY_ALTERED, head->seq,
			  "entry %llu differs from the one the checkpoint names",
			  (unsigned long long)head->seq);
}

enum sl_err audit_tenant_finish(struct audit_tenant_check *t, const struct checkpoint *cp,
				const struct audit_head *head, uint64_t index, uint64_t count,
				const struct merkle_proof *proof, struct audit_tenant_report *out)
{
	if (!audit_tenant_decided(t) && cp && cp->has_heads)
		tc_head(t, cp, head, index, count, proof);
	if (!audit_tenant_decided(t))
		snprintf(t->report.detail, sizeof(t->report.detail),
			 "%llu entries of tenant '%s', %llu linked, %llu from before the chain; newest covered by the checkpoint: %llu",
			 (unsigned long long)t->report.entries, t->tenant,
			 (unsigned long long)t->report.linked, (unsigned long long)t->report.legacy,
			 (unsigned long long)t->covered_seq);
	*out = t->report;
	return audit_tenant_decided(t) ? SL_ECONFLICT : SL_OK;
}

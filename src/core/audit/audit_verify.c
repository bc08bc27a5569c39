/* audit_verify.c - first-fault verification of an audit log.
 *
 * One pass, O(log n) state besides the checkpoints: records stream in, the
 * frontier grows, and each checkpoint is checked when the tree reaches its
 * size. The one question a single pass cannot answer at once is whether a
 * seq found out of place is missing or merely moved; the verifier then keeps
 * reading, looking only for that seq, and settles it when it turns up or when
 * the log ends. */
#include "audit_verify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *audit_fault_name(enum audit_fault f)
{
	switch (f) {
	case AUDIT_FAULT_NONE:
		return "ok";
	case AUDIT_FAULT_ENTRY_ALTERED:
		return "entry altered";
	case AUDIT_FAULT_ENTRY_MISSING:
		return "entry missing";
	case AUDIT_FAULT_REORDERED:
		return "reordered";
	case AUDIT_FAULT_CHECKPOINT_SIGNATURE:
		return "checkpoint signature invalid";
	case AUDIT_FAULT_CHECKPOINT_INCONSISTENT:
		return "checkpoint inconsistent";
	case AUDIT_FAULT_INDEX_ALTERED:
		return "index altered";
	case AUDIT_FAULT_SUBTREE_ALTERED:
		return "subtree altered";
	}
	return "unknown";
}

static int audit_st_cmp(const void *a, const void *b)
{
	const struct audit_verify_st *x = a, *y = b;
	if (x->level != y->level)
		return x->level < y->level ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int audit_cp_cmp(const void *a, const void *b)
{
	const struct audit_verify_cp *x = a, *y = b;
	if (x->cp.size != y->cp.size)
		return x->cp.size < y->cp.size ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static void audit_decide(struct audit_verifier *v, enum audit_fault f,
			 uint64_t seq, size_t cp, const char *fmt, ...)
	SL_PRINTF(5, 6);

static void audit_decide(struct audit_verifier *v, enum audit_fault f,
			 uint64_t seq, size_t cp, const char *fmt, ...)
{
	struct audit_verify_report *r = &v->report;
	r->fault = f;
	r->seq = seq;
	r->checkpoint = cp;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
	va_end(ap);
}

bool audit_verifier_decided(const struct audit_verifier *v)
{
	return v->report.fault != AUDIT_FAULT_NONE;
}

/* Signature, key and origin of one checkpoint; false after deciding. */
static bool audit_check_signature(struct audit_verifier *v,
				  const struct audit_verify_cp *c)
{
	uint64_t seq = v->first_seq + v->good_size;
	if (v->origin[0] && strcmp(v->origin, c->cp.origin) != 0) {
		audit_decide(v, AUDIT_FAULT_CHECKPOINT_SIGNATURE, seq, c->index,
			     "checkpoint %zu (size %llu) is for log '%s', not '%s'",
			     c->index, (unsigned long long)c->cp.size,
			     c->cp.origin, v->origin);
		return false;
	}
	struct sl_diag d;
	sl_diag_clear(&d);
	if (checkpoint_verify(&c->cp, v->pubkey, &d) != SL_OK) {
		audit_decide(v, AUDIT_FAULT_CHECKPOINT_SIGNATURE, seq, c->index,
			     "checkpoint %zu (size %llu): %s", c->index,
			     (unsigned long long)c->cp.size, d.msg);
		return false;
	}
	return true;
}

/* Checks every checkpoint whose size the tree has just reached. */
static void audit_check_due(struct audit_verifier *v)
{
	while (v->next_cp < v->n_cps && v->cps[v->next_cp].cp.size == v->pos) {
		const struct audit_verify_cp *c = &v->cps[v->next_cp];
		if (!audit_check_signature(v, c))
			return;
		uint8_t root[MERKLE_HASH_SIZE];
		merkle_frontier_root(&v->tree, root);
		if (memcmp(root, c->cp.root, MERKLE_HASH_SIZE) != 0) {
			uint64_t from = v->first_seq + v->good_size;
			audit_decide(v, AUDIT_FAULT_CHECKPOINT_INCONSISTENT, from,
				     c->index,
				     "checkpoint %zu signs a root over %llu entries that differs from the stored entries; an entry from seq %llu to %llu was changed",
				     c->index, (unsigned long long)c->cp.size,
				     (unsigned long long)from,
				     (unsigned long long)(v->first_seq + c->cp.size - 1));
			return;
		}
		if (c->cp.has_heads && !v->blind) {
			struct sl_diag d;
			sl_diag_clear(&d);
			if (audit_heads_root(&v->heads, root, &d) == SL_OK &&
			    memcmp(root, c->cp.heads, MERKLE_HASH_SIZE) != 0) {
				uint64_t from = v->first_seq + v->good_size;
				audit_decide(v, AUDIT_FAULT_CHECKPOINT_INCONSISTENT, from, c->index,
					     "checkpoint %zu signs tenant heads over %llu entries that differ from the stored entries' newest per tenant; an entry from seq %llu to %llu was changed",
					     c->index, (unsigned long long)c->cp.size,
					     (unsigned long long)from,
					     (unsigned long long)(v->first_seq + c->cp.size - 1));
				return;
			}
		}
		v->good_size = v->pos;
		v->verified++;
		v->next_cp++;
	}
}

enum sl_err audit_verifier_init(struct audit_verifier *v,
				const struct audit_verify_config *cfg,
				struct sl_diag *d)
{
	memset(v, 0, sizeof(*v));
	v->report.checkpoint = SIZE_MAX;
	if (!cfg->pubkey)
		return sl_diag_set(d, SL_EINVAL, "audit verification needs the log's public key");
	if (cfg->origin) {
		size_t n = strnlen(cfg->origin, CHECKPOINT_ORIGIN_MAX + 1);
		if (n == 0 || n > CHECKPOINT_ORIGIN_MAX)
			return sl_diag_set(d, SL_EINVAL, "log origin must be 1..%d bytes",
					   CHECKPOINT_ORIGIN_MAX);
		memcpy(v->origin, cfg->origin, n + 1);
	}
	memcpy(v->pubkey, cfg->pubkey, CHECKPOINT_PUBKEY_SIZE);
	v->first_seq = cfg->first_seq;
	merkle_frontier_init(&v->tree);
	if (cfg->n_checkpoints) {
		v->cps = calloc(cfg->n_checkpoints, sizeof(*v->cps));
		if (!v->cps)
			return sl_diag_set(d, SL_ENOMEM, "no memory for %zu checkpoints",
					   cfg->n_checkpoints);
		for (size_t i = 0; i < cfg->n_checkpoints; i++) {
			v->cps[i].cp = cfg->checkpoints[i];
			v->cps[i].index = i;
		}
		v->n_cps = cfg->n_checkpoints;
		qsort(v->cps, v->n_cps, sizeof(*v->cps), audit_cp_cmp);
	}
	if (audit_heads_init(&v->heads))
		return sl_diag_set(d, SL_ENOMEM, "no memory for the tenant heads");
	v->st_step = cfg->subtree_step;
	if (cfg->n_subtrees) {
		v->sts = calloc(cfg->n_subtrees, sizeof(*v->sts));
		if (!v->sts)
			return sl_diag_set(d, SL_ENOMEM, "no memory for %zu subtrees",
					   cfg->n_subtrees);
		for (size_t i = 0; i < cfg->n_subtrees; i++) {
			const struct audit_subtree *t = &cfg->subtrees[i];
			v->sts[i].level = t->level;
			v->sts[i].index = t->index;
			v->sts[i].bad_len = t->hash_len != MERKLE_HASH_SIZE || !t->hash;
			if (!v->sts[i].bad_len)
				memcpy(v->sts[i].hash, t->hash, MERKLE_HASH_SIZE);
		}
		v->n_sts = cfg->n_subtrees;
		qsort(v->sts, v->n_sts, sizeof(*v->sts), audit_st_cmp);
	}
	audit_check_due(v); /* checkpoints of the empty tree */
	return SL_OK;
}

void audit_verifier_release(struct audit_verifier *v)
{
	free(v->cps);
	v->cps = NULL;
	v->n_cps = 0;
	free(v->sts);
	v->sts = NULL;
	v->n_sts = 0;
	if (v->heads.map)
		audit_heads_free(&v->heads);
}

/* The first seq a subtree covers, saturated. */
static uint64_t audit_st_seq(const struct audit_verifier *v, unsigned level, uint64_t index)
{
	if (level >= 64 || index > (UINT64_MAX - v->first_seq) >> level)
		return UINT64_MAX;
	return v->first_seq + (index << level);
}

/* Each subtree an append completes: the stored row, if any, must match. */
static enum sl_err audit_st_sink(void *ctx, unsigned level, uint64_t index,
				 const uint8_t hash[MERKLE_HASH_SIZE])
{
	struct audit_verifier *v = ctx;
	if (!v->n_sts || !v->st_step || level % v->st_step)
		return SL_OK;
	struct audit_verify_st key = {level, index, {0}, false, false};
	struct audit_verify_st *t = bsearch(&key, v->sts, v->n_sts, sizeof(*v->sts), audit_st_cmp);
	if (!t)
		return SL_OK; /* not cached: proofs compute it from below */
	t->seen = true;
	if (t->bad_len || memcmp(t->hash, hash, MERKLE_HASH_SIZE))
		audit_decide(v, AUDIT_FAULT_SUBTREE_ALTERED, audit_st_seq(v, level, index), SIZE_MAX,
			     "cached subtree (level %u, index %llu) over entries %llu.. differs from the hash of those entries",
			     level, (unsigned long long)index,
			     (unsigned long long)audit_st_seq(v, level, index));
	return SL_OK;
}

/* Stored subtree rows no completed subtree accounted for. */
static void audit_st_settle(struct audit_verifier *v)
{
	uint64_t best = UINT64_MAX;
	const struct audit_verify_st *bt = NULL;
	for (size_t i = 0; i < v->n_sts; i++) {
		const struct audit_verify_st *t = &v->sts[i];
		if (t->seen)
			continue;
		/* A row for a complete subtree at a kept level was compared when
		 * it completed; anything else stands for nothing in this log. */
		uint64_t s = audit_st_seq(v, t->level, t->index);
		if (s < best || !bt) {
			best = s;
			bt = t;
		}
	}
	if (bt)
		audit_decide(v, AUDIT_FAULT_SUBTREE_ALTERED, best, SIZE_MAX,
			     "cached subtree (level %u, index %llu) stands for no subtree of the %llu entries",
			     bt->level, (unsigned long long)bt->index,
			     (unsigned long long)v->tree.size);
}

/* The columns the store keeps beside the bytes, and the tenant link. */
static bool audit_check_row(struct audit_verifier *v, const struct audit_record *r,
			    const struct audit_entry *e, uint64_t want)
{
	if (r->has_index) {
		const char *t = r->tenant ? r->tenant : "", *a = r->action ? r->action : "";
		const char *field = NULL, *stored = NULL, *real = NULL;
		if (r->time_ns != e->time_ns)
			field = "time";
		else if (strcmp(t, audit_index_label(e->tenant)))
			field = "tenant", stored = t, real = audit_index_label(e->tenant);
		else if (strcmp(a, audit_index_label(e->action)))
			field = "action", stored = a, real = audit_index_label(e->action);
		if (field) {
			if (stored)
				audit_decide(v, AUDIT_FAULT_INDEX_ALTERED, want, SIZE_MAX,
					     "entry %llu: the stored %s column says '%.64s', the entry '%.64s'",
					     (unsigned long long)want, field, stored, real);
			else
				audit_decide(v, AUDIT_FAULT_INDEX_ALTERED, want, SIZE_MAX,
					     "entry %llu: the stored time column says %lld, the entry %lld",
					     (unsigned long long)want, (long long)r->time_ns,
					     (long long)e->time_ns);
			return false;
		}
	}
	if (e->version == AUDIT_FORMAT_V1)
		return true;
	const struct audit_head *h = audit_tenant_chained(e->tenant)
					     ? audit_heads_get(&v->heads, e->tenant) : NULL;
	uint64_t ps = h ? h->seq : 0;
	if (e->prev_seq != ps || (h && memcmp(e->prev_hash, h->hash, MERKLE_HASH_SIZE))) {
		/* Either this entry or the one it should link to was rewritten
		 * (with its stored hash). A hash that differs names the earlier
		 * of the two (the first that may be bad); a seq, this one. */
		uint64_t at = e->prev_seq == ps ? ps : want;
		audit_decide(v, AUDIT_FAULT_ENTRY_ALTERED, at, SIZE_MAX,
			     "entry %llu links to entry %llu as tenant '%.64s''s previous; the log's is %llu%s",
			     (unsigned long long)want, (unsigned long long)e->prev_seq, e->tenant,
			     (unsigned long long)ps,
			     e->prev_seq == ps ? ", whose hash differs from the link's" : "");
		return false;
	}
	return true;
}

/* The seq a record stands for: its bytes' own when it has bytes. */
static bool audit_record_seq(const struct audit_record *r, uint64_t *seq,
			     struct audit_entry *scratch, struct sl_diag *d)
{
	if (!r->bytes) {
		*seq = r->seq;
		return true;
	}
	if (audit_entry_decode(r->bytes, r->len, scratch, d) != SL_OK)
		return false;
	*seq = scratch->seq;
	return true;
}

/* Looking for the seq that was out of place. */
static void audit_add_pending(struct audit_verifier *v, const struct audit_record *r)
{
	struct audit_entry e;
	uint64_t seq;
	if (audit_record_seq(r, &seq, &e, NULL) && seq == v->pending_seq)
		audit_decide(v, AUDIT_FAULT_REORDERED, v->pending_seq, SIZE_MAX,
			     "seq %llu is out of order: seq %llu is stored in its place",
			     (unsigned long long)v->pending_seq,
			     (unsigned long long)v->pending_found);
}

enum sl_err audit_verifier_add(struct audit_verifier *v,
			       const struct audit_record *r, struct sl_diag *d)
{
	if (!r->bytes && !r->leaf_hash)
		return sl_diag_set(d, SL_EINVAL,
				   "audit record %llu has neither bytes nor a leaf hash",
				   (unsigned long long)r->seq);
	if (audit_verifier_decided(v))
		return SL_OK;
	v->report.entries++;
	if (v->pending) {
		audit_add_pending(v, r);
		return SL_OK;
	}
	uint64_t want = v->first_seq + v->pos;
	struct audit_entry e;
	struct sl_diag dd;
	uint64_t seq;
	sl_diag_clear(&dd);
	if (!audit_record_seq(r, &seq, &e, &dd)) {
		audit_decide(v, AUDIT_FAULT_ENTRY_ALTERED, want, SIZE_MAX,
			     "entry %llu does not decode: %s",
			     (unsigned long long)want, dd.msg);
		return SL_OK;
	}
	if (seq != want) {
		/* Missing, moved, or altered in its seq: the rest of the log
		 * tells which. */
		v->pending = true;
		v->pending_seq = want;
		v->pending_found = seq;
		v->pending_filed_right = r->seq == want;
		return SL_OK;
	}
	if (r->seq != want) {
		audit_decide(v, AUDIT_FAULT_ENTRY_ALTERED, want, SIZE_MAX,
			     "entry %llu is filed under seq %llu",
			     (unsigned long long)want, (unsigned long long)r->seq);
		return SL_OK;
	}
	uint8_t leaf[MERKLE_HASH_SIZE];
	if (r->bytes) {
		audit_leaf_hash(r->bytes, r->len, leaf);
		if (r->leaf_hash && memcmp(leaf, r->leaf_hash, MERKLE_HASH_SIZE) != 0) {
			audit_decide(v, AUDIT_FAULT_ENTRY_ALTERED, want, SIZE_MAX,
				     "entry %llu does not match its stored leaf hash",
				     (unsigned long long)want);
			return SL_OK;
		}
		if (!audit_check_row(v, r, &e, want))
			return SL_OK;
		if (audit_heads_advance(&v->heads, &e, leaf))
			return sl_diag_set(d, SL_ENOMEM, "no memory for the tenant heads");
	} else {
		memcpy(leaf, r->leaf_hash, MERKLE_HASH_SIZE);
		v->blind = true;
	}
	if (merkle_frontier_append_sink(&v->tree, leaf, audit_st_sink, v) != SL_OK)
		return sl_diag_set(d, SL_ELIMIT, "audit log exceeds 2^64 - 1 entries");
	if (audit_verifier_decided(v))
		return SL_OK;
	v->pos++;
	audit_check_due(v);
	return SL_OK;
}

/* Settles an out-of-place seq that never turned up. */
static void audit_settle_pending(struct audit_verifier *v)
{
	unsigned long long want = (unsigned long long)v->pending_seq;
	if (v->pending_filed_right)
		audit_decide(v, AUDIT_FAULT_ENTRY_ALTERED, v->pending_seq, SIZE_MAX,
			     "entry %llu names seq %llu in its own bytes", want,
			     (unsigned long long)v->pending_found);
	else
		audit_decide(v, AUDIT_FAULT_ENTRY_MISSING, v->pending_seq, SIZE_MAX,
			     "entry %llu is missing: the next stored entry is %llu",
			     want, (unsigned long long)v->pending_found);
}

/* Checkpoints beyond the end of the log vouch for entries that are gone. */
static void audit_settle_tail(struct audit_verifier *v)
{
	if (v->next_cp >= v->n_cps)
		return;
	const struct audit_verify_cp *c = &v->cps[v->next_cp];
	if (!audit_check_signature(v, c))
		return;
	audit_decide(v, AUDIT_FAULT_ENTRY_MISSING, v->first_seq + v->pos, c->index,
		     "entry %llu is missing: checkpoint %zu vouches for %llu entries, the log has %llu",
		     (unsigned long long)(v->first_seq + v->pos), c->index,
		     (unsigned long long)c->cp.size, (unsigned long long)v->pos);
}

enum sl_err audit_verifier_finish(struct audit_verifier *v,
				  struct audit_verify_report *out)
{
	if (!audit_verifier_decided(v)) {
		if (v->pending)
			audit_settle_pending(v);
		else
			audit_settle_tail(v);
	}
	if (!audit_verifier_decided(v))
		audit_st_settle(v);
	v->report.checkpoints_verified = v->verified;
	v->report.size = v->tree.size;
	merkle_frontier_root(&v->tree, v->report.root);
	if (!audit_verifier_decided(v))
		snprintf(v->report.detail, sizeof(v->report.detail),
			 "%llu entries and %zu checkpoints verified",
			 (unsigned long long)v->tree.size, v->verified);
	*out = v->report;
	return audit_verifier_decided(v) ? SL_ECONFLICT : SL_OK;
}

enum sl_err audit_verify_log(const struct audit_verify_config *cfg,
			     const struct audit_record *records, size_t n,
			     struct audit_verify_report *out, struct sl_diag *d)
{
	struct audit_verifier v;
	enum sl_err err = audit_verifier_init(&v, cfg, d);
	for (size_t i = 0; err == SL_OK && i < n && !audit_verifier_decided(&v); i++)
		err = audit_verifier_add(&v, &records[i], d);
	if (err == SL_OK)
		err = audit_verifier_finish(&v, out);
	audit_verifier_release(&v);
	return err;
}

enum sl_err audit_verify_entry(const uint8_t *bytes, size_t len,
			       uint64_t first_seq, const struct merkle_proof *proof,
			       const struct checkpoint *cp,
			       const uint8_t pubkey[CHECKPOINT_PUBKEY_SIZE],
			       const char *origin, struct audit_entry *out,
			       struct sl_diag *d)
{
	if (origin && strcmp(origin, cp->origin) != 0)
		return sl_diag_set(d, SL_ECONFLICT,
				   "checkpoint is for log '%s', not '%s'",
				   cp->origin, origin);
	enum sl_err err = checkpoint_verify(cp, pubkey, d);
	if (err != SL_OK)
		return err;
	err = audit_entry_decode(bytes, len, out, d);
	if (err != SL_OK)
		return err;
	if (out->seq < first_seq || out->seq - first_seq >= cp->size)
		return sl_diag_set(d, SL_ECONFLICT,
				   "entry %llu is not covered by the checkpoint of %llu entries",
				   (unsigned long long)out->seq,
				   (unsigned long long)cp->size);
	uint8_t leaf[MERKLE_HASH_SIZE];
	audit_leaf_hash(bytes, len, leaf);
	return merkle_inclusion_verify(leaf, out->seq - first_seq, cp->size, proof,
				       cp->root, d);
}

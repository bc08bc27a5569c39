/* h_audit.c - the audit API: list entries, checkpoints, proofs, online
 * verification and the export for SIEMs and offline verification.
 *
 * Everything here reads the store inside the loop's thread, like any handler;
 * the only write is POST /v1/audit/checkpoint. Verification and export walk
 * the whole log, so they cost O(entries) on the loop; they are for auditors,
 * not for hot paths. Hashes are hex in JSON; canonical entry bytes and keys
 * are standard base64 (as in checkpoint notes). */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "audit_log.h"
#include "audit_log_int.h"
#include "audit_verify.h"
#include "buf.h"
#include "ctl_int.h"
#include "log.h"

#define EXPORT_MAX_BYTES ((size_t)1 << 31) /* bound on one export answer */
#define VERIFY_CHECKPOINTS_MAX ((size_t)1 << 24) /* checkpoints one verify reads */

static void hex(const uint8_t *b, size_t n, char *out)
{
	sodium_bin2hex(out, n * 2 + 1, b, n);
}

static json_t *hex_json(const uint8_t *b, size_t n)
{
	char h[2 * 64 + 1];
	hex(b, n < 64 ? n : 64, h);
	return json_string(h);
}

static json_t *b64_json(const uint8_t *b, size_t n)
{
	size_t cap = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
	char *s = malloc(cap);
	if (!s)
		return NULL;
	sodium_bin2base64(s, cap, b, n, sodium_base64_VARIANT_ORIGINAL);
	json_t *j = json_string(s);
	free(s);
	return j;
}

/* Parses query parameter name as an unsigned integer; *out unchanged when
 * absent. Answers 400 and returns false when malformed. */
static bool query_u64(struct ctl_call *call, const char *name, uint64_t *out)
{
	const char *v = http_request_param(call->req, name);
	if (!v)
		return true;
	char *end;
	unsigned long long x = strtoull(v, &end, 10);
	if (!*v || *end || v[0] == '-' || x > (unsigned long long)INT64_MAX) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "query parameter '%s' must be a non-negative integer, got '%.64s'",
			 name, v);
		ctl_answer_error(call, SL_EINVAL, msg, NULL);
		return false;
	}
	*out = x;
	return true;
}

/* The entry object of the API (decoded from the stored bytes). */
static json_t *entry_json(const struct store_audit_row *r, bool raw)
{
	struct audit_entry e;
	struct sl_diag d;
	sl_diag_clear(&d);
	json_t *o;
	if (audit_entry_decode(r->canonical, r->len, &e, &d) == SL_OK) {
		o = json_pack("{s:I, s:o, s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "seq",
			      (json_int_t)r->seq, "time", ctl_time_json(e.time_ns), "actor", e.actor,
			      "role", e.role, "tenant", e.tenant, "action", e.action, "target",
			      e.target, "outcome", e.outcome, "request_digest",
			      hex_json(e.request_digest, sizeof(e.request_digest)));
	} else {
		o = json_pack("{s:I, s:s}", "seq", (json_int_t)r->seq, "error", d.msg);
	}
	if (o && r->leaf_len)
		json_object_set_new(o, "leaf_hash", hex_json(r->leaf_hash, r->leaf_len));
	if (o && raw)
		json_object_set_new(o, "canonical", b64_json(r->canonical, r->len));
	return o;
}

/* ---- GET /v1/audit/log ---- */

struct list {
	json_t *arr;
	const char *action; /* the filter, checked against the canonical entry */
	size_t dropped;
};

static enum sl_err list_row(void *arg, const struct store_audit_row *r)
{
	struct list *l = arg;
	struct audit_entry e;
	if (l->action && (audit_entry_decode(r->canonical, r->len, &e, NULL) ||
			  strcmp(e.action, l->action))) {
		l->dropped++; /* the index says so, the entry does not */
		return SL_OK;
	}
	json_t *o = entry_json(r, false);
	return o && !json_array_append_new(l->arr, o) ? SL_OK : SL_ENOMEM;
}

/* A tenant's page, through its chain (audit_query.c). */
static enum sl_err list_tenant(struct ctl *c, const struct store_audit_filter *f, struct list *l,
			       struct sl_diag *d)
{
	struct audit_row_copy *rows;
	size_t n, repaired;
	/* With an action filter too, walk without a limit and filter after. */
	enum sl_err e = audit_tenant_rows(c, f->tenant, f->since, f->action ? 0 : f->limit, &rows,
					  &n, &repaired, d);
	for (size_t i = 0; !e && i < n && json_array_size(l->arr) < f->limit; i++) {
		struct store_audit_row r = audit_row_view(&rows[i]);
		e = list_row(l, &r);
	}
	audit_rows_free(rows, n);
	return e;
}

void h_audit_log(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct store_audit_filter f = {0, NULL, NULL, CTL_AUDIT_LIST_DEFAULT};
	struct sl_diag d;
	sl_diag_clear(&d);
	if (!query_u64(call, "since", &f.since) || !query_u64(call, "limit", &f.limit))
		return;
	if (f.limit == 0 || f.limit > CTL_AUDIT_LIST_MAX) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "limit must be 1..%d", CTL_AUDIT_LIST_MAX);
		ctl_answer_error(call, f.limit ? SL_ELIMIT : SL_EINVAL, msg, "page with ?since=SEQ");
		return;
	}
	f.tenant = http_request_param(call->req, "tenant");
	f.action = http_request_param(call->req, "action");
	const char *mine = ctl_call_tenant(call);
	if (mine) {
		if (f.tenant && strcmp(f.tenant, mine)) {
			ctl_answer_error(call, SL_EFORBIDDEN, "a tenant's token sees only its own tenant's entries",
					 NULL);
			return;
		}
		f.tenant = mine;
	}
	struct list l = {json_array(), f.action, 0};
	enum sl_err e = !l.arr ? SL_ENOMEM
		      : f.tenant ? list_tenant(c, &f, &l, &d)
				 : store_audit_scan(c->store, &f, list_row, &l, &d);
	if (l.dropped)
		sl_log_warn("the audit action index disagrees with the entries; run 'suanli audit verify'",
			    "dropped=%zu", l.dropped);
	if (e) {
		json_decref(l.arr);
		ctl_answer_diag(call, e, &d);
		return;
	}
	ctl_answer_json(call, 200, l.arr);
}

/* ---- checkpoints ---- */

static json_t *checkpoint_json(uint64_t size, const char *note)
{
	struct checkpoint cp;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (checkpoint_parse(note, strlen(note), &cp, &d))
		return json_pack("{s:I, s:s, s:s}", "size", (json_int_t)size, "note", note, "error",
				 d.msg);
	return json_pack("{s:s, s:I, s:o, s:o, s:s}", "origin", cp.origin, "size",
			 (json_int_t)cp.size, "root", hex_json(cp.root, sizeof(cp.root)), "time",
			 ctl_time_json(cp.time_ns), "note", note);
}

static void answer_latest(struct ctl_call *call, int status)
{
	uint64_t size;
	char *note = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	enum sl_err e = store_audit_checkpoint_latest(call->ctl->store, &size, &note, &d);
	if (e) {
		ctl_answer_diag(call, e, &d);
		return;
	}
	json_t *o = checkpoint_json(size, note);
	free(note);
	if (o)
		json_object_set_new(o, "public_key", b64_json(call->ctl->audit->pk, CHECKPOINT_PUBKEY_SIZE));
	ctl_answer_json(call, status, o);
}

void h_audit_checkpoint_get(struct ctl_call *call)
{
	answer_latest(call, 200);
}

void h_audit_checkpoint_create(struct ctl_call *call)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	if (!ctl_check_fields(call, call->body, NULL, 0, "a checkpoint request"))
		return;
	enum sl_err e = audit_log_checkpoint(call->ctl, &d);
	if (e) {
		ctl_answer_diag(call, e == SL_EINVAL ? SL_ECONFLICT : e, &d);
		return;
	}
	answer_latest(call, 201);
}

/* Newest checkpoint note of exactly this size, or NULL. */
static char *note_of_size(struct ctl *c, uint64_t size, uint64_t *latest)
{
	char *note = NULL;
	struct sl_diag d;
	*latest = 0;
	if (store_audit_checkpoint_latest(c->store, latest, &note, &d))
		return NULL;
	if (*latest == size)
		return note;
	free(note);
	return NULL;
}

static json_t *proof_json(const struct merkle_proof *p)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < p->len; i++)
		json_array_append_new(a, hex_json(p->hash[i], MERKLE_HASH_SIZE));
	return a;
}

/* Size a proof is made for: ?size= (or ?to=), else the newest checkpoint's
 * when it covers need, else the whole tree. */
static bool proof_size(struct ctl_call *call, const char *param, uint64_t need, uint64_t *size)
{
	struct ctl *c = call->ctl;
	uint64_t cur = c->audit->tree.size, latest = 0;
	char *note = note_of_size(c, 0, &latest);
	free(note);
	*size = latest >= need && latest ? latest : cur;
	if (!query_u64(call, param, size))
		return false;
	if (*size > cur || *size < need) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "%s must be %llu..%llu (the log has %llu entries)", param,
			 (unsigned long long)need, (unsigned long long)cur, (unsigned long long)cur);
		ctl_answer_error(call, SL_EINVAL, msg, NULL);
		return false;
	}
	return true;
}

struct one_row {
	uint64_t seq;
	char tenant[AUDIT_TENANT_MAX + 1];
	json_t *entry;
};

static enum sl_err one_row(void *arg, const struct store_audit_row *r)
{
	struct one_row *o = arg;
	struct audit_entry e;
	o->seq = r->seq;
	/* Whose entry it is, by the entry itself, never by the index column
	 * (which someone may have edited to show it to another tenant). */
	snprintf(o->tenant, sizeof(o->tenant), "%s",
		 audit_entry_decode(r->canonical, r->len, &e, NULL) == SL_OK ? e.tenant : "\x01");
	o->entry = entry_json(r, true);
	return SL_OK;
}

void h_audit_proof(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	uint64_t seq = 0, size = 0, latest;
	struct merkle_proof p;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (!query_u64(call, "seq", &seq))
		return;
	if (!http_request_param(call->req, "seq")) {
		ctl_answer_error(call, SL_EINVAL, "query parameter 'seq' is required", "?seq=N");
		return;
	}
	if (seq < CTL_AUDIT_FIRST_SEQ || seq - CTL_AUDIT_FIRST_SEQ >= c->audit->tree.size) {
		ctl_answer_error(call, SL_ENOTFOUND, "no audit entry with that seq",
				 "?seq=N with N from 1 to the log's size");
		return;
	}
	uint64_t index = seq - CTL_AUDIT_FIRST_SEQ;
	if (!proof_size(call, "size", index + 1, &size))
		return;
	struct one_row row = {0, "", NULL};
	struct store_audit_filter f = {seq - 1, NULL, NULL, 1};
	enum sl_err e = store_audit_scan(c->store, &f, one_row, &row, &d);
	const char *mine = ctl_call_tenant(call);
	if (!e && (row.seq != seq || (mine && strcmp(mine, row.tenant)))) {
		json_decref(row.entry);
		ctl_answer_error(call, SL_ENOTFOUND, "no audit entry with that seq", NULL);
		return;
	}
	struct merkle_source src = audit_log_source(c);
	uint8_t root[MERKLE_HASH_SIZE];
	if (!e)
		e = merkle_inclusion_proof(&src, index, size, &p, &d);
	if (!e)
		e = merkle_range_root(&src, 0, size, root);
	if (e) {
		json_decref(row.entry);
		ctl_answer_diag(call, e == SL_ENOTFOUND ? SL_ECONFLICT : e, &d);
		return;
	}
	char *note = note_of_size(c, size, &latest);
	json_t *o = json_pack("{s:I, s:I, s:I, s:o, s:o, s:o, s:o}", "seq", (json_int_t)seq, "index",
			      (json_int_t)index, "size", (json_int_t)size, "entry", row.entry, "proof",
			      proof_json(&p), "root", hex_json(root, sizeof(root)), "checkpoint",
			      note ? json_string(note) : json_null());
	free(note);
	ctl_answer_json(call, 200, o);
}

void h_audit_consistency(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	uint64_t from = 0, to = 0, latest;
	struct merkle_proof p;
	struct sl_diag d;
	uint8_t r1[MERKLE_HASH_SIZE], r2[MERKLE_HASH_SIZE];
	sl_diag_clear(&d);
	if (!query_u64(call, "from", &from))
		return;
	if (!http_request_param(call->req, "from")) {
		ctl_answer_error(call, SL_EINVAL, "query parameter 'from' is required", "?from=SIZE");
		return;
	}
	if (!proof_size(call, "to", from, &to))
		return;
	struct merkle_source src = audit_log_source(c);
	enum sl_err e = merkle_consistency_proof(&src, from, to, &p, &d);
	if (!e)
		e = merkle_range_root(&src, 0, from, r1);
	if (!e)
		e = merkle_range_root(&src, 0, to, r2);
	if (e) {
		ctl_answer_diag(call, e == SL_ENOTFOUND ? SL_ECONFLICT : e, &d);
		return;
	}
	char *note = note_of_size(c, to, &latest);
	json_t *o = json_pack("{s:I, s:I, s:o, s:o, s:o, s:o}", "from", (json_int_t)from, "to",
			      (json_int_t)to, "from_root", hex_json(r1, sizeof(r1)), "to_root",
			      hex_json(r2, sizeof(r2)), "proof", proof_json(&p), "checkpoint",
			      note ? json_string(note) : json_null());
	free(note);
	ctl_answer_json(call, 200, o);
}

/* ---- GET /v1/audit/verify ---- */

struct cps {
	const char *origin;
	struct checkpoint *v;
	size_t n, cap;
};

static enum sl_err cp_row(void *arg, uint64_t size, const char *note)
{
	struct cps *a = arg;
	enum sl_err e = sl_grow(&a->v, &a->cap, a->n + 1, VERIFY_CHECKPOINTS_MAX);
	if (e)
		return e;
	checkpoint_from_note(a->origin, size, note, &a->v[a->n++]);
	return SL_OK;
}

struct sts {
	struct audit_subtree *v;
	uint8_t (*h)[MERKLE_HASH_SIZE];
	size_t n, cap;
};

static enum sl_err st_row(void *arg, unsigned level, uint64_t index, const uint8_t *hash,
			  size_t len)
{
	struct sts *a = arg;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		struct audit_subtree *v = realloc(a->v, cap * sizeof(*v));
		if (v)
			a->v = v;
		uint8_t (*h)[MERKLE_HASH_SIZE] = realloc(a->h, cap * sizeof(*h));
		if (h)
			a->h = h;
		if (!v || !h)
			return SL_ENOMEM;
		a->cap = cap;
	}
	bool ok = hash && len == MERKLE_HASH_SIZE;
	if (ok)
		memcpy(a->h[a->n], hash, MERKLE_HASH_SIZE);
	a->v[a->n] = (struct audit_subtree){level, index, NULL, ok ? MERKLE_HASH_SIZE : 0};
	a->n++;
	return SL_OK;
}

static enum sl_err verify_row(void *arg, const struct store_audit_row *r)
{
	struct audit_verifier *v = arg;
	struct audit_record rec = {r->seq, r->canonical, r->len,
				   r->leaf_len == MERKLE_HASH_SIZE ? r->leaf_hash : NULL,
				   true, r->time_ns, r->tenant, r->action};
	static const uint8_t bad[MERKLE_HASH_SIZE] = {0};
	if (!rec.leaf_hash && r->leaf_len)
		rec.leaf_hash = bad; /* a hash of the wrong length never matches */
	if (audit_verifier_add(v, &rec, NULL))
		return SL_ENOMEM;
	/* Stop reading once the verdict is in (any non-I/O error stops a scan). */
	return audit_verifier_decided(v) ? SL_ECONFLICT : SL_OK;
}

void h_audit_verify(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct cps cps = {c->audit->origin, NULL, 0, 0};
	struct audit_verifier v;
	struct audit_verify_report rep;
	struct sl_diag d;
	sl_diag_clear(&d);
	struct sts sts = {NULL, NULL, 0, 0};
	enum sl_err e = store_audit_checkpoint_scan(c->store, cp_row, &cps, &d);
	if (!e)
		e = store_audit_subtree_scan(c->store, st_row, &sts, &d);
	for (size_t i = 0; !e && i < sts.n; i++)
		if (sts.v[i].hash_len)
			sts.v[i].hash = sts.h[i];
	struct audit_verify_config cfg = {c->audit->pk, c->audit->origin, CTL_AUDIT_FIRST_SEQ, cps.v,
					  cps.n, sts.v, sts.n, CTL_AUDIT_CACHE_STEP};
	bool inited = false;
	if (!e && !(e = audit_verifier_init(&v, &cfg, &d)))
		inited = true;
	if (!e) {
		e = store_audit_scan(c->store, NULL, verify_row, &v, &d);
		if (e == SL_ECONFLICT)
			e = SL_OK;
	}
	free(cps.v);
	free(sts.v);
	free(sts.h);
	if (e) {
		if (inited)
			audit_verifier_release(&v);
		ctl_answer_diag(call, e, &d);
		return;
	}
	enum sl_err verdict = audit_verifier_finish(&v, &rep);
	audit_verifier_release(&v);
	bool ok = verdict == SL_OK;
	json_t *o = json_pack("{s:b, s:I, s:I, s:I, s:o, s:o, s:s, s:s, s:s}", "ok", ok, "entries",
			      (json_int_t)rep.entries, "checkpoints",
			      (json_int_t)rep.checkpoints_verified, "size", (json_int_t)rep.size,
			      "root", hex_json(rep.root, sizeof(rep.root)), "first_bad_seq",
			      ok ? json_null() : json_integer((json_int_t)rep.seq), "fault",
			      audit_fault_name(rep.fault), "detail", rep.detail, "origin",
			      c->audit->origin);
	if (!ok)
		sl_log_warn("audit verification failed", "first_bad_seq=%llu fault=%s",
			    (unsigned long long)rep.seq, audit_fault_name(rep.fault));
	ctl_answer_json(call, 200, o);
}

/* ---- GET /v1/audit/export ---- */

static void buf_line(struct sl_buf *b, json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!s)
		sl_buf_set_err(b, SL_ENOMEM);
	else if (!sl_buf_adds(b, s))
		sl_buf_addc(b, '\n');
	free(s);
}

static enum sl_err export_row(void *arg, const struct store_audit_row *r)
{
	struct sl_buf *b = arg;
	json_t *o = entry_json(r, true);
	if (o)
		json_object_set_new(o, "type", json_string("entry"));
	buf_line(b, o);
	return sl_buf_err(b) ? SL_ENOMEM : SL_OK;
}

static enum sl_err export_cp(void *arg, uint64_t size, const char *note)
{
	struct sl_buf *b = arg;
	buf_line(b, json_pack("{s:s, s:I, s:s}", "type", "checkpoint", "size", (json_int_t)size,
			      "note", note));
	return sl_buf_err(b) ? SL_ENOMEM : SL_OK;
}

/* A tenant's export: its own entries, each with an inclusion proof in the
 * newest checkpoint's tree (entries after it carry "proof": null), then that
 * checkpoint: enough to check every entry offline without seeing anyone
 * else's. */
struct tenant_export {
	struct ctl *c;
	struct sl_buf *b;
	uint64_t size; /* the checkpoint's; 0: none */
};

static enum sl_err tenant_row(void *arg, const struct store_audit_row *r)
{
	struct tenant_export *t = arg;
	json_t *o = entry_json(r, true);
	if (o) {
		json_object_set_new(o, "type", json_string("entry"));
		json_object_set_new(o, "proof", json_null());
	}
	buf_line(t->b, o);
	return sl_buf_err(t->b) ? SL_ENOMEM : SL_OK;
}

/* Proofs are read after the scan (a scan callback may not read the store):
 * the lines are rewritten with theirs. */
static enum sl_err tenant_proofs(struct tenant_export *t, struct sl_diag *d)
{
	struct sl_buf out = SL_BUF_INIT(EXPORT_MAX_BYTES);
	struct merkle_source src = audit_log_source(t->c);
	char *save = NULL;
	for (char *line = t->b->len ? strtok_r(t->b->p, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		json_t *o = json_loads(line, 0, NULL);
		json_int_t seq = json_integer_value(json_object_get(o, "seq"));
		if (o && t->size && seq >= CTL_AUDIT_FIRST_SEQ &&
		    (uint64_t)seq - CTL_AUDIT_FIRST_SEQ < t->size) {
			struct merkle_proof p;
			if (merkle_inclusion_proof(&src, (uint64_t)seq - CTL_AUDIT_FIRST_SEQ, t->size, &p, d) ==
			    SL_OK) {
				json_object_set_new(o, "proof", proof_json(&p));
				json_object_set_new(o, "proof_size", json_integer((json_int_t)t->size));
			}
		}
		buf_line(&out, o);
	}
	sl_buf_release(t->b);
	*t->b = out;
	return sl_buf_err(&out) ? sl_diag_set(d, SL_ENOMEM, "the export does not fit in memory") : SL_OK;
}

/* The proof that the checkpoint's heads tree names the tenant's newest
 * entry (tenant_chain.h): what lets the tenant see an entry withheld at the
 * end of its chain. None when the tenant had no entry by the checkpoint. */
static void export_head(struct ctl *c, struct sl_buf *b, const char *tenant, uint64_t size)
{
	struct audit_head h;
	uint64_t index, count;
	struct merkle_proof p;
	if (c->audit->cp_size != size ||
	    audit_heads_prove(&c->audit->cp_heads, tenant, &h, &index, &count, &p, NULL))
		return;
	buf_line(b, json_pack("{s:s, s:s, s:I, s:o, s:I, s:I, s:o, s:I}", "type", "head", "tenant",
			      h.tenant, "seq", (json_int_t)h.seq, "leaf_hash",
			      hex_json(h.hash, sizeof(h.hash)), "index", (json_int_t)index, "count",
			      (json_int_t)count, "proof", proof_json(&p), "size", (json_int_t)size));
}

static void tenant_export(struct ctl_call *call, const char *tenant)
{
	struct ctl *c = call->ctl;
	struct sl_buf b = SL_BUF_INIT(EXPORT_MAX_BYTES);
	struct tenant_export t = {c, &b, 0};
	struct store_audit_filter f = {0, tenant, NULL, 0};
	char *note = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	enum sl_err e = store_audit_checkpoint_latest(c->store, &t.size, &note, &d);
	if (e == SL_ENOTFOUND) {
		e = SL_OK;
		t.size = 0;
	}
	struct audit_row_copy *rows = NULL;
	size_t n = 0, repaired = 0;
	if (!e)
		e = audit_tenant_rows(c, tenant, f.since, 0, &rows, &n, &repaired, &d);
	for (size_t i = 0; !e && i < n; i++) {
		struct store_audit_row r = audit_row_view(&rows[i]);
		e = tenant_row(&t, &r);
	}
	audit_rows_free(rows, n);
	if (!e)
		e = tenant_proofs(&t, &d);
	if (!e && note)
		export_cp(&b, t.size, note);
	free(note);
	if (!e && t.size)
		export_head(c, &b, tenant, t.size);
	if (!e) {
		buf_line(&b, json_pack("{s:s, s:s, s:o, s:i, s:s, s:s}", "type", "key", "origin",
				       c->audit->origin, "public_key",
				       b64_json(c->audit->pk, CHECKPOINT_PUBKEY_SIZE), "first_seq",
				       CTL_AUDIT_FIRST_SEQ, "scope", "tenant", "tenant", tenant));
		if (sl_buf_err(&b))
			e = sl_diag_set(&d, SL_ENOMEM, "the export does not fit in memory");
	}
	char *text;
	size_t len;
	if (e) {
		sl_buf_release(&b);
		ctl_answer_diag(call, e, &d);
		return;
	}
	if (sl_buf_detach(&b, &text, &len)) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	ctl_answer(call, 200, "application/x-ndjson", text, len);
}

void h_audit_export(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct sl_buf b = SL_BUF_INIT(EXPORT_MAX_BYTES);
	struct sl_diag d;
	sl_diag_clear(&d);
	if (ctl_call_tenant(call)) {
		const char *q = http_request_param(call->req, "tenant");
		if (q && strcmp(q, ctl_call_tenant(call))) {
			ctl_answer_error(call, SL_EFORBIDDEN,
					 "a tenant's token sees only its own tenant's entries", NULL);
			return;
		}
		tenant_export(call, ctl_call_tenant(call));
		return;
	}
	if (http_request_param(call->req, "tenant")) {
		tenant_export(call, http_request_param(call->req, "tenant"));
		return;
	}
	enum sl_err e = store_audit_scan(c->store, NULL, export_row, &b, &d);
	if (!e)
		e = store_audit_checkpoint_scan(c->store, export_cp, &b, &d);
	if (!e) {
		buf_line(&b, json_pack("{s:s, s:s, s:o, s:i}", "type", "key", "origin",
				       c->audit->origin, "public_key",
				       b64_json(c->audit->pk, CHECKPOINT_PUBKEY_SIZE), "first_seq",
				       CTL_AUDIT_FIRST_SEQ));
		if (sl_buf_err(&b))
			e = sl_diag_set(&d, SL_ENOMEM, "the export does not fit in memory");
	}
	char *text;
	size_t len;
	if (e) {
		sl_buf_release(&b);
		ctl_answer_diag(call, e, &d);
		return;
	}
	if (sl_buf_detach(&b, &text, &len)) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	ctl_answer(call, 200, "application/x-ndjson", text, len);
}

/* audit_log.c - recording audit entries inside the controller's turn.
 *
 * Why the hook sits on the answer: every request ends in exactly one
 * ctl_answer(), which knows the route (does it change state?), the token
 * (actor, role, tenant), the status and the body (outcome, the created
 * object's id). Recording there covers every handler, present and future,
 * without each one having to remember, and the entry lands in the same open
 * transaction as the handler's writes, before the turn commits.
 *
 * The frontier in memory is ahead of the disk only within a turn; a failed
 * commit stops the daemon, and at start the frontier is rebuilt from the
 * stored subtree cache in O(log n) reads (or, if the cache or the last leaves
 * were tampered with, from every stored leaf, so the daemon still starts and
 * `suanli audit verify` can say what is wrong). */
#include "audit_log.h"
#include "audit_log_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "buf.h"
#include "ctl_int.h"
#include "events.h"
#include "file.h"
#include "instances.h"
#include "jobs.h"
#include "log.h"

#define KEY_FILE_MAX 256 /* bound on audit.key's size */

static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* excl: refuse to replace an existing file (the secret key); the public key
 * is derived from it and may be rewritten. */
static enum sl_err write_file(const char *path, const char *text, mode_t mode, bool excl,
			      struct sl_diag *d)
{
	int fd = open(path, O_WRONLY | O_CREAT | (excl ? O_EXCL : O_TRUNC) | O_CLOEXEC | O_NOFOLLOW,
		      mode);
	if (fd < 0)
		return sl_diag_set(d, errno == EEXIST ? SL_EEXIST : SL_EIO, "cannot create %s: %s",
				   path, strerror(errno));
	size_t n = strlen(text);
	enum sl_err e = SL_OK;
	if (write(fd, text, n) != (ssize_t)n || fsync(fd))
		e = sl_diag_set(d, SL_EIO, "cannot write %s: %s", path, strerror(errno));
	close(fd);
	return e;
}

enum sl_err audit_log_key_create(const char *dir, struct sl_diag *d)
{
	uint8_t seed[CHECKPOINT_SEED_SIZE], pk[CHECKPOINT_PUBKEY_SIZE], sk[CHECKPOINT_SECKEY_SIZE];
	char b64[sodium_base64_ENCODED_LEN(CHECKPOINT_SEED_SIZE, sodium_base64_VARIANT_ORIGINAL) + 1];
	char *kp = join(dir, CTL_AUDIT_KEY_FILE), *pp = join(dir, CTL_AUDIT_PUB_FILE);
	enum sl_err e = kp && pp ? SL_OK : sl_diag_set(d, SL_ENOMEM, "out of memory");
	randombytes_buf(seed, sizeof(seed));
	checkpoint_keypair_from_seed(seed, pk, sk);
	if (!e) {
		sodium_bin2base64(b64, sizeof(b64) - 1, seed, sizeof(seed),
				  sodium_base64_VARIANT_ORIGINAL);
		sl_strcpy(b64 + strlen(b64), sizeof(b64) - strlen(b64), "\n"); /* room kept for it */
		e = write_file(kp, b64, 0600, true, d);
	}
	if (!e) {
		sodium_bin2base64(b64, sizeof(b64) - 1, pk, sizeof(pk), sodium_base64_VARIANT_ORIGINAL);
		sl_strcpy(b64 + strlen(b64), sizeof(b64) - strlen(b64), "\n"); /* room kept for it */
		e = write_file(pp, b64, 0644, false, d);
	}
	sodium_memzero(seed, sizeof(seed));
	sodium_memzero(sk, sizeof(sk));
	sodium_memzero(b64, sizeof(b64));
	free(kp);
	free(pp);
	return e;
}

static enum sl_err key_load(struct ctl *c, struct ctl_audit *a, struct sl_diag *d)
{
	char *kp = join(c->data_dir, CTL_AUDIT_KEY_FILE), *text = NULL;
	size_t len = 0, seedlen = 0;
	uint8_t seed[CHECKPOINT_SEED_SIZE];
	struct stat st;
	enum sl_err e = kp ? SL_OK : sl_diag_set(d, SL_ENOMEM, "out of memory");
	if (!e && stat(kp, &st) != 0 && errno == ENOENT) {
		/* A new key would make every stored checkpoint unverifiable. */
		uint64_t size = 0;
		char *note = NULL;
		enum sl_err le = store_audit_checkpoint_latest(c->store, &size, &note, d);
		free(note);
		if (le == SL_OK) {
			sl_diag_set(d, SL_ENOTFOUND, "%s is missing but the audit log has checkpoints signed with it",
				    kp);
			sl_diag_hint(d, "restore the key from a backup; a new key would make the old "
					"checkpoints fail verification");
			free(kp);
			return SL_ENOTFOUND;
		}
		sl_diag_clear(d);
		e = le == SL_ENOTFOUND ? audit_log_key_create(c->data_dir, d) : le;
		if (!e)
			sl_log_info("created the audit signing key", "file=%s", kp);
	}
	if (!e && stat(kp, &st) == 0 && (st.st_mode & 077))
		sl_log_warn("the audit key is readable by others", "file=%s mode=%o", kp,
			    (unsigned)(st.st_mode & 0777));
	if (!e)
		e = sl_read_file(kp, KEY_FILE_MAX, &text, &len, d);
	if (!e) {
		while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
			text[--len] = 0;
		if (sodium_base642bin(seed, sizeof(seed), text, len, NULL, &seedlen, NULL,
				      sodium_base64_VARIANT_ORIGINAL) ||
		    seedlen != sizeof(seed))
			e = sl_diag_set(d, SL_EPARSE, "%s is not a base64 Ed25519 seed of 32 bytes", kp);
	}
	if (!e)
		checkpoint_keypair_from_seed(seed, a->pk, a->sk);
	sodium_memzero(seed, sizeof(seed));
	if (text)
		sodium_memzero(text, len);
	free(text);
	free(kp);
	return e;
}

static enum sl_err origin_load(struct ctl *c, struct ctl_audit *a, struct sl_diag *d)
{
	char *v = NULL;
	enum sl_err e = store_meta_get(c->store, "audit.origin", &v, d);
	if (e == SL_ENOTFOUND) {
		uint8_t id[8];
		char hex[sizeof(id) * 2 + 1];
		randombytes_buf(id, sizeof(id));
		sodium_bin2hex(hex, sizeof(hex), id, sizeof(id));
		snprintf(a->origin, sizeof(a->origin), "suanli/%s", hex);
		sl_diag_clear(d);
		return store_meta_set(c->store, "audit.origin", a->origin, d);
	}
	if (e)
		return e;
	snprintf(a->origin, sizeof(a->origin), "%s", v);
	free(v);
	return SL_OK;
}

/* ---- the Merkle source over the store ---- */

static enum sl_err src_leaf(void *ctx, uint64_t index, uint8_t out[MERKLE_HASH_SIZE])
{
	struct ctl *c = ctx;
	return store_audit_leaf(c->store, index + CTL_AUDIT_FIRST_SEQ, out, NULL);
}

static enum sl_err src_subtree(void *ctx, unsigned level, uint64_t index,
			       uint8_t out[MERKLE_HASH_SIZE])
{
	struct ctl *c = ctx;
	if (level % CTL_AUDIT_CACHE_STEP)
		return SL_ENOTFOUND; /* not cached: merkle.h computes it from below */
	return store_audit_subtree_get(c->store, level, index, out, NULL);
}

struct merkle_source audit_log_source(struct ctl *c)
{
	return (struct merkle_source){src_leaf, src_subtree, c};
}

static enum sl_err rebuild_leaf(void *arg, const struct store_audit_row *r)
{
	struct merkle_frontier *f = arg;
	uint8_t h[MERKLE_HASH_SIZE] = {0};
	if (r->leaf_len == MERKLE_HASH_SIZE)
		memcpy(h, r->leaf_hash, MERKLE_HASH_SIZE);
	return merkle_frontier_append(f, h);
}

/* Heads from the store's newest row per indexed tenant: the canonical
 * tenant decides (a row whose index lies is skipped; verification names it). */
static enum sl_err head_row(void *arg, const struct store_audit_row *r)
{
	struct audit_heads *h = arg;
	struct audit_entry e;
	if (r->leaf_len != MERKLE_HASH_SIZE || audit_entry_decode(r->canonical, r->len, &e, NULL) ||
	    strcmp(audit_index_label(e.tenant), r->tenant) || !audit_tenant_chained(e.tenant))
		return SL_OK;
	const struct audit_head *x = audit_heads_get(h, e.tenant);
	if (x && x->seq > e.seq)
		return SL_OK;
	return audit_heads_set(h, e.tenant, e.seq, r->leaf_hash);
}

static enum sl_err heads_load(struct ctl *c, struct audit_heads *h, uint64_t size,
			      struct sl_diag *d)
{
	enum sl_err e = audit_heads_init(h);
	if (e)
		return sl_diag_set(d, e, "no memory for the tenant heads");
	if (!size)
		return SL_OK;
	return store_audit_heads(c->store, size - 1 + CTL_AUDIT_FIRST_SEQ, head_row, h, d);
}

static enum sl_err tree_load(struct ctl *c, struct ctl_audit *a, struct sl_diag *d)
{
	uint64_t last = 0;
	enum sl_err e = store_audit_last(c->store, &last, d);
	if (e)
		return e;
	struct merkle_source src = audit_log_source(c);
	uint64_t size = last >= CTL_AUDIT_FIRST_SEQ ? last - CTL_AUDIT_FIRST_SEQ + 1 : 0;
	if (merkle_frontier_load(&a->tree, &src, size) == SL_OK && a->tree.size == size)
		return SL_OK;
	/* The cache or the newest leaves do not add up: someone edited the file.
	 * Start anyway from what is there; verification says what is wrong. */
	sl_log_warn("the audit log does not load cleanly; run 'suanli audit verify'",
		    "entries=%llu", (unsigned long long)size);
	merkle_frontier_init(&a->tree);
	e = store_audit_scan(c->store, NULL, rebuild_leaf, &a->tree, d);
	if (e)
		return e;
	/* New entries continue after the highest stored seq. */
	while (a->tree.size < size) {
		uint8_t zero[MERKLE_HASH_SIZE] = {0};
		if ((e = merkle_frontier_append(&a->tree, zero)))
			return sl_diag_set(d, e, "cannot rebuild the audit tree");
	}
	return SL_OK;
}

enum sl_err audit_log_open(struct ctl *c, struct sl_diag *d)
{
	struct ctl_audit *a = calloc(1, sizeof(*a));
	if (!a)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	c->audit = a;
	merkle_frontier_init(&a->tree);
	enum sl_err e = key_load(c, a, d);
	if (!e)
		e = origin_load(c, a, d);
	if (!e)
		e = tree_load(c, a, d);
	char *note = NULL;
	if (!e) {
		enum sl_err le = store_audit_checkpoint_latest(c->store, &a->cp_size, &note, d);
		if (le == SL_ENOTFOUND)
			sl_diag_clear(d);
		else
			e = le;
		free(note);
	}
	if (!e)
		e = heads_load(c, &a->heads, a->tree.size, d);
	if (!e)
		e = heads_load(c, &a->cp_heads, a->cp_size, d);
	if (!e && a->tree.size > a->cp_size)
		a->pending_since = c->now_ns;
	if (!e)
		sl_log_info("audit log", "origin=%s entries=%llu checkpoint=%llu", a->origin,
			    (unsigned long long)a->tree.size, (unsigned long long)a->cp_size);
	return e;
}

void audit_log_close(struct ctl *c)
{
	if (!c->audit)
		return;
	if (c->audit->heads.map)
		audit_heads_free(&c->audit->heads);
	if (c->audit->cp_heads.map)
		audit_heads_free(&c->audit->cp_heads);
	sodium_memzero(c->audit, sizeof(*c->audit));
	free(c->audit);
	c->audit = NULL;
}

/* ---- appending ---- */

static bool tx_open(struct ctl *c)
{
	struct sl_diag d;
	if (c->fatal)
		return false;
	if (c->tx_open)
		return true;
	sl_diag_clear(&d);
	if (store_begin(c->store, &d)) {
		sl_log_error("store begin failed", "error=%s", d.msg);
		c->fatal = true;
		return false;
	}
	c->tx_open = true;
	return true;
}

static enum sl_err sink(void *ctx, unsigned level, uint64_t index,
			const uint8_t hash[MERKLE_HASH_SIZE])
{
	struct ctl *c = ctx;
	if (level % CTL_AUDIT_CACHE_STEP)
		return SL_OK;
	return store_audit_subtree_put(c->store, level, index, hash, NULL);
}

/* Sets a field; a value the entry cannot hold (too long, not UTF-8) is
 * recorded as "(invalid)" rather than dropping the entry. */
static void set_field(struct audit_entry *e, const char *field, const char *v)
{
	if (audit_entry_set(e, field, v ? v : "", NULL) == SL_OK ||
	    audit_entry_set(e, field, "(invalid)", NULL) == SL_OK)
		return;
	if (audit_entry_set(e, field, "", NULL) != SL_OK)
		sl_log_error("audit field refused", "field=%s", field);
}

/* The store indexes tenant and action as printable ASCII labels. */
static const char *label_or_empty(const char *s)
{
	return audit_index_label(s);
}

struct entry_in {
	const char *actor, *role, *tenant, *action, *target, *outcome;
	const uint8_t *digest; /* NULL: all zero */
};

static bool append(struct ctl *c, const struct entry_in *in)
{
	struct ctl_audit *a = c->audit;
	struct audit_entry e;
	struct sl_diag d;
	uint8_t buf[AUDIT_ENCODED_MAX], leaf[AUDIT_HASH_SIZE];
	size_t len = 0;
	if (!a || !tx_open(c))
		return false;
	sl_diag_clear(&d);
	audit_entry_init(&e);
	e.seq = a->tree.size + CTL_AUDIT_FIRST_SEQ;
	e.time_ns = c->now_ns;
	set_field(&e, "actor", in->actor);
	set_field(&e, "role", in->role);
	set_field(&e, "tenant", in->tenant);
	set_field(&e, "action", in->action);
	set_field(&e, "target", in->target);
	set_field(&e, "outcome", in->outcome);
	if (in->digest)
		memcpy(e.request_digest, in->digest, AUDIT_DIGEST_SIZE);
	audit_heads_link(&a->heads, &e);
	enum sl_err err = audit_entry_encode(&e, buf, sizeof(buf), &len, &d);
	if (!err) {
		audit_leaf_hash(buf, len, leaf);
		struct store_audit_row r = {e.seq, e.time_ns, label_or_empty(e.tenant),
					    label_or_empty(e.action), buf, len, leaf, sizeof(leaf)};
		err = store_audit_append(c->store, &r, &d);
	}
	if (!err)
		err = merkle_frontier_append_sink(&a->tree, leaf, sink, c);
	if (!err && (err = audit_heads_advance(&a->heads, &e, leaf)))
		sl_diag_set(&d, err, "no memory for the tenant heads");
	if (err) {
		sl_log_error("audit entry not written; refusing the turn", "seq=%llu action=%s error=%s",
			     (unsigned long long)e.seq, e.action, d.msg[0] ? d.msg : sl_err_message(err));
		c->fatal = true;
		return false;
	}
	/* A node's changes are all audit entries (the API's and the agents'):
	 * the live views learn of them here (events.h). */
	if ((!strncmp(in->action, "node.", 5) || !strncmp(in->action, "gpu.", 4)) &&
	    (!strcmp(in->actor, "system") || !strcmp(in->outcome, "ok")))
		events_emit(c, "node", in->target, in->action[0] == 'n' ? in->action + 5 : in->action,
			    "");
	if (!a->pending_since)
		a->pending_since = c->now_ns;
	if (a->tree.size - a->cp_size >= CTL_AUDIT_EVERY && audit_log_checkpoint(c, &d)) {
		sl_log_error("audit checkpoint failed", "error=%s", d.msg);
		c->fatal = true;
		return false;
	}
	return true;
}

bool audit_log_actor(struct ctl *c, const char *actor, const char *role, const char *tenant,
		     const char *action, const char *target, const char *outcome)
{
	struct entry_in in = {actor, role, tenant, action, target, outcome, NULL};
	return append(c, &in);
}

bool audit_log_system(struct ctl *c, const char *action, const char *tenant, const char *target,
		      const char *outcome)
{
	struct entry_in in = {"system", "system", tenant, action, target, outcome, NULL};
	return append(c, &in);
}

enum sl_err audit_log_checkpoint(struct ctl *c, struct sl_diag *d)
{
	struct ctl_audit *a = c->audit;
	struct checkpoint cp;
	char note[CHECKPOINT_TEXT_MAX + 1];
	uint8_t root[MERKLE_HASH_SIZE];
	size_t len;
	if (a->tree.size == 0)
		return sl_diag_set(d, SL_EINVAL, "the audit log is empty; nothing to checkpoint");
	if (a->tree.size == a->cp_size)
		return SL_OK;
	merkle_frontier_root(&a->tree, root);
	enum sl_err e = checkpoint_init(&cp, a->origin, a->tree.size, root,
					c->now_ns > 0 ? c->now_ns : 0, d);
	uint8_t heads[MERKLE_HASH_SIZE];
	if (!e && !(e = audit_heads_root(&a->heads, heads, d)))
		checkpoint_set_heads(&cp, heads);
	if (!e)
		e = checkpoint_sign(&cp, a->sk, d);
	if (!e)
		e = checkpoint_format(&cp, note, sizeof(note), &len, d);
	if (!e && !tx_open(c))
		e = sl_diag_set(d, SL_EIO, "the store is not writable");
	if (!e)
		e = store_audit_checkpoint_put(c->store, a->tree.size, note, d);
	if (!e && (e = audit_heads_copy(&a->cp_heads, &a->heads)))
		sl_diag_set(d, e, "no memory for the tenant heads");
	if (e) {
		c->fatal = c->fatal || e == SL_EIO || e == SL_ENOMEM;
		return e;
	}
	a->cp_size = a->tree.size;
	a->pending_since = 0;
	return SL_OK;
}

int64_t audit_log_tick(struct ctl *c, int64_t next)
{
	struct ctl_audit *a = c->audit;
	struct sl_diag d;
	if (!a || c->fatal || !a->pending_since)
		return next;
	int64_t due = a->pending_since + (int64_t)CTL_AUDIT_PERIOD_S * 1000000000;
	if (c->now_ns >= due) {
		sl_diag_clear(&d);
		if (audit_log_checkpoint(c, &d)) {
			sl_log_error("audit checkpoint failed", "error=%s", d.msg);
			c->fatal = true;
		}
		return next;
	}
	return next && next < due ? next : due;
}

/* ---- what a request's entry says ---- */

/* "lease_create" -> "lease.create". */
static void action_of(const char *label, char out[AUDIT_ACTION_MAX + 1])
{
	snprintf(out, AUDIT_ACTION_MAX + 1, "%s", label);
	char *u = strchr(out, '_');
	if (u)
		*u = '.';
}

/* The answer as a document: the one ctl_answer_json is queuing (borrowed:
 * re-parsing every created lease cost ~8% of the daemon's time under load,
 * bench/results/api-profile.md), else parsed from the text (the caller
 * decrefs; a decref of the borrowed one is balanced by the incref here). */
static json_t *answer_doc(struct ctl_call *call, const char *body, size_t len)
{
	if (call->answer_doc)
		return json_incref((json_t *)call->answer_doc);
	return body ? json_loadb(body, len, 0, NULL) : NULL;
}

/* The error code of an error answer, "" when there is none. */
static void error_code(struct ctl_call *call, const char *body, size_t len, char out[32])
{
	out[0] = 0;
	json_t *o = answer_doc(call, body, len);
	const char *s = json_string_value(json_object_get(json_object_get(o, "error"), "code"));
	if (s)
		snprintf(out, 32, "%s", s);
	json_decref(o);
}

/* A 404 for an object that exists but belongs to another tenant is a refusal
 * the caller must not learn about, but the audit must. */
static bool hidden_object(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	const char *mine = ctl_call_tenant(call), *p = call->param[0];
	const char *pat = call->route->pattern;
	if (!mine || !p)
		return false;
	if (!strncmp(pat, "/v1/leases/", 11)) {
		const struct ctl_lease *l = ctl_lease_find(c, p);
		return l && strcmp(l->tenant, mine);
	}
	if (!strncmp(pat, "/v1/tokens/", 11)) {
		const struct ctl_token *t = ctl_token_find_id(c, p);
		return t && strcmp(t->tenant, mine);
	}
	if (!strncmp(pat, "/v1/jobs/", 9)) {
		const char *t = jobs_tenant(c, p);
		return t && strcmp(t, mine);
	}
	if (!strncmp(pat, "/v1/instances/", 14)) {
		const char *t = instances_tenant(c, p);
		return t && strcmp(t, mine);
	}
	if (!strncmp(pat, "/v1/tenants/", 12))
		return ctl_tenant_find(c, p) && strcmp(p, mine);
	if (!strncmp(pat, "/v1/nodes/", 10)) {
		int n = c->fleet ? fleet_find_node(c->fleet, p) : -1;
		return n >= 0 && !ctl_node_visible(c, n, mine);
	}
	return false;
}

static const char *outcome_of(struct ctl_call *call, int status, const char *code,
			      bool replay)
{
	if (status >= 200 && status < 300)
		return replay ? "replayed" : "ok";
	if (status == 401 || (status == 403 && strcmp(code, "quota")))
		return "denied";
	if (status == 404 && hidden_object(call))
		return "denied";
	if (!strcmp(code, "invalid") || !strcmp(code, "parse_error") || !strcmp(code, "too_large"))
		return "invalid";
	return code[0] ? code : "error";
}

/* Tenant and target of the entry: the path's object, else what the answer
 * (a created object) or the request body names. */
static void subject_of(struct ctl_call *call, int status, const char *body, size_t len,
		       char tenant[AUDIT_TENANT_MAX + 1], char target[AUDIT_TARGET_MAX + 1])
{
	struct ctl *c = call->ctl;
	const char *mine = ctl_call_tenant(call), *p = call->param[0];
	const char *pat = call->route->pattern;
	tenant[0] = target[0] = 0;
	if (mine)
		snprintf(tenant, AUDIT_TENANT_MAX + 1, "%s", mine);
	if (p) {
		snprintf(target, AUDIT_TARGET_MAX + 1, "%s", p);
		if (!tenant[0] && !strncmp(pat, "/v1/leases/", 11)) {
			const struct ctl_lease *l = ctl_lease_find(c, p);
			if (l)
				snprintf(tenant, AUDIT_TENANT_MAX + 1, "%s", l->tenant);
		} else if (!tenant[0] && !strncmp(pat, "/v1/tokens/", 11)) {
			const struct ctl_token *t = ctl_token_find_id(c, p);
			if (t)
				snprintf(tenant, AUDIT_TENANT_MAX + 1, "%s", t->tenant);
		} else if (!tenant[0] && !strncmp(pat, "/v1/jobs/", 9)) {
			const char *t = jobs_tenant(c, p);
			if (t)
				snprintf(tenant, AUDIT_TENANT_MAX + 1, "%s", t);
		} else if (!tenant[0] && !strncmp(pat, "/v1/instances/", 14)) {
			const char *t = instances_tenant(c, p);
			if (t)
				snprintf(tenant, AUDIT_TENANT_MAX + 1, "%s", t);
		} else if (!tenant[0] && !strncmp(pat, "/v1/tenants/", 12)) {
			snprintf(tenant, AUDIT_TENANT_MAX + 1, "%s", p);
		}
		return;
	}
	if (!strcmp(pat, "/v1/fleet")) {
		snprintf(target, AUDIT_TARGET_MAX + 1, "fleet");
		return;
	}
	bool created = status >= 200 && status < 300 && call->route->mutates && body && len &&
		       body[0] == '{';
	json_t *ans = created ? answer_doc(call, body, len) : NULL;
	const char *id = json_string_value(json_object_get(ans, "id"));
	const char *name = json_string_value(json_object_get(ans, "name"));
	const char *t = json_string_value(json_object_get(ans, "tenant"));
	if (!strcmp(pat, "/v1/tenants") && name)
		t = name;
	if (!t && call->body)
		t = json_string_value(json_object_get(call->body, strcmp(pat, "/v1/tenants") ? "tenant" : "name"));
	if (!tenant[0] && t)
		snprintf(tenant, AUDIT_TENANT_MAX + 1, "%s", t);
	if (id || name)
		snprintf(target, AUDIT_TARGET_MAX + 1, "%s", id ? id : name);
	json_decref(ans);
}

static bool is_telemetry(const struct ctl_route *r)
{
	return !strcmp(r->label, "agent_heartbeat") || !strcmp(r->label, "agent_logs") ||
	       !strcmp(r->label, "agent_migration_put"); /* 1 MiB pieces; "done" is audited */
}

void audit_log_answer(struct ctl_call *call, int status, const char *body, size_t len)
{
	struct ctl *c = call->ctl;
	const struct ctl_route *r = call->route;
	if (!r || !r->auth || c->fatal || !c->audit)
		return;
	bool denied_status = status == 401 || status == 403 || status == 404;
	if (!r->mutates && !denied_status)
		return;
	char code[32] = "";
	if (status >= 300)
		error_code(call, body, len, code);
	/* A replayed POST (Idempotency-Key) is answered before its body is read. */
	bool replay = r->json_body && !call->body && http_request_header(call->req, "Idempotency-Key");
	const char *outcome = outcome_of(call, status, code, replay);
	if (!r->mutates && strcmp(outcome, "denied"))
		return;
	/* Heartbeats and log uploads are telemetry, not operations: what they
	 * change (a node unreachable or back, a GPU drained, a job ended) is
	 * recorded by the system entries of agents.c and jobs.c. Only refusals
	 * are kept, so a forged or misdirected agent still leaves a trace. */
	if (is_telemetry(r) && !strcmp(outcome, "ok"))
		return;
	char action[AUDIT_ACTION_MAX + 1], tenant[AUDIT_TENANT_MAX + 1], target[AUDIT_TARGET_MAX + 1];
	uint8_t digest[AUDIT_DIGEST_SIZE] = {0};
	size_t blen = 0;
	const char *rb = http_request_body(call->req, &blen);
	/* A body carrying a password is not digested: SHA-256 of it would let
	 * anyone holding the log test guesses at the password offline. */
	bool secret = !strcmp(r->label, "user_create") || !strcmp(r->label, "user_passwd");
	if (rb && blen && !secret)
		crypto_hash_sha256(digest, (const unsigned char *)rb, blen);
	action_of(r->label, action);
	subject_of(call, status, body, len, tenant, target);
	struct entry_in in = {call->tok ? call->tok->id : "anonymous",
			      call->tok ? ctl_role_name(call->tok->role) : "",
			      tenant, action, target, outcome, digest};
	append(c, &in);
}

/* ---- the scheduler's own changes ---- */

void audit_log_dispatch(struct ctl *c, struct http_request *req)
{
	struct ctl_audit *a = c->audit;
	if (a) {
		const char *path = http_request_path(req);
		a->in_call = true;
		a->call_nleases = c->lt.nleases;
		a->call_lease[0] = 0;
		if (path && !strncmp(path, "/v1/leases/", 11)) {
			size_t n = strcspn(path + 11, "/");
			if (n < sizeof(a->call_lease)) {
				memcpy(a->call_lease, path + 11, n);
				a->call_lease[n] = 0;
			}
		}
	}
	ctl_dispatch(c, req);
	if (a)
		a->in_call = false;
}

void audit_log_lease_state(struct ctl *c, const struct ctl_lease *l, int from)
{
	struct ctl_audit *a = c->audit;
	int s = (int)l->state;
	if (!a || s == from)
		return;
	/* The request's own lease is covered by the request's entry. */
	if (a->in_call && ((l->seq > (uint64_t)a->call_nleases) || !strcmp(l->id, a->call_lease)))
		return;
	char action[AUDIT_ACTION_MAX + 1];
	snprintf(action, sizeof(action), "lease.%s", lease_state_name((enum lease_state)s));
	audit_log_system(c, action, l->tenant, l->id, "ok");
}


void audit_log_metrics(const struct ctl *c, struct sl_buf *b)
{
	const struct ctl_audit *a = c->audit;
	if (!a)
		return;
	int64_t wait = a->pending_since && c->now_ns > a->pending_since ? c->now_ns - a->pending_since : 0;
	sl_buf_addf(b, "# HELP suanli_audit_entries Entries in the audit log.\n"
		    "# TYPE suanli_audit_entries gauge\nsuanli_audit_entries %llu\n"
		    "# HELP suanli_audit_checkpoint_entries Entries the newest signed checkpoint covers.\n"
		    "# TYPE suanli_audit_checkpoint_entries gauge\nsuanli_audit_checkpoint_entries %llu\n"
		    "# HELP suanli_audit_checkpoint_age_seconds How long the oldest entry after the newest "
		    "checkpoint has waited for one (0: every entry is signed).\n"
		    "# TYPE suanli_audit_checkpoint_age_seconds gauge\nsuanli_audit_checkpoint_age_seconds %.3f\n"
		    "# HELP suanli_audit_checkpoint_period_seconds Longest wait before entries get a checkpoint.\n"
		    "# TYPE suanli_audit_checkpoint_period_seconds gauge\n"
		    "suanli_audit_checkpoint_period_seconds %d\n",
		    (unsigned long long)a->tree.size, (unsigned long long)a->cp_size, (double)wait / 1e9,
		    CTL_AUDIT_PERIOD_S);
}

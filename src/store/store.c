/* store.c - the backend-independent front of the store.
 *
 * Everything a backend would otherwise repeat lives here, once: argument
 * validation (so bad input is refused before any backend sees it and can never
 * fail the store), transaction and scan bookkeeping, and the failed state. The
 * failed state is kept here rather than in a backend because the rule behind it
 * (an fsync error is never retried; the controller stops) is a property of the
 * controller's durability contract, not of SQLite. */
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_backend.h"

struct store {
	const struct store_ops *ops;
	void *impl;
	bool in_tx;
	bool in_scan;
	bool failed;
	uint64_t lead_epoch; /* the epoch this store leads in, 0: none */
	char fail_msg[SL_DIAG_MSG]; /* the error that failed the store */
};

static const char *const kind_names[STORE_KIND__COUNT] = {
	[STORE_TENANTS] = "tenants",
	[STORE_TOKENS] = "tokens",
	[STORE_LEASES] = "leases",
	[STORE_RESERVATIONS] = "reservations",
	[STORE_NODES] = "nodes",
	[STORE_FLEETS] = "fleets",
	[STORE_IDEMPOTENCY] = "idempotency",
	[STORE_PRICES] = "prices",
	[STORE_POSTINGS] = "postings",
	[STORE_USAGE] = "usage",
	[STORE_BILLING] = "billing",
	[STORE_AGENTS] = "agents",
	[STORE_JOBS] = "jobs",
	[STORE_IMAGES] = "images",
	[STORE_USERS] = "users",
	[STORE_SESSIONS] = "sessions",
	[STORE_INSTANCES] = "instances",
	[STORE_SSH_KEYS] = "ssh_keys",
	[STORE_LEASE_HISTORY] = "lease_history",
	[STORE_JOB_HISTORY] = "job_history",
	[STORE_INSTANCE_HISTORY] = "instance_history",
	[STORE_USAGE_HISTORY] = "usage_history",
	[STORE_LEDGER_ACCOUNTS] = "ledger_accounts",
};

const char *store_kind_name(enum store_kind k)
{
	return (unsigned)k < STORE_KIND__COUNT ? kind_names[k] : NULL;
}

enum sl_err store_kind_parse(const char *name, enum store_kind *out, struct sl_diag *d)
{
	for (int k = 0; name && k < STORE_KIND__COUNT; k++) {
		if (strcmp(name, kind_names[k]) == 0) {
			*out = (enum store_kind)k;
			return SL_OK;
		}
	}
	sl_diag_set(d, SL_EINVAL, "unknown store kind '%.64s'", name ? name : "(null)");
	sl_diag_hint(d, "kinds are tenants, tokens, leases, reservations, nodes, fleets, idempotency, prices, postings, usage, billing, agents, jobs, images, instances, ssh_keys, lease_history, job_history, instance_history, usage_history, ledger_accounts");
	return SL_EINVAL;
}

/* Lets every function write details even when the caller passed no diag: the
 * failed state needs the message either way. */
static struct sl_diag *diag_or(struct sl_diag *d, struct sl_diag *scratch)
{
	if (!d)
		d = scratch;
	sl_diag_clear(d);
	return d;
}

static enum sl_err check_usable(const struct store *s, struct sl_diag *d)
{
	if (!s)
		return sl_diag_set(d, SL_EINVAL, "no store (NULL)");
	if (s->failed) {
		sl_diag_set(d, SL_EIO, "the store failed earlier and accepts no more calls: %s",
			    s->fail_msg);
		sl_diag_hint(d, "stop the controller; on restart it rebuilds from the last commit");
		return SL_EIO;
	}
	if (s->in_scan)
		return sl_diag_set(d, SL_EINVAL, "the store was called from a scan callback");
	return SL_OK;
}

/* Enters the failed state when a backend error means the database can no longer
 * be trusted to match what the caller believes; returns e unchanged. */
static enum sl_err note_error(struct store *s, enum sl_err e, bool is_write, struct sl_diag *d)
{
	if (e == SL_OK || (e == SL_ENOTFOUND) || (!is_write && e != SL_EIO))
		return e;
	s->failed = true;
	s->in_tx = false;
	memcpy(s->fail_msg, d->msg, sizeof(s->fail_msg));
	if (!d->hint[0])
		sl_diag_hint(d, "the store is now failed; stop the controller, which rebuilds "
				"from the last commit on restart");
	return SL_EIO;
}

static enum sl_err check_kind(enum store_kind k, struct sl_diag *d)
{
	if ((unsigned)k >= STORE_KIND__COUNT)
		return sl_diag_set(d, SL_EINVAL, "store kind %d is not a kind (0..%d)", (int)k,
				   STORE_KIND__COUNT - 1);
	return SL_OK;
}

/* ids and tenants show up in logs, URLs and error messages, so they are kept to
 * visible ASCII; the bound keeps rows and messages small. */
static enum sl_err check_name(const char *what, const char *v, struct sl_diag *d)
{
	if (!v)
		return sl_diag_set(d, SL_EINVAL, "%s is missing (NULL)", what);
	size_t n = strnlen(v, STORE_MAX_ID + 1);
	if (n == 0)
		return sl_diag_set(d, SL_EINVAL, "%s is empty", what);
	if (n > STORE_MAX_ID) {
		sl_diag_set(d, SL_ELIMIT, "%s '%.32s...' is longer than %d bytes", what, v,
			    STORE_MAX_ID);
		return SL_ELIMIT;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		if (c < 0x21 || c > 0x7e) {
			sl_diag_set(d, SL_EINVAL, "%s has a byte 0x%02x at offset %zu", what, c, i);
			sl_diag_hint(d, "ids are printable ASCII without spaces");
			return SL_EINVAL;
		}
	}
	return SL_OK;
}

static enum sl_err check_meta_key(const char *key, struct sl_diag *d)
{
	if (!key)
		return sl_diag_set(d, SL_EINVAL, "meta key is missing (NULL)");
	size_t n = strnlen(key, STORE_MAX_META_KEY + 1);
	if (n == 0)
		return sl_diag_set(d, SL_EINVAL, "meta key is empty");
	if (n > STORE_MAX_META_KEY)
		return sl_diag_set(d, SL_ELIMIT, "meta key '%.32s...' is longer than %d bytes",
				   key, STORE_MAX_META_KEY);
	for (size_t i = 0; i < n; i++) {
		char c = key[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == '-')) {
			sl_diag_set(d, SL_EINVAL, "meta key '%s' has '%c' at offset %zu", key,
				    c >= 0x20 && c < 0x7f ? c : '?', i);
			sl_diag_hint(d, "meta keys use a-z, 0-9, '_', '.' and '-'");
			return SL_EINVAL;
		}
	}
	return SL_OK;
}

enum sl_err store_open_with(const char *dir, const struct store_opts *opts, struct store **out,
			    struct sl_diag *d)
{
	static const struct store_opts no_opts;
	if (!out)
		return sl_diag_set(d, SL_EINVAL, "store_open: no place for the result (NULL)");
	*out = NULL;
	if (!dir || !dir[0])
		return sl_diag_set(d, SL_EINVAL, "store_open: no data directory given");
	struct store *s = calloc(1, sizeof(*s));
	if (!s)
		return sl_diag_set(d, SL_ENOMEM, "out of memory opening the store");
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	s->ops = store_is_url(dir) ? &store_pg_ops : &store_sqlite_ops;
	enum sl_err e = s->ops->open(dir, opts ? opts : &no_opts, &s->impl, d);
	if (e != SL_OK) {
		free(s);
		return e;
	}
	*out = s;
	return SL_OK;
}

bool store_is_url(const char *where)
{
	return where && (strncmp(where, "postgres://", 11) == 0 ||
			 strncmp(where, "postgresql://", 13) == 0);
}

enum sl_err store_open(const char *dir, struct store **out, struct sl_diag *d)
{
	return store_open_with(dir, NULL, out, d);
}

void store_close(struct store *s)
{
	if (!s)
		return;
	s->ops->close(s->impl, s->failed);
	free(s);
}

bool store_failed(const struct store *s)
{
	return s && s->failed;
}

int store_schema_version(const struct store *s)
{
	return s ? s->ops->schema_version(s->impl) : 0;
}

enum sl_err store_begin(struct store *s, struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e != SL_OK)
		return e;
	if (s->in_tx)
		return sl_diag_set(d, SL_EINVAL, "store_begin: a transaction is already open");
	e = note_error(s, s->ops->begin(s->impl, d), true, d);
	s->in_tx = e == SL_OK;
	return e;
}

/* Ends the open transaction one way or the other; either failing fails the
 * store (note_error), since SQLite's state after a failed end is unknown. */
static enum sl_err end_tx(struct store *s, bool commit, struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e != SL_OK)
		return e;
	if (!s->in_tx)
		return sl_diag_set(d, SL_EINVAL, "store_%s: no transaction is open",
				   commit ? "commit" : "rollback");
	s->in_tx = false;
	return note_error(s, commit ? s->ops->commit(s->impl, d) : s->ops->rollback(s->impl, d),
			  true, d);
}

enum sl_err store_commit(struct store *s, struct sl_diag *d)
{
	return end_tx(s, true, d);
}

enum sl_err store_rollback(struct store *s, struct sl_diag *d)
{
	return end_tx(s, false, d);
}

enum sl_err store_put(struct store *s, enum store_kind k, const char *id, const char *tenant,
		      const char *json, int64_t updated_ns, struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e == SL_OK)
		e = check_kind(k, d);
	if (e == SL_OK)
		e = check_name("id", id, d);
	if (e == SL_OK && tenant)
		e = check_name("tenant", tenant, d);
	if (e != SL_OK)
		return e;
	if (!json)
		return sl_diag_set(d, SL_EINVAL, "%s '%s': body is missing (NULL)", kind_names[k], id);
	size_t n = strnlen(json, (size_t)STORE_MAX_BODY + 1);
	if (n == 0)
		return sl_diag_set(d, SL_EINVAL, "%s '%s': body is empty", kind_names[k], id);
	if (n > STORE_MAX_BODY)
		return sl_diag_set(d, SL_ELIMIT, "%s '%s': body is longer than %u bytes",
				   kind_names[k], id, STORE_MAX_BODY);
	if (updated_ns < 0)
		return sl_diag_set(d, SL_EINVAL, "%s '%s': updated_ns %lld is negative",
				   kind_names[k], id, (long long)updated_ns);
	return note_error(s, s->ops->put(s->impl, k, id, tenant, json, n, updated_ns, d), true, d);
}

/* A delete; `forget` asks for no answer (pipelined on PostgreSQL). */
static enum sl_err remove_row(struct store *s, enum store_kind k, const char *id, bool forget,
			      struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e == SL_OK)
		e = check_kind(k, d);
	if (e == SL_OK)
		e = check_name("id", id, d);
	if (e != SL_OK)
		return e;
	e = forget ? s->ops->forget(s->impl, k, id, d) : s->ops->del(s->impl, k, id, d);
	return note_error(s, e, true, d);
}

enum sl_err store_delete(struct store *s, enum store_kind k, const char *id, struct sl_diag *d)
{
	return remove_row(s, k, id, false, d);
}

enum sl_err store_forget(struct store *s, enum store_kind k, const char *id, struct sl_diag *d)
{
	return remove_row(s, k, id, true, d);
}

enum sl_err store_get(struct store *s, enum store_kind k, const char *id, char **json_out,
		      struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	if (!json_out)
		return sl_diag_set(d, SL_EINVAL, "store_get: no place for the result (NULL)");
	*json_out = NULL;
	enum sl_err e = check_usable(s, d);
	if (e == SL_OK)
		e = check_kind(k, d);
	if (e == SL_OK)
		e = check_name("id", id, d);
	if (e != SL_OK)
		return e;
	return note_error(s, s->ops->get(s->impl, k, id, json_out, d), false, d);
}

/* Wraps the caller's callback so that its verdict is told apart from a backend
 * error: only the latter may fail the store. */
struct scan_relay {
	store_scan_fn fn;
	void *arg;
	enum sl_err cb_err;
	char at[64];
};

static enum sl_err scan_relay_row(void *arg, const char *id, const char *tenant,
				  const char *json)
{
	struct scan_relay *r = arg;
	enum sl_err e = r->fn(r->arg, id, tenant, json);
	if (e != SL_OK) {
		r->cb_err = e;
		snprintf(r->at, sizeof(r->at), "%s", id);
	}
	return e;
}

enum sl_err store_scan(struct store *s, enum store_kind k, store_scan_fn fn, void *arg,
		       struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e == SL_OK)
		e = check_kind(k, d);
	if (e != SL_OK)
		return e;
	if (!fn)
		return sl_diag_set(d, SL_EINVAL, "store_scan: no callback (NULL)");
	struct scan_relay relay = {.fn = fn, .arg = arg, .cb_err = SL_OK};
	s->in_scan = true;
	e = s->ops->scan(s->impl, k, scan_relay_row, &relay, d);
	s->in_scan = false;
	if (relay.cb_err != SL_OK)
		return sl_diag_set(d, relay.cb_err, "scan of %s stopped by the callback at id '%s': %s",
				   kind_names[k], relay.at, sl_err_message(relay.cb_err));
	return note_error(s, e, false, d);
}

/* store_page and store_recent: the checks and relay of store_scan. */
static enum sl_err page_check(struct store *s, enum store_kind k, int limit, store_scan_fn fn,
			      const char *what, struct sl_diag *d)
{
	enum sl_err e = check_usable(s, d);
	if (e == SL_OK)
		e = check_kind(k, d);
	if (e == SL_OK && !fn)
		e = sl_diag_set(d, SL_EINVAL, "%s: no callback (NULL)", what);
	if (e == SL_OK && (limit < 1 || limit > STORE_MAX_PAGE))
		e = sl_diag_set(d, SL_EINVAL, "%s: limit %d is not 1..%d", what, limit,
				STORE_MAX_PAGE);
	return e;
}

static enum sl_err page_done(struct store *s, enum store_kind k, const struct scan_relay *relay,
			     enum sl_err e, struct sl_diag *d)
{
	s->in_scan = false;
	if (relay->cb_err != SL_OK)
		return sl_diag_set(d, relay->cb_err, "read of %s stopped by the callback at id '%s': %s",
				   kind_names[k], relay->at, sl_err_message(relay->cb_err));
	return note_error(s, e, false, d);
}

enum sl_err store_page(struct store *s, enum store_kind k, const char *after,
		       const char *tenant, int limit, store_scan_fn fn, void *arg,
		       struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = page_check(s, k, limit, fn, "store_page", d);
	if (e == SL_OK && after && after[0] && strnlen(after, STORE_MAX_ID + 1) > STORE_MAX_ID)
		e = sl_diag_set(d, SL_ELIMIT, "store_page: cursor longer than %d bytes", STORE_MAX_ID);
	if (e == SL_OK && tenant)
		e = check_name("tenant", tenant, d);
	if (e != SL_OK)
		return e;
	struct scan_relay relay = {.fn = fn, .arg = arg, .cb_err = SL_OK};
	s->in_scan = true;
	e = s->ops->page(s->impl, k, after ? after : "", tenant, limit, scan_relay_row, &relay, d);
	return page_done(s, k, &relay, e, d);
}

enum sl_err store_page_since(struct store *s, enum store_kind k, const char *tenant,
			     int64_t after_ns, int limit, store_scan_fn fn, void *arg,
			     struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = page_check(s, k, limit, fn, "store_page_since", d);
	if (e == SL_OK)
		e = tenant ? check_name("tenant", tenant, d)
			   : sl_diag_set(d, SL_EINVAL, "store_page_since: no tenant (NULL)");
	if (e != SL_OK)
		return e;
	struct scan_relay relay = {.fn = fn, .arg = arg, .cb_err = SL_OK};
	s->in_scan = true;
	e = s->ops->since(s->impl, k, tenant, after_ns, limit, scan_relay_row, &relay, d);
	return page_done(s, k, &relay, e, d);
}

enum sl_err store_recent(struct store *s, enum store_kind k, int limit, store_scan_fn fn,
			 void *arg, struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = page_check(s, k, limit, fn, "store_recent", d);
	if (e != SL_OK)
		return e;
	struct scan_relay relay = {.fn = fn, .arg = arg, .cb_err = SL_OK};
	s->in_scan = true;
	e = s->ops->recent(s->impl, k, limit, scan_relay_row, &relay, d);
	return page_done(s, k, &relay, e, d);
}

enum sl_err store_meta_get(struct store *s, const char *key, char **value_out, struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	if (!value_out)
		return sl_diag_set(d, SL_EINVAL, "store_meta_get: no place for the result (NULL)");
	*value_out = NULL;
	enum sl_err e = check_usable(s, d);
	if (e == SL_OK)
		e = check_meta_key(key, d);
	if (e != SL_OK)
		return e;
	return note_error(s, s->ops->meta_get(s->impl, key, value_out, d), false, d);
}

enum sl_err store_meta_set(struct store *s, const char *key, const char *value,
			   struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e == SL_OK)
		e = check_meta_key(key, d);
	if (e != SL_OK)
		return e;
	if (!value)
		return sl_diag_set(d, SL_EINVAL, "meta '%s': value is missing (NULL)", key);
	size_t n = strnlen(value, STORE_MAX_META_VALUE + 1);
	if (n > STORE_MAX_META_VALUE)
		return sl_diag_set(d, SL_ELIMIT, "meta '%s': value is longer than %u bytes", key,
				   STORE_MAX_META_VALUE);
	return note_error(s, s->ops->meta_set(s->impl, key, value, n, d), true, d);
}

enum sl_err store_meta_scan(struct store *s, store_scan_fn fn, void *arg, struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e != SL_OK)
		return e;
	if (!fn)
		return sl_diag_set(d, SL_EINVAL, "store_meta_scan: no callback (NULL)");
	struct scan_relay relay = {.fn = fn, .arg = arg, .cb_err = SL_OK};
	s->in_scan = true;
	e = s->ops->meta_scan(s->impl, scan_relay_row, &relay, d);
	s->in_scan = false;
	if (relay.cb_err != SL_OK)
		return sl_diag_set(d, relay.cb_err, "meta scan stopped by the callback at '%s'",
				   relay.at);
	return note_error(s, e, false, d);
}

/* ---- the audit log ---- */

static enum sl_err check_seq(const char *what, uint64_t v, struct sl_diag *d)
{
	if (v == 0 || v > (uint64_t)INT64_MAX)
		return sl_diag_set(d, SL_EINVAL, "%s %llu is outside 1..2^63-1", what,
				   (unsigned long long)v);
	return SL_OK;
}

/* Tenant and action are labels for filtering: bounded, printable ASCII. */
static enum sl_err check_label(const char *what, const char *v, struct sl_diag *d)
{
	return v && v[0] ? check_name(what, v, d) : SL_OK;
}

enum sl_err store_audit_append(struct store *s, const struct store_audit_row *r,
			       struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e == SL_OK && !r)
		e = sl_diag_set(d, SL_EINVAL, "store_audit_append: no entry (NULL)");
	if (e == SL_OK)
		e = check_seq("audit seq", r->seq, d);
	if (e == SL_OK)
		e = check_label("audit tenant", r->tenant, d);
	if (e == SL_OK)
		e = check_label("audit action", r->action, d);
	if (e != SL_OK)
		return e;
	if (!r->canonical || r->len == 0 || r->len > STORE_AUDIT_ENTRY_MAX)
		return sl_diag_set(d, r->len > STORE_AUDIT_ENTRY_MAX ? SL_ELIMIT : SL_EINVAL,
				   "audit entry %llu: %zu bytes, want 1..%d",
				   (unsigned long long)r->seq, r->len, STORE_AUDIT_ENTRY_MAX);
	if (!r->leaf_hash || r->leaf_len != STORE_AUDIT_HASH)
		return sl_diag_set(d, SL_EINVAL, "audit entry %llu: leaf hash must be %d bytes",
				   (unsigned long long)r->seq, STORE_AUDIT_HASH);
	if (r->time_ns < 0)
		return sl_diag_set(d, SL_EINVAL, "audit entry %llu: negative time",
				   (unsigned long long)r->seq);
	return note_error(s, s->ops->audit_append(s->impl, r, d), true, d);
}

enum sl_err store_audit_last(struct store *s, uint64_t *seq_out, struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	if (!seq_out)
		return sl_diag_set(d, SL_EINVAL, "store_audit_last: no place for the result (NULL)");
	*seq_out = 0;
	enum sl_err e = check_usable(s, d);
	if (e != SL_OK)
		return e;
	return note_error(s, s->ops->audit_last(s->impl, seq_out, d), false, d);
}

enum sl_err store_audit_leaf(struct store *s, uint64_t seq, uint8_t out[STORE_AUDIT_HASH],
			     struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e == SL_OK)
		e = check_seq("audit seq", seq, d);
	if (e != SL_OK)
		return e;
	return note_error(s, s->ops->audit_leaf(s->impl, seq, out, d), false, d);
}

enum sl_err store_audit_scan(struct store *s, const struct store_audit_filter *f,
			     store_audit_fn fn, void *arg, struct sl_diag *d)
{
	static const struct store_audit_filter all;
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e != SL_OK)
		return e;
	if (!fn)
		return sl_diag_set(d, SL_EINVAL, "store_audit_scan: no callback (NULL)");
	if (!f)
		f = &all;
	if (f->since > (uint64_t)INT64_MAX || f->limit > (uint64_t)INT64_MAX)
		return sl_diag_set(d, SL_EINVAL, "store_audit_scan: since or limit beyond 2^63-1");
	if ((e = check_label("tenant filter", f->tenant, d)) ||
	    (e = check_label("action filter", f->action, d)))
		return e;
	s->in_scan = true;
	e = s->ops->audit_scan(s->impl, f, fn, arg, d);
	s->in_scan = false;
	/* A callback's own verdict arrives as anything but SL_EIO from a read. */
	return note_error(s, e, false, d);
}

enum sl_err store_audit_subtree_put(struct store *s, unsigned level, uint64_t index,
				    const uint8_t hash[STORE_AUDIT_HASH], struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e != SL_OK)
		return e;
	if (level == 0 || level >= 64 || index > (uint64_t)INT64_MAX || !hash)
		return sl_diag_set(d, SL_EINVAL, "audit subtree (level %u, index %llu) is out of range",
				   level, (unsigned long long)index);
	return note_error(s, s->ops->audit_subtree_put(s->impl, level, index, hash, d), true, d);
}

enum sl_err store_audit_subtree_get(struct store *s, unsigned level, uint64_t index,
				    uint8_t out[STORE_AUDIT_HASH], struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e != SL_OK)
		return e;
	if (level == 0 || level >= 64 || index > (uint64_t)INT64_MAX || !out)
		return sl_diag_set(d, SL_EINVAL, "audit subtree (level %u, index %llu) is out of range",
				   level, (unsigned long long)index);
	return note_error(s, s->ops->audit_subtree_get(s->impl, level, index, out, d), false, d);
}

enum sl_err store_audit_subtree_scan(struct store *s, store_audit_subtree_fn fn, void *arg,
				     struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e != SL_OK)
		return e;
	if (!fn)
		return sl_diag_set(d, SL_EINVAL, "store_audit_subtree_scan: no callback (NULL)");
	s->in_scan = true;
	e = s->ops->audit_subtree_scan(s->impl, fn, arg, d);
	s->in_scan = false;
	return note_error(s, e, false, d);
}

enum sl_err store_audit_heads(struct store *s, uint64_t max_seq, store_audit_fn fn, void *arg,
			      struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e != SL_OK)
		return e;
	if (!fn)
		return sl_diag_set(d, SL_EINVAL, "store_audit_heads: no callback (NULL)");
	if (max_seq > (uint64_t)INT64_MAX)
		max_seq = (uint64_t)INT64_MAX;
	s->in_scan = true;
	e = s->ops->audit_heads(s->impl, max_seq, fn, arg, d);
	s->in_scan = false;
	return note_error(s, e, false, d);
}

enum sl_err store_audit_checkpoint_put(struct store *s, uint64_t size, const char *note,
				       struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e == SL_OK)
		e = check_seq("checkpoint size", size, d);
	if (e != SL_OK)
		return e;
	size_t n = note ? strnlen(note, STORE_AUDIT_NOTE_MAX + 1) : 0;
	if (n == 0 || n > STORE_AUDIT_NOTE_MAX)
		return sl_diag_set(d, n ? SL_ELIMIT : SL_EINVAL,
				   "checkpoint note must be 1..%d bytes", STORE_AUDIT_NOTE_MAX);
	return note_error(s, s->ops->audit_cp_put(s->impl, size, note, n, d), true, d);
}

enum sl_err store_audit_checkpoint_scan(struct store *s, store_audit_note_fn fn, void *arg,
					struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_usable(s, d);
	if (e != SL_OK)
		return e;
	if (!fn)
		return sl_diag_set(d, SL_EINVAL, "store_audit_checkpoint_scan: no callback (NULL)");
	s->in_scan = true;
	e = s->ops->audit_cp_scan(s->impl, fn, arg, d);
	s->in_scan = false;
	return note_error(s, e, false, d);
}

enum sl_err store_audit_checkpoint_latest(struct store *s, uint64_t *size_out, char **note_out,
					  struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	if (!size_out || !note_out)
		return sl_diag_set(d, SL_EINVAL, "store_audit_checkpoint_latest: no place for the result");
	*size_out = 0;
	*note_out = NULL;
	enum sl_err e = check_usable(s, d);
	if (e != SL_OK)
		return e;
	return note_error(s, s->ops->audit_cp_latest(s->impl, size_out, note_out, d), false, d);
}

/* ---- leadership ---- */

bool store_shared(const struct store *s)
{
	return s && s->ops->lead_try != NULL;
}

uint64_t store_lead_epoch(const struct store *s)
{
	return s && !s->failed ? s->lead_epoch : 0;
}

int64_t store_lead_replication_lag_ms(const struct store *s)
{
	return store_shared(s) && s->ops->lead_lag ? s->ops->lead_lag(s->impl) : -1;
}

static enum sl_err check_shared(const struct store *s, struct sl_diag *d)
{
	enum sl_err e = check_usable(s, d);
	if (e == SL_OK && !store_shared(s))
		e = sl_diag_set(d, SL_EINVAL, "leadership needs a shared (PostgreSQL) store");
	if (e == SL_OK && s->in_tx)
		e = sl_diag_set(d, SL_EINVAL, "leadership calls are made outside a transaction");
	return e;
}

enum sl_err store_lead_try(struct store *s, const char *holder, const char *url,
			   int64_t lease_ms, bool *won, struct store_leader *out,
			   struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_shared(s, d);
	if (e == SL_OK)
		e = check_name("leader name", holder, d);
	if (e != SL_OK)
		return e;
	if (!won || !url || strlen(url) > STORE_MAX_LEADER_URL || lease_ms < 100 ||
	    lease_ms > 600000)
		return sl_diag_set(d, SL_EINVAL, "store_lead_try: bad url, lease (%lld ms) or result",
				   (long long)lease_ms);
	struct store_leader scratch_out;
	e = note_error(s, s->ops->lead_try(s->impl, holder, url, lease_ms, won,
					   out ? out : &scratch_out, d), true, d);
	if (e == SL_OK && *won)
		s->lead_epoch = (out ? out : &scratch_out)->epoch;
	return e;
}

enum sl_err store_lead_renew(struct store *s, int64_t lease_ms, struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_shared(s, d);
	if (e != SL_OK)
		return e;
	if (!s->lead_epoch)
		return sl_diag_set(d, SL_EINVAL, "store_lead_renew: this store does not lead");
	e = s->ops->lead_renew(s->impl, lease_ms, d);
	if (e == SL_ECONFLICT) {
		/* deposed: nothing more may be written from here */
		note_error(s, e, true, d);
		return SL_ECONFLICT;
	}
	return note_error(s, e, true, d);
}

enum sl_err store_lead_read(struct store *s, struct store_leader *out, struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_shared(s, d);
	if (e == SL_OK && !out)
		e = sl_diag_set(d, SL_EINVAL, "store_lead_read: no place for the result (NULL)");
	if (e != SL_OK)
		return e;
	return note_error(s, s->ops->lead_read(s->impl, out, d), false, d);
}

enum sl_err store_lead_release(struct store *s, struct sl_diag *d)
{
	struct sl_diag scratch;
	d = diag_or(d, &scratch);
	enum sl_err e = check_shared(s, d);
	if (e != SL_OK)
		return e;
	e = note_error(s, s->ops->lead_release(s->impl, d), true, d);
	s->lead_epoch = 0;
	return e;
}

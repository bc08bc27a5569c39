/* ctl.c - the controller's lifecycle and its loop.
 *
 * Why one loop and queued answers: every change a handler makes goes to memory
 * and into the turn's open store transaction; the answers wait in c->answers.
 * At the end of the turn one commit makes the whole turn durable (group
 * commit) and only then are the answers sent, so an acknowledged change is
 * always on disk. If the commit fails, memory is ahead of disk and nothing
 * can make that right in-process: ctl_run returns SL_EIO and main exits
 * without answering anyone. Reads in a turn with writes wait too, so nobody
 * sees a change that might not survive. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agents.h"
#include "audit_log.h"
#include "billing.h"
#include "buf.h"
#include "console_static.h"
#include "ctl_int.h"
#include "events.h"
#include "ctl_workload.h"
#include "images.h"
#include "instances.h"
#include "jobs.h"
#include "file.h"
#include "leader.h"
#include "log.h"
#include "people.h"
#include "tls.h"

#define CTL_MAX_ANSWERS (1 << 20)    /* answers queued in one turn */
#define CTL_MAX_TENANTS (1 << 20)    /* tenants held */
#define CTL_MAX_IDEM_PRUNE (1 << 24) /* saved answers dropped at one start */

static int64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- answers ---- */

/* Grows the answer queue to hold need answers; false when it cannot (out of
 * memory, or the configured bound). */
static bool answers_grow(struct ctl *c, size_t need)
{
	if (c->answers_max < 0)
		return false;
	size_t max = c->answers_max > 0 ? (size_t)c->answers_max : CTL_MAX_ANSWERS;
	return sl_grow(&c->answers, &c->cap_answers, need, max) == SL_OK;
}

void ctl_answer(struct ctl_call *call, int status, const char *ctype, char *body_take,
		size_t len)
{
	struct ctl *c = call->ctl;
	if (call->answered) {
		free(body_take);
		return;
	}
	call->answered = true;
	call->status = status;
	ctl_row_cache_clear(c); /* a row is reused by the answer that follows it only */
	/* The audit entry joins the turn's transaction before the answer is queued. */
	audit_log_answer(call, status, body_take, len);
	if (!answers_grow(c, (size_t)c->nanswers + 1)) {
		/* not reached: handle_cb reserved this slot */
		free(body_take);
		http_respond_error(call->req, SL_ENOMEM, NULL, NULL);
		return;
	}
	c->answers[c->nanswers++] = (struct ctl_answer){call->req, status, body_take, len, ctype};
	call->answer_body = body_take;
	call->answer_len = len;
}

void ctl_answer_json(struct ctl_call *call, int status, json_t *body_take)
{
	char *s = body_take ? json_dumps(body_take, JSON_COMPACT) : NULL;
	if (!s) {
		json_decref(body_take);
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	size_t n = strlen(s);
	char *withnl = realloc(s, n + 2);
	if (withnl) {
		withnl[n++] = '\n';
		withnl[n] = 0;
		s = withnl;
	}
	call->answer_doc = body_take;
	ctl_answer(call, status, "application/json", s, n);
	call->answer_doc = NULL;
	json_decref(body_take);
}

void ctl_answer_error(struct ctl_call *call, enum sl_err e, const char *message,
		      const char *hint)
{
	json_t *doc = http_error_json(e, message, hint);
	char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (!s) {
		call->answered = true;
		http_respond_error(call->req, SL_ENOMEM, NULL, NULL);
		return;
	}
	ctl_answer(call, sl_err_http_status(e), "application/json", s, strlen(s));
}

void ctl_answer_diag(struct ctl_call *call, enum sl_err e, const struct sl_diag *d)
{
	ctl_answer_error(call, e, d && d->msg[0] ? d->msg : NULL, d ? d->hint : NULL);
}

/* ---- store writes ---- */

static bool tx_ensure(struct ctl *c)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	if (c->fatal)
		return false;
	if (c->tx_open)
		return true;
	if (store_begin(c->store, &d)) {
		sl_log_error("store begin failed", "error=%s", d.msg);
		c->fatal = true;
		return false;
	}
	c->tx_open = true;
	return true;
}

bool ctl_put(struct ctl *c, enum store_kind k, const char *id, const char *tenant, json_t *doc)
{
	char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	bool ok = ctl_put_text(c, k, id, tenant, s);
	free(s);
	return ok;
}

bool ctl_put_text(struct ctl *c, enum store_kind k, const char *id, const char *tenant,
		  const char *s)
{
	return ctl_put_text_ns(c, k, id, tenant, s, c->now_ns);
}

bool ctl_put_text_ns(struct ctl *c, enum store_kind k, const char *id, const char *tenant,
		     const char *s, int64_t updated_ns)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	if (!s || !tx_ensure(c)) {
		c->fatal = true;
		return false;
	}
	enum sl_err e = store_put(c->store, k, id, tenant, s, updated_ns, &d);
	if (e) {
		sl_log_error("store write failed", "kind=%s id=%s error=%s", store_kind_name(k), id,
			     d.msg);
		c->fatal = true;
		return false;
	}
	return true;
}

bool ctl_meta_set(struct ctl *c, const char *key, const char *value)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	if (!tx_ensure(c))
		return false;
	if (store_meta_set(c->store, key, value, &d)) {
		sl_log_error("store write failed", "meta=%s error=%s", key, d.msg);
		c->fatal = true;
		return false;
	}
	return true;
}

bool ctl_delete(struct ctl *c, enum store_kind k, const char *id)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	if (!tx_ensure(c))
		return false;
	enum sl_err e = store_forget(c->store, k, id, &d); /* pipelined on PostgreSQL */
	if (e) {
		sl_log_error("store delete failed", "kind=%s id=%s error=%s", store_kind_name(k), id,
			     d.msg);
		c->fatal = true;
		return false;
	}
	return true;
}

/* ---- body validation ---- */

static const char *const ftype_names[] = {"a string", "an integer", "a boolean", "an array",
					  "an object"};

static bool ftype_ok(enum ctl_ftype t, const json_t *v)
{
	switch (t) {
	case FT_STRING: return json_is_string(v);
	case FT_INT: return json_is_integer(v);
	case FT_BOOL: return json_is_boolean(v);
	case FT_ARRAY: return json_is_array(v);
	case FT_OBJECT: return json_is_object(v);
	}
	return false;
}

static const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number with a fraction";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

bool ctl_check_fields(struct ctl_call *call, const json_t *body, const struct ctl_field *f,
		      size_t n, const char *where)
{
	const char *key;
	const json_t *v;
	char msg[SL_DIAG_MSG], hint[SL_DIAG_HINT];
	json_object_foreach((json_t *)body, key, v) {
		size_t i;
		for (i = 0; i < n && strcmp(f[i].name, key); i++)
			;
		if (i == n) {
			size_t off = (size_t)snprintf(hint, sizeof(hint), "known fields:");
			for (size_t k = 0; k < n && off < sizeof(hint); k++)
				off += (size_t)snprintf(hint + off, sizeof(hint) - off, "%s %s",
							k ? "," : "", f[k].name);
			snprintf(msg, sizeof(msg), "unknown field '%.64s' in %s", key, where);
			ctl_answer_error(call, SL_EINVAL, msg, hint);
			return false;
		}
		if (!ftype_ok(f[i].type, v)) {
			snprintf(msg, sizeof(msg), "field '%s' must be %s, got %s", key,
				 ftype_names[f[i].type], json_kind(v));
			ctl_answer_error(call, SL_EINVAL, msg, NULL);
			return false;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (f[i].required && !json_object_get(body, f[i].name)) {
			snprintf(msg, sizeof(msg), "field '%s' is required in %s", f[i].name, where);
			ctl_answer_error(call, SL_EINVAL, msg, NULL);
			return false;
		}
	return true;
}

bool ctl_query_int(const struct ctl_call *call, const char *name, long long def, long long max,
		   long long *out)
{
	const char *s = http_request_param(call->req, name);
	*out = def;
	if (!s)
		return true;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || errno || v < 0 || v > max)
		return false;
	*out = v;
	return true;
}

const char *ctl_str_field(struct ctl_call *call, const json_t *o, const char *name, size_t max,
			  bool *bad)
{
	const char *s = json_string_value(json_object_get(o, name));
	char msg[SL_DIAG_MSG];
	if (!s)
		return NULL;
	size_t len = strlen(s);
	if (len == 0 || len > max) {
		snprintf(msg, sizeof(msg), "field '%s' must be 1..%zu bytes, got %zu", name, max, len);
		ctl_answer_error(call, len ? SL_ELIMIT : SL_EINVAL, msg, NULL);
		*bad = true;
		return NULL;
	}
	return s;
}

/* ---- init ---- */

static char *path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

static bool file_exists(const char *dir, const char *name)
{
	char *p = path_join(dir, name);
	struct stat st;
	bool r = p && stat(p, &st) == 0;
	free(p);
	return r;
}

static enum sl_err write_secret_file(const char *dir, const char *secret, struct sl_diag *d)
{
	char *p = path_join(dir, CTL_ADMIN_TOKEN_FILE);
	if (!p)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	enum sl_err e = SL_OK;
	if (fd < 0) {
		e = sl_diag_set(d, SL_EIO, "cannot create %s: %s", p, strerror(errno));
	} else {
		size_t n = strlen(secret);
		if (write(fd, secret, n) != (ssize_t)n || write(fd, "\n", 1) != 1 || fsync(fd))
			e = sl_diag_set(d, SL_EIO, "cannot write %s: %s", p, strerror(errno));
		close(fd);
	}
	free(p);
	return e;
}

enum sl_err ctl_init_data(const char *dir, int64_t now_ns, char **token_out, struct sl_diag *d)
{
	return ctl_init_data_at(dir, NULL, now_ns, token_out, d);
}

/* A shared store is initialised once: its meta says so. */
static enum sl_err init_check_shared(struct store *s, const char *where, struct sl_diag *d)
{
	char *v = NULL;
	enum sl_err e = store_meta_get(s, "initialized_at", &v, d);
	free(v);
	if (e == SL_ENOTFOUND)
		return SL_OK;
	if (e == SL_OK) {
		sl_diag_hint(d, "serve it with 'suanlid serve --store URL'; a standby needs only a "
				"copy of the data directory's keys");
		return sl_diag_set(d, SL_EEXIST, "%.200s already holds a suanli store", where);
	}
	return e;
}

enum sl_err ctl_init_data_at(const char *dir, const char *store_url, int64_t now_ns,
			     char **token_out, struct sl_diag *d)
{
	struct store *s = NULL;
	struct ctl_token t;
	char secret[64];
	*token_out = NULL;
	if (sodium_init() < 0)
		return sl_diag_set(d, SL_EIO, "libsodium failed to initialise");
	if ((!store_url && file_exists(dir, STORE_DB_FILE)) || file_exists(dir, CTL_ADMIN_TOKEN_FILE)) {
		sl_diag_hint(d, "serve it with 'suanlid serve --data %.200s', or choose a new directory",
			     dir);
		return sl_diag_set(d, SL_EEXIST, "%.200s already holds a suanli store", dir);
	}
	if (store_url && mkdir(dir, 0700) != 0 && errno != EEXIST)
		return sl_diag_set(d, SL_EIO, "cannot create data directory %.200s: %s", dir,
				   strerror(errno));
	enum sl_err e = store_open(store_url ? store_url : dir, &s, d);
	if (e)
		return e;
	if (store_url && (e = init_check_shared(s, "the database", d))) {
		store_close(s);
		return e;
	}
	memset(&t, 0, sizeof(t));
	auth_token_generate(&t, secret);
	t.role = CTL_ROLE_ADMIN;
	snprintf(t.user, sizeof(t.user), "admin");
	t.created_ns = now_ns;
	json_t *doc = token_to_json(&t, true);
	char *js = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	char when[32];
	ctl_time_fmt(now_ns, when);
	json_decref(doc);
	if (!js)
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	if (!e)
		e = store_begin(s, d);
	if (!e)
		e = store_put(s, STORE_TOKENS, t.id, NULL, js, now_ns, d);
	if (!e)
		e = store_meta_set(s, "initialized_at", when, d);
	if (!e)
		e = store_commit(s, d);
	free(js);
	store_close(s);
	if (!e)
		e = write_secret_file(dir, secret, d);
	if (!e)
		e = audit_log_key_create(dir, d);
	if (!e) {
		*token_out = strdup(secret);
		if (!*token_out)
			e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	sodium_memzero(secret, sizeof(secret));
	return e;
}

/* ---- loading ---- */

enum sl_err ctl_tenant_add(struct ctl *c, const struct ctl_tenant *t)
{
	if (sl_grow(&c->tenants.tenants, &c->tenants.cap_tenants, c->tenants.ntenants + 1, CTL_MAX_TENANTS))
		return SL_ENOMEM;
	enum sl_err e = strmap_add(c->tenants.tenant_by_name, t->name, c->tenants.ntenants);
	if (e)
		return e;
	c->tenants.tenants[c->tenants.ntenants++] = *t;
	return SL_OK;
}

struct ctl_tenant *ctl_tenant_find(struct ctl *c, const char *name)
{
	int i = name ? strmap_get(c->tenants.tenant_by_name, name, -1) : -1;
	return i >= 0 ? &c->tenants.tenants[i] : NULL;
}

struct load_arg {
	struct ctl *c;
	struct sl_diag *d;
};

static json_t *load_json(const char *text, struct sl_diag *d)
{
	json_error_t je;
	json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	if (!o || !json_is_object(o)) {
		json_decref(o);
		sl_diag_set(d, SL_EPARSE, "stored record is not a JSON object: %s", je.text);
		return NULL;
	}
	return o;
}

static enum sl_err load_tenant(void *arg, const char *id, const char *tenant, const char *json)
{
	struct load_arg *a = arg;
	struct ctl_tenant t;
	(void)id;
	(void)tenant;
	json_t *o = load_json(json, a->d);
	if (!o)
		return SL_EPARSE;
	enum sl_err e = tenant_from_json(o, &t, a->d);
	json_decref(o);
	if (!e && (e = ctl_tenant_add(a->c, &t))) {
		json_decref(t.regions);
		json_decref(t.quotas);
	}
	return e;
}

static enum sl_err load_token(void *arg, const char *id, const char *tenant, const char *json)
{
	struct load_arg *a = arg;
	struct ctl_token t;
	(void)id;
	(void)tenant;
	json_t *o = load_json(json, a->d);
	if (!o)
		return SL_EPARSE;
	enum sl_err e = token_from_json(o, &t, a->d);
	json_decref(o);
	return e ? e : ctl_token_add(a->c, &t);
}

static enum sl_err load_node(void *arg, const char *id, const char *tenant, const char *json)
{
	struct load_arg *a = arg;
	(void)tenant;
	json_t *o = load_json(json, a->d);
	if (!o)
		return SL_EPARSE;
	if (json_is_true(json_object_get(o, "drained")))
		json_object_set(a->c->drains, id, o);
	json_decref(o);
	return SL_OK;
}

static enum sl_err load_resv(void *arg, const char *id, const char *tenant, const char *json)
{
	struct load_arg *a = arg;
	struct ctl *c = a->c;
	(void)id;
	(void)tenant;
	json_t *o = load_json(json, a->d);
	if (!o)
		return SL_EPARSE;
	if (sl_grow(&c->tenants.resvs, &c->tenants.cap_resvs, c->tenants.nresvs + 1, CTL_MAX_RESVS)) {
		json_decref(o);
		return SL_ENOMEM;
	}
	enum sl_err e = resv_from_json(o, &c->tenants.resvs[c->tenants.nresvs], a->d);
	json_decref(o);
	if (!e)
		c->tenants.nresvs++;
	return e;
}

struct prune_arg {
	struct ctl *c;
	char **ids;
	int n, cap;
};

static enum sl_err idem_old(void *arg, const char *id, const char *tenant, const char *json)
{
	struct prune_arg *a = arg;
	int64_t at = 0;
	(void)tenant;
	json_t *o = json_loads(json, 0, NULL);
	const char *s = json_string_value(json_object_get(o, "at"));
	bool old = !s || !ctl_time_parse(s, &at) ||
		   at < a->c->now_ns - (int64_t)CTL_IDEM_TTL_S * 1000000000;
	json_decref(o);
	if (!old)
		return SL_OK;
	if (sl_grow(&a->ids, &a->cap, a->n + 1, CTL_MAX_IDEM_PRUNE) || !(a->ids[a->n] = strdup(id)))
		return SL_ENOMEM;
	a->n++;
	return SL_OK;
}

/* Saved Idempotency-Key answers live a day (clients retry within minutes);
 * dropping older ones at start keeps the table bounded by a day's POSTs. */
static enum sl_err idem_prune(struct ctl *c, struct sl_diag *d)
{
	struct prune_arg a = {c, NULL, 0, 0};
	enum sl_err e = store_scan(c->store, STORE_IDEMPOTENCY, idem_old, &a, d);
	for (int i = 0; i < a.n; i++) {
		if (!e && !c->tx_open && !(e = store_begin(c->store, d)))
			c->tx_open = true;
		if (!e)
			e = store_delete(c->store, STORE_IDEMPOTENCY, a.ids[i], d);
		free(a.ids[i]);
	}
	free(a.ids);
	if (!e && a.n)
		sl_log_info("dropped old idempotency keys", "count=%d", a.n);
	return e;
}

static enum sl_err load_stored_fleet(struct ctl *c, struct sl_diag *d)
{
	char *cur = NULL, *row = NULL;
	enum sl_err e = store_meta_get(c->store, "fleet.current", &cur, d);
	if (e == SL_ENOTFOUND) {
		sl_diag_clear(d);
		return SL_OK;
	}
	if (!e)
		e = store_get(c->store, STORE_FLEETS, cur, &row, d);
	json_t *o = !e ? load_json(row, d) : NULL;
	if (!e && !o)
		e = SL_EPARSE;
	if (!e) {
		const char *yaml = json_string_value(json_object_get(o, "yaml"));
		c->fleet_version = json_integer_value(json_object_get(o, "version"));
		snprintf(c->fleet_id, sizeof(c->fleet_id), "%s", cur);
		e = yaml ? ctl_fleet_replace(c, yaml, strlen(yaml), "stored fleet", false, d)
			 : sl_diag_set(d, SL_EPARSE, "stored fleet %s has no text", cur);
	}
	json_decref(o);
	free(cur);
	free(row);
	return e;
}

/* True when text is the stored current fleet's text. */
static bool stored_fleet_equals(struct ctl *c, const char *text, size_t len)
{
	char *row = NULL;
	struct sl_diag d;
	bool same = false;
	sl_diag_clear(&d);
	if (!c->fleet_id[0] || store_get(c->store, STORE_FLEETS, c->fleet_id, &row, &d))
		return false;
	json_t *o = json_loads(row, 0, NULL);
	const json_t *y = json_object_get(o, "yaml");
	same = json_is_string(y) && json_string_length(y) == len &&
	       memcmp(json_string_value(y), text, len) == 0;
	json_decref(o);
	free(row);
	return same;
}

static void gone_cb(struct http_request *req, void *ctx)
{
	/* The answer is queued for the end of the turn (or this is shutdown);
	 * an answer to a gone request sends nothing and frees it. */
	struct ctl *c = ctx;
	for (int i = 0; i < c->nanswers; i++)
		if (c->answers[i].req == req)
			return;
	jobs_request_gone(c, req); /* a waiting work poll: forgotten before it is freed */
	events_request_gone(c, req);
	people_request_gone(c, req); /* a sign-in being checked */
	http_respond_error(req, SL_EIO, "the controller is stopping", NULL);
}

/* Every request handed to the handler and not yet answered gets its answer
 * slot now, before the handler changes anything: ctl_answer then never
 * finds the queue full, so a client is never told 503 for a change that
 * commits with the turn (and its audit entry). When the slots cannot be
 * had, the request is refused here and nothing happens. */
static void handle_cb(struct http_request *req, void *ctx)
{
	struct ctl *c = ctx;
	if (!answers_grow(c, (size_t)c->nanswers + http_server_pending(c->http))) {
		http_request_set_route(req, "answers_full");
		http_respond_error(req, SL_ENOMEM, "the controller cannot take more requests now",
				   "retry in a moment");
		return;
	}
	audit_log_dispatch(ctx, req);
}

/* A fleet file may be as large as fleet.h promises (FLEET_MAX_FILE, the bound
 * `suanlid serve --fleet` reads with too); every other body keeps the HTTP
 * layer's general bound. */
static size_t max_body_cb(const char *method, const char *path, void *ctx)
{
	(void)ctx;
	if (strcmp(method, "PUT") == 0 && strcmp(path, "/v1/fleet") == 0)
		return FLEET_MAX_FILE;
	return 0;
}

static enum sl_err ctl_load(struct ctl *c, const struct ctl_opts *o, struct sl_diag *d)
{
	struct load_arg a = {c, d};
	enum sl_err e;
	if ((e = store_scan(c->store, STORE_TENANTS, load_tenant, &a, d)) ||
	    (e = store_scan(c->store, STORE_TOKENS, load_token, &a, d)) ||
	    (e = store_scan(c->store, STORE_NODES, load_node, &a, d)) ||
	    (e = store_scan(c->store, STORE_RESERVATIONS, load_resv, &a, d)) ||
	    (e = load_stored_fleet(c, d)))
		return e;
	if ((e = ctl_leases_load(c, d)) || (e = idem_prune(c, d)))
		return e;
	if (o->fleet_file) {
		char *text = NULL;
		size_t len = 0;
		if ((e = sl_read_file(o->fleet_file, FLEET_MAX_FILE, &text, &len, d)))
			return e;
		/* The same file at every start (make run) is not a new version. */
		if (stored_fleet_equals(c, text, len))
			sl_log_info("fleet unchanged", "file=%s version=%lld", o->fleet_file,
				    (long long)c->fleet_version);
		else if (!(e = ctl_fleet_replace(c, text, len, o->fleet_file, true, d)))
			audit_log_system(c, "fleet.load", "", o->fleet_file, "ok"); /* fatal on failure */
		free(text);
		if (e)
			return e;
	}
	ctl_leases_trim(c);
	/* Instances before billing: billing leaves their leases' GPU time to them. */
	struct instances_opts io = {o->instance_retention_s};
	if ((e = instances_start(c, &io, d)))
		return e;
	/* Billing before the scheduler, whose first pass may start leases. */
	struct billing_opts bo = {o->currency, o->billing_zone,
				  o->grace_s == 0 ? -1 : o->grace_s < 0 ? 0 : o->grace_s};
	if ((e = billing_start(c, &bo, d)))
		return e;
	struct agents_opts ao = {o->heartbeat_s, o->unreachable_after_s, o->down_after_s};
	struct people_opts po = {o->session_idle_s, o->session_max_s, o->signin_fails_user,
				 o->signin_fails_source};
	if ((e = agents_start(c, &ao, d)) || (e = jobs_start(c, d)) || (e = images_start(c, d)) ||
	    (e = people_start(c, &po, d)) || (e = events_start(c, d)) ||
	    (e = console_start(c, o->console_dir, d)))
		return e;
	/* The scheduler may start waiting leases at once: that is a change to
	 * commit like any other. */
	if ((e = ctl_sched_start(c, d)))
		return e;
	ctl_workload_save(c);
	if (c->fatal)
		return sl_diag_set(d, SL_EIO, "could not store the start-up changes");
	if (c->tx_open && (e = store_commit(c->store, d)))
		return e;
	c->tx_open = false;
	return SL_OK;
}

enum sl_err ctl_new(const struct ctl_opts *o, int64_t now_ns, struct ctl **out,
		    struct sl_diag *d)
{
	*out = NULL;
	if (!o->data_dir)
		return sl_diag_set(d, SL_EINVAL, "no data directory given");
	if (!o->store_take && !file_exists(o->data_dir, STORE_DB_FILE)) {
		sl_diag_hint(d, "create it with 'suanlid init --data %.200s'", o->data_dir);
		return sl_diag_set(d, SL_ENOTFOUND, "%.200s holds no suanli store", o->data_dir);
	}
	if (sodium_init() < 0)
		return sl_diag_set(d, SL_EIO, "libsodium failed to initialise");
	struct ctl *c = calloc(1, sizeof(*c));
	if (!c)
		return SL_ENOMEM;
	c->now_ns = now_ns;
	c->answers_max = o->answer_queue_max;
	c->simulate = o->simulate;
	if (!ctl_placement_parse(o->placement, &c->bestfit)) {
		free(c);
		return sl_diag_set(d, SL_EINVAL, "placement policy '%.40s': expected frag or bestfit",
				   o->placement);
	}
	c->lt.keep_ended = o->keep_ended > 0 ? o->keep_ended : CTL_KEEP_ENDED_DEFAULT;
	c->notice_ns = o->preempt_notice_s >= 0 ? o->preempt_notice_s * 1000000000 : -1;
	c->data_dir = strdup(o->data_dir);
	c->drains = json_object();
	c->fleet = calloc(1, sizeof(*c->fleet));
	enum sl_err e = (!c->data_dir || !c->drains || !c->fleet) ? SL_ENOMEM : SL_OK;
	if (!e && (e = fleet_init(c->fleet)) == SL_OK)
		c->fleet_ok = true;
	if (!e)
		e = placer_new(c->fleet, &c->placer);
	if (!e && (e = strmap_new(&c->tenants.tenant_by_name)) == SL_OK &&
	    (e = strmap_new(&c->auth.token_by_hash)) == SL_OK)
		e = strmap_new(&c->auth.token_by_id);
	if (e) {
		sl_diag_set(d, e, "out of memory");
		ctl_free(c);
		return e;
	}
	if (o->store_take)
		c->store = o->store_take; /* ours from here on, even when we fail */
	else
		e = store_open(o->data_dir, &c->store, d);
	if (!e && o->leader)
		e = leader_attach(c, o->leader, d);
	if (e || (e = audit_log_open(c, d)) ||
	    (e = ctl_load(c, o, d))) {
		ctl_free(c);
		return e;
	}
	struct http_callbacks cb = {handle_cb, gone_cb, ctl_metrics_done, c, max_body_cb};
	struct http_limits lim = {.max_connections = o->max_connections};
	const char *listen = o->listen ? o->listen : "127.0.0.1:7400";
	if ((e = ctl_tls_decide(o, listen, &lim, d))) {
		ctl_free(c);
		return e;
	}
	c->tls = lim.tls_cert_callback != NULL;
	if ((e = http_server_new(listen, &lim, &cb, &c->http, d))) {
		ctl_free(c);
		return e;
	}
	*out = c;
	return SL_OK;
}

bool ctl_tls_on(const struct ctl *c)
{
	return c->tls;
}

uint16_t ctl_port(const struct ctl *c)
{
	return http_server_port(c->http);
}

void ctl_free(struct ctl *c)
{
	if (!c)
		return;
	http_server_free(c->http);
	if (c->tls)
		ctl_tls_unload();
	ctl_sched_stop(c);
	jobs_free(c);
	instances_free(c);
	images_free(c);
	people_free(c);
	events_free(c);
	console_free(c);
	agents_free(c);
	billing_free(c);
	for (int i = 0; i < c->nanswers; i++)
		free(c->answers[i].body);
	free(c->answers);
	ctl_leases_trim(c);
	for (int i = 0; i < c->lt.nleases; i++)
		if (c->lt.leases[i]) {
			lease_release_mem(c->lt.leases[i]);
			free(c->lt.leases[i]);
		}
	free(c->lt.leases);
	free(c->lt.ended);
	free(c->lt.loaded);
	free(c->lt.expiry);
	for (int i = 0; i < c->tenants.ntenants; i++) {
		json_decref(c->tenants.tenants[i].regions);
		json_decref(c->tenants.tenants[i].quotas);
	}
	free(c->tenants.tenants);
	free(c->auth.tokens);
	for (int i = 0; i < c->tenants.nresvs; i++)
		json_decref(c->tenants.resvs[i].nodes);
	free(c->tenants.resvs);
	strmap_free(c->tenants.tenant_by_name);
	strmap_free(c->auth.token_by_hash);
	strmap_free(c->auth.token_by_id);
	ctl_names_free(c); /* after the leases, which point at them */
	ctl_lease_scores_free(c);
	placer_free(c->placer);
	ctl_workload_free(c);
	if (c->fleet_ok)
		fleet_release(c->fleet);
	free(c->fleet);
	json_decref(c->drains);
	free(c->metrics.mreq);
	if (c->store) {
		if (c->tx_open) {
			struct sl_diag d;
			if (store_rollback(c->store, &d))
				sl_log_warn("store rollback failed", "error=%s", d.msg);
		}
		leader_free(c); /* a clean stop hands leadership over at once */
		store_close(c->store);
	}
	audit_log_close(c);
	free(c->data_dir);
	free(c);
}

/* ---- the loop ---- */

/* Commits the turn and sends its answers. SL_EIO: nothing may be sent. */
static enum sl_err end_turn(struct ctl *c, struct sl_diag *d)
{
	ctl_workload_save(c);
	if (c->fatal)
		return sl_diag_set(d, SL_EIO, "a store write failed in this turn");
	if (c->tx_open) {
		enum sl_err e = ctl_metrics_commit(c, d);
		c->tx_open = false;
		if (e) {
			c->fatal = true;
			return e;
		}
	}
	for (int i = 0; i < c->nanswers; i++) {
		struct ctl_answer *a = &c->answers[i];
		leader_stamp(c, a->req);
		http_respond(a->req, a->status, a->ctype, a->body, a->len);
		free(a->body);
	}
	c->nanswers = 0;
	ctl_leases_trim(c);
	return SL_OK;
}

enum sl_err ctl_run(struct ctl *c, int stop_fd, struct sl_diag *d)
{
	bool stop = false, flush = false;
	while (!stop) {
		struct pollfd p[2] = {{http_server_fd(c->http), POLLIN, 0}, {stop_fd, POLLIN, 0}};
		int tmo = http_server_timeout_ms(c->http);
		int64_t next = c->next_deadline;
		if (next) {
			int64_t ms = (next - realtime_ns()) / 1000000 + 1;
			if (ms < 0)
				ms = 0;
			if (tmo < 0 || ms < tmo)
				tmo = ms > 60000 ? 60000 : (int)ms;
		}
		tmo = leader_timeout_ms(c, tmo);
		if (flush)
			tmo = 0;
		if (poll(p, stop_fd >= 0 ? 2 : 1, tmo) < 0 && errno != EINTR)
			return sl_diag_set(d, SL_EIO, "poll: %s", strerror(errno));
		if (stop_fd >= 0 && (p[1].revents & POLLIN))
			stop = ctl_stop_or_reload(c, stop_fd);
		c->now_ns = realtime_ns();
		enum sl_err e = http_server_run(c->http);
		if (e)
			sl_log_error("http server error", "error=%s", sl_err_message(e));
		if (c->tls)
			ctl_tls_watch(c);
		c->next_deadline = audit_log_tick(c, ctl_expire(c));
		billing_tick(c);
		agents_tick(c);
		instances_tick(c);
		jobs_tick(c);
		people_tick(c);
		events_tick(c);
		flush = c->nanswers > 0;
		/* a leader past its fence deadline (stopped, stalled) answers nobody */
		if ((e = leader_check(c, d)))
			return e;
		if ((e = end_turn(c, d))) {
			sl_log_error("commit failed; stopping without answering", "error=%s", d->msg);
			return store_lead_epoch(c->store) || !store_shared(c->store) ? SL_EIO
										: SL_ECONFLICT;
		}
		if ((e = leader_tick(c, d)))
			return e;
	}
	sl_log_info("stopping", "leases_active=%d queue=%d", c->lt.nactive,
		    c->sched ? sched_pending_count(c->sched) : 0);
	return SL_OK;
}

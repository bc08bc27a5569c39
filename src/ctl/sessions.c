/* sessions.c - signing in, the session cookie and its CSRF token, the rate
 * limit on failed sign-ins (docs/console.md, docs/security.md).
 *
 * The cookie is "ss_" + base64url(32 random bytes). Only its SHA-256 is kept
 * (in memory and as the store row's id), like a token's. The CSRF token is
 * derived from the cookie: BLAKE2b keyed with the cookie over a fixed label,
 * so the controller stores nothing for it, a restart keeps it valid, and only
 * someone holding the cookie (which scripts cannot read: HttpOnly) or the
 * answer to the sign-in or GET /v1/session (which other origins cannot read)
 * knows it. A state-changing request made with the cookie must send it in
 * X-CSRF-Token; a bearer token needs none, since a browser never sends one
 * on its own.
 *
 * Expiry: a session ends PEOPLE_IDLE after its last use and PEOPLE_MAX after
 * sign-in, whichever comes first. Its last use is written back to the store
 * at most once a minute (or a quarter of the idle time), so a restart or a
 * standby taking over sees it at most that stale.
 *
 * The password is checked on the worker thread (pw_worker.h): the sign-in
 * is deferred and answered by people_tick once the check is done.
 *
 * Failed sign-ins are counted per user name and per source address in a
 * fixed window; past the limit a sign-in is refused with 429 and Retry-After
 * before any password is looked at. An attempt counts when it is handed to
 * the worker (and is taken back if it succeeds), so parallel attempts
 * cannot pass the limit. Every verified failure is an audit entry
 * (session.fail: actor the source address, target the name tried, never the
 * password); the moment a limit trips is one more (session.locked), the
 * refusals after it are not (they cost the attacker nothing and would let
 * them fill the log). A successful sign-in is session.create. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "audit_log.h"
#include "buf.h"
#include "ctl_int.h"
#include "log.h"
#include "people_int.h"
#include "pw_worker.h"

#define COOKIE_PREFIX "ss_"
#define COOKIE_RANDOM 32
#define COOKIE_MAX 128
#define CSRF_LABEL "suanli-console-csrf-v1"
#define CSRF_BYTES 24
#define CSRF_TEXT sodium_base64_ENCODED_LEN(CSRF_BYTES, sodium_base64_VARIANT_URLSAFE_NO_PADDING)
#define SWEEP_EVERY_NS (10LL * 1000000000)
#define SEEN_WRITE_NS (60LL * 1000000000)
#define FAIL_KEYS_MAX 100000 /* failure counters held; past it, new keys are limited at once */
#define NS 1000000000LL
#define SIGNIN_POLL_NS (1000000LL) /* how often the loop looks for checked sign-ins */

/* ---- the table ---- */

static json_t *session_to_json(const struct ctl_session *s)
{
	return json_pack("{s:s, s:s, s:I, s:I}", "id", s->id, "user", s->user, "created_ns",
			 (json_int_t)s->created_ns, "seen_ns", (json_int_t)s->seen_ns);
}

static void session_store(struct ctl *c, struct ctl_session *s)
{
	const struct ctl_user *u = people_user_find(c, s->user);
	s->stored_seen_ns = s->seen_ns;
	ctl_put(c, STORE_SESSIONS, s->hash, u && u->tenant[0] ? u->tenant : NULL,
		session_to_json(s));
}

static struct ctl_session *session_find(struct ctl *c, const char *hash)
{
	struct ctl_people *p = c->people;
	json_t *v = json_object_get(p->session_by_hash, hash);
	if (!v)
		return NULL;
	struct ctl_session *s = &p->sessions[json_integer_value(v)];
	return sodium_memcmp(s->hash, hash, CTL_HASH_HEX) == 0 ? s : NULL;
}

static enum sl_err session_add(struct ctl *c, const struct ctl_session *s)
{
	struct ctl_people *p = c->people;
	enum sl_err e = sl_grow(&p->sessions, &p->cap_sessions, p->nsessions + 1,
				PEOPLE_MAX_SESSIONS);
	if (e)
		return e;
	if (json_object_set_new(p->session_by_hash, s->hash, json_integer(p->nsessions)))
		return SL_ENOMEM;
	p->sessions[p->nsessions++] = *s;
	return SL_OK;
}

/* Ends session s: out of memory and the store. */
static void session_end(struct ctl *c, struct ctl_session *s)
{
	struct ctl_people *p = c->people;
	int i = (int)(s - p->sessions);
	ctl_delete(c, STORE_SESSIONS, s->hash);
	json_object_del(p->session_by_hash, s->hash);
	if (i != p->nsessions - 1) {
		p->sessions[i] = p->sessions[p->nsessions - 1];
		json_object_set_new(p->session_by_hash, p->sessions[i].hash, json_integer(i));
	}
	p->nsessions--;
}

static bool session_expired(const struct ctl_people *p, const struct ctl_session *s, int64_t now)
{
	return now - s->seen_ns >= p->o.idle_s * NS || now - s->created_ns >= p->o.max_s * NS;
}

static int64_t session_expires_ns(const struct ctl_people *p, const struct ctl_session *s)
{
	int64_t idle = s->seen_ns + p->o.idle_s * NS, max = s->created_ns + p->o.max_s * NS;
	return idle < max ? idle : max;
}

void people_end_sessions(struct ctl *c, const char *user, const char *keep)
{
	struct ctl_people *p = c->people;
	for (int i = p->nsessions - 1; i >= 0; i--) {
		struct ctl_session *s = &p->sessions[i];
		if (!strcmp(s->user, user) && (!keep || strcmp(s->hash, keep)))
			session_end(c, s);
	}
}

/* Ends user's oldest sessions until at most keep remain, so one password
 * cannot fill the table. */
static void end_oldest_beyond(struct ctl *c, const char *user, int keep)
{
	struct ctl_people *p = c->people;
	for (;;) {
		int n = 0, oldest = -1;
		for (int i = 0; i < p->nsessions; i++) {
			if (strcmp(p->sessions[i].user, user))
				continue;
			n++;
			if (oldest < 0 || p->sessions[i].created_ns < p->sessions[oldest].created_ns)
				oldest = i;
		}
		if (n <= keep)
			return;
		sl_log_info("session ended for a newer one", "user=%s session=%s", user,
			    p->sessions[oldest].id);
		session_end(c, &p->sessions[oldest]);
	}
}

const char *people_call_user(const struct ctl_call *call)
{
	if (!call->session[0])
		return NULL;
	const struct ctl_session *s = session_find(call->ctl, call->session);
	return s ? s->user : NULL;
}

/* ---- start, stop, tick ---- */

static void signins_collect(struct ctl *c);


static enum sl_err load_session(void *arg, const char *id, const char *tenant, const char *json)
{
	struct people_load *a = arg;
	struct ctl_session s;
	(void)tenant;
	json_t *o = json_loads(json, 0, NULL);
	const char *sid = json_string_value(json_object_get(o, "id"));
	const char *user = json_string_value(json_object_get(o, "user"));
	memset(&s, 0, sizeof(s));
	if (!o || strlen(id) != CTL_HASH_HEX || !sid || strlen(sid) != CTL_TOKEN_ID_LEN || !user ||
	    strlen(user) > CTL_NAME_MAX) {
		json_decref(o);
		return sl_diag_set(a->d, SL_EPARSE, "session %.16s...: record is malformed", id);
	}
	memcpy(s.hash, id, CTL_HASH_HEX + 1);
	memcpy(s.id, sid, CTL_TOKEN_ID_LEN + 1);
	snprintf(s.user, sizeof(s.user), "%s", user);
	s.created_ns = json_integer_value(json_object_get(o, "created_ns"));
	s.seen_ns = s.stored_seen_ns = json_integer_value(json_object_get(o, "seen_ns"));
	json_decref(o);
	/* expired ones are ended by the first sweep */
	return session_add(a->c, &s);
}

enum sl_err people_start(struct ctl *c, const struct people_opts *o, struct sl_diag *d)
{
	struct ctl_people *p = calloc(1, sizeof(*p));
	if (!p)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	c->people = p;
	p->o = *o;
	if (p->o.idle_s <= 0)
		p->o.idle_s = PEOPLE_IDLE_DEFAULT_S;
	if (p->o.max_s <= 0)
		p->o.max_s = PEOPLE_MAX_DEFAULT_S;
	if (p->o.fails_user <= 0)
		p->o.fails_user = PEOPLE_FAILS_USER_DEFAULT;
	if (p->o.fails_source <= 0)
		p->o.fails_source = PEOPLE_FAILS_SOURCE_DEFAULT;
	p->user_by_name = json_object();
	p->session_by_hash = json_object();
	p->fails = json_object();
	if (!p->user_by_name || !p->session_by_hash || !p->fails)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	if (pw_worker_start(&p->worker, d))
		return SL_EIO;
	struct people_load la = {c, d};
	enum sl_err e = store_scan(c->store, STORE_USERS, people_load_user, &la, d);
	if (!e)
		e = store_scan(c->store, STORE_SESSIONS, load_session, &la, d);
	return e;
}

void people_free(struct ctl *c)
{
	struct ctl_people *p = c->people;
	if (!p)
		return;
	pw_worker_stop(p->worker); /* the jobs it held are freed with it */
	for (int i = 0; i < p->npending; i++)
		free(p->pending[i]);
	free(p->pending);
	sodium_memzero(p->users, sizeof(*p->users) * (size_t)p->cap_users);
	free(p->users);
	sodium_memzero(p->sessions, sizeof(*p->sessions) * (size_t)p->cap_sessions);
	free(p->sessions);
	json_decref(p->user_by_name);
	json_decref(p->session_by_hash);
	json_decref(p->fails);
	free(p);
	c->people = NULL;
}

void people_tick(struct ctl *c)
{
	struct ctl_people *p = c->people;
	if (!p || c->fatal)
		return;
	signins_collect(c);
	/* The worker cannot wake the loop: while it checks, the loop looks
	 * again every millisecond or two. */
	if (pw_worker_inflight(p->worker) &&
	    (!c->next_deadline || c->next_deadline > c->now_ns + SIGNIN_POLL_NS))
		c->next_deadline = c->now_ns + SIGNIN_POLL_NS;
	if (c->now_ns < p->next_sweep_ns)
		goto deadline;
	p->next_sweep_ns = c->now_ns + SWEEP_EVERY_NS;
	int ended = 0;
	for (int i = p->nsessions - 1; i >= 0; i--)
		if (session_expired(p, &p->sessions[i], c->now_ns) ||
		    !people_user_find(c, p->sessions[i].user)) {
			session_end(c, &p->sessions[i]);
			ended++;
		}
	if (ended)
		sl_log_info("sessions expired", "count=%d", ended);
	const char *k;
	json_t *v;
	void *tmp;
	json_object_foreach_safe(p->fails, tmp, k, v) {
		if (json_integer_value(json_array_get(v, 1)) + PEOPLE_FAIL_WINDOW_S * NS <= c->now_ns)
			json_object_del(p->fails, k);
	}
deadline:
	if (p->nsessions && (!c->next_deadline || c->next_deadline > p->next_sweep_ns))
		c->next_deadline = p->next_sweep_ns;
}

/* ---- the cookie ---- */

/* The value of cookie name in a Cookie header, copied to out; false when
 * absent or too long. */
static bool cookie_value(const char *header, const char *name, char *out, size_t n)
{
	size_t nl = strlen(name);
	for (const char *s = header; s && *s;) {
		while (*s == ' ' || *s == '\t' || *s == ';')
			s++;
		const char *end = strchr(s, ';');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		if (len > nl && !strncmp(s, name, nl) && s[nl] == '=') {
			size_t vl = len - nl - 1;
			while (vl && (s[nl + 1 + vl - 1] == ' ' || s[nl + 1 + vl - 1] == '\t'))
				vl--;
			if (vl == 0 || vl >= n)
				return false;
			memcpy(out, s + nl + 1, vl);
			out[vl] = 0;
			return true;
		}
		s = end;
	}
	return false;
}

static void csrf_of(const char *cookie, char out[CSRF_TEXT])
{
	unsigned char mac[CSRF_BYTES];
	crypto_generichash(mac, sizeof(mac), (const unsigned char *)CSRF_LABEL, strlen(CSRF_LABEL),
			   (const unsigned char *)cookie, strlen(cookie));
	sodium_bin2base64(out, CSRF_TEXT, mac, sizeof(mac), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

/* Set-Cookie for a new session (value) or one that ends (NULL). */
static void set_cookie(struct ctl_call *call, const char *value)
{
	char h[COOKIE_MAX + 160];
	if (value)
		snprintf(h, sizeof(h), PEOPLE_COOKIE "=%s; Path=/; Max-Age=%lld; HttpOnly; "
						      "SameSite=Strict%s",
			 value, (long long)call->ctl->people->o.max_s,
			 call->ctl->tls ? "; Secure" : "");
	else
		snprintf(h, sizeof(h), PEOPLE_COOKIE "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict%s",
			 call->ctl->tls ? "; Secure" : "");
	if (http_response_header(call->req, "Set-Cookie", h))
		sl_log_warn("cannot add the Set-Cookie header", NULL);
	if (http_response_header(call->req, "Cache-Control", "no-store"))
		sl_log_warn("cannot add the Cache-Control header", NULL);
}

static bool method_is_safe(const char *m)
{
	return !strcmp(m, "GET") || !strcmp(m, "HEAD") || !strcmp(m, "OPTIONS");
}

int people_auth_cookie(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct ctl_people *p = c->people;
	char cookie[COOKIE_MAX], hash[CTL_HASH_HEX + 1];
	const char *hdr = http_request_header(call->req, "Cookie");
	if (!p || !hdr || !cookie_value(hdr, PEOPLE_COOKIE, cookie, sizeof(cookie)))
		return 0;
	auth_hash_hex(cookie, strlen(cookie), hash);
	struct ctl_session *s = session_find(c, hash);
	const struct ctl_user *u = s ? people_user_find(c, s->user) : NULL;
	if (!u || session_expired(p, s, c->now_ns)) {
		sodium_memzero(cookie, sizeof(cookie));
		set_cookie(call, NULL);
		ctl_answer_error(call, SL_EUNAUTH, "the session has ended or expired",
				 "sign in again (POST /v1/sessions)");
		return -1;
	}
	struct ctl_token *t = &call->tok_copy;
	memset(t, 0, sizeof(*t));
	memcpy(t->id, s->id, sizeof(t->id));
	t->role = u->role;
	snprintf(t->tenant, sizeof(t->tenant), "%s", u->tenant);
	snprintf(t->user, sizeof(t->user), "%s", u->name);
	t->created_ns = s->created_ns;
	call->tok = t;
	memcpy(call->session, hash, sizeof(call->session));
	if (!method_is_safe(http_request_method(call->req))) {
		char want[CSRF_TEXT];
		const char *got = http_request_header(call->req, PEOPLE_CSRF_HEADER);
		csrf_of(cookie, want);
		if (!got || strlen(got) != strlen(want) ||
		    sodium_memcmp(got, want, strlen(want)) != 0) {
			sodium_memzero(cookie, sizeof(cookie));
			ctl_answer_error(call, SL_ECSRF,
					 got ? "the X-CSRF-Token header does not match this session"
					     : "a state-changing request made with the session cookie "
					       "needs the X-CSRF-Token header",
					 "send the csrf value that POST /v1/sessions or GET /v1/session "
					 "returned");
			return -1;
		}
	}
	sodium_memzero(cookie, sizeof(cookie));
	/* A page left open polls for events and refreshes itself all day: that
	 * is not use, so an unattended tab still ends after the idle time. */
	if ((call->route && !strcmp(call->route->label, "events")) ||
	    http_request_header(call->req, PEOPLE_BACKGROUND_HEADER))
		return 1;
	s->seen_ns = c->now_ns;
	int64_t every = p->o.idle_s * NS / 4 < SEEN_WRITE_NS ? p->o.idle_s * NS / 4 : SEEN_WRITE_NS;
	if (s->seen_ns - s->stored_seen_ns >= every)
		session_store(c, s);
	return 1;
}

/* ---- the rate limit ---- */

/* "127.0.0.1:5000" -> "127.0.0.1", "[::1]:5000" -> "::1". */
static void peer_addr(const char *peer, char *out, size_t n)
{
	const char *s = peer ? peer : "?";
	size_t len;
	if (*s == '[') {
		s++;
		len = strcspn(s, "]");
	} else {
		const char *colon = strrchr(s, ':');
		len = colon ? (size_t)(colon - s) : strlen(s);
	}
	snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), s);
}

/* Seconds until key may try again (0: now). */
static int64_t fail_wait_s(struct ctl *c, const char *key, int limit)
{
	json_t *v = json_object_get(c->people->fails, key);
	if (!v) /* a full table limits new keys at once, so it cannot be flooded open */
		return json_object_size(c->people->fails) >= FAIL_KEYS_MAX ? PEOPLE_FAIL_WINDOW_S : 0;
	int64_t start = json_integer_value(json_array_get(v, 1));
	int64_t end = start + PEOPLE_FAIL_WINDOW_S * NS;
	if (json_integer_value(json_array_get(v, 0)) < limit || end <= c->now_ns)
		return 0;
	return (end - c->now_ns + NS - 1) / NS;
}

/* Counts a failure for key; true when this one reached the limit. */
static bool fail_count(struct ctl *c, const char *key, int limit)
{
	json_t *v = json_object_get(c->people->fails, key);
	if (v && json_integer_value(json_array_get(v, 1)) + PEOPLE_FAIL_WINDOW_S * NS > c->now_ns) {
		json_int_t n = json_integer_value(json_array_get(v, 0)) + 1;
		json_array_set_new(v, 0, json_integer(n));
		return n == limit;
	}
	if (json_object_size(c->people->fails) < FAIL_KEYS_MAX || v)
		json_object_set_new(c->people->fails, key,
				    json_pack("[i, I]", 1, (json_int_t)c->now_ns));
	return limit == 1;
}

/* ---- handlers ---- */

static json_t *session_answer(struct ctl *c, const struct ctl_session *s,
			      const struct ctl_user *u, const char *csrf)
{
	return json_pack("{s:s, s:o, s:s, s:s, s:s, s:o, s:o, s:o}", "user", u->name, "tenant",
			 u->tenant[0] ? json_string(u->tenant) : json_null(), "role",
			 ctl_role_name(u->role), "csrf", csrf, "session", s->id, "created_at",
			 ctl_time_json(s->created_ns), "expires_at",
			 ctl_time_json(s->created_ns + c->people->o.max_s * NS), "idle_expires_at",
			 ctl_time_json(session_expires_ns(c->people, s)));
}

static void audit_signin(struct ctl *c, const char *actor, const struct ctl_user *u,
			 const char *action, const char *target, const char *outcome)
{
	audit_log_actor(c, actor, u ? ctl_role_name(u->role) : "", u ? u->tenant : "", action,
			target, outcome);
}

/* A sign-in whose password the worker is checking (pw_worker.h). */
struct signin {
	struct http_request *req; /* NULL once its client has gone */
	char name[CTL_NAME_MAX + 1], addr[64], ukey[CTL_NAME_MAX + 3], akey[70];
	bool tu, ta; /* this attempt reached the user's / the source's limit */
};

/* Undoes the failure counted in advance for key (the attempt succeeded). */
static void fail_uncount(struct ctl *c, const char *key)
{
	json_t *v = json_object_get(c->people->fails, key);
	json_int_t n = json_integer_value(json_array_get(v, 0));
	if (v && n > 0)
		json_array_set_new(v, 0, json_integer(n - 1));
}

void h_session_create(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {{"user", FT_STRING, true},
						  {"password", FT_STRING, true}};
	struct ctl *c = call->ctl;
	struct ctl_people *p = c->people;
	char msg[SL_DIAG_MSG];
	const char *ct = http_request_header(call->req, "Content-Type");
	/* A cross-site form cannot send JSON without a preflight we never allow. */
	if (!ct || strncasecmp(ct, "application/json", 16)) {
		ctl_answer_error(call, SL_EINVAL, "sign in with a JSON body",
				 "send Content-Type: application/json");
		return;
	}
	if (!ctl_check_fields(call, call->body, fields, 2, "a sign-in"))
		return;
	const json_t *pv = json_object_get(call->body, "password");
	const char *name = json_string_value(json_object_get(call->body, "user"));
	size_t pwlen = json_string_length(pv);
	if (strlen(name) == 0 || strlen(name) > CTL_NAME_MAX || pwlen > PW_MAX) {
		ctl_answer_error(call, SL_EINVAL, "user must be 1..63 bytes, password at most 1024",
				 NULL);
		return;
	}
	struct signin *si = calloc(1, sizeof(*si));
	struct pw_job *job = calloc(1, sizeof(*job));
	if (!si || !job || sl_grow(&p->pending, &p->cap_pending, p->npending + 1,
				   PW_WORKER_MAX_JOBS + 1)) {
		free(si);
		free(job);
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	peer_addr(http_request_peer(call->req), si->addr, sizeof(si->addr));
	snprintf(si->name, sizeof(si->name), "%s", name);
	snprintf(si->ukey, sizeof(si->ukey), "u:%s", name);
	snprintf(si->akey, sizeof(si->akey), "a:%s", si->addr);
	int64_t wu = fail_wait_s(c, si->ukey, p->o.fails_user);
	int64_t wa = fail_wait_s(c, si->akey, p->o.fails_source);
	bool busy = !wu && !wa && pw_worker_inflight(p->worker) >= PW_WORKER_MAX_JOBS;
	if (wu || wa || busy) {
		char ra[24];
		snprintf(ra, sizeof(ra), "%lld", busy ? 1LL : (long long)(wu > wa ? wu : wa));
		if (http_response_header(call->req, "Retry-After", ra))
			sl_log_warn("cannot add the Retry-After header", NULL);
		if (busy)
			snprintf(msg, sizeof(msg), "the controller is checking many sign-ins; try again "
						   "in a second");
		else
			snprintf(msg, sizeof(msg), "too many failed sign-ins %s; try again in %s s",
				 wu ? "for this user" : "from this address", ra);
		ctl_answer_error(call, SL_ERATE, msg, NULL);
		free(si);
		free(job);
		return;
	}
	const struct ctl_user *u = people_user_find(c, name);
	snprintf(job->hash, sizeof(job->hash), "%s", u ? u->hash : "");
	memcpy(job->pw, json_string_value(pv), pwlen);
	job->len = pwlen;
	job->owner = si;
	/* Counted as failures now and undone on success, so that attempts in
	 * flight at once cannot pass the limit. */
	si->tu = fail_count(c, si->ukey, p->o.fails_user);
	si->ta = fail_count(c, si->akey, p->o.fails_source);
	si->req = call->req;
	if (!pw_worker_submit(p->worker, job)) { /* not reached: checked above */
		sodium_memzero(job, sizeof(*job));
		free(job);
		free(si);
		ctl_answer_error(call, SL_ERATE, "the controller is checking many sign-ins", NULL);
		return;
	}
	p->pending[p->npending++] = si;
	call->answered = true; /* deferred: answered by people_tick */
}

/* Answers one checked sign-in. */
static void signin_finish(struct ctl *c, struct signin *si, const struct pw_job *job)
{
	struct ctl_people *p = c->people;
	struct ctl_call call;
	memset(&call, 0, sizeof(call));
	call.ctl = c;
	call.req = si->req;
	const struct ctl_user *u = people_user_find(c, si->name);
	/* the user removed, or its password changed, while the worker checked */
	bool ok = job->ok && u && !strcmp(u->hash, job->hash);
	if (!ok) {
		audit_signin(c, si->addr, u, "session.fail", si->name, "denied");
		if (si->tu || si->ta)
			audit_signin(c, si->addr, u, "session.locked", si->tu ? si->name : si->addr,
				     "rate_limited");
		sl_log_warn("sign-in failed", "user=%s from=%s", si->name, si->addr);
		if (call.req)
			ctl_answer_error(&call, SL_EUNAUTH, "unknown user or wrong password", NULL);
		return;
	}
	json_object_del(p->fails, si->ukey);
	fail_uncount(c, si->akey);
	end_oldest_beyond(c, u->name, PEOPLE_SESSIONS_PER_USER - 1);
	unsigned char rnd[COOKIE_RANDOM];
	char cookie[COOKIE_MAX], b64[sodium_base64_ENCODED_LEN(COOKIE_RANDOM,
							       sodium_base64_VARIANT_URLSAFE_NO_PADDING)];
	char csrf[CSRF_TEXT];
	struct ctl_session s;
	memset(&s, 0, sizeof(s));
	do {
		randombytes_buf(rnd, sizeof(rnd));
		sodium_bin2base64(b64, sizeof(b64), rnd, sizeof(rnd),
				  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
		snprintf(cookie, sizeof(cookie), COOKIE_PREFIX "%s", b64);
		auth_hash_hex(cookie, strlen(cookie), s.hash);
	} while (session_find(c, s.hash));
	snprintf(s.id, sizeof(s.id), "ses_%.12s", s.hash);
	snprintf(s.user, sizeof(s.user), "%s", u->name);
	s.created_ns = s.seen_ns = c->now_ns;
	if (!call.req) { /* the client went away: no session it could never use */
		sl_log_info("sign-in checked after its client left", "user=%s", u->name);
	} else if (session_add(c, &s)) {
		ctl_answer_error(&call, SL_ENOMEM, "no room for another session",
				 "sessions end when people sign out or stay away");
	} else {
		session_store(c, &p->sessions[p->nsessions - 1]);
		csrf_of(cookie, csrf);
		set_cookie(&call, cookie);
		audit_signin(c, u->name, u, "session.create", s.id, "ok");
		sl_log_info("signed in", "user=%s session=%s from=%s", u->name, s.id, si->addr);
		ctl_answer_json(&call, 201, session_answer(c, &s, u, csrf));
	}
	sodium_memzero(cookie, sizeof(cookie));
	sodium_memzero(b64, sizeof(b64));
	sodium_memzero(rnd, sizeof(rnd));
}

/* Answers the sign-ins the worker has checked. */
static void signins_collect(struct ctl *c)
{
	struct ctl_people *p = c->people;
	struct pw_job *j = pw_worker_done(p->worker);
	while (j) {
		struct pw_job *next = j->next;
		struct signin *si = j->owner;
		for (int i = 0; i < p->npending; i++)
			if (p->pending[i] == si) {
				p->pending[i] = p->pending[--p->npending];
				break;
			}
		signin_finish(c, si, j);
		sodium_memzero(j, sizeof(*j));
		free(j);
		free(si);
		j = next;
	}
}

void people_request_gone(struct ctl *c, struct http_request *req)
{
	struct ctl_people *p = c->people;
	for (int i = 0; p && i < p->npending; i++)
		if (p->pending[i]->req == req)
			p->pending[i]->req = NULL;
}

void h_session_show(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	const struct ctl_token *t = call->tok;
	if (!call->session[0]) {
		ctl_answer_json(call, 200,
				json_pack("{s:s, s:o, s:s, s:s}", "user", t->user, "tenant",
					  t->tenant[0] ? json_string(t->tenant) : json_null(), "role",
					  ctl_role_name(t->role), "token", t->id));
		return;
	}
	const struct ctl_session *s = session_find(c, call->session);
	const struct ctl_user *u = s ? people_user_find(c, s->user) : NULL;
	char cookie[COOKIE_MAX], csrf[CSRF_TEXT];
	const char *hdr = http_request_header(call->req, "Cookie");
	if (!u || !cookie_value(hdr, PEOPLE_COOKIE, cookie, sizeof(cookie))) {
		ctl_answer_error(call, SL_EUNAUTH, "the session has ended", "sign in again");
		return;
	}
	csrf_of(cookie, csrf);
	sodium_memzero(cookie, sizeof(cookie));
	ctl_answer_json(call, 200, session_answer(c, s, u, csrf));
}

void h_session_delete(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct ctl_session *s = call->session[0] ? session_find(c, call->session) : NULL;
	if (!s) {
		ctl_answer_error(call, SL_EINVAL, "this request was not made with a session cookie",
				 "a bearer token is revoked with 'suanli token revoke'");
		return;
	}
	json_t *o = json_pack("{s:s, s:s, s:b}", "session", s->id, "user", s->user, "ended", 1);
	sl_log_info("signed out", "user=%s session=%s", s->user, s->id);
	session_end(c, s);
	set_cookie(call, NULL);
	ctl_answer_json(call, 200, o);
}

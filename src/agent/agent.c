/* agent.c - the agent's loop (see agent.h).
 *
 * Timers are monotonic deadlines in one struct; each turn does what is due,
 * then sleeps in curl_multi_poll until the earliest one, the long poll's
 * socket or the signal pipe.
 *
 * One connection to the controller: registration, heartbeats, log uploads
 * and the work long poll share one connection cache (http_client_share),
 * and nothing else is sent while the poll is out; instead the poll waits at
 * most until the next heartbeat is due. So an agent holds one connection
 * (two agents per slot was what capped a controller at about 470 nodes),
 * and a report that falls due meanwhile waits at most one heartbeat
 * interval. Retries back off with decorrelated jitter and honour the
 * controller's Retry-After, so a refused storm spreads out instead of
 * coming back at once. The controller's answers are parsed strictly:
 * anything unexpected is logged and treated like an unreachable controller
 * (retry later), never trusted and never a crash. */
#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "engine.h"
#include "health.h"
#include "inst.h"
#include "http_client.h"
#include "log.h"
#include "logship.h"
#include "state.h"
#include "work.h"

#define NS 1000000000LL
#define LOG_CALLS_PER_TURN 4
#define LOG_IDLE_NS (1 * NS)
#define TICK_MAX_NS (1 * NS) /* adopted processes are polled at least this often */

struct agent {
	const struct agent_opts *o;
	char addr[AGENT_ADDR_MAX];
	char boot_id[40];
	char cred[STATE_CREDENTIAL_MAX];
	char auth[STATE_CREDENTIAL_MAX + 32];
	char url[HTTP_CLIENT_URL_MAX + 64];
	bool registered;
	int heartbeat_s;
	int64_t version;
	struct http_client *http;
	struct work_sup *sup;
	struct engine *eng;       /* tenant containers (engine.h) */
	struct inst_sup *inst;    /* instances (inst.h) */
	struct health *health;
	/* the long poll */
	CURLM *multi;
	CURL *poll;
	struct curl_slist *poll_hdrs;
	struct http_sink pb;
	bool polling;
	/* timers (monotonic ns) and retry backoffs */
	int64_t hb_due, log_due, poll_due, reg_due, save_due;
	int64_t hb_backoff, poll_backoff, reg_backoff;
	int64_t retry_after; /* ns, from the last refused answer (0: none) */
	uint64_t rng;        /* xorshift64 state for the jitter */
	bool down_logged;
	int lock_fd; /* STATE_DIR/agent.lock, held while the agent runs */
	/* Controller epochs (docs/ha.md): answers of a controller older than the
	 * newest one seen are not obeyed. */
	uint64_t epoch_max, poll_epoch;
};

/* True when an answer stamped with epoch may be obeyed; a newer epoch (a new
 * leader) is remembered, and its work list is asked for from scratch. */
static bool epoch_ok(struct agent *a, uint64_t epoch, const char *what)
{
	if (!epoch)
		return true; /* a single controller stamps no epoch */
	if (epoch < a->epoch_max) {
		sl_log_warn("ignoring an answer of a deposed controller", "call=%s epoch=%llu newest=%llu",
			    what, (unsigned long long)epoch, (unsigned long long)a->epoch_max);
		return false;
	}
	if (epoch > a->epoch_max) {
		if (a->epoch_max)
			sl_log_info("following a new leader", "epoch=%llu", (unsigned long long)epoch);
		a->epoch_max = epoch;
		a->version = 0;
		struct sl_diag d = {0};
		if (state_epoch_save(a->o->state_dir, epoch, &d) != SL_OK)
			sl_log_warn("cannot keep the controller epoch; a restart of this agent "
				    "would obey a deposed leader until it hears the new one",
				    "error=%s", d.msg);
	}
	return true;
}

static size_t poll_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct agent *a = arg;
	size_t n = size * nmemb;
	static const char eh[] = "x-suanli-epoch:";
	if (n > sizeof(eh) && n < 64 && strncasecmp(data, eh, sizeof(eh) - 1) == 0) {
		char num[64];
		memcpy(num, data + sizeof(eh) - 1, n - (sizeof(eh) - 1));
		num[n - (sizeof(eh) - 1)] = '\0';
		a->poll_epoch = (uint64_t)strtoull(num, NULL, 10);
	}
	return n;
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* A uniform draw in [lo, hi]. */
static int64_t uniform(uint64_t *rng, int64_t lo, int64_t hi)
{
	if (hi <= lo)
		return lo;
	return lo + (int64_t)(xorshift(rng) % (uint64_t)(hi - lo + 1));
}

int64_t agent_backoff_next(int64_t prev_ns, int64_t retry_after_ns, uint64_t *rng)
{
	int64_t hi = prev_ns > AGENT_RETRY_MAX_NS / 3 ? AGENT_RETRY_MAX_NS : prev_ns * 3;
	if (hi < AGENT_RETRY_MIN_NS)
		hi = AGENT_RETRY_MIN_NS * 3;
	int64_t b = uniform(rng, AGENT_RETRY_MIN_NS, hi);
	if (retry_after_ns > AGENT_RETRY_MAX_NS)
		retry_after_ns = AGENT_RETRY_MAX_NS;
	if (retry_after_ns > 0 && b < retry_after_ns)
		b = uniform(rng, retry_after_ns, 2 * retry_after_ns);
	return b > AGENT_RETRY_MAX_NS ? AGENT_RETRY_MAX_NS : b;
}

/* The next wait of one retry series (*b: its previous wait), taking the
 * Retry-After of the answer that failed, once. */
static int64_t next_backoff(struct agent *a, int64_t *b)
{
	*b = agent_backoff_next(*b, a->retry_after, &a->rng);
	a->retry_after = 0;
	return *b;
}

/* ---- addresses and ids --------------------------------------------------- */

enum sl_err agent_route_addr(const char *url, char *buf, size_t n, struct sl_diag *d)
{
	char host[256], port[16] = "80";
	const char *p = strstr(url, "://");
	size_t hl;

	if (!p)
		return sl_diag_set(d, SL_EINVAL, "bad server URL '%.200s'", url);
	p += 3;
	if (strncmp(url, "https", 5) == 0)
		snprintf(port, sizeof(port), "443");
	if (*p == '[') {
		const char *e = strchr(p, ']');
		if (!e)
			return sl_diag_set(d, SL_EINVAL, "bad server URL '%.200s'", url);
		hl = (size_t)(e - p - 1);
		if (hl >= sizeof(host))
			return sl_diag_set(d, SL_EINVAL, "server host name too long");
		memcpy(host, p + 1, hl);
		p = e + 1;
	} else {
		hl = strcspn(p, ":/?#");
		if (hl >= sizeof(host))
			return sl_diag_set(d, SL_EINVAL, "server host name too long");
		memcpy(host, p, hl);
		p += hl;
	}
	host[hl] = '\0';
	if (*p == ':') {
		size_t pl = strcspn(p + 1, "/?#,"); /* a list: the first controller */
		if (pl == 0 || pl >= sizeof(port))
			return sl_diag_set(d, SL_EINVAL, "bad port in server URL '%.200s'", url);
		memcpy(port, p + 1, pl);
		port[pl] = '\0';
	}
	if (!host[0])
		return sl_diag_set(d, SL_EINVAL, "no host in server URL '%.200s'", url);

	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_DGRAM;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0)
		return sl_diag_set(d, SL_EIO, "cannot resolve %s: %s", host, gai_strerror(rc));
	enum sl_err e = sl_diag_set(d, SL_EIO, "no route to %s", host);
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		int fd = socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
		    getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
			const void *src = ss.ss_family == AF_INET6
						  ? (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
						  : (const void *)&((struct sockaddr_in *)&ss)->sin_addr;
			if (inet_ntop(ss.ss_family, src, buf, (socklen_t)n)) {
				close(fd);
				e = SL_OK;
				break;
			}
		}
		close(fd);
	}
	freeaddrinfo(res);
	return e;
}

static void make_boot_id(char *buf, size_t n)
{
	unsigned char r[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t got = fd >= 0 ? read(fd, r, sizeof(r)) : -1;
	if (fd >= 0)
		close(fd);
	if (got != (ssize_t)sizeof(r)) { /* no urandom: time and pid still differ per start */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(buf, n, "%llx-%lx-%d", (unsigned long long)ts.tv_sec, (long)ts.tv_nsec,
			 (int)getpid());
		return;
	}
	for (size_t i = 0; i < sizeof(r) && 2 * i + 2 < n; i++)
		snprintf(buf + 2 * i, 3, "%02x", r[i]);
}

/* ---- calls ---------------------------------------------------------------- */

/* A POST of a JSON document; *resp on SL_OK. */
static enum sl_err post_json(struct agent *a, const char *path, json_t *body,
			     struct http_response *resp, struct sl_diag *d)
{
	char *text = json_dumps(body, JSON_COMPACT);
	if (!text)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	enum sl_err e = http_client_request(a->http, "POST", path, text, strlen(text), NULL,
					    AGENT_CALL_TIMEOUT_MS, resp, d);
	free(text);
	if (e == SL_OK && resp->status == 503)
		a->retry_after = (int64_t)resp->retry_after_s * NS;
	return e;
}

/* The answer as a JSON object; NULL (logged) when it is not one. */
static json_t *answer_object(const struct http_response *r, const char *what)
{
	json_error_t je;
	json_t *o = json_loadb(r->body, r->len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(o)) {
		sl_log_warn("the controller's answer is not a JSON object; ignoring it",
			    "call=%s error=%s", what, o ? "not an object" : je.text);
		json_decref(o);
		return NULL;
	}
	return o;
}

/* 401/403 to a call: fatal. Fills d; returns the error. */
static enum sl_err refused(struct agent *a, const struct http_response *r, struct sl_diag *d)
{
	struct sl_diag sd;
	sl_diag_clear(&sd);
	enum sl_err e = http_client_error_diag(r, &sd);
	(void)e;
	if (a->cred[0]) {
		sl_diag_hint(d, "the credential in %s/credential was revoked or belongs to another "
				"node: delete that file and start the agent with a new join token "
				"(--token, from `suanli agent-token create`)",
			     a->o->state_dir);
		return sl_diag_set(d, r->status == 401 ? SL_EUNAUTH : SL_EFORBIDDEN,
				   "the controller refused this node's credential (%d: %s)",
				   r->status, sd.msg);
	}
	sl_diag_hint(d, "make a join token with `suanli agent-token create [--node %s]` and "
			"pass it with --token", a->o->node);
	return sl_diag_set(d, r->status == 401 ? SL_EUNAUTH : SL_EFORBIDDEN,
			   "the controller refused the token for node %s (%d: %s)", a->o->node,
			   r->status, sd.msg);
}

/* Switches every call to the node credential. */
static enum sl_err use_credential(struct agent *a, const char *cred, struct sl_diag *d)
{
	/* the same client, so the same connection */
	enum sl_err e = http_client_set_token(a->http, cred, d);
	if (e != SL_OK)
		return e;
	snprintf(a->auth, sizeof(a->auth), "Authorization: Bearer %s", cred);
	inst_sup_set_token(a->inst, cred);
	curl_slist_free_all(a->poll_hdrs);
	a->poll_hdrs = curl_slist_append(NULL, a->auth);
	if (!a->poll_hdrs)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	return SL_OK;
}

/* One registration attempt. SL_OK: registered; SL_EAGAIN-like (retry) is
 * SL_EIO with *retry; anything else is fatal. */
static enum sl_err do_register(struct agent *a, bool *retry, struct sl_diag *d)
{
	const struct agent_opts *o = a->o;
	struct http_response r;
	json_t *disc = discovery_to_json(o->disc), *running = work_sup_report(a->sup);
	json_t *body = json_pack("{s:s, s:s, s:s, s:s, s:o*, s:o*}", "node", o->node, "addr",
				 a->addr, "agent_version", AGENT_VERSION, "boot_id", a->boot_id,
				 "discovery", disc, "running", running);
	enum sl_err e;

	*retry = false;
	if (body && o->host_tenant)
		json_object_set_new(body, "host_processes", json_string(o->host_tenant));
	if (body && engine_fabric(a->eng))
		json_object_set_new(body, "lease_net", json_string(engine_fabric(a->eng)->pool));
	if (body && (o->site || o->leaf || o->type)) {
		json_t *l = json_object();
		if (o->site)
			json_object_set_new(l, "site", json_string(o->site));
		if (o->leaf)
			json_object_set_new(l, "leaf", json_string(o->leaf));
		if (o->type)
			json_object_set_new(l, "type", json_string(o->type));
		json_object_set_new(body, "labels", l);
	}
	if (!body || !disc || !running) {
		json_decref(body);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	e = post_json(a, "/v1/agent/register", body, &r, d);
	json_decref(body);
	if (e != SL_OK) {
		*retry = e == SL_EIO;
		return e;
	}
	if (r.status == 401 || r.status == 403) {
		e = refused(a, &r, d);
		http_response_release(&r);
		return e;
	}
	if (r.status != 200) {
		struct sl_diag sd;
		sl_diag_clear(&sd);
		e = http_client_error_diag(&r, &sd);
		/* refused for good: the request itself is wrong (bad labels or
		 * discovery, unknown node, too large); anything else may pass */
		*retry = !(r.status == 400 || r.status == 404 || r.status == 405 ||
			   r.status == 413);
		sl_diag_set(d, *retry ? SL_EIO : e, "registration of node %s refused (%d): %s",
			    o->node, r.status, sd.msg);
		if (sd.hint[0])
			sl_diag_hint(d, "%s", sd.hint);
		http_response_release(&r);
		return *retry ? SL_EIO : e;
	}
	json_t *ans = answer_object(&r, "register");
	http_response_release(&r);
	const json_t *hb = json_object_get(ans, "heartbeat_s");
	const json_t *cred = json_object_get(ans, "credential");
	const char *state = json_string_value(json_object_get(ans, "state"));
	if (!ans || !state || (hb && (!json_is_integer(hb) || json_integer_value(hb) < 1 ||
				      json_integer_value(hb) > AGENT_HEARTBEAT_MAX_S)) ||
	    (cred && (!json_is_string(cred) || json_string_length(cred) == 0 ||
		      json_string_length(cred) >= sizeof(a->cred)))) {
		json_decref(ans);
		*retry = true;
		return sl_diag_set(d, SL_EIO, "the controller's registration answer is malformed");
	}
	if (hb && !o->heartbeat_s)
		a->heartbeat_s = (int)json_integer_value(hb);
	if (cred) {
		const char *cs = json_string_value(cred);
		if ((e = state_credential_save(o->state_dir, cs, d)) != SL_OK ||
		    (e = use_credential(a, cs, d)) != SL_OK) {
			json_decref(ans);
			return e;
		}
		snprintf(a->cred, sizeof(a->cred), "%s", cs);
		sl_log_info("node credential saved", "file=%s/credential", o->state_dir);
	}
	const char *reason = json_string_value(json_object_get(ans, "reason"));
	sl_log_info("registered", "node=%s state=%s reason=%s addr=%s heartbeat_s=%d", o->node,
		    state, reason ? reason : "", a->addr, a->heartbeat_s);
	json_decref(ans);
	a->registered = true;
	return SL_OK;
}

/* Heartbeat. SL_OK; SL_EIO: retry later; 409: *reregister; fatal otherwise. */
static enum sl_err do_heartbeat(struct agent *a, int64_t now, bool *reregister,
				int64_t *work_version, struct sl_diag *d)
{
	struct http_response r;
	json_t *gpus = health_sample(a->health, (int64_t)time(NULL));
	json_t *work = work_sup_report(a->sup);
	json_t *insts = inst_sup_report(a->inst);
	json_t *body = json_pack("{s:s, s:o*, s:o*}", "boot_id", a->boot_id, "gpus", gpus,
				 "work", work);
	enum sl_err e;

	*reregister = false;
	if (body && insts && json_array_size(insts) > 0) /* none: as before instances */
		json_object_set(body, "instances", insts);
	json_decref(insts);
	if (!body || !gpus || !work || !insts) {
		json_decref(body);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	e = post_json(a, "/v1/agent/heartbeat", body, &r, d);
	json_decref(body);
	if (e != SL_OK)
		return e == SL_EIO ? e : SL_EIO;
	if (r.status == 401 || r.status == 403) {
		e = refused(a, &r, d);
		http_response_release(&r);
		return e;
	}
	if (!epoch_ok(a, r.epoch, "heartbeat")) {
		http_response_release(&r);
		return sl_diag_set(d, SL_EIO, "heartbeat answered by a deposed controller");
	}
	if (r.status == 409) {
		http_response_release(&r);
		*reregister = true;
		return SL_OK;
	}
	if (r.status != 200) {
		struct sl_diag sd;
		sl_diag_clear(&sd);
		e = http_client_error_diag(&r, &sd);
		(void)e;
		http_response_release(&r);
		return sl_diag_set(d, SL_EIO, "heartbeat answered %d: %s", r.status, sd.msg);
	}
	json_t *ans = answer_object(&r, "heartbeat");
	http_response_release(&r);
	const json_t *stop = json_object_get(ans, "stop"), *hb = json_object_get(ans, "heartbeat_s");
	const json_t *wv = json_object_get(ans, "work_version");
	*work_version = json_is_integer(wv) ? json_integer_value(wv) : -1;
	bool ok = ans && (!stop || json_is_array(stop)) &&
		  json_array_size(stop) <= AGENT_MAX_STOPS &&
		  (!hb || (json_is_integer(hb) && json_integer_value(hb) >= 1 &&
			   json_integer_value(hb) <= AGENT_HEARTBEAT_MAX_S));
	size_t i;
	json_t *v;
	json_array_foreach(stop, i, v) {
		const char *job = json_string_value(json_object_get(v, "job"));
		const json_t *rank = json_object_get(v, "rank");
		ok = ok && job && json_is_integer(rank);
	}
	if (!ok) {
		json_decref(ans);
		return sl_diag_set(d, SL_EIO, "the controller's heartbeat answer is malformed");
	}
	/* the report reached the controller: finished items may be forgotten */
	work_sup_reported(a->sup);
	inst_sup_reported(a->inst);
	json_array_foreach(stop, i, v) {
		const char *job = json_string_value(json_object_get(v, "job"));
		json_int_t rank = json_integer_value(json_object_get(v, "rank"));
		if (rank >= 0 && rank <= WORK_RANK_MAX &&
		    work_sup_stop(a->sup, job, (int)rank, now))
			sl_log_info("the controller asked to stop work", "job=%s rank=%d", job,
				    (int)rank);
	}
	if (hb && !a->o->heartbeat_s)
		a->heartbeat_s = (int)json_integer_value(hb);
	json_decref(ans);
	return SL_OK;
}

/* ---- the work long poll ------------------------------------------------- */


/* The poll waits at most until the next heartbeat is due: the heartbeat
 * then goes on the poll's connection (the agent's only one). */
static bool poll_start(struct agent *a, int64_t now)
{
	int64_t until = a->hb_due - now;
	int wait = until <= 0 ? 0 : (int)((until + NS - 1) / NS);
	if (wait > AGENT_POLL_WAIT_S)
		wait = AGENT_POLL_WAIT_S;
	/* the controller in use: after failover, the leader the calls found */
	snprintf(a->url, sizeof(a->url), "%s/v1/agent/work?version=%lld&wait=%d",
		 http_client_server(a->http), (long long)a->version, wait);
	a->poll_epoch = 0;
	/* a server URL may end in '/' */
	char *dbl = strstr(a->url + 8, "//v1/");
	if (dbl)
		memmove(dbl, dbl + 1, strlen(dbl));
	a->pb.len = 0;
	a->pb.max = AGENT_WORK_ANSWER_MAX;
	a->pb.too_large = a->pb.no_mem = false;
	curl_easy_reset(a->poll);
	http_client_share(a->http, a->poll);
	(void)curl_easy_setopt(a->poll, CURLOPT_URL, a->url);
	(void)curl_easy_setopt(a->poll, CURLOPT_PROTOCOLS_STR, "http,https");
	(void)curl_easy_setopt(a->poll, CURLOPT_NOSIGNAL, 1L);
	(void)curl_easy_setopt(a->poll, CURLOPT_TIMEOUT_MS,
			       (long)(wait * 1000L + AGENT_CALL_TIMEOUT_MS));
	(void)curl_easy_setopt(a->poll, CURLOPT_CONNECTTIMEOUT_MS, AGENT_CALL_TIMEOUT_MS);
	(void)curl_easy_setopt(a->poll, CURLOPT_HTTPHEADER, a->poll_hdrs);
	(void)curl_easy_setopt(a->poll, CURLOPT_WRITEFUNCTION, http_sink_write);
	(void)curl_easy_setopt(a->poll, CURLOPT_WRITEDATA, &a->pb);
	(void)curl_easy_setopt(a->poll, CURLOPT_HEADERFUNCTION, poll_header);
	(void)curl_easy_setopt(a->poll, CURLOPT_HEADERDATA, a);
	if (curl_multi_add_handle(a->multi, a->poll) != CURLM_OK)
		return false;
	a->polling = true;
	return true;
}

/* A work answer arrived (or failed). Returns a fatal error, else SL_OK. */
static enum sl_err poll_done(struct agent *a, CURLcode rc, int64_t now, struct sl_diag *d)
{
	long status = 0;
	curl_off_t ra = 0;
	(void)curl_easy_getinfo(a->poll, CURLINFO_RESPONSE_CODE, &status);
	if (status == 503 && curl_easy_getinfo(a->poll, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK &&
	    ra > 0)
		a->retry_after = (ra > 86400 ? 86400 : (int64_t)ra) * NS;
	(void)curl_multi_remove_handle(a->multi, a->poll);
	a->polling = false;
	if (rc != CURLE_OK || a->pb.too_large || a->pb.no_mem) {
		sl_log_debug("work poll failed; retrying", "error=%s",
			     a->pb.too_large ? "answer too large" : curl_easy_strerror(rc));
		a->poll_due = now + next_backoff(a, &a->poll_backoff);
		return SL_OK;
	}
	if (status == 401 || status == 403) {
		struct http_response r = {(int)status, a->pb.buf ? a->pb.buf : (char *)"", a->pb.len, 0, 0};
		return refused(a, &r, d);
	}
	if (status == 200 && !epoch_ok(a, a->poll_epoch, "work")) {
		a->poll_due = now + next_backoff(a, &a->poll_backoff);
		return SL_OK;
	}
	if (status != 200) {
		sl_log_warn("work poll: unexpected answer; retrying", "status=%ld", status);
		a->poll_due = now + next_backoff(a, &a->poll_backoff);
		return SL_OK;
	}
	struct http_response r = {(int)status, a->pb.buf ? a->pb.buf : (char *)"", a->pb.len, 0, 0};
	json_t *ans = answer_object(&r, "work");
	const json_t *ver = json_object_get(ans, "version");
	const json_t *work = json_object_get(ans, "work");
	struct sl_diag wd;
	int refused_n = 0;
	sl_diag_clear(&wd);
	if (!ans || !json_is_integer(ver) || json_integer_value(ver) < 0 || !json_is_array(work)) {
		sl_log_error("the controller's work answer is malformed; keeping the current work",
			     "body=%.120s", a->pb.buf ? a->pb.buf : "");
		a->poll_due = now + next_backoff(a, &a->poll_backoff);
	} else if (work_sup_apply(a->sup, work, now, &refused_n, &wd) != SL_OK) {
		sl_log_error("refused the controller's work answer; keeping the current work",
			     "error=%s", wd.msg);
		a->poll_due = now + next_backoff(a, &a->poll_backoff);
	} else {
		/* instances apart: a bad instance item never holds the jobs back */
		struct sl_diag id;
		int ign = 0;
		sl_diag_clear(&id);
		if (inst_sup_apply(a->inst, json_object_get(ans, "instances"), now, &ign, &id) !=
		    SL_OK)
			sl_log_error("refused the controller's instances; keeping the current ones",
				     "error=%s", id.msg);
		a->version = json_integer_value(ver);
		a->poll_backoff = 0;
		a->poll_due = now;
		a->hb_due = now; /* report the new state at once */
	}
	json_decref(ans);
	return SL_OK;
}

/* ---- the loop --------------------------------------------------------------- */

static void drain(int fd)
{
	char buf[64];
	while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		;
}

static void save(struct agent *a)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	if (work_sup_save(a->sup, &d) != SL_OK)
		sl_log_error("cannot save work.json", "error=%s", d.msg);
}

static enum sl_err turn(struct agent *a, int64_t now, struct sl_diag *d)
{
	enum sl_err e;
	bool rereg = false, retry = false;

	if (!a->registered && now >= a->reg_due) {
		struct sl_diag rd;
		sl_diag_clear(&rd);
		e = do_register(a, &retry, &rd);
		if (e != SL_OK && !retry) {
			*d = rd;
			return e;
		}
		if (e != SL_OK) {
			int64_t b = next_backoff(a, &a->reg_backoff);
			sl_log_warn("cannot register; retrying (work keeps running)", "error=%s retry_s=%lld",
				    rd.msg, (long long)(b / NS));
			a->reg_due = now + b;
		} else {
			a->reg_backoff = 0;
			a->hb_due = now;
			a->poll_due = now;
		}
	}
	if (work_sup_tick(a->sup, now))
		a->hb_due = now;
	if (inst_sup_tick(a->inst, now))
		a->hb_due = now;
	if (a->registered && !a->polling && now >= a->hb_due) {
		struct sl_diag hd;
		sl_diag_clear(&hd);
		int64_t wv = -1;
		e = do_heartbeat(a, now, &rereg, &wv, &hd);
		if (e == SL_EUNAUTH || e == SL_EFORBIDDEN || e == SL_ENOMEM) {
			*d = hd;
			return e;
		}
		if (rereg) {
			sl_log_warn("the controller does not know this agent's start (it restarted?); "
				    "registering again", "node=%s", a->o->node);
			a->registered = false;
			a->reg_due = now;
		} else if (e != SL_OK) {
			int64_t b = next_backoff(a, &a->hb_backoff);
			if (!a->down_logged)
				sl_log_warn("controller unreachable; work keeps running, retrying",
					    "error=%s", hd.msg);
			a->down_logged = true;
			a->hb_due = now + (b < (int64_t)a->heartbeat_s * NS ? b : (int64_t)a->heartbeat_s * NS);
		} else {
			if (a->down_logged)
				sl_log_info("controller reachable again", "node=%s", a->o->node);
			/* The poll is never out during a heartbeat; a version newer
			 * than ours is fetched by the next poll, right after. */
			if (wv >= 0 && wv != a->version)
				a->poll_due = now;
			a->down_logged = false;
			a->hb_backoff = 0;
			a->hb_due = now + (int64_t)a->heartbeat_s * NS;
		}
	}
	if (a->registered && !a->polling && now >= a->log_due) {
		enum logship_result lr = logship_run(a->http, a->sup, a->o->state_dir,
						     LOG_CALLS_PER_TURN);
		a->log_due = now + (lr == LOGSHIP_MORE ? 0 : lr == LOGSHIP_IDLE ? LOG_IDLE_NS : 5 * NS);
		if (lr == LOGSHIP_REVOKED) {
			sl_diag_hint(d, "delete %s/credential and start the agent with a new join token",
				     a->o->state_dir);
			return sl_diag_set(d, SL_EUNAUTH, "the controller refused this node's credential");
		}
	}
	/* Logs still to ship go first: the poll would hold the connection. */
	if (a->registered && !a->polling && now >= a->poll_due && now < a->log_due &&
	    !poll_start(a, now))
		a->poll_due = now + next_backoff(a, &a->poll_backoff);
	if (work_sup_dirty(a->sup))
		save(a);
	return SL_OK;
}

static int64_t min64(int64_t x, int64_t y)
{
	return x < y ? x : y;
}

static enum sl_err loop(struct agent *a, struct sl_diag *d)
{
	enum sl_err e;
	while (!*a->o->stop) {
		int64_t now = work_now_ns();
		if ((e = turn(a, now, d)) != SL_OK)
			return e;
		int running = 0;
		(void)curl_multi_perform(a->multi, &running);
		CURLMsg *m;
		int left;
		while ((m = curl_multi_info_read(a->multi, &left)))
			if (m->msg == CURLMSG_DONE && m->easy_handle == a->poll &&
			    (e = poll_done(a, m->data.result, work_now_ns(), d)) != SL_OK)
				return e;
		if (!a->polling && a->registered && work_now_ns() >= a->poll_due)
			continue;
		now = work_now_ns();
		int64_t next = now + TICK_MAX_NS;
		/* While the poll is out its answer wakes us: heartbeats and logs
		 * wait for it (they would need a second connection). */
		if (!a->registered)
			next = min64(next, a->reg_due);
		else if (!a->polling)
			next = min64(min64(next, a->hb_due), min64(a->log_due, a->poll_due));
		int64_t w = work_sup_next_ns(a->sup, now);
		if (w != INT64_MAX)
			next = min64(next, now + w);
		if (next <= now)
			continue;
		struct curl_waitfd wfd = {.fd = a->o->wake_fd, .events = CURL_WAIT_POLLIN};
		int nfd = 0;
		(void)curl_multi_poll(a->multi, a->o->wake_fd >= 0 ? &wfd : NULL,
				      a->o->wake_fd >= 0 ? 1u : 0u, (int)((next - now + 999999) / 1000000),
				      &nfd);
		drain(a->o->wake_fd);
	}
	return SL_OK;
}

static void agent_release(struct agent *a)
{
	if (a->multi && a->poll && a->polling)
		(void)curl_multi_remove_handle(a->multi, a->poll);
	if (a->poll)
		curl_easy_cleanup(a->poll);
	if (a->multi)
		curl_multi_cleanup(a->multi);
	curl_slist_free_all(a->poll_hdrs);
	free(a->pb.buf);
	http_client_free(a->http);
	health_free(a->health);
	work_sup_free(a->sup);
	inst_sup_free(a->inst);
	engine_free(a->eng);
	if (a->lock_fd >= 0)
		close(a->lock_fd);
}

/* Probes the container engine once (engine.h) and says, once, what tenant
 * work runs in; host processes only where the operator named a tenant. */
static enum sl_err probe_engine(struct agent *a, struct sl_diag *d)
{
	const struct agent_opts *o = a->o;
	struct fabric fab;
	struct engine_opts eo = {o->state_dir, o->node, o->cdi_name, o->disc, o->cdi_dir, o->image,
				 o->pids_limit, NULL, NULL};
	enum sl_err e;
	if (o->lease_net) {
		if ((e = fabric_parse(o->lease_net, &fab, d)) != SL_OK)
			return e;
		eo.fabric = &fab;
	}
	e = engine_new(&eo, &a->eng, d);
	if (e != SL_OK)
		return e;
	if (engine_fabric(a->eng))
		sl_log_info("multi-node ranks of partial-node leases get fabric addresses",
			    "iface=%s pool=%s prefix=%d gateway=%s", fab.iface, fab.pool, fab.prefix,
			    fab.gw[0] ? fab.gw : "-");
	if (o->host_tenant)
		sl_log_warn("tenant work runs as host processes on this server, for its owner only",
			    "tenant=%s", o->host_tenant);
	else if (engine_ok(a->eng))
		sl_log_info("tenant work runs in containers", "engine=podman runtime=%s "
			    "cgroup_manager=cgroupfs cgroups=%s image=%s", engine_runtime(a->eng),
			    engine_cgroups(a->eng), engine_default_image(a->eng)[0]
							     ? engine_default_image(a->eng)
							     : "(from each job)");
	else
		sl_log_error("no container engine: tenant work on this node will fail to start",
			     "reason=%s", engine_reason(a->eng));
	return SL_OK;
}

enum sl_err agent_run(const struct agent_opts *o, struct sl_diag *d)
{
	struct agent a;
	enum sl_err e;

	memset(&a, 0, sizeof(a));
	a.o = o;
	a.lock_fd = -1;
	a.heartbeat_s = o->heartbeat_s ? o->heartbeat_s : AGENT_HEARTBEAT_DEFAULT_S;
	make_boot_id(a.boot_id, sizeof(a.boot_id));
	/* the jitter's seed: the random boot id, so agents started together differ */
	a.rng = UINT64_C(1469598103934665603) ^ (uint64_t)(unsigned)getpid();
	for (const char *p = a.boot_id; *p; p++)
		a.rng = (a.rng ^ (uint64_t)(unsigned char)*p) * UINT64_C(1099511628211);
	if ((e = state_dir_init(o->state_dir, d)) != SL_OK ||
	    (e = state_lock(o->state_dir, &a.lock_fd, d)) != SL_OK)
		goto out;
	if ((e = state_epoch_load(o->state_dir, &a.epoch_max, d)) != SL_OK)
		goto out;
	e = state_credential_load(o->state_dir, a.cred, sizeof(a.cred), d);
	if (e == SL_ENOTFOUND) {
		a.cred[0] = '\0';
		if (!o->token) {
			sl_diag_hint(d, "pass a join token with --token (make one with `suanli "
					"agent-token create`); the agent saves the node credential in "
					"%s/credential and needs no token after that", o->state_dir);
			e = sl_diag_set(d, SL_EINVAL, "no --token and no saved credential in %s",
					o->state_dir);
			goto out;
		}
	} else if (e != SL_OK) {
		goto out;
	}
	if (o->addr) {
		snprintf(a.addr, sizeof(a.addr), "%s", o->addr);
	} else if ((e = agent_route_addr(o->server, a.addr, sizeof(a.addr), d)) != SL_OK) {
		sl_diag_hint(d, "give the address other nodes reach this one at with --addr");
		goto out;
	}
	if ((e = probe_engine(&a, d)) != SL_OK ||
	    (e = work_sup_new(o->state_dir, o->disc, work_now_ns(), &a.sup, d)) != SL_OK)
		goto out;
	work_sup_set_engine(a.sup, a.eng, o->host_tenant);
	struct inst_opts io = {o->state_dir, o->storage_dir, o->port_lo, o->port_hi, o->node,
			       a.eng, o->disc, o->server, o->ca, a.cred[0] ? a.cred : o->token};
	if ((e = inst_sup_new(&io, work_now_ns(), &a.inst, d)) != SL_OK)
		goto out;
	work_sup_set_instances(a.sup, a.inst); /* jobs inside an instance */
	if (o->stop_grace_s >= 0)
		work_sup_set_default_grace(a.sup, o->stop_grace_s);
	if (o->log_limit_mib > 0)
		work_sup_set_log_limit(a.sup, (int64_t)o->log_limit_mib << 20);
	/* a saved credential wins over --token: the token may be spent or revoked */
	const char *tok = a.cred[0] ? a.cred : o->token;
	if (a.cred[0] && o->token)
		sl_log_info("using the saved node credential; --token is not needed", "file=%s/credential",
			    o->state_dir);
	if ((e = health_new(o->state_dir, o->disc, o->nvml, &a.health, d)) != SL_OK ||
	    (e = http_client_new(o->server, tok, &a.http, d)) != SL_OK)
		goto out;
	snprintf(a.auth, sizeof(a.auth), "Authorization: Bearer %s", tok);
	a.poll_hdrs = curl_slist_append(NULL, a.auth);
	a.multi = curl_multi_init();
	a.poll = curl_easy_init();
	if (!a.poll_hdrs || !a.multi || !a.poll) {
		e = sl_diag_set(d, SL_ENOMEM, "out of memory (or libcurl failed)");
		goto out;
	}
	save(&a);
	sl_log_info("agent started", "node=%s server=%s state_dir=%s addr=%s boot_id=%s items=%zu",
		    o->node, o->server, o->state_dir, a.addr, a.boot_id, work_sup_count(a.sup));
	e = loop(&a, d);
	save(&a);
	if (e == SL_OK)
		sl_log_info("agent stopping; work keeps running", "items=%zu", work_sup_count(a.sup));
out:
	agent_release(&a);
	return e;
}

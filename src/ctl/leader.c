/* leader.c - standing by, leading and stepping down (leader.h, docs/ha.md).
 *
 * The timing, from one number, the lease L (default 6 s):
 * - the leader renews every L/6 and fences itself when its last successful
 *   renewal started more than 2L/3 ago (monotonic clock), so it has stopped
 *   before the lease, renewed at the server no earlier than that start, can
 *   run out there;
 * - a standby polls every LEADER_POLL_MS: it takes over at once when the
 *   leader's session has ended (killed process: the server drops its lock),
 *   and after L when the leader stopped renewing while its session lives.
 * The standby's answers are built here and sent at once: it has no state.
 * Its steps (connecting, trying to lead) run on a worker thread, one at a
 * time, on a copy of the standby's state: a connection attempt that hangs (up
 * to the URL's connect_timeout) never holds up its answers, /healthz
 * included. The loop takes the step's result back when the worker is done. */
#include "leader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "ctl_int.h"
#include "http.h"
#include "log.h"
#include "store.h"
#include "tls.h"

#define LEADER_POLL_MS 250       /* how often a standby tries to take over */
#define LEADER_RECONNECT_MS 1000 /* how often it retries a lost database */

struct ctl_leader {
	int64_t lease_ms, renew_ns, fence_ns;
	int64_t last_ok_ns;   /* monotonic: start of the last good renewal */
	int64_t next_renew_ns;
	uint64_t epoch;
	char epoch_s[24];
};

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t lease_of(const struct leader_cfg *cfg)
{
	return cfg->lease_ms > 0 ? cfg->lease_ms : LEADER_LEASE_DEFAULT_MS;
}

/* ---- standing by ---- */

struct standby {
	struct store *store;
	struct store_leader seen;
	const struct leader_cfg *cfg;
	bool have_seen;
};

static void standby_metrics(struct standby *sb, struct http_request *r)
{
	char body[1024];
	int n = snprintf(body, sizeof(body),
			 "# HELP suanli_leader Whether this controller leads (1) or stands by (0).\n"
			 "# TYPE suanli_leader gauge\nsuanli_leader 0\n"
			 "# HELP suanli_leader_epoch The current leader's epoch.\n"
			 "# TYPE suanli_leader_epoch gauge\nsuanli_leader_epoch %" PRIu64 "\n"
			 "# HELP suanli_leader_renew_age_seconds Time since the leader last renewed (server clock).\n"
			 "# TYPE suanli_leader_renew_age_seconds gauge\nsuanli_leader_renew_age_seconds %.3f\n",
			 sb->seen.epoch, (double)sb->seen.since_renew_ms / 1e3);
	http_respond(r, 200, "text/plain; version=0.0.4", body, (size_t)n);
}

static void standby_handle(struct http_request *r, void *ctx)
{
	struct standby *sb = ctx;
	const char *path = http_request_path(r);
	const char *url = sb->seen.expired ? "" : sb->seen.url;
	if (!strcmp(path, "/metrics")) {
		standby_metrics(sb, r);
		return;
	}
	json_t *o;
	int status;
	if (!strcmp(path, "/healthz")) {
		status = 200;
		o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "status", "standby", "role", "standby",
			      "version", CTL_VERSION, "leader", url, "epoch", (json_int_t)sb->seen.epoch,
			      "leader_renew_age_ms", (json_int_t)sb->seen.since_renew_ms);
	} else {
		char hint[STORE_MAX_LEADER_URL + 64];
		snprintf(hint, sizeof(hint), url[0] ? "the leader is at %s" : "no leader right now; retry shortly",
			 url);
		status = 503;
		o = json_pack("{s:{s:s, s:s, s:s}, s:s, s:I}", "error", "code", "not_leader", "message",
			      "this controller is a standby", "hint", hint, "leader", url, "epoch",
			      (json_int_t)sb->seen.epoch);
		if (url[0] && http_response_header(r, LEADER_HINT_HEADER, url))
			sl_log_warn("cannot add the leader header", "leader=%s", url);
		if (http_response_header(r, "Retry-After", "1"))
			sl_log_warn("cannot add Retry-After", NULL);
	}
	if (!o) {
		http_respond_error(r, SL_ENOMEM, NULL, NULL);
		return;
	}
	http_respond_json(r, status, o);
	json_decref(o);
}

static enum sl_err standby_try(struct standby *sb, bool *won, struct sl_diag *d)
{
	struct store_leader l;
	enum sl_err e = store_lead_try(sb->store, sb->cfg->name, sb->cfg->advertise,
				       lease_of(sb->cfg), won, &l, d);
	if (e)
		return e;
	if (!*won && (!sb->have_seen || l.epoch != sb->seen.epoch))
		sl_log_info("standing by", "leader=%s url=%s epoch=%" PRIu64, l.holder, l.url,
			    l.epoch);
	sb->seen = l;
	sb->have_seen = true;
	return SL_OK;
}

/* One step of standing by: connect when not connected, else try to lead. A
 * lost or refused connection is logged and retried (PostgreSQL restarting,
 * or promoting a replica), never fatal; only a schema this program does not
 * know is. */
static enum sl_err standby_step(struct standby *sb, bool *won, struct sl_diag *d)
{
	enum sl_err e = SL_OK;
	if (!sb->store) {
		e = store_open(sb->cfg->store_url, &sb->store, d);
		if (e == SL_ECONFLICT || e == SL_ENOMEM)
			return e;
		if (e) {
			sl_log_warn("standby: cannot open the store; retrying", "error=%s", d->msg);
			sb->store = NULL;
			sb->seen.url[0] = '\0';
			return SL_OK;
		}
	}
	if ((e = standby_try(sb, won, d))) {
		sl_log_warn("standby: the store failed; reconnecting", "error=%s", d->msg);
		store_close(sb->store);
		sb->store = NULL;
		sb->seen.url[0] = '\0';
		*won = false;
	}
	return SL_OK;
}

/* One standby step on the worker thread (see the head of this file). */
struct step_job {
	struct standby w; /* the standby's state, the worker's while it runs */
	bool won, busy;
	enum sl_err e;
	struct sl_diag d;
	int wake[2]; /* the worker writes a byte to wake[1] when done */
	pthread_t t;
};

static void *step_run(void *arg)
{
	struct step_job *j = arg;
	j->won = false;
	sl_diag_clear(&j->d);
	j->e = standby_step(&j->w, &j->won, &j->d);
	char one = 1;
	while (write(j->wake[1], &one, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

/* Starts a step on a copy of sb. SL_EIO when no thread can be started. */
static enum sl_err step_start(struct step_job *j, const struct standby *sb, struct sl_diag *d)
{
	j->w = *sb;
	int r = pthread_create(&j->t, NULL, step_run, j);
	if (r)
		return sl_diag_set(d, SL_EIO, "cannot start the standby's worker thread: %s", strerror(r));
	j->busy = true;
	return SL_OK;
}

/* The worker woke the loop: takes its state back into sb. */
static void step_finish(struct step_job *j, struct standby *sb, bool *won, enum sl_err *e,
			struct sl_diag *d)
{
	char buf[16];
	while (read(j->wake[0], buf, sizeof(buf)) < 0 && errno == EINTR)
		;
	pthread_join(j->t, NULL);
	j->busy = false;
	*sb = j->w;
	*won = j->won;
	*e = j->e;
	if (j->e)
		*d = j->d;
}

/* stop_fd is readable: true to stop (SIGTERM, SIGINT); SIGHUP reloads the
 * TLS certificate, as on a leader (ctl_stop_or_reload). */
static bool standby_stop_or_reload(bool tls, int stop_fd)
{
	struct signalfd_siginfo si;
	ssize_t n = read(stop_fd, &si, sizeof(si));
	if (n != (ssize_t)sizeof(si) || si.ssi_signo != SIGHUP)
		return true;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (!tls)
		sl_log_info("SIGHUP: nothing to reload (plain HTTP)", NULL);
	else if (ctl_tls_reload(&d))
		sl_log_error("SIGHUP: new TLS certificate refused; still serving the old one",
			     "error=%s", d.msg);
	return false;
}

enum sl_err leader_standby(const struct leader_cfg *cfg, const struct ctl_opts *o,
			   const char *listen, int stop_fd, struct store **out, struct sl_diag *d)
{
	*out = NULL;
	struct standby sb = {.cfg = cfg};
	bool won = false;
	enum sl_err e = standby_step(&sb, &won, d);
	if (e || won) {
		*out = e ? NULL : sb.store;
		if (e)
			store_close(sb.store);
		return e;
	}
	struct http_callbacks cb = {standby_handle, NULL, NULL, &sb, NULL};
	struct http_server *h = NULL;
	/* the standby answers on the same address as the leader will, under the
	 * same rule: HTTPS everywhere but loopback (docs/security.md) */
	struct http_limits lim = {.max_connections = o->max_connections};
	if ((e = ctl_tls_decide(o, listen, &lim, d))) {
		store_close(sb.store);
		return e;
	}
	bool tls = lim.tls_cert_callback != NULL;
	if ((e = http_server_new(listen, &lim, &cb, &h, d))) {
		store_close(sb.store);
		return e;
	}
	struct step_job job = {.wake = {-1, -1}};
	if (pipe(job.wake) || fcntl(job.wake[0], F_SETFL, O_NONBLOCK) ||
	    fcntl(job.wake[0], F_SETFD, FD_CLOEXEC) || fcntl(job.wake[1], F_SETFD, FD_CLOEXEC)) {
		e = sl_diag_set(d, SL_EIO, "pipe: %s", strerror(errno));
		http_server_free(h);
		store_close(sb.store);
		return e;
	}
	int64_t next = mono_ns() + (int64_t)LEADER_POLL_MS * 1000000, watched = mono_ns();
	while (!e && !won) {
		struct pollfd p[3] = {{http_server_fd(h), POLLIN, 0},
				      {job.wake[0], POLLIN, 0},
				      {stop_fd, POLLIN, 0}};
		int64_t ms = (next - mono_ns()) / 1000000 + 1;
		int tmo = http_server_timeout_ms(h);
		if (job.busy)
			ms = -1; /* the worker's byte wakes us */
		if (ms >= 0 && (tmo < 0 || ms < tmo))
			tmo = (int)ms;
		if (poll(p, stop_fd >= 0 ? 3 : 2, tmo) < 0 && errno != EINTR) {
			e = sl_diag_set(d, SL_EIO, "poll: %s", strerror(errno));
			break;
		}
		if (stop_fd >= 0 && (p[2].revents & POLLIN) && standby_stop_or_reload(tls, stop_fd))
			break;
		if (http_server_run(h))
			sl_log_error("http server error (standby)", NULL);
		if (tls && mono_ns() - watched >= 1000000000LL) {
			watched = mono_ns();
			(void)ctl_tls_reload_if_changed(); /* a renewed certificate (tls renew) */
		}
		if (job.busy && (p[1].revents & POLLIN)) {
			step_finish(&job, &sb, &won, &e, d);
			next = mono_ns() + (int64_t)(sb.store ? LEADER_POLL_MS : LEADER_RECONNECT_MS) * 1000000;
		} else if (!job.busy && mono_ns() >= next) {
			e = step_start(&job, &sb, d);
		}
	}
	if (job.busy) {
		/* stopping while a step runs: wait for it (at most the URL's
		 * connect_timeout), so its store is ours to close */
		enum sl_err se;
		bool w;
		struct pollfd p = {job.wake[0], POLLIN, 0};
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
		step_finish(&job, &sb, &w, &se, d);
		/* asked to stop: even a step that won does not lead (closing its
		 * store below ends the session, which frees the lock) */
	}
	close(job.wake[0]);
	close(job.wake[1]);
	http_server_free(h);
	if (won && !e) {
		*out = sb.store;
		return SL_OK;
	}
	store_close(sb.store);
	return e;
}

/* ---- leading ---- */

enum sl_err leader_attach(struct ctl *c, const struct leader_cfg *cfg, struct sl_diag *d)
{
	if (!store_shared(c->store) || !store_lead_epoch(c->store))
		return sl_diag_set(d, SL_EINVAL, "leader_attach: the store does not lead");
	struct ctl_leader *l = calloc(1, sizeof(*l));
	if (!l)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	l->lease_ms = lease_of(cfg);
	l->renew_ns = l->lease_ms * 1000000 / 6;
	l->fence_ns = l->lease_ms * 1000000 * 2 / 3;
	l->last_ok_ns = mono_ns(); /* the takeover itself was a renewal */
	l->next_renew_ns = l->last_ok_ns + l->renew_ns;
	l->epoch = store_lead_epoch(c->store);
	snprintf(l->epoch_s, sizeof(l->epoch_s), "%" PRIu64, l->epoch);
	c->leader = l;
	sl_log_info("leading", "epoch=%" PRIu64 " name=%s url=%s lease_ms=%" PRId64, l->epoch,
		    cfg->name, cfg->advertise, l->lease_ms);
	return SL_OK;
}

void leader_free(struct ctl *c)
{
	if (!c->leader)
		return;
	struct sl_diag d;
	if (!store_failed(c->store) && store_lead_epoch(c->store) &&
	    store_lead_release(c->store, &d))
		sl_log_warn("could not release leadership", "error=%s", d.msg);
	free(c->leader);
	c->leader = NULL;
}

int leader_timeout_ms(struct ctl *c, int tmo)
{
	if (!c->leader)
		return tmo;
	int64_t ms = (c->leader->next_renew_ns - mono_ns()) / 1000000 + 1;
	if (ms < 0)
		ms = 0;
	return tmo < 0 || ms < tmo ? (int)ms : tmo;
}

enum sl_err leader_tick(struct ctl *c, struct sl_diag *d)
{
	struct ctl_leader *l = c->leader;
	if (!l)
		return SL_OK;
	int64_t start = mono_ns();
	if (start >= l->next_renew_ns) {
		enum sl_err e = store_lead_renew(c->store, l->lease_ms, d);
		if (e) {
			sl_log_error("stepping down: cannot renew leadership", "epoch=%s error=%s",
				     l->epoch_s, d->msg);
			return sl_diag_set(d, SL_ECONFLICT, "stepped down from epoch %s: %s",
					   l->epoch_s, sl_err_message(e));
		}
		l->last_ok_ns = start;
		l->next_renew_ns = start + l->renew_ns;
	}
	return leader_check(c, d);
}

enum sl_err leader_check(struct ctl *c, struct sl_diag *d)
{
	struct ctl_leader *l = c->leader;
	if (l && mono_ns() - l->last_ok_ns > l->fence_ns) {
		/* a renewal stalled or the loop was stopped: a standby may be about to
		 * take over, so nothing more is answered from this memory */
		sl_log_error("stepping down: the lease was not renewed in time", "epoch=%s",
			     l->epoch_s);
		return sl_diag_set(d, SL_ECONFLICT, "stepped down from epoch %s: lease not renewed "
				   "within the fence deadline", l->epoch_s);
	}
	return SL_OK;
}

void leader_stamp(struct ctl *c, struct http_request *r)
{
	if (c->leader && http_response_header(r, LEADER_EPOCH_HEADER, c->leader->epoch_s))
		sl_log_warn("cannot add the epoch header", NULL);
}

size_t leader_metrics(const struct ctl *c, char *out, size_t n)
{
	const struct ctl_leader *l = c->leader;
	if (!l || n == 0)
		return 0;
	int64_t lag = store_lead_replication_lag_ms(c->store);
	int k = snprintf(out, n,
			 "# HELP suanli_leader Whether this controller leads (1) or stands by (0).\n"
			 "# TYPE suanli_leader gauge\nsuanli_leader 1\n"
			 "# HELP suanli_leader_epoch The current leader's epoch.\n"
			 "# TYPE suanli_leader_epoch gauge\nsuanli_leader_epoch %" PRIu64 "\n"
			 "# HELP suanli_leader_renew_age_seconds Time since the leader last renewed (server clock).\n"
			 "# TYPE suanli_leader_renew_age_seconds gauge\nsuanli_leader_renew_age_seconds %.3f\n"
			 "# HELP suanli_leader_lease_seconds How long one renewal holds.\n"
			 "# TYPE suanli_leader_lease_seconds gauge\nsuanli_leader_lease_seconds %.3f\n"
			 "# HELP suanli_store_replication_lag_seconds PostgreSQL replicas' replay lag (-1: unknown).\n"
			 "# TYPE suanli_store_replication_lag_seconds gauge\n"
			 "suanli_store_replication_lag_seconds %.3f\n",
			 l->epoch, (double)(mono_ns() - l->last_ok_ns) / 1e9, (double)l->lease_ms / 1e3,
			 lag < 0 ? -1.0 : (double)lag / 1e3);
	return k < 0 ? 0 : (size_t)k >= n ? n - 1 : (size_t)k;
}

void leader_health(const struct ctl *c, void *obj)
{
	json_t *o = obj;
	const struct ctl_leader *l = c->leader;
	if (!o)
		return;
	json_object_set_new(o, "role", json_string(l ? "leader" : "single"));
	if (!l)
		return;
	json_object_set_new(o, "epoch", json_integer((json_int_t)l->epoch));
	json_object_set_new(o, "leader_renew_age_ms",
			    json_integer((json_int_t)((mono_ns() - l->last_ok_ns) / 1000000)));
	json_object_set_new(o, "lease_ms", json_integer((json_int_t)l->lease_ms));
	json_object_set_new(o, "replication_lag_ms",
			    json_integer((json_int_t)store_lead_replication_lag_ms(c->store)));
}

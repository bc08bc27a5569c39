/* main.c - the suanlid command: init, serve, routes.
 *
 * Only main decides to exit (DESIGN.md §10.5). Signals come in through a
 * signalfd that the loop polls beside the HTTP server, so SIGTERM finishes
 * the current turn (commit, answers) before the daemon stops; there is no
 * async-signal-unsafe work in a handler because there is no handler. */
#include <errno.h>
#include <sodium.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "file.h"
#include "http.h"
#include "instances.h"
#include "leader.h"
#include "log.h"
#include "people.h"
#include "store.h"
#include "store_copy.h"
#include "tls.h"

/* Long options without a one-letter form. */
enum { OPT_TLS = 0x100, OPT_NO_TLS, OPT_TLS_SAN, OPT_TLS_CERT, OPT_TLS_KEY, OPT_TLS_CA,
       OPT_CONSOLE, OPT_SES_IDLE, OPT_SES_MAX, OPT_FAILS_USER, OPT_FAILS_SRC };

#define CONFIG_MAX_FILE (64u << 10) /* bound on a config file */
#define CONFIG_MAX_LINE 1024        /* bound on one config line */

static const char usage[] =
	"usage: suanlid init --data DIR [--store postgres://...] [--tls-san NAME]...\n"
	"                     [--tls-cert FILE --tls-key FILE [--tls-ca FILE]]\n"
	"       suanlid tls init|renew|install --data DIR [--tls-san NAME]...\n"
	"                     [--tls-cert FILE --tls-key FILE [--tls-ca FILE]]\n"
	"       suanlid serve --data DIR [--store postgres://...] [--advertise URL]\n"
	"                     [--lease SECS] [--listen ADDR] [--fleet FILE] [--simulate]\n"
	"                     [--config FILE] [--log-level LEVEL] [--preempt-notice SECS]\n"
	"                     [--keep-ended N] [--currency CODE] [--billing-zone ZONE]\n"
	"                     [--grace SECS] [--heartbeat SECS] [--unreachable-after SECS]\n"
	"                     [--down-after SECS] [--max-connections N]\n"
	"                     [--placement frag|bestfit] [--tls | --no-tls]\n"
	"                     [--console DIR] [--session-idle SECS] [--session-max SECS]\n"
	"                     [--signin-fails N] [--signin-fails-source N]\n"
	"                     [--instance-retention DURATION]\n"
	"       suanlid store copy --from DIR --to postgres://...\n"
	"       suanlid routes --json\n\n"
	"The suanli controller. 'init' creates a data directory with its store and\n"
	"prints a one-time admin token (also written to DIR/admin.token, mode 0600).\n"
	"'serve' serves the HTTP API (default 127.0.0.1:7400; port 0 picks a free one).\n"
	"TLS (docs/security.md): init also makes a CA and a server certificate in\n"
	"DIR/tls (or installs yours with --tls-cert/--tls-key); serve speaks HTTPS on\n"
	"every address but loopback and refuses plain HTTP there. 'tls init' does it\n"
	"for an older data directory, 'tls renew' makes a new server certificate from\n"
	"the CA, 'tls install' puts yours in place; a running serve picks up the new\n"
	"files within a second, or at SIGHUP, without dropping connections.\n\n"
	"  --tls-san NAME     a DNS name or IP address the certificate is for (repeat;\n"
	"                     localhost, 127.0.0.1, ::1 and the host name are added)\n"
	"  --tls-cert FILE, --tls-key FILE, --tls-ca FILE  your own certificate (PEM\n"
	"                     chain), its key and the CA that issued it\n"
	"  --tls              HTTPS on a loopback address too\n"
	"  --no-tls           plain HTTP (loopback only)\n"
	"  --tls-san NAME     a DNS name or IP address the certificate is for (repeat;\n"
	"                     localhost, 127.0.0.1, ::1 and the host name are added)\n"
	"  --tls-cert FILE, --tls-key FILE, --tls-ca FILE  your own certificate (PEM\n"
	"                     chain), its key and the CA that issued it\n"
	"  --tls              HTTPS on a loopback address too\n"
	"  --no-tls           plain HTTP (loopback only)\n"
	"  --data DIR         data directory (store, admin token, audit key)\n"
	"  --store URL        keep the store in PostgreSQL instead of DIR: several\n"
	"                     controllers on one database, one leads (docs/ha.md);\n"
	"                     each needs a copy of DIR's audit key\n"
	"  --advertise URL    where clients reach this controller (standbys name\n"
	"                     the leader's); default https://LISTEN, or\n"
	"                     http://LISTEN where it serves plain HTTP\n"
	"  --lease SECS       leadership lease (default 6): the leader renews every\n"
	"                     SECS/6, fences itself after 2*SECS/3 without renewal,\n"
	"                     a standby takes over after SECS\n"
	"  --listen ADDR      HOST:PORT, [V6]:PORT or :PORT\n"
	"  --fleet FILE       load this fleet file at start, replacing the stored one\n"
	"  --simulate         count fleet nodes as present and healthy (no agents)\n"
	"  --config FILE      'key = value' lines with the same names as these\n"
	"                     options (data, listen, fleet, simulate, log-level,\n"
	"                     preempt-notice, keep-ended, currency, billing-zone,\n"
	"                     grace, heartbeat, unreachable-after, down-after,\n"
	"                     max-connections, placement); command-line options win\n"
	"  --console DIR      the web console's files, served at / and /console/\n"
	"                     (default: the source tree's console/ when there, else\n"
	"                     the installed share/suanli/console; docs/console.md)\n"
	"  --session-idle SECS  a console session unused this long ends (default\n"
	"                     43200, 12 h)\n"
	"  --session-max SECS  ... and this long after sign-in (default 604800, 7 d)\n"
	"  --signin-fails N   failed sign-ins per user per minute before 429 (default 5)\n"
	"  --signin-fails-source N  ... per source address (default 20)\n"
	"  --placement POLICY  frag (default: fragmentation-aware, for the workload\n"
	"                     learned from recent requests) or bestfit\n"
	"  --log-level LEVEL  debug, info, warn or error (default info)\n"
	"  --preempt-notice SECS  notice a spot lease gets before preemption (default 30)\n"
	"  --keep-ended N     ended leases kept in memory (default 4096); older ones\n"
	"                     are read from the store when asked for\n"
	"  --currency CODE    billing currency, ISO 4217 (default CNY)\n"
	"  --billing-zone ZONE  time zone of invoice months (default UTC; e.g.\n"
	"                     Asia/Shanghai, UTC+08:00)\n"
	"  --grace SECS       how long leases keep running once a tenant's balance\n"
	"                     runs out (default 600; 0: none)\n"
	"  --instance-retention DURATION  a stopped instance whose tenant's balance\n"
	"                     stays below zero is released (data deleted) after this\n"
	"                     (default 15d; 90s, 30m, 12h, 15d)\n"
	"  --heartbeat SECS   interval agents are told to report at (default 5)\n"
	"  --unreachable-after SECS  a node whose agent is silent this long takes no\n"
	"                     new leases (default 15)\n"
	"  --down-after SECS  ... and after this long its leases fail or move\n"
	"                     (default 60); see docs/agents.md\n"
	"  --max-connections N  HTTP connections served at once (default 4096; each\n"
	"                     agent holds one). Past N a client gets 503 with\n"
	"                     Retry-After at once. Needs N + N/8 + 64 file\n"
	"                     descriptors: suanlid raises its soft limit to the\n"
	"                     hard one (ulimit -Hn, systemd LimitNOFILE=) and\n"
	"                     refuses to start when that is not enough\n"
	"'store copy' moves a data directory's store into an empty PostgreSQL\n"
	"database (audit log included) and verifies it row by row.\n"
	"'routes --json' prints the API's route table with the roles of each route.\n";

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void fail(const char *what, const struct sl_diag *d)
{
	char buf[SL_DIAG_MSG + 256];
	sl_diag_format(d, buf, sizeof(buf));
	fprintf(stderr, "suanlid: %s: %s\n", what, buf);
	if (d->hint[0])
		fprintf(stderr, "  hint: %s\n", d->hint);
}

struct settings {
	char *data, *listen, *fleet, *level, *notice, *keep;
	char *currency, *zone, *grace; /* billing */
	char *hb, *unreach, *down;     /* agents */
	char *maxconn;                 /* HTTP */
	char *store, *advertise, *lease, *from, *to; /* HA (docs/ha.md) */
	char *placement;               /* frag | bestfit */
	char *console, *ses_idle, *ses_max, *fails_user, *fails_src; /* the console */
	char *retention;               /* instances (docs/instances.md) */
	int simulate; /* -1 unset */
	int tls;      /* 0 auto, 1 --tls, -1 --no-tls */
	struct ctl_tls_init ti;
};

static void settings_free(struct settings *s)
{
	free(s->data), free(s->listen), free(s->fleet), free(s->level), free(s->notice), free(s->keep);
	free(s->currency), free(s->zone), free(s->grace);
	free(s->hb), free(s->unreach), free(s->down), free(s->maxconn);
	free(s->store), free(s->advertise), free(s->lease), free(s->from), free(s->to);
	free(s->placement);
	free(s->console), free(s->ses_idle), free(s->ses_max), free(s->fails_user), free(s->fails_src);
	free(s->retention);
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	char *e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = 0;
	return s;
}

static int parse_bool(const char *v)
{
	if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1") || !strcmp(v, "on"))
		return 1;
	if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0") || !strcmp(v, "off"))
		return 0;
	return -1;
}

/* Fills the settings that are still unset from a config file. */
static int read_config(const char *path, struct settings *s)
{
	char *text = NULL;
	size_t len = 0;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (sl_read_file(path, CONFIG_MAX_FILE, &text, &len, &d)) {
		fail("config", &d);
		return -1;
	}
	int line = 0, rc = 0;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && !rc;
	     l = strtok_r(NULL, "\n", &save)) {
		line++;
		if (strlen(l) > CONFIG_MAX_LINE) {
			fprintf(stderr, "suanlid: %s:%d: line longer than %d bytes\n", path, line,
				CONFIG_MAX_LINE);
			rc = -1;
			break;
		}
		char *t = trim(l);
		if (!*t || *t == '#')
			continue;
		char *eq = strchr(t, '=');
		if (!eq) {
			fprintf(stderr, "suanlid: %s:%d: expected 'key = value'\n", path, line);
			rc = -1;
			break;
		}
		*eq = 0;
		char *k = trim(t), *v = trim(eq + 1);
		char **slot = !strcmp(k, "data") ? &s->data : !strcmp(k, "listen") ? &s->listen :
			      !strcmp(k, "fleet") ? &s->fleet : !strcmp(k, "log-level") ? &s->level :
			      !strcmp(k, "preempt-notice") ? &s->notice :
			      !strcmp(k, "keep-ended") ? &s->keep :
			      !strcmp(k, "currency") ? &s->currency :
			      !strcmp(k, "billing-zone") ? &s->zone :
			      !strcmp(k, "grace") ? &s->grace :
			      !strcmp(k, "heartbeat") ? &s->hb :
			      !strcmp(k, "unreachable-after") ? &s->unreach :
			      !strcmp(k, "down-after") ? &s->down :
			      !strcmp(k, "max-connections") ? &s->maxconn :
			      !strcmp(k, "store") ? &s->store :
			      !strcmp(k, "advertise") ? &s->advertise :
			      !strcmp(k, "lease") ? &s->lease :
			      !strcmp(k, "placement") ? &s->placement :
			      !strcmp(k, "console") ? &s->console :
			      !strcmp(k, "session-idle") ? &s->ses_idle :
			      !strcmp(k, "session-max") ? &s->ses_max :
			      !strcmp(k, "signin-fails") ? &s->fails_user :
			      !strcmp(k, "signin-fails-source") ? &s->fails_src :
			      !strcmp(k, "instance-retention") ? &s->retention : NULL;
		if (slot) {
			if (!*slot && !(*slot = strdup(v)))
				rc = -1;
		} else if (!strcmp(k, "simulate")) {
			int b = parse_bool(v);
			if (b < 0) {
				fprintf(stderr, "suanlid: %s:%d: simulate must be true or false\n", path, line);
				rc = -1;
			} else if (s->simulate < 0) {
				s->simulate = b;
			}
		} else {
			fprintf(stderr, "suanlid: %s:%d: unknown key '%s'\n  hint: keys are data, listen, fleet, simulate, log-level, preempt-notice, keep-ended, currency, billing-zone, grace, heartbeat, unreachable-after, down-after, max-connections, store, advertise, lease, placement, console, session-idle, session-max, signin-fails, signin-fails-source, instance-retention\n",
				path, line, k);
			rc = -1;
		}
	}
	free(text);
	return rc;
}

static void print_ca(const char *data)
{
	char sha[65];
	struct sl_diag d;
	sl_diag_clear(&d);
	if (ctl_tls_ca_sha256(data, sha, &d) == SL_OK)
		printf("TLS: agents and the CLI verify against %s/" CTL_TLS_DIR "/" CTL_TLS_CA
		       " (sha256 %s).\n", data, sha);
}

static int cmd_init(const char *data, const char *store, struct ctl_tls_init *ti)
{
	struct sl_diag d;
	char *token = NULL;
	sl_diag_clear(&d);
	if (!data) {
		fputs("suanlid: init needs --data DIR\n", stderr);
		return 2;
	}
	if (store && !store_is_url(store)) {
		fputs("suanlid: --store takes a postgres://... URL\n", stderr);
		return 2;
	}
	if (ctl_init_data_at(data, store, now_ns(), &token, &d)) {
		fail("init", &d);
		return 1;
	}
	printf("Initialised %s.\nAdmin token (shown once; also in %s/%s, mode 0600):\n%s\n", data,
	       data, CTL_ADMIN_TOKEN_FILE, token);
	sodium_memzero(token, strlen(token));
	free(token);
	ti->now_ns = now_ns();
	if (ctl_tls_init_files(data, ti, &d)) {
		fail("TLS (run 'suanlid tls init' once fixed)", &d);
		return 1;
	}
	print_ca(data);
	return 0;
}

/* suanlid tls init|renew|install. */
static int cmd_tls(const char *sub, const char *data, struct ctl_tls_init *ti)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	if (!data) {
		fputs("suanlid: tls needs --data DIR\n", stderr);
		return 2;
	}
	ti->now_ns = now_ns();
	enum sl_err e;
	if (!strcmp(sub, "init")) {
		e = ctl_tls_init_files(data, ti, &d);
	} else if (!strcmp(sub, "renew")) {
		e = ctl_tls_renew(data, ti, &d);
	} else if (!strcmp(sub, "install")) {
		if (!ti->cert || !ti->key) {
			fputs("suanlid: tls install needs --tls-cert FILE and --tls-key FILE\n", stderr);
			return 2;
		}
		char path[4200];
		snprintf(path, sizeof(path), "%s/" CTL_TLS_DIR "/" CTL_TLS_CERT, data);
		if (rename(path, path) == 0) {
			/* replace: init refuses an existing certificate */
			char old[4300];
			snprintf(old, sizeof(old), "%s.old", path);
			if (rename(path, old))
				perror("suanlid: keeping the old certificate");
		}
		e = ctl_tls_init_files(data, ti, &d);
	} else {
		fprintf(stderr, "suanlid: tls: unknown subcommand '%s' (init, renew, install)\n", sub);
		return 2;
	}
	if (e) {
		fail("tls", &d);
		return 1;
	}
	printf("TLS files written to %s/" CTL_TLS_DIR "; a running suanlid picks them up within a second "
	       "(or at SIGHUP).\n", data);
	print_ca(data);
	return 0;
}

/* Every connection is a descriptor: take as many as the hard limit allows
 * (up to what the connection limit needs), so the soft default of 1024 is
 * not what caps the fleet. ctl_new refuses to start when it is still short. */
static void raise_fd_limit(unsigned max_connections)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)http_fds_needed(max_connections);
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		sl_log_warn("cannot raise the file descriptor limit", "error=%s", strerror(errno));
}

static char **saved_argv;

/* A deposed or fenced leader starts over as a fresh process, which stands by:
 * nothing of the old memory is answered or written (as after a failed commit,
 * no answer of the turn is sent). */
static void step_down(const struct sl_diag *d)
{
	sl_log_error("stepped down; restarting as a standby", "reason=%s", d->msg);
	fflush(stderr);
	execv("/proc/self/exe", saved_argv);
	sl_log_error("cannot restart", "error=%s", strerror(errno));
	_exit(3);
}

/* Fills the leadership settings; 0, or the exit status for a bad one. */
static int leader_settings(const struct settings *s, const char *listen, struct leader_cfg *lc,
			   char name[STORE_MAX_ID + 1], char adv[STORE_MAX_LEADER_URL + 1])
{
	if (!store_is_url(s->store)) {
		fputs("suanlid: --store takes a postgres://... URL\n", stderr);
		return 2;
	}
	lc->store_url = s->store;
	if (s->lease) {
		char *end;
		double v = strtod(s->lease, &end);
		if (end == s->lease || *end || v * 1000 < LEADER_LEASE_MIN_MS ||
		    v * 1000 > LEADER_LEASE_MAX_MS) {
			fprintf(stderr, "suanlid: --lease must be %.1f..%d seconds\n",
				LEADER_LEASE_MIN_MS / 1000.0, LEADER_LEASE_MAX_MS / 1000);
			return 2;
		}
		lc->lease_ms = (int64_t)(v * 1000);
	}
	char host[128] = "localhost";
	gethostname(host, sizeof(host) - 1);
	for (char *p = host; *p; p++)
		if (*p <= ' ' || *p > '~')
			*p = '_';
	snprintf(name, STORE_MAX_ID + 1, "%.120s/%d/%.100s", host, (int)getpid(), listen);
	for (char *p = name; *p; p++)
		if (*p <= ' ' || *p > '~')
			*p = '_';
	/* the default names the scheme actually served: a standby's leader hint
	 * must not send clients to http:// on a controller that speaks HTTPS */
	const char *scheme = ctl_tls_serves_https(s->tls, listen) ? "https" : "http";
	if (s->advertise)
		snprintf(adv, STORE_MAX_LEADER_URL + 1, "%s", s->advertise);
	else if (listen[0] == ':')
		snprintf(adv, STORE_MAX_LEADER_URL + 1, "%s://127.0.0.1%s", scheme, listen);
	else
		snprintf(adv, STORE_MAX_LEADER_URL + 1, "%s://%s", scheme, listen);
	lc->name = name;
	lc->advertise = adv;
	return 0;
}

static int cmd_serve(struct settings *s)
{
	struct sl_diag d;
	struct ctl *c = NULL;
	sl_diag_clear(&d);
	if (!s->data) {
		fputs("suanlid: serve needs --data DIR (or 'data' in --config)\n", stderr);
		return 2;
	}
	if (s->level) {
		enum sl_log_level lv;
		if (sl_log_level_parse(s->level, &lv, &d)) {
			fail("--log-level", &d);
			return 2;
		}
		sl_log_init(NULL, lv);
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP); /* reloads the TLS certificate */
	signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &set, NULL)) {
		perror("suanlid: sigprocmask");
		return 1;
	}
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		perror("suanlid: signalfd");
		return 1;
	}
	struct ctl_opts o = {.data_dir = s->data,
			     .listen = s->listen ? s->listen : "127.0.0.1:7400",
			     .fleet_file = s->fleet,
			     .simulate = s->simulate > 0,
			     .preempt_notice_s = -1};
	o.placement = s->placement;
	o.tls = s->tls;
	if (s->keep) {
		char *end;
		long v = strtol(s->keep, &end, 10);
		if (end == s->keep || *end || v < 1 || v > CTL_KEEP_ENDED_MAX) {
			fprintf(stderr, "suanlid: --keep-ended must be 1..%d\n", CTL_KEEP_ENDED_MAX);
			close(sfd);
			return 2;
		}
		o.keep_ended = (int)v;
	}
	if (s->notice) {
		char *end;
		long long v = strtoll(s->notice, &end, 10);
		if (end == s->notice || *end || v < 0 || v > CTL_MAX_NOTICE_S) {
			fprintf(stderr, "suanlid: --preempt-notice must be 0..%lld seconds\n",
				(long long)CTL_MAX_NOTICE_S);
			close(sfd);
			return 2;
		}
		o.preempt_notice_s = v;
	}
	o.currency = s->currency;
	o.billing_zone = s->zone;
	if (s->grace) {
		char *end;
		long long v = strtoll(s->grace, &end, 10);
		if (end == s->grace || *end || v < 0 || v > CTL_MAX_GRACE_S) {
			fprintf(stderr, "suanlid: --grace must be 0..%d seconds\n", CTL_MAX_GRACE_S);
			close(sfd);
			return 2;
		}
		o.grace_s = v ? v : -1;
	}
	if (s->retention) {
		/* a number of seconds, or with one unit: 90s, 30m, 12h, 15d */
		char *end;
		long long v = strtoll(s->retention, &end, 10);
		long long mul = !*end ? 1 : !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60
				: !strcmp(end, "h") ? 3600 : !strcmp(end, "d") ? 86400 : 0;
		if (end == s->retention || !mul || v < 1 || v > INSTANCES_RETENTION_MAX_S / mul) {
			fprintf(stderr, "suanlid: --instance-retention must be a duration such as 15d, 12h or 3600 (seconds), at most 3650d\n");
			close(sfd);
			return 2;
		}
		o.instance_retention_s = v * mul;
	}
	/* Agents' lifecycle (docs/agents.md). */
	const char *const anames[3] = {"--heartbeat", "--unreachable-after", "--down-after"};
	const char *const avals[3] = {s->hb, s->unreach, s->down};
	int64_t *const aslots[3] = {&o.heartbeat_s, &o.unreachable_after_s, &o.down_after_s};
	for (int i = 0; i < 3; i++) {
		char *end;
		if (!avals[i])
			continue;
		long long v = strtoll(avals[i], &end, 10);
		if (end == avals[i] || *end || v < 1 || v > 86400) {
			fprintf(stderr, "suanlid: %s must be 1..86400 seconds\n", anames[i]);
			close(sfd);
			return 2;
		}
		*aslots[i] = v;
	}
	if (o.unreachable_after_s && o.down_after_s && o.down_after_s < o.unreachable_after_s) {
		fputs("suanlid: --down-after must be at least --unreachable-after\n", stderr);
		close(sfd);
		return 2;
	}
	if (s->maxconn) {
		char *end;
		long long v = strtoll(s->maxconn, &end, 10);
		if (end == s->maxconn || *end || v < 1 || v > HTTP_MAX_CONNECTIONS_LIMIT) {
			fprintf(stderr, "suanlid: --max-connections must be 1..%u\n",
				HTTP_MAX_CONNECTIONS_LIMIT);
			close(sfd);
			return 2;
		}
		o.max_connections = (unsigned)v;
	}
	if (s->placement && strcmp(s->placement, "frag") && strcmp(s->placement, "bestfit")) {
		fprintf(stderr, "suanlid: --placement must be frag or bestfit\n");
		close(sfd);
		return 2;
	}
	/* The console (docs/console.md). */
	o.console_dir = s->console;
	const char *const pnames[4] = {"--session-idle", "--session-max", "--signin-fails",
				       "--signin-fails-source"};
	const char *const pvals[4] = {s->ses_idle, s->ses_max, s->fails_user, s->fails_src};
	const long long pmax[4] = {PEOPLE_SESSION_MAX_S, PEOPLE_SESSION_MAX_S, 100000, 100000};
	long long pv[4] = {0, 0, 0, 0};
	for (int i = 0; i < 4; i++) {
		char *end;
		if (!pvals[i])
			continue;
		pv[i] = strtoll(pvals[i], &end, 10);
		if (end == pvals[i] || *end || pv[i] < 1 || pv[i] > pmax[i]) {
			fprintf(stderr, "suanlid: %s must be 1..%lld\n", pnames[i], pmax[i]);
			close(sfd);
			return 2;
		}
	}
	o.session_idle_s = pv[0];
	o.session_max_s = pv[1];
	o.signin_fails_user = (int)pv[2];
	o.signin_fails_source = (int)pv[3];
	raise_fd_limit(o.max_connections ? o.max_connections : HTTP_MAX_CONNECTIONS);
	struct leader_cfg lc = {0};
	char name[STORE_MAX_ID + 1], adv[STORE_MAX_LEADER_URL + 1];
	if (s->store) {
		int r = leader_settings(s, o.listen, &lc, name, adv);
		if (r) {
			close(sfd);
			return r;
		}
		if (leader_standby(&lc, &o, o.listen, sfd, &o.store_take, &d)) {
			fail("standby", &d);
			close(sfd);
			return 1;
		}
		if (!o.store_take) { /* stopped while standing by */
			close(sfd);
			sl_log_info("stopped", NULL);
			return 0;
		}
		o.leader = &lc;
	}
	enum sl_err ne = ctl_new(&o, now_ns(), &c, &d);
	if (ne) {
		char buf[SL_DIAG_MSG + 256];
		sl_diag_format(&d, buf, sizeof(buf));
		sl_log_error("cannot start", "error=%s hint=%s", buf, d.hint);
		if (o.store_take && ne == SL_EIO)
			step_down(&d); /* lost the database while loading: stand by again */
		close(sfd);
		return 1;
	}
	sl_log_info("listening", "listen=%s port=%u data=%s simulate=%d placement=%s version=%s", o.listen,
		    (unsigned)ctl_port(c), o.data_dir, (int)o.simulate,
		    o.placement ? o.placement : "frag", CTL_VERSION);
	enum sl_err e = ctl_run(c, sfd, &d);
	if (e == SL_ECONFLICT && s->store)
		step_down(&d); /* does not return */
	if (e) {
		/* Memory is ahead of disk: die now, answer nobody, never retry. */
		fflush(stderr);
		_exit(1);
	}
	ctl_free(c);
	close(sfd);
	sl_log_info("stopped", NULL);
	return 0;
}

static int cmd_store_copy(const char *from, const char *to)
{
	struct sl_diag d;
	struct store_copy_stats st;
	sl_diag_clear(&d);
	if (!from || !to) {
		fputs("suanlid: store copy needs --from DIR and --to postgres://...\n", stderr);
		return 2;
	}
	if (ctl_store_copy(from, to, now_ns(), &st, &d)) {
		fail("store copy", &d);
		return 1;
	}
	printf("Copied and verified: %llu rows, %llu meta keys, %llu audit entries, %llu cached "
	       "subtrees, %llu checkpoints.\nServe it with: suanlid serve --data %s --store URL\n",
	       (unsigned long long)st.rows, (unsigned long long)st.meta,
	       (unsigned long long)st.audit_entries, (unsigned long long)st.subtrees,
	       (unsigned long long)st.checkpoints, from);
	return 0;
}

static int cmd_routes(void)
{
	size_t n;
	const struct ctl_route *r = ctl_routes(&n);
	printf("[\n");
	for (size_t i = 0; i < n; i++) {
		printf("  {\"method\": \"%s\", \"path\": \"%s\", \"label\": \"%s\", \"auth\": %s, "
		       "\"mutates\": %s, \"roles\": [",
		       r[i].method, r[i].pattern, r[i].label, r[i].auth ? "true" : "false",
		       r[i].mutates ? "true" : "false");
		int first = 1;
		for (int k = 0; k < CTL_ROLE__COUNT; k++)
			if (r[i].roles & CTL_ROLE_BIT(k)) {
				printf("%s\"%s\"", first ? "" : ", ", ctl_role_name((enum ctl_role)k));
				first = 0;
			}
		printf("]}%s\n", i + 1 < n ? "," : "");
	}
	printf("]\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"data", required_argument, NULL, 'd'},   {"listen", required_argument, NULL, 'l'},
		{"fleet", required_argument, NULL, 'f'},  {"simulate", no_argument, NULL, 's'},
		{"config", required_argument, NULL, 'c'}, {"log-level", required_argument, NULL, 'L'},
		{"preempt-notice", required_argument, NULL, 'N'},
		{"keep-ended", required_argument, NULL, 'K'},
		{"currency", required_argument, NULL, 'C'},
		{"billing-zone", required_argument, NULL, 'Z'},
		{"grace", required_argument, NULL, 'G'},
		{"heartbeat", required_argument, NULL, 'H'},
		{"unreachable-after", required_argument, NULL, 'U'},
		{"down-after", required_argument, NULL, 'D'},
		{"max-connections", required_argument, NULL, 'M'},
		{"store", required_argument, NULL, 'S'},
		{"advertise", required_argument, NULL, 'A'},
		{"lease", required_argument, NULL, 'E'},
		{"from", required_argument, NULL, 'F'},
		{"to", required_argument, NULL, 'T'},
		{"placement", required_argument, NULL, 'P'},
		{"instance-retention", required_argument, NULL, 'R'},
		{"tls", no_argument, NULL, OPT_TLS},          {"no-tls", no_argument, NULL, OPT_NO_TLS},
		{"tls-san", required_argument, NULL, OPT_TLS_SAN},
		{"tls-cert", required_argument, NULL, OPT_TLS_CERT},
		{"tls-key", required_argument, NULL, OPT_TLS_KEY},
		{"tls-ca", required_argument, NULL, OPT_TLS_CA},
		{"console", required_argument, NULL, OPT_CONSOLE},
		{"session-idle", required_argument, NULL, OPT_SES_IDLE},
		{"session-max", required_argument, NULL, OPT_SES_MAX},
		{"signin-fails", required_argument, NULL, OPT_FAILS_USER},
		{"signin-fails-source", required_argument, NULL, OPT_FAILS_SRC},
		{"json", no_argument, NULL, 'j'},         {"help", no_argument, NULL, 'h'},
		{0, 0, 0, 0}};
	struct settings s = {.simulate = -1};
	const char *config = NULL;
	int ch, rc;
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("suanlid %s\n", CTL_VERSION);
		return 0;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "store") && (argc < 3 || strcmp(argv[2], "copy"))) {
		fputs("suanlid: 'store' has one subcommand: store copy --from DIR --to URL\n", stderr);
		return 2;
	}
	if (strcmp(cmd, "init") && strcmp(cmd, "serve") && strcmp(cmd, "routes") &&
	    strcmp(cmd, "store") && strcmp(cmd, "tls")) {
		fprintf(stderr, "suanlid: unknown command '%s'\n\n%s", cmd, usage);
		return 2;
	}
	const char *sub = NULL;
	optind = strcmp(cmd, "store") ? 2 : 3;
	if (!strcmp(cmd, "tls")) {
		if (argc < 3 || argv[2][0] == '-') {
			fputs("suanlid: tls needs init, renew or install\n", stderr);
			return 2;
		}
		sub = argv[2];
		optind = 3;
	}
	saved_argv = argv;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char **slot = NULL;
		switch (ch) {
		case 'd': slot = &s.data; break;
		case 'l': slot = &s.listen; break;
		case 'f': slot = &s.fleet; break;
		case 'L': slot = &s.level; break;
		case 'N': slot = &s.notice; break;
		case 'K': slot = &s.keep; break;
		case 'P': slot = &s.placement; break;
		case 'R': slot = &s.retention; break;
		case 'C': slot = &s.currency; break;
		case 'Z': slot = &s.zone; break;
		case 'G': slot = &s.grace; break;
		case 'H': slot = &s.hb; break;
		case 'U': slot = &s.unreach; break;
		case 'D': slot = &s.down; break;
		case 'M': slot = &s.maxconn; break;
		case 'S': slot = &s.store; break;
		case 'A': slot = &s.advertise; break;
		case 'E': slot = &s.lease; break;
		case 'F': slot = &s.from; break;
		case 'T': slot = &s.to; break;
		case 's': s.simulate = 1; break;
		case OPT_TLS: s.tls = 1; break;
		case OPT_NO_TLS: s.tls = -1; break;
		case OPT_TLS_SAN:
			if (s.ti.nsans == CTL_TLS_MAX_SANS) {
				fprintf(stderr, "suanlid: at most %d --tls-san\n", CTL_TLS_MAX_SANS);
				settings_free(&s);
				return 2;
			}
			s.ti.sans[s.ti.nsans++] = optarg;
			break;
		case OPT_TLS_CERT: s.ti.cert = optarg; break;
		case OPT_TLS_KEY: s.ti.key = optarg; break;
		case OPT_TLS_CA: s.ti.ca = optarg; break;
		case OPT_CONSOLE: slot = &s.console; break;
		case OPT_SES_IDLE: slot = &s.ses_idle; break;
		case OPT_SES_MAX: slot = &s.ses_max; break;
		case OPT_FAILS_USER: slot = &s.fails_user; break;
		case OPT_FAILS_SRC: slot = &s.fails_src; break;
		case 'c': config = optarg; break;
		case 'j': break;
		case 'h':
			fputs(usage, stdout);
			settings_free(&s);
			return 0;
		default:
			fputs(usage, stderr);
			settings_free(&s);
			return 2;
		}
		if (slot) {
			free(*slot);
			*slot = strdup(optarg);
		}
	}
	if (optind != argc) {
		fprintf(stderr, "suanlid: unexpected argument '%s'\n", argv[optind]);
		settings_free(&s);
		return 2;
	}
	if (config && read_config(config, &s)) {
		settings_free(&s);
		return 2;
	}
	if (!strcmp(cmd, "init"))
		rc = cmd_init(s.data, s.store, &s.ti);
	else if (!strcmp(cmd, "store"))
		rc = cmd_store_copy(s.from, s.to);
	else if (!strcmp(cmd, "tls"))
		rc = cmd_tls(sub, s.data, &s.ti);
	else if (!strcmp(cmd, "routes"))
		rc = cmd_routes();
	else
		rc = cmd_serve(&s);
	settings_free(&s);
	return rc;
}

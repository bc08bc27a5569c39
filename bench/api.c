/* bench/api.c - the controller's HTTP API under load: lease create+release
 * throughput with durable commits, and read latency.
 *
 * Generates a 1,000-node fleet file (fixed seed: mixed 8-GPU types, leaves
 * of 32) in a temp dir, inits a data dir there and starts a real suanlid
 * (Release build, next to this program or $SUANLID) pinned to core 0; the
 * client runs pinned to core 1 (when there are two). As the tenant's own
 * token, CONNS keep-alive connections each loop "create a lease, release
 * it", so that many creates wait in one loop turn and group commit can batch
 * them. Then READ_LEASES leases are held and read back by id, and the node
 * list is read. The daemon's CPU time is read from /proc to tell a
 * CPU-bound daemon from one waiting on fsync. Figures are printed and
 * written to bench/results/api.md (or argv[1]); nothing is asserted.
 *
 * One event loop over epoll drives all connections: the client must cost
 * far less than the daemon it measures.
 *
 * When Debian's wrk is installed it is run too, against the same daemon:
 * creates with releases (a Lua script), and reads of one lease.
 *
 * Then the same pairs run against a suanlid on PostgreSQL (a server started
 * for the run by scripts/pg-test.sh, fsync on), and the two leases/s are
 * reported side by side (BENCH_NO_PG skips it).
 *
 * Usage: bench_api [results.md] [pairs]
 * Plain and TLS side by side: two fresh daemons (one --tls), the same
 * client and pairs in interleaved rounds (run_tls_side).
 *
 * env: SUANLID (the daemon), BENCH_CONNS (connections), BENCH_NO_WRK (skip wrk),
 *      BENCH_NO_TLS, BENCH_NO_PG */
#include <sys/epoll.h>

#include "bench_lib.h"

#define NODES 1000
#define CONNS_DEFAULT 64
#define PAIRS_DEFAULT 20000
#define READ_LEASES 512
#define READS_BY_ID 20000
#define READS_NODES 300
#define REQ_MAX 1024
#define WRK_DURATION "10s"
#define WRK_CONNS 64

enum op { OP_CREATE, OP_RELEASE, OP_GET_LEASE, OP_GET_NODES, OP_DONE };

struct client {
	struct bl_conn c;
	enum op op;
	double sent_ms;
	char lease[64];
	uint64_t seed;
};

struct phase {
	const char *name;
	int port;
	const char *token;
	long todo;      /* operations still to start */
	long done, failed, placed, pending;
	struct bl_samples lat[2]; /* create / release, or reads */
	char (*ids)[64];  /* leases to read (OP_GET_LEASE) */
	int nids;
	double wall_ms, daemon_cpu_ms, client_cpu_ms; /* summed over rounds */
};

/* CPU time of this process (the client) in ms. */
static double self_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static const int gpu_sizes[] = {1, 2, 4, 8};

static void start_op(struct phase *ph, struct client *cl, enum op op)
{
	char req[REQ_MAX], path[128], body[128];
	size_t n;
	cl->op = op;
	switch (op) {
	case OP_CREATE:
		snprintf(body, sizeof(body), "{\"gpus\":%d,\"duration_s\":3600}",
			 gpu_sizes[bl_below(&cl->seed, 4)]);
		n = bl_format(req, sizeof(req), "POST", "/v1/leases", ph->token, body, NULL);
		break;
	case OP_RELEASE:
		snprintf(path, sizeof(path), "/v1/leases/%s/release", cl->lease);
		n = bl_format(req, sizeof(req), "POST", path, ph->token, NULL, NULL);
		break;
	case OP_GET_LEASE:
		snprintf(path, sizeof(path), "/v1/leases/%s", ph->ids[bl_below(&cl->seed, ph->nids)]);
		n = bl_format(req, sizeof(req), "GET", path, ph->token, NULL, NULL);
		break;
	case OP_GET_NODES:
		n = bl_format(req, sizeof(req), "GET", "/v1/nodes", ph->token, NULL, NULL);
		break;
	case OP_DONE:
	default:
		return;
	}
	cl->sent_ms = bl_now_ms();
	/* Requests are far smaller than a socket buffer: one send (one TLS
	 * record over HTTPS) suffices. */
	if (!bl_send(&cl->c, req, n))
		bl_die("send: %s", strerror(errno));
}

/* The next operation of a client after an answer; OP_DONE when none. */
static enum op next_op(struct phase *ph, enum op prev)
{
	if (prev == OP_CREATE)
		return OP_RELEASE; /* a create's release is part of its pair */
	if (ph->todo <= 0)
		return OP_DONE;
	ph->todo--;
	return prev == OP_RELEASE ? OP_CREATE : prev;
}

static void on_answer(struct phase *ph, struct client *cl, int st, const char *body)
{
	double lat = bl_now_ms() - cl->sent_ms;
	enum op op = cl->op;
	if (op == OP_CREATE) {
		char state[32] = "";
		if (st != 201 || !bl_json_str(body, "id", cl->lease, sizeof(cl->lease))) {
			ph->failed++;
			fprintf(stderr, "bench_api: create answered %d: %.200s\n", st, body);
			op = OP_RELEASE; /* nothing to release: go on with the next pair */
		} else {
			bl_add(&ph->lat[0], lat);
			bl_json_str(body, "state", state, sizeof(state));
			if (!strcmp(state, "active"))
				ph->placed++;
			else
				ph->pending++;
			ph->done++;
		}
	} else {
		if (st != 200) {
			ph->failed++;
			fprintf(stderr, "bench_api: %s answered %d: %.200s\n",
				op == OP_RELEASE ? "release" : "read", st, body);
		} else {
			bl_add(&ph->lat[op == OP_RELEASE ? 1 : 0], lat);
			if (op != OP_RELEASE)
				ph->done++;
		}
	}
	enum op nx = next_op(ph, op);
	if (nx != OP_DONE)
		start_op(ph, cl, nx);
	else
		cl->op = OP_DONE;
}

/* Runs a phase: every client starts with `first` and goes on until
 * ph->todo operations have been started and all are answered. */
static void run_phase(struct phase *ph, struct client *cls, int ncl, enum op first, pid_t daemon)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), active = 0;
	if (ep < 0)
		bl_die("epoll: %s", strerror(errno));
	double cpu0 = bl_proc_cpu_ms(daemon), t0 = bl_now_ms(), self0 = self_cpu_ms();
	for (int i = 0; i < ncl && ph->todo > 0; i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cls[i]};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, cls[i].c.fd, &ev))
			bl_die("epoll_ctl: %s", strerror(errno));
		ph->todo--;
		start_op(ph, &cls[i], first);
		active++;
	}
	struct epoll_event evs[128];
	while (active > 0) {
		int n = epoll_wait(ep, evs, 128, 30000);
		if (n <= 0)
			bl_die("%s: no answer for 30 s (%d connections waiting)", ph->name, active);
		for (int i = 0; i < n; i++) {
			struct client *cl = evs[i].data.ptr;
			ssize_t r = bl_fill(&cl->c);
			if (r <= 0)
				bl_die("%s: the daemon closed a connection", ph->name);
			cl->c.len += (size_t)r;
			int st;
			size_t bo, bn;
			long used;
			while (cl->op != OP_DONE &&
			       (used = bl_parse(cl->c.buf, cl->c.len, &st, &bo, &bn)) != 0) {
				if (used < 0)
					bl_die("%s: malformed answer", ph->name);
				char save = cl->c.buf[bo + bn];
				cl->c.buf[bo + bn] = 0;
				on_answer(ph, cl, st, cl->c.buf + bo);
				cl->c.buf[bo + bn] = save;
				memmove(cl->c.buf, cl->c.buf + used, cl->c.len - (size_t)used);
				cl->c.len -= (size_t)used;
			}
			if (cl->op == OP_DONE) {
				epoll_ctl(ep, EPOLL_CTL_DEL, cl->c.fd, NULL);
				active--;
			}
		}
	}
	ph->wall_ms += bl_now_ms() - t0;
	ph->daemon_cpu_ms += bl_proc_cpu_ms(daemon) - cpu0;
	ph->client_cpu_ms += self_cpu_ms() - self0;
	close(ep);
}

/* ---- wrk (Debian's), when installed ---- */

/* Lease create+release through wrk: each thread keeps a queue of the ids its
 * creates got and releases them first, so the fleet never fills whatever
 * wrk's pacing. done() prints one parsable line with the percentiles (wrk's
 * own --latency output stops at p99). A headers table given to wrk.format
 * replaces wrk.headers (and so the -H token): the Content-Type goes there. */
static const char wrk_create_lua[] =
	"local q, head, tail = {}, 1, 0\n"
	"wrk.headers['Content-Type'] = 'application/json'\n"
	"request = function()\n"
	"  if tail >= head then\n"
	"    local id = q[head]; q[head] = nil; head = head + 1\n"
	"    return wrk.format('POST', '/v1/leases/' .. id .. '/release')\n"
	"  end\n"
	"  return wrk.format('POST', '/v1/leases', nil, '{\"gpus\":1,\"duration_s\":3600}')\n"
	"end\n"
	"response = function(status, headers, body)\n"
	"  local id = body:match('\"id\":\"(ls%-[0-9]+)\"')\n"
	"  if status == 201 and id then tail = tail + 1; q[tail] = id end\n"
	"end\n";
static const char wrk_done_lua[] =
	"done = function(s, lat, req)\n"
	"  io.write(string.format('WRK %d %d %d %d %.1f %.1f %.1f %.1f\\n', s.requests,\n"
	"    s.duration, s.errors.status, s.errors.connect + s.errors.read + s.errors.write +\n"
	"    s.errors.timeout, lat:percentile(50), lat:percentile(99), lat:percentile(99.9),\n"
	"    lat.max))\n"
	"end\n";

struct wrk_row {
	const char *what;
	bool ran;
	long requests, non2xx, sockerr;
	double dur_s, p50, p99, p999, max; /* ms */
};

static const char *find_wrk(void)
{
	static const char *const where[] = {"/usr/bin/wrk", "/usr/local/bin/wrk"};
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (!access(where[i], X_OK))
			return where[i];
	return NULL;
}

/* Runs wrk (1 thread, `conns` connections, WRK_SECONDS) with script body
 * `lua` + the done() hook against path; fills row from its WRK line. */
static void run_wrk(struct wrk_row *row, const char *wrk, const char *dir, int port,
		    const char *tok, const char *path, const char *lua, int conns, bool tls)
{
	char script[BL_PATH_MAX + 32], outp[BL_PATH_MAX + 32], url[256], hdr[320], cs[16],
		line[512];
	snprintf(script, sizeof(script), "%s/wrk.lua", dir);
	snprintf(outp, sizeof(outp), "%s/wrk.out", dir);
	FILE *f = fopen(script, "w");
	if (!f)
		bl_die("cannot write %s", script);
	fprintf(f, "%s%s", lua, wrk_done_lua);
	fclose(f);
	snprintf(url, sizeof(url), "%s://127.0.0.1:%d%s", tls ? "https" : "http", port, path);
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", tok);
	snprintf(cs, sizeof(cs), "%d", conns);
	char *argv[] = {(char *)wrk, "-t1", "-c", cs, "-d", WRK_DURATION, "-H", hdr, "-s",
			script, url, NULL};
	unlink(outp);
	pid_t pid = fork();
	if (pid == 0) { /* keeps our pinning to core 1 */
		int fd = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0)
			dup2(fd, 1), dup2(fd, 2), close(fd);
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "bench_api: wrk failed (output: %s)\n", outp);
		return;
	}
	f = fopen(outp, "r");
	while (f && fgets(line, sizeof(line), f)) {
		long long us;
		if (sscanf(line, "WRK %ld %lld %ld %ld %lf %lf %lf %lf", &row->requests, &us,
			   &row->non2xx, &row->sockerr, &row->p50, &row->p99, &row->p999,
			   &row->max) == 8) {
			row->ran = true;
			row->dur_s = (double)us / 1e6;
			row->p50 /= 1000, row->p99 /= 1000, row->p999 /= 1000, row->max /= 1000;
		}
	}
	if (f)
		fclose(f);
	if (!row->ran)
		fprintf(stderr, "bench_api: no figures in wrk's output (%s)\n", outp);
}

/* Admin setup over one connection: tenant, its token. */
static void setup(int port, bool https, const char *admin, char *tok, size_t n)
{
	struct bl_conn c = {.fd = -1, .https = https};
	char *body = NULL;
	int st = bl_call(&c, port, "POST", "/v1/tenants", admin, "{\"name\":\"bench\"}", NULL, &body);
	if (st != 201)
		bl_die("creating the tenant answered %d: %s", st, body ? body : "");
	free(body);
	st = bl_call(&c, port, "POST", "/v1/tokens", admin,
		     "{\"role\":\"tenant\",\"tenant\":\"bench\",\"user\":\"bench\"}", NULL, &body);
	if (st != 201 || !bl_json_str(body, "token", tok, n))
		bl_die("creating the token answered %d: %s", st, body ? body : "");
	free(body);
	bl_conn_reset(&c);
	free(c.buf);
}

/* Holds READ_LEASES leases (created in order over one connection). */
static char (*hold_leases(int port, const char *tok))[64]
{
	char(*ids)[64] = calloc(READ_LEASES, sizeof(*ids));
	struct bl_conn c = {.fd = -1};
	if (!ids)
		bl_die("out of memory");
	for (int i = 0; i < READ_LEASES; i++) {
		char *body = NULL;
		int st = bl_call(&c, port, "POST", "/v1/leases", tok,
				 i % 2 ? "{\"gpus\":2}" : "{\"gpus\":1}", NULL, &body);
		if (st != 201 || !bl_json_str(body, "id", ids[i], sizeof(ids[i])))
			bl_die("holding lease %d answered %d: %s", i, st, body ? body : "");
		free(body);
	}
	bl_conn_reset(&c);
	free(c.buf);
	return ids;
}

/* ---- the same pairs on PostgreSQL (docs/ha.md) ---- */

/* Runs `bash scripts/pg-test.sh ARGS` (SL_PG_TEST overrides the path) with
 * fsync on, its first line into out; the exit status. */
static int pg_script(const char *args, char *out, size_t n)
{
	const char *sh = getenv("SL_PG_TEST") ? getenv("SL_PG_TEST") : "scripts/pg-test.sh";
	char cmd[1400];
	snprintf(cmd, sizeof(cmd), "PG_TEST_FSYNC=on bash '%s' %s", sh, args);
	FILE *p = popen(cmd, "r");
	if (!p)
		return 1;
	out[0] = 0;
	if (fgets(out, (int)n, p))
		out[strcspn(out, "\n")] = 0;
	char junk[256];
	while (fgets(junk, sizeof(junk), p))
		;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

struct pg_run {
	bool ran;
	char why[BL_PATH_MAX + 128];
	struct phase ph;
};

/* The create+release pairs against a suanlid whose store is a fresh
 * PostgreSQL server (fsync on, unix socket, same machine), one leader. */
static void run_pg(struct pg_run *r, const struct bl_daemon *dm, long pairs, int conns)
{
	char line[1100], url[1200], srv[1100], data[BL_PATH_MAX + 16], log[BL_PATH_MAX + 16];
	char admin[256], tok[256], portarg[32], args[1200];
	int rc = pg_script("start", line, sizeof(line));
	char *sp = strchr(line, ' ');
	if (rc || !sp) {
		snprintf(r->why, sizeof(r->why), rc == 77 ? "no PostgreSQL server binaries"
							  : "could not start PostgreSQL (rc %d)", rc);
		return;
	}
	*sp = 0;
	snprintf(srv, sizeof(srv), "%s", line);
	snprintf(args, sizeof(args), "createdb '%s' bench", srv);
	if (pg_script(args, url, sizeof(url))) {
		snprintf(r->why, sizeof(r->why), "createdb failed");
		goto stop;
	}
	snprintf(data, sizeof(data), "%s/pgdata", dm->dir);
	snprintf(log, sizeof(log), "%s/suanlid-pg.log", dm->dir);
	char *init[] = {(char *)dm->suanlid, "init", "--data", data, "--store", url, NULL};
	int st;
	pid_t pid = bl_spawn(init, log);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		snprintf(r->why, sizeof(r->why), "suanlid init --store failed (see %s)", log);
		goto stop;
	}
	char tp[BL_PATH_MAX + 64];
	snprintf(tp, sizeof(tp), "%s/admin.token", data);
	FILE *f = fopen(tp, "r");
	if (!f || !fgets(admin, sizeof(admin), f))
		bl_die("cannot read %s", tp);
	fclose(f);
	admin[strcspn(admin, "\r\n")] = 0;
	int port = bl_free_port();
	snprintf(portarg, sizeof(portarg), "127.0.0.1:%d", port);
	char *serve[] = {(char *)dm->suanlid, "serve", "--data", data, "--store", url, "--listen",
			 portarg, "--fleet", (char *)dm->fleet, "--simulate", "--log-level", "warn",
			 NULL};
	pid = bl_spawn(serve, log);
	if (!bl_wait_healthy(port, pid, 30000))
		bl_die("suanlid --store did not become healthy (log: %s)", log);
	setup(port, false, admin, tok, sizeof(tok));
	struct client *cls = calloc((size_t)conns, sizeof(*cls));
	if (!cls)
		bl_die("out of memory");
	for (int i = 0; i < conns; i++) {
		cls[i].seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(unsigned)(i + 1);
		if ((cls[i].c.fd = bl_connect(port)) < 0)
			bl_die("connect: %s", strerror(errno));
	}
	r->ph = (struct phase){.name = "create+release (PostgreSQL)", .port = port, .token = tok,
			       .todo = pairs};
	fprintf(stderr, "bench_api: %ld pairs on PostgreSQL...\n", pairs);
	run_phase(&r->ph, cls, conns, OP_CREATE, pid);
	r->ran = true;
	for (int i = 0; i < conns; i++) {
		bl_conn_reset(&cls[i].c);
		free(cls[i].c.buf);
	}
	free(cls);
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
stop:
	snprintf(args, sizeof(args), "stop '%s'", srv);
	pg_script(args, line, sizeof(line));
}

static void report_pg(FILE *o, struct phase *sq, struct pg_run *pg)
{
	fprintf(o, "\n## SQLite and PostgreSQL side by side\n\n");
	if (!pg->ran) {
		fprintf(o, "PostgreSQL was not run: %s.\n", pg->why);
		return;
	}
	double s = (double)sq->placed / (sq->wall_ms / 1000.0);
	double p = (double)pg->ph.placed / (pg->ph.wall_ms / 1000.0);
	fprintf(o, "The same create+release pairs, same fleet and connections, against a suanlid "
		   "whose store is a PostgreSQL %s server started for the run (scripts/pg-test.sh: "
		   "unix socket, fsync=on, synchronous_commit=on, not pinned; suanlid leads it "
		   "alone, so every transaction also checks the leader epoch).\n\n"
		   "| store | placed leases/s | create p50 ms | create p99 ms | release p99 ms | "
		   "failed | daemon CPU |\n|---|---:|---:|---:|---:|---:|---:|\n", "15");
	struct phase *rows[2] = {sq, &pg->ph};
	const char *names[2] = {"SQLite (WAL, synchronous=FULL)", "PostgreSQL"};
	for (int i = 0; i < 2; i++) {
		struct phase *ph = rows[i];
		fprintf(o, "| %s | %.0f | %.2f | %.2f | %.2f | %ld | %.0f%% |\n", names[i],
			(double)ph->placed / (ph->wall_ms / 1000.0), bl_pct(&ph->lat[0], 50),
			bl_pct(&ph->lat[0], 99), bl_pct(&ph->lat[1], 99), ph->failed,
			100.0 * ph->daemon_cpu_ms / ph->wall_ms);
	}
	fprintf(o, "\n**PostgreSQL / SQLite: %.2f** (goal >= 0.5, not asserted).\n", s > 0 ? p / s : 0);
}

/* ---- plain and TLS side by side ---- */

#define TLS_ROUNDS 4

struct tls_run {
	bool ran;
	struct phase plain, tls;
	int hs_n; /* TLS connections opened (handshakes) */
	double hs_wall_ms, hs_daemon_ms;
	char proto[32], cipher[64];
	struct wrk_row wr[2]; /* wrk create+release, plain then TLS */
};

/* Starts a fresh daemon (its own data dir, fleet and port; HTTPS when tls)
 * and makes the tenant's token; the pid. */
static pid_t side_daemon(struct bl_daemon *d, const char *tag, bool tls, char *tok, size_t n)
{
	bl_daemon_prepare(d, tag, NODES);
	char *args[] = {d->suanlid, "serve", "--data", d->data, "--listen", d->portarg, "--fleet",
			d->fleet, "--simulate", "--log-level", "warn", tls ? "--tls" : NULL, NULL};
	pid_t pid = bl_spawn(args, d->log);
	if (!bl_wait_tcp(d->port, pid, 30000))
		bl_die("suanlid %sdid not start (log: %s)", tls ? "--tls " : "", d->log);
	if (tls) {
		char ca[BL_PATH_MAX + 32];
		snprintf(ca, sizeof(ca), "%s/tls/ca.pem", d->data);
		bl_tls_use(ca);
	}
	setup(d->port, tls, d->admin, tok, n);
	return pid;
}

static void stop_side(struct bl_daemon *d, pid_t pid, struct client *cls, int conns)
{
	for (int i = 0; i < conns; i++) {
		bl_conn_reset(&cls[i].c);
		free(cls[i].c.buf);
	}
	free(cls);
	int st;
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		bl_rmrf(d->dir);
	else
		fprintf(stderr, "bench_api: suanlid stopped with status %d (log: %s)\n", st, d->log);
}

/* The same create+release pairs against two fresh daemons started side by
 * side, one plain and one HTTPS (certificate from `suanlid init`), with the
 * same client, in TLS_ROUNDS interleaved rounds (the order flips each round)
 * so that the load of a shared machine falls on both alike. Connections are
 * opened once (the handshakes are timed apart) and kept, as a real client
 * keeps them. Then wrk against each. */
static void run_tls_side(struct tls_run *t, long pairs, int conns, const char *wrk)
{
	struct bl_daemon dp, dt;
	char ptok[256], ttok[256];
	pid_t pp = side_daemon(&dp, "api-plain", false, ptok, sizeof(ptok));
	pid_t tp = side_daemon(&dt, "api-tls", true, ttok, sizeof(ttok));
	struct client *pc = calloc((size_t)conns, sizeof(*pc)), *tc = calloc((size_t)conns, sizeof(*tc));
	if (!pc || !tc)
		bl_die("out of memory");
	double cpu0 = bl_proc_cpu_ms(tp), t0 = bl_now_ms();
	for (int i = 0; i < conns; i++) {
		tc[i].seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(unsigned)(i + 1);
		tc[i].c.https = true;
		if (!bl_conn_open(&tc[i].c, dt.port))
			bl_die("connect: %s", strerror(errno));
	}
	t->hs_wall_ms = bl_now_ms() - t0;
	t->hs_daemon_ms = bl_proc_cpu_ms(tp) - cpu0;
	t->hs_n = conns;
	snprintf(t->proto, sizeof(t->proto), "%s",
		 gnutls_protocol_get_name(gnutls_protocol_get_version(tc[0].c.tls)));
	snprintf(t->cipher, sizeof(t->cipher), "%s",
		 gnutls_cipher_get_name(gnutls_cipher_get(tc[0].c.tls)));
	for (int i = 0; i < conns; i++) {
		pc[i].seed = tc[i].seed;
		if (!bl_conn_open(&pc[i].c, dp.port))
			bl_die("connect: %s", strerror(errno));
	}
	t->plain = (struct phase){.name = "create+release, plain", .port = dp.port, .token = ptok};
	t->tls = (struct phase){.name = "create+release, HTTPS", .port = dt.port, .token = ttok};
	fprintf(stderr, "bench_api: plain and TLS side by side, %d rounds of %ld pairs each...\n",
		TLS_ROUNDS, pairs / TLS_ROUNDS);
	for (int r = 0; r < TLS_ROUNDS; r++) {
		t->plain.todo = t->tls.todo = pairs / TLS_ROUNDS;
		if (r % 2 == 0) {
			run_phase(&t->plain, pc, conns, OP_CREATE, pp);
			run_phase(&t->tls, tc, conns, OP_CREATE, tp);
		} else {
			run_phase(&t->tls, tc, conns, OP_CREATE, tp);
			run_phase(&t->plain, pc, conns, OP_CREATE, pp);
		}
	}
	t->ran = true;
	t->wr[0].what = "wrk: POST /v1/leases + release, plain";
	t->wr[1].what = "wrk: POST /v1/leases + release, HTTPS";
	if (wrk) {
		run_wrk(&t->wr[0], wrk, dp.dir, dp.port, ptok, "/v1/leases", wrk_create_lua, WRK_CONNS, false);
		run_wrk(&t->wr[1], wrk, dt.dir, dt.port, ttok, "/v1/leases", wrk_create_lua, WRK_CONNS, true);
	}
	stop_side(&dp, pp, pc, conns);
	stop_side(&dt, tp, tc, conns);
}

static double per_s(const struct phase *p)
{
	return p->wall_ms > 0 ? (double)p->placed / (p->wall_ms / 1000.0) : 0;
}

static void report_tls(FILE *o, struct tls_run *t, int conns)
{
	fprintf(o, "\n## Plain and TLS side by side\n\n");
	if (!t->ran) {
		fprintf(o, "Not run.\n");
		return;
	}
	fprintf(o, "Two fresh daemons started side by side for this (same fleet, both pinned to core 0, "
		   "SQLite WAL synchronous=FULL): one plain, one `--tls` with the certificate `suanlid "
		   "init` made (ECDSA P-256); the same client (%d keep-alive connections, one epoll "
		   "loop, on core 1; over HTTPS GnuTLS verifying the server against the CA) sends the "
		   "same create+release pairs to each in %d interleaved rounds, the order flipping "
		   "each round, so that load on the machine falls on both alike. Negotiated: %s, %s. "
		   "CPU per request is the daemon's (or the client's) user+system time over the "
		   "requests answered (a pair is two).\n\n",
		conns, TLS_ROUNDS, t->proto, t->cipher);
	fprintf(o, "| mode | pairs | placed leases/s | create p50 ms | create p99 ms | release p99 ms | "
		   "failed | daemon CPU | daemon CPU us/request | client CPU us/request |\n"
		   "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	struct phase *rows[2] = {&t->plain, &t->tls};
	const char *names[2] = {"plain HTTP", "HTTPS"};
	for (int i = 0; i < 2; i++) {
		struct phase *p = rows[i];
		double reqs = (double)(p->lat[0].n + p->lat[1].n);
		fprintf(o, "| %s | %ld | %.0f | %.2f | %.2f | %.2f | %ld | %.0f%% | %.1f | %.1f |\n",
			names[i], p->done, per_s(p), bl_pct(&p->lat[0], 50), bl_pct(&p->lat[0], 99),
			bl_pct(&p->lat[1], 99), p->failed, 100.0 * p->daemon_cpu_ms / p->wall_ms,
			reqs > 0 ? 1000.0 * p->daemon_cpu_ms / reqs : 0,
			reqs > 0 ? 1000.0 * p->client_cpu_ms / reqs : 0);
	}
	double pl = per_s(&t->plain), tl = per_s(&t->tls);
	fprintf(o, "\n**Leases/s over TLS: %.0f**, beside %.0f over plain HTTP in the same run (%.0f%%).\n",
		tl, pl, pl > 0 ? 100.0 * tl / pl : 0);
	fprintf(o, "\nHandshakes: opening the %d HTTPS connections took %.1f ms, %.2f ms of daemon CPU "
		   "per handshake (a client that opens a connection per request pays this every time; "
		   "keep connections alive).\n",
		t->hs_n, t->hs_wall_ms, t->hs_n ? t->hs_daemon_ms / t->hs_n : 0);
	if (t->wr[0].ran && t->wr[1].ran) {
		fprintf(o, "\nDebian's wrk against the same two daemons after the rounds (1 thread, %d "
			   "connections, %s each; OpenSSL on the client side; creates `{\"gpus\":1}` "
			   "and their releases):\n\n| run | requests | req/s | p50 ms | p99 ms | "
			   "non-2xx | socket errors |\n|---|---:|---:|---:|---:|---:|---:|\n",
			WRK_CONNS, WRK_DURATION);
		for (int i = 0; i < 2; i++)
			fprintf(o, "| %s | %ld | %.0f | %.2f | %.2f | %ld | %ld |\n", t->wr[i].what,
				t->wr[i].requests, (double)t->wr[i].requests / t->wr[i].dur_s,
				t->wr[i].p50, t->wr[i].p99, t->wr[i].non2xx, t->wr[i].sockerr);
		double a = (double)t->wr[0].requests / t->wr[0].dur_s,
		       b = (double)t->wr[1].requests / t->wr[1].dur_s;
		fprintf(o, "\nwrk over TLS: %.0f%% of plain.\n", a > 0 ? 100.0 * b / a : 0);
	}
}

static void report(FILE *o, int argc, char **argv, int conns, struct phase *ph, int nph,
		   const struct wrk_row *wr, int nwr)
{
	fprintf(o, "# Controller API benchmark (bench/api.c)\n\n");
	bl_machine(o, argc, argv);
	fprintf(o, "- daemon: Release suanlid, `serve --simulate`, store SQLite WAL synchronous=FULL "
		   "on the temp dir's file system; pinned to core 0, client on core 1%s\n",
		bl_two_cores() ? "" : " (only one core: not pinned)");
	fprintf(o, "- fleet: %d generated 8-GPU nodes (%d GPUs), %d built-in types, leaves of %d, "
		   "fixed seed\n- client: %d keep-alive connections, one epoll loop, as a tenant "
		   "token; create bodies `{\"gpus\":1|2|4|8,\"duration_s\":3600}` (fixed seed)\n\n",
		NODES, NODES * 8, BL_NTYPES, BL_LEAF, conns);
	fprintf(o, "| phase | ops | ops/s | p50 ms | p99 ms | p99.9 ms | max ms | failed | "
		   "daemon CPU |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int i = 0; i < nph; i++) {
		struct phase *p = &ph[i];
		for (int k = 0; k < 2; k++) {
			struct bl_samples *s = &p->lat[k];
			if (!s->n)
				continue;
			const char *what = i == 0 ? (k ? "release (of a create+release pair)"
						      : "create (placed)")
						  : p->name;
			fprintf(o, "| %s | %zu | %.0f | %.2f | %.2f | %.2f | %.2f | %ld | %.0f%% |\n",
				what, s->n, (double)s->n / (p->wall_ms / 1000.0), bl_pct(s, 50),
				bl_pct(s, 99), bl_pct(s, 99.9), bl_pct(s, 100), p->failed,
				100.0 * p->daemon_cpu_ms / p->wall_ms);
		}
	}
	fprintf(o, "\n**Placed leases/s (create+release pairs, durable): %.0f** (goal >= 5,000, not "
		   "asserted); %ld placed active, %ld pending.\n\n",
		(double)ph[0].placed / (ph[0].wall_ms / 1000.0), ph[0].placed, ph[0].pending);
	fprintf(o, "ops/s is answers per second of wall time for that row's kind alone; in the "
		   "pair phase creates and releases share the time, so requests/s there is the sum. "
		   "Daemon CPU is its user+system time over the phase's wall time (100%% = one core "
		   "busy).\n");
	fprintf(o, "\n## wrk\n\n");
	if (!nwr || !wr[0].ran) {
		fprintf(o, "wrk was not run (not installed: `apt-get install wrk`).\n");
		return;
	}
	fprintf(o, "Debian's wrk, 1 thread, %d connections, %s each, same daemon and pinning; "
		   "creates are `{\"gpus\":1,\"duration_s\":3600}` and each thread releases the "
		   "leases it got (so requests are about half creates, half releases).\n\n"
		   "| run | requests | req/s | p50 ms | p99 ms | p99.9 ms | max ms | non-2xx | "
		   "socket errors |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
		WRK_CONNS, WRK_DURATION);
	for (int i = 0; i < nwr; i++)
		if (wr[i].ran)
			fprintf(o, "| %s | %ld | %.0f | %.2f | %.2f | %.2f | %.2f | %ld | %ld |\n",
				wr[i].what, wr[i].requests, (double)wr[i].requests / wr[i].dur_s,
				wr[i].p50, wr[i].p99, wr[i].p999, wr[i].max, wr[i].non2xx,
				wr[i].sockerr);
}

int main(int argc, char **argv)
{
	const char *out = argc > 1 ? argv[1] : "bench/results/api.md";
	long pairs = argc > 2 ? atol(argv[2]) : PAIRS_DEFAULT;
	int conns = getenv("BENCH_CONNS") ? atoi(getenv("BENCH_CONNS")) : CONNS_DEFAULT;
	char tok[256];
	if (pairs <= 0 || conns <= 0 || conns > 1000)
		bl_die("usage: bench_api [results.md] [pairs>0]; BENCH_CONNS 1..1000");
	struct bl_daemon dm;
	bl_daemon_prepare(&dm, "api", NODES);
	char *suanlid = dm.suanlid, *dir = dm.dir, *data = dm.data, *fleet = dm.fleet,
	     *log = dm.log, *admin = dm.admin, *portarg = dm.portarg;
	int port = dm.port;
	char *args[] = {suanlid, "serve", "--data", data, "--listen", portarg, "--fleet", fleet,
			"--simulate", "--log-level", "warn", NULL};
	pid_t pid = bl_spawn(args, log);
	bl_pin(1);
	if (!bl_wait_healthy(port, pid, 30000))
		bl_die("suanlid did not become healthy (log: %s)", log);
	setup(port, false, admin, tok, sizeof(tok));

	struct client *cls = calloc((size_t)conns, sizeof(*cls));
	if (!cls)
		bl_die("out of memory");
	for (int i = 0; i < conns; i++) {
		cls[i].c.fd = -1;
		cls[i].seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(unsigned)(i + 1);
		if ((cls[i].c.fd = bl_connect(port)) < 0)
			bl_die("connect: %s", strerror(errno));
	}
	struct phase ph[3] = {
		{.name = "create+release", .port = port, .token = tok, .todo = pairs},
		{.name = "GET /v1/leases/{id}", .port = port, .token = tok, .todo = READS_BY_ID},
		{.name = "GET /v1/nodes (1,000 nodes)", .port = port, .token = tok,
		 .todo = READS_NODES},
	};
	fprintf(stderr, "bench_api: %ld create+release pairs over %d connections...\n", pairs,
		conns);
	run_phase(&ph[0], cls, conns, OP_CREATE, pid);
	ph[1].ids = ph[2].ids = hold_leases(port, tok);
	ph[1].nids = ph[2].nids = READ_LEASES;
	fprintf(stderr, "bench_api: reads...\n");
	run_phase(&ph[1], cls, conns, OP_GET_LEASE, pid);
	run_phase(&ph[2], cls, conns, OP_GET_NODES, pid);

	for (int i = 0; i < conns; i++)
		bl_conn_reset(&cls[i].c);
	struct wrk_row wr[2] = {{.what = "POST /v1/leases + release"},
				{.what = "GET /v1/leases/{id}"}};
	const char *wrk = getenv("BENCH_NO_WRK") ? NULL : find_wrk();
	if (wrk) {
		char path[96];
		fprintf(stderr, "bench_api: wrk...\n");
		run_wrk(&wr[0], wrk, dir, port, tok, "/v1/leases", wrk_create_lua, WRK_CONNS, false);
		snprintf(path, sizeof(path), "/v1/leases/%s", ph[1].ids[0]);
		run_wrk(&wr[1], wrk, dir, port, tok, path, "", WRK_CONNS, false);
	}
	kill(pid, SIGTERM);
	int st;
	waitpid(pid, &st, 0);
	bool clean = WIFEXITED(st) && !WEXITSTATUS(st);
	if (!clean)
		fprintf(stderr, "bench_api: suanlid stopped with status %d (log: %s)\n", st, log);
	/* The cost of TLS, in the same run, with the same client. */
	static struct tls_run tr;
	if (!getenv("BENCH_NO_TLS"))
		run_tls_side(&tr, pairs, conns, wrk);

	struct pg_run pg = {.ran = false};
	if (getenv("BENCH_NO_PG"))
		snprintf(pg.why, sizeof(pg.why), "BENCH_NO_PG was set");
	else
		run_pg(&pg, &dm, pairs, conns);
	report(stdout, argc, argv, conns, ph, 3, wr, 2);
	report_tls(stdout, &tr, conns);
	report_pg(stdout, &ph[0], &pg);
	FILE *o = fopen(out, "w");
	if (!o)
		bl_die("cannot write %s", out);
	report(o, argc, argv, conns, ph, 3, wr, 2);
	report_tls(o, &tr, conns);
	report_pg(o, &ph[0], &pg);
	fclose(o);
	free(pg.ph.lat[0].v), free(pg.ph.lat[1].v);
	free(tr.plain.lat[0].v), free(tr.plain.lat[1].v), free(tr.tls.lat[0].v), free(tr.tls.lat[1].v);
	if (clean)
		bl_rmrf(dir);
	for (int i = 0; i < conns; i++)
		free(cls[i].c.buf);
	for (int i = 0; i < 3; i++)
		free(ph[i].lat[0].v), free(ph[i].lat[1].v);
	free(ph[1].ids);
	free(cls);
	return 0;
}

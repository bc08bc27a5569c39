/* bench/slurm_side.c - the suanli half of bench/slurm.sh: the same fleet and
 * the same job streams that ../shared/peers/slurm/run.sh sends through Slurm,
 * sent through a real suanlid, with figures printed as JSON lines that
 * bench/slurm.sh sets beside Slurm's summary.jsonl.
 *
 * A Slurm batch job "sleep S" is a lease of S seconds here (duration_s): in
 * simulate mode nothing runs on the nodes, the controller starts the lease,
 * and ends it (expired) S seconds later. A backlog is made the way the
 * harness makes one: Slurm's partition goes DOWN, ours is every node drained;
 * then the partition goes UP, here every node is resumed, and start times are
 * read back (the lease's started_at, millisecond resolution, as Slurm's log).
 *
 * Phases (env PHASES, default SAPT; S, P and T as the harness's):
 *   S  submissions per second: NJOBS/2 one-GPU leases over one keep-alive
 *      connection, NJOBS/2 over PAR connections (one process each), to a
 *      plain daemon and to its twin over HTTPS (--tls, verified; the two
 *      alternate, the idle one waiting); the
 *      backlog released at once: jobs started per second (fill, overall,
 *      steady). Then the same counts through the `suanli` CLI (a process per
 *      submission, as sbatch), sequential and with PAR parallel clients, plain
 *      and over HTTPS.
 *   A  the S backlog again with one `suanli-agent run --simulate TYPE` per
 *      node running real processes: each lease that becomes active gets a
 *      job `sleep JOB_SLEEP` (POST /v1/jobs; jobs run on active leases), and
 *      is released when its job has ended, as Slurm frees a batch job's GPUs
 *      when its script exits. PAR clients make those calls. Starts: when a
 *      poll first saw the job running (the agents' own started_at has
 *      one-second resolution; it is reported beside).
 *   P  the harness's mixed stream (file of "k seconds" lines) on the
 *      pair-bridged nodes (models h100-nvl); active leases are polled every
 *      POLL_MS to read their GPUs; the decisions are then replayed against
 *      the GPUs free on that node at that moment, counted as the harness
 *      counts Slurm's.
 *   T  the harness's multi-node stream (file of "nodes gpus_per_node
 *      seconds" lines) with one_leaf and without: leaves spanned (from the
 *      placement score) and start delay. The backlog is released at once,
 *      as Slurm's partition UP: while the jobs are submitted, every node is
 *      reserved for another tenant ("hold") in a window that closes 5 s
 *      later, and the window's end (one scheduling pass with every node) is
 *      the start of the clock. Resuming drained nodes one by one instead
 *      (T_RELEASE=resume, the way this program did it before 2026-12-05)
 *      runs a pass per node: the first gangs then start on whatever few
 *      nodes have come back, and that, not the placer, split them over
 *      leaves (bench/leaf_sim.c shows both).
 *
 * Usage: bench_slurm_side FLEET MIXFILE SWFILE OUT.jsonl
 * env: SUANLID, SUANLI (the CLI), SUANLI_AGENT (else each beside this
 *      program), PHASES, NJOBS, PAR, JOB_SLEEP. Fixed streams; nothing is
 *      asserted. CLI_JOBS: how many CLI submissions in S (default NJOBS). */
#include <jansson.h>

#include "bench_lib.h"

#include "slurm_side.h"

double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "YYYY-MM-DDTHH:MM:SS.mmmZ" -> seconds since the epoch; 0 when null. */
double parse_time(const json_t *v)
{
	const char *s = json_string_value(v);
	struct tm tm = {0};
	int ms = 0;
	if (!s || sscanf(s, "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			 &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) < 6)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (double)timegm(&tm) + ms / 1000.0;
}

/* The number in an id ("ls-000042" -> 42); 0 for NULL. */
long id_seq(const char *id)
{
	return id ? atol(id + strcspn(id, "0123456789")) : 0;
}

/* ---- the daemon ---- */

static void read_nodes(struct side *s)
{
	/* Node names from GET /v1/nodes, in fleet order. */
	char *body = NULL;
	int st = bl_call(&s->c, s->dm.port, "GET", "/v1/nodes", s->dm.admin, NULL, NULL, &body);
	json_t *a = st == 200 ? json_loads(body, 0, NULL) : NULL;
	if (!json_is_array(a))
		bl_die("GET /v1/nodes answered %d: %.200s", st, body ? body : "");
	size_t i;
	json_t *n;
	s->nnodes = 0;
	json_array_foreach(a, i, n) {
		const char *name = json_string_value(json_object_get(n, "name"));
		if (name && s->nnodes < MAX_NODES)
			snprintf(s->nodes[s->nnodes++], sizeof(s->nodes[0]), "%s", name);
	}
	json_decref(a);
	free(body);
}

/* A tenant "bench" and its token on a started daemon; its node names. */
static void side_setup(struct side *s)
{
	s->c = (struct bl_conn){.fd = -1, .https = s->https};
	char *body = NULL;
	int st = bl_call(&s->c, s->dm.port, "POST", "/v1/tenants", s->dm.admin,
			 "{\"name\":\"bench\"}", NULL, &body);
	if (st != 201)
		bl_die("creating the tenant answered %d: %s", st, body ? body : "");
	free(body);
	st = bl_call(&s->c, s->dm.port, "POST", "/v1/tokens", s->dm.admin,
		     "{\"role\":\"tenant\",\"tenant\":\"bench\",\"user\":\"bench\"}", NULL, &body);
	if (st != 201 || !bl_json_str(body, "token", s->tok, sizeof(s->tok)))
		bl_die("creating the token answered %d: %s", st, body ? body : "");
	free(body);
	read_nodes(s);
}

/* A fresh data dir and daemon on s->fleet (simulated nodes unless agents
 * will report), a tenant "bench" and its token. */
static void side_start_as(struct side *s, bool simulate)
{
	memset(&s->dm, 0, sizeof(s->dm));
	bl_daemon_prepare(&s->dm, "slurmside", 1); /* its generated fleet goes unused */
	char *args[] = {s->dm.suanlid, "serve", "--data", s->dm.data, "--listen", s->dm.portarg,
			"--fleet", s->fleet, "--log-level", "warn",
			simulate ? "--simulate" : NULL, NULL};
	s->pid = bl_spawn(args, s->dm.log);
	if (!bl_wait_healthy(s->dm.port, s->pid, 30000))
		bl_die("suanlid did not become healthy (log: %s)", s->dm.log);
	side_setup(s);
}

/* The same, served over HTTPS (--tls, the certificate `suanlid init` made in
 * its own data dir), the client verifying it against that CA: the
 * submission rows over TLS. */
static void side_start_tls(struct side *s)
{
	memset(&s->dm, 0, sizeof(s->dm));
	bl_daemon_prepare(&s->dm, "slurmside-tls", 1);
	char *args[] = {s->dm.suanlid, "serve", "--data", s->dm.data, "--listen", s->dm.portarg,
			"--fleet", s->fleet, "--log-level", "warn", "--simulate", "--tls", NULL};
	s->pid = bl_spawn(args, s->dm.log);
	if (!bl_wait_tcp(s->dm.port, s->pid, 30000))
		bl_die("suanlid --tls did not start (log: %s)", s->dm.log);
	snprintf(s->ca, sizeof(s->ca), "%s/tls/ca.pem", s->dm.data);
	bl_tls_use(s->ca);
	s->https = true;
	side_setup(s);
}

void side_start(struct side *s)
{
	side_start_as(s, true);
}

void side_stop(struct side *s)
{
	bl_conn_reset(&s->c);
	free(s->c.buf);
	s->c.buf = NULL;
	s->c.cap = 0;
	kill(s->pid, SIGTERM);
	int st;
	waitpid(s->pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "slurm_side: suanlid stopped with status %d (log: %s)\n", st,
			s->dm.log);
	else
		bl_rmrf(s->dm.dir);
}

/* Drains (true) or resumes every node: the partition DOWN / UP of the harness. */
void all_nodes(struct side *s, bool drain)
{
	for (int i = 0; i < s->nnodes; i++) {
		char path[96];
		snprintf(path, sizeof(path), "/v1/nodes/%s/%s", s->nodes[i], drain ? "drain" : "resume");
		int st = bl_call(&s->c, s->dm.port, "POST", path, s->dm.admin,
				 drain ? "{\"reason\":\"bench: backlog\"}" : NULL, NULL, NULL);
		if (st != 200)
			bl_die("%s answered %d", path, st);
	}
}

/* GET /v1/leases[?state=S] as a jansson array (the admin sees every lease). */
json_t *leases(struct side *s, const char *state)
{
	char path[64], *body = NULL;
	snprintf(path, sizeof(path), "/v1/leases%s%s", state ? "?state=" : "", state ? state : "");
	int st = bl_call(&s->c, s->dm.port, "GET", path, s->dm.admin, NULL, NULL, &body);
	json_t *a = st == 200 ? json_loads(body, 0, NULL) : NULL;
	if (!json_is_array(a))
		bl_die("GET %s answered %d: %.200s", path, st, body ? body : "");
	free(body);
	return a;
}

/* Active leases, else pending ones (the pending list is only asked for when
 * nothing is active: it is the longer one while a backlog waits). */
static size_t count_live(struct side *s)
{
	json_t *a = leases(s, "active");
	size_t n = json_array_size(a);
	json_decref(a);
	if (n)
		return n;
	a = leases(s, "pending");
	n = json_array_size(a);
	json_decref(a);
	return n;
}

void wait_empty(struct side *s)
{
	double t0 = bl_now_ms();
	while (count_live(s)) {
		if (bl_now_ms() - t0 > WAIT_LIMIT_S * 1000.0)
			bl_die("leases still live after %d s (log: %s)", WAIT_LIMIT_S, s->dm.log);
		usleep(250000);
	}
}

/* One POST /v1/leases over c; dies unless the lease was taken (201). */
static void submit(struct bl_conn *c, int port, const char *tok, const char *body)
{
	char *ans = NULL;
	int st = bl_call(c, port, "POST", "/v1/leases", tok, body, NULL, &ans);
	if (st != 201 && st != 200)
		bl_die("POST /v1/leases %s answered %d: %.300s", body, st, ans ? ans : "");
	free(ans);
}

/* ---- S: submissions and throughput ---- */

/* n submissions of body split over par processes, each with its own
 * connection; returns the wall seconds. */
static double submit_parallel(struct side *s, const char *body, int n, int par)
{
	double t0 = bl_now_ms();
	pid_t kids[64];
	for (int k = 0; k < par; k++) {
		int mine = n / par + (k < n % par);
		kids[k] = fork();
		if (kids[k] < 0)
			bl_die("fork: %s", strerror(errno));
		if (kids[k] == 0) {
			struct bl_conn c = {.fd = -1, .https = s->https};
			for (int i = 0; i < mine; i++)
				submit(&c, s->dm.port, s->tok, body);
			_exit(0);
		}
	}
	for (int k = 0; k < par; k++) {
		int st;
		if (waitpid(kids[k], &st, 0) != kids[k] || !WIFEXITED(st) || WEXITSTATUS(st))
			bl_die("a submitting client failed");
	}
	return (bl_now_ms() - t0) / 1e3;
}

/* `suanli lease create` n times, by par processes each running its share
 * one after another (as `seq | xargs -P par sbatch`); returns wall seconds. */
static double submit_cli(struct side *s, const char *cli, int n, int par, int secs)
{
	char server[64], dur[32];
	snprintf(server, sizeof(server), "%s://127.0.0.1:%d", s->https ? "https" : "http",
		 s->dm.port);
	snprintf(dur, sizeof(dur), "%ds", secs);
	double t0 = bl_now_ms();
	pid_t kids[64];
	for (int k = 0; k < par; k++) {
		int mine = n / par + (k < n % par);
		kids[k] = fork();
		if (kids[k] < 0)
			bl_die("fork: %s", strerror(errno));
		if (kids[k] == 0) {
			/* sbatch's clients may use every core; so may these */
			cpu_set_t all;
			CPU_ZERO(&all);
			for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE; c++)
				CPU_SET((size_t)c, &all);
			(void)sched_setaffinity(0, sizeof(all), &all);
			setenv("SUANLI_SERVER", server, 1);
			setenv("SUANLI_TOKEN", s->tok, 1);
			if (s->https)
				setenv("SUANLI_CA", s->ca, 1);
			for (int i = 0; i < mine; i++) {
				pid_t p = fork();
				if (p == 0) {
					int fd = open("/dev/null", O_WRONLY);
					dup2(fd, 1);
					execl(cli, cli, "lease", "create", "--gpus", "1", "--duration",
					      dur, (char *)NULL);
					_exit(127);
				}
				int st;
				if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) ||
				    WEXITSTATUS(st))
					_exit(1);
			}
			_exit(0);
		}
	}
	int bad = 0;
	for (int k = 0; k < par; k++) {
		int st;
		if (waitpid(kids[k], &st, 0) != kids[k] || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	if (bad)
		bl_die("`%s lease create` failed", cli);
	return (bl_now_ms() - t0) / 1e3;
}

/* fdatasync latency of the data dir's file system (what one durable commit
 * waits for): p50 and p99 ms over FSYNC_PROBES 4 KiB appends. */
#define FSYNC_PROBES 100
static void fsync_probe(const char *dir, double *p50, double *p99)
{
	char path[BL_PATH_MAX + 32], buf[4096];
	snprintf(path, sizeof(path), "%s/fsync-probe", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	struct bl_samples v = {0};
	memset(buf, 'x', sizeof(buf));
	for (int i = 0; fd >= 0 && i < FSYNC_PROBES; i++) {
		double t = bl_now_ms();
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || fdatasync(fd))
			break;
		bl_add(&v, bl_now_ms() - t);
	}
	if (fd >= 0)
		close(fd);
	unlink(path);
	*p50 = bl_pct(&v, 50);
	*p99 = bl_pct(&v, 99);
	free(v.v);
}

/* n submissions of body in sequence over one keep-alive connection (TLS
 * when the daemon serves it, its handshake counted); wall seconds. */
static double submit_seq(struct side *s, const char *body, int n)
{
	double t = bl_now_ms();
	struct bl_conn c = {.fd = -1, .https = s->https};
	for (int i = 0; i < n; i++)
		submit(&c, s->dm.port, s->tok, body);
	double secs = (bl_now_ms() - t) / 1e3;
	bl_conn_reset(&c);
	free(c.buf);
	return secs;
}

static void phase_s(struct side *s, const char *cli, int njobs, int par, int secs)
{
	char body[96];
	snprintf(body, sizeof(body), "{\"gpus\":1,\"duration_s\":%d}", secs);
	int nseq = njobs / 2;
	side_start(s);
	/* Its twin over HTTPS, idle while the plain one is measured and the
	 * other way round: the submission rows over TLS, in the same run. */
	static struct side t;
	snprintf(t.fleet, sizeof(t.fleet), "%s", s->fleet);
	side_start_tls(&t);
	double f50, f99;
	fsync_probe(s->dm.dir, &f50, &f99);
	all_nodes(s, true);
	all_nodes(&t, true);
	double seq_s = submit_seq(s, body, nseq), tseq_s = submit_seq(&t, body, nseq);
	double par_s = submit_parallel(s, body, njobs - nseq, par);
	double tpar_s = submit_parallel(&t, body, njobs - nseq, par);
	fprintf(stderr, "slurm_side: API submissions: sequential %.0f/s, %d clients %.0f/s; "
		"over TLS %.0f/s and %.0f/s\n", nseq / seq_s, par, (njobs - nseq) / par_s,
		nseq / tseq_s, (njobs - nseq) / tpar_s);
	fprintf(s->out,
		"{\"kind\":\"submission\",\"via\":\"api_tls\",\"sequential_per_s\":%.1f,"
		"\"parallel_per_s\":%.1f,\"parallel_clients\":%d,\"jobs\":%d}\n",
		nseq / tseq_s, (njobs - nseq) / tpar_s, par, njobs);

	int slots = 0;
	json_t *nl = NULL;
	{
		char *b = NULL;
		if (bl_call(&s->c, s->dm.port, "GET", "/v1/nodes", s->dm.admin, NULL, NULL, &b) == 200)
			nl = json_loads(b, 0, NULL);
		free(b);
		size_t i;
		json_t *n;
		json_array_foreach(nl, i, n)
			slots += (int)json_integer_value(json_object_get(n, "gpus"));
		json_decref(nl);
		if (slots <= 0)
			slots = s->nnodes * 8;
	}
	double cpu0 = bl_proc_cpu_ms(s->pid) / 1000.0, t0 = wall_s();
	all_nodes(s, false);
	wait_empty(s);
	double cpu1 = bl_proc_cpu_ms(s->pid) / 1000.0, t1 = wall_s();
	json_t *a = leases(s, NULL);
	struct bl_samples st = {0};
	size_t i;
	json_t *l;
	json_array_foreach(a, i, l) {
		double at = parse_time(json_object_get(l, "started_at"));
		if (at > 0)
			bl_add(&st, at - t0);
	}
	json_decref(a);
	int n = (int)st.n;
	if (n < 1)
		bl_die("no lease started");
	qsort(st.v, st.n, sizeof(double), bl_cmp_double);
	int fill = (slots < n ? slots : n) - 1;
	for (size_t j = 0; j < st.n; j++)
		st.v[j] = st.v[j] < 0 ? 0 : st.v[j]; /* t0 and started_at round differently */
	double tf = st.v[fill] > 1e-3 ? st.v[fill] : 1e-3, tl = st.v[n - 1];
	double steady = n > slots && tl > tf ? (n - slots) / (tl - tf) : 0;
	fprintf(stderr, "slurm_side: %d started; first %.3fs, %d slots busy at %.3fs, last %.2fs; "
		"overall %.1f/s, steady %.1f/s\n", n, st.v[0], fill + 1, tf, tl, n / tl, steady);
	fprintf(s->out,
		"{\"kind\":\"submission\",\"via\":\"api\",\"sequential_per_s\":%.1f,"
		"\"parallel_per_s\":%.1f,\"parallel_clients\":%d,\"jobs\":%d,"
		"\"fsync_p50_ms\":%.3f,\"fsync_p99_ms\":%.3f}\n",
		nseq / seq_s, (njobs - nseq) / par_s, par, njobs, f50, f99);
	fprintf(s->out,
		"{\"kind\":\"throughput\",\"jobs\":%d,\"slots\":%d,\"first_start_s\":%.3f,"
		"\"fill_s\":%.3f,\"fill_rate\":%.1f,\"overall_starts_per_s\":%.2f,"
		"\"steady_starts_per_s\":%.2f,\"last_start_s\":%.3f,\"ideal_steady\":%.1f,"
		"\"daemon_cpu_s\":%.2f,\"wall_s\":%.2f}\n",
		n, slots, st.v[0], tf, (fill + 1) / tf, n / tl, steady, tl, slots / (double)secs,
		cpu1 - cpu0, t1 - t0);
	free(st.v);

	/* The CLI: a process per submission, into a drained fleet (nothing starts);
	 * CLI_JOBS of them (default NJOBS), half in sequence. */
	all_nodes(s, true);
	int ncli = getenv("CLI_JOBS") && atoi(getenv("CLI_JOBS")) >= 2 ? atoi(getenv("CLI_JOBS")) : njobs;
	int cli_seq = ncli / 2;
	double cseq = submit_cli(s, cli, cli_seq, 1, secs);
	double cpar = submit_cli(s, cli, ncli - cli_seq, par, secs);
	fprintf(stderr, "slurm_side: CLI submissions: sequential %.0f/s, %d clients %.0f/s\n",
		cli_seq / cseq, par, (ncli - cli_seq) / cpar);
	fprintf(s->out,
		"{\"kind\":\"submission\",\"via\":\"cli\",\"sequential_per_s\":%.1f,"
		"\"parallel_per_s\":%.1f,\"parallel_clients\":%d,\"jobs\":%d}\n",
		cli_seq / cseq, (ncli - cli_seq) / cpar, par, ncli);
	side_stop(s);
	/* The CLI over HTTPS: a process, and so a TLS handshake, per submission. */
	cseq = submit_cli(&t, cli, cli_seq, 1, secs);
	cpar = submit_cli(&t, cli, ncli - cli_seq, par, secs);
	fprintf(stderr, "slurm_side: CLI submissions over TLS: sequential %.0f/s, %d clients %.0f/s\n",
		cli_seq / cseq, par, (ncli - cli_seq) / cpar);
	fprintf(s->out,
		"{\"kind\":\"submission\",\"via\":\"cli_tls\",\"sequential_per_s\":%.1f,"
		"\"parallel_per_s\":%.1f,\"parallel_clients\":%d,\"jobs\":%d}\n",
		cli_seq / cseq, (ncli - cli_seq) / cpar, par, ncli);
	side_stop(&t);
}

/* ---- A: the throughput stream with agents running real processes ---- */

static void unpin(void)
{
	cpu_set_t all;
	CPU_ZERO(&all);
	for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE; c++)
		CPU_SET((size_t)c, &all);
	(void)sched_setaffinity(0, sizeof(all), &all);
}

/* Start times (s after the release, sorted in place) summarised as the
 * harness does: the slots-th start is the fill; steady is the rate after it. */
struct starts {
	int n, nfill;
	double first, fill, last, overall, steady;
};

static bool starts_of(struct bl_samples *v, int slots, struct starts *o)
{
	memset(o, 0, sizeof(*o));
	if (!v->n)
		return false;
	qsort(v->v, v->n, sizeof(double), bl_cmp_double);
	o->n = (int)v->n;
	o->nfill = slots < o->n ? slots : o->n;
	o->first = v->v[0];
	o->fill = v->v[o->nfill - 1] > 1e-3 ? v->v[o->nfill - 1] : 1e-3;
	o->last = v->v[o->n - 1] > 1e-3 ? v->v[o->n - 1] : 1e-3;
	o->overall = o->n / o->last;
	o->steady = o->n > slots && o->last > o->fill ? (o->n - slots) / (o->last - o->fill) : 0;
	return true;
}

/* One `suanli-agent run --simulate TYPE` per node of the fleet, joined with
 * one join token; waits until every node is ready. */
static void agents_start(struct side *s)
{
	char *body = NULL, join[256], url[64];
	int st = bl_call(&s->c, s->dm.port, "POST", "/v1/agent-tokens", s->dm.admin, "{}", NULL,
			 &body);
	if (st != 201 || !bl_json_str(body, "token", join, sizeof(join)))
		bl_die("POST /v1/agent-tokens answered %d: %.200s", st, body ? body : "");
	free(body);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s->dm.port);
	json_t *nl = NULL;
	body = NULL;
	if (bl_call(&s->c, s->dm.port, "GET", "/v1/nodes", s->dm.admin, NULL, NULL, &body) == 200)
		nl = json_loads(body, 0, NULL);
	free(body);
	s->nagents = 0;
	for (int i = 0; i < s->nnodes; i++) {
		const char *type = NULL;
		size_t k;
		json_t *n;
		json_array_foreach(nl, k, n)
			if (!strcmp(json_string_value(json_object_get(n, "name")), s->nodes[i]))
				type = json_string_value(json_object_get(n, "type"));
		if (!type)
			bl_die("node %s has no type in GET /v1/nodes", s->nodes[i]);
		char dir[BL_PATH_MAX + 64], log[BL_PATH_MAX + 64];
		snprintf(dir, sizeof(dir), "%s/agent-%s", s->dm.dir, s->nodes[i]);
		snprintf(log, sizeof(log), "%s/agent-%s.log", s->dm.dir, s->nodes[i]);
		pid_t pid = fork();
		if (pid < 0)
			bl_die("fork: %s", strerror(errno));
		if (pid == 0) {
			unpin();
			int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
				close(fd);
			}
			execl(s->agent, s->agent, "run", "--server", url, "--token", join, "--node",
			      s->nodes[i], "--simulate", type, "--state-dir", dir, "--log-level",
			      "warn", (char *)NULL);
			_exit(127);
		}
		s->agents[s->nagents++] = pid;
	}
	json_decref(nl);
	double t0 = bl_now_ms();
	for (;;) {
		int ready = 0;
		body = NULL;
		if (bl_call(&s->c, s->dm.port, "GET", "/v1/nodes", s->dm.admin, NULL, NULL, &body) ==
		    200) {
			nl = json_loads(body, 0, NULL);
			size_t k;
			json_t *n;
			json_array_foreach(nl, k, n)
				ready += !strcmp(json_string_value(json_object_get(n, "state")), "ready");
			json_decref(nl);
		}
		free(body);
		if (ready == s->nnodes)
			break;
		if (bl_now_ms() - t0 > 60000)
			bl_die("only %d of %d nodes ready 60 s after starting their agents (logs in %s)",
			       ready, s->nnodes, s->dm.dir);
		usleep(200000);
	}
	fprintf(stderr, "slurm_side: %d agents ready in %.1fs\n", s->nagents,
		(bl_now_ms() - t0) / 1e3);
}

/* SIGTERM to every agent (their work has ended by then) and reap them. */
static void agents_stop(struct side *s)
{
	for (int i = 0; i < s->nagents; i++)
		kill(s->agents[i], SIGTERM);
	for (int i = 0; i < s->nagents; i++)
		waitpid(s->agents[i], NULL, 0);
	s->nagents = 0;
}

/* Ids of GET path's array into a sorted list (for lookups). */
static int id_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct idset {
	char **v;
	size_t n;
	json_t *doc;
};

/* The values of key ("id", or "lease" for jobs) of GET path's array. */
static void idset_get(struct side *s, const char *path, const char *key, struct idset *set)
{
	char *body = NULL;
	int st = bl_call(&s->c, s->dm.port, "GET", path, s->dm.admin, NULL, NULL, &body);
	set->doc = st == 200 ? json_loads(body, 0, NULL) : NULL;
	if (!json_is_array(set->doc))
		bl_die("GET %s answered %d: %.200s", path, st, body ? body : "");
	free(body);
	set->n = json_array_size(set->doc);
	set->v = calloc(set->n + 1, sizeof(char *));
	if (!set->v)
		bl_die("out of memory");
	for (size_t i = 0; i < set->n; i++)
		set->v[i] = (char *)json_string_value(json_object_get(json_array_get(set->doc, i), key));
	qsort(set->v, set->n, sizeof(char *), id_cmp);
}

static bool idset_has(const struct idset *set, const char *id)
{
	return bsearch(&id, set->v, set->n, sizeof(char *), id_cmp) != NULL;
}

static void idset_free(struct idset *set)
{
	free(set->v);
	json_decref(set->doc);
}

/* n submissions "lease, then a job on it" (one-GPU leases of secs + 2 s on a
 * free fleet, so each starts at once and ends by itself), split over par
 * processes with a connection each; returns the wall seconds. */
static double submit_pairs(struct side *s, int n, int par, int secs)
{
	double t0 = bl_now_ms();
	pid_t kids[64];
	for (int k = 0; k < par; k++) {
		int mine = n / par + (k < n % par);
		kids[k] = fork();
		if (kids[k] < 0)
			bl_die("fork: %s", strerror(errno));
		if (kids[k])
			continue;
		struct bl_conn c = {.fd = -1};
		for (int i = 0; i < mine; i++) {
			char body[160], *ans = NULL, id[32];
			snprintf(body, sizeof(body), "{\"gpus\":1,\"duration_s\":%d}", secs + 2);
			int st = bl_call(&c, s->dm.port, "POST", "/v1/leases", s->tok, body, NULL, &ans);
			if (st != 201 || !bl_json_str(ans, "id", id, sizeof(id)))
				bl_die("POST /v1/leases answered %d: %.200s", st, ans ? ans : "");
			free(ans);
			snprintf(body, sizeof(body), "{\"lease\":\"%s\",\"argv\":[\"sleep\",\"%d\"]}", id,
				 secs);
			st = bl_call(&c, s->dm.port, "POST", "/v1/jobs", s->tok, body, NULL, NULL);
			if (st != 201)
				bl_die("POST /v1/jobs answered %d", st);
		}
		_exit(0);
	}
	for (int k = 0; k < par; k++) {
		int st;
		if (waitpid(kids[k], &st, 0) != kids[k] || !WIFEXITED(st) || WEXITSTATUS(st))
			bl_die("a submitting client failed");
	}
	return (bl_now_ms() - t0) / 1e3;
}

struct ajob {
	char lease[32], job[32];
	int state; /* 0 lease waits, 1 job submitted, 2 job ended and lease released */
	double seen; /* when a poll first saw the job running (s after t0), 0: not yet */
};

/* The backlog of njobs one-GPU leases (no duration), released at once; each
 * lease that becomes active gets a job `sleep secs` (POST /v1/jobs: jobs run
 * on active leases), and its lease is released when the job has ended, as
 * Slurm frees a batch job's GPUs when its script exits. Starts are the ranks'
 * started_at as the agents report them. */
static void phase_a(struct side *s, int njobs, int par, int secs)
{
	side_start_as(s, false);
	agents_start(s);
	/* lease + job submissions on the free fleet: half the GPUs in sequence,
	 * half over par clients */
	int slots = s->nnodes * 8;
	double pseq = submit_pairs(s, slots / 2, 1, secs);
	double ppar = submit_pairs(s, slots - slots / 2, par, secs);
	fprintf(s->out,
		"{\"kind\":\"submission\",\"via\":\"api_lease_and_job\",\"sequential_per_s\":%.1f,"
		"\"parallel_per_s\":%.1f,\"parallel_clients\":%d,\"jobs\":%d}\n",
		(slots / 2) / pseq, (slots - slots / 2) / ppar, par, slots);
	fprintf(stderr, "slurm_side: lease + job submissions: sequential %.0f/s, %d clients %.0f/s\n",
		(slots / 2) / pseq, par, (slots - slots / 2) / ppar);
	wait_empty(s);
	all_nodes(s, true);
	struct ajob *jb = calloc((size_t)njobs, sizeof(*jb));
	if (!jb)
		bl_die("out of memory");
	for (int i = 0; i < njobs; i++) {
		char *ans = NULL;
		int st = bl_call(&s->c, s->dm.port, "POST", "/v1/leases", s->tok, "{\"gpus\":1}", NULL,
				 &ans);
		if (st != 201 || !bl_json_str(ans, "id", jb[i].lease, sizeof(jb[i].lease)))
			bl_die("POST /v1/leases answered %d: %.200s", st, ans ? ans : "");
		free(ans);
	}
	char job_body[256];
	snprintf(job_body, sizeof(job_body), "{\"lease\":\"%%s\",\"argv\":[\"sleep\",\"%d\"]}", secs);
	double cpu0 = bl_proc_cpu_ms(s->pid) / 1000.0, t0 = wall_s();
	all_nodes(s, false);
	int done = 0, failed_jobs = 0;
	double tw = bl_now_ms();
	int *ops = calloc((size_t)njobs, sizeof(int)); /* jb index; < 0: release */
	if (!ops)
		bl_die("out of memory");
	while (done < njobs) {
		struct idset act, run, pend;
		int nops = 0;
		idset_get(s, "/v1/leases?state=active", "id", &act);
		for (int i = 0; i < njobs; i++)
			if (!jb[i].state && idset_has(&act, jb[i].lease))
				ops[nops++] = i;
		idset_free(&act);
		/* pending first: a job that starts between the two reads is then
		 * in the second, never in neither; jobs are known by their lease */
		idset_get(s, "/v1/jobs?state=pending", "lease", &pend);
		idset_get(s, "/v1/jobs?state=running", "lease", &run);
		double now = wall_s() - t0;
		for (int i = 0; i < njobs; i++) {
			if (jb[i].state != 1 || idset_has(&pend, jb[i].lease))
				continue;
			if (idset_has(&run, jb[i].lease)) {
				if (!jb[i].seen)
					jb[i].seen = now;
				continue;
			}
			ops[nops++] = -1 - i; /* the job has ended: free its GPU */
		}
		idset_free(&run);
		idset_free(&pend);
		/* par clients share the calls, each on its own connection */
		int nk = nops < par ? nops : par;
		pid_t kids[64];
		for (int k = 0; k < nk; k++) {
			kids[k] = fork();
			if (kids[k] < 0)
				bl_die("fork: %s", strerror(errno));
			if (kids[k])
				continue;
			struct bl_conn c = {.fd = -1};
			for (int o = k; o < nops; o += nk) {
				int i = ops[o] < 0 ? -1 - ops[o] : ops[o], st;
				char body[320], path[96];
				if (ops[o] >= 0) {
					snprintf(body, sizeof(body), job_body, jb[i].lease);
					st = bl_call(&c, s->dm.port, "POST", "/v1/jobs", s->tok, body, NULL,
						     NULL);
					if (st != 201)
						bl_die("POST /v1/jobs %s answered %d", body, st);
				} else {
					snprintf(path, sizeof(path), "/v1/leases/%s/release", jb[i].lease);
					st = bl_call(&c, s->dm.port, "POST", path, s->tok, NULL, NULL, NULL);
					if (st != 200)
						bl_die("%s answered %d", path, st);
				}
			}
			_exit(0);
		}
		for (int k = 0; k < nk; k++) {
			int st;
			if (waitpid(kids[k], &st, 0) != kids[k] || !WIFEXITED(st) || WEXITSTATUS(st))
				bl_die("a client of the agent phase failed");
		}
		for (int o = 0; o < nops; o++) {
			if (ops[o] >= 0) {
				jb[ops[o]].state = 1;
			} else {
				jb[-1 - ops[o]].state = 2;
				done++;
			}
		}
		if (bl_now_ms() - tw > WAIT_LIMIT_S * 1000.0)
			bl_die("agent jobs not done after %d s (%d of %d)", WAIT_LIMIT_S, done, njobs);
		if (!nops)
			usleep(POLL_MS * 1000);
	}
	free(ops);
	double cpu1 = bl_proc_cpu_ms(s->pid) / 1000.0, t1 = wall_s();
	struct idset all;
	idset_get(s, "/v1/jobs", "id", &all);
	struct bl_samples st = {0}, seen = {0};
	for (int k = 0; k < njobs; k++)
		if (jb[k].seen > 0)
			bl_add(&seen, jb[k].seen);
	size_t i;
	json_t *j;
	json_t *states = json_object();
	long first = id_seq(jb[0].lease);
	json_array_foreach(all.doc, i, j) {
		const char *js = json_string_value(json_object_get(j, "state"));
		if (id_seq(json_string_value(json_object_get(j, "lease"))) < first)
			continue; /* a job of the submission part */
		json_t *c = json_object_get(states, js ? js : "?");
		json_object_set_new(states, js ? js : "?",
				    json_integer(c ? json_integer_value(c) + 1 : 1));
		if (!js || strcmp(js, "succeeded")) {
			failed_jobs++;
			char *t = failed_jobs <= 3 ? json_dumps(j, JSON_COMPACT) : NULL;
			if (t)
				fprintf(stderr, "slurm_side: a job that did not succeed: %.600s\n", t);
			free(t);
		}
		double at = parse_time(json_object_get(json_array_get(json_object_get(j, "ranks"), 0),
						       "started_at"));
		if (at > 0)
			bl_add(&st, at - t0 < 0 ? 0 : at - t0);
	}
	idset_free(&all);
	char *states_txt = json_dumps(states, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(states);
	agents_stop(s);
	struct starts a, b;
	if (!starts_of(&seen, slots, &a) || !starts_of(&st, slots, &b))
		bl_die("no job started");
	fprintf(stderr, "slurm_side: agents: %d jobs seen running (%d not succeeded); first %.3fs, "
		"%d slots busy at %.3fs, last %.2fs; overall %.1f/s, steady %.1f/s\n",
		a.n, failed_jobs, a.first, a.nfill, a.fill, a.last, a.overall, a.steady);
	fprintf(s->out,
		"{\"kind\":\"throughput_agents\",\"jobs\":%d,\"not_succeeded\":%d,\"slots\":%d,"
		"\"first_start_s\":%.3f,\"fill_s\":%.3f,\"fill_rate\":%.1f,"
		"\"overall_starts_per_s\":%.2f,\"steady_starts_per_s\":%.2f,\"last_start_s\":%.3f,"
		"\"agent_reported\":{\"fill_s\":%.3f,\"overall_starts_per_s\":%.2f,"
		"\"steady_starts_per_s\":%.2f,\"last_start_s\":%.3f},"
		"\"daemon_cpu_s\":%.2f,\"wall_s\":%.2f,\"job_states\":%s}\n",
		a.n, failed_jobs, slots, a.first, a.fill, a.nfill / a.fill, a.overall, a.steady,
		a.last, b.fill, b.overall, b.steady, b.last, cpu1 - cpu0, t1 - t0,
		states_txt ? states_txt : "{}");
	free(states_txt);
	free(st.v);
	free(seen.v);
	free(jb);
	side_stop(s);
}

/* ---- P: GPU choice on pair-bridged nodes ---- */

struct pick {
	char id[32];
	int node; /* index in s->nodes */
	unsigned gpus;
	int k;
	double start, end;
	long seq;
};

static int node_index(struct side *s, const char *name)
{
	for (int i = 0; i < s->nnodes; i++)
		if (!strcmp(s->nodes[i], name))
			return i;
	return -1;
}


/* Records the GPUs of every active single-node lease not yet seen; *nactive
 * gets how many are active. */
static int poll_picks(struct side *s, struct pick *pk, int npk, int cap, size_t *nactive)
{
	json_t *a = leases(s, "active");
	*nactive = json_array_size(a);
	size_t i;
	json_t *l;
	json_array_foreach(a, i, l) {
		const char *id = json_string_value(json_object_get(l, "id"));
		json_t *pl = json_object_get(l, "placement");
		if (!id || json_array_size(pl) != 1)
			continue;
		int seen = 0;
		for (int j = npk - 1; j >= 0 && !seen; j--)
			seen = !strcmp(pk[j].id, id);
		if (seen || npk == cap)
			continue;
		json_t *p0 = json_array_get(pl, 0), *g;
		struct pick *p = &pk[npk];
		memset(p, 0, sizeof(*p));
		snprintf(p->id, sizeof(p->id), "%s", id);
		p->seq = id_seq(id);
		p->node = node_index(s, json_string_value(json_object_get(p0, "node")));
		size_t gi;
		json_array_foreach(json_object_get(p0, "gpus"), gi, g)
			p->gpus |= 1u << json_integer_value(g);
		p->k = __builtin_popcount(p->gpus);
		npk++;
	}
	json_decref(a);
	return npk;
}

struct event {
	double at;
	int kind; /* 0 end, 1 start: ends first at one instant */
	long seq;
	int pick;
};

static int event_cmp(const void *x, const void *y)
{
	const struct event *a = x, *b = y;
	if (a->at != b->at)
		return a->at < b->at ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind - b->kind;
	return (a->seq > b->seq) - (a->seq < b->seq);
}

static int full_pairs(unsigned m)
{
	int n = 0;
	for (int p = 0; p < 4; p++)
		n += (m >> (2 * p) & 3u) == 3u;
	return n;
}

static void phase_p(struct side *s, const char *mixfile)
{
	FILE *f = fopen(mixfile, "r");
	if (!f)
		bl_die("cannot read %s", mixfile);
	int k, secs, nmix = 0;
	side_start(s);
	all_nodes(s, true);
	while (fscanf(f, "%d %d", &k, &secs) == 2) {
		char body[128];
		snprintf(body, sizeof(body),
			 "{\"gpus\":%d,\"models\":[\"h100-nvl\"],\"duration_s\":%d}", k, secs);
		submit(&s->c, s->dm.port, s->tok, body);
		nmix++;
	}
	fclose(f);
	struct pick *pk = calloc((size_t)nmix + 1, sizeof(*pk));
	if (!pk)
		bl_die("out of memory");
	int npk = 0;
	double t0 = wall_s();
	all_nodes(s, false);
	double tw = bl_now_ms();
	for (;;) {
		size_t nact;
		npk = poll_picks(s, pk, npk, nmix, &nact);
		if (!nact && !count_live(s))
			break;
		usleep(POLL_MS * 1000);
		if (bl_now_ms() - tw > WAIT_LIMIT_S * 1000.0)
			bl_die("mixed stream not done after %d s", WAIT_LIMIT_S);
	}
	double drained = wall_s() - t0;
	/* start and end instants from the final list */
	json_t *a = leases(s, NULL);
	size_t i;
	json_t *l;
	json_array_foreach(a, i, l) {
		const char *id = json_string_value(json_object_get(l, "id"));
		for (int j = 0; j < npk; j++)
			if (id && !strcmp(pk[j].id, id)) {
				pk[j].start = parse_time(json_object_get(l, "started_at"));
				pk[j].end = parse_time(json_object_get(l, "ended_at"));
			}
	}
	json_decref(a);
	struct event *ev = calloc((size_t)npk * 2 + 1, sizeof(*ev));
	if (!ev)
		bl_die("out of memory");
	int nev = 0;
	for (int j = 0; j < npk; j++) {
		ev[nev++] = (struct event){pk[j].start, 1, pk[j].seq, j};
		ev[nev++] = (struct event){pk[j].end, 0, pk[j].seq, j};
	}
	qsort(ev, (size_t)nev, sizeof(*ev), event_cmp);
	unsigned used[MAX_NODES] = {0};
	bool seen_node[MAX_NODES] = {0}; /* nodes the stream ran on (pair-bridged) */
	for (int j = 0; j < npk; j++)
		if (pk[j].node >= 0)
			seen_node[pk[j].node] = true;
	int k1_lone = 0, k1_took_lone = 0, k1_broke = 0, kdec[5] = {0}, kavoid[5] = {0};
	int kjobs[5] = {0}, kwhole[5] = {0}, kfleet[5] = {0};
	for (int e = 0; e < nev; e++) {
		struct pick *p = &pk[ev[e].pick];
		if (p->node < 0 || p->k > 4)
			continue;
		if (!ev[e].kind) {
			used[p->node] &= ~p->gpus;
			continue;
		}
		unsigned fr = ~used[p->node] & 0xffu;
		if (p->k == 1) {
			unsigned lone = 0;
			for (int g = 0; g < 8; g++)
				if ((fr >> g & 1u) && !(fr >> (g ^ 1) & 1u))
					lone |= 1u << g;
			if (lone) {
				k1_lone++;
				int g = __builtin_ctz(p->gpus);
				if (!(fr >> (g ^ 1) & 1u))
					k1_took_lone++;
				else
					k1_broke++;
			}
		} else {
			int best = full_pairs(fr) < p->k / 2 ? full_pairs(fr) : p->k / 2;
			kdec[p->k]++;
			if (full_pairs(p->gpus) < best)
				kavoid[p->k]++;
		}
		kjobs[p->k]++;
		if (p->k >= 2 && full_pairs(p->gpus) == p->k / 2) {
			kwhole[p->k]++;
		} else if (p->k >= 2) {
			/* Split: did any node of the stream have enough whole pairs? */
			for (int n = 0; n < s->nnodes; n++)
				if (seen_node[n] && full_pairs(~used[n] & 0xffu) >= p->k / 2) {
					kfleet[p->k]++;
					break;
				}
		}
		used[p->node] |= p->gpus;
	}
	fprintf(stderr,
		"slurm_side: mix of %d on pair-bridged nodes drained in %.1fs: 2-GPU on a whole "
		"pair %d/%d, 4-GPU on two whole pairs %d/%d, 1-GPU broke a free pair %d of %d "
		"(lone GPU free)\n",
		nmix, drained, kwhole[2], kjobs[2], kwhole[4], kjobs[4], k1_broke, k1_lone);
	fprintf(s->out,
		"{\"kind\":\"placement\",\"jobs\":%d,\"seen\":%d,\"drained_s\":%.1f,"
		"\"k1_jobs\":%d,\"k1_lone_GPU_available\":%d,\"k1_took_lone_GPU\":%d,"
		"\"k1_broke_a_free_pair_although_a_lone_GPU_existed\":%d,"
		"\"k2_jobs\":%d,\"k2_whole_pair\":%d,\"k2_decisions\":%d,\"k2_avoidable\":%d,"
		"\"k4_jobs\":%d,\"k4_two_whole_pairs\":%d,\"k4_decisions\":%d,\"k4_avoidable\":%d,"
		"\"k2_split_while_a_pair_was_free_elsewhere\":%d,"
		"\"k4_split_while_two_pairs_were_free_elsewhere\":%d}\n",
		nmix, npk, drained, kjobs[1], k1_lone, k1_took_lone, k1_broke, kjobs[2], kwhole[2],
		kdec[2], kavoid[2], kjobs[4], kwhole[4], kdec[4], kavoid[4], kfleet[2], kfleet[4]);
	free(ev);
	free(pk);
	side_stop(s);
}


int main(int argc, char **argv)
{
	if (argc != 5)
		bl_die("usage: bench_slurm_side FLEET MIXFILE SWFILE OUT.jsonl");
	const char *phases = getenv("PHASES") ? getenv("PHASES") : "SAPT";
	int njobs = getenv("NJOBS") ? atoi(getenv("NJOBS")) : 2000;
	int par = getenv("PAR") ? atoi(getenv("PAR")) : 4;
	int secs = getenv("JOB_SLEEP") ? atoi(getenv("JOB_SLEEP")) : 5;
	if (njobs < 2 || par < 1 || par > 64 || secs < 1)
		bl_die("NJOBS >= 2, PAR 1..64, JOB_SLEEP >= 1");
	char cli[BL_PATH_MAX];
	if (getenv("SUANLI")) {
		snprintf(cli, sizeof(cli), "%s", getenv("SUANLI"));
	} else {
		ssize_t n = readlink("/proc/self/exe", cli, sizeof(cli) - 16);
		if (n <= 0)
			bl_die("cannot find myself; set SUANLI");
		cli[n] = 0;
		snprintf(strrchr(cli, '/') + 1, 16, "suanli");
	}
	if ((strchr(phases, 'S') || strchr(phases, 'A')) && access(cli, X_OK))
		bl_die("no suanli CLI at %s (build it, or set SUANLI)", cli);
	static struct side s;
	snprintf(s.fleet, sizeof(s.fleet), "%s", argv[1]);
	if (access(s.fleet, R_OK))
		bl_die("cannot read %s", s.fleet);
	s.out = fopen(argv[4], "w");
	if (!s.out)
		bl_die("cannot write %s", argv[4]);
	setvbuf(s.out, NULL, _IOLBF, 0);
	bl_pin(1);
	if (strchr(phases, 'S'))
		phase_s(&s, cli, njobs, par, secs);
	if (strchr(phases, 'A')) {
		if (getenv("SUANLI_AGENT")) {
			snprintf(s.agent, sizeof(s.agent), "%s", getenv("SUANLI_AGENT"));
		} else {
			snprintf(s.agent, sizeof(s.agent), "%s", cli);
			snprintf(strrchr(s.agent, '/') + 1, 16, "suanli-agent");
		}
		if (access(s.agent, X_OK))
			bl_die("no suanli-agent at %s (build it, or set SUANLI_AGENT)", s.agent);
		phase_a(&s, njobs, par, secs);
	}
	if (strchr(phases, 'P'))
		phase_p(&s, argv[2]);
	if (strchr(phases, 'T'))
		phase_t(&s, argv[3]);
	fclose(s.out);
	return 0;
}

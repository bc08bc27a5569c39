/* bench/restart.c - how long suanlid takes to be ready after a restart,
 * against the number of ended leases in its store (issue 17: "a restart with
 * 1,000,000 ended leases in the store is ready in under 2 s").
 *
 * Seeds one store through the API of a real suanlid (next to this program or
 * $SUANLID; 64-node fleet, --simulate): a tenant, LIVE 1-GPU leases that stay
 * active, and one lease that is released, whose stored row is the template of
 * every ended lease. Then, for each history size N (0, 100,000, 1,000,000 or
 * argv[2..]), it copies that store and appends N ended leases straight
 * through the store API (store_put, BATCH rows a transaction, ids dense after
 * the live ones, the template's text with its id replaced), and starts:
 * - this build, the rows in lease_history;
 * - this build again, each ended lease also with billing's usage record (in
 *   usage_history) and one charge posting (and a top-up paying them, and
 *   the ledger's account totals in ledger_accounts), as a priced deployment
 *   stores them (src/ctl/billing_store.c);
 * - when $SUANLID_OLD names a build from before history tables, that build on
 *   a store taken back to schema 7 (ended rows in the live leases table, the
 *   history tables dropped with the sqlite3 shell), which it reads whole.
 * Each daemon is pinned to core 0; "ready" is the time from its start until
 * /healthz answers 200 and GET /v1/leases/ls-000001 (a live lease) and the
 * newest ended lease both answer 200, the median of RUNS starts. Figures go to
 * stdout and bench/results/history.md (or argv[1]; what follows
 * "<!-- notes -->" there is kept); the goal is reported, not asserted.
 *
 * Usage: bench_restart [results.md] [N...]   env: SUANLID, SUANLID_OLD */
#include "bench_lib.h"

#include "store.h"

#define NODES 64
#define LIVE 200
#define RUNS 3
#define BATCH 50000 /* rows per transaction while filling */

static void run_wait(char *const argv[], const char *log)
{
	int st;
	pid_t pid = bl_spawn(argv, log);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		bl_die("%s failed (see %s)", argv[0], log);
}

static pid_t serve(const char *suanlid, struct bl_daemon *d, const char *data)
{
	char *argv[] = {(char *)suanlid, "serve", "--data", (char *)data, "--listen", d->portarg,
			"--fleet", d->fleet, "--simulate", "--log-level", "warn", NULL};
	return bl_spawn(argv, d->log);
}

static void stop(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

/* The store after seeding: LIVE active leases (ls-000001..), one released
 * (ls-LIVE+1) whose row is returned (malloc'd). */
static char *seed(struct bl_daemon *d)
{
	pid_t pid = serve(d->suanlid, d, d->data);
	if (!bl_wait_healthy(d->port, pid, 30000))
		bl_die("suanlid did not start (see %s)", d->log);
	struct bl_conn c = {.fd = -1};
	if (bl_call(&c, d->port, "POST", "/v1/tenants", d->admin, "{\"name\":\"acme\"}", NULL, NULL) != 201)
		bl_die("could not create the tenant");
	for (int i = 0; i <= LIVE; i++)
		if (bl_call(&c, d->port, "POST", "/v1/leases", d->admin,
			    "{\"tenant\":\"acme\",\"gpus\":1}", NULL, NULL) != 201)
			bl_die("could not create lease %d", i + 1);
	char path[64];
	snprintf(path, sizeof(path), "/v1/leases/ls-%06d/release", LIVE + 1);
	if (bl_call(&c, d->port, "POST", path, d->admin, "{}", NULL, NULL) != 200)
		bl_die("could not release a lease");
	bl_conn_reset(&c);
	free(c.buf);
	stop(pid);
	/* The released row, read from wherever this build keeps it. */
	struct store *s;
	struct sl_diag dg;
	char id[32], *row = NULL;
	snprintf(id, sizeof(id), "ls-%06d", LIVE + 1);
	if (store_open(d->data, &s, &dg))
		bl_die("store_open: %s", dg.msg);
	if (store_get(s, STORE_LEASE_HISTORY, id, &row, &dg) &&
	    store_get(s, STORE_LEASES, id, &row, &dg))
		bl_die("no row for %s: %s", id, dg.msg);
	store_close(s);
	return row;
}

/* row with every "ls-OLD" replaced by id, into out. */
static void retext(const char *row, const char *old, const char *id, struct sl_buf *out)
{
	sl_buf_reset(out);
	size_t ol = strlen(old);
	for (const char *p = row;;) {
		const char *q = strstr(p, old);
		if (!q) {
			if (sl_buf_add(out, p, strlen(p)))
				bl_die("out of memory");
			return;
		}
		if (sl_buf_add(out, p, (size_t)(q - p)) || sl_buf_add(out, id, strlen(id)))
			bl_die("out of memory");
		p = q + ol;
	}
}

/* Appends n ended leases after the seed's into data (live: into the leases
 * table, for a build without history tables). */
static double fill(const char *data, const char *tmpl, long n, bool live, bool usage)
{
	double t0 = bl_now_ms();
	struct store *s;
	struct sl_diag d;
	char old[32], id[32], seqs[32];
	struct sl_buf b;
	sl_buf_init(&b, STORE_MAX_BODY);
	snprintf(old, sizeof(old), "ls-%06d", LIVE + 1);
	if (store_open(data, &s, &d))
		bl_die("store_open: %s", d.msg);
	for (long i = 0; i < n; i++) {
		if (i % BATCH == 0 && store_begin(s, &d))
			bl_die("begin: %s", d.msg);
		snprintf(id, sizeof(id), "ls-%06ld", LIVE + 2 + i);
		retext(tmpl, old, id, &b);
		if (store_put(s, live ? STORE_LEASES : STORE_LEASE_HISTORY, id, "acme", sl_buf_str(&b),
			      1700000000000000000LL + i, &d))
			bl_die("put %s: %s", id, d.msg);
		if (usage) {
			/* billing's record of an ended metered lease (billing_store.c usage_json) */
			char u[512];
			long long at = 1700000000000LL + i * 1000;
			snprintf(u, sizeof(u),
				 "{\"lease\":\"%s\",\"tenant\":\"acme\",\"site\":\"bench-a\",\"region\":"
				 "\"cn-east\",\"model\":\"h100-sxm\",\"plan\":\"hourly\",\"priced\":true,"
				 "\"ended\":true,\"events\":[{\"at_ms\":%lld,\"kind\":\"started\",\"gpus\":1},"
				 "{\"at_ms\":%lld,\"kind\":\"ended\",\"gpus\":1,\"end\":\"released\"}],"
				 "\"bought_ms\":0,\"term_months\":0,\"gpus\":1,\"charged\":3600,"
				 "\"last_post_ms\":%lld}",
				 id, at, at + 3600000, at + 3600000);
			if (store_put(s, STORE_USAGE_HISTORY, id, "acme", u, 1700000000000000000LL + i, &d))
				bl_die("put usage %s: %s", id, d.msg);
			/* and its charge in the ledger (billing_store.c posting_json; the
			 * row's updated_ns is its seq) */
			char pid[64];
			snprintf(pid, sizeof(pid), "chg.%s.1", id);
			snprintf(u, sizeof(u),
				 "{\"seq\":%ld,\"id\":\"%s\",\"type\":\"charge\",\"tenant\":\"acme\","
				 "\"plan\":\"hourly\",\"amount\":3600,\"at_ms\":%lld,\"reason\":\"usage\"}",
				 i + 2, pid, at + 3600000);
			if (store_put(s, STORE_POSTINGS, pid, "acme", u, i + 2, &d))
				bl_die("put posting %s: %s", pid, d.msg);
		}
		if ((i + 1) % BATCH == 0 || i + 1 == n) {
			if (store_commit(s, &d))
				bl_die("commit: %s", d.msg);
		}
	}
	if (usage && n > 0) {
		/* the top-up that paid for those charges */
		char t[256];
		snprintf(t, sizeof(t),
			 "{\"seq\":1,\"id\":\"top.bench\",\"type\":\"topup\",\"tenant\":\"acme\","
			 "\"plan\":\"hourly\",\"amount\":%ld,\"at_ms\":1699999999000,\"reason\":\"top-up\"}",
			 n * 3600 + 1);
		if (store_put(s, STORE_POSTINGS, "top.bench", "acme", t, 1, &d))
			bl_die("put top-up: %s", d.msg);
		/* the ledger's account totals after those postings, and post_seq */
		static const char *const acc[][2] = {{"tenant:acme", "tenant"}, {"cash:", "cash"},
						     {"revenue:hourly", "revenue"}};
		long long paid = (long long)n * 3600 + 1, charged = (long long)n * 3600;
		long long deb[] = {charged, paid, 0}, cre[] = {paid, 0, charged};
		for (int k = 0; k < 3; k++) {
			snprintf(t, sizeof(t),
				 "{\"kind\":\"%s\",\"key\":\"%s\",\"debits\":%lld,\"credits\":%lld}",
				 acc[k][1], strchr(acc[k][0], ':') + 1, deb[k], cre[k]);
			if (store_put(s, STORE_LEDGER_ACCOUNTS, acc[k][0], k ? NULL : "acme", t,
				      1700000000000000000LL, &d))
				bl_die("put account: %s", d.msg);
		}
		snprintf(t, sizeof(t), "%ld", n + 1);
		if (store_meta_set(s, "billing.post_seq", t, &d) ||
		    store_meta_set(s, "billing.snapshot", "1", &d))
			bl_die("meta: %s", d.msg);
	}
	snprintf(seqs, sizeof(seqs), "%ld", LIVE + 1 + n);
	if (!live && store_meta_set(s, "history.leases.seq", seqs, &d))
		bl_die("meta: %s", d.msg);
	store_close(s);
	sl_buf_release(&b);
	return bl_now_ms() - t0;
}

/* Takes data back to the schema before history tables (7): ended rows
 * into the live tables, the history tables dropped. */
static void downgrade(const char *data, const char *log)
{
	char db[BL_PATH_MAX + 256];
	snprintf(db, sizeof(db), "%s/%s", data, STORE_DB_FILE);
	char *argv[] = {"/usr/bin/sqlite3", db,
			"INSERT INTO leases SELECT * FROM lease_history;"
			"INSERT INTO jobs SELECT * FROM job_history;"
			"INSERT INTO instances SELECT * FROM instance_history;"
			"DROP TABLE lease_history; DROP TABLE job_history; DROP TABLE instance_history;"
			"DELETE FROM meta WHERE key LIKE 'history.%';"
			"PRAGMA user_version = 7; VACUUM;", NULL};
	run_wait(argv, log);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median ms from start until ready, and the daemon's CPU ms then. */
static double ready_ms(const char *suanlid, struct bl_daemon *d, const char *data, long n,
		       double *cpu_ms)
{
	double v[RUNS], cpu[RUNS];
	char last[64];
	snprintf(last, sizeof(last), "/v1/leases/ls-%06ld", LIVE + 1 + n);
	for (int r = 0; r < RUNS; r++) {
		double t0 = bl_now_ms();
		pid_t pid = serve(suanlid, d, data);
		if (!bl_wait_healthy(d->port, pid, 600000))
			bl_die("%s did not start on %ld ended leases (see %s)", suanlid, n, d->log);
		struct bl_conn c = {.fd = -1};
		if (bl_call(&c, d->port, "GET", "/v1/leases/ls-000001", d->admin, NULL, NULL, NULL) != 200 ||
		    bl_call(&c, d->port, "GET", last, d->admin, NULL, NULL, NULL) != 200)
			bl_die("the leases are not served after the restart (see %s)", d->log);
		v[r] = bl_now_ms() - t0;
		cpu[r] = bl_proc_cpu_ms(pid);
		bl_conn_reset(&c);
		free(c.buf);
		stop(pid);
	}
	qsort(v, RUNS, sizeof(double), cmp_d);
	qsort(cpu, RUNS, sizeof(double), cmp_d);
	*cpu_ms = cpu[RUNS / 2];
	return v[RUNS / 2];
}

static long dir_kib(const char *data)
{
	char p[BL_PATH_MAX + 256];
	struct stat st;
	long kib = 0;
	const char *sfx[] = {"", "-wal"};
	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s%s", data, STORE_DB_FILE, sfx[i]);
		if (!stat(p, &st))
			kib += (long)(st.st_size / 1024);
	}
	return kib;
}

#define NOTES_MARK "<!-- notes -->"

/* What follows NOTES_MARK in the results file (malloc'd, NULL if none): the
 * reading of the figures, written by hand, kept when the file is rewritten. */
static char *old_notes(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 20);
	size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	if (!buf)
		return NULL;
	buf[n] = 0;
	char *m = strstr(buf, NOTES_MARK);
	if (!m) {
		free(buf);
		return NULL;
	}
	memmove(buf, m, strlen(m) + 1);
	return buf;
}

struct point {
	long n;
	double new_ms, new_cpu, old_ms, old_cpu, use_ms, use_cpu, fill_ms;
	long kib;
};

int main(int argc, char **argv)
{
	const char *out = argc > 1 ? argv[1] : "bench/results/history.md";
	long sizes[16] = {0, 100000, 1000000};
	int nsizes = 3;
	if (argc > 2) {
		nsizes = 0;
		for (int i = 2; i < argc && nsizes < 16; i++)
			sizes[nsizes++] = atol(argv[i]);
	}
	const char *old = getenv("SUANLID_OLD");
	if (old && access(old, X_OK))
		bl_die("SUANLID_OLD=%s is not a program", old);
	struct bl_daemon d;
	bl_daemon_prepare(&d, "restart", NODES);
	char *tmpl = seed(&d);
	struct point pts[16];
	char copy[BL_PATH_MAX + 32];
	snprintf(copy, sizeof(copy), "%s/run", d.dir);
	for (int i = 0; i < nsizes; i++) {
		struct point *p = &pts[i];
		memset(p, 0, sizeof(*p));
		p->n = sizes[i];
		/* pass 0: this build; 1: this build, each ended lease also with
		 * billing's usage record and charge; 2: the old build ($SUANLID_OLD). */
		for (int pass = 0; pass < (old ? 3 : 2); pass++) {
			bool is_old = pass == 2, usage = pass == 1;
			char *rm[] = {"/bin/rm", "-rf", copy, NULL};
			char *cp[] = {"/bin/cp", "-a", d.data, copy, NULL};
			run_wait(rm, d.log);
			run_wait(cp, d.log);
			double f = fill(copy, tmpl, p->n, is_old, usage);
			if (is_old)
				downgrade(copy, d.log);
			else if (!usage) {
				p->fill_ms = f;
				p->kib = dir_kib(copy);
			}
			double cpu = 0, ms = ready_ms(is_old ? old : d.suanlid, &d, copy, p->n, &cpu);
			*(is_old ? &p->old_ms : usage ? &p->use_ms : &p->new_ms) = ms;
			*(is_old ? &p->old_cpu : usage ? &p->use_cpu : &p->new_cpu) = cpu;
			printf("%-16s %8ld ended: ready in %8.1f ms (daemon CPU %8.1f ms)\n",
			       is_old ? "before" : usage ? "history+billing" : "history", p->n, ms, cpu);
			fflush(stdout);
		}
	}
	char *notes = old_notes(out);
	FILE *o = fopen(out, "w");
	if (!o)
		bl_die("cannot write %s", out);
	fprintf(o, "# Restart time against history size\n\n"
		   "`bench/restart.c` (issue 17: \"a restart with 1,000,000 ended leases in the "
		   "store is ready in under 2 s\"). A store with %d active leases (one tenant, "
		   "%d-node simulated fleet) plus N ended leases written straight through the "
		   "store API; ready = from the daemon's start until `/healthz`, a live lease "
		   "and the newest ended lease all answer 200. Median of %d starts, daemon "
		   "pinned to core 0. *before*: the build named by `SUANLID_OLD` (ended rows "
		   "in the live `leases` table, which it scans whole at start); *history*: this "
		   "build (ended rows in `lease_history`, which a start does not read); "
		   "*history + billing rows*: this build with billing's usage record (in "
		   "`usage_history`) and one charge posting of each ended lease in the store "
		   "too (and the top-up that paid them, and the ledger's account totals in "
		   "`ledger_accounts`), as a priced deployment stores them: a start reads the "
		   "live usage records and the account totals, not the history or the "
		   "postings.\n\n",
		LIVE, NODES, RUNS);
	bl_machine(o, argc, argv);
	fprintf(o, "- before: %s\n\n", old ? old : "(not measured: SUANLID_OLD unset)");
	fprintf(o, "| ended leases | store size | ready, history (ms) | CPU, history (ms) "
		   "| ready, history + billing rows (ms) | CPU (ms) "
		   "| ready, before (ms) | CPU, before (ms) |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int i = 0; i < nsizes; i++) {
		const struct point *p = &pts[i];
		char o1[32] = "-", o2[32] = "-";
		if (old) {
			snprintf(o1, sizeof(o1), "%.0f", p->old_ms);
			snprintf(o2, sizeof(o2), "%.0f", p->old_cpu);
		}
		fprintf(o, "| %ld | %.1f MiB | %.0f | %.0f | %.0f | %.0f | %s | %s |\n", p->n,
			(double)p->kib / 1024, p->new_ms, p->new_cpu, p->use_ms, p->use_cpu, o1, o2);
	}
	fprintf(o, "\nGoal: ready in under 2,000 ms at 1,000,000 ended leases (reported, not "
		   "asserted).\n");
	if (notes)
		fprintf(o, "\n%s", notes);
	free(notes);
	fclose(o);
	free(tmpl);
	bl_rmrf(d.dir);
	return 0;
}

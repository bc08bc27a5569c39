/* bench/memory.c - the controller's memory holding 80,000 GPUs and 100,000
 * leases.
 *
 * Generates a 10,000-node fleet file (8-GPU nodes: 80,000 GPUs; fixed seed,
 * as bench_api's), starts a real suanlid (next to this program or $SUANLID)
 * pinned to core 0 and, as a tenant over CONNS keep-alive connections,
 * creates 1-GPU leases until every GPU is held (80,000 active), then 20,000
 * more, which wait in the queue (pending) - 100,000 live leases in all.
 * The daemon's resident memory (VmRSS, and its peak VmHWM) is read from
 * /proc after start, at 80,000 and at 100,000 leases; so is the store's
 * size on disk. Figures are printed and written to bench/results/memory.md
 * (or argv[1]); the goal (<= 200 MiB) is reported, not asserted. What
 * follows a line "<!-- notes -->" in that file (the per-lease breakdown,
 * written by hand from heap profiles) is kept when it is rewritten.
 *
 * Usage: bench_memory [results.md] [nodes]      env: SUANLID */
#include <dirent.h>
#include <sys/epoll.h>

#include "bench_lib.h"

#define NODES_DEFAULT 10000
/* The node count may be lowered (argv[2]) to profile the heap under
 * valgrind; the queue is then a quarter of the GPUs, as at full size. */
static int NODES = NODES_DEFAULT;
#define GPUS (NODES * 8)
#define PENDING (GPUS / 4)
#define CONNS 64

struct mconn {
	struct bl_conn c;
	bool busy;
};

struct mem_point {
	const char *what;
	long rss_kib, hwm_kib, store_kib;
	double secs;
	long active, pending;
};

static void proc_mem(pid_t pid, long *rss, long *hwm)
{
	char p[64], line[256];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	FILE *f = fopen(p, "r");
	*rss = *hwm = 0;
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "VmRSS:", 6))
			*rss = atol(line + 6);
		else if (!strncmp(line, "VmHWM:", 6))
			*hwm = atol(line + 6);
	}
	if (f)
		fclose(f);
}

static long dir_kib(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	long kib = 0;
	char p[BL_PATH_MAX + 300];
	while (d && (e = readdir(d))) {
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (!stat(p, &st) && S_ISREG(st.st_mode))
			kib += (long)(st.st_size / 1024);
	}
	if (d)
		closedir(d);
	return kib;
}

static void send_create(struct mconn *m, const char *tok)
{
	char req[1024];
	size_t n = bl_format(req, sizeof(req), "POST", "/v1/leases", tok,
			     "{\"gpus\":1,\"duration_s\":86400}", NULL);
	if (send(m->c.fd, req, n, MSG_NOSIGNAL) != (ssize_t)n)
		bl_die("send: %s", strerror(errno));
	m->busy = true;
}

/* Creates `count` leases over the connections; counts active and pending. */
static void create_many(struct mconn *ms, const char *tok, long count, long *active,
			long *pending)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), busy = 0;
	long started = 0;
	for (int i = 0; i < CONNS && started < count; i++, started++, busy++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ms[i]};
		epoll_ctl(ep, EPOLL_CTL_ADD, ms[i].c.fd, &ev);
		send_create(&ms[i], tok);
	}
	struct epoll_event evs[CONNS];
	while (busy > 0) {
		int n = epoll_wait(ep, evs, CONNS, 60000);
		if (n <= 0)
			bl_die("no answer for 60 s");
		for (int i = 0; i < n; i++) {
			struct mconn *m = evs[i].data.ptr;
			ssize_t r = bl_fill(&m->c);
			if (r <= 0)
				bl_die("the daemon closed a connection");
			m->c.len += (size_t)r;
			int st;
			size_t bo, bn;
			long used = bl_parse(m->c.buf, m->c.len, &st, &bo, &bn);
			if (used < 0)
				bl_die("malformed answer");
			if (!used)
				continue;
			char state[32] = "";
			m->c.buf[bo + bn] = 0;
			if (st != 201 || !bl_json_str(m->c.buf + bo, "state", state, sizeof(state)))
				bl_die("create answered %d: %.200s", st, m->c.buf + bo);
			if (!strcmp(state, "active"))
				(*active)++;
			else
				(*pending)++;
			memmove(m->c.buf, m->c.buf + used, m->c.len - (size_t)used);
			m->c.len -= (size_t)used;
			m->busy = false;
			if (started < count) {
				started++;
				send_create(m, tok);
			} else {
				epoll_ctl(ep, EPOLL_CTL_DEL, m->c.fd, NULL);
				busy--;
			}
		}
	}
	close(ep);
}

#define NOTES_MARK "<!-- notes -->"

/* What follows NOTES_MARK in the results file (malloc'd, NULL if none). */
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

static void report(FILE *o, int argc, char **argv, const struct mem_point *pt, int npt)
{
	fprintf(o, "# Controller memory benchmark (bench/memory.c)\n\n");
	bl_machine(o, argc, argv);
	fprintf(o, "- daemon: Release suanlid, `serve --simulate`; fleet of %d generated 8-GPU "
		   "nodes (%d GPUs), leaves of %d, fixed seed\n- leases: 1-GPU "
		   "`{\"gpus\":1,\"duration_s\":86400}` by one tenant over %d connections until "
		   "every GPU is held, then %d more that wait in the queue\n\n",
		NODES, GPUS, BL_LEAF, CONNS, PENDING);
	fprintf(o, "| point | active leases | pending | VmRSS MiB | peak VmHWM MiB | store on disk "
		   "MiB | seconds to get there |\n|---|---:|---:|---:|---:|---:|---:|\n");
	for (int i = 0; i < npt; i++)
		fprintf(o, "| %s | %ld | %ld | %.1f | %.1f | %.1f | %.1f |\n", pt[i].what,
			pt[i].active, pt[i].pending, (double)pt[i].rss_kib / 1024,
			(double)pt[i].hwm_kib / 1024, (double)pt[i].store_kib / 1024, pt[i].secs);
	long leases = pt[npt - 1].active + pt[npt - 1].pending;
	if (leases > 0)
		fprintf(o, "\nPer live lease: %.2f KiB of RSS beyond the started daemon's ((%.1f - %.1f) "
			   "MiB / %ld leases).\n",
			(double)(pt[npt - 1].rss_kib - pt[0].rss_kib) / (double)leases,
			(double)pt[npt - 1].rss_kib / 1024, (double)pt[0].rss_kib / 1024, leases);
	fprintf(o, "\nGoal (not asserted): RSS <= 200 MiB holding %d GPUs and %d leases.\n", GPUS,
		GPUS + PENDING);
}

int main(int argc, char **argv)
{
	const char *out = argc > 1 ? argv[1] : "bench/results/memory.md";
	if (argc > 2 && (NODES = atoi(argv[2])) < 1)
		bl_die("usage: bench_memory [results.md] [nodes>0]");
	char tok[256];
	struct bl_daemon dm;
	bl_daemon_prepare(&dm, "memory", NODES);
	char *suanlid = dm.suanlid, *dir = dm.dir, *data = dm.data, *fleet = dm.fleet,
	     *log = dm.log, *admin = dm.admin, *portarg = dm.portarg;
	int port = dm.port;
	char *args[] = {suanlid, "serve", "--data", data, "--listen", portarg, "--fleet", fleet,
			"--simulate", "--log-level", "warn", NULL};
	double t0 = bl_now_ms();
	pid_t pid = bl_spawn(args, log);
	bl_pin(1);
	if (!bl_wait_healthy(port, pid, 120000))
		bl_die("suanlid did not become healthy (log: %s)", log);

	struct mem_point pt[3] = {{.what = "started, fleet loaded"},
				  {.what = "every GPU leased"},
				  {.what = "plus the queue"}};
	pt[0].secs = (bl_now_ms() - t0) / 1000;
	proc_mem(pid, &pt[0].rss_kib, &pt[0].hwm_kib);
	pt[0].store_kib = dir_kib(data);

	struct bl_conn c = {.fd = -1};
	char *body = NULL;
	int st = bl_call(&c, port, "POST", "/v1/tenants", admin, "{\"name\":\"mem\"}", NULL, &body);
	if (st != 201)
		bl_die("creating the tenant answered %d: %s", st, body ? body : "");
	free(body);
	st = bl_call(&c, port, "POST", "/v1/tokens", admin,
		     "{\"role\":\"tenant\",\"tenant\":\"mem\",\"user\":\"mem\"}", NULL, &body);
	if (st != 201 || !bl_json_str(body, "token", tok, sizeof(tok)))
		bl_die("creating the token answered %d: %s", st, body ? body : "");
	free(body);
	bl_conn_reset(&c);
	free(c.buf);

	struct mconn *ms = calloc(CONNS, sizeof(*ms));
	if (!ms)
		bl_die("out of memory");
	for (int i = 0; i < CONNS; i++)
		if ((ms[i].c.fd = bl_connect(port)) < 0)
			bl_die("connect: %s", strerror(errno));
	long active = 0, pending = 0;
	for (int p = 1; p < 3; p++) {
		double s0 = bl_now_ms();
		fprintf(stderr, "bench_memory: %s...\n", pt[p].what);
		create_many(ms, tok, p == 1 ? GPUS : PENDING, &active, &pending);
		pt[p].secs = (bl_now_ms() - s0) / 1000;
		pt[p].active = active;
		pt[p].pending = pending;
		proc_mem(pid, &pt[p].rss_kib, &pt[p].hwm_kib);
		pt[p].store_kib = dir_kib(data);
	}
	for (int i = 0; i < CONNS; i++) {
		bl_conn_reset(&ms[i].c);
		free(ms[i].c.buf);
	}
	free(ms);
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "bench_memory: suanlid stopped with status %d (log: %s)\n", st, log);
	else
		bl_rmrf(dir);
	report(stdout, argc, argv, pt, 3);
	char *notes = old_notes(out);
	FILE *o = fopen(out, "w");
	if (!o)
		bl_die("cannot write %s", out);
	report(o, argc, argv, pt, 3);
	if (notes)
		fprintf(o, "\n%s", notes);
	fclose(o);
	free(notes);
	return 0;
}

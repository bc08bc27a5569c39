/* bench/memory.c - the controller's memory at a fleet's size (issues 7, 17):
 * N agents connected and heartbeating over real HTTP, 2N instances running,
 * 10N leases (every GPU held, the rest queued), all in one run.
 *
 * For each fleet size asked for (default 10,000 nodes), a fleet file of
 * that many 8-GPU nodes is generated (fixed seed, bench_lib.h) and a real
 * suanlid (next to this program or $SUANLID) is started pinned to core 0.
 * Then, measuring the daemon's VmRSS and VmHWM (/proc) and the store's size
 * on disk after each step:
 *
 * 1. every node's agent connects on its own keep-alive connection (one TCP
 *    connection per agent, as suanli-agent keeps one) and registers with
 *    the real `POST /v1/agent/register`: the discovery `suanli-agent
 *    discover --simulate TYPE` gives for the node's type, with a UUID and
 *    PCI bus id per GPU and a driver version as real discoveries carry.
 *    From then on each agent heartbeats every HEARTBEAT_S seconds with what
 *    suanli-agent sends: per-GPU figures (temperature, power, ECC, NVLink,
 *    utilisation, XIDs, health) and its instances' reports. The
 *    heartbeats go on through every later step.
 * 2. a tenant creates 2N one-GPU instances (`POST /v1/instances`, default
 *    image, one SSH key, a data disk, a port); each node's agent reports
 *    its instances running in its heartbeats (state, ssh port, ports, host
 *    key), as the real agent does once the container runs. Every instance is
 *    then read back (`GET /v1/instances/ID`) and counted running. The
 *    simulated agents do not fetch their work (`GET /v1/agent/work`) nor
 *    run containers: they report what a real agent would.
 * 3. one-GPU leases until every GPU is held (6N), then 4N more that wait
 *    in the queue: 10N leases besides the instances' 2N.
 * 4. HOLD_S more seconds of heartbeats (the steady state).
 *
 * Figures are printed and written to bench/results/memory.md (or argv[1]),
 * one table per fleet size plus the curve; the goal (<= 200 MiB at 10,000
 * agents) is reported, never asserted. What follows "<!-- notes -->" in
 * that file (written by hand from heap profiles) is kept.
 *
 * Usage: bench_memory [results.md] [nodes[,nodes...]]    env: SUANLID, SUANLI_AGENT
 *   e.g. bench_memory bench/results/memory.md 1000,3000,10000 */
#include <dirent.h>
#include <sys/epoll.h>
#include <sys/resource.h>

#include "bench_lib.h"

#define CONNS 64           /* the tenant's connections */
#define REG_INFLIGHT 64    /* registrations in flight at once */
#define HEARTBEAT_S 5
#define HOLD_S 30
#define INST_PER_NODE 2
#define LEASES_PER_NODE 10
#define GPUS_PER_NODE 8
#define AGENT_BUF 4096     /* an agent's answers are small */
#define DISC_MAX 16384
#define REQ_MAX 32768
#define MAX_SIZES 8
#define NPOINTS 6

/* ---- memory and disk ---- */

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

/* ---- discoveries ---- */

/* `suanli-agent discover --simulate TYPE --json`, whitespace outside strings
 * dropped, into out (size n). */
static void read_discovery(const char *agent, const char *type, char *out, size_t n)
{
	char cmd[BL_PATH_MAX + 128];
	snprintf(cmd, sizeof(cmd), "'%s' discover --simulate %s --json", agent, type);
	FILE *p = popen(cmd, "r");
	if (!p)
		bl_die("cannot run %s", agent);
	size_t k = 0;
	int ch;
	bool in_str = false, esc = false;
	while ((ch = fgetc(p)) != EOF) {
		if (!in_str && (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t'))
			continue;
		if (in_str && !esc && ch == '"')
			in_str = false;
		else if (!in_str && ch == '"')
			in_str = true;
		esc = in_str && !esc && ch == '\\';
		if (k + 1 < n)
			out[k++] = (char)ch;
	}
	out[k] = 0;
	if (pclose(p) != 0 || k == 0 || out[0] != '{')
		bl_die("%s discover gave no JSON (set SUANLI_AGENT)", agent);
	if (k + 1 >= n)
		bl_die("the discovery is longer than %zu bytes", n);
}

/* The node's discovery: tmpl with each GPU's "uuid":"" and "bus_id":""
 * filled in (unique per node and GPU) and a driver version, into out. */
static size_t node_discovery(const char *tmpl, int node, char *out, size_t n)
{
	size_t k = 0;
	int uuid = 0, bus = 0;
	for (const char *p = tmpl; *p;) {
		int w = 0;
		if (!strncmp(p, "\"uuid\":\"\"", 9)) {
			w = snprintf(out + k, n - k, "\"uuid\":\"GPU-%08x-%04x-4%03x-8a1c-%012x\"",
				     (unsigned)node * 2654435761u, (unsigned)uuid, (unsigned)node & 0xfff,
				     (unsigned)(node * 8 + uuid));
			uuid++;
			p += 9;
		} else if (!strncmp(p, "\"bus_id\":\"\"", 11)) {
			w = snprintf(out + k, n - k, "\"bus_id\":\"00000000:%02X:00.0\"", 0x18 + bus * 0x10);
			bus++;
			p += 11;
		} else if (!strncmp(p, "\"driver\":\"\"", 11)) {
			w = snprintf(out + k, n - k, "\"driver\":\"550.54.15\"");
			p += 11;
		} else {
			if (k + 1 < n)
				out[k] = *p;
			w = 1;
			p++;
		}
		if (w < 0 || k + (size_t)w >= n)
			bl_die("a node's discovery is too long");
		k += (size_t)w;
	}
	out[k] = 0;
	return k;
}

/* ---- connections ---- */

struct inst_rep {
	char id[24];
	int epoch, port;
};

struct agent {
	int fd;
	char *buf;
	size_t len;
	bool busy, registered;
	int type;          /* index into bl_types */
	char name[16];
	char cred[128];
	double last_ms;    /* last heartbeat (or the registration) sent */
	struct inst_rep *inst;
	int ninst, capinst;
	int reported;      /* instances sent in the last answered heartbeat */
	int sending;       /* instances in the heartbeat in flight */
};

enum twork { TW_NONE, TW_INSTANCE, TW_CHECK, TW_LEASE };

struct tconn {
	struct bl_conn c;
	bool busy;
	enum twork what;
	long arg;
};

struct run {
	int nodes, port;
	pid_t pid;
	const char *tok;
	struct agent *ag;
	struct tconn tc[CONNS];
	int ep;
	char disc[BL_NTYPES][DISC_MAX];
	/* agents */
	int next_reg, inflight_reg, nreg, hb_cur;
	long hbs, late;
	/* the tenant's work */
	enum twork work;
	long todo, started, done;
	long active, pending, running, inst_created;
	char (*inst_ids)[24];
	long ninst_ids;
};

static char req[REQ_MAX];

/* The daemon of the run in progress, stopped should the tool die. */
static pid_t daemon_pid;

static void stop_daemon(void)
{
	if (daemon_pid > 0)
		kill(daemon_pid, SIGTERM);
}

static void send_all(int fd, const char *b, size_t n)
{
	size_t off = 0;
	while (off < n) {
		ssize_t w = send(fd, b + off, n - off, MSG_NOSIGNAL);
		if (w <= 0)
			bl_die("send: %s", w < 0 ? strerror(errno) : "closed");
		off += (size_t)w;
	}
}

/* Fleet node i's name and type, as bl_write_fleet makes them. */
static void node_names(struct run *r)
{
	uint64_t seed = 0x5eed5eedULL;
	int leaves = (r->nodes + BL_LEAF - 1) / BL_LEAF;
	for (int l = 0; l < leaves; l++) {
		int t = bl_below(&seed, BL_NTYPES);
		for (int k = 0; k < BL_LEAF && l * BL_LEAF + k < r->nodes; k++) {
			struct agent *a = &r->ag[l * BL_LEAF + k];
			snprintf(a->name, sizeof(a->name), "n%03d-%02d", l + 1, k + 1);
			a->type = t;
		}
	}
}

static int node_index(const char *name)
{
	int l = 0, k = 0;
	if (sscanf(name, "n%d-%d", &l, &k) != 2 || l < 1 || k < 1 || k > BL_LEAF)
		return -1;
	return (l - 1) * BL_LEAF + k - 1;
}

/* The join token the agents register with. */
static char join_tok[256];

static void agent_send_register(struct run *r, int i)
{
	struct agent *a = &r->ag[i];
	static char disc[DISC_MAX + 1024], body[DISC_MAX + 2048];
	node_discovery(r->disc[a->type], i, disc, sizeof(disc));
	int k = snprintf(body, sizeof(body),
			 "{\"node\":\"%s\",\"addr\":\"10.%d.%d.%d\",\"agent_version\":\"bench\","
			 "\"boot_id\":\"boot-%s\",\"discovery\":%s}",
			 a->name, 10 + i / 65536, (i / 256) % 256, i % 256, a->name, disc);
	if (k < 0 || (size_t)k >= sizeof(body))
		bl_die("register body too long");
	size_t n = bl_format(req, sizeof(req), "POST", "/v1/agent/register", join_tok, body, NULL);
	if ((a->fd = bl_connect(r->port)) < 0)
		bl_die("agent %s: connect: %s", a->name, strerror(errno));
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
	if (epoll_ctl(r->ep, EPOLL_CTL_ADD, a->fd, &ev))
		bl_die("epoll_ctl: %s", strerror(errno));
	if (!(a->buf = malloc(AGENT_BUF)))
		bl_die("out of memory");
	send_all(a->fd, req, n);
	a->busy = true;
	a->last_ms = bl_now_ms();
	r->inflight_reg++;
}

/* One heartbeat as suanli-agent sends it (src/agent/health.c): every GPU's
 * figures, and a report per instance the node runs. */
static void agent_send_heartbeat(struct run *r, int i)
{
	struct agent *a = &r->ag[i];
	static char body[REQ_MAX - 1024];
	size_t k = 0;
	unsigned tick = (unsigned)r->hbs;
	k += (size_t)snprintf(body + k, sizeof(body) - k, "{\"boot_id\":\"boot-%s\",\"work\":[],\"gpus\":[",
			      a->name);
	for (int g = 0; g < GPUS_PER_NODE; g++) {
		unsigned w = (tick + (unsigned)g * 3) % 5;
		k += (size_t)snprintf(body + k, sizeof(body) - k,
				      "%s{\"index\":%d,\"xid\":[],\"healthy\":true,\"temp_c\":%u,\"power_w\":%u,"
				      "\"ecc_sbe\":0,\"ecc_dbe\":0,\"nvlink_up\":18,\"util_pct\":%u}",
				      g ? "," : "", g, 38 + ((unsigned)g * 3) % 7 + w,
				      70 + ((unsigned)g * 11) % 23 + 2 * w, g < a->ninst ? 97u : 0u);
	}
	k += (size_t)snprintf(body + k, sizeof(body) - k, "],\"instances\":[");
	for (int j = 0; j < a->ninst && k < sizeof(body) - 512; j++)
		k += (size_t)snprintf(body + k, sizeof(body) - k,
				      "%s{\"instance\":\"%s\",\"node_rank\":0,\"epoch\":%d,\"state\":\"running\","
				      "\"ssh_port\":%d,\"ports\":[{\"port\":8888,\"host_port\":%d}],"
				      "\"host_keys\":[{\"type\":\"ssh-ed25519\",\"fingerprint\":"
				      "\"SHA256:%08xbenchhostkey%08xAAAAAAAAAAAAAAAAAAAA\"}]}",
				      j ? "," : "", a->inst[j].id, a->inst[j].epoch, a->inst[j].port,
				      a->inst[j].port + 1, (unsigned)i, (unsigned)j);
	if (k >= sizeof(body) - 4)
		bl_die("heartbeat body too long");
	k += (size_t)snprintf(body + k, sizeof(body) - k, "]}");
	size_t n = bl_format(req, sizeof(req), "POST", "/v1/agent/heartbeat", a->cred, body, NULL);
	send_all(a->fd, req, n);
	a->busy = true;
	a->sending = a->ninst;
	a->last_ms = bl_now_ms();
	r->hbs++;
}

/* Heartbeats that are due, in the agents' order (their registration
 * order, so the due times come round in that order too). */
static double agents_pump(struct run *r)
{
	double now = bl_now_ms(), next = now + 50;
	for (int guard = 0; guard < r->nodes && r->nreg > 0; guard++) {
		struct agent *a = &r->ag[r->hb_cur];
		if (!a->registered) {
			r->hb_cur = (r->hb_cur + 1) % r->nodes;
			continue;
		}
		double due = a->last_ms + HEARTBEAT_S * 1000.0;
		if (due > now) {
			next = due < next ? due : next;
			break;
		}
		if (a->busy) {
			if (now - due > HEARTBEAT_S * 1000.0) {
				r->late++;
				a->last_ms = now;
			}
		} else {
			agent_send_heartbeat(r, r->hb_cur);
		}
		r->hb_cur = (r->hb_cur + 1) % r->nodes;
	}
	while (r->next_reg < r->nodes && r->inflight_reg < REG_INFLIGHT)
		agent_send_register(r, r->next_reg++);
	return next;
}

/* Reads what agent i's connection has; takes its answer once complete. */
static void agent_answer(struct run *r, int i)
{
	struct agent *a = &r->ag[i];
	ssize_t got = read(a->fd, a->buf + a->len, AGENT_BUF - 1 - a->len);
	if (got <= 0)
		bl_die("the daemon closed agent %s's connection (%s)", a->name,
		       got < 0 ? strerror(errno) : "EOF");
	a->len += (size_t)got;
	int st;
	size_t bo, bn;
	long used = bl_parse(a->buf, a->len, &st, &bo, &bn);
	if (used < 0)
		bl_die("malformed answer to agent %s", a->name);
	if (!used) {
		if (a->len >= AGENT_BUF - 1)
			bl_die("answer to agent %s too long", a->name);
		return;
	}
	a->buf[bo + bn] = 0;
	if (!a->registered) {
		if (st != 200 || !bl_json_str(a->buf + bo, "credential", a->cred, sizeof(a->cred)))
			bl_die("register of %s answered %d: %.300s", a->name, st, a->buf + bo);
		char state[32] = "";
		if (!bl_json_str(a->buf + bo, "state", state, sizeof(state)) || strcmp(state, "ready"))
			bl_die("%s registered but is '%s': %.300s", a->name, state, a->buf + bo);
		a->registered = true;
		r->nreg++;
		r->inflight_reg--;
	} else {
		if (st != 200)
			bl_die("heartbeat of %s answered %d: %.300s", a->name, st, a->buf + bo);
		a->reported = a->sending;
	}
	memmove(a->buf, a->buf + used, a->len - (size_t)used);
	a->len -= (size_t)used;
	a->busy = false;
}

/* ---- the tenant ---- */

static void tenant_send(struct run *r, struct tconn *t)
{
	size_t n;
	char path[96];
	if (r->work == TW_INSTANCE) {
		n = bl_format(req, sizeof(req), "POST", "/v1/instances", r->tok,
			      "{\"gpus\":1,\"ssh_key\":\"laptop\",\"volume_gib\":20,\"ports\":[8888]}", NULL);
	} else if (r->work == TW_CHECK) {
		snprintf(path, sizeof(path), "/v1/instances/%s", r->inst_ids[r->started]);
		n = bl_format(req, sizeof(req), "GET", path, r->tok, NULL, NULL);
	} else {
		n = bl_format(req, sizeof(req), "POST", "/v1/leases", r->tok,
			      "{\"gpus\":1,\"duration_s\":86400}", NULL);
	}
	t->what = r->work;
	t->arg = r->started++;
	if (t->c.fd < 0) { /* closed by the daemon while idle (its timeout) */
		if ((t->c.fd = bl_connect(r->port)) < 0)
			bl_die("connect: %s", strerror(errno));
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)(r->nodes + (t - r->tc))};
		epoll_ctl(r->ep, EPOLL_CTL_ADD, t->c.fd, &ev);
	}
	send_all(t->c.fd, req, n);
	t->busy = true;
}

static void tenant_answer(struct run *r, struct tconn *t)
{
	ssize_t got = bl_fill(&t->c);
	if (got <= 0 && !t->busy) { /* an idle connection timed out: fine */
		epoll_ctl(r->ep, EPOLL_CTL_DEL, t->c.fd, NULL);
		bl_conn_reset(&t->c);
		return;
	}
	if (got <= 0)
		bl_die("the daemon closed a tenant connection");
	t->c.len += (size_t)got;
	for (;;) {
		int st;
		size_t bo, bn;
		long used = bl_parse(t->c.buf, t->c.len, &st, &bo, &bn);
		if (used < 0)
			bl_die("malformed answer");
		if (!used)
			return;
		char *b = t->c.buf + bo, state[32] = "", id[24] = "", node[32] = "";
		b[bn] = 0;
		if (t->what == TW_INSTANCE) {
			const char *nodes = strstr(b, "\"nodes\":[\"");
			if (st != 201 || !bl_json_str(b, "id", id, sizeof(id)) || !nodes)
				bl_die("instance create answered %d: %.300s", st, b);
			snprintf(node, sizeof(node), "%.*s", (int)strcspn(nodes + 10, "\""), nodes + 10);
			int ni = node_index(node);
			const char *ep = strstr(b, "\"epoch\":");
			if (ni < 0 || ni >= r->nodes)
				bl_die("instance %s on unknown node '%s'", id, node);
			struct agent *a = &r->ag[ni];
			if (sl_grow(&a->inst, &a->capinst, a->ninst + 1, 64))
				bl_die("more than 64 instances on %s", a->name);
			struct inst_rep *ir = &a->inst[a->ninst++];
			snprintf(ir->id, sizeof(ir->id), "%s", id);
			ir->epoch = ep ? atoi(ep + 8) : 1;
			ir->port = 30022 + 2 * (a->ninst - 1);
			snprintf(r->inst_ids[r->ninst_ids++], sizeof(r->inst_ids[0]), "%s", id);
			r->inst_created++;
		} else if (t->what == TW_CHECK) {
			if (st != 200 || !bl_json_str(b, "state", state, sizeof(state)))
				bl_die("instance show answered %d: %.300s", st, b);
			if (!strcmp(state, "running"))
				r->running++;
		} else {
			if (st != 201 || !bl_json_str(b, "state", state, sizeof(state)))
				bl_die("lease create answered %d: %.300s", st, b);
			if (!strcmp(state, "active"))
				r->active++;
			else
				r->pending++;
		}
		memmove(t->c.buf, t->c.buf + used, t->c.len - (size_t)used);
		t->c.len -= (size_t)used;
		t->busy = false;
		r->done++;
		return;
	}
}

/* Runs the loop: heartbeats, registrations and the tenant's work, until
 * cond(r) holds. */
static void drive(struct run *r, bool (*cond)(struct run *))
{
	struct epoll_event evs[256];
	double quiet = bl_now_ms();
	while (!cond(r)) {
		double next = agents_pump(r), now = bl_now_ms();
		for (int k = 0; k < CONNS && r->work != TW_NONE; k++)
			if (!r->tc[k].busy && r->started < r->todo)
				tenant_send(r, &r->tc[k]);
		int ms = next > now ? (int)(next - now) + 1 : 0;
		int n = epoll_wait(r->ep, evs, 256, ms > 50 ? 50 : ms);
		if (n < 0 && errno != EINTR)
			bl_die("epoll_wait: %s", strerror(errno));
		if (n > 0)
			quiet = bl_now_ms();
		else if (bl_now_ms() - quiet > 120000)
			bl_die("no answer from the daemon for 120 s");
		for (int k = 0; k < n; k++) {
			uint32_t u = evs[k].data.u32;
			if (u < (uint32_t)r->nodes)
				agent_answer(r, (int)u);
			else
				tenant_answer(r, &r->tc[u - (uint32_t)r->nodes]);
		}
	}
}

static bool all_registered(struct run *r)
{
	return r->nreg == r->nodes;
}

static bool work_done(struct run *r)
{
	return r->done >= r->todo;
}

/* Every agent's answered heartbeat carried all its instances. */
static bool all_reported(struct run *r)
{
	for (int i = 0; i < r->nodes; i++)
		if (r->ag[i].reported < r->ag[i].ninst)
			return false;
	return true;
}

static double hold_until;

static bool held(struct run *r)
{
	(void)r;
	return bl_now_ms() >= hold_until;
}

static void tenant_work(struct run *r, enum twork w, long count)
{
	r->work = w;
	r->todo = count;
	r->started = r->done = 0;
	drive(r, work_done);
	r->work = TW_NONE;
}

/* ---- one run ---- */

struct point {
	const char *what;
	long rss_kib, hwm_kib, store_kib;
	double secs;
	int agents;
	long instances, running, active, pending, hbs;
};

struct size_result {
	int nodes;
	struct point pt[NPOINTS];
	int npt;
	long late;
	double cpu_s;
};

static void take(struct run *r, struct point *p, const char *what, double t0, const char *data)
{
	p->what = what;
	p->secs = (bl_now_ms() - t0) / 1000;
	proc_mem(r->pid, &p->rss_kib, &p->hwm_kib);
	p->store_kib = dir_kib(data);
	p->agents = r->nreg;
	p->instances = r->inst_created;
	p->running = r->running;
	p->active = r->active;
	p->pending = r->pending;
	p->hbs = r->hbs;
	fprintf(stderr, "bench_memory: %d nodes: %s: VmRSS %.1f MiB, VmHWM %.1f MiB (%.1f s)\n",
		r->nodes, what, (double)p->rss_kib / 1024, (double)p->hwm_kib / 1024, p->secs);
}

static void setup_call(struct bl_conn *c, int port, const char *tok, const char *method,
		       const char *path, const char *body, int want, char *key, char *out, size_t n)
{
	char *ans = NULL;
	int st = bl_call(c, port, method, path, tok, body, NULL, &ans);
	if (st != want || (key && !bl_json_str(ans, key, out, n)))
		bl_die("%s %s answered %d: %.300s", method, path, st, ans ? ans : "");
	free(ans);
}

static void run_size(int nodes, const char *agent_bin, struct size_result *res)
{
	static struct run r;
	char tok[256], maxconn[32];
	memset(&r, 0, sizeof(r));
	r.nodes = nodes;
	res->nodes = nodes;
	for (int t = 0; t < BL_NTYPES; t++)
		read_discovery(agent_bin, bl_types[t].type, r.disc[t], sizeof(r.disc[t]));
	struct bl_daemon dm;
	bl_daemon_prepare(&dm, "memory", nodes);
	r.port = dm.port;
	snprintf(maxconn, sizeof(maxconn), "%d", nodes + CONNS + 64);
	char *args[] = {dm.suanlid, "serve",     "--data",     dm.data,     "--listen",
			dm.portarg, "--fleet",   dm.fleet,     "--max-connections", maxconn,
			"--log-level", "warn",  NULL};
	double t0 = bl_now_ms();
	r.pid = daemon_pid = bl_spawn(args, dm.log);
	if (!bl_wait_healthy(dm.port, r.pid, 120000))
		bl_die("suanlid did not become healthy (log: %s)", dm.log);
	double cpu0 = bl_proc_cpu_ms(r.pid);
	take(&r, &res->pt[0], "started, fleet loaded", t0, dm.data);

	struct bl_conn c = {.fd = -1};
	setup_call(&c, dm.port, dm.admin, "POST", "/v1/agent-tokens", "{}", 201, "token", join_tok,
		   sizeof(join_tok));
	setup_call(&c, dm.port, dm.admin, "POST", "/v1/tenants", "{\"name\":\"mem\"}", 201, NULL, NULL, 0);
	setup_call(&c, dm.port, dm.admin, "POST", "/v1/tokens",
		   "{\"role\":\"tenant\",\"tenant\":\"mem\",\"user\":\"mem\"}", 201, "token", tok,
		   sizeof(tok));
	setup_call(&c, dm.port, dm.admin, "POST", "/v1/tenants/mem/topups", "{\"amount\":100000000000}",
		   201, NULL, NULL, 0);
	setup_call(&c, dm.port, dm.admin, "POST", "/v1/images",
		   "{\"name\":\"demo\",\"ref\":\"localhost/suanli/demo:1\",\"default\":true,"
		   "\"cuda\":\"12.4\",\"description\":\"sshd, Python 3\"}",
		   201, NULL, NULL, 0);
	setup_call(&c, dm.port, tok, "POST", "/v1/ssh-keys",
		   "{\"name\":\"laptop\",\"key\":\"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPuVoVj/Oea8fsfy63Sh8xpCgjsFnHBm3kwlnaiW2DhV bench@memory\"}",
		   201, NULL, NULL, 0);
	bl_conn_reset(&c);
	free(c.buf);
	r.tok = tok;

	if ((r.ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
		bl_die("epoll_create1: %s", strerror(errno));
	r.ag = calloc((size_t)nodes, sizeof(*r.ag));
	r.inst_ids = calloc((size_t)nodes * INST_PER_NODE, sizeof(*r.inst_ids));
	if (!r.ag || !r.inst_ids)
		bl_die("out of memory");
	node_names(&r);
	for (int k = 0; k < CONNS; k++) {
		if ((r.tc[k].c.fd = bl_connect(dm.port)) < 0)
			bl_die("connect: %s", strerror(errno));
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)(nodes + k)};
		epoll_ctl(r.ep, EPOLL_CTL_ADD, r.tc[k].c.fd, &ev);
	}
	int np = 1;
	fprintf(stderr, "bench_memory: %d agents register...\n", nodes);
	drive(&r, all_registered);
	take(&r, &res->pt[np++], "agents registered, heartbeating", t0, dm.data);

	fprintf(stderr, "bench_memory: %d instances...\n", nodes * INST_PER_NODE);
	tenant_work(&r, TW_INSTANCE, (long)nodes * INST_PER_NODE);
	drive(&r, all_reported);
	tenant_work(&r, TW_CHECK, r.ninst_ids);
	take(&r, &res->pt[np++], "+ instances, reported running", t0, dm.data);

	long free_gpus = (long)nodes * (GPUS_PER_NODE - INST_PER_NODE);
	fprintf(stderr, "bench_memory: %ld leases...\n", free_gpus);
	tenant_work(&r, TW_LEASE, free_gpus);
	take(&r, &res->pt[np++], "+ leases: every GPU held", t0, dm.data);
	tenant_work(&r, TW_LEASE, (long)nodes * LEASES_PER_NODE - free_gpus);
	take(&r, &res->pt[np++], "+ leases that queue", t0, dm.data);

	hold_until = bl_now_ms() + HOLD_S * 1000.0;
	drive(&r, held);
	take(&r, &res->pt[np++], "after 30 s more of heartbeats", t0, dm.data);
	res->npt = np;
	res->late = r.late;
	res->cpu_s = (bl_proc_cpu_ms(r.pid) - cpu0) / 1000;

	kill(r.pid, SIGTERM);
	int st;
	waitpid(r.pid, &st, 0);
	daemon_pid = 0;
	for (int i = 0; i < nodes; i++) {
		if (r.ag[i].fd > 0)
			close(r.ag[i].fd);
		free(r.ag[i].buf);
		free(r.ag[i].inst);
	}
	for (int k = 0; k < CONNS; k++) {
		bl_conn_reset(&r.tc[k].c);
		free(r.tc[k].c.buf);
	}
	close(r.ep);
	free(r.ag);
	free(r.inst_ids);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "bench_memory: suanlid stopped with status %d (log: %s)\n", st, dm.log);
	else
		bl_rmrf(dm.dir);
}

/* ---- the results file ---- */

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

static double mib(long kib)
{
	return (double)kib / 1024;
}

static void report(FILE *o, int argc, char **argv, const struct size_result *res, int nres)
{
	fprintf(o, "# Controller memory benchmark (bench/memory.c)\n\n");
	bl_machine(o, argc, argv);
	fprintf(o, "- daemon: Release suanlid `serve` (not --simulate), pinned to core 0; the tool on "
		   "core 1; a generated fleet of N 8-GPU nodes (leaves of %d, fixed seed)\n"
		   "- agents: one per node, each on its own keep-alive TCP connection, registered "
		   "with the simulated discovery of its type (unique GPU UUIDs and bus ids, a "
		   "driver), heartbeating every %d s with per-GPU figures and its instances' reports "
		   "for the whole run\n"
		   "- instances: %dN one-GPU instances (default image, an SSH key, a 20 GiB disk, a "
		   "port) by one tenant over %d connections, reported running by their nodes' agents "
		   "and read back; the agents do not fetch work or run containers\n"
		   "- leases: one-GPU `{\"gpus\":1,\"duration_s\":86400}` until every GPU is held, then "
		   "more that queue: %dN leases besides the instances' %dN\n\n",
		BL_LEAF, HEARTBEAT_S, INST_PER_NODE, CONNS, LEASES_PER_NODE, INST_PER_NODE);
	for (int s = 0; s < nres; s++) {
		const struct size_result *r = &res[s];
		fprintf(o, "## %d nodes, %d agents\n\n", r->nodes, r->nodes);
		fprintf(o, "| point | agents | instances (running) | active leases | pending | VmRSS MiB "
			   "| peak VmHWM MiB | store MiB | s from start |\n"
			   "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
		for (int i = 0; i < r->npt; i++) {
			const struct point *p = &r->pt[i];
			fprintf(o, "| %s | %d | %ld (%ld) | %ld | %ld | %.1f | %.1f | %.1f | %.1f |\n",
				p->what, p->agents, p->instances, p->running, p->active, p->pending,
				mib(p->rss_kib), mib(p->hwm_kib), mib(p->store_kib), p->secs);
		}
		const struct point *l = &r->pt[r->npt - 1];
		fprintf(o, "\n- heartbeats sent: %ld (%ld due while the previous one was unanswered); "
			   "controller CPU %.1f s over the run\n\n",
			l->hbs, r->late, r->cpu_s);
	}
	if (nres > 1) {
		fprintf(o, "## Against fleet size\n\n| nodes = agents | instances | leases | VmRSS MiB "
			   "with agents only | VmRSS MiB at the end | peak VmHWM MiB | per node KiB "
			   "(end - start) / N |\n|---:|---:|---:|---:|---:|---:|---:|\n");
		for (int s = 0; s < nres; s++) {
			const struct size_result *r = &res[s];
			const struct point *l = &r->pt[r->npt - 1];
			fprintf(o, "| %d | %ld | %ld | %.1f | %.1f | %.1f | %.1f |\n", r->nodes, l->instances,
				l->active + l->pending, mib(r->pt[1].rss_kib), mib(l->rss_kib),
				mib(l->hwm_kib), (double)(l->rss_kib - r->pt[0].rss_kib) / r->nodes);
		}
		fprintf(o, "\n");
	}
	fprintf(o, "Goal (issue 17, not asserted): VmRSS <= 200 MiB with 10,000 agents, 100,000 leases "
		   "and 20,000 instances.\n");
}

int main(int argc, char **argv)
{
	const char *out = argc > 1 ? argv[1] : "bench/results/memory.md";
	int sizes[MAX_SIZES], nsizes = 0;
	const char *spec = argc > 2 ? argv[2] : "10000";
	for (const char *p = spec; *p && nsizes < MAX_SIZES; p += strcspn(p, ","), p += *p == ',') {
		if ((sizes[nsizes++] = atoi(p)) < BL_LEAF)
			bl_die("usage: bench_memory [results.md] [nodes>=%d[,nodes...]]", BL_LEAF);
	}
	char agent[BL_PATH_MAX + 32];
	if (getenv("SUANLI_AGENT"))
		snprintf(agent, sizeof(agent), "%s", getenv("SUANLI_AGENT"));
	else {
		ssize_t n = readlink("/proc/self/exe", agent, sizeof(agent) - 32);
		if (n <= 0)
			bl_die("cannot find myself; set SUANLI_AGENT");
		agent[n] = 0;
		snprintf(strrchr(agent, '/') + 1, 16, "suanli-agent");
	}
	struct rlimit rl;
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		if (rl.rlim_cur < (rlim_t)sizes[0] + 256)
			fprintf(stderr, "bench_memory: only %llu file descriptors (ulimit -n)\n",
				(unsigned long long)rl.rlim_cur);
	}
	bl_pin(1);
	atexit(stop_daemon);
	static struct size_result res[MAX_SIZES];
	for (int s = 0; s < nsizes; s++)
		run_size(sizes[s], agent, &res[s]);
	report(stdout, argc, argv, res, nsizes);
	char *notes = old_notes(out);
	FILE *o = fopen(out, "w");
	if (!o)
		bl_die("cannot write %s", out);
	report(o, argc, argv, res, nsizes);
	if (notes)
		fprintf(o, "\n%s", notes);
	fclose(o);
	free(notes);
	return 0;
}

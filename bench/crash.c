/* bench/crash.c - crash safety at length: CYCLES SIGKILLs of the controller
 * under concurrent lease traffic with idempotency keys.
 *
 * The long version of tests/e2e/test_ctl_crash.sh, in C so that 1,000
 * cycles fit in minutes on two cores. A real suanlid (next to this program
 * or $SUANLID) serves a generated 1,000-node fleet, pinned to core 0. Each
 * cycle: start it, time start -> /healthz answers (recovery), then
 *  1. retry every create and release the last cycle left unanswered, with
 *     the same Idempotency-Key (creates) - the retry must succeed, and a
 *     create that had committed must come back as the same lease;
 *  2. check the running state against what was acknowledged: every
 *     acknowledged create is running once (lost otherwise), every
 *     acknowledged release is not running, no running lease is unknown to
 *     the client (a committed create whose retry made a second lease: a
 *     duplicate), every running lease holds exactly its GPUs, no GPU is in
 *     two leases, and each node's used GPUs match the leases on it; one
 *     acknowledged create of the last cycle is retried and must return its
 *     first answer byte for byte;
 *  3. WORKERS keep-alive connections create (unique key each) and release
 *     leases for a random 15..100 ms (fixed seed), then SIGKILL. An answer
 *     fully received counts as acknowledged, even if read after the kill.
 * After the last cycle every lease ever acknowledged is looked up in the
 * full lease list (present exactly once, released iff its release was
 * acknowledged). Figures go to stdout and bench/results/crash.md (or
 * argv[1]); violations are counted and reported, never hidden, and the
 * exit status is 1 when there is any (a correctness result, not a timing).
 *
 * Usage: bench_crash [results.md] [cycles]     env: SUANLID */
#include <sys/epoll.h>

#include <jansson.h>

#include "bench_lib.h"

#define NODES 1000
#define CYCLES_DEFAULT 1000
#define WORKERS 6
#define HOLD 3            /* leases a worker holds before it releases one */
#define HELD_MAX 64       /* room for retried creates handed to it as well */
/* Pacing. The daemon's start reads every stored lease and idempotency key
 * (see bench/results/crash.md), so recovery grows with history; the traffic
 * is paced (think time between a worker's requests) to keep 1,000 cycles
 * within minutes while kills still land among concurrent requests. */
#define TRAFFIC_MIN_MS 10
#define TRAFFIC_SPAN_MS 40
#define THINK_MIN_MS 6
#define THINK_SPAN_MS 10
#define RECOVERY_LIMIT_MS 30000.0
#define KEY_MAX 64
#define ID_MAX 64

/* What the client knows of lease number n ("ls-%06d"). */
enum known { K_UNKNOWN, K_LIVE, K_RELEASED };

struct work {
	struct bl_conn c;
	int op; /* 0 none, 1 create, 2 release */
	double next_ms; /* when it sends its next request (think time) */
	char key[KEY_MAX], body[96], lease[ID_MAX];
	char held[HELD_MAX][ID_MAX];
	int nheld, idx;
	long i;
};

struct pend_create {
	char key[KEY_MAX], body[96];
};

static struct {
	unsigned char *known; /* by lease number */
	size_t nknown;
	struct pend_create *pc; /* unanswered creates to retry */
	size_t npc, cappc;
	char (*pr)[ID_MAX];     /* unanswered releases to retry */
	size_t npr, cappr;
	long acked_creates, acked_releases, retried_creates, retried_releases, replays_same;
	long lost, duplicated, shared_gpus, partial, node_mismatch, replay_mismatch, refused;
	long retry_failed;
	struct bl_samples recovery, traffic_ms, rec_first, rec_last;
	long max_id, max_id_first; /* highest lease number seen; at cycle 100 */
	char last_key[KEY_MAX], last_body_req[96], *last_answer; /* for the replay check */
} g;

static long lease_num(const char *id)
{
	if (strncmp(id, "ls-", 3))
		bl_die("unexpected lease id %s (the checks assume ls-NUMBER)", id);
	return atol(id + 3);
}

static enum known known_of(const char *id)
{
	size_t n = (size_t)lease_num(id);
	return n < g.nknown ? (enum known)g.known[n] : K_UNKNOWN;
}

static void set_known(const char *id, enum known k)
{
	size_t n = (size_t)lease_num(id);
	if (n >= g.nknown) {
		size_t old = g.nknown;
		if (sl_grow(&g.known, &g.nknown, n + 1, BL_MAX_SAMPLES))
			bl_die("out of memory");
		memset(g.known + old, K_UNKNOWN, g.nknown - old);
	}
	g.known[n] = (unsigned char)k;
	if ((long)n > g.max_id)
		g.max_id = (long)n;
}

static void violation(int cycle, const char *what, const char *id)
{
	fprintf(stderr, "bench_crash: cycle %d: %s %s\n", cycle, what, id);
}

static void push_held(struct work *w, const char *id)
{
	if (w->nheld == HELD_MAX)
		bl_die("a worker holds %d leases; the releases do not keep up", HELD_MAX);
	snprintf(w->held[w->nheld++], ID_MAX, "%s", id);
}

/* ---- the traffic of one cycle ---- */

static void send_next(struct work *w, int cycle, const char *tok, uint64_t *seed)
{
	char req[1024], path[128];
	size_t n;
	w->i++;
	if (w->nheld >= HOLD || (w->nheld > 0 && bl_below(seed, 3) == 0)) {
		w->op = 2;
		snprintf(w->lease, sizeof(w->lease), "%s", w->held[0]);
		memmove(w->held[0], w->held[1], (size_t)(w->nheld - 1) * ID_MAX);
		w->nheld--;
		snprintf(path, sizeof(path), "/v1/leases/%s/release", w->lease);
		n = bl_format(req, sizeof(req), "POST", path, tok, NULL, NULL);
	} else {
		static const int sizes[] = {1, 2, 4, 8};
		w->op = 1;
		snprintf(w->key, sizeof(w->key), "c%d-w%d-%ld", cycle, w->idx, w->i);
		snprintf(w->body, sizeof(w->body), "{\"gpus\":%d,\"duration_s\":86400}",
			 sizes[bl_below(seed, 4)]);
		n = bl_format(req, sizeof(req), "POST", "/v1/leases", tok, w->body, w->key);
	}
	if (send(w->c.fd, req, n, MSG_NOSIGNAL) != (ssize_t)n)
		w->op = -w->op; /* the daemon is gone: unanswered */
}

/* An answer arrived for w's request. */
static void answered(struct work *w, int cycle, int st, const char *body)
{
	char id[ID_MAX];
	if (w->op == 1) {
		if (st != 201 || !bl_json_str(body, "id", id, sizeof(id))) {
			g.refused++;
			fprintf(stderr, "bench_crash: cycle %d: create answered %d: %.200s\n", cycle,
				st, body);
		} else {
			if (known_of(id) != K_UNKNOWN) {
				g.duplicated++;
				violation(cycle, "a new create answered an already known lease", id);
			}
			set_known(id, K_LIVE);
			push_held(w, id);
			g.acked_creates++;
			snprintf(g.last_key, sizeof(g.last_key), "%s", w->key);
			snprintf(g.last_body_req, sizeof(g.last_body_req), "%s", w->body);
			free(g.last_answer);
			g.last_answer = strdup(body);
		}
	} else {
		if (st != 200) {
			g.refused++;
			fprintf(stderr, "bench_crash: cycle %d: release of %s answered %d: %.200s\n",
				cycle, w->lease, st, body);
		} else {
			set_known(w->lease, K_RELEASED);
			g.acked_releases++;
		}
	}
	w->op = 0;
}

/* Parses every complete answer in w's buffer. */
static void drain(struct work *w, int cycle)
{
	int st;
	size_t bo, bn;
	long used;
	while (w->op > 0 && (used = bl_parse(w->c.buf, w->c.len, &st, &bo, &bn)) > 0) {
		char save = w->c.buf[bo + bn];
		w->c.buf[bo + bn] = 0;
		answered(w, cycle, st, w->c.buf + bo);
		w->c.buf[bo + bn] = save;
		memmove(w->c.buf, w->c.buf + used, w->c.len - (size_t)used);
		w->c.len -= (size_t)used;
	}
}

static void unanswered(struct work *w)
{
	int op = w->op < 0 ? -w->op : w->op;
	if (op == 1) {
		if (sl_grow(&g.pc, &g.cappc, g.npc + 1, BL_MAX_SAMPLES))
			bl_die("out of memory");
		snprintf(g.pc[g.npc].key, KEY_MAX, "%s", w->key);
		snprintf(g.pc[g.npc].body, sizeof(g.pc[0].body), "%s", w->body);
		g.npc++;
	} else if (op == 2) {
		if (sl_grow(&g.pr, &g.cappr, g.npr + 1, BL_MAX_SAMPLES))
			bl_die("out of memory");
		snprintf(g.pr[g.npr++], ID_MAX, "%s", w->lease);
	}
	w->op = 0;
}

static void traffic(struct work *ws, int port, pid_t pid, int cycle, const char *tok,
		    uint64_t *seed)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	double t0 = bl_now_ms(), until = t0 + TRAFFIC_MIN_MS + bl_below(seed, TRAFFIC_SPAN_MS);
	for (int i = 0; i < WORKERS; i++) {
		struct work *w = &ws[i];
		if ((w->c.fd = bl_connect(port)) < 0)
			bl_die("cycle %d: cannot connect", cycle);
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = w};
		epoll_ctl(ep, EPOLL_CTL_ADD, w->c.fd, &ev);
		w->next_ms = t0 + bl_below(seed, THINK_MIN_MS + THINK_SPAN_MS);
	}
	struct epoll_event evs[WORKERS];
	double now;
	while ((now = bl_now_ms()) < until) {
		double wake = until;
		for (int i = 0; i < WORKERS; i++) {
			if (ws[i].op == 0 && ws[i].next_ms <= now)
				send_next(&ws[i], cycle, tok, seed);
			if (ws[i].op == 0 && ws[i].next_ms < wake)
				wake = ws[i].next_ms;
		}
		int n = epoll_wait(ep, evs, WORKERS, (int)(wake - now) + 1);
		for (int i = 0; i < n; i++) {
			struct work *w = evs[i].data.ptr;
			ssize_t r = bl_fill(&w->c);
			if (r <= 0)
				continue;
			w->c.len += (size_t)r;
			drain(w, cycle);
			if (w->op == 0)
				w->next_ms = bl_now_ms() + THINK_MIN_MS + bl_below(seed, THINK_SPAN_MS);
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	bl_add(&g.traffic_ms, bl_now_ms() - t0);
	/* What reached our sockets before the kill was sent after its commit. */
	for (int i = 0; i < WORKERS; i++) {
		struct work *w = &ws[i];
		ssize_t r;
		while (w->op > 0 && (r = bl_fill(&w->c)) > 0) {
			w->c.len += (size_t)r;
			drain(w, cycle);
		}
		drain(w, cycle);
		unanswered(w);
		bl_conn_reset(&w->c);
	}
	close(ep);
}

/* ---- checks after a restart ---- */

static json_t *get_json(struct bl_conn *c, int port, const char *tok, const char *path)
{
	char *body = NULL;
	int st = bl_call(c, port, "GET", path, tok, NULL, NULL, &body);
	json_error_t je;
	json_t *j = st == 200 ? json_loads(body, 0, &je) : NULL;
	if (!j)
		bl_die("GET %s answered %d: %.200s", path, st, body ? body : "");
	free(body);
	return j;
}

static void retry_unanswered(struct bl_conn *c, int port, const char *tok, int cycle,
			     struct work *ws)
{
	for (size_t i = 0; i < g.npc; i++) {
		char *body = NULL, id[ID_MAX];
		int st = bl_call(c, port, "POST", "/v1/leases", tok, g.pc[i].body, g.pc[i].key, &body);
		if (st != 201 || !bl_json_str(body, "id", id, sizeof(id))) {
			g.retry_failed++;
			fprintf(stderr, "bench_crash: cycle %d: retried create %s answered %d: %.200s\n",
				cycle, g.pc[i].key, st, body ? body : "");
		} else {
			set_known(id, K_LIVE);
			/* Hand it to a worker so that it is released in time. */
			push_held(&ws[i % WORKERS], id);
			g.retried_creates++;
		}
		free(body);
	}
	g.npc = 0;
	for (size_t i = 0; i < g.npr; i++) {
		char path[128];
		snprintf(path, sizeof(path), "/v1/leases/%s/release", g.pr[i]);
		int st = bl_call(c, port, "POST", path, tok, NULL, NULL, NULL);
		if (st != 200) {
			g.retry_failed++;
			fprintf(stderr, "bench_crash: cycle %d: retried release of %s answered %d\n",
				cycle, g.pr[i], st);
		} else {
			set_known(g.pr[i], K_RELEASED);
			g.retried_releases++;
		}
	}
	g.npr = 0;
}

/* The last cycle's last acknowledged create, retried: its first answer. */
static void check_replay(struct bl_conn *c, int port, const char *tok, int cycle)
{
	if (!g.last_answer)
		return;
	char *body = NULL;
	int st = bl_call(c, port, "POST", "/v1/leases", tok, g.last_body_req, g.last_key, &body);
	if (st != 201 || !body || strcmp(body, g.last_answer)) {
		g.replay_mismatch++;
		violation(cycle, "an acknowledged create's retry answered differently:", g.last_key);
	} else {
		g.replays_same++;
	}
	free(body);
	free(g.last_answer);
	g.last_answer = NULL;
}

/* Running leases and nodes against what the client knows. */
static void check_state(struct bl_conn *c, int port, const char *tok, int cycle, struct work *ws)
{
	json_t *leases = get_json(c, port, tok, "/v1/leases?state=active");
	json_t *nodes = get_json(c, port, tok, "/v1/nodes");
	json_t *used = json_object(); /* "node/gpu" -> lease, and node -> count */
	json_t *per_node = json_object();
	size_t i, k;
	json_t *l, *p, *gp;
	size_t seen_live = 0;
	json_array_foreach(leases, i, l) {
		const char *id = json_string_value(json_object_get(l, "id"));
		long want = (long)json_integer_value(json_object_get(l, "gpus")), have = 0;
		if (!id)
			bl_die("a lease without id");
		enum known kn = known_of(id);
		if (kn == K_UNKNOWN) {
			g.duplicated++;
			violation(cycle, "running lease no acknowledged or retried create made:", id);
		} else if (kn == K_RELEASED) {
			g.lost++;
			violation(cycle, "acknowledged release did not stick:", id);
		} else {
			seen_live++;
		}
		json_array_foreach(json_object_get(l, "placement"), k, p) {
			const char *node = json_string_value(json_object_get(p, "node"));
			size_t j;
			json_array_foreach(json_object_get(p, "gpus"), j, gp) {
				char key[160];
				snprintf(key, sizeof(key), "%s/%lld", node ? node : "?",
					 (long long)json_integer_value(gp));
				if (json_object_get(used, key)) {
					g.shared_gpus++;
					violation(cycle, "GPU in two leases:", key);
				}
				json_object_set_new(used, key, json_true());
				json_t *cnt = json_object_get(per_node, node ? node : "?");
				json_object_set_new(per_node, node ? node : "?",
						    json_integer(cnt ? json_integer_value(cnt) + 1 : 1));
				have++;
			}
		}
		if (have != want) {
			g.partial++;
			violation(cycle, "running lease holds other than its GPUs:", id);
		}
	}
	/* Every lease the client believes running must be among them. */
	size_t live = 0;
	for (size_t n = 0; n < g.nknown; n++)
		live += g.known[n] == K_LIVE;
	if (live != seen_live) {
		for (size_t n = 0; n < g.nknown; n++) {
			if (g.known[n] != K_LIVE)
				continue;
			char id[ID_MAX];
			bool found = false;
			snprintf(id, sizeof(id), "ls-%06zu", n);
			json_array_foreach(leases, i, l)
				found |= !strcmp(json_string_value(json_object_get(l, "id")), id);
			if (!found) {
				g.lost++;
				violation(cycle, "acknowledged create not running:", id);
				g.known[n] = K_RELEASED; /* count it once */
				for (int w = 0; w < WORKERS; w++)
					for (int h = 0; h < ws[w].nheld; h++)
						if (!strcmp(ws[w].held[h], id) && h != --ws[w].nheld)
							memcpy(ws[w].held[h], ws[w].held[ws[w].nheld],
							       ID_MAX);
			}
		}
	}
	json_t *nd;
	json_array_foreach(nodes, i, nd) {
		const char *name = json_string_value(json_object_get(nd, "name"));
		json_int_t busy = json_integer_value(json_object_get(nd, "gpus")) -
				  json_integer_value(json_object_get(nd, "free_gpus"));
		json_t *cnt = json_object_get(per_node, name ? name : "?");
		if (busy != (cnt ? json_integer_value(cnt) : 0)) {
			g.node_mismatch++;
			violation(cycle, "node's used GPUs differ from its leases:", name ? name : "?");
		}
	}
	json_decref(used);
	json_decref(per_node);
	json_decref(leases);
	json_decref(nodes);
}

/* After the last cycle: every lease ever acknowledged, in the full list. */
static long final_check(struct bl_conn *c, int port, const char *tok, long *total)
{
	json_t *all = get_json(c, port, tok, "/v1/leases");
	unsigned char *seen = calloc(g.nknown + 1, 1);
	long bad = 0;
	size_t i;
	json_t *l;
	if (!seen)
		bl_die("out of memory");
	*total = (long)json_array_size(all);
	json_array_foreach(all, i, l) {
		const char *id = json_string_value(json_object_get(l, "id"));
		const char *st = json_string_value(json_object_get(l, "state"));
		size_t n = (size_t)lease_num(id ? id : "ls-0");
		if (n >= g.nknown || g.known[n] == K_UNKNOWN) {
			bad++;
			violation(-1, "lease in the store the client never saw acknowledged:", id);
			continue;
		}
		if (seen[n]++) {
			bad++;
			violation(-1, "lease listed twice:", id);
		}
		if ((g.known[n] == K_RELEASED) != (st && !strcmp(st, "released"))) {
			bad++;
			violation(-1, "lease in the wrong state:", id);
		}
	}
	for (size_t n = 0; n < g.nknown; n++)
		if (g.known[n] != K_UNKNOWN && !seen[n]) {
			char id[ID_MAX];
			snprintf(id, sizeof(id), "ls-%06zu", n);
			bad++;
			violation(-1, "acknowledged lease missing from the full list:", id);
		}
	free(seen);
	json_decref(all);
	return bad;
}

static void report(FILE *o, int argc, char **argv, int cycles, double wall_s, long total,
		   long final_bad)
{
	fprintf(o, "# Controller crash benchmark (bench/crash.c)\n\n");
	bl_machine(o, argc, argv);
	fprintf(o, "- daemon: Release suanlid, `serve --simulate`, SQLite WAL synchronous=FULL; "
		   "pinned to core 0, client on core 1%s\n",
		bl_two_cores() ? "" : " (only one core: not pinned)");
	fprintf(o, "- fleet: %d generated 8-GPU nodes; %d keep-alive connections create (unique "
		   "Idempotency-Key each, 1/2/4/8 GPUs) and release leases, %d..%d ms apart, for "
		   "%d..%d ms per cycle (fixed seed), then SIGKILL\n- wall time: %.0f s for %d "
		   "cycles\n\n",
		NODES, WORKERS, THINK_MIN_MS, THINK_MIN_MS + THINK_SPAN_MS - 1, TRAFFIC_MIN_MS,
		TRAFFIC_MIN_MS + TRAFFIC_SPAN_MS - 1, wall_s, cycles);
	fprintf(o, "| figure | value |\n|---|---:|\n");
	fprintf(o, "| SIGKILL cycles | %d |\n", cycles);
	fprintf(o, "| acknowledged operations | %ld (%ld creates, %ld releases) |\n",
		g.acked_creates + g.acked_releases, g.acked_creates, g.acked_releases);
	fprintf(o, "| unanswered at the kill, retried after restart | %ld creates, %ld releases |\n",
		g.retried_creates, g.retried_releases);
	fprintf(o, "| **lost** (acknowledged create not running, or release undone) | **%ld** |\n",
		g.lost);
	fprintf(o, "| **duplicated** (running lease no create was acknowledged for) | **%ld** |\n",
		g.duplicated);
	fprintf(o, "| GPU in two leases | %ld |\n| running lease not holding exactly its GPUs | "
		   "%ld |\n| node used-GPU count differs from its leases | %ld |\n",
		g.shared_gpus, g.partial, g.node_mismatch);
	fprintf(o, "| idempotent replay of an acknowledged create: same bytes / different | "
		   "%ld / %ld |\n", g.replays_same, g.replay_mismatch);
	fprintf(o, "| refused requests / failed retries | %ld / %ld |\n", g.refused, g.retry_failed);
	fprintf(o, "| final full list: leases / problems | %ld / %ld |\n", total, final_bad);
	fprintf(o, "| recovery (spawn -> /healthz 200) p50 / p99 / max | %.1f / %.1f / %.1f ms |\n",
		bl_pct(&g.recovery, 50), bl_pct(&g.recovery, 99), bl_pct(&g.recovery, 100));
	fprintf(o, "| recovery p50, first 100 cycles (<= %ld leases stored) | %.1f ms |\n",
		g.max_id_first, bl_pct(&g.rec_first, 50));
	fprintf(o, "| recovery p50, last 100 cycles (<= %ld leases stored) | %.1f ms |\n",
		g.max_id, bl_pct(&g.rec_last, 50));
	fprintf(o, "| traffic window per cycle p50 | %.0f ms |\n\n", bl_pct(&g.traffic_ms, 50));
	fprintf(o, "Goals: lost 0, duplicated 0 (every other violation count 0 too). Recovery "
		   "time is reported, not judged.\n");
}

int main(int argc, char **argv)
{
	const char *out = argc > 1 ? argv[1] : "bench/results/crash.md";
	int cycles = argc > 2 ? atoi(argv[2]) : CYCLES_DEFAULT;
	char tok[256];
	if (cycles <= 0)
		bl_die("usage: bench_crash [results.md] [cycles>0]");
	struct bl_daemon dm;
	bl_daemon_prepare(&dm, "crash", NODES);
	char *suanlid = dm.suanlid, *dir = dm.dir, *data = dm.data, *fleet = dm.fleet,
	     *log = dm.log, *admin = dm.admin, *portarg = dm.portarg;
	int port = dm.port;
	char *first[] = {suanlid, "serve", "--data", data, "--listen", portarg, "--fleet", fleet,
			 "--simulate", "--log-level", "warn", NULL};
	char *again[] = {suanlid, "serve", "--data", data, "--listen", portarg, "--simulate",
			 "--log-level", "warn", NULL};
	bl_pin(1);
	pid_t pid = bl_spawn(first, log);
	if (!bl_wait_healthy(port, pid, RECOVERY_LIMIT_MS))
		bl_die("suanlid did not start (log: %s)", log);
	struct bl_conn c = {.fd = -1};
	char *body = NULL;
	int st = bl_call(&c, port, "POST", "/v1/tenants", admin, "{\"name\":\"crash\"}", NULL, &body);
	if (st != 201)
		bl_die("creating the tenant answered %d: %s", st, body ? body : "");
	free(body);
	st = bl_call(&c, port, "POST", "/v1/tokens", admin,
		     "{\"role\":\"tenant\",\"tenant\":\"crash\",\"user\":\"crash\"}", NULL, &body);
	if (st != 201 || !bl_json_str(body, "token", tok, sizeof(tok)))
		bl_die("creating the token answered %d: %s", st, body ? body : "");
	free(body);
	bl_conn_reset(&c);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);

	struct work ws[WORKERS];
	memset(ws, 0, sizeof(ws));
	for (int i = 0; i < WORKERS; i++)
		ws[i].c.fd = -1, ws[i].idx = i;
	uint64_t seed = 0xc0ffee1234ULL;
	double t0 = bl_now_ms();
	long total = 0, final_bad = 0;
	for (int cyc = 1; cyc <= cycles + 1; cyc++) {
		double s0 = bl_now_ms();
		pid = bl_spawn(again, log);
		if (!bl_wait_healthy(port, pid, RECOVERY_LIMIT_MS))
			bl_die("cycle %d: suanlid did not come back (log: %s)", cyc, log);
		double rec = bl_now_ms() - s0;
		bl_add(&g.recovery, rec);
		if (cyc <= 100)
			bl_add(&g.rec_first, rec), g.max_id_first = g.max_id;
		if (cyc > cycles - 99)
			bl_add(&g.rec_last, rec);
		retry_unanswered(&c, port, tok, cyc, ws);
		check_state(&c, port, tok, cyc, ws);
		check_replay(&c, port, tok, cyc);
		if (cyc > cycles) {
			final_bad = final_check(&c, port, tok, &total);
			bl_conn_reset(&c);
			kill(pid, SIGTERM);
			waitpid(pid, NULL, 0);
			break;
		}
		bl_conn_reset(&c);
		traffic(ws, port, pid, cyc, tok, &seed);
		if (cyc % 100 == 0)
			fprintf(stderr, "bench_crash: %d cycles, %ld acknowledged, %.0f s\n", cyc,
				g.acked_creates + g.acked_releases, (bl_now_ms() - t0) / 1000);
	}
	double wall_s = (bl_now_ms() - t0) / 1000;
	long bad = g.lost + g.duplicated + g.shared_gpus + g.partial + g.node_mismatch +
		   g.replay_mismatch + g.retry_failed + final_bad;
	report(stdout, argc, argv, cycles, wall_s, total, final_bad);
	FILE *o = fopen(out, "w");
	if (!o)
		bl_die("cannot write %s", out);
	report(o, argc, argv, cycles, wall_s, total, final_bad);
	fclose(o);
	if (!bad)
		bl_rmrf(dir);
	else
		fprintf(stderr, "bench_crash: %ld violations; data and log kept in %s\n", bad, dir);
	free(c.buf);
	for (int i = 0; i < WORKERS; i++)
		free(ws[i].c.buf);
	free(g.known);
	free(g.pc);
	free(g.pr);
	free(g.recovery.v);
	free(g.traffic_ms.v);
	free(g.rec_first.v);
	free(g.rec_last.v);
	return bad ? 1 : 0;
}

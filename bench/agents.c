/* agents.c - many simulated agents from one process, over real HTTP and the
 * real agent protocol (docs/agent-protocol.md), against a real suanlid
 * (issue 17, "10,000 nodes"). bench/agents.sh runs real agent processes;
 * this tool reaches fleet sizes that processes on a small machine cannot.
 *
 *   bench_agents [N] [HOLD_S] [results.md]    defaults: 10000, 0, stdout
 *
 * 1. Join storm: a fleet file of BL_LEAF nodes; N nodes that are not in it
 *    register with one join token (labels.site/leaf/type), one after the
 *    other over one keep-alive connection, then heartbeat once with their
 *    node credential; joined nodes heartbeat every HEARTBEAT_S meanwhile,
 *    from the same connection. Joins/s is measured over the JOIN_WINDOW joins ending
 *    at 1,000, 3,000, 10,000 (and N) joined nodes, so a join's cost against
 *    the fleet's size shows directly.
 * 2. HOLD_S > 0: every node heartbeats every HEARTBEAT_S seconds (spread
 *    evenly) for HOLD_S seconds while a tenant creates and releases one lease
 *    every LEASE_EVERY heartbeats; the controller's CPU (utime + stime of the
 *    process, so the loop and the rest) and the lease round trip's p99.
 *
 * The discovery each node reports is `suanli-agent discover --simulate
 * hgx-h100-8` (the agent beside this program, or $SUANLI_AGENT). Figures
 * are written, never judged. */
#include "bench_lib.h"

#define JOIN_WINDOW 500
#define HEARTBEAT_S 5
#define LEASE_EVERY 200
#define DISC_MAX 12000 /* bytes of the discovery JSON; a request is < 16384 */
#define NODES_MAX 100000

static long proc_rss_kib(pid_t pid)
{
	char p[64], line[256];
	long kib = 0;
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	FILE *f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kib = atol(line + 6);
	if (f)
		fclose(f);
	return kib;
}

/* The simulated discovery, compact, into out (size n). */
static void read_discovery(const char *suanlid, char *out, size_t n)
{
	char agent[BL_PATH_MAX + 32], cmd[BL_PATH_MAX + 128];
	if (getenv("SUANLI_AGENT"))
		snprintf(agent, sizeof(agent), "%s", getenv("SUANLI_AGENT"));
	else {
		snprintf(agent, sizeof(agent), "%s", suanlid);
		snprintf(strrchr(agent, '/') + 1, 16, "suanli-agent");
	}
	snprintf(cmd, sizeof(cmd), "'%s' discover --simulate hgx-h100-8 --json", agent);
	FILE *p = popen(cmd, "r");
	if (!p)
		bl_die("cannot run %s", agent);
	size_t k = 0;
	int ch;
	while ((ch = fgetc(p)) != EOF)
		if (ch != '\n' && ch != '\r' && ch != '\t' && k + 1 < n)
			out[k++] = (char)ch;
	out[k] = 0;
	if (pclose(p) != 0 || k == 0 || out[0] != '{')
		bl_die("%s discover gave no JSON (set SUANLI_AGENT)", agent);
	if (k + 1 >= n)
		bl_die("the discovery is longer than %zu bytes", n);
}

struct node {
	char cred[128];
};

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10000;
	int hold_s = argc > 2 ? atoi(argv[2]) : 0;
	const char *outp = argc > 3 ? argv[3] : NULL;
	if (n <= 0 || n > NODES_MAX || hold_s < 0)
		bl_die("usage: bench_agents [N 1..%d] [HOLD_S] [results.md]", NODES_MAX);
	struct bl_daemon dm;
	bl_daemon_prepare(&dm, "agents", 2 * BL_LEAF);
	static char disc[DISC_MAX];
	read_discovery(dm.suanlid, disc, sizeof(disc));
	char maxconn[32];
	snprintf(maxconn, sizeof(maxconn), "%d", 1024);
	char *args[] = {dm.suanlid, "serve", "--data", dm.data, "--listen", dm.portarg, "--fleet",
			dm.fleet, "--max-connections", maxconn, "--log-level", "warn", NULL};
	pid_t pid = bl_spawn(args, dm.log);
	bl_pin(1);
	if (!bl_wait_healthy(dm.port, pid, 30000))
		bl_die("suanlid did not become healthy (log: %s)", dm.log);
	struct bl_conn c = {.fd = -1};
	char *body = NULL, join[256], tok[256];
	int st = bl_call(&c, dm.port, "POST", "/v1/agent-tokens", dm.admin, "{}", NULL, &body);
	if (st != 201 || !bl_json_str(body, "token", join, sizeof(join)))
		bl_die("creating the join token answered %d: %s", st, body ? body : "");
	free(body);
	st = bl_call(&c, dm.port, "POST", "/v1/tenants", dm.admin, "{\"name\":\"bench\"}", NULL, &body);
	free(body);
	st = bl_call(&c, dm.port, "POST", "/v1/tokens", dm.admin,
		     "{\"role\":\"tenant\",\"tenant\":\"bench\",\"user\":\"bench\"}", NULL, &body);
	if (st != 201 || !bl_json_str(body, "token", tok, sizeof(tok)))
		bl_die("creating the tenant token answered %d: %s", st, body ? body : "");
	free(body);

	struct node *nodes = calloc((size_t)n, sizeof(*nodes));
	double *at = calloc((size_t)n + 1, sizeof(*at)), *cpu = calloc((size_t)n + 1, sizeof(*cpu));
	double *last = calloc((size_t)n + 1, sizeof(*last));
	int hb_next = 0;
	long hbs = 0;
	if (!nodes || !at || !cpu || !last)
		bl_die("out of memory");
	static char req[16384];
	double cpu0 = bl_proc_cpu_ms(pid), t0 = bl_now_ms();
	at[0] = t0;
	cpu[0] = cpu0;
	for (int i = 0; i < n; i++) {
		int k = snprintf(req, sizeof(req),
				 "{\"node\":\"j%05d\",\"addr\":\"127.0.0.1\",\"agent_version\":\"bench\","
				 "\"boot_id\":\"boot-%05d\",\"discovery\":%s,\"labels\":{\"site\":"
				 "\"bench-a\",\"leaf\":\"leaf-001\",\"type\":\"hgx-h100-8\"}}",
				 i, i, disc);
		if (k < 0 || (size_t)k >= sizeof(req) - 512)
			bl_die("register body too long");
		st = bl_call(&c, dm.port, "POST", "/v1/agent/register", join, req, NULL, &body);
		if (st != 200 || !bl_json_str(body, "credential", nodes[i].cred, sizeof(nodes[i].cred)))
			bl_die("join %d answered %d: %s", i, st, body ? body : "");
		free(body);
		last[i] = bl_now_ms();
		/* The joined nodes heartbeat every HEARTBEAT_S as real agents do (or
		 * they would go unreachable after 15 s and the storm would measure
		 * the controller marking them). */
		for (int guard = 0; guard <= i; guard++) {
			if (hb_next > i)
				hb_next = 0;
			if (last[hb_next] > last[i] - HEARTBEAT_S * 1000.0)
				break;
			snprintf(req, sizeof(req), "{\"boot_id\":\"boot-%05d\"}", hb_next);
			st = bl_call(&c, dm.port, "POST", "/v1/agent/heartbeat", nodes[hb_next].cred,
				     req, NULL, NULL);
			if (st != 200)
				bl_die("heartbeat of j%05d answered %d", hb_next, st);
			last[hb_next++] = bl_now_ms();
			hbs++;
		}
		at[i + 1] = bl_now_ms();
		cpu[i + 1] = bl_proc_cpu_ms(pid);
	}
	double join_ms = at[n] - t0, join_cpu = bl_proc_cpu_ms(pid) - cpu0;
	double hb0 = bl_now_ms();
	for (int i = 0; i < n; i++) {
		snprintf(req, sizeof(req), "{\"boot_id\":\"boot-%05d\"}", i);
		st = bl_call(&c, dm.port, "POST", "/v1/agent/heartbeat", nodes[i].cred, req, NULL, NULL);
		if (st != 200)
			bl_die("first heartbeat of j%05d answered %d", i, st);
	}
	double hb_ms = bl_now_ms() - hb0;

	FILE *o = outp ? fopen(outp, "a") : stdout;
	if (!o)
		bl_die("cannot append to %s", outp);
	fprintf(o, "\n## Join storm: %d nodes join by token (bench/agents.c)\n\n", n);
	bl_machine(o, argc, argv);
	fprintf(o, "- how: a fleet file of %d nodes; %d nodes not in it register one after the "
		   "other with one join token over one keep-alive connection (the real "
		   "`POST /v1/agent/register` with labels and a simulated hgx-h100-8 discovery), "
		   "and every joined node heartbeats every %d s meanwhile (%ld heartbeats during "
		   "the storm, counted in the join figures); "
		   "suanlid pinned to core 0, the tool to core 1; both cores shared with other "
		   "work, so figures are noisy\n\n", 2 * BL_LEAF, n, HEARTBEAT_S, hbs);
	fprintf(o, "| joined nodes | joins/s over the last %d | ms per join (wall) | controller CPU ms "
		   "per join |\n|---:|---:|---:|---:|\n", JOIN_WINDOW);
	int marks[] = {1000, 3000, 10000, 30000, n};
	for (size_t m = 0; m < sizeof(marks) / sizeof(marks[0]); m++) {
		int e = marks[m];
		if (e > n || (m + 1 == sizeof(marks) / sizeof(marks[0]) && (e == 1000 || e == 3000 ||
									  e == 10000 || e == 30000)))
			continue;
		int b = e > JOIN_WINDOW ? e - JOIN_WINDOW : 0;
		double ms = at[e] - at[b];
		fprintf(o, "| %d | %.0f | %.3f | %.3f |\n", e, ms > 0 ? (e - b) * 1000.0 / ms : 0,
			ms / (e - b), (cpu[e] - cpu[b]) / (e - b));
	}
	fprintf(o, "\n- all %d joins: %.1f s (%.0f joins/s), controller CPU %.1f s\n", n,
		join_ms / 1000, n * 1000.0 / join_ms, join_cpu / 1000);
	fprintf(o, "- then one heartbeat from each node: %.2f s (%.0f/s)\n", hb_ms / 1000,
		n * 1000.0 / hb_ms);
	fprintf(o, "- controller RSS after the joins: %.1f MiB\n", (double)proc_rss_kib(pid) / 1024.0);

	if (hold_s > 0) {
		struct bl_samples lat = {0};
		double gap = HEARTBEAT_S * 1000.0 / n, start = bl_now_ms(), cpu_h = bl_proc_cpu_ms(pid);
		long sent = 0, late = 0;
		char lid[64];
		while (bl_now_ms() - start < hold_s * 1000.0) {
			double due = start + (double)sent * gap, now = bl_now_ms();
			if (now < due) {
				struct timespec ts = {0, (long)((due - now) * 1e6)};
				nanosleep(&ts, NULL);
			} else if (now - due > HEARTBEAT_S * 1000.0)
				late++;
			int i = (int)(sent % n);
			snprintf(req, sizeof(req), "{\"boot_id\":\"boot-%05d\"}", i);
			st = bl_call(&c, dm.port, "POST", "/v1/agent/heartbeat", nodes[i].cred, req,
				     NULL, NULL);
			if (st != 200)
				bl_die("heartbeat of j%05d answered %d", i, st);
			if (++sent % LEASE_EVERY == 0) {
				double l0 = bl_now_ms();
				st = bl_call(&c, dm.port, "POST", "/v1/leases", tok, "{\"gpus\":1}", NULL,
					     &body);
				if (st != 201 || !bl_json_str(body, "id", lid, sizeof(lid)))
					bl_die("lease answered %d: %s", st, body ? body : "");
				free(body);
				bl_add(&lat, bl_now_ms() - l0);
				char path[128];
				snprintf(path, sizeof(path), "/v1/leases/%s/release", lid);
				bl_call(&c, dm.port, "POST", path, tok, "{}", NULL, NULL);
			}
		}
		double wall = bl_now_ms() - start, used = bl_proc_cpu_ms(pid) - cpu_h;
		fprintf(o, "\n### %d agents heartbeating every %d s for %d s\n\n", n, HEARTBEAT_S,
			hold_s);
		fprintf(o, "- heartbeats: %ld (%.0f/s; %ld sent more than one interval late, i.e. the tool fell "
			   "behind)\n", sent, (double)sent * 1000.0 / wall, late);
		fprintf(o, "- controller CPU: %.1f%% of one core (whole process)\n", 100.0 * used / wall);
		fprintf(o, "- lease create (1 GPU), one every %d heartbeats: %zu leases, p50 %.2f ms, "
			   "p99 %.2f ms, max %.2f ms\n", LEASE_EVERY, lat.n, bl_pct(&lat, 50),
			bl_pct(&lat, 99), bl_pct(&lat, 100));
		fprintf(o, "- controller RSS: %.1f MiB\n", (double)proc_rss_kib(pid) / 1024.0);
	}
	if (o != stdout)
		fclose(o);
	bl_conn_reset(&c);
	free(c.buf);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	bl_rmrf(dm.dir);
	free(nodes);
	free(at);
	free(cpu);
	free(last);
	return 0;
}

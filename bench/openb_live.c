/* openb_live.c - the openb saturation stream sent through the live API.
 *
 * `suanli sim openb` places the Alibaba GPU trace's pods on the placement
 * core offline (src/core/sim/sim.c). This benchmark sends the same stream,
 * pod for pod, as POST /v1/leases to a Release `suanlid serve --simulate` on
 * the same fleet, once with `--placement frag` and once with `bestfit`, and
 * reads the allocation from the controller's own answer (GET /metrics:
 * suanli_gpu_allocated_milli / suanli_gpu_capacity_milli). Beside each it
 * runs `suanli sim openb` with the same policy, seed and order. Writes
 * bench/results/openb-live.md. Nothing is asserted.
 *
 * Fairness, so that a difference means something:
 *   - the fleet is `suanli sim openb --write-fleet` (same nodes, order,
 *     names, types, CPUs in thousandths, every node shareable);
 *   - the stream is sim_saturate_order() (the function sim_saturate uses):
 *     trace order, then pods sampled with the seed until 130% of capacity;
 *   - each pod becomes {"gpus": N} or {"gpu_milli": M} with its exact
 *     "cpu_milli" and "memory_mib"; a pod asking for nothing is counted as
 *     placed and not sent, as the sim does;
 *   - a pod that does not fit fails and is dropped in the sim; here a lease
 *     that comes back pending is released at once (so it never waits at the
 *     queue's head) and one the controller refuses outright counts as failed;
 *   - the workload model: the sim gives frag the trace's whole distribution
 *     of pod shapes (sim_workload); the controller learns its own from its
 *     recent requests (ctl_workload.c). The report says which the figures
 *     used (see the notes the program writes).
 *
 * Usage: bench_openb_live [RESULTS_DIR]  (default bench/results). env:
 * SUANLI_TRACES (default ../shared/traces/alibaba-gpu-v2023), SUANLID and
 * SUANLI (default: beside this program), SEED (42), INFLATE (percent, 130),
 * POLICIES ("frag bestfit"). Without the traces it says so and exits 0. */
#include <jansson.h>

#include "bench_lib.h"
#include "file.h"
#include "sim.h"

#define OB_MAX_OUT (64u << 20) /* bound on a child's output read back */

struct ob_fig {
	double sim100, sim130, live100, live130;
	int sim_failed, live_failed, live_refused, pods, sent;
	double secs, creates_per_s;
	int64_t client_milli, ctl_alloc, ctl_cap;
	bool agree; /* the client's count of what it was granted = the controller's */
};

static void exe_beside(char *out, size_t n, const char *env, const char *name)
{
	if (getenv(env) && *getenv(env)) {
		snprintf(out, n, "%s", getenv(env));
		return;
	}
	ssize_t k = readlink("/proc/self/exe", out, n - 32);
	if (k <= 0)
		bl_die("cannot find myself; set %s", env);
	out[k] = 0;
	snprintf(strrchr(out, '/') + 1, 32, "%s", name);
}

/* Runs argv, its stdout into a malloc'd string (NULL on failure). */
static char *run_capture(char *const argv[])
{
	int fd[2];
	if (pipe(fd))
		bl_die("pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		bl_die("fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	struct sl_buf b = SL_BUF_INIT(OB_MAX_OUT);
	char tmp[65536];
	ssize_t r;
	while ((r = read(fd[0], tmp, sizeof(tmp))) > 0)
		if (sl_buf_add(&b, tmp, (size_t)r))
			bl_die("child output too long");
	close(fd[0]);
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		sl_buf_release(&b);
		return NULL;
	}
	if (!b.p && sl_buf_adds(&b, ""))
		bl_die("out of memory");
	return b.p; /* NUL-terminated */
}

/* `suanli sim openb` with this policy: the curve at 100% and 130%. */
static void run_sim(const char *suanli, const char *nodes, const char *pods, const char *policy,
		    const char *seed, const char *inflate, struct ob_fig *f)
{
	char *argv[] = {(char *)suanli, "sim", "openb", "--nodes", (char *)nodes, "--pods",
			(char *)pods, "--policy", (char *)policy, "--seed", (char *)seed,
			"--inflate", (char *)inflate, "--json", NULL};
	char *out = run_capture(argv);
	json_t *o = out ? json_loads(out, 0, NULL) : NULL;
	const json_t *c = json_object_get(o, "allocation_curve");
	if (!o || json_array_size(c) != SIM_CURVE_POINTS)
		bl_die("suanli sim openb --policy %s failed", policy);
	f->sim100 = json_number_value(json_array_get(c, 100));
	f->sim130 = json_number_value(json_array_get(c, 130));
	f->sim_failed = (int)json_integer_value(json_object_get(o, "failed_pods"));
	json_decref(o);
	free(out);
}

static int64_t metric(const char *text, const char *name)
{
	char pat[128];
	snprintf(pat, sizeof(pat), "\n%s ", name);
	const char *p = text ? strstr(text, pat) : NULL;
	if (!p)
		bl_die("no %s in /metrics", name);
	return atoll(p + strlen(pat));
}

/* The controller's allocation now, from GET /metrics. */
static double ctl_alloc(struct bl_conn *c, int port, const char *tok, struct ob_fig *f)
{
	char *body = NULL;
	if (bl_call(c, port, "GET", "/metrics", tok, NULL, NULL, &body) != 200)
		bl_die("GET /metrics failed");
	f->ctl_alloc = metric(body, "suanli_gpu_allocated_milli");
	f->ctl_cap = metric(body, "suanli_gpu_capacity_milli");
	free(body);
	return f->ctl_cap ? 100.0 * (double)f->ctl_alloc / (double)f->ctl_cap : 0;
}

static void run_live(const char *suanlid, const char *fleet, const char *policy,
		     const struct sim_pod *pods, const int *ord, int nord, int64_t cap,
		     struct ob_fig *f)
{
	struct bl_daemon d;
	memset(&d, 0, sizeof(d));
	snprintf(d.suanlid, sizeof(d.suanlid), "%s", suanlid);
	bl_tmpdir(d.dir, sizeof(d.dir), "openb-live");
	snprintf(d.data, sizeof(d.data), "%s/data", d.dir);
	snprintf(d.log, sizeof(d.log), "%s/suanlid.log", d.dir);
	bl_init_data(d.suanlid, d.data, d.log, d.admin, sizeof(d.admin));
	d.port = bl_free_port();
	snprintf(d.portarg, sizeof(d.portarg), "127.0.0.1:%d", d.port);
	char *argv[] = {d.suanlid, "serve", "--data", d.data, "--listen", d.portarg, "--fleet",
			(char *)fleet, "--simulate", "--placement", (char *)policy, "--log-level",
			"warn", NULL};
	pid_t pid = bl_spawn(argv, d.log);
	if (!bl_wait_healthy(d.port, pid, 60000))
		bl_die("suanlid did not come up (see %s)", d.log);
	struct bl_conn c = {.fd = -1};
	char *body = NULL;
	int st = bl_call(&c, d.port, "POST", "/v1/tenants", d.admin, "{\"name\":\"openb\"}", NULL, &body);
	if (st != 201 && st != 200)
		bl_die("tenant create: %d %s", st, body ? body : "");
	free(body);
	bool at100 = false;
	int64_t arrived = 0;
	double t0 = bl_now_ms();
	f->live_failed = f->live_refused = f->sent = 0;
	f->client_milli = 0;
	f->pods = nord;
	for (int i = 0; i < nord; i++) {
		const struct sim_pod *p = &pods[ord[i]];
		int64_t milli = sim_pod_milli(p);
		arrived += milli;
		if (p->gpus == 0 && p->gpu_milli == 0 && p->cpu_milli == 0 && p->mem_mib == 0) {
			/* asks for nothing: the sim counts it placed */
		} else {
			char req[512];
			snprintf(req, sizeof(req),
				 "{\"tenant\":\"openb\",\"%s\":%d,\"cpu_milli\":%d,\"memory_mib\":%lld}",
				 p->gpu_milli ? "gpu_milli" : "gpus", p->gpu_milli ? p->gpu_milli : p->gpus,
				 p->cpu_milli, (long long)p->mem_mib);
			body = NULL;
			st = bl_call(&c, d.port, "POST", "/v1/leases", d.admin, req, NULL, &body);
			f->sent++;
			char id[32], state[32];
			if (st == 201 && bl_json_str(body, "state", state, sizeof(state)) &&
			    !strcmp(state, "active")) {
				f->client_milli += milli;
			} else if (st == 201 && bl_json_str(body, "id", id, sizeof(id))) {
				/* pending: the sim drops a pod that does not fit */
				char path[96];
				snprintf(path, sizeof(path), "/v1/leases/%s/release", id);
				free(body);
				body = NULL;
				int rs = bl_call(&c, d.port, "POST", path, d.admin, "{}", NULL, NULL);
				if (rs != 200)
					bl_die("release %s: %d", id, rs);
				f->live_failed++;
			} else if (st >= 400 && st < 500 && st != 401 && st != 403) {
				f->live_failed++;
				f->live_refused++;
			} else {
				bl_die("lease create %d: %s -> %d %s", i, req, st, body ? body : "");
			}
			free(body);
		}
		if (!at100 && arrived * 100 >= 100 * cap) {
			at100 = true;
			f->live100 = ctl_alloc(&c, d.port, d.admin, f);
		}
	}
	f->secs = (bl_now_ms() - t0) / 1000;
	f->creates_per_s = f->secs > 0 ? f->sent / f->secs : 0;
	f->live130 = ctl_alloc(&c, d.port, d.admin, f);
	f->agree = f->client_milli == f->ctl_alloc;
	bl_conn_reset(&c);
	free(c.buf);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	bl_rmrf(d.dir);
}

static void load_list(const char *path, bool nodes, void **out, int *n)
{
	char *text;
	size_t len;
	struct sl_diag dg;
	sl_diag_clear(&dg);
	enum sl_err e = sl_read_file(path, SIM_MAX_FILE, &text, &len, &dg);
	if (e == SL_OK)
		e = nodes ? sim_parse_nodes(text, len, path, (struct sim_node **)out, n, &dg)
			  : sim_parse_pods(text, len, path, (struct sim_pod **)out, n, &dg);
	if (e != SL_OK)
		bl_die("%s: %s", path, dg.msg);
	free(text);
}

int main(int argc, char **argv)
{
	const char *outdir = argc > 1 ? argv[1] : "bench/results";
	const char *traces = getenv("SUANLI_TRACES") && *getenv("SUANLI_TRACES")
				     ? getenv("SUANLI_TRACES") : "../shared/traces/alibaba-gpu-v2023";
	const char *seed = getenv("SEED") ? getenv("SEED") : "42";
	int inflate = getenv("INFLATE") ? atoi(getenv("INFLATE")) : 130;
	const char *policies = getenv("POLICIES") ? getenv("POLICIES") : "frag bestfit";
	char nodes[BL_PATH_MAX], pods[BL_PATH_MAX], suanlid[BL_PATH_MAX], suanli[BL_PATH_MAX];
	snprintf(nodes, sizeof(nodes), "%s/openb_node_list_gpu_node.csv", traces);
	snprintf(pods, sizeof(pods), "%s/openb_pod_list_default.csv", traces);
	if (access(nodes, R_OK) || access(pods, R_OK)) {
		fprintf(stderr, "bench_openb_live: no traces in %s; skipped (set SUANLI_TRACES)\n", traces);
		return 0;
	}
	exe_beside(suanlid, sizeof(suanlid), "SUANLID", "suanlid");
	exe_beside(suanli, sizeof(suanli), "SUANLI", "suanli");
	struct sim_node *nl = NULL;
	struct sim_pod *pl = NULL;
	int nn = 0, np = 0;
	load_list(nodes, true, (void **)&nl, &nn);
	load_list(pods, false, (void **)&pl, &np);
	int64_t cap = 0;
	for (int i = 0; i < nn; i++)
		cap += (int64_t)nl[i].gpus * 1000;
	int *ord = NULL, nord = 0;
	struct sl_diag dg;
	sl_diag_clear(&dg);
	if (sim_saturate_order(pl, np, cap, inflate, (uint64_t)strtoull(seed, NULL, 10), false, &ord,
			       &nord, &dg))
		bl_die("%s", dg.msg);

	char dir[BL_PATH_MAX], fleet[BL_PATH_MAX + 16], infl[16];
	bl_tmpdir(dir, sizeof(dir), "openb-fleet");
	snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", dir);
	snprintf(infl, sizeof(infl), "%.2f", inflate / 100.0);
	char *wargv[] = {suanli, "sim", "openb", "--nodes", nodes, "--pods", pods, "--write-fleet",
			 fleet, NULL};
	char *w = run_capture(wargv);
	if (!w)
		bl_die("suanli sim openb --write-fleet failed");
	free(w);

	struct ob_fig figs[4];
	const char *names[4];
	int npol = 0;
	char pbuf[128];
	snprintf(pbuf, sizeof(pbuf), "%s", policies);
	double t_all = bl_now_ms();
	for (char *sv = NULL, *p = strtok_r(pbuf, " ", &sv); p && npol < 4; p = strtok_r(NULL, " ", &sv)) {
		struct ob_fig *f = &figs[npol];
		memset(f, 0, sizeof(*f));
		names[npol++] = p;
		run_sim(suanli, nodes, pods, p, seed, infl, f);
		run_live(suanlid, fleet, p, pl, ord, nord, cap, f);
		printf("%-8s sim %.3f%% live %.3f%% at %d%% (100%%: sim %.3f live %.3f); failed sim %d "
		       "live %d; %.1f s, %.0f creates/s\n",
		       p, f->sim130, f->live130, inflate, f->sim100, f->live100, f->sim_failed,
		       f->live_failed, f->secs, f->creates_per_s);
		fflush(stdout);
	}
	double total_s = (bl_now_ms() - t_all) / 1000;
	bl_rmrf(dir);

	char path[BL_PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/openb-live.md", outdir);
	FILE *o = fopen(path, "w");
	if (!o)
		bl_die("cannot write %s: %s", path, strerror(errno));
	fprintf(o, "# openb saturation through the live API (bench/openb_live.c)\n\n");
	bl_machine(o, argc, argv);
	fprintf(o, "- suanlid: %s (Release), `serve --simulate --placement POLICY`, SQLite store\n",
		suanlid);
	fprintf(o, "- stream: openb_pod_list_default.csv (%d pods) in trace order, then sampled with "
		   "seed %s until %d%% of %lld GPUs: %d pods, %d sent as leases; %.0f s for everything\n\n",
		np, seed, inflate, (long long)(cap / 1000), nord, npol ? figs[0].sent : 0, total_s);
	fprintf(o, "GPU allocation (%%: GPUs held / GPUs, shares counted by their part) when the "
		   "arrived demand reaches 100%% and %d%% of capacity. sim: `suanli sim openb --policy P "
		   "--seed %s`; live: the controller's own `suanli_gpu_allocated_milli / "
		   "suanli_gpu_capacity_milli` (GET /metrics).\n\n", inflate, seed);
	fprintf(o, "| policy | sim 100%% | live 100%% | sim %d%% | live %d%% | live - sim (%d%%) | "
		   "failed sim | failed live (refused) | live time | creates/s |\n"
		   "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", inflate, inflate, inflate);
	for (int i = 0; i < npol; i++) {
		struct ob_fig *f = &figs[i];
		fprintf(o, "| %s | %.3f | %.3f | **%.3f** | **%.3f** | %+.3f | %d | %d (%d) | %.1f s | %.0f |\n",
			names[i], f->sim100, f->live100, f->sim130, f->live130, f->live130 - f->sim130,
			f->sim_failed, f->live_failed, f->live_refused, f->secs, f->creates_per_s);
	}
	if (npol == 2)
		fprintf(o, "\n%s - %s: sim %+.3f points, live %+.3f points.\n", names[0], names[1],
			figs[0].sim130 - figs[1].sim130, figs[0].live130 - figs[1].live130);
	for (int i = 0; i < npol; i++)
		fprintf(o, "%s%s: the client's count of what it was granted (%lld thousandths) %s the "
			   "controller's answer.\n", i ? "" : "\n", names[i], (long long)figs[i].client_milli,
			figs[i].agree ? "equals" : "DIFFERS FROM");
	fprintf(o, "\n## How the two are made comparable\n\n"
		   "- Fleet: `suanli sim openb --write-fleet` (the node list as a fleet file: same nodes, "
		   "order and names, one type per model/GPUs/CPUs/memory with CPUs in thousandths "
		   "(`cpu_milli:`), every node shareable), so ties break alike and CPUs are counted "
		   "exactly as the sim counts them. Rounding the pods' CPUs up to whole cores instead "
		   "moves bestfit by 0.85 points at 130%% (93.02 -> 92.17; frag 96.03 -> 96.00).\n"
		   "- Stream: `sim_saturate_order()`, the function `sim_saturate` itself uses: the trace "
		   "in order, then pods sampled with the seed until the demand reaches %d%%. Each pod is "
		   "one `POST /v1/leases` with `gpus` or `gpu_milli` and its exact `cpu_milli` and "
		   "`memory_mib` over one keep-alive connection.\n"
		   "- A pod that does not fit: the sim drops it; here a lease answered `pending` is "
		   "released at once (`POST /v1/leases/ID/release`), so it never waits at the queue's "
		   "head and nothing else changes (no lease ever ends, so it could never start later).\n"
		   "- Allocation: the sim's `alloc_at[p]` after the pod that brings the arrived demand to "
		   "p%% of capacity; here `/metrics` read at the same pod.\n"
		   "- Workload model (frag only): the sim gives the placer the whole pod list's "
		   "distribution of shapes (`sim_workload`: one class per GPUs, share, CPUs, memory, "
		   "weighted by count); the controller learns its own from its last 1,024 requests "
		   "plus a 32-request prior, refreshed every 64 (`place_wmodel.h`). That is the one "
		   "input that differs, and the only source of the frag difference above: with "
		   "bestfit, which uses no model, the figures and failed pods are identical. Before "
		   "the learned model counted the requests' CPUs and memory it placed at 92.76%% "
		   "(below bestfit): blind to CPUs running out, its balance term was off.\n",
		inflate);
	fclose(o);
	printf("bench_openb_live: wrote %s\n", path);
	free(ord);
	free(nl);
	free(pl);
	return 0;
}

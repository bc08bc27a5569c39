/* cmd_sim.c - `suanli sim`: replays GPU cluster traces on the real placement
 * core, offline. `sim openb` runs the saturation experiment of the FGD paper
 * (ATC '23) on the Alibaba cluster-trace-gpu-v2023 lists and prints our
 * allocation curve beside the published ones; `sim openb --replay` (or
 * `sim replay`) replays creation and deletion times with a FIFO queue. The
 * work is in src/core/sim.c; this file reads files, loops over seeds and
 * prints. See docs/sim.md. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"
#include "sim.h"
#include "sim_history.h"
#include "svg_plot.h"
#include "client.h"

#define SIM_DEFAULT_DIR "../shared/traces/alibaba-gpu-v2023"
#define SIM_MAX_SEEDS 1000
#define SIM_MAX_PUBLISHED (16u << 20)

static const char sim_help[] =
	"usage: suanli sim openb [--nodes FILE] [--pods FILE | --workload NAME] [OPTIONS]\n"
	"       suanli sim replay [--nodes FILE] [--pods FILE | --jobs FILE] [OPTIONS]\n"
	"       suanli sim replay --from-controller | --history FILE [OPTIONS]\n\n"
	"Replays a GPU cluster trace on the same placement core as the controller\n"
	"(docs/sim.md). Without --replay: the saturation experiment of the FGD paper\n"
	"(USENIX ATC '23): the pods in trace order, then pods sampled at random\n"
	"(seeded) until the GPU request reaches --inflate x capacity; none leave. It\n"
	"prints the GPU allocation ratio at 100..130%% of arrived demand beside the\n"
	"published curves of the paper's policies.\n\n"
	"  --nodes FILE      node list (sn,cpu_milli,memory_mib,gpu,model); default\n"
	"                    $SUANLI_TRACES or " SIM_DEFAULT_DIR "/\n"
	"                    openb_node_list_gpu_node.csv\n"
	"  --pods FILE       pod list (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,\n"
	"                    creation_time,deletion_time]); default openb_pod_list_default.csv\n"
	"  --workload NAME   shorthand for --pods DIR/openb_pod_list_NAME.csv (default,\n"
	"                    cpu050, gpushare40, gpuspec10, multigpu20)\n"
	"  --jobs FILE       (replay) a job CSV: submit_time,duration,gpus,gpus_per_node,\n"
	"                    model,plan instead of --pods\n"
	"  --from-controller (replay) the controller's own fleet and lease history\n"
	"                    (GET /v1/placement/history; --server, --token as for the\n"
	"                    online commands) instead of --nodes and --pods\n"
	"  --history FILE    (replay) the same from a saved answer of that request\n"
	"  --inflate X       saturation target, GPU request / capacity (default 1.3)\n"
	"  --seed N          random seed for the sampled pods (default 42)\n"
	"  --seeds A-B       run seeds A..B and average the curves\n"
	"  --shuffle         offer the trace's pods in a seeded random order (what the\n"
	"                    FGD artifact did for its published curves) instead of\n"
	"                    trace order\n"
	"  --policy P        frag (default: fragmentation-aware, the workload is the pod\n"
	"                    list), fgd (the same without our balance term: FGD's\n"
	"                    measure alone) or bestfit (the core's default, no workload)\n"
	"  --published FILE  published curves (default: published_allocation_curves.csv\n"
	"                    beside the pod list)\n"
	"  --replay          time replay instead of saturation (same as 'sim replay')\n"
	"  --plot FILE.svg   (replay) write utilisation and queue length over time\n"
	"  --speedup N       (replay) divide arrival times by N, durations unchanged: the\n"
	"                    openb list is a sparse snapshot (a few dozen GPUs busy at\n"
	"                    once), so N of 1000 or more is what loads the fleet\n"
	"  --samples N       (replay) points over time in the plot and JSON (default 400)\n"
	"  --write-fleet F   (openb) write the node list as a fleet file for suanlid\n"
	"                    (same nodes, order, names, CPUs in thousandths: what\n"
	"                    bench/openb_live.c serves) and exit\n"
	"  --json            print JSON: {\"allocation_curve\":[131 percents],\n"
	"                    \"failed_pods\":N,\"seed\":N,\"pods\":N,...} (with --seeds: the\n"
	"                    means, and \"runs\" per seed)\n";

struct sim_args {
	const char *nodes, *pods, *jobs, *workload, *published, *plot;
	const char *history, *server, *token; /* --history FILE; --from-controller */
	const char *write_fleet;
	bool from_controller;
	char nodes_buf[1024], pods_buf[1024], pub_buf[1024];
	int inflate_pct, seed_lo, seed_hi, samples;
	long speedup;
	bool json, replay, bestfit, shuffle, fgd;
};

static const char *policy_name(const struct sim_args *a)
{
	return a->bestfit ? "bestfit" : a->fgd ? "fgd" : "frag";
}

static const char *trace_dir(void)
{
	const char *e = getenv("SUANLI_TRACES");
	return e && *e ? e : SIM_DEFAULT_DIR;
}

static int parse_inflate(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !(v >= 0.01) || v > SIM_MAX_INFLATE_PCT / 100.0)
		return -1;
	return (int)lround(v * 100);
}

static int sim_parse(int argc, char **argv, struct sim_args *a)
{
	static const struct option opts[] = {
		{"nodes", required_argument, NULL, 'n'},    {"pods", required_argument, NULL, 'p'},
		{"jobs", required_argument, NULL, 'J'},     {"workload", required_argument, NULL, 'w'},
		{"inflate", required_argument, NULL, 'i'},  {"seed", required_argument, NULL, 's'},
		{"seeds", required_argument, NULL, 'S'},    {"policy", required_argument, NULL, 'P'},
		{"published", required_argument, NULL, 'u'}, {"replay", no_argument, NULL, 'r'},
		{"plot", required_argument, NULL, 'o'},     {"samples", required_argument, NULL, 'N'},
		{"json", no_argument, NULL, 'j'},           {"help", no_argument, NULL, 'h'},
		{"shuffle", no_argument, NULL, 'x'},        {"speedup", required_argument, NULL, 'X'},
		{"from-controller", no_argument, NULL, 'F'}, {"history", required_argument, NULL, 'H'},
		{"server", required_argument, NULL, CLIENT_OPT_SERVER},
		{"token", required_argument, NULL, CLIENT_OPT_TOKEN},
		{"write-fleet", required_argument, NULL, 'W'},
		{0, 0, 0, 0}};
	int c;
	long v;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': a->nodes = optarg; break;
		case 'p': a->pods = optarg; break;
		case 'J': a->jobs = optarg; break;
		case 'w': a->workload = optarg; break;
		case 'u': a->published = optarg; break;
		case 'o': a->plot = optarg; break;
		case 'r': a->replay = true; break;
		case 'F': a->from_controller = true; break;
		case 'H': a->history = optarg; break;
		case 'W': a->write_fleet = optarg; break;
		case CLIENT_OPT_SERVER: a->server = optarg; break;
		case CLIENT_OPT_TOKEN: a->token = optarg; break;
		case 'j': a->json = true; break;
		case 'x': a->shuffle = true; break;
		case 'X':
			if ((a->speedup = cli_parse_int("sim", "--speedup", optarg, 1, 1000000)) < 0)
				return CLI_EXIT_USAGE;
			break;
		case 'i':
			if ((a->inflate_pct = parse_inflate(optarg)) < 1)
				return cli_usage_error("sim", "--inflate: expected a number in "
						       "0.01..%d, got '%s'",
						       SIM_MAX_INFLATE_PCT / 100, optarg);
			break;
		case 's':
			if ((v = cli_parse_int("sim", "--seed", optarg, 0, 2147483647)) < 0)
				return CLI_EXIT_USAGE;
			a->seed_lo = a->seed_hi = (int)v;
			break;
		case 'S': {
			char *end;
			long lo = strtol(optarg, &end, 10), hi = lo;
			if (*end == '-')
				hi = strtol(end + 1, &end, 10);
			if (*end || lo < 0 || hi < lo || hi > 2147483647 || hi - lo >= SIM_MAX_SEEDS)
				return cli_usage_error("sim", "--seeds: expected A-B with 0 <= A <= B "
						       "and at most %d seeds, got '%s'",
						       SIM_MAX_SEEDS, optarg);
			a->seed_lo = (int)lo;
			a->seed_hi = (int)hi;
			break;
		}
		case 'P':
			a->bestfit = !strcmp(optarg, "bestfit");
			a->fgd = !strcmp(optarg, "fgd");
			if (!a->bestfit && !a->fgd && strcmp(optarg, "frag"))
				return cli_usage_error("sim", "--policy: expected frag, fgd or bestfit, "
						       "got '%s'", optarg);
			break;
		case 'N':
			if ((v = cli_parse_int("sim", "--samples", optarg, 2, SIM_MAX_SAMPLES)) < 0)
				return CLI_EXIT_USAGE;
			a->samples = (int)v;
			break;
		case 'h': fputs(sim_help, stdout); return -1;
		default: return cli_usage_error("sim", "unknown option");
		}
	}
	if (optind < argc)
		return cli_usage_error("sim", "unexpected argument '%s'", argv[optind]);
	if (a->pods && (a->workload || a->jobs))
		return cli_usage_error("sim", "give one of --pods, --workload and --jobs");
	if (a->jobs && !a->replay)
		return cli_usage_error("sim", "--jobs needs a time replay (sim replay)");
	if (a->plot && !a->replay)
		return cli_usage_error("sim", "--plot needs a time replay (sim replay)");
	if ((a->history || a->from_controller) && (!a->replay || a->pods || a->jobs || a->nodes ||
						   a->workload || (a->history && a->from_controller)))
		return cli_usage_error("sim", "--from-controller and --history replay the controller's "
				       "own fleet and leases: 'sim replay' without --nodes, --pods or --jobs");
	if (a->write_fleet && (a->replay || a->history || a->from_controller))
		return cli_usage_error("sim", "--write-fleet writes the node list of 'sim openb'");
	if (a->history || a->from_controller)
		return CLI_EXIT_OK;
	if (!a->nodes) {
		snprintf(a->nodes_buf, sizeof(a->nodes_buf), "%s/openb_node_list_gpu_node.csv",
			 trace_dir());
		a->nodes = a->nodes_buf;
	}
	if (!a->pods && !a->jobs) {
		snprintf(a->pods_buf, sizeof(a->pods_buf), "%s/openb_pod_list_%s.csv", trace_dir(),
			 a->workload ? a->workload : "default");
		a->pods = a->pods_buf;
	}
	return CLI_EXIT_OK;
}

/* ---- published curves --------------------------------------------------- */

#define PUB_POLICIES 8
struct published {
	int n;
	char name[PUB_POLICIES][32];
	double sum[PUB_POLICIES][SIM_CURVE_POINTS];
	int runs[PUB_POLICIES];
};

/* Averages the rows of workload per policy. Missing or unreadable: n = 0. */
static void published_load(const char *path, const char *workload, struct published *pub)
{
	memset(pub, 0, sizeof(*pub));
	char *text;
	size_t len;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (sl_read_file(path, SIM_MAX_PUBLISHED, &text, &len, &d) != SL_OK)
		return;
	size_t wl = strlen(workload);
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(line, workload, wl) || line[wl] != ',')
			continue;
		char *pol = line + wl + 1, *comma = strchr(pol, ',');
		if (!comma)
			continue;
		*comma = '\0';
		const char *name = strchr(pol, '-') ? strchr(pol, '-') + 1 : pol;
		int k = 0;
		while (k < pub->n && strcmp(pub->name[k], name))
			k++;
		if (k == pub->n) {
			if (pub->n == PUB_POLICIES)
				continue;
			snprintf(pub->name[pub->n++], sizeof(pub->name[0]), "%s", name);
		}
		/* tune, seed, total_gpus, then the 131 points */
		char *s = comma + 1;
		for (int skip = 0; skip < 3 && s; skip++)
			s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL;
		double vals[SIM_CURVE_POINTS];
		int got = 0;
		while (s && got < SIM_CURVE_POINTS) {
			char *end;
			vals[got] = strtod(s, &end);
			if (end == s)
				break;
			got++;
			s = *end == ',' ? end + 1 : NULL;
		}
		if (got != SIM_CURVE_POINTS)
			continue;
		for (int i = 0; i < SIM_CURVE_POINTS; i++)
			pub->sum[k][i] += vals[i];
		pub->runs[k]++;
	}
	free(text);
}

static double pub_at(const struct published *pub, int k, int pct)
{
	return pub->runs[k] ? pub->sum[k][pct] / pub->runs[k] : 0;
}

/* "dir/openb_pod_list_default.csv" -> "openb_pod_list_default". */
static void workload_name(const char *path, char *out, size_t n)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	snprintf(out, n, "%s", base);
	char *dot = strrchr(out, '.');
	if (dot && !strcmp(dot, ".csv"))
		*dot = '\0';
}

/* ---- loading ------------------------------------------------------------ */

struct sim_input {
	struct fleet f;
	bool fleet_ok;
	struct sim_node *nodes;
	int nnodes, skipped;
	struct sim_pod *pods;
	int npods;
	struct place_class *cls;
	int ncls;
};

static void input_release(struct sim_input *in)
{
	if (in->fleet_ok)
		fleet_release(&in->f);
	free(in->nodes);
	free(in->pods);
	free(in->cls);
}

/* The controller's history: its fleet file and its leases as pods. */
static enum sl_err history_load(const struct sim_args *a, struct sim_input *in, struct sl_diag *d)
{
	char *text = NULL, *fy = NULL;
	size_t len = 0;
	enum sl_err e;
	const char *what = a->history ? a->history : "GET /v1/placement/history";
	if (a->history) {
		e = sl_read_file(a->history, SIM_MAX_FILE, &text, &len, d);
		if (e)
			return e;
	} else {
		struct client cl;
		client_init(&cl, "sim replay");
		if (a->server)
			cl.server = a->server;
		if (a->token)
			cl.token = a->token;
		json_t *ans = NULL;
		int rc = client_open(&cl);
		if (rc == CLI_EXIT_OK)
			rc = client_call(&cl, "GET", "/v1/placement/history", NULL, NULL, &ans);
		client_close(&cl);
		if (rc != CLI_EXIT_OK || !ans)
			return sl_diag_set(d, SL_EIO, "could not read the controller's history");
		text = json_dumps(ans, JSON_COMPACT);
		json_decref(ans);
		if (!text)
			return sl_diag_set(d, SL_ENOMEM, "out of memory");
		len = strlen(text);
	}
	int64_t t0;
	int skipped;
	e = sim_parse_history(text, len, what, &in->pods, &in->npods, &fy, &t0, &skipped, d);
	free(text);
	if (e == SL_OK && !fy)
		e = sl_diag_set(d, SL_EINVAL, "%s holds no fleet file", what);
	if (e == SL_OK) {
		e = fleet_init(&in->f);
		in->fleet_ok = e == SL_OK;
	}
	if (e == SL_OK)
		e = fleet_load_yaml(&in->f, fy, strlen(fy), "the controller's fleet", d);
	free(fy);
	if (e == SL_OK && skipped && !a->json)
		fprintf(stderr, "suanli: %d leases ended without ever starting; not replayed\n", skipped);
	return e;
}

static bool input_load(const struct sim_args *a, struct sim_input *in)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	memset(in, 0, sizeof(*in));
	if (a->history || a->from_controller) {
		enum sl_err e = history_load(a, in, &d);
		if (e == SL_OK && in->npods == 0)
			e = sl_diag_set(&d, SL_EINVAL, "the history holds no leases");
		if (e == SL_OK && !a->bestfit)
			e = sim_workload(&in->f, in->pods, in->npods, &in->cls, &in->ncls, &d);
		if (e != SL_OK) {
			cli_print_diag(&d);
			input_release(in);
			return false;
		}
		return true;
	}
	char *text = NULL;
	size_t len;
	enum sl_err e = sl_read_file(a->nodes, SIM_MAX_FILE, &text, &len, &d);
	if (e == SL_OK)
		d.file = NULL; /* the parsers name the file themselves */
	if (e == SL_OK)
		e = sim_parse_nodes(text, len, a->nodes, &in->nodes, &in->nnodes, &d);
	free(text);
	text = NULL;
	if (e == SL_OK) {
		e = fleet_init(&in->f);
		in->fleet_ok = e == SL_OK;
	}
	if (e == SL_OK)
		e = sim_build_fleet(&in->f, in->nodes, in->nnodes, &in->skipped, &d);
	const char *pf = a->jobs ? a->jobs : a->pods;
	if (e == SL_OK) {
		e = sl_read_file(pf, SIM_MAX_FILE, &text, &len, &d);
		if (e == SL_OK)
			d.file = NULL;
	}
	if (e == SL_OK)
		e = a->jobs ? sim_parse_jobs(text, len, pf, &in->pods, &in->npods, &d)
			    : sim_parse_pods(text, len, pf, &in->pods, &in->npods, &d);
	free(text);
	if (e == SL_OK && in->npods == 0)
		e = sl_diag_set(&d, SL_EINVAL, "%s: no pods", pf);
	if (e == SL_OK && !a->bestfit)
		e = sim_workload(&in->f, in->pods, in->npods, &in->cls, &in->ncls, &d);
	if (e != SL_OK) {
		cli_print_diag(&d);
		if (e == SL_EIO)
			fprintf(stderr, "  hint: the traces live in %s (set SUANLI_TRACES or give "
					"--nodes/--pods)\n", trace_dir());
		input_release(in);
		return false;
	}
	return true;
}

static enum sl_err make_placer(const struct sim_args *a, struct sim_input *in,
			       struct placer **p, struct sl_diag *d)
{
	enum sl_err e = placer_new(&in->f, p);
	if (e != SL_OK)
		return sl_diag_set(d, e, "cannot build the placer");
	if (!a->bestfit && (e = placer_set_workload(*p, in->cls, in->ncls, d)) != SL_OK) {
		placer_free(*p);
		*p = NULL;
	}
	if (e == SL_OK && a->fgd)
		placer_set_frag_balance(*p, false);
	return e;
}

/* ---- the node list as a fleet file -------------------------------------- */

/* The fleet sim_build_fleet made, as a fleet file suanlid loads into the same
 * fleet: its custom models and types in the same order, one site, fabric and
 * leaf called "sim", every node shareable, in node-list order (placement ties
 * break by name and index, so a controller on this file decides as the sim). */
static int write_fleet(const char *path, const struct sim_input *in)
{
	const struct fleet *f = &in->f;
	FILE *o = fopen(path, "w");
	if (!o) {
		fprintf(stderr, "suanli: cannot write %s: %s\n", path, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	fprintf(o, "# openb node list as a suanli fleet (suanli sim openb --write-fleet)\n"
		   "gpu_models:\n");
	for (int i = 0; i < f->nmodels; i++) {
		const struct gpu_model *m = f->models[i];
		fprintf(o, "  - {name: \"%s\", vendor: \"%s\", memory_gib: %d, pcie_gen: %d}\n",
			m->name, m->vendor ? m->vendor : "unknown", m->mem_gib, m->pcie_gen);
	}
	fprintf(o, "node_types:\n");
	for (int i = topo_builtin_count(); i < f->ntypes; i++) {
		const struct node_type *t = &f->types[i];
		fprintf(o, "  - {name: \"%s\", gpu: \"%s\", gpus: %d, %s: %d, memory_gib: %d}\n",
			t->name, t->gpu->name, t->ngpus, t->cpu_milli ? "cpu_milli" : "cpus", t->cpus,
			t->mem_gib);
	}
	fprintf(o, "sites:\n  - name: sim\n    region: sim\n    fabrics:\n      - name: sim\n"
		   "        kind: roce\n        gbps: 100\n        leaves:\n          - name: sim\n"
		   "            nodes:\n");
	for (int i = 0; i < f->nnodes; i++)
		fprintf(o, "              - {name: \"%s\", type: \"%s\", shareable: %s}\n",
			f->nodes[i].name, fleet_node_type(f, i)->name,
			f->nodes[i].shareable ? "true" : "false");
	if (fclose(o) != 0) {
		fprintf(stderr, "suanli: cannot write %s: %s\n", path, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	int gpus = 0;
	for (int i = 0; i < f->nnodes; i++)
		gpus += fleet_node_type(f, i)->ngpus;
	fprintf(stderr, "suanli: wrote %s: %d nodes, %d GPUs (%d nodes without GPUs left out)\n",
		path, f->nnodes, gpus, in->skipped);
	return CLI_EXIT_OK;
}

/* ---- saturation --------------------------------------------------------- */

static double pct(int64_t num, int64_t den)
{
	return den ? 100.0 * (double)num / (double)den : 0;
}

static json_t *curve_json(const double *c)
{
	json_t *arr = json_array();
	for (int i = 0; i < SIM_CURVE_POINTS; i++)
		json_array_append_new(arr, json_real(round(c[i] * 1000) / 1000));
	return arr;
}

static int run_saturation(const struct sim_args *a, struct sim_input *in)
{
	int nseeds = a->seed_hi - a->seed_lo + 1;
	double avg[SIM_CURVE_POINTS] = {0}, failed = 0;
	json_t *runs = json_array();
	int64_t cap = 0;
	double pods = 0; /* offered, mean over seeds */
	for (int s = a->seed_lo; s <= a->seed_hi; s++) {
		struct sl_diag d;
		sl_diag_clear(&d);
		struct placer *p = NULL;
		struct sim_sat_result r;
		enum sl_err e = make_placer(a, in, &p, &d);
		if (e == SL_OK)
			e = sim_saturate(p, in->pods, in->npods, a->inflate_pct, (uint64_t)s, a->shuffle,
					 &r, &d);
		placer_free(p);
		if (e != SL_OK) {
			cli_print_diag(&d);
			json_decref(runs);
			return CLI_EXIT_FAIL;
		}
		double c[SIM_CURVE_POINTS];
		for (int i = 0; i < SIM_CURVE_POINTS; i++) {
			c[i] = pct(r.alloc_at[i], r.capacity_milli);
			avg[i] += c[i] / nseeds;
		}
		failed += (double)r.failed / nseeds;
		cap = r.capacity_milli;
		pods += (double)r.pods / nseeds;
		json_array_append_new(runs, json_pack("{s:i, s:o, s:i, s:i}", "seed", s,
						      "allocation_curve", curve_json(c),
						      "failed_pods", r.failed, "pods", r.pods));
		if (!a->json && isatty(2) && nseeds > 1)
			fprintf(stderr, "\rseed %d done (%d of %d)", s, s - a->seed_lo + 1, nseeds);
	}
	if (!a->json && isatty(2) && nseeds > 1)
		fprintf(stderr, "\r%40s\r", "");
	char wname[256];
	workload_name(a->pods, wname, sizeof(wname));
	struct published pub;
	char pubpath[1024];
	if (a->published) {
		snprintf(pubpath, sizeof(pubpath), "%s", a->published);
	} else {
		snprintf(pubpath, sizeof(pubpath), "%s", a->pods);
		char *slash = strrchr(pubpath, '/');
		snprintf(slash ? slash + 1 : pubpath,
			 sizeof(pubpath) - (size_t)(slash ? slash + 1 - pubpath : 0),
			 "published_allocation_curves.csv");
	}
	published_load(pubpath, wname, &pub);
	const char *policy = policy_name(a);
	if (a->json) {
		json_t *o = json_pack("{s:o, s:f, s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:f, s:s}",
				      "allocation_curve", curve_json(avg), "failed_pods",
				      round(failed * 100) / 100, "pods", (int)lround(pods), "workload", wname,
				      "policy", policy, "nodes", in->f.nnodes, "gpus",
				      (int)(cap / 1000), "trace_pods", in->npods, "seed", a->seed_lo,
				      "inflate", a->inflate_pct / 100.0, "order",
				      a->shuffle ? "shuffled" : "trace");
		if (nseeds == 1) /* a count, not a mean */
			json_object_set_new(o, "failed_pods", json_integer((json_int_t)lround(failed)));
		if (nseeds > 1) {
			json_object_set_new(o, "seeds", json_pack("[i, i]", a->seed_lo, a->seed_hi));
			json_object_set_new(o, "runs", runs);
		} else {
			json_decref(runs);
		}
		json_t *pj = json_object();
		for (int k = 0; k < pub.n; k++) {
			double c[SIM_CURVE_POINTS];
			for (int i = 0; i < SIM_CURVE_POINTS; i++)
				c[i] = pub_at(&pub, k, i);
			json_object_set_new(pj, pub.name[k], curve_json(c));
		}
		json_object_set_new(o, "published", pj);
		json_dumpf(o, stdout, JSON_REAL_PRECISION(6) | JSON_COMPACT);
		putchar('\n');
		json_decref(o);
		return CLI_EXIT_OK;
	}
	json_decref(runs);
	printf("suanli sim openb: %d nodes, %d GPUs; %s (%d pods; %d offered in all),\n"
	       "policy %s, %s order, inflate %d%%, seed%s %d", in->f.nnodes, (int)(cap / 1000),
	       wname, in->npods, (int)lround(pods), policy, a->shuffle ? "shuffled" : "trace",
	       a->inflate_pct, nseeds > 1 ? "s" : "", a->seed_lo);
	if (nseeds > 1)
		printf("-%d (averaged)", a->seed_hi);
	printf("\n\nGPU allocation ratio (%%) at arrived GPU demand:\n  %-8s %8s", "demand",
	       "suanli");
	for (int k = 0; k < pub.n; k++)
		printf(" %*s", (int)(strlen(pub.name[k]) > 7 ? strlen(pub.name[k]) : 7), pub.name[k]);
	printf("\n");
	for (int q = 100; q <= 130; q += 10) {
		if (q > a->inflate_pct)
			break;
		printf("  %6d%%  %8.2f", q, avg[q]);
		for (int k = 0; k < pub.n; k++)
			printf(" %*.2f", (int)(strlen(pub.name[k]) > 7 ? strlen(pub.name[k]) : 7),
			       pub_at(&pub, k, q));
		printf("\n");
	}
	if (!pub.n)
		printf("  (no published curves for %s in %s)\n", wname, pubpath);
	printf("\nfailed pods: %.1f%s\n", failed, nseeds > 1 ? " (mean over seeds)" : "");
	return CLI_EXIT_OK;
}

/* ---- time replay -------------------------------------------------------- */

static void progress_bar(void *arg, int64_t done, int64_t total)
{
	(void)arg;
	int w = 40, fill = total ? (int)(w * done / total) : w;
	fprintf(stderr, "\r[%.*s%*s] %3d%%", fill, "########################################",
		w - fill, "", total ? (int)(100 * done / total) : 100);
	if (done >= total)
		fprintf(stderr, "\r%*s\r", w + 8, "");
}

static void fmt_dur(double s, char *buf, size_t n)
{
	if (s < 120)
		snprintf(buf, n, "%.0f s", s);
	else if (s < 7200)
		snprintf(buf, n, "%.1f min", s / 60);
	else if (s < 172800)
		snprintf(buf, n, "%.1f h", s / 3600);
	else
		snprintf(buf, n, "%.1f days", s / 86400);
}

static int write_plot(const char *path, const struct sim_replay_result *r)
{
	int n = r->nsamples;
	double *x = malloc((size_t)n * sizeof(*x)), *u = malloc((size_t)n * sizeof(*u)),
	       *q = malloc((size_t)n * sizeof(*q));
	int rc = CLI_EXIT_FAIL;
	if (!x || !u || !q) {
		fprintf(stderr, "suanli: out of memory\n");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		x[i] = (double)(r->samples[i].t - r->t0);
		u[i] = pct(r->samples[i].alloc_milli, r->capacity_milli);
		q[i] = r->samples[i].queue;
	}
	struct svg_chart c = {.title = "suanli sim replay: GPU utilisation and queue length",
			      .xlabel = "time since the first arrival", .x = x, .npoints = n,
			      .x_seconds = true,
			      .npanels = 2};
	c.panels[0] = (struct svg_panel){"GPUs allocated (%)", u, 100, "#1f77b4"};
	c.panels[1] = (struct svg_panel){"pods queued", q, 0, "#d62728"};
	char *svg;
	size_t len;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (svg_render(&c, &svg, &len, &d) != SL_OK) {
		cli_print_diag(&d);
		goto out;
	}
	FILE *fp = fopen(path, "w");
	if (!fp || fwrite(svg, 1, len, fp) != len) {
		fprintf(stderr, "suanli: cannot write %s\n", path);
		if (fp)
			fclose(fp);
	} else if (fclose(fp) != 0) {
		fprintf(stderr, "suanli: cannot write %s\n", path);
	} else {
		rc = CLI_EXIT_OK;
	}
	free(svg);
out:
	free(x);
	free(u);
	free(q);
	return rc;
}

static int run_replay(const struct sim_args *a, struct sim_input *in)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	struct placer *p = NULL;
	struct sim_replay_result r;
	memset(&r, 0, sizeof(r));
	for (int i = 0; i < in->npods; i++)
		if (in->pods[i].start > 0)
			in->pods[i].start /= a->speedup;
	enum sl_err e = make_placer(a, in, &p, &d);
	if (e == SL_OK)
		e = sim_replay(p, in->pods, in->npods, a->samples,
			       !a->json && isatty(2) ? progress_bar : NULL, NULL, &r, &d);
	placer_free(p);
	if (e != SL_OK) {
		cli_print_diag(&d);
		return CLI_EXIT_FAIL;
	}
	int rc = a->plot ? write_plot(a->plot, &r) : CLI_EXIT_OK;
	if (a->json) {
		json_t *util = json_array(), *queue = json_array();
		for (int i = 0; i < r.nsamples; i++) {
			json_array_append_new(util, json_pack("[I, f]", (json_int_t)r.samples[i].t,
							      round(pct(r.samples[i].alloc_milli,
									r.capacity_milli) * 100) / 100));
			json_array_append_new(queue, json_pack("[I, i]", (json_int_t)r.samples[i].t,
							       r.samples[i].queue));
		}
		json_t *o = json_pack(
			"{s:i, s:i, s:i, s:i, s:{s:f, s:I, s:I, s:I}, s:f, s:f, s:f, s:i, s:I, s:I,"
			" s:i, s:s, s:I, s:o, s:o}",
			"pods", r.pods, "started", r.started, "never_started", r.never_started,
			"unplaceable", r.unplaceable, "queue_delay_s", "mean", r.delay_mean, "median",
			(json_int_t)r.delay_median, "p99", (json_int_t)r.delay_p99, "max",
			(json_int_t)r.delay_max, "gpu_util_mean", round(r.util_mean * 10000) / 100,
			"stranded_gpus_mean", round(r.stranded_mean * 100) / 100, "stranded_gpus_max",
			r.stranded_max, "max_queue", r.max_queue, "t0", (json_int_t)r.t0, "t1",
			(json_int_t)r.t1, "gpus", (int)(r.capacity_milli / 1000), "policy",
			policy_name(a), "speedup", (json_int_t)a->speedup,
			"utilisation", util, "queue", queue);
		json_dumpf(o, stdout, JSON_REAL_PRECISION(8) | JSON_COMPACT);
		putchar('\n');
		json_decref(o);
	} else {
		char m[32], md[32], p99[32], mx[32], span[32];
		fmt_dur(r.delay_mean, m, sizeof(m));
		fmt_dur((double)r.delay_median, md, sizeof(md));
		fmt_dur((double)r.delay_p99, p99, sizeof(p99));
		fmt_dur((double)r.delay_max, mx, sizeof(mx));
		fmt_dur((double)(r.t1 - r.t0), span, sizeof(span));
		printf("suanli sim replay: %d nodes, %d GPUs; %d pods over %s, policy %s, "
		       "speedup %ld\n"
		       "  started %d, never started %d, unplaceable (too big for any node) %d\n"
		       "  queueing delay: mean %s, median %s, p99 %s, max %s\n"
		       "  GPU allocation: %.2f%% time-weighted mean\n"
		       "  stranded GPUs (free while the queue head fits nowhere): mean %.1f, "
		       "max %.1f\n  longest queue: %d pods\n",
		       in->f.nnodes, (int)(r.capacity_milli / 1000), r.pods, span,
		       policy_name(a), a->speedup, r.started, r.never_started, r.unplaceable, m,
		       md, p99, mx, r.util_mean * 100, r.stranded_mean, r.stranded_max,
		       r.max_queue);
		if (a->plot && rc == CLI_EXIT_OK)
			printf("  plot: %s\n", a->plot);
	}
	sim_replay_result_release(&r);
	return rc;
}

int cmd_sim(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(sim_help, stdout);
		return CLI_EXIT_OK;
	}
	if (argc < 2 || (strcmp(argv[1], "openb") && strcmp(argv[1], "replay")))
		return cli_usage_error("sim", "expected 'sim openb' or 'sim replay'");
	struct sim_args a;
	memset(&a, 0, sizeof(a));
	a.inflate_pct = 130;
	a.seed_lo = a.seed_hi = 42;
	a.samples = 400;
	a.speedup = 1;
	a.replay = !strcmp(argv[1], "replay");
	int rc = sim_parse(argc - 1, argv + 1, &a);
	if (rc != CLI_EXIT_OK)
		return rc < 0 ? CLI_EXIT_OK : rc;
	struct sim_input in;
	if (!input_load(&a, &in))
		return CLI_EXIT_FAIL;
	rc = a.write_fleet ? write_fleet(a.write_fleet, &in)
	     : a.replay    ? run_replay(&a, &in)
			   : run_saturation(&a, &in);
	input_release(&in);
	return rc;
}

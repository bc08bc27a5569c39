/* cmd_plan.c - `suanli plan`: place one request on a fleet file, offline, with
 * the same placement core the controller uses, and explain the choice. */
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "file.h"
#include "place.h"
#include "place_json.h"

#define PLAN_MAX_STATE (64u << 20) /* bound on a --state file (jansson holds ~18x) */

static const char plan_help[] =
	"usage: suanli plan --fleet FILE --gpus N [OPTIONS]\n\n"
	"Places one request on the fleet (empty, or as described by --state) and\n"
	"prints the chosen nodes and GPUs with the score that made them win; a request\n"
	"that cannot be placed prints which constraint failed and how close the best\n"
	"candidate came (exit status 1).\n\n"
	"  --fleet FILE       fleet file (docs/fleet-file.md)\n"
	"  --gpus N           whole GPUs wanted (over several nodes when N is larger\n"
	"                     than one node, or with --per-node)\n"
	"  --gpu-milli M      instead of --gpus: a share of one GPU in thousandths (1-999),\n"
	"                     on nodes marked shareable\n"
	"  --model M[,M2]     GPU model(s), e.g. h100-sxm,h800-sxm\n"
	"  --per-node K       GPUs per node for a multi-node gang\n"
	"  --min-bw GBPS      minimum GPU-to-GPU bandwidth inside each node (GB/s)\n"
	"  --min-mem GIB      minimum memory per GPU\n"
	"  --region R         only nodes in region R (data residency)\n"
	"  --site S           only nodes at site S\n"
	"  --tenant T         the tenant asking (colocated nodes serve only their owner)\n"
	"  --owned            only nodes the tenant owns (with --tenant)\n"
	"  --exclusive        whole nodes: every GPU of each chosen node\n"
	"  --one-leaf         a multi-node gang under one leaf switch only\n"
	"  --cpus N           CPU cores per node (default: the node's share per GPU)\n"
	"  --mem-gib N        host memory per node (default: the node's share per GPU)\n"
	"  --state FILE       GPUs already in use: [{\"node\":\"n1\",\"gpus\":[0,3]}, ...]\n"
	"  --json             print {\"placement\":[{\"node\":..,\"gpus\":[..]}],\"score\":{..}}\n";

struct plan_args {
	const char *fleet, *state, *models;
	int json;
	struct place_request req;
};

static int plan_parse(int argc, char **argv, struct plan_args *a)
{
	static const struct option opts[] = {
		{"fleet", required_argument, NULL, 'f'},    {"gpus", required_argument, NULL, 'g'},
		{"gpu-milli", required_argument, NULL, 'M'}, {"model", required_argument, NULL, 'm'},
		{"per-node", required_argument, NULL, 'k'}, {"min-bw", required_argument, NULL, 'b'},
		{"min-mem", required_argument, NULL, 'G'},  {"region", required_argument, NULL, 'r'},
		{"site", required_argument, NULL, 's'},     {"tenant", required_argument, NULL, 't'},
		{"owned", no_argument, NULL, 'o'},          {"exclusive", no_argument, NULL, 'x'},
		{"cpus", required_argument, NULL, 'c'},     {"mem-gib", required_argument, NULL, 'e'},
		{"state", required_argument, NULL, 'S'},    {"json", no_argument, NULL, 'j'},
		{"one-leaf", no_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'h'},           {0, 0, 0, 0}};
	struct place_request *r = &a->req;
	long v = 0;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': a->fleet = optarg; break;
		case 'S': a->state = optarg; break;
		case 'm': a->models = optarg; break;
		case 'r': r->region = optarg; break;
		case 's': r->site = optarg; break;
		case 't': r->tenant = optarg; break;
		case 'o': r->pool_owned = true; break;
		case 'x': r->exclusive = true; break;
		case 'L': r->one_leaf = true; break;
		case 'j': a->json = 1; break;
		case 'h': fputs(plan_help, stdout); return 1;
		case 'g':
			if ((v = cli_parse_int("plan", "--gpus", optarg, 1, PLACE_MAX_GPUS)) < 0)
				return -1;
			r->gpus = (int)v;
			break;
		case 'M':
			if ((v = cli_parse_int("plan", "--gpu-milli", optarg, 1, 999)) < 0)
				return -1;
			r->gpu_milli = (int)v;
			break;
		case 'k':
			if ((v = cli_parse_int("plan", "--per-node", optarg, 1, TOPO_MAX_GPUS)) < 0)
				return -1;
			r->per_node = (int)v;
			break;
		case 'b':
			if ((v = cli_parse_int("plan", "--min-bw", optarg, 0, 1000000)) < 0)
				return -1;
			r->min_bw_gbps = (int)v;
			break;
		case 'G':
			if ((v = cli_parse_int("plan", "--min-mem", optarg, 0, 1000000)) < 0)
				return -1;
			r->min_mem_gib = (int)v;
			break;
		case 'c':
			if ((v = cli_parse_int("plan", "--cpus", optarg, 1, 1000000)) < 0)
				return -1;
			r->cpus = (int)v;
			break;
		case 'e':
			if ((v = cli_parse_int("plan", "--mem-gib", optarg, 1, 1000000000)) < 0)
				return -1;
			r->mem_mib = v * 1024;
			break;
		default: return -1;
		}
	}
	if (optind != argc) {
		cli_usage_error("plan", "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (!a->fleet) {
		cli_usage_error("plan", "--fleet FILE is required");
		return -1;
	}
	if (!r->gpus == !r->gpu_milli) {
		cli_usage_error("plan", "give either --gpus N or --gpu-milli M");
		return -1;
	}
	if (r->pool_owned && !r->tenant) {
		cli_usage_error("plan", "--owned needs --tenant T (whose servers?)");
		return -1;
	}
	return 0;
}

/* Splits "a,b" into req->models in place (the string is modified). An empty
 * name is an error: strtok would skip it, and `--model ''` would then mean
 * "any model", the opposite of what was typed. */
static int plan_models(char *list, struct place_request *r)
{
	for (char *tok = list, *next; tok; tok = next) {
		next = strchr(tok, ',');
		if (next)
			*next++ = '\0';
		if (!*tok) {
			cli_usage_error("plan", "--model has an empty model name; expected names "
					"separated by commas, such as h100-sxm,h800-sxm");
			return -1;
		}
		if (r->nmodels == PLACE_MAX_MODELS) {
			cli_usage_error("plan", "--model takes at most %d models", PLACE_MAX_MODELS);
			return -1;
		}
		r->models[r->nmodels++] = tok;
	}
	return 0;
}

static int plan_load_state(struct placer *p, const char *path)
{
	struct sl_diag d;
	char *text;
	size_t len;
	enum sl_err e;

	sl_diag_clear(&d);
	e = sl_read_file(path, PLAN_MAX_STATE, &text, &len, &d);
	if (e == SL_OK) {
		e = place_state_load(p, text, len, &d);
		free(text);
	}
	if (e != SL_OK) {
		d.file = path;
		cli_print_diag(&d);
		return -1;
	}
	return 0;
}

static int plan_max(int w, const char *s)
{
	int n = (int)strlen(s);
	return n > w ? n : w;
}

static void plan_print(const struct fleet *f, const struct place_request *r,
		       const struct placement *pl)
{
	const struct place_score *s = &pl->score;
	int total = 0;
	char gpus[64];

	for (int i = 0; i < pl->npicks; i++)
		total += __builtin_popcount(pl->picks[i].gpus);
	if (r->gpu_milli)
		printf("Placed %d/1000 of a GPU", r->gpu_milli);
	else
		printf("Placed %d GPU%s", total, total == 1 ? "" : "s");
	printf(" on %d node%s, %d leaf switch%s", s->nodes, s->nodes == 1 ? "" : "s", s->leaves,
	       s->leaves == 1 ? "" : "es");
	if (s->domains)
		printf(", %d NVLink domain%s", s->domains, s->domains == 1 ? "" : "s");
	printf(".\n\n");
	int wn = 4, wt = 4, ws = 4, wl = 4;
	for (int i = 0; i < pl->npicks; i++) {
		const struct fleet_node *n = &f->nodes[pl->picks[i].node];
		wn = plan_max(wn, n->name);
		wt = plan_max(wt, f->types[n->type].name);
		ws = plan_max(ws, f->sites[n->site].name);
		wl = plan_max(wl, f->leaves[n->leaf].name);
	}
	printf("  %-*s  %-*s  %-*s  %-*s  %-9s  %s\n", wn, "NODE", wt, "TYPE", ws, "SITE", wl, "LEAF",
	       "GPUS", "BOTTLENECK");
	for (int i = 0; i < pl->npicks; i++) {
		const struct place_pick *pk = &pl->picks[i];
		const struct fleet_node *n = &f->nodes[pk->node];
		if (pk->milli)
			snprintf(gpus, sizeof(gpus), "%d (%d/1000)", pk->gpu, pk->milli);
		else
			cli_format_gpus(pk->gpus, gpus, sizeof(gpus));
		printf("  %-*s  %-*s  %-*s  %-*s  %-9s  %d GB/s\n", wn, n->name, wt,
		       f->types[n->type].name, ws, f->sites[n->site].name, wl,
		       f->leaves[n->leaf].name, gpus, pk->q.bottleneck_gbps);
	}
	printf("\nWhy these GPUs:\n");
	if (r->gpu_milli)
		printf("  a share of one GPU: packed onto a GPU already shared when one has room\n");
	else if (total == s->nodes)
		printf("  one GPU per node\n");
	else
		printf("  bottleneck %d GB/s, total %d GB/s between the chosen GPUs%s\n",
		       s->bottleneck_gbps, s->total_gbps,
		       s->full_quality ? " (the best these node types offer)" : "");
	printf("  %d NUMA node%s spanned at most per node, %d NIC rail%s%s\n", s->numa_spanned,
	       s->numa_spanned == 1 ? "" : "s", s->nics, s->nics == 1 ? "" : "s",
	       s->nodes > 1 ? (s->rails_aligned ? ", rails aligned across nodes" : ", rails not aligned")
			    : "");
	printf("  leaves %d free GPU%s on the chosen node%s, %d stranded (in no full-speed pair)\n",
	       s->free_after, s->free_after == 1 ? "" : "s", s->nodes == 1 ? "" : "s",
	       s->stranded_after);
	if (s->price_hint)
		printf("  price hint %lld.%02lld per GPU-hour\n", (long long)(s->price_hint / 100),
		       (long long)(s->price_hint % 100));
}

int cmd_plan(int argc, char **argv)
{
	struct plan_args a;
	struct fleet f;
	struct placer *p = NULL;
	struct placement pl;
	struct sl_diag d;
	char *models = NULL;
	int rc = CLI_EXIT_FAIL, pr;

	memset(&a, 0, sizeof(a));
	if ((pr = plan_parse(argc, argv, &a)) != 0)
		return pr > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if (a.models && (!(models = strdup(a.models)) || plan_models(models, &a.req) < 0)) {
		free(models);
		return CLI_EXIT_USAGE;
	}
	if (!cli_load_fleet(a.fleet, &f)) {
		free(models);
		return CLI_EXIT_FAIL;
	}
	sl_diag_clear(&d);
	placement_init(&pl);
	if (placer_new(&f, &p) != SL_OK) {
		fprintf(stderr, "suanli: out of memory\n");
		goto out;
	}
	if (a.state && plan_load_state(p, a.state) < 0)
		goto out;
	enum sl_err e = placer_place(p, &a.req, &pl, &d);
	if (e != SL_OK && e != SL_ENOSPACE) {
		cli_print_diag(&d);
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (a.json) {
		json_t *o = place_to_json(&f, &pl);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else if (e == SL_OK) {
		plan_print(&f, &a.req, &pl);
	} else {
		printf("Cannot place this request: %s\n", pl.why);
		printf("  constraint: %s\n", place_constraint_name(pl.failed));
	}
	rc = e == SL_OK ? CLI_EXIT_OK : CLI_EXIT_FAIL;
out:
	placement_release(&pl);
	placer_free(p);
	fleet_release(&f);
	free(models);
	return rc;
}

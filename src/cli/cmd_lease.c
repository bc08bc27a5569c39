/* cmd_lease.c - `suanli lease create|list|show|release|extend|scale`.
 *
 * Arguments are checked here only as far as a typo deserves a usage error
 * (exit 2) before any network round trip: numbers, durations, plan names.
 * Everything that depends on state (quotas, regions, capacity) is the
 * controller's call, and its message is printed as it comes. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "cli.h"
#include "client.h"
#include "output.h"
#include "plan.h"

#define LEASE_MAX_GPUS 100000 /* bound on --gpus, far above any fleet */
#define LEASE_MAX_MODELS 32   /* names in --model */
#define LEASE_SHOW_NODES 4    /* nodes named in a sentence before "and N more" */

/* ---- sentences ---- */

/* A pick's GPUs ("0-7"), or its share of one ("3, 500/1000"). */
static void share_or_gpus(const json_t *p, char *buf, size_t n)
{
	if (json_integer_value(json_object_get(p, "milli")) > 0)
		snprintf(buf, n, "%lld, %lld/1000", (long long)json_integer_value(json_object_get(p, "gpu")),
			 (long long)json_integer_value(json_object_get(p, "milli")));
	else
		out_gpu_list(json_object_get(p, "gpus"), buf, n);
}

/* "fza-h100-001 (GPUs 0-7), fza-h100-002 (GPUs 0-7) and 3 more" */
static void placement_text(const json_t *placement, char *buf, size_t n)
{
	size_t count = json_array_size(placement), off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < count && i < LEASE_SHOW_NODES && off < n; i++) {
		const json_t *p = json_array_get(placement, i);
		char gpus[256];
		share_or_gpus(p, gpus, sizeof(gpus));
		int w = snprintf(buf + off, n - off, "%s%s (GPU%s %s)",
				 !i ? "" : (i + 1 == count ? " and " : ", "),
				 out_str(p, "node", "?"),
				 json_array_size(json_object_get(p, "gpus")) > 1 ? "s" : "", gpus);
		if (w < 0)
			return;
		off += (size_t)w;
	}
	if (count > LEASE_SHOW_NODES && off < n)
		snprintf(buf + off, n - off, " and %zu more nodes", count - LEASE_SHOW_NODES);
}

/* The last history entry's reason, or NULL. */
static const char *last_reason(const json_t *lease)
{
	const json_t *h = json_object_get(lease, "history");
	size_t n = json_array_size(h);
	const char *r = n ? out_str(json_array_get(h, n - 1), "reason", NULL) : NULL;
	return r && *r ? r : NULL;
}

/* One sentence that says where the lease stands. */
static void print_lease_sentence(const json_t *l)
{
	const char *id = out_str(l, "id", "?"), *state = out_str(l, "state", "?");
	const json_t *q = json_object_get(l, "queue");
	char where[2048];

	if (!strcmp(state, "active")) {
		placement_text(json_object_get(l, "placement"), where, sizeof(where));
		printf("Lease %s is active on %s.\n", id, where);
	} else if (!strcmp(state, "pending")) {
		printf("Lease %s is pending: position %lld in the queue — %s.\n", id,
		       (long long)json_integer_value(json_object_get(q, "position")),
		       out_str(q, "reason", "waiting for capacity"));
	} else if (!strcmp(state, "preempting")) {
		printf("Lease %s is being preempted: it must end by %s.\n", id,
		       out_str(l, "preempt_deadline", "?"));
	} else if (last_reason(l) && strcmp(state, "released") != 0) {
		printf("Lease %s is %s: %s.\n", id, state, last_reason(l));
	} else {
		printf("Lease %s is %s.\n", id, state);
	}
}

/* ---- create ---- */

static const char create_help[] =
	"usage: suanli lease create --gpus N | --gpu-milli M [OPTIONS]\n\n"
	"Asks the controller for GPUs. The lease is active at once when it can be\n"
	"placed, else pending in the queue (see 'suanli queue').\n\n"
	"  --gpus N             whole GPUs wanted (a gang over several nodes when\n"
	"                       N is larger than one node, or with --per-node)\n"
	"  --gpu-milli M        a share of one GPU in thousandths (1..999; 500 is\n"
	"                       half), on nodes the fleet marks shareable. The share\n"
	"                       is scheduling only: the container sees the whole GPU\n"
	"                       and the lease is billed as one GPU (docs/placement.md)\n"
	"  --cpu-milli C        CPUs it needs on its node, in thousandths of a core\n"
	"  --memory-mib MIB     host memory it needs on its node. With either of these\n"
	"                       both are exact (the other 0); without, a lease gets\n"
	"                       the node's CPUs and memory in proportion to its GPUs.\n"
	"                       Alone (no --gpus or --gpu-milli): a lease without GPUs\n"
	"  --model M[,M2]       allowed GPU models, e.g. h100-sxm,h800-sxm\n"
	"  --per-node K         GPUs per node for a multi-node gang\n"
	"  --plan P             hourly (default), monthly or spot\n"
	"  --duration D         how long: 90s, 30m, 2h, 1d, 1h30m\n"
	"  --region R           only nodes in region R\n"
	"  --site S             only nodes at site S\n"
	"  --min-bw GBPS        minimum GPU-to-GPU bandwidth inside each node (GB/s)\n"
	"  --min-mem GIB        minimum memory per GPU\n"
	"  --elastic MIN-MAX    elastic lease: may later scale between MIN and MAX GPUs\n"
	"  --exclusive          whole nodes only\n"
	"  --one-leaf           a multi-node gang under one leaf switch only: it\n"
	"                       waits rather than spread (Slurm's --switches=1)\n"
	"  --on-node-failure fail|replace  when a node it uses goes down: end the\n"
	"                       lease (default), or move it to other GPUs (same NVLink\n"
	"                       domain, leaf, site first) with a new epoch\n"
	"  --tenant T           on behalf of tenant T (admin, operator)\n"
	"  --idempotency-key K  a retry with the same key returns the first answer\n" CLIENT_HELP_OPTS
	"\nExample:\n"
	"  suanli lease create --gpus 16 --model h100-sxm --per-node 8 --duration 2h\n";

enum {
	OPT_GPUS = 0x200, OPT_MODEL, OPT_PER_NODE, OPT_PLAN, OPT_DURATION, OPT_REGION,
	OPT_SITE, OPT_MIN_BW, OPT_MIN_MEM, OPT_ELASTIC, OPT_EXCLUSIVE, OPT_TENANT, OPT_IDEM,
	OPT_BY, OPT_STATE, OPT_ONE_LEAF, OPT_ON_NODE_FAILURE, OPT_ENDED, OPT_GPU_MILLI,
	OPT_CPU_MILLI, OPT_MEMORY_MIB,
};

/* Sets key to the integer s in [min, max]; -1 after a usage error. */
static int set_int(json_t *req, const char *cmd, const char *key, const char *opt,
		   const char *s, long min, long max)
{
	long v = cli_parse_int(cmd, opt, s, min, max);
	if (v < 0)
		return -1;
	json_object_set_new(req, key, json_integer(v));
	return 0;
}

/* "8-32" (or "8:32") -> {"min":8,"max":32}; -1 after a usage error. */
static int set_elastic(json_t *req, const char *cmd, const char *s)
{
	char lo[32], *sep;
	long min, max;
	if (strlen(s) >= sizeof(lo) || !sl_strcpy(lo, sizeof(lo), s) || !(sep = strpbrk(lo, "-:"))) {
		cli_usage_error(cmd, "--elastic expects MIN-MAX, as 8-32, not '%s'", s);
		return -1;
	}
	*sep = '\0';
	if ((min = cli_parse_int(cmd, "--elastic MIN", lo, 1, LEASE_MAX_GPUS)) < 0 ||
	    (max = cli_parse_int(cmd, "--elastic MAX", sep + 1, 1, LEASE_MAX_GPUS)) < 0)
		return -1;
	if (min > max) {
		cli_usage_error(cmd, "--elastic %s: MIN is larger than MAX", s);
		return -1;
	}
	json_object_set_new(req, "elastic", json_pack("{s:I,s:I}", "min", (json_int_t)min,
						      "max", (json_int_t)max));
	return 0;
}

/* One option of lease create into req; -1 after a usage error. */
static int create_opt(json_t *req, const char *cmd, int c, const char *arg)
{
	long v;
	enum plan plan;
	switch (c) {
	case OPT_GPUS: return set_int(req, cmd, "gpus", "--gpus", arg, 1, LEASE_MAX_GPUS);
	case OPT_PER_NODE: return set_int(req, cmd, "per_node", "--per-node", arg, 1, 1024);
	case OPT_GPU_MILLI: return set_int(req, cmd, "gpu_milli", "--gpu-milli", arg, 1, 999);
	case OPT_CPU_MILLI:
		return set_int(req, cmd, "cpu_milli", "--cpu-milli", arg, 0, 2000000000L);
	case OPT_MEMORY_MIB:
		return set_int(req, cmd, "memory_mib", "--memory-mib", arg, 0, 1000000000000L);
	case OPT_MIN_BW: return set_int(req, cmd, "min_bw_gbps", "--min-bw", arg, 0, 1000000);
	case OPT_MIN_MEM: return set_int(req, cmd, "min_mem_gib", "--min-mem", arg, 0, 1000000);
	case OPT_MODEL:
		return client_set_list(req, "models", cmd, "--model", arg, LEASE_MAX_MODELS, "models");
	case OPT_ELASTIC: return set_elastic(req, cmd, arg);
	case OPT_REGION: json_object_set_new(req, "region", json_string(arg)); return 0;
	case OPT_SITE: json_object_set_new(req, "site", json_string(arg)); return 0;
	case OPT_TENANT: json_object_set_new(req, "tenant", json_string(arg)); return 0;
	case OPT_EXCLUSIVE: json_object_set_new(req, "exclusive", json_true()); return 0;
	case OPT_ONE_LEAF: json_object_set_new(req, "one_leaf", json_true()); return 0;
	case OPT_ON_NODE_FAILURE:
		if (strcmp(arg, "fail") && strcmp(arg, "replace")) {
			cli_usage_error(cmd, "--on-node-failure is fail or replace, not '%s'", arg);
			return -1;
		}
		json_object_set_new(req, "on_node_failure", json_string(arg));
		return 0;
	case OPT_PLAN:
		if (plan_parse(arg, &plan, NULL) || !plan_is_lease(plan)) {
			cli_usage_error(cmd, "--plan is hourly, monthly or spot, not '%s'", arg);
			return -1;
		}
		json_object_set_new(req, "plan", json_string(arg));
		return 0;
	case OPT_DURATION:
		if ((v = client_parse_duration(cmd, "--duration", arg)) < 0)
			return -1;
		json_object_set_new(req, "duration_s", json_integer(v));
		return 0;
	default: return -1;
	}
}

static int lease_create(int argc, char **argv)
{
	static const struct option opts[] = {
		{"gpus", required_argument, NULL, OPT_GPUS},
		{"gpu-milli", required_argument, NULL, OPT_GPU_MILLI},
		{"cpu-milli", required_argument, NULL, OPT_CPU_MILLI},
		{"memory-mib", required_argument, NULL, OPT_MEMORY_MIB},
		{"model", required_argument, NULL, OPT_MODEL},
		{"per-node", required_argument, NULL, OPT_PER_NODE},
		{"plan", required_argument, NULL, OPT_PLAN},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"region", required_argument, NULL, OPT_REGION},
		{"site", required_argument, NULL, OPT_SITE},
		{"min-bw", required_argument, NULL, OPT_MIN_BW},
		{"min-mem", required_argument, NULL, OPT_MIN_MEM},
		{"elastic", required_argument, NULL, OPT_ELASTIC},
		{"exclusive", no_argument, NULL, OPT_EXCLUSIVE},
		{"one-leaf", no_argument, NULL, OPT_ONE_LEAF},
		{"on-node-failure", required_argument, NULL, OPT_ON_NODE_FAILURE},
		{"tenant", required_argument, NULL, OPT_TENANT},
		{"idempotency-key", required_argument, NULL, OPT_IDEM},
		CLIENT_LONG_OPTS,
		{0, 0, 0, 0}};
	struct client cl;
	const char *idem = NULL;
	json_t *req = json_object(), *lease = NULL;
	int c, rc = CLI_EXIT_USAGE;

	client_init(&cl, "lease create");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		if (c == 'h') {
			fputs(create_help, stdout);
			rc = CLI_EXIT_OK;
			goto done;
		}
		if (c == OPT_IDEM) {
			idem = optarg;
			continue;
		}
		if (c == '?' || c == ':') {
			rc = client_getopt_error(cl.cmd, c, argv);
			goto done;
		}
		if (create_opt(req, cl.cmd, c, optarg) < 0)
			goto done;
	}
	if (optind != argc) {
		cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
		goto done;
	}
	if (json_object_get(req, "gpus") && json_object_get(req, "gpu_milli")) {
		cli_usage_error(cl.cmd, "--gpus and --gpu-milli exclude each other: whole GPUs or a "
				"share of one");
		goto done;
	}
	if (!json_object_get(req, "gpus") && !json_object_get(req, "gpu_milli") &&
	    !json_object_get(req, "cpu_milli") && !json_object_get(req, "memory_mib")) {
		cli_usage_error(cl.cmd, "--gpus N is required (or --gpu-milli M for a share of one GPU)");
		goto done;
	}
	if ((rc = client_open(&cl)) != CLI_EXIT_OK)
		goto done;
	rc = client_call(&cl, "POST", "/v1/leases", req, idem, &lease);
	if (rc == CLI_EXIT_OK && lease)
		print_lease_sentence(lease);
done:
	json_decref(lease);
	json_decref(req);
	client_close(&cl);
	return rc;
}

/* ---- list ---- */

static const char list_help[] =
	"usage: suanli lease list [--state S | --ended] [--tenant T] [OPTIONS]\n\n"
	"Lists the leases you may see (a tenant sees its own), newest last, page\n"
	"by page (ended leases come from the controller's lease history).\n\n"
	"  --state S          only leases in state S (pending, active, released, ...)\n"
	"  --ended            only ended leases (released, expired, preempted, failed)\n"
	"  --tenant T         only tenant T's leases\n"
	"  --watch            print the list again whenever a lease changes (until ^C)\n"
	CLIENT_HELP_OPTS "\nExample:\n"
	"  suanli lease list --state active\n";

/* The models a lease asked for, or its placed node types. */
static void lease_models(const json_t *l, char *buf, size_t n)
{
	out_join(json_object_get(json_object_get(l, "request"), "models"), ",", buf, n);
}

static void lease_nodes(const json_t *l, char *buf, size_t n)
{
	const json_t *pl = json_object_get(l, "placement");
	size_t count = json_array_size(pl);
	if (!count)
		snprintf(buf, n, "-");
	else if (count == 1)
		snprintf(buf, n, "%s", out_str(json_array_get(pl, 0), "node", "?"));
	else
		snprintf(buf, n, "%s +%zu", out_str(json_array_get(pl, 0), "node", "?"), count - 1);
}

static void lease_row(struct out_table *t, const json_t *l, const void *ctx)
{
	char gpus[32], models[256], nodes[256], age[32];
	lease_models(l, models, sizeof(models));
	lease_nodes(l, nodes, sizeof(nodes));
	out_age(out_str(l, "created_at", NULL), *(const time_t *)ctx, age, sizeof(age));
	const char *row[] = {out_str(l, "id", "?"),   out_str(l, "tenant", "-"),
			     out_str(l, "state", "?"), out_str(l, "plan", "-"),
			     out_int(l, "gpus", gpus, sizeof(gpus)),
			     models, nodes, age};
	out_table_row(t, row);
}

static int lease_list(int argc, char **argv)
{
	static const struct option opts[] = {{"state", required_argument, NULL, OPT_STATE},
					     {"ended", no_argument, NULL, OPT_ENDED},
					     {"tenant", required_argument, NULL, OPT_TENANT},
					     {"watch", no_argument, NULL, 'w'},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	static const char *const head[] = {"ID",    "TENANT", "STATE", "PLAN",
					   "GPUS",  "MODEL",  "NODES", "AGE"};
	struct client cl;
	const char *state = NULL, *tenant = NULL;
	char path[CLIENT_PATH_MAX] = "/v1/leases";
	time_t now;
	json_t *arr;
	int c, rc, watch = 0;
	long long seq = 0;
	struct client wc;

	client_init(&cl, "lease list");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(list_help, stdout); return CLI_EXIT_OK;
		case OPT_STATE: state = optarg; break;
		case OPT_ENDED: state = "ended"; break;
		case OPT_TENANT: tenant = optarg; break;
		case 'w': watch = 1; break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	if (client_query_add(path, sizeof(path), "state", state) ||
	    client_query_add(path, sizeof(path), "tenant", tenant))
		return cli_usage_error(cl.cmd, "--state or --tenant is too long");
	wc = cl; /* the watch's own connection, with the same options */
	if (watch && (rc = client_open(&wc)) != CLI_EXIT_OK)
		return rc;
	do {
		struct client lc = cl;
		if (watch && (rc = client_watch_wait(&wc, "lease", &seq)) != CLI_EXIT_OK)
			break;
		if ((rc = client_get_pages(&lc, path, "No leases.\n", &arr)) != CLIENT_GO)
			continue;
		now = time(NULL);
		rc = out_table_list(stdout, 8, head, arr, lease_row, &now) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
		json_decref(arr);
		fflush(stdout);
	} while (watch);
	client_close(&wc);
	return rc;
}

/* ---- show ---- */

static const char show_help[] = "usage: suanli lease show ID [OPTIONS]\n\n"
				"Shows one lease: where it runs and why there, what it asked\n"
				"for, its times and its history.\n\n" CLIENT_HELP_OPTS
				"\nExample:\n  suanli lease show ls-000042\n";

static void print_request(const json_t *l)
{
	const json_t *r = json_object_get(l, "request"), *e = json_object_get(r, "elastic");
	char models[256], buf[32];
	lease_models(l, models, sizeof(models));
	if (json_object_get(r, "gpu_milli"))
		printf("Request:   a share of one GPU (%s/1000)", out_int(r, "gpu_milli", buf, sizeof(buf)));
	else
		printf("Request:   %s GPUs", out_int(r, "gpus", buf, sizeof(buf)));
	if (json_object_get(r, "cpu_milli"))
		printf(", %s thousandths of a CPU", out_int(r, "cpu_milli", buf, sizeof(buf)));
	if (json_object_get(r, "memory_mib"))
		printf(", %s MiB memory", out_int(r, "memory_mib", buf, sizeof(buf)));
	if (strcmp(models, "-"))
		printf(", models %s", models);
	if (json_object_get(r, "per_node"))
		printf(", %s per node", out_int(r, "per_node", buf, sizeof(buf)));
	if (json_object_get(r, "min_bw_gbps"))
		printf(", at least %s GB/s", out_int(r, "min_bw_gbps", buf, sizeof(buf)));
	if (json_object_get(r, "min_mem_gib"))
		printf(", at least %s GiB per GPU", out_int(r, "min_mem_gib", buf, sizeof(buf)));
	if (json_object_get(r, "region"))
		printf(", region %s", out_str(r, "region", "?"));
	if (json_object_get(r, "site"))
		printf(", site %s", out_str(r, "site", "?"));
	if (json_is_true(json_object_get(r, "exclusive")))
		printf(", whole nodes");
	if (json_is_true(json_object_get(r, "one_leaf")))
		printf(", one leaf switch");
	if (!strcmp(out_str(r, "on_node_failure", "fail"), "replace"))
		printf(", replaced when a node fails");
	if (e)
		printf(", elastic %lld-%lld", (long long)json_integer_value(json_object_get(e, "min")),
		       (long long)json_integer_value(json_object_get(e, "max")));
	if (json_is_integer(json_object_get(r, "duration_s"))) {
		out_span(json_integer_value(json_object_get(r, "duration_s")), buf, sizeof(buf));
		printf(", for %s", buf);
	}
	printf(".\n");
}

static void print_times(const json_t *l)
{
	const char *exp = out_str(l, "expires_at", NULL);
	printf("Created:   %s\n", out_str(l, "created_at", "-"));
	if (out_str(l, "started_at", NULL))
		printf("Started:   %s\n", out_str(l, "started_at", "-"));
	if (out_str(l, "ended_at", NULL))
		printf("Ended:     %s\n", out_str(l, "ended_at", "-"));
	if (exp && !out_str(l, "ended_at", NULL)) {
		char in[32];
		out_span((long long)(out_parse_time(exp) - time(NULL)), in, sizeof(in));
		printf("Expires:   %s (in %s)\n", exp, in);
	}
}

static int print_lease_detail(const json_t *l)
{
	static const char *const phead[] = {"NODE", "TYPE", "SITE", "GPUS", "BOTTLENECK_GBPS"};
	static const char *const hhead[] = {"AT", "STATE", "REASON"};
	const json_t *pl = json_object_get(l, "placement"), *h = json_object_get(l, "history"), *e;
	struct out_table t;
	char buf[32];
	size_t i;
	int rc = CLI_EXIT_OK;

	print_lease_sentence(l);
	printf("Tenant:    %s (user %s), plan %s, %s GPUs%s\n", out_str(l, "tenant", "-"),
	       out_str(l, "user", "-"), out_str(l, "plan", "-"),
	       out_int(l, "gpus", buf, sizeof(buf)),
	       json_is_true(json_object_get(l, "simulated")) ? " (simulated)" : "");
	print_request(l);
	print_times(l);
	if (json_array_size(pl)) {
		printf("\n");
		out_table_init(&t, 5, phead);
		json_array_foreach(pl, i, e) {
			char gpus[256], bw[32];
			share_or_gpus(e, gpus, sizeof(gpus));
			const char *row[] = {out_str(e, "node", "?"), out_str(e, "type", "-"),
					     out_str(e, "site", "-"), gpus,
					     out_int(json_object_get(e, "quality"),
						     "bottleneck_gbps", bw, sizeof(bw))};
			out_table_row(&t, row);
		}
		if (out_table_print(&t, stdout))
			rc = CLI_EXIT_FAIL;
		out_table_release(&t);
	}
	if (json_array_size(h)) {
		printf("\n");
		out_table_init(&t, 3, hhead);
		json_array_foreach(h, i, e) {
			const char *row[] = {out_str(e, "at", "-"), out_str(e, "state", "-"),
					     out_str(e, "reason", "-")};
			out_table_row(&t, row);
		}
		if (out_table_print(&t, stdout))
			rc = CLI_EXIT_FAIL;
		out_table_release(&t);
	}
	return rc;
}

/* "/v1/leases/ID" + suffix in path; -1 after a usage error. */
static int lease_path(const char *cmd, const char *id, const char *suffix, char *path, size_t n)
{
	return client_object_path(cmd, "/v1/leases", id, suffix, "a lease ID (as ls-000042)", path,
				  n);
}

static int lease_show(int argc, char **argv)
{
	struct client cl;
	char path[CLIENT_PATH_MAX];
	json_t *l = NULL;
	int rc;

	client_init(&cl, "lease show");
	if ((rc = client_args(&cl, argc, argv, show_help, 1, "one lease ID")) != CLIENT_GO)
		return rc;
	if (lease_path(cl.cmd, argv[optind], "", path, sizeof(path)))
		return CLI_EXIT_USAGE;
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "GET", path, NULL, NULL, &l)) == CLI_EXIT_OK && l)
		rc = print_lease_detail(l);
	json_decref(l);
	client_close(&cl);
	return rc;
}

/* ---- release, extend, scale ---- */

static const char release_help[] = "usage: suanli lease release ID [OPTIONS]\n\n"
				   "Ends a lease now and frees its GPUs.\n\n" CLIENT_HELP_OPTS
				   "\nExample:\n  suanli lease release ls-000042\n";

static const char extend_help[] =
	"usage: suanli lease extend ID DURATION [OPTIONS]\n"
	"       suanli lease extend ID --by DURATION [OPTIONS]\n\n"
	"Moves a lease's end later by DURATION (90s, 30m, 2h, 1d, 1h30m).\n\n"
	"  --by DURATION      how much longer\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli lease extend ls-000042 --by 2h\n";

static const char scale_help[] =
	"usage: suanli lease scale ID GPUS [OPTIONS]\n"
	"       suanli lease scale ID --gpus N [OPTIONS]\n\n"
	"Grows or shrinks an elastic lease to N GPUs, within the MIN-MAX it was\n"
	"created with (lease create --elastic).\n\n"
	"  --gpus N           the new size\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli lease scale ls-000042 --gpus 16\n";

/* Parses ID [VALUE] with VALUE also accepted as --value_opt. */
static int id_value_args(struct client *cl, int argc, char **argv, const char *help,
			 const char *value_opt, const char **id, const char **value)
{
	const struct option opts[] = {{value_opt, required_argument, NULL, OPT_BY},
				      CLIENT_LONG_OPTS,
				      {0, 0, 0, 0}};
	int c;

	*id = *value = NULL;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(help, stdout); return CLI_EXIT_OK;
		case OPT_BY: *value = optarg; break;
		default: return client_getopt_error(cl->cmd, c, argv);
		}
	}
	if (optind < argc)
		*id = argv[optind++];
	if (optind < argc && !*value)
		*value = argv[optind++];
	if (optind < argc)
		return cli_usage_error(cl->cmd, "unexpected argument '%s'", argv[optind]);
	if (!*id || !*value)
		return cli_usage_error(cl->cmd, "expects a lease ID and --%s", value_opt);
	return CLIENT_GO;
}

/* POSTs body to /v1/leases/ID/action and prints the lease's new standing. */
static int lease_action(struct client *cl, const char *id, const char *action, json_t *body)
{
	char path[CLIENT_PATH_MAX];
	json_t *l = NULL;
	int rc;

	if (lease_path(cl->cmd, id, action, path, sizeof(path)))
		return CLI_EXIT_USAGE;
	if ((rc = client_open(cl)) == CLI_EXIT_OK &&
	    (rc = client_call(cl, "POST", path, body, NULL, &l)) == CLI_EXIT_OK && l) {
		const char *exp = out_str(l, "expires_at", NULL);
		if (!strcmp(action, "/extend") && exp) {
			char in[32];
			out_span((long long)(out_parse_time(exp) - time(NULL)), in, sizeof(in));
			printf("Lease %s now expires at %s (in %s).\n", out_str(l, "id", id), exp,
			       in);
		} else {
			print_lease_sentence(l);
		}
	}
	json_decref(l);
	client_close(cl);
	return rc;
}

static int lease_release(int argc, char **argv)
{
	struct client cl;
	int rc;
	client_init(&cl, "lease release");
	if ((rc = client_args(&cl, argc, argv, release_help, 1, "one lease ID")) != CLIENT_GO)
		return rc;
	return lease_action(&cl, argv[optind], "/release", NULL);
}

static int lease_extend(int argc, char **argv)
{
	struct client cl;
	const char *id, *by;
	long secs;
	int rc;

	client_init(&cl, "lease extend");
	if ((rc = id_value_args(&cl, argc, argv, extend_help, "by", &id, &by)) != CLIENT_GO)
		return rc;
	if ((secs = client_parse_duration(cl.cmd, "--by", by)) < 0)
		return CLI_EXIT_USAGE;
	json_t *body = json_pack("{s:I}", "by_s", (json_int_t)secs);
	rc = lease_action(&cl, id, "/extend", body);
	json_decref(body);
	return rc;
}

static int lease_scale(int argc, char **argv)
{
	struct client cl;
	const char *id, *n;
	long gpus;
	int rc;

	client_init(&cl, "lease scale");
	if ((rc = id_value_args(&cl, argc, argv, scale_help, "gpus", &id, &n)) != CLIENT_GO)
		return rc;
	if ((gpus = cli_parse_int(cl.cmd, "--gpus", n, 1, LEASE_MAX_GPUS)) < 0)
		return CLI_EXIT_USAGE;
	json_t *body = json_pack("{s:I}", "gpus", (json_int_t)gpus);
	rc = lease_action(&cl, id, "/scale", body);
	json_decref(body);
	return rc;
}

static const struct client_sub lease_subs[] = {
	{"create", lease_create, "ask for GPUs (active at once, or queued)"},
	{"list", lease_list, "list leases"},
	{"show", lease_show, "one lease: placement, request, times, history"},
	{"release", lease_release, "end a lease now"},
	{"extend", lease_extend, "move a lease's end later"},
	{"scale", lease_scale, "resize an elastic lease"},
};

int cmd_lease(int argc, char **argv)
{
	return client_dispatch("lease", "Leases: GPUs held by a tenant, on a plan, for a time.\n",
			       lease_subs, sizeof(lease_subs) / sizeof(lease_subs[0]), argc,
			       argv);
}

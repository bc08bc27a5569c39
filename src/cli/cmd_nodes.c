/* cmd_nodes.c - `suanli nodes` and `suanli node show|drain|resume`: the
 * controller's view of the fleet, one line per node or one node in full. */
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "client.h"
#include "output.h"

#define NODE_MATRIX_MAX 16 /* GPUs up to which node show prints a bandwidth matrix */
#define NODE_REASON_MAX 256 /* the contract's bound on a drain reason */

/* ---- nodes ---- */

static const char nodes_help[] =
	"usage: suanli nodes [--state S] [--model M] [--site S] [--leaf L] [--tenant T]\n"
	"                    [OPTIONS]\n\n"
	"Lists the nodes the controller knows, with their state and free GPUs (a tenant\n"
	"does not see other tenants' colocated nodes), following the controller's pages.\n"
	"The filters match exactly: --state (ready, leased, draining, ...), --model,\n"
	"--site, --leaf, --tenant (the owner of colocated nodes). --watch prints the\n"
	"list again whenever a node or a lease changes (until ^C).\n\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli nodes --server http://10.0.0.5:7400\n";

static void node_row(struct out_table *t, const json_t *n, const void *ctx)
{
	char free_[64], f[32], g[32], why[160];
	(void)ctx;
	snprintf(free_, sizeof(free_), "%s/%s", out_int(n, "free_gpus", f, sizeof(f)),
		 out_int(n, "gpus", g, sizeof(g)));
	/* a node that runs its owner's work as host processes says so */
	const char *host = out_str(n, "host_processes", NULL);
	const char *reason = out_str(n, "reason", "");
	if (host)
		snprintf(why, sizeof(why), "%s%shost processes for %s", reason, *reason ? "; " : "",
			 host);
	else
		snprintf(why, sizeof(why), "%s", reason);
	const char *row[] = {out_str(n, "name", "?"),   out_str(n, "type", "-"),
			     out_str(n, "model", "-"),  out_str(n, "site", "-"),
			     out_str(n, "region", "-"), out_str(n, "state", "-"),
			     free_,                     why};
	out_table_row(t, row);
}

int cmd_nodes(int argc, char **argv)
{
	static const char *const head[] = {"NAME",  "TYPE", "MODEL", "SITE",
					   "REGION", "STATE", "FREE", "REASON"};
	static const char *const fkeys[] = {"state", "model", "site", "leaf", "tenant"};
	static const struct option opts[] = {{"state", required_argument, NULL, 0x300},
					     {"model", required_argument, NULL, 0x301},
					     {"site", required_argument, NULL, 0x302},
					     {"leaf", required_argument, NULL, 0x303},
					     {"tenant", required_argument, NULL, 0x304},
					     {"watch", no_argument, NULL, 'w'},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	struct client cl;
	json_t *arr;
	int rc, c, watch = 0;
	long long seq = 0;
	const char *fval[5] = {NULL};
	char path[CLIENT_PATH_MAX] = "/v1/nodes";
	struct client wc;

	client_init(&cl, "nodes");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		if (c == 'h') {
			fputs(nodes_help, stdout);
			return CLI_EXIT_OK;
		}
		if (c == 'w') {
			watch = 1;
			continue;
		}
		if (c >= 0x300 && c <= 0x304) {
			fval[c - 0x300] = optarg;
			continue;
		}
		return client_getopt_error(cl.cmd, c, argv);
	}
	if (optind != argc)
		return cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	for (int i = 0; i < 5; i++)
		if (client_query_add(path, sizeof(path), fkeys[i], fval[i]))
			return cli_usage_error(cl.cmd, "--%s is too long", fkeys[i]);
	bool filtered = strchr(path, '?') != NULL;
	wc = cl; /* the watch's own connection, with the same options */
	if (watch && (rc = client_open(&wc)) != CLI_EXIT_OK)
		return rc;
	do {
		struct client lc = cl;
		if (watch && (rc = client_watch_wait(&wc, "node,lease", &seq)) != CLI_EXIT_OK)
			break;
		if ((rc = client_get_pages(&lc, path, filtered ? "No nodes match.\n" :
					   "No nodes: the controller has no fleet yet.\n", &arr)) != CLIENT_GO)
			continue;
		rc = out_table_list(stdout, 8, head, arr, node_row, NULL) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
		json_decref(arr);
		fflush(stdout);
	} while (watch);
	client_close(&wc);
	return rc;
}

/* ---- node show ---- */

static const char show_help[] =
	"usage: suanli node show NAME [OPTIONS]\n\n"
	"Shows one node: its state, each GPU (free or in which lease, and its health\n"
	"as the node's agent reports it), the bandwidth between its GPUs, the agent\n"
	"(address, last heartbeat) and the GPUs' XID history.\n\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli node show fza-h100-001\n";

/* "Node X is ready; 6 of 8 GPUs are free." and, if set, the reason. */
static void print_node_sentence(const json_t *n)
{
	char f[32], g[32];
	const char *reason = out_str(n, "reason", "");
	printf("Node %s is %s%s%s; %s of %s GPUs are free%s.\n", out_str(n, "name", "?"),
	       out_str(n, "state", "?"), *reason ? ": " : "", reason,
	       out_int(n, "free_gpus", f, sizeof(f)), out_int(n, "gpus", g, sizeof(g)),
	       json_is_true(json_object_get(n, "simulated")) ? " (simulated)" : "");
}

/* The NIC serving GPU gpu, or "-". */
static const char *nic_of(const json_t *nics, json_int_t gpu)
{
	size_t i, j;
	json_t *nic, *g;
	json_array_foreach(nics, i, nic) {
		json_array_foreach(json_object_get(nic, "gpus"), j, g) {
			if (json_integer_value(g) == gpu)
				return out_str(nic, "name", "-");
		}
	}
	return "-";
}

static int print_gpus(const json_t *n)
{
	static const char *const head[] = {"GPU", "STATE", "LEASE", "NUMA", "NIC", "HEALTH"};
	const json_t *topo = json_object_get(n, "topology");
	const json_t *numa = json_object_get(topo, "numa");
	struct out_table t;
	size_t i;
	json_t *g;
	int rc;

	out_table_init(&t, 6, head);
	json_array_foreach(json_object_get(n, "gpu_state"), i, g) {
		char idx[32], nm[32];
		json_int_t k = json_integer_value(json_object_get(g, "index"));
		snprintf(idx, sizeof(idx), "%lld", (long long)k);
		snprintf(nm, sizeof(nm), "%lld",
			 (long long)json_integer_value(json_array_get(numa, (size_t)k)));
		const json_t *h = json_array_get(json_object_get(n, "gpu_health"), (size_t)k);
		const char *row[] = {idx, out_str(g, "state", "-"), out_str(g, "lease", "-"),
				     json_array_size(numa) > (size_t)k ? nm : "-",
				     nic_of(json_object_get(topo, "nics"), k),
				     out_str(h, "state", "-")};
		out_table_row(&t, row);
	}
	rc = out_table_print(&t, stdout);
	out_table_release(&t);
	return rc;
}

/* The GB/s between every pair of GPUs, as a matrix. */
static void print_matrix(const json_t *n)
{
	long long bw[NODE_MATRIX_MAX][NODE_MATRIX_MAX] = {{0}};
	json_int_t ngpus = json_integer_value(json_object_get(n, "gpus"));
	size_t i;
	json_t *l;

	if (ngpus < 2 || ngpus > NODE_MATRIX_MAX)
		return;
	json_array_foreach(json_object_get(json_object_get(n, "topology"), "links"), i, l) {
		const json_t *p = json_object_get(l, "gpus");
		json_int_t a = json_integer_value(json_array_get(p, 0));
		json_int_t b = json_integer_value(json_array_get(p, 1));
		if (a >= 0 && a < ngpus && b >= 0 && b < ngpus)
			bw[a][b] = bw[b][a] = (long long)json_integer_value(json_object_get(l, "gbps"));
	}
	printf("\nGB/s between GPUs:\n     ");
	for (json_int_t b = 0; b < ngpus; b++)
		printf(" %5lld", (long long)b);
	printf("\n");
	for (json_int_t a = 0; a < ngpus; a++) {
		printf("%5lld", (long long)a);
		for (json_int_t b = 0; b < ngpus; b++)
			if (a == b)
				printf(" %5s", "-");
			else
				printf(" %5lld", bw[a][b]);
		printf("\n");
	}
}

/* The node's agent (docs/agents.md), when one registered it. */
static void print_agent(const json_t *n)
{
	const json_t *a = json_object_get(n, "agent");
	size_t i;
	json_t *h;
	if (!a)
		return;
	printf("Agent %s at %s, registered %s, last heartbeat %s.\n",
	       out_str(a, "agent_version", "?"), out_str(a, "addr", "?"),
	       out_str(a, "registered_at", "-"), out_str(a, "last_heartbeat", "-"));
	if (out_str(a, "host_processes", NULL))
		printf("Tenant work runs as host processes, for tenant %s only (the operator's "
		       "--host-processes); other tenants' work is refused.\n",
		       out_str(a, "host_processes", "?"));
	else
		printf("Tenant work runs in containers (docs/isolation.md).\n");
	json_array_foreach(json_object_get(n, "gpu_health"), i, h) {
		if (strcmp(out_str(h, "state", "ok"), "ok"))
			printf("GPU %lld is %s: %s.\n",
			       (long long)json_integer_value(json_object_get(h, "index")),
			       out_str(h, "state", "?"), out_str(h, "reason", "?"));
	}
}

/* The node's XID history, newest last. */
static void print_gpu_events(const json_t *n)
{
	const json_t *ev = json_object_get(n, "gpu_events");
	size_t i;
	json_t *e;
	if (!json_array_size(ev))
		return;
	printf("\nGPU events:\n");
	json_array_foreach(ev, i, e) {
		printf("  %s  GPU %lld  XID %lld  -> %s\n", out_str(e, "at", "?"),
		       (long long)json_integer_value(json_object_get(e, "gpu")),
		       (long long)json_integer_value(json_object_get(e, "code")),
		       out_str(e, "state", "?"));
	}
}

static int node_show(int argc, char **argv)
{
	struct client cl;
	char path[CLIENT_PATH_MAX] = "/v1/nodes/";
	json_t *n = NULL;
	int rc;

	client_init(&cl, "node show");
	if ((rc = client_args(&cl, argc, argv, show_help, 1, "one node name")) != CLIENT_GO)
		return rc;
	if (client_escape(path, sizeof(path), argv[optind]))
		return cli_usage_error(cl.cmd, "the node name is too long");
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "GET", path, NULL, NULL, &n)) == CLI_EXIT_OK && n) {
		printf("Node %s: %s with %s GPUs, at %s (%s), leaf %s.\n", out_str(n, "name", "?"),
		       out_str(n, "type", "?"), out_str(n, "model", "?"), out_str(n, "site", "?"),
		       out_str(n, "region", "?"), out_str(n, "leaf", "-"));
		print_node_sentence(n);
		print_agent(n);
		printf("\n");
		if (print_gpus(n))
			rc = CLI_EXIT_FAIL;
		print_matrix(n);
		print_gpu_events(n);
	}
	json_decref(n);
	client_close(&cl);
	return rc;
}

/* ---- node drain, node resume ---- */

static const char drain_help[] =
	"usage: suanli node drain NAME --reason TEXT [OPTIONS]\n\n"
	"Takes a node out of service: no new lease is placed on it; leases already\n"
	"there run to their end (state draining, then drained). Admin and operator.\n\n"
	"  --reason TEXT      why (required, at most 256 bytes), shown in 'suanli nodes'\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli node drain fza-h100-003 --reason 'BIOS update'\n";

static const char resume_help[] = "usage: suanli node resume NAME [OPTIONS]\n\n"
				  "Puts a drained node back in service. Admin and operator.\n\n" CLIENT_HELP_OPTS
				  "\nExample:\n  suanli node resume fza-h100-003\n";

/* POSTs body to /v1/nodes/NAME/action and says where the node stands. */
static int node_action(struct client *cl, const char *name, const char *action, json_t *body)
{
	char path[CLIENT_PATH_MAX] = "/v1/nodes/";
	json_t *n = NULL;
	int rc;

	if (client_escape(path, sizeof(path), name) ||
	    strlen(path) + strlen(action) >= sizeof(path))
		return cli_usage_error(cl->cmd, "the node name is too long");
	sl_strcpy(path + strlen(path), sizeof(path) - strlen(path), action); /* fits: checked above */
	if ((rc = client_open(cl)) == CLI_EXIT_OK &&
	    (rc = client_call(cl, "POST", path, body, NULL, &n)) == CLI_EXIT_OK && n)
		print_node_sentence(n);
	json_decref(n);
	client_close(cl);
	return rc;
}

static int node_drain(int argc, char **argv)
{
	static const struct option opts[] = {{"reason", required_argument, NULL, 'r'},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	struct client cl;
	const char *reason = NULL;
	int c, rc;

	client_init(&cl, "node drain");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(drain_help, stdout); return CLI_EXIT_OK;
		case 'r': reason = optarg; break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (argc - optind != 1)
		return argc - optind > 1
			       ? cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind + 1])
			       : cli_usage_error(cl.cmd, "expects one node name");
	if (!reason || !*reason)
		return cli_usage_error(cl.cmd, "--reason TEXT is required: say why, for the "
					       "people who will see the node drained");
	if (strlen(reason) > NODE_REASON_MAX)
		return cli_usage_error(cl.cmd, "--reason is longer than %d bytes", NODE_REASON_MAX);
	json_t *body = json_pack("{s:s}", "reason", reason);
	rc = node_action(&cl, argv[optind], "/drain", body);
	json_decref(body);
	return rc;
}

static int node_resume(int argc, char **argv)
{
	struct client cl;
	int rc;
	client_init(&cl, "node resume");
	if ((rc = client_args(&cl, argc, argv, resume_help, 1, "one node name")) != CLIENT_GO)
		return rc;
	return node_action(&cl, argv[optind], "/resume", NULL);
}

static const struct client_sub node_subs[] = {
	{"show", node_show, "one node: state, GPUs, bandwidth matrix"},
	{"drain", node_drain, "take a node out of service, with a reason"},
	{"resume", node_resume, "put a drained node back in service"},
};

int cmd_node(int argc, char **argv)
{
	return client_dispatch("node", "One node of the fleet ('suanli nodes' lists them).\n",
			       node_subs, sizeof(node_subs) / sizeof(node_subs[0]), argc, argv);
}

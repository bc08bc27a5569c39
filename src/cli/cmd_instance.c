/* cmd_instance.c - `suanli instance create|list|show|stop|start|release|ssh|logs`
 * (docs/instances.md). Thin: arguments become the API's JSON, the answer is
 * printed (--json: as sent). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "client.h"
#include "output.h"
#include "plan.h"

#define INSTANCE_MAX_PORTS 16

enum {
	OPT_GPUS = 0x200, OPT_MODEL, OPT_PER_NODE, OPT_IMAGE, OPT_KEY, OPT_VOLUME, OPT_PORT,
	OPT_REGION, OPT_SITE, OPT_PLAN, OPT_IDLE, OPT_TENANT, OPT_WAIT, OPT_NOGPU, OPT_MIGRATE,
	OPT_NODE, OPT_STATE,
};

static const char create_help[] =
	"usage: suanli instance create --gpus N [OPTIONS]\n\n"
	"Creates an instance: GPUs with a container from an image, an SSH command,\n"
	"ports and a data disk that survives a stop. It starts at once or not at all.\n"
	"GPU time is billed from the instant every container runs (never the pull).\n\n"
	"  --gpus N             whole GPUs\n"
	"  --model M            GPU model, e.g. h100-sxm\n"
	"  --per-node K         GPUs per node for an instance over several nodes\n"
	"  --image NAME         an image of the catalog (suanli image list); default:\n"
	"                       the operator's default image\n"
	"  --ssh-key NAME       the one key to let in (default: all of yours;\n"
	"                       suanli ssh-key add)\n"
	"  --volume GIB         a data disk at /data, kept across stop and start,\n"
	"                       billed per GiB-month until release\n"
	"  --port P             publish container port P (again for more)\n"
	"  --region R, --site S where\n"
	"  --plan P             hourly (default), monthly or spot\n"
	"  --auto-stop-idle D   stop when every GPU stays below 1% for D (30m, 2h)\n"
	"  --tenant T           on behalf of tenant T (admin, operator)\n" CLIENT_HELP_OPTS
	"\nExample:\n"
	"  suanli instance create --gpus 1 --image demo --ssh-key laptop --volume 10 --port 8888 --json\n";

static void print_sentence(const json_t *in)
{
	const char *id = out_str(in, "id", "?"), *st = out_str(in, "state", "?");
	char nodes[512];
	out_join(json_object_get(in, "nodes"), ", ", nodes, sizeof(nodes));
	printf("Instance %s is %s on %s", id, st, nodes[0] ? nodes : "-");
	const char *lease = out_str(in, "lease", NULL);
	if (lease)
		printf(" (lease %s)", lease);
	const char *why = out_str(in, "reason", "");
	printf("%s%s.\n", why[0] ? ": " : "", why);
	const json_t *ssh = json_object_get(in, "ssh");
	size_t i;
	const json_t *s;
	json_array_foreach(ssh, i, s)
		printf("  ssh: %s\n", out_str(s, "command", "?"));
	json_array_foreach(json_object_get(in, "ports"), i, s)
		printf("  port %lld: %s:%lld\n", (long long)json_integer_value(json_object_get(s, "port")),
		       out_str(s, "host", "?"), (long long)json_integer_value(json_object_get(s, "host_port")));
	const char *msg = out_str(in, "message", NULL);
	if (msg)
		printf("%s\n", msg);
	const char *notice = out_str(in, "notice", "");
	if (notice[0])
		printf("Notice: %s\n", notice);
}

static int instance_create(int argc, char **argv)
{
	static const struct option opts[] = {
		{"gpus", required_argument, NULL, OPT_GPUS},   {"model", required_argument, NULL, OPT_MODEL},
		{"per-node", required_argument, NULL, OPT_PER_NODE},
		{"image", required_argument, NULL, OPT_IMAGE}, {"ssh-key", required_argument, NULL, OPT_KEY},
		{"volume", required_argument, NULL, OPT_VOLUME}, {"port", required_argument, NULL, OPT_PORT},
		{"region", required_argument, NULL, OPT_REGION}, {"site", required_argument, NULL, OPT_SITE},
		{"plan", required_argument, NULL, OPT_PLAN},
		{"auto-stop-idle", required_argument, NULL, OPT_IDLE},
		{"tenant", required_argument, NULL, OPT_TENANT}, CLIENT_LONG_OPTS, {0, 0, 0, 0}};
	struct client cl;
	json_t *req = json_object(), *ports = json_array(), *ans = NULL;
	int c, rc = CLI_EXIT_OK;
	long v;
	client_init(&cl, "instance create");
	optind = 0;
	while (rc == CLI_EXIT_OK && (c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(create_help, stdout); rc = -2; break;
		case OPT_GPUS:
		case OPT_PER_NODE:
		case OPT_VOLUME:
			v = cli_parse_int(cl.cmd, c == OPT_GPUS ? "--gpus" : c == OPT_VOLUME ? "--volume" : "--per-node",
					  optarg, c == OPT_VOLUME ? 0 : 1, c == OPT_VOLUME ? 65536 : 4096);
			if (v < 0)
				rc = CLI_EXIT_USAGE;
			else
				json_object_set_new(req, c == OPT_GPUS ? "gpus" : c == OPT_VOLUME ? "volume_gib" : "per_node",
						    json_integer(v));
			break;
		case OPT_PORT:
			v = cli_parse_int(cl.cmd, "--port", optarg, 1, 65535);
			if (v < 0 || json_array_size(ports) >= INSTANCE_MAX_PORTS)
				rc = v < 0 ? CLI_EXIT_USAGE : cli_usage_error(cl.cmd, "at most %d --port", INSTANCE_MAX_PORTS);
			else
				json_array_append_new(ports, json_integer(v));
			break;
		case OPT_IDLE:
			v = client_parse_duration(cl.cmd, "--auto-stop-idle", optarg);
			if (v < 0)
				rc = CLI_EXIT_USAGE;
			else
				json_object_set_new(req, "auto_stop_idle_s", json_integer(v));
			break;
		case OPT_PLAN: {
			enum plan p;
			if (plan_parse(optarg, &p, NULL) || !plan_is_lease(p))
				rc = cli_usage_error(cl.cmd, "--plan must be hourly, monthly or spot");
			else
				json_object_set_new(req, "plan", json_string(optarg));
			break;
		}
		case OPT_MODEL: json_object_set_new(req, "model", json_string(optarg)); break;
		case OPT_IMAGE: json_object_set_new(req, "image", json_string(optarg)); break;
		case OPT_KEY: json_object_set_new(req, "ssh_key", json_string(optarg)); break;
		case OPT_REGION: json_object_set_new(req, "region", json_string(optarg)); break;
		case OPT_SITE: json_object_set_new(req, "site", json_string(optarg)); break;
		case OPT_TENANT: json_object_set_new(req, "tenant", json_string(optarg)); break;
		default: rc = client_getopt_error(cl.cmd, c, argv); break;
		}
	}
	if (rc == CLI_EXIT_OK && optind != argc)
		rc = cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	if (rc == CLI_EXIT_OK && !json_object_get(req, "gpus"))
		rc = cli_usage_error(cl.cmd, "--gpus N is required");
	if (rc == CLI_EXIT_OK && json_array_size(ports))
		json_object_set(req, "ports", ports);
	if (rc == CLI_EXIT_OK && (rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "POST", "/v1/instances", req, NULL, &ans)) == CLI_EXIT_OK && ans)
		print_sentence(ans);
	json_decref(ans);
	json_decref(req);
	json_decref(ports);
	client_close(&cl);
	return rc == -2 ? CLI_EXIT_OK : rc;
}

static const char list_help[] =
	"usage: suanli instance list [--state S] [OPTIONS]\n\n"
	"Lists your instances (an operator: every tenant's).\n\n"
	"  --state S            only instances in state S (running, stopped, ...)\n"
	"  --watch              print the list again whenever an instance changes\n"
	"                       (until ^C)\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli instance list --state running\n";

static void inst_row(struct out_table *t, const json_t *in, const void *ctx)
{
	(void)ctx;
	char nodes[256], gpus[16], vol[16], ssh[160] = "-";
	out_join(json_object_get(in, "nodes"), ",", nodes, sizeof(nodes));
	snprintf(gpus, sizeof(gpus), "%s%lld", !strcmp(out_str(in, "mode", ""), "no-gpu") ? "0/" : "",
		 (long long)json_integer_value(json_object_get(in, "gpus")));
	snprintf(vol, sizeof(vol), "%lldG", (long long)json_integer_value(json_object_get(in, "volume_gib")));
	const json_t *s = json_array_get(json_object_get(in, "ssh"), 0);
	if (s)
		snprintf(ssh, sizeof(ssh), "%s", out_str(s, "command", "-"));
	const char *row[] = {out_str(in, "id", "?"), out_str(in, "state", "?"), out_str(in, "tenant", "?"),
			     gpus, nodes[0] ? nodes : "-", out_str(in, "image", "-"), vol, ssh};
	out_table_row(t, row);
}

static int instance_list(int argc, char **argv)
{
	static const char *const head[] = {"ID", "STATE", "TENANT", "GPUS", "NODES", "IMAGE", "DISK", "SSH"};
	static const struct option opts[] = {{"state", required_argument, NULL, OPT_STATE},
					     {"watch", no_argument, NULL, 'w'},
					     CLIENT_LONG_OPTS, {0, 0, 0, 0}};
	struct client cl, wc;
	char path[CLIENT_PATH_MAX] = "/v1/instances";
	json_t *arr;
	int c, rc, watch = 0;
	long long seq = 0;
	client_init(&cl, "instance list");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(list_help, stdout); return CLI_EXIT_OK;
		case OPT_STATE:
			if (client_query_add(path, sizeof(path), "state", optarg))
				return cli_usage_error(cl.cmd, "--state is too long");
			break;
		case 'w': watch = 1; break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	wc = cl; /* the watch's own connection (client_watch.c), with the same options */
	if (watch && (rc = client_open(&wc)) != CLI_EXIT_OK)
		return rc;
	do {
		struct client lc = cl;
		if (watch && (rc = client_watch_wait(&wc, "instance", &seq)) != CLI_EXIT_OK)
			break;
		if ((rc = client_get_list(&lc, path, "No instances.\n", &arr)) != CLIENT_GO)
			continue;
		rc = out_table_list(stdout, 8, head, arr, inst_row, NULL) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
		json_decref(arr);
	} while (watch);
	client_close(&wc);
	return rc;
}

static const char show_help[] =
	"usage: suanli instance show ID [OPTIONS]\n\n"
	"One instance: state and why, SSH commands, ports, host key fingerprints,\n"
	"what it cost and still costs per day, the money notice, its history.\n\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli instance show in-000001\n";

static void money(const json_t *cost, const char *k, char *buf, size_t n)
{
	long long f = (long long)json_integer_value(json_object_get(cost, k));
	snprintf(buf, n, "%lld.%02lld %s", f / 100, (f < 0 ? -f : f) % 100, out_str(cost, "currency", ""));
}

static int print_detail(const json_t *in)
{
	size_t i;
	const json_t *x;
	char a[64], b[64], c[64], d[64], e[64];
	print_sentence(in);
	printf("  tenant %s, user %s, mode %s, %lld GPU(s) %s, plan %s\n", out_str(in, "tenant", "?"),
	       out_str(in, "user", "?"), out_str(in, "mode", "?"),
	       (long long)json_integer_value(json_object_get(in, "gpus")), out_str(in, "gpu_model", ""),
	       out_str(in, "plan", "?"));
	printf("  image %s (%s), data disk %lld GiB, auto-stop-idle %llds\n", out_str(in, "image", "-"),
	       out_str(in, "image_ref", "-"), (long long)json_integer_value(json_object_get(in, "volume_gib")),
	       (long long)json_integer_value(json_object_get(in, "auto_stop_idle_s")));
	json_array_foreach(json_object_get(in, "host_keys"), i, x)
		printf("  host key %s %s %s\n", out_str(x, "node", "?"), out_str(x, "type", "?"),
		       out_str(x, "fingerprint", "?"));
	json_array_foreach(json_object_get(in, "node_states"), i, x) {
		const char *p = out_str(x, "progress", ""), *er = out_str(x, "error", "");
		printf("  node %s: %s%s%s%s%s\n", out_str(x, "node", "?"), out_str(x, "state", "?"),
		       p[0] ? " - " : "", p, er[0] ? " - error: " : "", er);
	}
	const json_t *cost = json_object_get(in, "cost");
	money(cost, "gpu_fen", a, sizeof(a));
	money(cost, "no_gpu_fen", b, sizeof(b));
	money(cost, "storage_fen", c, sizeof(c));
	money(cost, "total_fen", d, sizeof(d));
	money(cost, "storage_fen_per_day", e, sizeof(e));
	printf("  cost: GPU %s, no-GPU %s, storage %s, total %s; stopped it still costs %s a day\n", a, b, c,
	       d, e);
	printf("  created %s, running since %s, stopped %s\n", out_str(in, "created_at", "-"),
	       out_str(in, "running_since", "-"), out_str(in, "stopped_at", "-"));
	printf("History:\n");
	json_array_foreach(json_object_get(in, "history"), i, x)
		printf("  %s  %-9s %s\n", out_str(x, "at", "?"), out_str(x, "state", "?"), out_str(x, "reason", ""));
	return CLI_EXIT_OK;
}

static int path_of(const char *cmd, const char *id, const char *suffix, char *path, size_t n)
{
	return client_object_path(cmd, "/v1/instances", id, suffix, "in-000001", path, n);
}

static int instance_show(int argc, char **argv)
{
	struct client cl;
	char path[CLIENT_PATH_MAX];
	json_t *in = NULL;
	int rc;
	client_init(&cl, "instance show");
	if ((rc = client_args(&cl, argc, argv, show_help, 1, "one instance ID")) != CLIENT_GO)
		return rc;
	if (path_of(cl.cmd, argv[optind], "", path, sizeof(path)))
		return CLI_EXIT_USAGE;
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "GET", path, NULL, NULL, &in)) == CLI_EXIT_OK && in)
		rc = print_detail(in);
	json_decref(in);
	client_close(&cl);
	return rc;
}

static const char stop_help[] =
	"usage: suanli instance stop ID [OPTIONS]\n\n"
	"Stops the containers (SIGTERM, grace, SIGKILL) and releases the GPUs: GPU\n"
	"billing ends. Both disks are kept; the data disk is still billed.\n\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli instance stop in-000001\n";
static const char release_help[] =
	"usage: suanli instance release ID [OPTIONS]\n\n"
	"Ends the instance for good: containers, system disk and data disk are\n"
	"deleted, and billing ends.\n\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli instance release in-000001\n";
static const char logs_help[] =
	"usage: suanli instance logs ID [OPTIONS]\n\n"
	"What happened to the instance: its history and each node's last report.\n\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli instance logs in-000001\n";

static int simple(int argc, char **argv, const char *cmd, const char *help, const char *suffix)
{
	struct client cl;
	char path[CLIENT_PATH_MAX];
	json_t *in = NULL, *body = json_object();
	int rc;
	client_init(&cl, cmd);
	if ((rc = client_args(&cl, argc, argv, help, 1, "one instance ID")) != CLIENT_GO) {
		json_decref(body);
		return rc;
	}
	if (path_of(cl.cmd, argv[optind], suffix, path, sizeof(path))) {
		json_decref(body);
		return CLI_EXIT_USAGE;
	}
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "POST", path, body, NULL, &in)) == CLI_EXIT_OK && in)
		print_sentence(in);
	json_decref(in);
	json_decref(body);
	client_close(&cl);
	return rc;
}

static int instance_stop(int argc, char **argv)
{
	return simple(argc, argv, "instance stop", stop_help, "/stop");
}

static int instance_release(int argc, char **argv)
{
	return simple(argc, argv, "instance release", release_help, "/release");
}

static const char start_help[] =
	"usage: suanli instance start ID [--wait | --no-gpu | --migrate] [OPTIONS]\n\n"
	"Starts a stopped instance on its home node(s), where its disks are. When\n"
	"their GPUs are taken it refuses and names the choices:\n"
	"  --wait               queued until the home node has the GPUs again\n"
	"  --no-gpu             start without GPUs (no-gpu price), to reach the data\n"
	"  --migrate            another node of the same site; both disks are copied\n"
	"                       (through the controller, checksum checked) first\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli instance start in-000001 --wait\n";

static int instance_start(int argc, char **argv)
{
	static const struct option opts[] = {{"wait", no_argument, NULL, OPT_WAIT},
					     {"no-gpu", no_argument, NULL, OPT_NOGPU},
					     {"migrate", no_argument, NULL, OPT_MIGRATE},
					     CLIENT_LONG_OPTS, {0, 0, 0, 0}};
	struct client cl;
	char path[CLIENT_PATH_MAX];
	json_t *body = json_object(), *in = NULL;
	int c, rc = CLI_EXIT_OK, n = 0;
	client_init(&cl, "instance start");
	optind = 0;
	while (rc == CLI_EXIT_OK && (c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(start_help, stdout); rc = -2; break;
		case OPT_WAIT: json_object_set_new(body, "wait", json_true()); n++; break;
		case OPT_NOGPU: json_object_set_new(body, "no_gpu", json_true()); n++; break;
		case OPT_MIGRATE: json_object_set_new(body, "migrate", json_true()); n++; break;
		default: rc = client_getopt_error(cl.cmd, c, argv); break;
		}
	}
	if (rc == CLI_EXIT_OK && n > 1)
		rc = cli_usage_error(cl.cmd, "give at most one of --wait, --no-gpu and --migrate");
	if (rc == CLI_EXIT_OK && optind + 1 != argc)
		rc = cli_usage_error(cl.cmd, "give one instance ID");
	if (rc == CLI_EXIT_OK && path_of(cl.cmd, argv[optind], "/start", path, sizeof(path)))
		rc = CLI_EXIT_USAGE;
	if (rc == CLI_EXIT_OK && (rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "POST", path, body, NULL, &in)) == CLI_EXIT_OK && in)
		print_sentence(in);
	json_decref(in);
	json_decref(body);
	client_close(&cl);
	return rc == -2 ? CLI_EXIT_OK : rc;
}

static int instance_logs(int argc, char **argv)
{
	struct client cl;
	char path[CLIENT_PATH_MAX];
	int rc;
	client_init(&cl, "instance logs");
	if ((rc = client_args(&cl, argc, argv, logs_help, 1, "one instance ID")) != CLIENT_GO)
		return rc;
	if (path_of(cl.cmd, argv[optind], "/logs", path, sizeof(path)))
		return CLI_EXIT_USAGE;
	json_t *out = NULL;
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "GET", path, NULL, NULL, &out)) == CLI_EXIT_OK && out)
		fputs(out_str(out, "log", ""), stdout);
	json_decref(out);
	client_close(&cl);
	return rc;
}

static const char ssh_help[] =
	"usage: suanli instance ssh ID [--node N] [-- SSH-ARGS...]\n\n"
	"Runs ssh to the instance (its first node, or node N) as root.\n\n"
	"  --node N             which node of the instance\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli instance ssh in-000001 -- nvidia-smi\n";

static int instance_ssh(int argc, char **argv)
{
	static const struct option opts[] = {{"node", required_argument, NULL, OPT_NODE},
					     CLIENT_LONG_OPTS, {0, 0, 0, 0}};
	struct client cl;
	char path[CLIENT_PATH_MAX];
	const char *node = NULL;
	json_t *in = NULL;
	int c, rc;
	client_init(&cl, "instance ssh");
	optind = 0;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(ssh_help, stdout); return CLI_EXIT_OK;
		case OPT_NODE: node = optarg; break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error(cl.cmd, "give one instance ID");
	if (path_of(cl.cmd, argv[optind], "", path, sizeof(path)))
		return CLI_EXIT_USAGE;
	int rest = optind + 1;
	if (rest < argc && !strcmp(argv[rest], "--"))
		rest++;
	cl.json = 0;
	if ((rc = client_open(&cl)) != CLI_EXIT_OK ||
	    (rc = client_call(&cl, "GET", path, NULL, NULL, &in)) != CLI_EXIT_OK || !in) {
		client_close(&cl);
		json_decref(in);
		return rc ? rc : CLI_EXIT_FAIL;
	}
	client_close(&cl);
	const json_t *pick = NULL, *s;
	size_t i;
	json_array_foreach(json_object_get(in, "ssh"), i, s)
		if (!pick && (!node || !strcmp(out_str(s, "node", ""), node)))
			pick = s;
	if (!pick) {
		fprintf(stderr, "suanli: instance %s has no SSH endpoint%s%s yet (state %s)\n",
			out_str(in, "id", "?"), node ? " on " : "", node ? node : "", out_str(in, "state", "?"));
		fprintf(stderr, "  hint: 'suanli instance show %s' says where it stands\n", out_str(in, "id", "?"));
		json_decref(in);
		return CLI_EXIT_FAIL;
	}
	char port[16], dest[300];
	snprintf(port, sizeof(port), "%lld", (long long)json_integer_value(json_object_get(pick, "port")));
	snprintf(dest, sizeof(dest), "root@%s", out_str(pick, "host", "?"));
	json_decref(in);
	int n = argc - rest;
	char **av = calloc((size_t)n + 5, sizeof(*av));
	if (!av)
		return CLI_EXIT_FAIL;
	av[0] = "ssh";
	av[1] = "-p";
	av[2] = port;
	av[3] = dest;
	for (int k = 0; k < n; k++)
		av[4 + k] = argv[rest + k];
	execvp("ssh", av);
	perror("suanli: ssh");
	free(av);
	return CLI_EXIT_FAIL;
}

static const struct client_sub subs[] = {
	{"create", instance_create, "a new instance: GPUs, image, SSH, ports, data disk"},
	{"list", instance_list, "your instances"},
	{"show", instance_show, "one instance: state, SSH, ports, host keys, cost, history"},
	{"stop", instance_stop, "stop it: GPUs released, disks kept"},
	{"start", instance_start, "start it again (--wait, --no-gpu, --migrate)"},
	{"release", instance_release, "end it: containers and disks deleted"},
	{"ssh", instance_ssh, "ssh into it"},
	{"logs", instance_logs, "its history and the nodes' reports"},
};

int cmd_instance(int argc, char **argv)
{
	return client_dispatch("instance",
			       "Instances: GPUs with your image, SSH, ports and a data disk kept across stop and start.\n",
			       subs, sizeof(subs) / sizeof(subs[0]), argc, argv);
}

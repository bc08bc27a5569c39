/* cmd_job.c - `suanli job run|list|show|logs|cancel` (docs/jobs.md).
 *
 * A job runs one command on every node of a lease (or the first N), as one
 * rank per node with the distributed environment set by the controller.
 * `job logs -f` follows every rank by polling the job (its ranks' log sizes)
 * and fetching what is new, each rank from its own offset, until the job has
 * ended and its output stopped growing. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "client.h"
#include "output.h"

#define JOB_CLI_MAX_ENV 128      /* --env options (the controller's bound too) */
#define JOB_CLI_FOLLOW_MS 1000   /* -f: between polls */
#define JOB_CLI_SETTLE_POLLS 2   /* -f: polls without new output after the job ended */
#define JOB_CLI_MAX_RANKS 100000 /* ranks followed */

enum { OPT_INSTANCE = 0x180, OPT_LEASE = 0x200, OPT_NODES, OPT_RESTART, OPT_ENV, OPT_GRACE, OPT_RANK, OPT_STATE,
       OPT_IMAGE, OPT_TENANT, OPT_NODE };

static int job_path(const char *cmd, const char *id, const char *suffix, char *path, size_t n)
{
	return client_object_path(cmd, "/v1/jobs", id, suffix, "a job ID (as job-000001)", path, n);
}

/* ---- run ---- */

static const char run_help[] =
	"usage: suanli job run --lease L [OPTIONS] -- CMD [ARGS...]\n\n"
	"Runs CMD on the lease's nodes: one rank per node, which sees only the\n"
	"lease's GPUs there and the distributed environment (MASTER_ADDR,\n"
	"MASTER_PORT, NNODES, NODE_RANK, NPROC_PER_NODE, SUANLI_*; docs/jobs.md),\n"
	"so `torchrun --nnodes $NNODES --node_rank $NODE_RANK ...` just works.\n\n"
	"  --lease L          the active lease to run on\n"
	"  --instance ID      instead of --lease: inside a running instance's\n"
	"                     containers, on its lease's GPUs\n"
	"  --nodes all|N      every node of the lease (default) or its first N\n"
	"  --restart P        never (default), on-failure, or always (services)\n"
	"  --env K=V          an extra variable for every rank (repeatable)\n"
	"  --stop-grace S     seconds between SIGTERM and SIGKILL on cancel (10)\n"
	"  --image NAME       the catalog's image to run in (suanli image list;\n"
	"                     default: the catalog's default)\n" CLIENT_HELP_OPTS
	"\nExamples:\n"
	"  suanli job run --lease ls-000042 -- sh -c 'echo $NODE_RANK $CUDA_VISIBLE_DEVICES'\n"
	"  suanli job run --lease ls-000042 --env NCCL_DEBUG=INFO -- sh -c \\\n"
	"      'torchrun --nnodes $NNODES --node_rank $NODE_RANK --nproc_per_node $NPROC_PER_NODE \\\n"
	"       --master_addr $MASTER_ADDR --master_port $MASTER_PORT train.py'\n"
	"  (the command runs without a shell: use sh -c '...' for $VARIABLES)\n";

/* K=V into env; -1 after a usage error. */
static int add_env(json_t *env, const char *cmd, const char *kv)
{
	const char *eq = strchr(kv, '=');
	char key[256];
	if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(key)) {
		cli_usage_error(cmd, "--env expects KEY=VALUE, not '%.64s'", kv);
		return -1;
	}
	memcpy(key, kv, (size_t)(eq - kv));
	key[eq - kv] = 0;
	if (json_object_size(env) >= JOB_CLI_MAX_ENV) {
		cli_usage_error(cmd, "at most %d --env options", JOB_CLI_MAX_ENV);
		return -1;
	}
	json_object_set_new(env, key, json_string(eq + 1));
	return 0;
}

static int job_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{"lease", required_argument, NULL, OPT_LEASE},
		{"instance", required_argument, NULL, OPT_INSTANCE},
		{"nodes", required_argument, NULL, OPT_NODES},
		{"restart", required_argument, NULL, OPT_RESTART},
		{"env", required_argument, NULL, OPT_ENV},
		{"stop-grace", required_argument, NULL, OPT_GRACE},
		{"image", required_argument, NULL, OPT_IMAGE},
		CLIENT_LONG_OPTS,
		{0, 0, 0, 0}};
	struct client cl;
	json_t *req = json_object(), *env = json_object(), *job = NULL, *args = json_array();
	int c, rc = CLI_EXIT_USAGE;
	long v;

	client_init(&cl, "job run");
	optind = 0;
	/* '+': options end at the command, so its own options stay its own. */
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(run_help, stdout); rc = CLI_EXIT_OK; goto done;
		case OPT_LEASE: json_object_set_new(req, "lease", json_string(optarg)); break;
		case OPT_INSTANCE: json_object_set_new(req, "instance", json_string(optarg)); break;
		case OPT_NODES:
			if (!strcmp(optarg, "all")) {
				json_object_set_new(req, "nodes", json_string("all"));
				break;
			}
			if ((v = cli_parse_int(cl.cmd, "--nodes", optarg, 1, 100000)) < 0)
				goto done;
			json_object_set_new(req, "nodes", json_integer(v));
			break;
		case OPT_RESTART:
			if (strcmp(optarg, "never") && strcmp(optarg, "on-failure") && strcmp(optarg, "always")) {
				cli_usage_error(cl.cmd, "--restart is never, on-failure or always, not '%s'", optarg);
				goto done;
			}
			json_object_set_new(req, "restart", json_string(optarg));
			break;
		case OPT_ENV:
			if (add_env(env, cl.cmd, optarg) < 0)
				goto done;
			break;
		case OPT_GRACE:
			if ((v = cli_parse_int(cl.cmd, "--stop-grace", optarg, 1, 3600)) < 0)
				goto done;
			json_object_set_new(req, "stop_grace_s", json_integer(v));
			break;
		case OPT_IMAGE: json_object_set_new(req, "image", json_string(optarg)); break;
		default: rc = client_getopt_error(cl.cmd, c, argv); goto done;
		}
	}
	if (!json_object_get(req, "lease") == !json_object_get(req, "instance")) {
		cli_usage_error(cl.cmd, "give one of --lease L and --instance ID");
		goto done;
	}
	if (optind >= argc) {
		cli_usage_error(cl.cmd, "no command: give it after --, as: -- python3 train.py");
		goto done;
	}
	for (int i = optind; i < argc; i++)
		json_array_append_new(args, json_string(argv[i]));
	json_object_set(req, "argv", args);
	if (json_object_size(env))
		json_object_set(req, "env", env);
	if ((rc = client_open(&cl)) != CLI_EXIT_OK)
		goto done;
	rc = client_call(&cl, "POST", "/v1/jobs", req, NULL, &job);
	if (rc == CLI_EXIT_OK && job) {
		const json_t *ranks = json_object_get(job, "ranks");
		const char *id = out_str(job, "id", "?");
		printf("Job %s runs on lease %s: %zu rank%s (", id, out_str(job, "lease", "?"),
		       json_array_size(ranks), json_array_size(ranks) == 1 ? "" : "s");
		for (size_t i = 0; i < json_array_size(ranks) && i < 4; i++)
			printf("%s%s", i ? ", " : "", out_str(json_array_get(ranks, i), "node", "?"));
		printf("%s).\nFollow its output: suanli job logs %s -f\n",
		       json_array_size(ranks) > 4 ? ", ..." : "", id);
	}
done:
	json_decref(job);
	json_decref(req);
	json_decref(env);
	json_decref(args);
	client_close(&cl);
	return rc;
}

/* ---- list ---- */

static const char list_help[] =
	"usage: suanli job list [--lease L] [--state S] [OPTIONS]\n\n"
	"Lists the jobs you may see, oldest first.\n\n"
	"  --lease L          only jobs on lease L\n"
	"  --state S          pending, running, succeeded, failed, cancelling, cancelled\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli job list --lease ls-000042\n";

static void job_row(struct out_table *t, const json_t *j, const void *ctx)
{
	char ranks[32], cmd[256], age[32];
	snprintf(ranks, sizeof(ranks), "%zu", json_array_size(json_object_get(j, "ranks")));
	out_join(json_object_get(j, "argv"), " ", cmd, sizeof(cmd));
	if (strlen(cmd) > 48)
		memcpy(cmd + 45, "...", sizeof("..."));
	out_age(out_str(j, "created_at", NULL), *(const time_t *)ctx, age, sizeof(age));
	const char *row[] = {out_str(j, "id", "?"),      out_str(j, "lease", "?"),
			     out_str(j, "state", "?"),   ranks,
			     out_str(j, "restart", "-"), cmd, age};
	out_table_row(t, row);
}

static int job_list(int argc, char **argv)
{
	static const struct option opts[] = {{"lease", required_argument, NULL, OPT_LEASE},
					     {"state", required_argument, NULL, OPT_STATE},
					     {"tenant", required_argument, NULL, OPT_TENANT},
					     {"node", required_argument, NULL, OPT_NODE},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	static const char *const head[] = {"ID", "LEASE", "STATE", "RANKS", "RESTART", "COMMAND", "AGE"};
	struct client cl;
	const char *lease = NULL, *state = NULL, *tenant = NULL, *node = NULL;
	char path[CLIENT_PATH_MAX] = "/v1/jobs";
	json_t *arr;
	int c, rc;

	client_init(&cl, "job list");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(list_help, stdout); return CLI_EXIT_OK;
		case OPT_LEASE: lease = optarg; break;
		case OPT_STATE: state = optarg; break;
		case OPT_TENANT: tenant = optarg; break;
		case OPT_NODE: node = optarg; break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	if (client_query_add(path, sizeof(path), "lease", lease) ||
	    client_query_add(path, sizeof(path), "state", state) ||
	    client_query_add(path, sizeof(path), "tenant", tenant) ||
	    client_query_add(path, sizeof(path), "node", node))
		return cli_usage_error(cl.cmd, "a filter is too long");
	if ((rc = client_get_pages(&cl, path, "No jobs.\n", &arr)) != CLIENT_GO)
		return rc;
	time_t now = time(NULL);
	rc = out_table_list(stdout, 7, head, arr, job_row, &now) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
	json_decref(arr);
	return rc;
}

/* ---- show ---- */

static const char show_help[] = "usage: suanli job show ID [OPTIONS]\n\n"
				"Shows one job: its command, state and every rank (node, GPUs,\n"
				"state, exit code or signal, restarts).\n\n" CLIENT_HELP_OPTS
				"\nExample:\n  suanli job show job-000001\n";

static void print_job(const json_t *j)
{
	char cmd[1024], buf[32];
	out_join(json_object_get(j, "argv"), " ", cmd, sizeof(cmd));
	const char *reason = out_str(j, "reason", "");
	printf("Job %s on lease %s is %s%s%s.\n", out_str(j, "id", "?"), out_str(j, "lease", "?"),
	       out_str(j, "state", "?"), *reason ? ": " : "", reason);
	printf("Command:   %s\n", cmd);
	printf("Restart:   %s (stop grace %ss)\n", out_str(j, "restart", "?"),
	       out_int(j, "stop_grace_s", buf, sizeof(buf)));
	if (out_str(j, "image", NULL))
		printf("Image:     %s (%s)\n", out_str(j, "image", "?"), out_str(j, "image_ref", "?"));
	printf("Created:   %s\n", out_str(j, "created_at", "-"));
	if (out_str(j, "ended_at", NULL))
		printf("Ended:     %s\n", out_str(j, "ended_at", "-"));
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)json_object_get(j, "env"), k, v)
		printf("Env:       %s=%s\n", k, json_string_value(v));
	static const char *const head[] = {"RANK", "NODE", "GPUS", "STATE", "EXIT", "RESTARTS", "LOG"};
	struct out_table t;
	out_table_init(&t, 7, head);
	size_t i;
	json_array_foreach(json_object_get(j, "ranks"), i, v) {
		char rank[24], gpus[256], exitb[32], restarts[24], logb[32];
		snprintf(rank, sizeof(rank), "%zu", i);
		out_gpu_list(json_object_get(v, "gpus"), gpus, sizeof(gpus));
		const json_t *sig = json_object_get(v, "signal"), *code = json_object_get(v, "exit_code");
		if (json_is_integer(sig))
			snprintf(exitb, sizeof(exitb), "signal %lld", (long long)json_integer_value(sig));
		else if (json_is_integer(code))
			snprintf(exitb, sizeof(exitb), "%lld", (long long)json_integer_value(code));
		else
			snprintf(exitb, sizeof(exitb), "-");
		snprintf(logb, sizeof(logb), "%lld B", (long long)json_integer_value(json_object_get(v, "log_size")));
		const char *row[] = {rank, out_str(v, "node", "?"), gpus, out_str(v, "state", "?"), exitb,
				     out_int(v, "restarts", restarts, sizeof(restarts)), logb};
		out_table_row(&t, row);
	}
	printf("\n");
	out_table_print(&t, stdout);
	out_table_release(&t);
	json_array_foreach(json_object_get(j, "ranks"), i, v) {
		if (out_str(v, "progress", NULL))
			printf("Rank %zu:    %s\n", i, out_str(v, "progress", ""));
		if (out_str(v, "error", NULL))
			printf("Rank %zu:    %s\n", i, out_str(v, "error", ""));
	}
}

static int job_show(int argc, char **argv)
{
	struct client cl;
	char path[CLIENT_PATH_MAX];
	json_t *j = NULL;
	int rc;
	client_init(&cl, "job show");
	if ((rc = client_args(&cl, argc, argv, show_help, 1, "one job ID")) != CLIENT_GO)
		return rc;
	if (job_path(cl.cmd, argv[optind], "", path, sizeof(path)))
		return CLI_EXIT_USAGE;
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "GET", path, NULL, NULL, &j)) == CLI_EXIT_OK && j)
		print_job(j);
	json_decref(j);
	client_close(&cl);
	return rc;
}

/* ---- cancel ---- */

static const char cancel_help[] =
	"usage: suanli job cancel ID [OPTIONS]\n\n"
	"Stops every rank of a job: SIGTERM to its process group, then SIGKILL\n"
	"after the job's stop grace. The job is cancelling until the agents\n"
	"report its ranks stopped, then cancelled.\n\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli job cancel job-000001\n";

static int job_cancel(int argc, char **argv)
{
	struct client cl;
	char path[CLIENT_PATH_MAX];
	json_t *j = NULL;
	int rc;
	client_init(&cl, "job cancel");
	if ((rc = client_args(&cl, argc, argv, cancel_help, 1, "one job ID")) != CLIENT_GO)
		return rc;
	if (job_path(cl.cmd, argv[optind], "/cancel", path, sizeof(path)))
		return CLI_EXIT_USAGE;
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "POST", path, NULL, NULL, &j)) == CLI_EXIT_OK && j) {
		char buf[32];
		if (!strcmp(out_str(j, "state", ""), "cancelling"))
			printf("Job %s is cancelling: its ranks get SIGTERM, then SIGKILL after %ss.\n",
			       out_str(j, "id", "?"), out_int(j, "stop_grace_s", buf, sizeof(buf)));
		else
			printf("Job %s is %s.\n", out_str(j, "id", "?"), out_str(j, "state", "?"));
	}
	json_decref(j);
	client_close(&cl);
	return rc;
}

/* ---- logs ---- */

static const char logs_help[] =
	"usage: suanli job logs ID [--rank R] [-f] [OPTIONS]\n\n"
	"Prints a job's output: every rank's lines prefixed with \"[R] \", or rank\n"
	"R's output as it is. The controller keeps the newest 64 MiB per rank.\n\n"
	"  --rank R           only rank R\n"
	"  -f, --follow       keep printing new output until the job has ended\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli job logs job-000001 -f\n";

/* GETs path's raw bytes; CLI_EXIT_OK with *resp filled, else the error printed. */
static int get_raw(struct client *cl, const char *path, struct http_response *resp)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	if (http_client_request(cl->http, "GET", path, NULL, 0, NULL, 0, resp, &d) != SL_OK) {
		cli_print_diag(&d);
		return CLI_EXIT_FAIL;
	}
	if (resp->status < 200 || resp->status > 299) {
		if (http_client_error_diag(resp, &d) == SL_OK)
			sl_diag_set(&d, SL_EIO, "the controller answered %d", resp->status);
		cli_print_diag(&d);
		http_response_release(resp);
		return CLI_EXIT_FAIL;
	}
	return CLI_EXIT_OK;
}

struct follow_rank {
	long long off;
	char *part; /* a line not yet ended (prefixed mode) */
	size_t npart;
};

/* Writes b with "[R] " before every line; a last partial line is kept. */
static void emit(struct follow_rank *fr, int rank, bool prefix, const char *b, size_t n)
{
	if (!prefix) {
		fwrite(b, 1, n, stdout);
		return;
	}
	size_t start = 0;
	for (size_t i = 0; i < n; i++) {
		if (b[i] != '\n')
			continue;
		printf("[%d] ", rank);
		if (fr->npart)
			fwrite(fr->part, 1, fr->npart, stdout);
		fwrite(b + start, 1, i + 1 - start, stdout);
		fr->npart = 0;
		start = i + 1;
	}
	if (start < n) {
		char *p = realloc(fr->part, fr->npart + n - start);
		if (p) {
			memcpy(p + fr->npart, b + start, n - start);
			fr->part = p;
			fr->npart += n - start;
		}
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

static int follow(struct client *cl, const char *id, long rank_only)
{
	char path[CLIENT_PATH_MAX], q[64];
	struct follow_rank *fr = NULL;
	size_t nfr = 0;
	int quiet = 0, rc = CLI_EXIT_OK;
	if (job_path(cl->cmd, id, "", path, sizeof(path)))
		return CLI_EXIT_USAGE;
	for (;;) {
		json_t *j = NULL;
		if ((rc = client_call(cl, "GET", path, NULL, NULL, &j)) != CLI_EXIT_OK)
			break;
		const json_t *ranks = json_object_get(j, "ranks");
		size_t n = json_array_size(ranks);
		if (n > JOB_CLI_MAX_RANKS)
			n = JOB_CLI_MAX_RANKS;
		if (rank_only >= (long)n) {
			fprintf(stderr, "suanli: job %s has no rank %ld (it has %zu)\n", id, rank_only, n);
			json_decref(j);
			rc = CLI_EXIT_FAIL;
			break;
		}
		if (n > nfr) {
			struct follow_rank *g = realloc(fr, n * sizeof(*g));
			if (!g) {
				json_decref(j);
				rc = CLI_EXIT_FAIL;
				break;
			}
			memset(g + nfr, 0, (n - nfr) * sizeof(*g));
			fr = g;
			nfr = n;
		}
		const char *st = out_str(j, "state", "");
		bool ended = !strcmp(st, "succeeded") || !strcmp(st, "failed") || !strcmp(st, "cancelled");
		bool news = false;
		for (size_t r = 0; r < n && rc == CLI_EXIT_OK; r++) {
			if (rank_only >= 0 && (long)r != rank_only)
				continue;
			const json_t *rk = json_array_get(ranks, r);
			long long size = json_integer_value(json_object_get(rk, "log_size"));
			long long start = json_integer_value(json_object_get(rk, "log_start"));
			if (fr[r].off < start) {
				fprintf(stderr, "suanli: rank %zu: %lld earlier bytes are no longer kept\n", r,
					start - fr[r].off);
				fr[r].off = start;
			}
			while (fr[r].off < size) {
				char lp[CLIENT_PATH_MAX];
				struct http_response resp = {0};
				snprintf(q, sizeof(q), "/logs?rank=%zu&offset=%lld", r, fr[r].off);
				if (job_path(cl->cmd, id, q, lp, sizeof(lp)) ||
				    (rc = get_raw(cl, lp, &resp)) != CLI_EXIT_OK)
					break;
				emit(&fr[r], (int)r, rank_only < 0, resp.body, resp.len);
				fr[r].off += (long long)resp.len;
				news = true;
				bool empty = resp.len == 0;
				http_response_release(&resp);
				if (empty)
					break;
			}
		}
		json_decref(j);
		fflush(stdout);
		if (rc != CLI_EXIT_OK)
			break;
		quiet = ended && !news ? quiet + 1 : 0;
		if (quiet >= JOB_CLI_SETTLE_POLLS)
			break;
		sleep_ms(JOB_CLI_FOLLOW_MS);
	}
	for (size_t r = 0; r < nfr; r++) {
		if (fr[r].npart) {
			printf("[%zu] ", r);
			fwrite(fr[r].part, 1, fr[r].npart, stdout);
			putchar('\n');
		}
		free(fr[r].part);
	}
	free(fr);
	return rc;
}

static int job_logs(int argc, char **argv)
{
	static const struct option opts[] = {{"rank", required_argument, NULL, OPT_RANK},
					     {"follow", no_argument, NULL, 'f'},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	struct client cl;
	long rank = -1;
	bool fol = false;
	int c, rc;
	client_init(&cl, "job logs");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":hf", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(logs_help, stdout); return CLI_EXIT_OK;
		case 'f': fol = true; break;
		case OPT_RANK:
			if ((rank = cli_parse_int(cl.cmd, "--rank", optarg, 0, JOB_CLI_MAX_RANKS)) < 0)
				return CLI_EXIT_USAGE;
			break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind + 1 != argc)
		return cli_usage_error(cl.cmd, "expects one job ID");
	const char *id = argv[optind];
	char path[CLIENT_PATH_MAX], q[64];
	if (rank >= 0)
		snprintf(q, sizeof(q), "/logs?rank=%ld", rank);
	else
		snprintf(q, sizeof(q), "/logs");
	if (job_path(cl.cmd, id, q, path, sizeof(path)))
		return CLI_EXIT_USAGE;
	if ((rc = client_open(&cl)) != CLI_EXIT_OK)
		return rc;
	cl.json = 0; /* the output is text */
	if (fol) {
		rc = follow(&cl, id, rank);
	} else {
		struct http_response resp = {0};
		if ((rc = get_raw(&cl, path, &resp)) == CLI_EXIT_OK) {
			fwrite(resp.body, 1, resp.len, stdout);
			http_response_release(&resp);
		}
	}
	client_close(&cl);
	return rc;
}

static const struct client_sub job_subs[] = {
	{"run", job_run, "run a command on a lease's nodes (one rank per node)"},
	{"list", job_list, "list jobs"},
	{"show", job_show, "one job: command, state, ranks with exit codes"},
	{"logs", job_logs, "a job's output, all ranks or one; -f follows"},
	{"cancel", job_cancel, "stop a job (SIGTERM, then SIGKILL)"},
};

int cmd_job(int argc, char **argv)
{
	return client_dispatch("job", "Jobs: commands run on a lease's nodes by their agents.\n",
			       job_subs, sizeof(job_subs) / sizeof(job_subs[0]), argc, argv);
}

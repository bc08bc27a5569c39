/* main.c - the `suanli` command: dispatches to one function per subcommand.
 * Only main() decides the exit status.
 *
 * Global options. --server, --token and --json may come before the command,
 * as git and kubectl take them, as well as after it. Before an online
 * command they become the client's flag-level values (cli_global, read by
 * client_init), so an option after the command still wins, and nothing is
 * added to argv, where it could land after a `job run ... --` separator.
 * The offline commands (plan, topo, fleet, sim) parse their own options, so
 * a --json before one is appended to its argv (it works where the command
 * has it), and --server or --token before one is a usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{"plan", cmd_plan, "place one request on a fleet file, offline, and explain it"},
	{"topo", cmd_topo, "print a node's GPU matrix like nvidia-smi topo -m, with bandwidths"},
	{"fleet", cmd_fleet, "validate a fleet file and summarise it (fleet check FILE)"},
	{"sim", cmd_sim, "replay GPU cluster traces on the placement core (sim openb, sim replay)"},
	{"nodes", cmd_nodes, "list the controller's nodes with their state and free GPUs"},
	{"node", cmd_node, "one node: show, drain, resume"},
	{"tenant", cmd_tenant, "tenants: create, list, show"},
	{"token", cmd_token, "access tokens: create, list, revoke"},
	{"user", cmd_user, "console users (people with passwords): create, list, remove, passwd"},
	{"image", cmd_image, "the image catalog jobs run in: add, list"},
	{"agent-token", cmd_agent_token, "join tokens for node agents: create"},
	{"lease", cmd_lease, "leases: create, list, show, release, extend, scale"},
	{"job", cmd_job, "jobs on a lease's nodes: run, list, show, logs, cancel"},
	{"instance", cmd_instance, "instances: GPUs with an image, SSH, ports, a data disk; stop/start"},
	{"ssh-key", cmd_ssh_key, "your SSH public keys, for instances: add, list, remove"},
	{"queue", cmd_queue, "leases waiting for capacity, and why"},
	{"status", cmd_status, "each controller: leader or standby, epoch, last renewal"},
	{"reservation", cmd_reservation, "capacity held for a tenant: create, list"},
	{"price", cmd_price, "prices per GPU-hour or GPU-month: set, list, history"},
	{"topup", cmd_topup, "record money a tenant paid in (operator)"},
	{"credit-line", cmd_credit_line, "set how far below zero a tenant may go (operator)"},
	{"credit", cmd_credit, "give a tenant a credit, e.g. an SLA refund (operator)"},
	{"balance", cmd_balance, "a tenant's balance, credit line and grace state"},
	{"ledger", cmd_ledger, "a tenant's postings: top-ups, charges, credits"},
	{"invoice", cmd_invoice, "a tenant's invoice for a month (JSON or CSV)"},
	{"usage", cmd_usage, "running and month-to-date usage"},
	{"revenue", cmd_revenue, "revenue of a month by region, model and plan (operator)"},
	{"audit", cmd_audit, "the tamper-evident audit log: log, checkpoint, proof, verify, export"},
};

static const char *const offline[] = {"plan", "topo", "fleet", "sim"};

static void usage(FILE *out)
{
	fprintf(out, "usage: suanli [--server URL] [--token TOKEN] [--json] COMMAND [OPTIONS]\n\n"
		     "suanli (算力) leases and schedules NVLink GPU clusters.\n\n"
		     "Commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nGlobal options, before the command or after it (after it wins):\n"
		     "  --server URL   the controller (default: SUANLI_SERVER, the config file,\n"
		     "                 or http://127.0.0.1:7400)\n"
		     "  --token TOKEN  bearer token (default: SUANLI_TOKEN or the config file)\n"
		     "  --json         print JSON (the API's answer, or the offline command's)\n"
		     "\nRun 'suanli COMMAND --help' for a command's options.\n"
		     "Documentation: docs/cli.md, docs/fleet-file.md, docs/placement.md\n");
}

static int global_usage_error(const char *fmt, const char *opt)
{
	fprintf(stderr, "suanli: ");
	fprintf(stderr, fmt, opt);
	fprintf(stderr, "\n  hint: before the command suanli takes --server URL, --token TOKEN "
			"and --json; see 'suanli --help'\n");
	return CLI_EXIT_USAGE;
}

/* Takes the value of --NAME VALUE or --NAME=VALUE at argv[*i] (advancing *i
 * past it); 0 when argv[*i] is not --NAME, -1 (after the message) when the
 * value is missing. */
static int global_value(int argc, char **argv, int *i, const char *name, const char **out)
{
	const char *a = argv[*i] + 2;
	size_t n = strlen(name);
	if (strncmp(a, name, n) != 0)
		return 0;
	if (a[n] == '=') {
		*out = a + n + 1;
		return 1;
	}
	if (a[n] != '\0')
		return 0;
	if (*i + 1 >= argc) {
		global_usage_error("option '%s' needs a value", argv[*i]);
		return -1;
	}
	*out = argv[++*i];
	return 1;
}

/* Reads the global options at argv[1..]; returns the index of the command
 * word, or -1 after a usage error. --help and --version stop the scan. */
static int global_opts(int argc, char **argv)
{
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		int r;
		if (!strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "--version"))
			break;
		if (!strcmp(a, "--json")) {
			cli_global.json = 1;
			continue;
		}
		if (!strncmp(a, "--", 2) &&
		    ((r = global_value(argc, argv, &i, "server", &cli_global.server)) ||
		     (r = global_value(argc, argv, &i, "token", &cli_global.token)))) {
			if (r < 0)
				return -1;
			continue;
		}
		global_usage_error("unknown option '%s' before the command", a);
		return -1;
	}
	return i;
}

static int is_offline(const char *name)
{
	for (size_t i = 0; i < sizeof(offline) / sizeof(offline[0]); i++)
		if (!strcmp(name, offline[i]))
			return 1;
	return 0;
}

/* Runs an offline command, --json given before it appended to its argv;
 * --server and --token before it are a usage error: it talks to no one. */
static int run_offline(int (*fn)(int, char **), int argc, char **argv)
{
	if (cli_global.server || cli_global.token) {
		fprintf(stderr, "suanli: '%s' works offline; %s does not apply to it\n"
				"  hint: leave it out, or see 'suanli %s --help'\n",
			argv[0], cli_global.server ? "--server" : "--token", argv[0]);
		return CLI_EXIT_USAGE;
	}
	if (!cli_global.json)
		return fn(argc, argv);
	char **v = calloc((size_t)argc + 2, sizeof(*v));
	if (!v) {
		fprintf(stderr, "suanli: out of memory\n");
		return CLI_EXIT_FAIL;
	}
	memcpy(v, argv, (size_t)argc * sizeof(*v));
	v[argc] = "--json";
	int rc = fn(argc + 1, v);
	free(v);
	return rc;
}

int main(int argc, char **argv)
{
	int first = global_opts(argc, argv);
	if (first < 0)
		return CLI_EXIT_USAGE;
	if (first >= argc) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	const char *cmd = argv[first];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(cmd, "--version")) {
		printf("suanli 0.1.0\n");
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(cmd, commands[i].name) != 0)
			continue;
		if (is_offline(cmd))
			return run_offline(commands[i].fn, argc - first, argv + first);
		return commands[i].fn(argc - first, argv + first);
	}
	fprintf(stderr, "suanli: unknown command '%s'\n  hint: run 'suanli --help' for the list\n",
		cmd);
	return CLI_EXIT_USAGE;
}

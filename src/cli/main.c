/* main.c - the `suanli` command: dispatches to one function per subcommand.
 * Only main() decides the exit status. */
#include <stdio.h>
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
	{"image", cmd_image, "the image catalog jobs run in: add, list"},
	{"agent-token", cmd_agent_token, "join tokens for node agents: create"},
	{"lease", cmd_lease, "leases: create, list, show, release, extend, scale"},
	{"job", cmd_job, "jobs on a lease's nodes: run, list, show, logs, cancel"},
	{"queue", cmd_queue, "leases waiting for capacity, and why"},
	{"reservation", cmd_reservation, "capacity held for a tenant: create, list"},
	{"price", cmd_price, "prices per GPU-hour or GPU-month: set, list, history"},
	{"topup", cmd_topup, "record money a tenant paid in (operator)"},
	{"credit-line", cmd_credit_line, "set how far below zero a tenant may go (operator)"},
	{"credit", cmd_credit, "give a tenant a credit, e.g. an SLA refund (operator)"},
	{"balance", cmd_balance, "a tenant's balance, credit line and grace state"},
	{"invoice", cmd_invoice, "a tenant's invoice for a month (JSON or CSV)"},
	{"usage", cmd_usage, "running and month-to-date usage"},
	{"revenue", cmd_revenue, "revenue of a month by region, model and plan (operator)"},
	{"audit", cmd_audit, "the tamper-evident audit log: log, checkpoint, proof, verify, export"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: suanli COMMAND [OPTIONS]\n\n"
		     "suanli (算力) leases and schedules NVLink GPU clusters.\n\n"
		     "Commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nRun 'suanli COMMAND --help' for a command's options.\n"
		     "Documentation: docs/cli.md, docs/fleet-file.md, docs/placement.md\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("suanli 0.1.0\n");
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "suanli: unknown command '%s'\n  hint: run 'suanli --help' for the list\n",
		argv[1]);
	return CLI_EXIT_USAGE;
}

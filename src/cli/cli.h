/* cli.h - what the `suanli` subcommands share. Subcommands are thin: they parse
 * arguments, call core, and print. Each returns the process exit status. */
#ifndef SL_CLI_H
#define SL_CLI_H

#include <stdio.h>

#include "err.h"
#include "fleet.h"
#include "topo.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1  /* the operation failed (refused, invalid input) */
#define CLI_EXIT_USAGE 2 /* wrong arguments */

int cmd_plan(int argc, char **argv);
int cmd_topo(int argc, char **argv);
int cmd_fleet(int argc, char **argv);
int cmd_fleet_import_slurm(int argc, char **argv); /* cmd_fleet_slurm.c */
int cmd_sim(int argc, char **argv); /* cmd_sim.c: offline trace replay */
/* Online commands: they talk to the controller (client.h). */
int cmd_nodes(int argc, char **argv);
int cmd_node(int argc, char **argv);
int cmd_tenant(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_user(int argc, char **argv); /* cmd_user.c: console users */
/* `suanli image add|list` (cmd_image.c). */
int cmd_image(int argc, char **argv);
int cmd_agent_token(int argc, char **argv); /* cmd_agent_token.c */
int cmd_lease(int argc, char **argv);
/* `suanli instance ...` (cmd_instance.c), `suanli ssh-key ...` (cmd_ssh_key.c). */
int cmd_instance(int argc, char **argv);
int cmd_ssh_key(int argc, char **argv);
int cmd_job(int argc, char **argv);
int cmd_queue(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_reservation(int argc, char **argv);
/* Billing (cmd_billing.c). */
int cmd_price(int argc, char **argv);
int cmd_topup(int argc, char **argv);
int cmd_credit_line(int argc, char **argv);
int cmd_credit(int argc, char **argv);
int cmd_balance(int argc, char **argv);
int cmd_ledger(int argc, char **argv);
int cmd_invoice(int argc, char **argv);
int cmd_usage(int argc, char **argv);
int cmd_revenue(int argc, char **argv);
int cmd_audit(int argc, char **argv);

/* Options given before the command (suanli --server U --token T --json CMD),
 * as git and kubectl take them. main() sets them once; client_init takes them
 * as the flag-level values, so the same option after the command still wins.
 * The strings are borrowed from argv. */
struct cli_globals {
	const char *server;
	const char *token;
	int json;
};
extern struct cli_globals cli_global; /* cli_util.c */

/* Prints "suanli: <diag>" and its hint to stderr. */
void cli_print_diag(const struct sl_diag *d);
/* Prints a usage error with a pointer to --help; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) SL_PRINTF(2, 3);
/* Initialises f and loads the fleet file at path; prints the error and returns
 * false on failure (f is then released). */
int cli_load_fleet(const char *path, struct fleet *f);
/* Parses a non-negative integer argument in [min, max]; prints an error naming
 * opt and returns -1 when it is not one. */
long cli_parse_int(const char *cmd, const char *opt, const char *s, long min, long max);
/* "0-3,6" for a GPU mask. */
void cli_format_gpus(gpumask_t m, char *buf, size_t n);

#endif

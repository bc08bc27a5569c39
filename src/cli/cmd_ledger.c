/* cmd_ledger.c - `suanli ledger --tenant T [--type TYPE]`: a tenant's
 * postings, oldest first (docs/billing.md, "Ledger and balances"). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "output.h"

static const char help[] =
	"usage: suanli ledger --tenant T [--type TYPE] [OPTIONS]\n\n"
	"A tenant's ledger: every top-up, charge, credit, refund and credit line change,\n"
	"oldest first, with its amount in minor units and as money.\n\n"
	"  --tenant T         the tenant\n"
	"  --type TYPE        only topup, charge, hosting_fee, credit, refund,\n"
	"                     credit_line_up or credit_line_down\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli ledger --tenant acme --type topup\n";

static void row(struct out_table *tab, const json_t *p, const void *ctx)
{
	(void)ctx;
	const char *cells[] = {out_str(p, "at", "-"), out_str(p, "type", "?"),
			       out_str(p, "amount_text", "?"), out_str(p, "id", "?"),
			       out_str(p, "reason", "")};
	out_table_row(tab, cells);
}

int cmd_ledger(int argc, char **argv)
{
	static const struct option opts[] = {{"tenant", required_argument, NULL, 't'},
					     {"type", required_argument, NULL, 'y'},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	static const char *const head[] = {"AT", "TYPE", "AMOUNT", "ID", "REASON"};
	struct client cl;
	const char *tenant = NULL, *type = NULL;
	char path[CLIENT_PATH_MAX] = "/v1/tenants/";
	json_t *arr;
	int c, rc;

	client_init(&cl, "ledger");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(help, stdout); return CLI_EXIT_OK;
		case 't': tenant = optarg; break;
		case 'y': type = optarg; break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	if (!tenant)
		return cli_usage_error(cl.cmd, "--tenant is required");
	size_t n;
	if (client_escape(path, sizeof(path), tenant) ||
	    (n = strlen(path), (size_t)snprintf(path + n, sizeof(path) - n, "/ledger%s",
						type ? "?type=" : "") >= sizeof(path) - n) ||
	    (type && client_escape(path, sizeof(path), type)))
		return cli_usage_error(cl.cmd, "--tenant or --type too long");
	if ((rc = client_get_list(&cl, path, "No postings.\n", &arr)) != CLIENT_GO)
		return rc;
	rc = out_table_list(stdout, 5, head, arr, row, NULL) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
	json_decref(arr);
	return rc;
}

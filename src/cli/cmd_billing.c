/* cmd_billing.c - `suanli price|topup|credit-line|credit|balance|invoice|
 * usage|revenue`: money through the controller's billing API.
 *
 * Amounts are whole numbers of minor units (fen) on the command line and in
 * the API, parsed with the core's money_parse_minor so "12.5", "-3" or "1e3"
 * are refused here before anything is sent. Human output formats amounts in
 * major units with the currency the controller answers with; --json prints
 * the API's answer, and `invoice --csv` prints the controller's CSV bytes
 * as they came (the same bytes on every regeneration). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "http_client.h"
#include "money.h"
#include "output.h"

/* Options a billing command may take, by getopt value. */
enum { O_MODEL = 'm', O_PLAN = 'p', O_PRICE = 'P', O_REGION = 'r', O_SITE = 's', O_FROM = 'f',
       O_TENANT = 't', O_AMOUNT = 'a', O_REASON = 'R', O_MONTH = 'M', O_HISTORY = 'H',
       O_CSV = 'C', O_REFUND = 'F' };

struct bargs {
	const char *v[128]; /* by option value */
	int flag[128];
};

static const struct option all_opts[] = {
	{"model", required_argument, NULL, O_MODEL},   {"plan", required_argument, NULL, O_PLAN},
	{"price", required_argument, NULL, O_PRICE},   {"region", required_argument, NULL, O_REGION},
	{"site", required_argument, NULL, O_SITE},     {"from", required_argument, NULL, O_FROM},
	{"tenant", required_argument, NULL, O_TENANT}, {"amount", required_argument, NULL, O_AMOUNT},
	{"reason", required_argument, NULL, O_REASON}, {"month", required_argument, NULL, O_MONTH},
	{"history", no_argument, NULL, O_HISTORY},     {"csv", no_argument, NULL, O_CSV},
	{"refund", no_argument, NULL, O_REFUND},       CLIENT_LONG_OPTS,
	{0, 0, 0, 0}};

/* Parses argv; allowed lists the option values this command takes. Returns
 * CLIENT_GO or an exit status. */
static int bparse(struct client *cl, int argc, char **argv, const char *help, const char *allowed,
		  struct bargs *a)
{
	int c;
	memset(a, 0, sizeof(*a));
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", all_opts, NULL)) != -1) {
		if (client_opt(cl, c, optarg))
			continue;
		if (c == 'h') {
			fputs(help, stdout);
			return CLI_EXIT_OK;
		}
		if (c > 0 && c < 128 && c != ':' && c != '?' && strchr(allowed, c)) {
			a->v[c] = optarg;
			a->flag[c] = 1;
			continue;
		}
		if (c > 0 && c < 128 && c != ':' && c != '?')
			return cli_usage_error(cl->cmd, "option '%s' does not apply here", argv[optind - 1]);
		return client_getopt_error(cl->cmd, c, argv);
	}
	if (optind != argc)
		return cli_usage_error(cl->cmd, "unexpected argument '%s'", argv[optind]);
	return CLIENT_GO;
}

/* A whole number of minor units from opt's text; -1 after a usage error. */
static int amount_arg(const struct client *cl, const char *opt, const char *s, bool zero_ok,
		      int64_t *out)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	if (money_parse_minor(s, false, out, &d) || (!zero_ok && *out == 0)) {
		cli_usage_error(cl->cmd, "%s must be a %s whole number of minor units (fen), got '%s'",
				opt, zero_ok ? "non-negative" : "positive", s);
		return -1;
	}
	return 0;
}

/* amount (minor units) as "12.34 CNY" with the answer's currency. */
static void fmt_money(const json_t *o, json_int_t amount, char *buf, size_t n)
{
	const char *code = out_str(o, "currency", "CNY");
	const struct money_currency *mc = money_currency_find(code);
	char m[MONEY_FMT_SIZE];
	struct sl_diag d;
	if (!mc || money_format(amount, mc, m, sizeof(m), &d))
		snprintf(buf, n, "%lld (minor units)", (long long)amount);
	else
		snprintf(buf, n, "%s %s", m, code);
}

static void print_balance(const json_t *o)
{
	char bal[64], line[64], avail[64];
	fmt_money(o, json_integer_value(json_object_get(o, "balance")), bal, sizeof(bal));
	fmt_money(o, json_integer_value(json_object_get(o, "credit_line")), line, sizeof(line));
	fmt_money(o, json_integer_value(json_object_get(o, "available")), avail, sizeof(avail));
	printf("Tenant %s: balance %s, credit line %s, available %s.\n", out_str(o, "tenant", "?"),
	       bal, line, avail);
	if (!strcmp(out_str(o, "state", "ok"), "grace"))
		printf("The balance has run out: running leases stop at %s unless it is topped up.\n",
		       out_str(o, "grace_until", "?"));
}

/* ---- price ---- */

static const char price_set_help[] =
	"usage: suanli price set --model M --plan hourly|spot|monthly --price FEN\n"
	"                        [--region R | --site S] [--from RFC3339] [OPTIONS]\n"
	"       suanli price set --plan hosting --price FEN [--region R | --site S]\n\n"
	"Sets a price from an instant on (default now; an instant in the past is refused,\n"
	"it would re-price time already used). FEN is per GPU-hour for hourly and spot,\n"
	"per GPU-month for monthly, per colocated server-month for hosting.\n\n"
	"  --model M          GPU model, e.g. h100-sxm (an unknown one is answered with the list)\n"
	"  --plan P           hourly, spot, monthly or hosting\n"
	"  --price FEN        whole minor units of the currency (fen)\n"
	"  --region R, --site S  scope (default: everywhere)\n"
	"  --from T           effective from this RFC 3339 instant\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli price set --model h100-sxm --plan hourly --price 2800 --region cn-east\n";

static int price_set(int argc, char **argv)
{
	struct client cl;
	struct bargs a;
	json_t *ans = NULL;
	int64_t price;
	int rc;
	client_init(&cl, "price set");
	if ((rc = bparse(&cl, argc, argv, price_set_help, "mpPrsf", &a)) != CLIENT_GO)
		return rc;
	if (!a.v[O_PLAN] || !a.v[O_PRICE])
		return cli_usage_error(cl.cmd, "--plan and --price are required");
	if (a.v[O_REGION] && a.v[O_SITE])
		return cli_usage_error(cl.cmd, "give --region or --site, not both");
	if (amount_arg(&cl, "--price", a.v[O_PRICE], true, &price))
		return CLI_EXIT_USAGE;
	json_t *body = json_pack("{s:s, s:I}", "plan", a.v[O_PLAN], "price", (json_int_t)price);
	if (a.v[O_MODEL])
		json_object_set_new(body, "model", json_string(a.v[O_MODEL]));
	if (a.v[O_REGION])
		json_object_set_new(body, "region", json_string(a.v[O_REGION]));
	if (a.v[O_SITE])
		json_object_set_new(body, "site", json_string(a.v[O_SITE]));
	if (a.v[O_FROM])
		json_object_set_new(body, "from", json_string(a.v[O_FROM]));
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "POST", "/v1/prices", body, NULL, &ans)) == CLI_EXIT_OK && ans) {
		char p[64];
		fmt_money(ans, json_integer_value(json_object_get(ans, "price")), p, sizeof(p));
		printf("Price of %s %s (%s%s%s) is %s from %s.\n", out_str(ans, "model", ""),
		       out_str(ans, "plan", "?"), out_str(ans, "scope", "?"),
		       *out_str(ans, "scope_name", "") ? " " : "", out_str(ans, "scope_name", ""), p,
		       out_str(ans, "from", "?"));
	}
	json_decref(ans);
	json_decref(body);
	client_close(&cl);
	return rc;
}

/* ctx is the whole answer, whose currency formats the money. */
static void price_row(struct out_table *tab, const json_t *e, const void *ctx)
{
	char p[64];
	fmt_money(ctx, json_integer_value(json_object_get(e, "price")), p, sizeof(p));
	const char *row[] = {out_str(e, "scope", "?"), out_str(e, "scope_name", "-"),
			     out_str(e, "model", "-"), out_str(e, "plan", "?"), p,
			     out_str(e, "from", "?"),
			     json_is_true(json_object_get(e, "in_force")) ? "yes" : "no"};
	out_table_row(tab, row);
}

static int price_show(int argc, char **argv, bool history)
{
	static const char *const head[] = {"SCOPE", "NAME", "MODEL", "PLAN", "PRICE", "FROM", "IN FORCE"};
	static const char list_help[] =
		"usage: suanli price list [--history] [OPTIONS]\n\n"
		"Prices in force now and scheduled ones; --history adds superseded entries.\n\n"
		"  --history          every entry ever set\n" CLIENT_HELP_OPTS;
	static const char history_help[] =
		"usage: suanli price history [OPTIONS]\n\nEvery price entry ever set, in order.\n\n" CLIENT_HELP_OPTS;
	struct client cl;
	struct bargs a;
	json_t *ans = NULL;
	int rc;
	client_init(&cl, history ? "price history" : "price list");
	if ((rc = bparse(&cl, argc, argv, history ? history_help : list_help, history ? "" : "H", &a)) !=
	    CLIENT_GO)
		return rc;
	history |= a.flag[O_HISTORY];
	if ((rc = client_open(&cl)) != CLI_EXIT_OK ||
	    (rc = client_call(&cl, "GET", history ? "/v1/prices?history=true" : "/v1/prices", NULL,
			      NULL, &ans)) != CLI_EXIT_OK ||
	    cl.json)
		goto done;
	if (!json_array_size(json_object_get(ans, "prices"))) {
		printf("No prices set: leases run free (suanli price set adds one).\n");
		goto done;
	}
	if (out_table_list(stdout, 7, head, json_object_get(ans, "prices"), price_row, ans))
		rc = CLI_EXIT_FAIL;
done:
	json_decref(ans);
	client_close(&cl);
	return rc;
}

static int price_list(int argc, char **argv) { return price_show(argc, argv, false); }
static int price_history(int argc, char **argv) { return price_show(argc, argv, true); }

int cmd_price(int argc, char **argv)
{
	static const struct client_sub subs[] = {
		{"set", price_set, "set a price from an instant on"},
		{"list", price_list, "prices in force and scheduled"},
		{"history", price_history, "every price entry ever set"},
	};
	return client_dispatch("price", "Prices per GPU-hour, GPU-month or hosted server.", subs,
			       sizeof(subs) / sizeof(subs[0]), argc, argv);
}

/* Appends s to the path in path[n]; -1 (path unchanged) when it does not
 * fit, which the caller reports: a path is never cut short. */
static int path_add(char *path, size_t n, const char *s)
{
	size_t k = strlen(path), m = strlen(s);
	if (m >= n - k)
		return -1;
	memcpy(path + k, s, m + 1);
	return 0;
}

/* ---- money in: topup, credit-line, credit ---- */

static int post_money(int argc, char **argv, const char *cmd, const char *help,
		      const char *allowed, const char *what, bool zero_ok)
{
	struct client cl;
	struct bargs a;
	json_t *ans = NULL;
	int64_t amount;
	int rc;
	char path[CLIENT_PATH_MAX] = "/v1/tenants/";
	client_init(&cl, cmd);
	if ((rc = bparse(&cl, argc, argv, help, allowed, &a)) != CLIENT_GO)
		return rc;
	if (!a.v[O_TENANT] || !a.v[O_AMOUNT])
		return cli_usage_error(cl.cmd, "--tenant and --amount are required");
	if (!strcmp(what, "credits") && !a.v[O_REASON])
		return cli_usage_error(cl.cmd, "--reason is required (it appears on the invoice)");
	if (amount_arg(&cl, "--amount", a.v[O_AMOUNT], zero_ok, &amount))
		return CLI_EXIT_USAGE;
	if (client_escape(path, sizeof(path), a.v[O_TENANT]))
		return cli_usage_error(cl.cmd, "tenant name too long");
	if (path_add(path, sizeof(path), "/") || path_add(path, sizeof(path), what))
		return cli_usage_error(cl.cmd, "tenant name too long");
	json_t *body = json_pack("{s:I}", "amount", (json_int_t)amount);
	if (a.v[O_REASON])
		json_object_set_new(body, "reason", json_string(a.v[O_REASON]));
	if (a.flag[O_REFUND])
		json_object_set_new(body, "refund", json_true());
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "POST", path, body, NULL, &ans)) == CLI_EXIT_OK && ans) {
		const json_t *p = json_object_get(ans, "posting");
		if (p) {
			char m[64];
			fmt_money(ans, json_integer_value(json_object_get(p, "amount")), m, sizeof(m));
			printf("Posted %s %s (%s).\n", out_str(p, "type", "?"), m, out_str(p, "id", "?"));
		}
		print_balance(ans);
	}
	json_decref(ans);
	json_decref(body);
	client_close(&cl);
	return rc;
}

int cmd_topup(int argc, char **argv)
{
	static const char help[] =
		"usage: suanli topup --tenant T --amount FEN [--reason R] [OPTIONS]\n\n"
		"Records money a tenant paid in (operator, admin).\n\n"
		"  --tenant T         the tenant\n"
		"  --amount FEN       whole minor units (fen), > 0\n"
		"  --reason R         e.g. a payment reference\n" CLIENT_HELP_OPTS;
	return post_money(argc, argv, "topup", help, "taR", "topups", false);
}

int cmd_credit_line(int argc, char **argv)
{
	static const char help[] =
		"usage: suanli credit-line --tenant T --amount FEN [--reason R] [OPTIONS]\n\n"
		"Sets how far below zero a tenant's balance may go (operator, admin).\n\n"
		"  --tenant T         the tenant\n"
		"  --amount FEN       the new line, whole minor units (fen), >= 0\n" CLIENT_HELP_OPTS;
	return post_money(argc, argv, "credit-line", help, "taR", "credit-line", true);
}

int cmd_credit(int argc, char **argv)
{
	static const char help[] =
		"usage: suanli credit --tenant T --amount FEN --reason R [--refund] [OPTIONS]\n\n"
		"Gives a tenant an operator credit (e.g. an SLA refund); it appears on the\n"
		"month's invoice as a negative line. --refund books it as a refund.\n\n"
		"  --tenant T         the tenant\n"
		"  --amount FEN       whole minor units (fen), > 0\n"
		"  --reason R         why (required)\n" CLIENT_HELP_OPTS;
	return post_money(argc, argv, "credit", help, "taRF", "credits", false);
}

/* ---- balance, invoice, usage, revenue ---- */

int cmd_balance(int argc, char **argv)
{
	static const char help[] =
		"usage: suanli balance --tenant T [OPTIONS]\n\n"
		"A tenant's balance (after its running usage up to now), credit line and,\n"
		"when the balance has run out, when its leases stop.\n\n"
		"  --tenant T         the tenant\n" CLIENT_HELP_OPTS;
	struct client cl;
	struct bargs a;
	json_t *ans = NULL;
	char path[CLIENT_PATH_MAX] = "/v1/tenants/";
	int rc;
	client_init(&cl, "balance");
	if ((rc = bparse(&cl, argc, argv, help, "t", &a)) != CLIENT_GO)
		return rc;
	if (!a.v[O_TENANT])
		return cli_usage_error(cl.cmd, "--tenant is required");
	if (client_escape(path, sizeof(path), a.v[O_TENANT]))
		return cli_usage_error(cl.cmd, "tenant name too long");
	if (path_add(path, sizeof(path), "/balance"))
		return cli_usage_error(cl.cmd, "tenant name too long");
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "GET", path, NULL, NULL, &ans)) == CLI_EXIT_OK && ans)
		print_balance(ans);
	json_decref(ans);
	client_close(&cl);
	return rc;
}

/* ctx is the invoice, whose currency formats the money. */
static void invoice_row(struct out_table *tab, const json_t *l, const void *ctx)
{
	char secs[32], up[64], amt[64];
	json_int_t gms = json_integer_value(json_object_get(l, "gpu_ms"));
	snprintf(secs, sizeof(secs), "%lld.%03lld", (long long)(gms / 1000), (long long)(gms % 1000));
	fmt_money(ctx, json_integer_value(json_object_get(l, "unit_price")), up, sizeof(up));
	fmt_money(ctx, json_integer_value(json_object_get(l, "amount")), amt, sizeof(amt));
	const char *row[] = {out_str(l, "kind", "?"), out_str(l, "lease", "-"),
			     out_str(l, "model", "-"), out_str(l, "plan", "-"),
			     gms ? secs : "-", up, amt};
	out_table_row(tab, row);
}

static void print_invoice(const json_t *inv)
{
	static const char *const head[] = {"KIND", "LEASE", "MODEL", "PLAN", "GPU-SECONDS",
					   "UNIT PRICE", "AMOUNT"};
	printf("Invoice of %s for %s (%s, %s)%s\n", out_str(inv, "tenant", "?"),
	       out_str(inv, "month", "?"), out_str(inv, "zone", "?"), out_str(inv, "currency", "?"),
	       json_is_true(json_object_get(inv, "complete")) ? ""
							      : ", month not over: up to now");
	if (json_array_size(json_object_get(inv, "lines")))
		(void)out_table_list(stdout, 7, head, json_object_get(inv, "lines"), invoice_row, inv);
	else
		printf("No lines.\n");
	char tot[64];
	fmt_money(inv, json_integer_value(json_object_get(inv, "total")), tot, sizeof(tot));
	printf("Total: %s\n", tot);
}

int cmd_invoice(int argc, char **argv)
{
	static const char help[] =
		"usage: suanli invoice --tenant T --month YYYY-MM [--json | --csv] [OPTIONS]\n\n"
		"A tenant's invoice for a calendar month of the billing time zone: one line\n"
		"per lease per unit price, credits, and the total. Regenerating it gives the\n"
		"same bytes. A month still running is billed up to now.\n\n"
		"  --tenant T         the tenant\n"
		"  --month YYYY-MM    the month\n"
		"  --csv              print it as CSV\n" CLIENT_HELP_OPTS;
	struct client cl;
	struct bargs a;
	json_t *ans = NULL;
	char path[CLIENT_PATH_MAX] = "/v1/tenants/";
	int rc;
	client_init(&cl, "invoice");
	if ((rc = bparse(&cl, argc, argv, help, "tMC", &a)) != CLIENT_GO)
		return rc;
	if (!a.v[O_TENANT] || !a.v[O_MONTH])
		return cli_usage_error(cl.cmd, "--tenant and --month are required");
	if (a.flag[O_CSV] && cl.json)
		return cli_usage_error(cl.cmd, "give --json or --csv, not both");
	if (client_escape(path, sizeof(path), a.v[O_TENANT]))
		return cli_usage_error(cl.cmd, "tenant name too long");
	if (path_add(path, sizeof(path), "/invoices/"))
		return cli_usage_error(cl.cmd, "tenant name too long");
	if (client_escape(path, sizeof(path), a.v[O_MONTH]))
		return cli_usage_error(cl.cmd, "month too long");
	if ((rc = client_open(&cl)) != CLI_EXIT_OK)
		goto done;
	if (a.flag[O_CSV]) {
		/* The CSV bytes as the controller made them. */
		struct http_response r = {0};
		struct sl_diag d;
		sl_diag_clear(&d);
		if (path_add(path, sizeof(path), "?format=csv")) {
			rc = cli_usage_error(cl.cmd, "month too long");
			goto done;
		}
		rc = CLI_EXIT_FAIL;
		if (http_client_request(cl.http, "GET", path, NULL, 0, NULL, 0, &r, &d) != SL_OK) {
			cli_print_diag(&d);
		} else if (r.status != 200) {
			if (http_client_error_diag(&r, &d) == SL_OK)
				sl_diag_set(&d, SL_EIO, "the controller answered %d", r.status);
			cli_print_diag(&d);
		} else {
			fwrite(r.body, 1, r.len, stdout);
			rc = CLI_EXIT_OK;
		}
		http_response_release(&r);
		goto done;
	}
	if ((rc = client_call(&cl, "GET", path, NULL, NULL, &ans)) == CLI_EXIT_OK && ans)
		print_invoice(ans);
done:
	json_decref(ans);
	client_close(&cl);
	return rc;
}

int cmd_usage(int argc, char **argv)
{
	static const char help[] =
		"usage: suanli usage [--tenant T] [OPTIONS]\n\n"
		"Running leases with their usage so far, and each tenant's month to date\n"
		"(tenant tokens see their own tenant).\n\n"
		"  --tenant T         only this tenant\n" CLIENT_HELP_OPTS;
	static const char *const head[] = {"TENANT", "LEASE", "MODEL", "PLAN", "GPUS", "SINCE",
					   "GPU-SECONDS", "AMOUNT"};
	struct client cl;
	struct bargs a;
	struct out_table tab;
	json_t *ans = NULL, *t, *l;
	size_t i, k;
	char path[CLIENT_PATH_MAX] = "/v1/usage";
	int rc;
	client_init(&cl, "usage");
	if ((rc = bparse(&cl, argc, argv, help, "t", &a)) != CLIENT_GO)
		return rc;
	if (a.v[O_TENANT]) {
		if (path_add(path, sizeof(path), "?tenant="))
			return cli_usage_error(cl.cmd, "tenant name too long");
		if (client_escape(path, sizeof(path), a.v[O_TENANT]))
			return cli_usage_error(cl.cmd, "tenant name too long");
	}
	if ((rc = client_open(&cl)) != CLI_EXIT_OK ||
	    (rc = client_call(&cl, "GET", path, NULL, NULL, &ans)) != CLI_EXIT_OK || cl.json)
		goto done;
	out_table_init(&tab, 8, head);
	json_array_foreach(json_object_get(ans, "tenants"), i, t) {
		json_array_foreach(json_object_get(t, "running"), k, l) {
			char g[16], secs[32], amt[64];
			json_int_t gms = json_integer_value(json_object_get(l, "gpu_ms"));
			snprintf(secs, sizeof(secs), "%lld.%03lld", (long long)(gms / 1000),
				 (long long)(gms % 1000));
			fmt_money(ans, json_integer_value(json_object_get(l, "amount")), amt, sizeof(amt));
			const char *row[] = {out_str(t, "tenant", "?"), out_str(l, "lease", "?"),
					     out_str(l, "model", "-"), out_str(l, "plan", "-"),
					     out_int(l, "gpus", g, sizeof(g)), out_str(l, "started_at", "-"),
					     secs, amt};
			out_table_row(&tab, row);
		}
	}
	out_table_print(&tab, stdout);
	out_table_release(&tab);
	json_array_foreach(json_object_get(ans, "tenants"), i, t) {
		const json_t *m = json_object_get(t, "month_to_date");
		char tot[64];
		fmt_money(ans, json_integer_value(json_object_get(m, "total")), tot, sizeof(tot));
		printf("%s: %s month to date %s\n", out_str(t, "tenant", "?"), out_str(ans, "month", "?"),
		       tot);
	}
done:
	json_decref(ans);
	client_close(&cl);
	return rc;
}

/* ctx is the whole answer, whose currency formats the money. */
static void revenue_row(struct out_table *tab, const json_t *r, const void *ctx)
{
	char q[32], amt[64];
	fmt_money(ctx, json_integer_value(json_object_get(r, "amount")), amt, sizeof(amt));
	const char *row[] = {out_str(r, "region", "-"), out_str(r, "model", "-"),
			     out_str(r, "plan", "?"), out_int(r, "quantity", q, sizeof(q)), amt};
	out_table_row(tab, row);
}

int cmd_revenue(int argc, char **argv)
{
	static const char help[] =
		"usage: suanli revenue --month YYYY-MM [OPTIONS]\n\n"
		"Revenue of a month by region, GPU model and plan, summed from the same\n"
		"lines the invoices carry (operator, admin, auditor).\n\n"
		"  --month YYYY-MM    the month\n" CLIENT_HELP_OPTS;
	static const char *const head[] = {"REGION", "MODEL", "PLAN", "QUANTITY", "AMOUNT"};
	struct client cl;
	struct bargs a;
	json_t *ans = NULL;
	char path[CLIENT_PATH_MAX] = "/v1/revenue/";
	int rc;
	client_init(&cl, "revenue");
	if ((rc = bparse(&cl, argc, argv, help, "M", &a)) != CLIENT_GO)
		return rc;
	if (!a.v[O_MONTH])
		return cli_usage_error(cl.cmd, "--month is required");
	if (client_escape(path, sizeof(path), a.v[O_MONTH]))
		return cli_usage_error(cl.cmd, "month too long");
	if ((rc = client_open(&cl)) != CLI_EXIT_OK ||
	    (rc = client_call(&cl, "GET", path, NULL, NULL, &ans)) != CLI_EXIT_OK || cl.json)
		goto done;
	(void)out_table_list(stdout, 5, head, json_object_get(ans, "rows"), revenue_row, ans);
	char tot[64];
	fmt_money(ans, json_integer_value(json_object_get(ans, "total")), tot, sizeof(tot));
	printf("Total %s: %s\n", out_str(ans, "month", "?"), tot);
done:
	json_decref(ans);
	client_close(&cl);
	return rc;
}

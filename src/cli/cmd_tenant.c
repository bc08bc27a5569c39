/* cmd_tenant.c - `suanli tenant create|list|show`: the organisations that
 * lease GPUs, with the regions their data may live in and their quotas. */
#include <string.h>

#include "cli.h"
#include "client.h"
#include "output.h"

#define TENANT_MAX_QUOTAS 256  /* --quota options in one command */
#define TENANT_QUOTA_MAX 1000000 /* GPUs in one quota */

/* "h100-sxm=16,a100-sxm=8" from an object of counts; "-" if empty. */
static void counts_text(const json_t *o, char *buf, size_t n)
{
	const char *k;
	json_t *v;
	size_t off = 0;
	buf[0] = '\0';
	json_object_foreach((json_t *)o, k, v) {
		if (off >= n)
			break;
		int w = snprintf(buf + off, n - off, "%s%s=%lld", off ? "," : "", k,
				 (long long)json_integer_value(v));
		if (w < 0)
			break;
		off += (size_t)w;
	}
	if (!buf[0])
		snprintf(buf, n, "-");
}

/* ---- create ---- */

static const char create_help[] =
	"usage: suanli tenant create NAME [--regions R1,R2] [--quota MODEL=N]... [OPTIONS]\n\n"
	"Creates a tenant. Admin and operator.\n\n"
	"  --regions R1,R2    regions where its leases may run (default: any)\n"
	"  --quota MODEL=N    at most N GPUs of MODEL at once (repeat per model;\n"
	"                     default: no limit)\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli tenant create acme --regions cn-east --quota h100-sxm=16\n";

/* "MODEL=N" into t.quotas; -1 after a usage error. */
static int add_quota(json_t *t, const char *cmd, const char *s)
{
	json_t *q = json_object_get(t, "quotas");
	const char *eq = strchr(s, '=');
	char model[128];
	long n;

	if (!eq || eq == s || (size_t)(eq - s) >= sizeof(model)) {
		cli_usage_error(cmd, "--quota expects MODEL=N, as h100-sxm=16, not '%s'", s);
		return -1;
	}
	if ((n = cli_parse_int(cmd, "--quota N", eq + 1, 0, TENANT_QUOTA_MAX)) < 0)
		return -1;
	memcpy(model, s, (size_t)(eq - s));
	model[eq - s] = '\0';
	if (!q) {
		q = json_object();
		json_object_set_new(t, "quotas", q);
	}
	if (json_object_size(q) >= TENANT_MAX_QUOTAS) {
		cli_usage_error(cmd, "more than %d --quota options", TENANT_MAX_QUOTAS);
		return -1;
	}
	if (json_object_get(q, model)) {
		cli_usage_error(cmd, "--quota %s is given twice", model);
		return -1;
	}
	json_object_set_new(q, model, json_integer(n));
	return 0;
}

static int tenant_create(int argc, char **argv)
{
	static const struct option opts[] = {{"regions", required_argument, NULL, 'r'},
					     {"quota", required_argument, NULL, 'q'},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	struct client cl;
	json_t *t = json_object(), *ans = NULL;
	int c, rc = CLI_EXIT_USAGE;

	client_init(&cl, "tenant create");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		if (c == 'h') {
			fputs(create_help, stdout);
			rc = CLI_EXIT_OK;
			goto done;
		}
		if (c == 'r' &&
		    client_set_list(t, "regions", cl.cmd, "--regions", optarg, 0, "regions") < 0)
			goto done;
		if (c == 'q' && add_quota(t, cl.cmd, optarg) < 0)
			goto done;
		if (c != 'r' && c != 'q') {
			rc = client_getopt_error(cl.cmd, c, argv);
			goto done;
		}
	}
	if (argc - optind != 1) {
		if (argc - optind > 1)
			cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind + 1]);
		else
			cli_usage_error(cl.cmd, "expects the tenant's NAME");
		goto done;
	}
	json_object_set_new(t, "name", json_string(argv[optind]));
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "POST", "/v1/tenants", t, NULL, &ans)) == CLI_EXIT_OK && ans) {
		char regions[1024], quotas[2048];
		out_join(json_object_get(ans, "regions"), ",", regions, sizeof(regions));
		counts_text(json_object_get(ans, "quotas"), quotas, sizeof(quotas));
		printf("Created tenant %s (regions: %s; quotas: %s).\n", out_str(ans, "name", "?"),
		       strcmp(regions, "-") ? regions : "any",
		       strcmp(quotas, "-") ? quotas : "none");
	}
done:
	json_decref(ans);
	json_decref(t);
	client_close(&cl);
	return rc;
}

/* ---- list ---- */

static const char list_help[] = "usage: suanli tenant list [OPTIONS]\n\n"
				"Lists the tenants. Admin, operator and auditor.\n\n" CLIENT_HELP_OPTS
				"\nExample:\n  suanli tenant list\n";

static void tenant_row(struct out_table *tab, const json_t *t, const void *ctx)
{
	char regions[1024], quotas[2048];
	(void)ctx;
	out_join(json_object_get(t, "regions"), ",", regions, sizeof(regions));
	counts_text(json_object_get(t, "quotas"), quotas, sizeof(quotas));
	const char *row[] = {out_str(t, "name", "?"), strcmp(regions, "-") ? regions : "any",
			     quotas, out_str(t, "created_at", "-")};
	out_table_row(tab, row);
}

static int tenant_list(int argc, char **argv)
{
	static const char *const head[] = {"NAME", "REGIONS", "QUOTAS", "CREATED"};
	struct client cl;
	json_t *arr;
	int rc;

	client_init(&cl, "tenant list");
	if ((rc = client_args(&cl, argc, argv, list_help, 0, "no arguments")) != CLIENT_GO ||
	    (rc = client_get_list(&cl, "/v1/tenants",
				  "No tenants yet; create one with 'suanli tenant create NAME'.\n",
				  &arr)) != CLIENT_GO)
		return rc;
	rc = out_table_list(stdout, 4, head, arr, tenant_row, NULL) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
	json_decref(arr);
	return rc;
}

/* ---- show ---- */

static const char show_help[] =
	"usage: suanli tenant show NAME [OPTIONS]\n\n"
	"Shows a tenant with the GPUs it holds now, by model. Admin, operator,\n"
	"auditor, and the tenant's own users.\n\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli tenant show acme\n";

static int tenant_show(int argc, char **argv)
{
	struct client cl;
	char path[CLIENT_PATH_MAX] = "/v1/tenants/";
	json_t *t = NULL;
	int rc;

	client_init(&cl, "tenant show");
	if ((rc = client_args(&cl, argc, argv, show_help, 1, "one tenant name")) != CLIENT_GO)
		return rc;
	if (client_escape(path, sizeof(path), argv[optind]))
		return cli_usage_error(cl.cmd, "the tenant name is too long");
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "GET", path, NULL, NULL, &t)) == CLI_EXIT_OK && t) {
		char regions[1024], quotas[2048], usage[2048];
		out_join(json_object_get(t, "regions"), ",", regions, sizeof(regions));
		counts_text(json_object_get(t, "quotas"), quotas, sizeof(quotas));
		counts_text(json_object_get(t, "usage"), usage, sizeof(usage));
		printf("Tenant %s, created %s.\n", out_str(t, "name", "?"),
		       out_str(t, "created_at", "-"));
		printf("Regions:   %s\n", strcmp(regions, "-") ? regions : "any");
		printf("Quotas:    %s\n", strcmp(quotas, "-") ? quotas : "none");
		printf("In use:    %s\n", strcmp(usage, "-") ? usage : "no GPUs");
	}
	json_decref(t);
	client_close(&cl);
	return rc;
}

static const struct client_sub tenant_subs[] = {
	{"create", tenant_create, "create a tenant with regions and quotas"},
	{"list", tenant_list, "list tenants"},
	{"show", tenant_show, "one tenant with its GPUs in use"},
};

int cmd_tenant(int argc, char **argv)
{
	return client_dispatch("tenant", "Tenants: who leases GPUs, where, and how many.\n",
			       tenant_subs, sizeof(tenant_subs) / sizeof(tenant_subs[0]), argc,
			       argv);
}

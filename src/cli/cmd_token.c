/* cmd_token.c - `suanli token create|list|revoke`: the bearer tokens people
 * and programs use. The secret exists in clear only in create's answer, so
 * create prints it once, plainly, and says so. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "output.h"

static const char *const token_roles[] = {"admin", "operator", "tenant-admin", "tenant",
					  "auditor", "agent"};

/* ---- create ---- */

static const char create_help[] =
	"usage: suanli token create --role ROLE [--tenant NAME] [--user U] [--expires D] [OPTIONS]\n\n"
	"Creates a token and prints its secret, once. Roles: admin, operator,\n"
	"tenant-admin, tenant (these two with --tenant), auditor. An operator cannot\n"
	"create admin tokens; a tenant-admin only tenant and tenant-admin tokens of\n"
	"its own tenant.\n\n"
	"  --role ROLE        what the token may do\n"
	"  --tenant NAME      the tenant it acts for\n"
	"  --user U           who holds it (for the audit trail)\n"
	"  --expires D        refused after D: 30d, 12h, 90m, 3600s (default: never)\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli token create --tenant acme --role tenant --user alice --json\n";

/* "30d", "12h", "90m", "3600s" or "3600" -> seconds; -1 when malformed or
 * beyond ten years. */
static long long parse_duration(const char *s)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	long long unit = !*end ? 1 : !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60
			: !strcmp(end, "h") ? 3600 : !strcmp(end, "d") ? 86400 : 0;
	if (errno || end == s || s[0] == '-' || !unit || v <= 0 || v > 3660LL * 86400 / unit)
		return -1;
	return v * unit;
}

static int token_create(int argc, char **argv)
{
	static const struct option opts[] = {{"role", required_argument, NULL, 'r'},
					     {"tenant", required_argument, NULL, 't'},
					     {"user", required_argument, NULL, 'u'},
					     {"expires", required_argument, NULL, 'e'},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	struct client cl;
	const char *role = NULL, *tenant = NULL, *user = NULL;
	long long expires = 0;
	json_t *body, *ans = NULL;
	int c, rc, known = 0;

	client_init(&cl, "token create");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(create_help, stdout); return CLI_EXIT_OK;
		case 'r': role = optarg; break;
		case 't': tenant = optarg; break;
		case 'u': user = optarg; break;
		case 'e':
			if ((expires = parse_duration(optarg)) <= 0)
				return cli_usage_error(cl.cmd, "--expires wants a duration as 30d, 12h, "
							       "90m or 3600s, got '%s'", optarg);
			break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	if (!role)
		return cli_usage_error(cl.cmd, "--role ROLE is required (admin, operator, "
					       "tenant-admin, tenant, auditor)");
	for (size_t i = 0; i < sizeof(token_roles) / sizeof(token_roles[0]); i++)
		known |= !strcmp(role, token_roles[i]);
	if (!known)
		return cli_usage_error(cl.cmd, "unknown role '%s'; roles are admin, operator, "
					       "tenant-admin, tenant, auditor, agent", role);
	body = json_pack("{s:s}", "role", role);
	if (tenant)
		json_object_set_new(body, "tenant", json_string(tenant));
	if (user)
		json_object_set_new(body, "user", json_string(user));
	if (expires)
		json_object_set_new(body, "expires_in_s", json_integer((json_int_t)expires));
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "POST", "/v1/tokens", body, NULL, &ans)) == CLI_EXIT_OK && ans) {
		const char *t = out_str(ans, "tenant", NULL);
		if (json_is_string(json_object_get(ans, "expires_at")))
			printf("It expires at %s.\n", out_str(ans, "expires_at", "?"));
		printf("Created token %s (role %s%s%s, user %s).\n"
		       "Its secret is shown only this once; keep it safe:\n%s\n",
		       out_str(ans, "id", "?"), out_str(ans, "role", "?"), t ? ", tenant " : "",
		       t ? t : "", out_str(ans, "user", "-"), out_str(ans, "token", "?"));
	}
	json_decref(ans);
	json_decref(body);
	client_close(&cl);
	return rc;
}

/* ---- list ---- */

static const char list_help[] =
	"usage: suanli token list [OPTIONS]\n\n"
	"Lists tokens (never their secrets). Admin, operator, auditor; a tenant-admin\n"
	"sees its own tenant's.\n\n" CLIENT_HELP_OPTS "\nExample:\n  suanli token list\n";

static void token_row(struct out_table *tab, const json_t *t, const void *ctx)
{
	(void)ctx;
	const char *row[] = {out_str(t, "id", "?"),     out_str(t, "role", "-"),
			     out_str(t, "tenant", "-"), out_str(t, "user", "-"),
			     out_str(t, "created_at", "-"), out_str(t, "revoked_at", "-")};
	out_table_row(tab, row);
}

static int token_list(int argc, char **argv)
{
	static const char *const head[] = {"ID", "ROLE", "TENANT", "USER", "CREATED", "REVOKED"};
	struct client cl;
	json_t *arr;
	int rc;

	client_init(&cl, "token list");
	if ((rc = client_args(&cl, argc, argv, list_help, 0, "no arguments")) != CLIENT_GO ||
	    (rc = client_get_list(&cl, "/v1/tokens", "No tokens.\n", &arr)) != CLIENT_GO)
		return rc;
	rc = out_table_list(stdout, 6, head, arr, token_row, NULL) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
	json_decref(arr);
	return rc;
}

/* ---- revoke ---- */

static const char revoke_help[] =
	"usage: suanli token revoke ID [OPTIONS]\n\n"
	"Revokes a token at once: the next request with it is refused. ID is the\n"
	"public tok_... id from 'suanli token list', not the secret.\n\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli token revoke tok_0123456789ab\n";

static int token_revoke(int argc, char **argv)
{
	struct client cl;
	char path[CLIENT_PATH_MAX] = "/v1/tokens/";
	json_t *t = NULL;
	int rc;

	client_init(&cl, "token revoke");
	if ((rc = client_args(&cl, argc, argv, revoke_help, 1, "one token ID (tok_...)")) !=
	    CLIENT_GO)
		return rc;
	if (!strncmp(argv[optind], "sl_", 3))
		return cli_usage_error(cl.cmd, "give the token's public id (tok_...), not its "
					       "secret; 'suanli token list' shows the ids");
	if (client_escape(path, sizeof(path), argv[optind]))
		return cli_usage_error(cl.cmd, "the token id is too long");
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "DELETE", path, NULL, NULL, &t)) == CLI_EXIT_OK && t)
		printf("Revoked token %s (user %s).\n", out_str(t, "id", "?"),
		       out_str(t, "user", "-"));
	json_decref(t);
	client_close(&cl);
	return rc;
}

static const struct client_sub token_subs[] = {
	{"create", token_create, "create a token and print its secret once"},
	{"list", token_list, "list tokens (ids, roles, users; no secrets)"},
	{"revoke", token_revoke, "revoke a token"},
};

int cmd_token(int argc, char **argv)
{
	return client_dispatch("token", "Tokens: who may call the controller, in which role.\n",
			       token_subs, sizeof(token_subs) / sizeof(token_subs[0]), argc, argv);
}

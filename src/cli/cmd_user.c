/* cmd_user.c - `suanli user create|list|remove|passwd`: people who sign in to
 * the web console with a password (docs/console.md). A password is read from
 * a file (or stdin with "-"), never from the command line, where `ps` and
 * shell history would show it; one trailing newline is dropped. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "client.h"
#include "file.h"
#include "output.h"

#define PASSWORD_FILE_MAX 1025 /* the server takes at most 1024 bytes */

/* Reads the password of path ("-": stdin) into *out (caller frees, after
 * wiping). CLI_EXIT_OK or the exit status after the error is printed. */
static int read_password(const char *cmd, const char *path, char **out)
{
	struct sl_diag d;
	size_t len = 0;
	sl_diag_clear(&d);
	*out = NULL;
	if (!strcmp(path, "-")) {
		char *buf = calloc(1, PASSWORD_FILE_MAX + 2);
		if (!buf)
			return CLI_EXIT_FAIL;
		ssize_t n;
		while (len <= PASSWORD_FILE_MAX &&
		       (n = read(0, buf + len, PASSWORD_FILE_MAX + 1 - len)) > 0)
			len += (size_t)n;
		*out = buf;
	} else if (sl_read_file(path, PASSWORD_FILE_MAX, out, &len, &d)) {
		cli_print_diag(&d);
		return CLI_EXIT_FAIL;
	}
	if (len && (*out)[len - 1] == '\n')
		(*out)[--len] = 0;
	if (len && (*out)[len - 1] == '\r')
		(*out)[--len] = 0;
	if (len > PASSWORD_FILE_MAX - 1 || strlen(*out) != len) {
		free(*out);
		*out = NULL;
		return cli_usage_error(cmd, "the password in %s must be at most 1024 bytes without NUL",
				       path);
	}
	return CLI_EXIT_OK;
}

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

/* ---- create ---- */

static const char create_help[] =
	"usage: suanli user create --name NAME [--tenant T] [--role ROLE] --password-file F\n"
	"                          [OPTIONS]\n\n"
	"Creates a person who signs in to the web console. Roles: tenant (default),\n"
	"tenant-admin (these two with --tenant), operator, auditor. A tenant-admin\n"
	"creates users of its own tenant only. The password (8..1024 bytes) is read\n"
	"from F ('-': stdin) and stored only as an Argon2id hash.\n\n"
	"  --name NAME        what the person types to sign in ([A-Za-z0-9._-])\n"
	"  --tenant T         the tenant the person acts for\n"
	"  --role ROLE        tenant, tenant-admin, operator or auditor\n"
	"  --password-file F  the password, alone in a file\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli user create --tenant acme --name alice --password-file pw.txt\n";

static int user_create(int argc, char **argv)
{
	static const struct option opts[] = {{"name", required_argument, NULL, 'n'},
					     {"tenant", required_argument, NULL, 't'},
					     {"role", required_argument, NULL, 'r'},
					     {"password-file", required_argument, NULL, 'p'},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	struct client cl;
	const char *name = NULL, *tenant = NULL, *role = NULL, *pwfile = NULL;
	char *pw = NULL;
	json_t *ans = NULL;
	int c, rc;

	client_init(&cl, "user create");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(create_help, stdout); return CLI_EXIT_OK;
		case 'n': name = optarg; break;
		case 't': tenant = optarg; break;
		case 'r': role = optarg; break;
		case 'p': pwfile = optarg; break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	if (!name || !pwfile)
		return cli_usage_error(cl.cmd, "--name NAME and --password-file FILE are required");
	if ((rc = read_password(cl.cmd, pwfile, &pw)) != CLI_EXIT_OK)
		return rc;
	json_t *body = json_pack("{s:s, s:s}", "name", name, "password", pw);
	wipe_free(pw);
	if (tenant)
		json_object_set_new(body, "tenant", json_string(tenant));
	if (role)
		json_object_set_new(body, "role", json_string(role));
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "POST", "/v1/users", body, NULL, &ans)) == CLI_EXIT_OK && ans) {
		const char *t = out_str(ans, "tenant", NULL);
		printf("Created user %s (role %s%s%s). They sign in at the console with the "
		       "password from %s.\n",
		       out_str(ans, "name", "?"), out_str(ans, "role", "?"), t ? ", tenant " : "",
		       t ? t : "", pwfile);
	}
	json_decref(ans);
	json_decref(body); /* jansson does not wipe; the password was in it briefly */
	client_close(&cl);
	return rc;
}

/* ---- list ---- */

static const char list_help[] =
	"usage: suanli user list [OPTIONS]\n\n"
	"Lists console users (never their passwords). Admin, operator, auditor; a\n"
	"tenant-admin sees its own tenant's.\n\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli user list\n";

static void user_row(struct out_table *tab, const json_t *u, const void *ctx)
{
	(void)ctx;
	const char *row[] = {out_str(u, "name", "?"), out_str(u, "role", "-"),
			     out_str(u, "tenant", "-"), out_str(u, "created_at", "-"),
			     out_str(u, "password_changed_at", "-")};
	out_table_row(tab, row);
}

static int user_list(int argc, char **argv)
{
	static const char *const head[] = {"NAME", "ROLE", "TENANT", "CREATED", "PASSWORD SET"};
	struct client cl;
	json_t *arr;
	int rc;

	client_init(&cl, "user list");
	if ((rc = client_args(&cl, argc, argv, list_help, 0, "no arguments")) != CLIENT_GO ||
	    (rc = client_get_list(&cl, "/v1/users", "No users.\n", &arr)) != CLIENT_GO)
		return rc;
	rc = out_table_list(stdout, 5, head, arr, user_row, NULL) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
	json_decref(arr);
	return rc;
}

/* ---- remove ---- */

static const char remove_help[] =
	"usage: suanli user remove NAME [OPTIONS]\n\n"
	"Removes a console user and ends their sessions at once.\n\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli user remove alice\n";

static int user_remove(int argc, char **argv)
{
	struct client cl;
	char path[CLIENT_PATH_MAX];
	json_t *u = NULL;
	int rc;

	client_init(&cl, "user remove");
	if ((rc = client_args(&cl, argc, argv, remove_help, 1, "one user NAME")) != CLIENT_GO)
		return rc;
	if (client_object_path(cl.cmd, "/v1/users", argv[optind], "", "a user name", path,
			       sizeof(path)))
		return CLI_EXIT_USAGE;
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "DELETE", path, NULL, NULL, &u)) == CLI_EXIT_OK && u)
		printf("Removed user %s; their sessions have ended.\n", out_str(u, "name", "?"));
	json_decref(u);
	client_close(&cl);
	return rc;
}

/* ---- passwd ---- */

static const char passwd_help[] =
	"usage: suanli user passwd --name NAME --password-file F [OPTIONS]\n\n"
	"Sets a console user's password (admin, operator, or the user's\n"
	"tenant-admin) and ends the user's sessions.\n\n"
	"  --name NAME        the user\n"
	"  --password-file F  the new password, alone in a file ('-': stdin)\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli user passwd --name alice --password-file new.txt\n";

static int user_passwd(int argc, char **argv)
{
	static const struct option opts[] = {{"name", required_argument, NULL, 'n'},
					     {"password-file", required_argument, NULL, 'p'},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	struct client cl;
	const char *name = NULL, *pwfile = NULL;
	char *pw = NULL, path[CLIENT_PATH_MAX];
	json_t *ans = NULL;
	int c, rc;

	client_init(&cl, "user passwd");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(passwd_help, stdout); return CLI_EXIT_OK;
		case 'n': name = optarg; break;
		case 'p': pwfile = optarg; break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	if (!name || !pwfile)
		return cli_usage_error(cl.cmd, "--name NAME and --password-file FILE are required");
	if (client_object_path(cl.cmd, "/v1/users", name, "/password", "a user name", path,
			       sizeof(path)))
		return CLI_EXIT_USAGE;
	if ((rc = read_password(cl.cmd, pwfile, &pw)) != CLI_EXIT_OK)
		return rc;
	json_t *body = json_pack("{s:s}", "password", pw);
	wipe_free(pw);
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "POST", path, body, NULL, &ans)) == CLI_EXIT_OK && ans)
		printf("Set a new password for %s; their sessions have ended.\n",
		       out_str(ans, "name", "?"));
	json_decref(ans);
	json_decref(body);
	client_close(&cl);
	return rc;
}

static const struct client_sub user_subs[] = {
	{"create", user_create, "create a person who signs in to the console"},
	{"list", user_list, "list console users (no passwords)"},
	{"remove", user_remove, "remove a user and end their sessions"},
	{"passwd", user_passwd, "set a user's password"},
};

int cmd_user(int argc, char **argv)
{
	return client_dispatch("user", "Console users: people who sign in with a password.\n",
			       user_subs, sizeof(user_subs) / sizeof(user_subs[0]), argc, argv);
}

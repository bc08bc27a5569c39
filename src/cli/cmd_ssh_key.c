/* cmd_ssh_key.c - `suanli ssh-key add NAME --file KEY.pub | list | remove NAME`:
 * your SSH public keys, what instances let in (docs/instances.md). A key is
 * checked here first (ssh_pubkey.h), so a typo or a private key is refused
 * before anything is sent. */
#include <string.h>

#include "cli.h"
#include "client.h"
#include "file.h"
#include "output.h"
#include "ssh_pubkey.h"

static const char add_help[] =
	"usage: suanli ssh-key add NAME --file KEY.pub [OPTIONS]\n\n"
	"Adds your SSH public key NAME (ssh-ed25519, ecdsa-sha2-nistp256/384/521 or\n"
	"ssh-rsa). Instances you create let in your keys (or the one --ssh-key names).\n\n"
	"  --file KEY.pub       the public key file ssh-keygen wrote\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli ssh-key add laptop --file ~/.ssh/id_ed25519.pub\n";

static int key_add(int argc, char **argv)
{
	static const struct option opts[] = {{"file", required_argument, NULL, 'f'},
					     CLIENT_LONG_OPTS, {0, 0, 0, 0}};
	struct client cl;
	const char *file = NULL;
	int c, rc;
	client_init(&cl, "ssh-key add");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":hf:", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(add_help, stdout); return CLI_EXIT_OK;
		case 'f': file = optarg; break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind + 1 != argc)
		return cli_usage_error(cl.cmd, "give one key NAME");
	if (!file)
		return cli_usage_error(cl.cmd, "--file KEY.pub is required");
	char *text = NULL;
	size_t len = 0;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (sl_read_file(file, SSH_KEY_LINE_MAX + 2, &text, &len, &d)) {
		cli_print_diag(&d);
		return CLI_EXIT_FAIL;
	}
	struct ssh_pubkey k;
	if (ssh_pubkey_parse(text, &k, NULL, 0, &d)) {
		fprintf(stderr, "suanli: %s: ", file);
		cli_print_diag(&d);
		free(text);
		return CLI_EXIT_FAIL;
	}
	json_t *body = json_pack("{s:s, s:s}", "name", argv[optind], "key", text);
	free(text);
	json_t *ans = NULL;
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "POST", "/v1/ssh-keys", body, NULL, &ans)) == CLI_EXIT_OK && ans)
		printf("SSH key %s added: %s %s\n", out_str(ans, "name", "?"), out_str(ans, "type", "?"),
		       out_str(ans, "fingerprint", "?"));
	json_decref(ans);
	json_decref(body);
	client_close(&cl);
	return rc;
}

static const char list_help[] = "usage: suanli ssh-key list [OPTIONS]\n\n"
				"Lists your SSH keys with their SHA256 fingerprints.\n\n" CLIENT_HELP_OPTS
				"\nExample:\n  suanli ssh-key list\n";

static void key_row(struct out_table *t, const json_t *k, const void *ctx)
{
	(void)ctx;
	const char *row[] = {out_str(k, "name", "?"), out_str(k, "type", "?"),
			     out_str(k, "fingerprint", "?"), out_str(k, "created_at", "-")};
	out_table_row(t, row);
}

static int key_list(int argc, char **argv)
{
	static const char *const head[] = {"NAME", "TYPE", "FINGERPRINT", "ADDED"};
	struct client cl;
	json_t *arr;
	int rc;
	client_init(&cl, "ssh-key list");
	if ((rc = client_args(&cl, argc, argv, list_help, 0, "no arguments")) != CLIENT_GO ||
	    (rc = client_get_list(&cl, "/v1/ssh-keys", "No SSH keys. Add one: suanli ssh-key add NAME --file KEY.pub\n",
				  &arr)) != CLIENT_GO)
		return rc;
	rc = out_table_list(stdout, 4, head, arr, key_row, NULL) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
	json_decref(arr);
	return rc;
}

static const char remove_help[] =
	"usage: suanli ssh-key remove NAME [OPTIONS]\n\n"
	"Removes your SSH key NAME. Instances made with it keep it until released.\n\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli ssh-key remove laptop\n";

static int key_remove(int argc, char **argv)
{
	struct client cl;
	char path[CLIENT_PATH_MAX];
	json_t *ans = NULL;
	int rc;
	client_init(&cl, "ssh-key remove");
	if ((rc = client_args(&cl, argc, argv, remove_help, 1, "one key NAME")) != CLIENT_GO)
		return rc;
	if (client_object_path(cl.cmd, "/v1/ssh-keys", argv[optind], "", "laptop", path, sizeof(path)))
		return CLI_EXIT_USAGE;
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "DELETE", path, NULL, NULL, &ans)) == CLI_EXIT_OK && ans)
		printf("SSH key %s removed (%s).\n", out_str(ans, "name", "?"), out_str(ans, "fingerprint", "?"));
	json_decref(ans);
	client_close(&cl);
	return rc;
}

static const struct client_sub subs[] = {
	{"add", key_add, "add a public key (--file KEY.pub)"},
	{"list", key_list, "your keys and their fingerprints"},
	{"remove", key_remove, "remove a key"},
};

int cmd_ssh_key(int argc, char **argv)
{
	return client_dispatch("ssh-key", "SSH keys: what your instances let in.\n", subs,
			       sizeof(subs) / sizeof(subs[0]), argc, argv);
}

/* cmd_agent_token.c - `suanli agent-token create [--node N]`: join tokens
 * for node agents (docs/agents.md). A join token only registers a node; the
 * registration returns the node's own credential, which the agent keeps. */
#include <string.h>

#include "cli.h"
#include "client.h"
#include "output.h"

static const char create_help[] =
	"usage: suanli agent-token create [--node NAME] [OPTIONS]\n\n"
	"Creates a join token for suanli-agent and prints its secret, once. Without\n"
	"--node it may register any node name (nodes not in the fleet join by their\n"
	"labels, site and leaf); with --node only that one. The agent trades it for a\n"
	"credential bound to its node when it registers (docs/agents.md).\n\n"
	"  --node NAME        the only node this token may register\n"
	"  --user U           who holds it (for the audit trail)\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli agent-token create --node fza-h100-001 --json\n";

static int agent_token_create(int argc, char **argv)
{
	static const struct option opts[] = {{"node", required_argument, NULL, 'n'},
					     {"user", required_argument, NULL, 'u'},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	struct client cl;
	const char *node = NULL, *user = NULL;
	json_t *body, *ans = NULL;
	int c, rc;

	client_init(&cl, "agent-token create");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(create_help, stdout); return CLI_EXIT_OK;
		case 'n': node = optarg; break;
		case 'u': user = optarg; break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	body = json_object();
	if (node)
		json_object_set_new(body, "node", json_string(node));
	if (user)
		json_object_set_new(body, "user", json_string(user));
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "POST", "/v1/agent-tokens", body, NULL, &ans)) == CLI_EXIT_OK && ans)
		printf("Created join token %s for %s.\n"
		       "Its secret is shown only this once; give it to suanli-agent run --token:\n%s\n",
		       out_str(ans, "id", "?"),
		       strcmp(out_str(ans, "node", "*"), "*") ? out_str(ans, "node", "?") : "any node",
		       out_str(ans, "token", "?"));
	if (rc == CLI_EXIT_OK && ans && !cl.json && json_is_string(json_object_get(ans, "ca_sha256")))
		printf("The agent verifies the controller against its CA (sha256 %s):\n"
		       "save the controller's DATA/tls/ca.pem (or the JSON answer's ca_pem) on the node\n"
		       "and pass it as suanli-agent run --ca FILE.\n",
		       out_str(ans, "ca_sha256", "?"));
	json_decref(ans);
	json_decref(body);
	client_close(&cl);
	return rc;
}

static const struct client_sub agent_token_subs[] = {
	{"create", agent_token_create, "create a join token for node agents"},
};

int cmd_agent_token(int argc, char **argv)
{
	return client_dispatch("agent-token",
			       "Join tokens: what a node agent registers with (docs/agents.md).\n",
			       agent_token_subs, sizeof(agent_token_subs) / sizeof(agent_token_subs[0]),
			       argc, argv);
}

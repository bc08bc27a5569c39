/* cmd_status.c - `suanli status`: each controller of --server, whether it
 * leads or stands by, the leader's epoch and how long ago it renewed
 * (docs/ha.md). Asks every URL of the list itself, without failover, so a
 * standby shows as a standby. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "client.h"
#include "http_client.h"

static const char status_help[] =
	"usage: suanli status\n\n"
	"Shows each controller of --server (a comma-separated list with several\n"
	"controllers): leader, standby or single (one controller on SQLite), the\n"
	"leader's epoch, where the leader is and the age of its last renewal.\n" CLIENT_HELP_OPTS;

/* One controller's /healthz as a table row; false when it did not answer. */
static bool status_one(const char *url, bool json_out)
{
	struct http_client *h = NULL;
	struct http_response r = {0};
	struct sl_diag d;
	sl_diag_clear(&d);
	if (http_client_new(url, NULL, &h, &d) != SL_OK ||
	    http_client_request(h, "GET", "/healthz", NULL, 0, NULL, 3000, &r, &d) != SL_OK) {
		if (json_out)
			printf("{\"server\":\"%s\",\"error\":\"%s\"}\n", url, d.msg);
		else
			printf("%-32s %-8s %s\n", url, "down", d.msg);
		http_client_free(h);
		return false;
	}
	json_t *o = json_loadb(r.body, r.len, 0, NULL);
	const char *role = json_string_value(json_object_get(o, "role"));
	const char *leader = json_string_value(json_object_get(o, "leader"));
	json_int_t epoch = json_integer_value(json_object_get(o, "epoch"));
	json_int_t age = json_integer_value(json_object_get(o, "leader_renew_age_ms"));
	if (json_out) {
		json_object_set_new(o, "server", json_string(url));
		char *s = json_dumps(o, JSON_COMPACT);
		printf("%s\n", s ? s : "{}");
		free(s);
	} else {
		printf("%-32s %-8s epoch %-6lld renewed %6.1fs ago%s%s\n", url, role ? role : "?",
		       (long long)epoch, (double)age / 1000.0, leader && leader[0] ? "  leader " : "",
		       leader ? leader : "");
	}
	json_decref(o);
	http_response_release(&r);
	http_client_free(h);
	return true;
}

int cmd_status(int argc, char **argv)
{
	struct client cl;
	client_init(&cl, "status");
	int rc = client_args(&cl, argc, argv, status_help, 0, "no arguments");
	if (rc != CLIENT_GO)
		return rc;
	if ((rc = client_open(&cl)) != CLI_EXIT_OK)
		return rc;
	char *list = strdup(cl.server ? cl.server : "");
	int up = 0;
	if (!cl.json)
		printf("%-32s %-8s\n", "CONTROLLER", "ROLE");
	for (char *save = NULL, *u = list ? strtok_r(list, ",", &save) : NULL; u;
	     u = strtok_r(NULL, ",", &save))
		up += status_one(u, cl.json);
	free(list);
	client_close(&cl);
	return up ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

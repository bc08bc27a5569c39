/* client_pages.c - list subcommands that follow the controller's pages
 * (src/ctl/paging.h): GET path?limit=N, then ?after=NEXT until "next" is
 * null, gathered into one array. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "client.h"

#define PAGE_SIZE "500"

int client_get_pages(struct client *cl, const char *path, const char *empty, json_t **arr)
{
	*arr = NULL;
	int rc = client_open(cl), json = cl->json;
	json_t *all = json_array();
	char next[256] = "";
	cl->json = 0; /* gather first; print once */
	while (rc == CLI_EXIT_OK && all) {
		char p[CLIENT_PATH_MAX];
		snprintf(p, sizeof(p), "%s", path);
		json_t *page = NULL;
		if (client_query_add(p, sizeof(p), "limit", PAGE_SIZE) ||
		    (next[0] && client_query_add(p, sizeof(p), "after", next))) {
			fprintf(stderr, "suanli: %s: the query is too long\n", cl->cmd);
			rc = CLI_EXIT_FAIL;
			break;
		}
		if ((rc = client_call(cl, "GET", p, NULL, NULL, &page)) != CLI_EXIT_OK)
			break;
		json_t *items = json_object_get(page, "items");
		if (!json_is_array(items)) { /* a controller without pages: the whole list */
			json_array_extend(all, json_is_array(page) ? page : items);
			json_decref(page);
			break;
		}
		json_array_extend(all, items);
		const char *nx = json_string_value(json_object_get(page, "next"));
		snprintf(next, sizeof(next), "%s", nx ? nx : "");
		json_decref(page);
		if (!nx)
			break;
	}
	cl->json = json;
	client_close(cl);
	if (rc != CLI_EXIT_OK || !all) {
		json_decref(all);
		return rc != CLI_EXIT_OK ? rc : CLI_EXIT_FAIL;
	}
	if (json) {
		json_dumpf(all, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(all);
		return CLI_EXIT_OK;
	}
	if (!json_array_size(all)) {
		fputs(empty, stdout);
		json_decref(all);
		return CLI_EXIT_OK;
	}
	*arr = all;
	return CLIENT_GO;
}

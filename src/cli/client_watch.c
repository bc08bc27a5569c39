/* client_watch.c - --watch for the list commands: wait on the controller's
 * GET /v1/events long poll (docs/console.md "Live updates") until something
 * of the kinds a list shows changes, then let the caller print it again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "client.h"

#define WATCH_WAIT_S 25
#define WATCH_TIMEOUT_MS ((WATCH_WAIT_S + 15) * 1000L)

static bool kind_wanted(const char *kinds, const char *kind)
{
	size_t n = strlen(kind);
	for (const char *s = kinds; s && *s;) {
		size_t len = strcspn(s, ",");
		if (len == n && !strncmp(s, kind, n))
			return true;
		s += len + (s[len] == ',');
	}
	return false;
}

int client_watch_wait(struct client *cl, const char *kinds, long long *seq)
{
	fflush(stdout); /* the list just printed, before the wait */
	for (;;) {
		char path[96];
		struct http_response r = {0};
		struct sl_diag d;
		sl_diag_clear(&d);
		snprintf(path, sizeof(path), "/v1/events?since=%lld&wait=%d", *seq,
			 *seq ? WATCH_WAIT_S : 0);
		if (http_client_request(cl->http, "GET", path, NULL, 0, NULL, WATCH_TIMEOUT_MS, &r,
					&d) != SL_OK) {
			cli_print_diag(&d);
			return CLI_EXIT_FAIL;
		}
		json_t *o = r.status == 200 ? json_loadb(r.body, r.len, 0, NULL) : NULL;
		if (!o) {
			if (http_client_error_diag(&r, &d) == SL_OK)
				sl_diag_set(&d, SL_EIO, "GET /v1/events answered %d", r.status);
			cli_print_diag(&d);
			http_response_release(&r);
			return CLI_EXIT_FAIL;
		}
		http_response_release(&r);
		bool first = *seq == 0, changed = json_is_true(json_object_get(o, "reset"));
		*seq = (long long)json_integer_value(json_object_get(o, "seq"));
		const json_t *ev = json_object_get(o, "events");
		for (size_t i = 0; i < json_array_size(ev); i++)
			changed |= kind_wanted(kinds, json_string_value(json_object_get(
							      json_array_get(ev, i), "kind")));
		json_decref(o);
		if (first || changed) {
			if (!first && !cl->json) {
				char when[32];
				time_t now = time(NULL);
				struct tm tm;
				localtime_r(&now, &tm);
				strftime(when, sizeof(when), "%H:%M:%S", &tm);
				printf("\n--- %s ---\n", when);
			}
			fflush(stdout);
			return CLI_EXIT_OK;
		}
	}
}

/* paging.c - pages and filters of the list routes (paging.h). */
#include "paging.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "http.h"

bool ctl_page_parse(struct ctl_call *call, struct ctl_page *pg)
{
	const char *l = http_request_param(call->req, "limit");
	pg->paged = l != NULL;
	pg->limit = 0;
	pg->after = http_request_param(call->req, "after");
	if (!l)
		return true;
	char *end;
	long v = strtol(l, &end, 10);
	if (end == l || *end || v < 1 || v > CTL_PAGE_MAX) {
		char msg[96];
		snprintf(msg, sizeof(msg), "?limit: expected 1..%d", CTL_PAGE_MAX);
		ctl_answer_error(call, SL_EINVAL, msg, "follow \"next\" with ?after= for more");
		return false;
	}
	pg->limit = (int)v;
	return true;
}

json_t *ctl_page_answer(const struct ctl_page *pg, json_t *items, const char *next)
{
	if (!items || !pg->paged)
		return items;
	return json_pack("{s:o, s:o}", "items", items, "next", next ? json_string(next) : json_null());
}

bool ctl_page_match(const json_t *obj, const char *key, const char *want)
{
	if (!want)
		return true;
	const char *v = json_string_value(json_object_get(obj, key));
	return v && !strcmp(v, want);
}

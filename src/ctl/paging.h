/* paging.h - pages of the list routes (GET /v1/nodes, GET /v1/jobs).
 *
 * `?limit=N` (1..CTL_PAGE_MAX) asks for a page: the answer is then
 * {"items": [...], "next": CURSOR or null}, and `?after=CURSOR` asks for the
 * page after it (the cursor is the last item's name or id, so pages stay
 * right while items come and go). Without `limit` the answer stays the plain
 * array it always was, filters applied. Filters are exact matches on the
 * items' own fields (docs/openapi.yaml names them per route). */
#ifndef SL_CTL_PAGING_H
#define SL_CTL_PAGING_H

#include <jansson.h>
#include <stdbool.h>

struct ctl_call;

#define CTL_PAGE_MAX 1000 /* bound on ?limit */

struct ctl_page {
	bool paged;        /* ?limit given */
	int limit;
	const char *after; /* ?after, NULL: from the start */
};

/* Reads ?limit and ?after; false after answering 400 for a bad limit. */
bool ctl_page_parse(struct ctl_call *call, struct ctl_page *pg);

/* The answer: items itself (taken) unpaged, else {"items", "next"}; next
 * NULL for the last page. NULL when out of memory (items freed). */
json_t *ctl_page_answer(const struct ctl_page *pg, json_t *items, const char *next);

/* True when obj's string field key equals want (or want is NULL). */
bool ctl_page_match(const json_t *obj, const char *key, const char *want);

#endif

/* events.h - state changes as a long poll: GET /v1/events?since=SEQ&wait=S
 * (docs/console.md "Live updates"), for the console's live views and the
 * CLI's --watch.
 *
 * Every lease state change (a row of lease_hooks[]), node change (drain,
 * resume, down, unreachable, restored, join: the node.* and gpu.* audit
 * entries), job state change and instance state change is an event {"seq", "at", "kind", "id",
 * "state", "tenant"} kept in a ring of EVENTS_RING in memory. A poll whose
 * since is behind the newest event the caller may see answers at once;
 * otherwise it waits (deferred, http.h) until one comes or wait seconds
 * pass, and then answers {"seq", "events": []}. Tenant roles see their own
 * tenant's leases and jobs and the nodes they may see (ctl_node_visible);
 * provider roles see everything.
 *
 * seq is monotonic across restarts (the first of a run is the start time in
 * microseconds), so a since from before a restart, or one older than the
 * ring, answers at once with "reset": true: the client reloads what it
 * shows, then polls from the answer's seq. Loop thread only. */
#ifndef SL_CTL_EVENTS_H
#define SL_CTL_EVENTS_H

#include <stdint.h>

#include "err.h"

struct ctl;
struct ctl_call;
struct http_request;

#define EVENTS_RING 4096         /* events kept */
#define EVENTS_MAX_POLLS 4096    /* polls waiting at once; past it the oldest answers */
#define EVENTS_WAIT_DEFAULT_S 25 /* ?wait= default */
#define EVENTS_WAIT_MAX_S 60     /* and bound */
#define EVENTS_LIMIT 1000        /* events in one answer */

enum sl_err events_start(struct ctl *c, struct sl_diag *d) SL_MUST_USE;
/* Answers every waiting poll (as the controller stops) and frees the ring. */
void events_free(struct ctl *c);
/* Records one event; tenant "" for none (nodes). Strings are copied, cut to
 * their bounds. */
void events_emit(struct ctl *c, const char *kind, const char *id, const char *state,
		 const char *tenant);
/* Answers the polls that have news or whose wait ran out. */
void events_tick(struct ctl *c);
/* A waiting poll's client went away: forgets it. */
void events_request_gone(struct ctl *c, struct http_request *req);

void h_events(struct ctl_call *call);

#endif

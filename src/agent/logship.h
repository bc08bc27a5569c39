/* logship.h - ships the ranks' log files to the controller
 * (docs/agent-protocol.md, "Logs"): POST /v1/agent/logs?job=J&rank=R&offset=N
 * with the bytes from N on (application/octet-stream, at most
 * LOGSHIP_CHUNK_MAX per call). 200 {"size": M}: the controller holds M bytes;
 * 409 {"size": M}: resend from M; 403/404: the rank is no longer this node's
 * (or the job is gone), so shipping it stops. The offset the controller
 * holds is kept by the supervisor (work_sup_log_shipped) and saved in
 * work.json, so shipping resumes after an agent restart. */
#ifndef SL_AGENT_LOGSHIP_H
#define SL_AGENT_LOGSHIP_H

#include <stdbool.h>

#include "http_client.h"
#include "work.h"

#define LOGSHIP_CHUNK_MAX ((size_t)1 << 20)
/* Timeout of one POST. */
#define LOGSHIP_TIMEOUT_MS 10000L

enum logship_result {
	LOGSHIP_IDLE,    /* nothing left to send */
	LOGSHIP_MORE,    /* sent max_calls chunks; more is waiting */
	LOGSHIP_FAILED,  /* the controller did not take it (unreachable, 5xx): retry later */
	LOGSHIP_REVOKED, /* 401: the credential is no longer valid */
};

/* Sends what the logs gained since the last call, at most max_calls POSTs.
 * Bad answers are logged, never fatal. */
enum logship_result logship_run(struct http_client *c, struct work_sup *s,
				const char *state_dir, int max_calls);

#endif

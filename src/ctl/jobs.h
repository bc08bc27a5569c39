/* jobs.h - jobs run on leases by node agents (docs/agent-protocol.md): the
 * user API (run, list, show, logs, cancel), each node's desired work and its
 * long poll, the distributed-training environment of every rank, logs kept
 * in the data directory, and reconciliation with what agents report.
 *
 * Private to src/ctl; touched by the loop's thread only. State lives in
 * struct ctl_jobs (owned by struct ctl) and in the store (STORE_JOBS). */
#ifndef SL_CTL_JOBS_H
#define SL_CTL_JOBS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"

struct ctl;
struct ctl_call;
struct ctl_lease;

/* Reads jobs from the store. Call after leases are loaded. */
enum sl_err jobs_start(struct ctl *c, struct sl_diag *d) SL_MUST_USE;
void jobs_free(struct ctl *c);
/* Answers long polls whose wait ran out; lowers c->next_deadline. */
void jobs_tick(struct ctl *c);

/* A lease changed state, size or epoch: ranks on GPUs it no longer holds
 * stop; jobs of an ended lease are cancelled. A lease-change hook (lease.c). */
void jobs_lease_changed(struct ctl *c, struct ctl_lease *l);
/* An agent of node reported its work (the heartbeat's "work" array): rank
 * states are updated and the heartbeat answer gets its "stop" array (work the
 * controller no longer assigns to node). */
void jobs_on_heartbeat(struct ctl *c, int node, const json_t *work, json_t *answer);
/* A waiting work poll's client went away (the gone callback): forget it;
 * the caller then answers it (which frees it). Any other request: nothing. */
struct http_request;
void jobs_request_gone(struct ctl *c, struct http_request *req);
/* The tenant of job id (for the audit), NULL when there is no such job. */
const char *jobs_tenant(struct ctl *c, const char *id);
/* Something node is told besides jobs (instances) changed: a new work
 * version, its waiting polls answered this turn. */
void jobs_node_changed(struct ctl *c, const char *node);
/* The node's work version (for the register answer). */
int64_t jobs_work_version(const struct ctl *c, int node);

/* handlers */
void h_job_create(struct ctl_call *c);
void h_job_list(struct ctl_call *c);
void h_job_show(struct ctl_call *c);
void h_job_cancel(struct ctl_call *c);
void h_job_logs(struct ctl_call *c);
void h_agent_work(struct ctl_call *c);
void h_agent_logs(struct ctl_call *c);

#endif

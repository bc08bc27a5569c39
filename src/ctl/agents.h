/* agents.h - the controller's side of node agents (docs/agent-protocol.md):
 * join tokens and node credentials, registration (discovery compared with the
 * declared type, nodes joining by labels), heartbeats, the node lifecycle
 * (ready -> unreachable -> down, leases failed or replaced, billing stopped at
 * the last healthy report) and per-GPU health (XID drain, re-qualify, fail).
 *
 * Private to src/ctl; touched by the loop's thread only. State lives in
 * struct ctl_agents (owned by struct ctl) and in the store (STORE_AGENTS). */
#ifndef SL_CTL_AGENTS_H
#define SL_CTL_AGENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#include <jansson.h>

struct ctl;
struct ctl_call;
struct ctl_lease;
struct fleet;

#define AGENTS_HEARTBEAT_DEFAULT_S 5
#define AGENTS_UNREACHABLE_DEFAULT_S 15
#define AGENTS_DOWN_DEFAULT_S 60

struct agents_opts {
	int64_t heartbeat_s;       /* 0: the default */
	int64_t unreachable_after_s; /* 0: the default */
	int64_t down_after_s;        /* 0: the default */
};

/* Reads registrations from the store and sets every node's service state on
 * the placer. Call after the fleet and leases are loaded, before the
 * scheduler starts. */
enum sl_err agents_start(struct ctl *c, const struct agents_opts *o, struct sl_diag *d) SL_MUST_USE;
void agents_free(struct ctl *c);
/* Timers: nodes whose heartbeats stopped become unreachable, then down;
 * lowers c->next_deadline to its next check. */
void agents_tick(struct ctl *c);

/* The node index the calling agent's token is bound to; answers 403 and
 * returns -1 when the token is not a node credential of a fleet node. */
int agents_call_node(struct ctl_call *call);
/* Where other nodes reach node's agent (MASTER_ADDR); false when no agent
 * has registered it. */
bool agents_node_addr(const struct ctl *c, int node, char *buf, size_t n);
/* The node's registered --lease-net pool ("A.B.C.D/N"); NULL: none. */
const char *agents_node_lease_net(const struct ctl *c, int node);
/* The tenant whose work node's agent runs as host processes (its
 * --host-processes, the operator's permission); NULL: containers, or no agent.
 * Borrowed until the agent registers again. */
const char *agents_node_host_tenant(const struct ctl *c, int node);
/* The GPU driver version node's agent discovered ("550.54.14"), "" when
 * unknown or no agent registered it. Borrowed until it registers again. */
const char *agents_node_driver(const struct ctl *c, int node);
/* True when node's agent is registered and its heartbeats are current (or
 * the controller simulates nodes without agents). */
bool agents_node_ready(const struct ctl *c, int node);
/* Node state for listings: "ready", "unreachable", "down", ... with a reason,
 * or NULL when agents have nothing to say (no drain applies). */
const char *agents_node_state(const struct ctl *c, int node, const char **reason);

#define AGENTS_METRICS_NODES_MAX 2048 /* nodes with per-node and per-GPU series in /metrics */
struct sl_buf;
/* Appends the per-node and per-GPU series to b (Prometheus text; an error
 * stays in b): every family's HELP and TYPE even when empty. Loop thread. */
void agents_metrics(struct ctl *c, struct sl_buf *b);

/* Sets node's per-GPU service state on the placer (GPUs drained or failed by
 * their health are out). Called by ctl_apply_usable for every node. */
void agents_apply_gpus(struct ctl *c, int node);
/* An operator resumed node: failed and draining GPUs return to service. */
void agents_node_resumed(struct ctl *c, int node);
/* When lease l, ending at at_ns because a node failed, stops being billed:
 * the failed node's last report (never before l started), else at_ns. */
int64_t agents_lease_end_ns(const struct ctl *c, const struct ctl_lease *l, int64_t at_ns);
/* Adds the nodes that joined by labels (stored registrations) to a fleet
 * being loaded, where their site and leaf exist and the file does not name
 * them itself. Called by ctl_fleet_replace before leases are mapped. */
enum sl_err agents_fleet_extend(struct ctl *c, struct fleet *nf, struct sl_diag *d) SL_MUST_USE;
/* What `GET /v1/nodes/{name}` adds for node: "agent" (addr, version,
 * registered_at, last_heartbeat), "gpu_health" and "gpu_events"; NULL when no
 * agent registered it. New reference. */
json_t *agents_node_json(const struct ctl *c, int node);

/* handlers */
void h_agent_token_create(struct ctl_call *c);
void h_agent_register(struct ctl_call *c);
void h_agent_heartbeat(struct ctl_call *c);

#endif

/* agent.h - the agent's main loop (`suanli-agent run`): register with the
 * controller, send heartbeats, long-poll the desired work, supervise it and
 * ship its logs (docs/agent-protocol.md, docs/agent.md).
 *
 * One thread. The work long poll runs on a libcurl multi handle so it never
 * blocks the loop; register, heartbeat and log calls are short blocking
 * requests with timeouts. The loop sleeps in curl_multi_poll on the long
 * poll's socket and wake_fd (the program's signal self-pipe: SIGCHLD wakes it
 * to reap, SIGTERM/SIGINT set *stop), until the next timer (heartbeat, log
 * shipping, restart backoff, stop grace).
 *
 * When the controller is unreachable the work keeps running and calls are
 * retried with backoff (1 s doubling to 30 s). A controller that restarted
 * (or lost this agent's registration: heartbeat answered 409) is registered
 * with again. A refused credential (401/403) is fatal, with a message that
 * says what to do. */
#ifndef SL_AGENT_AGENT_H
#define SL_AGENT_AGENT_H

#include <signal.h>
#include <stdbool.h>

#include "discovery.h"
#include "err.h"

#define AGENT_VERSION "0.1.0"
#define AGENT_HEARTBEAT_DEFAULT_S 5
#define AGENT_HEARTBEAT_MAX_S 3600
#define AGENT_POLL_WAIT_S 30          /* the work long poll's wait */
#define AGENT_CALL_TIMEOUT_MS 10000L  /* register and heartbeat */
#define AGENT_RETRY_MIN_NS 1000000000LL  /* first retry: 1..3 s */
#define AGENT_RETRY_MAX_NS 30000000000LL /* retries never wait longer (cap) */
#define AGENT_WORK_ANSWER_MAX ((size_t)8 << 20) /* bytes of one work answer */
#define AGENT_ADDR_MAX 64
#define AGENT_MAX_STOPS 4096          /* items of a heartbeat answer's "stop" */

/* The wait before the next retry, "decorrelated jitter": uniform between
 * AGENT_RETRY_MIN_NS and three times the previous wait (prev_ns, 0 for the
 * first retry), capped at AGENT_RETRY_MAX_NS; a Retry-After the controller
 * sent (retry_after_ns > 0) is a floor, plus up to as much again of jitter,
 * so that agents refused together do not come back together. *rng is the
 * caller's xorshift64 state (never 0). */
int64_t agent_backoff_next(int64_t prev_ns, int64_t retry_after_ns, uint64_t *rng);

struct agent_opts {
	const char *server;     /* controller URL */
	const char *token;      /* join token; NULL: use STATE_DIR/credential */
	const char *node;       /* node name */
	const char *state_dir;
	const char *addr;       /* NULL: the source address of the route to the server */
	int heartbeat_s;        /* 0: as the controller says (default 5) */
	const char *site, *leaf, *type; /* labels for nodes not in the fleet (NULL: none) */
	int stop_grace_s;       /* -1: default for items without stop_grace_s */
	const char *image;      /* default image (NULL: none; work items name theirs) */
	const char *host_tenant; /* NULL: every item in a container (engine.h) */
	const char *cdi_dir;    /* NULL: ENGINE_CDI_DIR */
	const char *cdi_name;   /* NULL: the node name (engine_opts.name) */
	int pids_limit;         /* 0: ENGINE_PIDS_DEFAULT */
	const char *lease_net;  /* "macvlan:IFACE:POOL" (fabric.h; NULL: none) */
	int log_limit_mib;      /* 0: WORK_LOG_LIMIT_DEFAULT */
	const char *storage_dir; /* instances' data disks (NULL: STATE_DIR/volumes) */
	int port_lo, port_hi;   /* instances' host ports (0: INST_PORT_LO/HI_DEFAULT) */
	const char *ca;         /* the controller's CA file (NULL: none; ops connect anew) */
	const struct discovery *disc; /* what this node has (borrowed) */
	bool nvml;              /* health from NVML (discovery used NVML) */
	volatile sig_atomic_t *stop; /* set by the signal handler: leave work running, return */
	int wake_fd;            /* readable when a signal arrived; -1: none */
};

/* Runs until *o->stop is set (SL_OK; work keeps running) or a fatal error:
 * SL_EUNAUTH / SL_EFORBIDDEN (credential or token refused), SL_EINVAL (bad
 * options, or the controller refused the registration for good, e.g. an
 * unknown node without labels), SL_EIO (state directory). d says what and how
 * to fix it. */
enum sl_err agent_run(const struct agent_opts *o, struct sl_diag *d) SL_MUST_USE;

/* The source address of the route to the server of url (getsockname after a
 * UDP connect), as text into buf. SL_EINVAL for a URL without a host, SL_EIO
 * when there is no route. */
enum sl_err agent_route_addr(const char *url, char *buf, size_t n, struct sl_diag *d) SL_MUST_USE;

#endif

/* job_env.h - what a job's rank is told: the distributed-training environment
 * (torchrun's MASTER_ADDR/MASTER_PORT/NNODES/NODE_RANK/NPROC_PER_NODE), the
 * GPUs it may see (CUDA_VISIBLE_DEVICES, or ASCEND_RT_VISIBLE_DEVICES for
 * Huawei models), the NICs on the rails of those GPUs (NCCL_IB_HCA), suanli's
 * own variables, and the user's --env on top; plus the checks on what a user
 * may put in a job (argv and env bounds, names, restart policy).
 *
 * Pure: no I/O, clocks or globals (DESIGN.md §10). Documented for users in
 * docs/jobs.md; the wire format in docs/agent-protocol.md. */
#ifndef SL_JOB_ENV_H
#define SL_JOB_ENV_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "topo.h"

/* Bounds on a job request (DESIGN.md §10.6). */
#define JOB_MAX_ARGS 256               /* argv entries */
#define JOB_MAX_ARGV_BYTES (64u << 10) /* argv strings together */
#define JOB_MAX_ENV 128                /* user env entries */
#define JOB_MAX_ENV_BYTES (64u << 10)  /* user env keys and values together */
#define JOB_ENV_KEY_MAX 128            /* one env key */
/* MASTER_PORT = JOB_MASTER_PORT_BASE + job number % JOB_MASTER_PORT_SPAN:
 * deterministic, the same on every rank, 20000..39999 (below Linux's default
 * ephemeral range 32768.. only partly; a clash makes torchrun fail loudly). */
#define JOB_MASTER_PORT_BASE 20000
#define JOB_MASTER_PORT_SPAN 20000

enum job_restart { JOB_RESTART_NEVER, JOB_RESTART_ON_FAILURE, JOB_RESTART_ALWAYS, JOB_RESTART__COUNT };

/* "never", "on-failure", "always". */
const char *job_restart_name(enum job_restart r);
/* -1 when s is not a policy name. */
int job_restart_parse(const char *s);

/* [A-Za-z_][A-Za-z0-9_]*, 1..JOB_ENV_KEY_MAX bytes. */
bool job_env_key_valid(const char *key);
/* A variable the controller or the agent sets (MASTER_ADDR, ..., NCCL_IB_HCA,
 * NCCL_TOPO_FILE, CUDA_/ASCEND_RT_VISIBLE_DEVICES, any SUANLI_*): a user
 * may not override it. */
bool job_env_key_reserved(const char *key);

/* argv: a non-empty JSON array of non-empty strings within the bounds.
 * SL_EINVAL / SL_ELIMIT with a message naming the field ("argv[3] ..."). */
enum sl_err job_argv_check(const json_t *argv, struct sl_diag *d) SL_MUST_USE;
/* env: a JSON object of string values (may be empty) with valid, unreserved
 * keys within the bounds. SL_EINVAL / SL_ELIMIT naming the key. */
enum sl_err job_env_check(const json_t *env, struct sl_diag *d) SL_MUST_USE;

/* The MASTER_PORT of job number seq. */
int job_master_port(uint64_t seq);

/* One node of the job, in rank order. */
struct job_env_node {
	const char *name;             /* fleet node name */
	const char *addr;             /* its agent's address; NULL or "": unknown (name used) */
	const struct node_type *type; /* its type (GPU model, NICs and their rails) */
	gpumask_t gpus;               /* the lease's GPUs on it (at least one) */
	const char *pool;             /* its agent's --lease-net pool (lease_net.h); NULL
				       * or "": none */
};

struct job_env_in {
	const char *lease, *job;
	uint64_t seq;                       /* the job's number (MASTER_PORT) */
	int nnodes;                         /* 1.. */
	const struct job_env_node *nodes;   /* nnodes, rank order: rank i runs on nodes[i] */
	const json_t *user_env;             /* checked object of strings, or NULL */
};

/* The environment of rank (0..nnodes-1) as a JSON object of strings, the
 * rank's GPU indices as an array of integers and its NICs (names of the NICs
 * whose rail holds any of its GPUs, type order) as an array of strings. All
 * three new references, or NULL with SL_ENOMEM / SL_EINVAL (bad rank, empty
 * GPU set). The user's variables are added last and cannot replace ours
 * (job_env_check refuses reserved keys; here they are skipped). */
enum sl_err job_env_build(const struct job_env_in *in, int rank, json_t **env, json_t **gpus,
			  json_t **nics, struct sl_diag *d) SL_MUST_USE;

/* The rank's routable fabric address (lease_net.h), for a job of several
 * nodes whose rank holds part of a node with a pool: *net = {"addr":
 * "A.B.C.D", "peers": ["A.B.C.D/N", ...]} (a new reference), peers being
 * every rank's block, or the node address (/32) of a rank that holds a whole
 * node (it uses the host's network); ranks on partial nodes without a pool
 * are not peers (their traffic leaves NATed to a node address that other
 * tenants share). *net = NULL (SL_OK) when the rank has no such address.
 * job_env_build then sets MASTER_ADDR to rank 0's fabric address where rank
 * 0 has one, and GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME to
 * LEASE_NET_IFNAME for a rank that has one (a user's --env wins). */
enum sl_err job_env_net(const struct job_env_in *in, int rank, json_t **net,
			struct sl_diag *d) SL_MUST_USE;

#endif

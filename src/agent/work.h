/* work.h - the work supervisor: runs the node's desired work items
 * (docs/agent-protocol.md, "Work") as real process groups and reports what
 * actually runs.
 *
 * One struct work_sup per agent, owned and driven by one thread (the agent's
 * loop; unit tests drive it directly). It never blocks: children are reaped
 * with waitpid(WNOHANG) in work_sup_tick, timers (restart backoff, the
 * SIGTERM -> SIGKILL grace) are deadlines the caller's loop waits for
 * (work_sup_next_ns).
 *
 * Every item runs in a session and process group of its own, led by a small
 * shim (the reported pid) that forks the command, waits for it and records how
 * it ended in STATE_DIR/jobs/J/rank-R.exit before ending the same way, so an
 * agent that adopted the item after a restart still learns its exit code; with
 * stdout and stderr appended to STATE_DIR/jobs/J/rank-R.log, stdin from
 * /dev/null, the agent's environment plus the item's env plus NCCL_TOPO_FILE
 * (STATE_DIR/jobs/J/nccl-topo-R.xml, generated from the discovery for the
 * item's gpus and nics) and SUANLI_STATE_DIR; argv[0] is looked up in PATH.
 *
 * STATE_DIR/work.json records every item (spec, pid, process start time,
 * state, log offset) and the highest epoch seen per lease; a new supervisor
 * on the same directory (the agent restarted, or crashed) re-adopts processes
 * that still run and reports those that vanished without a record as exited
 * and "lost". The supervisor never kills work because it is freed: processes
 * outlive it. */
#ifndef SL_AGENT_WORK_H
#define SL_AGENT_WORK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "discovery.h"
#include "err.h"

/* Bounds on the controller's work items (named, checked, never truncated). */
#define WORK_MAX_ITEMS 256      /* items held at once, finished ones included */
#define WORK_MAX_LEASES 256     /* leases whose highest epoch is remembered */
#define WORK_ID_MAX 64          /* job and lease ids, bytes with the NUL */
#define WORK_ARGV_MAX 256       /* words of argv */
#define WORK_ENV_MAX 256        /* entries of env */
#define WORK_STR_MAX 65536      /* one argv word or env value (the controller's whole-argv bound) */
#define WORK_KEY_MAX 256        /* one env key */
#define WORK_TEXT_MAX (256u << 10) /* argv plus env text of one item */
#define WORK_NIC_MAX 64         /* one NIC name */
#define WORK_RANK_MAX 65535
#define WORK_GRACE_MAX_S 3600   /* stop_grace_s */
#define WORK_GRACE_DEFAULT_S 10
#define WORK_IMAGE_MAX 512      /* an image reference, bytes with the NUL */
#define WORK_PEERS_MAX 1024     /* net.peers entries (one per node of the job) */
#define WORK_DIR_MIB 1024       /* a lease's working directory (tmpfs), MiB */
#define WORK_LOG_LIMIT_DEFAULT ((int64_t)4 << 30) /* bytes of one rank's log on the node */
/* Restart backoff: 1 s, doubling per quick failure, at most 30 s; a run of
 * WORK_BACKOFF_RESET_S or longer starts the doubling again. */
#define WORK_BACKOFF_MIN_NS 1000000000LL
#define WORK_BACKOFF_MAX_NS 30000000000LL
#define WORK_BACKOFF_RESET_S 30
/* A start that fails for a transient cause (EAGAIN, ENOMEM: fork or exec
 * under load) is tried again this many times, 100 ms later and doubling,
 * before the rank fails as a start failure. */
#define WORK_START_RETRIES 5
#define WORK_START_RETRY_NS 100000000LL

enum work_restart { WORK_RESTART_NEVER, WORK_RESTART_ON_FAILURE, WORK_RESTART_ALWAYS };

/* One item as the controller sends it. */
struct work_spec {
	char job[WORK_ID_MAX];   /* [A-Za-z0-9][A-Za-z0-9._-]*: also a directory name */
	int rank;
	char lease[WORK_ID_MAX];
	char tenant[WORK_ID_MAX];    /* "" when the controller did not say */
	char image[WORK_IMAGE_MAX];  /* "" : the agent's default image */
	int64_t epoch;
	bool run;                /* state "run" (true) or "stop" */
	char **argv;             /* argc words + NULL */
	size_t argc;
	char **env;              /* nenv "KEY=VALUE" strings */
	size_t nenv;
	gpumask_t gpus;
	char nics[TOPO_MAX_NICS][WORK_NIC_MAX];
	int nnics;
	enum work_restart restart;
	int stop_grace_s;
	char net_addr[16];       /* "net.addr": the rank's fabric address ("": none; fabric.h) */
	char *net_peers;         /* "net.peers" as "A.B.C.D/N,..." (NULL: none) */
	/* "instance": the rank runs inside that instance's running container on
	 * this node (podman exec; docs/instances.md), "": a container of its own */
	char instance[WORK_ID_MAX];
};

/* Parses one item of the work answer, strictly: every field present with
 * the right type and within the bounds above (env, gpus, nics, restart and
 * stop_grace_s, tenant and image may be absent: {}, [], [], "never", -1 =
 * the supervisor's default, "", ""; an image is printable ASCII without
 * spaces, under WORK_IMAGE_MAX bytes; an instance is "in-" and 1 to 19 digits,
 * absent: "").
 * On error d names the field and nothing is allocated. SL_EINVAL, SL_ENOMEM. */
enum sl_err work_spec_from_json(const json_t *o, struct work_spec *out,
				struct sl_diag *d) SL_MUST_USE;
/* The same JSON form; NULL on ENOMEM. */
json_t *work_spec_to_json(const struct work_spec *s);
void work_spec_release(struct work_spec *s);

struct work_sup;

/* A supervisor for state_dir (copied; made by state_dir_init) generating
 * NCCL topology files from disc (borrowed, must outlive the supervisor; NULL:
 * no NCCL_TOPO_FILE). Reads STATE_DIR/work.json when present and re-adopts
 * its processes (see above). SL_EINVAL with a hint when work.json is not
 * ours to read (the file names it); SL_EIO, SL_ENOMEM. */
enum sl_err work_sup_new(const char *state_dir, const struct discovery *disc,
			 int64_t now_ns, struct work_sup **out,
			 struct sl_diag *d) SL_MUST_USE;
/* The grace for items that name none (WORK_GRACE_DEFAULT_S until set;
 * 0..WORK_GRACE_MAX_S). */
void work_sup_set_default_grace(struct work_sup *s, int grace_s);
/* The most a rank's log (STATE_DIR/jobs/J/rank-R.log, the agent's disk) may
 * hold (bytes > 0; WORK_LOG_LIMIT_DEFAULT until set): a rank whose output
 * passes it is killed (SIGKILL to its group, its container removed) and does
 * not start again, with the reason in its report's "error", so printing
 * without end cannot fill the node's disk. */
void work_sup_set_log_limit(struct work_sup *s, int64_t bytes);
struct engine;
/* How items run (engine.h; borrowed, must outlive the supervisor). Without
 * this call (unit tests) items are host processes. With an engine each item
 * started after this is a container (podman_args.h: the isolation, the
 * lease's share, its GPUs by CDI, its working directory STATE_DIR/leases/L,
 * a tmpfs of WORK_DIR_MIB at /work), its visible-devices variables renumbered
 * 0..k-1 (the container has only its GPUs), NCCL_TOPO_FILE at PODMAN_TOPO and
 * no SUANLI_STATE_DIR; an item fails at start (exit 127, the reason logged)
 * when the engine is unusable or no image is known. host_tenant (NULL or "":
 * none; borrowed) is the operator's explicit permission for a server that a
 * tenant owns: that tenant's items run as host processes, every other
 * tenant's item is refused. */
void work_sup_set_engine(struct work_sup *s, const struct engine *eng, const char *host_tenant);
struct inst_sup;
/* The node's instances (inst.h; borrowed, must outlive the supervisor): an
 * item with "instance" runs inside that instance's container when it runs on
 * this node (podman exec -i, the item's env by name, --workdir /root, its pid
 * recorded in the container's /run so that a stop signals it there), and
 * fails at start otherwise. Its end never removes the container, nor the
 * lease's working directory, id range or network (it used none of them). */
void work_sup_set_instances(struct work_sup *s, const struct inst_sup *inst);
/* Frees the supervisor; running processes keep running. NULL is fine. */
void work_sup_free(struct work_sup *s);

/* Applies the whole desired state (the work answer's "work" array; now_ns on
 * the monotonic clock): starts new "run" items, stops "stop" items and every
 * running item the list omits, applies the epoch rules (an item with an epoch
 * below the highest seen for its lease is refused; a higher epoch for a
 * running item stops the old process, then starts the new one). The array is
 * checked as a whole first: on error nothing changes (SL_EINVAL with d naming
 * the item and field; SL_ELIMIT beyond WORK_MAX_ITEMS). *refused (may be NULL)
 * counts items refused for a stale epoch or a full table (logged). */
enum sl_err work_sup_apply(struct work_sup *s, const json_t *work, int64_t now_ns,
			   int *refused, struct sl_diag *d) SL_MUST_USE;

/* Stops (job, rank) if it runs: SIGTERM to its process group, SIGKILL after
 * its stop_grace_s. False when there is no such item. */
bool work_sup_stop(struct work_sup *s, const char *job, int rank, int64_t now_ns);

/* Reaps exited children, notices vanished adopted processes, escalates
 * stops, restarts per policy when the backoff ran out, starts pending items.
 * True when some item changed state (report at once). */
bool work_sup_tick(struct work_sup *s, int64_t now_ns);

/* Nanoseconds from now_ns to the next timer (backoff, grace); INT64_MAX when
 * none. Liveness of adopted processes is polled: callers tick at least every
 * few seconds anyway. */
int64_t work_sup_next_ns(const struct work_sup *s, int64_t now_ns);

/* The heartbeat's "work" array: every item with job, rank, epoch, pid,
 * state ("running" | "exited" | "stopped"), exit_code (-1 when killed by a
 * signal or unknown), signal, restarts, started_at, ended_at, and "lost": true
 * for a process that vanished while the agent was away, "restarting": true
 * while a restart waits for its backoff. NULL on ENOMEM. */
json_t *work_sup_report(struct work_sup *s);
/* The controller accepted the last report: finished items it contained may be
 * forgotten once their logs are shipped and the desired state omits them. */
void work_sup_reported(struct work_sup *s);

/* Writes STATE_DIR/work.json (atomically). SL_EIO, SL_ENOMEM. */
enum sl_err work_sup_save(struct work_sup *s, struct sl_diag *d) SL_MUST_USE;
/* True when something recorded in work.json changed since the last save. */
bool work_sup_dirty(const struct work_sup *s);

/* Log shipping: items in order; *iter starts at 0. Fills job (WORK_ID_MAX),
 * rank and the offset shipped so far. False at the end. */
bool work_sup_log_next(const struct work_sup *s, size_t *iter, char *job, int *rank,
		       int64_t *offset);
/* Records that the controller holds the first offset bytes of (job, rank). */
void work_sup_log_shipped(struct work_sup *s, const char *job, int rank, int64_t offset);

/* Number of items held (tests, bounds). */
size_t work_sup_count(const struct work_sup *s);

/* Monotonic clock in ns (for callers of the functions above). */
int64_t work_now_ns(void);

#endif

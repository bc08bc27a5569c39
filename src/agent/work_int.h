/* work_int.h - the supervisor's insides, shared by work.c (processes and
 * timers) and work_store.c (work.json, re-adoption). Private to src/agent. */
#ifndef SL_AGENT_WORK_INT_H
#define SL_AGENT_WORK_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "work.h"

enum work_item_state {
	IT_PENDING,  /* to be started in this turn */
	IT_RUNNING,
	IT_STOPPING, /* SIGTERM sent; SIGKILL at deadline_ns */
	IT_BACKOFF,  /* ended; restarts at deadline_ns */
	IT_EXITED,
	IT_STOPPED,
};

#define WORK_ERROR_MAX 256

struct work_item {
	struct work_spec spec;
	struct work_spec *next;   /* a higher epoch, started once the old process ended */
	enum work_item_state state;
	pid_t pid;                /* the last process (0: none yet); also its group id */
	uint64_t start_ticks;     /* its start time, /proc/PID/stat field 22 */
	bool child;               /* ours to waitpid (false: adopted after a restart) */
	bool seen;                /* this agent saw the process alive */
	bool want_stop;
	bool killed;              /* SIGKILL sent */
	bool desired;             /* listed by the last desired state */
	bool lost;                /* the process vanished while the agent was away */
	bool reported;            /* its final state reached the controller */
	bool log_full;            /* killed for its log's size: never restarted */
	bool pulling;             /* its image was not on the node at start: podman pulls it */
	bool pulled;              /* ... and the image has been seen on the node since */
	int exit_code, signal;
	/* A start that failed before the command ran (fork, the log file): its
	 * errno. Transient causes (EAGAIN, ENOMEM) are retried WORK_START_RETRIES
	 * times first (start_tries); then the item ends with error set. */
	int start_errno, start_tries;
	int restarts;
	int consec;               /* quick failures in a row (backoff doubling) */
	int64_t started_at, ended_at; /* wall clock, seconds; 0: not yet */
	int64_t run_start_ns;     /* monotonic */
	int64_t deadline_ns;      /* grace or backoff end, monotonic */
	int64_t log_offset;       /* bytes of the log the controller holds */
	char error[WORK_ERROR_MAX]; /* why its last start failed ("": it started) */
};

struct work_lease_epoch {
	char lease[WORK_ID_MAX];
	int64_t epoch;
};

struct work_sup {
	char *dir;
	const struct discovery *disc;
	const struct engine *eng; /* containers (NULL: host processes, unit tests) */
	const char *host_tenant;  /* host processes for this tenant only (NULL: none) */
	const struct inst_sup *inst; /* the node's instances (NULL: none) */
	struct work_item *items[WORK_MAX_ITEMS];
	size_t n;
	struct work_lease_epoch epochs[WORK_MAX_LEASES];
	size_t nepochs, epoch_ring;
	int default_grace_s;
	int64_t log_limit;        /* bytes of one rank's log (WORK_LOG_LIMIT_DEFAULT) */
	bool dirty;
};

struct work_item *work_find(const struct work_sup *s, const char *job, int rank);
void work_item_stop(struct work_sup *s, struct work_item *it, int64_t now_ns);
void work_item_free(struct work_item *it);
uint64_t work_proc_start_ticks(pid_t pid);
/* The highest epoch seen for lease; -1 when none. */
int64_t work_sup_lease_epoch(struct work_sup *s, const char *lease);

/* One env entry for a container holding exactly gpus (local): a
 * visible-devices variable listing exactly them is renumbered from 0;
 * anything else is copied. NULL on ENOMEM (work.c). */
char *work_item_env(const char *kv, gpumask_t gpus, bool local);

/* Containers (work_ctr.c). */
/* Whether items run in containers (else host processes). */
bool item_in_container(const struct work_sup *s, const struct work_spec *sp);
/* The container name of the item's current run into buf. */
void ctr_name(const struct work_sup *s, const struct work_item *it, char *buf, size_t n);
/* The podman command line of the item (topo: its NCCL topology file on the
 * host, "" for none); SL_EIO when there is no engine, SL_EINVAL without an
 * image, SL_EIO when the lease's working directory cannot be mounted. */
enum sl_err ctr_argv(struct work_sup *s, struct work_item *it, const char *topo, char ***argv,
		     struct sl_diag *d);
/* The rank ended with status 125 after a pull (it->pulling): podman's
 * error line from its log into it->error, naming the image and the fix. */
void ctr_pull_failed(struct work_sup *s, struct work_item *it);
/* Stops and removes the item's container, not waiting (engine_remove). */
void item_ctr_remove(struct work_sup *s, struct work_item *it);
/* The lease of gone has no other item: unmount and remove its working dir. */
void lease_workdir_end(struct work_sup *s, const struct work_item *gone);

/* Jobs inside an instance (work_inst.c). */
/* The podman exec command line of an item with spec.instance; SL_ECONFLICT
 * "instance ... is not running on this node; start it first". */
enum sl_err inst_item_argv(struct work_sup *s, struct work_item *it, char ***argv,
			   struct sl_diag *d);
/* Signals the item's process: its process group, and for an item inside an
 * instance the command there (SIGTERM only there: podman exec then ends by
 * itself; SIGKILL both). */
void work_item_signal(struct work_sup *s, struct work_item *it, int sig);

/* work_start.c: starts that fail for a moment under load. */
/* fork(), tried again after 50 ms (doubling, 6 times) while it fails with
 * EAGAIN or ENOMEM. Async-signal-safe: for the shim, after fork. */
pid_t work_fork_retry(void);
/* execvp(argv), tried again the same way when it fails with EAGAIN (Linux
 * checks RLIMIT_NPROC at exec) or ENOMEM; returns only if it failed. */
void work_exec_retry(char **argv);
/* Writes prefix, strerror(errno) and a newline to fd 2; async-signal-safe
 * enough for the shim (strerror of a valid errno). */
void work_say_errno(const char *prefix);
/* After a failed start: when its cause (it->start_errno) is transient and
 * tries are left, puts it in backoff to try again and returns true. */
bool work_start_retry(struct work_item *it, int64_t now_ns);

#endif

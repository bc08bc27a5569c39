/* jobs_int.h - what the jobs files (jobs.c, h_jobs.c, job_work.c, job_logs.c)
 * share: the job records, per-node work versions and waiting polls.
 *
 * Jobs live in an array indexed by seq - 1. An ended job's row moves to the
 * store's job history in the turn that ends it (history.h); a restart loads
 * only live jobs, and a slot left NULL is a job in history, read back when
 * asked for (jobs_find keeps it from then on; a list reads it and lets it
 * go). Ranks name their node by fleet name (fleet replacements renumber
 * nodes).
 * Loop thread only. */
#ifndef SL_CTL_JOBS_INT_H
#define SL_CTL_JOBS_INT_H

#include "images.h"
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctl_int.h"
#include "job_env.h"
#include "jobs.h"

#define JOB_ID_LEN 24
#define JOBS_WAIT_DEFAULT_S 30      /* work poll ?wait= default */
#define JOBS_WAIT_MAX_S 60          /* and bound */
#define JOBS_MAX_POLLS_PER_NODE 4   /* waiting work polls per node; more answers the oldest */
#define JOB_STOP_GRACE_DEFAULT_S 10 /* SIGTERM -> SIGKILL at the agent */
#define JOB_STOP_GRACE_MAX_S 3600
#define JOB_CANCEL_SLACK_S 30       /* cancelling -> cancelled without word after grace + this */
#define JOB_RANK_PROGRESS_MAX 160  /* bytes of a rank's progress line */
#define JOB_MAX_LIVE_PER_LEASE 64   /* jobs not yet ended on one lease */
#define JOB_STOP_KEEP_S 600         /* stop items of an ended job outlive it at most this */
#define JOB_REASON_MAX 320
#define CTL_MAX_JOBS (1 << 24)      /* jobs in memory, ended ones kept included */

enum job_state { JS_PENDING, JS_RUNNING, JS_SUCCEEDED, JS_FAILED, JS_CANCELLING, JS_CANCELLED, JS__COUNT };
enum rank_state { RS_PENDING, RS_RUNNING, RS_EXITED, RS_STOPPED, RS__COUNT };

#define JOB_RANK_ERROR_MAX 256

struct job_rank {
	char node[FLEET_NAME_MAX + 1];
	gpumask_t gpus;
	enum rank_state state;
	bool stop;          /* desired: must not run (cancel, job failed, lease ended) */
	bool gone;          /* stop confirmed: the node reported it not running */
	bool lost;          /* exited unseen: the agent found its process gone */
	int exit_code, signal, restarts;
	int64_t pid;
	int64_t started_ns, ended_ns;
	int64_t log_base;   /* the controller's log size when this node took the rank */
	char error[JOB_RANK_ERROR_MAX]; /* why the agent could not start it ("": none) */
	char progress[JOB_RANK_PROGRESS_MAX]; /* what a running rank waits for, as its
						 agent says ("pulling image REF"; "": none) */
	uint64_t hb_mark;   /* heartbeat that last reported it (jobs_on_heartbeat) */
};

struct job {
	uint64_t seq;
	char id[JOB_ID_LEN];
	char lease[24];
	char tenant[CTL_NAME_MAX + 1];
	char user[CTL_USER_MAX + 1];
	enum job_state state;
	char reason[JOB_REASON_MAX];
	json_t *argv, *env;  /* checked (job_env.h) */
	enum job_restart restart;
	int nodes_req;       /* 0: all of the lease's nodes */
	int stop_grace_s;
	char image[IMAGE_NAME_MAX + 1];    /* the catalog's name ("": none) */
	char image_ref[IMAGE_REF_MAX + 1]; /* its reference when the job was made */
	char instance[24];   /* run inside this instance's containers ("": none) */
	int64_t epoch;       /* the lease's epoch the ranks were placed with */
	int nranks;
	struct job_rank *ranks;
	int64_t created_ns, ended_ns, cancel_ns;
	bool tracked;        /* in ctl_jobs.live */
};

struct job_poll {
	struct http_request *req;
	int64_t version, deadline_ns;
};

struct job_node {
	char name[FLEET_NAME_MAX + 1];
	int64_t version;
	int npolls;
	struct job_poll polls[JOBS_MAX_POLLS_PER_NODE];
	bool dirty; /* version changed since its polls were last looked at */
};

struct ctl_jobs {
	struct job **jobs;   /* index seq - 1 */
	int njobs, cap_jobs;
	/* Jobs that still matter to agents (not ended, or a rank to stop not
	 * yet confirmed): what heartbeats, lease changes and work polls look
	 * at, so their cost does not grow with the job history. Indices into
	 * jobs, any order; pruned as they are walked (jobs_live_next). */
	int *live;
	int nlive, cap_live;
	struct strmap *node_by_name; /* name -> index into nodes */
	struct job_node *nodes;
	int nnodes, cap_nodes;
	int *dirty;          /* node indices with dirty set */
	int ndirty, cap_dirty;
	int npolls;          /* waiting in all */
	int64_t poll_deadline;   /* earliest poll deadline, 0: none */
	int64_t cancel_deadline; /* earliest cancelling timeout, 0: none */
	int64_t version_base;    /* start time in ms: versions never repeat across restarts */
	uint64_t hb_seq;
	uint64_t hist_seq;       /* highest seq in the store's job history */
};

const char *job_state_name(enum job_state s);
int job_state_parse(const char *s);
const char *rank_state_name(const struct job_rank *r);
static inline bool job_ended(const struct job *j)
{
	return j->state == JS_SUCCEEDED || j->state == JS_FAILED || j->state == JS_CANCELLED;
}

/* The job named in the path, visible to the caller (tenant scoping); NULL
 * after answering 404. */
struct job *jobs_path_job(struct ctl_call *call);
/* Adds j to the live set (no-op when there); false on ENOMEM. */
bool jobs_track(struct ctl *c, struct job *j);
/* The next live job from position *k (start at 0), dropping jobs that no
 * longer matter; NULL at the end. */
struct job *jobs_live_next(struct ctl *c, int *k);
/* The job by id, NULL if none; a job in history is read back and kept. */
struct job *jobs_find(struct ctl *c, const char *id);
/* The job at index i (seq - 1): in memory, or read from history into *tmp
 * (free with jobs_tmp_free); NULL if none. */
const struct job *jobs_at(struct ctl *c, int i, struct job **tmp);
void jobs_tmp_free(struct job *tmp);
/* The job as the API shows it (logs: add log_size/log_start per rank) or as
 * stored (store: internal fields too). New reference, NULL on ENOMEM. */
json_t *job_to_json(struct ctl *c, const struct job *j, bool store);
/* Writes j to the store in the turn's transaction. */
void job_save(struct ctl *c, struct job *j);
/* The node's record, created on first use; NULL on ENOMEM. */
struct job_node *jobs_node(struct ctl *c, const char *name);
/* The node's desired state changed: new version, its polls answered this turn. */
void jobs_bump(struct ctl *c, const char *node);
/* Assigns ranks from lease l's picks (first nodes_req nodes); keeps each
 * rank's log_base when its node stays. false on ENOMEM. */
bool job_assign(struct ctl *c, struct job *j, const struct ctl_lease *l);
/* Re-evaluates j's state from its ranks; saves and bumps what changed. */
void job_eval(struct ctl *c, struct job *j);
/* Marks every rank of j to stop and bumps their nodes. */
void job_stop_ranks(struct ctl *c, struct job *j);
/* Moves j to state s with reason (ended_ns set for final states). */
void job_set_state(struct ctl *c, struct job *j, enum job_state s, const char *reason);

/* job_work.c */
json_t *job_work_doc(struct ctl *c, struct job_node *n);
void jobs_answer_polls(struct ctl *c);

/* job_logs.c: a rank's log in DATA_DIR/logs/<job>/ */
#define JOB_LOG_SEGMENT ((int64_t)32 << 20) /* the current file rotates past this */
#define JOB_LOG_KEEP (2 * JOB_LOG_SEGMENT)   /* newest bytes kept per rank: 64 MiB */
#define JOB_LOG_READ_MAX ((int64_t)4 << 20)  /* bytes per GET ?rank= answer */
#define JOB_LOG_ALL_MAX ((int64_t)8 << 20)   /* bytes per GET without ?rank= */
/* Bytes the rank has written in all, and the first one still kept. */
void job_log_size(struct ctl *c, const struct job *j, int rank, int64_t *size, int64_t *start);

#endif

/* scheduler.h - the lease scheduler: queue, priorities, fair share, backfill,
 * spot preemption, reservations, quotas and elastic leases (DESIGN.md §5).
 * Its functions carry the sched_ prefix; the header is not called sched.h so
 * that it cannot shadow the C library's <sched.h> on the include path.
 *
 * Pure: no I/O, no clocks, no globals. Time is passed in as now_ns, in
 * nanoseconds on the caller's clock, and every instant it gives or gets back
 * (durations' ends, deadlines, reservation windows) is on that same clock. The
 * controller passes wall time (UTC ns since the epoch, DESIGN.md §10) on
 * purpose, not a monotonic clock: those instants must survive a restart. The
 * scheduler never looks at a clock, so the controller can replay it. A struct
 * sched borrows a placer (which must outlive it) and is the only thing that
 * claims and releases on it while it lives.
 *
 * Leases are named by a uint64_t id the caller chooses. Every call that changes
 * something appends events (struct sched_event) that the caller drains with
 * sched_events() / sched_events_clear(); the controller persists them and
 * answers requests from them. A lease that ended is forgotten: its id is
 * unknown afterwards (SCHED_NONE) and may be reused.
 *
 * Order of the queue (sched_queue()): plan (monthly > hourly > spot), then fair
 * share (the tenant with fewer running GPUs divided by its weight first), then
 * submission time, then id. A scheduling pass walks the queue in that order,
 * re-ranking after every start (so two tenants alternate), and starts what
 * fits. The first request that does not fit is the head: when it is monthly or
 * hourly and ending running spot leases would let it start, those get a
 * preemption notice (newest started first; only leases on nodes the head's
 * placement uses), and the head waits for exactly them. Otherwise the head's
 * earliest start (shadow time) is computed from the running leases' declared
 * ends. A later request starts ahead of the head (backfill) only when it
 * declares a duration and either ends by the shadow time, or uses no node of
 * the head's shadow placement, or leaves the head room at the shadow time on
 * no more leaf switches than that placement (checked on the placer with the
 * request claimed and the leases ending by then released; the head's shadow
 * placement then becomes that room). Requests without a duration never pass
 * a head.
 * Only the head preempts or is protected; the rest wait in order. A lease
 * that preempted takes the GPUs it waited for at the deadline, before any
 * other request is considered. Preemption notices are never withdrawn.
 *
 * Time and cost: a pass retries waiting requests with placer_place_quiet()
 * (a refusal's explanation scans the fleet, so it is written only when the
 * queue is listed), skips requests that failed since the last time capacity
 * came back, and computes the head's shadow only when a backfill needs it;
 * a submit behind an unchanged head judges only itself.
 *
 * Reservations: during [start, end) the reserved nodes serve only the
 * reserving tenant (through placer_set_pool); leases of other tenants already
 * running there when the window opens keep running until they end. */
#ifndef SL_SCHED_H
#define SL_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "place.h"
#include "plan.h" /* enum plan; leases take monthly, hourly, spot */

#define SCHED_REASON_MAX 640           /* a queued lease's reason, with NUL */
#define SCHED_MAX_WEIGHT 1000000       /* bound on a tenant's fair-share weight */
#define SCHED_MAX_RESV_NODES 100000    /* bound on nodes in one reservation */
#define SCHED_DEFAULT_NOTICE_NS (30LL * 1000000000LL)

enum sched_state {
	SCHED_NONE,       /* unknown id, or the lease ended */
	SCHED_PENDING,    /* queued */
	SCHED_RUNNING,
	SCHED_PREEMPTING, /* running, with a preemption notice */
};

enum sched_end {
	SCHED_END_RELEASED,  /* sched_release() */
	SCHED_END_EXPIRED,   /* its declared duration passed */
	SCHED_END_PREEMPTED, /* the notice elapsed */
	SCHED_END_FAILED,    /* a node it used failed (sched_node_failed) */
};

enum sched_event_type {
	SCHED_EV_STARTED,        /* placement, gpus, backfilled */
	SCHED_EV_QUEUED,         /* position, constraint, reason (only at submit) */
	SCHED_EV_PREEMPT_NOTICE, /* deadline_ns; by = the lease it makes room for */
	SCHED_EV_ENDED,          /* end */
	SCHED_EV_SCALED,         /* placement (after), gpus (after) */
	SCHED_EV_RESV_STARTED,   /* id = reservation; placement: one pick per node */
	SCHED_EV_RESV_ENDED,     /* id = reservation */
};

const char *sched_end_name(enum sched_end e);
const char *sched_event_name(enum sched_event_type t);

struct sched_event {
	enum sched_event_type type;
	uint64_t id;                 /* lease id, or reservation id for RESV_* */
	int64_t at_ns;               /* now_ns of the call that made it */
	struct placement placement;  /* STARTED, SCALED, RESV_STARTED (owned); its
					score only in STARTED (the scheduler keeps
					its leases' picks, not their scores) */
	int gpus;                    /* STARTED, SCALED: whole GPUs held after */
	bool backfilled;             /* STARTED: ahead of a waiting head */
	int position;                /* QUEUED: 1-based */
	enum place_constraint constraint; /* QUEUED: what it waits for */
	char reason[SCHED_REASON_MAX];    /* QUEUED: why, in a sentence */
	int64_t deadline_ns;         /* PREEMPT_NOTICE */
	uint64_t by;                 /* PREEMPT_NOTICE: the waiting lease */
	enum sched_end end;          /* ENDED */
};

/* What a lease asks for. req is copied (model, region, site strings too);
 * req->tenant is ignored: the lease's tenant is used for placement. */
struct sched_spec {
	const char *tenant;          /* a fleet name (fleet_name_valid) */
	enum plan plan;
	const struct place_request *req;
	int64_t duration_ns;         /* 0 = open-ended; counts from the start */
	int elastic_min, elastic_max; /* both 0: not elastic; else 1 <= min <= gpus <= max */
};

struct sched_lease_info {
	enum sched_state state;
	enum plan plan;
	const char *tenant;          /* borrowed */
	int gpus;                    /* whole GPUs asked for now (elastic: current) */
	int64_t submit_ns, start_ns; /* start_ns: 0 while pending */
	int64_t duration_ns;
	int64_t deadline_ns;         /* PREEMPTING: when the GPUs go */
};

struct sched_queue_entry {
	uint64_t id;
	int position;                /* 1-based, in the documented order */
	enum plan plan;
	const char *tenant;          /* borrowed */
	int gpus;
	int64_t submit_ns;
	enum place_constraint constraint;
	const char *reason;          /* borrowed */
};

struct sched;

/* Creates a scheduler over p (borrowed; all GPUs are expected free, or claimed
 * by whoever will not release them through the scheduler). SL_ENOMEM. */
enum sl_err sched_new(struct placer *p, struct sched **out) SL_MUST_USE;
/* Frees the scheduler; running leases' GPUs stay claimed on the placer. */
void sched_free(struct sched *s);
/* The fleet gained nodes at its end and the placer knows them
 * (placer_nodes_added): sizes the scheduler for them. */
enum sl_err sched_nodes_added(struct sched *s) SL_MUST_USE;

/* Preemption notice for spot leases (default SCHED_DEFAULT_NOTICE_NS; >= 0). */
void sched_set_preempt_notice(struct sched *s, int64_t notice_ns);
/* Fair-share weight of tenant (1..SCHED_MAX_WEIGHT, default 1): a tenant of
 * weight 2 is ranked as if it ran half its GPUs. SL_EINVAL, SL_ENOMEM. */
enum sl_err sched_set_tenant_weight(struct sched *s, const char *tenant, int weight,
				    struct sl_diag *d) SL_MUST_USE;
/* Limits tenant's GPUs of a catalog model, running plus pending, to max_gpus
 * (>= 0; -1 removes the quota). A lease counts against the quota of every
 * model it may use while pending (all models when it names none), and of the
 * models it got once running; a share of a GPU counts as one GPU. Lowering a
 * quota under current use ends nothing; new submits and grows are refused.
 * SL_EINVAL (unknown model, bad value), SL_ENOMEM. */
enum sl_err sched_set_quota(struct sched *s, const char *tenant, const char *model,
			    int max_gpus, struct sl_diag *d) SL_MUST_USE;

/* Submits lease id at now_ns, then runs a scheduling pass: the lease starts
 * (SCHED_EV_STARTED) or queues (SCHED_EV_QUEUED with its position and reason);
 * the pass may start or preempt others too. Errors (nothing changed, no event):
 * SL_EEXIST id in use; SL_EINVAL bad spec or request (d says what);
 * SL_EQUOTA a quota would be exceeded; SL_ENOSPACE no node of the fleet could
 * ever take it (a model, memory, region, site, size or bandwidth constraint no
 * node meets); SL_ENOMEM. */
enum sl_err sched_submit(struct sched *s, uint64_t id, const struct sched_spec *spec,
			 int64_t now_ns, struct sl_diag *d) SL_MUST_USE;
/* Ends lease id (SCHED_EV_ENDED, released): a running or preempting lease's
 * GPUs are freed, a pending one leaves the queue; then a pass runs.
 * SL_ENOTFOUND for an unknown id. */
enum sl_err sched_release(struct sched *s, uint64_t id, int64_t now_ns,
			  struct sl_diag *d) SL_MUST_USE;
/* Sets lease id's duration, from its start (0 = open-ended); a shorter one
 * ends the lease at the next tick if already past. Backfill uses it at once.
 * SL_ENOTFOUND, SL_EINVAL (negative). */
enum sl_err sched_extend(struct sched *s, uint64_t id, int64_t duration_ns,
			 struct sl_diag *d) SL_MUST_USE;
/* Scales elastic lease id to gpus whole GPUs (elastic_min..elastic_max).
 * Pending: only the size asked for changes. Running: a grow places the extra
 * GPUs now (on the lease's own nodes first, then its site, then anywhere the
 * request's constraints allow) or fails with SL_ENOSPACE, never queues, and
 * like a backfill may not take a waiting head's shadow nodes; a shrink
 * releases GPUs from the end of the placement (whole picks first).
 * SCHED_EV_SCALED on success, then a pass after a shrink. SL_ENOTFOUND;
 * SL_EINVAL (not elastic, out of range); SL_ECONFLICT (preempting);
 * SL_EQUOTA; SL_ENOSPACE. Nothing changes on error. */
enum sl_err sched_scale(struct sched *s, uint64_t id, int gpus, int64_t now_ns,
			struct sl_diag *d) SL_MUST_USE;
/* Time-driven work at now_ns, in this order: reservation windows that close,
 * leases whose duration passed (expired), preemption notices that elapsed
 * (preempted) and the leases waiting for them, reservation windows that open,
 * then a scheduling pass. SL_ENOMEM only. */
enum sl_err sched_tick(struct sched *s, int64_t now_ns) SL_MUST_USE;

/* A node was lost: it goes out of service on the placer and every lease using
 * it ends (failed). No replacement is placed (the lease may be resubmitted).
 * SL_EINVAL for a bad node. */
enum sl_err sched_node_failed(struct sched *s, int node, int64_t now_ns) SL_MUST_USE;
/* The node is back in service; a pass runs. */
enum sl_err sched_node_restored(struct sched *s, int node, int64_t now_ns) SL_MUST_USE;
/* Moves running lease id's GPUs on a failed node to other GPUs (sched_replace.c):
 * the node goes out of service; the same number of GPUs (or the same share)
 * is placed under the lease's request in the node's NVLink domain, else its
 * leaf, else its site, else anywhere; they are claimed before the old ones
 * are released. *out (initialised by the caller, who releases it) gets the
 * lease's whole new placement (its picks; the score is zero). No event is issued and no pass runs (call
 * sched_node_failed next, which ends the leases still on the node).
 * SL_ENOTFOUND; SL_EINVAL (bad node, or the lease holds nothing there);
 * SL_ECONFLICT (not running: pending or being preempted); SL_ENOSPACE (no
 * room: the lease is unchanged); SL_ENOMEM. */
enum sl_err sched_replace_node(struct sched *s, uint64_t id, int node, int64_t now_ns,
			       struct placement *out, struct sl_diag *d) SL_MUST_USE;

/* Reserves nodes (fleet indices, copied) for tenant during [start_ns, end_ns).
 * Windows open and close in sched_tick() and in the reservation calls (this
 * one included) whose now_ns has reached them, so tick at their edges.
 * SL_EEXIST id in use; SL_EINVAL bad window, node or tenant, or a node
 * colocated by another tenant; SL_ECONFLICT a node already reserved in an
 * overlapping window; SL_ELIMIT past SCHED_MAX_RESV_NODES. */
enum sl_err sched_reserve(struct sched *s, uint64_t id, const char *tenant, const int *nodes,
			  int nnodes, int64_t start_ns, int64_t end_ns, int64_t now_ns,
			  struct sl_diag *d) SL_MUST_USE;
/* Reserves gpus GPUs of a catalog model for tenant during [start_ns, end_ns),
 * rounded up to whole nodes: when the window opens, whole free provider nodes
 * are chosen as for an exclusive request (fewest leaves, best fit), skipping
 * nodes reserved by a node reservation in an overlapping window. If not enough
 * are free then, the reservation waits and is tried again at every
 * sched_tick() until it gets all its nodes at once or its window closes (it
 * neither preempts nor holds back backfill: reserve by node list for a
 * guarantee). SL_EEXIST; SL_EINVAL (unknown model, bad window, or fewer
 * provider GPUs of the model in the fleet than asked). */
enum sl_err sched_reserve_count(struct sched *s, uint64_t id, const char *tenant,
				const char *model, int gpus, int64_t start_ns,
				int64_t end_ns, int64_t now_ns, struct sl_diag *d) SL_MUST_USE;
/* Cancels reservation id (SCHED_EV_RESV_ENDED; its nodes return to their
 * owners if its window was open), then a pass runs. SL_ENOTFOUND. A window
 * that closes, opened or not, also ends with SCHED_EV_RESV_ENDED. */
enum sl_err sched_unreserve(struct sched *s, uint64_t id, int64_t now_ns,
			    struct sl_diag *d) SL_MUST_USE;

/* A lease as the controller stored it, for sched_restore(). */
struct sched_restore {
	const struct sched_spec *spec; /* spec->req->gpus: its size now (elastic) */
	int64_t submit_ns;             /* keeps its place in the queue order */
	const struct placement *placement; /* NULL: pending; else running */
	int64_t start_ns;              /* running: when it started */
	int64_t deadline_ns;           /* running, > 0: under a preemption notice */
};

/* Rebuilds lease id after a restart (or on a new placer after a fleet
 * change): a pending lease rejoins the queue with its old submission time; a
 * running one has its placement claimed on the placer here and counts in
 * fair share and quotas as before (quotas are not checked again: it was
 * admitted once). Restored leases are started in the order of the calls, for
 * newest-first preemption. No events and no pass: restore everything, then
 * call sched_tick(). Errors (nothing changed): SL_EEXIST; SL_EINVAL bad spec
 * or request, or a placement that does not fit the fleet; SL_ECONFLICT the
 * placement's GPUs are not free on the placer; SL_ENOSPACE a pending
 * request no node of the fleet could ever take (see sched_submit); SL_ENOMEM. */
enum sl_err sched_restore(struct sched *s, uint64_t id, const struct sched_restore *r,
			  struct sl_diag *d) SL_MUST_USE;
/* Capacity came back outside the scheduler (claims released on the placer
 * directly, GPUs back in service): looks at the queue again, as after a
 * release. */
enum sl_err sched_capacity_changed(struct sched *s, int64_t now_ns) SL_MUST_USE;

/* Events since the last sched_events_clear(), oldest first; owned by s and
 * valid until the next call that changes s. */
void sched_events(const struct sched *s, const struct sched_event **arr, int *n);
void sched_events_clear(struct sched *s);

enum sched_state sched_lease_state(const struct sched *s, uint64_t id);
/* False for an unknown id. */
bool sched_lease_get(const struct sched *s, uint64_t id, struct sched_lease_info *out);
/* The placement of a running or preempting lease (its picks; the score is
 * zero: SCHED_EV_STARTED has it); NULL otherwise. Borrowed, valid until the
 * next call that changes s. */
const struct placement *sched_lease_placement(const struct sched *s, uint64_t id);
/* The same picks as kept (counted): a caller that keeps a copy of them can
 * share this array instead (place_picks_copy_like); NULL when not running.
 * Borrowed, valid until the next call that changes s. */
const struct place_picks *sched_lease_picks(const struct sched *s, uint64_t id);
/* The queue in order, with positions and reasons; owned by s, valid until the
 * next call. SL_ENOMEM. */
enum sl_err sched_queue(struct sched *s, const struct sched_queue_entry **arr,
			int *n) SL_MUST_USE;
/* The position and reason sched_queue() would give pending lease id, without
 * building the listing: O(queue) comparisons and one reason, where the listing
 * sorts the queue and writes every lease's reason. The reason is owned by s,
 * valid until the next call. False (nothing set) when id is not pending. */
bool sched_queue_position(struct sched *s, uint64_t id, int *position, const char **reason);
/* Number of leases that are running or preempting / pending. */
int sched_running_count(const struct sched *s);
int sched_pending_count(const struct sched *s);

#endif

/* sched_internal.h - what the scheduler's files (sched.c, sched_pass.c,
 * sched_resv.c, sched_elastic.c) share; nothing else includes it.
 *
 * Leases live in individually allocated structs (stable pointers) found by id
 * through an open-addressing hash table, and sit in exactly one of two dense
 * arrays: pending (the queue, unordered; order is computed when needed because
 * fair share changes it) or running (running and preempting). Every state
 * change of a lease goes through lease_account() before and after, so the
 * per-tenant counts used by fair share and quotas never disagree with the
 * leases. */
#ifndef SL_SCHED_INTERNAL_H
#define SL_SCHED_INTERNAL_H

#include "catalog.h"
#include "scheduler.h"

struct strmap;

#define SCHED_MAX_LEASES (1 << 26) /* leases in one of the scheduler's arrays */

struct sched_quota {
	const struct gpu_model *model;
	int max;
	int64_t used; /* running + pending GPUs that count against it */
};

struct sched_tenant {
	char *name;
	int weight;
	int64_t running; /* GPUs of running and preempting leases */
	struct sched_quota *quotas;
	int nquotas, capquotas;
};

/* Why a pending lease did not start in the last pass. */
enum sched_note {
	NOTE_PLACE,       /* no room for it now */
	NOTE_HEAD,        /* no room, and it is first in the queue */
	NOTE_NO_DURATION, /* behind the head, and declares no duration */
	NOTE_DELAY,       /* fits now, but would delay the head */
};

/* What a head that preempted takes once its victims are gone: their
 * GPUs (pl) at the notice's deadline. */
struct sched_hold {
	struct placement pl;
	int64_t deadline;
	int victims_left;      /* has_rsv: victims still running */
};

/* One of these per lease (100,000 of them in bench/results/memory.md):
 * members ordered by size so that the record has no holes. What only a
 * pending lease needs and what only a running one needs share their bytes
 * (a lease starts once and never waits again): read the pending part only
 * while state is SCHED_PENDING, the running part only after; lease_start
 * switches from one to the other, lease_free releases the one in use. */
struct sched_lease {
	uint64_t id;
	struct sched_tenant *tenant;
	/* Its request but the size (gpus below): shared with the leases that
	 * ask alike (sched_shape_get); lease_req() puts the two together. */
	const struct sched_shape *shape;
	int64_t duration_ns, submit_ns;
	union {
		struct { /* SCHED_PENDING */
			/* Queue bookkeeping. A pass only notes why a lease
			 * waits (cheap); the sentence, which needs the
			 * placer's explanation (a scan of the fleet), is
			 * written when someone asks: lease_reason(). */
			uint64_t fail_gen;   /* placement failed at this capacity generation */
			uint64_t note_head;  /* the head it waits behind (note) */
			int64_t note_shadow; /* NOTE_HEAD/NOTE_DELAY: earliest start,
						INT64_MAX unknown, INT64_MIN not computed */
			int64_t note_now;    /* when the pass noted it */
			uint64_t why_gen;    /* why and wait_c explain the state of this gen */
			char *why;           /* the placer's explanation of the refusal
						(counted, maybe shared: sl_ctext; NULL:
						none); the reason is written from it when
						asked (lease_reason) */
			/* A head that preempted: the placement it takes once
			 * its victims are gone, and when (allocated the first
			 * time; has_rsv says whether it holds). */
			struct sched_hold *hold;
		};
		struct { /* SCHED_RUNNING, SCHED_PREEMPTING */
			struct place_picks pl; /* no score: see place_picks */
			uint64_t start_seq;    /* order of starts, for newest-first preemption */
			int64_t deadline_ns;   /* SCHED_PREEMPTING: when the GPUs go */
			uint64_t victim_for;   /* victim: the lease it makes room for */
			int64_t start_ns;
		};
	};
	int gpus;              /* whole GPUs asked for now (elastic: current) */
	int emin, emax;
	int pos;               /* index in pending or running */
	/* The enums in a byte each (each has a few values): with the hold's
	 * victims_left moved into struct sched_hold, the record is 120 bytes,
	 * a 128-byte block of malloc where 136 took 144 (bench/results/memory.md). */
	enum plan plan : 8;
	enum sched_state state : 8;
	enum sched_note note : 8;  /* why it waits (note_head, note_shadow above) */
	enum place_constraint wait_c : 8;
	bool has_rsv;          /* pending: hold is its placement to take */
	bool victim;           /* running: preempted for victim_for */
};

/* The byte-wide enum fields above hold every value of their enums. */
#define SCHED_COUNT_ONE(name, str) +1
_Static_assert(PLAN__COUNT <= 256, "enum plan outgrew sched_lease's 8-bit field");
_Static_assert(SCHED_PREEMPTING < 256 && NOTE_DELAY < 256,
	       "enum sched_state or sched_note outgrew sched_lease's 8-bit field");
_Static_assert(0 PLACE_CONSTRAINTS(SCHED_COUNT_ONE) <= 256,
	       "enum place_constraint outgrew sched_lease's 8-bit field");
#undef SCHED_COUNT_ONE

/* A request but its size, once per scheduler for every lease that asks
 * alike (sched_shape.c; bench/results/memory.md: 100,000 leases of a few
 * kinds). Never changed once made: a lease that changes its request would
 * take another shape. */
struct sched_shape {
	struct place_request req; /* gpus 0; tenant: the tenant's name; models not
				     in the catalog, region and site: owned copies */
	char *key;                /* in sched.shape_idx */
	unsigned refs;            /* leases that point at it */
	int slot;                 /* index in sched.shapes */
	uint8_t own_models;       /* bit i: req.models[i] is an owned copy */
};

struct sched_resv {
	uint64_t id;
	char *tenant;
	bool by_count;
	const struct gpu_model *model; /* by_count */
	int gpus;                      /* by_count */
	int *nodes;                    /* given, or chosen when the window opened */
	int nnodes;
	int64_t start_ns, end_ns;
	bool open;
};

struct sched {
	struct placer *p;
	const struct fleet *f;
	int64_t notice_ns;
	/* Leases. */
	struct sched_lease **slots; /* hash table, power of two */
	size_t nslots, nleases;
	struct sched_lease **pending, **running;
	int npending, caprunning, nrunning, cappending;
	uint64_t start_seq;
	/* Bumped whenever capacity may have grown or changed hands (a release, a
	 * pool change, a node back in service): a lease whose placement failed at
	 * the current generation would fail again, so the pass skips it. */
	uint64_t gen;
	/* The head the last full pass left (0: none), and whether anything that
	 * a pass depends on changed since without one (order, declared ends,
	 * restored leases): when neither, a submit that ranks behind that head
	 * only needs itself judged (sched_pass_new). */
	uint64_t last_head;
	bool dirty;
	struct sched_tenant **tenants;
	int ntenants, captenants;
	struct sched_resv **resvs;
	int nresvs, capresvs;
	/* Request shapes (sched_shape.c): slots, the free ones, the index. */
	struct sched_shape **shapes;
	int nshapes, capshapes;
	int *free_shapes;
	int nfree_shapes, capfree_shapes;
	struct strmap *shape_idx;
	/* Events. */
	struct sched_event *ev;
	int nev, capev;
	/* Scratch. */
	bool *mark;                 /* [nnodes] nodes of the head's shadow placement */
	int nmark;                  /* nodes mark is sized for */
	struct sched_lease **tmp;   /* leases to release tentatively */
	int captmp;
	struct sched_queue_entry *queue;
	int capqueue;
	struct sched_lease **snap;  /* the pass's queue, sorted */
	int capsnap;
	/* Reasons handed out (sched_queue_position, sched_queue): written
	 * when asked, not kept per lease. */
	char reason1[SCHED_REASON_MAX];
	char *qtext;                /* sched_queue's reasons, one after another */
	size_t capqtext;
	struct placement *view;     /* sched_lease_placement's answer */
};

/* The shape of r asked by tenant (its name in s, which outlives the shape),
 * counted: one more lease points at it. NULL when out of memory. */
const struct sched_shape *sched_shape_get(struct sched *s, const struct place_request *r,
					  const char *tenant);
/* One lease fewer points at sh (NULL: nothing); the last frees it. */
void sched_shape_put(struct sched *s, const struct sched_shape *sh);
void sched_shapes_free(struct sched *s);

/* l's whole request (its shape with its size), written into tmp. */
static inline const struct place_request *lease_req(const struct sched_lease *l,
						     struct place_request *tmp)
{
	*tmp = l->shape->req;
	tmp->gpus = l->gpus;
	return tmp;
}

/* For calls that cannot fail by construction: releasing what this scheduler
 * claimed, claiming back what a tentative release just freed, adding a pick
 * into reserved capacity. */
static inline void sched_cannot_fail(enum sl_err e)
{
	(void)e;
}

/* sched_elastic.c: adds pick k to pl, merging whole GPUs into a pick pl
 * already has on the same node (SL_ENOMEM only). */
enum sl_err sched_merge_pick(const struct sched *s, struct placement *pl,
			     const struct place_pick *k) SL_MUST_USE;

/* sched.c */
struct sched_lease *sched_find(const struct sched *s, uint64_t id);
/* Adds (sign 1) or removes (sign -1) the lease's share of its tenant's
 * running count and quota use; call with -1 before a change and 1 after. */
void lease_account(struct sched *s, struct sched_lease *l, int sign);
/* Whole GPUs a lease holds or asks for (a share counts as one). */
int lease_gpus(const struct sched_lease *l);
enum sl_err ev_push(struct sched *s, enum sched_event_type t, uint64_t id, int64_t now,
		    struct sched_event **out) SL_MUST_USE;
/* Moves a pending lease to running with placement pl (claimed here). */
enum sl_err lease_start(struct sched *s, struct sched_lease *l, const struct placement *pl,
			int64_t now, bool backfilled) SL_MUST_USE;
/* Ends a lease in any state: frees its GPUs, emits ENDED, forgets it. */
enum sl_err lease_end(struct sched *s, struct sched_lease *l, enum sched_end why,
		      int64_t now) SL_MUST_USE;
int64_t lease_end_ns(const struct sched_lease *l); /* INT64_MAX if open-ended */
bool pl_touches(const struct placement *pl, const bool *mark);
struct sched_tenant *tenant_get(struct sched *s, const char *name, bool add);
enum sl_err tmp_reserve(struct sched *s, int n) SL_MUST_USE;
enum sl_err snap_reserve(struct sched *s, int n) SL_MUST_USE;
/* The lease called id, or NULL with SL_ENOTFOUND in d. */
struct sched_lease *find_or_diag(struct sched *s, uint64_t id, struct sl_diag *d);
/* SL_EQUOTA (d says which) when lease l, or only extra GPUs of it when extra
 * is not NULL, would pass one of its tenant's quotas on top of what counts
 * now. */
enum sl_err quota_check(const struct sched *s, const struct sched_lease *l,
			const struct placement *extra, struct sl_diag *d) SL_MUST_USE;

/* sched_pass.c */
/* < 0 when a ranks before b in the queue. */
int lease_order_cmp(const struct sched_lease *a, const struct sched_lease *b);
enum sl_err sched_pass(struct sched *s, int64_t now) SL_MUST_USE;
/* The pass after submitting l: the same decisions as sched_pass(), cheaper
 * when l ranks behind the last pass's head and nothing else changed. */
enum sl_err sched_pass_new(struct sched *s, struct sched_lease *l, int64_t now) SL_MUST_USE;
/* Writes l's reason into out (n bytes; refreshes why/wait_c when the state
 * changed since): the sentence the queue listing and the QUEUED event show. */
void lease_reason(struct sched *s, struct sched_lease *l, char *out, size_t n);
/* Sets l->why (NULL or "" clears it). */
void lease_set_why(const struct sched *s, struct sched_lease *l, const char *why);
/* Issues no event; the head of the queue (NULL if none) and its shadow: time
 * (INT64_MAX when unknown) and nodes (in s->mark, to be cleared by the caller
 * with mark_clear). */
enum sl_err head_shadow(struct sched *s, struct sched_lease **head, int64_t *shadow,
			struct placement *shadow_pl, int64_t now) SL_MUST_USE;
void mark_set(struct sched *s, const struct placement *pl, bool on);
enum sl_err preempt_complete(struct sched *s, int64_t now) SL_MUST_USE;
/* Places request r with the nodes of spl out of service, so that it avoids them. */
bool place_avoiding(struct sched *s, const struct place_request *r, const struct placement *spl,
		    struct placement *out);

/* sched_resv.c */
enum sl_err resv_tick(struct sched *s, int64_t now, bool closing) SL_MUST_USE;
void resv_free_all(struct sched *s);

#endif

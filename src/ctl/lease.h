/* lease.h - leases in the controller: the lease record and its request,
 * their JSON (which is also the store row), the lease table (the handle
 * struct ctl_lease_table, owned by struct ctl: leases by seq, the ring of
 * ended leases kept in memory, leases read back for the turn, interned
 * names, the deadline heap) and the lease-change hooks.
 *
 * Private to src/ctl; loop thread only. Leases are never removed from the
 * store: an ended lease's row moves to the lease history table in the
 * transaction that ends it (history.h), it may leave memory
 * (ctl_leases_trim) and is read back on demand (ctl_lease_find), so
 * index = seq - 1 is a stable handle. A restart reads only live leases. */
#ifndef SL_CTL_LEASE_H
#define SL_CTL_LEASE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "ctl_limits.h"
#include "err.h"
#include "lease_fields.h"
#include "place.h"
#include "plan.h"

struct fleet;
struct strmap;
struct ctl;
struct ctl_call;

enum lease_state {
	LS_PENDING,
	LS_ACTIVE,
	LS_PREEMPTING,
	LS_RELEASED,
	LS_EXPIRED,
	LS_PREEMPTED,
	LS_FAILED,
	LS__COUNT
};

/* True for the states a lease never leaves (its row is in history). */
static inline bool lease_state_final(enum lease_state s)
{
	return s == LS_RELEASED || s == LS_EXPIRED || s == LS_PREEMPTED || s == LS_FAILED;
}

/* A lease request, validated (the JSON as posted is kept beside it).
 * region, site and tenant are never NULL ("" when absent): lease_req_parse
 * borrows them from the document. A lease points at a kept copy
 * (lease_req_keep): counted, shared by the leases that ask alike (most do:
 * 96 bytes a lease otherwise, bench/results/memory.md), owning region and
 * site, without a tenant (ctl_lease has it); never changed once kept. */
struct lease_req {
	int gpus;       /* whole GPUs; 0 for a share or a CPU-only lease */
	int gpu_milli;  /* a share of one GPU, 1..999 thousandths, else 0 */
	int cpu_milli;  /* per node, thousandths of a core; with mem_mib exact when
			   cpu_mem (absent: 0, none reserved) */
	int nmodels;
	int per_node, min_bw_gbps, min_mem_gib;
	enum plan plan; /* plan_is_lease() */
	int el_min, el_max; /* 0, 0: not elastic */
	int64_t mem_mib;
	int64_t duration_s; /* 0: none */
	const char *region, *site;
	const char *tenant;
	/* the bytes last, so that the record has no holes */
	uint8_t models[PLACE_MAX_MODELS]; /* catalog indices (lease_req_model): 8
					     bytes where names took 64, per lease */
	bool cpu_mem;   /* cpu_milli or memory_mib given: both exact; else the node's
			   CPUs and memory in proportion to the GPUs */
	bool exclusive;
	bool one_leaf; /* a gang under one leaf switch only */
	bool replace_on_failure; /* "on_node_failure": "replace" (agents.c) */
	/* in the tail padding: leases that point at a kept copy (0: parsed) */
	unsigned refs;
};

/* The name of r's model i (< r->nmodels): a catalog name (static). */
static inline const char *lease_req_model(const struct lease_req *r, int i)
{
	return catalog_gpu_at(r->models[i])->name;
}

/* One history entry: {"at", "state", "reason"} of the API. */
struct lease_hist {
	int64_t at_ns;  /* 0: null */
	const char *reason; /* NULL: ""; counted (maybe shared with the lease's
			       reason) unless one of the common reasons codec.c
			       keeps as constants (hist_reason_free) */
	enum lease_state state;
};

/* A lease in memory. Kept small (bench/results/memory.md: 100,000 live
 * leases): no jansson documents, no fixed text buffers for what is usually
 * empty; the API's JSON is written from these fields (codec.c, lease_row.c)
 * in the order of LEASE_FIELDS (lease_fields.h), which also declares the
 * row's scalar members: gpus (GPUs held now; elastic leases change it), the
 * instants created_ns, started_ns, ended_ns, expires_ns, preempt_ns, the
 * epoch and simulated. A new scalar row field is one line there. */
struct ctl_lease {
	uint64_t seq;
	char id[16];     /* "ls-" and the seq (< 2^31: lease_load.c), NUL */
	const char *tenant; /* ctl_name(): one copy per name, not per lease */
	const char *user;   /* likewise */
	const struct lease_req *req; /* kept (lease_req_keep): counted, maybe
					shared with other leases; replace it
					(lease_set_duration), never edit it */
	char *request;   /* as posted (validated): its compact JSON text as jansson
			    dumps it (json_dumps JSON_COMPACT); counted, maybe
			    shared with other leases (lease_share_request) */
	struct place_picks pl; /* picks while active/preempting (counted, shared
				  with the scheduler's record while it runs) */
	/* The placement's score while placed (l->placed), kept once per
	 * distinct score (lease_score_set, lease_score.c); NULL reads as the
	 * zero score (lease_score). */
	const struct place_score *score;
	char *reason;    /* why it waits (pending; counted, maybe shared: see
			    lease_set_reason; NULL: "") */
	char *end_reason; /* history reason for the coming end (owned; NULL: the
			     default); see lease_set_end_reason */
	struct lease_hist *hist; /* oldest first, at most CTL_MAX_HISTORY; its
				    capacity follows from nhist (lease_hist_add) */
	int nhist;
	/* Ordered so that the record has no holes: 168 bytes, a 176-byte
	 * block of malloc (bench/results/memory.md). */
	LEASE_FIELDS(LF_MEMBER)
	bool placed;     /* ever placed: lease_score(l) is its "score"; else none */
	enum lease_state state;
};

struct ctl_expiry {
	int64_t at;
	int lease;
};

/* The last lease row written, kept until the next answer or commit, so that
 * the answer about that lease reuses the row's text (plus the explanation)
 * instead of building and dumping the lease a second time (~15% of the
 * daemon's time under create+release, bench/results/api-profile.md). What the
 * text was made from is kept too: any difference at answer time, or a state
 * change, means the text is stale and the answer is built afresh. */
struct ctl_row_cache {
	const struct ctl_lease *lease; /* NULL: empty */
	char *text;
	size_t len, split;             /* split: where "created_at" starts */
	/* A shallow copy of *lease when the text was written, compared field
	 * by field (lease_row_fields()) with the lease at answer time; its
	 * pointers are never followed. */
	struct ctl_lease was;
	/* The score then, by value: was.score may since have been freed and
	 * its memory kept another score. */
	struct place_score was_score;
};

/* The lease table (c->lt). */
struct ctl_lease_table {
	/* Tenant and user names leases point at, each kept once (ctl_name);
	 * freed with the controller, after the leases. */
	struct strmap *name_idx;
	char **names;
	int nnames, cap_names;

	/* index = seq - 1; NULL once an ended lease is evicted (it stays in the
	 * store: see ctl_lease_find). */
	struct ctl_lease **leases;
	int nleases, cap_leases;
	int *ended;          /* ring of ended leases still in memory, oldest first */
	int ended_start, ended_n, ended_cap;
	int keep_ended;      /* how many ended leases stay in memory */
	uint64_t hist_seq;   /* highest seq in the store's lease history (history.h) */
	struct ctl_lease **loaded; /* evicted leases read back for this turn */
	int nloaded, cap_loaded;
	int nactive;
	struct ctl_expiry *expiry; /* min-heap by time; stale entries skipped */
	int nexpiry, cap_expiry;
	/* Placement scores leases point at, each kept once (lease_score.c);
	 * freed with the controller, after the leases. NULL: none yet. */
	struct lease_scores *scores;
};

/* ---- codec.c, lease_row.c: leases <-> JSON ---- */
/* The lease object of the API, which is also its store row. api: the queue
 * position and reason come from the scheduler (else the last stored reason
 * and position 0, which is what the store keeps). New reference. */
json_t *lease_to_json(struct ctl *c, const struct ctl_lease *l, bool api);
/* json_dumps(lease_to_json(c, l, false), JSON_COMPACT) with its length and
 * the offset of its "created_at" key, where the API's explanation goes
 * (malloc'd; NULL when out of memory). */
char *lease_row_dump(struct ctl *c, const struct ctl_lease *l, size_t *len, size_t *split);
/* The same through a jansson tree (codec.c): what lease_row_dump
 * (lease_row.c, which writes the text directly) falls back to and is
 * checked against in debug builds. */
char *lease_row_dump_json(struct ctl *c, const struct ctl_lease *l, size_t *len, size_t *split);
/* Whether field f is in l's row (api false) or answer (api true). */
bool lease_field_present(const struct lease_field *f, const struct ctl_lease *l, bool api);
/* The value of a scalar field (LF_INT, LF_INT64, LF_TIME, LF_BOOL) of l; 0
 * for the structured kinds. */
int64_t lease_field_scalar(const struct lease_field *f, const struct ctl_lease *l);
/* One sentence on where l runs and why that is good (its "explanation"). */
void lease_explain(const struct ctl *c, const struct ctl_lease *l, char *buf, size_t n);
enum sl_err lease_from_json(struct ctl *c, const json_t *o, struct ctl_lease *l,
			    struct sl_diag *d) SL_MUST_USE;
void lease_release_mem(struct ctl_lease *l);
/* Sets l->reason (NULL or "" clears it). False when out of memory (the
 * reason is then empty). */
bool lease_set_reason(struct ctl_lease *l, const char *reason);
/* Sets l->end_reason from a format, cut to 63 bytes as the history's reasons
 * always were; fmt NULL clears it (out of memory: cleared, so the end gets
 * its default reason). Set just before the call that ends the lease. */
void lease_set_end_reason(struct ctl_lease *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Points l at like's reason when the two are equal (one copy for both;
 * like may be NULL). */
void lease_share_reason(struct ctl_lease *l, const struct ctl_lease *like);
/* l->reason as a string ("" when none). */
static inline const char *ctl_lease_reason(const struct ctl_lease *l)
{
	return l->reason ? l->reason : "";
}
/* Replaces the request's text with the JSON of doc (compact). */
bool lease_set_request(struct ctl_lease *l, const json_t *doc);
/* Points l at like's request text when the two are equal (one copy for
 * both; like may be NULL). l->request is shared from then on: replace it
 * (lease_set_request), never edit it. */
void lease_share_request(struct ctl_lease *l, const struct ctl_lease *like);
/* Appends a history entry (dropping the oldest past CTL_MAX_HISTORY). */
bool lease_hist_add(struct ctl_lease *l, int64_t at_ns, enum lease_state s, const char *reason);
const char *lease_state_name(enum lease_state s);
int lease_state_parse(const char *s);
/* Parses a lease request body (already field-checked) into r; answers
 * nothing. r's strings are borrowed from o (see struct lease_req). */
enum sl_err lease_req_parse(const json_t *o, struct lease_req *r, struct sl_diag *d) SL_MUST_USE;
/* A kept copy of r (refs 1) that owns copies of its region and site and
 * has no tenant, so it outlives the parsed document; NULL when out of
 * memory. */
const struct lease_req *lease_req_keep(const struct lease_req *r) SL_MUST_USE;
/* One lease fewer points at kept request r (NULL: nothing); the last frees
 * it. */
void lease_req_drop(const struct lease_req *r);
/* Whether a and b ask for the same (region and site by content; tenants
 * ignored). */
bool lease_req_equal(const struct lease_req *a, const struct lease_req *b);
/* Points l at like's kept request when the two are equal (one copy for
 * both; like may be NULL). */
void lease_share_req(struct ctl_lease *l, const struct ctl_lease *like);
/* Gives l its request with duration_s changed (a copy: the old one may be
 * shared). False when out of memory (l unchanged). */
bool lease_set_duration(struct ctl_lease *l, int64_t duration_s) SL_MUST_USE;
/* place_request view of r (borrows r's strings). */
void lease_req_to_place(const struct lease_req *r, const char *tenant, struct place_request *pr);
/* Picks of a placement from a JSON "placement" array, nodes by name. */
enum sl_err placement_from_json(const struct fleet *f, const json_t *arr, struct placement *pl,
				struct sl_diag *d) SL_MUST_USE;

/* ---- placement scores (lease_score.c) ---- */
/* l's score (the zero score when it has none kept). */
const struct place_score *lease_score(const struct ctl_lease *l);
/* Points l at the kept copy of s (made when none is kept yet), dropping its
 * old one; false out of memory (l unchanged). */
bool lease_score_set(struct ctl *c, struct ctl_lease *l, const struct place_score *s) SL_MUST_USE;
/* Drops l's kept score (the last holder frees it); l reads the zero score. */
void lease_score_drop(struct ctl_lease *l);
/* A struct placement (in tmp) that borrows l's picks and score, valid while
 * l is unchanged. */
static inline const struct placement *lease_pl_view(const struct ctl_lease *l,
						    struct placement *tmp)
{
	place_picks_view(&l->pl, tmp);
	tmp->score = *lease_score(l);
	return tmp;
}
/* Distinct scores kept (tests). */
size_t ctl_lease_scores_kept(const struct ctl *c);
/* Frees the table, after every lease is gone. */
void ctl_lease_scores_free(struct ctl *c);

/* ---- the lease table (lease.c) ---- */
/* At start (lease_load.c): reads the live leases, moves an old store's ended
 * rows to history, re-claims running placements and fills the deadlines. */
enum sl_err ctl_leases_load(struct ctl *c, struct sl_diag *d) SL_MUST_USE;
/* Notes that lease l ended: its row leaves the live table (ctl_lease_save
 * writes it to history) in the turn's transaction; at the end of the turn
 * the oldest ended leases beyond the table's keep_ended leave memory. */
void ctl_lease_ended(struct ctl *c, struct ctl_lease *l);
/* The controller's copy of name s (equal names share one), valid until
 * ctl_names_free; NULL when out of memory. */
const char *ctl_name(struct ctl *c, const char *s);
/* Sets *dst to an owned copy of s (NULL: "") cut to size - 1 bytes, as the
 * fixed buffers such texts replaced did; "" is kept as `empty` (NULL or a
 * static "" the caller never frees). s may be *dst itself; an unchanged text
 * is left as it is (heartbeats repeat them). Out of memory *dst is `empty`
 * (logged). */
void ctl_text_set(char **dst, const char *s, size_t size, char *empty);
void ctl_names_free(struct ctl *c);
/* Frees what the turn read back from the store and evicts old ended leases;
 * no lease pointer may be held across it. */
void ctl_leases_trim(struct ctl *c);
/* Calls fn for every lease, in memory or evicted (read from the store's
 * history: all of it), in memory first; fn must not keep l. */
enum sl_err ctl_lease_each(struct ctl *c, void (*fn)(void *arg, const struct ctl_lease *l), void *arg,
			   struct sl_diag *d) SL_MUST_USE;
/* The lease with this id, read back from the store if evicted (valid until
 * the end of the turn); NULL if there is none. */
struct ctl_lease *ctl_lease_find(struct ctl *c, const char *id);
/* Saves lease l to the store in the open transaction: to the live table, or
 * to history once its state is final. */
bool ctl_lease_save(struct ctl *c, struct ctl_lease *l);
/* Empties c->row (the cached row text). */
void ctl_row_cache_clear(struct ctl *c);
/* Appends a history entry and changes state (s may equal the old state: a
 * size or epoch change), then tells every lease-change hook (lease.c's
 * table), in the table's order. */
void ctl_lease_set_state(struct ctl *c, struct ctl_lease *l, enum lease_state s,
			 const char *reason);
/* What a lease-change hook is told: the lease after the change (borrowed for
 * the call), the state it had before, and the history reason (NULL: ""). */
struct lease_change {
	struct ctl_lease *lease;
	enum lease_state from;
	const char *reason;
};
/* An observer of lease changes: called by ctl_lease_set_state after the
 * change, on the loop's thread, inside the turn's transaction. It must not
 * change the lease's state itself; a store failure marks the turn fatal. */
struct lease_hook {
	const char *name; /* for logs and tests */
	void (*fn)(struct ctl *c, const struct lease_change *ch);
};
/* The hooks in the order they are called (static data); *n gets the count. */
const struct lease_hook *ctl_lease_hooks(size_t *n);
/* Schedules a deadline at time at: a lease's end (idx = its index) or a
 * scheduler edge such as a reservation window (idx -1). */
enum sl_err ctl_expiry_push(struct ctl *c, int64_t at, int idx) SL_MUST_USE;
/* Handles deadlines that passed (one scheduler tick); returns the next
 * deadline (0: none). */
int64_t ctl_expire(struct ctl *c);


#endif

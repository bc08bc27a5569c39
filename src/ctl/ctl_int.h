/* ctl_int.h - the controller's state and the helpers its handler files share.
 *
 * Private to src/ctl. Everything here is touched by the loop's one thread only.
 * Objects live in growable arrays owned by struct ctl and are never removed
 * (a released lease or a revoked token stays, as history), so an index into an
 * array is a stable handle; name -> index maps give O(1) lookups. */
#ifndef SL_CTL_INT_H
#define SL_CTL_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctl.h"
#include "fleet.h"
#include "http.h"
#include "place.h"
#include "scheduler.h"
#include "store.h"
#include "strmap.h"

/* Bounds on outside input (DESIGN.md §10.6). */
#define CTL_NAME_MAX 63          /* tenant names: [A-Za-z0-9._-], like fleet names */
#define CTL_USER_MAX 64          /* user labels on tokens */
#define CTL_REASON_MAX 256       /* drain reasons */
#define CTL_MAX_REGIONS 16       /* regions per tenant */
#define CTL_MAX_QUOTAS 32        /* quota entries per tenant */
#define CTL_IDEM_KEY_MAX 128     /* Idempotency-Key header */
#define CTL_IDEM_TTL_S (24 * 3600) /* saved answers older than this are dropped at start */
#define CTL_MAX_DURATION_S (10LL * 366 * 86400) /* duration_s, by_s */
#define CTL_MAX_HISTORY 1000     /* history entries kept per lease */
#define CTL_MAX_RESV_NODES 10000 /* nodes in one reservation */
#define CTL_MAX_PARAMS 2         /* {x} segments in one route pattern */
#define CTL_TOKEN_ID_LEN 16      /* "tok_" + 12 hex */
#define CTL_HASH_HEX 64          /* SHA-256 as hex */
#define CTL_MAX_TOKEN_LEN 128    /* longest bearer token looked at */

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
enum lease_plan { PLAN_MONTHLY, PLAN_HOURLY, PLAN_SPOT, PLAN__COUNT };

struct ctl_tenant {
	char name[CTL_NAME_MAX + 1];
	json_t *regions; /* array of strings */
	json_t *quotas;  /* object model -> integer */
	int64_t created_ns;
};

struct ctl_token {
	char id[CTL_TOKEN_ID_LEN + 1];
	char hash[CTL_HASH_HEX + 1];
	enum ctl_role role;
	char tenant[CTL_NAME_MAX + 1]; /* "" for provider roles */
	char user[CTL_USER_MAX + 1];
	int64_t created_ns, revoked_ns; /* revoked_ns 0: live */
	/* Role agent only (agents.h): the node the token may register, "*" or ""
	 * for any; node_cred: a node credential (returned by register), else a
	 * join token. */
	char node[CTL_NAME_MAX + 1];
	bool node_cred;
};

/* A lease request, validated (the JSON as posted is kept beside it).
 * region, site and tenant are never NULL ("" when absent): lease_req_parse
 * borrows them from the document; a lease's own copy (ctl_lease.req) owns
 * region and site after lease_req_keep and keeps no tenant (ctl_lease has
 * it). */
struct lease_req {
	int gpus;
	int nmodels;
	const char *models[PLACE_MAX_MODELS]; /* catalog names (static) */
	int per_node, min_bw_gbps, min_mem_gib;
	const char *region, *site;
	enum lease_plan plan;
	int64_t duration_s; /* 0: none */
	int el_min, el_max; /* 0, 0: not elastic */
	bool exclusive;
	bool one_leaf; /* a gang under one leaf switch only */
	bool replace_on_failure; /* "on_node_failure": "replace" (agents.c) */
	const char *tenant;
};

/* One history entry: {"at", "state", "reason"} of the API. */
struct lease_hist {
	int64_t at_ns;  /* 0: null */
	const char *reason; /* NULL: ""; owned unless one of the common reasons
			       codec.c keeps as constants (lease_hist_free) */
	enum lease_state state;
};

/* A lease in memory. Kept small (bench/results/memory.md: 100,000 live
 * leases): no jansson documents, no fixed text buffers for what is usually
 * empty; the API's JSON is written from these fields (codec.c, lease_row.c). */
struct ctl_lease {
	uint64_t seq;
	char id[24];
	const char *tenant; /* ctl_name(): one copy per name, not per lease */
	const char *user;   /* likewise */
	struct lease_req req;
	char *request;   /* as posted (validated): its compact JSON text as jansson
			    dumps it (json_dumps JSON_COMPACT), owned */
	enum lease_state state;
	int gpus;        /* GPUs held now (elastic leases change it) */
	bool placed;     /* ever placed: pl.score is its "score"; else none */
	struct place_kept pl; /* picks while active/preempting */
	char *reason;    /* why it waits (pending; owned, NULL: ""); see lease_set_reason */
	int64_t created_ns, started_ns, ended_ns, expires_ns, preempt_ns;
	struct lease_hist *hist; /* oldest first, at most CTL_MAX_HISTORY */
	int nhist, cap_hist;
	int64_t epoch;
	bool simulated;
	char end_reason[64];  /* history reason for the coming end, "" for the default */
};

struct ctl_resv {
	char id[24];
	char tenant[CTL_NAME_MAX + 1];
	json_t *nodes; /* array of node names */
	int64_t start_ns, end_ns, created_ns;
};

struct ctl_answer {
	struct http_request *req;
	int status;
	char *body;
	size_t len;
	const char *ctype;
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
	enum lease_state state;
	int gpus, npicks;
	bool placed;
	const struct lease_hist *hist;
	int nhist;
	int64_t created_ns, started_ns, ended_ns, expires_ns, preempt_ns, epoch;
	bool simulated;
};

struct ctl_metric_req {
	const char *route;
	int status;
	uint64_t count;
};

#define CTL_HIST_BUCKETS 14

struct ctl {
	struct store *store;
	struct http_server *http;
	char *data_dir;
	bool simulate;
	int64_t notice_ns; /* spot preemption notice, < 0: the scheduler's default */

	struct fleet *fleet; /* heap, so the placer's borrow stays valid */
	struct placer *placer;
	int64_t fleet_version;
	char fleet_id[32];
	bool fleet_ok;       /* fleet initialised (to release) */
	json_t *drains;      /* node name -> {"drained":true,"reason","at"} */

	struct ctl_tenant *tenants;
	int ntenants, cap_tenants;
	struct strmap *tenant_by_name;

	struct ctl_token *tokens;
	int ntokens, cap_tokens;
	struct strmap *token_by_hash; /* first 16 hex chars of the hash -> index */
	struct strmap *token_by_id;
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
	struct ctl_lease **loaded; /* evicted leases read back for this turn */
	int nloaded, cap_loaded;
	struct sched *sched;  /* borrows placer; NULL until the state is loaded */
	int nactive;
	struct ctl_expiry *expiry; /* min-heap by time; stale entries skipped */
	int nexpiry, cap_expiry;
	int64_t next_deadline;     /* 0: none */

	struct ctl_resv *resvs;
	int nresvs, cap_resvs;

	/* The turn. */
	bool tx_open;
	bool fatal;   /* a store write failed: the turn must not be committed */
	struct ctl_answer *answers;
	int nanswers, cap_answers;
	struct ctl_row_cache row; /* see struct ctl_row_cache */
	int64_t now_ns;

	/* Metrics. */
	struct ctl_metric_req *mreq;
	int nmreq, cap_mreq;
	uint64_t hist[CTL_HIST_BUCKETS + 1];
	double hist_sum;
	uint64_t hist_count;

	struct ctl_audit *audit; /* the audit log (audit_log.h); NULL until opened */
	struct ctl_images *images; /* the image catalog (images.h) */
	struct ctl_billing *billing; /* prices, usage, ledger (billing.h); NULL until started */
	struct ctl_agents *agents;   /* node agents (agents.h); NULL until started */
	struct ctl_jobs *jobs;       /* jobs on leases (jobs.h); NULL until started */
};

/* One request being handled. */
struct ctl_call {
	struct ctl *ctl;
	struct http_request *req;
	const struct ctl_route *route;
	const struct ctl_token *tok; /* NULL for routes without auth; else &tok_copy */
	/* The caller's token, copied: c->tokens moves when a handler adds a token
	 * (token create, agent registration), and the answer's audit entry
	 * still reads the caller's. */
	struct ctl_token tok_copy;
	const char *param[CTL_MAX_PARAMS];
	char parambuf[CTL_MAX_PARAMS][STORE_MAX_ID + 1];
	json_t *body; /* the JSON body object for json_body routes */
	bool answered;
	int status;   /* of the answer queued */
	const char *answer_body;
	size_t answer_len;
	/* The answer as a document while ctl_answer_json queues it (borrowed,
	 * else NULL), so that the audit reads it instead of parsing the text. */
	const json_t *answer_doc;
};

/* ---- answers (queued; sent after the turn's commit) ---- */
void ctl_answer(struct ctl_call *c, int status, const char *ctype, char *body_take, size_t len);
void ctl_answer_json(struct ctl_call *c, int status, json_t *body_take);
/* Answers with lease l as the API shows it (lease_to_json(..., true)),
 * from the text of its row (the one just written when it is fresh, struct
 * ctl_row_cache, else written now) with the explanation inserted. */
void ctl_answer_lease(struct ctl_call *c, int status, const struct ctl_lease *l);
void ctl_answer_error(struct ctl_call *c, enum sl_err e, const char *message, const char *hint);
void ctl_answer_diag(struct ctl_call *c, enum sl_err e, const struct sl_diag *d);

/* ---- store writes in the turn's transaction; a failure marks the turn
 * fatal (the loop then exits without committing or answering) ---- */
bool ctl_put(struct ctl *c, enum store_kind k, const char *id, const char *tenant, json_t *doc);
/* The same with the row's text already encoded (borrowed). */
bool ctl_put_text(struct ctl *c, enum store_kind k, const char *id, const char *tenant,
		  const char *text);
bool ctl_meta_set(struct ctl *c, const char *key, const char *value);

/* ---- body validation ---- */
enum ctl_ftype { FT_STRING, FT_INT, FT_BOOL, FT_ARRAY, FT_OBJECT };
struct ctl_field {
	const char *name;
	enum ctl_ftype type;
	bool required;
};
/* Checks that body has only the listed fields, each of its type, and the
 * required ones; otherwise answers 400 naming the field and returns false. */
bool ctl_check_fields(struct ctl_call *c, const json_t *body, const struct ctl_field *f,
		      size_t n, const char *where);
/* A string field of at most max bytes (and at least 1); NULL when absent.
 * Answers 400 and sets *bad when too long or empty. */
const char *ctl_str_field(struct ctl_call *c, const json_t *o, const char *name,
			  size_t max, bool *bad);

/* Query parameter name as an integer in 0..max; def when absent. False when
 * malformed or out of range (the caller answers 400, naming the range). */
bool ctl_query_int(const struct ctl_call *call, const char *name, long long def, long long max,
		   long long *out);

/* ---- time ---- */
/* RFC 3339 UTC with milliseconds; JSON null for 0. */
json_t *ctl_time_json(int64_t ns);
void ctl_time_fmt(int64_t ns, char buf[32]);
/* Parses RFC 3339 ("2026-11-30T05:33:12Z", fraction and offset allowed). */
bool ctl_time_parse(const char *s, int64_t *ns);

/* ---- auth (auth.c) ---- */
/* Fills a new token's id, secret ("sl_..."; out 48 bytes) and hash. */
void auth_token_generate(struct ctl_token *t, char secret[64]);
/* SHA-256 hex of a secret. */
void auth_hash_hex(const char *secret, size_t len, char out[CTL_HASH_HEX + 1]);
/* Finds the live token for "Bearer ..." header; NULL if none matches. */
const struct ctl_token *auth_lookup(struct ctl *c, const char *header);
/* Adds t to memory (index maps included). */
enum sl_err ctl_token_add(struct ctl *c, const struct ctl_token *t) SL_MUST_USE;
/* Makes a new token like proto (role, tenant, user, node, node_cred): its id,
 * secret (written to secret, 64 bytes, shown once) and hash, created now; adds
 * it to memory and to the store in the turn's transaction. SL_ENOMEM. */
enum sl_err ctl_token_mint(struct ctl *c, const struct ctl_token *proto, struct ctl_token *out,
			   char secret[64]) SL_MUST_USE;
bool ctl_role_is_tenant(enum ctl_role r);
/* The caller's tenant when its role is tenant-scoped, else NULL. */
const char *ctl_call_tenant(const struct ctl_call *c);

/* ---- codec.c: objects <-> JSON ---- */
json_t *tenant_to_json(struct ctl *c, const struct ctl_tenant *t, bool usage);
enum sl_err tenant_from_json(const json_t *o, struct ctl_tenant *t, struct sl_diag *d) SL_MUST_USE;
json_t *token_to_json(const struct ctl_token *t, bool store);
enum sl_err token_from_json(const json_t *o, struct ctl_token *t, struct sl_diag *d) SL_MUST_USE;
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
/* One sentence on where l runs and why that is good (its "explanation"). */
void lease_explain(const struct ctl *c, const struct ctl_lease *l, char *buf, size_t n);
enum sl_err lease_from_json(struct ctl *c, const json_t *o, struct ctl_lease *l,
			    struct sl_diag *d) SL_MUST_USE;
void lease_release_mem(struct ctl_lease *l);
/* Sets l->reason (NULL or "" clears it). False when out of memory (the
 * reason is then empty). */
bool lease_set_reason(struct ctl_lease *l, const char *reason);
/* l->reason as a string ("" when none). */
static inline const char *ctl_lease_reason(const struct ctl_lease *l)
{
	return l->reason ? l->reason : "";
}
/* Replaces the request's text with the JSON of doc (compact). */
bool lease_set_request(struct ctl_lease *l, const json_t *doc);
/* Appends a history entry (dropping the oldest past CTL_MAX_HISTORY). */
bool lease_hist_add(struct ctl_lease *l, int64_t at_ns, enum lease_state s, const char *reason);
json_t *resv_to_json(const struct ctl_resv *r);
enum sl_err resv_from_json(const json_t *o, struct ctl_resv *r, struct sl_diag *d) SL_MUST_USE;
const char *lease_state_name(enum lease_state s);
const char *lease_plan_name(enum lease_plan p);
int lease_plan_parse(const char *s);
int lease_state_parse(const char *s);
/* Parses a lease request body (already field-checked) into r; answers
 * nothing. r's strings are borrowed from o (see struct lease_req). */
enum sl_err lease_req_parse(const json_t *o, struct lease_req *r, struct sl_diag *d) SL_MUST_USE;
/* Makes r own copies of its region and site and drops its tenant, so it
 * outlives the parsed document; false when out of memory (r then holds
 * none, and may still be released). */
bool lease_req_keep(struct lease_req *r) SL_MUST_USE;
/* Frees what lease_req_keep copied (NULL strings allowed: a zeroed r). */
void lease_req_release(struct lease_req *r);
/* place_request view of r (borrows r's strings). */
void lease_req_to_place(const struct lease_req *r, const char *tenant, struct place_request *pr);
/* Picks of a placement from a JSON "placement" array, nodes by name. */
enum sl_err placement_from_json(const struct fleet *f, const json_t *arr, struct placement *pl,
				struct sl_diag *d) SL_MUST_USE;

/* ---- state helpers (ctl.c, h_*.c) ---- */
/* Lease at index i (seq - 1), NULL when evicted. Live leases are never evicted. */
static inline struct ctl_lease *ctl_lease_at(const struct ctl *c, int i)
{
	return i >= 0 && i < c->nleases ? c->leases[i] : NULL;
}
/* Notes that lease l ended; at the end of the turn the oldest ended leases
 * beyond c->keep_ended leave memory. */
void ctl_lease_ended(struct ctl *c, struct ctl_lease *l);
/* The controller's copy of name s (equal names share one), valid until
 * ctl_names_free; NULL when out of memory. */
const char *ctl_name(struct ctl *c, const char *s);
void ctl_names_free(struct ctl *c);
/* Frees what the turn read back from the store and evicts old ended leases;
 * no lease pointer may be held across it. */
void ctl_leases_trim(struct ctl *c);
/* Calls fn for every lease, in memory or evicted (read from the store), in
 * id order; fn must not keep l. */
enum sl_err ctl_lease_each(struct ctl *c, void (*fn)(void *arg, const struct ctl_lease *l), void *arg,
			   struct sl_diag *d) SL_MUST_USE;
struct ctl_tenant *ctl_tenant_find(struct ctl *c, const char *name);
/* The lease with this id, read back from the store if evicted (valid until
 * the end of the turn); NULL if there is none. */
struct ctl_lease *ctl_lease_find(struct ctl *c, const char *id);
struct ctl_token *ctl_token_find_id(struct ctl *c, const char *id);
enum sl_err ctl_tenant_add(struct ctl *c, const struct ctl_tenant *t) SL_MUST_USE;
/* Saves lease l to the store in the open transaction. */
bool ctl_lease_save(struct ctl *c, struct ctl_lease *l);
/* Empties c->row (the cached row text). */
void ctl_row_cache_clear(struct ctl *c);
/* Appends a history entry and changes state. */
void ctl_lease_set_state(struct ctl *c, struct ctl_lease *l, enum lease_state s,
			 const char *reason);
/* Schedules a deadline at time at: a lease's end (idx = its index) or a
 * scheduler edge such as a reservation window (idx -1). */
enum sl_err ctl_expiry_push(struct ctl *c, int64_t at, int idx) SL_MUST_USE;
/* Handles deadlines that passed (one scheduler tick); returns the next
 * deadline (0: none). */
int64_t ctl_expire(struct ctl *c);
/* Replaces the fleet (text is the YAML). Validates that active leases keep
 * their nodes; on error nothing changes. */
enum sl_err ctl_fleet_replace(struct ctl *c, const char *text, size_t len, const char *file,
			      bool save, struct sl_diag *d) SL_MUST_USE;
/* Sets every node's service state on the placer: present (simulated until
 * agents exist) and not drained. */
void ctl_apply_usable(struct ctl *c);
/* Node's state name and free GPU count. */
const char *ctl_node_state(struct ctl *c, int node, const char **reason);
int ctl_node_free_gpus(struct ctl *c, int node);
/* True when the node is visible to a tenant-scoped caller of tenant (NULL: all). */
bool ctl_node_visible(struct ctl *c, int node, const char *tenant);
/* Placement latency for the histogram. */
void ctl_metrics_observe(struct ctl *c, double seconds);
void ctl_metrics_done(const struct http_done_info *info, void *ctx);

/* handlers */
void h_healthz(struct ctl_call *c);
void h_metrics(struct ctl_call *c);
void h_catalog(struct ctl_call *c);
void h_fleet_get(struct ctl_call *c);
void h_fleet_put(struct ctl_call *c);
void h_nodes(struct ctl_call *c);
void h_node_show(struct ctl_call *c);
void h_node_drain(struct ctl_call *c);
void h_node_resume(struct ctl_call *c);
void h_tenant_create(struct ctl_call *c);
void h_tenant_list(struct ctl_call *c);
void h_tenant_show(struct ctl_call *c);
void h_token_create(struct ctl_call *c);
void h_token_list(struct ctl_call *c);
void h_token_revoke(struct ctl_call *c);
void h_lease_create(struct ctl_call *c);
void h_lease_list(struct ctl_call *c);
void h_lease_show(struct ctl_call *c);
void h_lease_release(struct ctl_call *c);
void h_lease_extend(struct ctl_call *c);
void h_lease_scale(struct ctl_call *c);
void h_queue(struct ctl_call *c);
void h_resv_create(struct ctl_call *c);
void h_resv_list(struct ctl_call *c);

/* ---- the scheduler (ctl_sched.c) ---- */
/* Creates the scheduler over the current placer: quotas, reservations, then
 * every pending and running lease restored as it was, and one tick. */
enum sl_err ctl_sched_start(struct ctl *c, struct sl_diag *d) SL_MUST_USE;
/* Frees it; running leases stay claimed on the placer until the next
 * ctl_sched_start() restores them. */
void ctl_sched_stop(struct ctl *c);
/* Applies the scheduler's events to leases (state, history, store). */
void ctl_sched_events(struct ctl *c);
/* After a scheduler call: SL_ENOMEM marks the turn fatal; events applied.
 * Returns e. */
enum sl_err ctl_sched_check(struct ctl *c, enum sl_err e, const char *what);
/* Submits lease l (SL_OK: started or queued, events applied). */
enum sl_err ctl_sched_submit(struct ctl *c, struct ctl_lease *l, struct sl_diag *d) SL_MUST_USE;
enum sl_err ctl_sched_tenant(struct ctl *c, const struct ctl_tenant *t, struct sl_diag *d) SL_MUST_USE;
enum sl_err ctl_sched_reserve(struct ctl *c, const struct ctl_resv *r, struct sl_diag *d) SL_MUST_USE;
/* Position and reason of a pending lease in the scheduler's queue. */
bool ctl_sched_queue_pos(struct ctl *c, const struct ctl_lease *l, int *pos, const char **reason);

/* Dispatches one request (routes.c). */
void ctl_dispatch(struct ctl *c, struct http_request *req);

#endif

/* audit_log.h - the controller's tamper-evident audit log (DESIGN.md §7).
 *
 * Every answer to a request that changes state, and every denied request, is
 * recorded as an entry (src/core/audit.h) in the SAME store transaction as the
 * change, before the answer can be sent (the loop sends answers only after
 * the turn's commit). Scheduler-driven lease changes are entries too, with
 * the actor "system". Entries are the leaves of an RFC 6962 Merkle tree kept
 * as a frontier in memory (completed subtree hashes go to the store as a
 * cache), and the controller signs checkpoints of it with its Ed25519 key
 * every CTL_AUDIT_EVERY entries, every CTL_AUDIT_PERIOD_S seconds when new
 * entries exist, and on demand.
 *
 * Fail closed: when an entry cannot be written, the turn is marked fatal, so
 * the commit never happens, no answer of the turn is sent and the daemon
 * stops (the store's failed-state rule); nothing is changed without its entry.
 *
 * Files in the data directory: audit.key (the 32-byte Ed25519 seed, base64,
 * mode 0600) and audit.pub (the public key, base64, for verifiers). */
#ifndef SL_CTL_AUDIT_LOG_H
#define SL_CTL_AUDIT_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "checkpoint.h"
#include "err.h"
#include "merkle.h"

#define CTL_AUDIT_KEY_FILE "audit.key"
#define CTL_AUDIT_PUB_FILE "audit.pub"
#define CTL_AUDIT_EVERY 1000        /* entries between automatic checkpoints */
#define CTL_AUDIT_PERIOD_S 60       /* seconds before pending entries get a checkpoint */
#define CTL_AUDIT_FIRST_SEQ 1       /* seq of leaf 0 */
/* Subtree levels kept in the store's cache: multiples of this. Every level
 * would cost about one extra row per entry; every 4th costs one per 15 and
 * leaves a proof at most 15 reads per 4 levels. */
#define CTL_AUDIT_CACHE_STEP 4
#define CTL_AUDIT_LIST_DEFAULT 1000 /* entries per GET /v1/audit/log by default */
#define CTL_AUDIT_LIST_MAX 100000   /* bound on ?limit= */

struct ctl;
struct ctl_call;
struct ctl_lease;
struct http_request;


/* Creates DIR/audit.key (0600) and DIR/audit.pub from a fresh random seed.
 * SL_EEXIST when the key exists; SL_EIO for file-system errors. Needs
 * sodium_init(). */
enum sl_err audit_log_key_create(const char *dir, struct sl_diag *d) SL_MUST_USE;

/* Loads the key (creating one, with a log line, for a data directory made
 * before the audit existed), the log's origin (meta "audit.origin", created
 * once) and the Merkle frontier from the store. Call after the store is open
 * and before anything can be recorded. */
enum sl_err audit_log_open(struct ctl *c, struct sl_diag *d) SL_MUST_USE;
/* Frees the audit state (wipes the secret key). NULL-safe on c->audit. */
void audit_log_close(struct ctl *c);

/* Dispatches req (ctl_dispatch) while noting that a request is running. */
void audit_log_dispatch(struct ctl *c, struct http_request *req);
/* Called by ctl_answer for every answer queued: records the entry if the
 * request changed or tried to change state, or was denied. On a write failure
 * the turn becomes fatal. body is the answer's body (borrowed). */
void audit_log_answer(struct ctl_call *call, int status, const char *body, size_t len);
/* The lease-change hook (lease.c): lease l has just moved from state `from`
 * to l->state. Changes the scheduler makes on its own (starts, preemptions,
 * expiries) are recorded with the actor "system"; a change of size only
 * (from == l->state) is not an entry. */
void audit_log_lease_state(struct ctl *c, const struct ctl_lease *l, int from);
/* Records a system entry (actor "system"). false (turn fatal) on failure. */
bool audit_log_system(struct ctl *c, const char *action, const char *tenant,
		      const char *target, const char *outcome);
/* Records an entry for an actor that is not a request's token (a sign-in:
 * the source address or the user's name). false (turn fatal) on failure. */
bool audit_log_actor(struct ctl *c, const char *actor, const char *role, const char *tenant,
		     const char *action, const char *target, const char *outcome);
/* Issues a checkpoint when one is due (CTL_AUDIT_PERIOD_S) and returns the
 * earlier of next_deadline (0: none) and the next time one falls due. */
int64_t audit_log_tick(struct ctl *c, int64_t next_deadline);
/* Signs and stores a checkpoint of the current tree now (in the turn's
 * transaction), unless the newest one already has this size. SL_EINVAL for an
 * empty log. */
enum sl_err audit_log_checkpoint(struct ctl *c, struct sl_diag *d) SL_MUST_USE;

struct sl_buf;
/* Appends the audit series to b (Prometheus text): entries, entries under
 * the newest checkpoint and how long the oldest entry after it has waited
 * for a signature. NULL-safe on c->audit (no samples). */
void audit_log_metrics(const struct ctl *c, struct sl_buf *b);

/* A merkle_source over the stored leaves and subtree cache. */
struct merkle_source audit_log_source(struct ctl *c);

/* Handlers (h_audit.c), in the route table. */
void h_audit_log(struct ctl_call *call);
void h_audit_checkpoint_get(struct ctl_call *call);
void h_audit_checkpoint_create(struct ctl_call *call);
void h_audit_proof(struct ctl_call *call);
void h_audit_consistency(struct ctl_call *call);
void h_audit_verify(struct ctl_call *call);
void h_audit_export(struct ctl_call *call);

#endif

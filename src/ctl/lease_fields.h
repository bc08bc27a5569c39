/* lease_fields.h - the one list of a lease's row fields.
 *
 * A lease's store row, which is also its API object, has these keys in this
 * order. Four things follow the list, so a field is added in one place:
 *   - struct ctl_lease declares the scalar members from it (LF_MEMBER),
 *   - lease_to_json and lease_from_json (codec.c) write and read the row,
 *   - the direct row writer (lease_row.c) writes the same text as jansson,
 *   - the row cache's fingerprint (lease.c) compares what the row is made of.
 * Each of them walks lease_row_fields() (codec.c) with a switch on the kind and
 * no default, so a new kind that one of them does not handle does not
 * compile (-Wswitch -Werror). Scalar kinds (int, int64, time, bool) need
 * nothing but their line here; the structured kinds are written by code of
 * their own in each walker.
 *
 * X(kind, member, key, when): member is the struct ctl_lease member the key
 * comes from (for structured kinds, the member their code starts from), when says in
 * which rows the key is present. */
#ifndef SL_CTL_LEASE_FIELDS_H
#define SL_CTL_LEASE_FIELDS_H

#include <stddef.h>

#define LEASE_FIELDS(X)                                                         \
	X(LF_ID, id, "id", LW_ALWAYS)                                           \
	X(LF_NAME, tenant, "tenant", LW_ALWAYS)                                 \
	X(LF_NAME, user, "user", LW_ALWAYS)                                     \
	X(LF_PLAN, req, "plan", LW_ALWAYS)                                      \
	X(LF_STATE, state, "state", LW_ALWAYS)                                  \
	X(LF_INT, gpus, "gpus", LW_ALWAYS)                                      \
	X(LF_REQUEST, request, "request", LW_ALWAYS)                            \
	X(LF_PLACEMENT, pl, "placement", LW_ALWAYS)                             \
	X(LF_SCORE, score, "score", LW_PLACED)                                  \
	X(LF_EXPLANATION, pl, "explanation", LW_API)                            \
	X(LF_QUEUE, reason, "queue", LW_PENDING)                                \
	X(LF_SEAM, seq, "", LW_ALWAYS)                                          \
	X(LF_TIME, created_ns, "created_at", LW_ALWAYS)                         \
	X(LF_TIME, started_ns, "started_at", LW_ALWAYS)                         \
	X(LF_TIME, ended_ns, "ended_at", LW_ALWAYS)                             \
	X(LF_TIME, expires_ns, "expires_at", LW_ALWAYS)                         \
	X(LF_TIME, preempt_ns, "preempt_deadline", LW_PREEMPTING)               \
	X(LF_HISTORY, hist, "history", LW_ALWAYS)                               \
	X(LF_INT64, epoch, "epoch", LW_ALWAYS)                                  \
	X(LF_BOOL, simulated, "simulated", LW_ALWAYS)

enum lease_field_kind {
	/* scalars: the member is declared by LF_MEMBER */
	LF_INT,   /* int, a JSON integer */
	LF_INT64, /* int64_t, a JSON integer */
	LF_TIME,  /* int64_t ns, RFC 3339 text or null for 0 */
	LF_BOOL,  /* bool */
	/* structured: declared in struct ctl_lease, written by each walker */
	LF_ID,          /* char id[]: the row's key */
	LF_NAME,        /* const char *, one copy per name (ctl_name) */
	LF_PLAN,        /* the request's plan, by name */
	LF_STATE,       /* the lease state, by name */
	LF_REQUEST,     /* the request as posted: jansson's compact text */
	LF_PLACEMENT,   /* the picks */
	LF_SCORE,       /* the placement's score */
	LF_EXPLANATION, /* API only: one sentence on the placement */
	LF_QUEUE,       /* {"position", "reason"} of a pending lease */
	LF_SEAM,        /* no key: where the row splits (the API's explanation
			   of a cached row goes here), before "created_at" */
	LF_HISTORY,     /* [{"at", "state", "reason"}] */
};

enum lease_field_when {
	LW_ALWAYS,
	LW_PLACED,     /* the lease was ever placed */
	LW_PENDING,    /* state pending */
	LW_PREEMPTING, /* state preempting */
	LW_API,        /* answers only, never the row */
};

struct lease_field {
	enum lease_field_kind kind;
	const char *key;
	size_t offset; /* of the member in struct ctl_lease */
	enum lease_field_when when;
};

/* The members the scalar kinds declare (used inside struct ctl_lease). */
#define LF_MEMBER(kind, member, key, when) LF_MEMBER_##kind(member)
#define LF_MEMBER_LF_INT(m) int m;
#define LF_MEMBER_LF_INT64(m) int64_t m;
#define LF_MEMBER_LF_TIME(m) int64_t m;
#define LF_MEMBER_LF_BOOL(m) bool m;
#define LF_MEMBER_LF_ID(m)
#define LF_MEMBER_LF_NAME(m)
#define LF_MEMBER_LF_PLAN(m)
#define LF_MEMBER_LF_STATE(m)
#define LF_MEMBER_LF_REQUEST(m)
#define LF_MEMBER_LF_PLACEMENT(m)
#define LF_MEMBER_LF_SCORE(m)
#define LF_MEMBER_LF_EXPLANATION(m)
#define LF_MEMBER_LF_QUEUE(m)
#define LF_MEMBER_LF_SEAM(m)
#define LF_MEMBER_LF_HISTORY(m)

/* The table LEASE_FIELDS makes (codec.c), in row order; *n gets its length. */
const struct lease_field *lease_row_fields(size_t *n);

#endif

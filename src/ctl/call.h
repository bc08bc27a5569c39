/* call.h - one request being handled and the turn it runs in: the call,
 * its queued answer, the turn's store writes, and the checks of a body and
 * a query that every handler shares.
 *
 * Answers are queued and sent after the turn's commit (ctl.c); a store write
 * that fails marks the turn fatal, so nothing of it is committed or sent. */
#ifndef SL_CTL_CALL_H
#define SL_CTL_CALL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "ctl.h"
#include "ctl_limits.h"
#include "err.h"
#include "store.h"

struct ctl;
struct ctl_lease;
struct http_request;

struct ctl_answer {
	struct http_request *req;
	int status;
	char *body;
	size_t len;
	const char *ctype;
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
	/* The SHA-256 hex of the session cookie that authenticated the call
	 * (people.h); "" when a bearer token did. */
	char session[CTL_HASH_HEX + 1];
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
/* ctl_put_text with the row's updated_ns given (billing: a posting's seq). */
bool ctl_put_text_ns(struct ctl *c, enum store_kind k, const char *id, const char *tenant,
		     const char *s, int64_t updated_ns);
bool ctl_meta_set(struct ctl *c, const char *key, const char *value);
/* Deletes row id of kind k in the turn's transaction (a missing row is no
 * error). */
bool ctl_delete(struct ctl *c, enum store_kind k, const char *id);

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


#endif

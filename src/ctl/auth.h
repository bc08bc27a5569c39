/* auth.h - tokens and who is calling: the token records, their table (the
 * handle struct ctl_auth, owned by struct ctl), bearer lookup in constant
 * time, minting, and the caller's role and tenant.
 *
 * Private to src/ctl; loop thread only. Tokens are never removed (a revoked
 * one stays, as history), so an index into the table is a stable handle. */
#ifndef SL_CTL_AUTH_H
#define SL_CTL_AUTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctl.h"
#include "ctl_limits.h"
#include "err.h"

struct strmap;
struct ctl;
struct ctl_call;

#define CTL_TOKEN_EXPIRES_MAX_S (10LL * 366 * 86400) /* bound on expires_in_s */

struct ctl_token {
	char id[CTL_TOKEN_ID_LEN + 1];
	char hash[CTL_HASH_HEX + 1];
	enum ctl_role role;
	char tenant[CTL_NAME_MAX + 1]; /* "" for provider roles */
	char user[CTL_USER_MAX + 1];
	int64_t created_ns, revoked_ns; /* revoked_ns 0: live */
	int64_t expires_ns;             /* 0: never; refused from then on */
	/* Role agent only (agents.h): the node the token may register, "*" or ""
	 * for any; node_cred: a node credential (returned by register), else a
	 * join token. */
	char node[CTL_NAME_MAX + 1];
	bool node_cred;
};

/* The token table (c->auth). */
struct ctl_auth {
	struct ctl_token *tokens;
	int ntokens, cap_tokens;
	struct strmap *token_by_hash; /* first 16 hex chars of the hash -> index */
	struct strmap *token_by_id;
};

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

struct ctl_token *ctl_token_find_id(struct ctl *c, const char *id);
/* The token as listed, or as stored (store: with its sha256). New reference. */
json_t *token_to_json(const struct ctl_token *t, bool store);
enum sl_err token_from_json(const json_t *o, struct ctl_token *t, struct sl_diag *d) SL_MUST_USE;

#endif

/* auth.c - bearer tokens and roles.
 *
 * A token is "sl_" + base64url(32 random bytes): 256 bits, recognisable in a
 * leaked log or a git diff by its prefix. Only its SHA-256 is stored, so a
 * copy of the database grants nothing. Lookup goes through a map keyed by the
 * first 16 hex digits of the hash (the map compares with strcmp, which may leak
 * timing about a prefix of a hash, i.e. nothing usable); the full hash is then
 * compared in constant time, as the contract promises. */
#include <sodium.h>
#include <string.h>

#include "buf.h"
#include "ctl_int.h"

#define CTL_MAX_TOKENS (1 << 20) /* API tokens held */

#define TOKEN_PREFIX "sl_"
#define TOKEN_RANDOM_BYTES 32
#define HASH_KEY_HEX 16

static const char *const role_names[CTL_ROLE__COUNT] = {
	"admin", "operator", "tenant-admin", "tenant", "auditor", "agent",
};

const char *ctl_role_name(enum ctl_role r)
{
	return (unsigned)r < CTL_ROLE__COUNT ? role_names[r] : "?";
}

int ctl_role_parse(const char *name)
{
	for (int i = 0; name && i < CTL_ROLE__COUNT; i++)
		if (!strcmp(name, role_names[i]))
			return i;
	return -1;
}

bool ctl_role_is_tenant(enum ctl_role r)
{
	return r == CTL_ROLE_TENANT_ADMIN || r == CTL_ROLE_TENANT;
}

const char *ctl_call_tenant(const struct ctl_call *c)
{
	return c->tok && ctl_role_is_tenant(c->tok->role) ? c->tok->tenant : NULL;
}

void auth_hash_hex(const char *secret, size_t len, char out[CTL_HASH_HEX + 1])
{
	unsigned char h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(h, (const unsigned char *)secret, len);
	sodium_bin2hex(out, CTL_HASH_HEX + 1, h, sizeof(h));
}

void auth_token_generate(struct ctl_token *t, char secret[64])
{
	unsigned char rnd[TOKEN_RANDOM_BYTES], idb[6];
	char b64[sodium_base64_ENCODED_LEN(TOKEN_RANDOM_BYTES,
					   sodium_base64_VARIANT_URLSAFE_NO_PADDING)];
	randombytes_buf(rnd, sizeof(rnd));
	randombytes_buf(idb, sizeof(idb));
	sodium_bin2base64(b64, sizeof(b64), rnd, sizeof(rnd),
			  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	snprintf(secret, 64, TOKEN_PREFIX "%s", b64);
	memcpy(t->id, "tok_", 4);
	sodium_bin2hex(t->id + 4, sizeof(t->id) - 4, idb, sizeof(idb));
	auth_hash_hex(secret, strlen(secret), t->hash);
	sodium_memzero(rnd, sizeof(rnd));
}

enum sl_err ctl_token_add(struct ctl *c, const struct ctl_token *t)
{
	char key[HASH_KEY_HEX + 1];
	enum sl_err ge = sl_grow(&c->auth.tokens, &c->auth.cap_tokens, c->auth.ntokens + 1, CTL_MAX_TOKENS);
	if (ge)
		return ge;
	memcpy(key, t->hash, HASH_KEY_HEX);
	key[HASH_KEY_HEX] = 0;
	if (strmap_get(c->auth.token_by_id, t->id, -1) >= 0 ||
	    strmap_get(c->auth.token_by_hash, key, -1) >= 0)
		return SL_EEXIST;
	enum sl_err e = strmap_add(c->auth.token_by_id, t->id, c->auth.ntokens);
	if (e)
		return e;
	e = strmap_add(c->auth.token_by_hash, key, c->auth.ntokens);
	if (e)
		return e; /* the id entry then points one past the end: never used */
	c->auth.tokens[c->auth.ntokens++] = *t;
	return SL_OK;
}

enum sl_err ctl_token_mint(struct ctl *c, const struct ctl_token *proto, struct ctl_token *out,
			   char secret[64])
{
	enum sl_err e = SL_EEXIST;
	for (int tries = 0; tries < 4 && e == SL_EEXIST; tries++) { /* an id collision: again */
		*out = *proto;
		auth_token_generate(out, secret);
		out->created_ns = c->now_ns;
		out->revoked_ns = 0;
		e = ctl_token_add(c, out);
	}
	if (!e)
		ctl_put(c, STORE_TOKENS, out->id, out->tenant[0] ? out->tenant : NULL,
			token_to_json(out, true));
	return e;
}

struct ctl_token *ctl_token_find_id(struct ctl *c, const char *id)
{
	int i = strmap_get(c->auth.token_by_id, id, -1);
	return i >= 0 && i < c->auth.ntokens ? &c->auth.tokens[i] : NULL;
}

const struct ctl_token *auth_lookup(struct ctl *c, const char *header)
{
	static const char bearer[] = "Bearer ";
	char hash[CTL_HASH_HEX + 1], key[HASH_KEY_HEX + 1];
	if (!header || strncasecmp(header, bearer, sizeof(bearer) - 1))
		return NULL;
	const char *tok = header + sizeof(bearer) - 1;
	while (*tok == ' ')
		tok++;
	size_t len = strlen(tok);
	while (len && (tok[len - 1] == ' ' || tok[len - 1] == '\t'))
		len--;
	if (len == 0 || len > CTL_MAX_TOKEN_LEN)
		return NULL;
	auth_hash_hex(tok, len, hash);
	memcpy(key, hash, HASH_KEY_HEX);
	key[HASH_KEY_HEX] = 0;
	int i = strmap_get(c->auth.token_by_hash, key, -1);
	if (i < 0 || i >= c->auth.ntokens)
		return NULL;
	const struct ctl_token *t = &c->auth.tokens[i];
	if (sodium_memcmp(t->hash, hash, CTL_HASH_HEX) != 0 || t->revoked_ns)
		return NULL;
	if (t->expires_ns && c->now_ns >= t->expires_ns)
		return NULL; /* expired: as unknown (401) */
	return t;
}

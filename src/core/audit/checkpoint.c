/* checkpoint.c - signed checkpoints in signed-note text form.
 *
 * The signature covers the body text, not the struct, so what a verifier
 * reads is exactly what was signed; the struct is a parsed view. Parsing is
 * made canonical by re-formatting the parsed checkpoint and comparing it with
 * the input byte for byte: one rule instead of a check per quirk (leading
 * zeros, base64 padding bits, stray spaces). */
#include "checkpoint.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define CHECKPOINT_DASH "\xe2\x80\x94" /* U+2014 EM DASH, signed-note style */
#define CHECKPOINT_ROOT_B64 44
#define CHECKPOINT_SIGBLOB (CHECKPOINT_KEY_ID_SIZE + CHECKPOINT_SIG_SIZE)
#define CHECKPOINT_SIGBLOB_B64 92

void checkpoint_keypair_from_seed(const uint8_t seed[CHECKPOINT_SEED_SIZE],
				  uint8_t pk[CHECKPOINT_PUBKEY_SIZE],
				  uint8_t sk[CHECKPOINT_SECKEY_SIZE])
{
	crypto_sign_seed_keypair(pk, sk, seed);
}

void checkpoint_key_id(const char *name, const uint8_t pk[CHECKPOINT_PUBKEY_SIZE],
		       uint8_t out[CHECKPOINT_KEY_ID_SIZE])
{
	static const uint8_t sep_alg[2] = {'\n', 0x01}; /* 0x01 = Ed25519 */
	uint8_t h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256_state st;
	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, (const uint8_t *)name, strlen(name));
	crypto_hash_sha256_update(&st, sep_alg, sizeof(sep_alg));
	crypto_hash_sha256_update(&st, pk, CHECKPOINT_PUBKEY_SIZE);
	crypto_hash_sha256_final(&st, h);
	memcpy(out, h, CHECKPOINT_KEY_ID_SIZE);
}

static enum sl_err checkpoint_check_origin(const char *origin, size_t max,
					   struct sl_diag *d)
{
	size_t n = strnlen(origin, max + 1);
	if (n == 0 || n > CHECKPOINT_ORIGIN_MAX)
		return sl_diag_set(d, SL_EINVAL,
				   "checkpoint origin must be 1..%d bytes",
				   CHECKPOINT_ORIGIN_MAX);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)origin[i];
		if (ch <= 0x20 || ch >= 0x7f || ch == '+')
			return sl_diag_set(d, SL_EINVAL,
					   "checkpoint origin has byte 0x%02x at %zu; printable ASCII without spaces or '+' expected",
					   ch, i);
	}
	return SL_OK;
}

enum sl_err checkpoint_init(struct checkpoint *c, const char *origin,
			    uint64_t size, const uint8_t root[CHECKPOINT_HASH_SIZE],
			    int64_t time_ns, struct sl_diag *d)
{
	memset(c, 0, sizeof(*c));
	enum sl_err err = checkpoint_check_origin(origin, CHECKPOINT_ORIGIN_MAX, d);
	if (err != SL_OK)
		return err;
	if (time_ns < 0)
		return sl_diag_set(d, SL_EINVAL, "checkpoint time is negative");
	memcpy(c->origin, origin, strlen(origin) + 1);
	c->size = size;
	memcpy(c->root, root, CHECKPOINT_HASH_SIZE);
	c->time_ns = time_ns;
	return SL_OK;
}

void checkpoint_set_heads(struct checkpoint *c, const uint8_t heads[CHECKPOINT_HASH_SIZE])
{
	c->has_heads = true;
	memcpy(c->heads, heads, CHECKPOINT_HASH_SIZE);
}

enum sl_err checkpoint_body(const struct checkpoint *c, char *buf, size_t cap,
			    size_t *len, struct sl_diag *d)
{
	enum sl_err err = checkpoint_check_origin(c->origin, CHECKPOINT_ORIGIN_MAX, d);
	if (err != SL_OK)
		return err;
	if (c->time_ns < 0)
		return sl_diag_set(d, SL_EINVAL, "checkpoint time is negative");
	char root[CHECKPOINT_ROOT_B64 + 1];
	sodium_bin2base64(root, sizeof(root), c->root, CHECKPOINT_HASH_SIZE,
			  sodium_base64_VARIANT_ORIGINAL);
	char heads[CHECKPOINT_ROOT_B64 + 1] = "";
	if (c->has_heads)
		sodium_bin2base64(heads, sizeof(heads), c->heads, CHECKPOINT_HASH_SIZE,
				  sodium_base64_VARIANT_ORIGINAL);
	int n = snprintf(buf, cap, "%s\n%" PRIu64 "\n%s\n%" PRId64 "\n%s%s%s", c->origin,
			 c->size, root, c->time_ns, c->has_heads ? "heads " : "", heads,
			 c->has_heads ? "\n" : "");
	if (n < 0 || (size_t)n >= cap)
		return sl_diag_set(d, SL_ELIMIT,
				   "checkpoint body needs more than %zu bytes", cap);
	*len = (size_t)n;
	return SL_OK;
}

enum sl_err checkpoint_sign(struct checkpoint *c,
			    const uint8_t sk[CHECKPOINT_SECKEY_SIZE],
			    struct sl_diag *d)
{
	char body[CHECKPOINT_BODY_MAX + 1];
	size_t len;
	enum sl_err err = checkpoint_body(c, body, sizeof(body), &len, d);
	if (err != SL_OK)
		return err;
	uint8_t pk[CHECKPOINT_PUBKEY_SIZE];
	crypto_sign_ed25519_sk_to_pk(pk, sk);
	checkpoint_key_id(c->origin, pk, c->key_id);
	crypto_sign_detached(c->sig, NULL, (const uint8_t *)body, len, sk);
	return SL_OK;
}

enum sl_err checkpoint_verify(const struct checkpoint *c,
			      const uint8_t pk[CHECKPOINT_PUBKEY_SIZE],
			      struct sl_diag *d)
{
	char body[CHECKPOINT_BODY_MAX + 1];
	size_t len;
	enum sl_err err = checkpoint_body(c, body, sizeof(body), &len, d);
	if (err != SL_OK)
		return err;
	uint8_t id[CHECKPOINT_KEY_ID_SIZE];
	checkpoint_key_id(c->origin, pk, id);
	if (memcmp(id, c->key_id, sizeof(id)) != 0)
		return sl_diag_set(d, SL_ECONFLICT,
				   "checkpoint was signed by another key (key id %02x%02x%02x%02x, expected %02x%02x%02x%02x)",
				   c->key_id[0], c->key_id[1], c->key_id[2],
				   c->key_id[3], id[0], id[1], id[2], id[3]);
	if (crypto_sign_verify_detached(c->sig, (const uint8_t *)body, len, pk) != 0)
		return sl_diag_set(d, SL_ECONFLICT,
				   "checkpoint signature does not verify");
	return SL_OK;
}

enum sl_err checkpoint_format(const struct checkpoint *c, char *buf, size_t cap,
			      size_t *len, struct sl_diag *d)
{
	size_t blen;
	enum sl_err err = checkpoint_body(c, buf, cap, &blen, d);
	if (err != SL_OK)
		return err;
	uint8_t blob[CHECKPOINT_SIGBLOB];
	memcpy(blob, c->key_id, CHECKPOINT_KEY_ID_SIZE);
	memcpy(blob + CHECKPOINT_KEY_ID_SIZE, c->sig, CHECKPOINT_SIG_SIZE);
	char b64[CHECKPOINT_SIGBLOB_B64 + 1];
	sodium_bin2base64(b64, sizeof(b64), blob, sizeof(blob),
			  sodium_base64_VARIANT_ORIGINAL);
	int n = snprintf(buf + blen, cap - blen, "\n" CHECKPOINT_DASH " %s %s\n",
			 c->origin, b64);
	if (n < 0 || (size_t)n >= cap - blen)
		return sl_diag_set(d, SL_ELIMIT,
				   "checkpoint note needs more than %zu bytes", cap);
	*len = blen + (size_t)n;
	return SL_OK;
}

/* Next line of text[*pos..len) without its '\n'; false when no '\n' ends it. */
static bool checkpoint_line(const char *text, size_t len, size_t *pos,
			    const char **line, size_t *n)
{
	const char *start = text + *pos;
	const char *nl = memchr(start, '\n', len - *pos);
	if (!nl)
		return false;
	*line = start;
	*n = (size_t)(nl - start);
	*pos += *n + 1;
	return true;
}

/* Decimal without sign; canonical form is enforced by the final comparison. */
static bool checkpoint_u64(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	if (n == 0 || n > 20)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		uint64_t digit = (uint64_t)(s[i] - '0');
		if (v > (max - digit) / 10)
			return false;
		v = v * 10 + digit;
	}
	*out = v;
	return true;
}

static bool checkpoint_b64(const char *s, size_t n, uint8_t *out, size_t want)
{
	size_t got;
	return sodium_base642bin(out, want, s, n, NULL, &got, NULL,
				 sodium_base64_VARIANT_ORIGINAL) == 0 &&
	       got == want;
}

enum sl_err checkpoint_parse(const char *text, size_t len,
			     struct checkpoint *out, struct sl_diag *d)
{
	memset(out, 0, sizeof(*out));
	if (len > CHECKPOINT_TEXT_MAX)
		return sl_diag_set(d, SL_EPARSE,
				   "checkpoint is %zu bytes; at most %d expected",
				   len, CHECKPOINT_TEXT_MAX);
	const char *line[7];
	size_t n[7], pos = 0;
	int nlines = 6;
	for (int i = 0; i < nlines; i++) {
		if (!checkpoint_line(text, len, &pos, &line[i], &n[i]))
			return sl_diag_at(d, SL_EPARSE, i + 1, 0,
					  "checkpoint ends before line %d is complete; %d newline-terminated lines expected",
					  i + 1, nlines);
		if (i == 4 && n[4] > 6 && !memcmp(line[4], "heads ", 6))
			nlines = 7;
	}
	uint8_t heads[CHECKPOINT_HASH_SIZE];
	bool has_heads = nlines == 7;
	if (has_heads) {
		if (!checkpoint_b64(line[4] + 6, n[4] - 6, heads, sizeof(heads)))
			return sl_diag_at(d, SL_EPARSE, 5, 0,
					  "checkpoint heads line is not 'heads <base64 of %d bytes>'",
					  CHECKPOINT_HASH_SIZE);
		line[4] = line[5], n[4] = n[5];
		line[5] = line[6], n[5] = n[6];
	}
	if (pos != len)
		return sl_diag_at(d, SL_EPARSE, 7, 0,
				  "checkpoint has bytes after its signature line");
	if (n[0] == 0 || n[0] > CHECKPOINT_ORIGIN_MAX)
		return sl_diag_at(d, SL_EPARSE, 1, 0, "checkpoint origin must be 1..%d bytes",
				  CHECKPOINT_ORIGIN_MAX);
	char origin[CHECKPOINT_ORIGIN_MAX + 1];
	memcpy(origin, line[0], n[0]);
	origin[n[0]] = 0;
	uint64_t size, t;
	uint8_t root[CHECKPOINT_HASH_SIZE];
	if (!checkpoint_u64(line[1], n[1], UINT64_MAX, &size))
		return sl_diag_at(d, SL_EPARSE, 2, 0, "checkpoint size is not a decimal number");
	if (!checkpoint_b64(line[2], n[2], root, sizeof(root)))
		return sl_diag_at(d, SL_EPARSE, 3, 0,
				  "checkpoint root is not base64 of %d bytes",
				  CHECKPOINT_HASH_SIZE);
	if (!checkpoint_u64(line[3], n[3], INT64_MAX, &t))
		return sl_diag_at(d, SL_EPARSE, 4, 0,
				  "checkpoint time is not a non-negative decimal number");
	if (n[4] != 0)
		return sl_diag_at(d, SL_EPARSE, 5, 0,
				  "checkpoint line 5 must be empty (it ends the signed body)");
	struct sl_diag ignore;
	if (checkpoint_init(out, origin, size, root, (int64_t)t, &ignore) != SL_OK)
		return sl_diag_at(d, SL_EPARSE, 1, 0, "checkpoint origin: %s", ignore.msg);
	if (has_heads)
		checkpoint_set_heads(out, heads);
	/* Signature line: "<dash> <origin> <base64 blob>". */
	const size_t dash = sizeof(CHECKPOINT_DASH) - 1;
	const char *s = line[5];
	size_t sn = n[5];
	if (sn < dash + 1 + n[0] + 1 || memcmp(s, CHECKPOINT_DASH " ", dash + 1) != 0 ||
	    memcmp(s + dash + 1, origin, n[0]) != 0 || s[dash + 1 + n[0]] != ' ')
		return sl_diag_at(d, SL_EPARSE, 6, 0,
				  "checkpoint signature line must read '\u2014 %s <base64>'",
				  origin);
	size_t off = dash + 1 + n[0] + 1;
	uint8_t blob[CHECKPOINT_SIGBLOB];
	if (!checkpoint_b64(s + off, sn - off, blob, sizeof(blob)))
		return sl_diag_at(d, SL_EPARSE, 6, 0,
				  "checkpoint signature is not base64 of %d bytes",
				  CHECKPOINT_SIGBLOB);
	memcpy(out->key_id, blob, CHECKPOINT_KEY_ID_SIZE);
	memcpy(out->sig, blob + CHECKPOINT_KEY_ID_SIZE, CHECKPOINT_SIG_SIZE);
	char again[CHECKPOINT_TEXT_MAX + 1];
	size_t alen;
	if (checkpoint_format(out, again, sizeof(again), &alen, &ignore) != SL_OK ||
	    alen != len || memcmp(again, text, len) != 0)
		return sl_diag_set(d, SL_EPARSE,
				   "checkpoint is not in canonical form (leading zeros, padding bits or spacing)");
	return SL_OK;
}

void checkpoint_from_note(const char *origin, uint64_t size, const char *note,
			  struct checkpoint *out)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	if (checkpoint_parse(note, strlen(note), out, &d) == SL_OK && out->size == size)
		return;
	memset(out, 0, sizeof(*out));
	snprintf(out->origin, sizeof(out->origin), "%s", origin);
	out->size = size;
}

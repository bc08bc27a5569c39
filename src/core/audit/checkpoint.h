/* checkpoint.h - signed checkpoints of the audit log (DESIGN.md §7).
 *
 * A checkpoint says "the log named ORIGIN had SIZE entries with Merkle root
 * ROOT at TIME", signed with the controller's Ed25519 key. Its text form
 * follows the transparency-log checkpoint and signed-note conventions
 * (c2sp.org/tlog-checkpoint, c2sp.org/signed-note), with the time as an
 * extension line:
 *
 *   <origin>\n
 *   <size, decimal>\n
 *   <root, standard base64 with padding (44 characters)>\n
 *   <time in ns since the Unix epoch, decimal>\n
 *   [heads <tenant heads root, base64 (44 characters)>\n]
 *   \n
 *   \u2014 <origin> <base64(key_id[4] || signature[64])>\n
 *
 * The heads line (optional, so that notes signed before it existed still
 * parse) commits to the newest entry of every tenant at this size: the
 * RFC 6962 root over the sorted (tenant, seq, leaf hash) heads of
 * tenant_chain.h. The controller always writes it.
 *
 * The signature (Ed25519, crypto_sign_detached) covers the first four lines
 * exactly, final newline included: the "body". key_id is the first 4 bytes of
 * SHA-256(origin || "\n" || 0x01 || public key), as signed notes define it,
 * so a verifier can tell "signed by another key" from "altered". Decimals have
 * no sign and no leading zeros. The text form is canonical: parsing refuses
 * anything checkpoint_format would not have written.
 *
 * Key generation from randomness is the program's job (core has no
 * randomness): it calls crypto_sign_keypair, or checkpoint_keypair_from_seed
 * with a seed it drew. Functions here need sodium_init() to have been called. */
#ifndef SL_CHECKPOINT_H
#define SL_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Origin (the log's name, also the signing key's name): 1..128 bytes of
 * printable ASCII without spaces or '+', e.g. "suanli.example.com/audit". */
#define CHECKPOINT_ORIGIN_MAX 128
#define CHECKPOINT_HASH_SIZE 32
#define CHECKPOINT_KEY_ID_SIZE 4
#define CHECKPOINT_SIG_SIZE 64      /* crypto_sign_BYTES */
#define CHECKPOINT_PUBKEY_SIZE 32   /* crypto_sign_PUBLICKEYBYTES */
#define CHECKPOINT_SECKEY_SIZE 64   /* crypto_sign_SECRETKEYBYTES */
#define CHECKPOINT_SEED_SIZE 32     /* crypto_sign_SEEDBYTES */
/* Longest body and longest whole note, NUL not included. */
#define CHECKPOINT_BODY_MAX (CHECKPOINT_ORIGIN_MAX + 20 + 44 + 19 + 4 + 6 + 44 + 1)
#define CHECKPOINT_TEXT_MAX                                                   \
	(CHECKPOINT_BODY_MAX + 1 + 4 + CHECKPOINT_ORIGIN_MAX + 1 + 92 + 1)

struct checkpoint {
	char origin[CHECKPOINT_ORIGIN_MAX + 1];
	uint64_t size;
	uint8_t root[CHECKPOINT_HASH_SIZE];
	int64_t time_ns; /* >= 0 */
	bool has_heads;  /* the note has a heads line */
	uint8_t heads[CHECKPOINT_HASH_SIZE];
	uint8_t key_id[CHECKPOINT_KEY_ID_SIZE];
	uint8_t sig[CHECKPOINT_SIG_SIZE];
};

/* Deterministic Ed25519 key pair from a 32-byte seed (crypto_sign_seed_keypair). */
void checkpoint_keypair_from_seed(const uint8_t seed[CHECKPOINT_SEED_SIZE],
				  uint8_t pk[CHECKPOINT_PUBKEY_SIZE],
				  uint8_t sk[CHECKPOINT_SECKEY_SIZE]);

/* Signed-note key id of (name, pk). */
void checkpoint_key_id(const char *name, const uint8_t pk[CHECKPOINT_PUBKEY_SIZE],
		       uint8_t out[CHECKPOINT_KEY_ID_SIZE]);

/* Fills c's origin, size, root and time (signature cleared). SL_EINVAL for an
 * origin that breaks the rule above or a negative time. */
SL_MUST_USE enum sl_err checkpoint_init(struct checkpoint *c, const char *origin,
					uint64_t size,
					const uint8_t root[CHECKPOINT_HASH_SIZE],
					int64_t time_ns, struct sl_diag *d);

/* Adds the tenant heads root (tenant_chain.h) to c; signing covers it. */
void checkpoint_set_heads(struct checkpoint *c, const uint8_t heads[CHECKPOINT_HASH_SIZE]);

/* Writes the signed body (the first four lines) into buf[0..cap), NUL
 * terminated, and its length (without NUL) into *len. SL_EINVAL for an
 * invalid origin or time; SL_ELIMIT when cap is too small
 * (CHECKPOINT_BODY_MAX + 1 always suffices). */
SL_MUST_USE enum sl_err checkpoint_body(const struct checkpoint *c, char *buf,
					size_t cap, size_t *len,
					struct sl_diag *d);

/* Signs c's body with sk, filling c->key_id and c->sig. Errors as
 * checkpoint_body. */
SL_MUST_USE enum sl_err checkpoint_sign(struct checkpoint *c,
					const uint8_t sk[CHECKPOINT_SECKEY_SIZE],
					struct sl_diag *d);

/* SL_OK when c carries a valid signature by pk over its fields. SL_ECONFLICT
 * when the key id is not pk's or the signature does not verify (d says
 * which); SL_EINVAL for an invalid origin or time. */
SL_MUST_USE enum sl_err checkpoint_verify(const struct checkpoint *c,
					  const uint8_t pk[CHECKPOINT_PUBKEY_SIZE],
					  struct sl_diag *d);

/* Writes the whole note into buf[0..cap), NUL terminated; *len gets its
 * length without NUL. Errors as checkpoint_body (CHECKPOINT_TEXT_MAX + 1
 * always suffices). */
SL_MUST_USE enum sl_err checkpoint_format(const struct checkpoint *c, char *buf,
					  size_t cap, size_t *len,
					  struct sl_diag *d);

/* Parses a note written by checkpoint_format. SL_EPARSE (with the line in d)
 * for anything else: a missing or extra line, a malformed number, a
 * non-canonical base64, a signature line naming another key, trailing bytes.
 * Parsing does not verify the signature: call checkpoint_verify. */
SL_MUST_USE enum sl_err checkpoint_parse(const char *text, size_t len,
					 struct checkpoint *out,
					 struct sl_diag *d);

/* A checkpoint as a verifier should see the note stored (or exported) for a
 * log of this size: the note parsed when it parses and names that size;
 * otherwise an unsigned checkpoint of (origin, size), so that the verifier
 * reports "checkpoint signature invalid" at the right place instead of the
 * note being skipped. note is NUL-terminated; out is always filled. Used by
 * the controller's online check and by `suanli audit verify` alike. */
void checkpoint_from_note(const char *origin, uint64_t size, const char *note,
			  struct checkpoint *out);

#endif

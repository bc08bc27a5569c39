/* audit.h - one audit entry and its canonical bytes (DESIGN.md §7).
 *
 * An entry records who (actor, role, tenant) did what (action, target), how it
 * ended (outcome), when (time_ns) and a digest of the request body, under a
 * sequence number. The Merkle tree (merkle.h) commits to the entry's canonical
 * bytes, so those bytes, not the struct, are what the log vouches for; they are
 * specified exactly below so that an auditor can re-implement them.
 *
 * CANONICAL ENCODING, version 1 (all integers big-endian):
 *
 *   offset  size  field
 *   0       1     format version, the byte 0x01
 *   1       8     seq, unsigned 64-bit
 *   9       8     time_ns, signed 64-bit two's complement (ns since the Unix epoch)
 *   17      ...   six strings, in this order: actor, role, tenant, action,
 *                 target, outcome; each is a 2-byte unsigned length L followed
 *                 by L bytes of UTF-8 (no terminator). L is at most the field's
 *                 AUDIT_*_MAX below; the bytes must be well-formed UTF-8
 *                 (shortest form, no surrogates) and contain no NUL.
 *   end-32  32    request_digest, raw bytes (SHA-256 of the request body as the
 *                 controller defines it; all zero when there is no body)
 *
 * In version 1 nothing follows the digest: the total length is 61 + the six
 * string lengths.
 *
 * CANONICAL ENCODING, version 2 (what the controller writes): version 1's
 * layout with the byte 0x02 first, and after the digest
 *
 *   end-40  8     prev_seq, unsigned 64-bit: the seq of the previous entry of
 *                 the same tenant, 0 when this is the tenant's first entry or
 *                 the entry has no chained tenant (audit_tenant_chained)
 *   end-32  32    prev_hash: that entry's leaf hash; all zero when prev_seq is 0
 *
 * so the total length is 101 + the six string lengths. The link makes each
 * tenant's entries a hash chain through the log; checkpoints commit to every
 * tenant's newest entry (tenant_chain.h), so a tenant can prove it sees ALL of
 * its entries. Version 1 entries (stores written before the chain existed)
 * still decode, with prev_seq 0: they are not linked (docs/audit.md).
 *
 * Every entry has exactly one encoding and every valid byte string decodes
 * to exactly one entry, so hashing the bytes is hashing the entry.
 *
 * The Merkle leaf hash of an entry is SHA-256(0x00 || canonical bytes)
 * (RFC 6962 §2.1).
 *
 * Functions that hash need libsodium initialised: the program calls
 * sodium_init() once before using them (core never does, having no globals). */
#ifndef SL_AUDIT_H
#define SL_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define AUDIT_FORMAT_VERSION 2  /* what audit_entry_init selects */
#define AUDIT_FORMAT_V1 1       /* before the tenant chain: decoded, still writable */
#define AUDIT_HASH_SIZE 32      /* SHA-256 */
#define AUDIT_DIGEST_SIZE 32    /* request_digest */

/* Byte bounds of the string fields (without the NUL the struct adds). */
#define AUDIT_ACTOR_MAX 128     /* token id, or "system" */
#define AUDIT_ROLE_MAX 32       /* "admin", "tenant", "auditor", "system", ... */
#define AUDIT_TENANT_MAX 64     /* tenant name; empty when none applies */
#define AUDIT_ACTION_MAX 64     /* e.g. "lease.create", "node.fail" */
#define AUDIT_TARGET_MAX 256    /* what it acted on: a lease id, a node name */
#define AUDIT_OUTCOME_MAX 64    /* "ok", or the sl_err code of a refusal */

/* Fixed part of the version 1 encoding: version + seq + time + 6 lengths +
 * digest; version 2 adds the tenant link. */
#define AUDIT_ENCODED_FIXED (1 + 8 + 8 + 6 * 2 + AUDIT_DIGEST_SIZE)
#define AUDIT_LINK_SIZE (8 + AUDIT_HASH_SIZE)
/* Largest canonical encoding: a buffer this big always suffices. */
#define AUDIT_ENCODED_MAX                                                     \
	(AUDIT_ENCODED_FIXED + AUDIT_LINK_SIZE + AUDIT_ACTOR_MAX + AUDIT_ROLE_MAX + \
	 AUDIT_TENANT_MAX + AUDIT_ACTION_MAX + AUDIT_TARGET_MAX +              \
	 AUDIT_OUTCOME_MAX)

/* One audit entry. Strings are NUL-terminated inside their arrays. */
struct audit_entry {
	uint64_t seq;
	int64_t time_ns;
	char actor[AUDIT_ACTOR_MAX + 1];
	char role[AUDIT_ROLE_MAX + 1];
	char tenant[AUDIT_TENANT_MAX + 1];
	char action[AUDIT_ACTION_MAX + 1];
	char target[AUDIT_TARGET_MAX + 1];
	char outcome[AUDIT_OUTCOME_MAX + 1];
	uint8_t request_digest[AUDIT_DIGEST_SIZE];
	uint8_t version;                   /* AUDIT_FORMAT_VERSION or AUDIT_FORMAT_V1 */
	uint64_t prev_seq;                 /* version 2: the tenant's previous entry, 0: none */
	uint8_t prev_hash[AUDIT_HASH_SIZE];
};

/* Zero-fills *e (all strings empty, digest zero, no link) and selects
 * format AUDIT_FORMAT_VERSION. */
void audit_entry_init(struct audit_entry *e);

/* Copies `value` into the string field of *e named by `field` ("actor",
 * "role", "tenant", "action", "target", "outcome"). SL_ELIMIT when value is
 * longer than the field's bound, SL_EINVAL for an unknown field name or a
 * value that is not valid UTF-8 or NUL-free; *e is unchanged on error. */
SL_MUST_USE enum sl_err audit_entry_set(struct audit_entry *e, const char *field,
					const char *value, struct sl_diag *d);

/* Writes the canonical bytes of *e into buf[0..cap) and their length into
 * *len. SL_EINVAL when a string field is not NUL-terminated within its array
 * or not valid UTF-8; SL_ELIMIT when cap is too small (AUDIT_ENCODED_MAX
 * always suffices). buf is unspecified on error. */
SL_MUST_USE enum sl_err audit_entry_encode(const struct audit_entry *e,
					   uint8_t *buf, size_t cap, size_t *len,
					   struct sl_diag *d);

/* Parses canonical bytes (version 1 or 2) into *out. Refuses (SL_EPARSE,
 * with the offset in the message) an unknown version, a truncated field, a
 * string over its bound, invalid UTF-8 or a NUL in a string, a link with
 * prev_seq 0 but a non-zero hash, and any bytes after the end. *out is
 * unspecified on error. */
SL_MUST_USE enum sl_err audit_entry_decode(const uint8_t *buf, size_t len,
					   struct audit_entry *out,
					   struct sl_diag *d);

/* RFC 6962 leaf hash of arbitrary bytes: SHA-256(0x00 || bytes). Needs
 * sodium_init(). bytes may be NULL when len is 0. */
void audit_leaf_hash(const uint8_t *bytes, size_t len,
		     uint8_t out[AUDIT_HASH_SIZE]);

/* Leaf hash of *e's canonical encoding; errors as audit_entry_encode. */
SL_MUST_USE enum sl_err audit_entry_leaf_hash(const struct audit_entry *e,
					      uint8_t out[AUDIT_HASH_SIZE],
					      struct sl_diag *d);

#endif

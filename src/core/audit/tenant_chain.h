/* tenant_chain.h - per-tenant completeness of the audit log (DESIGN.md §7).
 *
 * Inclusion proofs show that the entries a tenant sees are genuine; they do
 * not show that it sees all of them. Two things added to the log do:
 *
 *  1. Every canonical entry (version 2, audit.h) of a chained tenant names the
 *     seq and leaf hash of the same tenant's previous entry ("the link"), so
 *     a tenant's entries form a hash chain through the log.
 *  2. Every checkpoint carries the root of the HEADS TREE: an RFC 6962 tree
 *     over one leaf per chained tenant, sorted by tenant name (bytewise),
 *
 *        head leaf = SHA-256(0x00 || len(tenant) [2 bytes, big-endian] ||
 *                            tenant || seq [8 bytes, big-endian] || leaf hash)
 *
 *     where seq and leaf hash are those of the tenant's newest entry at the
 *     checkpoint's size.
 *
 * A tenant given its entries, the signed checkpoint and an inclusion proof of
 * its head leaf checks, offline: the head is in the signed heads tree; its
 * newest entry covered by the checkpoint is the head; and walking the links
 * back reaches an entry with no link. An entry removed, filed under another
 * tenant, or withheld breaks the walk at its seq (audit_tenant_check).
 *
 * Chained tenants are those the store can index: 1..AUDIT_TENANT_MAX bytes of
 * printable ASCII without spaces (audit_index_label). Entries with another
 * tenant (none, mostly) carry no link and are in no chain.
 *
 * Needs sodium_init(). */
#ifndef SL_TENANT_CHAIN_H
#define SL_TENANT_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit.h"
#include "checkpoint.h"
#include "err.h"
#include "merkle.h"

/* The value the store's index column holds for a tenant or action: s itself
 * when it is 1..256 bytes of printable ASCII without spaces, else "". The
 * verifier checks the stored columns against this. */
const char *audit_index_label(const char *s);
/* Whether entries of this tenant are linked: audit_index_label(t) is t. */
bool audit_tenant_chained(const char *tenant);

/* A tenant's newest entry. */
struct audit_head {
	char tenant[AUDIT_TENANT_MAX + 1];
	uint64_t seq;
	uint8_t hash[AUDIT_HASH_SIZE];
};

/* The heads of every chained tenant. Caller-owned; private fields. */
struct strmap;
struct audit_heads {
	struct strmap *map;      /* tenant -> index into v */
	struct audit_head *v;
	size_t n, cap;
};

SL_MUST_USE enum sl_err audit_heads_init(struct audit_heads *h);
void audit_heads_free(struct audit_heads *h);
/* The head of tenant, or NULL when it has none (or is not chained). */
const struct audit_head *audit_heads_get(const struct audit_heads *h, const char *tenant);
/* Sets tenant's head (tenant must be chained: SL_EINVAL otherwise). */
SL_MUST_USE enum sl_err audit_heads_set(struct audit_heads *h, const char *tenant,
					uint64_t seq, const uint8_t hash[AUDIT_HASH_SIZE]);
/* *dst becomes a copy of *src (dst initialised or not; freed first if it
 * was). */
SL_MUST_USE enum sl_err audit_heads_copy(struct audit_heads *dst, const struct audit_heads *src);

/* Fills e->prev_seq and e->prev_hash from the head of e->tenant (zero when
 * there is none or the tenant is not chained). */
void audit_heads_link(const struct audit_heads *h, struct audit_entry *e);
/* After entry e with leaf hash `leaf` was appended: it becomes its tenant's
 * head (nothing for unchained tenants). */
SL_MUST_USE enum sl_err audit_heads_advance(struct audit_heads *h, const struct audit_entry *e,
					    const uint8_t leaf[AUDIT_HASH_SIZE]);

/* The head leaf hash defined above. */
void audit_head_leaf(const struct audit_head *x, uint8_t out[AUDIT_HASH_SIZE]);
/* Root of the heads tree (the empty root when no tenant has a head). */
SL_MUST_USE enum sl_err audit_heads_root(const struct audit_heads *h, uint8_t out[AUDIT_HASH_SIZE],
					 struct sl_diag *d);
/* Where tenant's head leaf is in the heads tree (*index of *count leaves) and
 * its inclusion proof. SL_ENOTFOUND when the tenant has no head. */
SL_MUST_USE enum sl_err audit_heads_prove(const struct audit_heads *h, const char *tenant,
					  struct audit_head *head, uint64_t *index,
					  uint64_t *count, struct merkle_proof *proof,
					  struct sl_diag *d);

/* ---- a tenant's check of its own entries ----
 *
 * Feed the tenant's entries in ascending seq (audit_tenant_add), then
 * audit_tenant_finish with the checkpoint the export vouches by (NULL: none)
 * and the proof of the tenant's head in it (head NULL: the export has none).
 * Faults use audit_verify.h's kinds: "entry missing" names the seq of the
 * first entry of the tenant that the entries do not contain (the link that
 * points to it, or the checkpoint's head), "entry altered" an entry that is
 * not the tenant's or does not decode, "reordered" seqs not ascending,
 * "checkpoint inconsistent" a head proof that does not hold. */
struct audit_tenant_report {
	int fault;                 /* enum audit_fault */
	uint64_t seq;              /* first bad seq */
	uint64_t entries;          /* entries read */
	uint64_t linked;           /* of which linked to their predecessor (version 2) */
	uint64_t legacy;           /* version 1 entries: before the chain existed */
	uint64_t head_seq;         /* the checkpoint's head of the tenant, 0: none */
	char detail[SL_DIAG_MSG];
};

struct audit_tenant_check {
	char tenant[AUDIT_TENANT_MAX + 1];
	uint64_t first_seq;        /* seq of leaf 0 */
	uint64_t last_seq;         /* newest entry read, 0: none */
	uint8_t last_hash[AUDIT_HASH_SIZE];
	uint64_t covered_seq;      /* newest entry below the checkpoint's size, 0: none */
	uint8_t covered_hash[AUDIT_HASH_SIZE];
	uint64_t cp_size;          /* entries the checkpoint covers (set before adding) */
	struct audit_tenant_report report;
};

/* cp_size: the size of the checkpoint that audit_tenant_finish will get (0
 * when none), so the check knows which entry should be the head. */
void audit_tenant_check_init(struct audit_tenant_check *t, const char *tenant,
			     uint64_t first_seq, uint64_t cp_size);
/* One entry (canonical bytes) the export files under seq. Faults go to the
 * report; once there is one, further entries are ignored. */
void audit_tenant_add(struct audit_tenant_check *t, uint64_t seq, const uint8_t *bytes,
		      size_t len);
/* True once a fault has been found. */
bool audit_tenant_decided(const struct audit_tenant_check *t);
/* Settles the verdict: SL_OK when complete and intact, SL_ECONFLICT with the
 * fault in *out. cp must already be verified (signature) by the caller. */
SL_MUST_USE enum sl_err audit_tenant_finish(struct audit_tenant_check *t,
					    const struct checkpoint *cp,
					    const struct audit_head *head, uint64_t index,
					    uint64_t count, const struct merkle_proof *proof,
					    struct audit_tenant_report *out);

#endif

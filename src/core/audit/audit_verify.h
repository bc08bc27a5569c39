/* audit_verify.h - offline verification of a whole audit log (DESIGN.md §7).
 *
 * The verifier reads the log's records in stored order (ascending seq), one at
 * a time, so the controller can stream a million rows from the store and the
 * CLI can stream an export; it rebuilds the Merkle tree as it goes and checks
 * every checkpoint when the tree reaches the checkpoint's size. It stops at the
 * FIRST fault and reports its sequence number and kind:
 *
 *   entry altered        the entry's bytes do not decode, its stored leaf hash
 *                        does not match its bytes, or it is filed under a seq
 *                        its own bytes do not name;
 *   entry missing        a seq is absent (a gap, or the log ends before the
 *                        size a valid checkpoint vouches for);
 *   reordered            the entry at this position belongs later (its seq
 *                        turns up further on);
 *   checkpoint signature a checkpoint's signature (or key id, or origin) is not
 *                        the log key's;
 *   checkpoint           a validly signed checkpoint's root differs from the
 *   inconsistent         root of the entries it covers, or its heads root
 *                        (tenant_chain.h) from the tenants' newest entries;
 *   index altered        a stored column that is not hashed (time, tenant,
 *                        action) differs from what the entry's bytes say;
 *   subtree altered      a row of the subtree cache differs from the hash of
 *                        the leaves it stands for, or stands for none.
 *
 * A version 2 entry must link (audit.h) to its tenant's previous entry as
 * the log holds it; a wrong link is "entry altered" at that entry.
 *
 * Where the fault is located:
 *  - entry faults: the seq expected at that position (first_seq + position).
 *  - checkpoint faults: the first seq the checkpoint covers that no earlier
 *    verified checkpoint vouched for (first_seq + that checkpoint's size).
 *    When an entry was altered together with its stored leaf hash, only the
 *    checkpoints can tell, and they narrow it down to that interval.
 * Faults are reported in the order a scan meets them: an entry's as it is read,
 * a checkpoint's once every entry it covers has been read.
 *
 * A verifier cannot see entries deleted from the end together with every
 * checkpoint covering them: pass the newest checkpoint you trust (for example
 * one kept from an earlier verification) along with the stored ones.
 *
 * Needs sodium_init() to have been called. */
#ifndef SL_AUDIT_VERIFY_H
#define SL_AUDIT_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit.h"
#include "checkpoint.h"
#include "err.h"
#include "merkle.h"
#include "tenant_chain.h"

enum audit_fault {
	AUDIT_FAULT_NONE = 0,
	AUDIT_FAULT_ENTRY_ALTERED,
	AUDIT_FAULT_ENTRY_MISSING,
	AUDIT_FAULT_REORDERED,
	AUDIT_FAULT_CHECKPOINT_SIGNATURE,
	AUDIT_FAULT_CHECKPOINT_INCONSISTENT,
	AUDIT_FAULT_INDEX_ALTERED,
	AUDIT_FAULT_SUBTREE_ALTERED,
};

/* "ok", "entry altered", "entry missing", "reordered",
 * "checkpoint signature invalid", "checkpoint inconsistent", "index altered",
 * "subtree altered"; never NULL. */
const char *audit_fault_name(enum audit_fault f);

/* One stored record, borrowed for the duration of the call that takes it. At
 * least one of bytes and leaf_hash must be given; with both, they are checked
 * against each other. */
struct audit_record {
	uint64_t seq;              /* the seq the store files it under */
	const uint8_t *bytes;      /* canonical entry bytes, or NULL */
	size_t len;
	const uint8_t *leaf_hash;  /* stored leaf hash (32 bytes), or NULL */
	/* The store's index columns, checked against the bytes when has_index. */
	bool has_index;
	int64_t time_ns;
	const char *tenant, *action;
};

/* One stored row of the subtree cache (merkle.h): the hash of 2^level leaves
 * from leaf index * 2^level. hash_len other than 32 never matches. */
struct audit_subtree {
	unsigned level;
	uint64_t index;
	const uint8_t *hash;
	size_t hash_len;
};

struct audit_verify_config {
	const uint8_t *pubkey;     /* the log's Ed25519 public key, 32 bytes */
	const char *origin;        /* the log's origin; NULL accepts any */
	uint64_t first_seq;        /* the seq of leaf 0 */
	/* Checkpoints in any order (borrowed during init only; copied). */
	const struct checkpoint *checkpoints;
	size_t n_checkpoints;
	/* The subtree cache to check (borrowed during init only; copied), and
	 * the levels the writer keeps: multiples of subtree_step (0: none). */
	const struct audit_subtree *subtrees;
	size_t n_subtrees;
	unsigned subtree_step;
};

struct audit_verify_report {
	enum audit_fault fault;
	uint64_t seq;               /* first bad seq, when fault != NONE */
	size_t checkpoint;          /* input index of the faulty checkpoint, or SIZE_MAX */
	uint64_t entries;           /* records read before the verdict */
	size_t checkpoints_verified;
	uint64_t size;              /* tree size and root over the entries read */
	uint8_t root[MERKLE_HASH_SIZE];
	char detail[SL_DIAG_MSG];   /* what was wrong, for people */
};

/* Subtree copy (internal). */
struct audit_verify_st {
	unsigned level;
	uint64_t index;
	uint8_t hash[MERKLE_HASH_SIZE];
	bool bad_len, seen;
};

/* Checkpoint copy with its input index (internal). */
struct audit_verify_cp {
	struct checkpoint cp;
	size_t index;
};

/* Verifier state. Caller-owned; fields are private to audit_verify.c. */
struct audit_verifier {
	uint8_t pubkey[CHECKPOINT_PUBKEY_SIZE];
	char origin[CHECKPOINT_ORIGIN_MAX + 1]; /* "" = any */
	uint64_t first_seq;
	struct audit_verify_cp *cps; /* sorted by size, then input index */
	size_t n_cps, next_cp, verified;
	uint64_t pos, good_size;
	struct merkle_frontier tree;
	struct audit_heads heads;    /* each tenant's newest entry so far */
	bool blind;                  /* a record without bytes: no link or heads checks */
	struct audit_verify_st *sts; /* sorted by (level, index) */
	size_t n_sts;
	unsigned st_step;
	bool pending;                /* a seq was out of place; its fate waits */
	bool pending_filed_right;    /* ... but the record there was filed under it */
	uint64_t pending_seq, pending_found;
	struct audit_verify_report report;
};

/* Prepares *v. SL_EINVAL when pubkey is NULL or origin invalid; SL_ENOMEM.
 * On success *v must be released with audit_verifier_release. */
SL_MUST_USE enum sl_err audit_verifier_init(struct audit_verifier *v,
					    const struct audit_verify_config *cfg,
					    struct sl_diag *d);

/* Feeds the next record in stored order. SL_EINVAL when it has neither bytes
 * nor hash. Faults are not errors: they end up in the report; once the
 * verdict is in (audit_verifier_decided), further records are ignored. */
SL_MUST_USE enum sl_err audit_verifier_add(struct audit_verifier *v,
					   const struct audit_record *r,
					   struct sl_diag *d);

/* True once a fault has been found, so the caller may stop reading. */
bool audit_verifier_decided(const struct audit_verifier *v);

/* Settles the verdict after the last record and copies it to *out. SL_OK for
 * an intact log, SL_ECONFLICT when out->fault says what is wrong. */
SL_MUST_USE enum sl_err audit_verifier_finish(struct audit_verifier *v,
					      struct audit_verify_report *out);

void audit_verifier_release(struct audit_verifier *v);

/* The whole of the above over an array of records. Returns as
 * audit_verifier_finish, or an init/add error. */
SL_MUST_USE enum sl_err audit_verify_log(const struct audit_verify_config *cfg,
					 const struct audit_record *records,
					 size_t n, struct audit_verify_report *out,
					 struct sl_diag *d);

/* Verifies one entry on its own, as a tenant checks their entries: the
 * checkpoint is signed by pubkey (and names origin when origin is not NULL),
 * bytes decode into *out, and the proof shows its leaf at index
 * seq - first_seq in the checkpoint's tree. SL_OK when all hold; SL_EPARSE for
 * undecodable bytes; SL_ECONFLICT otherwise, with the reason in d. */
SL_MUST_USE enum sl_err audit_verify_entry(const uint8_t *bytes, size_t len,
					   uint64_t first_seq,
					   const struct merkle_proof *proof,
					   const struct checkpoint *cp,
					   const uint8_t pubkey[CHECKPOINT_PUBKEY_SIZE],
					   const char *origin,
					   struct audit_entry *out,
					   struct sl_diag *d);

#endif

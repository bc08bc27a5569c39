/* merkle.h - RFC 6962 Merkle tree hash, proofs and their verifiers.
 *
 * Hashes (SHA-256, RFC 6962 §2.1):
 *   leaf  = SHA-256(0x00 || data)
 *   node  = SHA-256(0x01 || left || right)
 *   MTH({}) = SHA-256("")
 *   MTH(D[n]) = node(MTH(D[0:k]), MTH(D[k:n])), k the largest power of two < n.
 *
 * Core never holds the log: proofs and roots read leaf hashes through a
 * caller-supplied struct merkle_source (the controller fetches them from the
 * store), optionally helped by a cache of perfect-subtree hashes. Appending is
 * O(log n) with struct merkle_frontier.
 *
 * Hashing needs libsodium initialised: the program calls sodium_init() once
 * before using any function here. */
#ifndef SL_MERKLE_H
#define SL_MERKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define MERKLE_HASH_SIZE 32
/* Levels of a tree of up to 2^64 - 1 leaves. */
#define MERKLE_MAX_LEVELS 64
/* Longest proof: an inclusion proof has at most 64 hashes, a consistency
 * proof at most 64 plus the one for the terminal subtree. */
#define MERKLE_PROOF_MAX 65

/* A proof: hash[0..len) in RFC 6962 order (the hash nearest the leaves
 * first). */
struct merkle_proof {
	size_t len;
	uint8_t hash[MERKLE_PROOF_MAX][MERKLE_HASH_SIZE];
};

/* Where proofs and roots get their hashes.
 *
 * leaf(ctx, index, out) writes the leaf hash at index (0-based) and returns
 * SL_OK, or an error that is passed back unchanged to the caller.
 *
 * subtree, when not NULL, may answer the hash of the perfect subtree of
 * 2^level leaves starting at leaf index * 2^level (level >= 1), from a cache
 * the caller keeps; it returns SL_OK, SL_ENOTFOUND to have it computed from
 * leaves, or another error that is passed back. */
struct merkle_source {
	enum sl_err (*leaf)(void *ctx, uint64_t index,
			    uint8_t out[MERKLE_HASH_SIZE]);
	enum sl_err (*subtree)(void *ctx, unsigned level, uint64_t index,
			       uint8_t out[MERKLE_HASH_SIZE]);
	void *ctx;
};

/* A merkle_source over a caller-owned array of n leaf hashes (borrowed; it
 * must outlive the source). Reads past n answer SL_ENOTFOUND. */
struct merkle_array {
	const uint8_t (*leaves)[MERKLE_HASH_SIZE];
	uint64_t n;
};
struct merkle_source merkle_array_source(struct merkle_array *a);

/* SHA-256(0x00 || data). data may be NULL when len is 0. */
void merkle_leaf_hash(const uint8_t *data, size_t len,
		      uint8_t out[MERKLE_HASH_SIZE]);
/* SHA-256(0x01 || left || right). out may alias left or right. */
void merkle_node_hash(const uint8_t left[MERKLE_HASH_SIZE],
		      const uint8_t right[MERKLE_HASH_SIZE],
		      uint8_t out[MERKLE_HASH_SIZE]);
/* SHA-256 of the empty string, the root of the empty tree. */
void merkle_empty_root(uint8_t out[MERKLE_HASH_SIZE]);

/* MTH of leaves [begin, end) of src (the empty root when begin == end).
 * O(end - begin) leaf reads without a cache. SL_EINVAL when begin > end;
 * source errors are passed back. */
SL_MUST_USE enum sl_err merkle_range_root(const struct merkle_source *src,
					  uint64_t begin, uint64_t end,
					  uint8_t out[MERKLE_HASH_SIZE]);

/* Inclusion proof PATH(index, D[size]) (RFC 6962 §2.1.1). SL_EINVAL when
 * index >= size; source errors are passed back. */
SL_MUST_USE enum sl_err merkle_inclusion_proof(const struct merkle_source *src,
					       uint64_t index, uint64_t size,
					       struct merkle_proof *out,
					       struct sl_diag *d);

/* Consistency proof PROOF(m, D[n]) (RFC 6962 §2.1.2) for 0 <= m <= n. For
 * m == 0 or m == n the proof is empty. SL_EINVAL when m > n. */
SL_MUST_USE enum sl_err merkle_consistency_proof(const struct merkle_source *src,
						 uint64_t m, uint64_t n,
						 struct merkle_proof *out,
						 struct sl_diag *d);

/* Verifies that `leaf` is at `index` in the tree of `size` leaves whose root
 * is `root` (RFC 9162 §2.1.3.2). SL_OK when it is; SL_EINVAL when index >=
 * size; SL_ECONFLICT when the proof does not prove it (wrong length, wrong
 * hashes, wrong root), with the reason in d. */
SL_MUST_USE enum sl_err merkle_inclusion_verify(
	const uint8_t leaf[MERKLE_HASH_SIZE], uint64_t index, uint64_t size,
	const struct merkle_proof *proof, const uint8_t root[MERKLE_HASH_SIZE],
	struct sl_diag *d);

/* Verifies that the tree of m leaves with root old_root is a prefix of the
 * tree of n leaves with root new_root (RFC 9162 §2.1.4.2). m == n needs an
 * empty proof and equal roots; m == 0 needs an empty proof and old_root the
 * empty root. SL_OK when proven; SL_EINVAL when m > n; SL_ECONFLICT when not
 * proven, with the reason in d. */
SL_MUST_USE enum sl_err merkle_consistency_verify(
	uint64_t m, uint64_t n, const uint8_t old_root[MERKLE_HASH_SIZE],
	const uint8_t new_root[MERKLE_HASH_SIZE],
	const struct merkle_proof *proof, struct sl_diag *d);

/* The right edge of a tree: for each set bit i of size, the hash of the
 * perfect subtree of 2^i leaves that ends the tree at that height. Enough to
 * append and to compute the root, in O(log n) each. Caller-owned, no heap. */
struct merkle_frontier {
	uint64_t size;
	uint8_t hash[MERKLE_MAX_LEVELS][MERKLE_HASH_SIZE];
};

/* An empty tree. */
void merkle_frontier_init(struct merkle_frontier *f);

/* Appends one leaf hash. SL_ELIMIT when the tree already has 2^64 - 1
 * leaves. */
SL_MUST_USE enum sl_err merkle_frontier_append(struct merkle_frontier *f,
					       const uint8_t leaf[MERKLE_HASH_SIZE]);

/* Receives each perfect subtree an append completes: 2^level leaves starting
 * at leaf index * 2^level, level >= 1. A controller stores some levels (say
 * every 4th) and answers merkle_source.subtree from them, which makes proofs
 * at a million entries cost a few hundred reads instead of a million. An
 * error aborts the append. */
typedef enum sl_err (*merkle_subtree_sink)(void *ctx, unsigned level,
					   uint64_t index,
					   const uint8_t hash[MERKLE_HASH_SIZE]);

/* merkle_frontier_append that also reports completed subtrees to sink (which
 * may be NULL). If sink fails, its error is returned and *f is unchanged. */
SL_MUST_USE enum sl_err merkle_frontier_append_sink(
	struct merkle_frontier *f, const uint8_t leaf[MERKLE_HASH_SIZE],
	merkle_subtree_sink sink, void *ctx);

/* MTH of the leaves appended so far (the empty root for none). */
void merkle_frontier_root(const struct merkle_frontier *f,
			  uint8_t out[MERKLE_HASH_SIZE]);

/* Rebuilds *f for the first `size` leaves of src (e.g. at controller start):
 * reads each perfect subtree once through the source, so with a subtree cache
 * it costs O(log n) reads. Source errors are passed back; *f is then empty. */
SL_MUST_USE enum sl_err merkle_frontier_load(struct merkle_frontier *f,
					     const struct merkle_source *src,
					     uint64_t size);

#endif

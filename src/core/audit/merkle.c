/* merkle.c - RFC 6962 tree hash, proofs and verifiers.
 *
 * Proof generation walks the RFC's recursion top-down without recursing,
 * recording the sibling subtrees it needs, then hashes them through the
 * caller's source: core holds O(log n) hashes, never the log. Every subtree the
 * recursion names is either perfect and aligned (so a cache of perfect
 * subtrees can answer it) or splits into such pieces, which is what
 * merkle_range_root exploits. The verifiers are the bit-walking algorithms of
 * RFC 9162 §2.1.3.2 and §2.1.4.2, which need no recursion and check the proof
 * length implicitly (a proof that is too short leaves sn != 0, one that is too
 * long reaches sn == 0 early). */
#include "merkle.h"

#include <sodium.h>
#include <string.h>

void merkle_leaf_hash(const uint8_t *data, size_t len,
		      uint8_t out[MERKLE_HASH_SIZE])
{
	static const uint8_t prefix = 0x00;
	crypto_hash_sha256_state st;
	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, &prefix, 1);
	if (len)
		crypto_hash_sha256_update(&st, data, len);
	crypto_hash_sha256_final(&st, out);
}

void merkle_node_hash(const uint8_t left[MERKLE_HASH_SIZE],
		      const uint8_t right[MERKLE_HASH_SIZE],
		      uint8_t out[MERKLE_HASH_SIZE])
{
	uint8_t buf[1 + 2 * MERKLE_HASH_SIZE];
	buf[0] = 0x01;
	memcpy(buf + 1, left, MERKLE_HASH_SIZE);
	memcpy(buf + 1 + MERKLE_HASH_SIZE, right, MERKLE_HASH_SIZE);
	crypto_hash_sha256(out, buf, sizeof(buf));
}

void merkle_empty_root(uint8_t out[MERKLE_HASH_SIZE])
{
	crypto_hash_sha256(out, NULL, 0);
}

static enum sl_err merkle_array_leaf(void *ctx, uint64_t index,
				     uint8_t out[MERKLE_HASH_SIZE])
{
	const struct merkle_array *a = ctx;
	if (index >= a->n)
		return SL_ENOTFOUND;
	memcpy(out, a->leaves[index], MERKLE_HASH_SIZE);
	return SL_OK;
}

struct merkle_source merkle_array_source(struct merkle_array *a)
{
	struct merkle_source s = {merkle_array_leaf, NULL, a};
	return s;
}

/* Largest power of two strictly less than n; n >= 2. */
static uint64_t merkle_split(uint64_t n)
{
	return (uint64_t)1 << (63 - __builtin_clzll(n - 1));
}

static bool merkle_is_pow2(uint64_t n)
{
	return n && !(n & (n - 1));
}

/* Hash of the perfect subtree of 2^level leaves starting at index << level. */
static enum sl_err merkle_perfect(const struct merkle_source *src,
				  unsigned level, uint64_t index,
				  uint8_t out[MERKLE_HASH_SIZE])
{
	if (level == 0)
		return src->leaf(src->ctx, index, out);
	if (src->subtree) {
		enum sl_err err = src->subtree(src->ctx, level, index, out);
		if (err != SL_ENOTFOUND)
			return err;
	}
	uint8_t l[MERKLE_HASH_SIZE], r[MERKLE_HASH_SIZE];
	enum sl_err err = merkle_perfect(src, level - 1, index << 1, l);
	if (err == SL_OK)
		err = merkle_perfect(src, level - 1, (index << 1) | 1, r);
	if (err != SL_OK)
		return err;
	merkle_node_hash(l, r, out);
	return SL_OK;
}

/* MTH of leaves [begin, end), end > begin. Aligned perfect ranges go to
 * merkle_perfect (and so to the cache); others split as the RFC does. */
static enum sl_err merkle_range(const struct merkle_source *src, uint64_t begin,
				uint64_t end, uint8_t out[MERKLE_HASH_SIZE])
{
	uint64_t n = end - begin;
	if (merkle_is_pow2(n) && begin % n == 0)
		return merkle_perfect(src, (unsigned)__builtin_ctzll(n),
				      begin / n, out);
	uint64_t k = merkle_split(n);
	uint8_t l[MERKLE_HASH_SIZE], r[MERKLE_HASH_SIZE];
	enum sl_err err = merkle_range(src, begin, begin + k, l);
	if (err == SL_OK)
		err = merkle_range(src, begin + k, end, r);
	if (err != SL_OK)
		return err;
	merkle_node_hash(l, r, out);
	return SL_OK;
}

enum sl_err merkle_range_root(const struct merkle_source *src, uint64_t begin,
			      uint64_t end, uint8_t out[MERKLE_HASH_SIZE])
{
	if (begin > end)
		return SL_EINVAL;
	if (begin == end) {
		merkle_empty_root(out);
		return SL_OK;
	}
	return merkle_range(src, begin, end, out);
}

/* Subtree ranges a proof needs, recorded top-down. */
struct merkle_ranges {
	size_t n;
	uint64_t begin[MERKLE_PROOF_MAX], end[MERKLE_PROOF_MAX];
};

static void merkle_ranges_push(struct merkle_ranges *r, uint64_t begin,
			       uint64_t end)
{
	r->begin[r->n] = begin;
	r->end[r->n] = end;
	r->n++;
}

/* Hashes the recorded ranges into out, bottom-up (the RFC's order). */
static enum sl_err merkle_ranges_hash(const struct merkle_source *src,
				      const struct merkle_ranges *r,
				      struct merkle_proof *out)
{
	out->len = 0;
	for (size_t i = r->n; i-- > 0;) {
		enum sl_err err = merkle_range(src, r->begin[i], r->end[i],
					       out->hash[out->len]);
		if (err != SL_OK) {
			out->len = 0;
			return err;
		}
		out->len++;
	}
	return SL_OK;
}

enum sl_err merkle_inclusion_proof(const struct merkle_source *src,
				   uint64_t index, uint64_t size,
				   struct merkle_proof *out, struct sl_diag *d)
{
	out->len = 0;
	if (index >= size)
		return sl_diag_set(d, SL_EINVAL,
				   "leaf %llu is not in a tree of %llu leaves",
				   (unsigned long long)index,
				   (unsigned long long)size);
	struct merkle_ranges r = {0};
	uint64_t lo = 0, hi = size;
	while (hi - lo > 1) {
		uint64_t k = merkle_split(hi - lo);
		if (index < lo + k) {
			merkle_ranges_push(&r, lo + k, hi);
			hi = lo + k;
		} else {
			merkle_ranges_push(&r, lo, lo + k);
			lo += k;
		}
	}
	return merkle_ranges_hash(src, &r, out);
}

enum sl_err merkle_consistency_proof(const struct merkle_source *src,
				     uint64_t m, uint64_t n,
				     struct merkle_proof *out, struct sl_diag *d)
{
	out->len = 0;
	if (m > n)
		return sl_diag_set(d, SL_EINVAL,
				   "a tree of %llu leaves cannot extend one of %llu",
				   (unsigned long long)n, (unsigned long long)m);
	if (m == 0 || m == n)
		return SL_OK;
	struct merkle_ranges r = {0};
	uint64_t lo = 0, hi = n, mm = m;
	bool whole = true; /* the RFC's b: still on the old tree's own path */
	for (;;) {
		if (mm == hi - lo) {
			if (!whole)
				merkle_ranges_push(&r, lo, hi);
			break;
		}
		uint64_t k = merkle_split(hi - lo);
		if (mm <= k) {
			merkle_ranges_push(&r, lo + k, hi);
			hi = lo + k;
		} else {
			merkle_ranges_push(&r, lo, lo + k);
			lo += k;
			mm -= k;
			whole = false;
		}
	}
	return merkle_ranges_hash(src, &r, out);
}

static void merkle_shift(uint64_t *fn, uint64_t *sn)
{
	*fn >>= 1;
	*sn >>= 1;
}

/* After a left-sibling step on a right edge, skip the levels where the node
 * had no right sibling (RFC 9162: "until either LSB(fn) is set or fn is 0"). */
static void merkle_skip_edge(uint64_t *fn, uint64_t *sn)
{
	while (!(*fn & 1) && *fn != 0)
		merkle_shift(fn, sn);
}

enum sl_err merkle_inclusion_verify(const uint8_t leaf[MERKLE_HASH_SIZE],
				    uint64_t index, uint64_t size,
				    const struct merkle_proof *proof,
				    const uint8_t root[MERKLE_HASH_SIZE],
				    struct sl_diag *d)
{
	if (index >= size)
		return sl_diag_set(d, SL_EINVAL,
				   "leaf %llu is not in a tree of %llu leaves",
				   (unsigned long long)index,
				   (unsigned long long)size);
	if (proof->len > MERKLE_PROOF_MAX)
		return sl_diag_set(d, SL_ECONFLICT, "inclusion proof too long");
	uint64_t fn = index, sn = size - 1;
	uint8_t r[MERKLE_HASH_SIZE];
	memcpy(r, leaf, MERKLE_HASH_SIZE);
	for (size_t i = 0; i < proof->len; i++) {
		if (sn == 0)
			return sl_diag_set(d, SL_ECONFLICT,
					   "inclusion proof has %zu hashes; fewer expected",
					   proof->len);
		if ((fn & 1) || fn == sn) {
			merkle_node_hash(proof->hash[i], r, r);
			merkle_skip_edge(&fn, &sn);
		} else {
			merkle_node_hash(r, proof->hash[i], r);
		}
		merkle_shift(&fn, &sn);
	}
	if (sn != 0)
		return sl_diag_set(d, SL_ECONFLICT,
				   "inclusion proof has %zu hashes; more expected",
				   proof->len);
	if (memcmp(r, root, MERKLE_HASH_SIZE) != 0)
		return sl_diag_set(d, SL_ECONFLICT,
				   "inclusion proof leads to a different root");
	return SL_OK;
}

enum sl_err merkle_consistency_verify(uint64_t m, uint64_t n,
				      const uint8_t old_root[MERKLE_HASH_SIZE],
				      const uint8_t new_root[MERKLE_HASH_SIZE],
				      const struct merkle_proof *proof,
				      struct sl_diag *d)
{
	if (m > n)
		return sl_diag_set(d, SL_EINVAL,
				   "a tree of %llu leaves cannot extend one of %llu",
				   (unsigned long long)n, (unsigned long long)m);
	if (proof->len > MERKLE_PROOF_MAX)
		return sl_diag_set(d, SL_ECONFLICT, "consistency proof too long");
	if (m == n || m == 0) {
		uint8_t empty[MERKLE_HASH_SIZE];
		merkle_empty_root(empty);
		if (proof->len != 0)
			return sl_diag_set(d, SL_ECONFLICT,
					   "consistency proof from %llu to %llu must be empty",
					   (unsigned long long)m,
					   (unsigned long long)n);
		if (memcmp(old_root, m ? new_root : empty, MERKLE_HASH_SIZE))
			return sl_diag_set(d, SL_ECONFLICT,
					   m ? "equal tree sizes with different roots"
					     : "the old root is not the empty tree's");
		return SL_OK;
	}
	if (proof->len == 0)
		return sl_diag_set(d, SL_ECONFLICT, "consistency proof is empty");
	/* RFC 9162: when m is a power of two the old root is the proof's
	 * implicit first element. */
	size_t i = 0;
	uint8_t fr[MERKLE_HASH_SIZE], sr[MERKLE_HASH_SIZE];
	if (merkle_is_pow2(m)) {
		memcpy(fr, old_root, MERKLE_HASH_SIZE);
	} else {
		memcpy(fr, proof->hash[0], MERKLE_HASH_SIZE);
		i = 1;
	}
	memcpy(sr, fr, MERKLE_HASH_SIZE);
	uint64_t fn = m - 1, sn = n - 1;
	while (fn & 1)
		merkle_shift(&fn, &sn);
	for (; i < proof->len; i++) {
		const uint8_t *c = proof->hash[i];
		if (sn == 0)
			return sl_diag_set(d, SL_ECONFLICT,
					   "consistency proof has %zu hashes; fewer expected",
					   proof->len);
		if ((fn & 1) || fn == sn) {
			merkle_node_hash(c, fr, fr);
			merkle_node_hash(c, sr, sr);
			merkle_skip_edge(&fn, &sn);
		} else {
			merkle_node_hash(sr, c, sr);
		}
		merkle_shift(&fn, &sn);
	}
	if (sn != 0)
		return sl_diag_set(d, SL_ECONFLICT,
				   "consistency proof has %zu hashes; more expected",
				   proof->len);
	if (memcmp(fr, old_root, MERKLE_HASH_SIZE) != 0)
		return sl_diag_set(d, SL_ECONFLICT,
				   "consistency proof does not lead to the old root");
	if (memcmp(sr, new_root, MERKLE_HASH_SIZE) != 0)
		return sl_diag_set(d, SL_ECONFLICT,
				   "consistency proof does not lead to the new root");
	return SL_OK;
}

void merkle_frontier_init(struct merkle_frontier *f)
{
	memset(f, 0, sizeof(*f));
}

enum sl_err merkle_frontier_append_sink(struct merkle_frontier *f,
					const uint8_t leaf[MERKLE_HASH_SIZE],
					merkle_subtree_sink sink, void *ctx)
{
	if (f->size == UINT64_MAX)
		return SL_ELIMIT;
	/* Binary increment: each carry merges two equal perfect subtrees. The
	 * merged hashes are kept until the sink has taken them all, so a
	 * failing sink leaves the frontier as it was. */
	uint8_t h[MERKLE_MAX_LEVELS][MERKLE_HASH_SIZE];
	uint64_t size = f->size + 1;
	unsigned level = 0;
	memcpy(h[0], leaf, MERKLE_HASH_SIZE);
	while ((f->size >> level) & 1) {
		merkle_node_hash(f->hash[level], h[level], h[level + 1]);
		level++;
	}
	for (unsigned l = 1; sink && l <= level; l++) {
		enum sl_err err = sink(ctx, l, (size >> l) - 1, h[l]);
		if (err != SL_OK)
			return err;
	}
	memcpy(f->hash[level], h[level], MERKLE_HASH_SIZE);
	f->size = size;
	return SL_OK;
}

enum sl_err merkle_frontier_append(struct merkle_frontier *f,
				   const uint8_t leaf[MERKLE_HASH_SIZE])
{
	return merkle_frontier_append_sink(f, leaf, NULL, NULL);
}

void merkle_frontier_root(const struct merkle_frontier *f,
			  uint8_t out[MERKLE_HASH_SIZE])
{
	if (f->size == 0) {
		merkle_empty_root(out);
		return;
	}
	/* MTH splits off the largest perfect subtree on the left first, so the
	 * root folds the right edge from the smallest subtree upwards. */
	unsigned level = (unsigned)__builtin_ctzll(f->size);
	memcpy(out, f->hash[level], MERKLE_HASH_SIZE);
	for (level++; level < MERKLE_MAX_LEVELS; level++)
		if ((f->size >> level) & 1)
			merkle_node_hash(f->hash[level], out, out);
}

enum sl_err merkle_frontier_load(struct merkle_frontier *f,
				 const struct merkle_source *src, uint64_t size)
{
	merkle_frontier_init(f);
	uint64_t pos = 0;
	for (unsigned level = MERKLE_MAX_LEVELS; level-- > 0;) {
		if (!((size >> level) & 1))
			continue;
		enum sl_err err = merkle_perfect(src, level, pos >> level,
						 f->hash[level]);
		if (err != SL_OK) {
			merkle_frontier_init(f);
			return err;
		}
		pos += (uint64_t)1 << level;
	}
	f->size = size;
	return SL_OK;
}

/* test_merkle.c - RFC 6962 tree hash, proofs, verifiers and the frontier.
 *
 * Known answers pin the hashing to the standard; the exhaustive loops (every
 * size up to 300, every index, every m <= n) check that generation and
 * verification agree and that the verifiers reject every kind of wrong input,
 * because a verifier that says yes to everything passes any round trip. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "merkle.h"

#define H MERKLE_HASH_SIZE
#define NMAX 300

static void unhex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		assert_int_equal(sscanf(s + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

/* Reference MTH, straight from RFC 6962 §2.1, recursive and uncached. */
static void ref_mth(const uint8_t (*leaves)[H], uint64_t n, uint8_t out[H])
{
	if (n == 0) {
		merkle_empty_root(out);
		return;
	}
	if (n == 1) {
		memcpy(out, leaves[0], H);
		return;
	}
	uint64_t k = 1;
	while (k * 2 < n)
		k *= 2;
	uint8_t l[H], r[H];
	ref_mth(leaves, k, l);
	ref_mth(leaves + k, n - k, r);
	merkle_node_hash(l, r, out);
}

/* A source with every perfect subtree of the first NMAX leaves cached, so
 * the exhaustive loops stay fast; counts leaf reads to show the cache works. */
struct cached {
	uint8_t leaves[NMAX][H];
	uint8_t level[10][NMAX][H]; /* level[l][i]: subtree of 2^l at i<<l */
	uint64_t count[10];
	uint64_t leaf_reads;
};

static enum sl_err cached_leaf(void *ctx, uint64_t index, uint8_t out[H])
{
	struct cached *c = ctx;
	if (index >= NMAX)
		return SL_ENOTFOUND;
	c->leaf_reads++;
	memcpy(out, c->leaves[index], H);
	return SL_OK;
}

static enum sl_err cached_subtree(void *ctx, unsigned level, uint64_t index,
				  uint8_t out[H])
{
	struct cached *c = ctx;
	if (level >= 10 || index >= c->count[level])
		return SL_ENOTFOUND;
	memcpy(out, c->level[level][index], H);
	return SL_OK;
}

static struct cached *cached_new(void)
{
	struct cached *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	for (uint32_t i = 0; i < NMAX; i++) {
		uint8_t data[8];
		for (int b = 0; b < 8; b++)
			data[b] = (uint8_t)((i * 2654435761u) >> (b * 3));
		merkle_leaf_hash(data, sizeof(data), c->leaves[i]);
		memcpy(c->level[0][i], c->leaves[i], H);
	}
	c->count[0] = NMAX;
	for (unsigned l = 1; l < 10; l++) {
		c->count[l] = c->count[l - 1] / 2;
		for (uint64_t i = 0; i < c->count[l]; i++)
			merkle_node_hash(c->level[l - 1][2 * i],
					 c->level[l - 1][2 * i + 1],
					 c->level[l][i]);
	}
	return c;
}

static struct merkle_source cached_source(struct cached *c)
{
	struct merkle_source s = {cached_leaf, cached_subtree, c};
	return s;
}

/* Certificate Transparency test vectors for an 8-leaf tree, as published in
 * github.com/transparency-dev/merkle (testonly/constants.go, which took them
 * from google/certificate-transparency's merkle_tree_test.cc). */
static const char *const kat_leaves[8] = {
	"", "00", "10", "2021", "3031", "40414243", "5051525354555657",
	"606162636465666768696a6b6c6d6e6f",
};
static const char *const kat_roots[9] = {
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
	"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
	"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
	"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
	"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
	"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
	"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
	"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
};

struct kat_proof {
	uint64_t a, b; /* inclusion: index, size; consistency: m, n */
	size_t len;
	const char *hash[3];
};

static const struct kat_proof kat_inclusion[] = {
	{0, 8, 3, {"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
		   "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
		   "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"}},
	{5, 8, 3, {"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
		   "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
		   "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}},
};

static const struct kat_proof kat_consistency[] = {
	{2, 8, 2, {"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
		   "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"}},
	{6, 8, 3, {"0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
		   "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
		   "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}},
	{2, 5, 2, {"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
		   "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"}},
};

static void kat_tree(uint8_t leaves[8][H], uint8_t roots[9][H])
{
	for (int i = 0; i < 8; i++) {
		uint8_t data[16];
		size_t n = strlen(kat_leaves[i]) / 2;
		unhex(kat_leaves[i], data, n);
		merkle_leaf_hash(data, n, leaves[i]);
	}
	for (int i = 0; i < 9; i++)
		unhex(kat_roots[i], roots[i], H);
}

static void test_known_answers(void **state)
{
	(void)state;
	uint8_t leaves[8][H], roots[9][H], got[H];
	kat_tree(leaves, roots);
	struct merkle_array arr = {(const uint8_t(*)[H])leaves, 8};
	struct merkle_source src = merkle_array_source(&arr);
	struct merkle_frontier f;
	merkle_frontier_init(&f);
	for (uint64_t n = 0; n <= 8; n++) {
		assert_int_equal(merkle_range_root(&src, 0, n, got), SL_OK);
		assert_memory_equal(got, roots[n], H);
		merkle_frontier_root(&f, got);
		assert_memory_equal(got, roots[n], H);
		if (n < 8)
			assert_int_equal(merkle_frontier_append(&f, leaves[n]), SL_OK);
	}
	for (size_t t = 0; t < 2; t++) {
		const struct kat_proof *k = &kat_inclusion[t];
		struct merkle_proof p, want = {.len = k->len};
		for (size_t i = 0; i < k->len; i++)
			unhex(k->hash[i], want.hash[i], H);
		assert_int_equal(merkle_inclusion_proof(&src, k->a, k->b, &p, NULL), SL_OK);
		assert_int_equal(p.len, want.len);
		assert_memory_equal(p.hash, want.hash, want.len * H);
		assert_int_equal(merkle_inclusion_verify(leaves[k->a], k->a, k->b, &want,
							 roots[k->b], NULL), SL_OK);
	}
	for (size_t t = 0; t < 3; t++) {
		const struct kat_proof *k = &kat_consistency[t];
		struct merkle_proof p, want = {.len = k->len};
		for (size_t i = 0; i < k->len; i++)
			unhex(k->hash[i], want.hash[i], H);
		assert_int_equal(merkle_consistency_proof(&src, k->a, k->b, &p, NULL), SL_OK);
		assert_int_equal(p.len, want.len);
		assert_memory_equal(p.hash, want.hash, want.len * H);
		assert_int_equal(merkle_consistency_verify(k->a, k->b, roots[k->a],
							   roots[k->b], &want, NULL), SL_OK);
	}
}

static void test_hash_prefixes(void **state)
{
	(void)state;
	uint8_t got[H], want[H], buf[1 + 2 * H] = {0x01};
	/* The leaf hash of nothing is SHA-256 of the single byte 0x00. */
	merkle_leaf_hash(NULL, 0, got);
	crypto_hash_sha256(want, buf + 1, 1);
	assert_memory_equal(got, want, H);
	uint8_t l[H], r[H];
	memset(l, 0xaa, H);
	memset(r, 0xbb, H);
	memcpy(buf + 1, l, H);
	memcpy(buf + 1 + H, r, H);
	crypto_hash_sha256(want, buf, sizeof(buf));
	merkle_node_hash(l, r, got);
	assert_memory_equal(got, want, H);
	merkle_node_hash(r, l, got);
	assert_memory_not_equal(got, want, H);
}

/* Roots of every prefix of the cached leaves. */
static void prefix_roots(const struct cached *c, uint8_t roots[NMAX + 1][H])
{
	struct merkle_frontier f;
	merkle_frontier_init(&f);
	for (uint64_t n = 0; n <= NMAX; n++) {
		merkle_frontier_root(&f, roots[n]);
		if (n < NMAX)
			assert_int_equal(merkle_frontier_append(&f, c->leaves[n]), SL_OK);
	}
}

static void flip(struct merkle_proof *p, size_t i, size_t byte)
{
	p->hash[i][byte % H] ^= 0x40;
}

/* Every proof is checked positively; the wrong-input checks rotate over the
 * pairs (each kind still runs on thousands of them) to keep the test fast on
 * a portable SHA-256. */
#define NEG_KINDS 6
#define NEG_PER_PAIR 2

static bool neg_due(uint64_t pair, unsigned kind)
{
	for (unsigned j = 0; j < NEG_PER_PAIR; j++)
		if ((pair * NEG_PER_PAIR + j) % NEG_KINDS == kind)
			return true;
	return false;
}

static void test_inclusion_every_size_and_index(void **state)
{
	(void)state;
	struct cached *c = cached_new();
	struct merkle_source src = cached_source(c);
	static uint8_t roots[NMAX + 1][H];
	prefix_roots(c, roots);
	uint8_t junk[H];
	memset(junk, 0x5a, H);
	uint64_t pair = 0;
	unsigned long neg[NEG_KINDS] = {0};
	for (uint64_t n = 1; n <= NMAX; n++) {
		for (uint64_t i = 0; i < n; i++, pair++) {
			struct merkle_proof p, q;
			const uint8_t *leaf = c->leaves[i];
			assert_int_equal(merkle_inclusion_proof(&src, i, n, &p, NULL), SL_OK);
			assert_int_equal(merkle_inclusion_verify(leaf, i, n, &p, roots[n], NULL),
					 SL_OK);
			assert_int_equal(merkle_inclusion_verify(leaf, n, n, &p, roots[n], NULL),
					 SL_EINVAL);
			if (neg_due(pair, 0)) { /* wrong leaf */
				const uint8_t *other = c->leaves[(i + 1) % NMAX];
				assert_int_equal(merkle_inclusion_verify(other, i, n, &p, roots[n],
									 NULL),
						 SL_ECONFLICT);
				neg[0]++;
			}
			if (neg_due(pair, 1) && n > 1) { /* wrong index, both sides */
				assert_int_equal(merkle_inclusion_verify(leaf, (i + 1) % n, n, &p,
									 roots[n], NULL),
						 SL_ECONFLICT);
				assert_int_equal(merkle_inclusion_verify(leaf, (i + n - 1) % n, n, &p,
									 roots[n], NULL),
						 SL_ECONFLICT);
				neg[1]++;
			}
			if (neg_due(pair, 2)) { /* wrong size, with that size's root */
				if (n < NMAX)
					assert_int_equal(merkle_inclusion_verify(leaf, i, n + 1, &p,
										 roots[n + 1], NULL),
							 SL_ECONFLICT);
				if (i < n - 1)
					assert_int_equal(merkle_inclusion_verify(leaf, i, n - 1, &p,
										 roots[n - 1], NULL),
							 SL_ECONFLICT);
				neg[2]++;
			}
			if (neg_due(pair, 3)) { /* wrong root */
				assert_int_equal(merkle_inclusion_verify(leaf, i, n, &p, junk, NULL),
						 SL_ECONFLICT);
				assert_int_equal(merkle_inclusion_verify(leaf, i, n, &p,
									 roots[n - 1], NULL),
						 SL_ECONFLICT);
				neg[3]++;
			}
			if (neg_due(pair, 4) && p.len > 0) { /* truncated; a flipped byte */
				q = p;
				q.len--;
				assert_int_equal(merkle_inclusion_verify(leaf, i, n, &q, roots[n],
									 NULL),
						 SL_ECONFLICT);
				q = p;
				flip(&q, (size_t)(i % p.len), (size_t)n);
				assert_int_equal(merkle_inclusion_verify(leaf, i, n, &q, roots[n],
									 NULL),
						 SL_ECONFLICT);
				neg[4]++;
			}
			if (neg_due(pair, 5)) { /* extended */
				q = p;
				memcpy(q.hash[q.len++], junk, H);
				assert_int_equal(merkle_inclusion_verify(leaf, i, n, &q, roots[n],
									 NULL),
						 SL_ECONFLICT);
				neg[5]++;
			}
		}
	}
	assert_int_equal(pair, NMAX * (NMAX + 1) / 2);
	for (unsigned k = 0; k < NEG_KINDS; k++)
		assert_true(neg[k] > 10000);
	free(c);
}

static void test_consistency_every_pair(void **state)
{
	(void)state;
	struct cached *c = cached_new();
	struct merkle_source src = cached_source(c);
	static uint8_t roots[NMAX + 1][H];
	prefix_roots(c, roots);
	uint8_t junk[H];
	memset(junk, 0xa5, H);
	uint64_t pair = 0;
	unsigned long neg[NEG_KINDS] = {0};
	for (uint64_t n = 0; n <= NMAX; n++) {
		for (uint64_t m = 0; m <= n; m++, pair++) {
			struct merkle_proof p, q;
			assert_int_equal(merkle_consistency_proof(&src, m, n, &p, NULL), SL_OK);
			assert_int_equal(merkle_consistency_verify(m, n, roots[m], roots[n], &p,
								   NULL),
					 SL_OK);
			if (neg_due(pair, 0)) { /* wrong old root */
				assert_int_equal(merkle_consistency_verify(m, n, junk, roots[n], &p,
									   NULL),
						 SL_ECONFLICT);
				neg[0]++;
			}
			/* wrong new root (the empty tree is a prefix of every tree,
			 * whatever its root, so m == 0 is exempt) */
			if (neg_due(pair, 1) && m > 0) {
				assert_int_equal(merkle_consistency_verify(m, n, roots[m], junk, &p,
									   NULL),
						 SL_ECONFLICT);
				neg[1]++;
			}
			if (neg_due(pair, 2)) { /* wrong sizes, with their real roots */
				if (m > 0 && m < n)
					assert_int_equal(merkle_consistency_verify(m - 1, n, roots[m - 1],
										   roots[n], &p, NULL),
							 SL_ECONFLICT);
				if (m + 1 < n)
					assert_int_equal(merkle_consistency_verify(m + 1, n, roots[m + 1],
										   roots[n], &p, NULL),
							 SL_ECONFLICT);
				if (n < NMAX && m > 0)
					assert_int_equal(merkle_consistency_verify(m, n + 1, roots[m],
										   roots[n + 1], &p, NULL),
							 SL_ECONFLICT);
				if (m > 0 && m + 1 < n)
					assert_int_equal(merkle_consistency_verify(m, n - 1, roots[m],
										   roots[n - 1], &p, NULL),
							 SL_ECONFLICT);
				neg[2]++;
			}
			if (neg_due(pair, 3) && p.len > 0) { /* truncated */
				q = p;
				q.len--;
				assert_int_equal(merkle_consistency_verify(m, n, roots[m], roots[n],
									   &q, NULL),
						 SL_ECONFLICT);
				neg[3]++;
			}
			if (neg_due(pair, 4) && p.len > 0) { /* a flipped byte */
				q = p;
				flip(&q, (size_t)(m % p.len), (size_t)n);
				assert_int_equal(merkle_consistency_verify(m, n, roots[m], roots[n],
									   &q, NULL),
						 SL_ECONFLICT);
				neg[4]++;
			}
			if (neg_due(pair, 5)) { /* extended */
				q = p;
				memcpy(q.hash[q.len++], junk, H);
				assert_int_equal(merkle_consistency_verify(m, n, roots[m], roots[n],
									   &q, NULL),
						 SL_ECONFLICT);
				neg[5]++;
			}
		}
		if (n < NMAX) {
			struct merkle_proof p = {0};
			assert_int_equal(merkle_consistency_verify(n + 1, n, roots[n + 1],
								   roots[n], &p, NULL),
					 SL_EINVAL);
		}
	}
	for (unsigned k = 0; k < NEG_KINDS; k++)
		assert_true(neg[k] > 10000);
	free(c);
}

/* Proofs from a bare leaf source equal those from the cached source, and the
 * cache really saves leaf reads. */
static void test_cache_agrees_with_leaves(void **state)
{
	(void)state;
	struct cached *c = cached_new();
	struct merkle_source cs = cached_source(c);
	struct merkle_array arr = {(const uint8_t(*)[H])c->leaves, NMAX};
	struct merkle_source as = merkle_array_source(&arr);
	for (uint64_t n = 1; n <= 80; n++) {
		for (uint64_t i = 0; i < n; i++) {
			struct merkle_proof a, b;
			assert_int_equal(merkle_inclusion_proof(&as, i, n, &a, NULL), SL_OK);
			assert_int_equal(merkle_inclusion_proof(&cs, i, n, &b, NULL), SL_OK);
			assert_int_equal(a.len, b.len);
			assert_memory_equal(a.hash, b.hash, a.len * H);
			assert_int_equal(merkle_consistency_proof(&as, i, n, &a, NULL), SL_OK);
			assert_int_equal(merkle_consistency_proof(&cs, i, n, &b, NULL), SL_OK);
			assert_int_equal(a.len, b.len);
			assert_memory_equal(a.hash, b.hash, a.len * H);
		}
	}
	struct merkle_proof p;
	c->leaf_reads = 0;
	assert_int_equal(merkle_inclusion_proof(&cs, 0, 256, &p, NULL), SL_OK);
	assert_int_equal(p.len, 8);
	assert_true(c->leaf_reads <= 1);
	/* Arbitrary ranges, aligned or not, match the reference MTH. */
	for (uint64_t b = 0; b < 40; b++)
		for (uint64_t e = b; e <= 120; e += 7) {
			uint8_t got[H], want[H];
			assert_int_equal(merkle_range_root(&cs, b, e, got), SL_OK);
			ref_mth((const uint8_t(*)[H])c->leaves + b, e - b, want);
			assert_memory_equal(got, want, H);
		}
	uint8_t out[H];
	assert_int_equal(merkle_range_root(&cs, 5, 4, out), SL_EINVAL);
	free(c);
}

static enum sl_err failing_leaf(void *ctx, uint64_t index, uint8_t out[H])
{
	(void)out;
	return index == *(uint64_t *)ctx ? SL_EIO : SL_OK;
}

static void test_source_errors_pass_through(void **state)
{
	(void)state;
	uint64_t bad = 3;
	struct merkle_source src = {failing_leaf, NULL, &bad};
	struct merkle_proof p;
	assert_int_equal(merkle_inclusion_proof(&src, 0, 8, &p, NULL), SL_EIO);
	assert_int_equal(p.len, 0);
	assert_int_equal(merkle_consistency_proof(&src, 2, 8, &p, NULL), SL_EIO);
	uint8_t out[H];
	assert_int_equal(merkle_range_root(&src, 0, 8, out), SL_EIO);
	struct merkle_frontier f;
	assert_int_equal(merkle_frontier_load(&f, &src, 7), SL_EIO);
	assert_int_equal(f.size, 0);
	assert_int_equal(merkle_inclusion_proof(&src, 8, 8, &p, NULL), SL_EINVAL);
	assert_int_equal(merkle_consistency_proof(&src, 9, 8, &p, NULL), SL_EINVAL);
}

static void test_frontier_matches_reference(void **state)
{
	(void)state;
	enum { N = 1000 };
	uint8_t(*leaves)[H] = malloc(N * sizeof(*leaves));
	assert_non_null(leaves);
	for (uint32_t i = 0; i < N; i++) {
		uint8_t data[4] = {(uint8_t)i, (uint8_t)(i >> 8), 0x17, 0x2b};
		merkle_leaf_hash(data, sizeof(data), leaves[i]);
	}
	struct merkle_array arr = {(const uint8_t(*)[H])leaves, N};
	struct merkle_source src = merkle_array_source(&arr);
	struct merkle_frontier f, g;
	merkle_frontier_init(&f);
	for (uint64_t n = 0; n <= N; n++) {
		uint8_t got[H], want[H];
		merkle_frontier_root(&f, got);
		ref_mth((const uint8_t(*)[H])leaves, n, want);
		assert_memory_equal(got, want, H);
		/* A frontier rebuilt from the store gives the same root and
		 * keeps growing the same way. */
		if (n % 97 == 0 || n == N) {
			assert_int_equal(merkle_frontier_load(&g, &src, n), SL_OK);
			merkle_frontier_root(&g, got);
			assert_memory_equal(got, want, H);
			if (n < N) {
				assert_int_equal(merkle_frontier_append(&g, leaves[n]), SL_OK);
				ref_mth((const uint8_t(*)[H])leaves, n + 1, want);
				merkle_frontier_root(&g, got);
				assert_memory_equal(got, want, H);
			}
		}
		if (n < N)
			assert_int_equal(merkle_frontier_append(&f, leaves[n]), SL_OK);
	}
	f.size = UINT64_MAX;
	assert_int_equal(merkle_frontier_append(&f, leaves[0]), SL_ELIMIT);
	free(leaves);
}

/* A sink that files completed subtrees the way cached_new computes them. */
struct sink_log {
	struct cached *c;
	uint64_t calls;
	uint64_t fail_at; /* fail the call with this number (1-based), 0 = never */
};

static enum sl_err sink_store(void *ctx, unsigned level, uint64_t index,
			      const uint8_t hash[H])
{
	struct sink_log *s = ctx;
	if (++s->calls == s->fail_at)
		return SL_EIO;
	assert_true(level >= 1 && level < 10);
	memcpy(s->c->level[level][index], hash, H);
	if (index + 1 > s->c->count[level])
		s->c->count[level] = index + 1;
	return SL_OK;
}

static void test_frontier_sink_feeds_the_cache(void **state)
{
	(void)state;
	struct cached *want = cached_new();
	struct cached *got = calloc(1, sizeof(*got));
	assert_non_null(got);
	memcpy(got->leaves, want->leaves, sizeof(got->leaves));
	memcpy(got->level[0], want->leaves, sizeof(got->leaves));
	got->count[0] = NMAX;
	struct sink_log s = {got, 0, 0};
	struct merkle_frontier f;
	merkle_frontier_init(&f);
	for (uint64_t i = 0; i < NMAX; i++)
		assert_int_equal(merkle_frontier_append_sink(&f, want->leaves[i], sink_store, &s),
				 SL_OK);
	/* one call per completed perfect subtree of 2 or more leaves */
	uint64_t total = 0;
	for (unsigned l = 1; l < 10; l++) {
		assert_int_equal(got->count[l], want->count[l]);
		assert_memory_equal(got->level[l], want->level[l], want->count[l] * H);
		total += want->count[l];
	}
	assert_int_equal(s.calls, total);
	/* a failing sink aborts the append and leaves the frontier unchanged */
	struct merkle_frontier before;
	s.calls = 0;
	s.fail_at = 2;
	uint8_t leaf[H];
	memset(leaf, 1, H);
	f.size = 255; /* the next append completes levels 1..8 */
	before = f;
	assert_int_equal(merkle_frontier_append_sink(&f, leaf, sink_store, &s), SL_EIO);
	assert_memory_equal(&f, &before, sizeof(f));
	free(got);
	free(want);
}

int main(void)
{
	if (sodium_init() < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_answers),
		cmocka_unit_test(test_hash_prefixes),
		cmocka_unit_test(test_inclusion_every_size_and_index),
		cmocka_unit_test(test_consistency_every_pair),
		cmocka_unit_test(test_cache_agrees_with_leaves),
		cmocka_unit_test(test_source_errors_pass_through),
		cmocka_unit_test(test_frontier_matches_reference),
		cmocka_unit_test(test_frontier_sink_feeds_the_cache),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

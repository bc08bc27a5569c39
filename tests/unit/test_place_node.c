/* test_place_node.c - choosing GPUs inside one node, checked against a plain
 * exhaustive reference.
 *
 * The reference below is written independently of place_node.c: quality straight
 * from t->link / t->numa / t->nics, full quality by scanning every subset, the
 * leftover by backtracking over the list of full-quality sets (not a mask DP),
 * and the best set by trying every subset of the free mask. Every built-in node
 * type and a few hand-built ones (including a 16-GPU type that exercises the lazy
 * path) are compared over all or many free masks and every k. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "place_node.h"

/* ---- hand-built node types -------------------------------------------- */

static const struct gpu_model model_nvs = {
	.name = "test-nvswitch", .vendor = "test", .mem_gib = 80, .ic = IC_NVLINK,
	.nvlink_gen = 4, .ic_gbps = 900, .link_gbps = 50, .pcie_gen = 5,
};
static const struct gpu_model model_pcie = {
	.name = "test-pcie", .vendor = "test", .mem_gib = 48, .ic = IC_NONE,
	.ic_gbps = 0, .pcie_gen = 4,
};

static void set_pair(struct node_type *t, int a, int b, enum link_kind kind, int gbps)
{
	t->link[a][b].kind = t->link[b][a].kind = (uint8_t)kind;
	t->link[a][b].gbps = t->link[b][a].gbps = (uint16_t)gbps;
}

/* n GPUs, NUMA halves, every pair given by same/cross-NUMA bandwidth. */
static void base_type(struct node_type *t, const char *name, const struct gpu_model *m,
		      int n, int same, int cross)
{
	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, "%s", name);
	t->gpu = m;
	t->ngpus = n;
	for (int i = 0; i < n; i++)
		t->numa[i] = (int8_t)(i < n / 2 ? 0 : 1);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			set_pair(t, i, j, t->numa[i] == t->numa[j] ? LINK_NUMA : LINK_CROSS_SOCKET,
				 t->numa[i] == t->numa[j] ? same : cross);
}

static void add_nic(struct node_type *t, gpumask_t gpus)
{
	snprintf(t->nics[t->nnics].name, sizeof t->nics[0].name, "mlx5_%d", t->nnics);
	t->nics[t->nnics].gbps = 400;
	t->nics[t->nnics].gpus = gpus;
	t->nnics++;
}

/* 8 (or n) GPUs on NVSwitch, NUMA halves, one NIC per GPU. */
static void make_nvswitch(struct node_type *t, int n, int nic_span)
{
	base_type(t, "hand-nvswitch", &model_nvs, n, 0, 0);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			set_pair(t, i, j, LINK_NVSWITCH, 900);
	for (int i = 0; i < n; i += nic_span)
		add_nic(t, (((gpumask_t)1 << nic_span) - 1u) << i);
}

/* NVLink-bridged pairs behind PCIe switches, like an H100 NVL box. */
static void make_nvl_pairs(struct node_type *t)
{
	base_type(t, "hand-nvl-pairs", &model_nvs, 8, 48, 32);
	for (int i = 0; i < 8; i += 2) {
		set_pair(t, i, i + 1, LINK_NVLINK, 600);
		add_nic(t, (gpumask_t)3 << i);
	}
}

/* Two strict 4-NPU rings, like Ascend 910. */
static void make_rings(struct node_type *t)
{
	base_type(t, "hand-rings", &model_nvs, 8, 32, 32);
	for (int i = 0; i < 8; i++)
		for (int j = i + 1; j < 8; j++)
			if ((i < 4) == (j < 4))
				set_pair(t, i, j, LINK_HCCS, 90);
	t->ngroups = 2;
	t->groups[0] = 0x0f;
	t->groups[1] = 0xf0;
	t->groups_strict = true;
	add_nic(t, 0x0f);
	add_nic(t, 0xf0);
}

/* PCIe only, switch pairs, model bandwidth 0 (like L40S). */
static void make_pcie(struct node_type *t)
{
	base_type(t, "hand-pcie", &model_pcie, 8, 40, 30);
	for (int i = 0; i < 8; i += 2)
		set_pair(t, i, i + 1, LINK_PCIE_SWITCH, 50);
	add_nic(t, 0x0f);
	add_nic(t, 0xf0);
}

/* Irregular bandwidths, odd GPU count, no NICs, NUMA by thirds. */
static void make_irregular(struct node_type *t, int n, uint32_t seed)
{
	base_type(t, "hand-irregular", &model_pcie, n, 0, 0);
	for (int i = 0; i < n; i++)
		t->numa[i] = (int8_t)(i * 3 / n);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			seed ^= seed << 13;
			seed ^= seed >> 17;
			seed ^= seed << 5;
			set_pair(t, i, j, LINK_PCIE_HOSTBRIDGE, 20 + (int)(seed % 4) * 10);
		}
}

/* ---- the reference ------------------------------------------------------ */

struct ref_q {
	bool valid;
	int bott, total, numa, nics;
};

static int bits(uint32_t m)
{
	int c = 0;

	for (; m; m >>= 1)
		c += (int)(m & 1u);
	return c;
}

static struct ref_q ref_quality(const struct node_type *t, uint32_t s)
{
	struct ref_q q = {0};
	int n = t->ngpus, size = bits(s);
	bool in_group = false, constrained = false;
	bool numa_seen[256] = {false};

	if (s == 0 || (s >> n) != 0)
		return q;
	if (t->groups_strict) {
		for (int g = 0; g < t->ngroups; g++) {
			if (bits(t->groups[g]) >= size)
				constrained = true;
			if ((s & t->groups[g]) == s)
				in_group = true;
		}
		if (constrained && !in_group)
			return q;
	}
	q.valid = true;
	q.bott = size == 1 ? t->gpu->ic_gbps : 1 << 30;
	for (int i = 0; i < n; i++) {
		if (!(s & (1u << i)))
			continue;
		if (!numa_seen[t->numa[i] + 128]) {
			numa_seen[t->numa[i] + 128] = true;
			q.numa++;
		}
		for (int j = i + 1; j < n; j++) {
			if (!(s & (1u << j)))
				continue;
			q.total += t->link[i][j].gbps;
			if (t->link[i][j].gbps < q.bott)
				q.bott = t->link[i][j].gbps;
		}
	}
	for (int c = 0; c < t->nnics; c++)
		if (t->nics[c].gpus & s)
			q.nics++;
	return q;
}

/* > 0 when a is better. */
static int ref_qcmp(const struct ref_q *a, const struct ref_q *b)
{
	if (a->bott != b->bott)
		return a->bott - b->bott;
	if (a->total != b->total)
		return a->total - b->total;
	if (a->numa != b->numa)
		return b->numa - a->numa;
	return a->nics - b->nics;
}

struct ref {
	const struct node_type *t;
	int n;
	struct ref_q *q;               /* every subset */
	struct ref_q full[TOPO_MAX_GPUS + 1];
	bool has_full[TOPO_MAX_GPUS + 1];
	uint32_t *fq[3];               /* full-quality sets of 8, 4, 2 */
	int nfq[3];
};

static const int ref_sizes[3] = {8, 4, 2};

static bool ref_is_full(const struct ref *r, uint32_t s)
{
	int k = bits(s);

	return r->q[s].valid && r->has_full[k] && ref_qcmp(&r->q[s], &r->full[k]) == 0;
}

static void ref_init(struct ref *r, const struct node_type *t)
{
	uint32_t nsets = 1u << t->ngpus;

	memset(r, 0, sizeof *r);
	r->t = t;
	r->n = t->ngpus;
	r->q = calloc(nsets, sizeof *r->q);
	assert_non_null(r->q);
	for (uint32_t s = 1; s < nsets; s++) {
		int k = bits(s);

		r->q[s] = ref_quality(t, s);
		if (r->q[s].valid && (!r->has_full[k] || ref_qcmp(&r->q[s], &r->full[k]) > 0)) {
			r->full[k] = r->q[s];
			r->has_full[k] = true;
		}
	}
	for (int si = 0; si < 3; si++) {
		r->fq[si] = calloc(nsets, sizeof *r->fq[si]);
		assert_non_null(r->fq[si]);
		if (ref_sizes[si] > r->n)
			continue;
		for (uint32_t s = 1; s < nsets; s++)
			if (bits(s) == ref_sizes[si] && ref_is_full(r, s))
				r->fq[si][r->nfq[si]++] = s;
	}
}

static void ref_release(struct ref *r)
{
	free(r->q);
	for (int si = 0; si < 3; si++)
		free(r->fq[si]);
}

/* Backtracking: try the listed sets in order, each used or skipped; prune when
 * even packing every remaining GPU could not beat the best found. */
static void ref_pack(const uint32_t *sets, int nsets, int from, uint32_t left, int size,
		     int have, int *best)
{
	if (have > *best)
		*best = have;
	if (have + bits(left) / size <= *best)
		return;
	for (int i = from; i < nsets; i++)
		if ((sets[i] & left) == sets[i])
			ref_pack(sets, nsets, i + 1, left & ~sets[i], size, have + 1, best);
}

struct ref_left {
	int cnt[3];
	int stranded;
};

static struct ref_left ref_leftover(const struct ref *r, uint32_t left)
{
	struct ref_left l = {{0, 0, 0}, 0};

	for (int si = 0; si < 3; si++)
		ref_pack(r->fq[si], r->nfq[si], 0, left, ref_sizes[si], 0, &l.cnt[si]);
	for (int i = 0; i < r->n; i++) {
		bool paired = false;

		if (!(left & (1u << i)))
			continue;
		for (int j = 0; j < r->n; j++)
			if (j != i && (left & (1u << j)) && r->n >= 2 &&
			    ref_is_full(r, (1u << i) | (1u << j)))
				paired = true;
		l.stranded += !paired;
	}
	return l;
}

static int ref_lcmp(const struct ref_left *a, const struct ref_left *b)
{
	for (int i = 0; i < 3; i++)
		if (a->cnt[i] != b->cnt[i])
			return a->cnt[i] - b->cnt[i];
	return b->stranded - a->stranded;
}

/* The best k-set inside free by trying every subset; false when none. Ties in
 * (quality, leftover) go to the set in the better shape itself, then the lowest
 * mask. */
static bool ref_best(const struct ref *r, uint32_t free, int k, uint32_t *set,
		     struct ref_left *left)
{
	bool found = false;
	struct ref_left bl = {{0, 0, 0}, 0}, bshape = bl;
	uint32_t bs = 0;

	for (uint32_t s = free;; s = (s - 1) & free) {
		if (s && bits(s) == k && r->q[s].valid) {
			int c = found ? ref_qcmp(&r->q[s], &r->q[bs]) : 1;

			if (c >= 0) {
				struct ref_left l = ref_leftover(r, free & ~s);
				struct ref_left shape = ref_leftover(r, s);
				int lc = found && c == 0 ? ref_lcmp(&l, &bl) : 1;
				int sc = lc == 0 ? ref_lcmp(&shape, &bshape) : 1;

				if (lc > 0 || (lc == 0 && (sc > 0 || (sc == 0 && s < bs)))) {
					bs = s;
					bl = l;
					bshape = shape;
					found = true;
				}
			}
		}
		if (s == 0)
			break;
	}
	*set = bs;
	*left = bl;
	return found;
}

static uint32_t xorshift(uint32_t *st)
{
	uint32_t x = *st;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *st = x;
}

/* ---- comparing a ptab with the reference -------------------------------- */

static void check_state(struct ptab *p, const struct ref *r, uint32_t free, int k)
{
	uint32_t want;
	struct ref_left wl;
	struct node_pick pick;
	bool ok = ref_best(r, free, k, &want, &wl);
	bool got = ptab_best(p, free, k, &pick);

	if (ok != got || (ok && pick.set != want))
		fail_msg("%s free=0x%x k=%d: got %s 0x%x, want %s 0x%x", r->t->name, free, k,
			 got ? "set" : "none", got ? pick.set : 0, ok ? "set" : "none", want);
	if (!ok)
		return;
	assert_int_equal(pick.q.bottleneck_gbps, r->q[want].bott);
	assert_int_equal(pick.q.total_gbps, r->q[want].total);
	assert_int_equal(pick.q.numa_spanned, r->q[want].numa);
	assert_int_equal(pick.q.nics, r->q[want].nics);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pick.left.cnt[i], wl.cnt[i]);
	assert_int_equal(pick.left.stranded, wl.stranded);
	assert_int_equal(pick.full_quality, ref_is_full(r, want));
}

/* Every free mask for small types, else `states` random ones; every k. */
static void check_type(const struct node_type *t, int states, uint32_t seed)
{
	struct ref r;
	struct ptab *p = NULL;
	uint32_t nsets = 1u << t->ngpus;

	ref_init(&r, t);
	assert_int_equal(ptab_new(t, &p), SL_OK);
	for (int k = 1; k <= t->ngpus; k++) {
		struct node_quality fq;

		assert_int_equal(ptab_full_quality(p, k, &fq), r.has_full[k]);
		if (r.has_full[k]) {
			assert_int_equal(fq.bottleneck_gbps, r.full[k].bott);
			assert_int_equal(fq.total_gbps, r.full[k].total);
			assert_int_equal(fq.numa_spanned, r.full[k].numa);
			assert_int_equal(fq.nics, r.full[k].nics);
		}
	}
	if (nsets <= 1024u) {
		for (uint32_t f = 0; f < nsets; f++)
			for (int k = 1; k <= t->ngpus; k++)
				check_state(p, &r, f, k);
	} else {
		for (int i = 0; i < states; i++) {
			uint32_t f = xorshift(&seed) & (nsets - 1u);

			/* Thin some states out so both crowded and sparse nodes occur. */
			if (i % 3 == 1)
				f &= xorshift(&seed);
			for (int k = 1; k <= t->ngpus; k++)
				check_state(p, &r, f, k);
		}
	}
	ptab_free(p);
	ref_release(&r);
}

/* ---- tests --------------------------------------------------------------- */

static void test_optimal_hand_built(void **state)
{
	struct node_type t;

	(void)state;
	make_nvswitch(&t, 8, 1);
	check_type(&t, 0, 0);
	make_nvswitch(&t, 8, 2);
	check_type(&t, 0, 0);
	make_nvswitch(&t, 4, 1);
	check_type(&t, 0, 0);
	make_nvl_pairs(&t);
	check_type(&t, 0, 0);
	make_rings(&t);
	check_type(&t, 0, 0);
	make_pcie(&t);
	check_type(&t, 0, 0);
	make_irregular(&t, 7, 12345u);
	check_type(&t, 0, 0);
	make_irregular(&t, 1, 1u);
	check_type(&t, 0, 0);
	make_irregular(&t, 10, 777u);
	check_type(&t, 0, 0);
}

static void test_optimal_lazy_16(void **state)
{
	struct node_type t;

	(void)state;
	make_nvswitch(&t, 16, 2); /* NIC per GPU pair: full pairs straddle NICs */
	check_type(&t, 400, 0x9e3779b9u);
	make_nvswitch(&t, 16, 16); /* one NIC: many equally good sets */
	t.numa[8] = 0;             /* lopsided NUMA: 9 + 7 */
	check_type(&t, 300, 0x1234567u);
	make_irregular(&t, 12, 4242u);
	check_type(&t, 300, 0xabcdefu);
}

/* ---- ptab_order ------------------------------------------------------- */

static int pick_order_cmp(struct ptab *p, gpumask_t a, gpumask_t b, int k)
{
	struct node_pick pa, pb;
	int c;

	assert_true(ptab_best(p, a, k, &pa));
	assert_true(ptab_best(p, b, k, &pb));
	c = node_quality_cmp(&pa.q, &pb.q);
	if (c)
		return c;
	if (__builtin_popcount(a) != __builtin_popcount(b))
		return __builtin_popcount(a) < __builtin_popcount(b) ? 1 : -1;
	c = node_leftover_cmp(&pa.left, &pb.left);
	if (c)
		return c;
	return a < b ? 1 : a > b ? -1 : 0;
}

static void check_order(const struct node_type *t)
{
	struct ptab *p = NULL;
	uint32_t nsets = 1u << t->ngpus;

	assert_int_equal(ptab_new(t, &p), SL_OK);
	for (int k = 1; k <= t->ngpus; k++) {
		const gpumask_t *m = NULL;
		const int *tier = NULL;
		int cnt = ptab_order(p, k, &m, &tier), holding = 0;
		char *listed = calloc(nsets, 1);

		assert_non_null(listed);
		for (uint32_t f = 0; f < nsets; f++)
			holding += ptab_best(p, f, k, NULL);
		assert_int_equal(cnt, holding);
		for (int i = 0; i < cnt; i++) {
			assert_true(m[i] < nsets);
			assert_false(listed[m[i]]);
			listed[m[i]] = 1;
			assert_true(ptab_best(p, m[i], k, NULL));
			if (i == 0) {
				assert_int_equal(tier[0], 0);
				continue;
			}
			/* Strictly best-first; tiers step exactly where (q, pop, left) change. */
			assert_true(pick_order_cmp(p, m[i - 1], m[i], k) > 0);
			{
				struct node_pick a, b;
				bool same;

				assert_true(ptab_best(p, m[i - 1], k, &a));
				assert_true(ptab_best(p, m[i], k, &b));
				same = node_quality_cmp(&a.q, &b.q) == 0 &&
				       __builtin_popcount(m[i - 1]) == __builtin_popcount(m[i]) &&
				       node_leftover_cmp(&a.left, &b.left) == 0;
				assert_int_equal(tier[i], tier[i - 1] + (same ? 0 : 1));
			}
		}
		free(listed);
	}
	assert_int_equal(ptab_order(p, 0, NULL, NULL), 0);
	assert_int_equal(ptab_order(p, t->ngpus + 1, NULL, NULL), 0);
	ptab_free(p);
}

static void test_order_hand_built(void **state)
{
	struct node_type t;

	(void)state;
	make_nvswitch(&t, 8, 1);
	check_order(&t);
	make_rings(&t);
	check_order(&t);
	make_nvl_pairs(&t);
	check_order(&t);
	make_irregular(&t, 5, 99u);
	check_order(&t);
}

static void test_order_lazy_types_empty(void **state)
{
	struct node_type t;
	struct ptab *p = NULL;
	const gpumask_t *m = NULL;

	(void)state;
	make_nvswitch(&t, 16, 2);
	assert_int_equal(ptab_new(&t, &p), SL_OK);
	for (int k = 1; k <= 16; k++)
		assert_int_equal(ptab_order(p, k, &m, NULL), 0);
	ptab_free(p);
}

/* ---- built-in types ------------------------------------------------------ */

static void load(const char *name, struct node_type *t)
{
	if (topo_builtin(name, t) != SL_OK)
		fail_msg("built-in type %s is missing", name);
}

static void test_optimal_builtin(void **state)
{
	(void)state;
	assert_true(topo_builtin_count() > 0);
	for (int i = 0; i < topo_builtin_count(); i++) {
		struct node_type t;

		load(topo_builtin_name(i), &t);
		check_type(&t, 400, 0x2545f491u + (uint32_t)i);
	}
}

static void test_order_builtin(void **state)
{
	(void)state;
	for (int i = 0; i < topo_builtin_count(); i++) {
		struct node_type t;

		load(topo_builtin_name(i), &t);
		if (t.ngpus <= PTAB_EAGER_GPUS)
			check_order(&t);
	}
}

/* True when s takes none or all of every unit that is wholly free. */
static bool keeps_whole(gpumask_t s, gpumask_t free, const gpumask_t *units, int nunits)
{
	for (int u = 0; u < nunits; u++)
		if ((units[u] & free) == units[u] && (s & units[u]) != 0 &&
		    (s & units[u]) != units[u])
			return false;
	return true;
}

/* For every free mask and k: if some set as good as the chosen one keeps every
 * whole free unit whole, the chosen one does too. */
static void check_units(const char *name, const gpumask_t *units, int nunits)
{
	struct node_type t;
	struct ptab *p = NULL;
	uint32_t nsets;
	int constrained = 0;

	load(name, &t);
	nsets = 1u << t.ngpus;
	assert_int_equal(ptab_new(&t, &p), SL_OK);
	for (uint32_t f = 1; f < nsets; f++)
		for (int k = 1; k <= t.ngpus; k++) {
			struct node_pick pick;
			bool exists = false, splits = false;

			if (!ptab_best(p, f, k, &pick))
				continue;
			for (uint32_t s = f; s; s = (s - 1) & f) {
				struct node_quality q;

				if (__builtin_popcount(s) != k || !node_set_quality(&t, s, &q) ||
				    node_quality_cmp(&q, &pick.q) != 0)
					continue;
				if (keeps_whole(s, f, units, nunits))
					exists = true;
				else
					splits = true;
			}
			constrained += exists && splits; /* a real choice had to be made */
			if (exists && !keeps_whole(pick.set, f, units, nunits))
				fail_msg("%s free=0x%x k=%d: 0x%x splits a unit that another "
					 "equally good set keeps whole", name, f, k, pick.set);
		}
	assert_true(constrained > 0); /* the property was exercised */
	ptab_free(p);
}

static void test_keeps_units_whole(void **state)
{
	static const gpumask_t halves[] = {0x0f, 0xf0};
	static const gpumask_t pairs[] = {0x03, 0x0c, 0x30, 0xc0};
	/* Pairs and the halves they make up, both kept whole at once. */
	static const gpumask_t nested[] = {0x03, 0x0c, 0x30, 0xc0, 0x0f, 0xf0};

	(void)state;
	check_units("hgx-h100-8", halves, 2);      /* NVSwitch NUMA halves */
	check_units("hgx-a100-8", halves, 2);
	check_units("hgx-b200-8", halves, 2);
	check_units("pcie-h100nvl-8", nested, 6);  /* NVLink pairs */
	check_units("pcie-l40s-8", nested, 6);     /* PCIe-switch pairs */
	check_units("atlas-800-9000", nested, 6);  /* HCCS rings, NUMA pairs */
	check_units("atlas-800t-a2", pairs, 4);    /* NUMA pairs */
	check_units("gb200-nvl72-tray", pairs, 2); /* NUMA pairs of a 4-GPU tray */
}

/* Ascend 910: any set of up to 4 NPUs lies inside one ring. */
static void test_rings_strict(void **state)
{
	struct node_type t;
	struct ptab *p = NULL;

	(void)state;
	load("atlas-800-9000", &t);
	assert_int_equal(ptab_new(&t, &p), SL_OK);
	for (uint32_t f = 1; f < 256; f++)
		for (int k = 1; k <= 4; k++) {
			struct node_pick pick;
			bool fits = __builtin_popcount(f & 0x0f) >= k ||
				    __builtin_popcount(f & 0xf0) >= k;

			assert_int_equal(ptab_best(p, f, k, &pick), fits);
			if (fits)
				assert_true((pick.set & 0xf0) == 0 || (pick.set & 0x0f) == 0);
		}
	ptab_free(p);
}

struct pick_case {
	const char *type;
	gpumask_t free;
	int k;
	gpumask_t want; /* 0 = no set */
	bool full;
};

static void test_pick_table(void **state)
{
	static const struct pick_case cases[] = {
		/* The broken half gives the pair; the whole half stays whole. */
		{"hgx-h100-8", 0x3f, 2, 0x30, true},
		{"hgx-h100-8", 0x7f, 1, 0x10, true},
		{"hgx-h100-8", 0xff, 1, 0x01, true},
		{"hgx-h100-8", 0xff, 3, 0x07, true},
		{"hgx-h100-8", 0xff, 4, 0x0f, true},
		{"hgx-h100-8", 0xfe, 4, 0xf0, true},
		{"hgx-h100-8", 0x77, 4, 0x17, false}, /* must span both halves */
		{"hgx-h100-8", 0xff, 8, 0xff, true},
		{"hgx-h100-8", 0x7f, 8, 0, false},
		/* The lone GPU goes first; NVLink pairs stay whole. */
		{"pcie-h100nvl-8", 0x0d, 1, 0x01, true},
		{"pcie-h100nvl-8", 0xff, 2, 0x03, true},
		{"pcie-h100nvl-8", 0xfd, 2, 0x0c, true},
		{"pcie-h100nvl-8", 0xff, 4, 0x0f, true},
		{"pcie-h100nvl-8", 0x55, 2, 0x05, false}, /* no bridged pair left */
		{"pcie-l40s-8", 0xff, 2, 0x03, true},     /* a PCIe-switch pair */
		{"pcie-l40s-8", 0xfb, 2, 0x03, true},     /* keeps the 4-7 half */
		{"atlas-800-9000", 0xff, 4, 0x0f, true},
		{"atlas-800-9000", 0xfe, 4, 0xf0, true},
		{"atlas-800-9000", 0x3f, 2, 0x30, true},
		{"atlas-800-9000", 0x33, 3, 0, false},    /* 3 free only across rings */
		{"atlas-800-9000", 0x3f, 5, 0x1f, true},  /* above a ring: any set */
		{"gb200-nvl72-tray", 0x0f, 2, 0x03, true},
		{"gb200-nvl72-tray", 0x0e, 2, 0x0c, true},
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct pick_case *c = &cases[i];
		struct node_type t;
		struct ptab *p = NULL;
		struct node_pick pick;
		bool got;

		load(c->type, &t);
		assert_int_equal(ptab_new(&t, &p), SL_OK);
		got = ptab_best(p, c->free, c->k, &pick);
		if (got != (c->want != 0) || (got && (pick.set != c->want ||
						       pick.full_quality != c->full)))
			fail_msg("case %zu %s free=0x%x k=%d: got 0x%x full=%d, want 0x%x full=%d",
				 i, c->type, c->free, c->k, got ? pick.set : 0,
				 got && pick.full_quality, c->want, c->full);
		ptab_free(p);
	}
}

static void test_leftover_and_model_bw(void **state)
{
	struct node_type t;
	struct ptab *p = NULL;
	struct node_leftover l;
	struct node_quality q;

	(void)state;
	load("hgx-h100-8", &t);
	assert_int_equal(ptab_new(&t, &p), SL_OK);
	ptab_leftover(p, 0xff, &l);
	assert_int_equal(l.cnt[0], 1);
	assert_int_equal(l.cnt[1], 2);
	assert_int_equal(l.cnt[2], 4);
	assert_int_equal(l.stranded, 0);
	ptab_leftover(p, 0x11, &l); /* one GPU in each half: both stranded */
	assert_int_equal(l.cnt[2], 0);
	assert_int_equal(l.stranded, 2);
	ptab_leftover(p, 0x1ff, &l); /* bits beyond ngpus are ignored */
	assert_int_equal(l.cnt[0], 1);
	{
		struct node_pick a, b;

		assert_true(ptab_best(p, 0x7f3f, 2, &a));
		assert_true(ptab_best(p, 0x3f, 2, &b));
		assert_int_equal(a.set, b.set);
	}
	assert_int_equal(ptab_type(p)->ngpus, 8);
	ptab_free(p);

	load("pcie-l40s-8", &t); /* model interconnect 0 GB/s: singles still valid */
	assert_int_equal(ptab_new(&t, &p), SL_OK);
	assert_true(ptab_full_quality(p, 1, &q));
	assert_int_equal(q.bottleneck_gbps, t.gpu->ic_gbps);
	assert_int_equal(q.numa_spanned, 1);
	ptab_free(p);
}

static void test_lazy_repeat_is_stable(void **state)
{
	struct node_type t;
	struct ptab *p = NULL;
	struct node_pick a, b;

	(void)state;
	make_nvswitch(&t, 16, 1);
	assert_int_equal(ptab_new(&t, &p), SL_OK);
	assert_true(ptab_best(p, 0xffff, 8, &a));
	assert_int_equal(a.set, 0x00ff);
	assert_true(a.full_quality);
	assert_true(ptab_best(p, 0xffff, 8, &b)); /* answered from the memo */
	assert_int_equal(a.set, b.set);
	assert_int_equal(node_quality_cmp(&a.q, &b.q), 0);
	assert_int_equal(node_leftover_cmp(&a.left, &b.left), 0);
	assert_true(ptab_best(p, 0xfeff, 4, &a)); /* broken half gives first */
	assert_int_equal(a.set, 0x1e00);
	ptab_free(p);
}

/* ---- errors and direct quality ------------------------------------------ */

static void test_errors(void **state)
{
	struct node_type t;
	struct ptab *p = (struct ptab *)&t;
	struct node_quality q;
	struct node_pick pick;

	(void)state;
	make_rings(&t);
	t.ngpus = 0;
	assert_int_equal(ptab_new(&t, &p), SL_EINVAL);
	assert_null(p);
	t.ngpus = TOPO_MAX_GPUS + 1;
	assert_int_equal(ptab_new(&t, &p), SL_EINVAL);
	assert_int_equal(ptab_new(NULL, &p), SL_EINVAL);
	t.ngpus = 8;
	assert_int_equal(ptab_new(&t, NULL), SL_EINVAL);
	t.ngpus = 8;
	assert_false(node_set_quality(&t, 0, &q));          /* empty */
	assert_false(node_set_quality(&t, 0x100, &q));      /* beyond ngpus */
	assert_false(node_set_quality(&t, 0x18, &q));       /* straddles the rings */
	assert_true(node_set_quality(&t, 0x0f, &q));
	assert_int_equal(q.bottleneck_gbps, 90);
	assert_int_equal(q.total_gbps, 6 * 90);
	assert_true(node_set_quality(&t, 0x1f, &q));        /* larger than a ring */
	assert_int_equal(q.numa_spanned, 2);
	assert_int_equal(q.nics, 2);
	assert_int_equal(ptab_new(&t, &p), SL_OK);
	assert_false(ptab_best(p, 0xff, 0, &pick));
	assert_false(ptab_best(p, 0xff, 9, &pick));
	assert_false(ptab_best(p, 0x33, 3, &pick)); /* 3 free but in no one ring */
	assert_false(ptab_full_quality(p, 0, &q));
	ptab_free(p);
	ptab_free(NULL);
}

static void test_quality_cmp(void **state)
{
	struct node_quality a = {100, 300, 1, 2}, b = a;
	struct node_leftover la = {{1, 2, 3}, 1}, lb = la;

	(void)state;
	assert_int_equal(node_quality_cmp(&a, &b), 0);
	b.nics = 3;
	assert_true(node_quality_cmp(&a, &b) < 0);
	b.numa_spanned = 2; /* fewer NUMA nodes outranks more NICs */
	assert_true(node_quality_cmp(&a, &b) > 0);
	b.total_gbps = 301;
	assert_true(node_quality_cmp(&a, &b) < 0);
	b.bottleneck_gbps = 99;
	assert_true(node_quality_cmp(&a, &b) > 0);
	assert_int_equal(node_leftover_cmp(&la, &lb), 0);
	lb.stranded = 0;
	assert_true(node_leftover_cmp(&la, &lb) < 0);
	lb.cnt[2] = 2;
	assert_true(node_leftover_cmp(&la, &lb) > 0);
	lb.cnt[0] = 2;
	assert_true(node_leftover_cmp(&la, &lb) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quality_cmp),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_optimal_hand_built),
		cmocka_unit_test(test_optimal_lazy_16),
		cmocka_unit_test(test_order_hand_built),
		cmocka_unit_test(test_order_lazy_types_empty),
		cmocka_unit_test(test_optimal_builtin),
		cmocka_unit_test(test_order_builtin),
		cmocka_unit_test(test_keeps_units_whole),
		cmocka_unit_test(test_rings_strict),
		cmocka_unit_test(test_pick_table),
		cmocka_unit_test(test_leftover_and_model_bw),
		cmocka_unit_test(test_lazy_repeat_is_stable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_place_gang.c - multi-node (gang) placement: all or nothing, fewest
 * leaves (checked against a brute-force minimum, also with nodes whose CPUs
 * are in use and on a 16-GPU type judged node by node), NVLink domains (GB200
 * NVL72 racks), rail alignment and per_node inference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "place.h"

#define MAX_LEAVES 16

struct gx {
	struct fleet f;
	int leaf[MAX_LEAVES];
	struct placer *p;
};

static void gx_init(struct gx *x, int nleaves)
{
	int s, fab;
	memset(x, 0, sizeof(*x));
	assert_int_equal(fleet_init(&x->f), SL_OK);
	assert_int_equal(fleet_add_site(&x->f, "s1", "r1", &s, NULL), SL_OK);
	assert_int_equal(fleet_add_fabric(&x->f, s, "ib", FABRIC_INFINIBAND, 400, &fab, NULL),
			 SL_OK);
	for (int i = 0; i < nleaves; i++) {
		char name[48];
		snprintf(name, sizeof(name), "leaf-%02d", i + 1);
		assert_int_equal(fleet_add_leaf(&x->f, fab, name, &x->leaf[i], NULL), SL_OK);
	}
}

static int gx_node(struct gx *x, int leaf, const char *name, const char *type)
{
	int t = fleet_find_type(&x->f, type), idx;
	assert_true(t >= 0);
	assert_int_equal(fleet_add_node(&x->f, x->leaf[leaf], name, t, &idx, NULL), SL_OK);
	return idx;
}

static void gx_start(struct gx *x)
{
	assert_int_equal(placer_new(&x->f, &x->p), SL_OK);
}

static void gx_done(struct gx *x)
{
	placer_free(x->p);
	fleet_release(&x->f);
}

static void use_mask(struct placer *p, int node, gpumask_t m)
{
	struct placement pl;
	placement_init(&pl);
	struct place_pick k = {.node = node, .gpus = m, .gpu = -1};
	assert_int_equal(placement_add(&pl, &k), SL_OK);
	assert_int_equal(placer_claim(p, &pl, NULL), SL_OK);
	placement_release(&pl);
}

static struct place_request gang(int gpus, int per_node)
{
	struct place_request r;
	memset(&r, 0, sizeof(r));
	r.gpus = gpus;
	r.per_node = per_node;
	return r;
}

static bool has_node(const struct gx *x, const struct placement *pl, const char *name)
{
	for (int i = 0; i < pl->npicks; i++)
		if (!strcmp(x->f.nodes[pl->picks[i].node].name, name))
			return true;
	return false;
}

/* Every pick on a distinct node, at per_node GPUs, all free now. */
static void check_picks(const struct gx *x, const struct placement *pl, int per_node)
{
	for (int i = 0; i < pl->npicks; i++) {
		const struct place_pick *k = &pl->picks[i];
		assert_int_equal(__builtin_popcount(k->gpus), per_node);
		assert_int_equal(k->gpus & ~placer_free_mask(x->p, k->node), 0);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(pl->picks[j].node, k->node);
	}
}

/* ---- all or nothing ------------------------------------------------------ */

static void test_all_or_nothing(void **state)
{
	(void)state;
	struct gx x;
	gx_init(&x, 1);
	int a = gx_node(&x, 0, "a", "hgx-h100-8");
	int b = gx_node(&x, 0, "b", "hgx-h100-8");
	int c = gx_node(&x, 0, "c", "hgx-h100-8");
	gx_start(&x);
	use_mask(x.p, c, 0x01);
	struct placement pl;
	placement_init(&pl);
	struct place_request q = gang(24, 0);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_ENOSPACE);
	assert_int_equal(pl.npicks, 0);
	assert_int_equal(pl.failed, PLACE_C_FREE);
	assert_non_null(strstr(pl.why, "gang needs 3 nodes"));
	assert_non_null(strstr(pl.why, "closest other: c with 7 free"));
	q = gang(32, 0);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_ENOSPACE);
	assert_int_equal(pl.failed, PLACE_C_GANG);
	assert_non_null(strstr(pl.why, "the fleet has 3"));
	q = gang(16, 0);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 2);
	check_picks(&x, &pl, 8);
	assert_true(has_node(&x, &pl, "a") && has_node(&x, &pl, "b"));
	assert_int_equal(pl.score.nodes, 2);
	assert_int_equal(pl.score.leaves, 1);
	assert_true(pl.score.full_quality);
	assert_int_equal(placer_claim(x.p, &pl, NULL), SL_OK);
	assert_int_equal(placer_free_mask(x.p, a), 0);
	assert_int_equal(placer_free_mask(x.p, b), 0);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_ENOSPACE);
	assert_int_equal(pl.npicks, 0);
	assert_int_equal(placer_free_mask(x.p, c), 0xfe);
	placement_release(&pl);
	gx_done(&x);
}

/* ---- fewest leaves ------------------------------------------------------- */

static void test_leaf_choice(void **state)
{
	(void)state;
	/* Free nodes per leaf: leaf-01 4, leaf-02 2, leaf-03 3. */
	static const int per_leaf[] = {4, 2, 3};
	static const struct {
		int n;
		int leaves;
		const char *leaf; /* the only leaf, or NULL */
		int from_leaf1;   /* nodes expected from leaf-01 */
		int from_leaf2;   /* and from leaf-02 (best fit for the remainder) */
	} cases[] = {
		{1, 1, "leaf-02", 0, 1}, {2, 1, "leaf-02", 0, 2}, {3, 1, "leaf-03", 0, 0},
		{4, 1, "leaf-01", 4, 0}, {5, 2, NULL, 4, 1},      {6, 2, NULL, 4, 2},
		{7, 2, NULL, 4, 0},      {8, 3, NULL, 4, 1},      {9, 3, NULL, 4, 2},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct gx x;
		gx_init(&x, 3);
		int busy[3];
		for (int l = 0; l < 3; l++) {
			for (int i = 0; i < per_leaf[l]; i++) {
				char name[48];
				snprintf(name, sizeof(name), "n%d-%d", l + 1, i);
				gx_node(&x, l, name, "hgx-h100-8");
			}
			char name[48];
			snprintf(name, sizeof(name), "n%d-busy", l + 1);
			busy[l] = gx_node(&x, l, name, "hgx-h100-8");
		}
		gx_start(&x);
		for (int l = 0; l < 3; l++)
			use_mask(x.p, busy[l], 0x80);
		struct placement pl;
		placement_init(&pl);
		struct place_request q = gang(8 * cases[c].n, 8);
		assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_OK);
		assert_int_equal(pl.npicks, cases[c].n);
		check_picks(&x, &pl, 8);
		if (pl.score.leaves != cases[c].leaves)
			fail_msg("n=%d: %d leaves, want %d", cases[c].n, pl.score.leaves,
				 cases[c].leaves);
		int from1 = 0, from2 = 0;
		for (int i = 0; i < pl.npicks; i++) {
			int leaf = x.f.nodes[pl.picks[i].node].leaf;
			from1 += leaf == x.leaf[0];
			from2 += leaf == x.leaf[1];
			if (cases[c].leaf)
				assert_string_equal(x.f.leaves[leaf].name, cases[c].leaf);
		}
		assert_int_equal(from1, cases[c].from_leaf1);
		assert_int_equal(from2, cases[c].from_leaf2);
		placement_release(&pl);
		gx_done(&x);
	}
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int rng_below(uint64_t *s, int n)
{
	return (int)(rng_next(s) % (uint64_t)n);
}

/* Fewest leaves whose free-node counts add up to n, by trying every subset. */
static int brute_min_leaves(const int *cnt, int nl, int n)
{
	int best = -1;
	for (int m = 1; m < (1 << nl); m++) {
		int sum = 0;
		for (int i = 0; i < nl; i++)
			if (m & (1 << i))
				sum += cnt[i];
		int k = __builtin_popcount((unsigned)m);
		if (sum >= n && (best < 0 || k < best))
			best = k;
	}
	return best;
}

/* A node that only uses CPUs: n of them. */
static void use_cpus(struct placer *p, int node, int n)
{
	struct placement pl;
	placement_init(&pl);
	struct place_pick k = {.node = node, .gpu = -1, .cpus = n};
	assert_int_equal(placement_add(&pl, &k), SL_OK);
	assert_int_equal(placer_claim(p, &pl, NULL), SL_OK);
	placement_release(&pl);
}

/* A 16-GPU NVSwitch type: more GPUs than the index keeps buckets for, so its
 * nodes are judged one by one. */
static void add_big_type(struct gx *x)
{
	struct node_type t = x->f.types[fleet_find_type(&x->f, "hgx-h100-8")];
	snprintf(t.name, sizeof(t.name), "big-16");
	t.ngpus = 16;
	for (int i = 0; i < 16; i++) {
		t.numa[i] = (int8_t)(i / 8);
		for (int j = 0; j < 16; j++)
			t.link[i][j] = t.link[0][i == j ? 0 : 1];
	}
	assert_int_equal(fleet_add_type(&x->f, &t, NULL, NULL), SL_OK);
}

/* Random leaves of free and busy nodes of type with ngpus GPUs; every gang
 * size must land on the fewest leaves. With cpus, gangs ask 8 CPUs per node
 * and some free nodes have CPUs in use: too many (not eligible) or a few
 * (still eligible). Names are shuffled so that a leaf's nodes are not next to
 * each other in name order (the index counts them a run of one leaf at a
 * time). */
static void leaves_bruteforce(bool cpus, const char *type)
{
	uint64_t seed = cpus ? 7 : 99;
	for (int round = 0; round < 40; round++) {
		struct gx x;
		int nl = 2 + rng_below(&seed, 5);
		gx_init(&x, nl);
		if (!strcmp(type, "big-16"))
			add_big_type(&x);
		int free_cnt[MAX_LEAVES] = {0}, total = 0;
		int nodes[64], nn = 0, cpu_use[64];
		bool busy[64];
		const struct node_type *t = &x.f.types[fleet_find_type(&x.f, type)];
		int ncpus = t->cpus, g = t->ngpus;
		for (int l = 0; l < nl; l++) {
			int k = rng_below(&seed, 6);
			for (int i = 0; i < k; i++) {
				char name[48];
				snprintf(name, sizeof(name), "r%d-%03d", round,
					 cpus ? (nn * 37) % 101 : l * 10 + i);
				busy[nn] = rng_below(&seed, 3) == 0;
				int r = cpus ? rng_below(&seed, 3) : 0;
				cpu_use[nn] = r == 0 ? 0 : r == 1 ? ncpus - 7 : ncpus - 8;
				nodes[nn++] = gx_node(&x, l, name, type);
				if (!busy[nn - 1] && cpu_use[nn - 1] <= ncpus - 8) {
					free_cnt[l]++;
					total++;
				}
			}
		}
		gx_start(&x);
		for (int i = 0; i < nn; i++) {
			if (busy[i])
				use_mask(x.p, nodes[i], (gpumask_t)1 << rng_below(&seed, g));
			if (cpu_use[i])
				use_cpus(x.p, nodes[i], cpu_use[i]);
		}
		for (int n = 1; n <= total + 1; n++) {
			struct placement pl;
			placement_init(&pl);
			struct place_request q = gang(g * n, g);
			q.cpus = cpus ? 8 : 0;
			enum sl_err e = placer_place(x.p, &q, &pl, NULL);
			if (n > total) {
				assert_int_equal(e, SL_ENOSPACE);
				assert_int_equal(pl.npicks, 0);
			} else {
				assert_int_equal(e, SL_OK);
				assert_int_equal(pl.npicks, n);
				check_picks(&x, &pl, g);
				for (int i = 0; cpus && i < n; i++)
					assert_true(placer_cpus_used(x.p, pl.picks[i].node) <=
						    ncpus - 8);
				int want = brute_min_leaves(free_cnt, nl, n);
				if (pl.score.leaves != want)
					fail_msg("round %d n=%d: %d leaves, minimum %d", round, n,
						 pl.score.leaves, want);
			}
			placement_release(&pl);
		}
		gx_done(&x);
	}
}

static void test_leaves_bruteforce(void **state)
{
	(void)state;
	leaves_bruteforce(false, "hgx-h100-8");
}

static void test_leaves_cpus(void **state)
{
	(void)state;
	leaves_bruteforce(true, "hgx-h100-8");
}

static void test_leaves_large_type(void **state)
{
	(void)state;
	leaves_bruteforce(true, "big-16");
}

/* Gangs over many small leaves (more than the handful a gang usually spans):
 * the fewest leaves is the count of the largest leaves that hold it. */
static void test_many_leaves(void **state)
{
	(void)state;
	struct gx x;
	gx_init(&x, MAX_LEAVES);
	int cnt[MAX_LEAVES], total = 0;
	for (int l = 0; l < MAX_LEAVES; l++) {
		cnt[l] = 1 + (l * 7) % 4; /* 1..4 nodes, largest leaves not first */
		for (int i = 0; i < cnt[l]; i++) {
			char name[32];
			snprintf(name, sizeof(name), "m%02d-%d", l, i);
			gx_node(&x, l, name, "hgx-h100-8");
		}
		total += cnt[l];
	}
	gx_start(&x);
	int sorted[MAX_LEAVES];
	memcpy(sorted, cnt, sizeof(sorted));
	for (int i = 1; i < MAX_LEAVES; i++) /* largest first */
		for (int j = i; j > 0 && sorted[j - 1] < sorted[j]; j--) {
			int t = sorted[j];
			sorted[j] = sorted[j - 1];
			sorted[j - 1] = t;
		}
	for (int n = 1; n <= total; n++) {
		int want = 0;
		for (int sum = 0; sum < n; sum += sorted[want++])
			;
		struct placement pl;
		placement_init(&pl);
		struct place_request q = gang(8 * n, 8);
		assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_OK);
		assert_int_equal(pl.npicks, n);
		check_picks(&x, &pl, 8);
		if (pl.score.leaves != want)
			fail_msg("n=%d: %d leaves, minimum %d", n, pl.score.leaves, want);
		placement_release(&pl);
	}
	gx_done(&x);
}

/* ---- NVL72 --------------------------------------------------------------- */

struct nvl {
	struct gx x;
	int tray[2][18];
};

static void nvl_init(struct nvl *v)
{
	gx_init(&v->x, 2);
	for (int r = 0; r < 2; r++) {
		for (int t = 0; t < 18; t++) {
			char name[32];
			snprintf(name, sizeof(name), "gb-r%d-t%02d", r + 1, t + 1);
			v->tray[r][t] = gx_node(&v->x, r, name, "gb200-nvl72-tray");
		}
		char dname[48];
		snprintf(dname, sizeof(dname), "rack-%d", r + 1);
		int d;
		assert_int_equal(fleet_add_domain(&v->x.f, dname, v->tray[r], 18, &d, NULL),
				 SL_OK);
	}
	gx_start(&v->x);
}

static int domain_of(const struct gx *x, const struct placement *pl, bool *one)
{
	int d = x->f.nodes[pl->picks[0].node].domain;
	*one = true;
	for (int i = 1; i < pl->npicks; i++)
		*one &= x->f.nodes[pl->picks[i].node].domain == d;
	return d;
}

static void test_nvl72(void **state)
{
	(void)state;
	struct nvl v;
	nvl_init(&v);
	struct gx *x = &v.x;
	struct placement pl;
	placement_init(&pl);
	bool one;
	/* 72 GPUs: one whole rack, 18 trays of 4. */
	struct place_request q = gang(72, 0);
	q.nmodels = 1;
	q.models[0] = "gb200";
	assert_int_equal(placer_place(x->p, &q, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 18);
	check_picks(x, &pl, 4);
	assert_int_equal(domain_of(x, &pl, &one), 0);
	assert_true(one);
	assert_int_equal(pl.score.domains, 1);
	/* One tray busy in rack 1: the 72 go to rack 2. */
	use_mask(x->p, v.tray[0][5], 0x1);
	assert_int_equal(placer_place(x->p, &q, &pl, NULL), SL_OK);
	assert_int_equal(domain_of(x, &pl, &one), 1);
	assert_true(one);
	/* 16 GPUs = 4 trays of one rack, the rack with the fewest free trays. */
	struct place_request q16 = gang(16, 0);
	assert_int_equal(placer_place(x->p, &q16, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 4);
	check_picks(x, &pl, 4);
	assert_int_equal(domain_of(x, &pl, &one), 0);
	assert_true(one);
	/* A busy tray in each rack: a 72-GPU gang is refused, not split. */
	use_mask(x->p, v.tray[1][0], 0x2);
	assert_int_equal(placer_place(x->p, &q, &pl, NULL), SL_ENOSPACE);
	assert_int_equal(pl.failed, PLACE_C_GANG);
	assert_non_null(strstr(pl.why, "NVLink domain"));
	assert_non_null(strstr(pl.why, "has 17"));
	assert_int_equal(pl.npicks, 0);
	/* 8 GPUs infer per_node 4 (the tray), 2 trays of one rack. */
	struct place_request q8 = gang(8, 0);
	assert_int_equal(placer_place(x->p, &q8, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 2);
	domain_of(x, &pl, &one);
	assert_true(one);
	placement_release(&pl);
	gx_done(x);

	/* 144 GPUs on two free racks: two whole domains. */
	nvl_init(&v);
	placement_init(&pl);
	struct place_request q144 = gang(144, 0);
	assert_int_equal(placer_place(x->p, &q144, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 36);
	assert_int_equal(pl.score.domains, 2);
	/* 76 GPUs (19 trays) cannot fit one domain: two, as few as possible. */
	struct place_request q76 = gang(76, 0);
	assert_int_equal(placer_place(x->p, &q76, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 19);
	assert_int_equal(pl.score.domains, 2);
	placement_release(&pl);
	gx_done(x);
}

/* ---- rails and per_node -------------------------------------------------- */

static void test_rails(void **state)
{
	(void)state;
	struct gx x;
	gx_init(&x, 1);
	int a = gx_node(&x, 0, "a", "hgx-h100-8");
	int b = gx_node(&x, 0, "b", "hgx-h100-8");
	int c = gx_node(&x, 0, "c", "hgx-h100-8");
	gx_start(&x);
	use_mask(x.p, a, 0xf0);
	use_mask(x.p, b, 0x0f);
	use_mask(x.p, c, 0xf0);
	struct placement pl;
	placement_init(&pl);
	struct place_request q = gang(8, 4);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 2);
	assert_true(has_node(&x, &pl, "a") && has_node(&x, &pl, "c"));
	assert_true(pl.score.rails_aligned);
	assert_int_equal(pl.picks[0].gpus, pl.picks[1].gpus);
	/* With c gone, alignment is impossible; the gang still forms. */
	placer_set_node_usable(x.p, c, false);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 2);
	assert_false(pl.score.rails_aligned);
	placement_release(&pl);
	gx_done(&x);
}

static void test_per_node(void **state)
{
	(void)state;
	struct gx x;
	gx_init(&x, 2);
	for (int i = 0; i < 4; i++) {
		char name[48];
		snprintf(name, sizeof(name), "h%d", i);
		gx_node(&x, i / 2, name, "hgx-h100-8");
	}
	gx_start(&x);
	struct placement pl;
	placement_init(&pl);
	struct sl_diag d;
	struct place_request q = gang(16, 0);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 2);
	check_picks(&x, &pl, 8);
	assert_int_equal(pl.score.leaves, 1);
	q = gang(12, 0);
	sl_diag_clear(&d);
	assert_int_equal(placer_place(x.p, &q, &pl, &d), SL_EINVAL);
	assert_non_null(strstr(d.hint, "multiple of 8"));
	q = gang(12, 4);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 3);
	check_picks(&x, &pl, 4);
	q = gang(10, 3);
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_EINVAL);
	/* Exclusive gang: whole nodes even for per_node 2. */
	q = gang(4, 2);
	q.exclusive = true;
	assert_int_equal(placer_place(x.p, &q, &pl, NULL), SL_OK);
	assert_int_equal(pl.npicks, 2);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pl.picks[i].gpus, 0xff);
	placement_release(&pl);
	gx_done(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_or_nothing), cmocka_unit_test(test_leaf_choice),
		cmocka_unit_test(test_leaves_bruteforce), cmocka_unit_test(test_leaves_cpus),
		cmocka_unit_test(test_leaves_large_type), cmocka_unit_test(test_many_leaves),
		cmocka_unit_test(test_nvl72),
		cmocka_unit_test(test_rails), cmocka_unit_test(test_per_node),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

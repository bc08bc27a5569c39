/* place_node.c - per-type tables for choosing GPUs inside one node.
 *
 * A node has at most TOPO_MAX_GPUS (16) GPUs, so a GPU set is a 16-bit mask and
 * "every subset" is at most 65,536 entries: small enough to tabulate the quality
 * of every set once per node type (incrementally, O(n) per set), and to answer a
 * (free, k) question by enumerating the k-subsets of the free mask.
 *
 * Qualities and leftover scores are packed into integer keys whose natural
 * order is the contract's lexicographic order, so the inner loops compare one
 * integer; the structs are decoded only for the caller.
 *
 * The leftover score needs "most disjoint full-quality s-sets inside R". That is
 * a DP over masks: the lowest GPU of R is either left unused or sits in one
 * full-quality set inside R. It is memoised per s, cut short by the bound
 * |R| / s, and answered from a superset closure ("R holds at least one") when
 * the bound is 1, which makes most queries O(1).
 *
 * Ties in (quality, leftover) go to the set whose own score is better: leaving
 * one GPU either way, taking a whole free half beats splitting it.
 *
 * Types of up to PTAB_EAGER_GPUS GPUs (256 free masks) get every answer and the
 * fleet-index order precomputed at creation (about 0.1 ms per type at -O2).
 * Larger types keep the same memo tables (about 1.2 MB for 16 GPUs) but fill
 * them when asked; the per-k answer tables (256 KB each at 16 GPUs) are
 * allocated on first use, and if that allocation fails the answer is simply
 * recomputed each time instead of memoised. */
#include "place_node.h"

#include <stdlib.h>
#include <string.h>

#define NSIZES 3 /* leftover set sizes: 8, 4, 2 */
static const int leftover_sizes[NSIZES] = {8, 4, 2};

/* Quality key: bottleneck (17 bits) | total (23) | 31 - numa (5) | nics (5).
 * Pair bandwidths are uint16_t and at most 120 pairs exist, so only a single
 * GPU's model bandwidth can hit the clamp, and singles all tie anyway. A valid
 * set's key is never 0 (the numa field is at least 15). */
#define QK_BOTT_MAX ((1 << 17) - 1)
#define QK_TOTAL_MAX ((1 << 23) - 1)

/* Leftover key: cnt8 | cnt4 | cnt2 | 31 - stranded, 5 bits each; never 0. */
#define LK_UNKNOWN 0u

/* Per-k answer memo: 0 = not computed yet, BEST_NONE = no valid k-set, else
 * the chosen mask. */
#define BEST_UNKNOWN 0u
#define BEST_NONE 0x80000000u

struct fq_list {
	int size;               /* s */
	int count;              /* full-quality s-sets on the type */
	gpumask_t *sets;        /* grouped by lowest GPU, ascending within */
	int start[TOPO_MAX_GPUS + 1]; /* sets[start[b] .. start[b+1]) have lowest GPU b */
	uint8_t *contains;      /* [R]: R holds at least one (filled on first use) */
	bool contains_ready;
	int8_t *pack;           /* [R]: memoised maxpack, -1 = unknown */
};

struct ptab {
	struct node_type t;
	int n;
	gpumask_t all;
	uint64_t *qkey;                   /* [S]: packed quality, 0 = invalid set */
	uint64_t full[TOPO_MAX_GPUS + 1]; /* full quality key per size, 0 = none */
	struct fq_list fq[NSIZES];
	gpumask_t pairs[TOPO_MAX_GPUS];   /* GPUs forming a full-quality pair with i */
	uint32_t *lkey;                   /* [R]: packed leftover, 0 = unknown */
	uint32_t *best[TOPO_MAX_GPUS + 1]; /* [free]: see BEST_* */
	gpumask_t *order[TOPO_MAX_GPUS + 1];
	int *tier[TOPO_MAX_GPUS + 1];
	int norder[TOPO_MAX_GPUS + 1];
};

/* Inline SWAR: without -mpopcnt the builtin is a libgcc call, and this runs in
 * every inner loop. */
static int popc(gpumask_t m)
{
	m = m - (m >> 1 & 0x55555555u);
	m = (m & 0x33333333u) + (m >> 2 & 0x33333333u);
	m = (m + (m >> 4)) & 0x0f0f0f0fu;
	return (int)((m * 0x01010101u) >> 24);
}

static int lowbit(gpumask_t m)
{
	return __builtin_ctz(m);
}

static gpumask_t all_mask(int n)
{
	return n >= 32 ? ~(gpumask_t)0 : (((gpumask_t)1 << n) - 1u);
}

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* ---- quality ---------------------------------------------------------- */

int node_quality_cmp(const struct node_quality *a, const struct node_quality *b)
{
	if (a->bottleneck_gbps != b->bottleneck_gbps)
		return a->bottleneck_gbps > b->bottleneck_gbps ? 1 : -1;
	if (a->total_gbps != b->total_gbps)
		return a->total_gbps > b->total_gbps ? 1 : -1;
	if (a->numa_spanned != b->numa_spanned)
		return a->numa_spanned < b->numa_spanned ? 1 : -1;
	if (a->nics != b->nics)
		return a->nics > b->nics ? 1 : -1;
	return 0;
}

int node_leftover_cmp(const struct node_leftover *a, const struct node_leftover *b)
{
	for (int i = 0; i < 3; i++)
		if (a->cnt[i] != b->cnt[i])
			return a->cnt[i] > b->cnt[i] ? 1 : -1;
	if (a->stranded != b->stranded)
		return a->stranded < b->stranded ? 1 : -1;
	return 0;
}

static int single_gbps(const struct node_type *t)
{
	return t->gpu ? t->gpu->ic_gbps : 0;
}

/* A strict partition constrains every set no larger than its largest group. */
static bool respects_groups(const struct node_type *t, gpumask_t set)
{
	int ng = clampi(t->ngroups, 0, TOPO_MAX_GROUPS);
	int maxg = 0;

	if (!t->groups_strict || ng == 0)
		return true;
	for (int g = 0; g < ng; g++)
		if (popc(t->groups[g]) > maxg)
			maxg = popc(t->groups[g]);
	if (popc(set) > maxg)
		return true;
	for (int g = 0; g < ng; g++)
		if ((set & ~t->groups[g]) == 0)
			return true;
	return false;
}

static gpumask_t gpu_nics(const struct node_type *t, int i)
{
	int nn = clampi(t->nnics, 0, TOPO_MAX_NICS);
	gpumask_t m = 0;

	for (int j = 0; j < nn; j++)
		if (t->nics[j].gpus & ((gpumask_t)1 << i))
			m |= (gpumask_t)1 << j;
	return m;
}

bool node_set_quality(const struct node_type *t, gpumask_t set, struct node_quality *q)
{
	int bott = 0, total = 0, numa = 0;
	gpumask_t nics = 0;

	if (!t || t->ngpus < 1 || t->ngpus > TOPO_MAX_GPUS || set == 0 ||
	    (set & ~all_mask(t->ngpus)) || !respects_groups(t, set))
		return false;
	if (popc(set) == 1)
		bott = single_gbps(t);
	else
		bott = -1;
	for (gpumask_t a = set; a; a &= a - 1) {
		int i = lowbit(a);
		bool seen = false;

		for (gpumask_t b = set & (((gpumask_t)1 << i) - 1u); b; b &= b - 1) {
			int j = lowbit(b);
			int g = t->link[i][j].gbps;

			total += g;
			if (bott < 0 || g < bott)
				bott = g;
			if (t->numa[j] == t->numa[i])
				seen = true;
		}
		if (!seen)
			numa++;
		nics |= gpu_nics(t, i);
	}
	if (q) {
		q->bottleneck_gbps = bott;
		q->total_gbps = total;
		q->numa_spanned = numa;
		q->nics = popc(nics);
	}
	return true;
}

static uint64_t qkey_pack(int bott, int total, int numa, int nics)
{
	return (uint64_t)clampi(bott, 0, QK_BOTT_MAX) << 33 |
	       (uint64_t)clampi(total, 0, QK_TOTAL_MAX) << 10 |
	       (uint64_t)(31 - clampi(numa, 0, 31)) << 5 | (uint64_t)clampi(nics, 0, 31);
}

/* Decodes a key of a k-set; singles get the model's bandwidth back unclamped. */
static void qkey_unpack(const struct ptab *p, uint64_t key, int k, struct node_quality *q)
{
	q->bottleneck_gbps = k == 1 ? single_gbps(&p->t) : (int)(key >> 33 & QK_BOTT_MAX);
	q->total_gbps = (int)(key >> 10 & QK_TOTAL_MAX);
	q->numa_spanned = 31 - (int)(key >> 5 & 31);
	q->nics = (int)(key & 31);
}

/* Every subset's key from the subset without its lowest GPU: O(n) per set.
 * side[] carries the NUMA and NIC masks (16 bits each) that the key loses. */
static void fill_qkeys(struct ptab *p, uint32_t *side)
{
	const struct node_type *t = &p->t;
	gpumask_t numabit[TOPO_MAX_GPUS], nicbit[TOPO_MAX_GPUS];
	uint32_t nsets = (uint32_t)1 << p->n;

	for (int i = 0; i < p->n; i++) {
		int first = i;

		for (int j = 0; j < i; j++)
			if (t->numa[j] == t->numa[i]) {
				first = j;
				break;
			}
		numabit[i] = (gpumask_t)1 << first;
		nicbit[i] = gpu_nics(t, i);
	}
	p->qkey[0] = 0;
	side[0] = 0;
	for (uint32_t s = 1; s < nsets; s++) {
		int i = lowbit(s);
		gpumask_t rest = s & (s - 1);
		uint64_t rk = p->qkey[rest];
		int bott, total;

		side[s] = side[rest] | numabit[i] | nicbit[i] << 16;
		if (rest == 0) {
			bott = single_gbps(t);
			total = 0;
		} else {
			bott = popc(rest) == 1 ? QK_BOTT_MAX : (int)(rk >> 33 & QK_BOTT_MAX);
			total = (int)(rk >> 10 & QK_TOTAL_MAX);
			for (gpumask_t b = rest; b; b &= b - 1) {
				int g = t->link[i][lowbit(b)].gbps;

				total += g;
				if (g < bott)
					bott = g;
			}
		}
		/* Raw keys of invalid sets are still needed to build their supersets. */
		p->qkey[s] = qkey_pack(bott, total, popc(side[s] & 0xffffu), popc(side[s] >> 16));
	}
	for (uint32_t s = 1; s < nsets; s++) {
		int k = popc(s);

		if (!respects_groups(t, s)) {
			p->qkey[s] = 0;
			continue;
		}
		if (p->qkey[s] > p->full[k])
			p->full[k] = p->qkey[s];
	}
}

static bool is_full(const struct ptab *p, gpumask_t s, int k)
{
	return p->full[k] != 0 && p->qkey[s] == p->full[k];
}

/* ---- leftover ---------------------------------------------------------- */

static enum sl_err fq_build(struct ptab *p, struct fq_list *l, int size)
{
	uint32_t nsets = (uint32_t)1 << p->n;
	size_t cells = (size_t)nsets;
	int at[TOPO_MAX_GPUS + 1] = {0};

	l->size = size;
	if (size > p->n || p->full[size] == 0)
		return SL_OK; /* count 0: this size never scores */
	for (uint32_t s = 1; s < nsets; s++)
		if (popc(s) == size && is_full(p, s, size))
			at[lowbit(s) + 1]++;
	for (int b = 0; b < p->n; b++)
		at[b + 1] += at[b];
	memcpy(l->start, at, sizeof at);
	l->count = at[p->n];
	l->sets = malloc((size_t)l->count * sizeof *l->sets);
	l->contains = malloc(cells);
	l->pack = malloc(cells);
	if (!l->sets || !l->contains || !l->pack)
		return SL_ENOMEM;
	memset(l->pack, -1, cells);
	for (uint32_t s = 1; s < nsets; s++) /* ascending within each lowest GPU */
		if (popc(s) == size && is_full(p, s, size))
			l->sets[at[lowbit(s)]++] = s;
	return SL_OK;
}

/* contains[R] = R holds a full-quality set: a superset closure, O(n 2^n). */
static void fq_fill_contains(const struct ptab *p, struct fq_list *l)
{
	uint32_t nsets = (uint32_t)1 << p->n;

	for (uint32_t s = 0; s < nsets; s++)
		l->contains[s] = popc(s) == l->size && is_full(p, s, l->size);
	for (int i = 0; i < p->n; i++) {
		uint32_t bit = 1u << i;

		for (uint32_t hi = 0; hi < nsets; hi += bit << 1)
			for (uint32_t s = hi | bit; s < hi + (bit << 1); s++)
				l->contains[s] |= l->contains[s ^ bit];
	}
	l->contains_ready = true;
}

static int binom(int n, int k)
{
	long r = 1;

	if (k < 0 || k > n)
		return 0;
	for (int i = 1; i <= k; i++)
		r = r * (n - k + i) / i;
	return (int)r;
}

/* Iterates the k-subsets of a mask (Gosper's hack over the mask's own bits). */
struct combo {
	uint8_t pos[TOPO_MAX_GPUS];
	int m;
	uint32_t c;
};

static bool combo_first(struct combo *it, gpumask_t from, int k)
{
	it->m = 0;
	for (gpumask_t a = from; a; a &= a - 1)
		it->pos[it->m++] = (uint8_t)lowbit(a);
	if (k < 0 || k > it->m)
		return false;
	it->c = (1u << k) - 1u;
	return true;
}

static bool combo_next(struct combo *it)
{
	uint32_t u, v;

	if (it->c == 0)
		return false;
	u = it->c & -it->c;
	v = it->c + u;
	it->c = v + (((v ^ it->c) / u) >> 2);
	return it->c < (1u << it->m);
}

static gpumask_t combo_mask(const struct combo *it)
{
	gpumask_t m = 0;

	for (uint32_t a = it->c; a; a &= a - 1)
		m |= (gpumask_t)1 << it->pos[lowbit(a)];
	return m;
}

static int maxpack(struct ptab *p, struct fq_list *l, gpumask_t r);

/* The best packing that puts r's lowest GPU b into a set; stops at bound. Walks
 * whichever is shorter: the sets starting at b, or r's own candidate subsets. */
static int pack_with_low(struct ptab *p, struct fq_list *l, gpumask_t r, int bound, int best)
{
	int b = lowbit(r);
	gpumask_t rest = r & (r - 1), bit = (gpumask_t)1 << b;
	int listed = l->start[b + 1] - l->start[b];

	if (binom(popc(rest), l->size - 1) < listed) {
		struct combo it;
		bool more = combo_first(&it, rest, l->size - 1);

		for (; more && best < bound; more = combo_next(&it)) {
			gpumask_t f = combo_mask(&it) | bit;

			if (is_full(p, f, l->size)) {
				int v = 1 + maxpack(p, l, r & ~f);

				if (v > best)
					best = v;
			}
		}
		return best;
	}
	for (int i = l->start[b]; i < l->start[b + 1] && best < bound; i++) {
		gpumask_t f = l->sets[i];

		if ((f & ~r) == 0) {
			int v = 1 + maxpack(p, l, r & ~f);

			if (v > best)
				best = v;
		}
	}
	return best;
}

/* Most disjoint full-quality l->size sets inside r. */
static int maxpack(struct ptab *p, struct fq_list *l, gpumask_t r)
{
	int bound, best;

	if (l->count == 0)
		return 0;
	bound = popc(r) / l->size;
	if (bound == 0)
		return 0;
	if (!l->contains_ready)
		fq_fill_contains(p, l);
	if (!l->contains[r])
		return 0;
	if (bound == 1)
		return 1;
	if (l->pack[r] >= 0)
		return l->pack[r];
	best = maxpack(p, l, r & (r - 1));
	if (best < bound)
		best = pack_with_low(p, l, r, bound, best);
	l->pack[r] = (int8_t)best;
	return best;
}

static uint32_t leftover_key(struct ptab *p, gpumask_t r)
{
	uint32_t key = p->lkey[r];
	int stranded = 0;

	if (key != LK_UNKNOWN)
		return key;
	for (int si = 0; si < NSIZES; si++)
		key = key << 5 | (uint32_t)maxpack(p, &p->fq[si], r);
	for (gpumask_t a = r; a; a &= a - 1)
		if ((p->pairs[lowbit(a)] & r) == 0)
			stranded++;
	key = key << 5 | (uint32_t)(31 - stranded);
	p->lkey[r] = key;
	return key;
}

static void lkey_unpack(uint32_t key, struct node_leftover *out)
{
	out->cnt[0] = (int)(key >> 15 & 31);
	out->cnt[1] = (int)(key >> 10 & 31);
	out->cnt[2] = (int)(key >> 5 & 31);
	out->stranded = 31 - (int)(key & 31);
}

/* ---- best set ---------------------------------------------------------- */

/* Two passes: the top quality first, then the leftover only of sets that
 * reach it (most sets never need their leftover computed). Equal leftovers go
 * to the set that is itself in the better shape: with free = {0,1,4..7} on an
 * NVSwitch box and k = 5, {0,4..7} and {0,1,4,5,6} both leave one GPU, but
 * only the first takes the whole free half whole. */
static uint32_t compute_best(struct ptab *p, gpumask_t free, int k)
{
	struct combo it;
	uint64_t topq = 0;
	uint32_t topl = 0, tops = 0;
	gpumask_t pick = 0;

	if (!combo_first(&it, free, k))
		return BEST_NONE;
	do {
		uint64_t q = p->qkey[combo_mask(&it)];

		if (q > topq)
			topq = q;
	} while (combo_next(&it));
	if (topq == 0)
		return BEST_NONE;
	(void)combo_first(&it, free, k);
	do {
		gpumask_t s = combo_mask(&it);
		uint32_t l, shape;

		if (p->qkey[s] != topq)
			continue;
		l = leftover_key(p, free & ~s);
		if (l < topl)
			continue;
		shape = leftover_key(p, s);
		if (l > topl || shape > tops || (shape == tops && s < pick)) {
			topl = l;
			tops = shape;
			pick = s;
		}
	} while (combo_next(&it));
	return pick;
}

static uint32_t best_lookup(struct ptab *p, gpumask_t free, int k)
{
	uint32_t v;

	if (!p->best[k]) /* lazy types: first question for this k */
		p->best[k] = calloc((size_t)1 << p->n, sizeof *p->best[k]);
	if (!p->best[k])
		return compute_best(p, free, k); /* no memory for the memo: recompute */
	v = p->best[k][free];
	if (v == BEST_UNKNOWN) {
		v = compute_best(p, free, k);
		p->best[k][free] = v;
	}
	return v;
}

bool ptab_best(struct ptab *p, gpumask_t free, int k, struct node_pick *out)
{
	uint32_t v;

	if (!p || k < 1 || k > p->n)
		return false;
	free &= p->all;
	v = best_lookup(p, free, k);
	if (v == BEST_NONE)
		return false;
	if (out) {
		out->set = v;
		qkey_unpack(p, p->qkey[v], k, &out->q);
		lkey_unpack(leftover_key(p, free & ~v), &out->left);
		out->full_quality = is_full(p, v, k);
	}
	return true;
}

bool ptab_full_quality(const struct ptab *p, int k, struct node_quality *q)
{
	if (!p || k < 1 || k > p->n || p->full[k] == 0)
		return false;
	if (q)
		qkey_unpack(p, p->full[k], k, q);
	return true;
}

void ptab_leftover(struct ptab *p, gpumask_t free, struct node_leftover *out)
{
	if (!p || !out)
		return;
	lkey_unpack(leftover_key(p, free & p->all), out);
}

const struct node_type *ptab_type(const struct ptab *p)
{
	return p ? &p->t : NULL;
}

/* ---- fleet-index order (eager types) ----------------------------------- */

struct order_ent {
	uint64_t q;
	uint32_t l;
	int pop;
	gpumask_t m;
};

static int order_cmp(const void *va, const void *vb)
{
	const struct order_ent *a = va, *b = vb;

	if (a->q != b->q)
		return a->q > b->q ? -1 : 1;
	if (a->pop != b->pop)
		return a->pop < b->pop ? -1 : 1;
	if (a->l != b->l)
		return a->l > b->l ? -1 : 1;
	return a->m < b->m ? -1 : a->m > b->m;
}

static enum sl_err build_order(struct ptab *p, int k, struct order_ent *ents)
{
	uint32_t nsets = (uint32_t)1 << p->n;
	int cnt = 0;

	for (uint32_t f = 1; f < nsets; f++) {
		uint32_t v = best_lookup(p, f, k);

		if (v == BEST_NONE)
			continue;
		ents[cnt].q = p->qkey[v];
		ents[cnt].l = leftover_key(p, f & ~v);
		ents[cnt].pop = popc(f);
		ents[cnt].m = f;
		cnt++;
	}
	p->norder[k] = cnt;
	if (cnt == 0)
		return SL_OK;
	qsort(ents, (size_t)cnt, sizeof *ents, order_cmp);
	p->order[k] = malloc((size_t)cnt * sizeof *p->order[k]);
	p->tier[k] = malloc((size_t)cnt * sizeof *p->tier[k]);
	if (!p->order[k] || !p->tier[k])
		return SL_ENOMEM;
	for (int i = 0; i < cnt; i++) {
		const struct order_ent *e = &ents[i], *prev = &ents[i - (i > 0)];
		bool same = i > 0 && e->q == prev->q && e->pop == prev->pop && e->l == prev->l;

		p->order[k][i] = e->m;
		p->tier[k][i] = i == 0 ? 0 : p->tier[k][i - 1] + !same;
	}
	return SL_OK;
}

static enum sl_err build_eager(struct ptab *p)
{
	uint32_t nsets = (uint32_t)1 << p->n;
	struct order_ent *ents = malloc((size_t)nsets * sizeof *ents);
	enum sl_err e = ents ? SL_OK : SL_ENOMEM;

	for (int k = 1; k <= p->n && e == SL_OK; k++) {
		p->best[k] = calloc(nsets, sizeof *p->best[k]);
		if (!p->best[k])
			e = SL_ENOMEM;
		else
			e = build_order(p, k, ents);
	}
	free(ents);
	return e;
}

int ptab_order(const struct ptab *p, int k, const gpumask_t **masks, const int **tier)
{
	if (!p || k < 1 || k > p->n || p->n > PTAB_EAGER_GPUS || p->norder[k] == 0)
		return 0;
	if (masks)
		*masks = p->order[k];
	if (tier)
		*tier = p->tier[k];
	return p->norder[k];
}

/* ---- lifecycle ---------------------------------------------------------- */

static enum sl_err ptab_build(struct ptab *p)
{
	size_t cells = (size_t)1 << p->n;
	uint32_t *side = malloc(cells * sizeof *side);
	enum sl_err e = SL_OK;

	p->qkey = malloc(cells * sizeof *p->qkey);
	p->lkey = calloc(cells, sizeof *p->lkey);
	if (!side || !p->qkey || !p->lkey) {
		free(side);
		return SL_ENOMEM;
	}
	fill_qkeys(p, side);
	free(side);
	for (int si = 0; si < NSIZES && e == SL_OK; si++)
		e = fq_build(p, &p->fq[si], leftover_sizes[si]);
	if (e != SL_OK)
		return e;
	for (int i = 0; i < p->n; i++)
		for (int j = 0; j < p->n; j++)
			if (j != i && p->n >= 2 &&
			    is_full(p, (gpumask_t)1 << i | (gpumask_t)1 << j, 2))
				p->pairs[i] |= (gpumask_t)1 << j;
	return p->n <= PTAB_EAGER_GPUS ? build_eager(p) : SL_OK;
}

enum sl_err ptab_new(const struct node_type *t, struct ptab **out)
{
	struct ptab *p;
	enum sl_err e;

	if (!out)
		return SL_EINVAL;
	*out = NULL;
	if (!t || t->ngpus < 1 || t->ngpus > TOPO_MAX_GPUS)
		return SL_EINVAL;
	p = calloc(1, sizeof *p);
	if (!p)
		return SL_ENOMEM;
	p->t = *t;
	p->n = t->ngpus;
	p->all = all_mask(p->n);
	e = ptab_build(p);
	if (e != SL_OK) {
		ptab_free(p);
		return e;
	}
	*out = p;
	return SL_OK;
}

void ptab_free(struct ptab *p)
{
	if (!p)
		return;
	free(p->qkey);
	free(p->lkey);
	for (int si = 0; si < NSIZES; si++) {
		free(p->fq[si].sets);
		free(p->fq[si].contains);
		free(p->fq[si].pack);
	}
	for (int k = 0; k <= TOPO_MAX_GPUS; k++) {
		free(p->best[k]);
		free(p->order[k]);
		free(p->tier[k]);
	}
	free(p);
}

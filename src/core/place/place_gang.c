/* place_gang.c - multi-node (gang) requests: all or nothing.
 *
 * A gang of n nodes x k GPUs uses one node type. Candidates come from the
 * fleet index (the bucket of each free mask that holds a good k-set), so the
 * cost follows the number of usable nodes, not the fleet. The choice is
 * then made level by level, each level narrowing the pool to the units it
 * picks: NVLink domains (for models with multi-node domains; a gang that fits
 * one domain must stay in one), then leaf switches, then single nodes. At each
 * level: if one unit suffices, the best-fit unit (fewest candidates that still
 * hold the gang, so big units stay whole for big gangs); otherwise the largest
 * units greedily, with the last replaced by the smallest unit that still
 * covers the remainder, which needs the fewest units. At the leaf level the
 * leaf term (place.h) comes before best fit: the leaf where the gang breaks
 * the fewest whole nodes (every GPU free), counting partly used nodes as
 * taken first when the gang asks fewer GPUs per node than the type holds.
 * Inside the last unit, such partly used nodes do come first; then nodes
 * whose chosen local GPU set is the most common (rail alignment), then the
 * fullest nodes, then names.
 *
 * Candidates able to give k GPUs at their type's full quality are tried first;
 * only when no gang can be formed from them are lesser sets accepted. Units
 * are counted in a per-placer scratch array (zero between uses) and only the
 * last unit's candidates are sorted, so no per-request sort of the whole pool.
 *
 * The nodes of a small group filed under one free mask all offer the same
 * pick: such a bucket is counted leaf by leaf from its bitset (a run of one
 * leaf's positions at a time, reading a node only when it has CPUs or memory
 * in use) and gathered only from the leaves chosen, so a gang of whole nodes
 * costs a few bit operations per leaf, not a read of every free node. Types
 * with multi-node NVLink domains choose a domain first and gather every
 * candidate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place_internal.h"

enum { LV_DOMAIN, LV_LEAF, LV_NODE };

struct pl_unit_stat {
	int unit, count;
	int whole; /* of count: candidates with every GPU free */
	int rank;  /* a leaf's place in name order; -1 for other units */
	const char *name;
};

/* A candidate node and the GPUs it would give: what the level-by-level choice
 * reads, and no more, since a gang may gather thousands. */
struct pl_gcand {
	int node;
	gpumask_t set;        /* the GPUs it would give */
	struct node_quality q; /* their quality */
	int freecnt;          /* free GPUs before the pick */
	int unit;             /* the domain or leaf being chosen */
	int freq;             /* how many candidates share set */
	bool whole;           /* taking it breaks a whole node (the leaf term) */
	int rank;             /* its place in name order (pl_name_cmp) */
};

/* A small group's nodes under free mask mask, each offering set at quality q,
 * not gathered yet. */
struct pl_gbucket {
	int group;
	gpumask_t mask, set;
	struct node_quality q;
};

struct gang {
	const struct pl_ctx *c;
	int type, k, n;
	int cpus;            /* what each node must have free: CPUs, */
	int64_t mem;         /* memory (MiB) */
	int nbk;             /* buckets not gathered: p->gbk[0..nbk) */
	struct pl_gcand *out; /* n chosen */
	int nout;
	bool partial;        /* k < the type's GPUs: a pick may fill a partly used node */
	bool leaf_term;      /* on unless placer_set_leaf_term(p, false) */
	int leaf_kept;       /* the leaf term's choice (place.h): whole nodes it kept */
	bool leaf_exact;     /* the last leaf chosen had exactly the nodes taken there */
	char why[256];       /* why the arrangement failed */
	bool lesser;         /* a pick was left out only for not being of full
				quality: the second pass may find more */
};

static enum sl_err gang_scratch(struct placer *p)
{
	if (p->cand)
		return SL_OK;
	size_t n = (size_t)p->f->nnodes + 1;
	p->cand = malloc(n * sizeof(*p->cand));
	/* Per type, a group gives at most one bucket per node it holds. */
	p->gbk = malloc(n * sizeof(*p->gbk));
	p->set_count = calloc((size_t)1 << TOPO_MAX_GPUS, sizeof(*p->set_count));
	p->unit_whole = calloc((size_t)p->nunits + 1, sizeof(*p->unit_whole));
	p->ustat = malloc(((size_t)p->nunits + 1) * sizeof(*p->ustat));
	int nl = p->f->nleaves;
	p->leaf_rank = malloc(((size_t)nl + 1) * sizeof(*p->leaf_rank));
	struct pl_named *ln = malloc(((size_t)nl + 1) * sizeof(*ln));
	if (!p->cand || !p->gbk || !p->set_count || !p->unit_whole || !p->ustat || !p->leaf_rank ||
	    !ln) {
		free(ln);
		pl_gang_scratch_free(p);
		return SL_ENOMEM;
	}
	/* Leaves in name order, so that the leaf level breaks ties without
	 * comparing names. */
	for (int i = 0; i < nl; i++)
		ln[i] = (struct pl_named){p->f->leaves[i].name, i};
	pl_rank_names(ln, nl, p->leaf_rank);
	free(ln);
	return SL_OK;
}

void pl_gang_scratch_free(struct placer *p)
{
	free(p->cand);
	free(p->gbk);
	free(p->set_count);
	free(p->unit_whole);
	free(p->ustat);
	free(p->leaf_rank);
	p->cand = NULL;
	p->gbk = NULL;
	p->set_count = NULL;
	p->unit_whole = NULL;
	p->ustat = NULL;
	p->leaf_rank = NULL;
}

/* ---- candidates ---------------------------------------------------------- */

static gpumask_t full_of(int ngpus)
{
	return ngpus >= 32 ? ~(gpumask_t)0 : (((gpumask_t)1 << ngpus) - 1);
}

static void push(struct placer *p, struct gang *gg, int *nc, int node,
		 const struct node_pick *pk, gpumask_t m)
{
	if (!pl_fits_cpu_mem(p, node, gg->cpus, gg->mem))
		return;
	p->cand[(*nc)++] = (struct pl_gcand){
		.node = node,
		.set = pk->set,
		.q = pk->q,
		.freecnt = __builtin_popcount(m),
		.rank = p->name_rank[node],
	};
}

/* Word i of bucket words w, limited to positions [a, b). */
static uint64_t word_in(const uint64_t *w, int i, int a, int b)
{
	uint64_t x = w[i];
	if (i == a / 64)
		x &= ~(uint64_t)0 << (a % 64);
	if ((i + 1) * 64 > b)
		x &= ((uint64_t)1 << (b % 64)) - 1;
	return x;
}

/* Whether the node at position pos of small group g has the CPUs and memory
 * the gang asks: only a node with some in use can refuse (collect() drops
 * types whose idle nodes cannot give them). */
static bool pos_fits(const struct placer *p, const struct gang *gg, const struct pl_group *g,
		     int pos)
{
	return !((g->cbits[pos / 64] >> (pos % 64)) & 1) ||
	       pl_fits_cpu_mem(p, g->nodes[pos], gg->cpus, gg->mem);
}

/* How many of the positions x of word i of small group g have the CPUs and
 * memory. */
static int word_fits(const struct placer *p, const struct gang *gg, const struct pl_group *g,
		     int i, uint64_t x)
{
	int n = __builtin_popcountll(x);
	for (x &= g->cbits[i]; x; x &= x - 1)
		n -= !pos_fits(p, gg, g, i * 64 + __builtin_ctzll(x));
	return n;
}

/* How many of bucket b's nodes have the CPUs and memory. */
static int bucket_size(const struct placer *p, const struct gang *gg, const struct pl_gbucket *b)
{
	const struct pl_group *g = &p->groups[b->group];
	const uint64_t *w = &g->bits[(size_t)b->mask * (size_t)g->nwords];
	int n = 0;
	for (int i = 0; i < g->nwords; i++)
		n += word_fits(p, gg, g, i, w[i]);
	return n;
}

/* Adds bucket b's nodes that have the CPUs and memory to their leaves'
 * p->unit_count and p->unit_whole, listing leaves first seen in p->units
 * from *nu. */
static void bucket_count(struct placer *p, const struct gang *gg, const struct pl_gbucket *b,
			 int *nu)
{
	const struct pl_group *g = &p->groups[b->group];
	const uint64_t *w = &g->bits[(size_t)b->mask * (size_t)g->nwords];
	bool whole = __builtin_popcount(b->mask) >= p->f->types[g->type].ngpus;
	for (int a = pl_next_pos(w, g->nwords, 0), e; a >= 0; a = pl_next_pos(w, g->nwords, e)) {
		e = g->run_end[a]; /* [a, e): one leaf's positions */
		int c = 0;
		for (int i = a / 64; i * 64 < e; i++)
			c += word_fits(p, gg, g, i, word_in(w, i, a, e));
		if (!c)
			continue;
		int leaf = p->f->nodes[g->nodes[a]].leaf;
		if (!p->unit_count[leaf])
			p->units[(*nu)++] = leaf;
		p->unit_count[leaf] += c;
		p->unit_whole[leaf] += whole ? c : 0;
	}
}

/* Gathers bucket b's nodes that have the CPUs and memory: every one into arr
 * from *n when all; else those whose leaf is marked in p->unit_count, -1
 * into gg->out and -2 into arr from *n. */
static void bucket_take(struct placer *p, struct gang *gg, const struct pl_gbucket *b,
			bool all, struct pl_gcand *arr, int *n)
{
	const struct pl_group *g = &p->groups[b->group];
	const uint64_t *w = &g->bits[(size_t)b->mask * (size_t)g->nwords];
	int freecnt = __builtin_popcount(b->mask);
	for (int a = pl_next_pos(w, g->nwords, 0), e; a >= 0; a = pl_next_pos(w, g->nwords, e)) {
		e = g->run_end[a];
		int leaf = p->f->nodes[g->nodes[a]].leaf;
		int mark = all ? -2 : p->unit_count[leaf];
		if (mark >= 0)
			continue;
		for (int i = a / 64; i * 64 < e; i++)
			for (uint64_t x = word_in(w, i, a, e); x; x &= x - 1) {
				int pos = i * 64 + __builtin_ctzll(x), node = g->nodes[pos];
				if (!pos_fits(p, gg, g, pos))
					continue;
				struct pl_gcand cd = {
					.node = node,
					.set = b->set,
					.q = b->q,
					.freecnt = freecnt,
					.unit = leaf,
					.rank = p->name_rank[node],
				};
				if (mark == -1)
					gg->out[gg->nout++] = cd;
				else
					arr[(*n)++] = cd;
			}
	}
}

/* The pick a node with free mask m offers, or false. */
static bool offer(struct placer *p, struct gang *gg, gpumask_t m, bool full_only,
		  struct node_pick *pk)
{
	const struct node_type *t = &p->f->types[gg->type];
	struct ptab *pt = p->ptabs[gg->type];
	if (gg->c->req->exclusive) {
		gpumask_t full = full_of(t->ngpus);
		struct node_quality fq;
		if (m != full)
			return false;
		memset(pk, 0, sizeof(*pk));
		pk->set = full;
		if (!node_set_quality(t, full, &pk->q))
			return false;
		pk->full_quality = ptab_full_quality(pt, t->ngpus, &fq) &&
				   !node_quality_cmp(&pk->q, &fq);
		ptab_leftover(pt, 0, &pk->left);
	} else if (!ptab_best(pt, m, gg->k, pk)) {
		return false;
	}
	if (pk->q.bottleneck_gbps < gg->c->req->min_bw_gbps)
		return false;
	if (full_only && !pk->full_quality) {
		gg->lesser = true;
		return false;
	}
	return true;
}

/* Candidates of the gang's type: gathered into p->cand (their count in *nmat)
 * or, for small groups when the leaf level comes first, left in buckets
 * (gg->nbk). Returns how many there are in all. */
static int collect(struct placer *p, struct gang *gg, bool full_only, int *nmat)
{
	const struct node_type *t = &p->f->types[gg->type];
	struct ptab *pt = p->ptabs[gg->type];
	int nc = 0, total = 0;
	pl_demand(gg->c, t, gg->c->req->exclusive ? t->ngpus : gg->k, 0, &gg->cpus, &gg->mem);
	gg->nbk = 0;
	*nmat = 0;
	if (gg->cpus > t->cpus || gg->mem > (int64_t)t->mem_gib * 1024)
		return 0; /* not even an idle node has them */
	bool late = !(t->gpu && t->gpu->domain_gpus > 0);
	for (int gi = 0; gi < p->ngroups; gi++) {
		const struct pl_group *g = &p->groups[gi];
		if (!p->group_ok[gi] || g->type != gg->type)
			continue;
		struct node_pick pk;
		if (!g->small) {
			for (int pos = 0; pos < g->n; pos++) {
				int node = g->nodes[pos];
				gpumask_t m = p->nodes[node].imask;
				if (m && offer(p, gg, m, full_only, &pk))
					push(p, gg, &nc, node, &pk, m);
			}
			continue;
		}
		const gpumask_t *masks = NULL, full = full_of(t->ngpus);
		const int *tier;
		int cnt = gg->c->req->exclusive ? 1 : ptab_order(pt, gg->k, &masks, &tier);
		for (int i = 0; i < cnt; i++) {
			gpumask_t m = gg->c->req->exclusive ? full : masks[i];
			if (!g->count[m])
				continue;
			/* Masks come best quality first: once one fails, all do. */
			if (!offer(p, gg, m, full_only, &pk))
				break;
			struct pl_gbucket *b = &p->gbk[gg->nbk];
			*b = (struct pl_gbucket){gi, m, pk.set, pk.q};
			if (late) {
				int c = bucket_size(p, gg, b);
				gg->nbk += c > 0;
				total += c;
			} else {
				bucket_take(p, gg, b, true, p->cand, &nc);
			}
		}
	}
	*nmat = nc;
	return total + nc;
}

/* ---- level-by-level choice ----------------------------------------------- */

static int unit_of(const struct placer *p, const struct pl_gcand *x, int level)
{
	const struct fleet *f = p->f;
	const struct fleet_node *fn = &f->nodes[x->node];
	if (level == LV_LEAF)
		return fn->leaf;
	return fn->domain >= 0 ? f->nleaves + fn->domain : f->nleaves + f->ndomains + x->node;
}

static const char *unit_name(const struct placer *p, int u)
{
	const struct fleet *f = p->f;
	if (u < f->nleaves)
		return f->leaves[u].name;
	if (u < f->nleaves + f->ndomains)
		return f->domains[u - f->nleaves].name;
	return f->nodes[u - f->nleaves - f->ndomains].name;
}

static int ustat_cmp(const void *a, const void *b)
{
	const struct pl_unit_stat *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->rank >= 0 && y->rank >= 0)
		return pl_rank_cmp(x->rank, y->rank);
	return strcmp(x->name, y->name);
}

static int node_order_cmp(const void *a, const void *b)
{
	const struct pl_gcand *x = a, *y = b;
	if (x->whole != y->whole) /* the leaf term: partly used nodes first */
		return x->whole ? 1 : -1;
	if (x->freq != y->freq)
		return x->freq > y->freq ? -1 : 1;
	if (x->set != y->set)
		return x->set < y->set ? -1 : 1;
	if (x->freecnt != y->freecnt)
		return x->freecnt < y->freecnt ? -1 : 1;
	return pl_rank_cmp(x->rank, y->rank);
}

static void take_nodes(struct placer *p, struct gang *gg, struct pl_gcand *arr, int m,
		       int need)
{
	for (int i = 0; i < m; i++)
		p->set_count[arr[i].set]++;
	int ngpus = p->f->types[gg->type].ngpus;
	for (int i = 0; i < m; i++) {
		arr[i].freq = p->set_count[arr[i].set];
		arr[i].whole = gg->leaf_term && gg->partial && arr[i].freecnt >= ngpus;
	}
	for (int i = 0; i < m; i++)
		p->set_count[arr[i].set] = 0;
	if (m > 32) {
		qsort(arr, (size_t)m, sizeof(*arr), node_order_cmp);
	} else { /* a leaf's worth: insertion, without a call per comparison */
		for (int i = 1; i < m; i++) {
			struct pl_gcand x = arr[i];
			int j = i;
			for (; j > 0 && node_order_cmp(&arr[j - 1], &x) > 0; j--)
				arr[j] = arr[j - 1];
			arr[j] = x;
		}
	}
	memcpy(gg->out + gg->nout, arr, (size_t)need * sizeof(*arr));
	gg->nout += need;
}

/* Whole nodes (every GPU free) that taking need candidates of u would break,
 * when partly used candidates are taken first: 0 while u has enough partly
 * used nodes. With k = the type's GPUs every pick is a whole node. */
static int unit_breaks(const struct pl_unit_stat *u, int need, bool partial)
{
	if (!partial)
		return need;
	int part = u->count - u->whole;
	return need > part ? need - part : 0;
}

/* The index in ustat[0..nu) (in any order) of the unit that holds need
 * candidates, or -1: with leaf_term, the one whose whole nodes the gang breaks
 * fewest of (the leaf term, place.h), then fewest candidates (best fit), then
 * name; without, best fit then name. */
static int best_unit(const struct pl_unit_stat *us, int nu, int need, bool partial,
		     bool leaf_term)
{
	int b = -1;
	for (int i = 0; i < nu; i++) {
		if (us[i].count < need)
			continue;
		if (b >= 0 && leaf_term) {
			int x = unit_breaks(&us[i], need, partial), y = unit_breaks(&us[b], need, partial);
			if (x != y) {
				if (x < y)
					b = i;
				continue;
			}
		}
		if (b < 0 || us[i].count < us[b].count ||
		    (us[i].count == us[b].count && ustat_cmp(&us[i], &us[b]) < 0))
			b = i;
	}
	return b;
}

/* Chooses need candidates of arr[0..m) into gg->out at this level and below.
 * False (gg->why set) when one_unit is required and no unit suffices. */
static bool choose(struct placer *p, struct gang *gg, struct pl_gcand *arr, int m,
		   int need, int level, bool one_unit)
{
	if (level == LV_NODE) {
		take_nodes(p, gg, arr, m, need);
		return true;
	}
	int nu = 0, ngpus = p->f->types[gg->type].ngpus;
	for (int i = 0; i < m; i++) {
		int u = unit_of(p, &arr[i], level);
		arr[i].unit = u;
		if (!p->unit_count[u]++)
			p->units[nu++] = u;
		p->unit_whole[u] += arr[i].freecnt >= ngpus;
	}
	/* Buckets are left only when the leaf level comes first. */
	for (int b = 0; level == LV_LEAF && b < gg->nbk; b++)
		bucket_count(p, gg, &p->gbk[b], &nu);
	struct pl_unit_stat *us = p->ustat;
	for (int i = 0; i < nu; i++) {
		int u = p->units[i];
		int rank = level == LV_LEAF ? p->leaf_rank[u] : -1;
		us[i] = (struct pl_unit_stat){u, p->unit_count[u], p->unit_whole[u], rank,
					      unit_name(p, u)};
		p->unit_whole[u] = 0;
	}
	bool lt = level == LV_LEAF && gg->leaf_term;
	int last = best_unit(us, nu, need, gg->partial, lt), nfull = 0, r = need;
	if (lt && last >= 0) {
		int plain = best_unit(us, nu, need, gg->partial, false);
		if (plain != last)
			gg->leaf_kept = unit_breaks(&us[plain], need, gg->partial) -
					unit_breaks(&us[last], need, gg->partial);
	}
	if (last < 0 && one_unit) {
		int most = 0; /* the unit with the most candidates */
		for (int i = 1; i < nu; i++)
			if (ustat_cmp(&us[i], &us[most]) < 0)
				most = i;
		if (level == LV_LEAF)
			snprintf(gg->why, sizeof(gg->why),
				 "gang of %d nodes x %d GPUs must sit under one leaf switch "
				 "but no leaf has %d eligible nodes; best leaf %s has %d",
				 gg->n, gg->k, need, us[most].name, us[most].count);
		else
			snprintf(gg->why, sizeof(gg->why),
				 "gang of %d nodes x %d GPUs fits one NVLink domain but no "
				 "domain has %d eligible nodes; best domain %s has %d",
				 gg->n, gg->k, need, us[most].name, us[most].count);
		for (int i = 0; i < nu; i++)
			p->unit_count[us[i].unit] = 0;
		return false;
	}
	if (last < 0) {
		/* The largest units while the rest needs more than any holds, then
		 * the best one for the rest. The largest are found one at a time
		 * (a gang spans a few units), sorted when there are many. */
		for (;;) {
			if (nfull == 8) {
				qsort(us + nfull, (size_t)(nu - nfull), sizeof(*us), ustat_cmp);
				while (r > us[nfull].count)
					r -= us[nfull++].count;
				break;
			}
			int mx = nfull;
			for (int i = nfull + 1; i < nu; i++)
				if (ustat_cmp(&us[i], &us[mx]) < 0)
					mx = i;
			if (r <= us[mx].count)
				break;
			struct pl_unit_stat t = us[nfull];
			us[nfull] = us[mx];
			us[mx] = t;
			r -= us[nfull++].count;
		}
		last = nfull + best_unit(us + nfull, nu - nfull, r, gg->partial, lt);
	}
	if (level == LV_LEAF)
		gg->leaf_exact = us[last].count == r;
	for (int i = 0; i < nu; i++)
		p->unit_count[us[i].unit] = i < nfull ? -1 : (i == last ? -2 : 0);
	int j = 0;
	for (int i = 0; i < m; i++) {
		int mark = p->unit_count[arr[i].unit];
		if (mark == -1) {
			gg->out[gg->nout++] = arr[i];
		} else if (mark == -2) {
			struct pl_gcand tmp = arr[j];
			arr[j++] = arr[i];
			arr[i] = tmp;
		}
	}
	/* arr[j..) is free now: the buckets' last-unit nodes go there. */
	for (int b = 0; level == LV_LEAF && b < gg->nbk; b++)
		bucket_take(p, gg, &p->gbk[b], false, arr, &j);
	for (int i = 0; i < nu; i++)
		p->unit_count[us[i].unit] = 0;
	return choose(p, gg, arr, j, r, level + 1,
		      level + 1 == LV_LEAF && nfull == 0 && gg->c->req->one_leaf);
}

/* ---- comparing gangs ----------------------------------------------------- */

struct gang_key {
	int domains, leaves;
	bool aligned;
	int fit;
	bool exact; /* fills the last leaf's candidates exactly: first */
	int cands;  /* candidates of the type: more first (types stay balanced) */
	int first;  /* the least name's rank */
};

static int count_units(struct placer *p, const struct pl_gcand *a, int n, int level)
{
	int c = 0;
	for (int i = 0; i < n; i++) {
		const struct fleet_node *fn = &p->f->nodes[a[i].node];
		int u = level == LV_LEAF ? fn->leaf : fn->domain;
		if (u >= 0 && !p->unit_count[u]++)
			p->units[c++] = u;
	}
	for (int i = 0; i < c; i++)
		p->unit_count[p->units[i]] = 0;
	return c;
}

static int name_cmp(const void *a, const void *b)
{
	return pl_rank_cmp(((const struct pl_gcand *)a)->rank, ((const struct pl_gcand *)b)->rank);
}

/* The key of a gang; a's order does not matter (first is the least name). */
static void gang_key(struct placer *p, const struct pl_gcand *a, int n, struct gang_key *k)
{
	k->domains = count_units(p, a, n, LV_DOMAIN);
	k->leaves = count_units(p, a, n, LV_LEAF);
	k->aligned = true;
	k->fit = 0;
	k->first = n ? a[0].rank : -1;
	for (int i = 0; i < n; i++) {
		k->aligned &= a[i].set == a[0].set;
		k->fit += a[i].freecnt;
		if (a[i].rank < k->first)
			k->first = a[i].rank;
	}
}

static int gang_key_cmp(const struct gang_key *a, const struct gang_key *b)
{
	if (a->domains != b->domains)
		return a->domains < b->domains ? -1 : 1;
	if (a->leaves != b->leaves)
		return a->leaves < b->leaves ? -1 : 1;
	if (a->aligned != b->aligned)
		return a->aligned ? -1 : 1;
	if (a->fit != b->fit)
		return a->fit < b->fit ? -1 : 1;
	if (a->exact != b->exact)
		return a->exact ? -1 : 1;
	if (a->cands != b->cands)
		return a->cands > b->cands ? -1 : 1;
	return pl_rank_cmp(a->first, b->first);
}

static bool type_eligible(const struct placer *p, int t, int k)
{
	if (p->f->types[t].ngpus < k)
		return false;
	for (int g = 0; g < p->ngroups; g++)
		if (p->group_ok[g] && p->groups[g].type == t)
			return true;
	return false;
}

/* Tries one type; on success the chosen nodes are in gg->out. */
static bool gang_try_type(struct placer *p, struct gang *gg, bool full_only, int *ncand)
{
	int m;
	*ncand = collect(p, gg, full_only, &m);
	if (*ncand < gg->n)
		return false;
	const struct gpu_model *model = p->f->types[gg->type].gpu;
	gg->nout = 0;
	gg->leaf_kept = 0;
	gg->leaf_exact = false;
	gg->partial = !gg->c->req->exclusive && gg->k < p->f->types[gg->type].ngpus;
	gg->leaf_term = !p->leaf_off;
	if (model && model->domain_gpus > 0) {
		if (!choose(p, gg, p->cand, m, gg->n, LV_DOMAIN,
			    gg->c->req->one_leaf || (int64_t)gg->n * gg->k <= model->domain_gpus))
			return false;
		/* one_leaf: the domain level kept the gang in one domain, the leaf
		 * level in one leaf of it; a domain over several leaves may still
		 * have given nodes of two, so count. */
		if (gg->c->req->one_leaf && count_units(p, gg->out, gg->nout, LV_LEAF) > 1) {
			snprintf(gg->why, sizeof(gg->why),
				 "gang of %d nodes x %d GPUs must sit under one leaf switch but "
				 "no leaf has %d eligible nodes",
				 gg->n, gg->k, gg->n);
			return false;
		}
		return true;
	}
	return choose(p, gg, p->cand, m, gg->n, LV_LEAF, gg->c->req->one_leaf);
}

enum sl_err pl_gang_place(struct placer *p, const struct pl_ctx *c, struct placement *out,
			  struct sl_diag *d)
{
	/* per_node given, or inferred: the most GPUs an eligible node has (0: none) */
	int k = c->req->per_node > 0 ? c->req->per_node : c->maxg;
	if (k <= 0)
		return pl_explain(p, c, c->k, 1, NULL, out);
	if (c->req->gpus % k) {
		sl_diag_set(d, SL_EINVAL, "a gang of %d GPUs does not divide into nodes of %d",
			    c->req->gpus, k);
		sl_diag_hint(d, "ask for a multiple of %d GPUs, or set per_node to a divisor",
			     k);
		return SL_EINVAL;
	}
	int n = c->req->gpus / k;
	if (n > p->f->nnodes)
		return pl_explain(p, c, k, n, NULL, out);
	enum sl_err e = gang_scratch(p);
	if (e != SL_OK)
		return e;
	struct pl_gcand *best = malloc((size_t)n * sizeof(*best));
	struct pl_gcand *cur = malloc((size_t)n * sizeof(*cur));
	if (!best || !cur) {
		free(best);
		free(cur);
		return SL_ENOMEM;
	}
	struct gang gg = {.c = c, .k = k, .n = n, .out = cur};
	struct gang_key bk = {0}, ck;
	bool found = false;
	int best_kept = 0;
	char why[256] = "";
	int most = -1;
	const char *most_type = "";
	for (int pass = 0; pass < 2 && !found; pass++) {
		/* The second pass accepts lesser sets; when the first left none
		 * out it would see the same candidates and fail the same way. */
		if (pass == 1 && !gg.lesser)
			break;
		for (int t = 0; t < p->f->ntypes; t++) {
			if (!type_eligible(p, t, k))
				continue;
			gg.type = t;
			gg.why[0] = '\0';
			int ncand;
			bool ok = gang_try_type(p, &gg, pass == 0, &ncand);
			if (ncand > most) {
				most = ncand;
				most_type = p->f->types[t].name;
			}
			if (!ok) {
				if (gg.why[0] && !why[0])
					memcpy(why, gg.why, sizeof(why));
				continue;
			}
			gang_key(p, cur, n, &ck);
			ck.exact = gg.leaf_exact;
			ck.cands = ncand;
			if (found && gang_key_cmp(&ck, &bk) >= 0)
				continue;
			memcpy(best, cur, (size_t)n * sizeof(*best));
			bk = ck;
			best_kept = gg.leaf_kept;
			found = true;
		}
	}
	if (found) {
		/* Picks in name order. */
		qsort(best, (size_t)n, sizeof(*best), name_cmp);
		for (int i = 0; i < n && e == SL_OK; i++)
			e = pl_add_pick(out, p, c, best[i].node, best[i].set, -1, 0, &best[i].q);
		out->score.leaf_kept = best_kept;
	} else {
		if (!why[0])
			snprintf(why, sizeof(why),
				 "gang needs %d nodes of one type with %d free GPUs each; "
				 "best type %s has %d",
				 n, k, most_type, most < 0 ? 0 : most);
		e = pl_explain(p, c, k, n, why, out);
	}
	free(best);
	free(cur);
	return e;
}

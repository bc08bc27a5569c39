/* place_gang.c - multi-node (gang) requests: all or nothing.
 *
 * A gang of n nodes x k GPUs uses one node type. Candidates are gathered from
 * the fleet index (the bucket of each free mask that holds a good k-set), so
 * the cost follows the number of usable nodes, not the fleet. The choice is
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
 * last unit's candidates are sorted, so no per-request sort of the whole pool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place_internal.h"

enum { LV_DOMAIN, LV_LEAF, LV_NODE };

struct unit_stat {
	int unit, count;
	int whole; /* of count: candidates with every GPU free */
	const char *name;
};

/* A candidate node and the GPUs it would give: what the level-by-level choice
 * reads, and no more, since a gang gathers every node of a type that can give
 * its GPUs. */
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

struct gang {
	const struct pl_ctx *c;
	int type, k, n;
	struct pl_gcand *out; /* n chosen */
	int nout;
	struct unit_stat *ustat;
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
	p->set_count = calloc((size_t)1 << TOPO_MAX_GPUS, sizeof(*p->set_count));
	if (p->cand && p->set_count)
		return SL_OK;
	free(p->cand);
	free(p->set_count);
	p->cand = NULL;
	p->set_count = NULL;
	return SL_ENOMEM;
}

/* ---- candidates ---------------------------------------------------------- */

static gpumask_t full_of(int ngpus)
{
	return ngpus >= 32 ? ~(gpumask_t)0 : (((gpumask_t)1 << ngpus) - 1);
}

static void push(struct placer *p, int *nc, int node,
		 const struct node_pick *pk, gpumask_t m, int cpus, int64_t mem)
{
	if (!pl_fits_cpu_mem(p, node, cpus, mem))
		return;
	p->cand[(*nc)++] = (struct pl_gcand){
		.node = node,
		.set = pk->set,
		.q = pk->q,
		.freecnt = __builtin_popcount(m),
		.rank = p->name_rank[node],
	};
}

static void push_bucket(struct placer *p, int *nc, const struct pl_group *g, gpumask_t m,
			const struct node_pick *pk, int cpus, int64_t mem)
{
	/* push() for every node filed under m, with what they share (the
	 * type's capacities, the free count) worked out once. */
	const struct node_type *t = &p->f->types[g->type];
	int cpu_cap = t->cpus, freecnt = __builtin_popcount(m);
	int64_t mem_cap = (int64_t)t->mem_gib * 1024;
	const uint64_t *w = &g->bits[(size_t)m * (size_t)g->nwords];
	for (int i = 0; i < g->nwords; i++)
		for (uint64_t x = w[i]; x; x &= x - 1) {
			int node = g->nodes[i * 64 + __builtin_ctzll(x)];
			const struct pl_node *st = &p->nodes[node];
			if (cpus > cpu_cap - st->cpus_used || mem > mem_cap - st->mem_used)
				continue; /* pl_fits_cpu_mem() */
			p->cand[(*nc)++] = (struct pl_gcand){
				.node = node,
				.set = pk->set,
				.q = pk->q,
				.freecnt = freecnt,
				.rank = p->name_rank[node],
			}; /* the other fields zero, as push() leaves them */
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

static int collect(struct placer *p, struct gang *gg, bool full_only)
{
	const struct node_type *t = &p->f->types[gg->type];
	struct ptab *pt = p->ptabs[gg->type];
	int nc = 0, cpus;
	int64_t mem;
	pl_demand(gg->c, t, gg->c->req->exclusive ? t->ngpus : gg->k, 0, &cpus, &mem);
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
					push(p, &nc, node, &pk, m, cpus, mem);
			}
		} else if (gg->c->req->exclusive) {
			gpumask_t full = full_of(t->ngpus);
			if (g->count[full] && offer(p, gg, full, full_only, &pk))
				push_bucket(p, &nc, g, full, &pk, cpus, mem);
		} else {
			const gpumask_t *masks;
			const int *tier;
			int cnt = ptab_order(pt, gg->k, &masks, &tier);
			for (int i = 0; i < cnt; i++) {
				if (!g->count[masks[i]])
					continue;
				/* Masks come best quality first: once one fails, all do. */
				if (!offer(p, gg, masks[i], full_only, &pk))
					break;
				push_bucket(p, &nc, g, masks[i], &pk, cpus, mem);
			}
		}
	}
	return nc;
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
	const struct unit_stat *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
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
	return (x->rank > y->rank) - (x->rank < y->rank);
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
	qsort(arr, (size_t)m, sizeof(*arr), node_order_cmp);
	memcpy(gg->out + gg->nout, arr, (size_t)need * sizeof(*arr));
	gg->nout += need;
}

/* Whole nodes (every GPU free) that taking need candidates of u would break,
 * when partly used candidates are taken first: 0 while u has enough partly
 * used nodes. With k = the type's GPUs every pick is a whole node. */
static int unit_breaks(const struct unit_stat *u, int need, bool partial)
{
	if (!partial)
		return need;
	int part = u->count - u->whole;
	return need > part ? need - part : 0;
}

/* The index in ustat[0..nu) of the unit that holds need candidates, or -1:
 * with leaf_term, the one whose whole nodes the gang breaks fewest of (the
 * leaf term, place.h), then fewest candidates (best fit), then name; without,
 * best fit then name. */
static int best_unit(const struct unit_stat *us, int nu, int need, bool partial,
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
		    (us[i].count == us[b].count && strcmp(us[i].name, us[b].name) < 0))
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
	}
	struct unit_stat *us = gg->ustat;
	for (int i = 0; i < nu; i++) {
		us[i] = (struct unit_stat){p->units[i], p->unit_count[p->units[i]], 0,
					   unit_name(p, p->units[i])};
		p->unit_count[p->units[i]] = i; /* unit -> us[] until sorted */
	}
	for (int i = 0; i < m; i++)
		us[p->unit_count[arr[i].unit]].whole += arr[i].freecnt >= ngpus;
	qsort(us, (size_t)nu, sizeof(*us), ustat_cmp);
	bool lt = level == LV_LEAF && gg->leaf_term;
	int last = best_unit(us, nu, need, gg->partial, lt), nfull = 0, r = need;
	if (lt && last >= 0) {
		int plain = best_unit(us, nu, need, gg->partial, false);
		if (plain != last)
			gg->leaf_kept = unit_breaks(&us[plain], need, gg->partial) -
					unit_breaks(&us[last], need, gg->partial);
	}
	if (last < 0 && one_unit) {
		if (level == LV_LEAF)
			snprintf(gg->why, sizeof(gg->why),
				 "gang of %d nodes x %d GPUs must sit under one leaf switch "
				 "but no leaf has %d eligible nodes; best leaf %s has %d",
				 gg->n, gg->k, need, us[0].name, us[0].count);
		else
			snprintf(gg->why, sizeof(gg->why),
				 "gang of %d nodes x %d GPUs fits one NVLink domain but no "
				 "domain has %d eligible nodes; best domain %s has %d",
				 gg->n, gg->k, need, us[0].name, us[0].count);
		for (int i = 0; i < nu; i++)
			p->unit_count[us[i].unit] = 0;
		return false;
	}
	if (last < 0) {
		while (r > us[nfull].count)
			r -= us[nfull++].count;
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
	int x = ((const struct pl_gcand *)a)->rank, y = ((const struct pl_gcand *)b)->rank;
	return (x > y) - (x < y);
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
	return (a->first > b->first) - (a->first < b->first);
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
	int m = collect(p, gg, full_only);
	*ncand = m;
	if (m < gg->n)
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
	struct unit_stat *us = malloc((size_t)p->nunits * sizeof(*us) + sizeof(*us));
	if (!best || !cur || !us) {
		free(best);
		free(cur);
		free(us);
		return SL_ENOMEM;
	}
	struct gang gg = {.c = c, .k = k, .n = n, .out = cur, .ustat = us};
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
	free(us);
	return e;
}

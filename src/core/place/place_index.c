/* place_index.c - the fleet index behind single-node decisions.
 *
 * Nodes are grouped by everything that decides whether a node may take a
 * request and how good its GPUs can be: (site, owner, type, shareable). Inside
 * a group nodes sit in (price hint, name) order, so among equally good free
 * masks the lowest group position is the node the tie-breakers choose; a
 * distinct price on every node therefore costs nothing. For types of at most PTAB_EAGER_GPUS GPUs a group
 * keeps, per free mask, a bitset of the positions filed under it and a count;
 * ptab_order() lists masks best-first, so a request walks the tiers of each
 * eligible group until the first one with a node that also has the CPUs and
 * memory, and only compares one candidate per group. A tier is walked as a
 * set of masks (pl_tiers, made once per type and size) against the group's
 * set of non-empty masks (nzb), four words at a time, not mask by mask. The
 * cost is O(groups x tiers + bitset words), independent of how many nodes
 * are busy.
 * Larger types keep the set of distinct free masks of the group instead and
 * judge each with ptab_best().
 *
 * Shares first pack onto partly used GPUs; the nodes that have one are kept in
 * a dense list, so the search is linear in those nodes only, not the fleet. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "place_internal.h"

/* ptab_order(type, k) as sets: tier t's masks in set[t] (a bitset over
 * the PL_SMALL_MASKS masks), first[t] one of them. */
struct pl_tiers {
	int n;
	uint64_t (*set)[PL_SMALL_MASKS / 64];
	gpumask_t *first;
};

struct key_node {
	int site, owner, type, shareable;
	int64_t price;
	int rank; /* the node's place in name order (p->name_rank) */
	int node;
};

static int key_cmp(const void *a, const void *b)
{
	const struct key_node *x = a, *y = b;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	if (x->shareable != y->shareable)
		return x->shareable < y->shareable ? -1 : 1;
	if (x->price != y->price)
		return x->price < y->price ? -1 : 1;
	return pl_rank_cmp(x->rank, y->rank);
}

static bool same_group(const struct key_node *x, const struct key_node *y)
{
	return x->site == y->site && x->owner == y->owner && x->type == y->type &&
	       x->shareable == y->shareable;
}

static void set_bit(uint64_t *w, int pos, bool on)
{
	uint64_t bit = (uint64_t)1 << (pos % 64);
	if (on)
		w[pos / 64] |= bit;
	else
		w[pos / 64] &= ~bit;
}

static void file_node(struct placer *p, int node, gpumask_t m, int delta)
{
	struct pl_node *n = &p->nodes[node];
	struct pl_group *g = &p->groups[n->group];
	if (g->small) {
		set_bit(&g->bits[(size_t)m * (size_t)g->nwords], n->gpos, delta > 0);
		g->count[m] += delta;
		set_bit(g->nzb, (int)m, g->count[m] > 0);
		return;
	}
	for (int i = 0; i < g->nmasks; i++) {
		if (g->masks[i].mask != m)
			continue;
		g->masks[i].count += delta;
		if (g->masks[i].count == 0)
			g->masks[i] = g->masks[--g->nmasks];
		return;
	}
	/* A new mask; there is room for one per node. */
	if (delta > 0 && g->nmasks < g->n)
		g->masks[g->nmasks++] = (struct pl_mask_count){m, delta};
}

/* The node's bit in its small group's positions with shares. */
static void shared_bit(struct placer *p, int node)
{
	const struct pl_node *n = &p->nodes[node];
	struct pl_group *g = &p->groups[n->group];
	if (g->small)
		set_bit(g->sbits, n->gpos, n->shared);
}

/* The node's bit in its small group's positions with CPUs or memory in use. */
static void cpu_mem_bit(struct placer *p, int node)
{
	const struct pl_node *n = &p->nodes[node];
	struct pl_group *g = &p->groups[n->group];
	if (g->small)
		set_bit(g->cbits, n->gpos, n->cpus_used || n->mem_used);
}

static enum sl_err group_alloc(struct placer *p, struct pl_group *g)
{
	const struct node_type *t = &p->f->types[g->type];
	g->small = t->ngpus <= PTAB_EAGER_GPUS;
	if (g->small) {
		g->nwords = (g->n + 63) / 64;
		g->bits = calloc((size_t)PL_SMALL_MASKS * (size_t)g->nwords, sizeof(*g->bits));
		g->count = calloc(PL_SMALL_MASKS, sizeof(*g->count));
		g->sbits = calloc((size_t)g->nwords + 1, sizeof(*g->sbits));
		g->cbits = calloc((size_t)g->nwords + 1, sizeof(*g->cbits));
		return g->bits && g->count && g->sbits && g->cbits ? SL_OK : SL_ENOMEM;
	}
	g->masks = calloc((size_t)g->n, sizeof(*g->masks));
	g->eval = calloc((size_t)g->n, sizeof(*g->eval));
	return g->masks && g->eval ? SL_OK : SL_ENOMEM;
}

/* Position pos's run end, from the next position's (set first). */
static void run_end_set(const struct placer *p, struct pl_group *g, int pos)
{
	g->run_end[pos] = pos + 1 < g->n && p->f->nodes[g->nodes[pos]].leaf ==
						    p->f->nodes[g->nodes[pos + 1]].leaf
				  ? g->run_end[pos + 1]
				  : pos + 1;
}

enum sl_err pl_index_build(struct placer *p)
{
	const struct fleet *f = p->f;
	int nn = f->nnodes;
	struct key_node *k = calloc((size_t)nn + 1, sizeof(*k));
	if (!k)
		return SL_ENOMEM;
	for (int i = 0; i < nn; i++) {
		const struct fleet_node *fn = &f->nodes[i];
		k[i] = (struct key_node){fn->site, p->nodes[i].owner, fn->type, fn->shareable,
					 fn->price_hint, p->name_rank[i], i};
	}
	qsort(k, (size_t)nn, sizeof(*k), key_cmp);
	int ng = 0;
	for (int i = 0; i < nn; i++)
		if (i == 0 || !same_group(&k[i - 1], &k[i]))
			ng++;
	p->groups = calloc((size_t)ng + 1, sizeof(*p->groups));
	enum sl_err e = p->groups ? SL_OK : SL_ENOMEM;
	for (int i = 0, g = -1, start = 0; e == SL_OK && i < nn; i++) {
		if (i == 0 || !same_group(&k[i - 1], &k[i])) {
			struct pl_group *gr = &p->groups[++g];
			p->ngroups = g + 1;
			start = i;
			gr->site = k[i].site;
			gr->owner = k[i].owner;
			gr->type = k[i].type;
			gr->shareable = k[i].shareable;
			int j = i;
			while (j < nn && same_group(&k[i], &k[j]))
				j++;
			gr->n = j - i;
			gr->nodes = calloc((size_t)gr->n, sizeof(*gr->nodes));
			gr->run_end = calloc((size_t)gr->n, sizeof(*gr->run_end));
			e = gr->nodes && gr->run_end ? group_alloc(p, gr) : SL_ENOMEM;
			if (e != SL_OK)
				break;
		}
		struct pl_node *n = &p->nodes[k[i].node];
		n->group = g;
		n->gpos = i - start;
		p->groups[g].nodes[n->gpos] = k[i].node;
		n->imask = (gpumask_t)pl_free_mask(p, k[i].node);
		file_node(p, k[i].node, n->imask, 1);
		shared_bit(p, k[i].node);
		cpu_mem_bit(p, k[i].node);
		n->sick = !n->usable || n->bad;
		p->groups[g].nsick += n->sick;
	}
	free(k);
	for (int g = 0; e == SL_OK && g < p->ngroups; g++)
		for (int pos = p->groups[g].n - 1; pos >= 0; pos--)
			run_end_set(p, &p->groups[g], pos);
	return e;
}

void pl_index_free(struct placer *p)
{
	for (int g = 0; g < p->ngroups; g++) {
		free(p->groups[g].nodes);
		free(p->groups[g].run_end);
		free(p->groups[g].bits);
		free(p->groups[g].count);
		free(p->groups[g].sbits);
		free(p->groups[g].cbits);
		free(p->groups[g].masks);
		free(p->groups[g].eval);
	}
	free(p->groups);
	p->groups = NULL;
	p->ngroups = 0;
	if (p->tiers)
		for (int i = 0; i < p->ntypes * (TOPO_MAX_GPUS + 1); i++)
			if (p->tiers[i]) {
				free(p->tiers[i]->set);
				free(p->tiers[i]->first);
				free(p->tiers[i]);
			}
	free(p->tiers);
	p->tiers = NULL;
}

/* Owners change rarely (a reservation window opens or closes), so the index is
 * rebuilt whole rather than taught to move a node between groups: a rebuild is
 * a sort of the nodes, and name order and bitset sizes stay simple. The old
 * groups are kept until the new ones exist, so a failure changes nothing. */
enum sl_err pl_index_rebuild(struct placer *p)
{
	int nn = p->f->nnodes;
	struct pl_group *old = p->groups;
	int oldn = p->ngroups;
	int *save = malloc(((size_t)nn * 2 + 1) * sizeof(*save));
	gpumask_t *savem = malloc(((size_t)nn + 1) * sizeof(*savem));
	bool *ok = NULL;
	enum sl_err e = save && savem ? SL_OK : SL_ENOMEM;
	if (e == SL_OK) {
		for (int i = 0; i < nn; i++) {
			save[2 * i] = p->nodes[i].group;
			save[2 * i + 1] = p->nodes[i].gpos;
			savem[i] = p->nodes[i].imask;
		}
		p->groups = NULL;
		p->ngroups = 0;
		e = pl_index_build(p);
		if (e == SL_OK) {
			ok = calloc((size_t)p->ngroups + 1, sizeof(*ok));
			e = ok ? SL_OK : SL_ENOMEM;
		}
		struct pl_group *fresh = p->groups;
		int freshn = p->ngroups;
		/* Free whichever index loses: the old one on success, the new one on failure. */
		p->groups = e == SL_OK ? old : fresh;
		p->ngroups = e == SL_OK ? oldn : freshn;
		pl_index_free(p);
		p->groups = e == SL_OK ? fresh : old;
		p->ngroups = e == SL_OK ? freshn : oldn;
		if (e == SL_OK) {
			free(p->group_ok);
			p->group_ok = ok;
			pl_frag_index_changed(p);
		} else {
			for (int i = 0; i < nn; i++) {
				p->nodes[i].group = save[2 * i];
				p->nodes[i].gpos = save[2 * i + 1];
				p->nodes[i].imask = savem[i];
			}
		}
	}
	free(save);
	free(savem);
	return e;
}

static struct key_node node_key(const struct placer *p, int node)
{
	const struct fleet_node *fn = &p->f->nodes[node];
	return (struct key_node){fn->site, p->nodes[node].owner, fn->type, fn->shareable,
				 fn->price_hint, p->name_rank[node], node};
}

/* Widens a small group's bitsets to hold one more position. */
static enum sl_err group_widen(struct pl_group *g)
{
	if (!g->small || g->n + 1 <= g->nwords * 64)
		return SL_OK;
	int nw = g->nwords * 2;
	uint64_t *b = calloc((size_t)PL_SMALL_MASKS * (size_t)nw, sizeof(*b));
	if (!b)
		return SL_ENOMEM;
	for (int m = 0; m < PL_SMALL_MASKS; m++)
		memcpy(b + (size_t)m * (size_t)nw, g->bits + (size_t)m * (size_t)g->nwords,
		       (size_t)g->nwords * sizeof(*b));
	uint64_t *sb = calloc((size_t)nw + 1, sizeof(*sb));
	uint64_t *cb = calloc((size_t)nw + 1, sizeof(*cb));
	if (!sb || !cb) {
		free(b);
		free(sb);
		free(cb);
		return SL_ENOMEM;
	}
	memcpy(sb, g->sbits, (size_t)g->nwords * sizeof(*sb));
	memcpy(cb, g->cbits, (size_t)g->nwords * sizeof(*cb));
	free(g->bits);
	free(g->sbits);
	free(g->cbits);
	g->bits = b;
	g->sbits = sb;
	g->cbits = cb;
	g->nwords = nw;
	return SL_OK;
}

enum sl_err pl_index_append(struct placer *p, int node)
{
	struct key_node k = node_key(p, node);
	for (int gi = 0; gi < p->ngroups; gi++) {
		struct pl_group *g = &p->groups[gi];
		struct key_node last = node_key(p, g->nodes[g->n - 1]);
		if (!same_group(&last, &k))
			continue;
		if (key_cmp(&last, &k) >= 0)
			return SL_ENOTFOUND; /* belongs inside the group: rebuild */
		int *nodes = realloc(g->nodes, ((size_t)g->n + 1) * sizeof(*nodes));
		if (!nodes)
			return SL_ENOMEM;
		g->nodes = nodes;
		int *ends = realloc(g->run_end, ((size_t)g->n + 1) * sizeof(*ends));
		if (!ends)
			return SL_ENOMEM;
		g->run_end = ends;
		if (group_widen(g) != SL_OK)
			return SL_ENOMEM;
		if (!g->small) { /* one mask slot per node, as group_alloc reserves */
			struct pl_mask_count *mc = realloc(g->masks, ((size_t)g->n + 1) * sizeof(*mc));
			if (mc)
				g->masks = mc;
			struct pl_mask_eval *ev = mc ? realloc(g->eval, ((size_t)g->n + 1) * sizeof(*ev))
						     : NULL;
			if (!ev)
				return SL_ENOMEM;
			g->eval = ev;
		}
		struct pl_node *n = &p->nodes[node];
		n->group = gi;
		n->gpos = g->n;
		g->nodes[g->n++] = node;
		for (int pos = g->n - 1; pos >= 0 && (pos == g->n - 1 || g->run_end[pos] == g->n - 1);
		     pos--)
			run_end_set(p, g, pos); /* the last run grows, or a new one starts */
		n->imask = (gpumask_t)pl_free_mask(p, node);
		file_node(p, node, n->imask, 1);
		shared_bit(p, node);
		cpu_mem_bit(p, node);
		n->sick = !n->usable || n->bad;
		g->nsick += n->sick;
		return SL_OK;
	}
	return SL_ENOTFOUND; /* a group of its own: rebuild */
}

void pl_index_update(struct placer *p, int node)
{
	struct pl_node *n = &p->nodes[node];
	bool sick = !n->usable || n->bad;
	if (sick != n->sick) {
		p->groups[n->group].nsick += sick ? 1 : -1;
		n->sick = sick;
	}
	cpu_mem_bit(p, node);
	gpumask_t m = (gpumask_t)pl_free_mask(p, node);
	if (m == n->imask)
		return;
	file_node(p, node, n->imask, -1);
	n->imask = m;
	file_node(p, node, m, 1);
}

void pl_partial_update(struct placer *p, int node)
{
	struct pl_node *n = &p->nodes[node];
	bool has = n->shared != 0;
	if (has == (n->partial_pos >= 0))
		return;
	shared_bit(p, node);
	if (has) {
		n->partial_pos = p->npartial;
		p->partial[p->npartial++] = node;
		return;
	}
	int last = p->partial[--p->npartial];
	p->partial[n->partial_pos] = last;
	p->nodes[last].partial_pos = n->partial_pos;
	n->partial_pos = -1;
}

/* ---- single-node search -------------------------------------------------- */

/* Lowest group position below limit filed under mask m whose node has the CPUs
 * and memory; INT_MAX if none. */
static int first_fit(const struct placer *p, const struct pl_group *g, gpumask_t m,
		     int cpus, int64_t mem, int limit)
{
	const uint64_t *w = &g->bits[(size_t)m * (size_t)g->nwords];
	for (int i = 0; i < g->nwords && i * 64 < limit; i++) {
		uint64_t x = w[i];
		while (x) {
			int pos = i * 64 + __builtin_ctzll(x);
			if (pos >= limit)
				return INT_MAX;
			if (pl_fits_cpu_mem(p, g->nodes[pos], cpus, mem))
				return pos;
			x &= x - 1;
		}
	}
	return INT_MAX;
}

void pl_make_cand(const struct placer *p, const struct pl_group *g, int pos,
		      const struct node_pick *pk, gpumask_t free, struct pl_cand *out)
{
	memset(out, 0, sizeof(*out));
	out->node = g->nodes[pos];
	out->pick = *pk;
	out->freecnt = __builtin_popcount(free);
	out->price = p->f->nodes[out->node].price_hint;
}

/* Exclusive: nodes whose every GPU is free; the whole node is the set. */
static bool group_exclusive(struct placer *p, const struct pl_ctx *c, int gi,
			    int cpus, int64_t mem, struct pl_cand *out)
{
	const struct pl_group *g = &p->groups[gi];
	const struct node_type *t = &p->f->types[g->type];
	gpumask_t full = t->ngpus >= 32 ? ~(gpumask_t)0 : (((gpumask_t)1 << t->ngpus) - 1);
	struct node_pick pk;
	memset(&pk, 0, sizeof(pk));
	pk.set = full;
	if (!node_set_quality(t, full, &pk.q) || pk.q.bottleneck_gbps < c->req->min_bw_gbps)
		return false;
	struct node_quality fq;
	pk.full_quality = ptab_full_quality(p->ptabs[g->type], t->ngpus, &fq) &&
			  node_quality_cmp(&pk.q, &fq) == 0;
	ptab_leftover(p->ptabs[g->type], 0, &pk.left);
	int pos = INT_MAX;
	if (g->small) {
		if (g->count[full])
			pos = first_fit(p, g, full, cpus, mem, INT_MAX);
	} else {
		for (int i = 0; i < g->n; i++)
			if (p->nodes[g->nodes[i]].imask == full &&
			    pl_fits_cpu_mem(p, g->nodes[i], cpus, mem)) {
				pos = i;
				break;
			}
	}
	if (pos == INT_MAX)
		return false;
	pl_make_cand(p, g, pos, &pk, full, out);
	return true;
}

static bool group_small_masks(struct placer *p, const struct pl_ctx *c, int gi, int k,
			int cpus, int64_t mem, struct pl_cand *out)
{
	const struct pl_group *g = &p->groups[gi];
	struct ptab *pt = p->ptabs[g->type];
	const gpumask_t *masks;
	const int *tier;
	int cnt = ptab_order(pt, k, &masks, &tier);
	for (int i = 0; i < cnt;) {
		int j = i;
		bool any = false;
		while (j < cnt && tier[j] == tier[i])
			any |= g->count[masks[j++]] > 0;
		if (!any) {
			i = j;
			continue;
		}
		struct node_pick pk;
		if (!ptab_best(pt, masks[i], k, &pk) ||
		    pk.q.bottleneck_gbps < c->req->min_bw_gbps)
			return false; /* later tiers are no better */
		int best = INT_MAX;
		gpumask_t bm = 0;
		for (int x = i; x < j; x++) {
			if (!g->count[masks[x]])
				continue;
			int pos = first_fit(p, g, masks[x], cpus, mem, best);
			if (pos < best) {
				best = pos;
				bm = masks[x];
			}
		}
		if (best != INT_MAX) {
			(void)ptab_best(pt, bm, k, &pk);
			pl_make_cand(p, g, best, &pk, bm, out);
			return true;
		}
		i = j;
	}
	return false;
}

/* Best fit's tiers of small type for k GPUs as mask sets; NULL when out of
 * memory or the type has no order for k. */
static const struct pl_tiers *tiers_of(struct placer *p, int type, int k)
{
	if (!p->tiers && !(p->tiers = calloc((size_t)p->ntypes * (TOPO_MAX_GPUS + 1) + 1,
					     sizeof(*p->tiers))))
		return NULL;
	struct pl_tiers **slot = &p->tiers[(size_t)type * (TOPO_MAX_GPUS + 1) + (size_t)k];
	if (*slot)
		return *slot;
	const gpumask_t *masks;
	const int *tier;
	int cnt = ptab_order(p->ptabs[type], k, &masks, &tier);
	if (cnt == 0)
		return NULL;
	struct pl_tiers *ts = calloc(1, sizeof(*ts));
	int nt = tier[cnt - 1] + 1; /* tiers start at 0 and grow by 1 */
	if (ts) {
		ts->set = calloc((size_t)nt, sizeof(*ts->set));
		ts->first = calloc((size_t)nt, sizeof(*ts->first));
	}
	if (!ts || !ts->set || !ts->first) {
		if (ts) {
			free(ts->set);
			free(ts->first);
		}
		free(ts);
		return NULL;
	}
	ts->n = nt;
	for (int i = cnt - 1; i >= 0; i--) {
		ts->set[tier[i]][masks[i] / 64] |= (uint64_t)1 << (masks[i] % 64);
		ts->first[tier[i]] = masks[i];
	}
	return *slot = ts;
}

/* The first tier (best first) with a node that fits: the group's masks
 * that are not empty, a tier at a time (ts), or else mask by mask along
 * ptab_order. */
static bool group_small(struct placer *p, const struct pl_ctx *c, int gi, int k,
			int cpus, int64_t mem, struct pl_cand *out)
{
	const struct pl_group *g = &p->groups[gi];
	struct ptab *pt = p->ptabs[g->type];
	const struct pl_tiers *ts = tiers_of(p, g->type, k);
	if (!ts)
		return group_small_masks(p, c, gi, k, cpus, mem, out);
	for (int t = 0; t < ts->n; t++) {
		uint64_t in[PL_SMALL_MASKS / 64], any = 0;
		for (int w = 0; w < PL_SMALL_MASKS / 64; w++)
			any |= in[w] = ts->set[t][w] & g->nzb[w];
		if (!any)
			continue;
		struct node_pick pk;
		if (!ptab_best(pt, ts->first[t], k, &pk) ||
		    pk.q.bottleneck_gbps < c->req->min_bw_gbps)
			return false; /* later tiers are no better */
		int best = INT_MAX;
		gpumask_t bm = 0;
		for (int w = 0; w < PL_SMALL_MASKS / 64; w++)
			for (uint64_t x = in[w]; x; x &= x - 1) {
				gpumask_t m = (gpumask_t)(w * 64 + __builtin_ctzll(x));
				int pos = first_fit(p, g, m, cpus, mem, best);
				if (pos < best) {
					best = pos;
					bm = m;
				}
			}
		if (best != INT_MAX) {
			(void)ptab_best(pt, bm, k, &pk);
			pl_make_cand(p, g, best, &pk, bm, out);
			return true;
		}
	}
	return false;
}

static int eval_cmp(const void *a, const void *b)
{
	const struct pl_mask_eval *x = a, *y = b;
	int c = node_quality_cmp(&x->pick.q, &y->pick.q);
	if (c)
		return -c;
	if (x->pop != y->pop)
		return x->pop < y->pop ? -1 : 1;
	c = node_leftover_cmp(&x->pick.left, &y->pick.left);
	if (c)
		return -c;
	return x->mask < y->mask ? -1 : (x->mask > y->mask);
}

static bool eval_same_tier(const struct pl_mask_eval *x, const struct pl_mask_eval *y)
{
	return !node_quality_cmp(&x->pick.q, &y->pick.q) && x->pop == y->pop &&
	       !node_leftover_cmp(&x->pick.left, &y->pick.left);
}

static bool group_large(struct placer *p, const struct pl_ctx *c, int gi, int k,
			int cpus, int64_t mem, struct pl_cand *out)
{
	struct pl_group *g = &p->groups[gi];
	struct ptab *pt = p->ptabs[g->type];
	int ne = 0;
	for (int i = 0; i < g->nmasks; i++) {
		struct pl_mask_eval *e = &g->eval[ne];
		e->mask = g->masks[i].mask;
		e->pop = __builtin_popcount(e->mask);
		if (ptab_best(pt, e->mask, k, &e->pick) &&
		    e->pick.q.bottleneck_gbps >= c->req->min_bw_gbps)
			ne++;
	}
	qsort(g->eval, (size_t)ne, sizeof(*g->eval), eval_cmp);
	for (int i = 0; i < ne;) {
		int j = i;
		while (j < ne && eval_same_tier(&g->eval[i], &g->eval[j]))
			j++;
		for (int pos = 0; pos < g->n; pos++) {
			int node = g->nodes[pos];
			gpumask_t m = p->nodes[node].imask;
			for (int x = i; x < j; x++) {
				if (g->eval[x].mask != m || !pl_fits_cpu_mem(p, node, cpus, mem))
					continue;
				pl_make_cand(p, g, pos, &g->eval[x].pick, m, out);
				return true;
			}
		}
		i = j;
	}
	return false;
}

bool pl_index_group_best(struct placer *p, const struct pl_ctx *c, int gi, int k,
			 struct pl_cand *out)
{
	const struct pl_group *g = &p->groups[gi];
	const struct node_type *t = &p->f->types[g->type];
	int cpus;
	int64_t mem;
	if (c->share)
		pl_demand(c, t, 0, c->req->gpu_milli, &cpus, &mem);
	else
		pl_demand(c, t, c->req->exclusive ? t->ngpus : k, 0, &cpus, &mem);
	if (c->req->exclusive)
		return group_exclusive(p, c, gi, cpus, mem, out);
	if (g->small)
		return group_small(p, c, gi, k, cpus, mem, out);
	return group_large(p, c, gi, k, cpus, mem, out);
}

bool pl_index_best(struct placer *p, const struct pl_ctx *c, int k, struct pl_cand *best)
{
	bool found = false;
	for (int gi = 0; gi < p->ngroups; gi++) {
		if (!p->group_ok[gi])
			continue;
		const struct pl_group *g = &p->groups[gi];
		const struct node_type *t = &p->f->types[g->type];
		if (t->ngpus < k)
			continue;
		struct node_quality fq;
		if (found && !c->req->exclusive &&
		    (!ptab_full_quality(p->ptabs[g->type], k, &fq) ||
		     node_quality_cmp(&fq, &best->pick.q) < 0))
			continue; /* this group cannot beat the best so far */
		struct pl_cand cand;
		if (pl_index_group_best(p, c, gi, k, &cand) &&
		    (!found || pl_cand_cmp(p, &cand, best) < 0)) {
			*best = cand;
			found = true;
		}
	}
	return found;
}

/* ---- shares -------------------------------------------------------------- */

bool pl_share_best(struct placer *p, const struct pl_ctx *c, int *node, int *gpu)
{
	int milli = c->req->gpu_milli;
	int best_rem = INT_MAX;
	*node = -1;
	*gpu = -1;
	for (int i = 0; i < p->npartial; i++) {
		int nd = p->partial[i];
		const struct pl_node *n = &p->nodes[nd];
		if (!p->group_ok[n->group] || !n->usable)
			continue;
		const struct node_type *t = fleet_node_type(p->f, nd);
		struct node_quality q;
		if (!ptab_full_quality(p->ptabs[p->f->nodes[nd].type], 1, &q) ||
		    q.bottleneck_gbps < c->req->min_bw_gbps)
			continue;
		int cpus;
		int64_t mem;
		pl_demand(c, t, 0, milli, &cpus, &mem);
		if (!pl_fits_cpu_mem(p, nd, cpus, mem))
			continue;
		for (int g = 0; g < t->ngpus; g++) {
			gpumask_t bit = (gpumask_t)1 << g;
			if (!(n->shared & bit) || (n->bad & bit))
				continue;
			int rem = PL_MILLI - n->used[g];
			if (rem < milli || rem > best_rem)
				continue;
			if (rem == best_rem) {
				int cmp = pl_name_cmp(p, nd, *node);
				if (cmp > 0 || (cmp == 0 && g > *gpu))
					continue;
			}
			best_rem = rem;
			*node = nd;
			*gpu = g;
		}
	}
	return *node >= 0;
}

/* place_fragtab.c - the fragmentation-aware policy without visiting every
 * node, and the answers it keeps between decisions (place_frag.h).
 *
 * Kept answers are keyed by versions that place.c's node_changed() bumps
 * (pl_frag_node_changed: the node's and its index group's), so a decision
 * with kept answers is the decision without them (test_place_fragkeep.c). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "place_frag_int.h"

/* The request's demand per type (pl_rtype, place_frag_int.h). */
const struct pl_rtype *pl_rtype_make(struct placer *p, const struct pl_ctx *c, int type)
{
	struct pl_frag *fr = p->frag;
	struct pl_rtype *r = &fr->rt[type];
	const struct node_type *t = &p->f->types[type];
	r->stamp = fr->rstamp;
	if (c->share)
		pl_demand(c, t, 0, c->req->gpu_milli, &r->cpus, &r->mem);
	else
		pl_demand(c, t, c->k, 0, &r->cpus, &r->mem);
	r->fq_ok = ptab_full_quality(p->ptabs[type], c->k, &r->fq);
	return r;
}

/* ---- the ranked tables: frag without visiting every node -------------------
 *
 * With a pure workload, a node without shares is judged by its type and free
 * mask alone: the set a request takes there, its quality, F's growth, the
 * free capacity and the leftover shape are one key per (type, request shape,
 * mask). The masks of each small type are ranked by that key once per shape
 * (lazily; at most PL_FTAB_CACHE shapes kept), and a request walks each
 * eligible group's non-empty masks best-first, exactly like the best-fit
 * index (place_index.c): the first tier with a node that has the CPUs and
 * memory gives the group's candidate, its lowest (price, name) position.
 * Nodes with shares and groups of large types are judged one by one. The
 * answer is the one the full scan gives (test_place_frag.c checks it). */

static int64_t frag_mask(const struct pl_frag *fr, int type, int ngpus, gpumask_t m,
			 int gpu, int milli)
{
	int fv[TOPO_MAX_GPUS];
	for (int g = 0; g < ngpus; g++)
		fv[g] = (m & ((gpumask_t)1 << g)) ? PL_MILLI : 0;
	if (gpu >= 0)
		fv[gpu] -= milli;
	return pl_frag_of(fr, type, fv, ngpus, 1 << 30, (int64_t)1 << 60);
}

static int fkey_cmp3(const struct pl_fkey *a, const struct pl_fkey *b, bool whole)
{
	if (a->ok != b->ok)
		return a->ok ? -1 : 1;
	if (whole) {
		int c = node_quality_cmp(&a->q, &b->q);
		if (c)
			return -c;
	}
	if (a->delta != b->delta)
		return a->delta < b->delta ? -1 : 1;
	if (a->free_after != b->free_after)
		return a->free_after < b->free_after ? -1 : 1;
	return -node_leftover_cmp(&a->left, &b->left);
}

static void ftab_sort(struct pl_ftab *t)
{
	/* Insertion sort by (key, mask): 256 entries, built once per shape, and
	 * no writable global for a qsort context. */
	bool whole = t->milli >= PL_MILLI;
	for (int i = 1; i < t->n; i++) {
		gpumask_t m = t->order[i];
		int j = i;
		while (j > 0) {
			gpumask_t o = t->order[j - 1];
			int c = fkey_cmp3(&t->key[o], &t->key[m], whole);
			if (c < 0 || (c == 0 && o < m))
				break;
			t->order[j] = o;
			j--;
		}
		t->order[j] = m;
	}
	for (int i = 0; i < t->n; i++) {
		t->tier[i] = i == 0 ? 0
			   : t->tier[i - 1] + (fkey_cmp3(&t->key[t->order[i - 1]],
							 &t->key[t->order[i]], whole) != 0);
		t->rank[t->order[i]] = t->key[t->order[i]].ok ? t->tier[i] : INT_MAX;
	}
}

/* A ranked table's shape as one word (types, sizes and thousandths all fit
 * in 16 bits), so that finding a kept table reads one small array. */
static uint64_t ftab_key(int type, int k, int milli)
{
	return (uint64_t)(uint16_t)type << 32 | (uint64_t)(uint16_t)k << 16 | (uint16_t)milli;
}

struct pl_ftab *pl_ftab_get(struct placer *p, int type, int k, int milli)
{
	struct pl_frag *fr = p->frag;
	uint64_t shape = ftab_key(type, k, milli);
	for (int i = 0; i < fr->ntabs; i++)
		if (fr->tkey[i] == shape)
			return fr->tabs[i];
	struct pl_ftab *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	struct ptab *pt = p->ptabs[type];
	int ngpus = p->f->types[type].ngpus;
	t->type = type;
	t->k = k;
	t->milli = milli;
	t->n = 1 << ngpus;
	for (int mi = 0; mi < t->n; mi++) {
		gpumask_t m = (gpumask_t)mi;
		struct pl_fkey *key = &t->key[mi];
		t->order[mi] = m;
		key->gpu = -1;
		if (milli >= PL_MILLI) {
			struct node_pick pk;
			if (__builtin_popcount(m) < k || !ptab_best(pt, m, k, &pk))
				continue;
			key->set = pk.set;
			key->q = pk.q;
			key->left = pk.left;
			key->delta = frag_mask(fr, type, ngpus, m & ~pk.set, -1, 0);
			key->free_after = (int64_t)__builtin_popcount(m & ~pk.set) * PL_MILLI;
		} else {
			if (!m || !ptab_full_quality(pt, 1, &key->q))
				continue;
			for (int g = 0; g < ngpus; g++) {
				gpumask_t bit = (gpumask_t)1 << g;
				struct node_leftover l;
				if (!(m & bit))
					continue;
				ptab_leftover(pt, m & ~bit, &l);
				if (key->gpu < 0 || node_leftover_cmp(&l, &key->left) > 0) {
					key->gpu = g;
					key->left = l;
				}
			}
			key->delta = frag_mask(fr, type, ngpus, m, key->gpu, milli);
			key->free_after = (int64_t)__builtin_popcount(m) * PL_MILLI - milli;
		}
		key->ok = true;
		key->delta -= frag_mask(fr, type, ngpus, m, -1, 0);
	}
	ftab_sort(t);
	if (fr->ntabs < PL_FTAB_CACHE) {
		fr->tkey[fr->ntabs] = shape;
		fr->tabs[fr->ntabs++] = t;
	} else {
		struct pl_ftab *gone = fr->tabs[fr->next_evict];
		for (int i = 0; i < fr->ntypes; i++) {
			if (fr->rtab[i] == gone)
				fr->rtab[i] = NULL;
			for (int j = 0; j < PL_EAGER; j++)
				if (fr->etab[i][j] == gone)
					fr->etab[i][j] = NULL;
		}
		free(gone->gc);
		free(gone);
		fr->tabs[fr->next_evict] = t;
		fr->tkey[fr->next_evict] = shape;
		fr->next_evict = (fr->next_evict + 1) % PL_FTAB_CACHE;
	}
	return t;
}

/* Lowest position of g filed under mask m, without shares (the group's
 * sbits), with the CPUs and memory; INT_MAX if none. */
static int first_plain(const struct placer *p, const struct pl_group *g, gpumask_t m,
		       int cpus, int64_t mem, int limit)
{
	const uint64_t *w = &g->bits[(size_t)m * (size_t)g->nwords];
	for (int i = 0; i < g->nwords && i * 64 < limit; i++) {
		for (uint64_t x = w[i] & ~g->sbits[i]; x; x &= x - 1) {
			int pos = i * 64 + __builtin_ctzll(x);
			if (pos >= limit)
				return INT_MAX;
			int node = g->nodes[pos];
			if (!p->nodes[node].shared && pl_fits_cpu_mem(p, node, cpus, mem))
				return pos;
		}
	}
	return INT_MAX;
}

struct pl_gcache {
	uint32_t ver; /* the group's version when kept; 0: nothing kept */
	int min_bw, cpus;
	int64_t mem;
	bool found;
	struct fcand cand;
	/* The ranked walk's own answer (nodes with shares left out): its
	 * tier and group position, INT_MAX when none, good at the group's
	 * version wver (>= ver: a change to a node with shares leaves the walk
	 * as it was, and only the nodes with shares are judged again). */
	uint32_t wver;
	int wtier, wpos;
};

void pl_fkey_cand(const struct placer *p, const struct pl_ftab *tab, gpumask_t m, int node,
		  struct fcand *out)
{
	const struct pl_fkey *bk = &tab->key[m];
	memset(out, 0, sizeof(*out));
	out->node = node;
	out->set = bk->set;
	out->gpu = bk->gpu;
	out->q = bk->q;
	out->left = bk->left;
	out->delta = bk->delta;
	out->free_after = bk->free_after;
	out->price = p->f->nodes[node].price_hint;
}

static bool group_walk(struct placer *p, const struct pl_ctx *c, const struct pl_group *g,
		       const struct pl_ftab *tab, int cpus, int64_t mem, struct fcand *out,
		       int *wtier, int *wpos);

/* The group's best node: those without shares from the ranked table, those
 * with shares one by one (through their kept candidates); or the answer
 * kept since none of the group's nodes changed. False if none. */
static bool group_fast(struct placer *p, const struct pl_ctx *c, int gi, struct fcand *out)
{
	const struct pl_group *g = &p->groups[gi];
	struct pl_frag *fr = p->frag;
	int milli = c->share ? c->req->gpu_milli : PL_MILLI;
	struct pl_ftab *tab = fr->rtab[g->type];
	if (!tab) /* once per type and request: frag_fast cleared rtab */
		tab = fr->rtab[g->type] = pl_ftab_get(p, g->type, c->share ? 1 : c->k, milli);
	if (!tab)
		return false; /* out of memory: the caller scans instead */
	const struct pl_rtype *rt = pl_rtype_of(p, c, g->type);
	int cpus = rt->cpus;
	int64_t mem = rt->mem;
	if (!tab->gc && fr->ngver == p->ngroups)
		tab->gc = calloc((size_t)p->ngroups + 1, sizeof(*tab->gc));
	struct pl_gcache *e = tab->gc && gi < fr->ngver ? &tab->gc[gi] : NULL;
	bool same = e && e->min_bw == c->req->min_bw_gbps && e->cpus == cpus && e->mem == mem;
	if (same && e->ver == fr->gver[gi]) {
		if (e->found)
			*out = e->cand;
		return e->found;
	}
	int wtier, wpos;
	bool found;
	if (same && e->wver == fr->gver[gi]) { /* the walk's answer stands */
		wtier = e->wtier;
		wpos = e->wpos;
		found = wpos != INT_MAX;
		if (found)
			pl_fkey_cand(p, tab, p->nodes[g->nodes[wpos]].imask, g->nodes[wpos], out);
	} else {
		found = group_walk(p, c, g, tab, cpus, mem, out, &wtier, &wpos);
	}
	struct fcand k;
	/* Nodes with shares: their packed entries where judged since they last
	 * changed (the candidate itself for an eager share size, else the node's
	 * state for its kept candidates), else through the node. */
	int ei = c->share && rt->fq_ok ? pl_eager_index(fr, g->type, milli) : -1;
	if (!fr->plists) {
		const struct pl_pent *en;
		for (int it = PL_PSTART, node; (node = pl_partial_next(p, gi, &it, &en)) >= 0;)
			if (pl_node_cand_kept(p, c, node, tab, &k) &&
			    (!found || pl_fcand_cmp(p, &k, out, !c->share) < 0)) {
				*out = k;
				found = true;
			}
	} else {
		const struct pl_pent *ev = &fr->pv[fr->pstart[gi]];
		const struct pl_pshare *sv =
			ei >= 0 ? pl_pshare_at(fr, ei, fr->pstart[gi]) : NULL;
		const int64_t *wv = !c->share && c->k <= PL_EAGER_K
					    ? pl_pwhole_at(fr, c->k, fr->pstart[gi])
					    : NULL;
		for (int i = 0, n = fr->pcnt[gi]; i < n; i++) {
			bool ok;
			if (!ev[i].valid) {
				ok = pl_node_cand_kept(p, c, ev[i].node, tab, &k);
			} else if (wv) {
				/* Whole GPUs' order: quality, then F's growth. */
				const struct pl_fkey *key = &tab->key[ev[i].fm];
				if (found) {
					int qc = node_quality_cmp(&key->q, &out->q);
					if (qc < 0 || (qc == 0 && wv[i] > out->delta))
						continue;
				}
				ok = pl_pent_whole(&ev[i], key, c->k, wv[i], cpus, mem,
						   c->req->min_bw_gbps, &k);
			} else if (sv) {
				/* A share's order starts with F's growth (pl_fcand_cmp):
				 * a larger one cannot win. */
				if (found && sv[i].delta > out->delta)
					continue;
				ok = pl_pent_cand(&ev[i], &sv[i], cpus, mem, c->req->min_bw_gbps, &rt->fq,
						  &k);
			} else {
				ok = pl_pent_cand_kept(p, c, &ev[i], tab, &k);
			}
			if (ok && (!found || pl_fcand_cmp(p, &k, out, !c->share) < 0)) {
				*out = k;
				found = true;
			}
		}
	}
	if (e) {
		e->ver = e->wver = fr->gver[gi];
		e->min_bw = c->req->min_bw_gbps;
		e->cpus = cpus;
		e->mem = mem;
		e->found = found;
		if (found)
			e->cand = *out;
		e->wtier = wtier;
		e->wpos = wpos;
	}
	return found;
}

static bool group_walk(struct placer *p, const struct pl_ctx *c, const struct pl_group *g,
		       const struct pl_ftab *tab, int cpus, int64_t mem, struct fcand *out,
		       int *wtier, int *wpos)
{
	*wtier = *wpos = INT_MAX;
	/* The best tier among the group's non-empty masks (the index keeps them
	 * as a set: cheaper than walking the ranked order through empty tiers),
	 * with that tier's masks gathered on the way; again above it when no
	 * node of that tier has the CPUs and memory. */
	uint16_t at[PL_SMALL_MASKS];
	int min_bw = c->req->min_bw_gbps;
	for (int above = -1;;) {
		int tier = INT_MAX, nat = 0;
		for (int w = 0; w < PL_SMALL_MASKS / 64; w++)
			for (uint64_t x = g->nzb[w]; x; x &= x - 1) {
				int m = w * 64 + __builtin_ctzll(x), r = tab->rank[m];
				/* key[] (a line per mask) only for a bandwidth floor */
				if (r <= above || r > tier ||
				    (min_bw > 0 && tab->key[m].q.bottleneck_gbps < min_bw))
					continue;
				if (r < tier) {
					tier = r;
					nat = 0;
				}
				at[nat++] = (uint16_t)m;
			}
		if (tier == INT_MAX)
			return false;
		int best = INT_MAX;
		gpumask_t bm = 0;
		for (int i = 0; i < nat; i++) {
			int pos = first_plain(p, g, (gpumask_t)at[i], cpus, mem, best);
			if (pos < best) {
				best = pos;
				bm = (gpumask_t)at[i];
			}
		}
		if (best != INT_MAX) {
			pl_fkey_cand(p, tab, bm, g->nodes[best], out);
			*wtier = tier;
			*wpos = best;
			return true;
		}
		above = tier;
	}
}

/* The fast path's answer; false when no node can take the request, or when
 * a table could not be built (*scan then says to scan). */
bool pl_frag_fast(struct placer *p, const struct pl_ctx *c, struct fcand *best, bool *scan)
{
	bool whole = !c->share, found = false;
	struct fcand k;
	*scan = false;
	pl_plists_fresh(p);
	for (int gi = 0; gi < p->ngroups; gi++) {
		const struct pl_group *g = &p->groups[gi];
		if (!p->group_ok[gi] || p->f->types[g->type].ngpus < (whole ? c->k : 1) ||
		    (c->share && !g->shareable))
			continue;
		const struct pl_rtype *rt = pl_rtype_of(p, c, g->type);
		if (found && whole && (!rt->fq_ok || node_quality_cmp(&rt->fq, &best->q) < 0))
			continue; /* this group cannot beat the best so far */
		bool ok;
		if (g->small) {
			ok = group_fast(p, c, gi, &k);
			if (!ok && !p->frag->ntabs) {
				*scan = true;
				return false;
			}
			if (ok && (!found || pl_fcand_cmp(p, &k, best, whole) < 0)) {
				*best = k;
				found = true;
			}
			continue;
		}
		for (int pos = 0; pos < g->n; pos++)
			if (pl_frag_node_cand(p, c, g->nodes[pos], &k) &&
			    (!found || pl_fcand_cmp(p, &k, best, whole) < 0)) {
				*best = k;
				found = true;
			}
	}
	/* Nodes with shares were judged with their group (only shareable nodes
	 * have shares; a large group's nodes are all judged above). */
	return found;
}

/* Node changed and its group gi's version went from old to now: the ranked
 * walks' answers kept for the group at old stay good at now where the
 * change cannot alter them, or are brought up to date where it can only
 * make the node the walk's answer. A walk's answer is the least (tier of
 * the node's free mask, group position) among the group's nodes without
 * shares that have the CPUs and memory; the group's answer is the better
 * of that and its nodes with shares. So the walk's answer stands unless the
 * node gave it or, without shares now, comes before it (then the node is
 * the new answer); the group's answer stands too unless the node gave it
 * or has shares now (those are judged one by one at the next decision). */
static void bestfit_keep_node(struct placer *p, int node, int gi, uint32_t old, uint32_t now);

void pl_frag_keep_node(struct placer *p, int node, int gi, uint32_t old, uint32_t now)
{
	struct pl_frag *fr = p->frag;
	const struct pl_node *n = &p->nodes[node];
	bestfit_keep_node(p, node, gi, old, now);
	bool shares = n->shared != 0; /* out of the walk now (partial_pos is not yet up to date) */
	int type = p->f->nodes[node].type;
	gpumask_t m = shares ? 0 : (gpumask_t)pl_free_mask(p, node);
	for (int i = 0; i < fr->ntabs; i++) {
		const struct pl_ftab *tab = fr->tabs[i];
		if (tab->type != type || !tab->gc)
			continue;
		struct pl_gcache *e = &tab->gc[gi];
		if (e->wver != old || e->wpos == n->gpos)
			continue; /* nothing kept, or the node gave the walk's answer */
		bool full = e->ver == old && !shares && !(e->found && e->cand.node == node);
		int r = shares ? INT_MAX : tab->rank[m];
		if (r != INT_MAX && tab->key[m].q.bottleneck_gbps >= e->min_bw &&
		    (r < e->wtier || (r == e->wtier && n->gpos < e->wpos)) &&
		    pl_fits_cpu_mem(p, node, e->cpus, e->mem)) {
			struct fcand k;
			pl_fkey_cand(p, tab, m, node, &k);
			e->wtier = r;
			e->wpos = n->gpos;
			if (full &&
			    (!e->found || pl_fcand_cmp(p, &k, &e->cand, tab->milli >= PL_MILLI) < 0)) {
				e->cand = k;
				e->found = true;
			}
		}
		e->wver = now;
		if (full)
			e->ver = now;
	}
}

/* Best fit's tier of each free mask of small type for k GPUs; NULL when
 * out of memory. */
static const int *btier_of(struct placer *p, int type, int k)
{
	struct pl_frag *fr = p->frag;
	if (!fr->btier && !(fr->btier = calloc((size_t)fr->ntypes * PL_BGC_K + 1,
						 sizeof(*fr->btier))))
		return NULL;
	int **slot = &fr->btier[(size_t)type * PL_BGC_K + (size_t)k];
	if (!*slot && (*slot = malloc(PL_SMALL_MASKS * sizeof(**slot)))) {
		const gpumask_t *masks;
		const int *tier;
		for (int m = 0; m < PL_SMALL_MASKS; m++)
			(*slot)[m] = INT_MAX;
		for (int i = ptab_order(p->ptabs[type], k, &masks, &tier) - 1; i >= 0; i--)
			(*slot)[masks[i]] = tier[i];
	}
	return *slot;
}

/* The same for best fit's answers kept per group and size (the
 * explanation's): in a small group best fit's answer is the least (tier of
 * the node's free mask, group position) among the nodes that fit, down to
 * the first tier below the bandwidth floor; tiers go by quality, bottleneck
 * first, so that is among the nodes whose mask's pick has the floor. */
static void bestfit_keep_node(struct placer *p, int node, int gi, uint32_t old, uint32_t now)
{
	struct pl_frag *fr = p->frag;
	const struct pl_group *g = &p->groups[gi];
	if (!fr->bgc || !g->small)
		return;
	const struct pl_node *n = &p->nodes[node];
	gpumask_t m = (gpumask_t)pl_free_mask(p, node);
	/* Only sizes up to the type's GPUs are kept (pl_frag_bestfit_kept skips
	 * the group for larger ones), and shares only in shareable groups. */
	int ng = p->f->types[g->type].ngpus, kmax = ng < PL_BGC_K - 1 ? ng : PL_BGC_K - 1;
	int nsl = g->shareable ? PL_BGC_N : kmax + 1;
	for (int sl = 1; sl < nsl; sl++) {
		if (sl > kmax && sl < PL_BGC_K)
			continue;
		int k = sl < PL_BGC_K ? sl : 1; /* shares: best fit for one GPU */
		struct pl_bcache *e = &fr->bgc[(size_t)gi * PL_BGC_N + (size_t)sl];
		if (e->ver != old || e->tier < 0 || (e->found && e->cand.node == node))
			continue;
		const int *bt = btier_of(p, g->type, k);
		if (!bt)
			continue;
		int t = bt[m];
		if (t != INT_MAX && (t < e->tier || (t == e->tier && n->gpos < p->nodes[e->cand.node].gpos))) {
			struct node_pick pk;
			if (!ptab_best(p->ptabs[g->type], m, k, &pk))
				continue; /* not as best fit sees it: stays stale */
			if (pk.q.bottleneck_gbps >= e->min_bw &&
			    pl_fits_cpu_mem(p, node, e->cpus, e->mem)) {
				pl_make_cand(p, g, n->gpos, &pk, m, &e->cand);
				e->found = true;
				e->tier = t;
			}
		}
		e->ver = now;
	}
}

/* pl_index_best(p, c, k, best), with each group's answer kept until one of
 * its nodes changes (the versions of the ranked tables' group answers): the
 * explanation asks best fit on every decision, and most groups are as they
 * were at the last one. */
bool pl_frag_bestfit_kept(struct placer *p, const struct pl_ctx *c, int k,
			 struct pl_cand *best)
{
	struct pl_frag *fr = p->frag;
	if (fr->ngver != p->ngroups || k != c->k || k >= PL_BGC_K || c->req->exclusive)
		return pl_index_best(p, c, k, best);
	if (!fr->bgc) {
		fr->bgc = calloc((size_t)fr->ngver * PL_BGC_N + 1, sizeof(*fr->bgc));
		if (!fr->bgc)
			return pl_index_best(p, c, k, best);
	}
	bool found = false;
	int sl = c->share ? PL_BGC_K + c->req->gpu_milli % PL_SGC_SLOTS : k;
	/* pl_rtype_of() works for c->k, which is k here */
	for (int gi = 0; gi < p->ngroups; gi++) {
		if (!p->group_ok[gi])
			continue;
		const struct pl_group *g = &p->groups[gi];
		const struct node_type *t = &p->f->types[g->type];
		if (t->ngpus < k)
			continue;
		const struct pl_rtype *rt = pl_rtype_of(p, c, g->type);
		if (found && (!rt->fq_ok || node_quality_cmp(&rt->fq, &best->pick.q) < 0))
			continue; /* this group cannot beat the best so far */
		int cpus = rt->cpus;
		int64_t mem = rt->mem;
		struct pl_bcache *e = &fr->bgc[(size_t)gi * PL_BGC_N + (size_t)sl];
		if (e->ver != fr->gver[gi] || e->share != c->share ||
		    e->min_bw != c->req->min_bw_gbps || e->cpus != cpus || e->mem != mem) {
			e->ver = fr->gver[gi];
			e->share = c->share;
			e->min_bw = c->req->min_bw_gbps;
			e->cpus = cpus;
			e->mem = mem;
			e->found = pl_index_group_best(p, c, gi, k, &e->cand);
			e->tier = INT_MAX;
			if (e->found) {
				const int *bt = g->small ? btier_of(p, g->type, k) : NULL;
				e->tier = bt ? bt[p->nodes[e->cand.node].imask] : -1;
			}
		}
		if (e->found && (!found || pl_cand_cmp(p, &e->cand, best) < 0)) {
			*best = e->cand;
			found = true;
		}
	}
	return found;
}

/* pl_share_best()'s answer among group gi's nodes with shares: a node's
 * fullest shared GPU with room for the share, from its packed entry where
 * judged for this size since it last changed. */
static void share_group(struct placer *p, const struct pl_ctx *c, int gi, int cpus,
			int64_t mem, struct pl_scache *e)
{
	int milli = c->req->gpu_milli;
	const struct pl_frag *fr = p->frag;
	int ei = pl_eager_index(fr, p->groups[gi].type, milli);
	const struct pl_pshare *sv =
		fr->plists && ei >= 0 ? pl_pshare_at(fr, ei, fr->pstart[gi]) : NULL;
	e->node = e->gpu = -1;
	e->rem = INT_MAX;
	const struct pl_pent *en;
	for (int it = PL_PSTART, nd; (nd = pl_partial_next(p, gi, &it, &en)) >= 0;) {
		if (en && en->valid && sv) {
			const struct pl_pshare *s = &sv[it];
			if (s->sgpu < 0 || cpus > en->cpu_left || mem > en->mem_left ||
			    s->srem > e->rem)
				continue; /* pl_fits_cpu_mem() */
			if (s->srem == e->rem && pl_name_cmp(p, nd, e->node) > 0)
				continue; /* another node: names differ */
			e->rem = s->srem;
			e->node = nd;
			e->gpu = s->sgpu;
			continue;
		}
		const struct pl_node *n = &p->nodes[nd];
		if (!n->usable || !pl_fits_cpu_mem(p, nd, cpus, mem))
			continue;
		for (gpumask_t m = n->shared & ~n->bad; m; m &= m - 1) {
			int g = __builtin_ctz(m);
			int rem = PL_MILLI - n->used[g];
			if (rem < milli || rem > e->rem)
				continue;
			if (rem == e->rem) {
				int cmp = pl_name_cmp(p, nd, e->node);
				if (cmp > 0 || (cmp == 0 && g > e->gpu))
					continue;
			}
			e->rem = rem;
			e->node = nd;
			e->gpu = g;
		}
	}
}

bool pl_frag_share_best_kept(struct placer *p, const struct pl_ctx *c, int *node, int *gpu)
{
	struct pl_frag *fr = p->frag;
	if (fr->ngver != p->ngroups || !c->share)
		return pl_share_best(p, c, node, gpu);
	if (!fr->sgc) {
		fr->sgc = calloc((size_t)fr->ngver * PL_SGC_SLOTS + 1, sizeof(*fr->sgc));
		if (!fr->sgc)
			return pl_share_best(p, c, node, gpu);
	}
	int milli = c->req->gpu_milli, best_rem = INT_MAX;
	*node = *gpu = -1;
	pl_plists_fresh(p);
	for (int gi = 0; gi < p->ngroups; gi++) {
		const struct pl_group *g = &p->groups[gi];
		if (!p->group_ok[gi] || !g->shareable)
			continue; /* pl_share_best's nodes with shares are shareable */
		struct node_quality q;
		if (!ptab_full_quality(p->ptabs[g->type], 1, &q) ||
		    q.bottleneck_gbps < c->req->min_bw_gbps)
			continue;
		int cpus;
		int64_t mem;
		pl_demand(c, &p->f->types[g->type], 0, milli, &cpus, &mem);
		struct pl_scache *e =
			&fr->sgc[(size_t)gi * PL_SGC_SLOTS + (size_t)(milli % PL_SGC_SLOTS)];
		if (e->ver != fr->gver[gi] || e->milli != milli || e->min_bw != c->req->min_bw_gbps ||
		    e->cpus != cpus || e->mem != mem) {
			e->ver = fr->gver[gi];
			e->milli = milli;
			e->min_bw = c->req->min_bw_gbps;
			e->cpus = cpus;
			e->mem = mem;
			share_group(p, c, gi, cpus, mem, e);
		}
		if (e->node < 0 || e->rem > best_rem)
			continue;
		if (e->rem == best_rem) {
			int cmp = pl_name_cmp(p, e->node, *node);
			if (cmp > 0 || (cmp == 0 && e->gpu > *gpu))
				continue;
		}
		best_rem = e->rem;
		*node = e->node;
		*gpu = e->gpu;
	}
	return *node >= 0;
}

/* place_fragjudge.c - the nodes holding shares under a pure workload
 * (place_frag_int.h): the ranked tables judge the other nodes by free mask,
 * these one by one, and their judged candidates are kept per node version
 * and request shape.
 *
 * Judging: node_cand (place_frag.c) walks the node's GPUs and works out F
 * of every state the request could leave, GPU by GPU. Here the node's state
 * is read once into levels (pl_flev), each candidate's state is the levels
 * with one GPU moved, and F of it is a sum over the type's folded shapes. A
 * share's candidates are few: F sees only the free value of the GPU it
 * takes, and every GPU not in the node's free mask leaves the same whole
 * GPUs free, so those are one candidate per distinct free value (its lowest
 * GPU); the GPUs in the free mask are the ranked table's key for the mask
 * (the one leaving the best leftover shape). Whole GPUs take the key's set.
 * The answer is node_cand's with no bandwidth floor, field for field
 * (test_place_frag.c compares against a placer that judges every node with
 * node_cand).
 *
 * Kept: a node with shares is judged for its type's heaviest share sizes
 * of the workload and for 1..PL_EAGER_K whole GPUs as soon as it changes
 * (pl_frag_judge_now, from place.c's node_changed through
 * pl_frag_node_changed), into its entry of its group's packed list (struct
 * pl_pent, place_frag_int.h), so the decisions after a burst of changes
 * read those entries one after the other instead of judging every such
 * node again, or visiting its state. The levels are read once for all of
 * them, and a whole size costs one sum over the folded shapes. Other
 * shapes (more whole GPUs, other share sizes) are judged when first asked,
 * into PL_NCACHE slots keyed by (node version, shape).
 */
#include <stdlib.h>
#include <string.h>

#include "place_frag_int.h"

/* A share candidate: the free value its GPU has now, the GPU and what the
 * node's whole GPUs leave. */
struct jcand {
	int v, gpu;
	struct node_leftover left;
	int64_t delta;
};

static bool jcand_better(const struct jcand *a, const struct jcand *b)
{
	if (a->delta != b->delta)
		return a->delta < b->delta;
	int c = node_leftover_cmp(&a->left, &b->left);
	if (c)
		return c > 0;
	return a->gpu < b->gpu;
}

/* One shape's answer on the node read into fv, fm and lev (F before),
 * with leftover *l of its free mask worked out once when needed (*lok). */
static int judge_one(struct placer *p, int node, int type, int ng, const int *fv, gpumask_t fm,
		     const struct pl_flev *lev, int64_t before, int cpu_left, int64_t mem_left,
		     struct node_leftover *l, bool *lok, const struct pl_ftab *tab, struct fcand *out)
{
	struct pl_frag *fr = p->frag;
	const struct pl_node *n = &p->nodes[node];
	memset(out, 0, sizeof(*out));
	out->node = node;
	out->gpu = -1;
	out->price = p->f->nodes[node].price_hint;
	out->cpu_after = cpu_left;
	const struct pl_fkey *key = &tab->key[fm];
	if (tab->milli >= PL_MILLI) {
		if (!key->ok)
			return 0;
		int k = __builtin_popcount(key->set);
		out->set = key->set;
		out->q = key->q;
		out->left = key->left;
		out->free_after = lev->total - (int64_t)k * PL_MILLI;
		out->delta = pl_frag_lev(fr, type, lev, k, PL_MILLI, 0, cpu_left, mem_left) - before;
		return 1;
	}
	int milli = tab->milli;
	struct node_quality q1;
	if (!ptab_full_quality(p->ptabs[type], 1, &q1))
		return 0;
	/* The candidates: one per distinct free value outside the free mask,
	 * then the free mask's. */
	struct jcand cand[TOPO_MAX_GPUS + 1];
	int nc = 0;
	for (int g = 0; g < ng; g++) {
		gpumask_t bit = (gpumask_t)1 << g;
		if ((n->bad & bit) || (fm & bit) || fv[g] < milli ||
		    (n->used[g] > 0 && !(n->shared & bit)))
			continue;
		int j = 0;
		while (j < nc && cand[j].v != fv[g])
			j++;
		if (j == nc)
			cand[nc++] = (struct jcand){.v = fv[g], .gpu = g};
	}
	if (nc > 0 && !*lok) {
		ptab_leftover(p->ptabs[type], fm, l);
		*lok = true;
	}
	for (int j = 0; j < nc; j++)
		cand[j].left = *l;
	if (fm && key->ok && key->gpu >= 0)
		cand[nc++] = (struct jcand){.v = fv[key->gpu], .gpu = key->gpu, .left = key->left};
	if (nc == 0)
		return 0;
	int best = 0;
	for (int j = 0; j < nc; j++) {
		cand[j].delta = pl_frag_lev(fr, type, lev, 1, cand[j].v, cand[j].v - milli, cpu_left,
					    mem_left) - before;
		if (j > 0 && jcand_better(&cand[j], &cand[best]))
			best = j;
	}
	out->gpu = cand[best].gpu;
	out->q = q1;
	out->left = cand[best].left;
	out->delta = cand[best].delta;
	out->free_after = lev->total - milli;
	return 1;
}

bool pl_frag_judge_lev(struct placer *p, int node, const struct pl_ftab *const *tab, int ntab,
		       int cpus, int64_t mem, struct fcand *out, bool *found,
		       struct pl_jwhole *w)
{
	struct pl_frag *fr = p->frag;
	const struct pl_node *n = &p->nodes[node];
	const struct node_type *t = fleet_node_type(p->f, node);
	int type = p->f->nodes[node].type, ng = t->ngpus;
	int fv[TOPO_MAX_GPUS];
	gpumask_t fm = 0;
	for (int g = 0; g < ng; g++) {
		gpumask_t bit = (gpumask_t)1 << g;
		fv[g] = (n->bad & bit) ? 0 : PL_MILLI - n->used[g];
		if (n->used[g] == 0 && !(n->bad & bit) && !(n->shared & bit))
			fm |= bit;
	}
	struct pl_flev lev;
	if (!n->usable || !pl_flev_of(fr, type, fv, ng, &lev))
		return false;
	int cpu_left = t->cpus - n->cpus_used;
	int64_t mem_left = (int64_t)t->mem_gib * 1024 - n->mem_used;
	if (!fr->fresh[node]) {
		fr->before[node] = pl_frag_lev(fr, type, &lev, 0, 0, 0, cpu_left, mem_left);
		fr->fresh[node] = true;
	}
	struct node_leftover l;
	bool lok = false;
	for (int i = 0; i < ntab; i++)
		found[i] = judge_one(p, node, type, ng, fv, fm, &lev, fr->before[node],
				     cpu_left - cpus, mem_left - mem, &l, &lok, tab[i], &out[i]);
	if (w) { /* judge_one's whole GPUs: the table's set leaves k GPUs less */
		w->fm = fm;
		w->total = lev.total;
		for (int k = 1; k <= PL_EAGER_K; k++)
			w->delta[k - 1] = __builtin_popcount(fm) < k
						  ? PL_NO_WHOLE
						  : pl_frag_lev(fr, type, &lev, k, PL_MILLI, 0,
								cpu_left - cpus, mem_left - mem) -
							    fr->before[node];
	}
	return true;
}

/* ---- kept candidates ----------------------------------------------------- */

static struct pl_ncache *ncache_of(struct pl_frag *fr, int node)
{
	if (!fr->ncache[node])
		fr->ncache[node] = calloc(1, sizeof(*fr->ncache[node]));
	return fr->ncache[node];
}

/* The slot of nc that keeps shape (k, milli) at version ver, or else the
 * one to judge it into: one that holds nothing valid (an older version's,
 * or the shape's), so the node's other shapes stay kept; round robin when
 * all do. */
static struct pl_nslot *nslot(struct pl_ncache *nc, uint32_t ver, int k, int milli)
{
	struct pl_nslot *stale = NULL;
	for (int i = 0; i < PL_NCACHE; i++) {
		struct pl_nslot *sl = &nc->s[i];
		if (sl->ver == ver && sl->k == k && sl->milli == milli)
			return sl;
		if (!stale && (sl->ver != ver || (sl->k == k && sl->milli == milli)))
			stale = sl;
	}
	if (stale)
		return stale;
	stale = &nc->s[nc->next];
	nc->next = (nc->next + 1) % PL_NCACHE;
	return stale;
}

/* The kept candidate of node at version ver, with cpu_left CPUs and
 * mem_left MiB left, for the request (rt: its demand on the node's type);
 * judged into a slot with no bandwidth floor when not kept. */
static bool slot_cand(struct placer *p, const struct pl_ctx *c, int node, uint32_t ver,
		      int cpu_left, int64_t mem_left, const struct pl_ftab *tab,
		      const struct pl_rtype *rt, struct fcand *out)
{
	struct pl_frag *fr = p->frag;
	int milli = c->share ? c->req->gpu_milli : 0;
	int k = c->share ? 0 : c->k;
	int cpus = rt->cpus;
	if (cpus > cpu_left || rt->mem > mem_left)
		return false; /* pl_fits_cpu_mem() */
	struct pl_ncache *nc = ncache_of(fr, node);
	if (!nc)
		return pl_frag_node_cand(p, c, node, out);
	struct pl_nslot *e = nslot(nc, ver, k, milli);
	if (e->ver != ver || e->k != k || e->milli != milli) {
		e->ver = ver;
		e->k = k;
		e->milli = milli;
		if (!pl_frag_judge_lev(p, node, &tab, 1, cpus, rt->mem, &e->cand, &e->found,
				       NULL)) {
			struct place_request r0 = *c->req; /* a copy with no floor */
			struct pl_ctx c0 = *c;
			r0.min_bw_gbps = 0;
			c0.req = &r0;
			e->found = pl_frag_node_cand(p, &c0, node, &e->cand);
		}
	}
	if (!e->found || e->cand.q.bottleneck_gbps < c->req->min_bw_gbps)
		return false;
	*out = e->cand;
	out->cpu_after = cpu_left - cpus;
	return true;
}

/* node_cand under a pure workload, through the node's kept candidates: the
 * same answer (F's growth then depends on the free GPUs alone, so the
 * candidate with no bandwidth floor is a function of the node's state and
 * the request's shape; the floor, CPUs and memory are checked here). A
 * candidate not kept is judged through F's levels (place_fragjudge.c) with
 * tab, the ranked table of the node's type for the request's shape. */
bool pl_node_cand_kept(struct placer *p, const struct pl_ctx *c, int node,
		       const struct pl_ftab *tab, struct fcand *out)
{
	struct pl_frag *fr = p->frag;
	const struct pl_node *n = &p->nodes[node];
	if (!n->usable || !p->group_ok[n->group])
		return false;
	if (node >= fr->nncache)
		return pl_frag_node_cand(p, c, node, out);
	const struct node_type *t = fleet_node_type(p->f, node);
	const struct pl_rtype *rt = pl_rtype_of(p, c, p->f->nodes[node].type);
	int cpu_left = t->cpus - n->cpus_used;
	int64_t mem_left = (int64_t)t->mem_gib * 1024 - n->mem_used;
	if (rt->cpus > cpu_left || rt->mem > mem_left)
		return false; /* pl_fits_cpu_mem() */
	if (c->share && fr->plists && node < fr->plist_nn && fr->ppos[node] >= 0 &&
	    fr->pv[fr->ppos[node]].valid) {
		int i = pl_eager_index(fr, p->f->nodes[node].type, c->req->gpu_milli);
		const struct pl_pent *en = &fr->pv[fr->ppos[node]];
		if (i >= 0)
			return rt->fq_ok && pl_pent_cand(en, pl_pshare_of(fr, en, i), rt->cpus,
							 rt->mem, c->req->min_bw_gbps, &rt->fq, out);
	}
	return slot_cand(p, c, node, fr->nver[node], cpu_left, mem_left, tab, rt, out);
}

bool pl_pent_cand_kept(struct placer *p, const struct pl_ctx *c, const struct pl_pent *en,
		       const struct pl_ftab *tab, struct fcand *out)
{
	if (en->node >= p->frag->nncache)
		return pl_node_cand_kept(p, c, en->node, tab, out);
	return slot_cand(p, c, en->node, en->ver, en->cpu_left, en->mem_left, tab,
			 pl_rtype_of(p, c, tab->type), out);
}

bool pl_frag_node_cand_kept(struct placer *p, const struct pl_ctx *c, int node,
			    struct fcand *out)
{
	struct pl_frag *fr = p->frag;
	const struct pl_node *n = &p->nodes[node];
	if (!fr->pure || fr->fast_off || (!c->share && c->k < 1) || !p->groups[n->group].small)
		return pl_frag_node_cand(p, c, node, out);
	int type = p->f->nodes[node].type;
	const struct pl_ftab *tab =
		pl_ftab_get(p, type, c->share ? 1 : c->k, c->share ? c->req->gpu_milli : PL_MILLI);
	if (!tab)
		return pl_frag_node_cand(p, c, node, out);
	if (n->shared)
		return pl_node_cand_kept(p, c, node, tab, out);
	/* No shares: judged by its free mask alone, as the ranked walk does. */
	const struct pl_rtype *rt = pl_rtype_of(p, c, type);
	gpumask_t m = (gpumask_t)pl_free_mask(p, node);
	if (!n->usable || !p->group_ok[n->group] || !tab->key[m].ok ||
	    tab->key[m].q.bottleneck_gbps < c->req->min_bw_gbps ||
	    !pl_fits_cpu_mem(p, node, rt->cpus, rt->mem))
		return false;
	pl_fkey_cand(p, tab, m, node, out);
	return true;
}

int pl_eager_index(const struct pl_frag *fr, int type, int milli)
{
	for (int i = 0; i < fr->neager[type]; i++)
		if (fr->emilli[type][i] == milli)
			return i;
	return -1;
}

bool pl_pent_cand(const struct pl_pent *en, const struct pl_pshare *s, int cpus, int64_t mem,
		  int min_bw, const struct node_quality *q1, struct fcand *out)
{
	if (s->gpu < 0 || cpus > en->cpu_left || mem > en->mem_left || q1->bottleneck_gbps < min_bw)
		return false; /* node_cand_kept's checks, pl_fits_cpu_mem() */
	memset(out, 0, sizeof(*out));
	out->node = en->node;
	out->gpu = s->gpu;
	out->q = *q1;
	out->left = s->left;
	out->delta = s->delta;
	out->free_after = s->free_after;
	out->cpu_after = en->cpu_left - cpus;
	out->price = en->price;
	return true;
}

bool pl_pent_whole(const struct pl_pent *en, const struct pl_fkey *key, int k, int64_t delta,
		   int cpus, int64_t mem, int min_bw, struct fcand *out)
{
	if (!key->ok || delta == PL_NO_WHOLE || cpus > en->cpu_left || mem > en->mem_left ||
	    key->q.bottleneck_gbps < min_bw)
		return false; /* slot_cand's checks */
	memset(out, 0, sizeof(*out));
	out->node = en->node;
	out->set = key->set;
	out->gpu = -1;
	out->q = key->q;
	out->left = key->left;
	out->delta = delta;
	out->free_after = (int64_t)en->total - (int64_t)k * PL_MILLI;
	out->cpu_after = en->cpu_left - cpus;
	out->price = en->price;
	return true;
}

void pl_frag_judge_now(struct placer *p, int node)
{
	struct pl_frag *fr = p->frag;
	const struct pl_node *n = &p->nodes[node];
	int type = p->f->nodes[node].type, gi = n->group;
	if (!fr->pure || fr->fast_off || !n->shared || !n->usable || !fr->plists ||
	    node >= fr->plist_nn || fr->ppos[node] < 0 || gi < 0 ||
	    gi >= p->ngroups || !p->groups[gi].small || !p->groups[gi].shareable)
		return;
	struct pl_pent *en = &fr->pv[fr->ppos[node]];
	const struct pl_ftab *tab[PL_EAGER];
	struct fcand cand[PL_EAGER];
	bool found[PL_EAGER];
	int nt = fr->neager[type];
	for (int i = 0; i < nt; i++) {
		struct pl_ftab *tb = fr->etab[type][i];
		if (!tb && !(tb = fr->etab[type][i] = pl_ftab_get(p, type, 1, fr->emilli[type][i])))
			return;
		tab[i] = tb;
	}
	/* The request's CPUs and memory do not change F's growth under a pure
	 * workload where they fit, and an entry is read only there
	 * (pl_pent_cand). A table that a later ftab_get evicted is gone. */
	for (int i = 0; i < nt; i++)
		if (fr->etab[type][i] != tab[i])
			return;
	struct pl_jwhole w;
	if (!pl_frag_judge_lev(p, node, tab, nt, 0, 0, cand, found, &w))
		return;
	const struct node_type *t = fleet_node_type(p->f, node);
	en->cpu_left = t->cpus - n->cpus_used;
	en->mem_left = (int64_t)t->mem_gib * 1024 - n->mem_used;
	en->price = p->f->nodes[node].price_hint;
	en->ver = fr->nver[node];
	en->fm = w.fm;
	en->total = (int32_t)w.total;
	for (int k = 1; k <= PL_EAGER_K; k++)
		*pl_pwhole_at(fr, k, fr->ppos[node]) = w.delta[k - 1];
	for (int i = 0; i < nt; i++) {
		struct pl_pshare *s = pl_pshare_at(fr, i, fr->ppos[node]);
		int milli = fr->emilli[type][i];
		s->gpu = (int8_t)(found[i] ? cand[i].gpu : -1);
		s->left = cand[i].left;
		s->delta = cand[i].delta;
		s->free_after = (int32_t)cand[i].free_after;
		s->sgpu = -1;
		s->srem = 0;
		for (gpumask_t m = n->shared & ~n->bad; m; m &= m - 1) {
			int g = __builtin_ctz(m), rem = PL_MILLI - n->used[g];
			if (rem >= milli && (s->sgpu < 0 || rem < s->srem)) {
				s->srem = (int16_t)rem;
				s->sgpu = (int8_t)g;
			}
		}
	}
	en->valid = true;
}

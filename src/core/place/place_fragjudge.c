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
 * Kept: a node's candidates live in PL_NCACHE slots keyed by (node version,
 * shape). A node with shares is judged for its type's heaviest share sizes
 * of the workload as soon as it changes (pl_frag_judge_now, from
 * place.c's node_changed through pl_frag_node_changed), so the share
 * decisions after a burst of releases read them instead of judging every
 * such node again; other shapes are judged when first asked. */
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
		       int cpus, int64_t mem, struct fcand *out, bool *found)
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
	int milli = c->share ? c->req->gpu_milli : 0;
	int k = c->share ? 0 : c->k;
	const struct pl_rtype *rt = pl_rtype_of(p, c, p->f->nodes[node].type);
	int cpus = rt->cpus;
	if (cpus > t->cpus - n->cpus_used ||
	    rt->mem > (int64_t)t->mem_gib * 1024 - n->mem_used)
		return false; /* pl_fits_cpu_mem() */
	struct pl_ncache *nc = ncache_of(fr, node);
	if (!nc)
		return pl_frag_node_cand(p, c, node, out);
	uint32_t ver = fr->nver[node];
	struct pl_nslot *e = nslot(nc, ver, k, milli);
	if (e->ver != ver || e->k != k || e->milli != milli) {
		/* Judged with no bandwidth floor. */
		e->ver = ver;
		e->k = k;
		e->milli = milli;
		if (!pl_frag_judge_lev(p, node, &tab, 1, cpus, rt->mem, &e->cand, &e->found)) {
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
	out->cpu_after = t->cpus - n->cpus_used - cpus;
	return true;
}

bool pl_frag_node_cand_kept(struct placer *p, const struct pl_ctx *c, int node,
			    struct fcand *out)
{
	struct pl_frag *fr = p->frag;
	const struct pl_node *n = &p->nodes[node];
	if (!fr->pure || fr->fast_off || !n->shared || (!c->share && c->k < 1) ||
	    !p->groups[n->group].small)
		return pl_frag_node_cand(p, c, node, out);
	int type = p->f->nodes[node].type;
	const struct pl_ftab *tab =
		pl_ftab_get(p, type, c->share ? 1 : c->k, c->share ? c->req->gpu_milli : PL_MILLI);
	if (!tab)
		return pl_frag_node_cand(p, c, node, out);
	pl_rtype_reset(fr); /* the demand pl_rtype_of() gives is this request's */
	return pl_node_cand_kept(p, c, node, tab, out);
}

void pl_frag_judge_now(struct placer *p, int node)
{
	struct pl_frag *fr = p->frag;
	const struct pl_node *n = &p->nodes[node];
	int type = p->f->nodes[node].type, gi = n->group;
	if (!fr->pure || fr->fast_off || !n->shared || !n->usable || node >= fr->nncache ||
	    !fr->neager[type] || gi < 0 || gi >= p->ngroups || !p->groups[gi].small ||
	    !p->groups[gi].shareable)
		return;
	struct pl_ncache *nc = ncache_of(fr, node);
	if (!nc)
		return;
	uint32_t ver = fr->nver[node];
	const struct pl_ftab *tab[PL_EAGER];
	struct pl_nslot *slot[PL_EAGER];
	struct fcand cand[PL_EAGER];
	bool found[PL_EAGER];
	int nt = 0, which[PL_EAGER];
	for (int i = 0; i < fr->neager[type]; i++) {
		int milli = fr->emilli[type][i];
		struct pl_ftab *tb = fr->etab[type][i];
		if (!tb && !(tb = fr->etab[type][i] = pl_ftab_get(p, type, 1, milli)))
			return;
		struct pl_nslot *e = nslot(nc, ver, 0, milli);
		if (e->ver == ver && e->k == 0 && e->milli == milli)
			continue;
		e->ver = ver; /* taken, so the next size gets another slot */
		e->k = 0;
		e->milli = milli;
		which[nt] = i;
		tab[nt] = tb;
		slot[nt++] = e;
	}
	/* The request's CPUs and memory do not change F's growth under a pure
	 * workload where they fit, and a slot is read only there
	 * (node_cand_kept). A table that a later ftab_get evicted is gone. */
	bool ok = nt > 0;
	for (int i = 0; i < nt && ok; i++)
		ok = fr->etab[type][which[i]] == tab[i];
	if (ok)
		ok = pl_frag_judge_lev(p, node, tab, nt, 0, 0, cand, found);
	for (int i = 0; i < nt; i++) {
		if (!ok) {
			slot[i]->ver = 0;
			continue;
		}
		slot[i]->cand = cand[i];
		slot[i]->found = found[i];
	}
}

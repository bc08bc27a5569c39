/* place_fragjudge.c - judging one node for a request through F's levels
 * (place_frag_int.h), for the nodes with shares that the ranked tables
 * cannot judge by free mask.
 *
 * node_cand (place_frag.c) walks the node's GPUs and works out F of every
 * state the request could leave, GPU by GPU. Here the node's state is read
 * once into levels (pl_flev), each candidate's state is the levels with one
 * GPU moved, and F of it is a sum over the type's folded shapes. A share's
 * candidates are few: F sees only the free value of the GPU it takes, and
 * every GPU not in the node's free mask leaves the same whole GPUs free, so
 * those are one candidate per distinct free value (its lowest GPU); the
 * GPUs in the free mask are the ranked table's key for the mask (the one
 * leaving the best leftover shape). Whole GPUs take the key's set. The
 * answer is node_cand's with no bandwidth floor, field for field
 * (test_place_fragkeep.c compares decisions against a placer that judges
 * every node with node_cand). */
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

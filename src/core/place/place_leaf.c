/* place_leaf.c - the leaf term for single-node work (place.h).
 *
 * A node is whole when it is in service with every GPU free and nothing
 * (no GPU, share, CPU or memory) used; gangs of whole-node pieces need whole
 * nodes under one leaf switch. The placer keeps, per leaf, how many whole
 * nodes it has (kept up to date on every node change, O(1)).
 *
 * When the single-node choice (best fit or frag, whatever decided it) is a
 * whole node, every whole node of the same index group and price hint is
 * equal to it for that choice: same type, free mask, price, owner and site,
 * so the same GPU set, quality and fragmentation. Among those, the leaf term
 * takes the one whose leaf has the fewest whole nodes (best fit at the leaf
 * level: an empty leaf is broken last, and the leaf with the most whole nodes
 * stays able to hold the largest gang), then the first by name.
 *
 * Cost: the group's bucket of that free mask (its nodes with every GPU free)
 * is walked in name order, a run of one leaf's nodes at a time, for at most
 * PL_LEAF_RUNS runs (the rest of a run skipped once its first whole node is
 * judged), and stops at a leaf with one whole node (nothing can do better). Groups over more leaves than that get the best of the first
 * PL_LEAF_RUNS runs; the answer is still a function of the state alone.
 * Groups of large types (more GPUs than the bucket index covers) are left to
 * the plain choice. */
#include <stdlib.h>
#include <string.h>

#include "place_internal.h"

#define PL_LEAF_RUNS 16

struct pl_leaf {
	int nleaves, nnodes;
	int *whole;        /* [nleaves] whole nodes per leaf */
	unsigned char *is; /* [nnodes] node counted as whole */
};

static bool node_whole(const struct placer *p, int node)
{
	const struct pl_node *n = &p->nodes[node];
	int ngpus = fleet_node_type(p->f, node)->ngpus;
	gpumask_t full = ngpus >= 32 ? ~(gpumask_t)0 : (((gpumask_t)1 << ngpus) - 1);
	return n->usable && ngpus > 0 && n->partial_pos < 0 && !n->shared && !n->cpus_used &&
	       !n->mem_used && (gpumask_t)pl_free_mask(p, node) == full;
}

void pl_leaf_free(struct placer *p)
{
	if (!p->leaf)
		return;
	free(p->leaf->whole);
	free(p->leaf->is);
	free(p->leaf);
	p->leaf = NULL;
}

enum sl_err pl_leaf_build(struct placer *p)
{
	const struct fleet *f = p->f;
	struct pl_leaf *l = calloc(1, sizeof(*l));
	if (!l)
		return SL_ENOMEM;
	l->whole = calloc((size_t)f->nleaves + 1, sizeof(*l->whole));
	l->is = calloc((size_t)f->nnodes + 1, sizeof(*l->is));
	if (!l->whole || !l->is) {
		free(l->whole);
		free(l->is);
		free(l);
		return SL_ENOMEM;
	}
	l->nleaves = f->nleaves;
	l->nnodes = f->nnodes;
	for (int i = 0; i < f->nnodes; i++) {
		l->is[i] = node_whole(p, i);
		l->whole[f->nodes[i].leaf] += l->is[i];
	}
	pl_leaf_free(p);
	p->leaf = l;
	return SL_OK;
}

void pl_leaf_node_changed(struct placer *p, int node)
{
	struct pl_leaf *l = p->leaf;
	if (!l || node >= l->nnodes)
		return;
	unsigned char now = node_whole(p, node);
	if (now != l->is[node]) {
		l->whole[p->f->nodes[node].leaf] += now ? 1 : -1;
		l->is[node] = now;
	}
}

void placer_set_leaf_term(struct placer *p, bool on)
{
	if (p)
		p->leaf_off = !on;
}

int placer_leaf_whole(const struct placer *p, int leaf)
{
	if (!p || !p->leaf || leaf < 0 || leaf >= p->leaf->nleaves)
		return 0;
	return p->leaf->whole[leaf];
}

int pl_leaf_refine(struct placer *p, struct placement *out)
{
	struct pl_leaf *l = p->leaf;
	if (!l || p->leaf_off || out->npicks != 1 || out->picks[0].gpu >= 0)
		return 0;
	int b = out->picks[0].node;
	if (b >= l->nnodes || !l->is[b])
		return 0;
	const struct fleet *f = p->f;
	const struct pl_group *g = &p->groups[p->nodes[b].group];
	if (!g->small)
		return 0;
	gpumask_t m = (gpumask_t)pl_free_mask(p, b);
	const uint64_t *w = &g->bits[(size_t)m * (size_t)g->nwords];
	int best = b, best_whole = l->whole[f->nodes[b].leaf], best_pos = p->nodes[b].gpos;
	int runs = 0, run_leaf = -1;
	bool run_done = false; /* this run's first whole node was judged */
	/* Once a run's node is judged, the rest of the run is skipped: from
	 * the group's run end on (the run's leaf cannot change before it). */
	for (int pos = pl_next_pos(w, g->nwords, 0); pos >= 0 && best_whole > 1;
	     pos = pl_next_pos(w, g->nwords, run_done ? g->run_end[pos] : pos + 1)) {
		int x = g->nodes[pos], leaf = f->nodes[x].leaf;
		if (leaf != run_leaf) {
			if (++runs > PL_LEAF_RUNS)
				break;
			run_leaf = leaf;
			run_done = false;
		}
		if (run_done || !l->is[x] || f->nodes[x].price_hint != f->nodes[b].price_hint)
			continue;
		run_done = true;
		if (l->whole[leaf] < best_whole || (l->whole[leaf] == best_whole && pos < best_pos)) {
			best = x;
			best_whole = l->whole[leaf];
			best_pos = pos;
		}
	}
	if (best == b)
		return 0;
	int spared = l->whole[f->nodes[b].leaf];
	out->picks[0].node = best;
	return spared;
}

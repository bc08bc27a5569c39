/* place_frag.c - the fragmentation-aware policy (place_frag.h) and CPU-only
 * requests.
 *
 * Classes are grouped by GPU shape (whole GPUs k, share milli, allowed types):
 * whether a shape's GPUs fit a node and how many free thousandths it strands
 * there depend only on the node's free vector, so they are computed once per
 * shape; the classes of a shape then differ only by CPUs and memory, so each
 * adds its weight to "fits" or "does not fit". F of a node's current state is
 * cached per node and dropped whenever the node changes (pl_frag_node_changed
 * is called from place.c's node_changed). The per-mask ranked tables and the
 * other answers kept between decisions are in place_fragtab.c. */
#include "place_frag.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place_frag_int.h"

static void frag_destroy(struct pl_frag *fr)
{
	if (!fr)
		return;
	if (fr->ncache)
		for (int i = 0; i < fr->nncache; i++)
			free(fr->ncache[i]);
	free(fr->ncache);
	free(fr->nver);
	free(fr->rtab);
	free(fr->rt);
	free(fr->pv);
	free(fr->ps);
	free(fr->pw);
	free(fr->pstart);
	free(fr->pcnt);
	free(fr->pcap);
	free(fr->ppos);
	free(fr->neager);
	free(fr->emilli);
	free(fr->etab);
	free(fr->bgc);
	free(fr->sgc);
	if (fr->btier)
		for (int i = 0; i < fr->ntypes * PL_BGC_K; i++)
			free(fr->btier[i]);
	free(fr->btier);
	pl_fold_free(fr->fold);
	for (int i = 0; i < fr->nshapes; i++)
		free(fr->shapes[i].type_ok);
	free(fr->shapes);
	free(fr->cls);
	free(fr->before);
	free(fr->fresh);
	for (int i = 0; i < fr->ntabs; i++) {
		free(fr->tabs[i]->gc);
		free(fr->tabs[i]);
	}
	free(fr->gver);
	free(fr);
}

void pl_frag_free(struct placer *p)
{
	frag_destroy(p->frag);
	p->frag = NULL;
}

/* Node is in its group's packed list of nodes with shares exactly when it
 * has some (a new entry is not judged yet). A group out of room turns the
 * lists off (only shareable groups have room, and only their nodes take
 * shares). */
static void plist_set(struct placer *p, int node)
{
	struct pl_frag *fr = p->frag;
	const struct pl_node *n = &p->nodes[node];
	if (!fr->plists)
		return;
	int at = node < fr->plist_nn ? fr->ppos[node] : -1, g = n->group;
	bool want = n->shared != 0;
	if (want == (at >= 0))
		return;
	if (want) {
		if (node >= fr->plist_nn || g < 0 || g >= fr->plist_ng || fr->pcnt[g] == fr->pcap[g]) {
			fr->plists = false;
			return;
		}
		at = fr->pstart[g] + fr->pcnt[g]++;
		fr->pv[at].node = node;
		fr->pv[at].valid = false;
		fr->ppos[node] = at;
		return;
	}
	int last = fr->pstart[g] + --fr->pcnt[g]; /* the group's last takes its place */
	if (at != last) {
		fr->pv[at] = fr->pv[last];
		for (int i = 0; i < PL_EAGER; i++)
			*pl_pshare_at(fr, i, at) = *pl_pshare_at(fr, i, last);
		for (int k = 1; k <= PL_EAGER_K; k++)
			*pl_pwhole_at(fr, k, at) = *pl_pwhole_at(fr, k, last);
		fr->ppos[fr->pv[at].node] = at;
	}
	fr->ppos[node] = -1;
}

/* The lists from scratch (a new workload, groups rebuilt, nodes joined);
 * not kept when out of memory. */
static void plists_build(struct placer *p)
{
	struct pl_frag *fr = p->frag;
	int nn = p->f->nnodes, ng = p->ngroups;
	fr->plists = fr->plists_again = false;
	fr->plist_nn = fr->plist_ng = fr->proom = 0;
	if (pl_grow_zero(&fr->pstart, 0, ng, sizeof(int)) ||
	    pl_grow_zero(&fr->pcnt, 0, ng, sizeof(int)) ||
	    pl_grow_zero(&fr->pcap, 0, ng, sizeof(int)) ||
	    pl_grow_zero(&fr->ppos, 0, nn, sizeof(int)))
		return;
	int room = 0;
	for (int g = 0; g < ng; g++) {
		const struct pl_group *gr = &p->groups[g];
		fr->pstart[g] = room;
		fr->pcap[g] = gr->shareable ? gr->n : 0;
		room += fr->pcap[g];
	}
	if (pl_grow_zero(&fr->pv, 0, room, sizeof(*fr->pv)) ||
	    pl_grow_zero(&fr->ps, 0, PL_EAGER * room, sizeof(*fr->ps)) ||
	    pl_grow_zero(&fr->pw, 0, PL_EAGER_K * room, sizeof(*fr->pw)))
		return;
	fr->proom = room;
	for (int i = 0; i < nn; i++)
		fr->ppos[i] = -1;
	fr->plist_nn = nn;
	fr->plist_ng = ng;
	fr->plists = true;
	for (int i = 0; i < nn; i++)
		plist_set(p, i); /* judged when they next change */
}

void pl_plists_fresh(struct placer *p)
{
	if (p->frag->plists_again)
		plists_build(p);
}

void pl_frag_node_changed(struct placer *p, int node)
{
	struct pl_frag *fr = p->frag;
	if (!fr)
		return;
	plist_set(p, node);
	if (fr->plists && node < fr->plist_nn && fr->ppos[node] >= 0)
		fr->pv[fr->ppos[node]].valid = false;
	fr->fresh[node] = false;
	if (++fr->nver[node] == 0)
		fr->nver[node] = 1;
	int g = p->nodes[node].group;
	if (g < 0 || g >= fr->ngver)
		return;
	uint32_t old = fr->gver[g];
	if (++fr->gver[g] == 0)
		fr->gver[g] = 1;
	pl_frag_keep_node(p, node, g, old, fr->gver[g]);
	if (p->nodes[node].shared) /* most nodes have none: no call */
		pl_frag_judge_now(p, node);
}

/* Groups were rebuilt (owners changed): every group's answer is gone. */
void pl_frag_index_changed(struct placer *p)
{
	struct pl_frag *fr = p->frag;
	if (!fr)
		return;
	for (int i = 0; i < fr->ntabs; i++) {
		free(fr->tabs[i]->gc);
		fr->tabs[i]->gc = NULL;
	}
	free(fr->bgc);
	fr->bgc = NULL;
	free(fr->sgc);
	fr->sgc = NULL;
	uint32_t *nv = realloc(fr->gver, ((size_t)p->ngroups + 1) * sizeof(*nv));
	if (nv) {
		fr->gver = nv;
		fr->ngver = p->ngroups;
	} else {
		fr->ngver = 0; /* no versions: group answers are not kept */
	}
	for (int g = 0; g < fr->ngver; g++)
		fr->gver[g] = 1;
	plists_build(p);
}

/* ---- the workload ------------------------------------------------------- */

static enum sl_err class_check(const struct placer *p, const struct place_class *c, int i,
			       bool *type_ok, struct sl_diag *d)
{
	if (c->gpus < 0 || c->gpus > TOPO_MAX_GPUS || c->gpu_milli < 0 ||
	    c->gpu_milli >= PL_MILLI || (c->gpu_milli > 0 && c->gpus > 1))
		return sl_diag_set(d, SL_EINVAL, "workload class %d: gpus %d, gpu_milli %d; "
				   "expected 0..%d whole GPUs or one share of 1..%d", i,
				   c->gpus, c->gpu_milli, TOPO_MAX_GPUS, PL_MILLI - 1);
	if (c->cpus < 0 || c->mem_mib < 0 || c->weight < 1 || c->weight > ((int64_t)1 << 32))
		return sl_diag_set(d, SL_EINVAL, "workload class %d: negative CPUs or memory, "
				   "or weight outside 1..2^32", i);
	if (c->nmodels < 0 || c->nmodels > PLACE_MAX_MODELS)
		return sl_diag_set(d, SL_EINVAL, "workload class %d: %d models; at most %d", i,
				   c->nmodels, PLACE_MAX_MODELS);
	const struct fleet *f = p->f;
	for (int t = 0; t < f->ntypes; t++)
		type_ok[t] = c->nmodels == 0;
	for (int m = 0; m < c->nmodels; m++) {
		const struct gpu_model *gm = fleet_find_model(f, c->models[m]);
		if (!gm)
			return sl_diag_set(d, SL_EINVAL, "workload class %d: unknown GPU model "
					   "'%s'", i, c->models[m] ? c->models[m] : "(null)");
		for (int t = 0; t < f->ntypes; t++)
			if (f->types[t].gpu && !strcmp(f->types[t].gpu->name, gm->name))
				type_ok[t] = true;
	}
	return SL_OK;
}

static int shape_find(const struct pl_frag *fr, int ntypes, int k, int milli,
		      const bool *type_ok)
{
	for (int s = 0; s < fr->nshapes; s++)
		if (fr->shapes[s].k == k && fr->shapes[s].milli == milli &&
		    !memcmp(fr->shapes[s].type_ok, type_ok, (size_t)ntypes * sizeof(bool)))
			return s;
	return -1;
}

/* Type t's share sizes to judge ahead: the PL_EAGER heaviest of the
 * workload (by the weight of their shapes allowing t; ties: the smaller). */
static void eager_sizes(struct pl_frag *fr, int t)
{
	int64_t w[PL_EAGER];
	int n = 0;
	for (int s = 0; s < fr->nshapes; s++) {
		const struct pl_shape *sh = &fr->shapes[s];
		if (sh->milli >= PL_MILLI || !sh->type_ok[t])
			continue;
		int64_t sw = 0; /* all the size's shapes that allow t, once */
		bool first = true;
		for (int o = 0; o < fr->nshapes; o++) {
			const struct pl_shape *x = &fr->shapes[o];
			if (x->milli == sh->milli && x->type_ok[t]) {
				first &= o >= s;
				sw += x->w;
			}
		}
		if (!first)
			continue;
		int i = n < PL_EAGER ? n++ : PL_EAGER;
		while (i > 0 && (w[i - 1] < sw || (w[i - 1] == sw && fr->emilli[t][i - 1] > sh->milli))) {
			if (i < PL_EAGER) {
				w[i] = w[i - 1];
				fr->emilli[t][i] = fr->emilli[t][i - 1];
			}
			i--;
		}
		if (i < PL_EAGER) {
			w[i] = sw;
			fr->emilli[t][i] = sh->milli;
		}
	}
	fr->neager[t] = n;
}

enum sl_err placer_set_workload(struct placer *p, const struct place_class *cls, int n,
				struct sl_diag *d)
{
	if (!p || n < 0 || (n > 0 && !cls))
		return sl_diag_set(d, SL_EINVAL, "no placer or class list");
	if (n > PLACE_MAX_CLASSES)
		return sl_diag_set(d, SL_ELIMIT, "%d workload classes; at most %d", n,
				   PLACE_MAX_CLASSES);
	if (n == 0) {
		pl_frag_free(p);
		return SL_OK;
	}
	int ntypes = p->f->ntypes, nnodes = p->f->nnodes;
	struct pl_frag *fr = calloc(1, sizeof(*fr));
	int *shape_of = calloc((size_t)n, sizeof(*shape_of));
	bool *ok = calloc((size_t)ntypes + 1, sizeof(*ok));
	if (fr) {
		fr->shapes = calloc((size_t)n, sizeof(*fr->shapes));
		fr->cls = calloc((size_t)n, sizeof(*fr->cls));
		fr->before = calloc((size_t)nnodes + 1, sizeof(*fr->before));
		fr->fresh = calloc((size_t)nnodes + 1, sizeof(*fr->fresh));
		fr->nver = malloc(((size_t)nnodes + 1) * sizeof(*fr->nver));
		fr->ncache = calloc((size_t)nnodes + 1, sizeof(*fr->ncache));
		fr->nncache = fr->ncache ? nnodes : 0;
		fr->rtab = calloc((size_t)ntypes + 1, sizeof(*fr->rtab));
		fr->rt = calloc((size_t)ntypes + 1, sizeof(*fr->rt));
		fr->neager = calloc((size_t)ntypes + 1, sizeof(*fr->neager));
		fr->emilli = calloc((size_t)ntypes + 1, sizeof(*fr->emilli));
		fr->etab = calloc((size_t)ntypes + 1, sizeof(*fr->etab));
		fr->ntypes = ntypes;
	}
	enum sl_err e = SL_OK;
	if (!fr || !shape_of || !ok || !fr->shapes || !fr->cls || !fr->before || !fr->fresh ||
	    !fr->nver || !fr->ncache || !fr->rtab || !fr->rt || !fr->neager || !fr->emilli ||
	    !fr->etab) {
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
		goto out;
	}
	/* Classes without GPUs strand nothing: they are left out of F. */
	double wcpu = 0, wmem = 0, wgpu = 0, wall = 0;
	for (int i = 0; i < n; i++) {
		shape_of[i] = -1;
		e = class_check(p, &cls[i], i, ok, d);
		if (e != SL_OK)
			goto out;
		int k = cls[i].gpu_milli > 0 ? 1 : cls[i].gpus;
		int milli = cls[i].gpu_milli > 0 ? cls[i].gpu_milli : PL_MILLI;
		wcpu += (double)cls[i].weight * cls[i].cpus;
		wmem += (double)cls[i].weight * (double)cls[i].mem_mib;
		wgpu += (double)cls[i].weight * (cls[i].gpu_milli > 0 ? cls[i].gpu_milli
								   : (double)cls[i].gpus * PL_MILLI);
		wall += (double)cls[i].weight;
		if (k == 0)
			continue;
		int s = shape_find(fr, ntypes, k, milli, ok);
		if (s < 0) {
			s = fr->nshapes;
			struct pl_shape *sh = &fr->shapes[s];
			sh->k = k;
			sh->milli = milli;
			sh->type_ok = malloc((size_t)ntypes + 1);
			if (!sh->type_ok) {
				e = sl_diag_set(d, SL_ENOMEM, "out of memory");
				goto out;
			}
			memcpy(sh->type_ok, ok, (size_t)ntypes * sizeof(bool));
			fr->nshapes++;
		}
		shape_of[i] = s;
		fr->shapes[s].n++;
		fr->shapes[s].w += cls[i].weight;
	}
	for (int s = 0, at = 0; s < fr->nshapes; s++) {
		fr->shapes[s].first = at;
		at += fr->shapes[s].n;
		fr->shapes[s].n = 0;
	}
	for (int i = 0; i < n; i++) {
		if (shape_of[i] < 0)
			continue;
		struct pl_shape *sh = &fr->shapes[shape_of[i]];
		struct pl_fclass *fc = &fr->cls[sh->first + sh->n++];
		fc->cpus = cls[i].cpus;
		fc->mem = cls[i].mem_mib;
		fc->w = cls[i].weight;
		fr->ncls++;
	}
	for (int t = 0; t < ntypes; t++)
		eager_sizes(fr, t);
	fr->fold = pl_fold_new(fr, ntypes);
	if (!fr->fold) {
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i <= nnodes; i++)
		fr->nver[i] = 1;
	fr->gver = calloc((size_t)p->ngroups + 1, sizeof(*fr->gver));
	fr->ngver = fr->gver ? p->ngroups : 0;
	for (int g = 0; g < fr->ngver; g++)
		fr->gver[g] = 1;
	fr->pure = wcpu == 0 && wmem == 0;
	for (int i = 0; i < n && fr->pure; i++)
		fr->pure = cls[i].cpus == 0 && cls[i].mem_mib == 0;
	if (wgpu > 0) {
		fr->cpu_per_milli = wcpu / wgpu;
		fr->mem_per_milli = wmem / wgpu;
		fr->bal_w = wall;
	}
	pl_frag_free(p);
	p->frag = fr;
	plists_build(p);
	fr = NULL;
out:
	frag_destroy(fr);
	free(shape_of);
	free(ok);
	return e;
}

/* ---- fragmentation ------------------------------------------------------ */

struct node_state {
	int fv[TOPO_MAX_GPUS];
	int ngpus, type, cpu_left;
	int64_t mem_left;
};

static void state_of(const struct placer *p, int node, struct node_state *s)
{
	const struct node_type *t = fleet_node_type(p->f, node);
	const struct pl_node *n = &p->nodes[node];
	s->ngpus = t->ngpus;
	s->type = p->f->nodes[node].type;
	for (int g = 0; g < t->ngpus; g++)
		s->fv[g] = (!n->usable || (n->bad & ((gpumask_t)1 << g))) ? 0
									 : PL_MILLI - n->used[g];
	s->cpu_left = t->cpus - n->cpus_used;
	s->mem_left = (int64_t)t->mem_gib * 1024 - n->mem_used;
}

static int64_t frag_now(struct placer *p, int node)
{
	struct pl_frag *fr = p->frag;
	if (!fr->fresh[node]) {
		struct node_state s;
		state_of(p, node, &s);
		fr->before[node] = pl_frag_of(fr, s.type, s.fv, s.ngpus, s.cpu_left, s.mem_left);
		fr->fresh[node] = true;
	}
	return fr->before[node];
}

enum sl_err pl_frag_nodes_added(struct placer *p, int old_nn)
{
	struct pl_frag *fr = p->frag;
	int nn = p->f->nnodes;
	if (!fr)
		return SL_OK;
	/* The groups grow as the new nodes are filed: the packed lists are
	 * made again at the next decision, p->partial scanned until then. */
	fr->plists = false;
	fr->plists_again = true;
	int64_t *b = realloc(fr->before, ((size_t)nn + 1) * sizeof(*b));
	if (b)
		fr->before = b;
	bool *fresh = b ? realloc(fr->fresh, ((size_t)nn + 1) * sizeof(*fresh)) : NULL;
	if (!fresh)
		return SL_ENOMEM;
	fr->fresh = fresh;
	uint32_t *nv = realloc(fr->nver, ((size_t)nn + 1) * sizeof(*nv));
	if (!nv)
		return SL_ENOMEM;
	fr->nver = nv;
	struct pl_ncache **nc = realloc(fr->ncache, ((size_t)nn + 1) * sizeof(*nc));
	if (!nc)
		return SL_ENOMEM;
	fr->ncache = nc;
	fr->nncache = nn;
	for (int i = old_nn; i <= nn; i++) {
		fr->before[i] = 0;
		fr->fresh[i] = false;
		fr->nver[i] = 1;
		fr->ncache[i] = NULL;
	}
	return SL_OK;
}

void placer_set_frag_balance(struct placer *p, bool on)
{
	if (!p || !p->frag)
		return;
	/* Everything kept from the state is dropped (what tests compare
	 * against); the ranked tables depend on the workload alone. */
	struct pl_frag *fr = p->frag;
	fr->balance_off = !on;
	for (int i = 0; i < p->f->nnodes; i++) {
		fr->fresh[i] = false;
		if (++fr->nver[i] == 0)
			fr->nver[i] = 1;
	}
	for (int g = 0; g < fr->ngver; g++)
		if (++fr->gver[g] == 0)
			fr->gver[g] = 1;
	for (int i = 0; fr->plists && i < fr->plist_nn; i++)
		if (fr->ppos[i] >= 0)
			fr->pv[fr->ppos[i]].valid = false;
}

int64_t placer_node_frag(struct placer *p, int node)
{
	if (!p || !p->frag || node < 0 || node >= p->f->nnodes)
		return 0;
	return frag_now(p, node);
}

/* ---- placing ------------------------------------------------------------ */

bool pl_frag_handles(const struct placer *p, const struct pl_ctx *c)
{
	if (!c->share && c->k == 0)
		return true;
	if (!p->frag || c->req->exclusive || c->req->per_node > 0)
		return false;
	return c->share || c->k <= c->maxg;
}

/* A candidate: the node, what it takes there and how it compares. */
static int fcand_cmp(const struct placer *p, const struct fcand *a, const struct fcand *b,
		     bool whole)
{
	if (whole) {
		int c = node_quality_cmp(&a->q, &b->q);
		if (c)
			return -c;
	}
	if (a->delta != b->delta)
		return a->delta < b->delta ? -1 : 1;
	if (a->free_after != b->free_after)
		return a->free_after < b->free_after ? -1 : 1;
	if (!(p->frag && p->frag->pure) && a->cpu_after != b->cpu_after)
		return a->cpu_after > b->cpu_after ? -1 : 1;
	int c = node_leftover_cmp(&a->left, &b->left);
	if (c)
		return -c;
	if (a->price != b->price)
		return a->price < b->price ? -1 : 1;
	c = pl_name_cmp(p, a->node, b->node);
	if (c)
		return c;
	return a->gpu < b->gpu ? -1 : (a->gpu > b->gpu);
}

static int64_t free_total(const struct node_state *s)
{
	int64_t t = 0;
	for (int g = 0; g < s->ngpus; g++)
		t += s->fv[g];
	return t;
}

/* Judges node for the request; false when it cannot take it. */
static bool node_cand(struct placer *p, const struct pl_ctx *c, int node, struct fcand *out)
{
	const struct pl_node *n = &p->nodes[node];
	if (!n->usable || !p->group_ok[n->group])
		return false;
	const struct node_type *t = fleet_node_type(p->f, node);
	struct ptab *pt = p->ptabs[p->f->nodes[node].type];
	int milli = c->share ? c->req->gpu_milli : 0;
	int cpus;
	int64_t mem;
	pl_demand(c, t, c->share ? 0 : c->k, milli, &cpus, &mem);
	if (!pl_fits_cpu_mem(p, node, cpus, mem))
		return false;
	struct node_state s;
	state_of(p, node, &s);
	memset(out, 0, sizeof(*out));
	out->node = node;
	out->gpu = -1;
	out->price = p->f->nodes[node].price_hint;
	out->cpu_after = s.cpu_left - cpus;
	int64_t before = p->frag ? frag_now(p, node) : 0;
	gpumask_t fm = (gpumask_t)pl_free_mask(p, node);
	if (c->share) {
		struct node_quality q1;
		if (!ptab_full_quality(pt, 1, &q1) || q1.bottleneck_gbps < c->req->min_bw_gbps)
			return false;
		bool found = false;
		int64_t dl[TOPO_MAX_GPUS];
		for (int g = 0; g < s.ngpus; g++) {
			gpumask_t bit = (gpumask_t)1 << g;
			if ((n->bad & bit) || s.fv[g] < milli ||
			    (n->used[g] > 0 && !(n->shared & bit)))
				continue;
			/* F only sees the multiset of free values: a GPU with the same
			 * free value as an earlier one has its F, but not its leftover
			 * shape (which whole GPUs stay free), so it is still judged. */
			int same = -1;
			for (int h = 0; h < g && same < 0; h++)
				if (!(n->bad & ((gpumask_t)1 << h)) && s.fv[h] == s.fv[g] &&
				    (n->used[h] == 0 || (n->shared & ((gpumask_t)1 << h))))
					same = h;
			s.fv[g] -= milli;
			struct fcand k = *out;
			k.gpu = g;
			k.q = q1;
			k.delta = same >= 0 ? dl[same]
				  : p->frag ? pl_frag_of(p->frag, s.type, s.fv, s.ngpus, s.cpu_left - cpus,
						      s.mem_left - mem) - before
					    : 0;
			dl[g] = k.delta;
			k.free_after = free_total(&s);
			gpumask_t after = fm & ~bit;
			ptab_leftover(pt, after, &k.left);
			s.fv[g] += milli;
			if (!found || fcand_cmp(p, &k, out, false) < 0)
				*out = k;
			found = true;
		}
		return found;
	}
	if (c->k > 0) {
		struct node_pick pk;
		if (__builtin_popcount(fm) < c->k || !ptab_best(pt, fm, c->k, &pk) ||
		    pk.q.bottleneck_gbps < c->req->min_bw_gbps)
			return false;
		for (int g = 0; g < s.ngpus; g++)
			if (pk.set & ((gpumask_t)1 << g))
				s.fv[g] = 0;
		out->set = pk.set;
		out->q = pk.q;
		out->left = pk.left;
	} else {
		ptab_leftover(pt, fm, &out->left);
	}
	out->free_after = free_total(&s);
	out->delta = p->frag ? pl_frag_of(p->frag, s.type, s.fv, s.ngpus, s.cpu_left - cpus,
				       s.mem_left - mem) - before
			     : 0;
	return true;
}

/* For place_fragtab.c (place_frag_int.h). */
bool pl_frag_node_cand(struct placer *p, const struct pl_ctx *c, int node, struct fcand *out)
{
	return node_cand(p, c, node, out);
}

int pl_fcand_cmp(const struct placer *p, const struct fcand *a, const struct fcand *b,
		 bool whole)
{
	return fcand_cmp(p, a, b, whole);
}

/* What the fragmentation term chose, against what best fit would have: the
 * index's best-fit node (whole GPUs) or the fullest partly used GPU (shares),
 * judged the same way. Only when someone will read it (not quiet). */
static void explain_frag(struct placer *p, const struct pl_ctx *c, const struct fcand *best,
			 struct place_score *s)
{
	double w = p->frag->bal_w > 0 ? p->frag->bal_w : 1;
	s->frag = true;
	s->frag_milli = (int64_t)((double)best->delta / w);
	s->bestfit_milli = s->frag_milli;
	s->bestfit_same = true;
	int node = -1;
	if (c->share) {
		int gpu;
		struct pl_cand bf;
		if (pl_frag_share_best_kept(p, c, &node, &gpu)) {
			if (node == best->node && gpu == best->gpu)
				return;
		} else if (pl_frag_bestfit_kept(p, c, 1, &bf)) {
			node = bf.node;
		}
	} else if (c->k > 0) {
		struct pl_cand bf;
		if (pl_frag_bestfit_kept(p, c, c->k, &bf)) {
			if (bf.node == best->node && bf.pick.set == best->set)
				return;
			node = bf.node;
		}
	}
	struct fcand k;
	if (node >= 0 && node != best->node && pl_frag_node_cand_kept(p, c, node, &k)) {
		s->bestfit_same = false;
		s->bestfit_milli = (int64_t)((double)k.delta / w);
	}
}

void placer_set_frag_index(struct placer *p, bool on)
{
	if (p && p->frag)
		p->frag->fast_off = !on;
}

enum sl_err pl_frag_place(struct placer *p, const struct pl_ctx *c, struct placement *out)
{
	bool whole = !c->share && c->k > 0;
	struct fcand best, k;
	bool found = false, scan = true;
	if (p->frag)
		pl_frag_begin(p->frag);
	if (p->frag && p->frag->pure && !p->frag->fast_off && (whole || c->share))
		found = pl_frag_fast(p, c, &best, &scan);
	for (int node = 0; scan && node < p->f->nnodes; node++) {
		if (!node_cand(p, c, node, &k))
			continue;
		if (!found || fcand_cmp(p, &k, &best, whole) < 0)
			best = k;
		found = true;
	}
	if (!found) {
		if (c->share || whole)
			return pl_explain(p, c, c->share ? 1 : c->k, 1, NULL, out);
		if (!c->quiet) {
			out->failed = PLACE_C_CPU_MEM;
			snprintf(out->why, sizeof(out->why),
				 "no eligible node has %d CPUs and %lld MiB of memory free",
				 c->req->cpus, (long long)c->req->mem_mib);
		}
		return SL_ENOSPACE;
	}
	if (p->frag && !c->quiet)
		explain_frag(p, c, &best, &out->score);
	if (c->share)
		return pl_add_pick(out, p, c, best.node, 0, best.gpu, c->req->gpu_milli, &best.q);
	return pl_add_pick(out, p, c, best.node, best.set, -1, 0, &best.q);
}

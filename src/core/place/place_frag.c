/* place_frag.c - the fragmentation-aware policy (place_frag.h) and CPU-only
 * requests.
 *
 * Classes are grouped by GPU shape (whole GPUs k, share milli, allowed types):
 * whether a shape's GPUs fit a node and how many free thousandths it strands
 * there depend only on the node's free vector, so they are computed once per
 * shape; the classes of a shape then differ only by CPUs and memory, so each
 * adds its weight to "fits" or "does not fit". F of a node's current state is
 * cached per node and dropped whenever the node changes (pl_frag_node_changed
 * is called from place.c's node_changed). */
#include "place_frag.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place_internal.h"

struct pl_fclass {
	int cpus;
	int64_t mem;
	int64_t w;
};

struct pl_shape {
	int k, milli;    /* whole GPUs or a share (k == 1, milli < 1000) */
	bool *type_ok;   /* [ntypes] */
	int first, n;    /* its classes in pl_frag.cls */
	int64_t w;       /* their total weight */
};

#define PL_FTAB_CACHE 64 /* ranked mask tables kept per placer */

/* One free mask judged for a (type, k, milli) request shape. */
struct pl_fkey {
	bool ok;
	gpumask_t set; /* whole GPUs taken */
	int gpu;       /* share: the GPU, else -1 */
	struct node_quality q;
	struct node_leftover left;
	int64_t delta, free_after;
};

/* All free masks of a small type ranked for one request shape, best first;
 * tier numbers runs of equal rank (only price and name tell them apart). */
struct pl_ftab {
	int type, k, milli;
	int n;
	struct pl_fkey key[PL_SMALL_MASKS];   /* by mask */
	gpumask_t order[PL_SMALL_MASKS];
	int tier[PL_SMALL_MASKS];
	int rank[PL_SMALL_MASKS]; /* by mask: its tier; INT_MAX when not ok */
	struct pl_gcache *gc;     /* [ngroups] each group's last answer, lazily */
};

struct pl_frag {
	struct pl_shape *shapes;
	int nshapes;
	struct pl_fclass *cls;
	int ncls;
	int64_t *before; /* [nnodes] F of the current state */
	bool *fresh;     /* [nnodes] before[] is valid */
	/* Balance term: CPUs and memory per GPU thousandth the workload asks for
	 * on average, and the weight of a stranded thousandth. */
	double cpu_per_milli, mem_per_milli, bal_w;
	bool balance_off;
	/* No class asks for CPUs or memory: F depends on a node's free GPUs
	 * alone, so nodes without shares can be judged per free mask (the
	 * ranked tables below) instead of one by one. */
	bool pure;
	bool fast_off; /* placer_set_frag_index(p, false): always scan */
	struct pl_ftab *tabs[PL_FTAB_CACHE];
	int ntabs, next_evict;
	/* A version per index group, bumped whenever one of its nodes changes:
	 * a group's answer for a shape stays good while its version does, so a
	 * request recomputes only the groups the last claims touched. */
	uint32_t *gver;
	int ngver;
};

static void frag_destroy(struct pl_frag *fr)
{
	if (!fr)
		return;
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

void pl_frag_node_changed(struct placer *p, int node)
{
	struct pl_frag *fr = p->frag;
	if (!fr)
		return;
	fr->fresh[node] = false;
	int g = p->nodes[node].group;
	if (g >= 0 && g < fr->ngver && ++fr->gver[g] == 0)
		fr->gver[g] = 1;
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
	uint32_t *nv = realloc(fr->gver, ((size_t)p->ngroups + 1) * sizeof(*nv));
	if (nv) {
		fr->gver = nv;
		fr->ngver = p->ngroups;
	} else {
		fr->ngver = 0; /* no versions: group answers are not kept */
	}
	for (int g = 0; g < fr->ngver; g++)
		fr->gver[g] = 1;
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
	}
	enum sl_err e = SL_OK;
	if (!fr || !shape_of || !ok || !fr->shapes || !fr->cls || !fr->before || !fr->fresh) {
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
	fr = NULL;
out:
	frag_destroy(fr);
	free(shape_of);
	free(ok);
	return e;
}

/* ---- fragmentation ------------------------------------------------------ */

/* F of a node state: free thousandths per GPU, CPUs and memory left. */
static int64_t frag_of(const struct pl_frag *fr, int type, const int *fv, int ngpus,
		       int cpu_left, int64_t mem_left)
{
	int64_t total = 0;
	for (int g = 0; g < ngpus; g++)
		total += fv[g];
	if (total == 0)
		return 0;
	int64_t f = 0;
	for (int s = 0; s < fr->nshapes; s++) {
		const struct pl_shape *sh = &fr->shapes[s];
		if (!sh->type_ok[type]) {
			f += sh->w * total;
			continue;
		}
		int cnt = 0;
		int64_t small = 0;
		for (int g = 0; g < ngpus; g++) {
			if (fv[g] >= sh->milli)
				cnt++;
			else
				small += fv[g];
		}
		if (cnt < sh->k) {
			f += sh->w * total;
			continue;
		}
		int64_t wfit = 0;
		const struct pl_fclass *c = &fr->cls[sh->first];
		for (int i = 0; i < sh->n; i++)
			if (c[i].cpus <= cpu_left && c[i].mem <= mem_left)
				wfit += c[i].w;
		f += wfit * small + (sh->w - wfit) * total;
	}
	if (fr->bal_w > 0 && !fr->balance_off) {
		double usable = (double)total;
		if (fr->cpu_per_milli > 0 && cpu_left / fr->cpu_per_milli < usable)
			usable = cpu_left / fr->cpu_per_milli;
		if (fr->mem_per_milli > 0 && (double)mem_left / fr->mem_per_milli < usable)
			usable = (double)mem_left / fr->mem_per_milli;
		f += (int64_t)(fr->bal_w * ((double)total - usable));
	}
	return f;
}

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
		fr->before[node] = frag_of(fr, s.type, s.fv, s.ngpus, s.cpu_left, s.mem_left);
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
	int64_t *b = realloc(fr->before, ((size_t)nn + 1) * sizeof(*b));
	if (b)
		fr->before = b;
	bool *fresh = b ? realloc(fr->fresh, ((size_t)nn + 1) * sizeof(*fresh)) : NULL;
	if (!fresh)
		return SL_ENOMEM;
	fr->fresh = fresh;
	for (int i = old_nn; i <= nn; i++) {
		fr->before[i] = 0;
		fr->fresh[i] = false;
	}
	return SL_OK;
}

void placer_set_frag_balance(struct placer *p, bool on)
{
	if (!p || !p->frag)
		return;
	p->frag->balance_off = !on;
	for (int i = 0; i < p->f->nnodes; i++)
		p->frag->fresh[i] = false;
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
	return c->share || c->k <= pl_max_eligible_gpus(p);
}

/* A candidate: the node, what it takes there and how it compares. */
struct fcand {
	int node;
	gpumask_t set; /* whole GPUs */
	int gpu;       /* share: the GPU, else -1 */
	struct node_quality q;
	struct node_leftover left;
	int64_t delta; /* growth of F */
	int64_t free_after; /* free thousandths left on the node */
	int cpu_after;
	int64_t price;
};

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
				  : p->frag ? frag_of(p->frag, s.type, s.fv, s.ngpus, s.cpu_left - cpus,
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
	out->delta = p->frag ? frag_of(p->frag, s.type, s.fv, s.ngpus, s.cpu_left - cpus,
				       s.mem_left - mem) - before
			     : 0;
	return true;
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
	return frag_of(fr, type, fv, ngpus, 1 << 30, (int64_t)1 << 60);
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

static struct pl_ftab *ftab_get(struct placer *p, int type, int k, int milli)
{
	struct pl_frag *fr = p->frag;
	for (int i = 0; i < fr->ntabs; i++)
		if (fr->tabs[i]->type == type && fr->tabs[i]->k == k && fr->tabs[i]->milli == milli)
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
		fr->tabs[fr->ntabs++] = t;
	} else {
		free(fr->tabs[fr->next_evict]->gc);
		free(fr->tabs[fr->next_evict]);
		fr->tabs[fr->next_evict] = t;
		fr->next_evict = (fr->next_evict + 1) % PL_FTAB_CACHE;
	}
	return t;
}

/* Lowest position of g filed under mask m, without shares, with the CPUs and
 * memory; INT_MAX if none. */
static int first_plain(const struct placer *p, const struct pl_group *g, gpumask_t m,
		       int cpus, int64_t mem, int limit)
{
	const uint64_t *w = &g->bits[(size_t)m * (size_t)g->nwords];
	for (int i = 0; i < g->nwords && i * 64 < limit; i++) {
		for (uint64_t x = w[i]; x; x &= x - 1) {
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
};

static bool group_walk(struct placer *p, const struct pl_ctx *c, const struct pl_group *g,
		       const struct pl_ftab *tab, int cpus, int64_t mem, struct fcand *out);

/* The group's best node without shares, from the ranked table (or the
 * answer kept since none of its nodes changed); false if none. */
static bool group_fast(struct placer *p, const struct pl_ctx *c, int gi, struct fcand *out)
{
	const struct pl_group *g = &p->groups[gi];
	const struct node_type *t = &p->f->types[g->type];
	struct pl_frag *fr = p->frag;
	int milli = c->share ? c->req->gpu_milli : PL_MILLI;
	struct pl_ftab *tab = ftab_get(p, g->type, c->share ? 1 : c->k, milli);
	if (!tab)
		return false; /* out of memory: the caller scans instead */
	int cpus;
	int64_t mem;
	pl_demand(c, t, c->share ? 0 : c->k, c->share ? milli : 0, &cpus, &mem);
	if (!tab->gc && fr->ngver == p->ngroups)
		tab->gc = calloc((size_t)p->ngroups + 1, sizeof(*tab->gc));
	struct pl_gcache *e = tab->gc && gi < fr->ngver ? &tab->gc[gi] : NULL;
	if (e && e->ver == fr->gver[gi] && e->min_bw == c->req->min_bw_gbps && e->cpus == cpus &&
	    e->mem == mem) {
		if (e->found)
			*out = e->cand;
		return e->found;
	}
	bool found = group_walk(p, c, g, tab, cpus, mem, out);
	if (e) {
		e->ver = fr->gver[gi];
		e->min_bw = c->req->min_bw_gbps;
		e->cpus = cpus;
		e->mem = mem;
		e->found = found;
		if (found)
			e->cand = *out;
	}
	return found;
}

static bool group_walk(struct placer *p, const struct pl_ctx *c, const struct pl_group *g,
		       const struct pl_ftab *tab, int cpus, int64_t mem, struct fcand *out)
{
	/* The best tier among the group's non-empty masks (the index keeps them
	 * in a list: cheaper than walking the ranked order through empty tiers);
	 * again above it when no node of that tier has the CPUs and memory. */
	for (int above = -1;;) {
		int tier = INT_MAX;
		for (int i = 0; i < g->nnz; i++) {
			int m = g->nz[i];
			if (tab->rank[m] > above && tab->rank[m] < tier &&
			    tab->key[m].q.bottleneck_gbps >= c->req->min_bw_gbps)
				tier = tab->rank[m];
		}
		if (tier == INT_MAX)
			return false;
		int best = INT_MAX;
		gpumask_t bm = 0;
		for (int i = 0; i < g->nnz; i++) {
			int m = g->nz[i];
			if (tab->rank[m] != tier)
				continue;
			int pos = first_plain(p, g, (gpumask_t)m, cpus, mem, best);
			if (pos < best) {
				best = pos;
				bm = (gpumask_t)m;
			}
		}
		if (best != INT_MAX) {
			const struct pl_fkey *bk = &tab->key[bm];
			memset(out, 0, sizeof(*out));
			out->node = g->nodes[best];
			out->set = bk->set;
			out->gpu = bk->gpu;
			out->q = bk->q;
			out->left = bk->left;
			out->delta = bk->delta;
			out->free_after = bk->free_after;
			out->price = p->f->nodes[out->node].price_hint;
			return true;
		}
		above = tier;
	}
}

/* The fast path's answer; false when no node can take the request, or when
 * a table could not be built (*scan then says to scan). */
static bool frag_fast(struct placer *p, const struct pl_ctx *c, struct fcand *best, bool *scan)
{
	bool whole = !c->share, found = false;
	struct fcand k;
	*scan = false;
	for (int gi = 0; gi < p->ngroups; gi++) {
		const struct pl_group *g = &p->groups[gi];
		if (!p->group_ok[gi] || p->f->types[g->type].ngpus < (whole ? c->k : 1) ||
		    (c->share && !g->shareable))
			continue;
		struct node_quality fq;
		if (found && whole && (!ptab_full_quality(p->ptabs[g->type], c->k, &fq) ||
				       node_quality_cmp(&fq, &best->q) < 0))
			continue; /* this group cannot beat the best so far */
		bool ok;
		if (g->small) {
			ok = group_fast(p, c, gi, &k);
			if (!ok && !p->frag->ntabs) {
				*scan = true;
				return false;
			}
			if (ok && (!found || fcand_cmp(p, &k, best, whole) < 0)) {
				*best = k;
				found = true;
			}
			continue;
		}
		for (int pos = 0; pos < g->n; pos++)
			if (node_cand(p, c, g->nodes[pos], &k) &&
			    (!found || fcand_cmp(p, &k, best, whole) < 0)) {
				*best = k;
				found = true;
			}
	}
	/* Nodes with shares (only shareable ones have them), one by one. */
	for (int i = 0; i < p->npartial; i++) {
		int node = p->partial[i];
		const struct pl_group *g = &p->groups[p->nodes[node].group];
		if (!g->small)
			continue; /* judged above */
		if (node_cand(p, c, node, &k) && (!found || fcand_cmp(p, &k, best, whole) < 0)) {
			*best = k;
			found = true;
		}
	}
	return found;
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
		if (pl_share_best(p, c, &node, &gpu)) {
			if (node == best->node && gpu == best->gpu)
				return;
		} else if (pl_index_best(p, c, 1, &bf)) {
			node = bf.node;
		}
	} else if (c->k > 0) {
		struct pl_cand bf;
		if (pl_index_best(p, c, c->k, &bf)) {
			if (bf.node == best->node && bf.pick.set == best->set)
				return;
			node = bf.node;
		}
	}
	struct fcand k;
	if (node >= 0 && node != best->node && node_cand(p, c, node, &k)) {
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
	if (p->frag && p->frag->pure && !p->frag->fast_off && (whole || c->share))
		found = frag_fast(p, c, &best, &scan);
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

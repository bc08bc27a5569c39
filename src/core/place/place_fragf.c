/* place_fragf.c - F of a node state (place_frag_int.h), through the
 * workload's shapes folded per node type.
 *
 * F sums, over the workload's shapes, the free thousandths a shape cannot
 * use on the node, each times its weight. A shape that does not allow the
 * type strands all of them, whatever the state: those weights are added up
 * once per type (off). The shapes that allow it and ask for the same GPUs
 * (k, milli) differ only by their classes' CPUs and memory, so they are one
 * folded shape with their classes together (classes of equal CPUs and
 * memory added up); a type's folded shapes are sorted by milli, so which
 * GPUs a milli fits is counted once per milli. The sum is the same integer
 * as shape by shape: only the order of its terms changes.
 *
 * A state can also be kept as its levels (struct pl_flev: per distinct milli
 * of the type's shapes, the GPUs that fit it and the free thousandths on
 * those that do not), which one GPU's change updates in a few steps: F of
 * the states a request would leave on a node is then a sum over the type's
 * folded shapes, without walking the node's GPUs again (pl_frag_lev). */
#include <stdlib.h>
#include <string.h>

#include "place_frag_int.h"

struct pl_fold {
	int64_t *off;          /* [ntypes] weight of the shapes a type does not allow */
	int *first, *n;        /* [ntypes] each type's folded shapes in sh */
	int *nlev;             /* [ntypes] distinct millis of its folded shapes */
	struct pl_tshape *sh;
	struct pl_fclass *cls; /* the folded shapes' classes */
};

struct pl_tshape {
	int k, milli;
	int lev;      /* its milli's place among the type's distinct ones */
	int first, n; /* classes in cls */
	int64_t w;
	int cpus_max; /* the most CPUs and memory a class of it asks */
	int64_t mem_max;
};

void pl_fold_free(struct pl_fold *fo)
{
	if (!fo)
		return;
	free(fo->off);
	free(fo->first);
	free(fo->n);
	free(fo->nlev);
	free(fo->sh);
	free(fo->cls);
	free(fo);
}

static int tshape_cmp(const void *a, const void *b)
{
	const struct pl_tshape *x = a, *y = b;
	if (x->milli != y->milli)
		return x->milli < y->milli ? -1 : 1;
	return x->k < y->k ? -1 : (x->k > y->k);
}

static int tshape_find(const struct pl_fold *fo, int from, int to, const struct pl_shape *s)
{
	int j = from;
	while (j < to && (fo->sh[j].k != s->k || fo->sh[j].milli != s->milli))
		j++;
	return j;
}

/* Adds shape s's classes to folded shape t (classes of equal demand
 * merged). */
static void fold_classes(struct pl_fold *fo, const struct pl_frag *fr,
			 const struct pl_shape *s, struct pl_tshape *t)
{
	for (int i = 0; i < s->n; i++) {
		const struct pl_fclass *c = &fr->cls[s->first + i];
		int j = 0;
		while (j < t->n && (fo->cls[t->first + j].cpus != c->cpus ||
				    fo->cls[t->first + j].mem != c->mem))
			j++;
		if (j == t->n) {
			fo->cls[t->first + j] = *c;
			t->n++;
			if (c->cpus > t->cpus_max)
				t->cpus_max = c->cpus;
			if (c->mem > t->mem_max)
				t->mem_max = c->mem;
		} else {
			fo->cls[t->first + j].w += c->w;
		}
	}
	t->w += s->w;
}

struct pl_fold *pl_fold_new(const struct pl_frag *fr, int ntypes)
{
	struct pl_fold *fo = calloc(1, sizeof(*fo));
	size_t nt = (size_t)ntypes + 1, ns = (size_t)ntypes * (size_t)fr->nshapes + 1;
	if (!fo || !(fo->off = calloc(nt, sizeof(*fo->off))) ||
	    !(fo->first = calloc(nt, sizeof(*fo->first))) ||
	    !(fo->n = calloc(nt, sizeof(*fo->n))) || !(fo->nlev = calloc(nt, sizeof(*fo->nlev))) ||
	    !(fo->sh = calloc(ns, sizeof(*fo->sh))) ||
	    !(fo->cls = calloc((size_t)ntypes * (size_t)fr->ncls + 1, sizeof(*fo->cls)))) {
		pl_fold_free(fo);
		return NULL;
	}
	int nsh = 0, ncls = 0;
	for (int t = 0; t < ntypes; t++) {
		/* The type's folded shapes, each with room for the classes of
		 * the shapes it folds; then their classes. */
		fo->first[t] = nsh;
		for (int s = 0; s < fr->nshapes; s++) {
			const struct pl_shape *sh = &fr->shapes[s];
			if (!sh->type_ok[t]) {
				fo->off[t] += sh->w;
				continue;
			}
			int j = tshape_find(fo, fo->first[t], nsh, sh);
			if (j == nsh)
				fo->sh[nsh++] = (struct pl_tshape){.k = sh->k, .milli = sh->milli};
			fo->sh[j].first += sh->n; /* room, for now */
		}
		for (int j = fo->first[t]; j < nsh; j++) {
			int room = fo->sh[j].first;
			fo->sh[j].first = ncls;
			ncls += room;
		}
		for (int s = 0; s < fr->nshapes; s++) {
			const struct pl_shape *sh = &fr->shapes[s];
			if (sh->type_ok[t])
				fold_classes(fo, fr, sh, &fo->sh[tshape_find(fo, fo->first[t], nsh, sh)]);
		}
		fo->n[t] = nsh - fo->first[t];
		qsort(&fo->sh[fo->first[t]], (size_t)fo->n[t], sizeof(*fo->sh), tshape_cmp);
		for (int j = fo->first[t]; j < nsh; j++) {
			if (j > fo->first[t] && fo->sh[j].milli != fo->sh[j - 1].milli)
				fo->nlev[t]++;
			fo->sh[j].lev = fo->nlev[t];
		}
		if (fo->n[t] > 0)
			fo->nlev[t]++;
	}
	return fo;
}

/* Shape sh's term of F: the free thousandths it strands times its weight,
 * where cnt GPUs fit its milli and small thousandths sit on those that do
 * not. */
static inline int64_t shape_term(const struct pl_fold *fo, const struct pl_tshape *sh, int cnt,
				 int64_t small, int64_t total, int cpu_left, int64_t mem_left)
{
	if (cnt < sh->k)
		return sh->w * total;
	if (sh->cpus_max <= cpu_left && sh->mem_max <= mem_left)
		return sh->w * small; /* every class fits */
	int64_t wfit = 0;
	const struct pl_fclass *c = &fo->cls[sh->first];
	for (int i = 0; i < sh->n; i++)
		if (c[i].cpus <= cpu_left && c[i].mem <= mem_left)
			wfit += c[i].w;
	return wfit * small + (sh->w - wfit) * total;
}

/* The balance term (place_frag.h). */
static int64_t balance_term(const struct pl_frag *fr, int64_t total, int cpu_left,
			    int64_t mem_left)
{
	if (fr->bal_w <= 0 || fr->balance_off)
		return 0;
	double usable = (double)total;
	if (fr->cpu_per_milli > 0 && cpu_left / fr->cpu_per_milli < usable)
		usable = cpu_left / fr->cpu_per_milli;
	if (fr->mem_per_milli > 0 && (double)mem_left / fr->mem_per_milli < usable)
		usable = (double)mem_left / fr->mem_per_milli;
	return (int64_t)(fr->bal_w * ((double)total - usable));
}

int64_t pl_frag_of(const struct pl_frag *fr, int type, const int *fv, int ngpus,
		   int cpu_left, int64_t mem_left)
{
	int64_t total = 0;
	for (int g = 0; g < ngpus; g++)
		total += fv[g];
	if (total == 0)
		return 0;
	const struct pl_fold *fo = fr->fold;
	int64_t f = fo->off[type] * total;
	int milli = -1, cnt = 0;
	int64_t small = 0;
	const struct pl_tshape *sh = &fo->sh[fo->first[type]];
	for (int s = 0; s < fo->n[type]; s++, sh++) {
		if (sh->milli != milli) {
			milli = sh->milli;
			cnt = 0;
			small = 0;
			for (int g = 0; g < ngpus; g++) {
				if (fv[g] >= milli)
					cnt++;
				else
					small += fv[g];
			}
		}
		f += shape_term(fo, sh, cnt, small, total, cpu_left, mem_left);
	}
	return f + balance_term(fr, total, cpu_left, mem_left);
}

bool pl_flev_of(const struct pl_frag *fr, int type, const int *fv, int ngpus,
		struct pl_flev *out)
{
	const struct pl_fold *fo = fr->fold;
	if (fo->nlev[type] > PL_FLEV)
		return false;
	const struct pl_tshape *sh = &fo->sh[fo->first[type]];
	out->total = 0;
	for (int g = 0; g < ngpus; g++)
		out->total += fv[g];
	for (int s = 0; s < fo->n[type]; s++, sh++) {
		if (s > 0 && sh->lev == sh[-1].lev)
			continue;
		int cnt = 0;
		int64_t small = 0;
		for (int g = 0; g < ngpus; g++) {
			if (fv[g] >= sh->milli)
				cnt++;
			else
				small += fv[g];
		}
		out->milli[sh->lev] = sh->milli;
		out->cnt[sh->lev] = cnt;
		out->small[sh->lev] = small;
	}
	out->n = fo->nlev[type];
	return true;
}

int64_t pl_frag_lev(const struct pl_frag *fr, int type, const struct pl_flev *l, int n, int v,
		    int v2, int cpu_left, int64_t mem_left)
{
	int64_t total = l->total + (int64_t)n * (v2 - v);
	if (total == 0)
		return 0;
	const struct pl_fold *fo = fr->fold;
	int64_t f = fo->off[type] * total;
	int lev = -1, cnt = 0;
	int64_t small = 0;
	const struct pl_tshape *sh = &fo->sh[fo->first[type]];
	for (int s = 0; s < fo->n[type]; s++, sh++) {
		if (sh->lev != lev) {
			int m = l->milli[lev = sh->lev];
			cnt = l->cnt[lev] + n * ((v2 >= m) - (v >= m));
			small = l->small[lev] + n * ((v2 < m ? v2 : 0) - (v < m ? v : 0));
		}
		f += shape_term(fo, sh, cnt, small, total, cpu_left, mem_left);
	}
	return f + balance_term(fr, total, cpu_left, mem_left);
}

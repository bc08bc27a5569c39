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
 * as shape by shape: only the order of its terms changes. */
#include <stdlib.h>
#include <string.h>

#include "place_frag_int.h"

struct pl_fold {
	int64_t *off;          /* [ntypes] weight of the shapes a type does not allow */
	int *first, *n;        /* [ntypes] each type's folded shapes in sh */
	struct pl_tshape *sh;
	struct pl_fclass *cls; /* the folded shapes' classes */
};

struct pl_tshape {
	int k, milli;
	int first, n; /* classes in cls */
	int64_t w;
};

void pl_fold_free(struct pl_fold *fo)
{
	if (!fo)
		return;
	free(fo->off);
	free(fo->first);
	free(fo->n);
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
	    !(fo->n = calloc(nt, sizeof(*fo->n))) || !(fo->sh = calloc(ns, sizeof(*fo->sh))) ||
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
	}
	return fo;
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
		if (cnt < sh->k) {
			f += sh->w * total;
			continue;
		}
		int64_t wfit = 0;
		const struct pl_fclass *c = &fo->cls[sh->first];
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

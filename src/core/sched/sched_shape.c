/* sched_shape.c - a lease's request but its size, kept once for all the
 * leases that ask alike (struct sched_shape, sched_internal.h).
 *
 * 100,000 leases of a few kinds (bench/results/memory.md) held 100,000
 * copies of the same 136-byte request; they now point at one shape and keep
 * only their size. Shapes are found by a text key of every field the placer
 * reads, counted, and freed with their last lease. */
#include "sched_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "strmap.h"

/* A new member of struct place_request must be added to shape_key (and the
 * size here updated): two requests that differ in it would share a shape. */
_Static_assert(sizeof(struct place_request) == 136, "place_request changed: see shape_key");

#define SCHED_MAX_SHAPES (1 << 26)

static void put_str(char **p, char *end, const char *x)
{
	/* NULL and "" differ; the length makes every text unambiguous. */
	int n = x ? snprintf(*p, (size_t)(end - *p), "%zu:%s|", strlen(x), x)
		  : snprintf(*p, (size_t)(end - *p), "-|");
	*p += n;
}

/* The key of r for tenant (r->gpus and r->tenant not included); owned by the
 * caller, NULL when out of memory. */
static char *shape_key(const struct place_request *r, const char *tenant)
{
	size_t n = 160 + strlen(tenant) + (r->region ? strlen(r->region) : 0) +
		   (r->site ? strlen(r->site) : 0);
	for (int i = 0; i < r->nmodels && i < PLACE_MAX_MODELS; i++)
		n += 24 + (r->models[i] ? strlen(r->models[i]) : 0);
	char *k = malloc(n), *p = k, *end = k + n;
	if (!k)
		return NULL;
	p += snprintf(p, n, "%d,%d,%d,%d,%d,%d,%d,%lld,%d%d%d%d|", r->gpu_milli, r->per_node,
		      r->min_mem_gib, r->min_bw_gbps, r->cpus, r->cpu_milli, r->nmodels,
		      (long long)r->mem_mib, r->pool_owned, r->exclusive, r->one_leaf,
		      r->exact_cpu_mem);
	for (int i = 0; i < r->nmodels && i < PLACE_MAX_MODELS; i++)
		put_str(&p, end, r->models[i]);
	put_str(&p, end, r->region);
	put_str(&p, end, r->site);
	put_str(&p, end, tenant);
	return k;
}

static void shape_free(struct sched_shape *sh)
{
	if (!sh)
		return;
	for (int i = 0; i < PLACE_MAX_MODELS; i++)
		if (sh->own_models & (1u << i))
			free((void *)(uintptr_t)sh->req.models[i]);
	free((void *)(uintptr_t)sh->req.region);
	free((void *)(uintptr_t)sh->req.site);
	free(sh->key);
	free(sh);
}

/* A new shape for r: its strings copied (catalog models are static). */
static struct sched_shape *shape_new(const struct place_request *r, const char *tenant)
{
	struct sched_shape *sh = calloc(1, sizeof(*sh));
	if (!sh)
		return NULL;
	sh->req = *r;
	sh->req.gpus = 0;
	sh->req.tenant = tenant;
	sh->req.region = sh->req.site = NULL;
	bool ok = true;
	for (int i = 0; i < r->nmodels && i < PLACE_MAX_MODELS; i++) {
		const char *name = r->models[i];
		const struct gpu_model *m = name ? catalog_gpu_find(name) : NULL;
		if (m) {
			sh->req.models[i] = m->name; /* static: nothing to copy */
			continue;
		}
		sh->req.models[i] = sl_strdup(name);
		if (sh->req.models[i])
			sh->own_models |= (uint8_t)(1u << i);
		ok &= !name || sh->req.models[i];
	}
	sh->req.region = sl_strdup(r->region);
	sh->req.site = sl_strdup(r->site);
	ok &= (!r->region || sh->req.region) && (!r->site || sh->req.site);
	if (!ok) {
		shape_free(sh);
		return NULL;
	}
	return sh;
}

const struct sched_shape *sched_shape_get(struct sched *s, const struct place_request *r,
					  const char *tenant)
{
	char *key = shape_key(r, tenant);
	if (!key)
		return NULL;
	if (!s->shape_idx && strmap_new(&s->shape_idx) != SL_OK) {
		free(key);
		return NULL;
	}
	int slot = strmap_get(s->shape_idx, key, -1);
	if (slot >= 0) {
		free(key);
		s->shapes[slot]->refs++;
		return s->shapes[slot];
	}
	if (s->nfree_shapes == 0 &&
	    sl_grow(&s->shapes, &s->capshapes, s->nshapes + 1, SCHED_MAX_SHAPES) != SL_OK) {
		free(key);
		return NULL;
	}
	if (sl_grow(&s->free_shapes, &s->capfree_shapes, s->nshapes + 1, SCHED_MAX_SHAPES) != SL_OK) {
		free(key);
		return NULL; /* sized here so that a put never needs memory */
	}
	struct sched_shape *sh = shape_new(r, tenant);
	slot = s->nfree_shapes ? s->free_shapes[s->nfree_shapes - 1] : s->nshapes;
	if (!sh || strmap_add(s->shape_idx, key, slot) != SL_OK) {
		shape_free(sh);
		free(key);
		return NULL;
	}
	sh->key = key;
	if (s->nfree_shapes)
		s->nfree_shapes--;
	else
		s->nshapes++;
	sh->refs = 1;
	sh->slot = slot;
	s->shapes[slot] = sh;
	return sh;
}

void sched_shape_put(struct sched *s, const struct sched_shape *c)
{
	if (!c)
		return;
	struct sched_shape *sh = s->shapes[c->slot];
	if (--sh->refs > 0)
		return;
	(void)strmap_del(s->shape_idx, sh->key);
	s->shapes[sh->slot] = NULL;
	s->free_shapes[s->nfree_shapes++] = sh->slot;
	shape_free(sh);
}

void sched_shapes_free(struct sched *s)
{
	for (int i = 0; i < s->nshapes; i++)
		shape_free(s->shapes[i]);
	free(s->shapes);
	free(s->free_shapes);
	strmap_free(s->shape_idx);
}

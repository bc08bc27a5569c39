/* place.c - the placer: lifecycle, dynamic state, claim/release and the
 * dispatch of a request to the single-node, share or gang path.
 *
 * State lives in one flat array of struct pl_node (thousandths used per GPU,
 * CPU and memory use, service flags); every change goes through node_changed()
 * so the fleet index (place_index.c) never disagrees with the state. Claims
 * and releases apply pick by pick and undo what they applied when a later pick
 * conflicts: that keeps "nothing changes on error" true even for placements
 * that name a node twice, without a separate validation model of the state. */
#include "place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "catalog.h"
#include "place_internal.h"

#define PLACE_MAX_POOL_OWNERS (1 << 20) /* distinct owners of pooled nodes */

const char *place_constraint_name(enum place_constraint c)
{
	static const char *const names[] = {
#define PLACE_C_NAME(name, str) str,
		PLACE_CONSTRAINTS(PLACE_C_NAME)
#undef PLACE_C_NAME
	};
	if ((unsigned)c >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[c];
}

/* ---- placements ---------------------------------------------------------- */

void placement_init(struct placement *pl)
{
	memset(pl, 0, sizeof(*pl));
}

void placement_release(struct placement *pl)
{
	free(pl->picks);
	placement_init(pl);
}

static enum sl_err placement_reserve(struct placement *pl, int n)
{
	/* Room for 4 picks at first: most placements need no more. */
	return sl_grow(&pl->picks, &pl->cap, n < 4 ? 4 : n, PLACE_MAX_GPUS);
}

/* ---- kept picks (struct place_picks) ---- */

/* Kept picks are counted: a count before the picks, so that a lease's
 * scheduler record and its controller record hold one array
 * (place_picks_copy_like). */
struct picks_head {
	size_t refs;
};

static struct place_pick *picks_dup(const struct place_pick *src, int n)
{
	if (n <= 0)
		return NULL;
	struct picks_head *h = malloc(sizeof(*h) + (size_t)n * sizeof(*src));
	if (!h)
		return NULL;
	h->refs = 1;
	struct place_pick *k = (struct place_pick *)(h + 1);
	memcpy(k, src, (size_t)n * sizeof(*k));
	return k;
}

static void picks_drop(struct place_pick *k)
{
	if (!k)
		return;
	struct picks_head *h = (struct picks_head *)k - 1;
	if (--h->refs == 0)
		free(h);
}

static bool picks_same(const struct place_pick *a, int na, const struct place_pick *b, int nb)
{
	return na == nb && na > 0 && !memcmp(a, b, (size_t)na * sizeof(*a));
}

enum sl_err place_picks_copy(struct place_picks *p, const struct placement *src)
{
	struct place_pick *k = picks_dup(src->picks, src->npicks);
	if (!k && src->npicks > 0)
		return SL_ENOMEM;
	picks_drop(p->picks);
	p->picks = k;
	p->npicks = p->cap = src->npicks;
	return SL_OK;
}

enum sl_err place_picks_take(struct place_picks *p, struct placement *src)
{
	enum sl_err e = place_picks_copy(p, src);
	if (e == SL_OK) {
		placement_release(src);
		placement_init(src);
	}
	return e;
}

enum sl_err place_picks_own(struct place_picks *p)
{
	if (!p->picks || ((struct picks_head *)p->picks - 1)->refs == 1)
		return SL_OK;
	struct place_pick *k = picks_dup(p->picks, p->npicks);
	if (!k && p->npicks > 0)
		return SL_ENOMEM;
	picks_drop(p->picks);
	p->picks = k;
	p->cap = p->npicks;
	return SL_OK;
}

void place_picks_release(struct place_picks *p)
{
	picks_drop(p->picks);
	memset(p, 0, sizeof(*p));
}

enum sl_err place_picks_copy_like(struct place_picks *p, const struct placement *src,
				  const struct place_picks *like)
{
	if (!like || !picks_same(like->picks, like->npicks, src->picks, src->npicks))
		return place_picks_copy(p, src);
	if (p->picks != like->picks) {
		((struct picks_head *)like->picks - 1)->refs++;
		picks_drop(p->picks);
		p->picks = like->picks;
	}
	p->npicks = p->cap = like->npicks;
	return SL_OK;
}

enum sl_err placement_copy(struct placement *dst, const struct placement *src)
{
	if (dst == src)
		return SL_OK;
	struct place_pick *keep = dst->picks;
	int keepcap = dst->cap;
	struct placement tmp = *src;
	tmp.picks = keep;
	tmp.cap = keepcap;
	tmp.npicks = 0;
	if (placement_reserve(&tmp, src->npicks) != SL_OK)
		return SL_ENOMEM;
	if (src->npicks)
		memcpy(tmp.picks, src->picks, (size_t)src->npicks * sizeof(*src->picks));
	tmp.npicks = src->npicks;
	*dst = tmp;
	return SL_OK;
}

enum sl_err placement_add(struct placement *pl, const struct place_pick *pick)
{
	if (pl->npicks == PLACE_MAX_GPUS)
		return SL_ELIMIT;
	if (placement_reserve(pl, pl->npicks + 1) != SL_OK)
		return SL_ENOMEM;
	pl->picks[pl->npicks++] = *pick;
	return SL_OK;
}

static void placement_reset(struct placement *pl)
{
	pl->npicks = 0;
	memset(&pl->score, 0, sizeof(pl->score));
	pl->failed = PLACE_C_NONE;
	pl->why[0] = '\0';
}

/* ---- lifecycle ----------------------------------------------------------- */

static gpumask_t full_mask(int ngpus)
{
	return ngpus >= 32 ? ~(gpumask_t)0 : (((gpumask_t)1 << ngpus) - 1);
}

static int named_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pl_named *)a)->name, ((const struct pl_named *)b)->name);
}

void pl_rank_names(struct pl_named *v, int n, int *rank)
{
	qsort(v, (size_t)n, sizeof(*v), named_cmp);
	for (int i = 0; i < n; i++)
		rank[v[i].i] = i;
}

/* Every node's place in name order (names are unique in a fleet). */
static enum sl_err name_rank_build(struct placer *p)
{
	int nn = p->f->nnodes;
	struct pl_named *v = malloc(((size_t)nn + 1) * sizeof(*v));
	if (!v || pl_grow_zero(&p->name_rank, 0, nn, sizeof(*p->name_rank))) {
		free(v);
		return SL_ENOMEM;
	}
	for (int i = 0; i < nn; i++)
		v[i] = (struct pl_named){p->f->nodes[i].name, i};
	pl_rank_names(v, nn, p->name_rank);
	p->name_last = nn > 0 ? v[nn - 1].i : -1;
	free(v);
	return SL_OK;
}

/* Nodes old.. joined: ranked after the last name where they sort after it (a
 * storm of joins named in order), else every node ranked again. */
static enum sl_err name_rank_added(struct placer *p, int old)
{
	int nn = p->f->nnodes;
	if (pl_grow_zero(&p->name_rank, old, nn, sizeof(*p->name_rank)))
		return SL_ENOMEM;
	int *r = p->name_rank;
	for (int i = old; i < nn; i++) {
		int last = p->name_last;
		if (last >= 0 && strcmp(p->f->nodes[i].name, p->f->nodes[last].name) < 0)
			return name_rank_build(p);
		r[i] = last >= 0 ? r[last] + 1 : 0;
		p->name_last = i;
	}
	return SL_OK;
}

enum sl_err placer_new(const struct fleet *f, struct placer **out)
{
	*out = NULL;
	struct placer *p = calloc(1, sizeof(*p));
	if (!p)
		return SL_ENOMEM;
	p->f = f;
	p->nnodes = f->nnodes;
	p->ntypes = f->ntypes;
	p->nunits = f->nleaves + f->ndomains + f->nnodes;
	p->ptabs = calloc((size_t)f->ntypes + 1, sizeof(*p->ptabs));
	p->nodes = calloc((size_t)f->nnodes + 1, sizeof(*p->nodes));
	p->partial = calloc((size_t)f->nnodes + 1, sizeof(*p->partial));
	p->type_ok = calloc((size_t)f->ntypes + 1, sizeof(*p->type_ok));
	p->unit_count = calloc((size_t)p->nunits + 1, sizeof(*p->unit_count));
	p->units = calloc((size_t)p->nunits + 1, sizeof(*p->units));
	if (!p->ptabs || !p->nodes || !p->partial || !p->type_ok || !p->unit_count ||
	    !p->units)
		goto nomem;
	for (int i = 0; i < f->nnodes; i++) {
		int t = f->nodes[i].type;
		p->nodes[i].usable = true;
		p->nodes[i].owner = f->nodes[i].owner;
		p->nodes[i].partial_pos = -1;
		if (!p->ptabs[t]) {
			enum sl_err e = ptab_new(&f->types[t], &p->ptabs[t]);
			if (e != SL_OK) {
				placer_free(p);
				return e;
			}
		}
	}
	if (name_rank_build(p) != SL_OK || pl_index_build(p) != SL_OK ||
	    pl_leaf_build(p) != SL_OK)
		goto nomem;
	p->group_ok = calloc((size_t)p->ngroups + 1, sizeof(*p->group_ok));
	if (!p->group_ok)
		goto nomem;
	*out = p;
	return SL_OK;
nomem:
	placer_free(p);
	return SL_ENOMEM;
}

enum sl_err pl_grow_zero(void *a, int n_old, int n_new, size_t sz)
{
	void **pa = a;
	char *q = realloc(*pa, ((size_t)n_new + 1) * sz);
	if (!q)
		return SL_ENOMEM;
	memset(q + (size_t)n_old * sz, 0, ((size_t)(n_new - n_old) + 1) * sz);
	*pa = q;
	return SL_OK;
}

enum sl_err placer_nodes_added(struct placer *p)
{
	const struct fleet *f = p ? p->f : NULL;
	if (!f || f->ntypes != p->ntypes || f->nnodes < p->nnodes)
		return SL_EINVAL;
	int old = p->nnodes, nn = f->nnodes;
	if (nn == old)
		return SL_OK;
	int nunits = f->nleaves + f->ndomains + nn;
	if (nunits < p->nunits)
		return SL_EINVAL;
	if (pl_grow_zero(&p->nodes, old, nn, sizeof(*p->nodes)) ||
	    pl_grow_zero(&p->partial, old, nn, sizeof(*p->partial)) ||
	    pl_grow_zero(&p->unit_count, p->nunits, nunits, sizeof(*p->unit_count)) ||
	    pl_grow_zero(&p->units, p->nunits, nunits, sizeof(*p->units)))
		return SL_ENOMEM;
	p->nunits = nunits;
	if (name_rank_added(p, old) != SL_OK)
		return SL_ENOMEM;
	pl_gang_scratch_free(p); /* sized by the fleet: made again when needed */
	for (int i = old; i < nn; i++) {
		int t = f->nodes[i].type;
		p->nodes[i].usable = true;
		p->nodes[i].owner = f->nodes[i].owner;
		p->nodes[i].partial_pos = -1;
		if (!p->ptabs[t]) {
			enum sl_err e = ptab_new(&f->types[t], &p->ptabs[t]);
			if (e != SL_OK)
				return e;
		}
	}
	enum sl_err e = pl_frag_nodes_added(p, old);
	if (e == SL_OK)
		e = pl_leaf_build(p); /* the new nodes' leaves count them */
	if (e != SL_OK)
		return e;
	/* The index: a node that sorts last in its group is appended there
	 * (cheap, and what a storm of joins named in order gives); any other
	 * makes the index be rebuilt, which files every node afresh. */
	p->nnodes = nn;
	for (int i = old; i < nn; i++) {
		e = pl_index_append(p, i);
		if (e == SL_ENOTFOUND || e == SL_ENOMEM)
			return pl_index_rebuild(p);
		pl_frag_node_changed(p, i); /* its group's kept answers are stale */
	}
	return SL_OK;
}

void placer_free(struct placer *p)
{
	if (!p)
		return;
	if (p->ptabs)
		for (int t = 0; t < p->f->ntypes; t++)
			ptab_free(p->ptabs[t]);
	pl_index_free(p);
	pl_frag_free(p);
	pl_leaf_free(p);
	free(p->ptabs);
	free(p->nodes);
	free(p->name_rank);
	free(p->partial);
	free(p->type_ok);
	free(p->group_ok);
	free(p->unit_count);
	free(p->units);
	pl_gang_scratch_free(p);
	for (int i = 0; i < p->npool_names; i++)
		free(p->pool_names[i]);
	free(p->pool_names);
	free(p);
}

const struct fleet *placer_fleet(const struct placer *p)
{
	return p->f;
}

/* ---- state --------------------------------------------------------------- */

int pl_free_mask(const struct placer *p, int node)
{
	const struct pl_node *n = &p->nodes[node];
	if (!n->usable)
		return 0;
	int ngpus = fleet_node_type(p->f, node)->ngpus;
	gpumask_t m = 0;
	for (int g = 0; g < ngpus; g++)
		if (n->used[g] == 0)
			m |= (gpumask_t)1 << g;
	return (int)(m & ~n->bad & ~n->shared);
}

static void node_changed(struct placer *p, int node)
{
	pl_frag_node_changed(p, node);
	pl_index_update(p, node);
	pl_partial_update(p, node);
	pl_leaf_node_changed(p, node);
}

static bool node_ok(const struct placer *p, int node)
{
	return p && node >= 0 && node < p->f->nnodes;
}

void placer_set_node_usable(struct placer *p, int node, bool usable)
{
	if (!node_ok(p, node))
		return;
	p->nodes[node].usable = usable;
	node_changed(p, node);
}

bool placer_node_usable(const struct placer *p, int node)
{
	return node_ok(p, node) && p->nodes[node].usable;
}

void placer_set_gpu_usable(struct placer *p, int node, int gpu, bool usable)
{
	if (!node_ok(p, node) || gpu < 0 || gpu >= fleet_node_type(p->f, node)->ngpus)
		return;
	gpumask_t bit = (gpumask_t)1 << gpu;
	if (usable)
		p->nodes[node].bad &= ~bit;
	else
		p->nodes[node].bad |= bit;
	node_changed(p, node);
}

gpumask_t placer_free_mask(const struct placer *p, int node)
{
	return node_ok(p, node) ? (gpumask_t)pl_free_mask(p, node) : 0;
}

int placer_gpu_used_milli(const struct placer *p, int node, int gpu)
{
	if (!node_ok(p, node) || gpu < 0 || gpu >= fleet_node_type(p->f, node)->ngpus)
		return 0;
	return p->nodes[node].used[gpu];
}

int placer_cpus_used(const struct placer *p, int node)
{
	return node_ok(p, node) ? p->nodes[node].cpus_used : 0;
}

int64_t placer_mem_used_mib(const struct placer *p, int node)
{
	return node_ok(p, node) ? p->nodes[node].mem_used : 0;
}

int placer_node_stranded(struct placer *p, int node)
{
	if (!node_ok(p, node))
		return 0;
	struct node_leftover l;
	ptab_leftover(p->ptabs[p->f->nodes[node].type], (gpumask_t)pl_free_mask(p, node), &l);
	return l.stranded;
}

/* ---- dynamic pools ------------------------------------------------------- */

int pl_owner_find(const struct placer *p, const char *tenant)
{
	int o = fleet_find_owner(p->f, tenant);
	for (int i = 0; o < 0 && i < p->npool_names; i++)
		if (!strcmp(p->pool_names[i], tenant))
			o = p->f->nowners + i;
	return o;
}

/* The owner index for tenant, adding a pool name when the fleet has none. */
static enum sl_err owner_intern(struct placer *p, const char *tenant, int *out)
{
	*out = pl_owner_find(p, tenant);
	if (*out >= 0)
		return SL_OK;
	enum sl_err ge = sl_grow(&p->pool_names, &p->cap_pool_names, p->npool_names + 1, PLACE_MAX_POOL_OWNERS);
	if (ge)
		return ge;
	size_t len = strlen(tenant) + 1;
	char *copy = malloc(len);
	if (!copy)
		return SL_ENOMEM;
	memcpy(copy, tenant, len);
	p->pool_names[p->npool_names] = copy;
	*out = p->f->nowners + p->npool_names++;
	return SL_OK;
}

enum sl_err placer_set_pool(struct placer *p, const int *nodes, int n, const char *tenant,
			    struct sl_diag *d)
{
	if (!p || n < 0 || (n > 0 && !nodes))
		return sl_diag_set(d, SL_EINVAL, "no placer or node list");
	if (tenant && !fleet_name_valid(tenant))
		return sl_diag_set(d, SL_EINVAL, "bad tenant name for a pool");
	for (int i = 0; i < n; i++)
		if (!node_ok(p, nodes[i]))
			return sl_diag_set(d, SL_EINVAL, "node %d out of range 0..%d", nodes[i],
					   p->f->nnodes - 1);
	int owner = -1;
	if (tenant && owner_intern(p, tenant, &owner) != SL_OK)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	int *old = malloc(((size_t)n + 1) * sizeof(*old));
	if (!old)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	bool changed = false;
	for (int i = 0; i < n; i++) {
		struct pl_node *st = &p->nodes[nodes[i]];
		old[i] = st->owner;
		st->owner = tenant ? owner : p->f->nodes[nodes[i]].owner;
		changed |= st->owner != old[i];
	}
	enum sl_err e = changed ? pl_index_rebuild(p) : SL_OK;
	if (e != SL_OK) {
		for (int i = n - 1; i >= 0; i--)
			p->nodes[nodes[i]].owner = old[i];
		sl_diag_set(d, e, "out of memory rebuilding the fleet index");
	}
	free(old);
	return e;
}

enum sl_err placer_set_node_pool(struct placer *p, int node, const char *tenant,
				 struct sl_diag *d)
{
	return placer_set_pool(p, &node, 1, tenant, d);
}

const char *placer_node_owner(const struct placer *p, int node)
{
	if (!node_ok(p, node) || p->nodes[node].owner < 0)
		return NULL;
	int o = p->nodes[node].owner;
	return o < p->f->nowners ? p->f->owners[o] : p->pool_names[o - p->f->nowners];
}

/* ---- claim / release ----------------------------------------------------- */

static enum sl_err pick_check(const struct placer *p, const struct place_pick *k,
			      int i, struct sl_diag *d)
{
	if (!node_ok(p, k->node))
		return sl_diag_set(d, SL_EINVAL, "pick %d: node %d out of range 0..%d", i,
				   k->node, p->f->nnodes - 1);
	const struct fleet_node *fn = &p->f->nodes[k->node];
	int ngpus = fleet_node_type(p->f, k->node)->ngpus;
	if (k->cpus < 0 || k->mem_mib < 0)
		return sl_diag_set(d, SL_EINVAL, "pick %d on %s: negative CPUs or memory", i,
				   fn->name);
	if (k->gpu < 0) {
		if (k->gpu != -1 || k->milli != 0 || (k->gpus & ~full_mask(ngpus)))
			return sl_diag_set(d, SL_EINVAL,
					   "pick %d on %s: GPU mask 0x%x does not fit %d GPUs "
					   "(or a share without a GPU index)",
					   i, fn->name, (unsigned)k->gpus, ngpus);
		return SL_OK;
	}
	if (k->gpu >= ngpus || k->gpus != 0 || k->milli < 1 || k->milli >= PL_MILLI)
		return sl_diag_set(d, SL_EINVAL,
				   "pick %d on %s: a share needs GPU 0..%d, milli 1..%d and "
				   "no whole GPUs",
				   i, fn->name, ngpus - 1, PL_MILLI - 1);
	if (!fn->shareable)
		return sl_diag_set(d, SL_EINVAL, "pick %d: node %s is not shareable", i,
				   fn->name);
	return SL_OK;
}

/* Applies one pick (claim or release) or returns false, changing nothing. */
static bool pick_apply(struct placer *p, const struct place_pick *k, bool claim)
{
	struct pl_node *n = &p->nodes[k->node];
	const struct node_type *t = fleet_node_type(p->f, k->node);
	int64_t memcap = (int64_t)t->mem_gib * 1024;
	if (claim) {
		/* Compared as room left: a pick's CPUs and memory come from outside
		 * (pick_check only ensures they are >= 0), and a sum could overflow. */
		if (!n->usable || k->cpus > t->cpus - n->cpus_used ||
		    k->mem_mib > memcap - n->mem_used)
			return false;
	} else if (n->cpus_used < k->cpus || n->mem_used < k->mem_mib) {
		return false;
	}
	if (k->gpu >= 0) {
		gpumask_t bit = (gpumask_t)1 << k->gpu;
		int u = n->used[k->gpu];
		if (claim) {
			if ((n->bad & bit) || (u > 0 && !(n->shared & bit)) ||
			    u + k->milli > PL_MILLI)
				return false;
			n->used[k->gpu] = (uint16_t)(u + k->milli);
			n->shared |= bit;
		} else {
			if (!(n->shared & bit) || u < k->milli)
				return false;
			n->used[k->gpu] = (uint16_t)(u - k->milli);
			if (n->used[k->gpu] == 0)
				n->shared &= ~bit;
		}
	} else {
		for (int g = 0; g < t->ngpus; g++) {
			gpumask_t bit = (gpumask_t)1 << g;
			if (!(k->gpus & bit))
				continue;
			if (claim && (n->used[g] != 0 || (n->bad & bit)))
				return false;
			if (!claim && (n->used[g] != PL_MILLI || (n->shared & bit)))
				return false;
		}
		for (int g = 0; g < t->ngpus; g++)
			if (k->gpus & ((gpumask_t)1 << g))
				n->used[g] = claim ? PL_MILLI : 0;
	}
	n->cpus_used += claim ? k->cpus : -k->cpus;
	n->mem_used += claim ? k->mem_mib : -k->mem_mib;
	node_changed(p, k->node);
	return true;
}

static enum sl_err apply_all(struct placer *p, const struct placement *pl, bool claim,
			     struct sl_diag *d)
{
	if (!p || !pl || pl->npicks < 0 || (pl->npicks > 0 && !pl->picks))
		return sl_diag_set(d, SL_EINVAL, "no placer or placement");
	for (int i = 0; i < pl->npicks; i++) {
		enum sl_err e = pick_check(p, &pl->picks[i], i, d);
		if (e != SL_OK)
			return e;
	}
	for (int i = 0; i < pl->npicks; i++) {
		if (pick_apply(p, &pl->picks[i], claim))
			continue;
		for (int j = i - 1; j >= 0; j--)
			(void)pick_apply(p, &pl->picks[j], !claim);
		const struct place_pick *k = &pl->picks[i];
		return sl_diag_set(d, SL_ECONFLICT,
				   claim ? "pick %d on %s: GPUs, CPUs or memory not free "
					   "(or the node is out of service)"
					 : "pick %d on %s: GPUs, CPUs or memory not in use",
				   i, p->f->nodes[k->node].name);
	}
	return SL_OK;
}

enum sl_err placer_claim(struct placer *p, const struct placement *pl, struct sl_diag *d)
{
	return apply_all(p, pl, true, d);
}

enum sl_err placer_release(struct placer *p, const struct placement *pl,
			   struct sl_diag *d)
{
	return apply_all(p, pl, false, d);
}

/* ---- shared helpers ------------------------------------------------------ */

bool pl_owner_ok(const struct pl_ctx *c, int owner)
{
	if (c->req->pool_owned)
		return c->tenant_owner >= 0 && owner == c->tenant_owner;
	return owner < 0 || owner == c->tenant_owner;
}

void pl_demand(const struct pl_ctx *c, const struct node_type *t, int k, int milli,
	       int *cpus, int64_t *mem)
{
	int64_t share_num = k > 0 ? (int64_t)k * PL_MILLI : milli;
	int64_t den = (int64_t)t->ngpus * PL_MILLI;
	bool exact = c->req->exact_cpu_mem;
	int want = c->req->cpus;
	if (c->req->cpu_milli > 0)
		want = t->cpu_milli ? c->req->cpu_milli : (c->req->cpu_milli + 999) / 1000;
	*cpus = want > 0 || exact ? want : (int)((int64_t)t->cpus * share_num / den);
	*mem = c->req->mem_mib > 0 || exact ? c->req->mem_mib
					    : (int64_t)t->mem_gib * 1024 * share_num / den;
}

bool pl_fits_cpu_mem(const struct placer *p, int node, int cpus, int64_t mem)
{
	const struct node_type *t = fleet_node_type(p->f, node);
	const struct pl_node *n = &p->nodes[node];
	/* Room left, not used + asked: a request may ask for up to INT64_MAX MiB. */
	return cpus <= t->cpus - n->cpus_used &&
	       mem <= (int64_t)t->mem_gib * 1024 - n->mem_used;
}

int pl_cand_cmp(const struct placer *p, const struct pl_cand *a, const struct pl_cand *b)
{
	int c = node_quality_cmp(&a->pick.q, &b->pick.q);
	if (c)
		return -c;
	if (a->freecnt != b->freecnt)
		return a->freecnt < b->freecnt ? -1 : 1;
	c = node_leftover_cmp(&a->pick.left, &b->pick.left);
	if (c)
		return -c;
	if (a->price != b->price)
		return a->price < b->price ? -1 : 1;
	return pl_name_cmp(p, a->node, b->node);
}

enum sl_err pl_add_pick(struct placement *out, const struct placer *p,
			const struct pl_ctx *c, int node, gpumask_t set, int gpu,
			int milli, const struct node_quality *q)
{
	struct place_pick k = {.node = node, .gpus = set, .gpu = gpu, .milli = milli};
	pl_demand(c, fleet_node_type(p->f, node), gpu >= 0 ? 0 : __builtin_popcount(set),
		  milli, &k.cpus, &k.mem_mib);
	k.q = *q;
	return placement_add(out, &k);
}

/* Counts distinct values of key over the picks using the unit scratch array. */
static int count_distinct(struct placer *p, const struct placement *out, bool domains)
{
	int n = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < out->npicks; i++) {
			const struct fleet_node *fn = &p->f->nodes[out->picks[i].node];
			int u = domains ? fn->domain : fn->leaf;
			if (u < 0)
				continue;
			if (pass == 0 && !p->unit_count[u]++)
				n++;
			else if (pass == 1)
				p->unit_count[u] = 0;
		}
	return n;
}

void pl_fill_score(struct placer *p, struct placement *out)
{
	struct place_score *s = &out->score;
	memset(s, 0, sizeof(*s));
	s->rails_aligned = true;
	s->full_quality = true;
	s->nodes = out->npicks;
	/* A gang's picks are mostly alike: the last type, free mask after and
	 * set size are judged once. */
	struct ptab *lpt = NULL;
	gpumask_t lafter = 0;
	int lsize = -1;
	struct node_leftover l;
	struct node_quality fq;
	bool fq_ok = false;
	for (int i = 0; i < out->npicks; i++) {
		const struct place_pick *k = &out->picks[i];
		struct ptab *pt = p->ptabs[p->f->nodes[k->node].type];
		gpumask_t set = k->gpu >= 0 ? (gpumask_t)1 << k->gpu : k->gpus;
		gpumask_t after = (gpumask_t)pl_free_mask(p, k->node) & ~set;
		int size = __builtin_popcount(set);
		if (pt != lpt || after != lafter)
			ptab_leftover(pt, after, &l);
		if (pt != lpt || size != lsize)
			fq_ok = ptab_full_quality(pt, size, &fq);
		lpt = pt;
		lafter = after;
		lsize = size;
		if (i == 0 || k->q.bottleneck_gbps < s->bottleneck_gbps)
			s->bottleneck_gbps = k->q.bottleneck_gbps;
		s->total_gbps += k->q.total_gbps;
		if (k->q.numa_spanned > s->numa_spanned)
			s->numa_spanned = k->q.numa_spanned;
		s->nics += k->q.nics;
		s->free_after += __builtin_popcount(after);
		s->stranded_after += l.stranded;
		if (i == 0)
			s->price_hint = p->f->nodes[k->node].price_hint;
		if (k->gpus != out->picks[0].gpus || k->gpu != out->picks[0].gpu)
			s->rails_aligned = false;
		if (!fq_ok || node_quality_cmp(&k->q, &fq) < 0)
			s->full_quality = false;
	}
	s->leaves = count_distinct(p, out, false);
	s->domains = count_distinct(p, out, true);
}

/* ---- requests ------------------------------------------------------------ */

static void hint_models(struct sl_diag *d)
{
	char buf[SL_DIAG_HINT];
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < catalog_gpu_count() && len < sizeof(buf); i++) {
		int w = snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? ", " : "",
				 catalog_gpu_at(i)->name);
		if (w < 0)
			break;
		len += (size_t)w;
	}
	sl_diag_hint(d, "known models: %s", buf);
}

static bool region_known(const struct fleet *f, const char *region)
{
	for (int s = 0; s < f->nsites; s++)
		if (f->sites[s].region && !strcmp(f->sites[s].region, region))
			return true;
	return false;
}

static void hint_list(struct sl_diag *d, const struct fleet *f, bool regions)
{
	char buf[SL_DIAG_HINT];
	size_t len = 0;
	buf[0] = '\0';
	for (int s = 0; s < f->nsites && len < sizeof(buf); s++) {
		const char *name = regions ? f->sites[s].region : f->sites[s].name;
		bool dup = false;
		for (int q = 0; q < s && regions; q++)
			if (!strcmp(f->sites[q].region, name))
				dup = true;
		if (dup)
			continue;
		int w = snprintf(buf + len, sizeof(buf) - len, "%s%s", len ? ", " : "", name);
		if (w < 0)
			break;
		len += (size_t)w;
	}
	sl_diag_hint(d, "known %s: %s", regions ? "regions" : "sites",
		     len ? buf : "(none)");
}

static enum sl_err check_numbers(const struct place_request *r, struct sl_diag *d)
{
	if (r->gpus < 0 || r->gpus > PLACE_MAX_GPUS)
		return sl_diag_set(d, SL_EINVAL, "gpus %d out of range 0..%d", r->gpus,
				   PLACE_MAX_GPUS);
	if (r->gpu_milli < 0 || r->gpu_milli >= PL_MILLI)
		return sl_diag_set(d, SL_EINVAL, "gpu_milli %d out of range 1..%d",
				   r->gpu_milli, PL_MILLI - 1);
	if (r->gpus == 0 && r->gpu_milli == 0 &&
	    (!r->exact_cpu_mem || (r->cpus == 0 && r->cpu_milli == 0 && r->mem_mib == 0)))
		return sl_diag_set(d, SL_EINVAL, "request asks for no GPUs "
				   "(set gpus or gpu_milli, or exact CPUs or memory)");
	if (r->gpus == 0 && r->gpu_milli == 0 && (r->per_node != 0 || r->exclusive))
		return sl_diag_set(d, SL_EINVAL, "a CPU-only request cannot be a gang or "
				   "exclusive");
	if (r->gpus > 0 && r->gpu_milli > 0)
		return sl_diag_set(d, SL_EINVAL, "gpus and gpu_milli are exclusive");
	if (r->gpu_milli > 0 && (r->per_node != 0 || r->exclusive))
		return sl_diag_set(d, SL_EINVAL, "a GPU share cannot be a gang or exclusive");
	if (r->per_node < 0 || r->per_node > TOPO_MAX_GPUS)
		return sl_diag_set(d, SL_EINVAL, "per_node %d out of range 0..%d",
				   r->per_node, TOPO_MAX_GPUS);
	if (r->nmodels < 0 || r->nmodels > PLACE_MAX_MODELS)
		return sl_diag_set(d, SL_EINVAL, "%d models given; at most %d", r->nmodels,
				   PLACE_MAX_MODELS);
	if (r->min_mem_gib < 0 || r->min_bw_gbps < 0 || r->cpus < 0 || r->mem_mib < 0 ||
	    r->cpu_milli < 0)
		return sl_diag_set(d, SL_EINVAL, "negative memory, bandwidth, CPU or "
				   "host-memory constraint");
	return SL_OK;
}

static enum sl_err ctx_init(struct placer *p, const struct place_request *r,
			    struct pl_ctx *c, struct sl_diag *d)
{
	const struct fleet *f = p->f;
	memset(c, 0, sizeof(*c));
	c->req = r;
	enum sl_err e = check_numbers(r, d);
	if (e != SL_OK)
		return e;
	const struct gpu_model *models[PLACE_MAX_MODELS];
	for (int i = 0; i < r->nmodels; i++) {
		models[i] = fleet_find_model(f, r->models[i]);
		if (!models[i]) {
			sl_diag_set(d, SL_EINVAL, "unknown GPU model '%s'",
				    r->models[i] ? r->models[i] : "(null)");
			hint_models(d);
			return SL_EINVAL;
		}
	}
	c->site = -1;
	if (r->region) {
		if (!region_known(f, r->region)) {
			sl_diag_set(d, SL_EINVAL, "unknown region '%s'", r->region);
			hint_list(d, f, true);
			return SL_EINVAL;
		}
		c->region = r->region;
	}
	if (r->site) {
		c->site = fleet_find_site(f, r->site);
		if (c->site < 0) {
			sl_diag_set(d, SL_EINVAL, "unknown site '%s'", r->site);
			hint_list(d, f, false);
			return SL_EINVAL;
		}
	}
	c->tenant_owner = r->tenant ? pl_owner_find(p, r->tenant) : -1;
	c->share = r->gpu_milli > 0;
	c->k = c->share ? 1 : r->gpus;
	for (int t = 0; t < f->ntypes; t++) {
		const struct gpu_model *m = f->types[t].gpu;
		bool ok = r->nmodels == 0;
		for (int i = 0; i < r->nmodels; i++)
			if (models[i] == m || (m && !strcmp(models[i]->name, m->name)))
				ok = true;
		p->type_ok[t] = ok && m && m->mem_gib >= r->min_mem_gib && p->ptabs[t];
	}
	/* Site and region once per site, not per group (a string compare). */
	enum { SITES_AT_ONCE = 64 };
	bool site_ok[SITES_AT_ONCE];
	bool per_site = f->nsites <= SITES_AT_ONCE;
	for (int i = 0; per_site && i < f->nsites; i++)
		site_ok[i] = (c->site < 0 || i == c->site) &&
			     (!c->region || !strcmp(f->sites[i].region, c->region));
	for (int g = 0; g < p->ngroups; g++) {
		const struct pl_group *gr = &p->groups[g];
		p->group_ok[g] = p->type_ok[gr->type] && pl_owner_ok(c, gr->owner) &&
				 (per_site ? site_ok[gr->site]
					   : (c->site < 0 || gr->site == c->site) &&
						 (!c->region ||
						  !strcmp(f->sites[gr->site].region, c->region))) &&
				 (!c->share || gr->shareable);
		if (p->group_ok[g] && f->types[gr->type].ngpus > c->maxg)
			c->maxg = f->types[gr->type].ngpus; /* once here, not per use */
	}
	return SL_OK;
}

static enum sl_err place_share(struct placer *p, const struct pl_ctx *c,
			       struct placement *out)
{
	int node, gpu;
	if (!pl_share_best(p, c, &node, &gpu)) {
		struct pl_cand best;
		if (!pl_index_best(p, c, 1, &best))
			return pl_explain(p, c, 1, 1, NULL, out);
		node = best.node;
		gpu = __builtin_ctz(best.pick.set);
	}
	struct node_quality q;
	(void)node_set_quality(fleet_node_type(p->f, node), (gpumask_t)1 << gpu, &q);
	return pl_add_pick(out, p, c, node, 0, gpu, c->req->gpu_milli, &q);
}

static enum sl_err place_single(struct placer *p, const struct pl_ctx *c,
				struct placement *out)
{
	struct pl_cand best;
	if (!pl_index_best(p, c, c->k, &best))
		return pl_explain(p, c, c->k, 1, NULL, out);
	return pl_add_pick(out, p, c, best.node, best.pick.set, -1, 0, &best.pick.q);
}

static enum sl_err place_req(struct placer *p, const struct place_request *req,
			     struct placement *out, struct sl_diag *d, bool quiet)
{
	if (!p || !req || !out)
		return sl_diag_set(d, SL_EINVAL, "no placer, request or placement");
	placement_reset(out);
	struct pl_ctx c;
	enum sl_err e = ctx_init(p, req, &c, d);
	if (e != SL_OK)
		return e;
	c.quiet = quiet;
	int maxg = c.maxg;
	if (pl_frag_handles(p, &c))
		e = pl_frag_place(p, &c, out);
	else if (c.share)
		e = place_share(p, &c, out);
	else if (maxg > 0 && (req->per_node > 0 || req->gpus > maxg))
		e = pl_gang_place(p, &c, out, d);
	else
		e = place_single(p, &c, out);
	if (e == SL_OK) {
		struct place_score fs = out->score; /* the policy's part of it */
		if (!c.share && c.k > 0 && out->npicks == 1)
			fs.leaf_kept = pl_leaf_refine(p, out);
		pl_fill_score(p, out);
		out->score.frag = fs.frag;
		out->score.bestfit_same = fs.bestfit_same;
		out->score.frag_milli = fs.frag_milli;
		out->score.bestfit_milli = fs.bestfit_milli;
		out->score.leaf_kept = fs.leaf_kept;
	}
	else if (e != SL_ENOSPACE)
		out->npicks = 0;
	return e;
}

enum sl_err placer_place(struct placer *p, const struct place_request *req,
			 struct placement *out, struct sl_diag *d)
{
	return place_req(p, req, out, d, false);
}

enum sl_err placer_place_quiet(struct placer *p, const struct place_request *req,
			       struct placement *out, struct sl_diag *d)
{
	return place_req(p, req, out, d, true);
}

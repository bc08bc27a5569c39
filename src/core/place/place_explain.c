/* place_explain.c - why a request was refused.
 *
 * Runs only on the refusal path and counts every node (group by group of the
 * index, the checks that depend only on the group made once per group, and in
 * groups with every node in service one free mask at a time): each node is
 * checked against the constraints in PLACE_CONSTRAINTS order and stops at the
 * first it fails. The first constraint after which fewer than the needed
 * nodes survive (one for a single-node request, n for a gang) is the
 * refusal's `failed`, and the nodes that fell at exactly that constraint tell
 * how close the request came (where a whole group or free mask fails alike,
 * only its first node by name can be the closest, so only that one is
 * noted). Keeping the checks here in the
 * same terms as the index (free mask, ptab_best, demand) is what makes the
 * explanation agree with the decision. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "place_internal.h"

#define EX_LIST 4 /* names listed in a sentence before "..." */

struct ex_acc {
	const struct pl_ctx *c;
	int k, n;
	int fail_at[PLACE_C_GANG + 2]; /* nodes whose first failed constraint is i */
	int best_node[PLACE_C_GANG + 2];
	int64_t best_val[PLACE_C_GANG + 2];
	int best_gpu; /* shares: GPU of best_node[PLACE_C_FREE] */
	int rsite;    /* the last site whose region was compared (groups come
			 site by site), or -1 */
	bool rsite_in; /* whether it is in the request's region */
};

static bool model_listed(const struct place_request *r, const struct gpu_model *m)
{
	if (r->nmodels == 0)
		return true;
	for (int i = 0; i < r->nmodels; i++)
		if (m && !strcmp(r->models[i], m->name))
			return true;
	return false;
}

/* Most free thousandths on one GPU (partly used or wholly free); sets *gpu. */
static int share_room(const struct placer *p, int node, int *gpu)
{
	const struct pl_node *n = &p->nodes[node];
	int ngpus = fleet_node_type(p->f, node)->ngpus, best = 0;
	gpumask_t free = (gpumask_t)pl_free_mask(p, node);
	*gpu = -1;
	for (int g = 0; g < ngpus; g++) {
		gpumask_t bit = (gpumask_t)1 << g;
		int room = (free & bit) ? PL_MILLI
			   : ((n->shared & bit) && !(n->bad & bit) && n->usable)
				 ? PL_MILLI - n->used[g] : 0;
		if (room > best) {
			best = room;
			*gpu = g;
		}
	}
	return best;
}

static void note(struct ex_acc *a, const struct placer *p, int stage, int node, int64_t v)
{
	int b = a->best_node[stage];
	if (b < 0 || v > a->best_val[stage] ||
	    (v == a->best_val[stage] && pl_name_cmp(p, node, b) < 0)) {
		a->best_node[stage] = node;
		a->best_val[stage] = v;
	}
}

/* What the state checks of one group's nodes share: the demand and, for
 * types of at most PTAB_EAGER_GPUS GPUs, whether a free mask holds the
 * request (-1: not asked yet). */
struct ex_group {
	int cpus;
	int64_t mem;
	bool memo_ok;
	int8_t memo[PL_SMALL_MASKS];
};

/* The checks before a node's state matters (request kind, model, memory,
 * region, site, owner, size, bandwidth): each depends only on what makes the
 * node's index group (site, owner, type, shareable), so one node answers for
 * its group. PLACE_C_NONE when it passes them. With notes, the stages that
 * keep a closest node note this one. */
static int node_stage_static(struct placer *p, struct ex_acc *a, int node, bool notes)
{
	const struct pl_ctx *c = a->c;
	const struct place_request *r = c->req;
	const struct fleet_node *fn = &p->f->nodes[node];
	const struct node_type *t = &p->f->types[fn->type];
	struct ptab *pt = p->ptabs[fn->type];
	const struct pl_node *st = &p->nodes[node];
	if (c->share && !fn->shareable)
		return PLACE_C_REQUEST;
	if (!model_listed(r, t->gpu))
		return PLACE_C_MODEL;
	if (!t->gpu || t->gpu->mem_gib < r->min_mem_gib) {
		if (notes)
			note(a, p, PLACE_C_MEMORY, node, t->gpu ? t->gpu->mem_gib : 0);
		return PLACE_C_MEMORY;
	}
	if (c->region && fn->site != a->rsite) {
		a->rsite = fn->site;
		a->rsite_in = !strcmp(p->f->sites[fn->site].region, c->region);
	}
	if (c->region && !a->rsite_in)
		return PLACE_C_REGION;
	if (c->site >= 0 && fn->site != c->site)
		return PLACE_C_SITE;
	if (!pl_owner_ok(c, st->owner))
		return PLACE_C_OWNER;
	if (t->ngpus < a->k) {
		if (notes)
			note(a, p, PLACE_C_SIZE, node, t->ngpus);
		return PLACE_C_SIZE;
	}
	gpumask_t full = t->ngpus >= 32 ? ~(gpumask_t)0 : (((gpumask_t)1 << t->ngpus) - 1);
	struct node_quality q;
	bool qok = r->exclusive ? node_set_quality(t, full, &q)
				: ptab_full_quality(pt, a->k, &q);
	if (!qok || q.bottleneck_gbps < r->min_bw_gbps) {
		if (notes)
			note(a, p, PLACE_C_BANDWIDTH, node, qok ? q.bottleneck_gbps : 0);
		return PLACE_C_BANDWIDTH;
	}
	return PLACE_C_NONE;
}

static void ex_group_init(struct placer *p, struct ex_acc *a, int node, struct ex_group *eg)
{
	const struct pl_ctx *c = a->c;
	const struct node_type *t = fleet_node_type(p->f, node);
	if (c->share)
		pl_demand(c, t, 0, c->req->gpu_milli, &eg->cpus, &eg->mem);
	else if (c->req->exclusive)
		pl_demand(c, t, t->ngpus, 0, &eg->cpus, &eg->mem);
	else
		pl_demand(c, t, a->k, 0, &eg->cpus, &eg->mem);
	eg->memo_ok = t->ngpus <= PTAB_EAGER_GPUS;
	if (eg->memo_ok)
		memset(eg->memo, -1, sizeof(eg->memo));
}

/* The checks of a node's state, for a node whose group passed the others:
 * first constraint it fails, PLACE_C_NONE when it could take the request. */
static int node_stage_state(struct placer *p, struct ex_acc *a, int node, struct ex_group *eg)
{
	const struct pl_ctx *c = a->c;
	const struct place_request *r = c->req;
	const struct fleet_node *fn = &p->f->nodes[node];
	const struct node_type *t = &p->f->types[fn->type];
	struct ptab *pt = p->ptabs[fn->type];
	const struct pl_node *st = &p->nodes[node];
	if (!st->usable || t->ngpus - __builtin_popcount(st->bad) < a->k)
		return PLACE_C_HEALTH;
	gpumask_t full = t->ngpus >= 32 ? ~(gpumask_t)0 : (((gpumask_t)1 << t->ngpus) - 1);
	gpumask_t free = st->imask; /* the index keeps it equal to pl_free_mask() */
	int room = 0, gpu = -1;
	bool has;
	if (c->share) {
		room = share_room(p, node, &gpu);
		has = room >= r->gpu_milli;
	} else if (r->exclusive) {
		has = free == full;
	} else if (eg->memo_ok && eg->memo[free] >= 0) {
		has = eg->memo[free];
	} else {
		struct node_pick pk;
		has = ptab_best(pt, free, a->k, &pk) && pk.q.bottleneck_gbps >= r->min_bw_gbps;
		if (eg->memo_ok)
			eg->memo[free] = has;
	}
	if (!has) {
		int64_t before = a->best_node[PLACE_C_FREE];
		note(a, p, PLACE_C_FREE, node, c->share ? room : __builtin_popcount(free));
		if (c->share && a->best_node[PLACE_C_FREE] != before)
			a->best_gpu = gpu;
		return PLACE_C_FREE;
	}
	if (!pl_fits_cpu_mem(p, node, eg->cpus, eg->mem)) {
		note(a, p, PLACE_C_CPU_MEM, node, t->cpus - st->cpus_used);
		return PLACE_C_CPU_MEM;
	}
	return PLACE_C_NONE;
}

/* Set bits of m, without the library call a build for any x86-64 makes of
 * __builtin_popcount. */
static inline int pop32(gpumask_t m)
{
	uint32_t x = (uint32_t)m;
	x = x - ((x >> 1) & 0x55555555u);
	x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
	x = (x + (x >> 4)) & 0x0f0f0f0fu;
	return (int)((x * 0x01010101u) >> 24);
}

/* One node of a small group whose nodes are all in service with every GPU
 * in service, whose free mask holds the request: CPU and memory decide. */
static void fit_stage(struct placer *p, struct ex_acc *a, const struct ex_group *eg, int node,
		      int cpu_cap, int64_t mem_cap)
{
	const struct pl_node *st = &p->nodes[node];
	if (eg->cpus > cpu_cap - st->cpus_used || eg->mem > mem_cap - st->mem_used) {
		int v = cpu_cap - st->cpus_used;
		if (a->best_node[PLACE_C_CPU_MEM] < 0 || v >= a->best_val[PLACE_C_CPU_MEM])
			note(a, p, PLACE_C_CPU_MEM, node, v);
		a->fail_at[PLACE_C_CPU_MEM]++;
	} else {
		a->fail_at[PLACE_C_GANG + 1]++;
	}
}

/* Whether g's positions are in name order: they go by price hint, then name,
 * so when the group has one price hint. */
static bool group_by_name(const struct placer *p, const struct pl_group *g)
{
	return p->f->nodes[g->nodes[0]].price_hint == p->f->nodes[g->nodes[g->n - 1]].price_hint;
}

/* The node of g first in name order. */
static int group_first_name(const struct placer *p, const struct pl_group *g)
{
	int b = g->nodes[0];
	if (group_by_name(p, g))
		return b;
	for (int pos = 1; pos < g->n; pos++)
		if (pl_name_cmp(p, g->nodes[pos], b) < 0)
			b = g->nodes[pos];
	return b;
}

/* node_stage_state() for every node of a small group passing the group's
 * checks, for whole-GPU, not exclusive requests (what gangs and most
 * single-node requests are): the same counts and notes. When no node of the
 * group is out of service in whole or part, by free mask (the index's
 * buckets): a mask that cannot hold the request fails all its nodes at once
 * and offers its first by name as the closest one (they are alike but for
 * their names), and only nodes that hold the request are visited; else node
 * by node. */
static void group_state_small(struct placer *p, struct ex_acc *a, const struct pl_group *g,
			      struct ex_group *eg)
{
	const struct node_type *t = &p->f->types[g->type];
	struct ptab *pt = p->ptabs[g->type];
	int ngpus = t->ngpus, k = a->k, cpu_cap = t->cpus, min_bw = a->c->req->min_bw_gbps;
	int64_t mem_cap = (int64_t)t->mem_gib * 1024;
	if (g->nsick == 0) {
		bool by_name = group_by_name(p, g);
		/* The masks some node has, in order. */
		for (int wi = 0; wi < PL_SMALL_MASKS / 64; wi++) {
			for (uint64_t nz = g->nzb[wi]; nz; nz &= nz - 1) {
				gpumask_t m = (gpumask_t)(wi * 64 + __builtin_ctzll(nz));
				int8_t has = eg->memo[m];
				if (has < 0) {
					struct node_pick pk;
					has = ptab_best(pt, m, k, &pk) &&
					      pk.q.bottleneck_gbps >= min_bw;
					eg->memo[m] = has;
				}
				int v = pop32(m);
				const uint64_t *w = &g->bits[(size_t)m * (size_t)g->nwords];
				int b = a->best_node[PLACE_C_FREE];
				if (!has) {
					a->fail_at[PLACE_C_FREE] += g->count[m];
					if (b >= 0 && v < a->best_val[PLACE_C_FREE])
						continue;
					if (by_name) {
						int pos = pl_next_pos(w, g->nwords, 0);
						note(a, p, PLACE_C_FREE, g->nodes[pos], v);
						continue;
					}
				}
				for (int j = 0; j < g->nwords; j++)
					for (uint64_t x = w[j]; x; x &= x - 1) {
						int node = g->nodes[j * 64 + __builtin_ctzll(x)];
						if (has)
							fit_stage(p, a, eg, node, cpu_cap, mem_cap);
						else
							note(a, p, PLACE_C_FREE, node, v);
					}
			}
		}
		return;
	}
	for (int pos = 0; pos < g->n; pos++) {
		int node = g->nodes[pos];
		const struct pl_node *st = &p->nodes[node];
		if (!st->usable || (st->bad && ngpus - pop32(st->bad) < k)) {
			a->fail_at[PLACE_C_HEALTH]++;
			continue;
		}
		gpumask_t free = st->imask; /* == pl_free_mask() */
		int8_t has = eg->memo[free];
		if (has < 0) {
			struct node_pick pk;
			has = ptab_best(pt, free, k, &pk) && pk.q.bottleneck_gbps >= min_bw;
			eg->memo[free] = has;
		}
		if (has) {
			fit_stage(p, a, eg, node, cpu_cap, mem_cap);
			continue;
		}
		int v = pop32(free);
		if (a->best_node[PLACE_C_FREE] < 0 || v >= a->best_val[PLACE_C_FREE])
			note(a, p, PLACE_C_FREE, node, v);
		a->fail_at[PLACE_C_FREE]++;
	}
}

/* ---- sentences ----------------------------------------------------------- */

static void models_text(const struct place_request *r, char *buf, size_t n, const char *sep)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int i = 0; i < r->nmodels && len < n; i++) {
		int w = snprintf(buf + len, n - len, "%s%s", i ? sep : "", r->models[i]);
		if (w < 0)
			break;
		len += (size_t)w;
	}
}

static void scope_text(const struct pl_ctx *c, char *buf, size_t n)
{
	const struct place_request *r = c->req;
	int w = 0;
	buf[0] = '\0';
	if (r->site)
		w = snprintf(buf, n, " at site %s", r->site);
	else if (r->region)
		w = snprintf(buf, n, " in region %s", r->region);
	if (w >= 0 && (size_t)w < n && r->pool_owned)
		snprintf(buf + w, n - (size_t)w, " owned by %s", r->tenant ? r->tenant : "(nobody)");
}

/* Distinct region or site names of nodes that fell at stage, listed (stages
 * per index group: region and site are checked per group). */
static void places_text(const struct placer *p, const struct ex_acc *a, int stage,
			const int *stages, bool regions, char *buf, size_t n)
{
	const char *seen[EX_LIST];
	int ns = 0;
	size_t len = 0;
	buf[0] = '\0';
	for (int i = 0; i < p->f->nnodes; i++) {
		if (stages[p->nodes[i].group] != stage)
			continue;
		const struct fleet_site *s = &p->f->sites[p->f->nodes[i].site];
		const char *name = regions ? s->region : s->name;
		bool dup = false;
		for (int j = 0; j < ns; j++)
			dup |= !strcmp(seen[j], name);
		if (dup)
			continue;
		if (ns == EX_LIST) {
			snprintf(buf + len, n - len, ", ...");
			return;
		}
		seen[ns++] = name;
		int w = snprintf(buf + len, n - len, "%s%s", ns > 1 ? ", " : "", name);
		if (w < 0 || (size_t)w >= n - len)
			return;
		len += (size_t)w;
	}
	(void)a;
}

static void why_text(struct placer *p, struct ex_acc *a, int stage, const int *stages,
		     struct placement *out)
{
	const struct place_request *r = a->c->req;
	char models[160], mslash[160], scope[160], list[160];
	models_text(r, models, sizeof(models), ", ");
	models_text(r, mslash, sizeof(mslash), "/");
	scope_text(a->c, scope, sizeof(scope));
	int b = a->best_node[stage];
	const char *bname = b >= 0 ? p->f->nodes[b].name : "";
	const char *btype = b >= 0 ? fleet_node_type(p->f, b)->name : "";
	long long bv = (long long)a->best_val[stage];
	char *w = out->why;
	size_t wn = sizeof(out->why);
	char need[64];
	if (a->n > 1)
		snprintf(need, sizeof(need), "%d nodes", a->n);
	else
		snprintf(need, sizeof(need), "a node");
	const char *space = r->nmodels ? " " : "";
	switch (stage) {
	case PLACE_C_REQUEST:
		snprintf(w, wn, "no node accepts GPU shares (no shareable node)");
		break;
	case PLACE_C_MODEL: /* shares reach this stage only on shareable nodes */
		snprintf(w, wn, "no %snode has a GPU model among [%s]", r->gpu_milli ? "shareable " : "",
			 models);
		break;
	case PLACE_C_MEMORY:
		snprintf(w, wn, "no model among [%s] has >= %d GiB memory (%s has %lld)",
			 r->nmodels ? models : "any", r->min_mem_gib,
			 b >= 0 ? fleet_node_type(p->f, b)->gpu->name : "none", bv);
		break;
	case PLACE_C_REGION:
		places_text(p, a, stage, stages, true, list, sizeof(list));
		snprintf(w, wn, "no %s%snode in region %s; such nodes are in: %s", mslash,
			 space, r->region, list);
		break;
	case PLACE_C_SITE:
		places_text(p, a, stage, stages, false, list, sizeof(list));
		snprintf(w, wn, "no %s%snode at site %s%s%s; such nodes are at: %s", mslash,
			 space, r->site, r->region ? " in region " : "",
			 r->region ? r->region : "", list);
		break;
	case PLACE_C_OWNER:
		if (r->pool_owned)
			snprintf(w, wn, "tenant %s owns no matching node",
				 r->tenant ? r->tenant : "(nobody)");
		else
			snprintf(w, wn, "every matching node%s is owned by another tenant",
				 scope);
		break;
	case PLACE_C_SIZE:
		snprintf(w, wn, "no node%s has %d GPUs; largest: %s with %lld", scope, a->k,
			 btype, bv);
		break;
	case PLACE_C_BANDWIDTH:
		snprintf(w, wn, "no node type%s gives %d GPUs >= %d GB/s bottleneck; "
			 "best: %s gives %lld", scope, a->k, r->min_bw_gbps, btype, bv);
		break;
	case PLACE_C_HEALTH:
		snprintf(w, wn, "the %d matching node(s)%s are out of service or lack %d "
			 "in-service GPUs", a->fail_at[PLACE_C_HEALTH], scope, a->k);
		break;
	case PLACE_C_FREE:
		if (a->c->share)
			snprintf(w, wn, "no GPU%s has %d free thousandths; closest: %s GPU %d "
				 "with %lld", scope, r->gpu_milli, bname, a->best_gpu, bv);
		else if (r->exclusive)
			snprintf(w, wn, "%s%s needs %s with every GPU free; closest: %s with "
				 "%lld of %d free", a->n > 1 ? "gang" : "request", scope, need,
				 bname, bv, b >= 0 ? fleet_node_type(p->f, b)->ngpus : 0);
		else if (a->n > 1)
			snprintf(w, wn, "gang needs %d nodes%s with %d free %s%sGPUs; %d have "
				 "them; closest other: %s with %lld free", a->n, scope, a->k,
				 mslash, space,
				 a->fail_at[PLACE_C_CPU_MEM] + a->fail_at[PLACE_C_GANG + 1],
				 b >= 0 ? bname : "none", bv);
		else
			snprintf(w, wn, "no node%s has %d free %s%sGPUs%s; closest: %s with %lld "
				 "free", scope, a->k, mslash, space,
				 r->min_bw_gbps ? " at the bandwidth asked" : "",
				 b >= 0 ? bname : "none", bv);
		break;
	case PLACE_C_CPU_MEM:
		snprintf(w, wn, "no node%s with the free GPUs also has %d CPUs and %" PRId64
			 " MiB free (0 = its per-GPU share); most free CPUs: %s with %lld",
			 scope, r->cpus, r->mem_mib, bname, bv);
		break;
	default:
		break;
	}
}

enum sl_err pl_explain(struct placer *p, const struct pl_ctx *c, int per_node, int nnodes,
		       const char *gang_why, struct placement *out)
{
	if (c->quiet) {
		out->failed = PLACE_C_NONE;
		out->why[0] = '\0';
		return SL_ENOSPACE;
	}
	struct ex_acc a;
	memset(&a, 0, sizeof(a));
	a.c = c;
	a.k = per_node > 0 ? per_node : 1;
	a.n = nnodes > 0 ? nnodes : 1;
	a.best_gpu = -1;
	a.rsite = -1;
	for (int i = 0; i < PLACE_C_GANG + 2; i++)
		a.best_node[i] = -1;
	/* PLACE_C_NONE (0) stands for "passes everything": store it past GANG.
	 * Group by group: the checks before a node's state are the group's, and
	 * the closest nodes noted are the best by value then name whatever the
	 * order of the visit, so the sentence is the one a node-by-node scan
	 * writes. */
	int *stages = p->units; /* per group; nunits >= nnodes >= ngroups */
	struct ex_group eg;
	for (int gi = 0; gi < p->ngroups; gi++) {
		const struct pl_group *g = &p->groups[gi];
		if (g->n == 0)
			continue;
		int gs = node_stage_static(p, &a, g->nodes[0], false);
		stages[gi] = gs == PLACE_C_NONE ? PLACE_C_GANG + 1 : gs;
		if (gs != PLACE_C_NONE) {
			/* The stage and its noted value are the group's: only the
			 * first node by name can be the closest. */
			if (gs == PLACE_C_MEMORY || gs == PLACE_C_SIZE || gs == PLACE_C_BANDWIDTH)
				(void)node_stage_static(p, &a, group_first_name(p, g), true);
			a.fail_at[gs] += g->n;
			continue;
		}
		ex_group_init(p, &a, g->nodes[0], &eg);
		if (eg.memo_ok && g->small && !c->share && !c->req->exclusive) {
			group_state_small(p, &a, g, &eg);
			continue;
		}
		for (int pos = 0; pos < g->n; pos++) {
			int s = node_stage_state(p, &a, g->nodes[pos], &eg);
			a.fail_at[s == PLACE_C_NONE ? PLACE_C_GANG + 1 : s]++;
		}
	}
	out->npicks = 0;
	int alive = p->f->nnodes;
	if (alive < a.n) {
		out->failed = PLACE_C_GANG;
		snprintf(out->why, sizeof(out->why), "gang needs %d nodes; the fleet has %d",
			 a.n, alive);
		return SL_ENOSPACE;
	}
	for (int s = PLACE_C_REQUEST; s <= PLACE_C_CPU_MEM; s++) {
		alive -= a.fail_at[s];
		if (alive < a.n) {
			out->failed = (enum place_constraint)s;
			why_text(p, &a, s, stages, out);
			return SL_ENOSPACE;
		}
	}
	out->failed = PLACE_C_GANG;
	snprintf(out->why, sizeof(out->why), "%s",
		 gang_why ? gang_why : "no node set satisfies the request as a whole");
	return SL_ENOSPACE;
}

/* place_internal.h - what the placer's files (place.c, place_index.c,
 * place_gang.c, place_explain.c) share; nothing outside src/core/place*.c
 * includes it.
 *
 * The placer keeps per-node state in a flat array and indexes nodes in groups
 * of identical placement relevance: (site, owner, type, shareable, price hint).
 * Two nodes of one group differ only by their free GPUs and their name, so a
 * group can answer "the first node by name whose free mask is m" with a bitset
 * per free mask (types of at most PTAB_EAGER_GPUS GPUs), and the request only
 * has to visit groups, not nodes. */
#ifndef SL_PLACE_INTERNAL_H
#define SL_PLACE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "place.h"

#define PL_SMALL_MASKS 256 /* free masks of a type of <= PTAB_EAGER_GPUS GPUs */
#define PL_MILLI 1000      /* a whole GPU in thousandths */

struct pl_node {
	uint16_t used[TOPO_MAX_GPUS]; /* thousandths in use per GPU */
	gpumask_t shared;  /* GPUs used by shares (0 < used, possibly 1000) */
	gpumask_t bad;     /* GPUs out of service */
	gpumask_t imask;   /* the free mask the index currently files it under */
	int cpus_used;
	int64_t mem_used;
	bool usable;
	int owner;         /* owner for placement: the fleet's, or a dynamic pool's
			      (placer_set_pool) */
	int group, gpos;   /* its group and position (name order) inside it */
	int partial_pos;   /* index in placer.partial, or -1 */
	bool sick;         /* counted in its group's nsick (!usable or a bad GPU) */
};

/* Distinct free masks of a group of a large type (> PTAB_EAGER_GPUS GPUs). */
struct pl_mask_count {
	gpumask_t mask;
	int count;
};

struct pl_group {
	int site, owner, type;
	bool shareable;
	int n;           /* nodes */
	int *nodes;      /* node indices, sorted by (price hint, name) */
	int *run_end;    /* per position: the first position after its run of
			    one leaf's nodes (place_leaf.c skips runs) */
	int nsick;       /* nodes out of service or with a GPU out of service */
	bool small;      /* type has <= PTAB_EAGER_GPUS GPUs: bucket index */
	int nwords;      /* 64-bit words per bucket bitset */
	uint64_t *bits;  /* small: [PL_SMALL_MASKS][nwords] group positions */
	uint64_t *sbits; /* small: [nwords] the positions whose node has shares */
	uint64_t *cbits; /* small: [nwords] the positions whose node has CPUs or
			    memory in use (only those can lack what a request asks) */
	int *count;      /* small: [PL_SMALL_MASKS] nodes per free mask */
	uint64_t nzb[PL_SMALL_MASKS / 64]; /* small: the masks with count > 0 */
	struct pl_mask_count *masks; /* large: non-empty masks, unordered */
	int nmasks;      /* large: distinct masks kept (room for n) */
	struct pl_mask_eval *eval;   /* large: scratch, n entries */
};

/* A large group's free mask judged for one request size. */
struct pl_mask_eval {
	gpumask_t mask;
	int pop;
	struct node_pick pick;
};

struct placer {
	const struct fleet *f;
	int nnodes, ntypes;       /* the fleet's counts the arrays are sized for
				     (placer_nodes_added grows them) */
	struct ptab **ptabs;      /* per fleet type; NULL when no node has it */
	struct pl_node *nodes;
	int *name_rank;           /* [nnodes] each node's place in name order, so
				     that ties are broken without reading names
				     (pl_name_cmp) */
	int name_last;            /* the node with the greatest name */
	struct pl_group *groups;
	int ngroups;
	int *partial;             /* nodes with a GPU partly used by shares */
	int npartial;
	/* Tenants named by dynamic pools that own no node in the fleet file; their
	 * owner index is f->nowners + position. Names are kept until placer_free. */
	char **pool_names;
	int npool_names, cap_pool_names;
	/* Per-request scratch, sized once. */
	bool *type_ok;            /* [ntypes] model and memory constraints pass */
	bool *group_ok;           /* [ngroups] static constraints pass */
	int nunits;               /* nleaves + ndomains + nnodes */
	int *unit_count;          /* [nunits] zero between uses */
	int *units;               /* [nunits] units touched */
	int *set_count;           /* [1 << TOPO_MAX_GPUS] gang scratch, lazy */
	struct pl_gcand *cand;    /* [nnodes] gang candidates, lazy (place_gang.c) */
	int *unit_whole;          /* [nunits] gang scratch, lazy, zero between uses */
	struct pl_unit_stat *ustat; /* [nunits] gang scratch, lazy */
	struct pl_gbucket *gbk;   /* [nnodes] gang buckets not gathered, lazy */
	int *leaf_rank;           /* [nleaves] each leaf's place in name order, lazy */
	struct pl_tiers **tiers;  /* [ntypes * (TOPO_MAX_GPUS + 1)] best fit's tiers of
				     each small type and size as mask sets, lazily
				     (place_index.c) */
	struct pl_frag *frag;     /* fragmentation-aware policy (place_frag.c) or NULL */
	struct pl_leaf *leaf;     /* whole nodes per leaf (place_leaf.c) */
	bool leaf_off;            /* placer_set_leaf_term(p, false) */
};

/* A node that can take a request, with the set it would get. */
struct pl_cand {
	int node;
	struct node_pick pick;
	int freecnt;   /* free GPUs before the pick */
	int64_t price;
};

/* A request after validation, with its constraints resolved to indices. */
struct pl_ctx {
	const struct place_request *req;
	const char *region; /* NULL = any */
	int site;           /* -1 = any */
	int tenant_owner;   /* owner index of req->tenant, or -1 */
	bool share;         /* gpu_milli request */
	int k;              /* GPUs per node (single: gpus; share: 1) */
	bool quiet;         /* placer_place_quiet: refuse without explaining */
	int maxg;           /* the most GPUs a node of an eligible group has */
};

/* place.c */
int pl_free_mask(const struct placer *p, int node);
/* Owner index of tenant (fleet owners, then dynamic pool names), or -1. */
int pl_owner_find(const struct placer *p, const char *tenant);
bool pl_owner_ok(const struct pl_ctx *c, int owner);
/* CPUs and memory a pick of k GPUs (or milli thousandths of one when k == 0)
 * asks for on a node of type t. */
void pl_demand(const struct pl_ctx *c, const struct node_type *t, int k, int milli,
	       int *cpus, int64_t *mem);
bool pl_fits_cpu_mem(const struct placer *p, int node, int cpus, int64_t mem);
/* Grows *a from n_old to n_new entries of size sz (one spare), zeroing the
 * new ones; SL_ENOMEM leaves *a as it was. */
enum sl_err pl_grow_zero(void *a, int n_old, int n_new, size_t sz) SL_MUST_USE;
/* A name and what it names, for pl_rank_names. */
struct pl_named {
	const char *name;
	int i;
};
/* Sorts v[0..n) by name and sets rank[v[j].i] to each one's place. */
void pl_rank_names(struct pl_named *v, int n, int *rank);
/* Order of two such places (< 0: a first). */
static inline int pl_rank_cmp(int a, int b)
{
	return (a > b) - (a < b);
}
/* Name order of two nodes (< 0: a first), by their name_rank. */
static inline int pl_name_cmp(const struct placer *p, int a, int b)
{
	return pl_rank_cmp(p->name_rank[a], p->name_rank[b]);
}
/* The first position >= from set in a small group's bucket words w (nwords
 * of them), or -1. */
static inline int pl_next_pos(const uint64_t *w, int nwords, int from)
{
	int i = from / 64;
	if (i >= nwords)
		return -1;
	uint64_t x = w[i] & (~(uint64_t)0 << (from % 64));
	while (!x) {
		if (++i >= nwords)
			return -1;
		x = w[i];
	}
	return i * 64 + __builtin_ctzll(x);
}
/* Orders candidates for a single-node choice: < 0 when a is better. */
int pl_cand_cmp(const struct placer *p, const struct pl_cand *a, const struct pl_cand *b);
void pl_fill_score(struct placer *p, struct placement *out);
enum sl_err pl_add_pick(struct placement *out, const struct placer *p,
			const struct pl_ctx *c, int node, gpumask_t set, int gpu,
			int milli, const struct node_quality *q) SL_MUST_USE;

/* place_index.c */
enum sl_err pl_index_build(struct placer *p) SL_MUST_USE;
void pl_index_free(struct placer *p);
/* Rebuilds the groups after nodes changed owner; on SL_ENOMEM the old index
 * stays in place, unchanged. */
enum sl_err pl_index_rebuild(struct placer *p) SL_MUST_USE;
/* Refiles node after its state changed (never allocates: large groups
 * reserve one mask slot per node when built). */
void pl_index_update(struct placer *p, int node);
/* Files a node just added to the fleet at the end of its group when it sorts
 * last there (joins named in order); SL_ENOTFOUND when it does not, or has
 * no group yet (rebuild the index then), SL_ENOMEM. */
enum sl_err pl_index_append(struct placer *p, int node) SL_MUST_USE;
void pl_partial_update(struct placer *p, int node);
/* Best single node for k GPUs among groups with group_ok; false if none. */
bool pl_index_best(struct placer *p, const struct pl_ctx *c, int k,
		   struct pl_cand *best);
/* Group g's candidate at position pos: pick pk out of free mask free. */
void pl_make_cand(const struct placer *p, const struct pl_group *g, int pos,
		  const struct node_pick *pk, gpumask_t free, struct pl_cand *out);
/* pl_index_best's answer inside group gi alone (group_ok and size unchecked):
 * a function of the group's nodes' state and the request, so callers may keep
 * it while no node of the group changes (place_frag.c does). */
bool pl_index_group_best(struct placer *p, const struct pl_ctx *c, int gi, int k,
			 struct pl_cand *out);
/* Best partly used GPU for a share; false if none. */
bool pl_share_best(struct placer *p, const struct pl_ctx *c, int *node, int *gpu);

/* place_gang.c */
enum sl_err pl_gang_place(struct placer *p, const struct pl_ctx *c, struct placement *out,
			  struct sl_diag *d) SL_MUST_USE;
void pl_gang_scratch_free(struct placer *p); /* made again when a gang needs it */

/* place_frag.c: the fragmentation-aware policy and CPU-only requests. */
/* True when the request goes to pl_frag_place: CPU-only requests always;
 * single-node and share requests while a workload is set. */
bool pl_frag_handles(const struct placer *p, const struct pl_ctx *c);
enum sl_err pl_frag_place(struct placer *p, const struct pl_ctx *c,
			  struct placement *out) SL_MUST_USE;
void pl_frag_node_changed(struct placer *p, int node);
void pl_frag_index_changed(struct placer *p); /* after pl_index_rebuild */
void pl_frag_free(struct placer *p);
/* Grows the per-node arrays from old_nn to p->f->nnodes nodes. */
enum sl_err pl_frag_nodes_added(struct placer *p, int old_nn) SL_MUST_USE;

/* place_leaf.c: the leaf term for single-node work (place.h). */
enum sl_err pl_leaf_build(struct placer *p) SL_MUST_USE; /* (re)counts from scratch */
void pl_leaf_free(struct placer *p);
void pl_leaf_node_changed(struct placer *p, int node);
/* A single whole-GPU pick on a whole node moves to the equal whole node whose
 * leaf has the fewest whole nodes; returns the whole nodes of the leaf it
 * spared (0: the pick stayed). */
int pl_leaf_refine(struct placer *p, struct placement *out);

/* place_explain.c: fills out->failed and out->why; returns SL_ENOSPACE. */
enum sl_err pl_explain(struct placer *p, const struct pl_ctx *c, int per_node, int nnodes,
		       const char *gang_why, struct placement *out);

#endif

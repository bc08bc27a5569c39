/* place_frag_int.h - what the fragmentation-aware policy's files share:
 * place_frag.c (the workload, F, node-by-node judging, the decision) and
 * place_fragtab.c (the per-mask ranked tables and the answers kept between
 * decisions). Nothing outside them includes it. */
#ifndef SL_PLACE_FRAG_INT_H
#define SL_PLACE_FRAG_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "place_frag.h"
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

struct pl_rtype {
	uint32_t stamp;
	int cpus;
	int64_t mem;
	bool fq_ok;
	struct node_quality fq;
};

#define PL_EAGER 4 /* share sizes judged ahead per type (pl_frag_judge_now) */
#define PL_EAGER_K 4 /* and whole sizes 1..PL_EAGER_K, on every type */

struct pl_frag {
	struct pl_shape *shapes;
	int nshapes;
	struct pl_fclass *cls;
	int ncls;
	struct pl_fold *fold; /* the shapes folded per type (place_fragf.c) */
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
	uint64_t tkey[PL_FTAB_CACHE]; /* tabs[i]'s shape (ftab_key), read in
					 one sweep, not through each table */
	int ntabs, next_evict;
	/* A version per index group, bumped whenever one of its nodes changes:
	 * a group's answer for a shape stays good while its version does, so a
	 * request recomputes only the groups the last claims touched. */
	uint32_t *gver;
	int ngver;
	/* The same per node (never 0), and, for nodes with shares under a pure
	 * workload, their judged candidate per request shape (lazily made). */
	uint32_t *nver;
	struct pl_ncache **ncache; /* [nncache] */
	int nncache;
	/* The ranked table of each type for the request being placed (NULL: not
	 * looked up yet); ftab_get's eviction clears an entry it frees. */
	struct pl_ftab **rtab;
	int ntypes;
	/* Per type, for the request being judged: its demand and the type's
	 * full quality for the request's size (valid while stamp == rstamp). */
	struct pl_rtype *rt;
	uint32_t rstamp;
	/* Per type, the workload's share sizes (the PL_EAGER heaviest) that
	 * its nodes with shares are judged for as soon as they change
	 * (pl_frag_judge_now), and their ranked tables (NULL: not looked up
	 * yet; ftab_get's eviction clears an entry it frees). */
	int *neager;                       /* [ntypes] */
	int (*emilli)[PL_EAGER];           /* [ntypes] */
	struct pl_ftab *(*etab)[PL_EAGER]; /* [ntypes] */
	/* Each index group's nodes with shares, packed (struct pl_pent): group
	 * g's are pv[pstart[g] .. pstart[g] + pcnt[g]), in no particular
	 * order, room for pcap[g] (its nodes, when shareable); ppos[node] is a
	 * node's entry, or -1. Kept as nodes change (pl_frag_node_changed), so
	 * that a decision reads its groups' nodes with shares one after
	 * the other instead of visiting each node's own state. plists false
	 * (out of memory, or a group out of room): not kept, p->partial is
	 * scanned; plists_again: made again at the next decision (nodes
	 * joined, so groups grew). */
	struct pl_pent *pv;
	struct pl_pshare *ps;      /* eager size i of pv[at]: ps[i * proom + at] */
	int64_t *pw;               /* k whole GPUs on pv[at]: F's growth,
				      pw[(k - 1) * proom + at] (PL_NO_WHOLE:
				      fewer than k GPUs free) */
	int proom;                 /* entries pv and each size of ps have */
	int *pstart, *pcnt, *pcap; /* [plist_ng] */
	int *ppos;                 /* [plist_nn] */
	int plist_nn, plist_ng;
	bool plists, plists_again;
	/* Best fit's answer per group and size, for the explanation (lazily
	 * made; [ngver * PL_BGC_N]: sizes 1..TOPO_MAX_GPUS, then shares in
	 * PL_SGC_SLOTS slots by size, whose demand differs from a GPU's). */
	struct pl_bcache *bgc;
	/* Per type and size k ([ntypes * PL_BGC_K], lazily): best fit's tier
	 * of each free mask of a small type (ptab_order), INT_MAX unranked. */
	int **btier;
	/* The same for shares (the fullest partly used GPU that fits), per
	 * group and PL_SGC_SLOTS slots by share size ([ngver * PL_SGC_SLOTS]). */
	struct pl_scache *sgc;
};

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

/* A node's judged candidate for one request shape (pure workloads): the
 * candidate node_cand gives with no bandwidth floor, valid while the node's
 * version is ver (0: empty). CPUs, memory and bandwidth are checked per
 * request; F's growth under a pure workload depends on neither. */
#define PL_NCACHE 8
struct pl_nslot {
	uint32_t ver;
	int k, milli;
	bool found;
	struct fcand cand;
};
struct pl_ncache {
	struct pl_nslot s[PL_NCACHE];
	int next;
};

/* Best fit's answer in one group for one request size (the explanation). */
#define PL_SGC_SLOTS 4 /* shares kept per group, by size (pl_scache, pl_bcache) */
#define PL_BGC_K (TOPO_MAX_GPUS + 1)
#define PL_BGC_N (PL_BGC_K + PL_SGC_SLOTS)
struct pl_bcache {
	uint32_t ver; /* the group's version when kept; 0: nothing kept */
	bool share;
	int min_bw, cpus;
	int64_t mem;
	bool found;
	struct pl_cand cand;
	int tier; /* cand's mask's tier (btier); INT_MAX none; -1 unknown */
};

/* A node with shares as its type's eager share sizes (emilli) saw it when
 * it last changed (pl_frag_judge_now): node_cand_kept's answer with no
 * bandwidth floor and no demand (F's growth under a pure workload does not
 * depend on either where the CPUs and memory fit), and the fullest shared
 * GPU with room (the explanation's best fit); for whole GPUs (1..PL_EAGER_K)
 * F's growth alone (pl_frag.pw), the rest being the ranked table's key for
 * the free mask kept in the entry. The entries (pl_pent) and each size's
 * answers (one array per size) are kept apart, so a decision reads one
 * cache line per node, in order. */
struct pl_pshare {
	struct node_leftover left;
	int64_t delta;
	int32_t free_after;
	int16_t srem;    /* sgpu's room */
	int8_t gpu;      /* the share's GPU; -1: the node cannot take it */
	int8_t sgpu;     /* the shared GPU with the least room >= milli (lowest
			    index among equals); -1: none */
};
struct pl_pent {
	int node;
	bool valid;   /* judged since the node last changed: the rest holds */
	int cpu_left;
	uint32_t ver; /* the node's version then (nver) */
	gpumask_t fm; /* its whole free GPUs then */
	int32_t total; /* its free thousandths then */
	int64_t mem_left, price;
};
#define PL_NO_WHOLE INT64_MAX

/* What judging a node gives for whole sizes 1..PL_EAGER_K beside its
 * shapes (pl_frag_judge_lev): F's growth per size, its free mask and
 * thousandths. Whole GPUs take the ranked table's set for the mask, so the
 * rest of a whole candidate is the table's key (pl_pent_whole). */
struct pl_jwhole {
	gpumask_t fm;
	int64_t total;
	int64_t delta[PL_EAGER_K]; /* PL_NO_WHOLE: fewer GPUs free */
};

/* Group gi's nodes with shares one by one: it = PL_PSTART to start; the
 * next node, or -1 after the last; *en its packed entry (NULL when the
 * lists are not kept; valid or not). */
#define PL_PSTART (-2)
static inline int pl_partial_next(const struct placer *p, int gi, int *it,
				  const struct pl_pent **en)
{
	const struct pl_frag *fr = p->frag;
	int i = *it == PL_PSTART ? 0 : *it + 1;
	if (fr->plists) {
		if (i >= fr->pcnt[gi])
			return -1;
		*it = i;
		*en = &fr->pv[fr->pstart[gi] + i];
		return (*en)->node;
	}
	*en = NULL;
	while (i < p->npartial && p->nodes[p->partial[i]].group != gi)
		i++;
	if (i >= p->npartial)
		return -1;
	*it = i;
	return p->partial[i];
}

/* place_fragf.c */
/* The workload's shapes folded per type, for pl_frag_of (NULL: out of
 * memory); made once fr's shapes and classes are. */
struct pl_fold *pl_fold_new(const struct pl_frag *fr, int ntypes);
void pl_fold_free(struct pl_fold *fo);
/* F of a node state: free thousandths per GPU, CPUs and memory left. */
int64_t pl_frag_of(const struct pl_frag *fr, int type, const int *fv, int ngpus,
		   int cpu_left, int64_t mem_left);

/* A node state's free GPUs as F sees them, per distinct milli of its type's
 * folded shapes (at most PL_FLEV of them, else not kept this way): how many
 * GPUs have that much free, and the free thousandths on the others. */
#define PL_FLEV 16
struct pl_flev {
	int n;
	int64_t total; /* free thousandths */
	int milli[PL_FLEV], cnt[PL_FLEV];
	int64_t small[PL_FLEV];
};
/* The levels of free vector fv on a node of type; false when the type's
 * shapes have more than PL_FLEV distinct millis. */
bool pl_flev_of(const struct pl_frag *fr, int type, const int *fv, int ngpus,
		struct pl_flev *out);
/* pl_frag_of (the same integer) of the state l describes after n of its
 * GPUs with v thousandths free went to v2 (n == 0: the state itself), with
 * cpu_left CPUs and mem_left MiB left. */
int64_t pl_frag_lev(const struct pl_frag *fr, int type, const struct pl_flev *l, int n, int v,
		    int v2, int cpu_left, int64_t mem_left);

/* place_frag.c */
/* Judges node for the request; false when it cannot take it. */
bool pl_frag_node_cand(struct placer *p, const struct pl_ctx *c, int node, struct fcand *out);
/* < 0 when a is the better candidate. */
int pl_fcand_cmp(const struct placer *p, const struct fcand *a, const struct fcand *b,
		 bool whole);

/* place_fragjudge.c */
/* node_cand's answers for node with no bandwidth floor for requests of the
 * shapes of tab[0..ntab) (the ranked tables of the node's type), through
 * F's levels: out[i] and found[i] (false: the node cannot take it). False
 * when the node is out of service or its type's shapes have too many
 * distinct millis for levels (node_cand then). The caller checked the
 * node's group, and that it has the CPUs and memory (cpus, mem: the
 * request's demand there). w (NULL: not wanted) gets the whole sizes'. */
bool pl_frag_judge_lev(struct placer *p, int node, const struct pl_ftab *const *tab, int ntab,
		       int cpus, int64_t mem, struct fcand *out, bool *found,
		       struct pl_jwhole *w);
/* node_cand under a pure workload, through the node's kept candidates (per
 * node version and request shape), judged through F's levels with tab (the
 * ranked table of the node's type for the request's shape) when not kept. */
bool pl_node_cand_kept(struct placer *p, const struct pl_ctx *c, int node,
		       const struct pl_ftab *tab, struct fcand *out);
/* pl_frag_node_cand(), under a pure workload with the ranked tables on
 * through the node's kept candidates where it holds shares, else through
 * the ranked table's key for its free mask. */
bool pl_frag_node_cand_kept(struct placer *p, const struct pl_ctx *c, int node,
			    struct fcand *out);
/* Node changed: when it holds shares, its candidates for the workload's
 * share sizes are judged and kept now (under a pure workload), so that
 * share decisions read them instead of judging it. */
void pl_frag_judge_now(struct placer *p, int node);
/* Type's eager share size index for milli, or -1. */
int pl_eager_index(const struct pl_frag *fr, int type, int milli);
/* The candidate entry en (answers s for an eager size) keeps, where the
 * request asks cpus and mem there and a bandwidth floor min_bw; q1 is the
 * type's full quality for one GPU. False when the node cannot take it. */
bool pl_pent_cand(const struct pl_pent *en, const struct pl_pshare *s, int cpus, int64_t mem,
		  int min_bw, const struct node_quality *q1, struct fcand *out);
/* Eager size i's answers for the packed entry at index at of pv (the
 * entries after it, of its group, follow). */
static inline struct pl_pshare *pl_pshare_at(const struct pl_frag *fr, int i, int at)
{
	return &fr->ps[(size_t)i * (size_t)fr->proom + (size_t)at];
}
static inline const struct pl_pshare *pl_pshare_of(const struct pl_frag *fr,
						   const struct pl_pent *en, int i)
{
	return pl_pshare_at(fr, i, (int)(en - fr->pv));
}
/* The candidate valid entry en keeps for k <= PL_EAGER_K whole GPUs (delta:
 * its pw), with key the ranked table's key for its free mask, where the
 * request asks cpus and mem there and a bandwidth floor min_bw. False when
 * the node cannot take it. */
bool pl_pent_whole(const struct pl_pent *en, const struct pl_fkey *key, int k, int64_t delta,
		   int cpus, int64_t mem, int min_bw, struct fcand *out);
static inline int64_t *pl_pwhole_at(const struct pl_frag *fr, int k, int at)
{
	return &fr->pw[(size_t)(k - 1) * (size_t)fr->proom + (size_t)at];
}
/* pl_node_cand_kept() for the node of valid entry en, in a group the
 * request may use: its state read from en. */
bool pl_pent_cand_kept(struct placer *p, const struct pl_ctx *c, const struct pl_pent *en,
		       const struct pl_ftab *tab, struct fcand *out);
/* The packed lists made again when nodes joined since (plists_again). */
void pl_plists_fresh(struct placer *p);

struct pl_scache {
	uint32_t ver; /* the group's version when kept; 0: nothing kept */
	int milli, min_bw, cpus;
	int64_t mem;
	int node, gpu, rem; /* node -1: none */
};

/* place_fragtab.c */
/* The ranked table of type for shape (k, milli), made when first asked
 * (NULL: out of memory); at most PL_FTAB_CACHE are kept. */
struct pl_ftab *pl_ftab_get(struct placer *p, int type, int k, int milli);
/* The request's demand on a node of type t and t's full quality for c->k
 * GPUs (the bound no set of a node of t beats), once per type and request:
 * pl_frag_begin() when a new request is judged. */
const struct pl_rtype *pl_rtype_make(struct placer *p, const struct pl_ctx *c, int type);

static inline const struct pl_rtype *pl_rtype_of(struct placer *p, const struct pl_ctx *c,
						 int type)
{
	const struct pl_rtype *r = &p->frag->rt[type];
	return r->stamp == p->frag->rstamp ? r : pl_rtype_make(p, c, type);
}

/* A new request is being judged: forget the last one's demand per type
 * (pl_rtype_of) and ranked table per type (rtab). Once per decision, at its
 * start (pl_frag_place): both depend on the request alone. */
static inline void pl_frag_begin(struct pl_frag *fr)
{
	if (++fr->rstamp == 0) {
		memset(fr->rt, 0, (size_t)fr->ntypes * sizeof(*fr->rt));
		fr->rstamp = 1;
	}
	memset(fr->rtab, 0, (size_t)fr->ntypes * sizeof(*fr->rtab));
}

/* The candidate a node without shares filed under free mask m gives (its
 * cpu_after left 0: under a pure workload no order reads it). */
void pl_fkey_cand(const struct placer *p, const struct pl_ftab *tab, gpumask_t m, int node,
		  struct fcand *out);
/* The pure workload's answer through the ranked tables; false when no node
 * can take the request, or when a table could not be built (*scan then says
 * to scan). */
bool pl_frag_fast(struct placer *p, const struct pl_ctx *c, struct fcand *best, bool *scan);
/* pl_share_best(p, c, node, gpu) with each group's answer kept while the
 * group is unchanged. */
bool pl_frag_share_best_kept(struct placer *p, const struct pl_ctx *c, int *node, int *gpu);
/* pl_index_best(p, c, k, best) with each group's answer kept while the group
 * is unchanged. */
/* Node changed, and its group gi's version went from old to now: the
 * ranked walks' answers kept for the group that the change leaves as they
 * are, or makes the node, are kept at now. */
void pl_frag_keep_node(struct placer *p, int node, int gi, uint32_t old, uint32_t now);
bool pl_frag_bestfit_kept(struct placer *p, const struct pl_ctx *c, int k,
			  struct pl_cand *best);

#endif

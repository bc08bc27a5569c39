/* place.h - placing requests on a fleet: the placer and its indexes.
 *
 * A placer borrows a fleet (which must outlive it and not change) and owns the
 * dynamic state: which GPUs (or thousandths of shared GPUs), CPUs and memory are
 * in use on each node, and which nodes are out of service. placer_place() only
 * decides; placer_claim() and placer_release() change the state. Decisions are
 * deterministic for a given state and request.
 *
 * Single-node requests: among eligible nodes, highest achievable quality (see
 * place_node.h), then best fit (fewest free GPUs left on the node), then the
 * better leftover shape, then lower price hint, then name. Indexes keep this
 * sub-linear in the number of nodes.
 *
 * Gangs (more GPUs than one node holds, or per_node given): all or nothing;
 * nodes that can give per_node GPUs at full quality; fewest NVLink domains for
 * models with multi-node domains (a gang that fits one domain stays in one),
 * then fewest leaf switches, then rail alignment (same local GPU indices on
 * every node), then best fit; between node types that tie so far, the one
 * where the gang fills its (last) leaf's free nodes exactly, then the one
 * with the most candidates (so gangs that could go to several types do not
 * drain the first by name while others stay whole). With one_leaf a gang that no single leaf can
 * hold is refused (it waits in a queue) instead of spanning leaves.
 *
 * The leaf term (frag's idea one level up): a whole node (in service, every
 * GPU free, nothing used) is what whole-node gang pieces need, and a gang
 * needs its nodes under one leaf. Single-node work that would take a whole
 * node takes, among the equal whole nodes (same type, free mask, price,
 * owner, site: same decision otherwise), one in the leaf with the fewest
 * whole nodes, so emptier leaves stay whole (place_leaf.c). A gang that fits
 * one leaf goes to the leaf where it breaks the fewest whole nodes (partly
 * used nodes taken first when it asks fewer GPUs per node than they hold),
 * then the best-fit leaf; a gang that must span leaves does the same for its
 * last leaf. score.leaf_kept says when the term changed the choice. */
#ifndef SL_PLACE_H
#define SL_PLACE_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "fleet.h"
#include "place_node.h"

#define PLACE_MAX_MODELS 8
#define PLACE_MAX_GPUS 100000 /* bound on GPUs in one request */

struct place_request {
	int gpus;         /* whole GPUs wanted (0 when gpu_milli is used) */
	int gpu_milli;    /* a share of one GPU, 1..999 thousandths; needs gpus == 0 */
	int per_node;     /* GPUs per node for a gang; 0 = infer */
	int nmodels;      /* 0 = any model */
	const char *models[PLACE_MAX_MODELS]; /* model names (catalog or fleet_add_model), borrowed */
	int min_mem_gib;  /* per GPU */
	int min_bw_gbps;  /* bottleneck pairwise bandwidth inside each node's set */
	const char *region; /* NULL = any, borrowed */
	const char *site;   /* NULL = any, borrowed */
	const char *tenant; /* who asks (NULL = nobody special): a colocated node
			       serves only its owner */
	int cpus;           /* per node, in the node type's unit; 0 = the node's share
			       per GPU */
	int cpu_milli;      /* per node, thousandths of a core; when > 0 it replaces
			       cpus: exact on node types counted in thousandths
			       (node_type.cpu_milli), rounded up to whole cores on
			       the others */
	int64_t mem_mib;    /* per node; 0 = the node's share per GPU */
	/* the flags last, so the request (kept per lease) has no holes */
	bool pool_owned;    /* place only on nodes the tenant owns */
	bool exclusive;     /* whole nodes: every GPU of each chosen node is taken */
	bool one_leaf;      /* a gang must sit under one leaf switch (Slurm's
			       --switches=1); refused rather than spread */
	bool exact_cpu_mem; /* cpus and mem_mib are exactly what is asked, 0 = none
			       (no per-GPU share); a request may then ask for no GPUs
			       at all: CPU and memory on one node (place_frag.h) */
};

/* One node's part of a placement. */
struct place_pick {
	int node;
	gpumask_t gpus;   /* whole GPUs taken */
	int gpu;          /* for a shared pick: the GPU index, else -1 */
	int milli;        /* for a shared pick: thousandths taken, else 0 */
	int cpus;
	int64_t mem_mib;
	struct node_quality q; /* of gpus on this node */
};

/* Which constraint a refusal ran into, in the order they are checked. */
#define PLACE_CONSTRAINTS(X)                                  \
	X(PLACE_C_NONE, "none")                               \
	X(PLACE_C_REQUEST, "request")                         \
	X(PLACE_C_MODEL, "model")                             \
	X(PLACE_C_MEMORY, "memory")                           \
	X(PLACE_C_REGION, "region")                           \
	X(PLACE_C_SITE, "site")                               \
	X(PLACE_C_OWNER, "owner")                             \
	X(PLACE_C_SIZE, "node-size")                          \
	X(PLACE_C_BANDWIDTH, "bandwidth")                     \
	X(PLACE_C_HEALTH, "in-service")                       \
	X(PLACE_C_FREE, "free-gpus")                          \
	X(PLACE_C_CPU_MEM, "cpu-memory")                      \
	X(PLACE_C_GANG, "gang")

enum place_constraint {
#define PLACE_C_ENUM(name, str) name,
	PLACE_CONSTRAINTS(PLACE_C_ENUM)
#undef PLACE_C_ENUM
};
const char *place_constraint_name(enum place_constraint c);

struct place_score {
	int bottleneck_gbps; /* minimum over the picks */
	int total_gbps;      /* sum over the picks */
	int numa_spanned;    /* maximum over the picks */
	int nics;            /* sum over the picks */
	int free_after;      /* free GPUs left on the chosen nodes */
	int stranded_after;  /* of those, GPUs in no full-quality pair */
	int64_t price_hint;  /* of the first pick's node */
	int nodes, leaves, domains;
	bool rails_aligned;  /* every pick uses the same local GPU indices */
	bool full_quality;   /* every pick is at its type's full quality */
	/* Set when the fragmentation-aware policy chose (place_frag.h): how much
	 * the placement grows the fleet's expected fragmentation, in thousandths
	 * of a GPU that an average expected request could no longer use, and
	 * the same for the node plain best fit would have taken (equal to
	 * frag_milli, with bestfit_same, when best fit agrees). */
	bool frag, bestfit_same;
	int64_t frag_milli, bestfit_milli;
	/* Set (> 0) when the leaf term changed the choice (see above): for a
	 * single node, the whole nodes of the leaf it spared (plain choice's
	 * leaf); for a gang, how many fewer whole nodes it broke than the
	 * best-fit leaf would have. 0 when the term agreed. */
	int leaf_kept;
};

struct placement {
	int npicks;
	struct place_pick *picks; /* owned */
	int cap;
	struct place_score score;
	/* On refusal: the constraint that no candidate met, a sentence that says so
	 * and how close the best candidate came. */
	enum place_constraint failed;
	char why[512];
};

void placement_init(struct placement *pl);
void placement_release(struct placement *pl);
/* Copies src into dst (dst initialised). */
enum sl_err placement_copy(struct placement *dst, const struct placement *src) SL_MUST_USE;
/* Appends a pick (for callers that rebuild a placement from stored state). */
enum sl_err placement_add(struct placement *pl, const struct place_pick *pick) SL_MUST_USE;

/* A placement as a placed lease keeps it for its life: exactly its picks,
 * without struct placement's score and 512-byte refusal sentence. The
 * scheduler's leases keep theirs this way (100,000 of them in
 * bench/results/memory.md), and the controller's share the same array
 * (place_picks_copy_like; the controller keeps the score apart, interned:
 * lease.h); the placer gets place_picks_view(). Kept picks are counted
 * arrays that several holders may share: replace them through these
 * functions; edit them in place only after place_picks_own. */
struct place_picks {
	struct place_pick *picks; /* counted, npicks of them */
	int npicks, cap;
};
/* Copies src's picks into p; SL_ENOMEM leaves p unchanged. */
enum sl_err place_picks_copy(struct place_picks *p, const struct placement *src) SL_MUST_USE;
/* The same, but when like (may be NULL) holds the same picks as src, p
 * shares like's array instead of a copy of its own. */
enum sl_err place_picks_copy_like(struct place_picks *p, const struct placement *src,
				  const struct place_picks *like) SL_MUST_USE;
/* Moves src's picks into p (p's old picks are dropped; src is left empty,
 * initialised). SL_ENOMEM leaves both unchanged. */
enum sl_err place_picks_take(struct place_picks *p, struct placement *src) SL_MUST_USE;
/* Makes p's picks its own (a copy when shared), to edit them in place. */
enum sl_err place_picks_own(struct place_picks *p) SL_MUST_USE;
void place_picks_release(struct place_picks *p);
/* A struct placement (in tmp) that borrows p's picks, valid while p is
 * unchanged; its score is zero. */
static inline const struct placement *place_picks_view(const struct place_picks *p,
						       struct placement *tmp)
{
	tmp->npicks = p->npicks;
	tmp->picks = p->picks;
	tmp->cap = p->cap;
	tmp->score = (struct place_score){0};
	tmp->failed = PLACE_C_NONE;
	tmp->why[0] = '\0';
	return tmp;
}

struct placer;

enum sl_err placer_new(const struct fleet *f, struct placer **out) SL_MUST_USE;
void placer_free(struct placer *p);
/* The fleet gained nodes at its end (fleet_add_node on the placer's fleet, of
 * types the fleet already had): sizes the placer for them, usable and empty,
 * without touching the other nodes' state. Cost: a rebuild of the index (a
 * sort of the nodes' keys), not of the placer. SL_EINVAL when the fleet also
 * gained types or lost nodes (build a new placer then); on SL_ENOMEM the new
 * nodes may be half known: build a new placer. */
enum sl_err placer_nodes_added(struct placer *p) SL_MUST_USE;
const struct fleet *placer_fleet(const struct placer *p);

/* Decides where req goes without changing anything. SL_OK: out holds the
 * picks and score. SL_ENOSPACE: out->failed and out->why explain. SL_EINVAL:
 * the request itself is wrong (d says why). */
enum sl_err placer_place(struct placer *p, const struct place_request *req,
			 struct placement *out, struct sl_diag *d) SL_MUST_USE;
/* placer_place() without the refusal's explanation: on SL_ENOSPACE
 * out->failed is PLACE_C_NONE and out->why empty. Explaining scans every
 * node, so a scheduler that retries many waiting requests after each change
 * asks quietly and explains only when someone looks. Same decisions. */
enum sl_err placer_place_quiet(struct placer *p, const struct place_request *req,
			       struct placement *out, struct sl_diag *d) SL_MUST_USE;
/* Marks the picks' resources used. SL_ECONFLICT (and nothing changed) when any
 * of them is not free. */
enum sl_err placer_claim(struct placer *p, const struct placement *pl,
			 struct sl_diag *d) SL_MUST_USE;
/* Returns the picks' resources; SL_ECONFLICT (nothing changed) if they were
 * not all in use. */
enum sl_err placer_release(struct placer *p, const struct placement *pl,
			   struct sl_diag *d) SL_MUST_USE;

/* Takes a node out of service (drained, down) or back. Its used GPUs stay used. */
void placer_set_node_usable(struct placer *p, int node, bool usable);
bool placer_node_usable(const struct placer *p, int node);
/* Takes single GPUs out of service (unhealthy) or back. */
void placer_set_gpu_usable(struct placer *p, int node, int gpu, bool usable);

/* Dynamic pools (reservations): the nodes count as owned by tenant for
 * placement, exactly as colocated nodes of that tenant would, until set again
 * (tenant NULL: back to the fleet file's owner, usually the provider). Work
 * running on them stays. Changing owners rebuilds the fleet index (a sort of
 * the nodes), so set a reservation's nodes in one call. SL_EINVAL for a bad
 * node index or tenant name, SL_ENOMEM; on error nothing changed. */
enum sl_err placer_set_pool(struct placer *p, const int *nodes, int n, const char *tenant,
			    struct sl_diag *d) SL_MUST_USE;
enum sl_err placer_set_node_pool(struct placer *p, int node, const char *tenant,
				 struct sl_diag *d) SL_MUST_USE;
/* The tenant node counts as owned by for placement (its pool, else the fleet
 * file's owner); NULL for provider nodes. Borrowed, valid while p lives. */
const char *placer_node_owner(const struct placer *p, int node);

/* Whole GPUs of node that are free (not used, not shared, in service). */
gpumask_t placer_free_mask(const struct placer *p, int node);
/* Thousandths in use on a GPU (1000 = wholly used). */
int placer_gpu_used_milli(const struct placer *p, int node, int gpu);
int placer_cpus_used(const struct placer *p, int node);
int64_t placer_mem_used_mib(const struct placer *p, int node);
/* Whole nodes (in service, every GPU free, nothing used) under leaf. */
int placer_leaf_whole(const struct placer *p, int leaf);
/* Turns the leaf term off (plain best fit / frag, name order) or back on (the
 * default) - for comparisons. */
void placer_set_leaf_term(struct placer *p, bool on);
/* Free GPUs on the node that are in no full-quality pair among the free ones. */
int placer_node_stranded(struct placer *p, int node);

#endif

/* place_frag.h - fragmentation-aware placement and CPU-only requests.
 *
 * A placer can be told the workload it expects (classes of requests with how
 * often each arrives). It then places single-node requests and GPU shares to
 * keep the fleet able to serve that workload, after the "fragmentation
 * gradient descent" idea of Weng et al., "Beware of Fragmentation" (USENIX
 * ATC '23): the fragmentation of a node for a class is the free GPU capacity
 * (thousandths) the class could not use there -
 *   - all of it when the class cannot run on the node at all (model not
 *     allowed, not enough whole GPUs or no GPU with a big enough share left,
 *     not enough CPUs or memory left);
 *   - else the free thousandths on GPUs too small for it (a GPU with less than
 *     the class's share free; for whole-GPU classes every partly used GPU).
 * The node's fragmentation F is the weighted sum over classes, plus a balance
 * term of ours: the free thousandths the node could not fill even if every
 * future request had the workload's average CPUs and memory per GPU (free
 * capacity beyond what its CPUs or memory left can carry), weighted like one
 * class weight unit per thousandth times the total weight. FGD looks one
 * request ahead; the balance term sees CPUs and memory running out over many,
 * which on CPU-bound fleets (the Alibaba trace asks 14 cores per GPU while
 * most of its nodes hold 12) is where most stranded GPUs come from.
 * A request goes where F grows least (the "gradient"). Ties, in order: the
 * better GPU set quality (place_node.h; whole GPUs only; compared before F),
 * the node left with less free GPU capacity (best fit), then with more CPUs
 * left, then the better leftover shape, then price hint and name. Everything
 * but the balance term is integer arithmetic; the choice is deterministic.
 *
 * Cost: a request with a workload set visits every eligible node (O(nodes x
 * (classes + shapes x GPUs))) instead of the index walk of place.h, unless
 * the workload asks no CPUs or memory (placer_set_frag_index below). Then
 * each index group's answer (its nodes with shares included) and best fit's
 * per-group answer for the explanation are kept until one of the group's
 * nodes changes, so a decision costs about a walk over the groups plus the
 * groups the last claims and releases touched: on 10,000 nodes about what a
 * best-fit decision with its explanation costs (bench/results/place-frag.md).
 * Nodes holding shares are judged one by one; a claim or release that changes
 * one judges it then for the workload's heaviest share sizes (up to four per
 * type), so share decisions read those answers.
 * Gangs (more GPUs than a node, or per_node) and exclusive requests keep the
 * usual path.
 *
 * CPU-only requests (gpus == 0, gpu_milli == 0, exact_cpu_mem with CPUs or
 * memory) are always decided here: the node where F grows least when a
 * workload is set, else the node with the least free GPU capacity (keep GPU
 * nodes' CPUs for their GPUs), then more CPUs left, then name. */
#ifndef SL_PLACE_FRAG_H
#define SL_PLACE_FRAG_H

#include "place.h"

#define PLACE_MAX_CLASSES 65536 /* bound on workload classes */

/* One class of expected requests. cpus and mem_mib are exact (the units of the
 * node types: node_type.cpus and mem_gib x 1024). */
struct place_class {
	int gpus;       /* whole GPUs, 0..TOPO_MAX_GPUS (0 with gpu_milli or CPU-only) */
	int gpu_milli;  /* a share of one GPU, 0 or 1..999 (then gpus is 0 or 1) */
	int cpus;
	int64_t mem_mib;
	int nmodels;    /* 0 = any model */
	const char *models[PLACE_MAX_MODELS]; /* borrowed during the call only */
	int64_t weight; /* how often it arrives, 1..2^32 (counts) */
};

/* Sets the expected workload (copied) and turns the fragmentation-aware policy
 * on; n == 0 turns it off. SL_EINVAL (nothing changed) for a bad class or an
 * unknown model (d names the class), SL_ELIMIT past PLACE_MAX_CLASSES,
 * SL_ENOMEM. */
enum sl_err placer_set_workload(struct placer *p, const struct place_class *cls, int n,
				struct sl_diag *d) SL_MUST_USE;

/* Turns the balance term off or back on for the workload set now - off is
 * FGD's measure alone, for comparisons. placer_set_workload starts with it on;
 * without a workload this does nothing. Either way every value the policy
 * kept from the fleet's state is dropped and worked out again when next
 * needed (tests compare decisions with and without kept values this way). */
void placer_set_frag_balance(struct placer *p, bool on);

/* With a workload whose classes ask no CPUs or memory (as the controller's
 * learned one, place_wmodel.h), whole-GPU and share requests are judged per
 * free mask through ranked tables instead of node by node (same answers;
 * cost like the best-fit index). Ties then skip "more CPUs left", which such
 * a workload does not care about. Off: always scan - for tests and
 * benchmarks that compare the two. On by default. */
void placer_set_frag_index(struct placer *p, bool on);

/* The fragmentation (thousandths of a GPU, times class weights) of one node
 * for the workload set; 0 without one. For tests and reports. */
int64_t placer_node_frag(struct placer *p, int node);

#endif

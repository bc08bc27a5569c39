/* place_node.h - choosing GPUs inside one node.
 *
 * Quality of a GPU set S on a node type (compared in this order, higher wins):
 *   1. bottleneck: the smallest pairwise bandwidth inside S (for |S| = 1: the
 *      GPU's interconnect bandwidth, so all single GPUs tie);
 *   2. total: the sum of pairwise bandwidths inside S;
 *   3. affinity: fewer NUMA nodes spanned, then more distinct NIC rails reached.
 * A set that breaks a strict partition (Ascend 910 rings) is invalid.
 *
 * "Full quality" for size s is the best quality any s-set reaches on an empty
 * node of the type. The leftover score of the free GPUs R that a choice leaves
 * behind is, compared lexicographically (higher wins):
 *   cnt[0..2] = the most disjoint full-quality sets of size 8, 4 and 2 packable
 *               in R (sizes larger than the node are skipped),
 *   -stranded = minus the GPUs of R that are in no full-quality pair inside R.
 * The best set for (free, k) maximises (quality, leftover of free & ~set, then
 * the same score of the set itself, so that free pairs and halves are taken
 * whole rather than split when both leave equally good leftovers); remaining
 * ties go to the set with the lowest mask value, so results are deterministic.
 *
 * struct ptab precomputes and memoises these per node type. For types of up to
 * PTAB_EAGER_GPUS GPUs every (free mask, k) answer is computed at creation and
 * ptab_order() lists masks best-first for the fleet index; larger types are
 * answered lazily. */
#ifndef SL_PLACE_NODE_H
#define SL_PLACE_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "topo.h"

#define PTAB_EAGER_GPUS 8

struct node_quality {
	int bottleneck_gbps;
	int total_gbps;
	int numa_spanned;
	int nics;
};

struct node_leftover {
	int cnt[3];   /* full-quality sets of 8, 4, 2 that still fit */
	int stranded; /* free GPUs in no full-quality pair */
};

/* > 0 when a is better than b, < 0 when worse, 0 when equal. */
int node_quality_cmp(const struct node_quality *a, const struct node_quality *b);
int node_leftover_cmp(const struct node_leftover *a, const struct node_leftover *b);

/* The quality of set on type t, computed directly. Returns false when the set
 * is invalid on t (breaks a strict partition, or has GPUs beyond ngpus). */
bool node_set_quality(const struct node_type *t, gpumask_t set, struct node_quality *q);

struct ptab; /* per-type tables, opaque */

/* Builds the tables for t (t is copied). SL_ENOMEM, or SL_EINVAL for ngpus out
 * of 1..TOPO_MAX_GPUS. */
enum sl_err ptab_new(const struct node_type *t, struct ptab **out) SL_MUST_USE;
void ptab_free(struct ptab *p);
const struct node_type *ptab_type(const struct ptab *p);

struct node_pick {
	gpumask_t set;              /* the chosen GPUs */
	struct node_quality q;      /* quality of set */
	struct node_leftover left;  /* score of free & ~set */
	bool full_quality;          /* q equals the type's full quality for k */
};

/* Best k-set inside free (1 <= k <= ngpus; bits at or beyond ngpus are
 * ignored). Returns false when free cannot hold a valid k-set. out may be NULL.
 * Not const: may fill memo tables of large types (a 16-GPU type answers a new
 * (free, k) in well under a millisecond, a repeated one in O(1)). */
bool ptab_best(struct ptab *p, gpumask_t free, int k, struct node_pick *out);
/* The full quality for size k (the best on an empty node); false if none. */
bool ptab_full_quality(const struct ptab *p, int k, struct node_quality *q);
/* Leftover score of a free mask (bits beyond ngpus ignored). */
void ptab_leftover(struct ptab *p, gpumask_t free, struct node_leftover *out);

/* For types of at most PTAB_EAGER_GPUS GPUs: all free masks that can hold a
 * k-set, ordered best-first by (quality of their best k-set desc, popcount asc
 * i.e. best fit, leftover desc, mask asc). tier[i] numbers groups of equal
 * (quality, popcount, leftover): candidates from masks of one tier are equally
 * good for the fleet index, which then breaks ties by price and name. Tiers
 * start at 0 and grow by exactly 1 where the triple changes. Returns the count
 * (0 for larger types or impossible k); the arrays stay owned by p. */
int ptab_order(const struct ptab *p, int k, const gpumask_t **masks, const int **tier);

#endif

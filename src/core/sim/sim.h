/* sim.h - trace replays on the real placer: the saturation experiment of the
 * FGD paper and a time replay with a FIFO queue.
 *
 * Saturation (Weng et al., ATC '23, section 6): the pods in trace order, then
 * pods drawn uniformly at random (seeded) from the trace appended until the
 * total GPU request reaches inflate x the fleet's GPU capacity; each placed
 * with placer_place and claimed, none ever released; a pod that does not fit
 * fails and is dropped. After each pod, for every whole percent p (0..130) of
 * arrived GPU demand newly reached, alloc_at[p] records the GPU capacity then
 * allocated (thousandths of a GPU); the allocation ratio is alloc_at[p] /
 * capacity_milli. A pod whose gpu_spec names only models the fleet lacks,
 * or whose shape the fleet cannot take at all (placer_place says SL_EINVAL,
 * e.g. 3 GPUs over 2-GPU nodes), fails like one that does not fit; unknown
 * names beside known ones are ignored.
 *
 * Time replay: pods arrive at start, queue FIFO (the head blocks the rest),
 * start as soon as they fit, run duration seconds (forever when -1) and are
 * released. Pods that cannot fit even an empty fleet are counted and skipped.
 * The window reported, [t0, t1], runs from the first arrival to the last
 * arrival or start, whichever is later; p is left holding what still runs.
 * While the queue is non-empty its head fits no node, so every free GPU is
 * stranded: the report integrates that over time.
 *
 * Pure: no I/O or clocks; randomness from the given seed only. */
#ifndef SL_SIM_H
#define SL_SIM_H

#include <stdint.h>

#include "place.h"
#include "place_frag.h"
#include "sim_trace.h"

#define SIM_CURVE_POINTS 131 /* 0..130 percent */
#define SIM_MAX_INFLATE_PCT 1000
#define SIM_MAX_SAMPLES 100000 /* bound on a replay's time samples */

struct sim_sat_result {
	int64_t capacity_milli;
	int64_t alloc_at[SIM_CURVE_POINTS];
	int reached;          /* points recorded; later ones repeat the last */
	int pods;             /* pods offered (trace + sampled) */
	int failed;           /* pods that did not fit */
	int64_t failed_milli; /* their GPU demand */
	int64_t arrived_milli, alloc_milli;
};

/* The fleet's GPU capacity in thousandths (in-service nodes and GPUs). */
int64_t sim_capacity_milli(const struct placer *p);

/* Runs the saturation experiment on p (which should be empty; it is left
 * holding the claims). inflate_pct: e.g. 130. shuffle: offer the trace's pods
 * in a seeded random order instead of trace order (what the FGD artifact's
 * --shuffle-pod=true does for its published curves). SL_EINVAL for no pods or an
 * inflate outside 1..SIM_MAX_INFLATE_PCT, SL_ENOMEM; a pod the placer rejects
 * as invalid (unknown model) stops the run with SL_EINVAL naming it. */
enum sl_err sim_saturate(struct placer *p, const struct sim_pod *pods, int n, int inflate_pct,
			 uint64_t seed, bool shuffle, struct sim_sat_result *r, struct sl_diag *d) SL_MUST_USE;

/* The stream sim_saturate offers: indexes into pods, the trace's pods (in
 * trace order, or shuffled) and then the sampled ones, until the GPU demand
 * reaches inflate_pct of cap (thousandths of a GPU). It depends on the pods,
 * cap, inflate, seed and shuffle alone, never on placement, so a live run
 * (bench/openb_live.c) can send the same stream to a controller. *out is
 * malloc'd. SL_EINVAL (no pods, inflate out of range), SL_ENOMEM. */
enum sl_err sim_saturate_order(const struct sim_pod *pods, int n, int64_t cap, int inflate_pct,
			       uint64_t seed, bool shuffle, int **out, int *nout,
			       struct sl_diag *d) SL_MUST_USE;

/* The workload classes of a pod list for placer_set_workload: one per
 * distinct (GPUs, share, CPUs, memory, models), weighted by count. Models f
 * lacks are left out of a class; a class left with none is dropped (its pods
 * can never run on f). *out is malloc'd (models point into pods). */
enum sl_err sim_workload(const struct fleet *f, const struct sim_pod *pods, int n,
			 struct place_class **out, int *nout, struct sl_diag *d) SL_MUST_USE;

struct sim_sample {
	int64_t t;
	int64_t alloc_milli;
	int queue;
};

struct sim_replay_result {
	int pods, started, never_started, unplaceable;
	double delay_mean;          /* seconds, over started pods; the median is the
				       lower one, p99 by nearest rank */
	int64_t delay_median, delay_p99, delay_max;
	double util_mean;           /* time-weighted allocated / capacity, 0..1 */
	double stranded_mean;       /* GPUs stranded, time-weighted over the replay */
	double stranded_max;
	int max_queue;
	int64_t t0, t1;             /* the window: first arrival, last arrival or start */
	int64_t capacity_milli;
	struct sim_sample *samples; /* malloc'd, nsamples evenly spaced over [t0, t1] */
	int nsamples;
};

/* progress (may be NULL) is called now and then with events done and total. */
typedef void (*sim_progress_fn)(void *arg, int64_t done, int64_t total);

/* Replays pods (start >= 0 needed) on p (empty). nsamples 2..SIM_MAX_SAMPLES.
 * SL_EINVAL for a pod without a start time (d names it), SL_ENOMEM. */
enum sl_err sim_replay(struct placer *p, const struct sim_pod *pods, int n, int nsamples,
		       sim_progress_fn progress, void *arg, struct sim_replay_result *r,
		       struct sl_diag *d) SL_MUST_USE;
void sim_replay_result_release(struct sim_replay_result *r);

#endif

/* place_wmodel.h - the workload a placer expects, learned from requests.
 *
 * The fragmentation-aware policy (place_frag.h) needs the request classes a
 * fleet will see and how often each comes. A controller learns them from its
 * own requests: a sliding window of the last `window` requests (GPUs per node,
 * share, allowed models, and the CPUs and memory of requests that state them
 * exactly), counted by class, plus a cold-start prior of
 * PLACE_WMODEL_PRIOR pseudo-requests (1, 2, 4 and 8 whole GPUs, 12:6:4:10)
 * that keeps a fresh controller placing sensibly and fades as the window fills.
 *
 * Determinism: the classes are a function of the window's contents alone
 * (sorted by class, not by arrival), and a controller refreshes the placer's
 * workload every PLACE_WMODEL_REFRESH observations (place_wmodel_observe says
 * when), so the same history gives the same placements. The window is saved
 * and restored as text (place_wmodel_encode/decode), oldest request first.
 *
 * Gangs are counted as their GPUs per node (a gang of 4 x 8 is an 8-GPU
 * class: it needs whole 8-GPU nodes); requests for more GPUs than a node of
 * the fleet holds count as the largest node. Requests that state their CPUs
 * and memory exactly (exact_cpu_mem or cpu_milli) bring them into their class,
 * so the policy sees CPUs and memory run out (its balance term, place_frag.h)
 * as the trace-fed `suanli sim` does; CPU-only requests count only then (they
 * strand no GPU but use the CPUs GPUs need). Others count as asking no CPUs
 * or memory. A class's CPUs go to the placer in thousandths when every node
 * type counts in thousandths (node_type.cpu_milli), else rounded up to whole
 * cores, as placement counts a request's. Pure: no I/O, no clock. */
#ifndef SL_PLACE_WMODEL_H
#define SL_PLACE_WMODEL_H

#include <stdbool.h>

#include "err.h"
#include "place.h"

#define PLACE_WMODEL_WINDOW 1024  /* default window (requests) */
#define PLACE_WMODEL_WINDOW_MAX 8192
#define PLACE_WMODEL_REFRESH 64   /* observations between workload refreshes */
#define PLACE_WMODEL_PRIOR 32     /* cold-start pseudo-requests */
#define PLACE_WMODEL_MODELS_LEN 64 /* bound on "model|model..." of one request */

struct place_wmodel;

/* window: 1..PLACE_WMODEL_WINDOW_MAX requests (0: the default). SL_EINVAL,
 * SL_ENOMEM. */
enum sl_err place_wmodel_new(int window, struct place_wmodel **out) SL_MUST_USE;
void place_wmodel_free(struct place_wmodel *m);

/* Counts one request (borrowed for the call). True when the placer's workload
 * should be refreshed now (every PLACE_WMODEL_REFRESH counted requests).
 * Requests without GPUs are not counted (false). */
bool place_wmodel_observe(struct place_wmodel *m, const struct place_request *r);

/* Requests in the window now, and counted in all. */
int place_wmodel_seen(const struct place_wmodel *m);
long long place_wmodel_total(const struct place_wmodel *m);

/* One learned class: its GPU shape and its weight in the model (window counts
 * plus the prior's). models is "a|b" or "" (any). */
struct place_wmodel_class {
	int gpus, gpu_milli;
	int cpu_milli;  /* exact requests' CPUs (thousandths) and memory; else 0 */
	int64_t mem_mib;
	char models[PLACE_WMODEL_MODELS_LEN];
	int64_t weight;
};
/* The classes, sorted by (gpus, gpu_milli, cpu_milli, mem_mib, models); *out is owned by m and
 * valid until the next observe or decode. */
int place_wmodel_classes(struct place_wmodel *m, const struct place_wmodel_class **out);

/* Sets the classes as p's workload (placer_set_workload), with models the
 * fleet does not know dropped (a class left with none is skipped) and GPUs
 * capped at the fleet's largest node. SL_ENOMEM; on error p is unchanged. */
enum sl_err place_wmodel_apply(struct place_wmodel *m, struct placer *p,
			       struct sl_diag *d) SL_MUST_USE;

/* The window as text into a malloc'd *out: "wmodel 2 WINDOW TOTAL\n" then a
 * line "GPUS MILLI CPU_MILLI MEM_MIB MODELS" per request, oldest first (MODELS
 * "-" for any). SL_ENOMEM. Decoding also takes version 1 ("GPUS MILLI
 * MODELS", no CPUs or memory). */
enum sl_err place_wmodel_encode(const struct place_wmodel *m, char **out) SL_MUST_USE;
/* Replaces m's window with text's (a window larger than m's keeps its newest
 * requests). SL_EPARSE (line named in d; m unchanged) for bad text. */
enum sl_err place_wmodel_decode(struct place_wmodel *m, const char *text,
				struct sl_diag *d) SL_MUST_USE;

#endif

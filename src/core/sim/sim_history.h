/* sim_history.h - a controller's lease history as replay pods.
 *
 * The text is the answer of GET /v1/placement/history (or a file of it):
 * {"fleet": "<fleet file>", "leases": [{"id", "gpus", "per_node", "models",
 * "submit_s", "start_s", "end_s", ...}], ...}. Each lease becomes a pod that
 * arrives at submit_s (relative to the first lease's) and runs end_s -
 * start_s once started; a live lease runs on (duration -1); a lease that
 * ended without ever starting is skipped (it never held GPUs). Pure. */
#ifndef SL_SIM_HISTORY_H
#define SL_SIM_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "sim_trace.h"

/* *pods (malloc'd, *n of them, oldest first) and *fleet (malloc'd fleet file
 * text, NULL when the history has none); *t0 the first submit instant
 * (seconds since the epoch). SL_EPARSE (d names the file and what) for text
 * that is not such a history, SL_ELIMIT past SIM_MAX_ROWS leases, SL_ENOMEM. */
enum sl_err sim_parse_history(const char *text, size_t len, const char *file,
			      struct sim_pod **pods, int *n, char **fleet, int64_t *t0,
			      int *skipped, struct sl_diag *d) SL_MUST_USE;

#endif

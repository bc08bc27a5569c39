/* ctl_workload.h - the controller's placement policy and its learned workload.
 *
 * With the `frag` policy (suanlid serve --placement frag, the default) the
 * placer places single-node requests and shares by fragmentation
 * (place_frag.h), for the workload learned from this controller's own
 * accepted lease requests (place_wmodel.h: a sliding window with a cold-start
 * prior). The window is saved in the store's meta table ("placement.workload")
 * once per loop turn that counted a request, in that turn's transaction (just
 * before its commit: a turn of many creates encodes it once), and read back at
 * start, so a restart places exactly as the running controller would have.
 * The placer's workload is refreshed at start, after every fleet change (a new
 * placer) and every PLACE_WMODEL_REFRESH requests. `bestfit` sets none. */
#ifndef SL_CTL_WORKLOAD_H
#define SL_CTL_WORKLOAD_H

#include <jansson.h>
#include <stdbool.h>

#include "err.h"
#include "place.h"

struct ctl;

/* "frag" or "bestfit" -> false/true in *bestfit; false for anything else. */
bool ctl_placement_parse(const char *name, bool *bestfit);
const char *ctl_placement_name(const struct ctl *c);

/* Sets c->placer's workload (reading the stored window the first time).
 * SL_ENOMEM; a stored window that does not parse is logged and replaced by
 * an empty one (the prior), never fatal. */
enum sl_err ctl_workload_apply(struct ctl *c, struct sl_diag *d) SL_MUST_USE;

/* Counts an accepted request, refreshes when due; the window is saved by
 * ctl_workload_save before the turn commits. */
void ctl_workload_observe(struct ctl *c, const struct place_request *pr);
/* Writes the window into the turn's transaction if a request was counted
 * since the last save (fatal on a failed write, as every store write). */
void ctl_workload_save(struct ctl *c);

/* The model as JSON for GET /v1/placement/workload and explanations:
 * {"policy","window","seen","total","classes":[{"gpus","gpu_milli","models","share"}]}.
 * NULL when out of memory. */
json_t *ctl_workload_json(struct ctl *c);

void ctl_workload_free(struct ctl *c);

#endif

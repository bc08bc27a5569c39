/* ctl_sched.h - the controller's side of the scheduler (ctl_sched.c): it
 * restores leases, quotas and reservations into core's scheduler and applies
 * the scheduler's events to leases (state, history, store). */
#ifndef SL_CTL_SCHED_H
#define SL_CTL_SCHED_H

#include <stdbool.h>

#include "err.h"

struct ctl;
struct ctl_lease;
struct ctl_resv;
struct ctl_tenant;

/* Creates the scheduler over the current placer: quotas, reservations, then
 * every pending and running lease restored as it was, and one tick. */
enum sl_err ctl_sched_start(struct ctl *c, struct sl_diag *d) SL_MUST_USE;
/* Frees it; running leases stay claimed on the placer until the next
 * ctl_sched_start() restores them. */
void ctl_sched_stop(struct ctl *c);
/* Applies the scheduler's events to leases (state, history, store). */
void ctl_sched_events(struct ctl *c);
/* After a scheduler call: SL_ENOMEM marks the turn fatal; events applied.
 * Returns e. */
enum sl_err ctl_sched_check(struct ctl *c, enum sl_err e, const char *what);
/* Submits lease l (SL_OK: started or queued, events applied). */
enum sl_err ctl_sched_submit(struct ctl *c, struct ctl_lease *l, struct sl_diag *d) SL_MUST_USE;
/* Starts lease l (pending, not yet known to the scheduler) now on placement
 * pl, which the caller chose (an instance pinned to its home nodes): claimed
 * and counted like any running lease, then started as a STARTED event
 * would (history, hooks, row). Quotas are not checked (sched_restore).
 * Errors: nothing changed. */
struct placement;
enum sl_err ctl_sched_place_now(struct ctl *c, struct ctl_lease *l, const struct placement *pl,
				struct sl_diag *d) SL_MUST_USE;
enum sl_err ctl_sched_tenant(struct ctl *c, const struct ctl_tenant *t, struct sl_diag *d) SL_MUST_USE;
enum sl_err ctl_sched_reserve(struct ctl *c, const struct ctl_resv *r, struct sl_diag *d) SL_MUST_USE;
/* Position and reason of a pending lease in the scheduler's queue. */
bool ctl_sched_queue_pos(struct ctl *c, const struct ctl_lease *l, int *pos, const char **reason);


#endif

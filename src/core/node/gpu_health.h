/* gpu_health.h - the per-GPU health policy of docs/agent-protocol.md, as a
 * pure state machine: XID events drain or fail a GPU, the agent's health check
 * re-qualifies a drained one, an operator's resume clears a failed one.
 *
 *   ok --transient XID--> draining --healthy report, no new XID--> ok
 *   any --XID outside the transient set, or the 3rd XID within 24 h--> failed
 *   failed --gpu_health_resume (operator)--> ok
 *
 * Pure: no I/O, clocks or globals; times are passed in (ns, wall clock). */
#ifndef SL_GPU_HEALTH_H
#define SL_GPU_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#define GPU_XID_REPEAT 3                            /* XIDs within the window that fail a GPU */
#define GPU_XID_WINDOW_NS (24LL * 3600 * 1000000000LL) /* the window */
#define GPU_XID_MAX_CODE 100000                     /* bound on an XID code from outside */

enum gpu_hstate { GPU_OK, GPU_DRAINING, GPU_FAILED };

struct gpu_health {
	enum gpu_hstate state;
	int64_t recent[GPU_XID_REPEAT]; /* times of the last XIDs, newest first; 0: none */
	int last_code;                  /* the last XID code, 0: none */
	int64_t last_ns;                /* when it happened */
	int64_t since_ns;               /* when state was entered */
	char reason[96];                /* why it is out ("" when ok) */
};

/* "ok", "draining", "failed"; gpu_hstate_parse returns -1 for other names. */
const char *gpu_hstate_name(enum gpu_hstate s);
int gpu_hstate_parse(const char *name);
/* True for the XIDs that a health check may clear (13, 31, 43, 45, 68, 69, 94). */
bool gpu_xid_transient(int code);

void gpu_health_init(struct gpu_health *g);
/* Applies one XID event (code > 0) seen at at_ns; returns the new state.
 * Events may arrive out of order; the window counts by their times. */
enum gpu_hstate gpu_health_xid(struct gpu_health *g, int code, int64_t at_ns);
/* A heartbeat's verdict on the GPU without a new XID: healthy re-qualifies a
 * draining GPU (-> ok); unhealthy drains an ok one ("health check failed").
 * A failed GPU stays failed. Returns the new state. */
enum gpu_hstate gpu_health_report(struct gpu_health *g, bool healthy, int64_t now_ns);
/* An operator resumed the node: a failed or draining GPU returns to ok and
 * its XID window starts empty (its history is kept by the caller). */
void gpu_health_resume(struct gpu_health *g, int64_t now_ns);

#endif

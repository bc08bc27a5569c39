/* health.h - per-GPU health for the heartbeat's "gpus" array
 * (docs/agent-protocol.md): temp_c, power_w, ecc_sbe, ecc_dbe, nvlink_up, the
 * XID events new since the previous sample, and "healthy", the agent's health
 * check that lets the controller re-qualify a drained GPU.
 *
 * Two sources: NVML (when discovery used NVML; nvml.h), or simulated
 * plausible values for simulated and nvidia-smi-parsed nodes. Both honour the
 * test and demo hooks in the state directory (docs/agent.md):
 *   STATE_DIR/inject/xid        lines "GPU CODE"; consumed (deleted) by the
 *                               next sample, reported as XIDs of those GPUs;
 *   STATE_DIR/inject/unhealthy  GPU indices (white space separated); those
 *                               GPUs fail the health check while listed.
 * healthy: NVML answered for the GPU (NVML mode), the GPU is not listed in
 * inject/unhealthy, and no XID arrived in this sample. */
#ifndef SL_AGENT_HEALTH_H
#define SL_AGENT_HEALTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "discovery.h"
#include "err.h"

/* Largest inject file read; larger ones are ignored with a warning. */
#define HEALTH_INJECT_MAX (64u << 10)
/* XIDs reported per GPU per sample; more are dropped with a warning. */
#define HEALTH_XID_MAX 16

struct health;

/* A sampler for the GPUs of disc (borrowed; must outlive it) with hooks under
 * state_dir (copied). use_nvml opens NVML (nvml_open); its failure is the
 * error (SL_ENOTFOUND, SL_EIO). SL_ENOMEM. */
enum sl_err health_new(const char *state_dir, const struct discovery *disc, bool use_nvml,
		       struct health **out, struct sl_diag *d) SL_MUST_USE;
void health_free(struct health *h);

/* One sample: the heartbeat's "gpus" array, a new reference (NULL on ENOMEM).
 * now_wall is the wall clock in seconds (XID "at" labels). Problems reading
 * NVML or the hooks are logged, never fatal. */
json_t *health_sample(struct health *h, int64_t now_wall);

#endif

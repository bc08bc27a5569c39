/* instances.h - instances (docs/instances.md, issue 14): the machine a
 * renter gets: one long-running container per node of a lease, from an image
 * of the catalog, with SSH, ports and a data disk kept across stop and start.
 *
 * The controller's side: the instance records and their state machine
 * (instance_sm.h), the lease each start places (pinned to the home nodes;
 * instance_place.c), what agents are told (the "instances" array of GET
 * /v1/agent/work) and what they report (the heartbeat's "instances"), the
 * meters of billing (GPU time from running to stop, no-GPU time, the data
 * disk; instance_billing.c), idle stop, balance stop and retention, the
 * migration relay (instance_migrate.c) and the users' SSH keys (ssh_keys.c).
 *
 * Private to src/ctl; loop thread only. State lives in struct ctl_instances
 * (owned by struct ctl) and in the store (STORE_INSTANCES, STORE_SSH_KEYS). */
#ifndef SL_CTL_INSTANCES_H
#define SL_CTL_INSTANCES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct ctl;
struct ctl_call;
struct ctl_lease;

#define INSTANCES_RETENTION_DEFAULT_S (15 * 86400) /* stopped, tenant below zero: released after */
#define INSTANCES_RETENTION_MAX_S (3650LL * 86400)

struct instances_opts {
	int64_t retention_s; /* 0: the default */
};

/* Reads instances and SSH keys from the store. Call after leases are loaded
 * and before billing starts (billing asks instances_own_lease). */
enum sl_err instances_start(struct ctl *c, const struct instances_opts *o,
			    struct sl_diag *d) SL_MUST_USE;
void instances_free(struct ctl *c);
/* Idle stop, --wait starts, retention, agents' silence; lowers
 * c->next_deadline. */
void instances_tick(struct ctl *c);

/* Whether lease l is an instance's (its GPU time is metered by the instance
 * from "running", not by the lease from "active"). */
bool instances_own_lease(const struct ctl *c, const struct ctl_lease *l);
/* A lease-change hook (lease.c): an instance whose lease ended stops. */
void instances_lease_changed(struct ctl *c, struct ctl_lease *l);
/* A heartbeat of node's agent: its "instances" reports and "gpus" (util). */
void instances_on_heartbeat(struct ctl *c, int node, const json_t *reports, const json_t *gpus);
/* The node's "instances" array of GET /v1/agent/work. New reference. */
json_t *instances_work_items(struct ctl *c, const char *node);
/* The tenant's balance ran out and its grace ended: its running instances
 * stop (never released; data kept). */
void instances_balance_stop(struct ctl *c, const char *tenant, const char *why);
/* What GET /v1/tenants/NAME/balance adds: {"instances": [...], "instances_fen_per_day",
 * "notice"}; NULL when the tenant has none. New reference. */
json_t *instances_balance_json(struct ctl *c, const char *tenant);
/* The instances' series of /metrics (instances_metrics.c). */
struct sl_buf;
void instances_metrics(struct ctl *c, struct sl_buf *b);
/* The lease a job inside instance id runs on (POST /v1/jobs {"instance"}):
 * into lease (n bytes). SL_ENOTFOUND for an instance the caller (tenant, NULL:
 * provider) cannot see, SL_ECONFLICT when it is not running with GPUs. */
enum sl_err instances_job_lease(struct ctl *c, const char *id, const char *tenant, char *lease,
				size_t n, struct sl_diag *d) SL_MUST_USE;
/* The tenant of instance id (audit), NULL when none. */
const char *instances_tenant(struct ctl *c, const char *id);

/* handlers (h_instances.c, ssh_keys.c, instance_migrate.c) */
void h_instance_create(struct ctl_call *c);
void h_instance_list(struct ctl_call *c);
void h_instance_show(struct ctl_call *c);
void h_instance_stop(struct ctl_call *c);
void h_instance_start(struct ctl_call *c);
void h_instance_release(struct ctl_call *c);
void h_instance_logs(struct ctl_call *c);
void h_ssh_key_add(struct ctl_call *c);
void h_ssh_key_list(struct ctl_call *c);
void h_ssh_key_remove(struct ctl_call *c);
void h_migration_put(struct ctl_call *c);
void h_migration_done(struct ctl_call *c);
void h_migration_get(struct ctl_call *c);

#endif

/* ctl_fleet.h - the fleet in the controller (h_fleet.c): replacing it,
 * every node's service state on the placer, and a node as callers see it. */
#ifndef SL_CTL_FLEET_H
#define SL_CTL_FLEET_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

struct ctl;

/* Replaces the fleet (text is the YAML). Validates that active leases keep
 * their nodes; on error nothing changes. */
enum sl_err ctl_fleet_replace(struct ctl *c, const char *text, size_t len, const char *file,
			      bool save, struct sl_diag *d) SL_MUST_USE;
/* Sets every node's service state on the placer: present (simulated until
 * agents exist) and not drained. */
void ctl_apply_usable(struct ctl *c);
/* Node's state name and free GPU count. */
const char *ctl_node_state(struct ctl *c, int node, const char **reason);
int ctl_node_free_gpus(struct ctl *c, int node);
/* True when the node is visible to a tenant-scoped caller of tenant (NULL: all). */
bool ctl_node_visible(struct ctl *c, int node, const char *tenant);

#endif

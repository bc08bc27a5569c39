/* tenants.h - tenants and their reservations: the records, their table
 * (the handle struct ctl_tenants, owned by struct ctl) and their JSON.
 *
 * Private to src/ctl; loop thread only. Tenants and reservations are never
 * removed, so an index is a stable handle. */
#ifndef SL_CTL_TENANTS_H
#define SL_CTL_TENANTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctl_limits.h"
#include "err.h"

struct strmap;
struct ctl;
struct ctl_call;

struct ctl_tenant {
	char name[CTL_NAME_MAX + 1];
	json_t *regions; /* array of strings */
	json_t *quotas;  /* object model -> integer */
	int64_t created_ns;
};

struct ctl_resv {
	char id[24];
	char tenant[CTL_NAME_MAX + 1];
	json_t *nodes; /* array of node names */
	int64_t start_ns, end_ns, created_ns;
};

/* The tenant and reservation tables (c->tenants). */
struct ctl_tenants {
	struct ctl_tenant *tenants;
	int ntenants, cap_tenants;
	struct strmap *tenant_by_name;
	struct ctl_resv *resvs;
	int nresvs, cap_resvs;
};

/* The tenant by name, NULL if none. */
struct ctl_tenant *ctl_tenant_find(struct ctl *c, const char *name);
/* Adds t to memory (index map included); SL_ENOMEM. */
enum sl_err ctl_tenant_add(struct ctl *c, const struct ctl_tenant *t) SL_MUST_USE;
/* The tenant as the API shows it; usage adds the GPUs its running leases
 * hold, by model. New reference. */
json_t *tenant_to_json(struct ctl *c, const struct ctl_tenant *t, bool usage);
enum sl_err tenant_from_json(const json_t *o, struct ctl_tenant *t, struct sl_diag *d) SL_MUST_USE;
json_t *resv_to_json(const struct ctl_resv *r);
enum sl_err resv_from_json(const json_t *o, struct ctl_resv *r, struct sl_diag *d) SL_MUST_USE;

#endif

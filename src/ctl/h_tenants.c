/* h_tenants.c - tenants: create, list, show.
 *
 * A tenant is a name, the regions its leases may use (empty: any) and quotas
 * per GPU model (absent model: no limit). Tenant-scoped callers see only their
 * own record; asking for another gets the same 404 as a tenant that does not
 * exist, so names cannot be probed. */
#include <stdio.h>
#include <string.h>

#include "catalog.h"
#include "ctl_int.h"
#include "log.h"

static bool check_regions(struct ctl_call *call, const json_t *regions)
{
	size_t i;
	const json_t *r;
	char msg[SL_DIAG_MSG];
	if (json_array_size(regions) > CTL_MAX_REGIONS) {
		snprintf(msg, sizeof(msg), "a tenant may list at most %d regions", CTL_MAX_REGIONS);
		ctl_answer_error(call, SL_ELIMIT, msg, NULL);
		return false;
	}
	json_array_foreach(regions, i, r) {
		const char *s = json_string_value(r);
		if (!s || !fleet_name_valid(s)) {
			ctl_answer_error(call, SL_EINVAL, "field 'regions' must be an array of region names",
					 "names are 1..63 characters of [A-Za-z0-9._-]");
			return false;
		}
		for (size_t k = 0; k < i; k++)
			if (!strcmp(s, json_string_value(json_array_get(regions, k)))) {
				snprintf(msg, sizeof(msg), "region '%s' is listed twice", s);
				ctl_answer_error(call, SL_EINVAL, msg, NULL);
				return false;
			}
	}
	return true;
}

static bool check_quotas(struct ctl_call *call, const json_t *quotas)
{
	const char *k;
	const json_t *v;
	char msg[SL_DIAG_MSG];
	if (json_object_size(quotas) > CTL_MAX_QUOTAS) {
		snprintf(msg, sizeof(msg), "a tenant may have at most %d quotas", CTL_MAX_QUOTAS);
		ctl_answer_error(call, SL_ELIMIT, msg, NULL);
		return false;
	}
	json_object_foreach((json_t *)quotas, k, v) {
		if (!catalog_gpu_find(k)) {
			snprintf(msg, sizeof(msg), "quota names unknown GPU model '%.64s'", k);
			char names[SL_DIAG_HINT - 16], hint[SL_DIAG_HINT];
			(void)catalog_gpu_names(names, sizeof(names));
			snprintf(hint, sizeof(hint), "known models: %s", names);
			ctl_answer_error(call, SL_EINVAL, msg, hint);
			return false;
		}
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > PLACE_MAX_GPUS) {
			snprintf(msg, sizeof(msg), "quota for '%s' must be an integer 0..%d", k,
				 PLACE_MAX_GPUS);
			ctl_answer_error(call, SL_EINVAL, msg, NULL);
			return false;
		}
	}
	return true;
}

void h_tenant_create(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {
		{"name", FT_STRING, true}, {"regions", FT_ARRAY, false}, {"quotas", FT_OBJECT, false}};
	struct ctl *c = call->ctl;
	char msg[SL_DIAG_MSG];
	if (!ctl_check_fields(call, call->body, fields, 3, "a tenant"))
		return;
	const char *name = json_string_value(json_object_get(call->body, "name"));
	json_t *regions = json_object_get(call->body, "regions");
	json_t *quotas = json_object_get(call->body, "quotas");
	if (!fleet_name_valid(name) || strlen(name) > CTL_NAME_MAX) {
		ctl_answer_error(call, SL_EINVAL, "field 'name' is not a valid tenant name",
				 "names are 1..63 characters of [A-Za-z0-9._-]");
		return;
	}
	if ((regions && !check_regions(call, regions)) || (quotas && !check_quotas(call, quotas)))
		return;
	if (ctl_tenant_find(c, name)) {
		snprintf(msg, sizeof(msg), "tenant '%s' already exists", name);
		ctl_answer_error(call, SL_EEXIST, msg, NULL);
		return;
	}
	struct ctl_tenant t;
	memset(&t, 0, sizeof(t));
	snprintf(t.name, sizeof(t.name), "%s", name);
	t.regions = regions ? json_incref(regions) : json_array();
	t.quotas = quotas ? json_incref(quotas) : json_object();
	t.created_ns = c->now_ns;
	if (!t.regions || !t.quotas || ctl_tenant_add(c, &t)) {
		json_decref(t.regions);
		json_decref(t.quotas);
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	const struct ctl_tenant *nt = ctl_tenant_find(c, name);
	struct sl_diag d;
	sl_diag_clear(&d);
	if (c->sched && ctl_sched_tenant(c, nt, &d)) {
		sl_log_error("scheduler refused quotas", "tenant=%s error=%s", name, d.msg);
		c->fatal = true; /* in memory already: the turn must not commit */
	}
	ctl_put(c, STORE_TENANTS, nt->name, nt->name, tenant_to_json(c, nt, false));
	sl_log_info("tenant created", "tenant=%s by=%s", name, call->tok->id);
	ctl_answer_json(call, 201, tenant_to_json(c, nt, false));
}

void h_tenant_list(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	json_t *a = json_array();
	for (int i = 0; a && i < c->tenants.ntenants; i++)
		json_array_append_new(a, tenant_to_json(c, &c->tenants.tenants[i], false));
	ctl_answer_json(call, 200, a);
}

void h_tenant_show(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	const char *own = ctl_call_tenant(call);
	const struct ctl_tenant *t = ctl_tenant_find(c, call->param[0]);
	if (!t || (own && strcmp(own, t->name))) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "no tenant called '%.64s'", call->param[0]);
		ctl_answer_error(call, SL_ENOTFOUND, msg, NULL);
		return;
	}
	ctl_answer_json(call, 200, tenant_to_json(c, t, true));
}

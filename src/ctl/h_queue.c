/* h_queue.c - the wait queue and reservations.
 *
 * The queue answer shows a tenant its own entries with their true positions,
 * so it learns how many wait ahead without learning who they are.
 * Reservations are checked here (nodes, window, overlap with another
 * tenant's) and then handed to the scheduler, which honours them through
 * placer pools while their window is open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ctl_int.h"
#include "log.h"

void h_queue(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	const char *own = ctl_call_tenant(call);
	const struct sched_queue_entry *q = NULL;
	int n = 0;
	if (c->sched && sched_queue(c->sched, &q, &n)) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	json_t *a = json_array();
	for (int i = 0; a && i < n; i++) {
		const struct ctl_lease *l = ctl_lease_at(c, (int)q[i].id - 1);
		if (!l || (own && strcmp(own, l->tenant)))
			continue;
		json_array_append_new(a, json_pack("{s:i, s:s, s:s, s:s, s:i, s:s, s:s, s:o}",
						   "position", q[i].position, "lease", l->id,
						   "tenant", l->tenant, "plan",
						   plan_name(l->req->plan), "gpus", q[i].gpus,
						   "constraint", place_constraint_name(q[i].constraint),
						   "reason", q[i].reason ? q[i].reason : "",
						   "submitted_at", ctl_time_json(l->created_ns)));
	}
	ctl_answer_json(call, 200, a);
}

struct expand_arg {
	struct ctl *c;
	json_t *nodes;
	char bad[FLEET_NAME_MAX + 1];
};

static enum sl_err add_node(void *arg, const char *name)
{
	struct expand_arg *a = arg;
	if (fleet_find_node(a->c->fleet, name) < 0) {
		snprintf(a->bad, sizeof(a->bad), "%s", name);
		return SL_ENOTFOUND;
	}
	if (json_array_size(a->nodes) >= CTL_MAX_RESV_NODES)
		return SL_ELIMIT;
	return json_array_append_new(a->nodes, json_string(name)) ? SL_ENOMEM : SL_OK;
}

static bool shares_node(const json_t *a, const json_t *b)
{
	size_t i, k;
	const json_t *x, *y;
	json_array_foreach(a, i, x) json_array_foreach(b, k, y) if (json_equal(x, y)) return true;
	return false;
}

void h_resv_create(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {{"tenant", FT_STRING, true},
						  {"nodes", FT_STRING, true},
						  {"start", FT_STRING, true},
						  {"end", FT_STRING, true}};
	struct ctl *c = call->ctl;
	char msg[SL_DIAG_MSG];
	struct sl_diag d;
	int64_t start, end;
	sl_diag_clear(&d);
	if (!ctl_check_fields(call, call->body, fields, 4, "a reservation"))
		return;
	const char *tenant = json_string_value(json_object_get(call->body, "tenant"));
	const char *nodes = json_string_value(json_object_get(call->body, "nodes"));
	if (!ctl_tenant_find(c, tenant)) {
		snprintf(msg, sizeof(msg), "no tenant called '%.64s'", tenant);
		ctl_answer_error(call, SL_ENOTFOUND, msg, NULL);
		return;
	}
	if (!ctl_time_parse(json_string_value(json_object_get(call->body, "start")), &start) ||
	    !ctl_time_parse(json_string_value(json_object_get(call->body, "end")), &end)) {
		ctl_answer_error(call, SL_EINVAL, "fields 'start' and 'end' must be RFC 3339 times",
				 "for example 2026-12-01T00:00:00Z");
		return;
	}
	if (end <= start || end <= c->now_ns) {
		ctl_answer_error(call, SL_EINVAL, "a reservation must end after it starts and after now",
				 NULL);
		return;
	}
	struct expand_arg a = {c, json_array(), ""};
	enum sl_err e = a.nodes ? fleet_expand_range(nodes, add_node, &a, &d) : SL_ENOMEM;
	if (e) {
		json_decref(a.nodes);
		if (e == SL_ENOTFOUND) {
			snprintf(msg, sizeof(msg), "node '%s' is not in the fleet", a.bad);
			ctl_answer_error(call, SL_EINVAL, msg, "'suanli nodes' lists them");
		} else if (e == SL_ELIMIT) {
			snprintf(msg, sizeof(msg), "a reservation holds at most %d nodes", CTL_MAX_RESV_NODES);
			ctl_answer_error(call, SL_ELIMIT, msg, NULL);
		} else {
			ctl_answer_diag(call, e, &d);
		}
		return;
	}
	for (int i = 0; i < c->tenants.nresvs; i++) {
		const struct ctl_resv *r = &c->tenants.resvs[i];
		if (r->start_ns < end && start < r->end_ns && strcmp(r->tenant, tenant) &&
		    shares_node(r->nodes, a.nodes)) {
			snprintf(msg, sizeof(msg), "overlaps reservation %s of tenant %s", r->id, r->tenant);
			ctl_answer_error(call, SL_ECONFLICT, msg, NULL);
			json_decref(a.nodes);
			return;
		}
	}
	enum sl_err ge = sl_grow(&c->tenants.resvs, &c->tenants.cap_resvs, c->tenants.nresvs + 1, CTL_MAX_RESVS);
	if (ge) {
		json_decref(a.nodes);
		ctl_answer_error(call, ge, NULL, NULL);
		return;
	}
	struct ctl_resv *r = &c->tenants.resvs[c->tenants.nresvs];
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "rsv-%06d", c->tenants.nresvs + 1);
	snprintf(r->tenant, sizeof(r->tenant), "%s", tenant);
	r->nodes = a.nodes;
	r->start_ns = start;
	r->end_ns = end;
	r->created_ns = c->now_ns;
	if (c->sched && (e = ctl_sched_reserve(c, r, &d))) {
		json_decref(r->nodes);
		ctl_answer_diag(call, e, &d);
		return;
	}
	c->tenants.nresvs++;
	if (c->sched)
		ctl_sched_events(c);
	ctl_put(c, STORE_RESERVATIONS, r->id, r->tenant, resv_to_json(r));
	sl_log_info("reservation created", "reservation=%s tenant=%s nodes=%zu by=%s", r->id,
		    r->tenant, json_array_size(r->nodes), call->tok->id);
	ctl_answer_json(call, 201, resv_to_json(r));
}

void h_resv_list(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	const char *own = ctl_call_tenant(call);
	json_t *a = json_array();
	for (int i = 0; a && i < c->tenants.nresvs; i++)
		if (!own || !strcmp(own, c->tenants.resvs[i].tenant))
			json_array_append_new(a, resv_to_json(&c->tenants.resvs[i]));
	ctl_answer_json(call, 200, a);
}

/* h_leases.c - leases: create, list, show, release, extend, scale.
 *
 * Each handler validates everything first and mutates only after, so a
 * refused request leaves nothing behind; the one exception, a lease that the
 * scheduler refuses (quota, a request no node could ever take), is undone by
 * popping it off the end of the lease array: the scheduler changed nothing
 * and nothing was written. Every live lease goes through the scheduler.
 * Tenant-scoped callers get 404 for other tenants' leases, the same answer as
 * for a lease that does not exist. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing.h"
#include "buf.h"
#include "ctl_int.h"
#include "log.h"

static const struct ctl_field lease_fields[] = {
	{"gpus", FT_INT, false},       {"models", FT_ARRAY, false},
	{"gpu_milli", FT_INT, false},  {"cpu_milli", FT_INT, false},
	{"memory_mib", FT_INT, false},
	{"per_node", FT_INT, false},   {"min_bw_gbps", FT_INT, false},
	{"min_mem_gib", FT_INT, false}, {"region", FT_STRING, false},
	{"site", FT_STRING, false},    {"plan", FT_STRING, false},
	{"duration_s", FT_INT, false}, {"elastic", FT_OBJECT, false},
	{"exclusive", FT_BOOL, false}, {"tenant", FT_STRING, false},
	{"one_leaf", FT_BOOL, false},
	{"on_node_failure", FT_STRING, false},
};

static bool region_allowed(const struct ctl_tenant *t, const char *region)
{
	if (!region[0] || json_array_size(t->regions) == 0)
		return true;
	for (size_t i = 0; i < json_array_size(t->regions); i++)
		if (!strcmp(region, json_string_value(json_array_get(t->regions, i))))
			return true;
	return false;
}

void h_lease_create(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct lease_req r;
	struct sl_diag d;
	char msg[SL_DIAG_MSG];
	sl_diag_clear(&d);
	if (!ctl_check_fields(call, call->body, lease_fields,
			      sizeof(lease_fields) / sizeof(lease_fields[0]), "a lease request"))
		return;
	enum sl_err e = lease_req_parse(call->body, &r, &d);
	if (e) {
		ctl_answer_diag(call, e, &d);
		return;
	}
	const char *own = ctl_call_tenant(call);
	if (own && r.tenant[0] && strcmp(own, r.tenant)) {
		ctl_answer_error(call, SL_EFORBIDDEN, "a tenant's token creates leases only for its own tenant",
				 "leave out \"tenant\"");
		return;
	}
	if (!own && !r.tenant[0]) {
		ctl_answer_error(call, SL_EINVAL, "field 'tenant' is required when the provider creates a lease",
				 "add \"tenant\": \"NAME\"");
		return;
	}
	const struct ctl_tenant *t = ctl_tenant_find(c, own ? own : r.tenant);
	if (!t) {
		char hint[SL_DIAG_HINT];
		snprintf(msg, sizeof(msg), "no tenant called '%s'", own ? own : r.tenant);
		snprintf(hint, sizeof(hint), "create it with 'suanli tenant create %.64s'",
			 own ? own : r.tenant);
		ctl_answer_error(call, SL_ENOTFOUND, msg, hint);
		return;
	}
	if (!region_allowed(t, r.region)) {
		char hint[SL_DIAG_HINT];
		snprintf(msg, sizeof(msg), "tenant %s may not use region %s", t->name, r.region);
		snprintf(hint, sizeof(hint), "'suanli tenant show %.64s' shows its regions", t->name);
		ctl_answer_error(call, SL_EFORBIDDEN, msg, hint);
		return;
	}
	/* A placement has one region: the tenant's only one, or the one named. */
	if (!r.region[0] && json_array_size(t->regions) == 1)
		r.region = json_string_value(json_array_get(t->regions, 0));
	else if (!r.region[0] && json_array_size(t->regions) > 1) {
		snprintf(msg, sizeof(msg), "tenant %s may use %zu regions; say which with \"region\"",
			 t->name, json_array_size(t->regions));
		char hint[SL_DIAG_HINT];
		snprintf(hint, sizeof(hint), "'suanli tenant show %.64s' shows its regions", t->name);
		ctl_answer_error(call, SL_EINVAL, msg, hint);
		return;
	}
	/* On-demand and spot leases need their first hour covered (billing.h). */
	if ((e = billing_can_start(c, t->name, &r, &d))) {
		ctl_answer_diag(call, e, &d);
		return;
	}
	enum sl_err ge = sl_grow(&c->lt.leases, &c->lt.cap_leases, c->lt.nleases + 1, CTL_MAX_LEASES);
	if (ge) {
		ctl_answer_error(call, ge, NULL, NULL);
		return;
	}
	struct ctl_lease *l = calloc(1, sizeof(*l));
	if (!l) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	c->lt.leases[c->lt.nleases] = l;
	l->seq = (uint64_t)c->lt.nleases + 1;
	snprintf(l->id, sizeof(l->id), "ls-%06llu", (unsigned long long)l->seq);
	l->tenant = ctl_name(c, t->name);
	l->user = ctl_name(c, call->tok->user);
	l->req = lease_req_keep(&r);
	if (!l->req || !l->tenant || !l->user || !lease_set_request(l, call->body)) {
		lease_release_mem(l);
		free(l);
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	lease_share_request(l, l->seq > 1 ? c->lt.leases[l->seq - 2] : NULL);
	lease_share_req(l, l->seq > 1 ? c->lt.leases[l->seq - 2] : NULL);
	l->gpus = r.gpus;
	l->created_ns = c->now_ns;
	l->state = LS_PENDING;
	c->lt.nleases++;
	e = ctl_sched_submit(c, l, &d);
	if (e) {
		/* Refused: undo the lease (the scheduler changed nothing). */
		c->lt.nleases--;
		lease_release_mem(l);
		free(l);
		if (e == SL_EQUOTA && !d.hint[0])
			sl_diag_hint(&d, "release a lease or ask the operator for more quota");
		ctl_answer_diag(call, e, &d);
		return;
	}
	ctl_answer_lease(call, 201, l);
}

/* The lease named in the path, visible to the caller; NULL after a 404. */
static struct ctl_lease *path_lease(struct ctl_call *call)
{
	struct ctl_lease *l = ctl_lease_find(call->ctl, call->param[0]);
	const char *own = ctl_call_tenant(call);
	if (!l || (own && strcmp(own, l->tenant))) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "no lease with id '%.64s'", call->param[0]);
		ctl_answer_error(call, SL_ENOTFOUND, msg, "'suanli lease list' lists yours");
		return NULL;
	}
	return l;
}

void h_lease_show(struct ctl_call *call)
{
	struct ctl_lease *l = path_lease(call);
	if (l)
		ctl_answer_lease(call, 200, l);
}

static bool lease_live(const struct ctl_lease *l)
{
	return l->state == LS_PENDING || l->state == LS_ACTIVE || l->state == LS_PREEMPTING;
}

static void answer_ended(struct ctl_call *call, const struct ctl_lease *l)
{
	char msg[SL_DIAG_MSG];
	snprintf(msg, sizeof(msg), "lease %s has already ended (%s)", l->id, lease_state_name(l->state));
	ctl_answer_error(call, SL_ECONFLICT, msg, NULL);
}

void h_lease_release(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct ctl_lease *l = path_lease(call);
	if (!l || !ctl_check_fields(call, call->body, NULL, 0, "a release request"))
		return;
	if (l->state == LS_RELEASED) {
		ctl_answer_lease(call, 200, l);
		return;
	}
	if (!lease_live(l)) {
		answer_ended(call, l);
		return;
	}
	char why[64];
	snprintf(why, sizeof(why), "released by %s", call->tok->id);
	struct sl_diag d;
	sl_diag_clear(&d);
	lease_set_end_reason(l, "%s", why);
	enum sl_err e = ctl_sched_check(c, sched_release(c->sched, l->seq, c->now_ns, &d),
					"sched_release");
	lease_set_end_reason(l, NULL);
	if (e) {
		ctl_answer_diag(call, e, &d);
		return;
	}
	ctl_answer_lease(call, 200, l);
}

void h_lease_extend(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {{"by_s", FT_INT, true}};
	struct ctl *c = call->ctl;
	struct ctl_lease *l = path_lease(call);
	char msg[SL_DIAG_MSG];
	if (!l || !ctl_check_fields(call, call->body, fields, 1, "an extend request"))
		return;
	json_int_t by = json_integer_value(json_object_get(call->body, "by_s"));
	if (by < 1 || by > CTL_MAX_DURATION_S) {
		snprintf(msg, sizeof(msg), "field 'by_s' must be 1..%lld", (long long)CTL_MAX_DURATION_S);
		ctl_answer_error(call, SL_EINVAL, msg, NULL);
		return;
	}
	if (!lease_live(l)) {
		answer_ended(call, l);
		return;
	}
	if (!l->req->duration_s) {
		snprintf(msg, sizeof(msg), "lease %s has no duration, so there is no end to extend", l->id);
		ctl_answer_error(call, SL_ECONFLICT, msg, NULL);
		return;
	}
	if (l->req->duration_s + by > CTL_MAX_DURATION_S) {
		snprintf(msg, sizeof(msg), "the duration would pass %lld s", (long long)CTL_MAX_DURATION_S);
		ctl_answer_error(call, SL_ELIMIT, msg, NULL);
		return;
	}
	struct sl_diag d;
	sl_diag_clear(&d);
	enum sl_err e = sched_extend(c->sched, l->seq, (l->req->duration_s + by) * 1000000000, &d);
	if (e) {
		ctl_answer_diag(call, e, &d);
		return;
	}
	json_t *rq = json_loads(l->request, 0, NULL);
	if (!lease_set_duration(l, l->req->duration_s + by) || !rq ||
	    json_object_set_new(rq, "duration_s", json_integer(l->req->duration_s)) ||
	    !lease_set_request(l, rq))
		c->fatal = true; /* out of memory: the row would keep the old duration */
	json_decref(rq);
	if (l->expires_ns) {
		l->expires_ns += by * 1000000000;
		if (ctl_expiry_push(c, l->expires_ns, (int)(l->seq - 1)))
			c->fatal = true;
	}
	snprintf(msg, sizeof(msg), "extended by %lld s", (long long)by);
	ctl_lease_set_state(c, l, l->state, msg);
	ctl_lease_save(c, l);
	ctl_answer_lease(call, 200, l);
}

void h_lease_scale(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {{"gpus", FT_INT, true}};
	struct ctl *c = call->ctl;
	struct ctl_lease *l = path_lease(call);
	char msg[SL_DIAG_MSG];
	struct sl_diag d;
	sl_diag_clear(&d);
	if (!l || !ctl_check_fields(call, call->body, fields, 1, "a scale request"))
		return;
	json_int_t gpus = json_integer_value(json_object_get(call->body, "gpus"));
	if (!l->req->el_max) {
		snprintf(msg, sizeof(msg), "lease %s is not elastic", l->id);
		ctl_answer_error(call, SL_ECONFLICT, msg, "create it with \"elastic\": {\"min\": N, \"max\": M}");
		return;
	}
	if (gpus < l->req->el_min || gpus > l->req->el_max) {
		snprintf(msg, sizeof(msg), "lease %s scales between %d and %d GPUs, not %lld", l->id,
			 l->req->el_min, l->req->el_max, (long long)gpus);
		ctl_answer_error(call, SL_EINVAL, msg, NULL);
		return;
	}
	if (!lease_live(l)) {
		answer_ended(call, l);
		return;
	}
	if (gpus != l->gpus) {
		int before = l->gpus;
		enum sl_err e = ctl_sched_check(c, sched_scale(c->sched, l->seq, (int)gpus, c->now_ns, &d),
						"sched_scale");
		if (e) {
			ctl_answer_diag(call, e == SL_EINVAL ? SL_EINVAL : e, &d);
			return;
		}
		if (l->state == LS_PENDING && l->gpus == before) {
			snprintf(msg, sizeof(msg), "asked to scale to %lld GPUs while waiting", (long long)gpus);
			l->gpus = (int)gpus;
			ctl_lease_set_state(c, l, l->state, msg);
			ctl_lease_save(c, l);
		}
	}
	ctl_answer_lease(call, 200, l);
}

/* h_instances.c - the instance API (docs/instances.md): create, list, show,
 * stop, start (--wait, --no-gpu, --migrate), release, logs.
 *
 * Like every handler: everything is checked before anything changes, and a
 * tenant-scoped caller gets 404 for another tenant's instance (the answer
 * for one that does not exist). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_log.h"
#include "billing.h"
#include "buf.h"
#include "catalog.h"
#include "events.h"
#include "instances_int.h"
#include "log.h"

static const struct ctl_field create_fields[] = {
	{"gpus", FT_INT, true},          {"model", FT_STRING, false},
	{"per_node", FT_INT, false},     {"image", FT_STRING, false},
	{"ssh_key", FT_STRING, false},   {"volume_gib", FT_INT, false},
	{"ports", FT_ARRAY, false},      {"region", FT_STRING, false},
	{"site", FT_STRING, false},      {"plan", FT_STRING, false},
	{"auto_stop_idle_s", FT_INT, false}, {"tenant", FT_STRING, false},
};

static void answer_inst(struct ctl_call *call, int status, const struct instance *in, const char *message)
{
	json_t *o = inst_to_json(call->ctl, in, false);
	if (o && message)
		json_object_set_new(o, "message", json_string(message));
	if (!o) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	ctl_answer_json(call, status, o);
}

static bool region_allowed(const struct ctl_tenant *t, const char *region)
{
	if (!region[0] || json_array_size(t->regions) == 0)
		return true;
	for (size_t i = 0; i < json_array_size(t->regions); i++)
		if (!strcmp(region, json_string_value(json_array_get(t->regions, i))))
			return true;
	return false;
}

static bool bad(struct ctl_call *call, enum sl_err e, const char *msg, const char *hint)
{
	ctl_answer_error(call, e, msg, hint);
	return false;
}

/* Fills in's request from the body; answers 400 and false when bad. */
static bool parse_request(struct ctl_call *call, struct instance *in, const struct ctl_tenant *t)
{
	struct ctl *c = call->ctl;
	const json_t *b = call->body;
	char msg[SL_DIAG_MSG];
	json_int_t gpus = json_integer_value(json_object_get(b, "gpus"));
	if (gpus < 1 || gpus > INST_MAX_NODES * TOPO_MAX_GPUS)
		return bad(call, SL_EINVAL, "field 'gpus' must be at least 1",
			   "an instance holds whole GPUs; start --no-gpu runs one without");
	in->gpus = (int)gpus;
	json_int_t pn = json_integer_value(json_object_get(b, "per_node"));
	if (pn < 0 || pn > TOPO_MAX_GPUS || (pn && gpus % pn))
		return bad(call, SL_EINVAL, "field 'per_node' must divide 'gpus'", NULL);
	in->per_node = (int)pn;
	const char *model = json_string_value(json_object_get(b, "model"));
	if (model && (!catalog_gpu_find(model) || strlen(model) >= INST_MODEL_SIZE)) {
		snprintf(msg, sizeof(msg), "unknown GPU model '%.64s'", model);
		return bad(call, SL_EINVAL, msg, "'suanli nodes' shows the models of the fleet");
	}
	inst_name(c, &in->model, model ? catalog_gpu_find(model)->name : "", INST_MODEL_SIZE);
	const char *plan = json_string_value(json_object_get(b, "plan"));
	in->plan = PLAN_HOURLY;
	if (plan && (plan_parse(plan, &in->plan, NULL) || !plan_is_lease(in->plan)))
		return bad(call, SL_EINVAL, "field 'plan' must be hourly, monthly or spot", NULL);
	const char *region = json_string_value(json_object_get(b, "region"));
	const char *site = json_string_value(json_object_get(b, "site"));
	if (region && !fleet_name_valid(region))
		return bad(call, SL_EINVAL, "field 'region' is not a valid name", NULL);
	if (site && !fleet_name_valid(site))
		return bad(call, SL_EINVAL, "field 'site' is not a valid name", NULL);
	inst_name(c, &in->region, region, FLEET_NAME_MAX + 1);
	inst_name(c, &in->site, site, FLEET_NAME_MAX + 1);
	if (!region_allowed(t, in->region)) {
		snprintf(msg, sizeof(msg), "tenant %s may not use region %s", t->name, in->region);
		return bad(call, SL_EFORBIDDEN, msg, NULL);
	}
	if (!in->region[0] && json_array_size(t->regions) == 1)
		inst_name(c, &in->region, json_string_value(json_array_get(t->regions, 0)), FLEET_NAME_MAX + 1);
	json_int_t vol = json_integer_value(json_object_get(b, "volume_gib"));
	if (vol < 0 || vol > INST_VOLUME_MAX_GIB) {
		snprintf(msg, sizeof(msg), "field 'volume_gib' must be 0..%d GiB", INST_VOLUME_MAX_GIB);
		return bad(call, SL_EINVAL, msg, "0: no data disk");
	}
	in->volume_gib = (int)vol;
	json_int_t idle = json_integer_value(json_object_get(b, "auto_stop_idle_s"));
	if (idle && (idle < INST_IDLE_MIN_S || idle > INST_IDLE_MAX_S)) {
		snprintf(msg, sizeof(msg), "field 'auto_stop_idle_s' must be %d..%d seconds (or 0: never)",
			 INST_IDLE_MIN_S, INST_IDLE_MAX_S);
		return bad(call, SL_EINVAL, msg, NULL);
	}
	in->auto_stop_idle_s = idle;
	size_t i;
	const json_t *p;
	const json_t *ports = json_object_get(b, "ports");
	if (json_array_size(ports) > INST_MAX_PORTS) {
		snprintf(msg, sizeof(msg), "at most %d ports", INST_MAX_PORTS);
		return bad(call, SL_ELIMIT, msg, NULL);
	}
	json_array_foreach(ports, i, p) {
		json_int_t v = json_integer_value(p);
		if (!json_is_integer(p) || v < 1 || v > 65535 || v == 22)
			return bad(call, SL_EINVAL, "each port must be 1..65535 and not 22 (sshd's)", NULL);
		for (int k = 0; k < in->nports; k++)
			if (in->ports[k] == v)
				return bad(call, SL_EINVAL, "a port is named twice", NULL);
		in->ports[in->nports++] = (uint16_t)v;
	}
	const char *iname = json_string_value(json_object_get(b, "image"));
	char used[IMAGE_NAME_MAX + 1], ref[IMAGE_REF_MAX + 1], drv[INST_MODEL_SIZE];
	if (images_resolve(c, iname, ref, used) != SL_OK) {
		snprintf(msg, sizeof(msg), "no image called '%.64s' in the catalog", iname);
		return bad(call, SL_ENOTFOUND, msg, "suanli image list shows them");
	}
	inst_name(c, &in->image_ref, ref, IMAGE_REF_MAX + 1);
	inst_name(c, &in->image, used, IMAGE_NAME_MAX + 1);
	images_min_driver(c, used, drv, sizeof(drv));
	inst_name(c, &in->min_driver, drv, sizeof(drv));
	const char *key = json_string_value(json_object_get(b, "ssh_key"));
	const char *user = call->tok->user, *ktenant = call->tok->tenant;
	json_t *keys;
	if (key) {
		const struct ssh_key_rec *k = ssh_key_find(c, ktenant, user, key);
		if (!k) {
			snprintf(msg, sizeof(msg), "you have no SSH key called '%.64s'", key);
			return bad(call, SL_ENOTFOUND, msg, "add one: suanli ssh-key add NAME --file ~/.ssh/id_ed25519.pub");
		}
		inst_name(c, &in->ssh_key, key, INST_KEY_NAME_MAX + 1);
		keys = json_pack("[s]", k->line);
	} else {
		keys = ssh_keys_of(c, ktenant, user);
	}
	bool ok = keys && inst_keys_set(c, in, keys);
	json_decref(keys);
	return ok || bad(call, SL_ENOMEM, NULL, NULL);
}

void h_instance_create(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	char msg[SL_DIAG_MSG];
	if (!ctl_check_fields(call, call->body, create_fields,
			      sizeof(create_fields) / sizeof(create_fields[0]), "an instance request"))
		return;
	const char *own = ctl_call_tenant(call);
	const char *bt = json_string_value(json_object_get(call->body, "tenant"));
	if (own && bt && strcmp(own, bt)) {
		ctl_answer_error(call, SL_EFORBIDDEN, "a tenant's token creates instances only for its own tenant",
				 "leave out \"tenant\"");
		return;
	}
	if (!own && !bt) {
		ctl_answer_error(call, SL_EINVAL, "field 'tenant' is required when the provider creates an instance",
				 "add \"tenant\": \"NAME\"");
		return;
	}
	const struct ctl_tenant *t = ctl_tenant_find(c, own ? own : bt);
	if (!t) {
		snprintf(msg, sizeof(msg), "no tenant called '%.64s'", own ? own : bt);
		ctl_answer_error(call, SL_ENOTFOUND, msg, NULL);
		return;
	}
	struct instance *in = inst_new(c);
	if (!in) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	inst_name(c, &in->tenant, t->name, CTL_NAME_MAX + 1);
	inst_name(c, &in->user, call->tok->user, CTL_USER_MAX + 1);
	if (!parse_request(call, in, t)) {
		inst_free(in);
		return;
	}
	struct sl_diag d;
	sl_diag_clear(&d);
	/* In the table first: the lease's start (billing's hook) must know it
	 * is an instance's. Taken out again when it cannot be placed. */
	if (!inst_add(c, in)) {
		inst_free(in);
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	enum sl_err e = inst_place(c, in, IW_ANY, call->tok->user, &d);
	if (e) {
		inst_drop_last(c, in);
		if (e == SL_ENOSPACE && !d.hint[0])
			sl_diag_hint(&d, "an instance starts at once or not at all: try fewer GPUs, another "
					 "model or region, or later ('suanli nodes' shows what is free)");
		ctl_answer_diag(call, e, &d);
		return;
	}
	inst_bill_disk_on(c, in, c->now_ns);
	in->state = IS_STARTING;
	char why[INST_REASON_MAX];
	snprintf(why, sizeof(why), "created: lease %s on %s%s; pulling and creating the container",
		 in->lease, in->nodes[0].node, in->nnodes > 1 ? " and more" : "");
	inst_reason_set(in, why);
	inst_hist_add(in, c->now_ns, IS_STARTING, why);
	inst_save(c, in);
	inst_bump(c, in);
	events_emit(c, "instance", in->id, inst_state_name(in->state), in->tenant); /* events.h */
	sl_log_info("instance created", "instance=%s tenant=%s lease=%s gpus=%d volume_gib=%d",
		    in->id, in->tenant, in->lease, in->gpus, in->volume_gib);
	answer_inst(call, 201, in, NULL);
}

void h_instance_show(struct ctl_call *call)
{
	struct instance *in = inst_path(call);
	if (in)
		answer_inst(call, 200, in, NULL);
}

void h_instance_list(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct ctl_instances *is = c->instances;
	const char *own = ctl_call_tenant(call);
	const char *state = http_request_param(call->req, "state");
	const char *tenant = http_request_param(call->req, "tenant");
	int st = -1;
	if (state && (st = inst_state_parse(state)) < 0) {
		ctl_answer_error(call, SL_EINVAL, "unknown instance state in ?state=",
				 "states: starting, running, stopping, stopped, waiting, failed, releasing, released");
		return;
	}
	json_t *a = json_array();
	/* Released instances in history (NULL slots) are read for the list and
	 * let go; a filter on another state skips them. */
	for (int i = 0; a && i < is->n; i++) {
		struct instance *tmp = NULL;
		const struct instance *in = is->v[i];
		if (!in && (st < 0 || st == IS_RELEASED))
			in = inst_at(c, i, &tmp);
		if (in && !(own && strcmp(own, in->tenant)) && !(tenant && strcmp(tenant, in->tenant)) &&
		    !(st >= 0 && (int)in->state != st) &&
		    json_array_append_new(a, inst_to_json(c, in, false))) {
			json_decref(a);
			a = NULL;
		}
		if (tmp)
			inst_free(tmp);
	}
	if (!a) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	ctl_answer_json(call, 200, a);
}

static void conflict_state(struct ctl_call *call, const struct instance *in, const char *what,
			   const char *hint)
{
	char msg[SL_DIAG_MSG];
	snprintf(msg, sizeof(msg), "instance %s is %s; %s", in->id, inst_state_name(in->state), what);
	ctl_answer_error(call, SL_ECONFLICT, msg, hint);
}

void h_instance_stop(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct instance *in = inst_path(call);
	if (!in || !ctl_check_fields(call, call->body, NULL, 0, "a stop request"))
		return;
	if (in->state == IS_STOPPED || in->state == IS_STOPPING) {
		answer_inst(call, 200, in, "already stopped");
		return;
	}
	if (in->state != IS_STARTING && in->state != IS_RUNNING && in->state != IS_WAITING) {
		conflict_state(call, in, "only a starting, running or waiting instance stops", NULL);
		return;
	}
	char why[INST_REASON_MAX];
	snprintf(why, sizeof(why), "stopped by %s: GPUs released, both disks kept", call->tok->id);
	if (in->state == IS_RUNNING) {
		if (in->mode == IM_NOGPU)
			inst_bill_nogpu_off(c, in, c->now_ns);
		else
			inst_bill_gpu_off(c, in, c->now_ns);
	}
	inst_lease_release(c, in, "stopped");
	inst_mig_abandon(c, in);
	inst_event(c, in, IE_STOP, why);
	answer_inst(call, 200, in, NULL);
}

static const char *site_of(struct ctl *c, const struct instance *in)
{
	int n = in->nnodes ? fleet_find_node(c->fleet, in->nodes[0].node) : -1;
	return n >= 0 ? c->fleet->sites[c->fleet->nodes[n].site].name : "?";
}

void h_instance_start(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {
		{"wait", FT_BOOL, false}, {"no_gpu", FT_BOOL, false}, {"migrate", FT_BOOL, false}};
	struct ctl *c = call->ctl;
	char msg[SL_DIAG_MSG], why[INST_REASON_MAX];
	struct instance *in = inst_path(call);
	if (!in || !ctl_check_fields(call, call->body, fields, 3, "a start request"))
		return;
	bool wait = json_is_true(json_object_get(call->body, "wait"));
	bool nogpu = json_is_true(json_object_get(call->body, "no_gpu"));
	bool migrate = json_is_true(json_object_get(call->body, "migrate"));
	if (wait + nogpu + migrate > 1) {
		ctl_answer_error(call, SL_EINVAL, "give at most one of wait, no_gpu and migrate", NULL);
		return;
	}
	if (in->state == IS_STARTING || in->state == IS_RUNNING) {
		answer_inst(call, 200, in, "already started");
		return;
	}
	if (in->state != IS_STOPPED && in->state != IS_FAILED && in->state != IS_WAITING) {
		conflict_state(call, in, "only a stopped, failed or waiting instance starts",
			       in->state == IS_STOPPING ? "wait until it is stopped" : NULL);
		return;
	}
	struct sl_diag d;
	sl_diag_clear(&d);
	if (nogpu) {
		in->mode = IM_NOGPU;
		for (int k = 0; k < in->nnodes; k++)
			in->nodes[k].gpus = 0;
		in->epoch++;
		snprintf(why, sizeof(why), "started without GPUs on %s (no-gpu mode, at the no-gpu price), "
			 "to reach the data", in->nodes[0].node);
		inst_event(c, in, IE_PLACED, why);
		answer_inst(call, 200, in, NULL);
		return;
	}
	if (migrate) {
		if (in->nnodes != 1) {
			ctl_answer_error(call, SL_EINVAL, "--migrate moves single-node instances only",
					 "start --wait or --no-gpu");
			return;
		}
		char from[FLEET_NAME_MAX + 1];
		snprintf(from, sizeof(from), "%s", in->nodes[0].node);
		enum sl_err e = inst_place(c, in, IW_MIGRATE, call->tok->user, &d);
		if (e) {
			char m2[SL_DIAG_MSG];
			snprintf(m2, sizeof(m2), "no other node of site %s can take it: %.400s", site_of(c, in), d.msg);
			ctl_answer_error(call, e, m2, "start --wait (queued until its home node is free) or --no-gpu");
			return;
		}
		snprintf(why, sizeof(why), "migrating from %s to %s: both disks are copied through the "
			 "controller, checked, then the old copy is removed", from, in->nodes[0].node);
		inst_event(c, in, IE_PLACED, why);
		audit_log_system(c, "instance.migrate", in->tenant, in->id, "started");
		answer_inst(call, 200, in, NULL);
		return;
	}
	enum sl_err e = inst_place(c, in, IW_HOME, call->tok->user, &d);
	if (e == SL_OK) {
		snprintf(why, sizeof(why), "started on its home node%s %s (lease %s)", in->nnodes > 1 ? "s" : "",
			 in->nodes[0].node, in->lease);
		inst_event(c, in, IE_PLACED, why);
		answer_inst(call, 200, in, NULL);
		return;
	}
	if (e != SL_ENOSPACE) {
		ctl_answer_diag(call, e, &d);
		return;
	}
	if (wait) {
		snprintf(why, sizeof(why), "waiting for the GPUs of its home node %s (start --wait): %.200s",
			 in->nodes[0].node, d.msg);
		inst_event(c, in, IE_WAIT, why);
		answer_inst(call, 202, in, NULL);
		return;
	}
	snprintf(msg, sizeof(msg), "the GPUs of %s's home node %s are taken (its disks are there): %.200s",
		 in->id, in->nodes[0].node, d.msg);
	char hint[SL_DIAG_HINT + 256];
	snprintf(hint, sizeof(hint),
		 "choose: --wait (queued until %.40s has them), --no-gpu (without GPUs at the no-gpu "
		 "price, to reach the data) or --migrate (another node of site %.40s; both disks are "
		 "copied)", in->nodes[0].node, site_of(c, in));
	ctl_answer_error(call, SL_ECONFLICT, msg, hint);
}

void h_instance_release(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	char why[INST_REASON_MAX], message[256];
	struct instance *in = inst_path(call);
	if (!in || !ctl_check_fields(call, call->body, NULL, 0, "a release request"))
		return;
	if (in->state == IS_RELEASED || in->state == IS_RELEASING) {
		answer_inst(call, 200, in, "already released");
		return;
	}
	if (in->state == IS_RUNNING) {
		if (in->mode == IM_NOGPU)
			inst_bill_nogpu_off(c, in, c->now_ns);
		else
			inst_bill_gpu_off(c, in, c->now_ns);
	}
	inst_bill_disk_end(c, in, c->now_ns);
	inst_lease_release(c, in, "released");
	if (in->volume_gib)
		snprintf(message, sizeof(message), "released: containers removed, data disk of %d GiB deleted",
			 in->volume_gib);
	else
		snprintf(message, sizeof(message), "released: containers removed (no data disk)");
	snprintf(why, sizeof(why), "%s (by %s)", message, call->tok->id);
	inst_event(c, in, IE_RELEASE, why);
	answer_inst(call, 200, in, message);
}

void h_instance_logs(struct ctl_call *call)
{
	struct instance *in = inst_path(call);
	if (!in)
		return;
	struct sl_buf b;
	sl_buf_init(&b, 1 << 20);
	char at[32];
	for (int i = 0; i < in->nhist; i++) {
		ctl_time_fmt(in->hist[i].at_ns, at);
		sl_buf_addf(&b, "%s %s %s\n", at, inst_state_name(in->hist[i].state), in->hist[i].reason);
	}
	for (int k = 0; k < in->nnodes; k++) {
		const struct inst_node *n = &in->nodes[k];
		sl_buf_addf(&b, "node %s: %s%s%s%s%s\n", n->node, n->rep_word[0] ? n->rep_word : "no report yet",
			    n->progress ? " - " : "", inst_str(n->progress), n->error ? " - error: " : "",
			    inst_str(n->error));
	}
	if (sl_buf_err(&b)) {
		sl_buf_release(&b);
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	json_t *o = json_pack("{s:s, s:s}", "instance", in->id, "log", sl_buf_str(&b));
	sl_buf_release(&b);
	ctl_answer_json(call, 200, o);
}

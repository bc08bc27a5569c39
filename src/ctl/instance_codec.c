/* instance_codec.c - an instance as JSON: the API's object (contract
 * docs/instances.md: ssh commands, ports, host keys, cost, notice, history,
 * the billing runs) and the store row (the same plus what the controller
 * keeps: each node's last report, the epoch, the keys, the migration). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents.h"
#include "buf.h"
#include "history.h"
#include "instances_int.h"

/* ---- JSON ---- */

static json_t *gpus_json(gpumask_t m)
{
	json_t *a = json_array();
	for (int g = 0; a && g < TOPO_MAX_GPUS; g++)
		if (m & ((gpumask_t)1 << g))
			json_array_append_new(a, json_integer(g));
	return a;
}

static json_t *segs_json(const struct inst_seg *s, int n, const char *unit)
{
	json_t *a = json_array();
	for (int i = 0; a && i < n; i++)
		json_array_append_new(a, json_pack("{s:o, s:o, s:i}", "from", ctl_time_json(s[i].from_ns),
						   "to", ctl_time_json(s[i].to_ns), unit, s[i].units));
	return a;
}

static void host_of(struct ctl *c, const char *node, char *buf, size_t n)
{
	int idx = c->fleet ? fleet_find_node(c->fleet, node) : -1;
	if (idx < 0 || !agents_node_addr(c, idx, buf, n))
		snprintf(buf, n, "%s", node);
	char *colon = strrchr(buf, ':'); /* "10.0.0.2:port" -> the host */
	if (colon && strchr(buf, ':') == colon)
		*colon = 0;
}

static json_t *api_json(struct ctl *c, const struct instance *in, json_t *o)
{
	json_t *ssh = json_array(), *ports = json_array(), *keys = json_array(), *nodes = json_array();
	char host[128], cmd[200], notice[512];
	for (int k = 0; k < in->nnodes; k++) {
		const struct inst_node *nd = &in->nodes[k];
		json_array_append_new(nodes, json_string(nd->node));
		host_of(c, nd->node, host, sizeof(host));
		if (nd->ssh_port > 0) {
			snprintf(cmd, sizeof(cmd), "ssh -p %d root@%s", nd->ssh_port, host);
			json_array_append_new(ssh, json_pack("{s:s, s:s, s:i, s:s, s:s}", "node", nd->node,
							     "host", host, "port", nd->ssh_port, "user",
							     "root", "command", cmd));
		}
		size_t i;
		const json_t *p;
		json_t *nports = inst_json_of(nd->ports), *nkeys = inst_json_of(nd->host_keys);
		json_array_foreach(nports, i, p)
			json_array_append_new(ports, json_pack("{s:O, s:s, s:s, s:O}", "port",
							       json_object_get(p, "port"), "node", nd->node,
							       "host", host, "host_port",
							       json_object_get(p, "host_port")));
		json_array_foreach(nkeys, i, p)
			json_array_append_new(keys, json_pack("{s:s, s:O, s:O}", "node", nd->node, "type",
							      json_object_get(p, "type"), "fingerprint",
							      json_object_get(p, "fingerprint")));
		json_decref(nports);
		json_decref(nkeys);
	}
	json_object_set_new(o, "nodes", nodes);
	json_object_set_new(o, "ssh", ssh);
	json_object_set_new(o, "ports", ports);
	json_object_set_new(o, "host_keys", keys);
	json_object_set_new(o, "cost", inst_cost_json(c, in));
	inst_notice(c, in, notice, sizeof(notice));
	json_object_set_new(o, "notice", json_string(notice));
	json_t *nd = json_array();
	for (int k = 0; k < in->nnodes; k++) {
		const struct inst_node *n = &in->nodes[k];
		json_t *x = json_pack("{s:s, s:o, s:s, s:s, s:s}", "node", n->node, "gpus",
				      gpus_json(n->gpus), "state", n->rep_word[0] ? n->rep_word : "unknown",
				      "progress", inst_str(n->progress), "error", inst_str(n->error));
		json_array_append_new(nd, x);
	}
	json_object_set_new(o, "node_states", nd);
	return o;
}

static json_t *store_nodes(const struct instance *in)
{
	json_t *a = json_array();
	for (int k = 0; a && k < in->nnodes; k++) {
		const struct inst_node *n = &in->nodes[k];
		json_t *x = json_pack("{s:s, s:o, s:i, s:I, s:b, s:s, s:I, s:s, s:s, s:i, s:o, s:o, s:o, "
				      "s:o, s:s, s:o}",
				      "node", n->node, "gpus", gpus_json(n->gpus), "cpus", n->cpus,
				      "mem_mib", (json_int_t)n->mem_mib, "whole", n->whole, "rep",
				      n->rep_word, "rep_epoch", (json_int_t)n->rep_epoch, "progress",
				      inst_str(n->progress), "error", inst_str(n->error), "ssh_port", n->ssh_port, "ports",
				      n->ports ? inst_json_of(n->ports) : json_array(), "host_keys",
				      n->host_keys ? inst_json_of(n->host_keys) : json_array(),
				      "running_since", ctl_time_json(n->running_since_ns), "stopped_at",
				      ctl_time_json(n->stopped_at_ns), "stopped_by", n->stopped_by,
				      "idle_since", ctl_time_json(n->idle_since_ns));
		json_array_append_new(a, x);
	}
	return a;
}

json_t *inst_to_json(struct ctl *c, const struct instance *in, bool store)
{
	json_t *hist = json_array();
	for (int i = 0; hist && i < in->nhist; i++)
		json_array_append_new(hist, json_pack("{s:o, s:s, s:s}", "at",
						      ctl_time_json(in->hist[i].at_ns), "state",
						      inst_state_name(in->hist[i].state), "reason",
						      in->hist[i].reason));
	json_t *ports = json_array();
	for (int i = 0; ports && i < in->nports; i++)
		json_array_append_new(ports, json_integer(in->ports[i]));
	json_t *o = json_pack(
		"{s:s, s:s, s:s, s:s, s:s, s:o, s:s, s:i, s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:i, "
		"s:I, s:o, s:o, s:o, s:o, s:o, s:o}",
		"id", in->id, "tenant", in->tenant, "user", in->user, "state", inst_state_name(in->state),
		"reason", inst_str(in->reason), "lease", in->lease[0] ? json_string(in->lease) : json_null(), "mode",
		in->mode == IM_NOGPU ? "no-gpu" : "gpu", "gpus", in->gpus, "model", in->model,
		"per_node", in->per_node, "region", in->region, "site", in->site, "plan",
		plan_name(in->plan), "image", in->image, "image_ref", in->image_ref, "ssh_key",
		in->ssh_key, "volume_gib", in->volume_gib, "auto_stop_idle_s",
		(json_int_t)in->auto_stop_idle_s, "req_ports", ports, "created_at",
		ctl_time_json(in->created_ns), "running_since", ctl_time_json(in->running_since_ns),
		"stopped_at", ctl_time_json(in->stopped_ns), "released_at",
		ctl_time_json(in->released_ns), "history", hist);
	if (!o)
		return NULL;
	json_t *bill = json_pack("{s:o, s:o, s:{s:o, s:o, s:i}}", "gpu",
				 segs_json(in->gpu_segs, in->ngpu_segs, "gpus"), "no_gpu",
				 segs_json(in->nogpu_segs, in->nnogpu_segs, "units"), "storage", "from",
				 ctl_time_json(in->disk_from_ns), "to", ctl_time_json(in->disk_to_ns),
				 "gib", in->volume_gib);
	json_object_set_new(o, "billing", bill);
	json_object_set_new(o, "gpu_model", json_string(in->gpu_model));
	json_object_set_new(o, "epoch", json_integer(in->epoch));
	if (!store)
		return api_json(c, in, o);
	json_object_set_new(o, "node_detail", store_nodes(in));
	json_object_set_new(o, "authorized_keys", inst_keys_json(in));
	json_object_set_new(o, "min_driver", json_string(in->min_driver));
	json_object_set_new(o, "migrate_from", json_string(in->migrate_from));
	json_object_set_new(o, "mig_rep", json_integer(in->mig_rep));
	json_object_set_new(o, "mig_epoch", json_integer(in->mig_epoch));
	json_object_set_new(o, "mig_removing", json_boolean(in->mig_removing));
	json_object_set_new(o, "mig_first_run", json_boolean(in->mig_first_run));
	json_object_set_new(o, "broke_since", ctl_time_json(in->broke_since_ns));
	json_object_set_new(o, "gpu_site", json_string(in->gpu_site));
	json_object_set_new(o, "gpu_region", json_string(in->gpu_region));
	json_object_set_new(o, "tracked", json_boolean(in->tracked));
	return o;
}

void inst_save(struct ctl *c, struct instance *in)
{
	json_t *o = inst_to_json(c, in, true);
	if (!o) {
		c->fatal = true;
		return;
	}
	if (!inst_in_history(in)) {
		ctl_put(c, STORE_INSTANCES, in->id, in->tenant, o);
		return;
	}
	/* Released for good: the row moves to history in this turn. */
	if (ctl_put(c, STORE_INSTANCE_HISTORY, in->id, in->tenant, o) &&
	    ctl_delete(c, STORE_INSTANCES, in->id))
		ctl_hist_seq_note(c, "instances", &c->instances->hist_seq, in->seq);
}

int64_t inst_tfield(const json_t *o, const char *k)
{
	int64_t ns = 0;
	const char *s = json_string_value(json_object_get(o, k));
	return s && ctl_time_parse(s, &ns) ? ns : 0;
}

void inst_sfield(char *dst, size_t n, const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	snprintf(dst, n, "%s", s ? s : "");
}

void inst_nfield(struct ctl *c, const char **dst, size_t size, const json_t *o, const char *k)
{
	inst_name(c, dst, json_string_value(json_object_get(o, k)), size);
}

void inst_tsfield(char **dst, size_t size, const json_t *o, const char *k)
{
	inst_text_set(dst, json_string_value(json_object_get(o, k)), size);
}

static gpumask_t mask_of(const json_t *a)
{
	gpumask_t m = 0;
	size_t i;
	const json_t *g;
	json_array_foreach(a, i, g) {
		json_int_t x = json_integer_value(g);
		if (x >= 0 && x < TOPO_MAX_GPUS)
			m |= (gpumask_t)1 << x;
	}
	return m;
}

/* The runs of a into *sp (grown; *cap its room); -1 out of memory. */
static int segs_from(const json_t *a, struct inst_seg **sp, int *cap, const char *unit)
{
	int n = 0;
	size_t i;
	const json_t *x;
	json_array_foreach(a, i, x) {
		if (n == INST_MAX_SEGS)
			break;
		if (sl_grow(sp, cap, n + 1, INST_MAX_SEGS))
			return -1;
		struct inst_seg *s = *sp;
		s[n].from_ns = inst_tfield(x, "from");
		s[n].to_ns = inst_tfield(x, "to");
		s[n].units = (int)json_integer_value(json_object_get(x, unit));
		n++;
	}
	return n;
}

struct instance *inst_from_json(struct ctl *c, const json_t *o, struct sl_diag *d)
{
	const char *id = json_string_value(json_object_get(o, "id"));
	int st = inst_state_parse(json_string_value(json_object_get(o, "state")));
	unsigned long long seq = 0;
	enum plan plan;
	if (!id || sscanf(id, "in-%llu", &seq) != 1 || seq < 1 || seq > INST_MAX || st < 0 ||
	    plan_parse(json_string_value(json_object_get(o, "plan")), &plan, NULL)) {
		sl_diag_set(d, SL_EPARSE, "stored instance %.64s is malformed", id ? id : "?");
		return NULL;
	}
	struct instance *in = inst_alloc();
	if (!in) {
		sl_diag_set(d, SL_ENOMEM, "out of memory");
		return NULL;
	}
	in->seq = seq;
	snprintf(in->id, sizeof(in->id), "%s", id);
	inst_nfield(c, &in->tenant, CTL_NAME_MAX + 1, o, "tenant");
	inst_nfield(c, &in->user, CTL_USER_MAX + 1, o, "user");
	in->state = (enum inst_state)st;
	inst_reason_set(in, json_string_value(json_object_get(o, "reason")));
	inst_sfield(in->lease, sizeof(in->lease), o, "lease");
	const char *mode = json_string_value(json_object_get(o, "mode"));
	in->mode = mode && !strcmp(mode, "no-gpu") ? IM_NOGPU : IM_GPU;
	in->gpus = (int)json_integer_value(json_object_get(o, "gpus"));
	in->per_node = (int)json_integer_value(json_object_get(o, "per_node"));
	inst_nfield(c, &in->model, INST_MODEL_SIZE, o, "model");
	inst_nfield(c, &in->region, FLEET_NAME_MAX + 1, o, "region");
	inst_nfield(c, &in->site, FLEET_NAME_MAX + 1, o, "site");
	in->plan = plan;
	inst_nfield(c, &in->image, IMAGE_NAME_MAX + 1, o, "image");
	inst_nfield(c, &in->image_ref, IMAGE_REF_MAX + 1, o, "image_ref");
	inst_nfield(c, &in->min_driver, INST_MODEL_SIZE, o, "min_driver");
	inst_nfield(c, &in->ssh_key, INST_KEY_NAME_MAX + 1, o, "ssh_key");
	const json_t *ak = json_object_get(o, "authorized_keys");
	if (json_is_array(ak) && !inst_keys_set(c, in, ak)) {
		inst_free(in);
		sl_diag_set(d, SL_ENOMEM, "out of memory");
		return NULL;
	}
	in->volume_gib = (int)json_integer_value(json_object_get(o, "volume_gib"));
	in->auto_stop_idle_s = json_integer_value(json_object_get(o, "auto_stop_idle_s"));
	size_t i;
	const json_t *x;
	json_array_foreach(json_object_get(o, "req_ports"), i, x) if (in->nports < INST_MAX_PORTS)
		in->ports[in->nports++] = (uint16_t)json_integer_value(x); /* stored as checked */
	json_array_foreach(json_object_get(o, "node_detail"), i, x) {
		if (in->nnodes == INST_MAX_NODES)
			break;
		if (!inst_nodes_reserve(in, in->nnodes + 1)) {
			inst_free(in);
			sl_diag_set(d, SL_ENOMEM, "out of memory");
			return NULL;
		}
		struct inst_node *n = &in->nodes[in->nnodes++];
		inst_nfield(c, &n->node, FLEET_NAME_MAX + 1, x, "node");
		n->gpus = mask_of(json_object_get(x, "gpus"));
		n->cpus = (int)json_integer_value(json_object_get(x, "cpus"));
		n->mem_mib = json_integer_value(json_object_get(x, "mem_mib"));
		n->whole = json_is_true(json_object_get(x, "whole"));
		inst_sfield(n->rep_word, sizeof(n->rep_word), x, "rep");
		n->rep = inst_report_parse(n->rep_word);
		n->rep_epoch = json_integer_value(json_object_get(x, "rep_epoch"));
		inst_tsfield(&n->progress, INST_PROGRESS_SIZE, x, "progress");
		inst_tsfield(&n->error, INST_ERROR_SIZE, x, "error");
		n->ssh_port = (int)json_integer_value(json_object_get(x, "ssh_port"));
		n->ports = inst_text_of(json_object_get(x, "ports"));
		n->host_keys = inst_text_of(json_object_get(x, "host_keys"));
		n->running_since_ns = inst_tfield(x, "running_since");
		n->stopped_at_ns = inst_tfield(x, "stopped_at");
		inst_sfield(n->stopped_by, sizeof(n->stopped_by), x, "stopped_by");
		n->idle_since_ns = inst_tfield(x, "idle_since");
	}
	in->epoch = json_integer_value(json_object_get(o, "epoch"));
	inst_nfield(c, &in->migrate_from, FLEET_NAME_MAX + 1, o, "migrate_from");
	in->mig_rep = (enum inst_report)json_integer_value(json_object_get(o, "mig_rep"));
	in->mig_epoch = json_integer_value(json_object_get(o, "mig_epoch"));
	in->mig_removing = json_is_true(json_object_get(o, "mig_removing"));
	in->mig_first_run = json_is_true(json_object_get(o, "mig_first_run"));
	in->created_ns = inst_tfield(o, "created_at");
	in->running_since_ns = inst_tfield(o, "running_since");
	in->stopped_ns = inst_tfield(o, "stopped_at");
	in->released_ns = inst_tfield(o, "released_at");
	in->broke_since_ns = inst_tfield(o, "broke_since");
	inst_nfield(c, &in->gpu_site, FLEET_NAME_MAX + 1, o, "gpu_site");
	inst_nfield(c, &in->gpu_region, FLEET_NAME_MAX + 1, o, "gpu_region");
	inst_nfield(c, &in->gpu_model, INST_MODEL_SIZE, o, "gpu_model");
	const json_t *bill = json_object_get(o, "billing");
	in->ngpu_segs = segs_from(json_object_get(bill, "gpu"), &in->gpu_segs, &in->capgpu_segs, "gpus");
	in->nnogpu_segs = segs_from(json_object_get(bill, "no_gpu"), &in->nogpu_segs,
				    &in->capnogpu_segs, "units");
	if (in->ngpu_segs < 0 || in->nnogpu_segs < 0) {
		in->ngpu_segs = in->nnogpu_segs = 0;
		inst_free(in);
		sl_diag_set(d, SL_ENOMEM, "out of memory");
		return NULL;
	}
	in->disk_from_ns = inst_tfield(json_object_get(bill, "storage"), "from");
	in->disk_to_ns = inst_tfield(json_object_get(bill, "storage"), "to");
	json_array_foreach(json_object_get(o, "history"), i, x) {
		int hs = inst_state_parse(json_string_value(json_object_get(x, "state")));
		if (hs >= 0)
			inst_hist_add(in, inst_tfield(x, "at"), (enum inst_state)hs,
				 json_string_value(json_object_get(x, "reason")));
	}
	in->tracked = json_is_true(json_object_get(o, "tracked"));
	return in;
}


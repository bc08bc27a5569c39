/* inst_store.c - STATE_DIR/instances/ID/state.json: what the agent knows of
 * an instance across its own restarts (the item as received, what runs, the
 * ports and id range it holds, the op in flight). Rewritten atomically on
 * every change; read back by inst_sup_new, which then re-adopts the
 * container by name. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "inst_int.h"
#include "log.h"
#include "work_int.h"

static const char *const phases[] = {"none", "running", "stopped", "failed", "removed",
				     "exported"};

const char *inst_phase_name(enum inst_phase p)
{
	return phases[p];
}

void inst_free(struct inst *in)
{
	if (!in)
		return;
	inst_spec_release(&in->spec);
	json_decref(in->item);
	free(in);
}

enum sl_err inst_save(struct inst_sup *s, struct inst *in, struct sl_diag *d)
{
	char dir[STATE_PATH_MAX], path[STATE_PATH_MAX];
	enum sl_err e;
	if ((e = state_path(dir, sizeof(dir), s->dir, d, "instances/%s", in->spec.id)) != SL_OK ||
	    (e = state_mkdirs(dir, 0700, d)) != SL_OK ||
	    (e = state_path(path, sizeof(path), dir, d, "state.json")) != SL_OK)
		return e;
	json_t *ports = json_array();
	for (int i = 0; ports && i < in->spec.nports; i++)
		json_array_append_new(ports, json_integer(in->host_ports[i]));
	json_t *o = json_pack("{s:O, s:s, s:s, s:I, s:I, s:I, s:I, s:i, s:o*, s:I, s:s, s:b, "
			      "s:i, s:i, s:I, s:s, s:s}",
			      "item", in->item, "phase", phases[in->phase], "stopped_by",
			      in->stopped_by, "stop_epoch", (json_int_t)in->stop_epoch,
			      "failed_epoch", (json_int_t)in->failed_epoch, "running_since",
			      (json_int_t)in->running_since, "stopped_at", (json_int_t)in->stopped_at,
			      "ssh_port", in->ssh_port, "host_ports", ports, "uid_base",
			      (json_int_t)in->uid_base, "cfg", in->cfg, "imported", in->imported,
			      "op", (int)in->op, "op_pid", (int)in->op_pid, "op_ticks",
			      (json_int_t)in->op_ticks, "error", in->error, "fingerprint",
			      in->fingerprint);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!text)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	e = state_write_atomic(path, text, strlen(text), 0600, d);
	free(text);
	return e;
}

static json_int_t geti(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static void gets_(const json_t *o, const char *k, char *buf, size_t n)
{
	const char *v = json_string_value(json_object_get(o, k));
	snprintf(buf, n, "%s", v ? v : "");
}

static struct inst *load_one(struct inst_sup *s, const char *id)
{
	char path[STATE_PATH_MAX], *text = NULL;
	size_t len;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (state_path(path, sizeof(path), s->dir, &d, "instances/%s/state.json", id) != SL_OK ||
	    sl_read_file(path, STATE_WORK_JSON_MAX, &text, &len, &d) != SL_OK) {
		sl_log_warn("cannot read an instance's state; skipping it", "instance=%s error=%s", id,
			    d.msg);
		return NULL;
	}
	json_error_t je;
	json_t *o = json_loadb(text, len, 0, &je);
	free(text);
	struct inst *in = calloc(1, sizeof(*in));
	json_t *item = json_object_get(o, "item");
	if (!in || !o || inst_spec_from_json(item, &in->spec, &d) != SL_OK) {
		sl_log_warn("an instance's state is not ours to read; skipping it", "file=%s error=%s",
			    path, o ? d.msg : je.text);
		json_decref(o);
		free(in);
		return NULL;
	}
	in->item = json_incref(item);
	const char *ph = json_string_value(json_object_get(o, "phase"));
	for (size_t i = 0; ph && i < sizeof(phases) / sizeof(phases[0]); i++)
		if (!strcmp(ph, phases[i]))
			in->phase = (enum inst_phase)i;
	gets_(o, "stopped_by", in->stopped_by, sizeof(in->stopped_by));
	in->stop_epoch = geti(o, "stop_epoch");
	in->failed_epoch = geti(o, "failed_epoch");
	in->running_since = geti(o, "running_since");
	in->stopped_at = geti(o, "stopped_at");
	in->ssh_port = (int)geti(o, "ssh_port");
	json_t *hp = json_object_get(o, "host_ports");
	for (int i = 0; i < in->spec.nports && i < (int)json_array_size(hp); i++)
		in->host_ports[i] = (int)json_integer_value(json_array_get(hp, (size_t)i));
	in->uid_base = (uint32_t)geti(o, "uid_base");
	gets_(o, "cfg", in->cfg, sizeof(in->cfg));
	in->imported = json_is_true(json_object_get(o, "imported"));
	int op = (int)geti(o, "op");
	in->op = op >= OP_NONE && op <= OP_EXPORT ? (enum inst_op)op : OP_NONE;
	in->op_pid = (pid_t)geti(o, "op_pid");
	in->op_ticks = (uint64_t)geti(o, "op_ticks");
	in->op_child = false;
	gets_(o, "error", in->error, sizeof(in->error));
	gets_(o, "fingerprint", in->fingerprint, sizeof(in->fingerprint));
	json_decref(o);
	return in;
}

void inst_load_all(struct inst_sup *s)
{
	char dir[STATE_PATH_MAX];
	if (state_path(dir, sizeof(dir), s->dir, NULL, "instances") != SL_OK)
		return;
	DIR *dh = opendir(dir);
	struct dirent *de;
	while (dh && (de = readdir(dh)) && s->n < INST_MAX) {
		if (de->d_name[0] == '.')
			continue;
		struct inst *in = load_one(s, de->d_name);
		if (!in)
			continue;
		s->v[s->n++] = in;
		/* re-adopt: the container's state now (an op of the agent before
		 * its restart is polled until it ends) */
		if (in->op == OP_NONE && in->phase != PH_REMOVED) {
			char st[64], cfg[INST_CFG_MAX];
			pid_t conmon = 0;
			bool was_running = in->phase == PH_RUNNING;
			if (inst_inspect(s, in, st, sizeof(st), &conmon, cfg, sizeof(cfg)) &&
			    !strcmp(st, "running") && conmon > 0) {
				in->phase = PH_RUNNING;
				in->conmon = conmon;
				in->conmon_ticks = work_proc_start_ticks(conmon);
			} else if (was_running) {
				in->phase = PH_STOPPED;
				snprintf(in->stopped_by, sizeof(in->stopped_by), "guest");
				in->stop_epoch = in->spec.epoch;
				in->stopped_at = (int64_t)time(NULL);
			}
		}
		sl_log_info("instance adopted", "instance=%s phase=%s", in->spec.id,
			    phases[in->phase]);
	}
	if (dh)
		closedir(dh);
}

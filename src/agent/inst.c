/* inst.c - the instance supervisor: desired state, ops, supervision and the
 * report (inst.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "file.h"
#include "inst_int.h"
#include "log.h"
#include "uid_ranges.h"
#include "work_int.h"

static int64_t wall(void)
{
	return (int64_t)time(NULL);
}

static char *dupz(const char *s)
{
	return s ? strdup(s) : NULL;
}

enum sl_err inst_sup_new(const struct inst_opts *o, int64_t now_ns, struct inst_sup **out,
			 struct sl_diag *d)
{
	(void)now_ns;
	struct inst_sup *s = calloc(1, sizeof(*s));
	char vol[STATE_PATH_MAX];
	*out = NULL;
	if (!s)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	enum sl_err e = state_path(vol, sizeof(vol), o->state_dir, d, "volumes");
	s->dir = strdup(o->state_dir);
	s->storage = strdup(o->storage_dir ? o->storage_dir : vol);
	s->server = dupz(o->server);
	s->ca = dupz(o->ca);
	s->token = dupz(o->token);
	if (e != SL_OK || !s->dir || !s->storage) {
		inst_sup_free(s);
		return e != SL_OK ? e : sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	s->port_lo = o->port_lo > 0 ? o->port_lo : INST_PORT_LO_DEFAULT;
	s->port_hi = o->port_hi > 0 ? o->port_hi : INST_PORT_HI_DEFAULT;
	snprintf(s->node, sizeof(s->node), "%s", o->node ? o->node : "");
	s->eng = o->eng;
	s->disc = o->disc;
	char idir[STATE_PATH_MAX];
	if ((e = state_path(idir, sizeof(idir), s->dir, d, "instances")) != SL_OK ||
	    (e = state_mkdirs(idir, 0700, d)) != SL_OK) {
		inst_sup_free(s);
		return e;
	}
	inst_load_all(s);
	*out = s;
	return SL_OK;
}

void inst_sup_free(struct inst_sup *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		inst_free(s->v[i]);
	free(s->dir);
	free(s->storage);
	free(s->server);
	free(s->ca);
	free(s->token);
	free(s);
}

void inst_sup_set_token(struct inst_sup *s, const char *token)
{
	char *t = s ? dupz(token) : NULL;
	if (!t)
		return;
	free(s->token);
	s->token = t;
}

size_t inst_sup_count(const struct inst_sup *s)
{
	return s->n;
}

static struct inst *find(const struct inst_sup *s, const char *id)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i]->spec.id, id) == 0)
			return s->v[i];
	return NULL;
}

bool inst_sup_running(const struct inst_sup *s, const char *id, char *name, size_t n)
{
	const struct inst *in = s && id ? find(s, id) : NULL;
	if (!in || in->phase != PH_RUNNING || in->op != OP_NONE || !engine_ok(s->eng))
		return false;
	inst_ctr_name(s, in, name, n);
	return true;
}

static void mark(struct inst_sup *s, struct inst *in)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	s->dirty = true;
	if (inst_save(s, in, &d) != SL_OK)
		sl_log_error("cannot save an instance's state", "instance=%s error=%s", in->spec.id,
			     d.msg);
}

enum sl_err inst_sup_apply(struct inst_sup *s, const json_t *arr, int64_t now_ns, int *ignored,
			   struct sl_diag *d)
{
	(void)now_ns;
	size_t n = json_array_size(arr), i;
	json_t *o;
	if (ignored)
		*ignored = 0;
	if (!arr)
		return SL_OK;
	if (!json_is_array(arr) || n > INST_MAX)
		return sl_diag_set(d, SL_EINVAL, "\"instances\" must be an array of at most %d items",
				   INST_MAX);
	struct inst_spec *specs = calloc(n ? n : 1, sizeof(*specs));
	if (!specs)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	enum sl_err e = SL_OK;
	json_array_foreach(arr, i, o) {
		if ((e = inst_spec_from_json(o, &specs[i], d)) != SL_OK)
			break;
		for (size_t k = 0; k < i && e == SL_OK; k++)
			if (!strcmp(specs[k].id, specs[i].id))
				e = sl_diag_set(d, SL_EINVAL, "instance %s is listed twice", specs[i].id);
		if (e != SL_OK)
			break;
	}
	size_t fresh = 0;
	for (size_t k = 0; e == SL_OK && k < n; k++)
		fresh += find(s, specs[k].id) ? 0 : 1;
	if (e == SL_OK && s->n + fresh > INST_MAX)
		e = sl_diag_set(d, SL_ELIMIT, "more than %d instances on this node", INST_MAX);
	if (e != SL_OK) {
		for (size_t k = 0; k < n; k++)
			inst_spec_release(&specs[k]);
		free(specs);
		return e;
	}
	for (size_t k = 0; k < s->n; k++)
		s->v[k]->desired = false;
	json_array_foreach(arr, i, o) {
		struct inst *in = find(s, specs[i].id);
		if (in && specs[i].epoch < in->spec.epoch) {
			sl_log_warn("ignoring an instance item of an older epoch", "instance=%s epoch=%lld "
				    "seen=%lld", specs[i].id, (long long)specs[i].epoch,
				    (long long)in->spec.epoch);
			if (ignored)
				(*ignored)++;
			in->desired = true;
			inst_spec_release(&specs[i]);
			continue;
		}
		json_t *item = json_deep_copy(o);
		if (!in) {
			in = calloc(1, sizeof(*in));
			if (!in || !item) {
				free(in);
				json_decref(item);
				inst_spec_release(&specs[i]);
				continue; /* out of memory: next time */
			}
			in->failed_epoch = -1;
			in->stop_epoch = -1;
			s->v[s->n++] = in;
			sl_log_info("new instance", "instance=%s epoch=%lld state=%s", specs[i].id,
				    (long long)specs[i].epoch, inst_want_name(specs[i].want));
		} else if (!item) {
			inst_spec_release(&specs[i]);
			in->desired = true;
			continue;
		} else if (specs[i].epoch != in->spec.epoch || specs[i].want != in->spec.want) {
			sl_log_info("instance desired state", "instance=%s epoch=%lld state=%s",
				    specs[i].id, (long long)specs[i].epoch,
				    inst_want_name(specs[i].want));
			if (specs[i].epoch > in->spec.epoch && in->phase == PH_REMOVED &&
			    specs[i].want != WANT_REMOVE)
				sl_log_warn("a removed instance is asked for again; it starts empty",
					    "instance=%s", specs[i].id);
		}
		bool changed = !in->item || !json_equal(in->item, item);
		inst_spec_release(&in->spec);
		in->spec = specs[i];
		json_decref(in->item);
		in->item = item;
		in->desired = true;
		if (changed)
			mark(s, in);
	}
	free(specs);
	return SL_OK;
}

/* ---- ops ------------------------------------------------------------------ */

static void read_small(const struct inst_sup *s, const struct inst *in, const char *name,
		       char *buf, size_t n)
{
	char path[STATE_PATH_MAX], *text = NULL;
	size_t len = 0;
	buf[0] = '\0';
	if (inst_path(s, in, path, sizeof(path), name) != SL_OK || access(path, F_OK) != 0)
		return;
	if (sl_read_file(path, 64 << 10, &text, &len, NULL) == SL_OK) {
		len = strcspn(text, "\n");
		snprintf(buf, n, "%.*s", (int)len, text);
	}
	free(text);
}

/* Re-reads the container's state after an op we did not see end. */
static void resync(struct inst_sup *s, struct inst *in)
{
	char st[64], cfg[INST_CFG_MAX];
	pid_t conmon = 0;
	if (!inst_inspect(s, in, st, sizeof(st), &conmon, cfg, sizeof(cfg))) {
		if (in->phase == PH_RUNNING) {
			in->phase = PH_STOPPED;
			in->stopped_at = wall();
		}
		in->cfg[0] = '\0';
		in->conmon = 0;
		return;
	}
	snprintf(in->cfg, sizeof(in->cfg), "%s", cfg);
	if (strcmp(st, "running") == 0 && conmon > 0) {
		if (in->phase != PH_RUNNING)
			in->running_since = wall();
		in->phase = PH_RUNNING;
		in->conmon = conmon;
		in->conmon_ticks = work_proc_start_ticks(conmon);
	} else if (in->phase == PH_RUNNING) {
		in->phase = PH_STOPPED;
		snprintf(in->stopped_by, sizeof(in->stopped_by), "guest");
		in->stop_epoch = in->spec.epoch;
		in->stopped_at = wall();
		in->conmon = 0;
	}
}

static void op_done(struct inst_sup *s, struct inst *in, bool ok)
{
	enum inst_op op = in->op;
	char err[INST_ERROR_MAX];
	in->op = OP_NONE;
	in->op_pid = 0;
	read_small(s, in, "op.err", err, sizeof(err));
	if (!ok && !err[0])
		snprintf(err, sizeof(err), "the agent's %s operation ended without a result "
			 "(see STATE_DIR/instances/%s/op.log)",
			 op == OP_UP ? "start" : op == OP_DOWN ? "stop" : "remove", in->spec.id);
	switch (op) {
	case OP_UP:
		if (ok) {
			in->error[0] = '\0';
			if (in->spec.migrate_from[0])
				in->imported = true;
			inst_ssh_load_fingerprint(s, in);
			resync(s, in);
			if (in->phase != PH_RUNNING) {
				in->phase = PH_FAILED;
				in->failed_epoch = in->spec.epoch;
				snprintf(in->error, sizeof(in->error), "the container stopped at once "
					 "(sshd could not start?); see `podman logs`");
			} else {
				in->stopped_by[0] = '\0';
				sl_log_info("instance running", "instance=%s ssh_port=%d", in->spec.id,
					    in->ssh_port);
			}
		} else {
			in->phase = PH_FAILED;
			in->failed_epoch = in->spec.epoch;
			snprintf(in->error, sizeof(in->error), "%s", err);
			sl_log_warn("instance start failed", "instance=%s error=%s", in->spec.id, err);
		}
		break;
	case OP_DOWN:
		in->conmon = 0;
		if (ok) {
			in->phase = PH_STOPPED;
			in->stopped_at = wall();
			snprintf(in->stopped_by, sizeof(in->stopped_by), "agent");
			in->stop_epoch = in->spec.epoch;
		} else {
			snprintf(in->error, sizeof(in->error), "%s", err);
			resync(s, in);
		}
		break;
	case OP_REMOVE:
		if (ok) {
			in->phase = PH_REMOVED;
			in->error[0] = '\0';
			in->fingerprint[0] = '\0';
			in->ssh_port = 0;
			memset(in->host_ports, 0, sizeof(in->host_ports));
			if (in->uid_base && s->eng)
				uid_range_release(engine_uid_dir(s->eng), engine_name(s->eng),
						  in->spec.id);
			in->uid_base = 0;
			sl_log_info("instance removed", "instance=%s", in->spec.id);
		} else {
			snprintf(in->error, sizeof(in->error), "%s", err);
		}
		break;
	case OP_EXPORT:
		if (ok) {
			in->phase = PH_EXPORTED;
			in->error[0] = '\0';
		} else {
			in->phase = PH_FAILED;
			in->failed_epoch = in->spec.epoch;
			snprintf(in->error, sizeof(in->error), "%s", err);
		}
		break;
	case OP_NONE:
		break;
	}
	in->reported = false;
	mark(s, in);
}

/* The op in flight ended? Reaps ours; polls adopted ones. */
static bool op_poll(struct inst_sup *s, struct inst *in)
{
	if (in->op == OP_NONE)
		return false;
	if (in->op_child) {
		int st;
		pid_t r = waitpid(in->op_pid, &st, WNOHANG);
		if (r == 0 || (r < 0 && errno == EINTR))
			return false;
		op_done(s, in, r == in->op_pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
		return true;
	}
	if (in->op_pid > 0 && kill(in->op_pid, 0) == 0 &&
	    work_proc_start_ticks(in->op_pid) == in->op_ticks)
		return false;
	/* an op of the agent before a restart ended: look at what it left */
	in->op = OP_NONE;
	in->op_pid = 0;
	resync(s, in);
	in->reported = false;
	mark(s, in);
	return true;
}

static bool spawn(struct inst_sup *s, struct inst *in, enum inst_op op)
{
	if (inst_op_spawn(s, in, op)) {
		mark(s, in);
		return true;
	}
	if (op == OP_UP) {
		in->phase = PH_FAILED;
		in->failed_epoch = in->spec.epoch;
	}
	mark(s, in);
	return true;
}

static bool start_up(struct inst_sup *s, struct inst *in)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	/* its range again (the table is a tmpfs: a reboot empties it) */
	uint32_t base = 0;
	if (s->eng && uid_range_take_at(engine_uid_dir(s->eng), engine_name(s->eng), in->spec.id,
					in->uid_base, &base, &d) != SL_OK) {
		in->phase = PH_FAILED;
		in->failed_epoch = in->spec.epoch;
		snprintf(in->error, sizeof(in->error), "%s", d.msg);
		mark(s, in);
		return true;
	}
	if (in->uid_base && base != in->uid_base)
		sl_log_warn("an instance's id range was taken by someone else; its files keep the "
			    "old owners", "instance=%s old=%u new=%u", in->spec.id, in->uid_base, base);
	if (s->eng)
		in->uid_base = base;
	if (!inst_ports_assign(s, in)) {
		in->phase = PH_FAILED;
		in->failed_epoch = in->spec.epoch;
		mark(s, in);
		return true;
	}
	if (in->phase == PH_REMOVED)
		in->phase = PH_NONE;
	in->error[0] = '\0';
	return spawn(s, in, OP_UP);
}

/* What the desired state wants next, when no op is in flight. */
static bool drive(struct inst_sup *s, struct inst *in)
{
	const struct inst_spec *sp = &in->spec;
	char cfg[INST_CFG_MAX];
	switch (sp->want) {
	case WANT_RUN:
		if (in->phase == PH_RUNNING) {
			inst_cfg_key(s, in, cfg, sizeof(cfg));
			if (!in->cfg[0] || !strcmp(cfg, in->cfg))
				return false;
			/* new GPUs or limits: stop, then make it anew (disks kept) */
			sl_log_info("instance config changed; restarting it", "instance=%s",
				    sp->id);
			in->recreate = true;
			return spawn(s, in, OP_DOWN);
		}
		if (in->phase == PH_FAILED && in->failed_epoch == sp->epoch)
			return false;
		if (in->phase == PH_STOPPED && !strcmp(in->stopped_by, "guest") &&
		    in->stop_epoch == sp->epoch)
			return false; /* stopped from inside: until the next start */
		if (in->phase == PH_EXPORTED || (in->phase == PH_REMOVED && !in->desired))
			return false;
		return start_up(s, in);
	case WANT_STOP:
		if (in->phase == PH_RUNNING)
			return spawn(s, in, OP_DOWN);
		return false;
	case WANT_EXPORT:
		if (in->phase == PH_RUNNING)
			return spawn(s, in, OP_DOWN);
		if (in->phase == PH_EXPORTED ||
		    (in->phase == PH_FAILED && in->failed_epoch == sp->epoch))
			return false;
		return spawn(s, in, OP_EXPORT);
	case WANT_REMOVE:
		if (in->phase == PH_REMOVED)
			return false;
		return spawn(s, in, OP_REMOVE);
	}
	return false;
}

bool inst_sup_tick(struct inst_sup *s, int64_t now_ns)
{
	(void)now_ns;
	bool changed = false;
	for (size_t i = 0; i < s->n; i++) {
		struct inst *in = s->v[i];
		if (op_poll(s, in))
			changed = true;
		if (in->op != OP_NONE)
			continue;
		if (in->recreate && in->phase != PH_RUNNING) {
			in->recreate = false;
			changed = true;
		}
		/* a running container whose conmon ended stopped by itself */
		if (in->phase == PH_RUNNING &&
		    (in->conmon <= 0 || kill(in->conmon, 0) != 0 ||
		     work_proc_start_ticks(in->conmon) != in->conmon_ticks)) {
			resync(s, in);
			if (in->phase != PH_RUNNING) {
				sl_log_info("instance stopped by itself", "instance=%s", in->spec.id);
				in->reported = false;
				mark(s, in);
				changed = true;
			}
		}
		if (in->desired && drive(s, in))
			changed = true;
	}
	/* forget removed instances the controller saw and no longer lists */
	for (size_t i = 0; i < s->n;) {
		struct inst *in = s->v[i];
		if (in->phase == PH_REMOVED && in->reported && !in->desired && in->op == OP_NONE) {
			char dir[STATE_PATH_MAX];
			if (state_path(dir, sizeof(dir), s->dir, NULL, "instances/%s", in->spec.id) ==
			    SL_OK) {
				char p[STATE_PATH_MAX + 32];
				static const char *const f[] = {"state.json", "op.log", "op.err",
								"op.progress"};
				for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
					snprintf(p, sizeof(p), "%s/%s", dir, f[k]);
					(void)unlink(p);
				}
				(void)rmdir(dir);
			}
			inst_free(in);
			s->v[i] = s->v[--s->n];
			continue;
		}
		i++;
	}
	return changed;
}

/* ---- the report ----------------------------------------------------------- */

static void iso(int64_t t, char *buf, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const char *report_state(const struct inst_sup *s, const struct inst *in, char *prog,
				size_t n)
{
	prog[0] = '\0';
	if (in->op != OP_NONE)
		read_small(s, in, "op.progress", prog, n);
	switch (in->op) {
	case OP_UP:
		if (!strncmp(prog, "pulling", 7))
			return "pulling";
		if (!strncmp(prog, "importing", 9))
			return "importing";
		return "creating";
	case OP_DOWN:
		return "running"; /* until it is stopped */
	case OP_EXPORT:
		return "exporting";
	case OP_REMOVE:
		return "stopped";
	case OP_NONE:
		break;
	}
	switch (in->phase) {
	case PH_RUNNING:
		return "running";
	case PH_FAILED:
		return "failed";
	case PH_REMOVED:
		return "removed";
	case PH_EXPORTED:
		return "exported";
	case PH_NONE:
		return in->spec.want == WANT_RUN ? "creating" : "stopped";
	case PH_STOPPED:
		break;
	}
	return "stopped";
}

static json_t *report_one(const struct inst_sup *s, const struct inst *in)
{
	char prog[256], t[32];
	const char *st = report_state(s, in, prog, sizeof(prog));
	json_t *o = json_pack("{s:s, s:i, s:I, s:s}", "instance", in->spec.id, "node_rank",
			      in->spec.node_rank, "epoch", (json_int_t)in->spec.epoch, "state", st);
	if (!o)
		return NULL;
	if (prog[0])
		json_object_set_new(o, "progress", json_string(prog));
	if (in->error[0] && (in->phase == PH_FAILED || !strcmp(st, "failed")))
		json_object_set_new(o, "error", json_string(in->error));
	if (in->phase != PH_REMOVED && in->ssh_port > 0) {
		json_object_set_new(o, "ssh_port", json_integer(in->ssh_port));
		json_t *ports = json_array();
		for (int i = 0; ports && i < in->spec.nports; i++)
			json_array_append_new(ports, json_pack("{s:i, s:i}", "port", in->spec.ports[i],
							       "host_port", in->host_ports[i]));
		json_object_set_new(o, "ports", ports ? ports : json_array());
	}
	if (in->phase != PH_REMOVED && in->fingerprint[0])
		json_object_set_new(o, "host_keys",
				    json_pack("[{s:s, s:s}]", "type", "ssh-ed25519", "fingerprint",
					      in->fingerprint));
	if (in->running_since && !strcmp(st, "running")) {
		iso(in->running_since, t, sizeof(t));
		json_object_set_new(o, "running_since", json_string(t));
	}
	if (in->stopped_at && !strcmp(st, "stopped")) {
		iso(in->stopped_at, t, sizeof(t));
		json_object_set_new(o, "stopped_at", json_string(t));
		if (in->stopped_by[0])
			json_object_set_new(o, "stopped_by", json_string(in->stopped_by));
	}
	return o;
}

json_t *inst_sup_report(const struct inst_sup *s)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < s->n; i++) {
		json_t *o = report_one(s, s->v[i]);
		if (!o || json_array_append_new(a, o) != 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

void inst_sup_reported(struct inst_sup *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i]->op == OP_NONE)
			s->v[i]->reported = true;
}

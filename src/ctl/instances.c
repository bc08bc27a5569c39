/* instances.c - instances (instances.h): the records and their store rows,
 * the state changes (instance_sm.h decides which are allowed), what each
 * node is told (the "instances" array of GET /v1/agent/work), what agents
 * report in heartbeats, the lease-change hook and the loop's timers (idle
 * stop, --wait starts, retention).
 *
 * Desired state is a function of the record (state, epoch, nodes, mode,
 * migration); every change to it bumps the version of each node concerned
 * through the jobs' per-node versions (jobs_node_changed), so a waiting work
 * poll is answered in the same turn. What agents report only updates the
 * nodes' fields; a report changes the instance's state only through
 * inst_sm_from_reports. A node without an agent in a --simulate controller
 * is taken to do at once what it is told (the demo and the API tests). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents.h"
#include "audit_log.h"
#include "billing.h"
#include "buf.h"
#include "events.h"
#include "instances_int.h"
#include "jobs.h"
#include "job_env.h"
#include "history.h"
#include "log.h"

/* ---- lookup ---- */

/* Reads instance seq from history (or, in an old store, the live table). */
static struct instance *inst_load(struct ctl *c, uint64_t seq)
{
	char id[INST_ID_LEN + 8], *row = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	snprintf(id, sizeof(id), "in-%06llu", (unsigned long long)seq);
	if (store_get(c->store, STORE_INSTANCE_HISTORY, id, &row, &d) &&
	    store_get(c->store, STORE_INSTANCES, id, &row, &d))
		return NULL;
	json_t *o = json_loads(row, JSON_REJECT_DUPLICATES, NULL);
	free(row);
	struct instance *in = o ? inst_from_json(c, o, &d) : NULL;
	json_decref(o);
	if (in && in->seq != seq) {
		inst_free(in);
		in = NULL;
	}
	return in;
}

const struct instance *inst_at(struct ctl *c, int i, struct instance **tmp)
{
	struct ctl_instances *is = c->instances;
	*tmp = NULL;
	if (!is || i < 0 || i >= is->n)
		return NULL;
	if (is->v[i])
		return is->v[i];
	return *tmp = inst_load(c, (uint64_t)i + 1);
}

struct instance *inst_find(struct ctl *c, const char *id)
{
	struct ctl_instances *is = c->instances;
	unsigned long long seq = 0;
	char tail;
	if (!is || !id || sscanf(id, "in-%llu%c", &seq, &tail) != 1 || seq < 1 ||
	    seq > (unsigned long long)is->n)
		return NULL;
	struct instance *in = is->v[seq - 1];
	if (!in && (in = inst_load(c, seq)))
		is->v[seq - 1] = in; /* kept: handlers hold it through the call */
	return in && !strcmp(in->id, id) ? in : NULL;
}

const char *instances_tenant(struct ctl *c, const char *id)
{
	const struct instance *in = inst_find(c, id);
	return in ? in->tenant : NULL;
}

enum sl_err instances_job_lease(struct ctl *c, const char *id, const char *tenant, char *lease,
				size_t n, struct sl_diag *d)
{
	const struct instance *in = inst_find(c, id);
	if (!in || (tenant && strcmp(tenant, in->tenant))) {
		sl_diag_hint(d, "'suanli instance list' lists yours");
		return sl_diag_set(d, SL_ENOTFOUND, "no instance with id '%.64s'", id);
	}
	if (in->state != IS_RUNNING || in->mode != IM_GPU || !in->lease[0]) {
		sl_diag_hint(d, "start it (suanli instance start %s) and wait until it runs", in->id);
		return sl_diag_set(d, SL_ECONFLICT, "instance %s is %s%s; jobs run inside a running instance with GPUs",
				   in->id, inst_state_name(in->state), in->mode == IM_NOGPU ? " without GPUs" : "");
	}
	snprintf(lease, n, "%s", in->lease);
	return SL_OK;
}

struct instance *inst_path(struct ctl_call *call)
{
	struct instance *in = inst_find(call->ctl, call->param[0]);
	const char *own = ctl_call_tenant(call);
	if (!in || (own && strcmp(own, in->tenant))) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "no instance with id '%.64s'", call->param[0]);
		ctl_answer_error(call, SL_ENOTFOUND, msg, "'suanli instance list' lists yours");
		return NULL;
	}
	return in;
}

bool instances_own_lease(const struct ctl *c, const struct ctl_lease *l)
{
	const struct ctl_instances *is = c->instances;
	for (int i = 0; is && i < is->n; i++)
		if (is->v[i] && is->v[i]->tracked && !strcmp(is->v[i]->lease, l->id))
			return true;
	return false;
}

static struct instance *by_lease(struct ctl *c, const char *lease)
{
	struct ctl_instances *is = c->instances;
	for (int i = 0; is && lease[0] && i < is->n; i++)
		if (is->v[i] && is->v[i]->tracked && !strcmp(is->v[i]->lease, lease))
			return is->v[i];
	return NULL;
}

/* ---- records ---- */

void inst_name(struct ctl *c, const char **dst, const char *s, size_t size)
{
	char cut[IMAGE_REF_MAX + 1];
	if (!s)
		s = "";
	if (size > sizeof(cut))
		size = sizeof(cut);
	size_t len = strnlen(s, size - 1);
	if (s[len]) {
		memcpy(cut, s, len);
		cut[len] = 0;
		s = cut;
	}
	const char *v = s[0] ? ctl_name(c, s) : "";
	if (!v)
		sl_log_error("out of memory keeping a name", "name=%.64s", s);
	*dst = v ? v : "";
}

void inst_node_clear(struct inst_node *nd)
{
	free(nd->ports);
	free(nd->host_keys);
	free(nd->progress);
	free(nd->error);
	memset(nd, 0, sizeof(*nd));
	nd->node = "";
}

struct instance *inst_alloc(void)
{
	struct instance *in = calloc(1, sizeof(*in));
	if (!in || !inst_nodes_reserve(in, 1)) { /* nodes[0] is always there */
		free(in);
		return NULL;
	}
	in->tenant = in->user = in->model = in->region = in->site = in->image = in->image_ref = "";
	in->min_driver = in->ssh_key = in->migrate_from = "";
	in->gpu_site = in->gpu_region = in->gpu_model = "";
	return in;
}

void inst_free(struct instance *in)
{
	if (!in)
		return;
	for (int k = 0; k < in->capnodes; k++)
		inst_node_clear(&in->nodes[k]);
	sl_ctext_drop(in->reason);
	sl_ctext_drop(in->authorized_keys);
	for (int i = 0; i < in->nhist; i++)
		if (in->hist[i].reason != inst_hist_empty)
			sl_ctext_drop(in->hist[i].reason);
	free(in->hist);
	free(in->nodes);
	free(in->gpu_segs);
	free(in->nogpu_segs);
	free(in);
}

char *inst_text_of(const json_t *v)
{
	return v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
}

bool inst_keys_set(struct ctl *c, struct instance *in, const json_t *keys)
{
	struct ctl_instances *is = c->instances;
	char *text = inst_text_of(keys);
	if (text && is && is->keys_last && strcmp(text, is->keys_last) == 0) {
		in->authorized_keys = sl_ctext_ref(is->keys_last);
	} else if (text && (in->authorized_keys = sl_ctext_dup(text)) && is) {
		sl_ctext_drop(is->keys_last);
		is->keys_last = sl_ctext_ref(in->authorized_keys);
	}
	free(text);
	return in->authorized_keys != NULL;
}

json_t *inst_json_of(const char *text)
{
	return text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
}

json_t *inst_keys_json(const struct instance *in)
{
	json_t *a = inst_json_of(in->authorized_keys);
	return a ? a : json_array();
}

bool inst_nodes_reserve(struct instance *in, int n)
{
	if (n <= in->capnodes)
		return true;
	if (n > INST_MAX_NODES)
		return false;
	struct inst_node *v = realloc(in->nodes, (size_t)n * sizeof(*v));
	if (!v)
		return false;
	memset(v + in->capnodes, 0, (size_t)(n - in->capnodes) * sizeof(*v));
	for (int k = in->capnodes; k < n; k++)
		v[k].node = "";
	in->nodes = v;
	in->capnodes = n;
	return true;
}

struct instance *inst_new(struct ctl *c)
{
	struct ctl_instances *is = c->instances;
	if (!is || is->n >= INST_MAX)
		return NULL;
	struct instance *in = inst_alloc();
	if (!in)
		return NULL;
	in->seq = (uint64_t)is->n + 1;
	snprintf(in->id, sizeof(in->id), "in-%06llu", (unsigned long long)in->seq);
	in->created_ns = c->now_ns;
	in->tracked = true;
	return in;
}

void inst_drop_last(struct ctl *c, struct instance *in)
{
	struct ctl_instances *is = c->instances;
	if (is->n > 0 && is->v[is->n - 1] == in) {
		is->v[--is->n] = NULL;
		is->nidle -= in->auto_stop_idle_s > 0;
	}
	inst_free(in);
}

bool inst_add(struct ctl *c, struct instance *in)
{
	struct ctl_instances *is = c->instances;
	if ((int)in->seq != is->n + 1 || sl_grow(&is->v, &is->cap, is->n + 1, INST_MAX))
		return false;
	is->v[is->n++] = in;
	is->nidle += in->auto_stop_idle_s > 0;
	return true;
}

char inst_hist_empty[1];

/* s cut to INST_REASON_MAX - 1 bytes, as the fixed buffers kept it, as a
 * counted text: like (a counted text, or NULL) when equal, else a new copy;
 * NULL for "" (and out of memory, logged). */
static char *reason_text(const char *s, char *like)
{
	size_t n = s ? strnlen(s, INST_REASON_MAX - 1) : 0;
	if (!n)
		return NULL;
	if (like && !strncmp(like, s, n) && !like[n])
		return sl_ctext_ref(like);
	char cut[INST_REASON_MAX];
	memcpy(cut, s, n);
	cut[n] = 0;
	char *t = sl_ctext_dup(cut);
	if (!t)
		sl_log_error("out of memory keeping a text", "text=%.64s", cut);
	return t;
}

void inst_reason_set(struct instance *in, const char *s)
{
	size_t n = s ? strnlen(s, INST_REASON_MAX - 1) : 0;
	if (in->reason && !strncmp(in->reason, s ? s : "", n) && !in->reason[n])
		return; /* unchanged */
	char *newest = in->nhist ? in->hist[in->nhist - 1].reason : NULL;
	char *t = reason_text(s, newest != inst_hist_empty ? newest : NULL);
	sl_ctext_drop(in->reason);
	in->reason = t;
}

void inst_hist_add(struct instance *in, int64_t at, enum inst_state s, const char *reason)
{
	if (in->nhist >= INST_MAX_HIST || sl_grow(&in->hist, &in->caphist, in->nhist + 1, INST_MAX_HIST)) {
		if (!in->nhist)
			return; /* out of memory before the first entry */
		if (in->hist[0].reason != inst_hist_empty)
			sl_ctext_drop(in->hist[0].reason);
		memmove(in->hist, in->hist + 1, (size_t)(in->nhist - 1) * sizeof(*in->hist));
		in->nhist--;
	}
	struct inst_hist *h = &in->hist[in->nhist++];
	h->at_ns = at;
	h->state = s;
	/* one copy with the instance's reason when the two are equal, as they
	 * are for the newest entry (bench/results/memory.md: 20,000 instances) */
	h->reason = reason_text(reason, in->reason);
	if (!h->reason)
		h->reason = inst_hist_empty;
}

void inst_bump(struct ctl *c, const struct instance *in)
{
	for (int k = 0; k < in->nnodes; k++)
		jobs_node_changed(c, in->nodes[k].node);
	if (in->migrate_from[0])
		jobs_node_changed(c, in->migrate_from);
}

bool inst_event(struct ctl *c, struct instance *in, enum inst_event e, const char *reason)
{
	enum inst_state to;
	if (!inst_sm_next(in->state, e, &to))
		return false;
	enum inst_state from = in->state;
	char why[INST_REASON_MAX];
	snprintf(why, sizeof(why), "%s", reason ? reason : ""); /* reason may be in->reason */
	reason = why;
	in->state = to;
	inst_reason_set(in, why);
	inst_hist_add(in, c->now_ns, to, reason);
	if (to == IS_STOPPED && from != IS_STOPPED)
		in->stopped_ns = c->now_ns;
	if (to == IS_RELEASED)
		in->released_ns = c->now_ns;
	if (to == IS_STARTING)
		in->running_since_ns = 0;
	sl_log_info("instance state", "instance=%s tenant=%s state=%s event=%s reason=%s", in->id,
		    in->tenant, inst_state_name(to), inst_event_name(e), inst_str(in->reason));
	inst_save(c, in);
	inst_bump(c, in);
	events_emit(c, "instance", in->id, inst_state_name(to), in->tenant); /* the console */
	return true;
}

/* ---- lifecycle ---- */

struct load_arg {
	struct ctl *c;
	struct sl_diag *d;
	struct ctl_hist_moves moves;
};

static enum sl_err load_row(void *arg, const char *id, const char *tenant, const char *text)
{
	struct load_arg *a = arg;
	struct ctl_instances *is = a->c->instances;
	(void)tenant;
	json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	struct instance *in = o ? inst_from_json(a->c, o, a->d) : NULL;
	json_decref(o);
	if (!in)
		return a->d->msg[0] ? SL_EPARSE : sl_diag_set(a->d, SL_EPARSE, "stored instance %s is not JSON", id);
	if (inst_in_history(in)) {
		/* An old store's released instance: moved to history after the scan. */
		if (in->seq > is->hist_seq)
			is->hist_seq = in->seq;
		inst_free(in);
		return ctl_hist_note(&a->moves, id, tenant);
	}
	if ((int)in->seq > is->cap) {
		int old = is->cap;
		enum sl_err ge = sl_grow(&is->v, &is->cap, (int)in->seq, INST_MAX);
		if (ge) {
			inst_free(in);
			return ge;
		}
		memset(is->v + old, 0, (size_t)(is->cap - old) * sizeof(*is->v));
	}
	if (is->v[in->seq - 1]) {
		inst_free(in);
		return sl_diag_set(a->d, SL_EPARSE, "instance %s is stored twice", id);
	}
	is->v[in->seq - 1] = in;
	is->nidle += in->auto_stop_idle_s > 0;
	if ((int)in->seq > is->n)
		is->n = (int)in->seq;
	return SL_OK;
}

enum sl_err instances_start(struct ctl *c, const struct instances_opts *o, struct sl_diag *d)
{
	struct ctl_instances *is = calloc(1, sizeof(*is));
	if (!is)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	c->instances = is;
	is->retention_ns = (o && o->retention_s > 0 ? o->retention_s : INSTANCES_RETENTION_DEFAULT_S) *
			   (int64_t)1000000000;
	struct load_arg a = {c, d, {0}};
	enum sl_err e = ctl_hist_seq_get(c, "instances", &is->hist_seq, d);
	uint64_t stored = is->hist_seq;
	if (!e)
		e = store_scan(c->store, STORE_INSTANCES, load_row, &a, d);
	if (!e && a.moves.n)
		e = ctl_hist_move(c, STORE_INSTANCES, STORE_INSTANCE_HISTORY, &a.moves, d);
	ctl_hist_release(&a.moves);
	if (!e && is->hist_seq > stored) {
		uint64_t seq = is->hist_seq;
		is->hist_seq = stored;
		ctl_hist_seq_note(c, "instances", &is->hist_seq, seq);
	}
	if (e)
		return e;
	/* Numbering goes on after the highest instance; NULL slots are history. */
	if (is->hist_seq > (uint64_t)INST_MAX)
		return sl_diag_set(d, SL_ELIMIT, "instance history seq %llu out of range",
				   (unsigned long long)is->hist_seq);
	if ((int)is->hist_seq > is->n) {
		int old = is->cap;
		if (sl_grow(&is->v, &is->cap, (int)is->hist_seq, INST_MAX))
			return sl_diag_set(d, SL_ENOMEM, "out of memory");
		memset(is->v + old, 0, (size_t)(is->cap - old) * sizeof(*is->v));
		is->n = (int)is->hist_seq;
	}
	return ssh_keys_load(c, d);
}

void instances_free(struct ctl *c)
{
	struct ctl_instances *is = c->instances;
	if (!is)
		return;
	for (int i = 0; i < is->n; i++)
		inst_free(is->v[i]);
	free(is->v);
	sl_ctext_drop(is->keys_last);
	ssh_keys_free(c);
	free(is);
	c->instances = NULL;
}

/* ---- simulated nodes ---- */

/* A node that no agent registered, in a --simulate controller, does what it
 * is told at once. */
static bool sim_node(struct ctl *c, const char *node)
{
	char addr[8];
	int idx = c->fleet ? fleet_find_node(c->fleet, node) : -1;
	return c->simulate && idx >= 0 && !agents_node_addr(c, idx, addr, sizeof(addr));
}

/* What a node would report once it did what it is told. */
static enum inst_report sim_report(const struct instance *in)
{
	switch (in->state) {
	case IS_STARTING:
	case IS_RUNNING: return IR_RUNNING;
	case IS_RELEASING:
	case IS_RELEASED: return IR_REMOVED;
	default: return IR_STOPPED;
	}
}

static enum inst_report node_rep(struct ctl *c, const struct instance *in, int k)
{
	const struct inst_node *n = &in->nodes[k];
	if (sim_node(c, n->node))
		return sim_report(in);
	return n->rep_epoch == in->epoch ? n->rep : IR_NONE;
}

/* ---- evaluation: reports -> state ---- */

static void stop_billing(struct ctl *c, struct instance *in, int64_t at)
{
	if (in->mode == IM_NOGPU)
		inst_bill_nogpu_off(c, in, at);
	else
		inst_bill_gpu_off(c, in, at);
}

/* A migration that did not finish: back to the old home, whose copy stays
 * (the new node is told nothing more about it). */
void inst_mig_abandon(struct ctl *c, struct instance *in)
{
	if (!in->migrate_from[0] || in->mig_removing)
		return;
	jobs_node_changed(c, in->nodes[0].node);
	inst_node_clear(&in->nodes[0]);
	in->nodes[0].node = in->migrate_from; /* both are shared copies */
	in->nnodes = 1;
	in->migrate_from = "";
	inst_migration_clear(c, in);
}

/* The instance stops (stop asked, idle, balance, the guest, its lease ended):
 * billing ends at at, the lease is released, the containers get "stop". */
static void do_stop(struct ctl *c, struct instance *in, int64_t at, const char *why)
{
	if (in->state == IS_RUNNING)
		stop_billing(c, in, at);
	inst_lease_release(c, in, why);
	inst_mig_abandon(c, in);
	inst_event(c, in, IE_STOP, why);
}

static void eval(struct ctl *c, struct instance *in)
{
	enum inst_report r[INST_MAX_NODES];
	char why[INST_REASON_MAX];
	/* Migration: the old node's export comes first; once the new node
	 * runs, the old node removes its copy. */
	if (in->migrate_from[0] && in->mig_removing && in->mig_rep == IR_REMOVED) {
		sl_log_info("migration done", "instance=%s from=%s to=%s", in->id, in->migrate_from,
			    in->nodes[0].node);
		jobs_node_changed(c, in->migrate_from);
		in->migrate_from = "";
		inst_migration_clear(c, in);
		inst_save(c, in);
	}
	bool exporting = in->migrate_from[0] && !in->mig_removing;
	if (exporting && in->state == IS_STARTING && in->mig_rep == IR_FAILED) {
		snprintf(why, sizeof(why), "migration failed: the old node %s could not export the disks",
			 in->migrate_from);
		do_stop(c, in, c->now_ns, why);
		return;
	}
	for (int k = 0; k < in->nnodes; k++)
		r[k] = node_rep(c, in, k);
	enum inst_event e = inst_sm_from_reports(in->state, r, in->nnodes);
	if (exporting && e == IE_RUNNING && !inst_migration_ready(c, in))
		return;
	switch (e) {
	case IE_RUNNING: {
		int64_t at = 0, placed = in->nhist ? in->hist[in->nhist - 1].at_ns : c->now_ns;
		for (int k = 0; k < in->nnodes; k++) {
			int64_t t = in->nodes[k].running_since_ns;
			if (!t || sim_node(c, in->nodes[k].node))
				t = c->now_ns;
			if (t > at)
				at = t;
		}
		if (at < placed)
			at = placed; /* a report from before this start: not this run's */
		if (at > c->now_ns)
			at = c->now_ns;
		in->running_since_ns = at;
		if (in->mode == IM_NOGPU)
			inst_bill_nogpu_on(c, in, at);
		else
			inst_bill_gpu_on(c, in, at);
		if (in->migrate_from[0]) {
			in->mig_removing = true;
			in->mig_first_run = false;
		}
		for (int k = 0; k < in->nnodes; k++)
			in->nodes[k].idle_since_ns = 0;
		inst_event(c, in, IE_RUNNING,
			   in->mode == IM_NOGPU ? "every node runs the container (no GPUs)"
						: "every node runs the container");
		in->running_since_ns = at;
		inst_save(c, in);
		audit_log_system(c, "instance.running", in->tenant, in->id, "ok");
		break;
	}
	case IE_FAIL:
		for (int k = 0; k < in->nnodes; k++)
			if (r[k] == IR_FAILED) {
				snprintf(why, sizeof(why), "could not start on %s: %.200s", in->nodes[k].node,
					 in->nodes[k].error[0] ? in->nodes[k].error : "the agent said failed");
				break;
			}
		inst_lease_release(c, in, "the instance could not start");
		if (in->migrate_from[0] && !in->mig_removing) {
			char w2[INST_REASON_MAX];
			snprintf(w2, sizeof(w2), "%.200s; migration abandoned, the disks stay on %s", why,
				 in->migrate_from);
			snprintf(why, sizeof(why), "%s", w2);
		}
		inst_mig_abandon(c, in);
		inst_event(c, in, IE_FAIL, why);
		audit_log_system(c, "instance.failed", in->tenant, in->id, "failed");
		break;
	case IE_STOP: {
		int64_t at = c->now_ns;
		const char *by = "agent";
		const char *node = "";
		for (int k = 0; k < in->nnodes; k++)
			if (r[k] == IR_STOPPED || r[k] == IR_FAILED) {
				if (in->nodes[k].stopped_at_ns && in->nodes[k].stopped_at_ns < at)
					at = in->nodes[k].stopped_at_ns;
				if (!strcmp(in->nodes[k].stopped_by, "guest"))
					by = "guest";
				node = in->nodes[k].node;
			}
		if (at < in->running_since_ns)
			at = in->running_since_ns;
		snprintf(why, sizeof(why), "%s on %s",
			 !strcmp(by, "guest") ? "stopped from inside: the container's processes ended"
					      : "the container stopped",
			 node);
		do_stop(c, in, at, why);
		audit_log_system(c, "instance.stop", in->tenant, in->id, why);
		eval(c, in); /* the nodes may all be stopped already */
		break;
	}
	case IE_STOPPED:
		inst_event(c, in, IE_STOPPED, in->reason ? in->reason : "stopped");
		break;
	case IE_REMOVED:
		in->tracked = in->migrate_from[0] != 0;
		inst_event(c, in, IE_REMOVED, inst_str(in->reason));
		break;
	default:
		break;
	}
}

void instances_lease_changed(struct ctl *c, struct ctl_lease *l)
{
	if (!c->instances || c->fatal)
		return;
	struct instance *in = by_lease(c, l->id);
	if (!in || l->state == LS_PENDING || l->state == LS_ACTIVE || l->state == LS_PREEMPTING)
		return;
	char why[INST_REASON_MAX];
	const char *lr = l->nhist ? l->hist[l->nhist - 1].reason : NULL;
	snprintf(why, sizeof(why), "its lease %s ended (%s: %.200s)", l->id, lease_state_name(l->state),
		 lr ? lr : "");
	in->lease[0] = 0; /* it ended: nothing to release */
	if (in->state == IS_STARTING || in->state == IS_RUNNING) {
		do_stop(c, in, l->ended_ns ? l->ended_ns : c->now_ns, why);
		audit_log_system(c, "instance.stop", in->tenant, in->id, why);
		/* A node it used failed: its agent may never answer; the node is
		 * told to stop it whenever it comes back (disks kept). */
		if (l->state == LS_FAILED && in->state == IS_STOPPING)
			inst_event(c, in, IE_STOPPED, why);
	} else {
		inst_save(c, in);
	}
}

void instances_balance_stop(struct ctl *c, const char *tenant, const char *why)
{
	struct ctl_instances *is = c->instances;
	for (int i = 0; is && i < is->n; i++) {
		struct instance *in = is->v[i];
		if (!in || !in->tracked || strcmp(in->tenant, tenant) ||
		    (in->state != IS_RUNNING && in->state != IS_STARTING && in->state != IS_WAITING))
			continue;
		do_stop(c, in, c->now_ns, why);
		audit_log_system(c, "instance.stop", in->tenant, in->id, why);
	}
}

/* ---- heartbeats ---- */

static void apply_node_report(struct ctl *c, struct inst_node *n, const json_t *r, int64_t epoch)
{
	const char *st = json_string_value(json_object_get(r, "state"));
	n->rep = inst_report_parse(st);
	snprintf(n->rep_word, sizeof(n->rep_word), "%s", st ? st : "");
	n->rep_epoch = epoch;
	n->last_report_ns = c->now_ns;
	inst_tsfield(&n->progress, INST_PROGRESS_SIZE, r, "progress");
	inst_tsfield(&n->error, INST_ERROR_SIZE, r, "error");
	json_int_t sp = json_integer_value(json_object_get(r, "ssh_port"));
	if (sp > 0 && sp < 65536)
		n->ssh_port = (int)sp;
	const json_t *ports = json_object_get(r, "ports");
	if (json_is_array(ports) && json_array_size(ports) <= INST_MAX_PORTS) {
		free(n->ports);
		n->ports = inst_text_of(ports);
	}
	const json_t *hk = json_object_get(r, "host_keys");
	if (json_is_array(hk) && json_array_size(hk) <= 8) {
		free(n->host_keys);
		n->host_keys = inst_text_of(hk);
	}
	int64_t t = inst_tfield(r, "running_since");
	if (n->rep == IR_RUNNING)
		n->running_since_ns = t ? t : n->running_since_ns ? n->running_since_ns : c->now_ns;
	t = inst_tfield(r, "stopped_at");
	if (n->rep == IR_STOPPED || n->rep == IR_FAILED)
		n->stopped_at_ns = t ? t : c->now_ns;
	inst_sfield(n->stopped_by, sizeof(n->stopped_by), r, "stopped_by");
}

/* Idle tracking from the heartbeat's gpus[].util_pct: the node's GPUs of
 * the instance all below 1% (a GPU without a figure is not idle). */
static void apply_util(struct ctl *c, struct inst_node *n, const json_t *gpus)
{
	if (!n->gpus || !json_is_array(gpus))
		return;
	gpumask_t seen = 0;
	bool busy = false;
	size_t i;
	const json_t *g;
	json_array_foreach(gpus, i, g) {
		json_int_t ix = json_integer_value(json_object_get(g, "index"));
		if (ix < 0 || ix >= TOPO_MAX_GPUS || !(n->gpus & ((gpumask_t)1 << ix)))
			continue;
		const json_t *u = json_object_get(g, "util_pct");
		if (!json_is_integer(u) && !json_is_real(u))
			continue;
		seen |= (gpumask_t)1 << ix;
		if (json_number_value(u) >= INST_IDLE_UTIL_PCT)
			busy = true;
	}
	if (busy || seen != n->gpus)
		n->idle_since_ns = 0;
	else if (!n->idle_since_ns)
		n->idle_since_ns = c->now_ns;
}

void instances_on_heartbeat(struct ctl *c, int node, const json_t *reports, const json_t *gpus)
{
	struct ctl_instances *is = c->instances;
	if (!is || node < 0 || node >= c->fleet->nnodes)
		return;
	const char *name = c->fleet->nodes[node].name;
	size_t i;
	const json_t *r;
	json_array_foreach(reports, i, r) {
		struct instance *in = inst_find(c, json_string_value(json_object_get(r, "instance")));
		if (!in || !in->tracked)
			continue;
		json_int_t epoch = json_integer_value(json_object_get(r, "epoch"));
		if (epoch < in->epoch && !(in->migrate_from[0] && !strcmp(in->migrate_from, name)))
			continue; /* stale: an earlier start's */
		if (in->migrate_from[0] && !strcmp(in->migrate_from, name)) {
			const char *st = json_string_value(json_object_get(r, "state"));
			enum inst_report w = inst_report_parse(st);
			if (w != IR_NONE && (w != in->mig_rep)) {
				in->mig_rep = w;
				in->mig_epoch = epoch;
				inst_save(c, in);
				inst_bump(c, in);
			}
			eval(c, in);
			continue;
		}
		json_int_t rank = json_integer_value(json_object_get(r, "node_rank"));
		if (rank < 0 || rank >= in->nnodes || strcmp(in->nodes[rank].node, name))
			continue;
		struct inst_node *n = &in->nodes[rank];
		char before[16];
		snprintf(before, sizeof(before), "%s", n->rep_word);
		int64_t be = n->rep_epoch;
		apply_node_report(c, n, r, epoch);
		if (strcmp(before, n->rep_word) || be != n->rep_epoch)
			inst_save(c, in);
		eval(c, in);
	}
	/* Idle tracking: a scan of every instance, so only when one asked for
	 * it (at 20,000 instances and 2,000 heartbeats/s the scan alone
	 * outran the loop). */
	for (int k = 0; is->nidle > 0 && k < is->n; k++) {
		struct instance *in = is->v[k];
		if (!in || in->state != IS_RUNNING || in->mode != IM_GPU || !in->auto_stop_idle_s)
			continue;
		for (int q = 0; q < in->nnodes; q++)
			if (!strcmp(in->nodes[q].node, name))
				apply_util(c, &in->nodes[q], gpus);
	}
}

/* ---- work items ---- */

static json_t *item_env(struct ctl *c, const struct instance *in, int rank, json_t **gpus,
			json_t **nics)
{
	json_t *user = json_pack("{s:s}", "SUANLI_INSTANCE", in->id);
	json_t *env = NULL;
	*gpus = *nics = NULL;
	if (in->mode == IM_GPU && in->nodes[rank].gpus) {
		struct job_env_node en[INST_MAX_NODES];
		char addr[INST_MAX_NODES][64];
		bool ok = true;
		for (int k = 0; k < in->nnodes; k++) {
			int idx = fleet_find_node(c->fleet, in->nodes[k].node);
			if (idx < 0 || !in->nodes[k].gpus) {
				ok = false;
				break;
			}
			if (!agents_node_addr(c, idx, addr[k], sizeof(addr[k])))
				addr[k][0] = 0;
			/* no fabric address (pool NULL): instances keep the lease's
			 * bridge (docs/isolation.md) */
			en[k] = (struct job_env_node){in->nodes[k].node, addr[k],
						      fleet_node_type(c->fleet, idx), in->nodes[k].gpus,
						      NULL};
		}
		struct job_env_in ein = {in->lease, in->id, in->seq, in->nnodes, en, user};
		struct sl_diag d;
		sl_diag_clear(&d);
		if (ok && job_env_build(&ein, rank, &env, gpus, nics, &d))
			sl_log_warn("instance environment failed", "instance=%s error=%s", in->id, d.msg);
	}
	if (!env) {
		env = json_deep_copy(user);
		{
			char rk[16];
			snprintf(rk, sizeof(rk), "%d", rank);
			json_object_set_new(env, "NODE_RANK", json_string(rk));
		}
	}
	json_decref(user);
	if (!*gpus)
		*gpus = json_array();
	if (!*nics)
		*nics = json_array();
	return env;
}

static json_t *item(struct ctl *c, const struct instance *in, int rank, const char *state,
		    bool first_of_migration)
{
	json_t *gpus, *nics;
	json_t *env = item_env(c, in, rank, &gpus, &nics);
	json_t *ports = json_array();
	for (int i = 0; i < in->nports; i++)
		json_array_append_new(ports, json_integer(in->ports[i]));
	const struct inst_node *n = &in->nodes[rank];
	bool gpu = in->mode == IM_GPU;
	json_t *o = json_pack("{s:s, s:i, s:I, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:i, s:I, s:b, s:o, "
			      "s:o, s:i, s:i}",
			      "instance", in->id, "node_rank", rank, "epoch", (json_int_t)in->epoch,
			      "lease", gpu ? in->lease : "", "state", state, "tenant", in->tenant,
			      "image", in->image_ref, "gpus", gpus, "nics", nics, "env", env, "cpus",
			      gpu ? n->cpus : INST_NOGPU_CPUS, "mem_mib",
			      (json_int_t)(gpu ? n->mem_mib : INST_NOGPU_MEM_MIB), "host_network",
			      gpu && n->whole, "authorized_keys", inst_keys_json(in), "ports", ports,
			      "volume_gib", in->volume_gib, "stop_grace_s", INST_STOP_GRACE_S);
	if (o && first_of_migration)
		json_object_set_new(o, "migrate_from", json_string(in->migrate_from));
	return o;
}

json_t *instances_work_items(struct ctl *c, const char *node)
{
	struct ctl_instances *is = c->instances;
	json_t *a = json_array();
	for (int i = 0; a && is && i < is->n; i++) {
		const struct instance *in = is->v[i];
		if (!in || !in->tracked)
			continue;
		if (in->migrate_from[0] && !strcmp(in->migrate_from, node)) {
			/* the old home of a migration: export, then remove */
			const char *st = in->mig_removing ? (in->mig_rep == IR_REMOVED ? NULL : "remove")
							  : in->state == IS_STARTING ? "export" : NULL;
			if (st) {
				json_t *o = item(c, in, 0, st, false);
				json_array_append_new(a, o);
			}
			continue;
		}
		for (int k = 0; k < in->nnodes; k++) {
			if (strcmp(in->nodes[k].node, node))
				continue;
			const char *st = NULL;
			bool exporting = in->migrate_from[0] && !in->mig_removing;
			switch (in->state) {
			case IS_STARTING:
			case IS_RUNNING:
				if (!exporting || inst_migration_ready(c, in))
					st = "run";
				break;
			case IS_STOPPING:
			case IS_STOPPED:
			case IS_WAITING:
			case IS_FAILED: st = "stop"; break;
			case IS_RELEASING: st = in->nodes[k].rep == IR_REMOVED ? NULL : "remove"; break;
			default: break;
			}
			if (st)
				json_array_append_new(a, item(c, in, k, st,
							      exporting && in->mig_first_run && !strcmp(st, "run")));
		}
	}
	return a;
}

/* ---- the loop ---- */

void instances_tick(struct ctl *c)
{
	struct ctl_instances *is = c->instances;
	if (!is || c->fatal)
		return;
	int64_t now_ms = c->now_ns / 1000000;
	bool any = false;
	for (int i = 0; i < is->n && !any; i++)
		any = is->v[i] && is->v[i]->tracked && is->v[i]->state != IS_RELEASED;
	if (!any)
		return;
	if (now_ms >= is->next_ms) {
		is->next_ms = now_ms + INST_TICK_MS;
		char why[INST_REASON_MAX];
		for (int i = 0; i < is->n && !c->fatal; i++) {
			struct instance *in = is->v[i];
			if (!in || !in->tracked)
				continue;
			/* simulated nodes answer at once */
			eval(c, in);
			/* A stop no agent confirmed (a node down or gone): stopped
			 * anyway after the grace and a slack; the node is still told
			 * to stop it. */
			int64_t stop_at = in->nhist ? in->hist[in->nhist - 1].at_ns : 0;
			if (in->state == IS_STOPPING &&
			    c->now_ns - stop_at > (int64_t)(INST_STOP_GRACE_S + INST_STOP_SLACK_S) * 1000000000) {
				snprintf(why, sizeof(why), "%.200s; no agent confirmed the stop in time (the node is "
					 "told to stop it when it reports)", inst_str(in->reason));
				inst_event(c, in, IE_STOPPED, why);
			}
			if (in->state == IS_RUNNING && in->mode == IM_GPU && in->auto_stop_idle_s > 0) {
				int64_t since = 0;
				bool idle = in->nnodes > 0;
				for (int k = 0; k < in->nnodes; k++) {
					int64_t t = in->nodes[k].idle_since_ns;
					idle &= t > 0;
					if (t > since)
						since = t;
				}
				if (idle && c->now_ns - since >= in->auto_stop_idle_s * 1000000000) {
					snprintf(why, sizeof(why),
						 "idle: every GPU below %d%% utilisation for %llds (--auto-stop-idle)",
						 INST_IDLE_UTIL_PCT, (long long)in->auto_stop_idle_s);
					do_stop(c, in, c->now_ns, why);
					audit_log_system(c, "instance.idle_stop", in->tenant, in->id, "ok");
				}
			}
			if (in->state == IS_WAITING && inst_home_free(c, in)) {
				struct sl_diag d;
				sl_diag_clear(&d);
				if (inst_place(c, in, IW_HOME, in->user, &d) == SL_OK) {
					snprintf(why, sizeof(why), "the GPUs of its home node %s are free again (start --wait)",
						 in->nodes[0].node);
					inst_event(c, in, IE_PLACED, why);
					audit_log_system(c, "instance.start", in->tenant, in->id, "ok");
				}
			}
		}
		inst_bill_tick(c);
	}
	int64_t at = is->next_ms * 1000000;
	if (!c->next_deadline || at < c->next_deadline)
		c->next_deadline = at;
}

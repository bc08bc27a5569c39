/* jobs.c - jobs on leases (jobs.h): the records and their store rows, rank
 * assignment from a lease's picks, the job state machine, lease changes,
 * what agents report in heartbeats, and the per-node work versions.
 *
 * A job's desired state is a function of the job (ranks, stop flags, epoch);
 * every change to it bumps the version of each node concerned, and
 * jobs_tick answers the polls waiting on those nodes in the same turn (after
 * the commit, like every answer). What agents report only updates rank
 * states; a report never changes what is desired except through the job's
 * state machine (job_eval). The user handlers are in h_jobs.c, the agent's
 * work poll in job_work.c, logs in job_logs.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "events.h"
#include "jobs_int.h"
#include "history.h"
#include "log.h"

static const char *const job_state_names[] = {"pending",   "running",    "succeeded",
					      "failed",    "cancelling", "cancelled"};
static const char *const rank_state_names[] = {"pending", "running", "exited", "stopped"};

const char *job_state_name(enum job_state s)
{
	return (unsigned)s < JS__COUNT ? job_state_names[s] : "?";
}

int job_state_parse(const char *s)
{
	for (int i = 0; s && i < JS__COUNT; i++)
		if (!strcmp(s, job_state_names[i]))
			return i;
	return -1;
}

const char *rank_state_name(const struct job_rank *r)
{
	if (r->stop && r->state == RS_RUNNING)
		return "stopping";
	return (unsigned)r->state < RS__COUNT ? rank_state_names[r->state] : "?";
}

static int rank_state_parse(const char *s)
{
	if (s && !strcmp(s, "stopping"))
		return RS_RUNNING;
	for (int i = 0; s && i < RS__COUNT; i++)
		if (!strcmp(s, rank_state_names[i]))
			return i;
	return -1;
}

static bool job_active(const struct ctl *c, const struct job *j)
{
	if (!job_ended(j))
		return true;
	/* Stop items of an ended job go after a while even when no agent
	 * confirmed them (a node without an agent); reconcile in heartbeats
	 * still stops anything that runs. */
	if (c->now_ns - j->ended_ns > (int64_t)JOB_STOP_KEEP_S * 1000000000)
		return false;
	for (int i = 0; i < j->nranks; i++) {
		const struct job_rank *r = &j->ranks[i];
		if (r->stop && !r->gone && r->state != RS_EXITED && r->state != RS_STOPPED)
			return true;
	}
	return false;
}

bool jobs_track(struct ctl *c, struct job *j)
{
	struct ctl_jobs *js = c->jobs;
	if (j->tracked)
		return true;
	if (sl_grow(&js->live, &js->cap_live, js->nlive + 1, CTL_MAX_JOBS))
		return false;
	js->live[js->nlive++] = (int)(j->seq - 1);
	j->tracked = true;
	return true;
}

struct job *jobs_live_next(struct ctl *c, int *k)
{
	struct ctl_jobs *js = c->jobs;
	while (*k < js->nlive) {
		struct job *j = js->jobs[js->live[*k]];
		if (job_active(c, j)) {
			(*k)++;
			return j;
		}
		j->tracked = false;
		js->live[*k] = js->live[--js->nlive];
	}
	return NULL;
}

static struct job *job_from_json(const json_t *o, struct sl_diag *d);
static void job_free(struct job *j);

/* Reads job seq from history (or, in an old store, the live table). */
static struct job *job_load(struct ctl *c, uint64_t seq)
{
	char id[JOB_ID_LEN], *row = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	snprintf(id, sizeof(id), "job-%06llu", (unsigned long long)seq);
	if (store_get(c->store, STORE_JOB_HISTORY, id, &row, &d) &&
	    store_get(c->store, STORE_JOBS, id, &row, &d))
		return NULL;
	json_t *o = json_loads(row, JSON_REJECT_DUPLICATES, NULL);
	free(row);
	struct job *j = o ? job_from_json(o, &d) : NULL;
	json_decref(o);
	if (j && j->seq != seq) {
		job_free(j);
		j = NULL;
	}
	return j;
}

const struct job *jobs_at(struct ctl *c, int i, struct job **tmp)
{
	struct ctl_jobs *js = c->jobs;
	*tmp = NULL;
	if (!js || i < 0 || i >= js->njobs)
		return NULL;
	if (js->jobs[i])
		return js->jobs[i];
	return *tmp = job_load(c, (uint64_t)i + 1);
}

void jobs_tmp_free(struct job *tmp)
{
	job_free(tmp);
}

struct job *jobs_find(struct ctl *c, const char *id)
{
	struct ctl_jobs *js = c->jobs;
	unsigned long long seq = 0;
	char tail;
	if (!js || !id || sscanf(id, "job-%llu%c", &seq, &tail) != 1 || seq < 1 ||
	    seq > (unsigned long long)js->njobs)
		return NULL;
	struct job *j = js->jobs[seq - 1];
	if (!j && (j = job_load(c, seq)))
		js->jobs[seq - 1] = j; /* kept: handlers hold it through the call */
	return j && !strcmp(j->id, id) ? j : NULL;
}

const char *jobs_tenant(struct ctl *c, const char *id)
{
	const struct job *j = jobs_find(c, id);
	return j ? j->tenant : NULL;
}

/* ---- JSON ---- */

static json_t *gpus_json(gpumask_t m)
{
	json_t *a = json_array();
	for (int g = 0; a && g < TOPO_MAX_GPUS; g++)
		if (m & ((gpumask_t)1 << g))
			json_array_append_new(a, json_integer(g));
	return a;
}

static json_t *rank_to_json(struct ctl *c, const struct job *j, int i, bool store)
{
	const struct job_rank *r = &j->ranks[i];
	json_t *o = json_pack("{s:i, s:s, s:o, s:s, s:o, s:o, s:i, s:o, s:o}", "rank", i, "node",
			      r->node, "gpus", gpus_json(r->gpus), "state",
			      store ? rank_state_names[r->state] : rank_state_name(r),
			      "exit_code", r->state == RS_EXITED && !r->signal ? json_integer(r->exit_code) : json_null(),
			      "signal", r->signal ? json_integer(r->signal) : json_null(),
			      "restarts", r->restarts, "started_at", ctl_time_json(r->started_ns),
			      "ended_at", ctl_time_json(r->ended_ns));
	if (!o)
		return NULL;
	if (r->error[0])
		json_object_set_new(o, "error", json_string(r->error));
	if (r->progress[0] && !store)
		json_object_set_new(o, "progress", json_string(r->progress));
	if (store) {
		json_object_set_new(o, "stop", json_boolean(r->stop));
		json_object_set_new(o, "gone", json_boolean(r->gone));
		json_object_set_new(o, "lost", json_boolean(r->lost));
		json_object_set_new(o, "pid", json_integer(r->pid));
		json_object_set_new(o, "exit", json_integer(r->exit_code));
		json_object_set_new(o, "log_base", json_integer(r->log_base));
	} else {
		int64_t size, start;
		job_log_size(c, j, i, &size, &start);
		json_object_set_new(o, "log_size", json_integer(size));
		json_object_set_new(o, "log_start", json_integer(start));
	}
	return o;
}

json_t *job_to_json(struct ctl *c, const struct job *j, bool store)
{
	json_t *ranks = json_array();
	for (int i = 0; ranks && i < j->nranks; i++)
		if (json_array_append_new(ranks, rank_to_json(c, j, i, store))) {
			json_decref(ranks);
			return NULL;
		}
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:O, s:O, s:s, s:i, s:I, s:i, s:i, "
			      "s:o, s:o, s:o}",
			      "id", j->id, "lease", j->lease, "tenant", j->tenant, "user", j->user,
			      "state", job_state_name(j->state), "reason", j->reason, "argv", j->argv,
			      "env", j->env, "restart", job_restart_name(j->restart), "nodes",
			      j->nranks, "epoch", (json_int_t)j->epoch, "master_port",
			      job_master_port(j->seq), "stop_grace_s", j->stop_grace_s, "ranks", ranks,
			      "created_at", ctl_time_json(j->created_ns), "ended_at",
			      ctl_time_json(j->ended_ns));
	if (o && j->instance[0])
		json_object_set_new(o, "instance", json_string(j->instance));
	if (o && j->image_ref[0]) {
		json_object_set_new(o, "image", json_string(j->image));
		json_object_set_new(o, "image_ref", json_string(j->image_ref));
	}
	if (o && store) {
		json_object_set_new(o, "nodes_req", json_integer(j->nodes_req));
		json_object_set_new(o, "cancel_at", ctl_time_json(j->cancel_ns));
	}
	return o;
}

static int64_t time_field(const json_t *o, const char *k)
{
	int64_t ns = 0;
	const char *s = json_string_value(json_object_get(o, k));
	return s && ctl_time_parse(s, &ns) ? ns : 0;
}

static void job_free(struct job *j)
{
	if (!j)
		return;
	json_decref(j->argv);
	json_decref(j->env);
	free(j->ranks);
	free(j);
}

/* A stored row back into a job; NULL (d set) when it is malformed. */
static struct job *job_from_json(const json_t *o, struct sl_diag *d)
{
	struct job *j = calloc(1, sizeof(*j));
	const char *id = json_string_value(json_object_get(o, "id"));
	const char *lease = json_string_value(json_object_get(o, "lease"));
	const char *tenant = json_string_value(json_object_get(o, "tenant"));
	const char *user = json_string_value(json_object_get(o, "user"));
	const char *reason = json_string_value(json_object_get(o, "reason"));
	int st = job_state_parse(json_string_value(json_object_get(o, "state")));
	int rs = job_restart_parse(json_string_value(json_object_get(o, "restart")));
	const json_t *ranks = json_object_get(o, "ranks");
	unsigned long long seq = 0;
	if (!j || !id || !lease || !tenant || st < 0 || rs < 0 || !json_is_array(ranks) ||
	    sscanf(id, "job-%llu", &seq) != 1 || seq < 1 || seq > INT32_MAX ||
	    strlen(id) >= sizeof(j->id) || strlen(lease) >= sizeof(j->lease) ||
	    strlen(tenant) >= sizeof(j->tenant)) {
		free(j);
		sl_diag_set(d, SL_EPARSE, "stored job %.64s is malformed", id ? id : "?");
		return NULL;
	}
	j->seq = seq;
	snprintf(j->id, sizeof(j->id), "%s", id);
	snprintf(j->lease, sizeof(j->lease), "%s", lease);
	snprintf(j->tenant, sizeof(j->tenant), "%s", tenant);
	snprintf(j->user, sizeof(j->user), "%s", user ? user : "");
	snprintf(j->reason, sizeof(j->reason), "%s", reason ? reason : "");
	j->state = (enum job_state)st;
	j->restart = (enum job_restart)rs;
	j->argv = json_incref(json_object_get(o, "argv"));
	j->env = json_incref(json_object_get(o, "env"));
	if (!j->env)
		j->env = json_object();
	j->nodes_req = (int)json_integer_value(json_object_get(o, "nodes_req"));
	j->stop_grace_s = (int)json_integer_value(json_object_get(o, "stop_grace_s"));
	const char *im = json_string_value(json_object_get(o, "image"));
	const char *ir = json_string_value(json_object_get(o, "image_ref"));
	snprintf(j->image, sizeof(j->image), "%s", im ? im : "");
	snprintf(j->image_ref, sizeof(j->image_ref), "%s", ir ? ir : "");
	const char *jin = json_string_value(json_object_get(o, "instance"));
	snprintf(j->instance, sizeof(j->instance), "%s", jin ? jin : "");
	j->epoch = json_integer_value(json_object_get(o, "epoch"));
	j->created_ns = time_field(o, "created_at");
	j->ended_ns = time_field(o, "ended_at");
	j->cancel_ns = time_field(o, "cancel_at");
	j->nranks = (int)json_array_size(ranks);
	j->ranks = j->nranks ? calloc((size_t)j->nranks, sizeof(*j->ranks)) : NULL;
	if (!json_is_array(j->argv) || !j->env || (j->nranks && !j->ranks)) {
		job_free(j);
		sl_diag_set(d, SL_EPARSE, "stored job %.64s is malformed", id);
		return NULL;
	}
	for (int i = 0; i < j->nranks; i++) {
		const json_t *r = json_array_get(ranks, (size_t)i);
		struct job_rank *k = &j->ranks[i];
		const char *node = json_string_value(json_object_get(r, "node"));
		int rst = rank_state_parse(json_string_value(json_object_get(r, "state")));
		if (!node || strlen(node) >= sizeof(k->node) || rst < 0) {
			job_free(j);
			sl_diag_set(d, SL_EPARSE, "stored job %.64s: rank %d is malformed", id, i);
			return NULL;
		}
		snprintf(k->node, sizeof(k->node), "%s", node);
		size_t gi;
		const json_t *g;
		json_array_foreach(json_object_get(r, "gpus"), gi, g) {
			json_int_t x = json_integer_value(g);
			if (x >= 0 && x < TOPO_MAX_GPUS)
				k->gpus |= (gpumask_t)1 << x;
		}
		k->state = (enum rank_state)rst;
		k->stop = json_is_true(json_object_get(r, "stop"));
		k->gone = json_is_true(json_object_get(r, "gone"));
		k->lost = json_is_true(json_object_get(r, "lost"));
		const char *kerr = json_string_value(json_object_get(r, "error"));
		snprintf(k->error, sizeof(k->error), "%s", kerr ? kerr : "");
		k->exit_code = (int)json_integer_value(json_object_get(r, "exit"));
		k->signal = (int)json_integer_value(json_object_get(r, "signal"));
		k->restarts = (int)json_integer_value(json_object_get(r, "restarts"));
		k->pid = json_integer_value(json_object_get(r, "pid"));
		k->log_base = json_integer_value(json_object_get(r, "log_base"));
		k->started_ns = time_field(r, "started_at");
		k->ended_ns = time_field(r, "ended_at");
	}
	return j;
}

void job_save(struct ctl *c, struct job *j)
{
	json_t *o = job_to_json(c, j, true);
	if (!o) {
		c->fatal = true;
		return;
	}
	ctl_put(c, job_ended(j) ? STORE_JOB_HISTORY : STORE_JOBS, j->id, j->tenant, o);
}

/* ---- nodes and versions ---- */

struct job_node *jobs_node(struct ctl *c, const char *name)
{
	struct ctl_jobs *js = c->jobs;
	int i = strmap_get(js->node_by_name, name, -1);
	if (i >= 0)
		return &js->nodes[i];
	if (strlen(name) > FLEET_NAME_MAX)
		return NULL;
	if (sl_grow(&js->nodes, &js->cap_nodes, js->nnodes + 1, FLEET_MAX_NODES))
		return NULL;
	if (strmap_add(js->node_by_name, name, js->nnodes))
		return NULL;
	struct job_node *n = &js->nodes[js->nnodes++];
	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->version = js->version_base;
	return n;
}

void jobs_bump(struct ctl *c, const char *node)
{
	struct ctl_jobs *js = c->jobs;
	struct job_node *n = jobs_node(c, node);
	if (!n)
		return;
	n->version++;
	if (n->dirty || !n->npolls)
		return;
	if (sl_grow(&js->dirty, &js->cap_dirty, js->ndirty + 1, FLEET_MAX_NODES))
		return; /* the poll still gets its answer at its deadline */
	n->dirty = true;
	js->dirty[js->ndirty++] = (int)(n - js->nodes);
}

void jobs_node_changed(struct ctl *c, const char *node)
{
	if (c->jobs)
		jobs_bump(c, node);
}

/* ---- assignment and the state machine ---- */

bool job_assign(struct ctl *c, struct job *j, const struct ctl_lease *l)
{
	int n = l->pl.npicks;
	if (j->nodes_req > 0 && j->nodes_req < n)
		n = j->nodes_req;
	struct job_rank *nr = n ? calloc((size_t)n, sizeof(*nr)) : NULL;
	if (n && !nr)
		return false;
	for (int i = 0; i < n; i++) {
		const struct place_pick *p = &l->pl.picks[i];
		struct job_rank *r = &nr[i];
		snprintf(r->node, sizeof(r->node), "%s", c->fleet->nodes[p->node].name);
		r->gpus = p->milli && p->gpu >= 0 ? (gpumask_t)1 << p->gpu : p->gpus;
		if (i < j->nranks) {
			struct job_rank *old = &j->ranks[i];
			r->restarts = old->restarts;
			if (!strcmp(old->node, r->node)) {
				r->log_base = old->log_base;
			} else {
				int64_t size, start;
				job_log_size(c, j, i, &size, &start);
				r->log_base = size;
			}
		} else if (j->nranks) {
			int64_t size, start;
			job_log_size(c, j, i, &size, &start);
			r->log_base = size;
		}
		jobs_bump(c, r->node);
	}
	for (int i = 0; i < j->nranks; i++)
		jobs_bump(c, j->ranks[i].node);
	free(j->ranks);
	j->ranks = nr;
	j->nranks = n;
	j->epoch = l->epoch;
	return true;
}

void job_stop_ranks(struct ctl *c, struct job *j)
{
	for (int i = 0; i < j->nranks; i++) {
		struct job_rank *r = &j->ranks[i];
		if (r->stop)
			continue;
		r->stop = true;
		/* Never started and never reported: nothing to stop unless the
		 * agent started it meanwhile (its next heartbeat tells). */
		jobs_bump(c, r->node);
	}
}

static void cancel_deadline(struct ctl *c, int64_t at)
{
	struct ctl_jobs *js = c->jobs;
	if (!js->cancel_deadline || at < js->cancel_deadline)
		js->cancel_deadline = at;
}

void job_set_state(struct ctl *c, struct job *j, enum job_state s, const char *reason)
{
	if (j->state == s && !reason)
		return;
	bool was_ended = job_ended(j);
	j->state = s;
	if (reason)
		snprintf(j->reason, sizeof(j->reason), "%s", reason);
	if (job_ended(j)) {
		j->ended_ns = c->now_ns;
		job_stop_ranks(c, j);
	}
	if (s == JS_CANCELLING)
		cancel_deadline(c, j->cancel_ns + ((int64_t)j->stop_grace_s + JOB_CANCEL_SLACK_S) * 1000000000);
	sl_log_info("job state", "job=%s lease=%s state=%s reason=%s", j->id, j->lease,
		    job_state_name(s), j->reason);
	if (job_ended(j) && !was_ended) {
		/* The row moves to history in this turn's transaction. */
		ctl_delete(c, STORE_JOBS, j->id); /* fatal on failure */
		ctl_hist_seq_note(c, "jobs", &c->jobs->hist_seq, j->seq);
		job_save(c, j);
	}
	events_emit(c, "job", j->id, job_state_name(s), j->tenant);
}

/* A rank that ended for good: exited 0 without restart "always". */
static bool rank_done_ok(const struct job *j, const struct job_rank *r)
{
	return r->state == RS_EXITED && !r->exit_code && !r->signal &&
	       j->restart != JOB_RESTART_ALWAYS;
}

static bool rank_failed(const struct job *j, const struct job_rank *r)
{
	/* an error is the agent's own verdict: it does not restart such a rank */
	return r->state == RS_EXITED && (r->exit_code || r->signal) &&
	       (j->restart == JOB_RESTART_NEVER || r->error[0]);
}

/* "rank R on NODE: ERROR" (what the agent said: "cannot start: ...", "its
 * output passed the node's log limit ..."), cut to fit. */
static void start_failed_reason(char *why, size_t n, int i, const struct job_rank *r)
{
	int w = snprintf(why, n, "rank %d on %s: ", i, r->node);
	size_t at = w > 0 && (size_t)w < n ? (size_t)w : n - 1;
	size_t len = strnlen(r->error, n - 1 - at);
	memcpy(why + at, r->error, len);
	why[at + len] = '\0';
}

void job_eval(struct ctl *c, struct job *j)
{
	char why[JOB_REASON_MAX];
	if (job_ended(j))
		return;
	bool any_running = false, all_ok = j->nranks > 0;
	for (int i = 0; i < j->nranks; i++) {
		const struct job_rank *r = &j->ranks[i];
		any_running |= r->state == RS_RUNNING;
		all_ok &= rank_done_ok(j, r);
	}
	if (j->state == JS_CANCELLING) {
		if (!any_running)
			job_set_state(c, j, JS_CANCELLED, NULL);
		return;
	}
	for (int i = 0; i < j->nranks; i++) {
		const struct job_rank *r = &j->ranks[i];
		if (!rank_failed(j, r))
			continue;
		if (r->error[0])
			start_failed_reason(why, sizeof(why), i, r);
		else if (r->lost)
			snprintf(why, sizeof(why), "rank %d on %s was lost (its process ended while its agent was down)",
				 i, r->node);
		else if (r->signal)
			snprintf(why, sizeof(why), "rank %d on %s was killed by signal %d", i, r->node,
				 r->signal);
		else
			snprintf(why, sizeof(why), "rank %d on %s exited with code %d", i, r->node,
				 r->exit_code);
		job_set_state(c, j, JS_FAILED, why);
		return;
	}
	if (all_ok)
		job_set_state(c, j, JS_SUCCEEDED, "every rank exited 0");
	else if (any_running && j->state == JS_PENDING)
		job_set_state(c, j, JS_RUNNING, "");
}

/* ---- lifecycle ---- */

struct load_arg {
	struct ctl *c;
	struct sl_diag *d;
	struct ctl_hist_moves moves;
};

static enum sl_err load_job(void *arg, const char *id, const char *tenant, const char *text)
{
	struct load_arg *a = arg;
	struct ctl_jobs *js = a->c->jobs;
	(void)id, (void)tenant;
	json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	struct job *j = o ? job_from_json(o, a->d) : NULL;
	json_decref(o);
	if (!j)
		return a->d->msg[0] ? SL_EPARSE : sl_diag_set(a->d, SL_EPARSE, "stored job %s is not JSON", id);
	if (job_ended(j)) {
		/* An old store's ended job: moved to history after the scan. */
		if (j->seq > js->hist_seq)
			js->hist_seq = j->seq;
		job_free(j);
		return ctl_hist_note(&a->moves, id, tenant);
	}
	if ((int)j->seq > js->cap_jobs) {
		int old = js->cap_jobs;
		enum sl_err ge = sl_grow(&js->jobs, &js->cap_jobs, j->seq, CTL_MAX_JOBS);
		if (ge) {
			job_free(j);
			return ge;
		}
		memset(js->jobs + old, 0, (size_t)(js->cap_jobs - old) * sizeof(*js->jobs));
	}
	if (js->jobs[j->seq - 1]) {
		job_free(j);
		return sl_diag_set(a->d, SL_EPARSE, "job %s is stored twice", id);
	}
	js->jobs[j->seq - 1] = j;
	if ((int)j->seq > js->njobs)
		js->njobs = (int)j->seq;
	if (j->state == JS_CANCELLING)
		cancel_deadline(a->c, j->cancel_ns + ((int64_t)j->stop_grace_s + JOB_CANCEL_SLACK_S) * 1000000000);
	return SL_OK;
}

enum sl_err jobs_start(struct ctl *c, struct sl_diag *d)
{
	struct ctl_jobs *js = calloc(1, sizeof(*js));
	if (!js || strmap_new(&js->node_by_name)) {
		free(js);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	c->jobs = js;
	js->version_base = c->now_ns / 1000000;
	struct load_arg a = {c, d, {0}};
	enum sl_err e = ctl_hist_seq_get(c, "jobs", &js->hist_seq, d);
	uint64_t stored = js->hist_seq;
	if (!e)
		e = store_scan(c->store, STORE_JOBS, load_job, &a, d);
	if (!e && a.moves.n)
		e = ctl_hist_move(c, STORE_JOBS, STORE_JOB_HISTORY, &a.moves, d);
	ctl_hist_release(&a.moves);
	if (!e && js->hist_seq > stored) {
		uint64_t seq = js->hist_seq;
		js->hist_seq = stored;
		ctl_hist_seq_note(c, "jobs", &js->hist_seq, seq);
	}
	if (e)
		return e;
	/* Numbering goes on after the highest job, live or in history. */
	if (js->hist_seq > (uint64_t)CTL_MAX_JOBS)
		return sl_diag_set(d, SL_ELIMIT, "job history seq %llu out of range",
				   (unsigned long long)js->hist_seq);
	if ((int)js->hist_seq > js->njobs) {
		int old = js->cap_jobs;
		if (sl_grow(&js->jobs, &js->cap_jobs, js->hist_seq, CTL_MAX_JOBS))
			return sl_diag_set(d, SL_ENOMEM, "out of memory");
		memset(js->jobs + old, 0, (size_t)(js->cap_jobs - old) * sizeof(*js->jobs));
		js->njobs = (int)js->hist_seq;
	}
	for (int i = 0; i < js->njobs; i++) {
		if (!js->jobs[i])
			continue; /* in history */
		if (job_active(c, js->jobs[i]) && !jobs_track(c, js->jobs[i]))
			return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	return SL_OK;
}

void jobs_free(struct ctl *c)
{
	struct ctl_jobs *js = c->jobs;
	if (!js)
		return;
	/* Polls still waiting were answered by the server's shutdown (gone). */
	for (int i = 0; i < js->njobs; i++)
		job_free(js->jobs[i]);
	free(js->jobs);
	free(js->live);
	free(js->nodes);
	free(js->dirty);
	strmap_free(js->node_by_name);
	free(js);
	c->jobs = NULL;
}

static void check_cancelling(struct ctl *c)
{
	struct ctl_jobs *js = c->jobs;
	js->cancel_deadline = 0;
	struct job *j;
	for (int k = 0; (j = jobs_live_next(c, &k));) {
		if (j->state != JS_CANCELLING)
			continue;
		int64_t at = j->cancel_ns + ((int64_t)j->stop_grace_s + JOB_CANCEL_SLACK_S) * 1000000000;
		if (at <= c->now_ns) {
			job_set_state(c, j, JS_CANCELLED, "cancelled; no agent confirmed the stop in time");
			job_save(c, j);
		} else {
			cancel_deadline(c, at);
		}
	}
}

void jobs_tick(struct ctl *c)
{
	struct ctl_jobs *js = c->jobs;
	if (!js || c->fatal)
		return;
	if (js->cancel_deadline && js->cancel_deadline <= c->now_ns)
		check_cancelling(c);
	jobs_answer_polls(c);
	int64_t next = js->poll_deadline;
	if (js->cancel_deadline && (!next || js->cancel_deadline < next))
		next = js->cancel_deadline;
	if (next && (!c->next_deadline || next < c->next_deadline))
		c->next_deadline = next;
}

int64_t jobs_work_version(const struct ctl *c, int node)
{
	if (!c->jobs || node < 0 || node >= c->fleet->nnodes)
		return 0;
	struct job_node *n = jobs_node((struct ctl *)c, c->fleet->nodes[node].name);
	return n ? n->version : 0;
}

static bool lease_over(const struct ctl_lease *l)
{
	return l->state != LS_PENDING && l->state != LS_ACTIVE && l->state != LS_PREEMPTING;
}

void jobs_lease_changed(struct ctl *c, struct ctl_lease *l)
{
	struct ctl_jobs *js = c->jobs;
	char why[JOB_REASON_MAX];
	if (!js || c->fatal)
		return;
	struct job *j;
	for (int k = 0; (j = jobs_live_next(c, &k));) {
		if (job_ended(j) || strcmp(j->lease, l->id))
			continue;
		if (lease_over(l)) {
			snprintf(why, sizeof(why), "lease %s ended (%s)", l->id, lease_state_name(l->state));
			job_set_state(c, j, JS_CANCELLED, why);
			job_save(c, j);
		} else if (l->state != LS_PENDING && l->epoch != j->epoch && l->pl.npicks > 0) {
			/* Replacement or scaling: every rank restarts with the new
			 * picks and environment (the agent stops the old epoch). */
			if (!job_assign(c, j, l)) {
				c->fatal = true;
				return;
			}
			sl_log_info("job ranks moved", "job=%s lease=%s epoch=%lld ranks=%d", j->id,
				    l->id, (long long)l->epoch, j->nranks);
			job_save(c, j);
		}
	}
}

void jobs_request_gone(struct ctl *c, struct http_request *req)
{
	struct ctl_jobs *js = c->jobs;
	intptr_t u = (intptr_t)http_request_user(req);
	if (!js || u <= 0 || u > js->nnodes)
		return;
	struct job_node *n = &js->nodes[u - 1];
	for (int i = 0; i < n->npolls; i++)
		if (n->polls[i].req == req) {
			n->polls[i] = n->polls[--n->npolls];
			js->npolls--;
			http_request_set_user(req, NULL);
			return;
		}
}

/* ---- heartbeats ---- */

static int64_t report_time(const json_t *w, const char *k)
{
	return time_field(w, k);
}

/* Applies one reported item; true when j changed. */
static bool apply_report(struct ctl *c, struct job *j, struct job_rank *r, const json_t *w)
{
	const char *st = json_string_value(json_object_get(w, "state"));
	int rs = rank_state_parse(st);
	if (rs < 0 || rs == RS_PENDING)
		return false;
	struct job_rank before = *r;
	r->state = (enum rank_state)rs;
	r->exit_code = (int)json_integer_value(json_object_get(w, "exit_code"));
	r->signal = (int)json_integer_value(json_object_get(w, "signal"));
	json_int_t restarts = json_integer_value(json_object_get(w, "restarts"));
	if (restarts >= 0 && restarts <= INT32_MAX)
		r->restarts = (int)restarts;
	r->pid = json_integer_value(json_object_get(w, "pid"));
	int64_t t = report_time(w, "started_at");
	if (t)
		r->started_ns = t;
	else if (rs == RS_RUNNING && before.state != RS_RUNNING)
		r->started_ns = c->now_ns;
	t = report_time(w, "ended_at");
	r->ended_ns = rs == RS_RUNNING ? 0 : t ? t : before.ended_ns ? before.ended_ns : c->now_ns;
	r->lost = rs == RS_EXITED && json_is_true(json_object_get(w, "lost"));
	const char *err = json_string_value(json_object_get(w, "error"));
	snprintf(r->error, sizeof(r->error), "%.*s", (int)sizeof(r->error) - 1,
		 err && rs != RS_RUNNING ? err : "");
	const char *prog = json_string_value(json_object_get(w, "progress"));
	snprintf(r->progress, sizeof(r->progress), "%.*s", (int)sizeof(r->progress) - 1,
		 prog && rs == RS_RUNNING ? prog : "");
	for (char *q = r->progress; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			*q = '?';
	if (rs == RS_RUNNING)
		r->exit_code = r->signal = 0;
	if (r->stop && rs != RS_RUNNING)
		r->gone = true;
	(void)j;
	return memcmp(&before, r, sizeof(before)) != 0;
}

static void add_stop(json_t *stop, const char *job, json_int_t rank)
{
	json_array_append_new(stop, json_pack("{s:s, s:I}", "job", job, "rank", rank));
}

void jobs_on_heartbeat(struct ctl *c, int node, const json_t *work, json_t *answer)
{
	struct ctl_jobs *js = c->jobs;
	if (!js || node < 0 || node >= c->fleet->nnodes || !answer)
		return;
	const char *name = c->fleet->nodes[node].name;
	json_t *stop = json_array();
	if (!stop)
		return;
	uint64_t mark = ++js->hb_seq;
	size_t i;
	const json_t *w;
	json_array_foreach(work, i, w) {
		const char *id = json_string_value(json_object_get(w, "job"));
		const json_t *rv = json_object_get(w, "rank");
		const char *st = json_string_value(json_object_get(w, "state"));
		bool running = st && !strcmp(st, "running");
		if (!id || !json_is_integer(rv))
			continue;
		json_int_t rank = json_integer_value(rv);
		struct job *j = jobs_find(c, id);
		struct job_rank *r = j && rank >= 0 && rank < j->nranks ? &j->ranks[rank] : NULL;
		if (!r || strcmp(r->node, name)) {
			/* Not assigned here (unknown job, or the rank moved). */
			if (running)
				add_stop(stop, id, rank);
			continue;
		}
		r->hb_mark = mark;
		json_int_t epoch = json_integer_value(json_object_get(w, "epoch"));
		if (epoch != j->epoch) {
			/* A stale epoch: the work item of the new one makes the agent
			 * restart it; a stop here could hit the new process. */
			if (running && (r->stop || job_ended(j)))
				add_stop(stop, id, rank);
			continue;
		}
		bool changed = apply_report(c, j, r, w);
		if (running && (r->stop || job_ended(j)))
			add_stop(stop, id, rank);
		enum job_state before = j->state;
		job_eval(c, j);
		if (changed || j->state != before)
			job_save(c, j);
	}
	/* Ranks to stop that this node no longer reports are stopped (only
	 * a report with a work list says what runs). */
	struct job *j;
	for (int k = 0; json_is_array(work) && (j = jobs_live_next(c, &k));) {
		bool changed = false;
		for (int q = 0; q < j->nranks; q++) {
			struct job_rank *r = &j->ranks[q];
			if (!r->stop || r->gone || r->hb_mark == mark || strcmp(r->node, name))
				continue;
			r->gone = true;
			if (r->state == RS_RUNNING) {
				r->state = RS_STOPPED;
				r->ended_ns = c->now_ns;
			}
			changed = true;
		}
		if (changed) {
			job_eval(c, j);
			job_save(c, j);
		}
	}
	json_object_set_new(answer, "stop", stop);
	/* The reports may have changed this node's desired state. */
	struct job_node *n = jobs_node(c, name);
	if (n)
		json_object_set_new(answer, "work_version", json_integer(n->version));
}

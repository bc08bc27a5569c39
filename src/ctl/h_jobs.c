/* h_jobs.c - the user side of jobs: run, list, show, cancel
 * (docs/agent-protocol.md "Jobs", docs/jobs.md).
 *
 * Like the lease handlers: everything is validated before anything changes,
 * and a tenant-scoped caller gets 404 for another tenant's lease or job (the
 * same answer as for one that does not exist). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "instances.h"
#include "jobs_int.h"
#include "paging.h"
#include "log.h"

static const struct ctl_field job_fields[] = {
	{"lease", FT_STRING, false},  {"argv", FT_ARRAY, true},
	{"instance", FT_STRING, false}, /* instead of "lease": in the instance's containers */
	{"env", FT_OBJECT, false},    {"restart", FT_STRING, false},
	{"stop_grace_s", FT_INT, false}, {"image", FT_STRING, false},
	/* "nodes" is "all" or an integer: checked by hand */
};

static void answer_job(struct ctl_call *call, int status, const struct job *j)
{
	json_t *o = job_to_json(call->ctl, j, false);
	if (!o) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	ctl_answer_json(call, status, o);
}

/* nodes: absent or "all" -> 0; 1..max -> n; else answers 400 and -1. */
static int parse_nodes(struct ctl_call *call, const json_t *v, int max)
{
	char msg[SL_DIAG_MSG];
	if (!v || (json_is_string(v) && !strcmp(json_string_value(v), "all")))
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= max)
		return (int)json_integer_value(v);
	snprintf(msg, sizeof(msg), "field 'nodes' must be \"all\" or 1..%d (the lease's nodes)", max);
	ctl_answer_error(call, SL_EINVAL, msg, "one rank runs on each node; torchrun starts a process per GPU");
	return -1;
}

static struct ctl_lease *visible_lease(struct ctl_call *call, const char *id)
{
	struct ctl_lease *l = ctl_lease_find(call->ctl, id);
	const char *own = ctl_call_tenant(call);
	if (!l || (own && strcmp(own, l->tenant))) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "no lease with id '%.64s'", id);
		ctl_answer_error(call, SL_ENOTFOUND, msg, "'suanli lease list' lists yours");
		return NULL;
	}
	return l;
}

static int live_jobs_on(struct ctl *c, const char *lease)
{
	int n = 0;
	const struct job *j;
	for (int k = 0; (j = jobs_live_next(c, &k));)
		n += !job_ended(j) && !strcmp(j->lease, lease);
	return n;
}

void h_job_create(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct ctl_jobs *js = c->jobs;
	struct sl_diag d;
	char msg[SL_DIAG_MSG];
	sl_diag_clear(&d);
	json_t *rest = json_copy(call->body);
	if (!rest) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	json_object_del(rest, "nodes");
	bool ok = ctl_check_fields(call, rest, job_fields, sizeof(job_fields) / sizeof(job_fields[0]),
				   "a job request");
	json_decref(rest);
	if (!ok)
		return;
	const json_t *body = call->body;
	const char *lease_id = json_string_value(json_object_get(body, "lease"));
	const char *inst_id = json_string_value(json_object_get(body, "instance"));
	if (!lease_id == !inst_id) {
		ctl_answer_error(call, SL_EINVAL, "give one of 'lease' and 'instance'",
				 "a job runs on a lease's nodes, or inside an instance's containers");
		return;
	}
	char inst_lease[24];
	if (inst_id) {
		sl_diag_clear(&d);
		enum sl_err ie = instances_job_lease(c, inst_id, ctl_call_tenant(call), inst_lease,
						     sizeof(inst_lease), &d);
		if (ie) {
			ctl_answer_diag(call, ie, &d);
			return;
		}
		lease_id = inst_lease;
	}
	const json_t *argv = json_object_get(body, "argv"), *env = json_object_get(body, "env");
	enum sl_err e;
	if ((e = job_argv_check(argv, &d)) || (e = job_env_check(env, &d))) {
		ctl_answer_diag(call, e, &d);
		return;
	}
	int restart = JOB_RESTART_NEVER;
	const char *rs = json_string_value(json_object_get(body, "restart"));
	if (rs && (restart = job_restart_parse(rs)) < 0) {
		ctl_answer_error(call, SL_EINVAL, "field 'restart' must be never, on-failure or always",
				 "on-failure restarts a rank that exits non-zero; always restarts it whenever it exits");
		return;
	}
	json_int_t grace = JOB_STOP_GRACE_DEFAULT_S;
	if (json_object_get(body, "stop_grace_s")) {
		grace = json_integer_value(json_object_get(body, "stop_grace_s"));
		if (grace < 1 || grace > JOB_STOP_GRACE_MAX_S) {
			snprintf(msg, sizeof(msg), "field 'stop_grace_s' must be 1..%d seconds",
				 JOB_STOP_GRACE_MAX_S);
			ctl_answer_error(call, SL_EINVAL, msg, NULL);
			return;
		}
	}
	char image[IMAGE_NAME_MAX + 1], image_ref[IMAGE_REF_MAX + 1];
	const char *iname = json_string_value(json_object_get(body, "image"));
	if (images_resolve(c, iname, image_ref, image) != SL_OK) {
		snprintf(msg, sizeof(msg), "no image called '%.64s' in the catalog", iname);
		ctl_answer_error(call, SL_ENOTFOUND, msg, "suanli image list shows them");
		return;
	}
	struct ctl_lease *l = visible_lease(call, lease_id);
	if (!l)
		return;
	if ((l->state != LS_ACTIVE && l->state != LS_PREEMPTING) || l->pl.npicks == 0) {
		snprintf(msg, sizeof(msg), "lease %s is %s; jobs run on active leases", l->id,
			 lease_state_name(l->state));
		ctl_answer_error(call, SL_ECONFLICT, msg,
				 l->state == LS_PENDING ? "wait until it is placed (suanli lease show)" : NULL);
		return;
	}
	int nodes = parse_nodes(call, json_object_get(body, "nodes"), l->pl.npicks);
	if (nodes < 0)
		return;
	if (live_jobs_on(c, l->id) >= JOB_MAX_LIVE_PER_LEASE) {
		snprintf(msg, sizeof(msg), "lease %s already runs %d jobs", l->id, JOB_MAX_LIVE_PER_LEASE);
		ctl_answer_error(call, SL_ECONFLICT, msg, "cancel one (suanli job cancel ID)");
		return;
	}
	enum sl_err ge = sl_grow(&js->jobs, &js->cap_jobs, js->njobs + 1, CTL_MAX_JOBS);
	if (ge) {
		ctl_answer_error(call, ge, NULL, NULL);
		return;
	}
	struct job *j = calloc(1, sizeof(*j));
	if (!j) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	j->seq = (uint64_t)js->njobs + 1;
	snprintf(j->id, sizeof(j->id), "job-%06llu", (unsigned long long)j->seq);
	snprintf(j->lease, sizeof(j->lease), "%s", l->id);
	snprintf(j->tenant, sizeof(j->tenant), "%s", l->tenant);
	snprintf(j->user, sizeof(j->user), "%s", call->tok->user);
	j->argv = json_deep_copy(argv);
	j->env = env ? json_deep_copy(env) : json_object();
	j->restart = (enum job_restart)restart;
	j->nodes_req = nodes;
	j->stop_grace_s = (int)grace;
	snprintf(j->image, sizeof(j->image), "%s", image);
	snprintf(j->image_ref, sizeof(j->image_ref), "%s", image_ref);
	snprintf(j->instance, sizeof(j->instance), "%s", inst_id ? inst_id : "");
	j->created_ns = c->now_ns;
	j->state = JS_PENDING;
	if (!j->argv || !j->env || !job_assign(c, j, l)) {
		json_decref(j->argv);
		json_decref(j->env);
		free(j->ranks);
		free(j);
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	js->jobs[js->njobs++] = j;
	if (!jobs_track(c, j)) {
		js->njobs--;
		json_decref(j->argv);
		json_decref(j->env);
		free(j->ranks);
		free(j);
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	sl_log_info("job created", "job=%s lease=%s tenant=%s ranks=%d", j->id, j->lease, j->tenant,
		    j->nranks);
	job_save(c, j);
	answer_job(call, 201, j);
}

struct job *jobs_path_job(struct ctl_call *call)
{
	struct job *j = jobs_find(call->ctl, call->param[0]);
	const char *own = ctl_call_tenant(call);
	if (!j || (own && strcmp(own, j->tenant))) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "no job with id '%.64s'", call->param[0]);
		ctl_answer_error(call, SL_ENOTFOUND, msg, "'suanli job list' lists yours");
		return NULL;
	}
	return j;
}

void h_job_show(struct ctl_call *call)
{
	struct job *j = jobs_path_job(call);
	if (j)
		answer_job(call, 200, j);
}

void h_job_list(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	const char *own = ctl_call_tenant(call);
	const char *lease = http_request_param(call->req, "lease");
	const char *state = http_request_param(call->req, "state");
	int st = -1;
	if (state && (st = job_state_parse(state)) < 0) {
		ctl_answer_error(call, SL_EINVAL, "unknown job state in ?state=",
				 "states: pending, running, succeeded, failed, cancelling, cancelled");
		return;
	}
	/* Pages (paging.h; the cursor is a job id) and ?tenant, ?node filters. */
	struct ctl_page pg;
	if (!ctl_page_parse(call, &pg))
		return;
	const char *tenant = http_request_param(call->req, "tenant");
	const char *node = http_request_param(call->req, "node");
	int from = 0;
	if (pg.after) {
		/* The cursor names its slot: jobs in history need not be read. */
		unsigned long long seq = 0;
		char tail;
		from = -1;
		if (sscanf(pg.after, "job-%llu%c", &seq, &tail) == 1 && seq >= 1 &&
		    seq <= (unsigned long long)c->jobs->njobs)
			from = (int)seq;
		if (from < 0) {
			ctl_answer_error(call, SL_EINVAL, "?after: no such job",
					 "pass the \"next\" of the previous page");
			return;
		}
	}
	json_t *a = json_array();
	const char *next = NULL;
	int n = 0;
	/* Only ended states are in history: a live filter skips its slots. */
	bool live_st = st == JS_PENDING || st == JS_RUNNING || st == JS_CANCELLING;
	for (int i = from; a && i < c->jobs->njobs; i++) {
		struct job *tmp = NULL;
		const struct job *j = c->jobs->jobs[i];
		if (!j && !live_st)
			j = jobs_at(c, i, &tmp);
		if (!j || (own && strcmp(own, j->tenant)) || (lease && strcmp(lease, j->lease)) ||
		    (st >= 0 && (int)j->state != st) || (tenant && strcmp(tenant, j->tenant))) {
			jobs_tmp_free(tmp);
			continue;
		}
		bool on = !node;
		for (int r = 0; !on && r < j->nranks; r++)
			on = !strcmp(j->ranks[r].node, node);
		if (!on) {
			jobs_tmp_free(tmp);
			continue;
		}
		if (pg.paged && n == pg.limit) {
			next = ""; /* replaced by the page's last below */
			jobs_tmp_free(tmp);
			break;
		}
		if (json_array_append_new(a, job_to_json(c, j, false))) {
			json_decref(a);
			a = NULL;
		}
		jobs_tmp_free(tmp);
		n++;
	}
	if (a && next && n > 0)
		next = json_string_value(json_object_get(json_array_get(a, (size_t)n - 1), "id"));
	json_t *ans = a ? ctl_page_answer(&pg, a, next) : NULL;
	if (!ans) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	ctl_answer_json(call, 200, ans);
}

void h_job_cancel(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct job *j = jobs_path_job(call);
	if (!j)
		return;
	if (job_ended(j)) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "job %s has already ended (%s)", j->id, job_state_name(j->state));
		ctl_answer_error(call, SL_ECONFLICT, msg, NULL);
		return;
	}
	if (j->state != JS_CANCELLING) {
		j->cancel_ns = c->now_ns;
		job_stop_ranks(c, j);
		job_set_state(c, j, JS_CANCELLING, "cancelled by request");
		job_eval(c, j); /* no rank running: cancelled at once */
		if (j->state == JS_CANCELLED)
			snprintf(j->reason, sizeof(j->reason), "cancelled by request");
		job_save(c, j);
	}
	answer_job(call, 200, j);
}

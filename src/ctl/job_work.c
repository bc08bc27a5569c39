/* job_work.c - GET /v1/agent/work: a node's desired work as a long poll
 * (docs/agent-protocol.md "Work").
 *
 * A poll whose version differs from the node's answers at once; otherwise
 * the request is kept (deferred: http.h) in the node's record until the
 * version changes (jobs_bump marks the node dirty and jobs_tick answers in
 * the same turn) or its wait runs out. Answers are queued like every other
 * answer, so they leave after the turn's commit. A client that hangs up is
 * forgotten (jobs_request_gone, from the gone callback). At most
 * JOBS_MAX_POLLS_PER_NODE wait per node: a new one answers the oldest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents.h"
#include "instances.h"
#include "jobs_int.h"
#include "log.h"

#define ADDR_MAX 64

/* Appends the work items of job j on node to items. */
static void job_items(struct ctl *c, const struct job *j, const char *node, json_t *items)
{
	int mine = 0;
	for (int i = 0; i < j->nranks; i++)
		mine += !strcmp(j->ranks[i].node, node);
	if (!mine)
		return;
	struct job_env_node *en = calloc((size_t)j->nranks, sizeof(*en));
	char(*addr)[ADDR_MAX] = calloc((size_t)j->nranks, ADDR_MAX);
	bool ok = en && addr;
	for (int i = 0; ok && i < j->nranks; i++) {
		const struct job_rank *r = &j->ranks[i];
		int idx = fleet_find_node(c->fleet, r->node);
		if (idx < 0) {
			sl_log_warn("job rank on a node the fleet no longer has", "job=%s rank=%d node=%s",
				    j->id, i, r->node);
			ok = false;
			break;
		}
		if (!agents_node_addr(c, idx, addr[i], ADDR_MAX))
			addr[i][0] = 0;
		en[i] = (struct job_env_node){r->node, addr[i], fleet_node_type(c->fleet, idx), r->gpus,
					      agents_node_lease_net(c, idx)};
	}
	struct job_env_in in = {j->lease, j->id, j->seq, j->nranks, en, j->env};
	for (int i = 0; ok && i < j->nranks; i++) {
		const struct job_rank *r = &j->ranks[i];
		const char *state;
		if (strcmp(r->node, node))
			continue;
		if (r->stop) {
			if (r->gone || r->state == RS_EXITED || r->state == RS_STOPPED)
				continue;
			state = "stop";
		} else {
			if (r->state == RS_EXITED && !r->exit_code && !r->signal &&
			    j->restart != JOB_RESTART_ALWAYS)
				continue; /* done */
			state = "run";
		}
		json_t *env, *gpus, *nics, *net;
		struct sl_diag d;
		sl_diag_clear(&d);
		if (job_env_build(&in, i, &env, &gpus, &nics, &d)) {
			sl_log_warn("job environment failed", "job=%s rank=%d error=%s", j->id, i, d.msg);
			continue;
		}
		if (job_env_net(&in, i, &net, &d)) {
			sl_log_warn("job network failed", "job=%s rank=%d error=%s", j->id, i, d.msg);
			json_decref(env);
			json_decref(gpus);
			json_decref(nics);
			continue;
		}
		json_t *item = json_pack("{s:s, s:i, s:s, s:s, s:I, s:s, s:O, s:o, s:o, s:o, s:s, s:i}",
					 "job", j->id, "rank", i, "lease", j->lease, "tenant", j->tenant,
					 "epoch", (json_int_t)j->epoch,
					 "state", state, "argv", j->argv, "env", env, "gpus", gpus, "nics",
					 nics, "restart", job_restart_name(j->restart), "stop_grace_s",
					 j->stop_grace_s);
		/* inside an instance: the agent runs it in the instance's
		 * container on this node (podman exec), not a container of its own */
		if (item && j->instance[0])
			json_object_set_new(item, "instance", json_string(j->instance));
		if (item && j->image_ref[0] && !j->instance[0])
			json_object_set_new(item, "image", json_string(j->image_ref));
		if (item && net)
			json_object_set_new(item, "net", net);
		else
			json_decref(net);
		json_array_append_new(items, item);
	}
	free(en);
	free(addr);
}

json_t *job_work_doc(struct ctl *c, struct job_node *n)
{
	json_t *items = json_array();
	const struct job *j;
	for (int k = 0; items && (j = jobs_live_next(c, &k));)
		job_items(c, j, n->name, items);
	/* Instances (instances.h): the containers this node keeps. */
	json_t *inst = instances_work_items(c, n->name);
	return json_pack("{s:I, s:o, s:o}", "version", (json_int_t)n->version, "work",
			 items ? items : json_array(), "instances", inst ? inst : json_array());
}

static void answer_req(struct ctl *c, struct job_node *n, struct http_request *req)
{
	struct ctl_call call;
	memset(&call, 0, sizeof(call));
	call.ctl = c;
	call.req = req;
	http_request_set_user(req, NULL);
	json_t *doc = job_work_doc(c, n);
	if (!doc)
		ctl_answer_error(&call, SL_ENOMEM, NULL, NULL);
	else
		ctl_answer_json(&call, 200, doc);
}

static void drop_poll(struct ctl *c, struct job_node *n, int i)
{
	memmove(&n->polls[i], &n->polls[i + 1], (size_t)(n->npolls - i - 1) * sizeof(n->polls[0]));
	n->npolls--;
	c->jobs->npolls--;
}

void jobs_answer_polls(struct ctl *c)
{
	struct ctl_jobs *js = c->jobs;
	for (int k = 0; k < js->ndirty; k++) {
		struct job_node *n = &js->nodes[js->dirty[k]];
		n->dirty = false;
		for (int i = 0; i < n->npolls;) {
			if (n->polls[i].version != n->version) {
				struct http_request *req = n->polls[i].req;
				drop_poll(c, n, i);
				answer_req(c, n, req);
			} else {
				i++;
			}
		}
	}
	js->ndirty = 0;
	if (!js->poll_deadline || js->poll_deadline > c->now_ns)
		return;
	js->poll_deadline = 0;
	for (int k = 0; k < js->nnodes && js->npolls; k++) {
		struct job_node *n = &js->nodes[k];
		for (int i = 0; i < n->npolls;) {
			if (n->polls[i].deadline_ns <= c->now_ns) {
				struct http_request *req = n->polls[i].req;
				drop_poll(c, n, i);
				answer_req(c, n, req);
				continue;
			}
			if (!js->poll_deadline || n->polls[i].deadline_ns < js->poll_deadline)
				js->poll_deadline = n->polls[i].deadline_ns;
			i++;
		}
	}
}

void h_agent_work(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct ctl_jobs *js = c->jobs;
	char msg[SL_DIAG_MSG];
	int node = agents_call_node(call);
	if (node < 0)
		return;
	long long version, wait;
	bool version_ok = ctl_query_int(call, "version", 0, INT64_MAX, &version);
	if (!version_ok || !ctl_query_int(call, "wait", JOBS_WAIT_DEFAULT_S, JOBS_WAIT_MAX_S, &wait)) {
		snprintf(msg, sizeof(msg), "%s", !version_ok ? "?version= must be a non-negative integer"
							 : "?wait= must be 0..60 seconds");
		ctl_answer_error(call, SL_EINVAL, msg, "GET /v1/agent/work?version=V&wait=S");
		return;
	}
	struct job_node *n = jobs_node(c, c->fleet->nodes[node].name);
	if (!n) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	if (n->version != version || wait == 0) {
		json_t *doc = job_work_doc(c, n);
		if (!doc)
			ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		else
			ctl_answer_json(call, 200, doc);
		return;
	}
	if (n->npolls == JOBS_MAX_POLLS_PER_NODE) {
		struct http_request *old = n->polls[0].req;
		drop_poll(c, n, 0);
		answer_req(c, n, old);
	}
	int64_t at = c->now_ns + (int64_t)wait * 1000000000;
	n->polls[n->npolls++] = (struct job_poll){call->req, version, at};
	js->npolls++;
	http_request_set_user(call->req, (void *)(intptr_t)(n - js->nodes + 1));
	if (!js->poll_deadline || at < js->poll_deadline)
		js->poll_deadline = at;
	call->answered = true; /* deferred: answered by jobs_tick */
}

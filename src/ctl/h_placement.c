/* h_placement.c - GET /v1/placement/history: what `suanli sim replay
 * --from-controller` replays. The fleet file the controller runs, its policy
 * and learned workload (ctl_workload.h), and every lease it holds in memory
 * (all live ones from memory and the --keep-ended most recently ended ones,
 * read from the lease history with one indexed query) as its request and
 * its submit, start and end instants, oldest first. Provider roles only: it
 * shows every tenant's demand. */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ctl_int.h"
#include "ctl_workload.h"

static json_t *lease_entry(const struct ctl_lease *l)
{
	json_t *models = json_array();
	for (int i = 0; models && i < l->req->nmodels; i++)
		json_array_append_new(models, json_string(lease_req_model(l->req, i)));
	json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:o, s:I, s:s}", "id", l->id, "state",
			      lease_state_name(l->state), "gpus", l->req->gpus, "per_node",
			      l->req->per_node, "models", models ? models : json_array(), "submit_s",
			      (json_int_t)(l->created_ns / 1000000000), "plan", plan_name(l->req->plan));
	if (!o)
		return NULL;
	if (l->req->gpu_milli > 0)
		json_object_set_new(o, "gpu_milli", json_integer(l->req->gpu_milli));
	if (l->req->cpu_mem) {
		json_object_set_new(o, "cpu_milli", json_integer(l->req->cpu_milli));
		json_object_set_new(o, "memory_mib", json_integer(l->req->mem_mib));
	}
	json_object_set_new(o, "start_s", l->started_ns ? json_integer(l->started_ns / 1000000000)
							: json_null());
	json_object_set_new(o, "end_s", l->ended_ns ? json_integer(l->ended_ns / 1000000000)
						    : json_null());
	return o;
}

struct hist_item {
	uint64_t seq;
	json_t *o;
};

struct hist_arg {
	struct ctl *c;
	struct hist_item *v;
	int n, cap;
	bool oom;
};

static bool hist_push(struct hist_arg *a, uint64_t seq, json_t *o)
{
	if (!o || sl_grow(&a->v, &a->cap, a->n + 1, CTL_MAX_LEASES)) {
		json_decref(o);
		a->oom = true;
		return false;
	}
	a->v[a->n++] = (struct hist_item){seq, o};
	return true;
}

static enum sl_err hist_row(void *arg, const char *id, const char *tenant, const char *json)
{
	struct hist_arg *a = arg;
	struct ctl_lease l;
	struct sl_diag d;
	(void)id, (void)tenant;
	json_t *o = json_loads(json, 0, NULL);
	enum sl_err e = o ? lease_from_json(a->c, o, &l, &d) : SL_EPARSE;
	json_decref(o);
	if (e == SL_OK) {
		hist_push(a, l.seq, lease_entry(&l));
		lease_release_mem(&l);
	}
	return a->oom ? SL_ENOMEM : SL_OK; /* an unreadable row is left out */
}

static int hist_cmp(const void *x, const void *y)
{
	const struct hist_item *a = x, *b = y;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void h_placement_history(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	json_t *leases = json_array(), *root = json_object();
	char *row = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	json_t *fr = NULL;
	if (c->fleet_id[0] && store_get(c->store, STORE_FLEETS, c->fleet_id, &row, &d) == SL_OK)
		fr = json_loads(row, 0, NULL);
	free(row);
	struct hist_arg ha = {c, NULL, 0, 0, false};
	for (int i = 0; i < c->lt.nleases && !ha.oom; i++) {
		const struct ctl_lease *l = ctl_lease_at(c, i);
		if (l && !lease_state_final(l->state))
			hist_push(&ha, l->seq, lease_entry(l));
	}
	/* Every ended lease's row is in history from the turn it ended. */
	enum sl_err he = ha.oom ? SL_ENOMEM
				: store_recent(c->store, STORE_LEASE_HISTORY, c->lt.keep_ended,
					       hist_row, &ha, &d);
	if (ha.n > 1)
		qsort(ha.v, (size_t)ha.n, sizeof(*ha.v), hist_cmp);
	for (int i = 0; i < ha.n; i++)
		if (!he && leases)
			json_array_append_new(leases, ha.v[i].o);
		else
			json_decref(ha.v[i].o);
	free(ha.v);
	if (he) {
		json_decref(leases);
		json_decref(root);
		json_decref(fr);
		ctl_answer_error(call, he, he == SL_ENOMEM ? NULL : d.msg, NULL);
		return;
	}
	if (!leases || !root) {
		json_decref(leases);
		json_decref(root);
		json_decref(fr);
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	const json_t *y = json_object_get(fr, "yaml");
	json_object_set_new(root, "fleet", json_is_string(y) ? json_copy((json_t *)y) : json_null());
	json_object_set_new(root, "fleet_id", json_string(c->fleet_id));
	json_object_set_new(root, "nodes", json_integer(c->fleet->nnodes));
	json_object_set_new(root, "placement", ctl_workload_json(c));
	json_object_set_new(root, "leases", leases);
	json_decref(fr);
	ctl_answer_json(call, 200, root);
}

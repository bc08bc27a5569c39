/* h_plan.c - POST /v1/plan: where a lease request would go now, without
 * placing it (the placement preview of the console's launch screen; the
 * online form of `suanli plan`). The body is a lease request (the fields of
 * POST /v1/leases); the answer is the placer's decision on the fleet as it
 * is this instant, with each node's GPUs and quality (the NVLink/PCIe
 * bottleneck), or the constraint that refused it and why. Nothing changes:
 * placer_place() only decides. A tenant's request is placed as its own
 * (its colocated servers, its regions); a provider names the tenant or asks
 * for nobody in particular. */
#include <stdio.h>
#include <string.h>

#include "ctl_int.h"

static const struct ctl_field plan_fields[] = {
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

static json_t *pick_json(const struct fleet *f, const struct place_pick *pk)
{
	const struct fleet_node *n = &f->nodes[pk->node];
	json_t *gpus = json_array();
	for (int g = 0; g < TOPO_MAX_GPUS; g++)
		if (pk->gpus & ((gpumask_t)1 << g))
			json_array_append_new(gpus, json_integer(g));
	return json_pack("{s:s, s:s, s:s, s:s, s:o, s:i, s:I, s:{s:i, s:i, s:i, s:i}}", "node", n->name,
			 "type", fleet_node_type(f, pk->node)->name, "site", f->sites[n->site].name,
			 "leaf", n->leaf >= 0 ? f->leaves[n->leaf].name : "", "gpus", gpus, "cpus",
			 pk->cpus, "mem_mib", (json_int_t)pk->mem_mib, "quality", "bottleneck_gbps",
			 pk->q.bottleneck_gbps, "total_gbps", pk->q.total_gbps, "numa_spanned",
			 pk->q.numa_spanned, "nic_rails", pk->q.nics);
}

static json_t *placed_json(const struct fleet *f, const struct placement *pl)
{
	const struct place_score *s = &pl->score;
	json_t *picks = json_array();
	int gpus = 0;
	for (int i = 0; i < pl->npicks; i++) {
		json_array_append_new(picks, pick_json(f, &pl->picks[i]));
		gpus += __builtin_popcountll((unsigned long long)pl->picks[i].gpus);
	}
	char why[256];
	snprintf(why, sizeof(why), "%d GPU%s on %d node%s; slowest GPU pair inside a node %d GB/s",
		 gpus, gpus == 1 ? "" : "s", pl->npicks, pl->npicks == 1 ? "" : "s", s->bottleneck_gbps);
	return json_pack("{s:o, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:b, s:b}, s:s}", "placement", picks,
			 "score", "bottleneck_gbps", s->bottleneck_gbps, "total_gbps", s->total_gbps,
			 "numa_spanned", s->numa_spanned, "nodes", s->nodes, "leaves", s->leaves,
			 "free_after", s->free_after, "full_quality", s->full_quality,
			 "rails_aligned", s->rails_aligned, "explanation", why);
}

void h_plan(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct lease_req r;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (!ctl_check_fields(call, call->body, plan_fields,
			      sizeof(plan_fields) / sizeof(plan_fields[0]), "a lease request"))
		return;
	enum sl_err e = lease_req_parse(call->body, &r, &d);
	if (e) {
		ctl_answer_diag(call, e, &d);
		return;
	}
	const char *own = ctl_call_tenant(call);
	if (own && r.tenant[0] && strcmp(own, r.tenant)) {
		ctl_answer_error(call, SL_EFORBIDDEN, "a tenant previews only its own requests",
				 "leave out \"tenant\"");
		return;
	}
	const char *who = own ? own : (r.tenant[0] ? r.tenant : NULL);
	const struct ctl_tenant *t = who ? ctl_tenant_find(c, who) : NULL;
	if (who && !t) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "no tenant called '%.64s'", who);
		ctl_answer_error(call, SL_ENOTFOUND, msg, "GET /v1/tenants lists them");
		return;
	}
	/* As POST /v1/leases: the tenant's only region when it names none. */
	if (t && !r.region[0] && json_array_size(t->regions) == 1)
		r.region = json_string_value(json_array_get(t->regions, 0));
	struct place_request pr;
	lease_req_to_place(&r, who, &pr);
	struct placement pl;
	placement_init(&pl);
	e = placer_place(c->placer, &pr, &pl, &d);
	json_t *o = NULL;
	if (e == SL_OK)
		o = placed_json(c->fleet, &pl);
	else if (e == SL_ENOSPACE)
		o = json_pack("{s:[], s:{s:s, s:s}}", "placement", "refused", "constraint",
			      place_constraint_name(pl.failed), "why", pl.why);
	placement_release(&pl);
	if (e != SL_OK && e != SL_ENOSPACE) {
		ctl_answer_diag(call, e, &d);
		return;
	}
	if (!o) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	ctl_answer_json(call, 200, o);
}

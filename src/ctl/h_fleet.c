/* h_fleet.c - the fleet, its nodes and the catalog: handlers and the fleet
 * replacement they share with start-up.
 *
 * Replacing a fleet builds the new fleet and a new placer beside the old ones,
 * re-claims every running lease on the new placer (nodes matched by name and
 * type), and swaps only when all of that worked, so a refused replacement
 * changes nothing. Node service state is derived, never stored twice: a node
 * is usable when it is present (simulated until agents exist) and not drained. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents.h"
#include "catalog.h"
#include "ctl_int.h"
#include "leader.h"
#include "log.h"
#include "paging.h"

/* ---- node state ---- */

void ctl_apply_usable(struct ctl *c)
{
	for (int i = 0; i < c->fleet->nnodes; i++)
	{
		placer_set_node_usable(c->placer, i,
				       agents_node_ready(c, i) &&
					       !json_object_get(c->drains, c->fleet->nodes[i].name));
		agents_apply_gpus(c, i); /* GPUs out of service by their health */
	}
}

static int used_gpus(struct ctl *c, int node)
{
	int n = 0;
	for (int g = 0; g < fleet_node_type(c->fleet, node)->ngpus; g++)
		n += placer_gpu_used_milli(c->placer, node, g) > 0;
	return n;
}

int ctl_node_free_gpus(struct ctl *c, int node)
{
	return fleet_node_type(c->fleet, node)->ngpus - used_gpus(c, node);
}

const char *ctl_node_state(struct ctl *c, int node, const char **reason)
{
	const json_t *dr = json_object_get(c->drains, c->fleet->nodes[node].name);
	if (dr) {
		*reason = json_string_value(json_object_get(dr, "reason"));
		return used_gpus(c, node) ? "draining" : "drained";
	}
	const char *st = agents_node_state(c, node, reason);
	if (st)
		return st;
	if (!c->simulate) {
		*reason = "no agent has reported from this node yet";
		return "unreachable";
	}
	*reason = "";
	return "ready";
}

bool ctl_node_visible(struct ctl *c, int node, const char *tenant)
{
	int owner = c->fleet->nodes[node].owner;
	return !tenant || owner < 0 || !strcmp(c->fleet->owners[owner], tenant);
}

static json_t *node_json(struct ctl *c, int i)
{
	const struct fleet *f = c->fleet;
	const struct fleet_node *n = &f->nodes[i];
	const struct node_type *t = fleet_node_type(f, i);
	const char *reason = "";
	const char *state = ctl_node_state(c, i, &reason);
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:s, s:b}", "name",
			      n->name, "type", t->name, "model", t->gpu->name, "site",
			      f->sites[n->site].name, "region", f->sites[n->site].region, "leaf",
			      f->leaves[n->leaf].name, "state", state, "gpus", t->ngpus, "free_gpus",
			      ctl_node_free_gpus(c, i), "reason", reason ? reason : "", "simulated",
			      c->simulate);
	if (o && n->owner >= 0)
		json_object_set_new(o, "owner", json_string(f->owners[n->owner]));
	/* A reservation whose window is open lends the node to its tenant. */
	const char *pool = placer_node_owner(c->placer, i);
	if (o && pool && (n->owner < 0 || strcmp(pool, f->owners[n->owner])))
		json_object_set_new(o, "reserved_for", json_string(pool));
	if (o && n->domain >= 0)
		json_object_set_new(o, "nvlink_domain", json_string(f->domains[n->domain].name));
	const char *host = agents_node_host_tenant(c, i);
	if (o && host)
		json_object_set_new(o, "host_processes", json_string(host));
	return o;
}

static json_t *mask_json(gpumask_t m)
{
	json_t *a = json_array();
	for (int i = 0; a && i < TOPO_MAX_GPUS; i++)
		if (m & (1u << i))
			json_array_append_new(a, json_integer(i));
	return a;
}

static json_t *topology_json(const struct node_type *t)
{
	json_t *links = json_array(), *numa = json_array(), *nics = json_array();
	for (int a = 0; a < t->ngpus; a++) {
		json_array_append_new(numa, json_integer(t->numa[a]));
		for (int b = a + 1; b < t->ngpus; b++) {
			const struct topo_link *l = &t->link[a][b];
			json_array_append_new(links, json_pack("{s:[i,i], s:s, s:i, s:i}", "gpus", a, b,
							       "kind", topo_link_kind_name(l->kind),
							       "count", l->count, "gbps", l->gbps));
		}
	}
	for (int i = 0; i < t->nnics; i++)
		json_array_append_new(nics, json_pack("{s:s, s:i, s:o}", "name", t->nics[i].name,
						      "gbps", t->nics[i].gbps, "gpus",
						      mask_json(t->nics[i].gpus)));
	return json_pack("{s:o, s:o, s:o}", "links", links, "numa", numa, "nics", nics);
}

/* ---- fleet replacement ---- */

static void fleet_free(struct fleet *f)
{
	if (f) {
		fleet_release(f);
		free(f);
	}
}

enum sl_err ctl_fleet_replace(struct ctl *c, const char *text, size_t len, const char *file,
			      bool save, struct sl_diag *d)
{
	struct fleet *nf = calloc(1, sizeof(*nf));
	struct placer *np = NULL;
	int **remap = NULL;
	enum sl_err e;
	if (!nf)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	if ((e = fleet_init(nf))) {
		free(nf);
		return sl_diag_set(d, e, "out of memory");
	}
	if ((e = fleet_load_yaml(nf, text, len, file, d)) || (e = agents_fleet_extend(c, nf, d)))
		goto fail;
	if ((e = placer_new(nf, &np)) || !(remap = calloc((size_t)c->lt.nleases + 1, sizeof(*remap)))) {
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
		goto fail;
	}
	/* Map every lease's picks to the new fleet; running leases must keep
	 * their nodes, with the same type, and are claimed on the new placer. */
	for (int i = 0; i < c->lt.nleases; i++) {
		struct ctl_lease *l = c->lt.leases[i];
		if (!l || !l->pl.npicks)
			continue;
		bool running = l->state == LS_ACTIVE || l->state == LS_PREEMPTING;
		remap[i] = malloc((size_t)l->pl.npicks * sizeof(int));
		if (!remap[i]) {
			e = sl_diag_set(d, SL_ENOMEM, "out of memory");
			goto fail;
		}
		for (int k = 0; k < l->pl.npicks; k++) {
			const struct fleet_node *on = &c->fleet->nodes[l->pl.picks[k].node];
			int ni = fleet_find_node(nf, on->name);
			remap[i][k] = ni;
			if (!running)
				continue;
			if (ni < 0 || strcmp(fleet_node_type(nf, ni)->name, c->fleet->types[on->type].name)) {
				sl_diag_hint(d, "release or move the lease first, or keep the node as it is");
				e = sl_diag_set(d, SL_ECONFLICT,
						"node %s runs lease %s and would %s", on->name, l->id,
						ni < 0 ? "disappear" : "change type");
				goto fail;
			}
		}
		if (running) {
			struct placement tmp, v;
			placement_init(&tmp);
			if ((e = placement_copy(&tmp, lease_pl_view(l, &v))) == SL_OK) {
				for (int k = 0; k < tmp.npicks; k++)
					tmp.picks[k].node = remap[i][k];
				e = placer_claim(np, &tmp, d);
			}
			placement_release(&tmp);
			if (e) {
				char why[SL_DIAG_MSG];
				snprintf(why, sizeof(why), "%s", d->msg);
				e = sl_diag_set(d, SL_ECONFLICT, "lease %s cannot move to the new fleet: %.400s",
						l->id, why);
				goto fail;
			}
		}
	}
	/* Commit point: nothing below fails (but the new scheduler's start,
	 * which only fails out of memory and then stops the daemon). */
	bool had_sched = c->sched != NULL;
	ctl_sched_stop(c);
	for (int i = 0; i < c->lt.nleases; i++) {
		struct ctl_lease *l = c->lt.leases[i];
		bool gone = false;
		if (!l || !remap[i])
			continue;
		/* Shared only with the scheduler's record, freed above: no copy. */
		if (place_picks_own(&l->pl))
			c->fatal = true;
		for (int k = 0; k < l->pl.npicks; k++) {
			l->pl.picks[k].node = remap[i][k];
			gone |= remap[i][k] < 0;
		}
		if (gone) /* an ended lease on a node that left: forget where it ran */
			l->pl.npicks = 0;
		free(remap[i]);
	}
	free(remap);
	placer_free(c->placer);
	fleet_free(c->fleet);
	c->fleet = nf;
	c->placer = np;
	ctl_apply_usable(c);
	if (had_sched && ctl_sched_start(c, d)) {
		sl_log_error("scheduler restart failed", "error=%s", d->msg);
		c->fatal = true;
	}
	if (save) {
		char id[32];
		c->fleet_version++;
		snprintf(id, sizeof(id), "fleet-%06lld", (long long)c->fleet_version);
		snprintf(c->fleet_id, sizeof(c->fleet_id), "%s", id);
		json_t *row = json_pack("{s:I, s:s, s:s%, s:o}", "version", (json_int_t)c->fleet_version,
					"file", file ? file : "", "yaml", text, len, "loaded_at",
					ctl_time_json(c->now_ns));
		ctl_put(c, STORE_FLEETS, id, NULL, row);
		ctl_meta_set(c, "fleet.current", id);
	}
	sl_log_info("fleet loaded", "file=%s version=%lld nodes=%d simulate=%d", file ? file : "",
		    (long long)c->fleet_version, c->fleet->nnodes, c->simulate);
	return SL_OK;
fail:
	if (remap) {
		for (int i = 0; i < c->lt.nleases; i++)
			free(remap[i]);
		free(remap);
	}
	placer_free(np);
	fleet_free(nf);
	return e;
}

/* ---- handlers ---- */

void h_healthz(struct ctl_call *call)
{
	json_t *o = json_pack("{s:s, s:s}", "status", "ok", "version", CTL_VERSION);
	leader_health(call->ctl, o);
	ctl_answer_json(call, 200, o);
}

void h_catalog(struct ctl_call *call)
{
	const struct fleet *f = call->ctl->fleet;
	json_t *models = json_array(), *types = json_array();
	for (size_t i = 0; i < catalog_gpu_count(); i++) {
		const struct gpu_model *m = catalog_gpu_at(i);
		json_array_append_new(models,
				      json_pack("{s:s, s:s, s:i, s:s, s:i, s:i, s:i}", "name", m->name,
						"vendor", m->vendor, "mem_gib", m->mem_gib,
						"interconnect", catalog_ic_name(m->ic), "ic_gbps",
						m->ic_gbps, "pcie_gen", m->pcie_gen, "bf16_tflops",
						m->bf16_tflops));
	}
	for (int i = 0; i < f->ntypes; i++)
		json_array_append_new(types, json_pack("{s:s, s:s, s:i, s:i, s:i}", "name",
						       f->types[i].name, "gpu", f->types[i].gpu->name,
						       "gpus", f->types[i].ngpus, "cpus", f->types[i].cpus,
						       "mem_gib", f->types[i].mem_gib));
	ctl_answer_json(call, 200, json_pack("{s:o, s:o}", "gpu_models", models, "node_types", types));
}

static json_t *summary_json(struct ctl *c)
{
	const struct fleet *f = c->fleet;
	struct fleet_summary s;
	fleet_summarize(f, &s);
	json_t *models = json_object(), *types = json_object(), *sites = json_array();
	for (size_t i = 0; i < catalog_gpu_count() && i < 64; i++)
		if (s.gpus_by_model[i])
			json_object_set_new(models, catalog_gpu_at(i)->name,
					    json_integer(s.gpus_by_model[i]));
	for (int i = 0; i < f->ntypes && i < 64; i++)
		if (s.nodes_by_type[i])
			json_object_set_new(types, f->types[i].name, json_integer(s.nodes_by_type[i]));
	for (int i = 0; i < f->nsites; i++)
		json_array_append_new(sites, json_pack("{s:s, s:s}", "name", f->sites[i].name,
						       "region", f->sites[i].region));
	return json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:o, s:o, s:o, s:I, s:b}",
			 "sites", s.sites, "regions", s.regions, "fabrics", s.fabrics, "leaves",
			 s.leaves, "nvlink_domains", s.domains, "nodes", s.nodes, "gpus", s.gpus,
			 "owners", s.owners, "gpus_by_model", models, "nodes_by_type", types,
			 "site_list", sites, "version", (json_int_t)c->fleet_version, "simulated",
			 c->simulate);
}

void h_fleet_get(struct ctl_call *call)
{
	ctl_answer_json(call, 200, summary_json(call->ctl));
}

void h_fleet_put(struct ctl_call *call)
{
	size_t len;
	const char *body = http_request_body(call->req, &len);
	struct sl_diag d;
	sl_diag_clear(&d);
	if (!body || len == 0) {
		ctl_answer_error(call, SL_EINVAL, "the body must be a fleet file (YAML)",
				 "see docs/fleet-file.md");
		return;
	}
	enum sl_err e = ctl_fleet_replace(call->ctl, body, len, "request body", true, &d);
	if (e) {
		char msg[SL_DIAG_MSG + 32];
		sl_diag_format(&d, msg, sizeof(msg));
		ctl_answer_error(call, e, msg, d.hint);
		return;
	}
	ctl_answer_json(call, 200, summary_json(call->ctl));
}

/* Pages and filters: paging.h; ?state, ?model, ?site, ?leaf, ?region,
 * ?type match the node's fields, ?tenant its owner (colocated nodes). The
 * cursor is a node name; pages follow the fleet's order. */
void h_nodes(struct ctl_call *call)
{
	static const char *const keys[] = {"state", "model", "site", "leaf", "region", "type"};
	struct ctl *c = call->ctl;
	const char *tenant = ctl_call_tenant(call);
	const char *want[6], *owner = http_request_param(call->req, "tenant");
	struct ctl_page pg;
	if (!ctl_page_parse(call, &pg))
		return;
	for (int k = 0; k < 6; k++)
		want[k] = http_request_param(call->req, keys[k]);
	int from = 0;
	if (pg.after) {
		int at = fleet_find_node(c->fleet, pg.after);
		if (at < 0) {
			ctl_answer_error(call, SL_EINVAL, "?after: no such node",
					 "pass the \"next\" of the previous page");
			return;
		}
		from = at + 1;
	}
	json_t *a = json_array();
	const char *next = NULL;
	int n = 0;
	for (int i = from; a && i < c->fleet->nnodes; i++) {
		if (!ctl_node_visible(c, i, tenant))
			continue;
		/* The fleet's own fields first: no JSON for nodes that do not match. */
		const struct fleet_node *fn = &c->fleet->nodes[i];
		const struct node_type *ft = fleet_node_type(c->fleet, i);
		const char *have[6] = {NULL, ft->gpu->name, c->fleet->sites[fn->site].name,
				       c->fleet->leaves[fn->leaf].name, c->fleet->sites[fn->site].region,
				       ft->name};
		bool pre = true;
		for (int k = 1; pre && k < 6; k++)
			pre = !want[k] || !strcmp(want[k], have[k]);
		if (!pre)
			continue;
		json_t *o = node_json(c, i);
		bool ok = o != NULL;
		for (int k = 0; ok && k < 6; k++)
			ok = ctl_page_match(o, keys[k], want[k]);
		if (ok && owner)
			ok = ctl_page_match(o, "owner", owner);
		if (!ok) {
			json_decref(o);
			continue;
		}
		if (pg.paged && n == pg.limit) {
			json_decref(o);
			next = ""; /* there is more: the cursor is the page's last node */
			break;
		}
		json_array_append_new(a, o);
		n++;
	}
	if (next && n > 0)
		next = json_string_value(json_object_get(json_array_get(a, (size_t)n - 1), "name"));
	json_t *ans = ctl_page_answer(&pg, a, next);
	if (!ans) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	ctl_answer_json(call, 200, ans);
}

/* The node named in the path, or -1 after answering 404. */
static int path_node(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	int i = fleet_find_node(c->fleet, call->param[0]);
	if (i < 0 || !ctl_node_visible(c, i, ctl_call_tenant(call))) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "no node called '%.64s'", call->param[0]);
		ctl_answer_error(call, SL_ENOTFOUND, msg, "'suanli nodes' lists them");
		return -1;
	}
	return i;
}

void h_node_show(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	const char *tenant = ctl_call_tenant(call);
	int node = path_node(call);
	if (node < 0)
		return;
	const struct node_type *t = fleet_node_type(c->fleet, node);
	const char *owner[TOPO_MAX_GPUS] = {0};
	const char *lease[TOPO_MAX_GPUS] = {0};
	for (int i = 0; i < c->lt.nleases; i++) {
		const struct ctl_lease *l = c->lt.leases[i];
		if (!l || (l->state != LS_ACTIVE && l->state != LS_PREEMPTING))
			continue;
		for (int k = 0; k < l->pl.npicks; k++)
			if (l->pl.picks[k].node == node)
				for (int g = 0; g < t->ngpus; g++)
					if ((l->pl.picks[k].gpus & (1u << g)) ||
					    (l->pl.picks[k].milli && l->pl.picks[k].gpu == g)) {
						lease[g] = l->id;
						owner[g] = l->tenant;
					}
	}
	json_t *o = node_json(c, node), *gs = json_array();
	for (int g = 0; g < t->ngpus; g++) {
		int milli = placer_gpu_used_milli(c->placer, node, g);
		json_t *e = json_pack("{s:i, s:s}", "index", g, "state",
				      milli == 0 ? "free" : milli < 1000 ? "shared" : "leased");
		if (milli < 1000 && milli > 0)
			json_object_set_new(e, "used_milli", json_integer(milli));
		if (lease[g] && (!tenant || !strcmp(owner[g], tenant)))
			json_object_set_new(e, "lease", json_string(lease[g]));
		json_array_append_new(gs, e);
	}
	json_object_set_new(o, "topology", topology_json(t));
	json_object_set_new(o, "gpu_state", gs);
	json_t *ag = agents_node_json(c, node); /* agent, gpu_health, gpu_events */
	if (ag)
		json_object_update(o, ag);
	json_decref(ag);
	ctl_answer_json(call, 200, o);
}

void h_node_drain(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {{"reason", FT_STRING, true}};
	struct ctl *c = call->ctl;
	bool bad = false;
	int node = path_node(call);
	if (node < 0 || !ctl_check_fields(call, call->body, fields, 1, "a drain request"))
		return;
	const char *reason = ctl_str_field(call, call->body, "reason", CTL_REASON_MAX, &bad);
	if (bad)
		return;
	const char *name = c->fleet->nodes[node].name;
	json_t *row = json_pack("{s:s, s:b, s:s, s:o, s:s}", "name", name, "drained", 1, "reason",
				reason, "at", ctl_time_json(c->now_ns), "by", call->tok->id);
	json_object_set(c->drains, name, row);
	placer_set_node_usable(c->placer, node, false);
	ctl_put(c, STORE_NODES, name, NULL, row);
	sl_log_info("node drained", "node=%s reason=%s by=%s", name, reason, call->tok->id);
	ctl_answer_json(call, 200, node_json(c, node));
}

void h_node_resume(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	int node = path_node(call);
	if (node < 0 || !ctl_check_fields(call, call->body, NULL, 0, "a resume request"))
		return;
	const char *name = c->fleet->nodes[node].name;
	if (json_object_get(c->drains, name)) {
		json_object_del(c->drains, name);
		placer_set_node_usable(c->placer, node, agents_node_ready(c, node));
		if (agents_node_ready(c, node) && c->sched)
			ctl_sched_check(c, sched_node_restored(c->sched, node, c->now_ns),
					"sched_node_restored");
		ctl_put(c, STORE_NODES, name, NULL,
			json_pack("{s:s, s:b, s:o, s:s}", "name", name, "drained", 0, "at",
				  ctl_time_json(c->now_ns), "by", call->tok->id));
		sl_log_info("node resumed", "node=%s by=%s", name, call->tok->id);
	}
	agents_node_resumed(c, node); /* failed and draining GPUs return */
	ctl_answer_json(call, 200, node_json(c, node));
}

/* instance_place.c - where an instance's GPUs come from: a lease through the
 * lease machinery, placed now on the nodes the start allows.
 *
 * The lease is an ordinary one (its request: gpus, model, per_node, region
 * or site, plan, tenant; `lease show` shows it), started through
 * ctl_sched_place_now on a placement chosen here: the placer is asked with
 * every node outside the allowed set taken out of service for the question
 * (and put back right after), so the usual quality and fragmentation rules
 * choose among the allowed nodes:
 *   IW_ANY:     a create: any node the request allows whose driver the image
 *               does not find too old;
 *   IW_HOME:    a start: exactly the home nodes (the disks are there);
 *   IW_MIGRATE: start --migrate: another node of the home's site.
 * A start that finds no room changes nothing and says why. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents.h"
#include "billing.h"
#include "buf.h"
#include "instances_int.h"
#include "log.h"

int inst_driver_cmp(const char *a, const char *b)
{
	for (int i = 0; i < 8; i++) {
		char *ea, *eb;
		long x = strtol(a, &ea, 10), y = strtol(b, &eb, 10);
		if (x != y)
			return x < y ? -1 : 1;
		if (*ea != '.' && *eb != '.')
			return 0;
		a = *ea == '.' ? ea + 1 : ea;
		b = *eb == '.' ? eb + 1 : eb;
	}
	return 0;
}

const char *inst_node_driver(struct ctl *c, int node)
{
	return agents_node_driver(c, node);
}

static bool is_home(const struct instance *in, const char *node)
{
	for (int k = 0; k < in->nnodes; k++)
		if (!strcmp(in->nodes[k].node, node))
			return true;
	return false;
}

/* The request of in's lease as the lease API takes it. */
static json_t *lease_doc(const struct instance *in, const char *site)
{
	json_t *o = json_pack("{s:i, s:s, s:s}", "gpus", in->gpus, "plan", plan_name(in->plan),
			      "tenant", in->tenant);
	if (!o)
		return NULL;
	if (in->model[0])
		json_object_set_new(o, "models", json_pack("[s]", in->model));
	if (in->per_node > 0)
		json_object_set_new(o, "per_node", json_integer(in->per_node));
	if (site && site[0])
		json_object_set_new(o, "site", json_string(site));
	else if (in->region[0])
		json_object_set_new(o, "region", json_string(in->region));
	return o;
}

/* Which nodes may take in for w; *ndriver counts those refused for their
 * driver, *example names one. */
static bool *allowed_nodes(struct ctl *c, const struct instance *in, enum inst_where w,
			   int *ndriver, char *example, size_t n)
{
	const struct fleet *f = c->fleet;
	bool *ok = calloc((size_t)f->nnodes + 1, sizeof(bool));
	int home_site = in->nnodes ? fleet_find_node(f, in->nodes[0].node) : -1;
	home_site = home_site >= 0 ? f->nodes[home_site].site : -1;
	*ndriver = 0;
	for (int i = 0; ok && i < f->nnodes; i++) {
		const char *name = f->nodes[i].name;
		bool home = is_home(in, name);
		if (w == IW_HOME) {
			ok[i] = home;
			continue;
		}
		if (w == IW_MIGRATE && (home || f->nodes[i].site != home_site))
			continue;
		const char *drv = inst_node_driver(c, i);
		if (in->min_driver[0] && drv[0] && inst_driver_cmp(drv, in->min_driver) < 0) {
			if (!(*ndriver)++)
				snprintf(example, n, "%s has driver %s", name, drv);
			continue;
		}
		ok[i] = true;
	}
	return ok;
}

/* placer_place with the nodes outside ok out of service for the question. */
static enum sl_err place_masked(struct ctl *c, const struct place_request *pr, const bool *ok,
				bool quiet, struct placement *pl, struct sl_diag *d)
{
	int nn = c->fleet->nnodes;
	bool *masked = calloc((size_t)nn + 1, sizeof(bool));
	if (!masked)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	for (int i = 0; i < nn; i++)
		if (!ok[i] && placer_node_usable(c->placer, i)) {
			masked[i] = true;
			placer_set_node_usable(c->placer, i, false);
		}
	enum sl_err e = quiet ? placer_place_quiet(c->placer, pr, pl, d) : placer_place(c->placer, pr, pl, d);
	for (int i = 0; i < nn; i++)
		if (masked[i])
			placer_set_node_usable(c->placer, i, true);
	free(masked);
	return e;
}

static const char *home_site_name(struct ctl *c, const struct instance *in)
{
	int n = in->nnodes ? fleet_find_node(c->fleet, in->nodes[0].node) : -1;
	return n >= 0 ? c->fleet->sites[c->fleet->nodes[n].site].name : "";
}

bool inst_home_free(struct ctl *c, const struct instance *in)
{
	json_t *doc = lease_doc(in, home_site_name(c, in));
	struct lease_req r;
	struct sl_diag d;
	sl_diag_clear(&d);
	bool free_now = false;
	if (doc && lease_req_parse(doc, &r, &d) == SL_OK) {
		struct place_request pr;
		lease_req_to_place(&r, in->tenant, &pr);
		int nd;
		char ex[8];
		bool *ok = allowed_nodes(c, in, IW_HOME, &nd, ex, sizeof(ex));
		struct placement pl;
		placement_init(&pl);
		free_now = ok && place_masked(c, &pr, ok, true, &pl, &d) == SL_OK;
		placement_release(&pl);
		free(ok);
	}
	json_decref(doc);
	return free_now;
}

/* The tenant's quota on the model pl placed it on (tenant create --quota),
 * counted like the scheduler counts it: its running leases on that model and
 * its pending ones that may use it, plus this start. Starts go around the
 * scheduler's submit (ctl_sched_place_now), so the quota is checked here. */
static enum sl_err quota_ok(struct ctl *c, const struct instance *in, const struct placement *pl,
			    struct sl_diag *d)
{
	const struct ctl_tenant *t = ctl_tenant_find(c, in->tenant);
	if (!t || !pl->npicks)
		return SL_OK;
	const char *model = fleet_node_type(c->fleet, pl->picks[0].node)->gpu->name;
	const json_t *q = json_object_get(t->quotas, model);
	if (!json_is_integer(q))
		return SL_OK;
	json_int_t used = 0;
	for (int i = 0; i < c->lt.nleases; i++) {
		const struct ctl_lease *l = c->lt.leases[i];
		if (!l || strcmp(l->tenant, in->tenant))
			continue;
		if ((l->state == LS_ACTIVE || l->state == LS_PREEMPTING) && l->pl.npicks > 0) {
			if (!strcmp(fleet_node_type(c->fleet, l->pl.picks[0].node)->gpu->name, model))
				used += l->gpus;
		} else if (l->state == LS_PENDING) {
			bool may = l->req->nmodels == 0;
			for (int k = 0; k < l->req->nmodels; k++)
				may |= !strcmp(lease_req_model(l->req, k), model);
			used += may ? l->gpus : 0;
		}
	}
	if (used + in->gpus <= json_integer_value(q))
		return SL_OK;
	sl_diag_hint(d, "stop or release an instance or a lease, or ask the operator for more quota");
	return sl_diag_set(d, SL_EQUOTA, "tenant %s's quota of %lld %s GPUs would be exceeded (%lld in use, %d asked)",
			   in->tenant, (long long)json_integer_value(q), model, (long long)used, in->gpus);
}

/* A new pending lease for in (like POST /v1/leases), not yet placed. */
static struct ctl_lease *lease_new(struct ctl *c, const struct instance *in, const json_t *doc,
				   const struct lease_req *r, const char *user)
{
	if (sl_grow(&c->lt.leases, &c->lt.cap_leases, c->lt.nleases + 1, CTL_MAX_LEASES))
		return NULL;
	struct ctl_lease *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	c->lt.leases[c->lt.nleases] = l;
	l->seq = (uint64_t)c->lt.nleases + 1;
	snprintf(l->id, sizeof(l->id), "ls-%06llu", (unsigned long long)l->seq);
	l->tenant = ctl_name(c, in->tenant);
	l->user = ctl_name(c, user && user[0] ? user : in->user);
	l->req = lease_req_keep(r);
	if (!l->req || !l->tenant || !l->user || !lease_set_request(l, doc)) {
		lease_release_mem(l);
		free(l);
		return NULL;
	}
	lease_share_request(l, l->seq > 1 ? c->lt.leases[l->seq - 2] : NULL);
	lease_share_req(l, l->seq > 1 ? c->lt.leases[l->seq - 2] : NULL);
	l->gpus = r->gpus;
	l->created_ns = c->now_ns;
	l->state = LS_PENDING;
	c->lt.nleases++;
	return l;
}

static void lease_undo(struct ctl *c, struct ctl_lease *l)
{
	c->lt.nleases--;
	c->lt.leases[c->lt.nleases] = NULL;
	lease_release_mem(l);
	free(l);
}

enum sl_err inst_place(struct ctl *c, struct instance *in, enum inst_where w, const char *user,
		       struct sl_diag *d)
{
	if (!c->sched)
		return sl_diag_set(d, SL_EIO, "the scheduler is not running");
	const char *site = w == IW_ANY ? in->site : home_site_name(c, in);
	/* The image's driver need as the catalog says now (an operator may
	 * correct it); kept as it was when the image left the catalog. */
	char drv[INST_MODEL_SIZE];
	char ref[IMAGE_REF_MAX + 1], used[IMAGE_NAME_MAX + 1];
	if (in->image[0] && images_resolve(c, in->image, ref, used) == SL_OK) {
		images_min_driver(c, in->image, drv, sizeof(drv));
		inst_name(c, &in->min_driver, drv, sizeof(drv));
	}
	json_t *doc = lease_doc(in, site);
	struct lease_req r;
	enum sl_err e = doc ? lease_req_parse(doc, &r, d) : sl_diag_set(d, SL_ENOMEM, "out of memory");
	if (!e)
		e = billing_can_start(c, in->tenant, &r, d);
	int ndriver = 0;
	char example[160] = "";
	bool *ok = e ? NULL : allowed_nodes(c, in, w, &ndriver, example, sizeof(example));
	if (!e && !ok)
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	struct placement pl;
	placement_init(&pl);
	if (!e) {
		struct place_request pr;
		lease_req_to_place(&r, in->tenant, &pr);
		e = place_masked(c, &pr, ok, false, &pl, d);
		if (e == SL_ENOSPACE) {
			char why[600];
			snprintf(why, sizeof(why), "%s", pl.why);
			if (ndriver)
				sl_diag_set(d, e, "%s; %d node%s refused for the image's driver need (image %s needs driver >= %s; %s)",
					    why[0] ? why : "no node has the GPUs free", ndriver,
					    ndriver == 1 ? "" : "s", in->image, in->min_driver, example);
			else
				sl_diag_set(d, e, "%s", why[0] ? why : "no node has the GPUs free");
		}
	}
	free(ok);
	if (!e && !inst_nodes_reserve(in, pl.npicks < INST_MAX_NODES ? pl.npicks : INST_MAX_NODES))
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	if (!e)
		e = quota_ok(c, in, &pl, d);
	struct ctl_lease *l = NULL;
	if (!e && !(l = lease_new(c, in, doc, &r, user)))
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	char old_lease[sizeof(in->lease)];
	snprintf(old_lease, sizeof(old_lease), "%s", in->lease);
	if (!e) {
		/* Before the start's hooks: billing leaves it to the instance. */
		snprintf(in->lease, sizeof(in->lease), "%s", l->id);
		e = ctl_sched_place_now(c, l, &pl, d);
		if (e) {
			snprintf(in->lease, sizeof(in->lease), "%s", old_lease);
			lease_undo(c, l);
		}
	}
	if (!e) {
		/* The nodes now: the lease's picks, in rank order. */
		char old_home[FLEET_NAME_MAX + 1];
		snprintf(old_home, sizeof(old_home), "%s", in->nnodes ? in->nodes[0].node : "");
		int n = l->pl.npicks < INST_MAX_NODES ? l->pl.npicks : INST_MAX_NODES;
		for (int k = 0; k < n; k++) {
			const struct place_pick *p = &l->pl.picks[k];
			struct inst_node *nd = &in->nodes[k];
			const char *name = c->fleet->nodes[p->node].name;
			if (k >= in->nnodes || strcmp(nd->node, name)) {
				inst_node_clear(nd);
				inst_name(c, &nd->node, name, FLEET_NAME_MAX + 1);
			}
			nd->gpus = p->milli && p->gpu >= 0 ? (gpumask_t)1 << p->gpu : p->gpus;
			nd->cpus = p->cpus;
			nd->mem_mib = p->mem_mib;
			nd->whole = fleet_node_type(c->fleet, p->node)->ngpus == __builtin_popcountll(nd->gpus);
			nd->idle_since_ns = 0;
		}
		for (int k = n; k < in->nnodes; k++)
			inst_node_clear(&in->nodes[k]);
		in->nnodes = n;
		if (w == IW_MIGRATE) {
			inst_name(c, &in->migrate_from, old_home, FLEET_NAME_MAX + 1);
			in->mig_rep = IR_NONE;
			in->mig_removing = false;
			in->mig_first_run = true;
		}
		const struct fleet_node *fn = &c->fleet->nodes[l->pl.picks[0].node];
		inst_name(c, &in->gpu_site, c->fleet->sites[fn->site].name, FLEET_NAME_MAX + 1);
		inst_name(c, &in->gpu_region, c->fleet->sites[fn->site].region, FLEET_NAME_MAX + 1);
		inst_name(c, &in->gpu_model, fleet_node_type(c->fleet, l->pl.picks[0].node)->gpu->name,
			  INST_MODEL_SIZE);
		in->mode = IM_GPU;
		in->epoch++;
		sl_log_info("instance placed", "instance=%s lease=%s nodes=%d first=%s", in->id, l->id,
			    in->nnodes, in->nodes[0].node);
	}
	placement_release(&pl);
	json_decref(doc);
	return e;
}

void inst_lease_release(struct ctl *c, struct instance *in, const char *why)
{
	if (!in->lease[0])
		return;
	struct ctl_lease *l = ctl_lease_find(c, in->lease);
	in->lease[0] = 0; /* first: the lease-change hook must not stop it again */
	if (!l || !c->sched || (l->state != LS_ACTIVE && l->state != LS_PREEMPTING && l->state != LS_PENDING))
		return;
	struct sl_diag d;
	sl_diag_clear(&d);
	lease_set_end_reason(l, "instance %.16s: %.32s", in->id, why);
	if (ctl_sched_check(c, sched_release(c->sched, l->seq, c->now_ns, &d), "sched_release"))
		sl_log_error("instance lease release failed", "instance=%s lease=%s error=%s", in->id,
			     l->id, d.msg);
	lease_set_end_reason(l, NULL);
}

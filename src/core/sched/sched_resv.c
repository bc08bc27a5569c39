/* sched_resv.c - reservations: capacity for one tenant between two instants.
 *
 * A reservation does not claim GPUs; it lends its nodes to the tenant's pool
 * on the placer (placer_set_pool) while its window is open, so only that
 * tenant's requests see them, exactly as colocated nodes, and everything else
 * in the placer (topology, best fit, gangs) applies unchanged. Leases of other
 * tenants already on those nodes keep running: ending paid work to honour a
 * reservation is the operator's call, not the scheduler's. Windows open and
 * close at the first call whose now_ns reaches them; the list is short and
 * scanned linearly. */
#include "sched_internal.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"

#define SCHED_MAX_RESVS (1 << 20) /* reservations held */

static struct sched_resv *resv_find(const struct sched *s, uint64_t id, int *idx)
{
	for (int i = 0; i < s->nresvs; i++)
		if (s->resvs[i]->id == id) {
			if (idx)
				*idx = i;
			return s->resvs[i];
		}
	return NULL;
}

static void resv_free(struct sched_resv *r)
{
	if (!r)
		return;
	free(r->tenant);
	free(r->nodes);
	free(r);
}

void resv_free_all(struct sched *s)
{
	for (int i = 0; i < s->nresvs; i++)
		resv_free(s->resvs[i]);
	free(s->resvs);
	s->resvs = NULL;
	s->nresvs = 0;
}

static bool windows_overlap(const struct sched_resv *a, int64_t start, int64_t end)
{
	return a->start_ns < end && start < a->end_ns;
}

static enum sl_err common_check(struct sched *s, uint64_t id, const char *tenant,
				int64_t start, int64_t end, struct sl_diag *d)
{
	if (!s)
		return sl_diag_set(d, SL_EINVAL, "no scheduler");
	if (!tenant || !fleet_name_valid(tenant))
		return sl_diag_set(d, SL_EINVAL, "bad tenant name '%s'", tenant ? tenant : "(null)");
	if (start >= end)
		return sl_diag_set(d, SL_EINVAL, "reservation window must end after it starts");
	if (resv_find(s, id, NULL))
		return sl_diag_set(d, SL_EEXIST, "reservation %llu already exists",
				   (unsigned long long)id);
	return SL_OK;
}

static enum sl_err resv_new(struct sched *s, uint64_t id, const char *tenant, int64_t start,
			    int64_t end, struct sched_resv **out)
{
	enum sl_err ge = sl_grow(&s->resvs, &s->capresvs, s->nresvs + 1, SCHED_MAX_RESVS);
	if (ge)
		return ge;
	struct sched_resv *r = calloc(1, sizeof(*r));
	size_t len = strlen(tenant) + 1;
	char *name = malloc(len);
	if (!r || !name) {
		free(r);
		free(name);
		return SL_ENOMEM;
	}
	memcpy(name, tenant, len);
	r->id = id;
	r->tenant = name;
	r->start_ns = start;
	r->end_ns = end;
	*out = r;
	return SL_OK;
}

/* SL_ECONFLICT when a node of nodes is held by another reservation whose
 * window overlaps [start, end). Uses s->mark, left clear. */
static enum sl_err overlap_check(struct sched *s, const int *nodes, int n, int64_t start,
				 int64_t end, struct sl_diag *d)
{
	enum sl_err e = SL_OK;
	for (int i = 0; i < n; i++)
		s->mark[nodes[i]] = true;
	for (int i = 0; e == SL_OK && i < s->nresvs; i++) {
		const struct sched_resv *r = s->resvs[i];
		if (!windows_overlap(r, start, end))
			continue;
		for (int k = 0; k < r->nnodes; k++)
			if (s->mark[r->nodes[k]]) {
				e = sl_diag_set(d, SL_ECONFLICT,
						"node %s is reserved for %s by reservation %llu "
						"in an overlapping window",
						s->f->nodes[r->nodes[k]].name, r->tenant,
						(unsigned long long)r->id);
				break;
			}
	}
	for (int i = 0; i < n; i++)
		s->mark[nodes[i]] = false;
	return e;
}

/* Windows that closed by now close before any opens (a node may pass from one
 * reservation to the next at the same instant), then a pass runs. */
static enum sl_err resv_apply(struct sched *s, int64_t now)
{
	enum sl_err e = resv_tick(s, now, true);
	if (e == SL_OK)
		e = resv_tick(s, now, false);
	return e == SL_OK ? sched_pass(s, now) : e;
}

static enum sl_err nodes_check(struct sched *s, const char *tenant, const int *nodes, int n,
			       struct sl_diag *d)
{
	if (n < 1 || !nodes)
		return sl_diag_set(d, SL_EINVAL, "a reservation needs at least one node");
	if (n > SCHED_MAX_RESV_NODES)
		return sl_diag_set(d, SL_ELIMIT, "%d nodes in one reservation; at most %d", n,
				   SCHED_MAX_RESV_NODES);
	enum sl_err e = SL_OK;
	int i = 0;
	for (; e == SL_OK && i < n; i++) {
		if (nodes[i] < 0 || nodes[i] >= s->f->nnodes) {
			e = sl_diag_set(d, SL_EINVAL, "node %d out of range 0..%d", nodes[i],
					s->f->nnodes - 1);
			break;
		}
		const struct fleet_node *fn = &s->f->nodes[nodes[i]];
		if (s->mark[nodes[i]])
			e = sl_diag_set(d, SL_EINVAL, "node %s named twice", fn->name);
		else if (fn->owner >= 0 && strcmp(s->f->owners[fn->owner], tenant))
			e = sl_diag_set(d, SL_EINVAL, "node %s is colocated by %s", fn->name,
					s->f->owners[fn->owner]);
		s->mark[nodes[i]] = true;
	}
	for (int k = 0; k < i && k < n; k++)
		if (nodes[k] >= 0 && nodes[k] < s->f->nnodes)
			s->mark[nodes[k]] = false;
	return e;
}

enum sl_err sched_reserve(struct sched *s, uint64_t id, const char *tenant, const int *nodes,
			  int nnodes, int64_t start_ns, int64_t end_ns, int64_t now_ns,
			  struct sl_diag *d)
{
	enum sl_err e = common_check(s, id, tenant, start_ns, end_ns, d);
	if (e == SL_OK)
		e = nodes_check(s, tenant, nodes, nnodes, d);
	if (e == SL_OK)
		e = overlap_check(s, nodes, nnodes, start_ns, end_ns, d);
	struct sched_resv *r = NULL;
	if (e == SL_OK && resv_new(s, id, tenant, start_ns, end_ns, &r) != SL_OK)
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	if (e == SL_OK) {
		r->nodes = malloc((size_t)nnodes * sizeof(*r->nodes));
		if (!r->nodes) {
			resv_free(r);
			return sl_diag_set(d, SL_ENOMEM, "out of memory");
		}
		memcpy(r->nodes, nodes, (size_t)nnodes * sizeof(*nodes));
		r->nnodes = nnodes;
		s->resvs[s->nresvs++] = r;
		e = resv_apply(s, now_ns);
	}
	return e;
}

enum sl_err sched_reserve_count(struct sched *s, uint64_t id, const char *tenant,
				const char *model, int gpus, int64_t start_ns,
				int64_t end_ns, int64_t now_ns, struct sl_diag *d)
{
	enum sl_err e = common_check(s, id, tenant, start_ns, end_ns, d);
	if (e != SL_OK)
		return e;
	const struct gpu_model *m = model ? catalog_gpu_find(model) : NULL;
	if (!m)
		return sl_diag_set(d, SL_EINVAL, "unknown GPU model '%s'", model ? model : "(null)");
	if (gpus < 1 || gpus > PLACE_MAX_GPUS)
		return sl_diag_set(d, SL_EINVAL, "gpus %d out of range 1..%d", gpus,
				   PLACE_MAX_GPUS);
	int have = 0;
	for (int i = 0; i < s->f->nnodes; i++) {
		const struct gpu_model *g = fleet_node_type(s->f, i)->gpu;
		if (g && !strcmp(g->name, m->name) && s->f->nodes[i].owner < 0)
			have += fleet_node_type(s->f, i)->ngpus;
	}
	if (have < gpus)
		return sl_diag_set(d, SL_EINVAL, "the fleet's provider nodes hold %d %s GPUs; "
				   "cannot reserve %d", have, m->name, gpus);
	struct sched_resv *r;
	if (resv_new(s, id, tenant, start_ns, end_ns, &r) != SL_OK)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	r->by_count = true;
	r->model = m;
	r->gpus = gpus;
	s->resvs[s->nresvs++] = r;
	return resv_apply(s, now_ns);
}

/* ---- windows -------------------------------------------------------------- */

/* Chooses whole free provider nodes for a count reservation, as the placer
 * would for an exclusive request, avoiding nodes that node reservations hold
 * in an overlapping window. False when there are not enough now. */
static bool count_choose(struct sched *s, struct sched_resv *r)
{
	int k = 0;
	free(r->nodes);
	r->nodes = NULL;
	r->nnodes = 0;
	for (int t = 0; t < s->f->ntypes; t++)
		if (s->f->types[t].gpu && !strcmp(s->f->types[t].gpu->name, r->model->name) &&
		    s->f->types[t].ngpus > k)
			k = s->f->types[t].ngpus;
	if (k == 0)
		return false;
	struct place_request req;
	memset(&req, 0, sizeof(req));
	req.gpus = r->gpus <= k ? r->gpus : (r->gpus + k - 1) / k * k;
	req.nmodels = 1;
	req.models[0] = r->model->name;
	req.exclusive = true;
	int *off = malloc(((size_t)s->f->nnodes + 1) * sizeof(*off)), noff = 0;
	if (!off)
		return false;
	for (int i = 0; i < s->nresvs; i++) {
		const struct sched_resv *o = s->resvs[i];
		if (o == r || !windows_overlap(o, r->start_ns, r->end_ns))
			continue;
		for (int j = 0; j < o->nnodes; j++)
			if (placer_node_usable(s->p, o->nodes[j])) {
				placer_set_node_usable(s->p, o->nodes[j], false);
				off[noff++] = o->nodes[j];
			}
	}
	struct placement pl;
	placement_init(&pl);
	bool ok = placer_place(s->p, &req, &pl, NULL) == SL_OK;
	for (int i = 0; i < noff; i++)
		placer_set_node_usable(s->p, off[i], true);
	free(off);
	if (ok) {
		r->nodes = malloc((size_t)pl.npicks * sizeof(*r->nodes));
		ok = r->nodes != NULL;
		for (int i = 0; ok && i < pl.npicks; i++)
			r->nodes[i] = pl.picks[i].node;
		r->nnodes = ok ? pl.npicks : 0;
	}
	placement_release(&pl);
	return ok;
}

static enum sl_err resv_event(struct sched *s, struct sched_resv *r, bool started,
			      int64_t now)
{
	struct sched_event *ev;
	enum sl_err e = ev_push(s, started ? SCHED_EV_RESV_STARTED : SCHED_EV_RESV_ENDED,
				r->id, now, &ev);
	for (int i = 0; started && e == SL_OK && i < r->nnodes; i++) {
		struct place_pick k = {.node = r->nodes[i], .gpu = -1};
		e = placement_add(&ev->placement, &k);
	}
	return e;
}

static enum sl_err resv_close(struct sched *s, int idx, int64_t now)
{
	struct sched_resv *r = s->resvs[idx];
	enum sl_err e = SL_OK;
	if (r->open) {
		e = placer_set_pool(s->p, r->nodes, r->nnodes, NULL, NULL);
		s->gen++;
	}
	if (e == SL_OK)
		e = resv_event(s, r, false, now);
	if (e != SL_OK)
		return e;
	memmove(&s->resvs[idx], &s->resvs[idx + 1],
		(size_t)(s->nresvs - idx - 1) * sizeof(*s->resvs));
	s->nresvs--;
	resv_free(r);
	return SL_OK;
}

enum sl_err resv_tick(struct sched *s, int64_t now, bool closing)
{
	enum sl_err e = SL_OK;
	for (int i = 0; e == SL_OK && i < s->nresvs;) {
		struct sched_resv *r = s->resvs[i];
		if (closing) {
			if (r->end_ns <= now)
				e = resv_close(s, i, now);
			else
				i++;
			continue;
		}
		i++;
		if (r->open || r->start_ns > now || r->end_ns <= now)
			continue;
		if (r->by_count && !count_choose(s, r))
			continue; /* not enough free whole nodes yet: try at the next call */
		e = placer_set_pool(s->p, r->nodes, r->nnodes, r->tenant, NULL);
		if (e == SL_OK) {
			r->open = true;
			s->gen++;
			e = resv_event(s, r, true, now);
		}
	}
	return e;
}

enum sl_err sched_unreserve(struct sched *s, uint64_t id, int64_t now_ns, struct sl_diag *d)
{
	int idx;
	if (!s || !resv_find(s, id, &idx))
		return sl_diag_set(d, SL_ENOTFOUND, "no reservation %llu", (unsigned long long)id);
	enum sl_err e = resv_close(s, idx, now_ns);
	return e == SL_OK ? sched_pass(s, now_ns) : e;
}

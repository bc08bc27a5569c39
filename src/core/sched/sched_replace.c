/* sched_replace.c - moving a running lease's GPUs off a node that failed
 * (sched_replace_node, scheduler.h), for leases whose request asked for
 * replacement instead of failure.
 *
 * Where the new GPUs go: the failed node's NVLink domain first (a multi-node
 * NVLink job keeps its fabric), then its leaf switch, then its site, then
 * anywhere the lease's own constraints allow. The search restricts the placer
 * by taking every other node out of service for the one call and putting
 * them back; node failures are rare, so the O(nodes) toggling is cheap
 * enough and keeps the placer's decision rules in one place. The new GPUs are
 * claimed before the old ones are released, so no GPU is ever held twice and
 * a refusal changes nothing but the failed node's service flag. */
#include "sched_internal.h"

#include <stdlib.h>
#include <string.h>

enum scope { SCOPE_DOMAIN, SCOPE_LEAF, SCOPE_SITE, SCOPE_ANY };

static bool in_scope(const struct fleet *f, int i, int ref, enum scope sc)
{
	switch (sc) {
	case SCOPE_DOMAIN: return f->nodes[i].domain >= 0 && f->nodes[i].domain == f->nodes[ref].domain;
	case SCOPE_LEAF: return f->nodes[i].leaf == f->nodes[ref].leaf;
	case SCOPE_SITE: return f->nodes[i].site == f->nodes[ref].site;
	case SCOPE_ANY: return true;
	}
	return false;
}

/* Places r with only the nodes in scope (around ref) in service. */
static enum sl_err place_scoped(struct sched *s, const struct place_request *r, int ref,
				enum scope sc, struct placement *out)
{
	const struct fleet *f = s->f;
	int n = 0;
	int *off = NULL;
	if (sc != SCOPE_ANY) {
		off = malloc(((size_t)f->nnodes + 1) * sizeof(*off));
		if (!off)
			return SL_ENOMEM;
		for (int i = 0; i < f->nnodes; i++)
			if (!in_scope(f, i, ref, sc) && placer_node_usable(s->p, i)) {
				placer_set_node_usable(s->p, i, false);
				off[n++] = i;
			}
	}
	enum sl_err e = placer_place_quiet(s->p, r, out, NULL);
	for (int i = 0; i < n; i++)
		placer_set_node_usable(s->p, off[i], true);
	free(off);
	return e;
}

enum sl_err sched_replace_node(struct sched *s, uint64_t id, int node, int64_t now_ns,
			       struct placement *out, struct sl_diag *d)
{
	(void)now_ns;
	struct sched_lease *l = find_or_diag(s, id, d);
	if (!l)
		return SL_ENOTFOUND;
	if (node < 0 || node >= s->f->nnodes)
		return sl_diag_set(d, SL_EINVAL, "no node %d", node);
	if (l->state != SCHED_RUNNING)
		return sl_diag_set(d, SL_ECONFLICT, "lease %llu is not running%s",
				   (unsigned long long)id,
				   l->state == SCHED_PREEMPTING ? " (it is being preempted)" : "");
	struct place_request r;
	lease_req(l, &r);
	struct placement lost, x, next;
	placement_init(&lost);
	placement_init(&x);
	placement_init(&next);
	enum sl_err e = SL_OK;
	int whole = 0, milli = 0;
	for (int i = 0; e == SL_OK && i < l->pl.npicks; i++) {
		const struct place_pick *k = &l->pl.picks[i];
		if (k->node == node) {
			whole += __builtin_popcount(k->gpus);
			milli += k->milli;
			e = placement_add(&lost, k);
		} else {
			e = placement_add(&next, k);
		}
	}
	if (e == SL_OK && lost.npicks == 0)
		e = sl_diag_set(d, SL_EINVAL, "lease %llu holds nothing on node %d",
				(unsigned long long)id, node);
	if (e == SL_OK) {
		placer_set_node_usable(s->p, node, false);
		r.gpus = whole;
		r.gpu_milli = whole ? 0 : milli;
		r.per_node = r.per_node > 0 && whole % r.per_node == 0 ? r.per_node : 0;
		e = SL_ENOSPACE;
		for (int sc = SCOPE_DOMAIN; sc <= SCOPE_ANY && e == SL_ENOSPACE; sc++) {
			if (sc == SCOPE_DOMAIN && s->f->nodes[node].domain < 0)
				continue;
			e = place_scoped(s, &r, node, (enum scope)sc, &x);
			if (e != SL_OK && e != SL_ENOMEM)
				e = SL_ENOSPACE;
		}
		if (e == SL_ENOSPACE)
			sl_diag_set(d, SL_ENOSPACE,
				    "no free GPUs fit lease %llu's request to replace %d GPUs of node %s",
				    (unsigned long long)id, whole ? whole : 1, s->f->nodes[node].name);
	}
	for (int i = 0; e == SL_OK && i < x.npicks; i++)
		e = sched_merge_pick(s, &next, &x.picks[i]);
	struct place_picks kept = {NULL, 0, 0};
	if (e == SL_OK) {
		e = placement_copy(out, &next);
	}
	if (e == SL_OK && place_picks_copy(&kept, &next) != SL_OK)
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	if (e == SL_OK)
		e = placer_claim(s->p, &x, d);
	if (e == SL_OK) {
		sched_cannot_fail(placer_release(s->p, &lost, NULL));
		/* Swap the picks (the scheduler keeps no score). */
		lease_account(s, l, -1);
		place_picks_release(&l->pl);
		l->pl = kept;
		kept = (struct place_picks){NULL, 0, 0};
		lease_account(s, l, 1);
		s->dirty = true;
	}
	place_picks_release(&kept);
	placement_release(&lost);
	placement_release(&x);
	placement_release(&next);
	return e;
}

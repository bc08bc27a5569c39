/* sched_elastic.c - growing and shrinking elastic leases.
 *
 * A grow is immediate or refused, never queued: a lease that asks for more
 * while running should learn at once whether it got it. It still must not
 * delay the first waiting lease, so it obeys the backfill rule against that
 * lease's shadow placement. Extra GPUs go where they help the workload most:
 * the lease's own nodes first (chosen GPU by GPU for the best set quality
 * with what it has), then its site, then anywhere its constraints allow. A
 * shrink gives back GPUs from the end of the placement, whole picks first, so
 * the lease keeps its oldest, usually best-connected, GPUs. */
#include "sched_internal.h"

#include <stdlib.h>
#include <string.h>

/* Adds extra GPUs to a pick on its own node, best quality first; false if the
 * node has too few free GPUs. */
static bool grow_same_node(struct sched *s, const struct sched_lease *l,
			   const struct place_pick *k, int extra, struct place_pick *out)
{
	const struct node_type *t = fleet_node_type(s->f, k->node);
	gpumask_t free = placer_free_mask(s->p, k->node), add = 0;
	if (k->gpu >= 0 || __builtin_popcount(free) < extra)
		return false;
	for (int j = 0; j < extra; j++) {
		int best = -1;
		struct node_quality bq, q;
		for (int g = 0; g < t->ngpus; g++) {
			gpumask_t bit = (gpumask_t)1 << g;
			if (!(free & bit) || (add & bit) ||
			    !node_set_quality(t, k->gpus | add | bit, &q))
				continue;
			if (best < 0 || node_quality_cmp(&q, &bq) > 0) {
				best = g;
				bq = q;
			}
		}
		if (best < 0)
			return false;
		add |= (gpumask_t)1 << best;
	}
	memset(out, 0, sizeof(*out));
	out->node = k->node;
	out->gpus = add;
	out->gpu = -1;
	out->cpus = l->shape->req.cpus > 0 ? 0 : t->cpus * extra / t->ngpus;
	out->mem_mib = l->shape->req.mem_mib > 0 ? 0 : (int64_t)t->mem_gib * 1024 * extra / t->ngpus;
	return node_set_quality(t, add, &out->q);
}

static bool grow_allowed(struct sched *s, const struct sched_lease *l,
			 const struct placement *x, int64_t shadow)
{
	return !pl_touches(x, s->mark) || (l->duration_ns > 0 && lease_end_ns(l) <= shadow);
}

/* Candidate placements for the extra GPUs, in preference order: the lease's
 * own nodes, its first node's site, anywhere its constraints allow. */
static enum sl_err grow_find(struct sched *s, struct sched_lease *l, int extra,
			     int64_t shadow, const struct placement *spl, struct placement *x)
{
	for (int i = 0; i < l->pl.npicks; i++) {
		struct place_pick k;
		x->npicks = 0;
		if (grow_same_node(s, l, &l->pl.picks[i], extra, &k) &&
		    placement_add(x, &k) == SL_OK && grow_allowed(s, l, x, shadow) &&
		    placer_claim(s->p, x, NULL) == SL_OK) {
			sched_cannot_fail(placer_release(s->p, x, NULL));
			return SL_OK;
		}
	}
	struct place_request r = l->shape->req;
	r.gpus = extra;
	r.per_node = r.per_node > 0 && extra % r.per_node == 0 ? r.per_node : 0;
	r.exclusive = false;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0 && l->pl.npicks > 0)
			r.site = s->f->sites[s->f->nodes[l->pl.picks[0].node].site].name;
		else
			r.site = l->shape->req.site;
		if (placer_place(s->p, &r, x, NULL) == SL_OK && grow_allowed(s, l, x, shadow))
			return SL_OK;
		if (spl->npicks && place_avoiding(s, &r, spl, x))
			return SL_OK;
	}
	return SL_ENOSPACE;
}

enum sl_err sched_merge_pick(const struct sched *s, struct placement *pl, const struct place_pick *k)
{
	for (int i = 0; k->gpu < 0 && i < pl->npicks; i++) {
		struct place_pick *m = &pl->picks[i];
		if (m->node != k->node || m->gpu >= 0)
			continue;
		m->gpus |= k->gpus;
		m->cpus += k->cpus;
		m->mem_mib += k->mem_mib;
		(void)node_set_quality(fleet_node_type(s->f, m->node), m->gpus, &m->q);
		return SL_OK;
	}
	return placement_add(pl, k);
}

static enum sl_err scale_grow(struct sched *s, struct sched_lease *l, int extra,
			      int64_t now, struct sl_diag *d)
{
	struct sched_lease *head;
	int64_t shadow;
	struct placement spl, x;
	placement_init(&spl);
	placement_init(&x);
	enum sl_err e = head_shadow(s, &head, &shadow, &spl, now);
	if (e == SL_OK) {
		e = grow_find(s, l, extra, shadow, &spl, &x);
		if (e == SL_ENOSPACE) {
			sl_diag_set(d, SL_ENOSPACE, "no room to grow lease %llu by %d GPUs%s",
				    (unsigned long long)l->id, extra,
				    head ? " without delaying the first lease in the queue" : "");
			if (x.why[0])
				sl_diag_hint(d, "%s", x.why);
		}
	}
	mark_set(s, &spl, false);
	placement_release(&spl);
	if (e == SL_OK)
		e = quota_check(s, l, &x, d);
	struct placement grown, cur;
	struct place_picks kept = {NULL, 0, 0};
	placement_init(&grown);
	if (e == SL_OK)
		e = placement_copy(&grown, place_picks_view(&l->pl, &cur));
	for (int i = 0; e == SL_OK && i < x.npicks; i++)
		e = placement_add(&grown, &x.picks[i]);
	if (e == SL_OK) {
		grown.npicks = l->pl.npicks;
		for (int i = 0; i < x.npicks; i++)
			sched_cannot_fail(sched_merge_pick(s, &grown, &x.picks[i])); /* capacity reserved */
		e = place_picks_copy(&kept, &grown); /* before the claim: cannot fail after */
	}
	if (e == SL_OK)
		e = placer_claim(s->p, &x, d);
	if (e == SL_OK) {
		lease_account(s, l, -1);
		place_picks_release(&l->pl);
		l->pl = kept;
		kept = (struct place_picks){NULL, 0, 0};
		l->gpus += extra;
		lease_account(s, l, 1);
	}
	place_picks_release(&kept);
	placement_release(&grown);
	placement_release(&x);
	return e;
}

static void scale_shrink(struct sched *s, struct sched_lease *l, int drop)
{
	lease_account(s, l, -1);
	l->gpus -= drop;
	for (int i = l->pl.npicks - 1; i >= 0 && drop > 0; i--) {
		struct place_pick *k = &l->pl.picks[i];
		int c = __builtin_popcount(k->gpus);
		struct placement one = {.npicks = 1, .picks = k};
		if (c <= drop) {
			sched_cannot_fail(placer_release(s->p, &one, NULL));
			l->pl.npicks = i;
			drop -= c;
			continue;
		}
		struct place_pick part = *k;
		part.gpus = 0;
		for (int g = 31; g >= 0 && __builtin_popcount(part.gpus) < drop; g--)
			if (k->gpus & ((gpumask_t)1 << g))
				part.gpus |= (gpumask_t)1 << g;
		part.cpus = k->cpus * drop / c;
		part.mem_mib = k->mem_mib * drop / c;
		one.picks = &part;
		sched_cannot_fail(placer_release(s->p, &one, NULL));
		k->gpus &= ~part.gpus;
		k->cpus -= part.cpus;
		k->mem_mib -= part.mem_mib;
		(void)node_set_quality(fleet_node_type(s->f, k->node), k->gpus, &k->q);
		drop = 0;
	}
	lease_account(s, l, 1);
	s->gen++;
}

enum sl_err sched_scale(struct sched *s, uint64_t id, int gpus, int64_t now_ns,
			struct sl_diag *d)
{
	struct sched_lease *l = find_or_diag(s, id, d);
	if (!l)
		return SL_ENOTFOUND;
	if (l->emax == 0)
		return sl_diag_set(d, SL_EINVAL, "lease %llu is not elastic",
				   (unsigned long long)id);
	if (gpus < l->emin || gpus > l->emax) {
		sl_diag_set(d, SL_EINVAL, "lease %llu may hold %d..%d GPUs, not %d",
			    (unsigned long long)id, l->emin, l->emax, gpus);
		sl_diag_hint(d, "the elastic range is fixed when the lease is created");
		return SL_EINVAL;
	}
	if (l->state == SCHED_PREEMPTING)
		return sl_diag_set(d, SL_ECONFLICT, "lease %llu is being preempted",
				   (unsigned long long)id);
	int cur = l->gpus;
	enum sl_err e = SL_OK;
	if (gpus == cur)
		return SL_OK;
	if (l->state == SCHED_PENDING) {
		struct placement probe;
		placement_init(&probe);
		lease_account(s, l, -1);
		l->gpus = gpus;
		/* The new size must still be a valid request (a gang must divide). */
		struct place_request rq;
		e = placer_place(s->p, lease_req(l, &rq), &probe, d);
		placement_release(&probe);
		if (e == SL_ENOSPACE || e == SL_OK)
			e = gpus > cur ? quota_check(s, l, NULL, d) : SL_OK;
		if (e != SL_OK)
			l->gpus = cur;
		lease_account(s, l, 1);
		if (e != SL_OK)
			return e;
		l->fail_gen = 0;
		l->has_rsv = false; /* a reserved placement was for the old size */
	} else if (gpus > cur) {
		e = scale_grow(s, l, gpus - cur, now_ns, d);
	} else {
		/* edited in place: the controller's record may share the picks */
		e = place_picks_own(&l->pl);
		if (e == SL_OK)
			scale_shrink(s, l, cur - gpus);
		else
			sl_diag_set(d, e, "out of memory");
	}
	if (e != SL_OK)
		return e;
	struct sched_event *ev;
	e = ev_push(s, SCHED_EV_SCALED, id, now_ns, &ev);
	if (e == SL_OK) {
		ev->gpus = gpus;
		struct placement v;
		if (l->state != SCHED_PENDING) /* a pending lease has no picks */
			e = placement_copy(&ev->placement, place_picks_view(&l->pl, &v));
	}
	return e == SL_OK ? sched_pass(s, now_ns) : e;
}

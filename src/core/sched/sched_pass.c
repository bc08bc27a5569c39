/* sched_pass.c - the scheduling pass: queue order, the head, spot preemption,
 * EASY backfill.
 *
 * "What if these leases were gone?" is answered on the real placer: release
 * their placements, ask placer_place(), claim them back. Release and claim are
 * microseconds and exact (only releases happen in between, so every claim
 * back succeeds), and the answer then uses the placer's own rules, including
 * topology, instead of a second model of capacity that could disagree with
 * it. The number of leases to release is found by binary search over the
 * candidate prefixes (feasibility only grows as more is released), so a head
 * costs O(log n) placements plus O(n) releases and claims.
 *
 * The pass re-selects the best remaining lease after every start rather than
 * sorting once, because a start changes its tenant's fair-share rank: that is
 * what makes two tenants with queued leases alternate. */
#include "sched_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

#define NS_PER_S 1000000000LL

int lease_order_cmp(const struct sched_lease *a, const struct sched_lease *b)
{
	if (a->plan != b->plan) /* monthly > hourly > spot */
		return plan_priority(a->plan) < plan_priority(b->plan) ? -1 : 1;
	if (a->tenant != b->tenant) {
		int64_t x = a->tenant->running * b->tenant->weight;
		int64_t y = b->tenant->running * a->tenant->weight;
		if (x != y)
			return x < y ? -1 : 1;
	}
	if (a->submit_ns != b->submit_ns)
		return a->submit_ns < b->submit_ns ? -1 : 1;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return 0;
}

void mark_set(struct sched *s, const struct placement *pl, bool on)
{
	for (int i = 0; i < pl->npicks; i++)
		s->mark[pl->picks[i].node] = on;
}

/* ---- tentative releases --------------------------------------------------- */

/* Moves the released prefix of arr to length k (release forward, claim back). */
static void tent_to(struct sched *s, struct sched_lease **arr, int *cur, int k)
{
	struct placement v;
	while (*cur < k)
		sched_cannot_fail(placer_release(s->p, place_picks_view(&arr[(*cur)++]->pl, &v), NULL));
	while (*cur > k)
		sched_cannot_fail(placer_claim(s->p, place_picks_view(&arr[--*cur]->pl, &v), NULL));
}

static bool fits(struct sched *s, const struct sched_lease *l, struct placement *out)
{
	struct place_request rq;
	return placer_place(s->p, lease_req(l, &rq), out, NULL) == SL_OK;
}

/* The smallest cut (index into cuts[0..nc), each a prefix length of arr) at
 * which l fits with that prefix released; -1 if none. out gets the placement.
 * The placer is left exactly as it was. */
static int prefix_search(struct sched *s, const struct sched_lease *l,
			 struct sched_lease **arr, const int *cuts, int nc,
			 struct placement *out)
{
	int cur = 0, lo = 0, hi = nc - 1;
	if (nc == 0)
		return -1;
	tent_to(s, arr, &cur, cuts[hi]);
	if (!fits(s, l, out)) {
		tent_to(s, arr, &cur, 0);
		return -1;
	}
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		tent_to(s, arr, &cur, cuts[mid]);
		if (fits(s, l, out))
			hi = mid;
		else
			lo = mid + 1;
	}
	tent_to(s, arr, &cur, cuts[hi]);
	bool ok = fits(s, l, out);
	tent_to(s, arr, &cur, 0);
	return ok ? hi : -1;
}

static int end_cmp(const void *a, const void *b)
{
	const struct sched_lease *x = *(struct sched_lease *const *)a;
	const struct sched_lease *y = *(struct sched_lease *const *)b;
	int64_t ex = lease_end_ns(x), ey = lease_end_ns(y);
	if (ex != ey)
		return ex < ey ? -1 : 1;
	return x->start_seq < y->start_seq ? -1 : (x->start_seq > y->start_seq);
}

static int newest_cmp(const void *a, const void *b)
{
	const struct sched_lease *x = *(struct sched_lease *const *)a;
	const struct sched_lease *y = *(struct sched_lease *const *)b;
	return x->start_seq > y->start_seq ? -1 : (x->start_seq < y->start_seq);
}

/* Earliest start of head from declared ends: *shadow (INT64_MAX if no set of
 * ending leases makes room) and the placement it would get then. */
static enum sl_err compute_shadow(struct sched *s, const struct sched_lease *head,
				  int64_t *shadow, struct placement *spl)
{
	*shadow = INT64_MAX;
	spl->npicks = 0;
	if (tmp_reserve(s, s->nrunning + 1) != SL_OK)
		return SL_ENOMEM;
	int n = 0;
	for (int i = 0; i < s->nrunning; i++)
		if (lease_end_ns(s->running[i]) != INT64_MAX)
			s->tmp[n++] = s->running[i];
	qsort(s->tmp, (size_t)n, sizeof(*s->tmp), end_cmp);
	int *cuts = malloc(((size_t)n + 1) * sizeof(*cuts)), nc = 0;
	if (!cuts)
		return SL_ENOMEM;
	for (int i = 0; i < n; i++)
		if (i == n - 1 || lease_end_ns(s->tmp[i]) != lease_end_ns(s->tmp[i + 1]))
			cuts[nc++] = i + 1;
	int k = prefix_search(s, head, s->tmp, cuts, nc, spl);
	if (k >= 0)
		*shadow = lease_end_ns(s->tmp[cuts[k] - 1]);
	else
		spl->npicks = 0;
	free(cuts);
	return SL_OK;
}

/* ---- preemption ----------------------------------------------------------- */

/* If ending running spot leases (newest started first) lets head start, gives
 * those of them on the nodes head would use a notice and reserves that
 * placement for head. *did tells whether it did. */
static enum sl_err try_preempt(struct sched *s, struct sched_lease *head, int64_t now,
			       bool *did)
{
	*did = false;
	if (head->plan == PLAN_SPOT || tmp_reserve(s, s->nrunning + 1) != SL_OK)
		return head->plan == PLAN_SPOT ? SL_OK : SL_ENOMEM;
	int n = 0;
	for (int i = 0; i < s->nrunning; i++)
		if (s->running[i]->plan == PLAN_SPOT && s->running[i]->state == SCHED_RUNNING)
			s->tmp[n++] = s->running[i];
	if (n == 0)
		return SL_OK;
	qsort(s->tmp, (size_t)n, sizeof(*s->tmp), newest_cmp);
	int *cuts = malloc(((size_t)n + 1) * sizeof(*cuts));
	if (!cuts)
		return SL_ENOMEM;
	for (int i = 0; i < n; i++)
		cuts[i] = i + 1;
	struct placement P;
	placement_init(&P);
	int k = prefix_search(s, head, s->tmp, cuts, n, &P);
	free(cuts);
	enum sl_err e = SL_OK;
	if (k >= 0 && !head->hold && (head->hold = malloc(sizeof(*head->hold))))
		placement_init(&head->hold->pl);
	if (k < 0 || !head->hold || placement_copy(&head->hold->pl, &P) != SL_OK) {
		placement_release(&P);
		return k < 0 ? SL_OK : SL_ENOMEM;
	}
	placement_release(&P);
	mark_set(s, &head->hold->pl, true);
	int nv = 0;
	struct placement view;
	for (int i = 0; i <= k; i++)
		if (pl_touches(place_picks_view(&s->tmp[i]->pl, &view), s->mark))
			s->tmp[nv++] = s->tmp[i];
	mark_set(s, &head->hold->pl, false);
	head->has_rsv = true;
	head->hold->victims_left = nv;
	head->hold->deadline = now + s->notice_ns;
	*did = true;
	for (int i = 0; e == SL_OK && i < nv; i++) {
		struct sched_lease *v = s->tmp[i];
		struct sched_event *ev;
		v->state = SCHED_PREEMPTING;
		v->deadline_ns = head->hold->deadline;
		v->victim = true;
		v->victim_for = head->id;
		e = ev_push(s, SCHED_EV_PREEMPT_NOTICE, v->id, now, &ev);
		if (e == SL_OK) {
			ev->deadline_ns = v->deadline_ns;
			ev->by = head->id;
		}
	}
	return e;
}

/* Whether the nodes of l's reserved placement still serve l's tenant: a
 * reservation window may have opened on them during the notice. */
static bool rsv_still_allowed(const struct sched *s, const struct sched_lease *l)
{
	for (int i = 0; i < l->hold->pl.npicks; i++) {
		const char *owner = placer_node_owner(s->p, l->hold->pl.picks[i].node);
		if (owner ? strcmp(owner, l->tenant->name) != 0 : l->shape->req.pool_owned)
			return false;
	}
	return true;
}

/* Leases whose victims are all gone take the placement they waited for, in
 * queue order, before anyone else is considered. */
static enum sl_err start_ready(struct sched *s, int64_t now)
{
	for (;;) {
		struct sched_lease *best = NULL;
		for (int i = 0; i < s->npending; i++) {
			struct sched_lease *l = s->pending[i];
			if (l->has_rsv && l->hold->victims_left == 0 &&
			    (!best || lease_order_cmp(l, best) < 0))
				best = l;
		}
		if (!best)
			return SL_OK;
		if (!rsv_still_allowed(s, best)) {
			best->has_rsv = false; /* wait in the queue again */
			continue;
		}
		enum sl_err e = lease_start(s, best, &best->hold->pl, now, false);
		if (e == SL_ECONFLICT)
			best->has_rsv = false; /* taken meanwhile: wait in the queue again */
		else if (e != SL_OK)
			return e;
	}
}

enum sl_err preempt_complete(struct sched *s, int64_t now)
{
	if (tmp_reserve(s, s->nrunning + 1) != SL_OK)
		return SL_ENOMEM;
	int n = 0;
	for (int i = 0; i < s->nrunning; i++)
		if (s->running[i]->state == SCHED_PREEMPTING && s->running[i]->deadline_ns <= now)
			s->tmp[n++] = s->running[i];
	enum sl_err e = SL_OK;
	for (int i = 0; e == SL_OK && i < n; i++)
		e = lease_end(s, s->tmp[i], SCHED_END_PREEMPTED, now);
	return e == SL_OK ? start_ready(s, now) : e;
}

/* ---- the pass ------------------------------------------------------------- */

/* Places l now (SL_OK), or SL_ENOSPACE. Quiet: the explanation is written only
 * when someone looks (lease_reason). Skips the placer when l failed at the
 * current capacity generation. */
static enum sl_err try_place(struct sched *s, struct sched_lease *l, struct placement *pl)
{
	if (l->fail_gen == s->gen)
		return SL_ENOSPACE;
	struct place_request rq;
	enum sl_err e = placer_place_quiet(s->p, lease_req(l, &rq), pl, NULL);
	if (e == SL_ENOSPACE || e == SL_EINVAL)
		l->fail_gen = s->gen;
	return e == SL_EINVAL ? SL_ENOSPACE : e;
}

static long long secs_until(int64_t t, int64_t now)
{
	return t <= now ? 0 : (long long)((t - now + NS_PER_S - 1) / NS_PER_S);
}

bool place_avoiding(struct sched *s, const struct place_request *r, const struct placement *spl,
		    struct placement *out)
{
	int n = 0;
	int *toggled = malloc(((size_t)spl->npicks + 1) * sizeof(*toggled));
	if (!toggled)
		return false;
	for (int i = 0; i < spl->npicks; i++) {
		int node = spl->picks[i].node;
		if (placer_node_usable(s->p, node)) {
			placer_set_node_usable(s->p, node, false);
			toggled[n++] = node;
		}
	}
	bool ok = placer_place_quiet(s->p, r, out, NULL) == SL_OK;
	for (int i = 0; i < n; i++)
		placer_set_node_usable(s->p, toggled[i], true);
	free(toggled);
	return ok;
}

struct head_ctx {
	struct sched_lease *l;
	bool known;          /* shadow computed (lazily: only a backfill needs it) */
	int64_t shadow;
	struct placement spl;
	/* The running leases that end by the shadow time, collected on first
	 * use (head_still_fits) and kept up to date through the pass. */
	bool enders_known;
	struct sched_lease **enders;
	int nenders, capenders;
	/* Requests (shape and size) that were refused as delaying the head
	 * since the start numbered refused_seq: with nothing started since,
	 * the placer's state is the same, so the same request is refused again
	 * without asking it (a queue of many alike costs one test, not one
	 * each). A cache, not a rule: when full, later refusals are not kept. */
	uint64_t refused_seq;
	int nrefused;
	struct {
		const struct sched_shape *shape;
		int gpus;
	} refused[16];
};

static void note(struct sched_lease *l, enum sched_note n, const struct head_ctx *h,
		 int64_t now)
{
	l->note = n;
	l->note_head = h && h->l ? h->l->id : 0;
	l->note_shadow = h && h->known ? h->shadow : INT64_MIN;
	l->note_now = now;
}

/* The head's shadow time and placement, computed on first use; its nodes
 * are marked in s->mark. */
static enum sl_err head_known(struct sched *s, struct head_ctx *h)
{
	if (h->known)
		return SL_OK;
	enum sl_err e = compute_shadow(s, h->l, &h->shadow, &h->spl);
	if (e != SL_OK)
		return e;
	h->known = true;
	h->l->note_shadow = h->shadow;
	mark_set(s, &h->spl, true);
	return SL_OK;
}

/* l could not start: it becomes the head and preempts if it may. */
static enum sl_err become_head(struct sched *s, struct sched_lease *l, struct head_ctx *h,
			       int64_t now)
{
	enum sl_err e = SL_OK;
	h->l = l;
	if (!l->has_rsv) {
		bool did;
		e = try_preempt(s, l, now, &did);
		if (e == SL_OK && did && (l->hold->deadline <= now || l->hold->victims_left == 0))
			e = preempt_complete(s, now);
		if (e != SL_OK || l->state != SCHED_PENDING) {
			h->l = NULL; /* started (zero notice): the next lease may be head */
			return e;
		}
	}
	if (l->has_rsv) {
		/* It waits for its victims: that is its start and placement. */
		h->shadow = l->hold->deadline;
		h->known = true;
		e = placement_copy(&h->spl, &l->hold->pl);
		mark_set(s, &h->spl, true);
	}
	note(l, NOTE_HEAD, h, now);
	return e;
}

static bool refused_before(const struct sched *s, struct head_ctx *h,
			   const struct sched_lease *l)
{
	if (h->refused_seq != s->start_seq)
		h->nrefused = 0;
	for (int i = 0; i < h->nrefused; i++)
		if (h->refused[i].shape == l->shape && h->refused[i].gpus == l->gpus)
			return true;
	return false;
}

static void refused_add(const struct sched *s, struct head_ctx *h, const struct sched_lease *l)
{
	int cap = (int)(sizeof(h->refused) / sizeof(h->refused[0]));
	if (h->refused_seq != s->start_seq) {
		h->refused_seq = s->start_seq;
		h->nrefused = 0;
	}
	if (h->nrefused < cap) {
		h->refused[h->nrefused].shape = l->shape;
		h->refused[h->nrefused++].gpus = l->gpus;
	}
}

static enum sl_err enders_add(struct head_ctx *h, struct sched_lease *l)
{
	if (h->nenders == h->capenders &&
	    sl_grow(&h->enders, &h->capenders, h->nenders + 1, SCHED_MAX_LEASES) != SL_OK)
		return SL_ENOMEM;
	h->enders[h->nenders++] = l;
	return SL_OK;
}

/* Whether the head still starts at its shadow time, on no more leaves than
 * its shadow placement, with pl claimed (a lease that runs past that time):
 * pl is claimed and the leases that end by then released, tentatively; the
 * head is placed; everything is put back. On yes *npl is the head's
 * placement then. A head waiting for preempted spot leases keeps the
 * placement it reserved, so nothing is judged for it here. */
static enum sl_err head_still_fits(struct sched *s, struct head_ctx *h,
				   const struct placement *pl, struct placement *npl, bool *yes)
{
	*yes = false;
	if (h->l->has_rsv || h->shadow == INT64_MAX || h->spl.npicks == 0)
		return SL_OK;
	if (!h->enders_known) {
		for (int i = 0; i < s->nrunning; i++)
			if (lease_end_ns(s->running[i]) <= h->shadow &&
			    enders_add(h, s->running[i]) != SL_OK)
				return SL_ENOMEM;
		h->enders_known = true;
	}
	enum sl_err e = placer_claim(s->p, pl, NULL);
	if (e != SL_OK)
		return e == SL_ECONFLICT ? SL_OK : e;
	int cur = 0;
	tent_to(s, h->enders, &cur, h->nenders);
	*yes = fits(s, h->l, npl) && npl->score.leaves <= h->spl.score.leaves;
	tent_to(s, h->enders, &cur, 0);
	sched_cannot_fail(placer_release(s->p, pl, NULL));
	return SL_OK;
}

/* A lease behind the head: starts now only if that cannot delay the head. */
static enum sl_err try_backfill(struct sched *s, struct sched_lease *l, struct head_ctx *h,
				struct placement *pl, int64_t now)
{
	if (l->duration_ns == 0) {
		note(l, NOTE_NO_DURATION, h, now);
		return SL_OK;
	}
	enum sl_err e = try_place(s, l, pl);
	if (e == SL_ENOSPACE) {
		note(l, NOTE_PLACE, h, now);
		return SL_OK;
	}
	if (e == SL_OK)
		e = head_known(s, h);
	if (e != SL_OK)
		return e;
	int64_t end = now > INT64_MAX - l->duration_ns ? INT64_MAX : now + l->duration_ns;
	if (end <= h->shadow) {
		e = lease_start(s, l, pl, now, true);
		return e == SL_OK && h->enders_known ? enders_add(h, l) : e;
	}
	if (!pl_touches(pl, s->mark))
		return lease_start(s, l, pl, now, true);
	/* It would sit on the nodes the head waits for: somewhere else... */
	if (refused_before(s, h, l)) {
		note(l, NOTE_DELAY, h, now);
		return SL_OK;
	}
	struct place_request rq;
	struct placement alt;
	placement_init(&alt);
	bool yes = place_avoiding(s, lease_req(l, &rq), &h->spl, &alt);
	if (yes) {
		e = lease_start(s, l, &alt, now, true);
		placement_release(&alt);
		return e;
	}
	/* ...or where it asked, if the head can then start as early and as
	 * compact on other nodes: those become the head's. */
	e = head_still_fits(s, h, pl, &alt, &yes);
	if (e == SL_OK && yes && (e = lease_start(s, l, pl, now, true)) == SL_OK) {
		mark_set(s, &h->spl, false);
		e = placement_copy(&h->spl, &alt);
		mark_set(s, &h->spl, true);
	}
	placement_release(&alt);
	if (e == SL_OK && !yes) {
		refused_add(s, h, l);
		note(l, NOTE_DELAY, h, now);
	}
	return e;
}

static int snap_cmp(const void *a, const void *b)
{
	return lease_order_cmp(*(struct sched_lease *const *)a, *(struct sched_lease *const *)b);
}

/* After one start by tenant t only t's rank changed (it grew), so its leases
 * in a[0..n) move later: merge them back in instead of sorting everything. */
static void resort_tenant(struct sched *s, struct sched_lease **a, int n,
			  const struct sched_tenant *t)
{
	if (tmp_reserve(s, n + 1) != SL_OK) {
		qsort(a, (size_t)n, sizeof(*a), snap_cmp);
		return;
	}
	int nt = 0, no = 0;
	for (int i = 0; i < n; i++)
		if (a[i]->tenant == t)
			s->tmp[nt++] = a[i];
		else
			a[no++] = a[i];
	/* Others stay in order at the front; merge from the back. */
	int i = no - 1, j = nt - 1;
	for (int k = n - 1; k >= 0 && j >= 0; k--) {
		if (i >= 0 && lease_order_cmp(a[i], s->tmp[j]) > 0)
			a[k] = a[i--];
		else
			a[k] = s->tmp[j--];
	}
}

enum sl_err sched_pass(struct sched *s, int64_t now)
{
	enum sl_err e = start_ready(s, now);
	int n = s->npending;
	if (e == SL_OK && snap_reserve(s, n + 1) != SL_OK)
		e = SL_ENOMEM;
	if (e != SL_OK || n == 0)
		return e;
	/* The queue in order; a start changes its tenant's fair-share rank, so the
	 * rest is sorted again after one. */
	memcpy(s->snap, s->pending, (size_t)n * sizeof(*s->snap));
	qsort(s->snap, (size_t)n, sizeof(*s->snap), snap_cmp);
	struct head_ctx h = {.l = NULL, .known = false, .shadow = INT64_MAX};
	struct placement pl;
	placement_init(&pl);
	placement_init(&h.spl);
	for (int i = 0; e == SL_OK && i < n; i++) {
		struct sched_lease *l = s->snap[i];
		if (l->state != SCHED_PENDING)
			continue; /* started meanwhile (a reserved placement) */
		uint64_t starts = s->start_seq;
		if (h.l) {
			e = try_backfill(s, l, &h, &pl, now);
		} else {
			e = try_place(s, l, &pl);
			if (e == SL_OK)
				e = lease_start(s, l, &pl, now, false);
			else if (e == SL_ENOSPACE)
				e = become_head(s, l, &h, now);
		}
		if (s->start_seq == starts || i + 1 >= n)
			continue;
		if (s->start_seq == starts + 1 && l->state != SCHED_PENDING)
			resort_tenant(s, s->snap + i + 1, n - i - 1, l->tenant);
		else
			qsort(s->snap + i + 1, (size_t)(n - i - 1), sizeof(*s->snap), snap_cmp);
	}
	mark_set(s, &h.spl, false);
	placement_release(&h.spl);
	placement_release(&pl);
	free(h.enders);
	s->last_head = h.l && h.l->state == SCHED_PENDING ? h.l->id : 0;
	s->dirty = e != SL_OK;
	return e;
}

enum sl_err sched_pass_new(struct sched *s, struct sched_lease *l, int64_t now)
{
	struct sched_lease *head = s->dirty || !s->last_head ? NULL : sched_find(s, s->last_head);
	if (!head || head == l || head->state != SCHED_PENDING || lease_order_cmp(l, head) < 0)
		return sched_pass(s, now);
	/* The last pass left every other lease unable to start, behind this head;
	 * nothing has been freed since (a release or an end would have run a full
	 * pass), so only l is new. The head is still first unless a backfill
	 * start reordered tenants: then do the full pass. */
	for (int i = 0; i < s->npending; i++)
		if (s->pending[i] != l && lease_order_cmp(s->pending[i], head) < 0)
			return sched_pass(s, now);
	struct head_ctx h = {.l = head, .known = false, .shadow = INT64_MAX};
	struct placement pl;
	placement_init(&pl);
	placement_init(&h.spl);
	enum sl_err e = SL_OK;
	if (head->has_rsv) {
		h.shadow = head->hold->deadline;
		h.known = true;
		e = placement_copy(&h.spl, &head->hold->pl);
		mark_set(s, &h.spl, true);
	}
	if (e == SL_OK)
		e = try_backfill(s, l, &h, &pl, now);
	mark_set(s, &h.spl, false);
	placement_release(&h.spl);
	placement_release(&pl);
	free(h.enders);
	return e;
}

/* ---- reasons --------------------------------------------------------------- */

void lease_reason(struct sched *s, struct sched_lease *l, char *out, size_t n)
{
	struct placement pl;
	placement_init(&pl);
	bool fits = false;
	if (l->note == NOTE_DELAY) {
		fits = true;
	} else if (l->why_gen != s->gen || l->note == NOTE_NO_DURATION) {
		struct place_request rq;
		fits = placer_place(s->p, lease_req(l, &rq), &pl, NULL) == SL_OK;
		if (fits)
			l->wait_c = PLACE_C_NONE;
		else
			l->wait_c = pl.failed;
		lease_set_why(s, l, fits ? NULL : pl.why);
		l->why_gen = s->gen;
	}
	const char *why = l->why ? l->why : "";
	unsigned long long hid = (unsigned long long)l->note_head;
	if (fits)
		l->wait_c = PLACE_C_NONE;
	if (l->note == NOTE_HEAD && l->has_rsv) {
		snprintf(out, n,
			 "%s; first in the queue: %d spot lease(s) leave for it within %lld s",
			 why, l->hold->victims_left, secs_until(l->hold->deadline, l->note_now));
	} else if (l->note == NOTE_HEAD) {
		if (l->note_shadow == INT64_MIN &&
		    compute_shadow(s, l, &l->note_shadow, &pl) != SL_OK)
			l->note_shadow = INT64_MAX;
		if (l->note_shadow != INT64_MAX)
			snprintf(out, n,
				 "%s; first in the queue: can start in about %lld s, when "
				 "running leases reach their declared end",
				 why, secs_until(l->note_shadow, l->note_now));
		else
			snprintf(out, n,
				 "%s; first in the queue: waits for leases without a declared "
				 "end", why);
	} else if (fits && l->note == NOTE_DELAY) {
		snprintf(out, n,
			 "fits now but would delay lease %llu, first in the queue, which can "
			 "start in about %lld s; a duration ending by then would let it start",
			 hid, secs_until(l->note_shadow, l->note_now));
	} else if (fits) {
		snprintf(out, n,
			 "fits now but waits behind lease %llu, first in the queue; only leases "
			 "with a declared duration may start ahead of it", hid);
	} else if (hid) {
		snprintf(out, n, "%s; behind lease %llu", why, hid);
	} else {
		snprintf(out, n, "%s", why);
	}
	placement_release(&pl);
}

enum sl_err head_shadow(struct sched *s, struct sched_lease **head, int64_t *shadow,
			struct placement *spl, int64_t now)
{
	(void)now;
	struct sched_lease *best = NULL;
	for (int i = 0; i < s->npending; i++)
		if (!best || lease_order_cmp(s->pending[i], best) < 0)
			best = s->pending[i];
	*head = best;
	*shadow = INT64_MAX;
	spl->npicks = 0;
	if (!best)
		return SL_OK;
	enum sl_err e;
	if (best->has_rsv) {
		*shadow = best->hold->deadline;
		e = placement_copy(spl, &best->hold->pl);
	} else {
		e = compute_shadow(s, best, shadow, spl);
	}
	mark_set(s, spl, true);
	return e;
}

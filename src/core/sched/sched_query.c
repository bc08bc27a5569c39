/* sched_query.c - what the scheduler answers without changing anything:
 * names of its enums, a lease's state and placement, and the queue in order.
 *
 * The queue is kept unordered (fair share changes the order as leases start
 * and end), so a listing sorts a snapshot; the controller asks for it per
 * request, not per lease, and for one lease's place asks sched_queue_position,
 * which counts instead of sorting. */
#include "sched_internal.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"

const char *sched_end_name(enum sched_end e)
{
	static const char *const n[] = {"released", "expired", "preempted", "failed"};
	return (unsigned)e < 4 ? n[e] : "unknown";
}

const char *sched_event_name(enum sched_event_type t)
{
	static const char *const n[] = {"started", "queued", "preempt_notice", "ended",
					"scaled", "reservation_started", "reservation_ended"};
	return (unsigned)t < 7 ? n[t] : "unknown";
}

/* ---- getters -------------------------------------------------------------- */

enum sched_state sched_lease_state(const struct sched *s, uint64_t id)
{
	const struct sched_lease *l = s ? sched_find(s, id) : NULL;
	return l ? l->state : SCHED_NONE;
}

bool sched_lease_get(const struct sched *s, uint64_t id, struct sched_lease_info *out)
{
	const struct sched_lease *l = s ? sched_find(s, id) : NULL;
	if (!l)
		return false;
	*out = (struct sched_lease_info){l->state, l->plan, l->tenant->name, l->gpus,
					 l->submit_ns, l->state == SCHED_PENDING ? 0 : l->start_ns, l->duration_ns,
					 l->state == SCHED_PREEMPTING ? l->deadline_ns : 0};
	return true;
}

const struct placement *sched_lease_placement(const struct sched *s, uint64_t id)
{
	const struct sched_lease *l = s ? sched_find(s, id) : NULL;
	return l && l->state != SCHED_PENDING ? place_picks_view(&l->pl, s->view) : NULL;
}

const struct place_picks *sched_lease_picks(const struct sched *s, uint64_t id)
{
	const struct sched_lease *l = s ? sched_find(s, id) : NULL;
	return l && l->state != SCHED_PENDING ? &l->pl : NULL;
}

static int qsort_order(const void *a, const void *b)
{
	return lease_order_cmp(*(struct sched_lease *const *)a, *(struct sched_lease *const *)b);
}

enum sl_err sched_queue(struct sched *s, const struct sched_queue_entry **arr, int *n)
{
	*arr = NULL;
	*n = 0;
	if (snap_reserve(s, s->npending + 1) != SL_OK)
		return SL_ENOMEM;
	if (s->npending > s->capqueue) {
		struct sched_queue_entry *q =
			realloc(s->queue, (size_t)s->npending * sizeof(*q));
		if (!q)
			return SL_ENOMEM;
		s->queue = q;
		s->capqueue = s->npending;
	}
	if (s->npending)
		memcpy(s->snap, s->pending, (size_t)s->npending * sizeof(*s->snap));
	qsort(s->snap, (size_t)s->npending, sizeof(*s->snap), qsort_order);
	/* The reasons go one after another into s->qtext, not into the leases;
	 * pointed at once all are written (it may move as it grows). */
	size_t used = 0;
	for (int i = 0; i < s->npending; i++) {
		struct sched_lease *l = s->snap[i];
		enum sl_err ge = sl_grow(&s->qtext, &s->capqtext, used + SCHED_REASON_MAX,
					 (size_t)SCHED_MAX_LEASES * SCHED_REASON_MAX);
		if (ge)
			return ge;
		lease_reason(s, l, s->qtext + used, SCHED_REASON_MAX);
		s->queue[i] = (struct sched_queue_entry){l->id, i + 1, l->plan, l->tenant->name,
							 lease_gpus(l), l->submit_ns, l->wait_c,
							 NULL};
		used += strlen(s->qtext + used) + 1;
	}
	const char *r = s->qtext;
	for (int i = 0; i < s->npending; i++, r += strlen(r) + 1)
		s->queue[i].reason = r;
	*arr = s->queue;
	*n = s->npending;
	return SL_OK;
}

bool sched_queue_position(struct sched *s, uint64_t id, int *position, const char **reason)
{
	struct sched_lease *l = s ? sched_find(s, id) : NULL;
	if (!l || l->state != SCHED_PENDING)
		return false;
	/* The order is total (the id breaks ties), so the rank is one plus the
	 * number of pending leases before it. */
	int pos = 1;
	for (int i = 0; i < s->npending; i++)
		if (s->pending[i] != l && lease_order_cmp(s->pending[i], l) < 0)
			pos++;
	lease_reason(s, l, s->reason1, sizeof(s->reason1));
	*position = pos;
	*reason = s->reason1;
	return true;
}

int sched_running_count(const struct sched *s)
{
	return s ? s->nrunning : 0;
}

int sched_pending_count(const struct sched *s)
{
	return s ? s->npending : 0;
}

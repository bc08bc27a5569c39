/* lease_load.c - the leases at start: only the live table is read (history.h),
 * so a restart's cost follows the running and waiting leases, not every
 * lease ever stored. Ended rows an old store still holds in the live table
 * move to history here, once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ctl_int.h"
#include "history.h"

struct load_arg {
	struct ctl *c;
	struct sl_diag *d;
	struct ctl_hist_moves moves;
};

static enum sl_err load_lease(void *arg, const char *id, const char *tenant, const char *json)
{
	struct load_arg *a = arg;
	struct ctl *c = a->c;
	struct ctl_lease l;
	json_error_t je;
	json_t *o = json_loads(json, JSON_REJECT_DUPLICATES, &je);
	if (!o || !json_is_object(o)) {
		json_decref(o);
		return sl_diag_set(a->d, SL_EPARSE, "stored lease %s is not a JSON object: %s", id,
				   je.text);
	}
	enum sl_err e = lease_from_json(c, o, &l, a->d);
	json_decref(o);
	if (e)
		return e;
	if (lease_state_final(l.state)) {
		/* An old store's ended lease: moved to history after the scan. */
		if (l.seq > c->lt.hist_seq)
			c->lt.hist_seq = l.seq;
		lease_release_mem(&l);
		return ctl_hist_note(&a->moves, id, tenant);
	}
	struct ctl_lease *heap = NULL;
	if (l.seq > (uint64_t)INT32_MAX ||
	    sl_grow(&c->lt.leases, &c->lt.cap_leases, l.seq, CTL_MAX_LEASES) ||
	    !(heap = malloc(sizeof(*heap)))) {
		lease_release_mem(&l);
		return sl_diag_set(a->d, SL_ELIMIT, "lease %s: id out of range or out of memory", id);
	}
	/* Slots between are leases in history (read back on demand). */
	while (c->lt.nleases < (int)l.seq)
		c->lt.leases[c->lt.nleases++] = NULL;
	*heap = l;
	c->lt.leases[l.seq - 1] = heap;
	/* Leases that ask alike share their request, as when they were made. */
	const struct ctl_lease *prev = l.seq > 1 ? c->lt.leases[l.seq - 2] : NULL;
	lease_share_request(heap, prev);
	lease_share_req(heap, prev);
	return SL_OK;
}

/* Re-claims running leases' placements on the placer (which checks that no
 * two hold one GPU; ctl_sched_start then hands them to the scheduler) and
 * fills the deadline heap. */
static enum sl_err leases_rebuild(struct ctl *c, struct sl_diag *d)
{
	/* Claims first with every node in service (the placer refuses claims
	 * on nodes out of service), then the real service state. */
	for (int n = 0; n < c->fleet->nnodes; n++)
		placer_set_node_usable(c->placer, n, true);
	for (int i = 0; i < c->lt.nleases; i++) {
		struct ctl_lease *l = c->lt.leases[i];
		if (l && (l->state == LS_ACTIVE || l->state == LS_PREEMPTING)) {
			struct placement v;
			enum sl_err e = placer_claim(c->placer, lease_pl_view(l, &v), d);
			if (e) {
				char why[SL_DIAG_MSG];
				snprintf(why, sizeof(why), "%s", d->msg);
				sl_diag_hint(d, "the store holds two leases on one GPU, or a lease on a node the fleet no longer has");
				return sl_diag_set(d, SL_ECONFLICT, "lease %s cannot be re-claimed: %.400s",
						   l->id, why);
			}
			c->lt.nactive++;
			if (l->expires_ns && ctl_expiry_push(c, l->expires_ns, i))
				return SL_ENOMEM;
			if (l->state == LS_PREEMPTING && ctl_expiry_push(c, l->preempt_ns, i))
				return SL_ENOMEM;
		}
	}
	ctl_apply_usable(c);
	return SL_OK;
}

enum sl_err ctl_leases_load(struct ctl *c, struct sl_diag *d)
{
	struct load_arg a = {c, d, {0}};
	enum sl_err e = ctl_hist_seq_get(c, "leases", &c->lt.hist_seq, d);
	uint64_t stored = c->lt.hist_seq;
	if (!e)
		e = store_scan(c->store, STORE_LEASES, load_lease, &a, d);
	if (!e && a.moves.n)
		e = ctl_hist_move(c, STORE_LEASES, STORE_LEASE_HISTORY, &a.moves, d);
	ctl_hist_release(&a.moves);
	if (!e && c->lt.hist_seq > stored) {
		uint64_t seq = c->lt.hist_seq;
		c->lt.hist_seq = stored;
		ctl_hist_seq_note(c, "leases", &c->lt.hist_seq, seq);
		if (c->fatal)
			e = sl_diag_set(d, SL_EIO, "could not store the lease history's seq");
	}
	/* Numbering goes on after the highest lease, live or in history. */
	if (!e && c->lt.hist_seq > (uint64_t)INT32_MAX)
		e = sl_diag_set(d, SL_ELIMIT, "lease history seq %llu out of range",
				(unsigned long long)c->lt.hist_seq);
	if (!e && (int)c->lt.hist_seq > c->lt.nleases) {
		if (sl_grow(&c->lt.leases, &c->lt.cap_leases, c->lt.hist_seq, CTL_MAX_LEASES))
			return sl_diag_set(d, SL_ENOMEM, "out of memory");
		while (c->lt.nleases < (int)c->lt.hist_seq)
			c->lt.leases[c->lt.nleases++] = NULL;
	}
	return e ? e : leases_rebuild(c, d);
}

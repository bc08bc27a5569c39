/* lease.c - lease bookkeeping shared by the handlers: lookup, saving, state
 * history and the deadline heap.
 *
 * Every live lease is known to the scheduler (ctl_sched.c restores them after
 * a restart or fleet change), which decides starts, ends and scaling. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_log.h"
#include "billing.h"
#include "buf.h"
#include "ctl_int.h"
#include "events.h"
#include "history.h"
#include "instances.h"
#include "jobs.h"
#include "log.h"

#define CTL_MAX_NAMES (1 << 20) /* distinct interned names (tenants, users, reasons) */

/* Reads an evicted lease back from the store for this turn. */
static struct ctl_lease *lease_load(struct ctl *c, const char *id)
{
	char *row = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	/* Evicted leases ended, so history; a live row of an old store too. */
	if (store_get(c->store, STORE_LEASE_HISTORY, id, &row, &d) &&
	    store_get(c->store, STORE_LEASES, id, &row, &d))
		return NULL;
	json_t *o = json_loads(row, 0, NULL);
	free(row);
	struct ctl_lease *l = malloc(sizeof(*l));
	if (!o || !l || sl_grow(&c->lt.loaded, &c->lt.cap_loaded, c->lt.nloaded + 1, CTL_MAX_LEASES)) {
		json_decref(o);
		free(l);
		return NULL;
	}
	if (lease_from_json(c, o, l, &d)) {
		sl_log_error("stored lease unreadable", "lease=%s error=%s", id, d.msg);
		json_decref(o);
		free(l);
		return NULL;
	}
	json_decref(o);
	c->lt.loaded[c->lt.nloaded++] = l;
	return l;
}

const char *ctl_name(struct ctl *c, const char *s)
{
	if (!c->lt.name_idx && strmap_new(&c->lt.name_idx))
		return NULL;
	int i = strmap_get(c->lt.name_idx, s, -1);
	if (i >= 0)
		return c->lt.names[i];
	if (sl_grow(&c->lt.names, &c->lt.cap_names, c->lt.nnames + 1, CTL_MAX_NAMES))
		return NULL;
	size_t len = strlen(s) + 1;
	char *copy = malloc(len);
	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	if (strmap_add(c->lt.name_idx, s, c->lt.nnames)) {
		free(copy);
		return NULL;
	}
	c->lt.names[c->lt.nnames++] = copy;
	return copy;
}

void ctl_text_set(char **dst, const char *s, size_t size, char *empty)
{
	size_t len = s ? strnlen(s, size - 1) : 0;
	if (*dst && !strncmp(*dst, s ? s : "", len) && !(*dst)[len])
		return; /* unchanged (heartbeats repeat it) */
	char *p = len ? malloc(len + 1) : NULL;
	if (len && !p)
		sl_log_error("out of memory keeping a text", "text=%.64s", s);
	if (p) {
		memcpy(p, s, len);
		p[len] = 0;
	}
	if (*dst != empty)
		free(*dst);
	*dst = p ? p : empty;
}

void ctl_names_free(struct ctl *c)
{
	for (int i = 0; i < c->lt.nnames; i++)
		free(c->lt.names[i]);
	free(c->lt.names);
	strmap_free(c->lt.name_idx);
	c->lt.names = NULL;
	c->lt.name_idx = NULL;
	c->lt.nnames = c->lt.cap_names = 0;
}

void ctl_lease_ended(struct ctl *c, struct ctl_lease *l)
{
	/* The row moves: ctl_lease_save writes it to history in this turn. */
	ctl_delete(c, STORE_LEASES, l->id); /* fatal on failure */
	ctl_hist_seq_note(c, "leases", &c->lt.hist_seq, l->seq);
	if (c->lt.ended_n == c->lt.ended_cap) {
		/* A turn may end many leases before the trim: grow, keeping order. */
		int old = c->lt.ended_cap;
		if (sl_grow(&c->lt.ended, &c->lt.ended_cap, c->lt.ended_n + 1, CTL_MAX_LEASES))
			return; /* it stays in memory: correct, only bigger */
		/* When it wraps, the part from the start to the old end moves to
		 * the new end (unwrapped, it is in order already). */
		if (c->lt.ended_start > 0) {
			int tail = old - c->lt.ended_start;
			memmove(c->lt.ended + c->lt.ended_cap - tail, c->lt.ended + c->lt.ended_start,
				(size_t)tail * sizeof(*c->lt.ended));
			c->lt.ended_start = c->lt.ended_cap - tail;
		}
	}
	c->lt.ended[(c->lt.ended_start + c->lt.ended_n++) % c->lt.ended_cap] = (int)(l->seq - 1);
}

void ctl_leases_trim(struct ctl *c)
{
	ctl_row_cache_clear(c); /* it may point at a lease freed here */
	for (int i = 0; i < c->lt.nloaded; i++) {
		lease_release_mem(c->lt.loaded[i]);
		free(c->lt.loaded[i]);
	}
	c->lt.nloaded = 0;
	while (c->lt.ended_n > c->lt.keep_ended) {
		int idx = c->lt.ended[c->lt.ended_start];
		c->lt.ended_start = (c->lt.ended_start + 1) % c->lt.ended_cap;
		c->lt.ended_n--;
		struct ctl_lease *l = ctl_lease_at(c, idx);
		if (!l)
			continue;
		lease_release_mem(l);
		free(l);
		c->lt.leases[idx] = NULL;
	}
}

struct each_arg {
	struct ctl *c;
	void (*fn)(void *arg, const struct ctl_lease *l);
	void *arg;
};

static enum sl_err each_row(void *arg, const char *id, const char *tenant, const char *json)
{
	struct each_arg *a = arg;
	struct ctl_lease l;
	struct sl_diag d;
	unsigned long long seq;
	char tail;
	(void)tenant;
	if (sscanf(id, "ls-%llu%c", &seq, &tail) != 1 || ctl_lease_at(a->c, (int)seq - 1))
		return SL_OK; /* in memory: listed from there */
	json_t *o = json_loads(json, 0, NULL);
	enum sl_err e = o ? lease_from_json(a->c, o, &l, &d) : SL_EPARSE;
	json_decref(o);
	if (e == SL_OK) {
		a->fn(a->arg, &l);
		lease_release_mem(&l);
	}
	return SL_OK;
}

enum sl_err ctl_lease_each(struct ctl *c, void (*fn)(void *arg, const struct ctl_lease *l), void *arg,
			   struct sl_diag *d)
{
	bool evicted = false;
	for (int i = 0; i < c->lt.nleases; i++)
		if (c->lt.leases[i])
			fn(arg, c->lt.leases[i]);
		else
			evicted = true;
	if (!evicted)
		return SL_OK;
	struct each_arg a = {c, fn, arg};
	return store_scan(c->store, STORE_LEASE_HISTORY, each_row, &a, d);
}

struct ctl_lease *ctl_lease_find(struct ctl *c, const char *id)
{
	unsigned long long seq;
	char tail;
	if (!id || strncmp(id, "ls-", 3) || sscanf(id, "ls-%llu%c", &seq, &tail) != 1 || seq == 0 ||
	    seq > (unsigned long long)c->lt.nleases)
		return NULL;
	struct ctl_lease *l = c->lt.leases[seq - 1];
	if (!l)
		l = lease_load(c, id);
	return l && !strcmp(l->id, id) ? l : NULL;
}

void ctl_row_cache_clear(struct ctl *c)
{
	free(c->row.text);
	memset(&c->row, 0, sizeof(c->row));
}

/* What the row of l is made of: a shallow copy, compared field by field. */
static void row_fingerprint(const struct ctl_lease *l, struct ctl_row_cache *r)
{
	r->lease = l;
	r->was = *l;
	r->was_score = *lease_score(l);
}

/* Whether the row written from `was` is still the row of l: every field of
 * the row (lease_fields.h) compared by what its text is made of. */
static bool row_same(const struct ctl_row_cache *r, const struct ctl_lease *l)
{
	const struct ctl_lease *was = &r->was;
	size_t n;
	const struct lease_field *t = lease_row_fields(&n);
	for (size_t i = 0; i < n; i++) {
		const struct lease_field *f = &t[i];
		const char *a = (const char *)was + f->offset, *b = (const char *)l + f->offset;
		switch (f->kind) {
		case LF_INT:
		case LF_INT64:
		case LF_TIME:
		case LF_BOOL:
			if (lease_field_scalar(f, was) != lease_field_scalar(f, l))
				return false;
			break;
		case LF_ID:
			if (strcmp(a, b))
				return false;
			break;
		case LF_NAME:
		case LF_REQUEST:
		case LF_QUEUE:
			/* Owned or shared strings: replaced, never edited in place. */
		{
			const char *pa, *pb;
			memcpy(&pa, a, sizeof(pa));
			memcpy(&pb, b, sizeof(pb));
			if (pa != pb)
				return false;
			break;
		}
		case LF_PLAN:
			/* kept requests are replaced, never edited */
			if (was->req != l->req)
				return false;
			break;
		case LF_STATE:
			if (was->state != l->state)
				return false;
			break;
		case LF_PLACEMENT:
			if (was->pl.npicks != l->pl.npicks)
				return false;
			break;
		case LF_SCORE:
			if (was->placed != l->placed ||
			    memcmp(&r->was_score, lease_score(l), sizeof(r->was_score)))
				return false;
			break;
		case LF_HISTORY:
			if (was->hist != l->hist || was->nhist != l->nhist)
				return false;
			break;
		case LF_EXPLANATION: /* follows the placement and score */
		case LF_SEAM:
			break;
		}
	}
	return true;
}

static bool row_cache_fresh(const struct ctl *c, const struct ctl_lease *l)
{
	const struct ctl_row_cache *r = &c->row;
	return r->text && r->lease == l && row_same(r, l);
}

bool ctl_lease_save(struct ctl *c, struct ctl_lease *l)
{
	size_t len = 0, split = 0;
	char *s = lease_row_dump(c, l, &len, &split);
	bool ok = ctl_put_text(c, lease_state_final(l->state) ? STORE_LEASE_HISTORY : STORE_LEASES,
			       l->id, l->tenant, s);
	ctl_row_cache_clear(c);
	if (!ok || l->state == LS_PENDING) {
		/* A pending lease's answer shows its live queue entry, not the row's. */
		free(s);
		return ok;
	}
	row_fingerprint(l, &c->row);
	c->row.text = s;
	c->row.len = len;
	c->row.split = split;
	return ok;
}

/* The API's text of l from its cached row: the row with the explanation
 * inserted before "created_at", as lease_to_json(c, l, true) puts it. */
static char *answer_from_row(struct ctl *c, const struct ctl_lease *l, size_t *len)
{
	const struct ctl_row_cache *r = &c->row;
	char *why = NULL;
	size_t wl = 0;
	if (l->pl.npicks > 0) {
		char buf[512];
		lease_explain(c, l, buf, sizeof(buf));
		json_t *js = json_string(buf);
		why = js ? json_dumps(js, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		json_decref(js);
		if (!why)
			return NULL;
		wl = strlen(why);
	}
	static const char key[] = "\"explanation\":";
	size_t extra = why ? sizeof(key) - 1 + wl + 1 : 0;
	char *out = malloc(r->len + extra + 2);
	if (out) {
		memcpy(out, r->text, r->split);
		size_t o = r->split;
		if (why) {
			memcpy(out + o, key, sizeof(key) - 1);
			o += sizeof(key) - 1;
			memcpy(out + o, why, wl);
			o += wl;
			out[o++] = ',';
		}
		memcpy(out + o, r->text + r->split, r->len - r->split);
		o += r->len - r->split;
		out[o++] = '\n';
		out[o] = 0;
		*len = o;
	}
	free(why);
	return out;
}

void ctl_answer_lease(struct ctl_call *call, int status, const struct ctl_lease *l)
{
	struct ctl *c = call->ctl;
	size_t len = 0;
	if (!row_cache_fresh(c, l) && l->state != LS_PENDING) {
		/* Not just written (a read, say): encode the row the fast way. */
		size_t rl = 0, split = 0;
		char *row = lease_row_dump(c, l, &rl, &split);
		if (row) {
			ctl_row_cache_clear(c);
			row_fingerprint(l, &c->row);
			c->row.text = row;
			c->row.len = rl;
			c->row.split = split;
		}
	}
	char *s = row_cache_fresh(c, l) ? answer_from_row(c, l, &len) : NULL;
	/* The audit reads the id and tenant of a created object from its document. */
	json_t *doc = s ? json_pack("{s:s, s:s}", "id", l->id, "tenant", l->tenant) : NULL;
	if (!doc) {
		free(s);
		ctl_answer_json(call, status, lease_to_json(c, l, true));
		return;
	}
#ifndef NDEBUG
	{
		/* Debug builds (the tests) check that the reuse is exact. */
		json_t *full = lease_to_json(c, l, true);
		char *fs = full ? json_dumps(full, JSON_COMPACT) : NULL;
		json_decref(full);
		bool same = !fs || (strlen(fs) == len - 1 && !memcmp(fs, s, len - 1));
		if (!same)
			sl_log_error("lease answer from its row differs", "lease=%s row=%s api=%s",
				     l->id, s, fs);
		assert(same && "lease answer from its row differs");
		free(fs);
	}
#endif
	call->answer_doc = doc;
	ctl_answer(call, status, "application/json", s, len);
	call->answer_doc = NULL;
	json_decref(doc);
}

/* ---- lease-change hooks ---- */

static void hook_audit(struct ctl *c, const struct lease_change *ch)
{
	audit_log_lease_state(c, ch->lease, (int)ch->from);
}

static void hook_billing(struct ctl *c, const struct lease_change *ch)
{
	billing_lease_changed(c, ch->lease); /* metering: started, scaled, ended */
}

static void hook_jobs(struct ctl *c, const struct lease_change *ch)
{
	jobs_lease_changed(c, ch->lease); /* ranks stop where the lease no longer runs */
}

static void hook_instances(struct ctl *c, const struct lease_change *ch)
{
	instances_lease_changed(c, ch->lease); /* an instance whose lease ended stops */
}

/* Who hears of a lease change, in this order. Why the order:
 * 1. audit: the scheduler's own change is recorded first, so in the turn's
 *    transaction its entry comes before the rows its consequences write, and
 *    a failed entry (fail closed: the turn turns fatal) is there before any
 *    consequence is acted on.
 * 2. billing: usage starts, changes size or ends at the lease's own instants,
 *    and the final charge is posted, before the work on it is torn down; a
 *    failed write makes the turn fatal, which the hooks after it check.
 * 3. jobs: ranks on GPUs the lease no longer holds stop and an ended lease's
 *    jobs are cancelled; it only reads the lease, so nothing above depends
 *    on it. New observers (the console) go after it unless they must see
 *    the change before money or work does.
 * 4. instances: an instance whose lease ended (a balance stop, preemption,
 *    a node lost, a release from the lease API) stops, its GPU time ending
 *    at the lease's end; billing (2.) meters none of an instance's lease,
 *    whose GPU time the instance meters from "running".
 * 5. events: the console's live views and --watch see the change last. */
/* The console's live views and --watch (events.h). */
static void hook_events(struct ctl *c, const struct lease_change *ch)
{
	events_emit(c, "lease", ch->lease->id, lease_state_name(ch->lease->state), ch->lease->tenant);
}

static const struct lease_hook lease_hooks[] = {
	{"audit", hook_audit},
	{"billing", hook_billing},
	{"jobs", hook_jobs},
	{"instances", hook_instances},
	{"events", hook_events},
};

const struct lease_hook *ctl_lease_hooks(size_t *n)
{
	*n = sizeof(lease_hooks) / sizeof(lease_hooks[0]);
	return lease_hooks;
}

void ctl_lease_set_state(struct ctl *c, struct ctl_lease *l, enum lease_state s,
			 const char *reason)
{
	struct lease_change ch = {l, l->state, reason};
	if (c->row.lease == l)
		ctl_row_cache_clear(c);
	l->state = s;
	if (!lease_hist_add(l, c->now_ns, s, reason))
		c->fatal = true; /* out of memory: the row would lose history */
	sl_log_info("lease state", "lease=%s tenant=%s state=%s gpus=%d reason=%s", l->id,
		    l->tenant, lease_state_name(s), l->gpus, reason ? reason : "");
	for (size_t i = 0; i < sizeof(lease_hooks) / sizeof(lease_hooks[0]); i++)
		lease_hooks[i].fn(c, &ch);
}

/* ---- expiry heap ---- */

static void heap_swap(struct ctl_expiry *h, int a, int b)
{
	struct ctl_expiry t = h[a];
	h[a] = h[b];
	h[b] = t;
}

enum sl_err ctl_expiry_push(struct ctl *c, int64_t at, int idx)
{
	enum sl_err ge = sl_grow(&c->lt.expiry, &c->lt.cap_expiry, c->lt.nexpiry + 1, CTL_MAX_LEASES);
	if (ge)
		return ge;
	int i = c->lt.nexpiry++;
	c->lt.expiry[i] = (struct ctl_expiry){at, idx};
	while (i > 0 && c->lt.expiry[(i - 1) / 2].at > c->lt.expiry[i].at) {
		heap_swap(c->lt.expiry, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	if (!c->next_deadline || at < c->next_deadline)
		c->next_deadline = at;
	return SL_OK;
}

static void heap_pop(struct ctl *c)
{
	struct ctl_expiry *h = c->lt.expiry;
	h[0] = h[--c->lt.nexpiry];
	for (int i = 0;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < c->lt.nexpiry && h[l].at < h[m].at)
			m = l;
		if (r < c->lt.nexpiry && h[r].at < h[m].at)
			m = r;
		if (m == i)
			break;
		heap_swap(h, i, m);
		i = m;
	}
}

int64_t ctl_expire(struct ctl *c)
{
	/* The scheduler keeps every end and notice; the heap only says when to
	 * tick. */
	bool tick = false;
	while (c->lt.nexpiry > 0 && c->lt.expiry[0].at <= c->now_ns) {
		heap_pop(c);
		tick = true;
	}
	if (tick && c->sched && !c->fatal)
		ctl_sched_check(c, sched_tick(c->sched, c->now_ns), "sched_tick");
	return c->lt.nexpiry ? c->lt.expiry[0].at : 0;
}

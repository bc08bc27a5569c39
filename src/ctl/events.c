/* events.c - the ring of state changes and the long polls that wait on it
 * (events.h). Polls are answered like the agent's work poll (job_work.c):
 * kept as deferred requests, answered by events_tick in the turn their news
 * comes, queued like every answer, so they leave after the turn's commit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ctl_int.h"
#include "events.h"
#include "log.h"

#define KIND_MAX 15
#define ID_MAX 63
#define STATE_MAX 31
#define NS 1000000000LL

struct event {
	uint64_t seq;
	int64_t at_ns;
	char kind[KIND_MAX + 1], id[ID_MAX + 1], state[STATE_MAX + 1], tenant[CTL_NAME_MAX + 1];
};

struct event_poll {
	struct http_request *req;
	uint64_t since;
	int64_t deadline_ns;
	bool all; /* provider roles: every event */
	char tenant[CTL_NAME_MAX + 1];
};

struct ctl_events {
	struct event ring[EVENTS_RING];
	uint64_t first_seq; /* seq of the first event of this run */
	uint64_t next_seq;  /* seq the next event gets */
	bool news;          /* an event since the last tick */
	struct event_poll *polls;
	int npolls, cap_polls;
	int64_t deadline_ns; /* earliest poll deadline, 0: none */
};

enum sl_err events_start(struct ctl *c, struct sl_diag *d)
{
	struct ctl_events *e = calloc(1, sizeof(*e));
	if (!e)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	e->first_seq = e->next_seq = (uint64_t)(c->now_ns > 0 ? c->now_ns / 1000 : 1);
	c->events = e;
	return SL_OK;
}

static uint64_t newest(const struct ctl_events *e)
{
	return e->next_seq - 1;
}

/* The oldest seq still in the ring. */
static uint64_t oldest(const struct ctl_events *e)
{
	uint64_t n = e->next_seq - e->first_seq;
	return n > EVENTS_RING ? e->next_seq - EVENTS_RING : e->first_seq;
}

void events_emit(struct ctl *c, const char *kind, const char *id, const char *state,
		 const char *tenant)
{
	struct ctl_events *e = c->events;
	if (!e)
		return;
	struct event *v = &e->ring[e->next_seq % EVENTS_RING];
	v->seq = e->next_seq++;
	v->at_ns = c->now_ns;
	snprintf(v->kind, sizeof(v->kind), "%s", kind);
	snprintf(v->id, sizeof(v->id), "%s", id ? id : "");
	snprintf(v->state, sizeof(v->state), "%s", state ? state : "");
	snprintf(v->tenant, sizeof(v->tenant), "%s", tenant ? tenant : "");
	e->news = true;
}

static bool visible(struct ctl *c, const struct event *v, bool all, const char *tenant)
{
	if (all)
		return true;
	if (!strcmp(v->kind, "node")) {
		int n = c->fleet ? fleet_find_node(c->fleet, v->id) : -1;
		return n >= 0 && ctl_node_visible(c, n, tenant);
	}
	return !strcmp(v->tenant, tenant);
}

/* The answer to a poll from since: NULL when there is nothing to say yet
 * (and wait is allowed). */
static json_t *answer_doc(struct ctl *c, uint64_t since, bool all, const char *tenant,
			  bool must)
{
	struct ctl_events *e = c->events;
	bool reset = since > newest(e) || since + 1 < oldest(e);
	json_t *arr = json_array();
	uint64_t seq = newest(e);
	if (!arr)
		return NULL;
	for (uint64_t s = reset ? e->next_seq : since + 1; s < e->next_seq; s++) {
		const struct event *v = &e->ring[s % EVENTS_RING];
		if (!visible(c, v, all, tenant))
			continue;
		if (json_array_size(arr) == EVENTS_LIMIT) {
			seq = s - 1;
			break;
		}
		json_array_append_new(arr, json_pack("{s:I, s:o, s:s, s:s, s:s, s:o}", "seq",
						     (json_int_t)v->seq, "at", ctl_time_json(v->at_ns),
						     "kind", v->kind, "id", v->id, "state", v->state,
						     "tenant",
						     v->tenant[0] ? json_string(v->tenant) : json_null()));
	}
	if (!reset && !must && json_array_size(arr) == 0) {
		json_decref(arr);
		return NULL;
	}
	json_t *o = json_pack("{s:I, s:o}", "seq", (json_int_t)seq, "events", arr);
	if (o && reset)
		json_object_set_new(o, "reset", json_true());
	return o;
}

static void answer_poll(struct ctl *c, struct event_poll *p, json_t *doc)
{
	struct ctl_call call;
	memset(&call, 0, sizeof(call));
	call.ctl = c;
	call.req = p->req;
	if (!doc)
		ctl_answer_error(&call, SL_ENOMEM, NULL, NULL);
	else
		ctl_answer_json(&call, 200, doc);
}

static void drop_poll(struct ctl_events *e, int i)
{
	e->polls[i] = e->polls[--e->npolls];
}

void events_tick(struct ctl *c)
{
	struct ctl_events *e = c->events;
	if (!e || c->fatal)
		return;
	if (!e->news && (!e->deadline_ns || e->deadline_ns > c->now_ns))
		goto deadline;
	e->news = false;
	e->deadline_ns = 0;
	for (int i = 0; i < e->npolls;) {
		struct event_poll *p = &e->polls[i];
		bool due = p->deadline_ns <= c->now_ns;
		json_t *doc = answer_doc(c, p->since, p->all, p->tenant, due);
		if (doc || due) {
			struct event_poll copy = *p;
			drop_poll(e, i);
			answer_poll(c, &copy, doc);
			continue;
		}
		if (!e->deadline_ns || p->deadline_ns < e->deadline_ns)
			e->deadline_ns = p->deadline_ns;
		i++;
	}
deadline:
	if (e->deadline_ns && (!c->next_deadline || e->deadline_ns < c->next_deadline))
		c->next_deadline = e->deadline_ns;
}

void events_request_gone(struct ctl *c, struct http_request *req)
{
	struct ctl_events *e = c->events;
	for (int i = 0; e && i < e->npolls; i++)
		if (e->polls[i].req == req) {
			drop_poll(e, i);
			return;
		}
}

void events_free(struct ctl *c)
{
	struct ctl_events *e = c->events;
	if (!e)
		return;
	free(e->polls);
	free(e);
	c->events = NULL;
}

void h_events(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct ctl_events *e = c->events;
	long long since, wait;
	bool since_ok = ctl_query_int(call, "since", 0, INT64_MAX, &since);
	if (!since_ok || !ctl_query_int(call, "wait", EVENTS_WAIT_DEFAULT_S, EVENTS_WAIT_MAX_S, &wait)) {
		ctl_answer_error(call, SL_EINVAL,
				 since_ok ? "?wait= must be 0..60 seconds"
					  : "?since= must be a non-negative integer",
				 "GET /v1/events?since=SEQ&wait=S; start with since=0 (the answer's "
				 "seq is the next since)");
		return;
	}
	const char *tenant = ctl_call_tenant(call);
	bool all = tenant == NULL;
	/* since=0: where things stand now, at once (no reset) */
	json_t *doc = since == 0 ? json_pack("{s:I, s:[]}", "seq", (json_int_t)newest(e), "events")
				 : answer_doc(c, (uint64_t)since, all, tenant ? tenant : "", wait == 0);
	if (doc || since == 0) {
		if (!doc)
			ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		else
			ctl_answer_json(call, 200, doc);
		return;
	}
	if (e->npolls == EVENTS_MAX_POLLS) {
		struct event_poll old = e->polls[0];
		drop_poll(e, 0);
		answer_poll(c, &old, answer_doc(c, old.since, old.all, old.tenant, true));
	}
	if (sl_grow(&e->polls, &e->cap_polls, e->npolls + 1, EVENTS_MAX_POLLS)) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	struct event_poll *p = &e->polls[e->npolls++];
	memset(p, 0, sizeof(*p));
	p->req = call->req;
	p->since = (uint64_t)since;
	p->deadline_ns = c->now_ns + (int64_t)wait * NS;
	p->all = all;
	snprintf(p->tenant, sizeof(p->tenant), "%s", tenant ? tenant : "");
	if (!e->deadline_ns || p->deadline_ns < e->deadline_ns)
		e->deadline_ns = p->deadline_ns;
	if (!c->next_deadline || p->deadline_ns < c->next_deadline)
		c->next_deadline = p->deadline_ns;
	call->answered = true; /* deferred: answered by events_tick */
}

/* codec.c - the controller's objects to JSON and back.
 *
 * One encoding serves both the API and the store: a lease row in the store is
 * the lease object the API shows (minus the queue position, which is derived),
 * so what an operator reads is what a restart rebuilds from, and there is no
 * second format to drift. Decoding is strict because the store is only ever
 * written by this code: anything unexpected is reported, not guessed. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "calendar.h"
#include "catalog.h"
#include "ctl_int.h"
#include "place_json.h"

static const char *const state_names[LS__COUNT] = {
	"pending", "active", "preempting", "released", "expired", "preempted", "failed",
};

const char *lease_state_name(enum lease_state s)
{
	return (unsigned)s < LS__COUNT ? state_names[s] : "?";
}

int lease_state_parse(const char *s)
{
	for (int i = 0; s && i < LS__COUNT; i++)
		if (!strcmp(s, state_names[i]))
			return i;
	return -1;
}

/* ---- time ---- */

void ctl_time_fmt(int64_t ns, char buf[32])
{
	time_t secs = (time_t)(ns / 1000000000);
	int ms = (int)((ns % 1000000000) / 1000000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	/* The modulos only bound the fields; real values fit. Digits by hand:
	 * snprintf here was ~1.5% of the daemon's time under lease load (four
	 * times per lease row). "YYYY-MM-DDTHH:MM:SS.mmmZ" */
	unsigned v[7] = {(unsigned)(tm.tm_year + 1900) % 10000u, (unsigned)(tm.tm_mon + 1) % 100u,
			 (unsigned)tm.tm_mday % 100u, (unsigned)tm.tm_hour % 100u,
			 (unsigned)tm.tm_min % 100u, (unsigned)tm.tm_sec % 100u, (unsigned)ms % 1000u};
	static const int width[7] = {4, 2, 2, 2, 2, 2, 3};
	static const char after[7] = {'-', '-', 'T', ':', ':', '.', 'Z'};
	char *o = buf;
	for (int i = 0; i < 7; i++) {
		for (int k = width[i] - 1; k >= 0; k--) {
			o[k] = (char)('0' + v[i] % 10u);
			v[i] /= 10u;
		}
		o += width[i];
		*o++ = after[i];
	}
	*o = 0;
}

json_t *ctl_time_json(int64_t ns)
{
	char buf[32];
	if (ns <= 0)
		return json_null();
	ctl_time_fmt(ns, buf);
	return json_string(buf);
}

bool ctl_time_parse(const char *s, int64_t *ns)
{
	return cal_parse_rfc3339_ns(s, ns, NULL) == SL_OK;
}

static int64_t time_field(const json_t *o, const char *name)
{
	int64_t ns = 0;
	const json_t *v = json_object_get(o, name);
	if (json_is_string(v) && !ctl_time_parse(json_string_value(v), &ns))
		return -1;
	return ns;
}

/* ---- tenants ---- */

json_t *tenant_to_json(struct ctl *c, const struct ctl_tenant *t, bool usage)
{
	json_t *o = json_pack("{s:s, s:O, s:O, s:o}", "name", t->name, "regions", t->regions,
			      "quotas", t->quotas, "created_at", ctl_time_json(t->created_ns));
	if (!o || !usage)
		return o;
	json_t *u = json_object();
	for (int i = 0; u && i < c->lt.nleases; i++) {
		const struct ctl_lease *l = ctl_lease_at(c, i);
		if (!l || (l->state != LS_ACTIVE && l->state != LS_PREEMPTING) ||
		    strcmp(l->tenant, t->name))
			continue;
		for (int k = 0; k < l->pl.npicks; k++) {
			const char *m = fleet_node_type(c->fleet, l->pl.picks[k].node)->gpu->name;
			int n = __builtin_popcount(l->pl.picks[k].gpus);
			json_t *cur = json_object_get(u, m);
			json_object_set_new(u, m, json_integer((cur ? json_integer_value(cur) : 0) + n));
		}
	}
	json_object_set_new(o, "usage", u);
	return o;
}

enum sl_err tenant_from_json(const json_t *o, struct ctl_tenant *t, struct sl_diag *d)
{
	const char *name = json_string_value(json_object_get(o, "name"));
	json_t *regions = json_object_get(o, "regions"), *quotas = json_object_get(o, "quotas");
	memset(t, 0, sizeof(*t));
	if (!name || strlen(name) > CTL_NAME_MAX || !json_is_array(regions) ||
	    !json_is_object(quotas))
		return sl_diag_set(d, SL_EPARSE, "tenant record lacks name, regions or quotas");
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->regions = json_incref(regions);
	t->quotas = json_incref(quotas);
	t->created_ns = time_field(o, "created_at");
	return SL_OK;
}

/* ---- tokens ---- */

json_t *token_to_json(const struct ctl_token *t, bool store)
{
	json_t *o = json_pack("{s:s, s:s, s:o, s:s, s:o, s:o}", "id", t->id, "role",
			      ctl_role_name(t->role), "tenant",
			      t->tenant[0] ? json_string(t->tenant) : json_null(), "user", t->user,
			      "created_at", ctl_time_json(t->created_ns), "revoked_at",
			      ctl_time_json(t->revoked_ns));
	if (o && store)
		json_object_set_new(o, "sha256", json_string(t->hash));
	if (o && t->expires_ns)
		json_object_set_new(o, "expires_at", ctl_time_json(t->expires_ns));
	if (o && t->role == CTL_ROLE_AGENT) {
		json_object_set_new(o, "node", json_string(t->node[0] ? t->node : "*"));
		json_object_set_new(o, "credential", json_boolean(t->node_cred));
	}
	return o;
}

enum sl_err token_from_json(const json_t *o, struct ctl_token *t, struct sl_diag *d)
{
	const char *id = json_string_value(json_object_get(o, "id"));
	const char *role = json_string_value(json_object_get(o, "role"));
	const char *tenant = json_string_value(json_object_get(o, "tenant"));
	const char *user = json_string_value(json_object_get(o, "user"));
	const char *hash = json_string_value(json_object_get(o, "sha256"));
	memset(t, 0, sizeof(*t));
	if (!id || strlen(id) != CTL_TOKEN_ID_LEN || ctl_role_parse(role) < 0 || !hash ||
	    strlen(hash) != CTL_HASH_HEX || !user || strlen(user) > CTL_USER_MAX ||
	    (tenant && strlen(tenant) > CTL_NAME_MAX))
		return sl_diag_set(d, SL_EPARSE, "token record is malformed");
	memcpy(t->id, id, CTL_TOKEN_ID_LEN + 1);
	memcpy(t->hash, hash, CTL_HASH_HEX + 1);
	t->role = (enum ctl_role)ctl_role_parse(role);
	snprintf(t->tenant, sizeof(t->tenant), "%s", tenant ? tenant : "");
	snprintf(t->user, sizeof(t->user), "%s", user);
	t->created_ns = time_field(o, "created_at");
	t->revoked_ns = time_field(o, "revoked_at");
	t->expires_ns = time_field(o, "expires_at");
	const char *node = json_string_value(json_object_get(o, "node"));
	if (node && strlen(node) > CTL_NAME_MAX)
		return sl_diag_set(d, SL_EPARSE, "token record is malformed");
	snprintf(t->node, sizeof(t->node), "%s", node && strcmp(node, "*") ? node : "");
	t->node_cred = json_is_true(json_object_get(o, "credential"));
	return SL_OK;
}

/* ---- placements ---- */

enum sl_err placement_from_json(const struct fleet *f, const json_t *arr, struct placement *pl,
				struct sl_diag *d)
{
	size_t i;
	const json_t *e;
	if (!json_is_array(arr))
		return sl_diag_set(d, SL_EPARSE, "placement must be an array");
	json_array_foreach(arr, i, e) {
		struct place_pick pk;
		memset(&pk, 0, sizeof(pk));
		const char *node = json_string_value(json_object_get(e, "node"));
		const json_t *gpus = json_object_get(e, "gpus"), *g;
		size_t k;
		pk.node = node ? fleet_find_node(f, node) : -1;
		if (pk.node < 0)
			return sl_diag_set(d, SL_ENOTFOUND, "placement names node '%s', not in the fleet",
					   node ? node : "?");
		json_array_foreach(gpus, k, g) {
			json_int_t x = json_integer_value(g);
			if (x < 0 || x >= fleet_node_type(f, pk.node)->ngpus)
				return sl_diag_set(d, SL_EPARSE, "GPU %lld out of range on %s",
						   (long long)x, node);
			pk.gpus |= 1u << x;
		}
		const json_t *gpu = json_object_get(e, "gpu");
		pk.gpu = gpu ? (int)json_integer_value(gpu) : -1;
		pk.milli = (int)json_integer_value(json_object_get(e, "milli"));
		pk.cpus = (int)json_integer_value(json_object_get(e, "cpus"));
		pk.mem_mib = json_integer_value(json_object_get(e, "mem_mib"));
		const json_t *q = json_object_get(e, "quality");
		pk.q.bottleneck_gbps = (int)json_integer_value(json_object_get(q, "bottleneck_gbps"));
		pk.q.total_gbps = (int)json_integer_value(json_object_get(q, "total_gbps"));
		pk.q.numa_spanned = (int)json_integer_value(json_object_get(q, "numa_spanned"));
		pk.q.nics = (int)json_integer_value(json_object_get(q, "nic_rails"));
		if (placement_add(pl, &pk))
			return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	return SL_OK;
}

/* ---- leases ---- */

/* One sentence on where a lease runs and why that is good, from its picks
 * and score: what `lease show` prints under the placement. */
void lease_explain(const struct ctl *c, const struct ctl_lease *l, char *buf, size_t n)
{
	const struct place_score *s = lease_score(l);
	int gpus = 0;
	for (int i = 0; i < l->pl.npicks; i++)
		gpus += __builtin_popcount(l->pl.picks[i].gpus);
	const struct fleet_node *first = &c->fleet->nodes[l->pl.picks[0].node];
	const struct place_pick *p0 = &l->pl.picks[0];
	size_t off;
	if (p0->milli > 0)
		off = (size_t)snprintf(buf, n, "a share of GPU %d (%d/1000) of %s on 1 node", p0->gpu,
				       p0->milli, fleet_node_type(c->fleet, p0->node)->gpu->name);
	else if (gpus == 0)
		off = (size_t)snprintf(buf, n, "CPUs and memory without GPUs on 1 node");
	else
		off = (size_t)snprintf(buf, n, "%d GPU%s of %s on %d node%s", gpus, gpus == 1 ? "" : "s",
				       fleet_node_type(c->fleet, p0->node)->gpu->name, l->pl.npicks,
				       l->pl.npicks == 1 ? "" : "s");
	if (l->pl.npicks == 1 && off < n)
		off += (size_t)snprintf(buf + off, n - off, " (%s)", first->name);
	int bottleneck = l->pl.picks[0].q.bottleneck_gbps, numa = 0;
	for (int i = 0; i < l->pl.npicks; i++) {
		if (l->pl.picks[i].q.bottleneck_gbps < bottleneck)
			bottleneck = l->pl.picks[i].q.bottleneck_gbps;
		if (l->pl.picks[i].q.numa_spanned > numa)
			numa = l->pl.picks[i].q.numa_spanned;
	}
	if (gpus > 1 && off < n)
		off += (size_t)snprintf(buf + off, n - off, "; slowest GPU pair inside a node %d GB/s",
					bottleneck);
	if (numa && off < n)
		off += (size_t)snprintf(buf + off, n - off, "; %d NUMA node%s", numa, numa == 1 ? "" : "s");
	if (l->pl.npicks > 1 && s->nodes && off < n)
		off += (size_t)snprintf(buf + off, n - off, "; %d leaf switch%s", s->leaves,
					s->leaves == 1 ? "" : "es");
	if (l->pl.npicks > 1 && s->domains && off < n)
		off += (size_t)snprintf(buf + off, n - off, "; %d NVLink domain%s", s->domains,
					s->domains == 1 ? "" : "s");
	if (l->pl.npicks > 1 && off < n)
		off += (size_t)snprintf(buf + off, n - off, s->rails_aligned ? "; rails aligned" : "; rails not aligned");
	if (s->nodes && off < n)
		off += (size_t)snprintf(buf + off, n - off, s->full_quality ? "; best possible on this hardware"
							     : "; below the best this hardware allows (busy fleet)");
	if (s->leaf_kept > 0 && off < n)
		off += (size_t)snprintf(buf + off, n - off,
					l->pl.npicks > 1
						? "; leaf-aware: a leaf where it breaks %d fewer whole "
						  "node%s than the best-fit leaf"
						: "; leaf-aware: a whole node in the leaf with the fewest "
						  "whole nodes, sparing one with %d whole node%s",
					s->leaf_kept, s->leaf_kept == 1 ? "" : "s");
	if (s->frag && off < n) {
		if (s->bestfit_same)
			snprintf(buf + off, n - off, "; fragmentation-aware: best fit agrees (expected "
				 "fragmentation %+.3f GPU per request)", (double)s->frag_milli / 1000);
		else
			snprintf(buf + off, n - off, "; fragmentation-aware: expected fragmentation "
				 "%+.3f GPU per request here, %+.3f on best fit's node",
				 (double)s->frag_milli / 1000, (double)s->bestfit_milli / 1000);
	}
}

/* ---- the row's fields (lease_fields.h) ---- */

#define LF_ROW(kind, member, key, when) {kind, key, offsetof(struct ctl_lease, member), when},
static const struct lease_field lease_field_table[] = {LEASE_FIELDS(LF_ROW)};
#define LF_COUNT (sizeof(lease_field_table) / sizeof(lease_field_table[0]))

const struct lease_field *lease_row_fields(size_t *n)
{
	*n = LF_COUNT;
	return lease_field_table;
}

bool lease_field_present(const struct lease_field *f, const struct ctl_lease *l, bool api)
{
	switch (f->when) {
	case LW_ALWAYS: return true;
	case LW_PLACED: return l->placed;
	case LW_PENDING: return l->state == LS_PENDING;
	case LW_PREEMPTING: return l->state == LS_PREEMPTING;
	case LW_API: return api;
	}
	return false;
}

int64_t lease_field_scalar(const struct lease_field *f, const struct ctl_lease *l)
{
	const char *p = (const char *)l + f->offset;
	int i;
	int64_t v = 0;
	bool b;
	switch (f->kind) {
	case LF_INT: memcpy(&i, p, sizeof(i)); return i;
	case LF_INT64:
	case LF_TIME: memcpy(&v, p, sizeof(v)); return v;
	case LF_BOOL: memcpy(&b, p, sizeof(b)); return b;
	case LF_ID: case LF_NAME: case LF_PLAN: case LF_STATE: case LF_REQUEST: case LF_PLACEMENT:
	case LF_SCORE: case LF_EXPLANATION: case LF_QUEUE: case LF_SEAM: case LF_HISTORY:
		break; /* not scalars */
	}
	return 0;
}

/* Where the row splits (the LF_SEAM entry). */
static size_t lease_seam(void)
{
	size_t i = 0;
	while (i < LF_COUNT && lease_field_table[i].kind != LF_SEAM)
		i++;
	return i;
}

/* Sets o's keys for l's fields [from, to) of the table, in table order. */
static void lease_fields_json(struct ctl *c, const struct ctl_lease *l, bool api, json_t *o,
			      size_t from, size_t to)
{
	for (size_t k = from; k < to; k++) {
		const struct lease_field *f = &lease_field_table[k];
		const char *p = (const char *)l + f->offset;
		if (!lease_field_present(f, l, api))
			continue;
		switch (f->kind) {
		case LF_INT:
		case LF_INT64:
			json_object_set_new(o, f->key, json_integer(lease_field_scalar(f, l)));
			break;
		case LF_TIME:
			json_object_set_new(o, f->key, ctl_time_json(lease_field_scalar(f, l)));
			break;
		case LF_BOOL:
			json_object_set_new(o, f->key, json_boolean(lease_field_scalar(f, l)));
			break;
		case LF_ID:
			json_object_set_new(o, f->key, json_string(p));
			break;
		case LF_NAME: {
			const char *name;
			memcpy(&name, p, sizeof(name));
			json_object_set_new(o, f->key, json_string(name));
			break;
		}
		case LF_PLAN:
			json_object_set_new(o, f->key, json_string(plan_name(l->req->plan)));
			break;
		case LF_STATE:
			json_object_set_new(o, f->key, json_string(lease_state_name(l->state)));
			break;
		case LF_REQUEST:
			if (l->request)
				json_object_set_new(o, f->key, json_loads(l->request, 0, NULL));
			break;
		case LF_PLACEMENT: {
			struct placement v;
			json_t *placed = place_to_json(c->fleet, lease_pl_view(l, &v));
			json_object_set(o, f->key, json_object_get(placed, "placement"));
			json_decref(placed);
			break;
		}
		case LF_SCORE:
			json_object_set_new(o, f->key, place_score_to_json(lease_score(l)));
			break;
		case LF_EXPLANATION:
			if (l->pl.npicks > 0) {
				char why[512];
				lease_explain(c, l, why, sizeof(why));
				json_object_set_new(o, f->key, json_string(why));
			}
			break;
		case LF_QUEUE: {
			/* The store keeps the last reason; the API asks the scheduler. */
			int pos = 0;
			const char *reason = ctl_lease_reason(l);
			if (api)
				ctl_sched_queue_pos(c, l, &pos, &reason);
			json_object_set_new(o, f->key, json_pack("{s:i, s:s}", "position", pos, "reason",
								 reason ? reason : ""));
			break;
		}
		case LF_SEAM:
			break;
		case LF_HISTORY: {
			json_t *h = json_array();
			for (int i = 0; h && i < l->nhist; i++)
				json_array_append_new(h, json_pack("{s:o, s:s, s:s}", "at",
								   ctl_time_json(l->hist[i].at_ns), "state",
								   lease_state_name(l->hist[i].state), "reason",
								   l->hist[i].reason ? l->hist[i].reason : ""));
			json_object_set_new(o, f->key, h);
			break;
		}
		}
	}
}

/* The scalar fields of a stored row into l (absent keys: 0, false). */
static void lease_scalars_from_json(const json_t *o, struct ctl_lease *l)
{
	for (size_t k = 0; k < LF_COUNT; k++) {
		const struct lease_field *f = &lease_field_table[k];
		char *p = (char *)l + f->offset;
		const json_t *v = json_object_get(o, f->key);
		switch (f->kind) {
		case LF_INT: {
			int i = (int)json_integer_value(v);
			memcpy(p, &i, sizeof(i));
			break;
		}
		case LF_INT64: {
			int64_t i = json_integer_value(v);
			memcpy(p, &i, sizeof(i));
			break;
		}
		case LF_TIME: {
			int64_t ns = time_field(o, f->key);
			memcpy(p, &ns, sizeof(ns));
			break;
		}
		case LF_BOOL: {
			bool b = json_is_true(v);
			memcpy(p, &b, sizeof(b));
			break;
		}
		case LF_ID: case LF_NAME: case LF_PLAN: case LF_STATE: case LF_REQUEST: case LF_PLACEMENT:
		case LF_SCORE: case LF_EXPLANATION: case LF_QUEUE: case LF_SEAM: case LF_HISTORY:
			break; /* read by lease_from_json itself */
		}
	}
}

/* The keys of a lease up to the seam (its queue entry included). */
static json_t *lease_head_json(struct ctl *c, const struct ctl_lease *l, bool api)
{
	json_t *o = json_object();
	if (o)
		lease_fields_json(c, l, api, o, 0, lease_seam());
	return o;
}

/* The keys after the seam, added to o. */
static void lease_add_tail(struct ctl *c, json_t *o, const struct ctl_lease *l)
{
	lease_fields_json(c, l, false, o, lease_seam() + 1, LF_COUNT);
}

json_t *lease_to_json(struct ctl *c, const struct ctl_lease *l, bool api)
{
	json_t *o = lease_head_json(c, l, api);
	if (o)
		lease_add_tail(c, o, l);
	return o;
}

char *lease_row_dump_json(struct ctl *c, const struct ctl_lease *l, size_t *len, size_t *split)
{
	/* Dumped in two halves and joined: jansson writes an object's keys in
	 * insertion order, "," between pairs, so the join is the same text as
	 * json_dumps(lease_to_json(c, l, false), JSON_COMPACT), and the answer
	 * can insert its explanation at the seam without encoding again. */
	json_t *h = lease_head_json(c, l, false), *t = json_object();
	char *hs = NULL, *ts = NULL, *out = NULL;
	if (h && t) {
		lease_add_tail(c, t, l);
		hs = json_dumps(h, JSON_COMPACT);
		ts = json_dumps(t, JSON_COMPACT);
	}
	json_decref(h);
	json_decref(t);
	size_t hl = hs ? strlen(hs) : 0, tl = ts ? strlen(ts) : 0;
	if (hl >= 2 && tl >= 2 && (out = malloc(hl + tl))) {
		/* "{head}" + "{tail}" -> "{head,tail}" */
		memcpy(out, hs, hl - 1);
		out[hl - 1] = ',';
		memcpy(out + hl, ts + 1, tl); /* with its NUL */
		*len = hl + tl - 1;
		*split = hl;
	}
	free(hs);
	free(ts);
	return out;
}

static char *str_dup_or_null(const char *s)
{
	if (!s || !s[0])
		return NULL;
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* Texts that leases share (sl_ctext, buf.h): equal requests posted one
 * after another (a tenant's burst; bench_memory's 100,000) share one copy
 * (lease_share_request), and so do equal queue reasons (lease_share_reason)
 * and a history entry with the lease's own reason. */

/* Reasons most history entries carry (ctl_sched.c, h_leases.c): kept as
 * these constants instead of a copy per entry. */
static const char *const common_reasons[] = {
	"placed", "placed (backfilled)", "released", "its duration ended",
	"preempted after its notice", "a node it used failed",
};

static bool hist_reason_common(const char *r)
{
	for (size_t i = 0; i < sizeof(common_reasons) / sizeof(common_reasons[0]); i++)
		if (r == common_reasons[i])
			return true;
	return false;
}

/* The reason of a new history entry of l: a constant, l's own reason when
 * the same (a queued lease's), or a counted copy. */
static const char *hist_reason(struct ctl_lease *l, const char *r)
{
	for (size_t i = 0; r && i < sizeof(common_reasons) / sizeof(common_reasons[0]); i++)
		if (!strcmp(r, common_reasons[i]))
			return common_reasons[i];
	if (r && l->reason && !strcmp(r, l->reason))
		return sl_ctext_ref(l->reason);
	return sl_ctext_dup(r);
}

static void hist_reason_free(const char *r)
{
	if (r && !hist_reason_common(r))
		sl_ctext_drop(r);
}

void lease_release_mem(struct ctl_lease *l)
{
	place_picks_release(&l->pl);
	lease_score_drop(l);
	lease_req_drop(l->req);
	l->req = NULL;
	sl_ctext_drop(l->request);
	sl_ctext_drop(l->reason);
	free(l->end_reason);
	l->end_reason = NULL;
	for (int i = 0; i < l->nhist; i++)
		hist_reason_free(l->hist[i].reason);
	free(l->hist);
	l->request = l->reason = NULL;
	l->hist = NULL;
	l->nhist = 0;
}

bool lease_set_reason(struct ctl_lease *l, const char *reason)
{
	if (l->reason && reason && !strcmp(l->reason, reason))
		return true;
	sl_ctext_drop(l->reason);
	l->reason = sl_ctext_dup(reason);
	return l->reason || !reason || !reason[0];
}

void lease_share_reason(struct ctl_lease *l, const struct ctl_lease *like)
{
	if (like && like != l)
		sl_ctext_share(&l->reason, like->reason);
}

void lease_set_end_reason(struct ctl_lease *l, const char *fmt, ...)
{
	free(l->end_reason);
	l->end_reason = NULL;
	if (!fmt)
		return;
	char buf[64]; /* the old fixed buffer's size: reasons read the same */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (buf[0])
		l->end_reason = str_dup_or_null(buf);
}

bool lease_set_request(struct ctl_lease *l, const json_t *doc)
{
	char *t = json_dumps(doc, JSON_COMPACT);
	if (!t)
		return false;
	char *c = sl_ctext_dup(t);
	free(t);
	if (!c)
		return false;
	sl_ctext_drop(l->request);
	l->request = c;
	return true;
}

void lease_share_request(struct ctl_lease *l, const struct ctl_lease *like)
{
	if (like && like != l)
		sl_ctext_share(&l->request, like->request);
}

/* Entries a history of n entries (n > 0) has room for: it grows only here,
 * doubling from 1 up to CTL_MAX_HISTORY, so its length says its capacity
 * (no member for it in 100,000 leases). From 1, not 2: nearly every lease
 * has one entry (placed at once, or queued), and one entry is a 32-byte
 * block of malloc where room for two took 64 (bench/results/memory.md:
 * ~3.7 MiB at 120,000 leases); a second entry costs one realloc. */
static int hist_cap(int n)
{
	int c = 1;
	while (c < n)
		c *= 2;
	return c < CTL_MAX_HISTORY ? c : CTL_MAX_HISTORY;
}

bool lease_hist_add(struct ctl_lease *l, int64_t at_ns, enum lease_state s, const char *reason)
{
	if (l->nhist >= CTL_MAX_HISTORY) {
		hist_reason_free(l->hist[0].reason);
		memmove(l->hist, l->hist + 1, (size_t)(l->nhist - 1) * sizeof(*l->hist));
		l->nhist--;
	}
	if (l->nhist == 0 || l->nhist + 1 > hist_cap(l->nhist)) {
		struct lease_hist *h = realloc(l->hist, (size_t)hist_cap(l->nhist + 1) * sizeof(*h));
		if (!h)
			return false;
		l->hist = h;
	}
	struct lease_hist *h = &l->hist[l->nhist];
	h->at_ns = at_ns;
	h->state = s;
	h->reason = hist_reason(l, reason);
	l->nhist++;
	return h->reason || !reason || !reason[0];
}

/* The history entries of a stored row into l. */
static enum sl_err hist_from_json(const json_t *arr, struct ctl_lease *l, struct sl_diag *d)
{
	size_t i;
	const json_t *e;
	json_array_foreach(arr, i, e) {
		const json_t *at = json_object_get(e, "at");
		const char *reason = json_string_value(json_object_get(e, "reason"));
		int st = lease_state_parse(json_string_value(json_object_get(e, "state")));
		int64_t ns = 0;
		if (!json_is_object(e) || json_object_size(e) != 3 || st < 0 || !reason ||
		    !(json_is_null(at) || (json_is_string(at) && ctl_time_parse(json_string_value(at), &ns))))
			return sl_diag_set(d, SL_EPARSE, "lease record %s: history entry %zu is malformed",
					   l->id, i);
		if (!lease_hist_add(l, ns, (enum lease_state)st, reason))
			return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	return SL_OK;
}

enum sl_err lease_from_json(struct ctl *c, const json_t *o, struct ctl_lease *l,
			    struct sl_diag *d)
{
	const char *id = json_string_value(json_object_get(o, "id"));
	const char *tenant = json_string_value(json_object_get(o, "tenant"));
	const char *user = json_string_value(json_object_get(o, "user"));
	int st = lease_state_parse(json_string_value(json_object_get(o, "state")));
	json_t *req = json_object_get(o, "request"), *hist = json_object_get(o, "history");
	unsigned long long seq;
	char tail;
	memset(l, 0, sizeof(*l));
	if (!id || strlen(id) >= sizeof(l->id) || sscanf(id, "ls-%llu%c", &seq, &tail) != 1 ||
	    seq == 0 || !tenant ||
	    strlen(tenant) > CTL_NAME_MAX || !user || strlen(user) > CTL_USER_MAX || st < 0 ||
	    !json_is_object(req) || !json_is_array(hist))
		return sl_diag_set(d, SL_EPARSE, "lease record %s is malformed", id ? id : "?");
	struct lease_req r;
	enum sl_err e = lease_req_parse(req, &r, d);
	if (e)
		return e;
	if (!(l->req = lease_req_keep(&r)))
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	l->seq = seq;
	snprintf(l->id, sizeof(l->id), "%s", id);
	l->tenant = ctl_name(c, tenant);
	l->user = ctl_name(c, user);
	l->state = (enum lease_state)st;
	const json_t *sc = json_object_get(o, "score");
	l->placed = sc != NULL;
	if (!l->tenant || !l->user || !lease_set_request(l, req)) {
		lease_release_mem(l);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	if ((e = hist_from_json(hist, l, d))) {
		lease_release_mem(l);
		return e;
	}
	lease_scalars_from_json(o, l);
	const json_t *q = json_object_get(o, "queue");
	lease_set_reason(l, json_string_value(json_object_get(q, "reason")));
	struct placement pl;
	placement_init(&pl);
	if (l->state == LS_ACTIVE || l->state == LS_PREEMPTING) {
		e = placement_from_json(c->fleet, json_object_get(o, "placement"), &pl, d);
	} else if (placement_from_json(c->fleet, json_object_get(o, "placement"), &pl, NULL)) {
		/* Where an ended lease ran is history; a node since gone drops it. */
		placement_release(&pl);
	}
	if (e == SL_OK && place_picks_take(&l->pl, &pl))
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
	placement_release(&pl);
	if (e) {
		lease_release_mem(l);
		return e;
	}
	if (!sc)
		return SL_OK; /* never placed: the zero score, none kept */
	struct place_score score, *s = &score;
	memset(s, 0, sizeof(*s));
	s->bottleneck_gbps = (int)json_integer_value(json_object_get(sc, "bottleneck_gbps"));
	s->total_gbps = (int)json_integer_value(json_object_get(sc, "total_gbps"));
	s->numa_spanned = (int)json_integer_value(json_object_get(sc, "numa_spanned"));
	s->nics = (int)json_integer_value(json_object_get(sc, "nic_rails"));
	s->free_after = (int)json_integer_value(json_object_get(sc, "free_after"));
	s->stranded_after = (int)json_integer_value(json_object_get(sc, "stranded_after"));
	s->price_hint = json_integer_value(json_object_get(sc, "price_hint"));
	s->nodes = (int)json_integer_value(json_object_get(sc, "nodes"));
	s->leaves = (int)json_integer_value(json_object_get(sc, "leaves"));
	s->domains = (int)json_integer_value(json_object_get(sc, "domains"));
	s->rails_aligned = json_is_true(json_object_get(sc, "rails_aligned"));
	s->full_quality = json_is_true(json_object_get(sc, "full_quality"));
	const json_t *fr = json_object_get(sc, "fragmentation");
	s->frag = fr != NULL;
	s->frag_milli = json_integer_value(json_object_get(fr, "delta_milli"));
	s->bestfit_milli = json_integer_value(json_object_get(fr, "bestfit_delta_milli"));
	s->bestfit_same = json_is_true(json_object_get(fr, "bestfit_same"));
	s->leaf_kept = (int)json_integer_value(json_object_get(sc, "leaf_kept"));
	if (!lease_score_set(c, l, s)) {
		lease_release_mem(l);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	return SL_OK;
}

/* ---- reservations ---- */

json_t *resv_to_json(const struct ctl_resv *r)
{
	return json_pack("{s:s, s:s, s:O, s:o, s:o, s:o}", "id", r->id, "tenant", r->tenant,
			 "nodes", r->nodes, "start", ctl_time_json(r->start_ns), "end",
			 ctl_time_json(r->end_ns), "created_at", ctl_time_json(r->created_ns));
}

enum sl_err resv_from_json(const json_t *o, struct ctl_resv *r, struct sl_diag *d)
{
	const char *id = json_string_value(json_object_get(o, "id"));
	const char *tenant = json_string_value(json_object_get(o, "tenant"));
	json_t *nodes = json_object_get(o, "nodes");
	memset(r, 0, sizeof(*r));
	if (!id || strlen(id) >= sizeof(r->id) || !tenant || strlen(tenant) > CTL_NAME_MAX ||
	    !json_is_array(nodes))
		return sl_diag_set(d, SL_EPARSE, "reservation record is malformed");
	snprintf(r->id, sizeof(r->id), "%s", id);
	snprintf(r->tenant, sizeof(r->tenant), "%s", tenant);
	r->nodes = json_incref(nodes);
	r->start_ns = time_field(o, "start");
	r->end_ns = time_field(o, "end");
	r->created_ns = time_field(o, "created_at");
	return SL_OK;
}

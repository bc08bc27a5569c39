/* agents.c - node agents at the controller (agents.h): the registrations,
 * their store rows, the node lifecycle and per-GPU service state. The HTTP
 * handlers and nodes joining the fleet are in agents_api.c.
 *
 * Records are keyed by node name, not fleet index: a fleet replacement
 * renumbers nodes, and a registration outlives it. A record is never removed
 * (like tokens and leases, it is history).
 *
 * Lifecycle: each record has one timer base, seen_ns (its last report, or the
 * controller's start: after a restart every registered node gets a fresh
 * grace, so leases never fail just because the controller was down). Past
 * --unreachable-after the node takes no new work; past --down-after its
 * leases fail (or move, when they asked for replacement) and their billing
 * ends at the node's last report. Instead of scanning every node on every
 * turn, the earliest due check is kept (next_ns): a report only pushes a
 * node's deadlines later, so the kept one is never late, at worst early.
 *
 * last_heartbeat is written to the store at most once a minute per node (and
 * on every change of health), so a large fleet's heartbeats do not rewrite
 * rows; after a restart it is at most that stale, which only matters for a
 * node that died while the controller was down. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "agents_int.h"
#include "audit_log.h"
#include "billing.h"
#include "buf.h"
#include "json_shape.h"
#include "log.h"

#define AGENTS_MAX_RECS FLEET_MAX_NODES /* agent records: one per node name */

#define NS 1000000000LL

/* ---- records ---- */

struct agent_rec *agents_rec(const struct ctl *c, const char *name)
{
	const struct ctl_agents *a = c->agents;
	int i = a && name ? strmap_get(a->by_name, name, -1) : -1;
	return i >= 0 && i < a->n ? a->recs[i] : NULL;
}

/* The registration of fleet node idx; NULL when no agent registered it. */
static struct agent_rec *node_rec(const struct ctl *c, int node)
{
	struct agent_rec *r =
		node >= 0 && node < c->fleet->nnodes ? agents_rec(c, c->fleet->nodes[node].name) : NULL;
	return r && r->registered_ns ? r : NULL;
}

char agents_empty[1];

static void rec_free(struct agent_rec *r)
{
	if (!r)
		return;
	char **texts[] = {&r->addr, &r->boot_id, &r->version, &r->host_tenant, &r->reason};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		agents_text_set(texts[i], NULL, 1);
	agents_disc_free(&r->disc);
	json_decref(r->labels);
	free(r->gpu);
	sl_ctext_drop(r->gpus_shape);
	free(r->gpus_nums);
	free(r->figs);
	free(r->xids);
	json_decref(r->events);
	free(r);
}

void agents_disc_free(struct agent_disc *d)
{
	free(d->z);
	sl_ctext_drop(d->dict);
	memset(d, 0, sizeof(*d));
}

void agents_disc_put_back(struct agent_rec *r, struct agent_disc *old)
{
	agents_disc_free(&r->disc);
	r->disc = *old;
	memset(old, 0, sizeof(*old));
}

/* Deflates text (len bytes) against dict (NULL: none) into z (cap bytes);
 * the bytes it took, 0 when it failed. */
static uLong deflate_with(const char *text, size_t len, const char *dict, unsigned char *z,
			  uLong cap)
{
	z_stream s;
	memset(&s, 0, sizeof(s));
	if (deflateInit(&s, Z_DEFAULT_COMPRESSION) != Z_OK)
		return 0;
	uLong n = 0;
	if (!dict || deflateSetDictionary(&s, (const Bytef *)dict, (uInt)strlen(dict)) == Z_OK) {
		s.next_in = (Bytef *)(uintptr_t)text;
		s.avail_in = (uInt)len;
		s.next_out = z;
		s.avail_out = (uInt)cap;
		if (deflate(&s, Z_FINISH) == Z_STREAM_END)
			n = s.total_out;
	}
	deflateEnd(&s);
	return n;
}

/* Deflates text into *out: against the kept discovery that makes it
 * smallest (a registration is rare; each try takes ~50 µs), and keeps text
 * as a dictionary for the next nodes when none of them halved it (a new
 * kind of node). false out of memory. */
static bool disc_deflate(struct ctl_agents *a, const char *text, size_t len, struct agent_disc *out)
{
	uLong cap = compressBound((uLong)len);
	unsigned char *z = malloc(cap), *best = malloc(cap);
	uLong zlen = 0, plain = 0;
	int pick = -1;
	for (int i = -1; z && best && i < AGENT_DICTS; i++) {
		if (i >= 0 && !a->dicts[i])
			continue;
		uLong n = deflate_with(text, len, i < 0 ? NULL : a->dicts[i], z, cap);
		if (i < 0)
			plain = n;
		if (n && (!zlen || n < zlen)) {
			unsigned char *t = best;
			best = z;
			z = t;
			zlen = n;
			pick = i;
		}
	}
	free(z);
	if (!zlen) {
		free(best);
		return false;
	}
	if (zlen * 2 > plain) {
		char *t = sl_ctext_dup(text);
		if (t) {
			sl_ctext_drop(a->dicts[a->next_dict]);
			a->dicts[a->next_dict] = t;
			a->next_dict = (a->next_dict + 1) % AGENT_DICTS;
		}
	}
	unsigned char *fit = realloc(best, zlen); /* compressBound is generous */
	out->z = fit ? fit : best;
	out->zlen = (uint32_t)zlen;
	out->len = (uint32_t)len;
	out->dict = pick >= 0 ? sl_ctext_ref(a->dicts[pick]) : NULL;
	return true;
}

bool agents_set_discovery(struct ctl_agents *a, struct agent_rec *r, const json_t *d,
			  struct agent_disc *old)
{
	char *text = d ? json_dumps(d, JSON_COMPACT) : NULL;
	size_t len = text ? strlen(text) : 0;
	struct agent_disc n;
	memset(&n, 0, sizeof(n));
	if (d && (!text || len >= UINT32_MAX / 2 || !disc_deflate(a, text, len, &n))) {
		free(text);
		return false;
	}
	free(text);
	snprintf(n.driver, sizeof(n.driver), "%s",
		 json_string_value(json_object_get(d, "driver")) ?: "");
	const json_t *gs = json_object_get(d, "gpus");
	for (int g = 0; g < TOPO_MAX_GPUS; g++) {
		const json_t *x = json_object_get(json_array_get(gs, (size_t)g), "nvlinks");
		json_int_t v = json_is_integer(x) ? json_integer_value(x) : -1;
		n.nvlinks[g] = (int8_t)(v < 0 || v > INT8_MAX ? -1 : v);
	}
	if (old)
		*old = r->disc;
	else
		agents_disc_free(&r->disc);
	r->disc = n;
	return true;
}

json_t *agents_discovery_json(const struct agent_rec *r)
{
	const struct agent_disc *d = &r->disc;
	char *text = d->z ? malloc((size_t)d->len + 1) : NULL;
	json_t *o = NULL;
	z_stream s;
	memset(&s, 0, sizeof(s));
	if (text && inflateInit(&s) == Z_OK) {
		s.next_in = d->z;
		s.avail_in = d->zlen;
		s.next_out = (Bytef *)text;
		s.avail_out = d->len;
		int rc = inflate(&s, Z_FINISH);
		if (rc == Z_NEED_DICT && d->dict &&
		    inflateSetDictionary(&s, (const Bytef *)d->dict, (uInt)strlen(d->dict)) == Z_OK)
			rc = inflate(&s, Z_FINISH);
		if (rc == Z_STREAM_END && s.total_out == d->len)
			o = json_loadb(text, d->len, 0, NULL);
		inflateEnd(&s);
	}
	if (!o && d->z)
		sl_log_error("a node's kept discovery cannot be read", "node=%s", r->name);
	free(text);
	return o;
}

bool agents_gpus_reset(struct agent_rec *r, int n)
{
	free(r->gpu);
	r->gpu = NULL; /* every GPU fresh (agents_gpu) */
	r->ngpus = n;
	return true;
}

const struct gpu_health *agents_gpu(const struct agent_rec *r, int g)
{
	static struct gpu_health fresh; /* zero: what gpu_health_init makes */
	return r->gpu ? &r->gpu[g] : &fresh;
}

struct gpu_health *agents_gpu_w(struct agent_rec *r, int g)
{
	if (!r->gpu) {
		struct gpu_health *v = calloc((size_t)r->ngpus, sizeof(*v));
		if (!v) {
			sl_log_error("out of memory keeping GPU health", "node=%s", r->name);
			return NULL;
		}
		for (int i = 0; i < r->ngpus; i++)
			gpu_health_init(&v[i]);
		r->gpu = v;
	}
	return &r->gpu[g];
}

json_t *agents_events(const struct agent_rec *r)
{
	return r->events ? json_incref(r->events) : json_array();
}

void agents_xid_event(struct agent_rec *r, int g, json_t *ev)
{
	if (!r->xids)
		r->xids = calloc(TOPO_MAX_GPUS, sizeof(*r->xids));
	if (r->xids)
		r->xids[g]++;
	if (!r->events)
		r->events = json_array();
	if (json_array_size(r->events) >= AGENT_MAX_EVENTS)
		json_array_remove(r->events, 0);
	if (!r->xids || !r->events || json_array_append_new(r->events, ev))
		sl_log_error("out of memory keeping an XID event", "node=%s gpu=%d", r->name, g);
	else
		ev = NULL;
	json_decref(ev);
}

/* Whether g is what gpu_health_init makes (then it need not be kept). */
static bool health_fresh(const struct gpu_health *g)
{
	for (int i = 0; i < GPU_XID_REPEAT; i++)
		if (g->recent[i])
			return false;
	return g->state == GPU_OK && !g->last_code && !g->last_ns && !g->since_ns && !g->reason[0];
}

const char *const agent_fig_keys[AGF_N] = {"temp_c", "power_w", "ecc_sbe", "ecc_dbe", "nvlink_up"};

/* A holder of shape s: r's own when s is it, else one that a node
 * reported lately, else a new one kept for the next nodes; NULL out of
 * memory. */
static char *shape_share(struct ctl_agents *a, const struct agent_rec *r, const char *s)
{
	if (r->gpus_shape && strcmp(r->gpus_shape, s) == 0)
		return sl_ctext_ref(r->gpus_shape);
	for (int i = 0; i < AGENT_SHAPES; i++)
		if (a->shapes[i] && strcmp(a->shapes[i], s) == 0)
			return sl_ctext_ref(a->shapes[i]);
	char *t = sl_ctext_dup(s);
	if (t) {
		sl_ctext_drop(a->shapes[a->next_shape]);
		a->shapes[a->next_shape] = sl_ctext_ref(t);
		a->next_shape = (a->next_shape + 1) % AGENT_SHAPES;
	}
	return t;
}

/* r's last "gpus" as a tree (NULL: none, or out of memory). */
static json_t *gpus_json(const struct agent_rec *r)
{
	struct sl_buf b = SL_BUF_INIT(AGENT_GPUS_TEXT_MAX);
	json_t *o = NULL;
	if (r->gpus_shape &&
	    json_shape_join(r->gpus_shape, r->gpus_nums, r->gpus_nlen, &b) == SL_OK)
		o = json_loadb(sl_buf_str(&b), b.len, 0, NULL);
	else if (r->gpus_shape)
		sl_log_error("a node's last GPU report cannot be read", "node=%s", r->name);
	sl_buf_release(&b);
	return o;
}

bool agents_keep_gpus(struct ctl_agents *a, struct agent_rec *r, const json_t *gpus)
{
	size_t n = json_array_size(gpus);
	char *text = json_dumps(gpus, JSON_COMPACT);
	struct sl_buf sb = SL_BUF_INIT(AGENT_GPUS_TEXT_MAX), nb = SL_BUF_INIT(AGENT_GPUS_TEXT_MAX);
	if (text) /* room for it all at once, not grown by steps every heartbeat */
		sl_buf_grow(&sb, strlen(text));
	bool split = text && json_shape_split(text, &sb, &nb) == SL_OK && nb.len < UINT32_MAX;
	free(text);
	size_t nlen = nb.len;
	char *shape = split ? shape_share(a, r, sl_buf_str(&sb)) : NULL;
	unsigned char *nums = shape && nlen ? malloc(nlen) : NULL;
	struct agent_gpu_fig *figs = shape && n ? calloc(n, sizeof(*figs)) : NULL;
	sl_buf_release(&sb);
	if (!shape || (nlen && !nums) || (n && !figs)) {
		sl_buf_release(&nb);
		sl_ctext_drop(shape);
		free(nums);
		free(figs);
		return false;
	}
	if (nlen)
		memcpy(nums, nb.p, nlen);
	sl_buf_release(&nb);
	for (size_t i = 0; i < n; i++) {
		const json_t *gj = json_array_get(gpus, i), *x = json_object_get(gj, "index");
		/* checked: integers are 0..AGENT_MAX_METRIC, index a GPU of the node */
		if (json_is_integer(x)) {
			figs[i].index = (int32_t)json_integer_value(x);
			figs[i].has = (uint8_t)(figs[i].has | 1u << AGF_N);
		}
		for (int k = 0; k < AGF_N; k++)
			if (json_is_integer(x = json_object_get(gj, agent_fig_keys[k]))) {
				figs[i].fig[k] = (int32_t)json_integer_value(x);
				figs[i].has = (uint8_t)(figs[i].has | 1u << k);
			}
	}
	sl_ctext_drop(r->gpus_shape);
	free(r->gpus_nums);
	free(r->figs);
	r->gpus_shape = shape;
	r->gpus_nums = nums;
	r->gpus_nlen = (uint32_t)nlen;
	r->figs = figs;
	r->nfigs = (int)n;
	return true;
}

struct agent_rec *agents_rec_add(struct ctl *c, const char *name)
{
	struct ctl_agents *a = c->agents;
	if (sl_grow(&a->recs, &a->cap, a->n + 1, AGENTS_MAX_RECS))
		return NULL;
	struct agent_rec *r = calloc(1, sizeof(*r));
	if (r)
		r->addr = r->boot_id = r->version = r->host_tenant = r->reason = agents_empty;
	if (!r || strmap_add(a->by_name, name, a->n)) {
		rec_free(r);
		return NULL;
	}
	snprintf(r->name, sizeof(r->name), "%s", name);
	a->recs[a->n++] = r;
	return r;
}

static json_t *health_json(const struct gpu_health *g, int idx)
{
	json_t *recent = json_array();
	for (int i = 0; i < GPU_XID_REPEAT && g->recent[i]; i++)
		json_array_append_new(recent, ctl_time_json(g->recent[i]));
	json_t *o = json_pack("{s:i, s:s, s:s, s:o, s:o}", "index", idx, "state",
			      gpu_hstate_name(g->state), "reason", g->reason, "since",
			      ctl_time_json(g->since_ns), "recent_xids", recent);
	if (o && g->last_code)
		json_object_set_new(o, "last_xid", json_pack("{s:i, s:o}", "code", g->last_code, "at",
							     ctl_time_json(g->last_ns)));
	return o;
}

void agents_rec_save(struct ctl *c, struct agent_rec *r)
{
	json_t *gh = json_array();
	for (int g = 0; gh && g < r->ngpus; g++)
		json_array_append_new(gh, health_json(agents_gpu(r, g), g));
	json_t *disc = agents_discovery_json(r);
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "node", r->name,
			      "addr", r->addr, "boot_id", r->boot_id, "agent_version", r->version,
			      "discovery", disc ? disc : json_null(), "registered_at",
			      ctl_time_json(r->registered_ns), "last_heartbeat",
			      ctl_time_json(r->last_hb_ns), "gpu_health", gh, "gpu_events",
			      agents_events(r));
	if (o && r->labels)
		json_object_set(o, "labels", r->labels);
	if (o && r->host_tenant[0])
		json_object_set_new(o, "host_processes", json_string(r->host_tenant));
	if (o && r->lease_net[0])
		json_object_set_new(o, "lease_net", json_string(r->lease_net));
	r->saved_hb_ns = r->last_hb_ns;
	ctl_put(c, STORE_AGENTS, r->name, NULL, o);
}

static int64_t time_of(const json_t *v)
{
	int64_t ns = 0;
	const char *s = json_string_value(v);
	return s && ctl_time_parse(s, &ns) ? ns : 0;
}

static void health_from_json(const json_t *o, struct gpu_health *g)
{
	int st = gpu_hstate_parse(json_string_value(json_object_get(o, "state")));
	g->state = st < 0 ? GPU_OK : (enum gpu_hstate)st;
	snprintf(g->reason, sizeof(g->reason), "%s",
		 json_string_value(json_object_get(o, "reason")) ?: "");
	g->since_ns = time_of(json_object_get(o, "since"));
	const json_t *recent = json_object_get(o, "recent_xids");
	for (size_t i = 0; i < json_array_size(recent) && i < GPU_XID_REPEAT; i++)
		g->recent[i] = time_of(json_array_get(recent, i));
	const json_t *last = json_object_get(o, "last_xid");
	g->last_code = (int)json_integer_value(json_object_get(last, "code"));
	g->last_ns = time_of(json_object_get(last, "at"));
}

struct load_arg {
	struct ctl *c;
	struct sl_diag *d;
};

static enum sl_err load_rec(void *arg, const char *id, const char *tenant, const char *json)
{
	struct load_arg *la = arg;
	struct ctl *c = la->c;
	(void)tenant;
	json_t *o = json_loads(json, 0, NULL);
	if (!json_is_object(o)) {
		json_decref(o);
		return sl_diag_set(la->d, SL_EPARSE, "stored agent record %.64s is not a JSON object", id);
	}
	struct agent_rec *r = agents_rec(c, id);
	if (!r && !(r = agents_rec_add(c, id))) {
		json_decref(o);
		return sl_diag_set(la->d, SL_ENOMEM, "out of memory");
	}
	agents_text_set(&r->addr, json_string_value(json_object_get(o, "addr")), AGENT_ADDR_MAX + 1);
	agents_text_set(&r->boot_id, json_string_value(json_object_get(o, "boot_id")),
			AGENT_BOOT_ID_MAX + 1);
	agents_text_set(&r->version, json_string_value(json_object_get(o, "agent_version")),
			AGENT_VERSION_MAX + 1);
	agents_text_set(&r->host_tenant, json_string_value(json_object_get(o, "host_processes")),
			CTL_NAME_MAX + 1);
	snprintf(r->lease_net, sizeof(r->lease_net), "%s",
		 json_string_value(json_object_get(o, "lease_net")) ?: "");
	json_t *disc = json_object_get(o, "discovery");
	if (!agents_set_discovery(c->agents, r, json_is_object(disc) ? disc : NULL, NULL)) {
		json_decref(o);
		return sl_diag_set(la->d, SL_ENOMEM, "out of memory");
	}
	json_t *labels = json_object_get(o, "labels");
	r->labels = json_is_object(labels) ? json_incref(labels) : NULL;
	r->registered_ns = time_of(json_object_get(o, "registered_at"));
	r->last_hb_ns = r->saved_hb_ns = time_of(json_object_get(o, "last_heartbeat"));
	const json_t *gh = json_object_get(o, "gpu_health");
	if (!agents_gpus_reset(r, (int)json_array_size(gh) > TOPO_MAX_GPUS ? TOPO_MAX_GPUS
									    : (int)json_array_size(gh))) {
		json_decref(o);
		return sl_diag_set(la->d, SL_ENOMEM, "out of memory");
	}
	for (int g = 0; g < r->ngpus; g++) {
		struct gpu_health h, *w;
		gpu_health_init(&h);
		health_from_json(json_array_get(gh, (size_t)g), &h);
		if (health_fresh(&h))
			continue;
		if (!(w = agents_gpu_w(r, g))) {
			json_decref(o);
			return sl_diag_set(la->d, SL_ENOMEM, "out of memory");
		}
		*w = h;
	}
	json_t *ev = json_object_get(o, "gpu_events");
	json_decref(r->events);
	r->events = json_array_size(ev) ? json_incref(ev) : NULL;
	json_decref(o);
	return SL_OK;
}

/* ---- start, stop ---- */

static int64_t opt_s(int64_t v, int64_t def)
{
	return v > 0 ? v : def;
}

/* Creates c->agents and reads the registrations, once: ctl_fleet_replace
 * needs the joined nodes while the stored fleet loads, before agents_start. */
enum sl_err agents_load(struct ctl *c, struct sl_diag *d)
{
	if (c->agents)
		return SL_OK;
	struct ctl_agents *a = calloc(1, sizeof(*a));
	if (!a || strmap_new(&a->by_name)) {
		free(a);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	a->start_ns = c->now_ns;
	a->failing_node = -1;
	a->unreach_ns = AGENTS_UNREACHABLE_DEFAULT_S * NS;
	a->down_ns = AGENTS_DOWN_DEFAULT_S * NS;
	a->hb_s = AGENTS_HEARTBEAT_DEFAULT_S;
	c->agents = a;
	struct load_arg la = {c, d};
	enum sl_err e = store_scan(c->store, STORE_AGENTS, load_rec, &la, d);
	for (int i = 0; i < a->n; i++) {
		a->recs[i]->seen_ns = c->now_ns; /* a fresh grace after a restart */
		a->recs[i]->life = AL_READY;
	}
	return e;
}

enum sl_err agents_start(struct ctl *c, const struct agents_opts *o, struct sl_diag *d)
{
	enum sl_err e = agents_load(c, d);
	if (e)
		return e;
	struct ctl_agents *a = c->agents;
	a->hb_s = opt_s(o->heartbeat_s, AGENTS_HEARTBEAT_DEFAULT_S);
	a->unreach_ns = opt_s(o->unreachable_after_s, AGENTS_UNREACHABLE_DEFAULT_S) * NS;
	a->down_ns = opt_s(o->down_after_s, AGENTS_DOWN_DEFAULT_S) * NS;
	/* A short --down-after alone brings the unreachable mark down with it;
	 * both given, main() has checked their order. */
	if (a->down_ns < a->unreach_ns && o->unreachable_after_s <= 0)
		a->unreach_ns = a->down_ns;
	if (a->down_ns < a->unreach_ns)
		a->down_ns = a->unreach_ns;
	a->start_ns = c->now_ns;
	for (int i = 0; i < a->n; i++)
		a->recs[i]->seen_ns = c->now_ns;
	if (a->n)
		agents_wake(c, c->now_ns + a->unreach_ns);
	ctl_apply_usable(c);
	sl_log_info("agents", "registered=%d heartbeat_s=%lld unreachable_after_s=%lld down_after_s=%lld",
		    a->n, (long long)a->hb_s, (long long)(a->unreach_ns / NS),
		    (long long)(a->down_ns / NS));
	return SL_OK;
}

void agents_free(struct ctl *c)
{
	struct ctl_agents *a = c->agents;
	if (!a)
		return;
	for (int i = 0; i < a->n; i++)
		rec_free(a->recs[i]);
	for (int i = 0; i < AGENT_SHAPES; i++)
		sl_ctext_drop(a->shapes[i]);
	for (int i = 0; i < AGENT_DICTS; i++)
		sl_ctext_drop(a->dicts[i]);
	free(a->recs);
	strmap_free(a->by_name);
	free(a);
	c->agents = NULL;
}

/* ---- queries ---- */

bool agents_node_addr(const struct ctl *c, int node, char *buf, size_t n)
{
	const struct agent_rec *r = node_rec(c, node);
	if (!r || !r->addr[0])
		return false;
	snprintf(buf, n, "%s", r->addr);
	return true;
}

const char *agents_node_lease_net(const struct ctl *c, int node)
{
	const struct agent_rec *r = node_rec(c, node);
	return r && r->lease_net[0] ? r->lease_net : NULL;
}

const char *agents_node_driver(const struct ctl *c, int node)
{
	const struct agent_rec *r = node_rec(c, node);
	return r ? r->disc.driver : "";
}

const char *agents_node_host_tenant(const struct ctl *c, int node)
{
	const struct agent_rec *r = node_rec(c, node);
	return r && r->host_tenant[0] ? r->host_tenant : NULL;
}

bool agents_node_ready(const struct ctl *c, int node)
{
	const struct agent_rec *r = node_rec(c, node);
	return r ? r->life == AL_READY : c->simulate;
}

static const char *const life_names[] = {"ready", "unreachable", "down"};

const char *agents_node_state(const struct ctl *c, int node, const char **reason)
{
	const struct agent_rec *r = node_rec(c, node);
	if (!r)
		return NULL;
	*reason = r->reason;
	return life_names[r->life];
}

void agents_apply_gpus_rec(struct ctl *c, struct agent_rec *r, int idx)
{
	int n = fleet_node_type(c->fleet, idx)->ngpus;
	size_t off = 0;
	for (int g = 0; g < n; g++)
		placer_set_gpu_usable(c->placer, idx, g, !r || g >= r->ngpus || agents_gpu(r, g)->state == GPU_OK);
	if (!r || r->life != AL_READY)
		return;
	/* A ready node's reason names the GPUs out of service (suanli nodes). */
	char why[CTL_REASON_MAX];
	why[0] = 0;
	for (int g = 0; g < r->ngpus && g < n && off < sizeof(why); g++)
		if (agents_gpu(r, g)->state != GPU_OK)
			off += (size_t)snprintf(why + off, sizeof(why) - off, "%sGPU %d %s: %.80s",
						off ? "; " : "", g, gpu_hstate_name(r->gpu[g].state),
						r->gpu[g].reason);
	agents_text_set(&r->reason, why, sizeof(why));
}

void agents_apply_gpus(struct ctl *c, int node)
{
	struct agent_rec *r = node_rec(c, node);
	if (r) /* nodes without an agent keep the placer's default: all usable */
		agents_apply_gpus_rec(c, r, node);
}

int64_t agents_lease_end_ns(const struct ctl *c, const struct ctl_lease *l, int64_t at_ns)
{
	const struct ctl_agents *a = c->agents;
	if (!a || a->failing_node < 0)
		return at_ns;
	for (int k = 0; k < l->pl.npicks; k++)
		if (l->pl.picks[k].node == a->failing_node) {
			int64_t t = a->failing_at_ns < at_ns ? a->failing_at_ns : at_ns;
			return t > l->started_ns ? t : l->started_ns;
		}
	return at_ns;
}

json_t *agents_node_json(const struct ctl *c, int node)
{
	const struct agent_rec *r = node_rec(c, node);
	if (!r)
		return NULL;
	json_t *gh = json_array();
	json_t *gpus = gpus_json(r);
	for (int g = 0; gh && g < r->ngpus; g++) {
		json_t *h = health_json(agents_gpu(r, g), g);
		json_t *m = NULL;
		for (size_t i = 0; i < json_array_size(gpus); i++)
			if (json_integer_value(json_object_get(json_array_get(gpus, i), "index")) == g)
				m = json_array_get(gpus, i);
		if (h && m)
			json_object_set(h, "last_report", m);
		json_array_append_new(gh, h);
	}
	json_decref(gpus);
	json_t *agent = json_pack("{s:s, s:s, s:s, s:o, s:o, s:s, s:s}", "addr", r->addr,
				  "agent_version", r->version, "boot_id", r->boot_id,
				  "registered_at", ctl_time_json(r->registered_ns), "last_heartbeat",
				  ctl_time_json(r->last_hb_ns), "state", life_names[r->life], "reason",
				  r->reason);
	if (agent && r->labels)
		json_object_set(agent, "labels", r->labels);
	if (agent)
		json_object_set_new(agent, "host_processes",
				    r->host_tenant[0] ? json_string(r->host_tenant) : json_null());
	if (agent)
		json_object_set_new(agent, "lease_net",
				    r->lease_net[0] ? json_string(r->lease_net) : json_null());
	return json_pack("{s:o, s:o, s:o}", "agent", agent ? agent : json_null(), "gpu_health", gh,
			 "gpu_events", agents_events(r));
}

/* ---- lifecycle ---- */

void agents_wake(struct ctl *c, int64_t at)
{
	struct ctl_agents *a = c->agents;
	if (a && at > 0 && (!a->next_ns || at < a->next_ns))
		a->next_ns = at;
}

/* The node's service state on the placer, as ctl_apply_usable sets it. */
void agents_apply_node(struct ctl *c, int idx)
{
	placer_set_node_usable(c->placer, idx,
			       agents_node_ready(c, idx) &&
				       !json_object_get(c->drains, c->fleet->nodes[idx].name));
	agents_apply_gpus(c, idx);
}

void agents_reported(struct ctl *c, struct agent_rec *r)
{
	struct ctl_agents *a = c->agents;
	enum agent_life was = r->life;
	r->last_hb_ns = r->seen_ns = c->now_ns;
	agents_wake(c, c->now_ns + a->unreach_ns);
	if (was == AL_READY)
		return;
	r->life = AL_READY;
	agents_text_set(&r->reason, NULL, 1);
	int idx = fleet_find_node(c->fleet, r->name);
	sl_log_info("node restored", "node=%s was=%s", r->name, life_names[was]);
	audit_log_system(c, "node.restored", "", r->name, life_names[was]);
	if (idx < 0)
		return;
	agents_apply_node(c, idx);
	if (c->sched && placer_node_usable(c->placer, idx))
		ctl_sched_check(c, sched_capacity_changed(c->sched, c->now_ns), "sched_capacity_changed");
	agents_rec_save(c, r);
}

/* Lease l on failed node idx asked for replacement GPUs: true when it got
 * them (a new epoch), false when it must fail. */
static bool replace_lease(struct ctl *c, struct ctl_lease *l, int idx, int64_t last_ns)
{
	struct placement np;
	struct sl_diag d;
	char why[CTL_REASON_MAX + 64];
	sl_diag_clear(&d);
	placement_init(&np);
	enum sl_err e = sched_replace_node(c->sched, l->seq, idx, c->now_ns, &np, &d);
	if (e == SL_ENOMEM)
		c->fatal = true;
	if (e) {
		sl_log_warn("lease not replaced", "lease=%s node=%s error=%s", l->id,
			    c->fleet->nodes[idx].name, d.msg);
		lease_set_end_reason(l, "node down; no replacement fits");
		placement_release(&np);
		return false;
	}
	int lost = 0; /* whole GPUs on the failed node: not billed while it was silent */
	for (int k = 0; k < l->pl.npicks; k++)
		if (l->pl.picks[k].node == idx && l->pl.picks[k].gpu < 0)
			lost += __builtin_popcount(l->pl.picks[k].gpus);
	/* The new picks (shared with the scheduler's record); the lease keeps
	 * its score. */
	if (place_picks_copy_like(&l->pl, &np, sched_lease_picks(c->sched, l->seq)))
		c->fatal = true; /* out of memory: the daemon stops */
	placement_release(&np);
	l->epoch++;
	size_t off = (size_t)snprintf(why, sizeof(why), "node %s went down: replaced on",
				      c->fleet->nodes[idx].name);
	for (int k = 0; k < l->pl.npicks && off < sizeof(why); k++)
		off += (size_t)snprintf(why + off, sizeof(why) - off, "%s %s", k ? "," : "",
					c->fleet->nodes[l->pl.picks[k].node].name);
	if (off < sizeof(why))
		snprintf(why + off, sizeof(why) - off, " (epoch %lld)", (long long)l->epoch);
	ctl_lease_set_state(c, l, l->state, why);
	billing_lease_outage(c, l, last_ns, lost);
	ctl_lease_save(c, l);
	audit_log_system(c, "lease.replace", l->tenant, l->id, "ok");
	return true;
}

static bool uses_node(const struct ctl_lease *l, int idx)
{
	if (!l || (l->state != LS_ACTIVE && l->state != LS_PREEMPTING))
		return false;
	for (int k = 0; k < l->pl.npicks; k++)
		if (l->pl.picks[k].node == idx)
			return true;
	return false;
}

/* Node idx is down: leases that asked move, the rest fail with billing
 * ended at the node's last report. */
static void node_down(struct ctl *c, struct agent_rec *r, int idx)
{
	struct ctl_agents *a = c->agents;
	placer_set_node_usable(c->placer, idx, false);
	if (!c->sched)
		return;
	int64_t last = r->last_hb_ns ? r->last_hb_ns : a->start_ns;
	for (int i = 0; i < c->lt.nleases && !c->fatal; i++) {
		struct ctl_lease *l = c->lt.leases[i];
		if (!uses_node(l, idx))
			continue;
		if (l->req->replace_on_failure && l->state == LS_ACTIVE && replace_lease(c, l, idx, last))
			continue;
		if (!l->end_reason)
			lease_set_end_reason(l, "node %.40s is down", r->name);
	}
	a->failing_node = idx;
	a->failing_at_ns = last;
	ctl_sched_check(c, sched_node_failed(c->sched, idx, c->now_ns), "sched_node_failed");
	a->failing_node = -1;
}

static void transition(struct ctl *c, struct agent_rec *r, int idx, enum agent_life to)
{
	char when[32], why[CTL_REASON_MAX];
	ctl_time_fmt(r->last_hb_ns ? r->last_hb_ns : c->agents->start_ns, when);
	snprintf(why, sizeof(why), "%s since %s",
		 r->last_hb_ns ? "no heartbeat" : "no report since the controller started", when);
	agents_text_set(&r->reason, why, sizeof(why));
	r->life = to;
	sl_log_warn(to == AL_DOWN ? "node down" : "node unreachable", "node=%s reason=%s", r->name,
		    r->reason);
	audit_log_system(c, to == AL_DOWN ? "node.down" : "node.unreachable", "", r->name,
			 r->reason);
	if (to == AL_DOWN)
		node_down(c, r, idx);
	else
		agents_apply_node(c, idx);
}

void agents_tick(struct ctl *c)
{
	struct ctl_agents *a = c->agents;
	if (!a || !a->next_ns)
		return;
	if (c->now_ns >= a->next_ns) {
		a->next_ns = 0;
		for (int i = 0; i < a->n && !c->fatal; i++) {
			struct agent_rec *r = a->recs[i];
			int idx = fleet_find_node(c->fleet, r->name);
			if (idx < 0)
				continue;
			int64_t age = c->now_ns - r->seen_ns;
			enum agent_life want = age >= a->down_ns        ? AL_DOWN
					       : age >= a->unreach_ns ? AL_UNREACHABLE
								      : AL_READY;
			if (want > r->life)
				transition(c, r, idx, want);
			if (r->life == AL_READY)
				agents_wake(c, r->seen_ns + a->unreach_ns);
			else if (r->life == AL_UNREACHABLE)
				agents_wake(c, r->seen_ns + a->down_ns);
		}
	}
	if (a->next_ns && (!c->next_deadline || a->next_ns < c->next_deadline))
		c->next_deadline = a->next_ns;
}

void agents_node_resumed(struct ctl *c, int node)
{
	struct agent_rec *r = node_rec(c, node);
	bool changed = false;
	for (int g = 0; r && g < r->ngpus; g++)
		if (agents_gpu(r, g)->state != GPU_OK) { /* so r->gpu is kept */
			gpu_health_resume(&r->gpu[g], c->now_ns);
			changed = true;
		}
	if (!changed)
		return;
	audit_log_system(c, "gpu.resume", "", r->name, "ok");
	agents_apply_gpus_rec(c, r, node);
	agents_rec_save(c, r);
	if (c->sched)
		ctl_sched_check(c, sched_capacity_changed(c->sched, c->now_ns), "sched_capacity_changed");
}

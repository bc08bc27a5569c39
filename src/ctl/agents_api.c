/* agents_api.c - the agent routes (docs/agent-protocol.md): join tokens,
 * register, heartbeat, and nodes that join the fleet by their labels.
 *
 * Every body is checked completely before anything changes, so a bad one
 * answers 400 naming the field and leaves no trace but its audit entry.
 *
 * Joining: the fleet file stays the operator's text. A node that joins is a
 * registration with labels (site, leaf, type) in STORE_AGENTS, and
 * agents_fleet_extend adds such nodes to every fleet ctl_fleet_replace
 * builds (at start and on PUT /v1/fleet), so they survive restarts and
 * fleet edits while their site and leaf exist, and a fleet edit that would
 * drop one with running leases is refused like any other. A fleet file that
 * names the node itself takes over. The join itself appends the node to the
 * running fleet, placer and scheduler (join_node), where agents_fleet_extend
 * would put it, so a join storm does not rebuild the fleet once per node. */
#include <ctype.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents_int.h"
#include "tls.h"
#include "audit_log.h"
#include "discovery.h"
#include "instances.h"
#include "jobs.h"
#include "log.h"

#define CUSTOM_PREFIX "discovered-"
#define DEFAULT_CPUS_PER_GPU 8
#define DEFAULT_MEM_GIB_PER_GPU 64

/* ---- credentials ---- */

void h_agent_token_create(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {{"node", FT_STRING, false},
						  {"user", FT_STRING, false}};
	struct ctl *c = call->ctl;
	char msg[SL_DIAG_MSG];
	bool bad = false;
	if (!ctl_check_fields(call, call->body, fields, 2, "an agent token request"))
		return;
	const char *node = ctl_str_field(call, call->body, "node", CTL_NAME_MAX, &bad);
	const char *user = bad ? NULL : ctl_str_field(call, call->body, "user", CTL_USER_MAX, &bad);
	if (bad)
		return;
	if (node && strcmp(node, "*") && !fleet_name_valid(node)) {
		snprintf(msg, sizeof(msg), "field 'node': '%.64s' is not a node name", node);
		ctl_answer_error(call, SL_EINVAL, msg,
				 "names are 1..63 characters of A-Z a-z 0-9 . _ -, or \"*\" for any node");
		return;
	}
	struct ctl_token proto = {.role = CTL_ROLE_AGENT}, t;
	char secret[64];
	snprintf(proto.node, sizeof(proto.node), "%s", node && strcmp(node, "*") ? node : "");
	snprintf(proto.user, sizeof(proto.user), "%s", user ? user : "");
	enum sl_err e = ctl_token_mint(c, &proto, &t, secret);
	if (e) {
		ctl_answer_error(call, e, NULL, NULL);
		return;
	}
	sl_log_info("join token created", "token=%s node=%s by=%s", t.id, t.node[0] ? t.node : "*",
		    call->tok->id);
	json_t *o = token_to_json(&t, false);
	json_object_set_new(o, "token", json_string(secret));
	sodium_memzero(secret, sizeof(secret));
	/* Which CA the agent must verify this controller against (public). */
	char sha[65], *pem = NULL;
	if (ctl_tls_present(c->data_dir) && ctl_tls_ca_sha256(c->data_dir, sha, NULL) == SL_OK &&
	    ctl_tls_ca_pem(c->data_dir, &pem, NULL) == SL_OK) {
		json_object_set_new(o, "ca_sha256", json_string(sha));
		json_object_set_new(o, "ca_pem", json_string(pem));
	}
	free(pem);
	ctl_answer_json(call, 201, o);
}

int agents_call_node(struct ctl_call *call)
{
	const struct ctl_token *t = call->tok;
	char msg[SL_DIAG_MSG];
	if (!t || t->role != CTL_ROLE_AGENT || !t->node_cred || !t->node[0]) {
		ctl_answer_error(call, SL_EFORBIDDEN, "this token is not a node credential",
				 "register with the join token (POST /v1/agent/register) and use the "
				 "credential it returns");
		return -1;
	}
	int idx = fleet_find_node(call->ctl->fleet, t->node);
	if (idx < 0) {
		snprintf(msg, sizeof(msg), "the credential's node '%s' is not in the fleet", t->node);
		ctl_answer_error(call, SL_EFORBIDDEN, msg, NULL);
		return -1;
	}
	return idx;
}

/* Revokes node's older credentials and mints a new one (secret: 64 bytes). */
static bool credential_new(struct ctl *c, const char *node, char secret[64])
{
	for (int i = 0; i < c->auth.ntokens; i++) {
		struct ctl_token *o = &c->auth.tokens[i];
		if (o->role == CTL_ROLE_AGENT && o->node_cred && !o->revoked_ns && !strcmp(o->node, node)) {
			o->revoked_ns = c->now_ns;
			ctl_put(c, STORE_TOKENS, o->id, NULL, token_to_json(o, true));
		}
	}
	struct ctl_token proto = {.role = CTL_ROLE_AGENT, .node_cred = true}, t;
	snprintf(proto.node, sizeof(proto.node), "%s", node);
	return ctl_token_mint(c, &proto, &t, secret) == SL_OK;
}

/* ---- joining the fleet ---- */

static int find_leaf(const struct fleet *f, int site, const char *name)
{
	for (int i = 0; i < f->nleaves; i++)
		if (f->leaves[i].site == site && !strcmp(f->leaves[i].name, name))
			return i;
	return -1;
}

enum sl_err agents_join_type(const struct fleet *f, const char *node, const json_t *labels,
			     const json_t *discovery, struct node_type *out, bool *custom,
			     struct sl_diag *d)
{
	const char *tname = json_string_value(json_object_get(labels, "type"));
	*custom = false;
	if (tname && strncmp(tname, CUSTOM_PREFIX, strlen(CUSTOM_PREFIX))) {
		int ti = fleet_find_type(f, tname);
		if (ti < 0) {
			sl_diag_hint(d, "GET /v1/catalog lists the node types");
			return sl_diag_set(d, SL_EINVAL, "labels.type: no node type called '%.64s'", tname);
		}
		*out = f->types[ti];
		return SL_OK;
	}
	struct discovery *disc = malloc(sizeof(*disc));
	if (!disc)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	enum sl_err e = discovery_from_json(discovery, disc, d);
	if (e == SL_OK && !tname && discovery_match_builtin(disc, out) == SL_OK) {
		free(disc);
		return SL_OK;
	}
	if (e == SL_OK && !disc->type.gpu) {
		sl_diag_hint(d, "give labels.type, a node type of the fleet");
		e = sl_diag_set(d, SL_EINVAL, "the discovered GPUs are no catalog model");
	}
	if (e == SL_OK && strlen(CUSTOM_PREFIX) + strlen(node) > FLEET_NAME_MAX) {
		sl_diag_hint(d, "give labels.type, a node type of the fleet");
		e = sl_diag_set(d, SL_EINVAL, "node name too long for a discovered type");
	}
	if (e == SL_OK) {
		*out = disc->type;
		snprintf(out->name, sizeof(out->name), CUSTOM_PREFIX "%s", node);
		if (out->cpus <= 0)
			out->cpus = DEFAULT_CPUS_PER_GPU * out->ngpus;
		if (out->mem_gib <= 0)
			out->mem_gib = DEFAULT_MEM_GIB_PER_GPU * out->ngpus;
		*custom = true;
	}
	free(disc);
	return e;
}

/* Adds one joined node to f; SL_ENOTFOUND when its site or leaf is gone. */
static enum sl_err extend_one(struct fleet *f, const struct agent_rec *r, struct sl_diag *d)
{
	const char *site = json_string_value(json_object_get(r->labels, "site"));
	const char *leaf = json_string_value(json_object_get(r->labels, "leaf"));
	int si = site ? fleet_find_site(f, site) : -1;
	int li = si >= 0 && leaf ? find_leaf(f, si, leaf) : -1;
	if (li < 0)
		return sl_diag_set(d, SL_ENOTFOUND, "site %.64s or leaf %.64s is gone", site ? site : "?",
				   leaf ? leaf : "?");
	struct node_type *t = malloc(sizeof(*t));
	bool custom = false;
	if (!t)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	/* The discovery (kept deflated) is read only for a type it decides. */
	const char *tname = json_string_value(json_object_get(r->labels, "type"));
	json_t *disc = tname && strncmp(tname, CUSTOM_PREFIX, strlen(CUSTOM_PREFIX))
			       ? NULL
			       : agents_discovery_json(r);
	enum sl_err e = agents_join_type(f, r->name, r->labels, disc, t, &custom, d);
	json_decref(disc);
	int ti = e ? -1 : fleet_find_type(f, t->name);
	if (e == SL_OK && ti < 0)
		e = fleet_add_type(f, t, &ti, d);
	free(t);
	return e ? e : fleet_add_node(f, li, r->name, ti, NULL, d);
}

enum sl_err agents_fleet_extend(struct ctl *c, struct fleet *nf, struct sl_diag *d)
{
	enum sl_err e = agents_load(c, d);
	if (e)
		return e;
	for (int i = 0; i < c->agents->n; i++) {
		const struct agent_rec *r = c->agents->recs[i];
		struct sl_diag nd;
		sl_diag_clear(&nd);
		if (!r->labels || fleet_find_node(nf, r->name) >= 0)
			continue;
		e = extend_one(nf, r, &nd);
		if (e == SL_ENOMEM)
			return sl_diag_set(d, e, "out of memory");
		if (e)
			sl_log_warn("joined node left out of the fleet", "node=%s error=%s", r->name, nd.msg);
	}
	return SL_OK;
}

/* Rebuilds the fleet from the stored text (joined nodes come in through
 * agents_fleet_extend). */
static enum sl_err refleet(struct ctl *c, struct sl_diag *d)
{
	char *row = NULL;
	if (!c->fleet_id[0])
		return sl_diag_set(d, SL_ENOTFOUND, "no fleet is loaded");
	enum sl_err e = store_get(c->store, STORE_FLEETS, c->fleet_id, &row, d);
	if (e)
		return e;
	json_t *fo = json_loads(row, 0, NULL);
	free(row);
	const char *yaml = json_string_value(json_object_get(fo, "yaml"));
	e = yaml ? ctl_fleet_replace(c, yaml, strlen(yaml), "stored fleet", false, d)
		 : sl_diag_set(d, SL_EPARSE, "stored fleet %s has no text", c->fleet_id);
	json_decref(fo);
	return e;
}

/* Adds r's node (registered with labels, not in the fleet) to the running
 * fleet and placer in place when its type is one the fleet has, so a join
 * costs the same at 10,000 nodes as at 10 (refleet re-reads the fleet text,
 * every joined node and every lease: a join storm was quadratic). The node
 * comes out exactly as refleet would make it: appended after the fleet
 * file's and the earlier joined nodes. Anything else, or a failure half
 * way, rebuilds with refleet, which makes everything afresh. */
static enum sl_err join_node(struct ctl *c, const struct agent_rec *r, struct sl_diag *d)
{
	const char *tname = json_string_value(json_object_get(r->labels, "type"));
	int ti = tname ? fleet_find_type(c->fleet, tname) : -1;
	if (ti < 0 || !c->placer || !c->fleet_id[0])
		return refleet(c, d);
	int nt = c->fleet->ntypes, nn = c->fleet->nnodes;
	struct sl_diag jd;
	sl_diag_clear(&jd);
	enum sl_err e = extend_one(c->fleet, r, &jd);
	if (e == SL_OK && c->fleet->ntypes == nt)
		e = placer_nodes_added(c->placer);
	else if (e == SL_OK)
		e = SL_EINVAL;
	if (e == SL_OK && c->sched)
		e = sched_nodes_added(c->sched);
	if (e != SL_OK) {
		bool grew = c->fleet->nnodes > nn;
		sl_log_warn("join rebuilds the fleet", "node=%s error=%s", r->name,
			    jd.msg[0] ? jd.msg : sl_err_code(e));
		e = refleet(c, d);
		if (e && grew) {
			/* The fleet holds a node the placer cannot: only a restart,
			 * which rebuilds both, is safe (out of memory twice over). */
			sl_log_error("fleet and placer disagree after a failed join", "node=%s error=%s",
				     r->name, d->msg);
			c->fatal = true;
		}
		return e;
	}
	agents_apply_node(c, c->fleet->nnodes - 1);
	return SL_OK;
}

/* ---- register ---- */

static bool printable(const char *s)
{
	for (; *s; s++)
		if (!isgraph((unsigned char)*s))
			return false;
	return true;
}

static void bad_field(struct ctl_call *call, enum sl_err e, const char *field, const char *what,
		      const char *hint)
{
	char msg[SL_DIAG_MSG];
	snprintf(msg, sizeof(msg), "field '%.64s': %.400s", field, what);
	ctl_answer_error(call, e, msg, hint);
}

/* Drains node by its discovery (reason), or lifts a drain the discovery
 * made; an operator's drain is left alone either way. */
static void discovery_drain(struct ctl *c, const char *name, bool weaker, const char *reason)
{
	const json_t *dr = json_object_get(c->drains, name);
	const char *by = json_string_value(json_object_get(dr, "by"));
	bool ours = dr && by && !strcmp(by, "discovery");
	if (dr && !ours) {
		/* An operator's drain stands; its reason is theirs. */
		if (weaker)
			sl_log_warn("drained node's discovery is weaker", "node=%s reason=%s", name, reason);
	} else if (weaker) {
		json_t *row = json_pack("{s:s, s:b, s:s, s:o, s:s}", "name", name, "drained", 1,
					"reason", reason, "at", ctl_time_json(c->now_ns), "by",
					"discovery");
		json_object_set(c->drains, name, row);
		ctl_put(c, STORE_NODES, name, NULL, row);
		sl_log_warn("node drained by its discovery", "node=%s reason=%s", name, reason);
		audit_log_system(c, "node.drain", "", name, reason);
	} else if (ours) {
		json_object_del(c->drains, name);
		ctl_put(c, STORE_NODES, name, NULL,
			json_pack("{s:s, s:b, s:o, s:s}", "name", name, "drained", 0, "at",
				  ctl_time_json(c->now_ns), "by", "discovery"));
		audit_log_system(c, "node.resume", "", name, "discovery no longer weaker");
	}
}

struct reg_in {
	const char *node, *addr, *version, *boot_id;
	const char *host_tenant; /* "host_processes": the operator's permission (NULL: none) */
	const char *lease_net;   /* "lease_net": the node's fabric address pool (NULL: none) */
	json_t *discovery, *labels;
};

/* Host processes only on a server the tenant owns (owners: in the fleet
 * file): anywhere else another tenant's lease could land beside them. False
 * after answering 400. */
static bool host_owner_ok(struct ctl_call *call, int idx, const char *node, const char *tenant)
{
	const struct fleet *f = call->ctl->fleet;
	int own = idx >= 0 ? f->nodes[idx].owner : -1;
	const char *owner = own >= 0 && own < f->nowners ? f->owners[own] : NULL;
	if (owner && !strcmp(owner, tenant))
		return true;
	char msg[SL_DIAG_MSG];
	snprintf(msg, sizeof(msg), "node %.64s is %s%.64s; host processes (--host-processes %.64s) "
		 "are only for a server that tenant owns", node, owner ? "owned by " : "the provider's",
		 owner ? owner : "", tenant);
	sl_log_warn("registration refused: host processes on a node the tenant does not own",
		    "node=%s host_processes=%s owner=%s", node, tenant, owner ? owner : "-");
	ctl_answer_error(call, SL_EINVAL, msg, "run the agent without --host-processes (tenant "
			 "work then runs in containers), or give the node an owner in the fleet file");
	return false;
}

static bool reg_parse(struct ctl_call *call, struct reg_in *in)
{
	static const struct ctl_field fields[] = {
		{"node", FT_STRING, true},       {"addr", FT_STRING, true},
		{"agent_version", FT_STRING, false}, {"boot_id", FT_STRING, true},
		{"discovery", FT_OBJECT, true},  {"labels", FT_OBJECT, false},
		{"running", FT_ARRAY, false}, {"host_processes", FT_STRING, false},
		{"lease_net", FT_STRING, false}};
	static const struct ctl_field lfields[] = {
		{"site", FT_STRING, false}, {"leaf", FT_STRING, false}, {"type", FT_STRING, false}};
	const json_t *b = call->body;
	bool bad = false;
	if (!ctl_check_fields(call, b, fields, sizeof(fields) / sizeof(fields[0]), "a registration"))
		return false;
	in->node = ctl_str_field(call, b, "node", CTL_NAME_MAX, &bad);
	in->addr = bad ? NULL : ctl_str_field(call, b, "addr", AGENT_ADDR_MAX, &bad);
	in->boot_id = bad ? NULL : ctl_str_field(call, b, "boot_id", AGENT_BOOT_ID_MAX, &bad);
	in->version = bad ? NULL : ctl_str_field(call, b, "agent_version", AGENT_VERSION_MAX, &bad);
	in->host_tenant = bad ? NULL : ctl_str_field(call, b, "host_processes", CTL_NAME_MAX, &bad);
	in->lease_net = bad ? NULL : ctl_str_field(call, b, "lease_net", LEASE_NET_CIDR_MAX - 1, &bad);
	if (bad)
		return false;
	struct lease_pool pool;
	struct sl_diag pd;
	sl_diag_clear(&pd);
	if (in->lease_net && lease_pool_parse(in->lease_net, &pool, &pd) != SL_OK) {
		bad_field(call, SL_EINVAL, "lease_net", pd.msg, "suanli-agent run --lease-net "
			  "macvlan:IFACE:A.B.C.D/N (docs/isolation.md)");
		return false;
	}
	if (in->host_tenant && !fleet_name_valid(in->host_tenant)) {
		bad_field(call, SL_EINVAL, "host_processes", "not a tenant name", NULL);
		return false;
	}
	in->discovery = json_object_get(b, "discovery");
	in->labels = json_object_get(b, "labels");
	if (!fleet_name_valid(in->node)) {
		bad_field(call, SL_EINVAL, "node", "not a node name",
			  "names are 1..63 characters of A-Z a-z 0-9 . _ -");
		return false;
	}
	if (!printable(in->addr) || !printable(in->boot_id) || (in->version && !printable(in->version))) {
		bad_field(call, SL_EINVAL, !printable(in->addr) ? "addr" : !printable(in->boot_id) ? "boot_id" : "agent_version",
			  "must be printable ASCII without spaces", NULL);
		return false;
	}
	if (json_array_size(json_object_get(b, "running")) > AGENT_MAX_WORK) {
		bad_field(call, SL_ELIMIT, "running", "too many items", NULL);
		return false;
	}
	if (in->labels) {
		if (!ctl_check_fields(call, in->labels, lfields, 3, "labels"))
			return false;
		const char *k;
		json_t *v;
		json_object_foreach(in->labels, k, v)
			if (!fleet_name_valid(json_string_value(v))) {
				char f[32];
				snprintf(f, sizeof(f), "labels.%s", k);
				bad_field(call, SL_EINVAL, f, "not a fleet name", NULL);
				return false;
			}
	}
	return true;
}

void h_agent_register(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	const struct ctl_token *tok = call->tok;
	struct reg_in in;
	struct sl_diag d;
	char msg[SL_DIAG_MSG], reason[DISC_REASON_MAX];
	sl_diag_clear(&d);
	if (!reg_parse(call, &in))
		return;
	if (tok->node[0] && strcmp(tok->node, in.node)) {
		snprintf(msg, sizeof(msg), "this token may register node '%s' only, not '%s'", tok->node,
			 in.node);
		ctl_answer_error(call, SL_EFORBIDDEN, msg, NULL);
		return;
	}
	struct discovery *disc = malloc(sizeof(*disc));
	if (!disc) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	enum sl_err e = discovery_from_json(in.discovery, disc, &d);
	if (e) {
		bad_field(call, e, "discovery", d.msg, d.hint[0] ? d.hint : "send `suanli-agent discover --json`");
		free(disc);
		return;
	}
	int idx = fleet_find_node(c->fleet, in.node);
	if (in.host_tenant && !host_owner_ok(call, idx, in.node, in.host_tenant)) {
		free(disc);
		return;
	}
	struct agent_rec *r = agents_rec(c, in.node);
	json_t *labels = NULL;
	if (idx < 0) {
		/* Joining: check everything before the fleet changes. */
		const char *site = json_string_value(json_object_get(in.labels, "site"));
		const char *leaf = json_string_value(json_object_get(in.labels, "leaf"));
		int si = site ? fleet_find_site(c->fleet, site) : -1;
		struct node_type *t = malloc(sizeof(*t));
		bool custom = false;
		if (!site || !leaf) {
			snprintf(msg, sizeof(msg), "node '%s' is not in the fleet; to join it needs labels.site and labels.leaf", in.node);
			ctl_answer_error(call, SL_EINVAL, msg, "or add it to the fleet file (PUT /v1/fleet)");
		} else if (si < 0 || find_leaf(c->fleet, si, leaf) < 0) {
			snprintf(msg, sizeof(msg), "field 'labels.%s': no %s called '%.64s'%s",
				 si < 0 ? "site" : "leaf", si < 0 ? "site" : "leaf", si < 0 ? site : leaf,
				 si < 0 ? "" : " at that site");
			ctl_answer_error(call, SL_EINVAL, msg, "'suanli nodes' shows the sites and leaves");
		} else if (!t) {
			ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		} else if ((e = agents_join_type(c->fleet, in.node, in.labels, in.discovery, t, &custom, &d))) {
			ctl_answer_diag(call, e, &d);
		} else {
			labels = json_pack("{s:s, s:s, s:s}", "site", site, "leaf", leaf, "type",
					   t->name);
		}
		free(t);
		if (!labels) {
			if (!call->answered)
				ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
			free(disc);
			return;
		}
	}
	bool fresh = !r;
	if (!r && !(r = agents_rec_add(c, in.node))) {
		json_decref(labels);
		free(disc);
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	json_t *old_labels = r->labels;
	/* the discovery kept before, to put back if the join fails */
	struct agent_disc old_disc;
	if (!agents_set_discovery(c->agents, r, in.discovery, &old_disc)) {
		json_decref(labels);
		free(disc);
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	if (labels)
		r->labels = labels;
	if (idx < 0) {
		if ((e = join_node(c, r, &d)) || (idx = fleet_find_node(c->fleet, in.node)) < 0) {
			/* Nothing changed: the record stays as it was (or unregistered). */
			agents_disc_put_back(r, &old_disc);
			r->labels = old_labels;
			json_decref(labels);
			if (!e)
				sl_diag_set(&d, e = SL_ECONFLICT, "node %s could not join the fleet", in.node);
			ctl_answer_diag(call, e, &d);
			free(disc);
			return;
		}
		audit_log_system(c, "node.join", "", in.node, json_string_value(json_object_get(labels, "type")));
		sl_log_info("node joined the fleet", "node=%s site=%s leaf=%s type=%s", in.node,
			    json_string_value(json_object_get(labels, "site")),
			    json_string_value(json_object_get(labels, "leaf")),
			    json_string_value(json_object_get(labels, "type")));
	}
	if (old_labels != r->labels)
		json_decref(old_labels);
	agents_disc_free(&old_disc);
	const struct node_type *declared = fleet_node_type(c->fleet, idx);
	char full[CTL_REASON_MAX];
	bool weaker = discovery_weaker(disc, declared, reason, sizeof(reason));
	snprintf(full, sizeof(full), "discovered topology is weaker than %.64s: %.150s", declared->name,
		 reason);
	free(disc);
	discovery_drain(c, in.node, weaker, full);
	agents_text_set(&r->addr, in.addr, AGENT_ADDR_MAX + 1);
	agents_text_set(&r->boot_id, in.boot_id, AGENT_BOOT_ID_MAX + 1);
	agents_text_set(&r->version, in.version, AGENT_VERSION_MAX + 1);
	agents_text_set(&r->host_tenant, in.host_tenant, CTL_NAME_MAX + 1);
	snprintf(r->lease_net, sizeof(r->lease_net), "%s", in.lease_net ? in.lease_net : "");
	r->registered_ns = c->now_ns;
	if ((fresh || r->ngpus != declared->ngpus) && !agents_gpus_reset(r, declared->ngpus)) {
		/* Out of memory: no per-GPU health until the agent registers again
		 * (every GPU usable, as for a node without an agent). */
		(void)agents_gpus_reset(r, 0);
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	agents_reported(c, r);
	char secret[64] = "";
	if (!tok->node_cred && !credential_new(c, in.node, secret)) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	agents_rec_save(c, r);
	agents_apply_node(c, idx); /* a registration changes its own node only */
	const char *why = "";
	const char *state = ctl_node_state(c, idx, &why);
	json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I}", "node", in.node, "state", state,
			      "reason", why ? why : "", "heartbeat_s", (json_int_t)c->agents->hb_s,
			      "work_version", (json_int_t)jobs_work_version(c, idx));
	if (o && secret[0])
		json_object_set_new(o, "credential", json_string(secret));
	sodium_memzero(secret, sizeof(secret));
	sl_log_info("agent registered", "node=%s addr=%s state=%s", in.node, in.addr, state);
	ctl_answer_json(call, 200, o);
}

/* ---- heartbeat ---- */

static bool check_gpus(struct ctl_call *call, const json_t *gpus, int ngpus)
{
	static const struct ctl_field gf[] = {
		{"index", FT_INT, true},    {"temp_c", FT_INT, false},    {"power_w", FT_INT, false},
		{"ecc_sbe", FT_INT, false}, {"ecc_dbe", FT_INT, false},   {"nvlink_up", FT_INT, false},
		{"xid", FT_ARRAY, false},   {"healthy", FT_BOOL, false}, {"uuid", FT_STRING, false},
		{"util_pct", FT_INT, false}};
	static const struct ctl_field xf[] = {{"code", FT_INT, true}, {"at", FT_STRING, false}};
	char where[64], msg[SL_DIAG_MSG];
	unsigned seen = 0;
	if (json_array_size(gpus) > TOPO_MAX_GPUS) {
		bad_field(call, SL_ELIMIT, "gpus", "more GPUs than a node can hold", NULL);
		return false;
	}
	for (size_t i = 0; i < json_array_size(gpus); i++) {
		const json_t *g = json_array_get(gpus, i);
		snprintf(where, sizeof(where), "gpus[%zu]", i);
		if (!json_is_object(g)) {
			bad_field(call, SL_EINVAL, where, "must be an object", NULL);
			return false;
		}
		if (!ctl_check_fields(call, g, gf, sizeof(gf) / sizeof(gf[0]), where))
			return false;
		json_int_t ix = json_integer_value(json_object_get(g, "index"));
		if (ix < 0 || ix >= ngpus || (seen & (1u << ix))) {
			snprintf(msg, sizeof(msg), "%s.index %lld: %s", where, (long long)ix,
				 ix < 0 || ix >= ngpus ? "no such GPU on this node" : "reported twice");
			ctl_answer_error(call, SL_EINVAL, msg, NULL);
			return false;
		}
		seen |= 1u << ix;
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)g, k, v)
			if (json_is_integer(v) && (json_integer_value(v) < 0 || json_integer_value(v) > AGENT_MAX_METRIC)) {
				snprintf(msg, sizeof(msg), "%s.%s must be 0..%lld", where, k, AGENT_MAX_METRIC);
				ctl_answer_error(call, SL_EINVAL, msg, NULL);
				return false;
			}
		const json_t *xids = json_object_get(g, "xid");
		if (json_array_size(xids) > AGENT_MAX_XIDS) {
			snprintf(msg, sizeof(msg), "%s.xid lists more than %d events", where, AGENT_MAX_XIDS);
			ctl_answer_error(call, SL_ELIMIT, msg, NULL);
			return false;
		}
		for (size_t j = 0; j < json_array_size(xids); j++) {
			const json_t *x = json_array_get(xids, j);
			char xw[96];
			int64_t at;
			snprintf(xw, sizeof(xw), "%.60s.xid[%zu]", where, j);
			if (!json_is_object(x)) {
				bad_field(call, SL_EINVAL, xw, "must be an object", NULL);
				return false;
			}
			if (!ctl_check_fields(call, x, xf, 2, xw))
				return false;
			json_int_t code = json_integer_value(json_object_get(x, "code"));
			const char *ats = json_string_value(json_object_get(x, "at"));
			if (code < 1 || code > GPU_XID_MAX_CODE || (ats && !ctl_time_parse(ats, &at))) {
				snprintf(msg, sizeof(msg), "%s.%s", xw,
					 code < 1 || code > GPU_XID_MAX_CODE ? "code must be 1..100000"
									     : "at must be an RFC 3339 time");
				ctl_answer_error(call, SL_EINVAL, msg, NULL);
				return false;
			}
		}
	}
	return true;
}

static void gpu_changed(struct ctl *c, struct agent_rec *r, int g, enum gpu_hstate before)
{
	const struct gpu_health *h = agents_gpu(r, g);
	char target[CTL_NAME_MAX + 16];
	if (h->state == before)
		return;
	snprintf(target, sizeof(target), "%s/gpu%d", r->name, g);
	const char *act = h->state == GPU_FAILED ? "gpu.fail" : h->state == GPU_DRAINING ? "gpu.drain"
											: "gpu.requalified";
	sl_log_warn("gpu health", "node=%s gpu=%d state=%s reason=%s", r->name, g,
		    gpu_hstate_name(h->state), h->reason);
	audit_log_system(c, act, "", target, h->reason[0] ? h->reason : "ok");
}

/* Applies the "gpus" array (checked); true when a GPU's state changed,
 * *back when one returned to service. */
static bool apply_gpus(struct ctl *c, struct agent_rec *r, const json_t *gpus, bool *back)
{
	bool changed = false;
	*back = false;
	for (size_t i = 0; i < json_array_size(gpus); i++) {
		const json_t *gj = json_array_get(gpus, i);
		int g = (int)json_integer_value(json_object_get(gj, "index"));
		const json_t *xids = json_object_get(gj, "xid");
		/* Only an explicit verdict without a new XID re-qualifies or drains. */
		const json_t *hv = json_object_get(gj, "healthy");
		if (!r->gpu && !json_array_size(xids) && (!hv || json_is_true(hv)))
			continue; /* a fresh GPU that stays fresh: nothing to keep */
		struct gpu_health *h = agents_gpu_w(r, g);
		if (!h)
			continue; /* logged; its health stays as it was */
		enum gpu_hstate before = h->state;
		for (size_t j = 0; j < json_array_size(xids); j++) {
			const json_t *x = json_array_get(xids, j);
			int64_t at = c->now_ns;
			const char *ats = json_string_value(json_object_get(x, "at"));
			if (ats)
				(void)ctl_time_parse(ats, &at);
			int code = (int)json_integer_value(json_object_get(x, "code"));
			gpu_health_xid(h, code, at);
			agents_xid_event(r, g,
					 json_pack("{s:i, s:i, s:o, s:o, s:s}", "gpu", g, "code", code,
						   "at", ctl_time_json(at), "received_at",
						   ctl_time_json(c->now_ns), "state",
						   gpu_hstate_name(h->state)));
			changed = true;
		}
		if (!json_array_size(xids) && hv)
			gpu_health_report(h, json_is_true(hv), c->now_ns);
		if (h->state != before) {
			changed = true;
			*back |= h->state == GPU_OK;
			gpu_changed(c, r, g, before);
		}
	}
	return changed;
}

void h_agent_heartbeat(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {
		{"boot_id", FT_STRING, true}, {"gpus", FT_ARRAY, false}, {"work", FT_ARRAY, false},
		{"instances", FT_ARRAY, false}};
	struct ctl *c = call->ctl;
	bool bad = false;
	if (!ctl_check_fields(call, call->body, fields, sizeof(fields) / sizeof(fields[0]), "a heartbeat"))
		return;
	const char *boot = ctl_str_field(call, call->body, "boot_id", AGENT_BOOT_ID_MAX, &bad);
	if (bad)
		return;
	const json_t *work = json_object_get(call->body, "work");
	json_t *gpus = json_object_get(call->body, "gpus");
	const json_t *insts = json_object_get(call->body, "instances");
	if (json_array_size(work) > AGENT_MAX_WORK || json_array_size(insts) > AGENT_MAX_WORK) {
		bad_field(call, SL_ELIMIT, json_array_size(work) > AGENT_MAX_WORK ? "work" : "instances",
			  "too many items", NULL);
		return;
	}
	int idx = agents_call_node(call);
	if (idx < 0)
		return;
	struct agent_rec *r = agents_rec(c, c->fleet->nodes[idx].name);
	if (!r || strcmp(r->boot_id, boot)) {
		ctl_answer_error(call, SL_ECONFLICT,
				 !r ? "this node has not registered"
				    : "boot_id differs from the registration's: the agent restarted",
				 "register again (POST /v1/agent/register), then send heartbeats");
		return;
	}
	if (!check_gpus(call, gpus, r->ngpus))
		return;
	agents_reported(c, r);
	bool back = false;
	if (gpus && !agents_keep_gpus(c->agents, r, gpus))
		sl_log_warn("out of memory: a heartbeat's GPU figures are not kept", "node=%s", r->name);
	if (apply_gpus(c, r, gpus, &back)) {
		agents_apply_gpus_rec(c, r, idx);
		agents_rec_save(c, r);
		if (back && c->sched)
			ctl_sched_check(c, sched_capacity_changed(c->sched, c->now_ns),
					"sched_capacity_changed");
	} else if (c->now_ns - r->saved_hb_ns >= AGENT_SAVE_EVERY_NS) {
		agents_rec_save(c, r);
	}
	const char *why = "";
	const char *state = ctl_node_state(c, idx, &why);
	json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:[]}", "node", r->name, "state", state,
			      "reason", why ? why : "", "heartbeat_s", (json_int_t)c->agents->hb_s,
			      "work_version", (json_int_t)jobs_work_version(c, idx), "stop");
	instances_on_heartbeat(c, idx, insts, gpus);
	if (o)
		jobs_on_heartbeat(c, idx, work, o);
	ctl_answer_json(call, 200, o);
}

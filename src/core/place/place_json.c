/* place_json.c - placements to JSON and usage states from JSON.
 *
 * Loading a state goes through placer_claim, one single-pick placement per
 * entry, so the placer's own validation applies and a failure can be rolled
 * back by releasing what was claimed before it. */
#include "place_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_limits.h"

static json_t *gpu_list(gpumask_t m)
{
	json_t *a = json_array();
	for (int i = 0; a && i < TOPO_MAX_GPUS; i++)
		if (m & (1u << i))
			json_array_append_new(a, json_integer(i));
	return a;
}

json_t *place_score_to_json(const struct place_score *s)
{
	json_t *o = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:i, s:i, s:i, s:b, s:b}",
			 "bottleneck_gbps", s->bottleneck_gbps, "total_gbps", s->total_gbps,
			 "numa_spanned", s->numa_spanned, "nic_rails", s->nics,
			 "free_after", s->free_after, "stranded_after", s->stranded_after,
			 "price_hint", (json_int_t)s->price_hint, "nodes", s->nodes,
			 "leaves", s->leaves, "domains", s->domains,
			 "rails_aligned", s->rails_aligned, "full_quality", s->full_quality);
	if (o && s->leaf_kept > 0)
		json_object_set_new(o, "leaf_kept", json_integer(s->leaf_kept));
	if (o && s->frag)
		json_object_set_new(o, "fragmentation",
				    json_pack("{s:s, s:I, s:I, s:b}", "policy", "frag", "delta_milli",
					      (json_int_t)s->frag_milli, "bestfit_delta_milli",
					      (json_int_t)s->bestfit_milli, "bestfit_same",
					      s->bestfit_same));
	return o;
}

static json_t *pick_to_json(const struct fleet *f, const struct place_pick *pk)
{
	const struct fleet_node *n = &f->nodes[pk->node];
	json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:i, s:I}", "node", n->name,
			      "type", f->types[n->type].name, "site", f->sites[n->site].name,
			      "gpus", gpu_list(pk->gpus), "cpus", pk->cpus,
			      "mem_mib", (json_int_t)pk->mem_mib);
	if (!o)
		return NULL;
	json_object_set_new(o, "leaf", json_string(f->leaves[n->leaf].name));
	if (n->domain >= 0)
		json_object_set_new(o, "nvlink_domain", json_string(f->domains[n->domain].name));
	if (pk->milli > 0) {
		json_object_set_new(o, "gpu", json_integer(pk->gpu));
		json_object_set_new(o, "milli", json_integer(pk->milli));
	}
	json_object_set_new(o, "quality",
			    json_pack("{s:i, s:i, s:i, s:i}", "bottleneck_gbps",
				      pk->q.bottleneck_gbps, "total_gbps", pk->q.total_gbps,
				      "numa_spanned", pk->q.numa_spanned, "nic_rails", pk->q.nics));
	return o;
}

json_t *place_to_json(const struct fleet *f, const struct placement *pl)
{
	json_t *root = json_object(), *arr = json_array();
	if (!root || !arr) {
		json_decref(root);
		json_decref(arr);
		return NULL;
	}
	json_object_set_new(root, "placement", arr);
	for (int i = 0; i < pl->npicks; i++) {
		json_t *o = pick_to_json(f, &pl->picks[i]);
		if (!o || json_array_append_new(arr, o)) {
			json_decref(root);
			return NULL;
		}
	}
	if (pl->npicks > 0)
		json_object_set_new(root, "score", place_score_to_json(&pl->score));
	else
		json_object_set_new(root, "refused",
				    json_pack("{s:s, s:s}", "constraint",
					      place_constraint_name(pl->failed), "why", pl->why));
	return root;
}

/* Parses one state entry into a single-pick placement. */
static enum sl_err state_entry(const struct fleet *f, json_t *e, size_t idx,
			       struct place_pick *pk, struct sl_diag *d)
{
	json_t *jn = json_object_get(e, "node"), *jg = json_object_get(e, "gpus");
	json_t *j1 = json_object_get(e, "gpu"), *jm = json_object_get(e, "milli");
	const char *key;
	json_t *val;
	int node;

	if (!json_is_object(e))
		return sl_diag_set(d, SL_EINVAL, "state entry %zu is not an object", idx);
	json_object_foreach(e, key, val) {
		if (strcmp(key, "node") && strcmp(key, "gpus") && strcmp(key, "gpu") &&
		    strcmp(key, "milli"))
			return sl_diag_set(d, SL_EINVAL,
					   "state entry %zu: unknown key '%s'; expected node, gpus, or gpu and milli",
					   idx, key);
	}
	if (!json_is_string(jn))
		return sl_diag_set(d, SL_EINVAL, "state entry %zu: \"node\" must be a node name", idx);
	node = fleet_find_node(f, json_string_value(jn));
	if (node < 0)
		return sl_diag_set(d, SL_ENOTFOUND, "state entry %zu: no node '%s' in the fleet",
				   idx, json_string_value(jn));
	memset(pk, 0, sizeof(*pk));
	pk->node = node;
	pk->gpu = -1;
	int ngpus = fleet_node_type(f, node)->ngpus;
	if (jg) {
		size_t i;
		json_t *g;
		if (!json_is_array(jg) || json_array_size(jg) == 0 || j1 || jm)
			return sl_diag_set(d, SL_EINVAL,
					   "state entry %zu: \"gpus\" must be a non-empty list of GPU indices (and no \"gpu\"/\"milli\")",
					   idx);
		json_array_foreach(jg, i, g) {
			json_int_t v = json_is_integer(g) ? json_integer_value(g) : -1;
			if (v < 0 || v >= ngpus)
				return sl_diag_set(d, SL_EINVAL,
						   "state entry %zu: GPU index must be an integer 0..%d on node %s",
						   idx, ngpus - 1, f->nodes[node].name);
			if (pk->gpus & (1u << v))
				return sl_diag_set(d, SL_EINVAL, "state entry %zu: GPU %d listed twice",
						   idx, (int)v);
			pk->gpus |= 1u << v;
		}
	} else {
		json_int_t g = json_is_integer(j1) ? json_integer_value(j1) : -1;
		json_int_t m = json_is_integer(jm) ? json_integer_value(jm) : -1;
		if (g < 0 || g >= ngpus || m < 1 || m > 999)
			return sl_diag_set(d, SL_EINVAL,
					   "state entry %zu: give \"gpus\": [..], or \"gpu\": 0..%d with \"milli\": 1..999",
					   idx, ngpus - 1);
		pk->gpu = (int)g;
		pk->milli = (int)m;
	}
	return SL_OK;
}

/* Claims (or, to undo, releases) one pick as a placement of its own. */
static enum sl_err state_apply(struct placer *p, struct place_pick *pk, bool claim,
			       struct sl_diag *d)
{
	struct placement one;
	placement_init(&one);
	one.npicks = 1;
	one.cap = 1;
	one.picks = pk;
	return claim ? placer_claim(p, &one, d) : placer_release(p, &one, d);
}

enum sl_err place_state_load(struct placer *p, const char *text, size_t len,
			     struct sl_diag *d)
{
	const struct fleet *f = placer_fleet(p);
	json_error_t jerr;
	json_t *root;
	struct place_pick *done;
	size_t i, n, claimed = 0;
	enum sl_err e;

	size_t sp = 0;
	while (sp < len && strchr(" \t\r\n", text[sp]) && text[sp])
		sp++;
	if (sp == len)
		return sl_diag_at(d, SL_EPARSE, 1, 1,
				  "state is empty; expected a JSON list such as [] or "
				  "[{\"node\": \"n1\", \"gpus\": [0, 3]}]");
	/* jansson recurses per nesting level: refuse deep input before it does. */
	if ((e = json_check_limits(text, len, JSON_MAX_DEPTH, d)) != SL_OK)
		return e;
	if (!(root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr)))
		return sl_diag_at(d, SL_EPARSE, jerr.line > 0 ? jerr.line : 1,
				  jerr.column > 0 ? jerr.column : 1, "state is not valid JSON: %s",
				  jerr.text);
	if (!json_is_array(root)) {
		json_decref(root);
		return sl_diag_set(d, SL_EINVAL,
				   "state must be a JSON list like [{\"node\": \"n1\", \"gpus\": [0, 3]}]");
	}
	n = json_array_size(root);
	if (n > PLACE_STATE_MAX_ENTRIES) {
		json_decref(root);
		return sl_diag_set(d, SL_ELIMIT, "state has %zu entries; at most %d", n,
				   PLACE_STATE_MAX_ENTRIES);
	}
	/* One pick per entry, kept so that a failure can release what came before
	 * (a pick, not a whole struct placement: a million entries stay small). */
	done = calloc(n ? n : 1, sizeof(*done));
	if (!done) {
		json_decref(root);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	for (i = 0; i < n && e == SL_OK; i++) {
		struct place_pick *pk = &done[i];
		e = state_entry(f, json_array_get(root, i), i, pk, d);
		if (e == SL_OK && !pk->milli) {
			/* The state records GPUs only: CPUs and memory follow the default share. */
			const struct node_type *t = fleet_node_type(f, pk->node);
			int k = __builtin_popcount(pk->gpus);
			pk->cpus = t->cpus * k / t->ngpus;
			pk->mem_mib = (int64_t)t->mem_gib * 1024 * k / t->ngpus;
		}
		if (e == SL_OK) {
			e = state_apply(p, pk, true, d);
			if (e != SL_OK && d) {
				char why[SL_DIAG_MSG];
				memcpy(why, d->msg, sizeof(why));
				snprintf(d->msg, sizeof(d->msg), "state entry %zu: %.400s", i, why);
			}
		}
		if (e == SL_OK)
			claimed = i + 1;
	}
	/* Undo on failure, newest first; releasing what was just claimed cannot fail. */
	for (i = claimed; e != SL_OK && i > 0; i--)
		(void)!state_apply(p, &done[i - 1], false, NULL);
	free(done);
	json_decref(root);
	return e;
}

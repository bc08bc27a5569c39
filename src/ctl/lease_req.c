/* lease_req.c - a lease's request: parsed strictly from the API's JSON, kept
 * as one counted copy shared by the leases that ask alike, and turned into the
 * placer's request. (The lease's other fields are in codec.c.) */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "catalog.h"
#include "ctl_int.h"
#include "place_json.h"

static bool get_int(const json_t *o, const char *k, int64_t lo, int64_t hi, int64_t *out,
		    struct sl_diag *d, enum sl_err *e)
{
	const json_t *v = json_object_get(o, k);
	if (!v)
		return false;
	if (!json_is_integer(v)) {
		*e = sl_diag_set(d, SL_EINVAL, "field '%s' must be an integer", k);
		return false;
	}
	json_int_t x = json_integer_value(v);
	if (x < lo || x > hi) {
		*e = sl_diag_set(d, SL_EINVAL, "field '%s' is %lld; expected %lld..%lld", k,
				 (long long)x, (long long)lo, (long long)hi);
		return false;
	}
	*out = x;
	return true;
}

static enum sl_err name_field(const json_t *o, const char *k, const char **out,
			      struct sl_diag *d)
{
	const json_t *v = json_object_get(o, k);
	if (!v)
		return SL_OK;
	const char *s = json_string_value(v);
	if (!s)
		return sl_diag_set(d, SL_EINVAL, "field '%s' must be a string", k);
	if (!fleet_name_valid(s) || strlen(s) > CTL_NAME_MAX) {
		sl_diag_hint(d, "names are 1..%d characters of [A-Za-z0-9._-]", CTL_NAME_MAX);
		return sl_diag_set(d, SL_EINVAL, "field '%s' is not a valid name", k);
	}
	*out = s;
	return SL_OK;
}

static char *dup_or_empty(const char *s, bool *ok)
{
	if (!s || !s[0])
		return NULL;
	size_t n = strlen(s) + 1;
	char *t = malloc(n);
	if (t)
		memcpy(t, s, n);
	*ok &= t != NULL;
	return t;
}

static void free_owned(const char *s)
{
	if (s && s[0])
		free((void *)(uintptr_t)s);
}

const struct lease_req *lease_req_keep(const struct lease_req *r)
{
	struct lease_req *k = malloc(sizeof(*k));
	if (!k)
		return NULL;
	*k = *r;
	bool ok = true;
	char *region = dup_or_empty(r->region, &ok), *site = dup_or_empty(r->site, &ok);
	if (!ok) {
		free(region);
		free(site);
		free(k);
		return NULL;
	}
	k->region = region ? region : "";
	k->site = site ? site : "";
	k->tenant = "";
	k->refs = 1;
	return k;
}

void lease_req_drop(const struct lease_req *r)
{
	if (!r)
		return;
	struct lease_req *k = (struct lease_req *)(uintptr_t)r;
	if (--k->refs > 0)
		return;
	free_owned(k->region);
	free_owned(k->site);
	free(k);
}

bool lease_req_equal(const struct lease_req *a, const struct lease_req *b)
{
	if (a->gpus != b->gpus || a->gpu_milli != b->gpu_milli || a->cpu_milli != b->cpu_milli ||
	    a->nmodels != b->nmodels || a->per_node != b->per_node ||
	    a->min_bw_gbps != b->min_bw_gbps || a->min_mem_gib != b->min_mem_gib ||
	    a->plan != b->plan || a->el_min != b->el_min || a->el_max != b->el_max ||
	    a->mem_mib != b->mem_mib || a->duration_s != b->duration_s ||
	    a->cpu_mem != b->cpu_mem || a->exclusive != b->exclusive ||
	    a->one_leaf != b->one_leaf || a->replace_on_failure != b->replace_on_failure)
		return false;
	for (int i = 0; i < a->nmodels; i++)
		if (a->models[i] != b->models[i])
			return false;
	return !strcmp(a->region, b->region) && !strcmp(a->site, b->site);
}

void lease_share_req(struct ctl_lease *l, const struct ctl_lease *like)
{
	if (!like || like == l || !like->req || !l->req || like->req == l->req ||
	    !lease_req_equal(like->req, l->req))
		return;
	lease_req_drop(l->req);
	((struct lease_req *)(uintptr_t)like->req)->refs++;
	l->req = like->req;
}

bool lease_set_duration(struct ctl_lease *l, int64_t duration_s)
{
	struct lease_req r = *l->req;
	r.duration_s = duration_s;
	const struct lease_req *k = lease_req_keep(&r);
	if (!k)
		return false;
	lease_req_drop(l->req);
	l->req = k;
	return true;
}

enum sl_err lease_req_parse(const json_t *o, struct lease_req *r, struct sl_diag *d)
{
	enum sl_err e = SL_OK;
	int64_t v;
	memset(r, 0, sizeof(*r));
	r->region = r->site = r->tenant = "";
	r->plan = PLAN_HOURLY;
	if (get_int(o, "gpus", 0, PLACE_MAX_GPUS, &v, d, &e))
		r->gpus = (int)v;
	if (!e && get_int(o, "gpu_milli", 1, 999, &v, d, &e))
		r->gpu_milli = (int)v;
	if (e == SL_EINVAL && json_is_integer(json_object_get(o, "gpu_milli")))
		sl_diag_hint(d, "a share of one GPU in thousandths: 500 is half a GPU; ask for "
				"whole GPUs with \"gpus\"");
	if (!e && get_int(o, "cpu_milli", 0, (int64_t)FLEET_MAX_CPUS * 1000, &v, d, &e))
		r->cpu_milli = (int)v;
	if (!e && get_int(o, "memory_mib", 0, (int64_t)FLEET_MAX_MEM_GIB * 1024, &v, d, &e))
		r->mem_mib = v;
	if (e)
		return e;
	r->cpu_mem = json_object_get(o, "cpu_milli") || json_object_get(o, "memory_mib");
	if (r->gpus > 0 && r->gpu_milli > 0) {
		sl_diag_hint(d, "leave out \"gpus\" (or set it to 0) for a share of one GPU");
		return sl_diag_set(d, SL_EINVAL, "field 'gpu_milli' (a share of one GPU) cannot be "
				   "combined with 'gpus' %d", r->gpus);
	}
	if (r->gpus == 0 && r->gpu_milli == 0 && r->cpu_milli == 0 && r->mem_mib == 0) {
		sl_diag_hint(d, "\"gpus\": N for whole GPUs, \"gpu_milli\": M for a share of one, "
				"or \"cpu_milli\"/\"memory_mib\" for a lease without GPUs");
		return sl_diag_set(d, SL_EINVAL, json_object_get(o, "gpus")
						 ? "field 'gpus' is 0 and nothing else is asked for"
						 : "field 'gpus' is required");
	}
	const char *whole = NULL;
	if (json_object_get(o, "per_node"))
		whole = "per_node";
	else if (json_object_get(o, "elastic"))
		whole = "elastic";
	else if (json_is_true(json_object_get(o, "exclusive")))
		whole = "exclusive";
	if (r->gpus == 0 && whole)
		return sl_diag_set(d, SL_EINVAL, "field '%s' needs whole GPUs (\"gpus\" >= 1); "
				   "a %s cannot use it", whole,
				   r->gpu_milli ? "share of one GPU" : "lease without GPUs");
	if (get_int(o, "per_node", 1, TOPO_MAX_GPUS, &v, d, &e))
		r->per_node = (int)v;
	if (!e && get_int(o, "min_bw_gbps", 0, FLEET_MAX_GBPS * 100, &v, d, &e))
		r->min_bw_gbps = (int)v;
	if (!e && get_int(o, "min_mem_gib", 0, 1 << 20, &v, d, &e))
		r->min_mem_gib = (int)v;
	if (!e && get_int(o, "duration_s", 1, CTL_MAX_DURATION_S, &v, d, &e))
		r->duration_s = v;
	if (e)
		return e;
	if ((e = name_field(o, "region", &r->region, d)) ||
	    (e = name_field(o, "site", &r->site, d)) ||
	    (e = name_field(o, "tenant", &r->tenant, d)))
		return e;
	const json_t *models = json_object_get(o, "models");
	if (models) {
		size_t i;
		const json_t *m;
		if (!json_is_array(models))
			return sl_diag_set(d, SL_EINVAL, "field 'models' must be an array of strings");
		if (json_array_size(models) > PLACE_MAX_MODELS)
			return sl_diag_set(d, SL_ELIMIT, "field 'models' lists %zu models; at most %d",
					   json_array_size(models), PLACE_MAX_MODELS);
		json_array_foreach(models, i, m) {
			const char *s = json_string_value(m);
			if (!s)
				return sl_diag_set(d, SL_EINVAL, "field 'models' must be an array of strings");
			const struct gpu_model *gm = catalog_gpu_find(s);
			if (!gm) {
				char names[SL_DIAG_HINT - 16];
				(void)catalog_gpu_names(names, sizeof(names));
				sl_diag_hint(d, "known models: %s", names);
				return sl_diag_set(d, SL_EINVAL, "unknown GPU model '%.64s'", s);
			}
			r->models[r->nmodels++] = (uint8_t)(gm - catalog_gpu_at(0));
		}
	}
	const json_t *plan = json_object_get(o, "plan");
	if (plan) {
		enum plan p;
		if (plan_parse(json_string_value(plan), &p, NULL) || !plan_is_lease(p)) {
			sl_diag_hint(d, "plans: monthly, hourly, spot");
			return sl_diag_set(d, SL_EINVAL, "field 'plan' must be one of monthly, hourly, spot");
		}
		r->plan = p;
	}
	const json_t *ex = json_object_get(o, "exclusive");
	if (ex) {
		if (!json_is_boolean(ex))
			return sl_diag_set(d, SL_EINVAL, "field 'exclusive' must be a boolean");
		r->exclusive = json_is_true(ex);
	}
	const json_t *ol = json_object_get(o, "one_leaf");
	if (ol) {
		if (!json_is_boolean(ol))
			return sl_diag_set(d, SL_EINVAL, "field 'one_leaf' must be a boolean");
		r->one_leaf = json_is_true(ol);
	}
	const json_t *onf = json_object_get(o, "on_node_failure");
	if (onf) {
		const char *pol = json_string_value(onf);
		if (!pol || (strcmp(pol, "fail") && strcmp(pol, "replace"))) {
			sl_diag_hint(d, "\"fail\" (the default) ends the lease when a node it uses goes down; "
					"\"replace\" moves it to other GPUs");
			return sl_diag_set(d, SL_EINVAL, "field 'on_node_failure' must be \"fail\" or \"replace\"");
		}
		r->replace_on_failure = !strcmp(pol, "replace");
	}
	const json_t *el = json_object_get(o, "elastic");
	if (el) {
		int64_t mn = 0, mx = 0;
		if (!json_is_object(el) || json_object_size(el) != 2 ||
		    !get_int(el, "min", 1, PLACE_MAX_GPUS, &mn, d, &e) ||
		    !get_int(el, "max", 1, PLACE_MAX_GPUS, &mx, d, &e))
			return e ? e : sl_diag_set(d, SL_EINVAL,
						   "field 'elastic' must be {\"min\": N, \"max\": M}");
		if (mn > r->gpus || mx < r->gpus)
			return sl_diag_set(d, SL_EINVAL,
					   "elastic bounds %lld..%lld must include gpus (%d)",
					   (long long)mn, (long long)mx, r->gpus);
		r->el_min = (int)mn;
		r->el_max = (int)mx;
	}
	return SL_OK;
}

void lease_req_to_place(const struct lease_req *r, const char *tenant, struct place_request *pr)
{
	memset(pr, 0, sizeof(*pr));
	pr->gpus = r->gpus;
	pr->gpu_milli = r->gpu_milli;
	pr->cpu_milli = r->cpu_milli;
	pr->mem_mib = r->mem_mib;
	pr->exact_cpu_mem = r->cpu_mem;
	pr->per_node = r->per_node;
	pr->nmodels = r->nmodels;
	for (int i = 0; i < r->nmodels; i++)
		pr->models[i] = lease_req_model(r, i);
	pr->min_mem_gib = r->min_mem_gib;
	pr->min_bw_gbps = r->min_bw_gbps;
	pr->region = r->region && r->region[0] ? r->region : NULL;
	pr->site = r->site && r->site[0] ? r->site : NULL;
	pr->tenant = tenant;
	pr->exclusive = r->exclusive;
	pr->one_leaf = r->one_leaf;
}

/* discovery_json.c - the JSON form of a discovery (`suanli-agent discover
 * --json`, the "discovery" of an agent's register body).
 *
 * Writing is plain. Reading is strict because the text comes from the network:
 * every key is known, every number and string is bounded (discovery.h), GPUs
 * come in index order, every GPU pair is given exactly once, and an error
 * names the field ("gpus[2].numa: ...") so the agent's author can find it. The
 * result is assembled in a private copy and copied out only when all of it
 * was good.
 */
#include "discovery.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *mask_json(gpumask_t m, int ngpus)
{
	json_t *a = json_array();
	for (int g = 0; a && g < ngpus; g++)
		if ((m >> g & 1u) && json_array_append_new(a, json_integer(g)) != 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static int add(json_t *o, const char *k, json_t *v)
{
	return v ? json_object_set_new(o, k, v) : -1;
}

static int gpus_json(const struct discovery *d, json_t *arr)
{
	for (int g = 0; g < d->type.ngpus; g++) {
		const struct disc_gpu *x = &d->gpus[g];
		json_t *o = json_object();
		if (!o || json_array_append_new(arr, o) != 0)
			return -1;
		if (add(o, "index", json_integer(g)) || add(o, "numa", json_integer(d->type.numa[g])) ||
		    add(o, "uuid", json_string(x->uuid)) || add(o, "bus_id", json_string(x->bus_id)) ||
		    add(o, "name", json_string(x->name)) ||
		    add(o, "memory_mib", json_integer(x->mem_mib)) ||
		    add(o, "nvlinks", json_integer(x->nvlinks_up)) ||
		    add(o, "nvswitch", json_boolean(x->nvswitch)))
			return -1;
	}
	return 0;
}

static int links_json(const struct node_type *t, json_t *arr)
{
	for (int a = 0; a < t->ngpus; a++)
		for (int b = a + 1; b < t->ngpus; b++) {
			const struct topo_link *l = &t->link[a][b];
			json_t *o = json_object();
			if (!o || json_array_append_new(arr, o) != 0)
				return -1;
			if (add(o, "gpus", json_pack("[ii]", a, b)) ||
			    add(o, "kind", json_string(topo_link_kind_name((enum link_kind)l->kind))) ||
			    add(o, "count", json_integer(l->count)) ||
			    add(o, "gbps", json_integer(l->gbps)))
				return -1;
		}
	return 0;
}

static int nics_json(const struct node_type *t, json_t *arr)
{
	for (int i = 0; i < t->nnics; i++) {
		json_t *o = json_object();
		if (!o || json_array_append_new(arr, o) != 0)
			return -1;
		if (add(o, "name", json_string(t->nics[i].name)) ||
		    add(o, "gbps", json_integer(t->nics[i].gbps)) ||
		    add(o, "gpus", mask_json(t->nics[i].gpus, t->ngpus)))
			return -1;
	}
	return 0;
}

json_t *discovery_to_json(const struct discovery *d)
{
	json_t *o, *gpus, *links, *nics;

	if (!d)
		return NULL;
	o = json_object();
	gpus = json_array();
	links = json_array();
	nics = json_array();
	if (!o || !gpus || !links || !nics) {
		json_decref(o);
		json_decref(gpus);
		json_decref(links);
		json_decref(nics);
		return NULL;
	}
	if (add(o, "source", json_string(d->source)) ||
	    add(o, "model", json_string(d->type.gpu ? d->type.gpu->name : "unknown")) ||
	    add(o, "driver", json_string(d->driver)) || add(o, "clique", json_string(d->clique)) ||
	    add(o, "gpus", gpus) || add(o, "links", links) || add(o, "nics", nics) ||
	    gpus_json(d, gpus) || links_json(&d->type, links) || nics_json(&d->type, nics)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- reading ---- */

static enum sl_err SL_PRINTF(3, 4) bad(struct sl_diag *d, const char *field, const char *fmt, ...)
{
	char msg[SL_DIAG_MSG];
	va_list ap;

	size_t k;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* "kind: expected ..." about links[3] reads "links[3].kind: expected ...". */
	k = strspn(msg, "abcdefghijklmnopqrstuvwxyz_[]0123456789");
	if (k > 0 && msg[k] == ':' && msg[k + 1] == ' ')
		sl_diag_set(d, SL_EINVAL, "discovery %s%s%s", strcmp(field, "document") ? field : "",
			    strcmp(field, "document") ? "." : "", msg);
	else
		sl_diag_set(d, SL_EINVAL, "discovery %s: %s", field, msg);
	return SL_EINVAL;
}

static enum sl_err keys_known(const json_t *o, const char *const *keys, const char *field,
			      struct sl_diag *d)
{
	const char *k;
	json_t *v;

	if (!json_is_object(o))
		return bad(d, field, "expected an object");
	json_object_foreach((json_t *)o, k, v) {
		bool ok = false;
		(void)v;
		for (int i = 0; keys[i] && !ok; i++)
			ok = strcmp(k, keys[i]) == 0;
		if (!ok)
			return bad(d, field, "unknown key '%.40s'", k);
	}
	return SL_OK;
}

/* Optional string into dst (size n); absent leaves "" */
static enum sl_err get_str(const json_t *o, const char *key, char *dst, size_t n,
			   const char *field, struct sl_diag *d)
{
	json_t *v = json_object_get(o, key);
	size_t len;

	dst[0] = 0;
	if (!v)
		return SL_OK;
	if (!json_is_string(v))
		return bad(d, field, "%s: expected a string", key);
	len = json_string_length(v);
	if (len >= n) {
		bad(d, field, "%s: %zu bytes; at most %zu", key, len, n - 1);
		return SL_ELIMIT;
	}
	if (strlen(json_string_value(v)) != len)
		return bad(d, field, "%s: contains a NUL byte", key);
	memcpy(dst, json_string_value(v), len + 1);
	return SL_OK;
}

static enum sl_err get_int(const json_t *o, const char *key, bool required, int64_t lo,
			   int64_t hi, int64_t *out, const char *field, struct sl_diag *d)
{
	json_t *v = json_object_get(o, key);

	if (!v) {
		if (required)
			return bad(d, field, "%s: missing", key);
		return SL_OK;
	}
	if (!json_is_integer(v))
		return bad(d, field, "%s: expected an integer", key);
	if (json_integer_value(v) < lo || json_integer_value(v) > hi)
		return bad(d, field, "%s: %lld out of range %lld..%lld", key,
			   (long long)json_integer_value(v), (long long)lo, (long long)hi);
	*out = json_integer_value(v);
	return SL_OK;
}

static enum sl_err get_array(const json_t *o, const char *key, size_t max, json_t **out,
			     struct sl_diag *d)
{
	json_t *v = json_object_get(o, key);

	*out = v;
	if (!v)
		return bad(d, key, "missing; expected an array");
	if (!json_is_array(v))
		return bad(d, key, "expected an array");
	if (json_array_size(v) > max) {
		bad(d, key, "%zu entries; at most %zu", json_array_size(v), max);
		return SL_ELIMIT;
	}
	return SL_OK;
}

static enum sl_err read_gpu(const json_t *o, size_t i, struct discovery *x, struct sl_diag *d)
{
	static const char *const keys[] = {"index", "numa", "uuid", "bus_id", "name", "memory_mib",
					   "nvlinks", "nvswitch", NULL};
	struct disc_gpu *g = &x->gpus[i];
	char field[32];
	int64_t v = 0;
	enum sl_err e;
	json_t *nvs;

	snprintf(field, sizeof(field), "gpus[%zu]", i);
	if ((e = keys_known(o, keys, field, d)) ||
	    (e = get_int(o, "index", true, 0, TOPO_MAX_GPUS - 1, &v, field, d)))
		return e;
	if (v != (int64_t)i)
		return bad(d, field, "index: %lld; expected %zu (GPUs in index order)", (long long)v, i);
	v = 0;
	if ((e = get_int(o, "numa", true, 0, INT8_MAX, &v, field, d)))
		return e;
	x->type.numa[i] = (int8_t)v;
	if ((e = get_str(o, "uuid", g->uuid, sizeof(g->uuid), field, d)) ||
	    (e = get_str(o, "bus_id", g->bus_id, sizeof(g->bus_id), field, d)) ||
	    (e = get_str(o, "name", g->name, sizeof(g->name), field, d)) ||
	    (e = get_int(o, "memory_mib", false, 0, DISC_MEM_MIB_MAX, &g->mem_mib, field, d)))
		return e;
	v = -1;
	if ((e = get_int(o, "nvlinks", false, -1, DISC_NVLINKS_MAX, &v, field, d)))
		return e;
	g->nvlinks_up = (int)v;
	nvs = json_object_get(o, "nvswitch");
	if (nvs && !json_is_boolean(nvs))
		return bad(d, field, "nvswitch: expected true or false");
	g->nvswitch = json_is_true(nvs);
	return SL_OK;
}

static enum sl_err read_link(const json_t *o, size_t i, struct discovery *x, bool *seen,
			     struct sl_diag *d)
{
	static const char *const keys[] = {"gpus", "kind", "count", "gbps", NULL};
	struct node_type *t = &x->type;
	json_t *gp = json_object_get(o, "gpus"), *kind;
	char field[32];
	int64_t a, b, count = 0, gbps = 0;
	int k;
	enum sl_err e;

	snprintf(field, sizeof(field), "links[%zu]", i);
	if ((e = keys_known(o, keys, field, d)))
		return e;
	if (!json_is_array(gp) || json_array_size(gp) != 2 ||
	    !json_is_integer(json_array_get(gp, 0)) || !json_is_integer(json_array_get(gp, 1)))
		return bad(d, field, "gpus: expected two GPU indexes [a, b]");
	a = json_integer_value(json_array_get(gp, 0));
	b = json_integer_value(json_array_get(gp, 1));
	if (a < 0 || b >= t->ngpus || a >= b)
		return bad(d, field, "gpus: [%lld, %lld]; expected 0 <= a < b < %d", (long long)a,
			   (long long)b, t->ngpus);
	if (seen[a * TOPO_MAX_GPUS + b])
		return bad(d, field, "gpus: pair [%lld, %lld] given twice", (long long)a,
			   (long long)b);
	seen[a * TOPO_MAX_GPUS + b] = true;
	kind = json_object_get(o, "kind");
	k = json_is_string(kind) ? topo_link_kind_parse(json_string_value(kind)) : -1;
	if (k <= LINK_SELF)
		return bad(d, field, "kind: expected nvswitch, nvlink, hccs, pcie-switch, "
			   "pcie-hostbridge, numa or cross-socket");
	if ((e = get_int(o, "count", false, 0, UINT8_MAX, &count, field, d)) ||
	    (e = get_int(o, "gbps", true, t->gpu ? 1 : 0, UINT16_MAX, &gbps, field, d)))
		return e;
	if (count > 0 && k != LINK_NVLINK && k != LINK_HCCS && k != LINK_NVSWITCH)
		return bad(d, field, "count: %lld, but a link count only applies to nvswitch, "
			   "nvlink and hccs", (long long)count);
	if (k == LINK_NVLINK && count == 0)
		return bad(d, field, "count: an nvlink pair needs its link count (1 or more)");
	t->link[a][b] = t->link[b][a] =
		(struct topo_link){(uint8_t)k, (uint8_t)count, (uint16_t)gbps};
	return SL_OK;
}

static enum sl_err read_nic(const json_t *o, size_t i, struct discovery *x, struct sl_diag *d)
{
	static const char *const keys[] = {"name", "gbps", "gpus", NULL};
	struct topo_nic *nic = &x->type.nics[i];
	json_t *gp = json_object_get(o, "gpus"), *v;
	char field[32];
	int64_t gbps = 0;
	size_t j;
	enum sl_err e;

	snprintf(field, sizeof(field), "nics[%zu]", i);
	if ((e = keys_known(o, keys, field, d)) ||
	    (e = get_str(o, "name", nic->name, sizeof(nic->name), field, d)) ||
	    (e = get_int(o, "gbps", false, 0, DISC_NIC_GBPS_MAX, &gbps, field, d)))
		return e;
	if (!nic->name[0])
		return bad(d, field, "name: missing or empty");
	for (size_t k = 0; k < i; k++)
		if (strcmp(x->type.nics[k].name, nic->name) == 0)
			return bad(d, field, "name: '%s' given twice", nic->name);
	nic->gbps = (int)gbps;
	if (gp && !json_is_array(gp))
		return bad(d, field, "gpus: expected an array of GPU indexes");
	json_array_foreach(gp, j, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) >= x->type.ngpus)
			return bad(d, field, "gpus[%zu]: expected a GPU index 0..%d", j,
				   x->type.ngpus - 1);
		nic->gpus |= (gpumask_t)1 << json_integer_value(v);
	}
	return SL_OK;
}

static enum sl_err read_all(const json_t *o, struct discovery *x, bool *seen,
			    struct sl_diag *d)
{
	static const char *const keys[] = {"source", "model", "driver", "clique", "gpus",
					   "links", "nics", NULL};
	json_t *gpus, *links, *nics = NULL, *v;
	char model[TOPO_NAME_MAX];
	size_t i, npairs;
	enum sl_err e;

	if ((e = keys_known(o, keys, "document", d)) ||
	    (e = get_str(o, "source", x->source, sizeof(x->source), "document", d)) ||
	    (e = get_str(o, "model", model, sizeof(model), "document", d)) ||
	    (e = get_str(o, "driver", x->driver, sizeof(x->driver), "document", d)) ||
	    (e = get_str(o, "clique", x->clique, sizeof(x->clique), "document", d)))
		return e;
	if (!json_object_get(o, "model"))
		return bad(d, "model", "missing; expected a catalog model name or \"unknown\"");
	x->type.gpu = strcmp(model, "unknown") == 0 ? NULL : catalog_gpu_find(model);
	if (!x->type.gpu && strcmp(model, "unknown") != 0)
		return bad(d, "model", "'%s' is not in the catalog; expected a catalog model name "
			   "or \"unknown\"", model);
	if ((e = get_array(o, "gpus", TOPO_MAX_GPUS, &gpus, d)))
		return e;
	if (json_array_size(gpus) == 0)
		return bad(d, "gpus", "empty; a node has at least one GPU");
	x->type.ngpus = (int)json_array_size(gpus);
	json_array_foreach(gpus, i, v) {
		if ((e = read_gpu(v, i, x, d)))
			return e;
		x->type.link[i][i] = (struct topo_link){LINK_SELF, 0, 0};
	}
	npairs = (size_t)(x->type.ngpus * (x->type.ngpus - 1) / 2);
	if ((e = get_array(o, "links", npairs, &links, d)))
		return e;
	json_array_foreach(links, i, v) {
		if ((e = read_link(v, i, x, seen, d)))
			return e;
	}
	if (json_array_size(links) != npairs)
		return bad(d, "links", "%zu pairs; expected every pair of the %d GPUs (%zu)",
			   json_array_size(links), x->type.ngpus, npairs);
	if (json_object_get(o, "nics") && (e = get_array(o, "nics", TOPO_MAX_NICS, &nics, d)))
		return e;
	json_array_foreach(nics, i, v) {
		if ((e = read_nic(v, i, x, d)))
			return e;
		x->type.nnics++;
	}
	return SL_OK;
}

enum sl_err discovery_from_json(const json_t *o, struct discovery *out, struct sl_diag *d)
{
	static const size_t seen_n = TOPO_MAX_GPUS * TOPO_MAX_GPUS;
	struct discovery *x;
	bool *seen;
	enum sl_err e;

	if (!o || !out)
		return sl_diag_set(d, SL_EINVAL, "discovery: no document");
	x = calloc(1, sizeof(*x));
	seen = calloc(seen_n, sizeof(*seen));
	if (!x || !seen) {
		free(x);
		free(seen);
		return sl_diag_set(d, SL_ENOMEM, "out of memory reading a discovery");
	}
	memcpy(x->type.name, "discovered", sizeof("discovered"));
	e = read_all(o, x, seen, d);
	if (!e)
		*out = *x;
	free(x);
	free(seen);
	return e;
}

/* sim_history.c - a controller's lease history as replay pods
 * (sim_history.h). */
#include "sim_history.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "json_limits.h"

static bool get_time(const json_t *o, const char *key, int64_t *v)
{
	const json_t *x = json_object_get(o, key);
	if (!json_is_integer(x))
		return false;
	*v = (int64_t)json_integer_value(x);
	return *v >= 0 && *v < SIM_MAX_TIME;
}

enum sl_err sim_parse_history(const char *text, size_t len, const char *file,
			      struct sim_pod **pods, int *n, char **fleet, int64_t *t0,
			      int *skipped, struct sl_diag *d)
{
	*pods = NULL;
	*n = 0;
	*fleet = NULL;
	*t0 = 0;
	*skipped = 0;
	json_error_t je;
	json_t *root = json_loadb(text, len, 0, &je);
	if (!root || !json_is_object(root)) {
		json_decref(root);
		return sl_diag_set(d, SL_EPARSE, "%s: expected the JSON object of GET "
				   "/v1/placement/history%s%s", file, root ? "" : ": ", root ? "" : je.text);
	}
	const json_t *ls = json_object_get(root, "leases"), *fy = json_object_get(root, "fleet");
	if (!json_is_array(ls)) {
		json_decref(root);
		return sl_diag_set(d, SL_EPARSE, "%s: no \"leases\" array", file);
	}
	size_t nl = json_array_size(ls);
	if (nl > SIM_MAX_ROWS) {
		json_decref(root);
		return sl_diag_set(d, SL_ELIMIT, "%s: %zu leases; at most %d", file, nl, SIM_MAX_ROWS);
	}
	struct sim_pod *p = calloc(nl + 1, sizeof(*p));
	if (!p || (json_is_string(fy) && !(*fleet = strdup(json_string_value(fy))))) {
		free(p);
		json_decref(root);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	int k = 0;
	int64_t first = -1;
	enum sl_err e = SL_OK;
	for (size_t i = 0; i < nl && e == SL_OK; i++) {
		const json_t *l = json_array_get(ls, i);
		int64_t sub, st = -1, en = -1;
		const json_t *g = json_object_get(l, "gpus"), *pn = json_object_get(l, "per_node"),
			     *ms = json_object_get(l, "models"), *id = json_object_get(l, "id");
		/* A share (gpu_milli) or a lease without GPUs (cpu_milli, memory_mib) has
		 * gpus 0. */
		const json_t *gm = json_object_get(l, "gpu_milli"), *cm = json_object_get(l, "cpu_milli"),
			     *mm = json_object_get(l, "memory_mib");
		json_int_t milli = json_integer_value(gm), cpu = json_integer_value(cm),
			   mem = json_integer_value(mm);
		bool other = (json_is_integer(gm) && milli >= 1 && milli <= 999) ||
			     (json_is_integer(cm) && cpu > 0) || (json_is_integer(mm) && mem > 0);
		if (!json_is_object(l) || !get_time(l, "submit_s", &sub) || !json_is_integer(g) ||
		    json_integer_value(g) < (other ? 0 : 1) || json_integer_value(g) > 100000 ||
		    (gm && (!json_is_integer(gm) || milli < 1 || milli > 999 ||
			    json_integer_value(g) != 0)) ||
		    (cm && (!json_is_integer(cm) || cpu < 0 || cpu > SIM_MAX_CPU_MILLI)) ||
		    (mm && (!json_is_integer(mm) || mem < 0 || mem > SIM_MAX_MEM_MIB))) {
			e = sl_diag_set(d, SL_EPARSE, "%s: lease %zu: expected gpus (1..100000, or 0 "
					"with gpu_milli 1..999, cpu_milli or memory_mib) and submit_s",
					file, i);
			break;
		}
		bool started = get_time(l, "start_s", &st), ended = get_time(l, "end_s", &en);
		if (!started) {
			if (ended) {
				(*skipped)++; /* ended while waiting: never held GPUs */
				continue;
			}
		}
		struct sim_pod *q = &p[k];
		snprintf(q->name, sizeof(q->name), "%s", json_is_string(id) ? json_string_value(id) : "lease");
		q->gpus = (int)json_integer_value(g);
		q->gpu_milli = (int)milli;
		q->cpu_milli = (int)cpu;
		q->mem_mib = mem;
		q->per_node = json_is_integer(pn) ? (int)json_integer_value(pn) : 0;
		for (size_t m = 0; json_is_array(ms) && m < json_array_size(ms) && q->nmodels < PLACE_MAX_MODELS; m++)
			if (json_is_string(json_array_get(ms, m)))
				snprintf(q->models[q->nmodels++], sizeof(q->models[0]), "%s",
					 json_string_value(json_array_get(ms, m)));
		q->start = sub;
		q->duration = started && ended && en >= st ? en - st : -1;
		snprintf(q->plan, sizeof(q->plan), "%s",
			 json_is_string(json_object_get(l, "plan")) ?
			 json_string_value(json_object_get(l, "plan")) : "");
		if (first < 0 || sub < first)
			first = sub;
		k++;
	}
	json_decref(root);
	if (e) {
		free(p);
		free(*fleet);
		*fleet = NULL;
		return e;
	}
	for (int i = 0; i < k; i++)
		p[i].start -= first;
	*pods = p;
	*n = k;
	*t0 = first < 0 ? 0 : first;
	return SL_OK;
}

/* ctl_workload.c - the placement policy and the learned workload
 * (ctl_workload.h): the wiring of core/place's place_wmodel to the store's
 * meta table and to the placer. */
#include "ctl_workload.h"

#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"
#include "log.h"
#include "place_frag.h"
#include "place_wmodel.h"

#define META_KEY "placement.workload"

bool ctl_placement_parse(const char *name, bool *bestfit)
{
	if (!name || !strcmp(name, "frag"))
		*bestfit = false;
	else if (!strcmp(name, "bestfit"))
		*bestfit = true;
	else
		return false;
	return true;
}

const char *ctl_placement_name(const struct ctl *c)
{
	return c->bestfit ? "bestfit" : "frag";
}

static enum sl_err model_open(struct ctl *c, struct sl_diag *d)
{
	if (c->wmodel)
		return SL_OK;
	if (place_wmodel_new(0, &c->wmodel))
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	char *text = NULL;
	struct sl_diag md;
	sl_diag_clear(&md);
	enum sl_err e = store_meta_get(c->store, META_KEY, &text, &md);
	if (e == SL_OK && text && text[0]) {
		if (place_wmodel_decode(c->wmodel, text, &md))
			sl_log_warn("stored placement workload ignored", "line=%d error=%s", md.line,
				    md.msg);
		else
			sl_log_info("placement workload restored", "requests=%d total=%lld",
				    place_wmodel_seen(c->wmodel), place_wmodel_total(c->wmodel));
	} else if (e == SL_ENOMEM) {
		free(text);
		return sl_diag_set(d, e, "out of memory");
	}
	free(text);
	return SL_OK;
}

enum sl_err ctl_workload_apply(struct ctl *c, struct sl_diag *d)
{
	if (c->bestfit)
		return placer_set_workload(c->placer, NULL, 0, d);
	enum sl_err e = model_open(c, d);
	if (!e)
		e = place_wmodel_apply(c->wmodel, c->placer, d);
	return e;
}

void ctl_workload_observe(struct ctl *c, const struct place_request *pr)
{
	if (c->bestfit || !c->wmodel)
		return;
	bool refresh = place_wmodel_observe(c->wmodel, pr);
	c->wmodel_unsaved = true;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (refresh && place_wmodel_apply(c->wmodel, c->placer, &d))
		sl_log_warn("placement workload not refreshed", "error=%s", d.msg);
}

void ctl_workload_save(struct ctl *c)
{
	if (!c->wmodel_unsaved || !c->wmodel)
		return;
	c->wmodel_unsaved = false;
	char *text = NULL;
	if (place_wmodel_encode(c->wmodel, &text)) {
		sl_log_error("placement workload not saved", "error=%s", "out of memory");
		c->fatal = true;
		return;
	}
	ctl_meta_set(c, META_KEY, text); /* fatal on failure */
	free(text);
}

json_t *ctl_workload_json(struct ctl *c)
{
	json_t *o = json_pack("{s:s}", "policy", ctl_placement_name(c));
	if (!o || c->bestfit || !c->wmodel)
		return o;
	const struct place_wmodel_class *cl;
	int n = place_wmodel_classes(c->wmodel, &cl);
	int64_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += cl[i].weight;
	json_t *arr = json_array();
	for (int i = 0; arr && i < n; i++)
		json_array_append_new(arr, json_pack("{s:i, s:i, s:i, s:I, s:s, s:f}", "gpus",
						     cl[i].gpus, "gpu_milli", cl[i].gpu_milli,
						     "cpu_milli", cl[i].cpu_milli, "memory_mib",
						     (json_int_t)cl[i].mem_mib, "models", cl[i].models,
						     "share",
						     sum ? (double)cl[i].weight / (double)sum : 0.0));
	json_object_set_new(o, "window", json_integer(PLACE_WMODEL_WINDOW));
	json_object_set_new(o, "seen", json_integer(place_wmodel_seen(c->wmodel)));
	json_object_set_new(o, "total", json_integer(place_wmodel_total(c->wmodel)));
	json_object_set_new(o, "prior", json_integer(PLACE_WMODEL_PRIOR));
	json_object_set_new(o, "classes", arr ? arr : json_array());
	return o;
}

void ctl_workload_free(struct ctl *c)
{
	place_wmodel_free(c->wmodel);
	c->wmodel = NULL;
}

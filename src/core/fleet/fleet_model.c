/* fleet_model.c - GPU models a fleet brings along that the catalog does not
 * know (older parts such as a T4, or models a provider does not disclose).
 *
 * The catalog stays the constant table of documented models; a fleet may add
 * its own with the figures it knows. Each custom model is its own allocation
 * so node types can point at it (node_type.gpu) while the list grows. Lookups
 * by name try the catalog first, so a custom model can never shadow one. */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fleet.h"

const struct gpu_model *fleet_find_model(const struct fleet *f, const char *name)
{
	if (!name)
		return NULL;
	const struct gpu_model *m = catalog_gpu_find(name);
	for (int i = 0; !m && f && i < f->nmodels; i++)
		if (!strcmp(f->models[i]->name, name))
			m = f->models[i];
	return m;
}

enum sl_err fleet_add_model(struct fleet *f, const struct gpu_model *m,
			    const struct gpu_model **out, struct sl_diag *d)
{
	if (out)
		*out = NULL;
	if (!f || !m || !m->name || !fleet_name_valid(m->name))
		return sl_diag_set(d, SL_EINVAL, "a GPU model needs a name of 1..%d characters "
				   "of [A-Za-z0-9._-]", FLEET_NAME_MAX);
	if (fleet_find_model(f, m->name))
		return sl_diag_set(d, SL_EEXIST, "GPU model '%s' already exists", m->name);
	if (m->mem_gib < 0 || m->pcie_gen < 0 || m->pcie_gen > 6 || m->ic_gbps < 0 ||
	    m->link_gbps < 0 || m->bf16_tflops < 0 || m->domain_gpus < 0)
		return sl_diag_set(d, SL_EINVAL, "GPU model '%s': negative figure or PCIe "
				   "generation outside 0..6", m->name);
	if (f->nmodels >= FLEET_MAX_MODELS)
		return sl_diag_set(d, SL_ELIMIT, "more than %d custom GPU models",
				   FLEET_MAX_MODELS);
	if (sl_grow(&f->models, &f->capmodels, f->nmodels + 1, FLEET_MAX_MODELS))
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	struct gpu_model *c = malloc(sizeof(*c));
	char *name = sl_strdup(m->name);
	char *vendor = sl_strdup(m->vendor ? m->vendor : "unknown");
	if (!c || !name || !vendor) {
		free(c);
		free(name);
		free(vendor);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	*c = *m;
	c->name = name;
	c->vendor = vendor;
	f->models[f->nmodels++] = c;
	if (out)
		*out = c;
	return SL_OK;
}

void fleet_models_release(struct fleet *f)
{
	for (int i = 0; i < f->nmodels; i++) {
		free((char *)f->models[i]->name);
		free((char *)f->models[i]->vendor);
		free(f->models[i]);
	}
	free(f->models);
	f->models = NULL;
	f->nmodels = f->capmodels = 0;
}

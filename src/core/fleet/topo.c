/* topo.c - link kinds, the bandwidth model and the node-type builder.
 *
 * A node type's link table is filled in layers, weakest first: topo_type_init
 * lays down the host relation implied by NUMA placement, topo_set_pcie_switch
 * raises pairs behind one switch, topo_set_link sets NVLink/NVSwitch/HCCS pairs.
 * Built-in types (topo_builtin.c), fleet files and the nvidia-smi parser all
 * go through these few functions, so every table obeys the same invariants:
 * symmetric, self = LINK_SELF, kinds and bandwidths consistent.
 *
 * Bandwidth model (GB/s per pair, bidirectional). It only has to rank pairs
 * the way real copies would, and to be explainable:
 *   nvswitch         the model's full per-GPU bandwidth (ic_gbps): a switch
 *                    gives every pair all of a GPU's links
 *   nvlink           count x link_gbps (count 0: all of a GPU's links)
 *   hccs             count x link_gbps (count 0: one link); or explicit
 *   pcie-switch      P = one direction of the model's PCIe x16 link, i.e.
 *                    catalog_pcie_gbps(gen) / 2: a peer-to-peer copy between two
 *                    devices behind one switch is bounded by each device's x16
 *                    link in the direction of the copy (the same way NCCL's
 *                    topology model rates PCI paths). Using the bidirectional
 *                    figure would rank a PCIe pair above Ascend 910B's 56 GB/s
 *                    HCCS pair, which is wrong.
 *   pcie-hostbridge  3/4 P (the root complex adds a hop and shares ports)
 *   numa             1/2 P (across host bridges inside one socket)
 *   cross-socket     3/8 P (over UPI/xGMI, shared with memory traffic)
 * For every catalog model with an interconnect, nvswitch/nvlink (>= 2 links)
 * and hccs exceed pcie-switch, which exceeds pcie-hostbridge > numa >
 * cross-socket > 0 (tests/unit/test_topo.c checks this for the whole catalog).
 */
#include "topo.h"

#include <stdio.h>
#include <string.h>

static const char *const kind_names[LINK__COUNT] = {
	[LINK_SELF] = "self",
	[LINK_CROSS_SOCKET] = "cross-socket",
	[LINK_NUMA] = "numa",
	[LINK_PCIE_HOSTBRIDGE] = "pcie-hostbridge",
	[LINK_PCIE_SWITCH] = "pcie-switch",
	[LINK_HCCS] = "hccs",
	[LINK_NVLINK] = "nvlink",
	[LINK_NVSWITCH] = "nvswitch",
};

const char *topo_link_kind_name(enum link_kind k)
{
	return (unsigned)k < LINK__COUNT ? kind_names[k] : "unknown";
}

int topo_link_kind_parse(const char *name)
{
	if (!name)
		return -1;
	for (int k = 0; k < LINK__COUNT; k++)
		if (strcmp(kind_names[k], name) == 0)
			return k;
	return -1;
}

/* One direction of the model's x16 link; see the file comment. */
static int pcie_pair_gbps(const struct node_type *t)
{
	return t->gpu ? catalog_pcie_gbps(t->gpu->pcie_gen) / 2 : 0;
}

int topo_kind_gbps(const struct node_type *t, enum link_kind kind, int count)
{
	const struct gpu_model *g = t ? t->gpu : NULL;
	int p;

	if (!g)
		return 0;
	p = pcie_pair_gbps(t);
	switch (kind) {
	case LINK_SELF:
		return 0;
	case LINK_NVSWITCH:
		return g->ic_gbps;
	case LINK_NVLINK:
		return count > 0 ? count * g->link_gbps : g->ic_gbps;
	case LINK_HCCS:
		return (count > 0 ? count : 1) * g->link_gbps;
	case LINK_PCIE_SWITCH:
		return p;
	case LINK_PCIE_HOSTBRIDGE:
		return p * 3 / 4;
	case LINK_NUMA:
		return p / 2;
	case LINK_CROSS_SOCKET:
		return p * 3 / 8;
	case LINK__COUNT:
		break;
	}
	return 0;
}

static void put_pair(struct node_type *t, int a, int b, int kind, int count, int gbps)
{
	struct topo_link l = {(uint8_t)kind, (uint8_t)count, (uint16_t)gbps};
	t->link[a][b] = l;
	t->link[b][a] = l;
}

/* The relation two GPUs have through the host alone. */
static int host_kind(const struct node_type *t, int a, int b)
{
	return t->numa[a] == t->numa[b] ? LINK_NUMA : LINK_CROSS_SOCKET;
}

enum sl_err topo_type_init(struct node_type *t, const char *name,
			   const struct gpu_model *gpu, int ngpus, int cpus,
			   int mem_gib, const int8_t *numa, struct sl_diag *d)
{
	size_t len;

	if (!t)
		return sl_diag_set(d, SL_EINVAL, "node type: no storage given");
	memset(t, 0, sizeof(*t));
	len = name ? strlen(name) : 0;
	if (len == 0)
		return sl_diag_set(d, SL_EINVAL, "node type: empty name");
	if (len >= TOPO_NAME_MAX)
		return sl_diag_set(d, SL_ELIMIT,
				   "node type name '%.40s...' is %zu bytes; at most %d allowed",
				   name, len, TOPO_NAME_MAX - 1);
	if (!gpu)
		return sl_diag_set(d, SL_EINVAL, "node type %s: no GPU model", name);
	if (ngpus < 1 || ngpus > TOPO_MAX_GPUS)
		return sl_diag_set(d, SL_EINVAL,
				   "node type %s: %d GPUs; expected 1 to %d", name, ngpus,
				   TOPO_MAX_GPUS);
	if (cpus < 0 || mem_gib < 0)
		return sl_diag_set(d, SL_EINVAL,
				   "node type %s: negative cpus (%d) or memory (%d GiB)", name,
				   cpus, mem_gib);
	for (int i = 0; numa && i < ngpus; i++)
		if (numa[i] < 0)
			return sl_diag_set(d, SL_EINVAL,
					   "node type %s: GPU %d has NUMA node %d; expected >= 0",
					   name, i, numa[i]);
	memcpy(t->name, name, len + 1);
	t->gpu = gpu;
	t->ngpus = ngpus;
	t->cpus = cpus;
	t->mem_gib = mem_gib;
	for (int i = 0; i < ngpus; i++)
		t->numa[i] = numa ? numa[i] : 0;
	for (int a = 0; a < ngpus; a++) {
		put_pair(t, a, a, LINK_SELF, 0, 0);
		for (int b = a + 1; b < ngpus; b++) {
			int k = host_kind(t, a, b);
			put_pair(t, a, b, k, 0, topo_kind_gbps(t, (enum link_kind)k, 0));
		}
	}
	return SL_OK;
}

static enum sl_err check_pair(const struct node_type *t, int a, int b, struct sl_diag *d)
{
	if (a < 0 || a >= t->ngpus || b < 0 || b >= t->ngpus)
		return sl_diag_set(d, SL_EINVAL,
				   "node type %s: GPU pair (%d, %d) out of range; expected 0 to %d",
				   t->name, a, b, t->ngpus - 1);
	if (a == b)
		return sl_diag_set(d, SL_EINVAL,
				   "node type %s: link from GPU %d to itself; a pair needs two GPUs",
				   t->name, a);
	return SL_OK;
}

enum sl_err topo_set_link(struct node_type *t, int a, int b, enum link_kind kind,
			  int count, int gbps, struct sl_diag *d)
{
	enum sl_err e;

	if (!t || !t->gpu)
		return sl_diag_set(d, SL_EINVAL, "node type not initialised (topo_type_init)");
	e = check_pair(t, a, b, d);
	if (e)
		return e;
	if (kind <= LINK_SELF || kind >= LINK__COUNT)
		return sl_diag_set(d, SL_EINVAL,
				   "node type %s: pair (%d, %d): invalid link kind %d", t->name,
				   a, b, (int)kind);
	if (count < 0 || count > UINT8_MAX)
		return sl_diag_set(d, SL_EINVAL,
				   "node type %s: pair (%d, %d): link count %d; expected 0 to %d",
				   t->name, a, b, count, UINT8_MAX);
	if (count > 0 && kind != LINK_NVLINK && kind != LINK_HCCS)
		return sl_diag_set(d, SL_EINVAL,
				   "node type %s: pair (%d, %d): a link count only applies to "
				   "nvlink and hccs, not %s", t->name, a, b,
				   topo_link_kind_name(kind));
	if (gbps < 0 || gbps > UINT16_MAX)
		return sl_diag_set(d, SL_EINVAL,
				   "node type %s: pair (%d, %d): %d GB/s; expected 0 to %d",
				   t->name, a, b, gbps, UINT16_MAX);
	if (gbps == 0)
		gbps = topo_kind_gbps(t, kind, count);
	if (gbps <= 0 || gbps > UINT16_MAX) {
		sl_diag_set(d, SL_EINVAL,
			    "node type %s: pair (%d, %d): cannot derive the bandwidth of %s "
			    "for model %s", t->name, a, b, topo_link_kind_name(kind),
			    t->gpu->name);
		sl_diag_hint(d, "give the pair's GB/s explicitly, or use a kind the model has "
			     "(its interconnect is %s)", catalog_ic_name(t->gpu->ic));
		return SL_EINVAL;
	}
	put_pair(t, a, b, kind, count, gbps);
	return SL_OK;
}

enum sl_err topo_set_pcie_switch(struct node_type *t, gpumask_t mask, struct sl_diag *d)
{
	int gbps;

	if (!t || !t->gpu)
		return sl_diag_set(d, SL_EINVAL, "node type not initialised (topo_type_init)");
	if (mask == 0)
		return sl_diag_set(d, SL_EINVAL, "node type %s: empty PCIe switch", t->name);
	if (t->ngpus < 32 && (mask >> t->ngpus) != 0)
		return sl_diag_set(d, SL_EINVAL,
				   "node type %s: PCIe switch names a GPU beyond GPU %d",
				   t->name, t->ngpus - 1);
	gbps = topo_kind_gbps(t, LINK_PCIE_SWITCH, 0);
	for (int a = 0; a < t->ngpus; a++)
		for (int b = a + 1; b < t->ngpus; b++)
			if ((mask >> a & 1u) && (mask >> b & 1u) &&
			    t->link[a][b].kind < LINK_PCIE_SWITCH)
				put_pair(t, a, b, LINK_PCIE_SWITCH, 0, gbps);
	return SL_OK;
}

enum sl_err topo_add_nic(struct node_type *t, const char *name, int gbps,
			 gpumask_t gpus, struct sl_diag *d)
{
	struct topo_nic *n;
	size_t len = name ? strlen(name) : 0;

	if (!t || !t->gpu)
		return sl_diag_set(d, SL_EINVAL, "node type not initialised (topo_type_init)");
	if (t->nnics >= TOPO_MAX_NICS)
		return sl_diag_set(d, SL_ELIMIT, "node type %s: more than %d NICs", t->name,
				   TOPO_MAX_NICS);
	if (len == 0 || len >= sizeof(n->name))
		return sl_diag_set(d, SL_EINVAL,
				   "node type %s: NIC name must be 1 to %zu bytes", t->name,
				   sizeof(n->name) - 1);
	if (gbps < 0)
		return sl_diag_set(d, SL_EINVAL, "node type %s: NIC %s: negative speed",
				   t->name, name);
	if (t->ngpus < 32 && (gpus >> t->ngpus) != 0)
		return sl_diag_set(d, SL_EINVAL,
				   "node type %s: NIC %s names a GPU beyond GPU %d", t->name,
				   name, t->ngpus - 1);
	n = &t->nics[t->nnics++];
	memset(n, 0, sizeof(*n));
	memcpy(n->name, name, len + 1);
	n->gbps = gbps;
	n->gpus = gpus;
	return SL_OK;
}

enum sl_err topo_add_group(struct node_type *t, gpumask_t gpus, struct sl_diag *d)
{
	if (!t || !t->gpu)
		return sl_diag_set(d, SL_EINVAL, "node type not initialised (topo_type_init)");
	if (t->ngroups >= TOPO_MAX_GROUPS)
		return sl_diag_set(d, SL_ELIMIT, "node type %s: more than %d groups", t->name,
				   TOPO_MAX_GROUPS);
	if (gpus == 0 || (t->ngpus < 32 && (gpus >> t->ngpus) != 0))
		return sl_diag_set(d, SL_EINVAL,
				   "node type %s: group must name GPUs 0 to %d", t->name,
				   t->ngpus - 1);
	for (int i = 0; i < t->ngroups; i++)
		if (t->groups[i] & gpus)
			return sl_diag_set(d, SL_EINVAL,
					   "node type %s: groups %d and %d overlap", t->name, i,
					   t->ngroups);
	t->groups[t->ngroups++] = gpus;
	return SL_OK;
}

enum sl_err topo_validate(const struct node_type *t, struct sl_diag *d)
{
	if (!t || !t->gpu || t->ngpus < 1 || t->ngpus > TOPO_MAX_GPUS)
		return sl_diag_set(d, SL_EINVAL, "node type not initialised (topo_type_init)");
	for (int a = 0; a < t->ngpus; a++) {
		if (t->link[a][a].kind != LINK_SELF)
			return sl_diag_set(d, SL_EINVAL, "node type %s: GPU %d not self-linked",
					   t->name, a);
		for (int b = a + 1; b < t->ngpus; b++) {
			const struct topo_link *x = &t->link[a][b], *y = &t->link[b][a];
			if (memcmp(x, y, sizeof(*x)) != 0)
				return sl_diag_set(d, SL_EINVAL,
						   "node type %s: pair (%d, %d) is not symmetric",
						   t->name, a, b);
			if (x->kind <= LINK_SELF || x->kind >= LINK__COUNT || x->gbps == 0)
				return sl_diag_set(d, SL_EINVAL,
						   "node type %s: pair (%d, %d) has no valid link",
						   t->name, a, b);
		}
	}
	if (t->nnics < 0 || t->nnics > TOPO_MAX_NICS || t->ngroups < 0 ||
	    t->ngroups > TOPO_MAX_GROUPS)
		return sl_diag_set(d, SL_EINVAL, "node type %s: NIC or group count out of range",
				   t->name);
	return SL_OK;
}

/* topo_builtin.c - the node types suanli knows without a fleet file.
 *
 * Each type is one row of a spec table (model, host, NUMA layout, PCIe
 * switches, how GPUs are linked, NIC rails, partitions) that is expanded by the
 * same builder functions a fleet file uses (topo.c). Rows rather than 8x8
 * literal matrices: a row can be checked against the vendor's block diagram at
 * a glance, and the builder keeps every table symmetric by construction.
 *
 * Host figures (cores, memory) are those of the vendor's reference system for
 * the platform; where no such system exists (HGX A800/H800, PCIe servers) the
 * row says which platform it follows.
 */
#include "topo.h"

#include <stdio.h>
#include <string.h>

enum fabric {
	FAB_NONE,        /* PCIe only */
	FAB_NVSWITCH,    /* every pair through NVSwitch */
	FAB_NVL_BRIDGE,  /* NVLink bridge across each PCIe switch pair */
	FAB_HCCS_MESH,   /* HCCS full mesh between all NPUs */
	FAB_HCCS_GROUPS, /* HCCS full mesh inside each group only */
};

enum nic_layout {
	NIC_PER_GPU,    /* rail i = GPU i */
	NIC_PER_SWITCH, /* one NIC per PCIe switch, rail = the switch's GPUs */
	NIC_TWO_PER_SWITCH,
};

#define SPEC_MAX_SW 8

struct builtin_spec {
	const char *name;
	const char *model;
	int ngpus, cpus, mem_gib;
	int8_t numa[TOPO_MAX_GPUS];
	enum fabric fabric;
	int bridge_links;          /* FAB_NVL_BRIDGE: NVLink links per bridged pair */
	gpumask_t sw[SPEC_MAX_SW]; /* PCIe switches, 0-terminated */
	enum nic_layout nics;
	int nic_gbps;
	const char *nic_prefix;    /* NIC names are prefix0, prefix1, ... */
	gpumask_t groups[TOPO_MAX_GROUPS]; /* 0-terminated */
	bool groups_strict;
};

#define SW_PAIRS {0x03, 0x0c, 0x30, 0xc0}
#define NUMA_2x4 {0, 0, 0, 0, 1, 1, 1, 1}
#define NUMA_4x2 {0, 0, 1, 1, 2, 2, 3, 3}

static const struct builtin_spec specs[] = {
	/* NVIDIA DGX H100 datasheet / user guide: 2x Xeon Platinum 8480C (56 cores
	 * each = 112), 2 TB memory, 8x ConnectX-7 400 Gb/s (one compute NIC per
	 * GPU, behind the GPU's PCIe switch), NVSwitch between all 8 GPUs. */
	{"hgx-h100-8", "h100-sxm", 8, 112, 2048, NUMA_2x4, FAB_NVSWITCH, 0, SW_PAIRS,
	 NIC_PER_GPU, 400, "mlx5_", {0}, false},
	/* NVIDIA DGX H200 datasheet: same host as DGX H100 (112 cores, 2 TB,
	 * 8x ConnectX-7 400 Gb/s). */
	{"hgx-h200-8", "h200-sxm", 8, 112, 2048, NUMA_2x4, FAB_NVSWITCH, 0, SW_PAIRS,
	 NIC_PER_GPU, 400, "mlx5_", {0}, false},
	/* NVIDIA DGX A100 user guide: 2x AMD EPYC 7742 (64 cores each = 128),
	 * 1 TB memory, 8x ConnectX-6 200 Gb/s HDR; each of the four PCIe switches
	 * carries two GPUs and two compute NICs. */
	{"hgx-a100-8", "a100-sxm", 8, 128, 1024, NUMA_2x4, FAB_NVSWITCH, 0, SW_PAIRS,
	 NIC_TWO_PER_SWITCH, 200, "mlx5_", {0}, false},
	/* No DGX A800 exists; OEM HGX A800 servers follow the HGX A100 reference
	 * layout above (128 cores, 1 TB, 8x 200 Gb/s). */
	{"hgx-a800-8", "a800-sxm", 8, 128, 1024, NUMA_2x4, FAB_NVSWITCH, 0, SW_PAIRS,
	 NIC_TWO_PER_SWITCH, 200, "mlx5_", {0}, false},
	/* No DGX H800 exists; OEM HGX H800 servers follow the DGX H100 layout. */
	{"hgx-h800-8", "h800-sxm", 8, 112, 2048, NUMA_2x4, FAB_NVSWITCH, 0, SW_PAIRS,
	 NIC_PER_GPU, 400, "mlx5_", {0}, false},
	/* NVIDIA DGX B200 datasheet: 2x Xeon Platinum 8570 (56 cores each = 112),
	 * 2 TB memory, 8 single-port ConnectX-7 400 Gb/s. */
	{"hgx-b200-8", "b200", 8, 112, 2048, NUMA_2x4, FAB_NVSWITCH, 0, SW_PAIRS,
	 NIC_PER_GPU, 400, "mlx5_", {0}, false},
	/* NVIDIA DGX B300 datasheet: 2x Xeon 6776P (64 cores each = 128), 2 TB
	 * memory, 8x ConnectX-8 SuperNIC 800 Gb/s. */
	{"hgx-b300-8", "b300", 8, 128, 2048, NUMA_2x4, FAB_NVSWITCH, 0, SW_PAIRS,
	 NIC_PER_GPU, 800, "mlx5_", {0}, false},
	/* NVIDIA GB200 NVL72: 18 compute trays of 2 Grace (72 Arm cores each) and
	 * 4 B200; 480 GB LPDDR5X per Grace; each Grace is NUMA-local to two GPUs;
	 * ConnectX-7 400 Gb/s per GPU; every GPU pair goes through the NVLink
	 * switch trays at the full 1.8 TB/s. */
	{"gb200-nvl72-tray", "gb200", 4, 144, 960, {0, 0, 1, 1}, FAB_NVSWITCH, 0, {0},
	 NIC_PER_GPU, 400, "mlx5_", {0}, false},
	/* NVIDIA GB300 NVL72: same tray shape with Blackwell Ultra and one
	 * ConnectX-8 800 Gb/s per GPU. */
	{"gb300-nvl72-tray", "gb300", 4, 144, 960, {0, 0, 1, 1}, FAB_NVSWITCH, 0, {0},
	 NIC_PER_GPU, 800, "mlx5_", {0}, false},
	/* A representative 8x L40S PCIe server (NVIDIA OVX / Supermicro
	 * SYS-421GE-TNRT class): 2 sockets of 32 cores, 1 TB, two PCIe switches
	 * per socket with two GPUs and one 200 Gb/s ConnectX-7 each. */
	{"pcie-l40s-8", "l40s", 8, 64, 1024, NUMA_2x4, FAB_NONE, 0, SW_PAIRS,
	 NIC_PER_SWITCH, 200, "mlx5_", {0}, false},
	/* 8x H100 NVL: NVLink bridges pair the cards that share a PCIe switch
	 * (12 links = 600 GB/s per pair, H100 NVL product brief); 2 sockets of 64
	 * cores, 1 TB, one 400 Gb/s NIC per switch. */
	{"pcie-h100nvl-8", "h100-nvl", 8, 128, 1024, NUMA_2x4, FAB_NVL_BRIDGE, 12,
	 SW_PAIRS, NIC_PER_SWITCH, 400, "mlx5_", {0}, false},
	/* Huawei Atlas 800T A2 training server: 4x Kunpeng 920 (48 cores each =
	 * 192), 1 TB DDR4 (32 DIMMs), 8x Ascend 910B in an HCCS full mesh (56 GB/s
	 * per pair), two NPUs attached to each CPU, one 200GE RoCE port
	 * integrated on each NPU. */
	{"atlas-800t-a2", "ascend-910b", 8, 192, 1024, NUMA_4x2, FAB_HCCS_MESH, 0, {0},
	 NIC_PER_GPU, 200, "roce", {0}, false},
	/* Huawei Atlas 800 training server (model 9000): 4x Kunpeng 920 (48 cores
	 * each), 1 TB, 8x Ascend 910 as two 4-NPU HCCS groups {0-3} {4-7} (each NPU's
	 * 3 HCCS ports reach the other three of its group); a job of up to 4 NPUs
	 * must stay inside one group; one 100GE RoCE port per NPU. */
	{"atlas-800-9000", "ascend-910", 8, 192, 1024, NUMA_4x2, FAB_HCCS_GROUPS, 0, {0},
	 NIC_PER_GPU, 100, "roce", {0x0f, 0xf0}, true},
};

#define NSPECS ((int)(sizeof(specs) / sizeof(specs[0])))

int topo_builtin_count(void)
{
	return NSPECS;
}

const char *topo_builtin_name(int i)
{
	return i >= 0 && i < NSPECS ? specs[i].name : NULL;
}

static gpumask_t all_gpus(int n)
{
	return n >= 32 ? ~(gpumask_t)0 : ((gpumask_t)1 << n) - 1;
}

static bool same_group(const struct builtin_spec *s, int a, int b)
{
	for (int g = 0; g < TOPO_MAX_GROUPS && s->groups[g]; g++)
		if ((s->groups[g] >> a & 1u) && (s->groups[g] >> b & 1u))
			return true;
	return false;
}

/* The strong links of one pair, or 0 when the pair stays on PCIe/host. */
static int fabric_kind(const struct builtin_spec *s, int a, int b, int *count)
{
	*count = 0;
	switch (s->fabric) {
	case FAB_NONE:
		return 0;
	case FAB_NVSWITCH:
		return LINK_NVSWITCH;
	case FAB_HCCS_MESH:
		return LINK_HCCS;
	case FAB_HCCS_GROUPS:
		return same_group(s, a, b) ? LINK_HCCS : 0;
	case FAB_NVL_BRIDGE:
		for (int i = 0; i < SPEC_MAX_SW && s->sw[i]; i++)
			if ((s->sw[i] >> a & 1u) && (s->sw[i] >> b & 1u)) {
				*count = s->bridge_links;
				return LINK_NVLINK;
			}
		return 0;
	}
	return 0;
}

static enum sl_err add_nics(struct node_type *t, const struct builtin_spec *s,
			    struct sl_diag *d)
{
	char name[32];
	int k = 0;
	enum sl_err e = SL_OK;

	if (s->nics == NIC_PER_GPU) {
		for (int i = 0; i < s->ngpus && !e; i++) {
			snprintf(name, sizeof(name), "%s%d", s->nic_prefix, i);
			e = topo_add_nic(t, name, s->nic_gbps, (gpumask_t)1 << i, d);
		}
		return e;
	}
	for (int i = 0; i < SPEC_MAX_SW && s->sw[i] && !e; i++) {
		int per = s->nics == NIC_TWO_PER_SWITCH ? 2 : 1;
		for (int j = 0; j < per && !e; j++) {
			snprintf(name, sizeof(name), "%s%d", s->nic_prefix, k++);
			e = topo_add_nic(t, name, s->nic_gbps, s->sw[i], d);
		}
	}
	return e;
}

static enum sl_err build(const struct builtin_spec *s, struct node_type *t,
			 struct sl_diag *d)
{
	const struct gpu_model *g = catalog_gpu_find(s->model);
	enum sl_err e;

	if (!g)
		return sl_diag_set(d, SL_ENOTFOUND, "built-in type %s: unknown model %s",
				   s->name, s->model);
	e = topo_type_init(t, s->name, g, s->ngpus, s->cpus, s->mem_gib, s->numa, d);
	for (int i = 0; !e && i < SPEC_MAX_SW && s->sw[i]; i++)
		e = topo_set_pcie_switch(t, s->sw[i], d);
	for (int a = 0; !e && a < s->ngpus; a++)
		for (int b = a + 1; !e && b < s->ngpus; b++) {
			int count, k = fabric_kind(s, a, b, &count);
			if (k)
				e = topo_set_link(t, a, b, (enum link_kind)k, count, 0, d);
		}
	if (!e)
		e = add_nics(t, s, d);
	for (int i = 0; !e && i < TOPO_MAX_GROUPS && s->groups[i]; i++)
		e = topo_add_group(t, s->groups[i] & all_gpus(s->ngpus), d);
	t->groups_strict = s->groups_strict;
	return e;
}

enum sl_err topo_builtin(const char *name, struct node_type *out)
{
	if (!name || !out)
		return SL_EINVAL;
	for (int i = 0; i < NSPECS; i++)
		if (strcmp(specs[i].name, name) == 0)
			return build(&specs[i], out, NULL);
	return SL_ENOTFOUND;
}

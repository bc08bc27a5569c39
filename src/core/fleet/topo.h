/* topo.h - node types: what sits inside one server and how its GPUs are linked.
 *
 * A node type is plain data (no pointers but the catalog model), so it can be
 * copied, compared and embedded. Built-in types are produced into caller-owned
 * storage by topo_builtin(); a fleet file adds custom ones (see fleet.h). */
#ifndef SL_TOPO_H
#define SL_TOPO_H

#include <stdbool.h>
#include <stdint.h>

#include "catalog.h"
#include "err.h"

#define TOPO_MAX_GPUS 16
#define TOPO_MAX_NICS 16
#define TOPO_MAX_GROUPS 8
#define TOPO_NAME_MAX 64
#define TOPO_MATRIX_MAX_TEXT (256u << 10) /* bound on `nvidia-smi topo -m` text */

typedef uint32_t gpumask_t; /* bit i set = GPU i */

/* Ordered weakest to strongest relation between two GPUs; a pair's kind is the
 * strongest path between them. */
enum link_kind {
	LINK_SELF = 0,        /* a GPU with itself */
	LINK_CROSS_SOCKET,    /* SYS: across the inter-socket link */
	LINK_NUMA,            /* NODE: same NUMA node, across PCIe host bridges */
	LINK_PCIE_HOSTBRIDGE, /* PHB: through one PCIe host bridge */
	LINK_PCIE_SWITCH,     /* PIX/PXB: behind the same PCIe switch(es) */
	LINK_HCCS,            /* Huawei HCCS */
	LINK_NVLINK,          /* direct NVLink links (count = how many) */
	LINK_NVSWITCH,        /* through NVSwitch chips (full per-GPU bandwidth) */
	LINK__COUNT
};

struct topo_link {
	uint8_t kind;   /* enum link_kind */
	uint8_t count;  /* NVLink/HCCS link count, 0 otherwise */
	uint16_t gbps;  /* usable GB/s between the pair, bidirectional */
};

struct topo_nic {
	char name[32];  /* "mlx5_0" */
	int gbps;       /* line rate, Gbit/s */
	gpumask_t gpus; /* GPUs this NIC is nearest to (its rail) */
};

struct node_type {
	char name[TOPO_NAME_MAX];
	const struct gpu_model *gpu;
	int ngpus;
	int cpus;                   /* CPU cores, or thousandths of a core when cpu_milli */
	bool cpu_milli;             /* cpus is in thousandths (fleet file's cpu_milli; the
				       openb traces' nodes): placement counts requests'
				       cpu_milli exactly there, in whole cores elsewhere */
	int mem_gib;                /* host memory */
	int8_t numa[TOPO_MAX_GPUS]; /* NUMA node of each GPU */
	struct topo_link link[TOPO_MAX_GPUS][TOPO_MAX_GPUS]; /* symmetric */
	int nnics;
	struct topo_nic nics[TOPO_MAX_NICS];
	/* Valid partitions (Fabric Manager partitions, Ascend 910 HCCS rings). When
	 * groups_strict, a request of at most a group's size must fit inside one
	 * group. */
	int ngroups;
	gpumask_t groups[TOPO_MAX_GROUPS];
	bool groups_strict;
};

const char *topo_link_kind_name(enum link_kind k); /* "nvswitch", "cross-socket", ... */
/* Parses a DESIGN.md kind name; returns -1 when unknown. */
int topo_link_kind_parse(const char *name);

/* Number of built-in node types and their names (hgx-h100-8, ...). */
int topo_builtin_count(void);
const char *topo_builtin_name(int i);
/* Fills *out with the built-in type called name. SL_ENOTFOUND if none. */
enum sl_err topo_builtin(const char *name, struct node_type *out) SL_MUST_USE;

/* Starts a custom type: name, model and count set, every pair filled with the
 * PCIe/NUMA relation implied by numa[] (same NUMA -> LINK_NUMA, else
 * LINK_CROSS_SOCKET) and bandwidths from the model's PCIe generation. */
enum sl_err topo_type_init(struct node_type *t, const char *name,
			   const struct gpu_model *gpu, int ngpus, int cpus,
			   int mem_gib, const int8_t *numa, struct sl_diag *d) SL_MUST_USE;
/* Sets the relation of pair (a, b) (both ways); gbps 0 = derive from kind,
 * count and the model. */
enum sl_err topo_set_link(struct node_type *t, int a, int b, enum link_kind kind,
			  int count, int gbps, struct sl_diag *d) SL_MUST_USE;
/* Marks GPUs in mask as sharing one PCIe switch (pairs become LINK_PCIE_SWITCH
 * unless already stronger). */
enum sl_err topo_set_pcie_switch(struct node_type *t, gpumask_t mask, struct sl_diag *d) SL_MUST_USE;
/* Appends a NIC (name 1..31 bytes, line rate in Gbit/s, its rail of GPUs).
 * SL_ELIMIT beyond TOPO_MAX_NICS; SL_EINVAL for a bad name or a GPU out of range. */
enum sl_err topo_add_nic(struct node_type *t, const char *name, int gbps,
			 gpumask_t gpus, struct sl_diag *d) SL_MUST_USE;
/* Appends a partition group (non-empty, within ngpus, disjoint from the others).
 * groups_strict is left to the caller. SL_ELIMIT beyond TOPO_MAX_GROUPS. */
enum sl_err topo_add_group(struct node_type *t, gpumask_t gpus, struct sl_diag *d) SL_MUST_USE;
/* Checks the invariants every type keeps: self links, symmetry, a kind and a
 * bandwidth on every pair. For types assembled by hand (fleet files). */
enum sl_err topo_validate(const struct node_type *t, struct sl_diag *d) SL_MUST_USE;
/* The bandwidth a derived link of this kind has on this type. */
int topo_kind_gbps(const struct node_type *t, enum link_kind kind, int count);

static inline int topo_pair_gbps(const struct node_type *t, int a, int b)
{
	return t->link[a][b].gbps;
}

/* Parses `nvidia-smi topo -m` text (tabs or spaces, NIC rows/columns, CPU/NUMA
 * affinity columns and the legend tolerated) into t's links, numa[] and nics.
 * t must already have gpu and ngpus set (topo_type_init); the matrix must have
 * exactly t->ngpus GPU rows. Errors give the line and column within text. */
enum sl_err topo_parse_matrix(struct node_type *t, const char *text,
			      struct sl_diag *d) SL_MUST_USE;

/* Writes the type's GPU matrix in `nvidia-smi topo -m` style (NV#, NVS, PIX,
 * PHB, NODE, SYS, HCCS) followed by a bandwidth table in GB/s, NIC columns and
 * NUMA affinity. Returns the length that the full text needs (like snprintf);
 * 0 (and "") when it would pass TOPO_MATRIX_MAX_TEXT or memory is short. */
size_t topo_format_matrix(const struct node_type *t, char *buf, size_t n);

#endif

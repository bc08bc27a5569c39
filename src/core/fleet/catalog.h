/* catalog.h - the GPU models suanli knows, as facts with their public sources.
 *
 * The table is constant data (read-only, no state), so it is safe to share. */
#ifndef SL_CATALOG_H
#define SL_CATALOG_H

#include <stddef.h>

enum ic_kind {
	IC_NONE,   /* PCIe only */
	IC_NVLINK, /* NVLink (bridges, NVSwitch or an NVL72 fabric) */
	IC_HCCS,   /* Huawei Cache Coherence System */
};

struct gpu_model {
	const char *name;   /* "h100-sxm" */
	const char *vendor; /* "nvidia", "huawei" */
	int mem_gib;        /* on-package memory, GiB */
	enum ic_kind ic;
	int nvlink_gen;     /* 0 when not NVLink */
	int ic_gbps;        /* per-GPU interconnect bandwidth, GB/s, bidirectional */
	int link_gbps;      /* one NVLink/HCCS link, GB/s bidirectional (0: none) */
	int pcie_gen;
	int bf16_tflops;    /* dense BF16 TFLOP/s */
	int domain_gpus;    /* GPUs in one multi-node NVLink domain (72 for NVL72), 0 if none */
};

/* The model called name, or NULL. */
const struct gpu_model *catalog_gpu_find(const char *name);
size_t catalog_gpu_count(void);
/* i < catalog_gpu_count(). */
const struct gpu_model *catalog_gpu_at(size_t i);
/* The models' names, ", " between them, for hints that say which exist:
 * written into buf (always NUL-terminated when n > 0); returns the length the
 * whole list needs, as snprintf does, so a return >= n means it was cut. */
size_t catalog_gpu_names(char *buf, size_t n);
/* Bidirectional x16 bandwidth of a PCIe generation in GB/s (gen 3..6), 0 if unknown. */
int catalog_pcie_gbps(int gen);
const char *catalog_ic_name(enum ic_kind k);

#endif

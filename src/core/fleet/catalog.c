/* catalog.c - the GPU models suanli knows.
 *
 * One constant table, one row per model, each figure with the public document
 * it comes from. Placement ranks GPU sets by these figures, so a wrong number
 * here misplaces leases; keep the sources next to the numbers so a reviewer can
 * check them without guessing.
 *
 * Conventions of the columns:
 *  - mem_gib: the capacity the vendor publishes (in GB; HBM stacks are sized in
 *    binary units, so "80 GB" is 80 GiB; 141/180/186/288 GB are the published
 *    figures, kept as published).
 *  - ic_gbps: per-GPU interconnect bandwidth, bidirectional, as the vendor
 *    publishes it (NVIDIA: "900 GB/s NVLink").
 *  - link_gbps: one link, bidirectional (NVLink 3/4: 25 GB/s each way = 50;
 *    NVLink 5: 50 GB/s each way = 100).
 *  - bf16_tflops: dense (without 2:4 sparsity); datasheets often print the
 *    sparse figure, which is twice this.
 */
#include "catalog.h"

#include <stdio.h>
#include <string.h>

static const struct gpu_model models[] = {
	/* NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100,
	 * "H100 SXM"): 80 GB HBM3, NVLink 900 GB/s (18 NVLink 4 links), PCIe Gen5,
	 * BF16 1,979 TFLOPS with sparsity -> 989 dense. */
	{"h100-sxm", "nvidia", 80, IC_NVLINK, 4, 900, 50, 5, 989, 0},
	/* NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200,
	 * "H200 SXM"): 141 GB HBM3e, NVLink 900 GB/s, PCIe Gen5, BF16 1,979 TFLOPS
	 * sparse -> 989 dense. */
	{"h200-sxm", "nvidia", 141, IC_NVLINK, 4, 900, 50, 5, 989, 0},
	/* NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100,
	 * "A100 80GB SXM"): 80 GB HBM2e, NVLink 600 GB/s (12 NVLink 3 links),
	 * PCIe Gen4, BF16 312 TFLOPS dense (624 sparse). */
	{"a100-sxm", "nvidia", 80, IC_NVLINK, 3, 600, 50, 4, 312, 0},
	/* NVIDIA A800 40GB/80GB product brief (China-market A100 variant,
	 * nvidia.cn "A800 SXM"): 80 GB HBM2e, NVLink 400 GB/s (8 links), PCIe Gen4,
	 * compute as A100: BF16 312 TFLOPS dense. */
	{"a800-sxm", "nvidia", 80, IC_NVLINK, 3, 400, 50, 4, 312, 0},
	/* NVIDIA H800 SXM product brief (China-market H100 variant): 80 GB HBM3,
	 * NVLink 400 GB/s (8 links), PCIe Gen5, compute as H100 SXM: 989 dense. */
	{"h800-sxm", "nvidia", 80, IC_NVLINK, 4, 400, 50, 5, 989, 0},
	/* NVIDIA H100 datasheet, "H100 NVL" column: 94 GB HBM3, NVLink bridge
	 * 600 GB/s (12 links to the bridged partner), PCIe Gen5, BF16 1,671 TFLOPS
	 * sparse -> 835 dense. */
	{"h100-nvl", "nvidia", 94, IC_NVLINK, 4, 600, 50, 5, 835, 0},
	/* NVIDIA L40S datasheet (nvidia.com/en-us/data-center/l40s): 48 GB GDDR6,
	 * no NVLink, PCIe Gen4 x16, BF16 362.05 TFLOPS dense (733 sparse). */
	{"l40s", "nvidia", 48, IC_NONE, 0, 0, 0, 4, 362, 0},
	/* NVIDIA DGX B200 datasheet: 1,440 GB GPU memory for 8 GPUs -> 180 GB;
	 * HGX B200 (nvidia.com/en-us/data-center/hgx): NVLink 5, 1.8 TB/s per GPU,
	 * FP16/BF16 36 PFLOPS sparse for 8 GPUs -> 2,250 dense per GPU; PCIe Gen5
	 * (B300 is the part that moves to Gen6, see below). */
	{"b200", "nvidia", 180, IC_NVLINK, 5, 1800, 100, 5, 2250, 0},
	/* NVIDIA HGX B300 (nvidia.com/en-us/data-center/hgx; Blackwell Ultra):
	 * 2.3 TB for 8 GPUs = 288 GB HBM3e each, NVLink 5 1.8 TB/s per GPU,
	 * BF16 36 PFLOPS sparse per 8 GPUs -> 2,250 dense; PCIe Gen6 (Blackwell Ultra
	 * announcement, GTC 2025; summarised at glennklockwood.com/garden/processors/B300). */
	{"b300", "nvidia", 288, IC_NVLINK, 5, 1800, 100, 6, 2250, 0},
	/* NVIDIA GB200 NVL72 (nvidia.com/en-us/data-center/gb200-nvl72): 72 GPUs,
	 * 13.4 TB HBM3e -> 186 GB each, NVLink 5 1.8 TB/s per GPU across the rack
	 * (one 72-GPU NVLink domain), FP16/BF16 360 PFLOPS sparse -> 2,500 dense per
	 * GPU; host I/O through Grace, whose PCIe is Gen5 (NVIDIA Grace CPU
	 * datasheet). */
	{"gb200", "nvidia", 186, IC_NVLINK, 5, 1800, 100, 5, 2500, 72},
	/* NVIDIA GB300 NVL72 (nvidia.com/en-us/data-center/gb300-nvl72): 72 Blackwell
	 * Ultra GPUs, up to 20 TB HBM3e (288 GB per GPU), NVLink 5 1.8 TB/s per GPU,
	 * 72-GPU domain, FP16/BF16 360 PFLOPS sparse -> 2,500 dense; ConnectX-8 and
	 * the GPU are PCIe Gen6. */
	{"gb300", "nvidia", 288, IC_NVLINK, 5, 1800, 100, 6, 2500, 72},
	/* Huawei Ascend 910B (Atlas 800T A2 training server; hiascend.com product
	 * pages; Gitee AI "Ascend 910B" compute docs, ai.gitee.com/docs/compute):
	 * 64 GB HBM2e, HCCS full mesh between the 8 NPUs of a server at 56 GB/s per
	 * pair (7 peers -> 392 GB/s per NPU), FP16/BF16 280 TFLOPS (the figure
	 * varies by bin, 910B1..B4), host link PCIe 4.0 x16 (Kunpeng 920 root
	 * ports are Gen4). */
	{"ascend-910b", "huawei", 64, IC_HCCS, 0, 392, 56, 4, 280, 0},
	/* Huawei Ascend 910 (Hot Chips 31, 2019; Atlas 300T training card model 9000
	 * white paper): 32 GB HBM2, 3 HCCS ports of 240 Gbit/s (30 GB/s each way,
	 * 60 GB/s bidirectional) used as a full mesh inside each 4-NPU group of an
	 * Atlas 800 (model 9000), PCIe 4.0 x16, 256 TFLOPS FP16 (the 910 has no BF16;
	 * FP16 is its training format and stands in here). */
	{"ascend-910", "huawei", 32, IC_HCCS, 0, 180, 60, 4, 256, 0},
};

#define NMODELS (sizeof(models) / sizeof(models[0]))

const struct gpu_model *catalog_gpu_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < NMODELS; i++)
		if (strcmp(models[i].name, name) == 0)
			return &models[i];
	return NULL;
}

size_t catalog_gpu_count(void)
{
	return NMODELS;
}

const struct gpu_model *catalog_gpu_at(size_t i)
{
	return i < NMODELS ? &models[i] : NULL;
}

size_t catalog_gpu_names(char *buf, size_t n)
{
	size_t len = 0;
	if (n)
		buf[0] = '\0';
	for (size_t i = 0; i < NMODELS; i++) {
		int w = snprintf(len < n ? buf + len : NULL, len < n ? n - len : 0, "%s%s",
				 i ? ", " : "", models[i].name);
		if (w > 0)
			len += (size_t)w;
	}
	return len;
}

/* PCI-SIG: 8, 16, 32, 64 GT/s per lane for Gen3..6, which after encoding is
 * about 1, 2, 4, 8 GB/s per lane each way: x16 = 16/32/64/128 GB/s each way,
 * twice that counting both directions (the way NVLink figures are quoted). */
int catalog_pcie_gbps(int gen)
{
	switch (gen) {
	case 3:
		return 32;
	case 4:
		return 64;
	case 5:
		return 128;
	case 6:
		return 256;
	default:
		return 0;
	}
}

const char *catalog_ic_name(enum ic_kind k)
{
	switch (k) {
	case IC_NONE:
		return "none";
	case IC_NVLINK:
		return "nvlink";
	case IC_HCCS:
		return "hccs";
	}
	return "unknown";
}

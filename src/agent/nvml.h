/* nvml.h - the agent's view of NVIDIA's management library (NVML).
 *
 * NVML is loaded at run time with dlopen("libnvidia-ml.so.1") (or the file
 * named by the environment variable SUANLI_NVML_LIB, which tests point at a
 * fake library), so the agent builds and runs on machines without a GPU or
 * the driver; every function below answers SL_ENOTFOUND with a clear message
 * when the library is missing. We declare the few NVML types and functions we
 * use ourselves (src/agent/nvml.c); no NVIDIA header is needed.
 *
 * Two uses:
 *  - nvml_discover: one-shot discovery of GPUs, memory, NUMA, pairwise links
 *    (NVLink to a GPU, NVLink to NVSwitch chips, PCIe common ancestor) and the
 *    NVL72 fabric clique, as a struct discovery (src/core/discovery.h).
 *  - nvml_open / nvml_health / nvml_close: a session the agent keeps between
 *    heartbeats; each nvml_health call samples temperature, power, ECC counts
 *    and NVLink state of every GPU and collects the XID events that arrived
 *    since the previous call (NVML event set, nvmlEventTypeXidCriticalError).
 */
#ifndef SL_AGENT_NVML_H
#define SL_AGENT_NVML_H

#include <stdbool.h>
#include <stdint.h>

#include "discovery.h"
#include "err.h"

#define NVML_LIB_ENV "SUANLI_NVML_LIB"       /* overrides the library path */
#define NVML_LIB_DEFAULT "libnvidia-ml.so.1"
#define NVML_XID_MAX 16 /* XID events kept per GPU per sample; more set xid_lost */

/* One GPU at one sample. A figure NVML does not offer on this GPU is -1. */
struct nvml_gpu_health {
	int index;           /* NVML device index */
	int temp_c;          /* GPU core temperature, degrees C */
	int power_w;         /* board power draw, W */
	int64_t ecc_sbe;     /* corrected (single-bit) ECC errors, volatile count */
	int64_t ecc_dbe;     /* uncorrected (double-bit) ECC errors, volatile count */
	int nvlink_up;       /* NVLink links in the active state */
	int util_pct;        /* GPU utilisation over NVML's last sample period, 0..100 */
	int nxid;            /* XID events since the previous sample ... */
	int xid[NVML_XID_MAX]; /* ... their codes, oldest first */
	bool xid_lost;       /* more than NVML_XID_MAX arrived; the later ones are lost */
};

struct nvml_health_sample {
	int ngpus;
	struct nvml_gpu_health gpus[TOPO_MAX_GPUS];
};

struct nvml; /* opaque: the loaded library, device handles, the XID event set */

/* Loads NVML, initialises it and registers for XID events on every GPU (a
 * GPU that cannot deliver events still gets sampled). *out is owned by the
 * caller (nvml_close). SL_ENOTFOUND: no library or no driver; SL_EIO: NVML
 * answered an error (named in d). */
enum sl_err nvml_open(struct nvml **out, struct sl_diag *d) SL_MUST_USE;
/* Shuts NVML down and unloads it; NULL is fine. */
void nvml_close(struct nvml *n);

/* Samples every GPU into *out and drains the XID events queued since the
 * previous call (non-blocking). SL_EIO when NVML fails for the device list
 * itself; per-figure failures only leave that figure at -1. */
enum sl_err nvml_health(struct nvml *n, struct nvml_health_sample *out,
			struct sl_diag *d) SL_MUST_USE;

/* Discovers this server through NVML into *out (source "nvml"): model from the
 * device name via the catalog (NULL when not known), memory, UUIDs, PCI bus
 * ids, NUMA nodes, pairwise links, NVL72 clique and driver version. NICs are
 * not NVML's to know: out->type.nnics is 0. SL_ENOTFOUND without the library
 * or driver ("no NVIDIA driver found ..."); SL_ELIMIT beyond TOPO_MAX_GPUS. */
enum sl_err nvml_discover(struct discovery *out, struct sl_diag *d) SL_MUST_USE;

/* The catalog model a driver's device name denotes ("NVIDIA H100 80GB HBM3" ->
 * h100-sxm, "NVIDIA H100 NVL" -> h100-nvl), or NULL (PCIe variants of SXM
 * parts, models not in the catalog). Also used for `nvidia-smi` names. */
const struct gpu_model *nvml_model_from_name(const char *name);

#endif

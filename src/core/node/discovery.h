/* discovery.h - what an agent found on its server, as data: the GPUs (UUID,
 * PCI bus id, memory, NUMA), their pairwise links and the NICs, expressed as a
 * struct node_type (topo.h) plus per-GPU facts; its JSON form (the
 * `suanli-agent discover --json` output and the register body's "discovery");
 * and its comparison with a declared node type.
 *
 * Pure: the agent fills a struct discovery from NVML, from `nvidia-smi topo -m`
 * text or from a built-in type (src/agent); the controller parses the JSON and
 * compares. */
#ifndef SL_DISCOVERY_H
#define SL_DISCOVERY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "topo.h"

#define DISC_SOURCE_MAX 16
#define DISC_UUID_MAX 96
#define DISC_BUSID_MAX 32
#define DISC_NAME_MAX 96
#define DISC_REASON_MAX 256
#define DISC_MEM_MIB_MAX ((int64_t)1 << 24) /* 16 TiB: bound on a GPU's memory in JSON */
#define DISC_NVLINKS_MAX 64                 /* bound on a GPU's NVLink count in JSON */
#define DISC_NIC_GBPS_MAX 100000            /* bound on a NIC's line rate in JSON */
/* A GPU's memory may read this much below the model's published capacity
 * before it counts as smaller: drivers report usable memory (an 80 GB H100
 * shows 81,559 MiB of 81,920; an H200 143,771 MiB for "141 GB"). */
#define DISC_MEM_TOLERANCE_PCT 5

struct disc_gpu {
	char uuid[DISC_UUID_MAX];    /* "GPU-8c1e..." ("" when unknown) */
	char bus_id[DISC_BUSID_MAX]; /* "00000000:18:00.0" ("" when unknown) */
	char name[DISC_NAME_MAX];    /* as the driver names it: "NVIDIA H100 80GB HBM3" */
	int64_t mem_mib;             /* 0 when unknown */
	int nvlinks_up;              /* active NVLink links (NVML); from a matrix or
					a built-in type: the links the pairs imply */
	bool nvswitch;               /* its links end at NVSwitch chips */
};

struct discovery {
	char source[DISC_SOURCE_MAX]; /* "nvml", "nvidia-smi", "simulate" */
	struct node_type type;        /* gpu model (NULL when not recognised: link
					 kinds and counts are then known, their gbps
					 are 0), ngpus, numa[], link[][], nics */
	struct disc_gpu gpus[TOPO_MAX_GPUS];
	char clique[64];              /* NVL72 fabric cluster UUID + clique id, "" if none */
	char driver[32];              /* driver version, "" when unknown */
};

/* Building one (the agent's discovery paths): discovery_begin clears *out and
 * starts out->type for ngpus GPUs of model (NULL: not in the catalog; the
 * links are then built against a generic NVLink model so that topo_set_link
 * works, and discovery_end drops their bandwidths); numa may be NULL (all 0).
 * Every gpus[i].nvlinks_up starts at -1. Between the two the caller sets links
 * and NICs on out->type with the topo.h builders and fills gpus[]. */
enum sl_err discovery_begin(struct discovery *out, const char *source,
			    const struct gpu_model *model, int ngpus, const int8_t *numa,
			    struct sl_diag *d) SL_MUST_USE;
/* Finishes: nvlinks_up still -1 is derived from the links (NVSwitch: the
 * bonded count or all of the model's links; NVLink: the sum of the counts),
 * nvswitch flags set from the links, an unknown model's gbps cleared. */
void discovery_end(struct discovery *out);
/* The discovery a built-in or fleet type describes (source "simulate"): GPU
 * names and memory from the model, no UUIDs or bus ids. */
enum sl_err discovery_from_type(struct discovery *out, const struct node_type *t,
				struct sl_diag *d) SL_MUST_USE;
/* Parses `nvidia-smi topo -m` text (source "nvidia-smi"): the GPU count from
 * the header (at most TOPO_MAX_GPUS), model a catalog name or NULL/"unknown".
 * Errors carry the line and column within text (topo_parse_matrix). */
enum sl_err discovery_from_matrix(struct discovery *out, const char *model,
				  const char *text, struct sl_diag *d) SL_MUST_USE;

/* The JSON form: {"source", "model" (catalog name or "unknown"), "driver", "clique",
 * "gpus": [{"index", "numa", "uuid", "bus_id", "name", "memory_mib", "nvlinks",
 *           "nvswitch"}],
 * "links": [{"gpus": [a, b], "kind": "nvswitch", "count": N, "gbps": N}],  (a < b, every pair)
 * "nics": [{"name", "gbps", "gpus": [..]}]}. New reference; NULL on ENOMEM. */
json_t *discovery_to_json(const struct discovery *d);
/* Parses the JSON form (bounds: TOPO_MAX_GPUS GPUs, TOPO_MAX_NICS NICs, string
 * lengths and DISC_*_MAX above; unknown keys refused; "gpus" in index order;
 * "links" must give every pair a < b exactly once). d names the field that was
 * wrong ("links[3].kind: ..."); *out is unchanged on error. SL_EINVAL,
 * SL_ELIMIT. */
enum sl_err discovery_from_json(const json_t *o, struct discovery *out,
				struct sl_diag *d) SL_MUST_USE;

/* True when the discovery is weaker than the declared type in any way: fewer
 * GPUs, another model, less memory per GPU, any pair's link weaker (kind, or
 * NVLink count) than declared. reason (n bytes) then says the first
 * difference in a sentence ("GPU 3 has no NVLink to GPU 5; hgx-h100-8 has
 * nvswitch"). */
bool discovery_weaker(const struct discovery *disc, const struct node_type *declared,
		      char *reason, size_t n);

/* The first built-in type (topo_builtin) this discovery matches: same model
 * and GPU count, the same NVSwitch/NVLink/HCCS pairs (kind and link count),
 * and not weaker than it (discovery_weaker). PCIe-level relations may differ
 * where the discovery's is at least as strong (PHB where the type says NUMA).
 * SL_ENOTFOUND when none does. */
enum sl_err discovery_match_builtin(const struct discovery *disc, struct node_type *out) SL_MUST_USE;

#endif

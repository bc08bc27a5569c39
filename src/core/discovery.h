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

struct disc_gpu {
	char uuid[DISC_UUID_MAX];    /* "GPU-8c1e..." ("" when unknown) */
	char bus_id[DISC_BUSID_MAX]; /* "00000000:18:00.0" ("" when unknown) */
	char name[DISC_NAME_MAX];    /* as the driver names it: "NVIDIA H100 80GB HBM3" */
	int64_t mem_mib;             /* 0 when unknown */
	int nvlinks_up;              /* active NVLink links */
	bool nvswitch;               /* its links end at NVSwitch chips */
};

struct discovery {
	char source[DISC_SOURCE_MAX]; /* "nvml", "nvidia-smi", "simulate" */
	struct node_type type;        /* gpu model (NULL when not recognised), ngpus,
					 numa[], link[][], nics */
	struct disc_gpu gpus[TOPO_MAX_GPUS];
	char clique[64];              /* NVL72 fabric cluster UUID + clique id, "" if none */
	char driver[32];              /* driver version, "" when unknown */
};

/* The JSON form: {"source", "model", "driver", "clique",
 * "gpus": [{"index", "numa", "uuid", "bus_id", "name", "memory_mib", "nvlinks"}],
 * "links": [{"gpus": [a, b], "kind": "nvswitch", "count": N, "gbps": N}],  (a < b, every pair)
 * "nics": [{"name", "gbps", "gpus": [..]}]}. New reference; NULL on ENOMEM. */
json_t *discovery_to_json(const struct discovery *d);
/* Parses the JSON form (bounds: TOPO_MAX_GPUS GPUs, TOPO_MAX_NICS NICs, string
 * lengths above). d says which field was wrong. SL_EINVAL. */
enum sl_err discovery_from_json(const json_t *o, struct discovery *out,
				struct sl_diag *d) SL_MUST_USE;

/* True when the discovery is weaker than the declared type in any way: fewer
 * GPUs, another model, less memory per GPU, any pair's link weaker (kind, or
 * NVLink count) than declared. reason (n bytes) then says the first
 * difference in a sentence ("GPU 3 has no NVLink to GPU 5; hgx-h100-8 has
 * nvswitch"). */
bool discovery_weaker(const struct discovery *disc, const struct node_type *declared,
		      char *reason, size_t n);

/* The built-in type (topo_builtin) this discovery matches exactly (model,
 * GPU count, link kinds); SL_ENOTFOUND when none does. */
enum sl_err discovery_match_builtin(const struct discovery *disc, struct node_type *out) SL_MUST_USE;

#endif

/* sim_trace.h - workload traces for `suanli sim`: the Alibaba
 * cluster-trace-gpu-v2023 ("openb") node and pod lists, and a generic job CSV.
 *
 * Parsing is pure: text in, arrays out. Files are CSV with a header row naming
 * the columns (any order; unknown columns are ignored), no quoting, one row a
 * line, '\r' tolerated. A bad row is an error naming file, line and column
 * (1-based) and what was expected; nothing is returned then.
 *
 * Node list columns: sn, cpu_milli, memory_mib, gpu, model (gpu 0 rows, i.e.
 * CPU-only nodes, are kept; sim_build_fleet skips them).
 * Pod list columns: name, cpu_milli, memory_mib, num_gpu, gpu_milli, and
 * optionally gpu_spec (allowed models, '|'-separated, empty = any),
 * creation_time and deletion_time (seconds; both needed for a time replay).
 * Job CSV columns (docs/sim.md): submit_time, duration (seconds), gpus,
 * gpus_per_node (0 = any), model (empty = any, '|'-separated), plan (a label,
 * kept), optionally name, cpu_milli, memory_mib. */
#ifndef SL_SIM_TRACE_H
#define SL_SIM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "fleet.h"
#include "place.h"

#define SIM_MAX_ROWS 2000000       /* bound on rows in one trace file */
#define SIM_MAX_LINE 4096          /* bound on one line's length */
#define SIM_MAX_FILE (256u << 20)  /* bound on a trace file's size */
#define SIM_MAX_CPU_MILLI 100000000
#define SIM_MAX_MEM_MIB (1LL << 40)
#define SIM_MAX_TIME (1LL << 40)   /* bound on times and durations, seconds */
#define SIM_MODEL_MAX 31

struct sim_node {
	char name[FLEET_NAME_MAX + 1];
	int cpu_milli;
	int64_t mem_mib;
	int gpus;
	char model[SIM_MODEL_MAX + 1];
};

struct sim_pod {
	char name[FLEET_NAME_MAX + 1];
	int cpu_milli;
	int64_t mem_mib;
	int gpus;       /* whole GPUs (0 for a share or CPU-only) */
	int gpu_milli;  /* a share of one GPU, 1..999, else 0 */
	int per_node;   /* GPUs per node for a multi-node job, 0 = one node */
	int nmodels;
	char models[PLACE_MAX_MODELS][SIM_MODEL_MAX + 1];
	int64_t start;  /* creation or submit time, -1 = unknown */
	int64_t duration; /* seconds, -1 = unknown */
	char plan[32];  /* job CSV's plan, else empty */
};

/* GPU demand of a pod in thousandths of a GPU. */
static inline int64_t sim_pod_milli(const struct sim_pod *p)
{
	return p->gpu_milli > 0 ? p->gpu_milli : (int64_t)p->gpus * 1000;
}

enum sl_err sim_parse_nodes(const char *text, size_t len, const char *file,
			    struct sim_node **out, int *n, struct sl_diag *d) SL_MUST_USE;
enum sl_err sim_parse_pods(const char *text, size_t len, const char *file,
			   struct sim_pod **out, int *n, struct sl_diag *d) SL_MUST_USE;
enum sl_err sim_parse_jobs(const char *text, size_t len, const char *file,
			   struct sim_pod **out, int *n, struct sl_diag *d) SL_MUST_USE;

/* Builds f (fresh from fleet_init) from a node list: one site "sim", one
 * leaf, one custom node type per (model, GPUs, CPUs, memory) with CPUs in
 * thousandths (node_type.cpus = cpu_milli) and memory in whole GiB (rounded
 * down), GPUs on one PCIe complex, every node shareable; models the catalog
 * does not know are added to the fleet (fleet_add_model). Nodes without GPUs
 * are skipped (*skipped counts them). */
enum sl_err sim_build_fleet(struct fleet *f, const struct sim_node *nodes, int n,
			    int *skipped, struct sl_diag *d) SL_MUST_USE;

/* The placement request for a pod (models point into pod, which must outlive
 * req). CPUs as cpu_milli and memory exact (place.h: exact on node types that
 * count thousandths, as sim_build_fleet's do). */
void sim_pod_request(const struct sim_pod *pod, struct place_request *req);

#endif

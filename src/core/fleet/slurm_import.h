/* slurm_import.h - a Slurm site's configuration as a suanli fleet file.
 *
 * Reads the texts of slurm.conf and, when given, gres.conf and topology.conf
 * (`suanli fleet import-slurm`), and writes a fleet file (YAML, the format of
 * docs/fleet-file.md):
 *   - nodes from NodeName lines (hostlists such as "gpu[001-016]" or
 *     "r[1-2]n[01-18]", NodeName=DEFAULT included) with Gres=gpu:TYPE:N, CPUs
 *     (or Sockets x CoresPerSocket x ThreadsPerCore) and RealMemory;
 *   - node types: the GPU model from the gres type name (h100, nvidia_h200,
 *     a100-sxm4-80gb, ...); the GPU links from gres.conf's Links= (one line per
 *     GPU, -1 marking the GPU itself), NUMA nodes from its Cores= when
 *     slurm.conf gives CoresPerSocket; a built-in type when model, count,
 *     links, CPUs and memory all match one, else a custom type (a copy of the
 *     matching built-in's topology with the site's CPUs and memory, or the
 *     Links= matrix itself);
 *   - leaves from topology.conf's switches with Nodes=, fabrics from the roots
 *     of its trees (Switches=), NVLink domains from BlockName= blocks.
 * Slurm has no sites or regions and no fabric kind or speed: they come from
 * the input (the CLI's --site, --region, --fabric-kind, --fabric-gbps) and a
 * note says so. Everything that is not translated - partitions, features,
 * unknown GPU types, GPUs without a model, mixed GPU nodes, non-GPU gres,
 * nodes under no switch, middle tree levels - is a note with the file and
 * line; nothing is guessed silently. Pure: texts in, text out. */
#ifndef SL_SLURM_IMPORT_H
#define SL_SLURM_IMPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define SLURM_MAX_FILE (16u << 20) /* bound on one input file */
#define SLURM_MAX_LINE 65536       /* bound on one logical line */
#define SLURM_MAX_NODES 100000     /* bound on nodes */
#define SLURM_MAX_NOTES 10000      /* notes kept (more are counted) */

struct slurm_text {
	const char *name; /* as notes name it ("slurm.conf"); NULL: absent */
	const char *text;
	size_t len;
};

struct slurm_input {
	struct slurm_text slurm, gres, topo;
	const char *site;        /* NULL: ClusterName, else "site-1" */
	const char *region;      /* NULL: "unknown" */
	const char *fabric_kind; /* "infiniband" (NULL) or "roce" */
	int fabric_gbps;         /* 0: 400 */
};

struct slurm_note {
	const char *file; /* borrowed from the input */
	int line;         /* 0: the file as a whole */
	bool untranslated; /* false: an informational note (a default taken) */
	int more;          /* nodes of the same line with the same note ("node X: ..."
			      notes are kept once per line, for its first node) */
	char msg[320];
};

struct slurm_result {
	char *yaml;  /* owned, NUL-terminated */
	size_t len;
	struct slurm_note *notes; /* owned */
	int nnotes, dropped_notes;
	int nodes, gpus, types, custom_types, fabrics, leaves, domains;
};

/* Translates. SL_OK: out->yaml is a fleet file (it may still carry notes of
 * what was left out). SL_EINVAL: no GPU node could be translated (the notes
 * say why); SL_ELIMIT past a bound; SL_ENOMEM. out is initialised either
 * way; release it with slurm_result_release. */
enum sl_err slurm_import(const struct slurm_input *in, struct slurm_result *out,
			 struct sl_diag *d) SL_MUST_USE;
void slurm_result_release(struct slurm_result *r);

/* The catalog model a Slurm gres type names ("h100", "nvidia_h100_80gb_hbm3",
 * "a100-sxm4-80gb", "l40s", "910b", ...), or NULL when it names none. */
const char *slurm_gpu_model(const char *gres_type);

#endif

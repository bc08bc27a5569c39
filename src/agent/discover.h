/* discover.h - how the agent finds out what its server has, and the
 * `suanli-agent discover` command that prints it without contacting anyone.
 *
 * Sources, in order (the first that is asked for or that works):
 *  1. --simulate TYPE: a built-in node type (demos, tests);
 *  2. --nvidia-smi-topo FILE: a saved `nvidia-smi topo -m` output (the GPU
 *     count comes from its rows, the model from --model or "unknown");
 *  3. NVML (libnvidia-ml.so.1 through dlopen; see nvml.h), with the RDMA NICs
 *     and their rails from sysfs (nics.h);
 *  4. running `nvidia-smi topo -m` (and `nvidia-smi --query-gpu=name` for the
 *     model) when the program exists.
 * With none of them: SL_ENOTFOUND, "no NVIDIA driver found; use --simulate
 * TYPE or --nvidia-smi-topo FILE".
 */
#ifndef SL_AGENT_DISCOVER_H
#define SL_AGENT_DISCOVER_H

#include <stdbool.h>

#include "discovery.h"
#include "err.h"

#define DISCOVER_SMI_ENV "SUANLI_NVIDIA_SMI" /* the nvidia-smi program (tests) */
#define DISCOVER_SMI_OUT_MAX TOPO_MATRIX_MAX_TEXT /* bound on nvidia-smi output */

struct discover_opts {
	const char *simulate;  /* built-in type name, or NULL */
	const char *topo_file; /* `nvidia-smi topo -m` text file, or NULL */
	const char *model;     /* catalog model for a matrix; NULL: unknown */
	bool skip_nvml;        /* go straight to nvidia-smi (step 4) */
};

/* Fills *out from the first source that works (see above). d says why none
 * did; a named source that fails (a bad file, an unknown type) is an error
 * of its own, never a silent fallback. */
enum sl_err agent_discover(const struct discover_opts *o, struct discovery *out,
			   struct sl_diag *d) SL_MUST_USE;

/* `suanli-agent discover [--simulate TYPE] [--nvidia-smi-topo FILE] [--model M]
 * [--json]`: argv[0] is "discover". Prints a table (or the JSON form) on
 * stdout, errors on stderr. Returns 0, 1 when discovery failed, 2 on usage
 * errors. */
int agent_discover_main(int argc, char **argv);

#endif

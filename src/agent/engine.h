/* engine.h - the container engine that runs tenant work: podman (its CLI,
 * fork/exec with an argv, never a shell) over an OCI runtime, with the GPUs
 * given by a CDI spec this agent writes from its own discovery
 * (docs/isolation.md).
 *
 * engine_new probes the host once: podman must run (`podman --version`);
 * the runtime is crun on a pure cgroup v2 host and runc otherwise (hybrid or
 * v1 hierarchies: crun refuses those), both with the cgroupfs manager (no
 * systemd bus needed); the ulimits passed to every container are the host's
 * hard RLIMIT_NOFILE and RLIMIT_NPROC, capped (podman's own defaults fail
 * where the hard limits are low). It then writes the CDI spec
 * (CDI_DIR/suanli-<node>.json, kind suanli.dev/gpu, device "<node>-<i>" per
 * GPU) and, in simulate mode, the stand-in device nodes it names
 * (STATE_DIR/sim-dev/nvidiaN: character devices with /dev/null's numbers,
 * mode 0666), so a container shows exactly the /dev/nvidiaN it was given.
 * Every container gets --hooks-dir STATE_DIR/no-hooks (made empty here), so
 * no OCI hook installed on the host runs for tenant containers.
 * Where the probe fails the handle says why (engine_ok false) and no tenant
 * container can start; the agent logs it once.
 *
 * Not thread-safe; one handle per agent, owned by its loop. */
#ifndef SL_AGENT_ENGINE_H
#define SL_AGENT_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "discovery.h"
#include "err.h"
#include "cdi_spec.h"
#include "fabric.h"
#include "podman_args.h"

#define ENGINE_CDI_DIR "/var/run/cdi"
#define ENGINE_REASON_MAX 256
#define ENGINE_NOFILE_CAP 65536
#define ENGINE_NPROC_CAP 32768
#define ENGINE_PIDS_DEFAULT 4096     /* --pids-limit per container */
#define ENGINE_UID_BASE 0x40000000u  /* first host id of the per-lease ranges */
#define ENGINE_UID_SLOTS 16383u      /* ranges of PODMAN_IDS ids below 2^31 */
#define ENGINE_IMAGE_MAX 512         /* an image reference, bytes with the NUL */

struct engine_opts {
	const char *state_dir;        /* the agent's state directory (stand-ins) */
	const char *node;             /* node name */
	const char *name;             /* the CDI device prefix, the spec's file name and the
				       * containers' name prefix (NULL: node); unique per host */
	const struct discovery *disc; /* borrowed, outlives the engine */
	const char *cdi_dir;          /* NULL: ENGINE_CDI_DIR */
	const char *image;            /* default image for items that name none (NULL: none) */
	int64_t pids;                 /* 0: ENGINE_PIDS_DEFAULT */
	const char *uid_dir;          /* the host's id range table (NULL: UID_RANGES_DIR) */
	const struct fabric *fabric;  /* --lease-net (copied; NULL: none, fabric.h) */
};

struct engine;

/* Probes and writes the CDI spec (above). *out is a handle even when the
 * engine is unusable (engine_ok false, engine_reason says why). SL_ENOMEM;
 * SL_EIO when the CDI spec or the stand-ins cannot be written (the path and
 * errno's text in d). */
enum sl_err engine_new(const struct engine_opts *o, struct engine **out,
		       struct sl_diag *d) SL_MUST_USE;
/* Removes the CDI spec file. NULL is fine; running containers are kept. */
void engine_free(struct engine *e);

bool engine_ok(const struct engine *e);
const char *engine_reason(const struct engine *e);
const char *engine_runtime(const struct engine *e);  /* "runc" | "crun" | "" */
const char *engine_cgroups(const struct engine *e);  /* "v2" | "hybrid" | "v1" | "none" */
const char *engine_default_image(const struct engine *e); /* "" when none */
const char *engine_name(const struct engine *e);  /* engine_opts.name (or the node's) */
const char *engine_uid_dir(const struct engine *e); /* engine_opts.uid_dir (uid_ranges.h) */
const char *engine_podman(const struct engine *e);  /* podman's path ("podman" when unknown) */
/* The node's --lease-net (NULL: none, or no usable engine) and this
 * program's own path (for `ctr-start`, fabric.h). */
const struct fabric *engine_fabric(const struct engine *e);
const char *engine_self(const struct engine *e);

/* The container of one rank: fills r (borrowing name, image and the item's
 * argv) with this host's runtime and limits, the lease's share of the node
 * (cpus and memory in proportion to its GPUs of the node's), its id range
 * (engine_uid_base), the CDI device names of its GPUs (into devs, room for
 * TOPO_MAX_GPUS, each CDI_NAME_MAX bytes) and host networking exactly when
 * the item has every GPU of the node (an exclusive whole-node lease). */
void engine_fill(const struct engine *e, const char *name, const char *image,
		 char *const *argv, size_t argc, gpumask_t gpus, const char *lease,
		 char devs[][CDI_NAME_MAX], const char **devp, struct podman_run *r);

/* The range a lease asks for first (uid_ranges.h takes the one it gets):
 * ENGINE_UID_BASE plus PODMAN_IDS times (the lease id's number modulo
 * ENGINE_UID_SLOTS). engine_fill puts it in r; ctr_argv replaces it. */
uint32_t engine_uid_base(const char *lease);

/* Whether podman holds image ref (`podman image exists`); waits for it. */
bool engine_image_exists(const struct engine *e, const char *ref);

/* The lease's own network (`podman network create --opt isolate=true`: a
 * bridge of its own that the runtime's firewall keeps apart from every
 * other isolated bridge, so no other lease's container reaches it, neither
 * directly nor through ports published on the node), named
 * sl-NAME-LEASE into buf; made when missing. SL_EIO with podman's words. */
enum sl_err engine_lease_net(const struct engine *e, const char *lease, char *buf, size_t n,
			     struct sl_diag *d) SL_MUST_USE;
/* `podman network rm --force` of the lease's network, not waited for. */
void engine_lease_net_remove(const struct engine *e, const char *lease);

/* Runs argv (argv[0]: engine_podman's path) in a grandchild with no output,
 * not waited for (double fork). */
void engine_detached(const struct engine *e, char *const argv[]);

/* `podman rm --force --time 0 name`, not waited for (double fork): stops and
 * removes the container whatever its state; harmless when it is gone. */
void engine_remove(const struct engine *e, const char *name);

#endif

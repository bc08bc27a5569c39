/* inst.h - the instance supervisor: the node's side of renters' instances
 * (issue 14, /work/contracts/instances.md, docs/agent-protocol.md
 * "Instances"): one long-running podman container per instance on this node,
 * created once (its writable layer is the system disk, kept across stop and
 * start), its sshd published on a host port with per-instance host keys,
 * renter ports published the same way, a data disk at /data (a loop-mounted
 * ext4 image of volume_gib under --storage-dir), and migration of both disks
 * through the controller.
 *
 * Like the work supervisor it never blocks the agent's loop: every podman or
 * disk operation of an instance runs in a child process of its own (an "op",
 * inst_ops.c), reaped in inst_sup_tick; at most one op per instance at a
 * time. A running container is watched through its conmon process (cheap:
 * kill 0 and /proc start time, no podman call per tick); when conmon ends
 * without the agent having asked, the container stopped by itself and is
 * reported "stopped" with stopped_by "guest".
 *
 * State lives in STATE_DIR/instances/ID/: state.json (spec, epoch, ports,
 * id range, what runs), ssh/ (host keys, authorized_keys, sshd_config),
 * op.log (the ops' output), op.err (why the last op failed). A restarted
 * agent reads them back and re-adopts containers by name (podman inspect).
 * An instance absent from the desired state is left exactly as it is; only
 * "remove" deletes anything. */
#ifndef SL_AGENT_INST_H
#define SL_AGENT_INST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "discovery.h"
#include "err.h"

#define INST_MAX 64                  /* instances held on one node */
#define INST_PORTS_MAX 16            /* renter ports of one instance */
#define INST_KEYS_MAX 64             /* authorized keys of one instance */
#define INST_KEY_MAX 8192            /* bytes of one authorized key line */
#define INST_VOLUME_MAX_GIB 65536
#define INST_PORT_LO_DEFAULT 30000
#define INST_PORT_HI_DEFAULT 32767

struct engine;
struct inst_sup;

struct inst_opts {
	const char *state_dir;    /* the agent's (absolute) */
	const char *storage_dir;  /* data disks (NULL: STATE_DIR/volumes) */
	int port_lo, port_hi;     /* host ports (0: the defaults) */
	const char *node;         /* this node's name (port spreading, logs) */
	const struct engine *eng; /* borrowed; NULL or unusable: every start fails */
	const struct discovery *disc; /* borrowed */
	/* the controller, for migration uploads and downloads (ops make their
	 * own connection); NULL: migrations fail with a reason */
	const char *server, *ca, *token;
};

/* Reads every STATE_DIR/instances/ID/state.json and re-adopts its container
 * (podman inspect by name: running ones are watched again, their conmon pid
 * taken anew). SL_EIO, SL_ENOMEM; an unreadable instance file is logged and
 * skipped, never fatal. */
enum sl_err inst_sup_new(const struct inst_opts *o, int64_t now_ns, struct inst_sup **out,
			 struct sl_diag *d) SL_MUST_USE;
/* Frees it; containers and ops keep running. NULL is fine. */
void inst_sup_free(struct inst_sup *s);
/* The credential the ops use (after registration gave one); copied. */
void inst_sup_set_token(struct inst_sup *s, const char *token);

/* Applies the work answer's "instances" array (NULL or absent: nothing
 * changes). Checked as a whole first: on error nothing changes and d names
 * the item and field. Items with an epoch lower than the highest seen for
 * that instance are ignored (*ignored counts them; may be NULL). */
enum sl_err inst_sup_apply(struct inst_sup *s, const json_t *instances, int64_t now_ns,
			   int *ignored, struct sl_diag *d) SL_MUST_USE;

/* Reaps finished ops, notices containers that stopped by themselves, starts
 * the next op where the desired state differs from what runs. True when
 * something reportable changed (heartbeat at once). */
bool inst_sup_tick(struct inst_sup *s, int64_t now_ns);

/* The heartbeat's "instances" array (contract); NULL on ENOMEM. */
json_t *inst_sup_report(const struct inst_sup *s);
/* The controller accepted the last report: removed instances it saw may be
 * forgotten once the desired state no longer lists them. */
void inst_sup_reported(struct inst_sup *s);

/* Whether instance id runs on this node (its container started, no op in
 * flight; s may be NULL): its container's name into name (n bytes) when it
 * does. Jobs inside the instance run there (work.h, work_sup_set_instances). */
bool inst_sup_running(const struct inst_sup *s, const char *id, char *name, size_t n);

/* Number of instances held (tests). */
size_t inst_sup_count(const struct inst_sup *s);

#endif

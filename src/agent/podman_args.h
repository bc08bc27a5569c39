/* podman_args.h - the podman command line of one tenant container (a job
 * rank), built from what the agent decided: which runtime, which limits,
 * which GPUs. Pure (no I/O): the isolation every container gets is visible,
 * and tested, in one place (docs/isolation.md):
 *
 *   --hooks-dir an empty directory (hooks installed on the host, such as
 *   nvidia-container-toolkit's, never run as root over tenant files),
 *   --userns through an explicit --uidmap/--gidmap of PODMAN_IDS ids at
 *   uid_base (container root is an unprivileged host uid), --security-opt
 *   no-new-privileges, the default seccomp profile (never disabled),
 *   --cap-drop all plus the few capabilities a container root needs for its
 *   own files (chown, dac_override, fowner, setuid, setgid, kill), --cpus,
 *   --memory (swap equal: none extra), --pids-limit, --ulimit nofile/nproc
 *   explicit (podman's defaults fail on hosts with low hard limits), its own
 *   network namespace on the lease's own isolated bridge network (or only
 *   loopback; the host's for exclusive whole-node leases, which multi-node
 *   training needs), with the rendezvous port published, a
 *   read-only image with a size-limited /tmp tmpfs, the lease's working
 *   directory at /work, the rank's NCCL topology read-only, the GPUs by
 *   CDI name, --init (signals reach the command), --log-driver none (the
 *   agent captures stdout; nothing grows under podman's storage), and the
 *   environment passed by name only (--env KEY: values come from podman's
 *   own environment, so they are not on any command line). */
#ifndef SL_AGENT_PODMAN_ARGS_H
#define SL_AGENT_PODMAN_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define PODMAN_IDS 65536u        /* ids in each container's user namespace */
#define PODMAN_ARGV_MAX 640      /* words of one podman command line */
#define PODMAN_TMP_MIB 256       /* /tmp tmpfs size (counted in the memory limit) */

struct podman_run {
	const char *podman;          /* the program ("podman") */
	const char *runtime;         /* "runc" | "crun" */
	const char *cgroup_manager;  /* "cgroupfs" | "systemd" */
	const char *hooks_dir;       /* an empty directory: no OCI hook of the host runs */
	const char *name;            /* the container's name */
	const char *image;           /* the image reference */
	uint32_t uid_base;           /* host id of container root */
	int64_t nofile, nproc;       /* ulimits (soft = hard) */
	int64_t cpus_milli;          /* CPU limit in thousandths of a CPU (0: none) */
	int64_t mem_mib;             /* memory limit (0: none) */
	int64_t pids;                /* pids limit */
	int host_network;            /* 1: --network host (exclusive whole-node leases) */
	const char *network;         /* else the lease's own network (NULL or "": none) */
	int publish;                 /* a TCP port published on the node as the same port (0: none) */
	int create;                  /* 1: `podman create` (fabric.h starts it) instead of run */
	const char *workdir;         /* host directory mounted at /work ("" : none) */
	const char *topo;            /* host file mounted at PODMAN_TOPO ("" : none) */
	const char *const *devices;  /* CDI device names (without the kind) */
	size_t ndevices;
	const char *const *env;      /* "KEY=VALUE" (only KEY is put on the line) */
	size_t nenv;
	char *const *argv;           /* the command (argc words) */
	size_t argc;
	const char *ldconfig_lib;    /* a driver library the CDI spec mounts (NULL or "":
				      * none): the command is wrapped in PODMAN_ENTRY */
};

/* The entry that runs the command when driver libraries are mounted: the
 * container runs ldconfig itself (no OCI hook runs as host root over its
 * files, CVE-2025-23266), then execs the command, whose words follow as
 * "$@" (never part of the script). $1 is the library: ldconfig runs only
 * when it is there. With a writable /etc the system cache is rebuilt;
 * with the read-only image, /run/ld.so.cache is (an image whose
 * /etc/ld.so.cache links there uses it; docs/isolation.md). */
#define PODMAN_ENTRY_SH "/bin/sh"
#define PODMAN_ENTRY                                                                     \
	"if [ -e \"$1\" ]; then ldconfig 2>/dev/null || "                                  \
	"ldconfig -C /run/ld.so.cache 2>/dev/null || :; fi; shift; exec \"$@\""
#define PODMAN_ENTRY_ARG0 "sl-entry"

/* A job's rank inside an instance's running container (podman exec): the
 * script records its own pid in $1 (a file in the container's /run), then
 * execs the command, whose words follow as "$@" (never part of the script);
 * a stop runs PODMAN_KILL_SH there with the pid file and the signal's name
 * (podman exec does not forward signals to the command reliably). */
#define PODMAN_EXEC_SH "echo $$ > \"$1\" || exit 126; shift; exec \"$@\""
#define PODMAN_EXEC_ARG0 "sl-exec"
#define PODMAN_KILL_SH "read p < \"$1\" && kill -s \"$2\" \"$p\""
#define PODMAN_KILL_ARG0 "sl-kill"

struct podman_exec {
	const char *podman, *runtime, *cgroup_manager;
	const char *container;       /* the instance's container */
	const char *workdir;         /* the command's directory ("" : the image's) */
	const char *pidfile;         /* where the script records the pid (in the container) */
	const char *const *env;      /* "KEY=VALUE" (only KEY is put on the line) */
	size_t nenv;
	char *const *argv;           /* the command (argc words) */
	size_t argc;
};

/* podman --runtime=R --cgroup-manager=C exec -i [--env=KEY ...] [--workdir=W]
 * CONTAINER /bin/sh -c PODMAN_EXEC_SH sl-exec PIDFILE ARGV...; free with
 * podman_argv_free. SL_EINVAL (no container, pid file or command, an env
 * entry without a name), SL_ELIMIT, SL_ENOMEM. */
enum sl_err podman_exec_argv(const struct podman_exec *x, char ***out,
			     struct sl_diag *d) SL_MUST_USE;

/* The capabilities a job container's root keeps (its own files). */
#define PODMAN_CAPS "chown,dac_override,fowner,setuid,setgid,kill"
/* An instance container's: those, plus what sshd needs for its privilege
 * separation (sys_chroot: the pre-auth child chroots to /run/sshd) and to
 * listen on port 22 in the container's own network namespace
 * (net_bind_service; it grants nothing in the host's network, which the
 * container's user namespace does not own). docs/isolation.md. */
#define PODMAN_INST_CAPS PODMAN_CAPS ",sys_chroot,net_bind_service"
#define PODMAN_INST_LOG_MIB 16
#define PODMAN_INST_SSH_DIR "/etc/suanli-ssh"
#define PODMAN_INST_DATA "/data"
/* The instance's entry: sshd's privilege separation directory on the fresh
 * /run tmpfs, ldconfig when a driver library ($1) is mounted (as
 * PODMAN_ENTRY), then exec sshd ("$@"). */
#define PODMAN_INST_ENTRY                                                                \
	"mkdir -p /run/sshd && chmod 0755 /run/sshd; "                                      \
	"if [ -e \"$1\" ]; then ldconfig 2>/dev/null || :; fi; shift; exec \"$@\""
#define PODMAN_INST_ENTRY_ARG0 "sl-instance"

#define PODMAN_TOPO "/run/suanli/nccl-topo.xml"
#define PODMAN_WORKDIR "/work"

/* What an instance's container gets besides a job's (podman_create_argv). */
struct podman_inst {
	const int (*publish)[2];     /* host port, container port */
	size_t npublish;
	const char *ssh_dir;         /* host directory mounted read-only at PODMAN_INST_SSH_DIR */
	const char *data_dir;        /* host directory mounted at PODMAN_INST_DATA ("" : none) */
	const char *label;           /* "KEY=VALUE" (the agent's config key) */
	const char *hostname;
};

/* `podman create` of an instance's long-running container (issue 14): the
 * isolation of r (user namespace, no hooks, no-new-privileges, limits,
 * devices, its network) but kept (no --rm) and writable (its layer is the
 * system disk), PODMAN_INST_CAPS, /tmp and /run tmpfs, its ssh directory
 * read-only, its data disk, the published ports, and the image's sshd as
 * the command (r->argv is not used). Errors as podman_run_argv. */
enum sl_err podman_create_argv(const struct podman_run *r, const struct podman_inst *x,
			       char ***out, struct sl_diag *d) SL_MUST_USE;

/* The command line as argv (NULL-terminated, each word malloc'ed; free with
 * podman_argv_free). SL_EINVAL when a field is missing or an env entry has
 * no '='; SL_ELIMIT beyond PODMAN_ARGV_MAX words; SL_ENOMEM. */
enum sl_err podman_run_argv(const struct podman_run *r, char ***out,
			    struct sl_diag *d) SL_MUST_USE;
void podman_argv_free(char **argv);

#endif

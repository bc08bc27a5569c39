/* cgdev.h - GPU device isolation with the cgroup v2 device filter.
 *
 * On cgroup v2 access to device nodes is decided by eBPF programs of type
 * BPF_PROG_TYPE_CGROUP_DEVICE attached to a cgroup (there is no devices.deny
 * file). For each rank the agent creates the cgroup
 * <cgroup2 mount>/suanli/<job>-rank<r>-<epoch>, attaches a small program
 * (assembled here, loaded with the raw bpf(2) syscall) that denies the
 * character devices of the GPUs the rank was not given, and the rank's shim
 * joins that cgroup before it forks the command. Everything else is allowed
 * (the program only narrows: other programs attached above still apply).
 *
 * Denied for a rank with GPU set G:
 *   NVIDIA  major 195, minors 0..253 not in G (/dev/nvidiaN; 255 nvidiactl and
 *           254 nvidia-modeset stay allowed, as do nvidia-uvm and nvidia-caps,
 *           which have majors of their own);
 *   Ascend  the major /proc/devices names "davinci" (else "devdrv"), minors
 *           0..63 not in G (/dev/davinciN), when the host has one;
 *   tests   the (major, minor) pairs of the test hook SUANLI_CGDEV_TEST_DENY.
 * The NVIDIA minor of GPU i comes from the driver's
 * /proc/driver/nvidia/gpus/<bus id>/information ("Device Minor:"), matched
 * by the bus id discovery found (cgdev_gpu_minors); where that is unknown
 * (no driver, simulated GPUs) GPU index i is taken to be minor i.
 *
 * cgdev_new probes once (creates a test cgroup, loads and attaches the
 * program, removes it). Where that fails (no cgroup2 mount, not root, bpf()
 * refused, a kernel without CONFIG_CGROUP_BPF) the handle says why and
 * cgdev_ok is false: the agent warns once and runs ranks without it.
 * Not thread-safe; one handle per agent. */
#ifndef SL_AGENT_CGDEV_H
#define SL_AGENT_CGDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "discovery.h"
#include "err.h"
#include "topo.h"

#define CGDEV_PATH_MAX 512      /* a cgroup directory path, bytes with the NUL */
#define CGDEV_REASON_MAX 256    /* the probe's reason text */
#define CGDEV_TEST_MAX 16       /* pairs in SUANLI_CGDEV_TEST_DENY */
#define CGDEV_RULES_MAX (CGDEV_TEST_MAX + 2) /* rules of one program */
#define CGDEV_NVIDIA_MAJOR 195u
#define CGDEV_NVIDIA_MINORS 254u /* minors 0..253 are GPUs; 254 modeset, 255 ctl */
#define CGDEV_ASCEND_MINORS 64u  /* /dev/davinci0..63 */
#define CGDEV_ENV_TEST "SUANLI_CGDEV_TEST_DENY"
#define CGDEV_NVIDIA_PROC "/proc/driver/nvidia/gpus"

/* Deny character devices major:[lo, hi) except the minors set in allow
 * (bit m allows minor m; only minors below 64 can be allowed). */
struct cgdev_rule {
	uint32_t major, lo, hi;
	uint64_t allow;
};

struct cgdev;

/* Probes the host. test_deny: the test hook's value (NULL or "": none),
 * "MAJ:MIN[,MAJ:MIN...]", at most CGDEV_TEST_MAX pairs; a malformed value is
 * SL_EINVAL with a hint and no handle. Otherwise *out is a handle even when
 * isolation is unavailable (cgdev_ok false, cgdev_reason says why).
 * SL_ENOMEM. */
enum sl_err cgdev_new(const char *test_deny, struct cgdev **out, struct sl_diag *d) SL_MUST_USE;
void cgdev_free(struct cgdev *c);

/* True when ranks are isolated; else cgdev_reason is a sentence saying why. */
bool cgdev_ok(const struct cgdev *c);
const char *cgdev_reason(const struct cgdev *c);
/* The cgroup2 mount point in use ("" when none was found). */
const char *cgdev_mount(const struct cgdev *c);

/* The NVIDIA device minor of each discovered GPU (minors[i] for GPU i), read
 * from proc_dir/<bus id>/information (proc_dir: CGDEV_NVIDIA_PROC; tests pass
 * another). Every GPU's minor must be found, distinct and below 64, else
 * minors[i] = i for all (returns false). disc NULL: i for all, false. */
bool cgdev_gpu_minors(const struct discovery *disc, const char *proc_dir,
		      uint8_t minors[TOPO_MAX_GPUS]);

/* The rules for a rank given gpus (the NVIDIA and Ascend ranges plus the test
 * pairs); nv_minors maps GPU index to NVIDIA minor (NULL: the index). Returns
 * how many were written to out (at most CGDEV_RULES_MAX). */
size_t cgdev_rules(const struct cgdev *c, gpumask_t gpus, const uint8_t *nv_minors,
		   struct cgdev_rule *out);

/* Path of the rank's cgroup: <mount>/suanli/<job>-rank<rank>-<epoch>.
 * SL_ELIMIT when it does not fit CGDEV_PATH_MAX. */
enum sl_err cgdev_path(const struct cgdev *c, const char *job, int rank, int64_t epoch,
		       char *path, size_t n, struct sl_diag *d) SL_MUST_USE;

/* Creates the cgroup at path (an existing empty one is replaced), attaches
 * the program denying rules[0..n) and opens its cgroup.procs for writing:
 * *procs_fd (O_CLOEXEC) is where the rank's process writes "0" to join it
 * (cgdev_join, in the child after fork). On error nothing is left behind.
 * SL_EIO (what failed, with errno's text), SL_EINVAL (too many rules). */
enum sl_err cgdev_create(const char *path, const struct cgdev_rule *rules, size_t n,
			 int *procs_fd, struct sl_diag *d) SL_MUST_USE;
/* Moves the calling process into the cgroup of procs_fd. Async-signal-safe
 * (for the child after fork). 0, or the errno. */
int cgdev_join(int procs_fd);
/* Kills every process in the cgroup at path (cgroup.kill, Linux 5.14+;
 * else SIGKILL to each pid of cgroup.procs). Not async-signal-safe. */
void cgdev_kill(const char *path);
/* Removes the cgroup at path: 0 when gone (or never there), else the errno
 * (EBUSY while processes remain in it: retry later). */
int cgdev_remove(const char *path);

/* The program for rules[0..n) as struct bpf_insn (8 bytes each) into insns
 * (room for max); returns the count, 0 when it does not fit. For tests and
 * cgdev_create. */
size_t cgdev_program(const struct cgdev_rule *rules, size_t n, void *insns, size_t max);

/* Parses the test hook's value into rules (exact major:minor pairs). Returns
 * the count, or -1 with d saying what is wrong. */
int cgdev_parse_test(const char *s, struct cgdev_rule *out, size_t max, struct sl_diag *d);

#endif

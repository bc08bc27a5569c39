/* engine.c - the podman engine: the host probe, the CDI spec and its
 * stand-ins, and what each rank's container gets (engine.h). */
#define _GNU_SOURCE
#include "engine.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "state.h"
#include "uid_ranges.h"
#include "proc.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#define NVIDIA_PROC "/proc/driver/nvidia/gpus"

struct engine {
	bool ok;
	char reason[ENGINE_REASON_MAX];
	char podman[256];
	const char *runtime, *cgroups;
	int64_t nofile, nproc, pids;
	const struct discovery *disc;
	char cdi_path[512];
	char image[ENGINE_IMAGE_MAX];
	char hooks[STATE_PATH_MAX]; /* STATE_DIR/no-hooks, kept empty */
	char node[CDI_NAME_MAX / 2];
	char uid_dir[STATE_PATH_MAX];
	char ldlib[CDI_PATH_MAX]; /* a driver library the CDI spec mounts ("" : none) */
	struct fabric fab;
	bool has_fab;
	char self[4096];          /* /proc/self/exe */
};

/* The first executable name in PATH into out; false when none. */
static bool in_path(const char *name, char *out, size_t n)
{
	const char *p = getenv("PATH");
	if (!p || !*p)
		p = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	while (*p) {
		const char *c = strchr(p, ':');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		int w = snprintf(out, n, "%.*s/%s", (int)len, p, name);
		if (len && w > 0 && (size_t)w < n && access(out, X_OK) == 0)
			return true;
		p += len + (c ? 1 : 0);
	}
	return false;
}

/* Runs argv with stdout and stderr to /dev/null; its exit status, or -1. */
static int run_quiet(char *const argv[])
{
	return sl_run(argv, &(struct sl_run){.out_fd = SL_RUN_NULL, .err_fd = SL_RUN_NULL});
}

static int64_t hard_limit(int res, int64_t cap)
{
	struct rlimit rl;
	if (getrlimit(res, &rl) != 0 || rl.rlim_max == RLIM_INFINITY || (int64_t)rl.rlim_max > cap)
		return cap;
	return (int64_t)rl.rlim_max;
}

static void probe(struct engine *e)
{
	struct statfs fs;
	char rt[256];
	if (statfs("/sys/fs/cgroup", &fs) != 0) {
		e->cgroups = "none";
		snprintf(e->reason, sizeof(e->reason), "no cgroup file system at /sys/fs/cgroup "
			 "(inside `ip netns exec`, bind the host's /sys/fs/cgroup first)");
		return;
	}
	struct stat st;
	if ((uint64_t)fs.f_type == CGROUP2_SUPER_MAGIC) {
		e->cgroups = "v2";
	} else if ((uint64_t)fs.f_type == TMPFS_MAGIC) { /* v1 hierarchies on a tmpfs */
		e->cgroups = stat("/sys/fs/cgroup/unified", &st) == 0 ? "hybrid" : "v1";
	} else {
		e->cgroups = "none";
		snprintf(e->reason, sizeof(e->reason), "no cgroup file system mounted at "
			 "/sys/fs/cgroup (`ip netns exec` gives a fresh /sys without it: enter "
			 "only the network namespace, e.g. nsenter --net)");
		return;
	}
	/* crun refuses hybrid hierarchies ("cgroups in hybrid mode not supported") */
	bool v2 = strcmp(e->cgroups, "v2") == 0;
	if (v2 && in_path("crun", rt, sizeof(rt)))
		e->runtime = "crun";
	else if (in_path("runc", rt, sizeof(rt)))
		e->runtime = "runc";
	else {
		snprintf(e->reason, sizeof(e->reason), "no %s in PATH (scripts/deps.sh installs it)",
			 v2 ? "crun or runc" : "runc (crun does not support cgroup v1 or hybrid hosts)");
		return;
	}
	if (!in_path("podman", e->podman, sizeof(e->podman))) {
		snprintf(e->reason, sizeof(e->reason), "no podman in PATH (scripts/deps.sh installs it)");
		return;
	}
	char *argv[] = {e->podman, "--version", NULL};
	int rc = run_quiet(argv);
	if (rc != 0) {
		snprintf(e->reason, sizeof(e->reason), "`podman --version` failed (exit %d)", rc);
		return;
	}
	e->nofile = hard_limit(RLIMIT_NOFILE, ENGINE_NOFILE_CAP);
	/* RLIMIT_NPROC counts the processes of a host uid: a lease's range. The
	 * pids limit is the container's bound; podman refuses values near the
	 * host's hard limit, so it is never above that bound either. */
	e->nproc = hard_limit(RLIMIT_NPROC, e->pids < ENGINE_NPROC_CAP ? e->pids : ENGINE_NPROC_CAP);
	e->ok = true;
}

/* "00000000:18:00.0" -> "0000:18:00.0" lower case; false when not that shape. */
static bool bus_name(const char *bus, char *out)
{
	size_t len = strlen(bus);
	if (len < 12)
		return false;
	const char *p = bus + len - 12;
	for (size_t i = 0; i < 12; i++) {
		char ch = p[i];
		bool at_sep = i == 4 || i == 7 || i == 10;
		bool hex = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
		if (at_sep ? ch != (i == 10 ? '.' : ':') : !hex)
			return false;
		out[i] = ch >= 'A' && ch <= 'F' ? (char)(ch - 'A' + 'a') : ch;
	}
	out[12] = '\0';
	return true;
}

/* The driver's "Device Minor" of a GPU (its /dev/nvidiaN); -1 when unknown. */
static int nvidia_minor(const char *bus)
{
	char name[16], path[256], line[256];
	int minor = -1;
	if (!bus_name(bus, name))
		return -1;
	snprintf(path, sizeof(path), "%s/%s/information", NVIDIA_PROC, name);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	while (minor < 0 && fgets(line, sizeof(line), f))
		if (strncmp(line, "Device Minor:", 13) == 0 &&
		    (sscanf(line + 13, "%d", &minor) != 1 || minor < 0 || minor > 255))
			minor = -1;
	fclose(f);
	return minor;
}

/* A real device node: true when path is a character device (numbers filled). */
static bool real_dev(const char *path, struct cdi_dev *dv)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISCHR(st.st_mode))
		return false;
	snprintf(dv->path, sizeof(dv->path), "%s", path);
	dv->host[0] = '\0';
	dv->major = major(st.st_rdev);
	dv->minor = minor(st.st_rdev);
	return true;
}

/* A stand-in for path under dir: a character device with /dev/null's numbers. */
static enum sl_err standin(const char *dir, const char *path, struct cdi_dev *dv,
			   struct sl_diag *d)
{
	const char *base = strrchr(path, '/') + 1;
	snprintf(dv->path, sizeof(dv->path), "%s", path);
	if (snprintf(dv->host, sizeof(dv->host), "%s/%s", dir, base) >= (int)sizeof(dv->host))
		return sl_diag_set(d, SL_ELIMIT, "stand-in path under %s is too long", dir);
	dv->major = 1;
	dv->minor = 3;
	(void)unlink(dv->host);
	if (mknod(dv->host, S_IFCHR | 0666, makedev(1, 3)) != 0 || chmod(dv->host, 0666) != 0)
		return sl_diag_set(d, SL_EIO, "cannot make the stand-in device %s: %s", dv->host,
				   strerror(errno));
	return SL_OK;
}

static void add_mount(struct cdi_host *h, const char *path)
{
	if (h->nmounts < CDI_MOUNTS_MAX && access(path, R_OK) == 0)
		snprintf(h->mounts[h->nmounts++], CDI_PATH_MAX, "%s", path);
}

/* The driver's user-space files found on the host (none in simulate mode). */
static void driver_mounts(struct cdi_host *h, bool ascend)
{
	static const char *const nv[] = {
		"/usr/bin/nvidia-smi", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
		"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
		"/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1",
		"/usr/lib/x86_64-linux-gnu/libnvidia-nvvm.so.4", "/usr/lib64/libnvidia-ml.so.1",
		"/usr/lib64/libcuda.so.1"};
	static const char *const hw[] = {"/usr/local/Ascend/driver", "/usr/local/bin/npu-smi"};
	const char *const *v = ascend ? hw : nv;
	size_t n = ascend ? sizeof(hw) / sizeof(hw[0]) : sizeof(nv) / sizeof(nv[0]);
	for (size_t i = 0; i < n; i++)
		add_mount(h, v[i]);
}

static enum sl_err write_cdi(struct engine *e, const struct engine_opts *o, struct sl_diag *d)
{
	static const char *const nv_shared[] = {"/dev/nvidiactl", "/dev/nvidia-uvm",
						"/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"};
	static const char *const hw_shared[] = {"/dev/davinci_manager", "/dev/devmm_svm",
						"/dev/hisi_hdc"};
	const struct discovery *disc = o->disc;
	bool sim = strcmp(disc->source, "simulate") == 0;
	bool ascend = disc->type.gpu && strcmp(disc->type.gpu->vendor, "huawei") == 0;
	const char *gpu_fmt = ascend ? "/dev/davinci%d" : "/dev/nvidia%d";
	const char *const *shared = ascend ? hw_shared : nv_shared;
	size_t nshared = ascend ? 3 : 4;
	char sdir[STATE_PATH_MAX], path[CDI_PATH_MAX];
	enum sl_err er;
	struct cdi_host *h = calloc(1, sizeof(*h));
	if (!h)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	snprintf(h->prefix, sizeof(h->prefix), "%s", e->node);
	h->ngpus = disc->type.ngpus;
	if ((er = state_path(sdir, sizeof(sdir), o->state_dir, d, "sim-dev")) != SL_OK ||
	    (sim && (er = state_mkdirs(sdir, 0755, d)) != SL_OK))
		goto out;
	for (int i = 0; i < h->ngpus; i++) {
		int m = ascend || sim ? -1 : nvidia_minor(disc->gpus[i].bus_id);
		snprintf(path, sizeof(path), gpu_fmt, m >= 0 ? m : i);
		if (sim) {
			if ((er = standin(sdir, path, &h->gpu[i], d)) != SL_OK)
				goto out;
		} else if (!real_dev(path, &h->gpu[i])) {
			sl_log_warn("GPU device node missing; containers given this GPU will not start",
				    "gpu=%d path=%s", i, path);
			snprintf(h->gpu[i].path, CDI_PATH_MAX, "%s", path);
		}
	}
	for (size_t i = 0; i < nshared; i++) {
		struct cdi_dev *dv = &h->shared[h->nshared];
		if (sim && i == 0) {
			if ((er = standin(sdir, shared[i], dv, d)) != SL_OK)
				goto out;
			h->nshared++;
		} else if (!sim && real_dev(shared[i], dv)) {
			h->nshared++;
		}
	}
	if (!sim)
		driver_mounts(h, ascend);
	for (int i = 0; i < h->nmounts && !e->ldlib[0]; i++) /* the first library or lib dir */
		if (strstr(h->mounts[i], ".so") || strstr(h->mounts[i], "/driver"))
			snprintf(e->ldlib, sizeof(e->ldlib), "%s", h->mounts[i]);
	json_t *spec = cdi_spec_json(disc, h);
	char *text = spec ? json_dumps(spec, JSON_INDENT(1) | JSON_SORT_KEYS) : NULL;
	json_decref(spec);
	if (!text) {
		er = sl_diag_set(d, SL_EINVAL, "cannot make the CDI spec (node name %s must be a "
					       "CDI name, [A-Za-z0-9][A-Za-z0-9_.:-]*)", e->node);
		goto out;
	}
	const char *dir = o->cdi_dir ? o->cdi_dir : ENGINE_CDI_DIR;
	if ((er = state_mkdirs(dir, 0755, d)) == SL_OK &&
	    (er = state_path(e->cdi_path, sizeof(e->cdi_path), dir, d, "suanli-%s.json", e->node)) ==
		    SL_OK)
		er = state_write_atomic(e->cdi_path, text, strlen(text), 0644, d);
	if (er != SL_OK)
		e->cdi_path[0] = '\0';
	free(text);
out:
	free(h);
	return er;
}

enum sl_err engine_new(const struct engine_opts *o, struct engine **out, struct sl_diag *d)
{
	struct engine *e = calloc(1, sizeof(*e));
	*out = NULL;
	if (!e)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	e->runtime = "";
	e->cgroups = "none";
	e->disc = o->disc;
	e->pids = o->pids > 0 ? o->pids : ENGINE_PIDS_DEFAULT;
	snprintf(e->node, sizeof(e->node), "%s", o->name ? o->name : o->node);
	snprintf(e->uid_dir, sizeof(e->uid_dir), "%s", o->uid_dir ? o->uid_dir : UID_RANGES_DIR);
	snprintf(e->image, sizeof(e->image), "%s", o->image ? o->image : "");
	if (o->fabric) {
		e->fab = *o->fabric;
		e->has_fab = true;
	}
	ssize_t sl = readlink("/proc/self/exe", e->self, sizeof(e->self) - 1);
	e->self[sl > 0 ? (size_t)sl : 0] = '\0';
	probe(e);
	if (e->ok) {
		enum sl_err er = state_path(e->hooks, sizeof(e->hooks), o->state_dir, d, "no-hooks");
		if (er == SL_OK)
			er = state_mkdirs(e->hooks, 0700, d);
		if (er != SL_OK) {
			free(e);
			return er;
		}
	}
	if (e->ok && o->disc) {
		enum sl_err er = write_cdi(e, o, d);
		if (er != SL_OK) {
			free(e);
			return er;
		}
	}
	*out = e;
	return SL_OK;
}

void engine_free(struct engine *e)
{
	if (!e)
		return;
	if (e->cdi_path[0])
		(void)unlink(e->cdi_path);
	free(e);
}

bool engine_ok(const struct engine *e) { return e && e->ok; }
const char *engine_reason(const struct engine *e) { return e ? e->reason : "no engine"; }
const char *engine_runtime(const struct engine *e) { return e ? e->runtime : ""; }
const char *engine_cgroups(const struct engine *e) { return e ? e->cgroups : "none"; }
const char *engine_default_image(const struct engine *e) { return e ? e->image : ""; }
const char *engine_name(const struct engine *e) { return e ? e->node : ""; }
const char *engine_uid_dir(const struct engine *e) { return e ? e->uid_dir : UID_RANGES_DIR; }
const char *engine_podman(const struct engine *e) { return e && e->podman[0] ? e->podman : "podman"; }
const struct fabric *engine_fabric(const struct engine *e)
{
	return e && e->ok && e->has_fab && e->self[0] ? &e->fab : NULL;
}
const char *engine_self(const struct engine *e) { return e ? e->self : ""; }

uint32_t engine_uid_base(const char *lease)
{
	uint64_t n = 0;
	bool digits = false;
	for (const char *p = lease; *p; p++) {
		if (*p >= '0' && *p <= '9') {
			n = (n * 10 + (uint64_t)(*p - '0')) % ENGINE_UID_SLOTS;
			digits = true;
		} else {
			n = digits ? 0 : n;
			digits = false;
		}
	}
	if (!digits) /* no number at the end: FNV-1a of the id */
		for (const char *p = lease; *p; p++)
			n = ((n ^ (uint8_t)*p) * 1099511628211ull) % ENGINE_UID_SLOTS;
	return ENGINE_UID_BASE + (uint32_t)n * PODMAN_IDS;
}

void engine_fill(const struct engine *e, const char *name, const char *image,
		 char *const *argv, size_t argc, gpumask_t gpus, const char *lease,
		 char devs[][CDI_NAME_MAX], const char **devp, struct podman_run *r)
{
	const struct node_type *t = e->disc ? &e->disc->type : NULL;
	int k = __builtin_popcount((unsigned)gpus), n = t ? t->ngpus : 0;
	memset(r, 0, sizeof(*r));
	r->podman = e->podman;
	r->runtime = e->runtime;
	r->cgroup_manager = "cgroupfs";
	r->hooks_dir = e->hooks;
	r->name = name;
	r->image = image;
	r->uid_base = engine_uid_base(lease);
	r->nofile = e->nofile;
	r->nproc = e->nproc;
	r->pids = e->pids;
	if (t && n > 0 && k > 0) {
		r->cpus_milli = (int64_t)t->cpus * 1000 * k / n;
		r->mem_mib = (int64_t)t->mem_gib * 1024 * k / n;
	}
	r->host_network = n > 0 && k == n;
	for (int i = 0; i < TOPO_MAX_GPUS; i++)
		if ((gpus & ((gpumask_t)1 << i)) && cdi_device_name(e->node, i, devs[r->ndevices],
								       CDI_NAME_MAX)) {
			devp[r->ndevices] = devs[r->ndevices];
			r->ndevices++;
		}
	r->devices = devp;
	r->argv = argv;
	r->argc = argc;
	r->ldconfig_lib = e->ldlib;
}

bool engine_image_exists(const struct engine *e, const char *ref)
{
	char *argv[] = {(char *)e->podman, "image", "exists", (char *)ref, NULL};
	return engine_ok(e) && run_quiet(argv) == 0;
}

static void lease_net_name(const struct engine *e, const char *lease, char *buf, size_t n)
{
	snprintf(buf, n, "sl-%s-%s", e->node, lease);
}

enum sl_err engine_lease_net(const struct engine *e, const char *lease, char *buf, size_t n,
			     struct sl_diag *d)
{
	lease_net_name(e, lease, buf, n);
	char *ex[] = {(char *)e->podman, "network", "exists", buf, NULL};
	if (run_quiet(ex) == 0)
		return SL_OK;
	char *mk[] = {(char *)e->podman, "network", "create", "--opt", "isolate=true",
		      "--label", "suanli=lease", buf, NULL};
	int rc = run_quiet(mk);
	if (rc == 0 || run_quiet(ex) == 0) /* or another start made it meanwhile */
		return SL_OK;
	sl_diag_hint(d, "see `podman network create --opt isolate=true %s` on the node", buf);
	return sl_diag_set(d, SL_EIO, "cannot make the lease's network %s (podman exited %d)", buf,
			   rc);
}

void engine_detached(const struct engine *e, char *const argv[])
{
	pid_t pid = fork();
	if (pid == 0) {
		if (fork() == 0) {
			int fd = open("/dev/null", O_RDWR);
			if (fd >= 0) {
				(void)dup2(fd, 0);
				(void)dup2(fd, 1);
				(void)dup2(fd, 2);
			}
			(void)setsid();
			execv(e->podman, argv);
		}
		_exit(0);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
}

void engine_lease_net_remove(const struct engine *e, const char *lease)
{
	char name[CDI_NAME_MAX + 96];
	if (!engine_ok(e))
		return;
	lease_net_name(e, lease, name, sizeof(name));
	char *argv[] = {(char *)e->podman, "--runtime", (char *)e->runtime, "--cgroup-manager",
			"cgroupfs", "network", "rm", "--force", name, NULL};
	engine_detached(e, argv);
}

void engine_remove(const struct engine *e, const char *name)
{
	if (!engine_ok(e))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		if (fork() == 0) {
			int fd = open("/dev/null", O_RDWR);
			if (fd >= 0) {
				(void)dup2(fd, 0);
				(void)dup2(fd, 1);
				(void)dup2(fd, 2);
			}
			(void)setsid();
			execl(e->podman, e->podman, "--runtime", e->runtime, "--cgroup-manager",
			      "cgroupfs", "rm", "--force", "--time", "0", name, (char *)NULL);
		}
		_exit(0);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
}

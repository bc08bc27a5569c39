/* inst_ops.c - what an instance's ops do, each in a child process of its
 * own so the agent's loop never waits for podman (inst.h):
 *
 *   up      host keys and sshd files (inst_ssh.c), the data disk (a sparse
 *           ext4 image of volume_gib under --storage-dir, loop-mounted,
 *           its root owned by container root), the migration's copy when
 *           there is one (inst_migrate.c), the image (pulled when missing,
 *           "pulling" meanwhile), the container (`podman create` once;
 *           re-created from a `podman commit` of itself when its config
 *           changed, so the system disk is kept), `podman start`;
 *   down    `podman stop -t GRACE` (SIGTERM, grace, SIGKILL; kept);
 *   remove  `podman rm -f`, the committed image, the network, the disk, the
 *           keys;
 *   export  inst_migrate.c.
 *
 * The child writes why it failed to op.err and what it does to op.progress
 * (read by the report), its podman output to op.log, and ends with 0 or 1.
 * It runs in a session of its own with every inherited descriptor closed
 * (conmon, which podman start leaves behind, must not hold the agent's
 * lock or its connection). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "engine.h"
#include "inst_int.h"
#include "log.h"
#include "podman_args.h"
#include "uid_ranges.h"
#include "work_int.h"
#include "proc.h"

enum sl_err inst_path(const struct inst_sup *s, const struct inst *in, char *buf, size_t n,
		      const char *rest)
{
	return state_path(buf, n, s->dir, NULL, "instances/%s/%s", in->spec.id, rest);
}

void inst_ctr_name(const struct inst_sup *s, const struct inst *in, char *buf, size_t n)
{
	snprintf(buf, n, "sl-%s-%s", engine_name(s->eng), in->spec.id);
}

void inst_sys_image(const struct inst_sup *s, const struct inst *in, char *buf, size_t n)
{
	snprintf(buf, n, "localhost/suanli-instance/%s-%s:system", engine_name(s->eng), in->spec.id);
}

enum sl_err inst_disk_paths(const struct inst_sup *s, const struct inst *in, char *img,
			    char *mnt, size_t n, struct sl_diag *d)
{
	enum sl_err e = state_path(img, n, s->storage, d, "%s.img", in->spec.id);
	return e != SL_OK ? e : state_path(mnt, n, s->storage, d, "%s", in->spec.id);
}

void inst_cfg_key(const struct inst_sup *s, const struct inst *in, char *buf, size_t n)
{
	const struct inst_spec *sp = &in->spec;
	char text[1024];
	int len = snprintf(text, sizeof(text), "%s|%llx|%lld|%lld|%d|%u|%lld|%d", sp->w.image,
			   (unsigned long long)sp->w.gpus, (long long)sp->cpus_milli,
			   (long long)sp->mem_mib, sp->host_network, in->uid_base,
			   (long long)sp->volume_gib, in->ssh_port);
	for (int i = 0; i < sp->nports && len > 0 && (size_t)len < sizeof(text); i++)
		len += snprintf(text + len, sizeof(text) - (size_t)len, "|%d:%d", in->host_ports[i],
				sp->ports[i]);
	(void)s;
	unsigned char h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(h, (const unsigned char *)text, strlen(text));
	for (size_t i = 0; i < 8 && 2 * i + 2 < n; i++)
		snprintf(buf + 2 * i, 3, "%02x", h[i]);
}

int inst_run(char *const argv[], char *out, size_t n, int errfd)
{
	int fd = errfd >= 0 ? errfd : SL_RUN_NULL;
	return sl_run(argv, &(struct sl_run){.out = out, .outn = n, .out_fd = fd, .err_fd = fd});
}

/* podman rm of the instance's container, in the op's child: a container whose
 * exec sessions just ended can hold its shm mount for a moment ("userdata/shm:
 * device or resource busy"), so its storage is cleaned up first and the rm is
 * tried again, three times a second apart. 0 when it is gone. */
static int rm_ctr(const struct inst_sup *s, char *name)
{
	char *cleanup[] = PODMAN(s, "container", "cleanup", name);
	char *rm[] = PODMAN(s, "rm", "--force", "--time", "0", name);
	for (int i = 0; i < 4; i++) {
		if (i)
			sleep(1);
		(void)inst_run(cleanup, NULL, 0, -1);
		if (inst_run(rm, NULL, 0, inst_op_errfd) == 0)
			return 0;
	}
	return -1;
}

bool inst_inspect(const struct inst_sup *s, const struct inst *in, char *status, size_t n,
		  pid_t *conmon, char *cfg, size_t cn)
{
	char name[256], out[512];
	inst_ctr_name(s, in, name, sizeof(name));
	char *argv[] = PODMAN(s, "container", "inspect", "--format",
			      "{{.State.Status}} {{.State.ConmonPid}} "
			      "{{index .Config.Labels \"suanli.cfg\"}}",
			      name);
	if (!engine_ok(s->eng) || inst_run(argv, out, sizeof(out), -1) != 0)
		return false;
	char st[64] = "", c[INST_CFG_MAX] = "";
	long pid = 0;
	if (sscanf(out, "%63s %ld %19s", st, &pid, c) < 2)
		return false;
	snprintf(status, n, "%s", st);
	*conmon = (pid_t)pid;
	snprintf(cfg, cn, "%s", c);
	return true;
}

/* ---- in the op child --------------------------------------------------- */

int inst_op_errfd = -1;

void inst_progress(const struct inst_sup *s, const struct inst *in, const char *text)
{
	char path[STATE_PATH_MAX];
	if (inst_path(s, in, path, sizeof(path), "op.progress") == SL_OK)
		if (state_write_atomic(path, text, strlen(text), 0600, NULL) != SL_OK)
			dprintf(inst_op_errfd, "suanli-agent: cannot write %s\n", path);
}

/* The op failed: the reason to op.err; returns 1 (the child's status). */
int inst_fail(const struct inst_sup *s, const struct inst *in, const char *fmt, ...)
{
	char msg[INST_ERROR_MAX], path[STATE_PATH_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (inst_path(s, in, path, sizeof(path), "op.err") == SL_OK)
		if (state_write_atomic(path, msg, strlen(msg), 0600, NULL) != SL_OK)
			dprintf(inst_op_errfd, "suanli-agent: cannot write %s\n", path);
	dprintf(inst_op_errfd, "suanli-agent: %s\n", msg);
	return 1;
}

/* podman's last "Error: " line in op.log, for a reason. */
static void podman_error(const struct inst_sup *s, const struct inst *in, char *buf, size_t n)
{
	char path[STATE_PATH_MAX], line[512];
	buf[0] = '\0';
	FILE *f = inst_path(s, in, path, sizeof(path), "op.log") == SL_OK ? fopen(path, "re") : NULL;
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "Error: ", 7) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(buf, n, "%.*s", (int)n - 1, line + 7);
		}
	if (f)
		fclose(f);
}

bool inst_mounted(const char *mnt, const char *parent)
{
	struct stat a, b;
	return stat(mnt, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

/* The data disk: STORAGE/ID.img (sparse, ext4, root owned by container
 * root) loop-mounted at STORAGE/ID. Made once; mounted when it is not. */
int inst_disk_up(const struct inst_sup *s, const struct inst *in, char *mnt, size_t n)
{
	char img[STATE_PATH_MAX], own[64], size[32];
	struct sl_diag d;
	sl_diag_clear(&d);
	mnt[0] = '\0';
	if (in->spec.volume_gib <= 0)
		return 0;
	if (inst_disk_paths(s, in, img, mnt, n, &d) != SL_OK ||
	    state_mkdirs(s->storage, 0700, &d) != SL_OK || state_mkdirs(mnt, 0700, &d) != SL_OK)
		return inst_fail(s, in, "data disk: %s", d.msg);
	if (inst_mounted(mnt, s->storage))
		return 0;
	if (access(img, F_OK) != 0) {
		char tmp[STATE_PATH_MAX + 8];
		snprintf(tmp, sizeof(tmp), "%s.new", img);
		snprintf(size, sizeof(size), "%lldG", (long long)in->spec.volume_gib);
		snprintf(own, sizeof(own), "root_owner=%u:%u", in->uid_base, in->uid_base);
		char *trunc[] = {"truncate", "-s", size, tmp, NULL};
		char *mkfs[] = {"mkfs.ext4", "-q", "-F", "-m", "0", "-E", own, tmp, NULL};
		inst_progress(s, in, "creating the data disk");
		if (inst_run(trunc, NULL, 0, inst_op_errfd) != 0 || inst_run(mkfs, NULL, 0, inst_op_errfd) != 0 ||
		    rename(tmp, img) != 0) {
			(void)unlink(tmp);
			return inst_fail(s, in, "cannot make the %lld GiB data disk %s (truncate and "
					   "mkfs.ext4; see op.log)", (long long)in->spec.volume_gib, img);
		}
	}
	char *mount[] = {"mount", "-o", "loop,nosuid,nodev", img, mnt, NULL};
	if (inst_run(mount, NULL, 0, inst_op_errfd) != 0)
		return inst_fail(s, in, "cannot mount the data disk %s at %s (loop devices?)", img, mnt);
	return 0;
}

static int op_up(struct inst_sup *s, struct inst *in)
{
	char name[256], image[WORK_IMAGE_MAX], sys[256], ssh[STATE_PATH_MAX], data[STATE_PATH_MAX];
	char net[256], status[64], cfg[INST_CFG_MAX], have[INST_CFG_MAX], label[64], err[300];
	char devs[TOPO_MAX_GPUS][CDI_NAME_MAX];
	const char *devp[TOPO_MAX_GPUS];
	struct sl_diag d;
	pid_t conmon = 0;

	sl_diag_clear(&d);
	if (!engine_ok(s->eng))
		return inst_fail(s, in, "no container engine on this node: %s", engine_reason(s->eng));
	inst_ctr_name(s, in, name, sizeof(name));
	snprintf(image, sizeof(image), "%s",
		 in->spec.w.image[0] ? in->spec.w.image : engine_default_image(s->eng));
	if (!image[0])
		return inst_fail(s, in, "no image: the instance names none and the agent has no --image");
	inst_sys_image(s, in, sys, sizeof(sys));
	inst_progress(s, in, "creating");
	if (inst_ssh_prepare(s, in, &d) != SL_OK)
		return inst_fail(s, in, "ssh: %s", d.msg);
	if (inst_disk_up(s, in, data, sizeof(data)) != 0)
		return 1;
	if (in->spec.migrate_from[0] && !in->imported) {
		inst_progress(s, in, "importing");
		if (inst_import_main(s, in, inst_op_errfd) != 0)
			return 1;
	}
	inst_cfg_key(s, in, cfg, sizeof(cfg));
	bool exists = inst_inspect(s, in, status, sizeof(status), &conmon, have, sizeof(have));
	char *sys_exists[] = PODMAN(s, "image", "exists", sys);
	bool has_sys = inst_run(sys_exists, NULL, 0, -1) == 0;
	if (exists && strcmp(have, cfg) != 0) {
		/* another config (GPUs, ports, id range): keep the system disk
		 * through an image of it, then make the container anew */
		inst_progress(s, in, "creating (keeping the system disk)");
		char *commit[] = PODMAN(s, "commit", "--quiet", name, sys);
		if (inst_run(commit, NULL, 0, inst_op_errfd) != 0)
			return inst_fail(s, in, "cannot keep the system disk (podman commit %s failed)",
				    name);
		if (rm_ctr(s, name) != 0)
			return inst_fail(s, in, "cannot replace the container %s (podman rm failed)", name);
		exists = false;
		has_sys = true;
	}
	if (!exists) {
		const char *from = has_sys ? sys : image;
		char *ex[] = PODMAN(s, "image", "exists", (char *)from);
		if (inst_run(ex, NULL, 0, -1) != 0) {
			char msg[WORK_IMAGE_MAX + 32];
			snprintf(msg, sizeof(msg), "pulling %s", from);
			inst_progress(s, in, msg);
			char *pull[] = PODMAN(s, "pull", "--quiet", (char *)from);
			if (inst_run(pull, NULL, 0, inst_op_errfd) != 0) {
				podman_error(s, in, err, sizeof(err));
				return inst_fail(s, in, "image %s is not on this node and cannot be pulled; "
						   "add a ref it has (suanli image add) or build one "
						   "(scripts/build-image.py)%s%s",
					    from, err[0] ? "; podman: " : "", err);
			}
		}
		inst_progress(s, in, "creating");
		struct podman_run r;
		engine_fill(s->eng, name, from, NULL, 0, in->spec.w.gpus, in->spec.id, devs, devp, &r);
		r.uid_base = in->uid_base;
		r.cpus_milli = in->spec.cpus_milli;
		r.mem_mib = in->spec.mem_mib;
		r.host_network = in->spec.host_network;
		if (!r.host_network) {
			if (engine_lease_net(s->eng, in->spec.id, net, sizeof(net), &d) != SL_OK)
				return inst_fail(s, in, "%s", d.msg);
			r.network = net;
		}
		int pub[INST_PORTS_MAX + 1][2];
		size_t np = 0;
		pub[np][0] = in->ssh_port;
		pub[np++][1] = 22;
		for (int i = 0; i < in->spec.nports; i++) {
			pub[np][0] = in->host_ports[i];
			pub[np++][1] = in->spec.ports[i];
		}
		if (inst_path(s, in, ssh, sizeof(ssh), "ssh") != SL_OK)
			return inst_fail(s, in, "state directory path too long");
		snprintf(label, sizeof(label), "suanli.cfg=%s", cfg);
		struct podman_inst x = {(const int(*)[2])pub, np, ssh, data, label, in->spec.id};
		char **argv = NULL;
		if (podman_create_argv(&r, &x, &argv, &d) != SL_OK)
			return inst_fail(s, in, "%s", d.msg);
		int rc = inst_run(argv, NULL, 0, inst_op_errfd);
		podman_argv_free(argv);
		if (rc != 0) {
			podman_error(s, in, err, sizeof(err));
			return inst_fail(s, in, "podman create %s failed (exit %d)%s%s", name, rc,
				    err[0] ? ": " : "", err);
		}
	}
	inst_progress(s, in, "starting");
	char *start[] = PODMAN(s, "start", name);
	int rc = inst_run(start, NULL, 0, inst_op_errfd);
	if (rc != 0) {
		podman_error(s, in, err, sizeof(err));
		return inst_fail(s, in, "podman start %s failed (exit %d)%s%s", name, rc,
			    err[0] ? ": " : "", err);
	}
	return 0;
}

static int op_down(struct inst_sup *s, struct inst *in)
{
	char name[256], grace[16], err[300];
	int g = in->spec.w.stop_grace_s >= 0 ? in->spec.w.stop_grace_s : WORK_GRACE_DEFAULT_S;
	snprintf(grace, sizeof(grace), "%d", g);
	inst_ctr_name(s, in, name, sizeof(name));
	char *stop[] = PODMAN(s, "stop", "--time", grace, name);
	inst_progress(s, in, "stopping");
	if (inst_run(stop, NULL, 0, inst_op_errfd) != 0) {
		char st[64], cfg[INST_CFG_MAX];
		pid_t c;
		if (!inst_inspect(s, in, st, sizeof(st), &c, cfg, sizeof(cfg)))
			return 0; /* no container: stopped */
		podman_error(s, in, err, sizeof(err));
		return inst_fail(s, in, "podman stop %s failed%s%s", name, err[0] ? ": " : "", err);
	}
	return 0;
}

static int op_remove(struct inst_sup *s, struct inst *in)
{
	char name[256], sys[256], img[STATE_PATH_MAX], mnt[STATE_PATH_MAX], dir[STATE_PATH_MAX];
	struct sl_diag d;
	sl_diag_clear(&d);
	inst_ctr_name(s, in, name, sizeof(name));
	inst_sys_image(s, in, sys, sizeof(sys));
	inst_progress(s, in, "removing");
	char *rmi[] = PODMAN(s, "rmi", "--force", sys);
	if (engine_ok(s->eng)) {
		(void)rm_ctr(s, name);
		char st[64], cfg[INST_CFG_MAX];
		pid_t c;
		if (inst_inspect(s, in, st, sizeof(st), &c, cfg, sizeof(cfg)))
			return inst_fail(s, in, "cannot remove the container %s (podman rm failed; see "
					   "op.log)", name);
		char *ex[] = PODMAN(s, "image", "exists", sys);
		if (inst_run(ex, NULL, 0, -1) == 0)
			(void)inst_run(rmi, NULL, 0, inst_op_errfd);
		char net[256];
		snprintf(net, sizeof(net), "sl-%s-%s", engine_name(s->eng), in->spec.id);
		char *nrm[] = PODMAN(s, "network", "rm", "--force", net);
		(void)inst_run(nrm, NULL, 0, -1);
	}
	if (inst_disk_paths(s, in, img, mnt, sizeof(img), &d) == SL_OK) {
		if (inst_mounted(mnt, s->storage)) {
			char *um[] = {"umount", mnt, NULL};
			if (inst_run(um, NULL, 0, inst_op_errfd) != 0)
				return inst_fail(s, in, "cannot unmount the data disk at %s", mnt);
		}
		(void)rmdir(mnt);
		if (unlink(img) != 0 && errno != ENOENT)
			return inst_fail(s, in, "cannot delete the data disk %s: %s", img, strerror(errno));
	}
	if (inst_path(s, in, dir, sizeof(dir), "ssh") == SL_OK) {
		char *rmrf[] = {"rm", "-rf", "--", dir, NULL};
		if (inst_run(rmrf, NULL, 0, inst_op_errfd) != 0)
			return inst_fail(s, in, "cannot delete the host keys in %s", dir);
	}
	if (inst_path(s, in, dir, sizeof(dir), "migrate") == SL_OK) {
		char *rmrf[] = {"rm", "-rf", "--", dir, NULL};
		(void)inst_run(rmrf, NULL, 0, inst_op_errfd);
	}
	return 0;
}

bool inst_op_spawn(struct inst_sup *s, struct inst *in, enum inst_op op)
{
	char log[STATE_PATH_MAX], err[STATE_PATH_MAX], prog[STATE_PATH_MAX];
	if (inst_path(s, in, log, sizeof(log), "op.log") != SL_OK ||
	    inst_path(s, in, err, sizeof(err), "op.err") != SL_OK ||
	    inst_path(s, in, prog, sizeof(prog), "op.progress") != SL_OK) {
		snprintf(in->error, sizeof(in->error), "state directory path too long");
		return false;
	}
	(void)unlink(err);
	(void)unlink(prog);
	pid_t pid = work_fork_retry();
	if (pid < 0) {
		snprintf(in->error, sizeof(in->error), "cannot fork: %s", strerror(errno));
		return false;
	}
	if (pid == 0) {
		static const int sigs[] = {SIGTERM, SIGINT, SIGCHLD, SIGHUP, SIGPIPE};
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			signal(sigs[i], SIG_DFL);
		(void)setsid();
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		int null = open("/dev/null", O_RDONLY);
		(void)dup2(null, 0);
		(void)dup2(fd, 1);
		(void)dup2(fd, 2);
		/* close_range(3, ~0, 0) (Linux 5.9); by hand where it is missing */
		if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
			for (int k = 3; k < 1024; k++)
				(void)close(k);
		inst_op_errfd = 2;
		static const char *const names[] = {"", "up", "down", "remove", "export"};
		dprintf(2, "suanli-agent: instance %s epoch %lld: %s\n", in->spec.id,
			(long long)in->spec.epoch, names[op]);
		int rc = op == OP_UP       ? op_up(s, in)
			 : op == OP_DOWN   ? op_down(s, in)
			 : op == OP_REMOVE ? op_remove(s, in)
					   : inst_export_main(s, in, 2);
		_exit(rc);
	}
	in->op = op;
	in->op_pid = pid;
	in->op_child = true;
	in->op_ticks = work_proc_start_ticks(pid);
	return true;
}

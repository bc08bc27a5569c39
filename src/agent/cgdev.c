/* cgdev.c - GPU device isolation with the cgroup v2 device filter (see
 * cgdev.h).
 *
 * The filter is a hand-assembled eBPF program of type
 * BPF_PROG_TYPE_CGROUP_DEVICE. Its context is struct bpf_cgroup_dev_ctx
 * (access_type = BPF_DEVCG_ACC_* << 16 | BPF_DEVCG_DEV_*, major, minor, each
 * a u32); it returns 1 to allow the access and 0 to deny it (the opener gets
 * EPERM). Block devices and other majors are always allowed, so a bug in the
 * rules can only hide devices from a rank, never open any. The program is
 * attached with BPF_F_ALLOW_MULTI, so programs attached above our cgroup
 * (systemd's, a container runtime's) keep running as well.
 *
 * Loaded with the raw bpf(2) syscall: no libbpf. The verifier's log is asked
 * for only when a load fails, to say why in the probe's reason. */
#include "cgdev.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define CGDEV_INSNS_MAX 512        /* instructions of one program (a rule takes at most 10) */
#define CGDEV_LINE_MAX 4096        /* a line of /proc/self/mountinfo */
#define CGDEV_MAJOR_MAX 4095u      /* Linux majors are 12 bits */
#define CGDEV_MINOR_MAX 0xfffffu   /* and minors 20 */

struct cgdev {
	bool ok;
	char mount[CGDEV_PATH_MAX];
	char reason[CGDEV_REASON_MAX];
	uint32_t ascend_major;     /* 0: no Ascend devices on this host */
	struct cgdev_rule test[CGDEV_TEST_MAX];
	size_t ntest;
};

/* ---- the program ------------------------------------------------------ */

struct prog {
	struct bpf_insn *insn;
	size_t n, max;
	bool full;
};

static void emit(struct prog *p, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	if (p->n >= p->max) {
		p->full = true;
		return;
	}
	struct bpf_insn *i = &p->insn[p->n++];
	memset(i, 0, sizeof(*i));
	i->code = code;
	/* 4-bit fields: -Wconversion cannot see that the masks make them fit */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
	i->dst_reg = dst & 0xf;
	i->src_reg = src & 0xf;
#pragma GCC diagnostic pop
	i->off = off;
	i->imm = imm;
}

/* A forward jump whose target is patched later: returns its index. */
static size_t emit_jump(struct prog *p, uint8_t code, uint8_t dst, int32_t imm)
{
	emit(p, code, dst, 0, 0, imm);
	return p->n - 1;
}

static void patch(struct prog *p, size_t at, size_t target)
{
	if (!p->full && at < p->n)
		p->insn[at].off = (int16_t)(target - at - 1);
}

enum { R0, R1, R2, R3, R4 };

size_t cgdev_program(const struct cgdev_rule *rules, size_t n, void *insns, size_t max)
{
	struct prog p = {.insn = insns, .max = max};
	size_t to_allow[2], to_deny[4 * CGDEV_RULES_MAX], nd = 0, to_next[3];

	if (n > CGDEV_RULES_MAX)
		return 0;
	/* r2 = device type; not a character device: allow */
	emit(&p, BPF_LDX | BPF_MEM | BPF_W, R2, R1, offsetof(struct bpf_cgroup_dev_ctx, access_type), 0);
	emit(&p, BPF_ALU64 | BPF_AND | BPF_K, R2, 0, 0, 0xffff);
	to_allow[0] = emit_jump(&p, BPF_JMP | BPF_JNE | BPF_K, R2, BPF_DEVCG_DEV_CHAR);
	emit(&p, BPF_LDX | BPF_MEM | BPF_W, R3, R1, offsetof(struct bpf_cgroup_dev_ctx, major), 0);
	emit(&p, BPF_LDX | BPF_MEM | BPF_W, R4, R1, offsetof(struct bpf_cgroup_dev_ctx, minor), 0);
	for (size_t k = 0; k < n; k++) {
		const struct cgdev_rule *r = &rules[k];
		size_t nn = 0;
		if (r->major > CGDEV_MAJOR_MAX || r->hi > CGDEV_MINOR_MAX + 1 || r->lo >= r->hi)
			continue; /* matches nothing */
		to_next[nn++] = emit_jump(&p, BPF_JMP | BPF_JNE | BPF_K, R3, (int32_t)r->major);
		if (r->lo > 0)
			to_next[nn++] = emit_jump(&p, BPF_JMP | BPF_JLT | BPF_K, R4, (int32_t)r->lo);
		to_next[nn++] = emit_jump(&p, BPF_JMP | BPF_JGE | BPF_K, R4, (int32_t)r->hi);
		if (r->allow == 0) {
			to_deny[nd++] = emit_jump(&p, BPF_JMP | BPF_JA, 0, 0);
		} else {
			/* allowed when minor < 64 and bit minor of allow is set */
			to_deny[nd++] = emit_jump(&p, BPF_JMP | BPF_JGE | BPF_K, R4, 64);
			emit(&p, BPF_LD | BPF_DW | BPF_IMM, R2, 0, 0, (int32_t)(uint32_t)r->allow);
			emit(&p, 0, 0, 0, 0, (int32_t)(uint32_t)(r->allow >> 32));
			emit(&p, BPF_ALU64 | BPF_RSH | BPF_X, R2, R4, 0, 0);
			emit(&p, BPF_ALU64 | BPF_AND | BPF_K, R2, 0, 0, 1);
			to_deny[nd++] = emit_jump(&p, BPF_JMP | BPF_JEQ | BPF_K, R2, 0);
		}
		for (size_t j = 0; j < nn; j++)
			patch(&p, to_next[j], p.n);
	}
	to_allow[1] = p.n; /* falls through */
	patch(&p, to_allow[0], to_allow[1]);
	emit(&p, BPF_ALU64 | BPF_MOV | BPF_K, R0, 0, 0, 1);
	emit(&p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	size_t deny = p.n;
	emit(&p, BPF_ALU64 | BPF_MOV | BPF_K, R0, 0, 0, 0);
	emit(&p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	for (size_t j = 0; j < nd; j++)
		patch(&p, to_deny[j], deny);
	return p.full ? 0 : p.n;
}

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

/* Loads the program; -1 with d set (the verifier's first words when it
 * refused the program). */
static int prog_load(const struct cgdev_rule *rules, size_t n, struct sl_diag *d)
{
	struct bpf_insn insns[CGDEV_INSNS_MAX];
	static const char license[] = "Dual MIT/GPL";
	char log[1024];
	union bpf_attr a;

	size_t cnt = cgdev_program(rules, n, insns, CGDEV_INSNS_MAX);
	if (cnt == 0) {
		sl_diag_set(d, SL_EINVAL, "too many device rules for one program");
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	a.insns = (uint64_t)(uintptr_t)insns;
	a.insn_cnt = (uint32_t)cnt;
	a.license = (uint64_t)(uintptr_t)license;
	long fd = sys_bpf(BPF_PROG_LOAD, &a);
	if (fd >= 0)
		return (int)fd;
	int err = errno;
	log[0] = '\0';
	if (err == EINVAL || err == EACCES) { /* ask the verifier why */
		a.log_buf = (uint64_t)(uintptr_t)log;
		a.log_size = sizeof(log);
		a.log_level = 1;
		fd = sys_bpf(BPF_PROG_LOAD, &a);
		if (fd >= 0)
			return (int)fd;
		log[sizeof(log) - 1] = '\0';
		for (char *c = log; *c; c++)
			if (*c == '\n')
				*c = ' ';
	}
	sl_diag_set(d, SL_EIO, "bpf(BPF_PROG_LOAD) of the device filter refused: %s%s%.160s",
		    strerror(err), log[0] ? "; verifier: " : "", log);
	return -1;
}

/* ---- cgroups -------------------------------------------------------- */

int cgdev_join(int procs_fd)
{
	if (write(procs_fd, "0", 1) == 1)
		return 0;
	return errno ? errno : EIO;
}

void cgdev_kill(const char *path)
{
	char p[CGDEV_PATH_MAX + 16];
	long pid;
	snprintf(p, sizeof(p), "%s/cgroup.kill", path);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		bool done = write(fd, "1", 1) == 1;
		close(fd);
		if (done)
			return;
	}
	snprintf(p, sizeof(p), "%s/cgroup.procs", path);
	FILE *f = fopen(p, "re");
	if (!f)
		return;
	while (fscanf(f, "%ld", &pid) == 1)
		if (pid > 1 && pid != (long)getpid())
			(void)kill((pid_t)pid, SIGKILL);
	fclose(f);
}

int cgdev_remove(const char *path)
{
	if (rmdir(path) == 0 || errno == ENOENT)
		return 0;
	return errno;
}

enum sl_err cgdev_create(const char *path, const struct cgdev_rule *rules, size_t n,
			 int *procs_fd, struct sl_diag *d)
{
	char procs[CGDEV_PATH_MAX + 16];
	*procs_fd = -1;
	if (n > CGDEV_RULES_MAX)
		return sl_diag_set(d, SL_EINVAL, "%zu device rules; at most %d", n, CGDEV_RULES_MAX);
	if (snprintf(procs, sizeof(procs), "%s/cgroup.procs", path) >= (int)sizeof(procs))
		return sl_diag_set(d, SL_ELIMIT, "cgroup path too long: %s", path);
	/* a cgroup left by an earlier process of the same rank: start afresh
	 * (when processes still hold it, keep it; its filter is the same) */
	(void)rmdir(path);
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		return sl_diag_set(d, SL_EIO, "cannot create the cgroup %s: %s", path, strerror(errno));
	int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0) {
		int err = errno;
		(void)rmdir(path);
		return sl_diag_set(d, SL_EIO, "cannot open the cgroup %s: %s", path, strerror(err));
	}
	int prog = prog_load(rules, n, d);
	if (prog < 0) {
		close(dir);
		(void)rmdir(path);
		return SL_EIO;
	}
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.target_fd = (uint32_t)dir;
	a.attach_bpf_fd = (uint32_t)prog;
	a.attach_type = BPF_CGROUP_DEVICE;
	a.attach_flags = BPF_F_ALLOW_MULTI;
	long r = sys_bpf(BPF_PROG_ATTACH, &a);
	int err = errno;
	close(prog); /* the cgroup holds the attached program */
	close(dir);
	if (r != 0) {
		(void)rmdir(path);
		return sl_diag_set(d, SL_EIO, "bpf(BPF_PROG_ATTACH) of the device filter to %s "
					      "refused: %s", path, strerror(err));
	}
	*procs_fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (*procs_fd < 0) {
		err = errno;
		(void)rmdir(path);
		return sl_diag_set(d, SL_EIO, "cannot open %s: %s", procs, strerror(err));
	}
	return SL_OK;
}

/* ---- the host ------------------------------------------------------- */

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *o = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* The first cgroup2 mount in /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT
 * MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS". */
static bool find_mount(char *out, size_t n)
{
	char line[CGDEV_LINE_MAX];
	bool found = false;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *save = NULL, *mp = NULL, *w;
		int field = 0;
		bool dash = false;
		for (w = strtok_r(line, " \n", &save); w; w = strtok_r(NULL, " \n", &save), field++) {
			if (field == 4)
				mp = w;
			else if (dash) {
				found = strcmp(w, "cgroup2") == 0 && mp && strlen(mp) < n;
				break;
			} else if (field > 5 && strcmp(w, "-") == 0)
				dash = true;
		}
		if (found) {
			unescape(mp);
			snprintf(out, n, "%s", mp);
		}
	}
	fclose(f);
	return found;
}

/* The major of /dev/davinciN (stat of the first that exists), else the one
 * /proc/devices names "davinci" or "devdrv"; 0 when none. */
static uint32_t ascend_major(void)
{
	char path[32], line[256], name[64];
	struct stat st;
	unsigned maj;
	uint32_t found = 0;

	for (unsigned i = 0; i < CGDEV_ASCEND_MINORS; i++) {
		snprintf(path, sizeof(path), "/dev/davinci%u", i);
		if (stat(path, &st) == 0 && S_ISCHR(st.st_mode))
			return (uint32_t)major(st.st_rdev);
	}
	FILE *f = fopen("/proc/devices", "re");
	if (!f)
		return 0;
	bool chr = false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Character devices:", 18) == 0)
			chr = true;
		else if (strncmp(line, "Block devices:", 14) == 0)
			chr = false;
		else if (chr && sscanf(line, "%u %63s", &maj, name) == 2 && maj <= CGDEV_MAJOR_MAX &&
			 (strcmp(name, "davinci") == 0 || strcmp(name, "devdrv") == 0))
			found = maj;
	}
	fclose(f);
	return found;
}

int cgdev_parse_test(const char *s, struct cgdev_rule *out, size_t max, struct sl_diag *d)
{
	size_t n = 0;
	const char *p = s;
	if (!s || !*s)
		return 0;
	for (;;) {
		char *end;
		unsigned long maj, min;
		if (*p < '0' || *p > '9')
			goto bad;
		maj = strtoul(p, &end, 10);
		if (*end != ':' || end[1] < '0' || end[1] > '9')
			goto bad;
		min = strtoul(end + 1, &end, 10);
		if (maj > CGDEV_MAJOR_MAX || min > CGDEV_MINOR_MAX)
			goto bad;
		if (n >= max) {
			sl_diag_hint(d, "list at most %zu pairs", max);
			sl_diag_set(d, SL_EINVAL, "%s: too many MAJOR:MINOR pairs", CGDEV_ENV_TEST);
			return -1;
		}
		out[n++] = (struct cgdev_rule){(uint32_t)maj, (uint32_t)min, (uint32_t)min + 1, 0};
		if (*end == '\0')
			return (int)n;
		if (*end != ',')
			goto bad;
		p = end + 1;
	}
bad:
	sl_diag_hint(d, "a test hook: MAJOR:MINOR[,MAJOR:MINOR...] of character devices to deny "
			"to every rank, e.g. 1:3 for /dev/null; unset it in production");
	sl_diag_set(d, SL_EINVAL, "%s=\"%.64s\" is not a list of MAJOR:MINOR pairs", CGDEV_ENV_TEST, s);
	return -1;
}

/* "00000000:18:00.0" (NVML) or "0000:18:00.0" -> "0000:18:00.0", lower case,
 * the name of the driver's directory; false when it is not of that shape. */
static bool proc_bus_name(const char *bus, char *out, size_t n)
{
	size_t len = strlen(bus);
	if (len < 12 || n < 13)
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

/* "Device Minor: N" of the driver's information file; -1 when absent. */
static int proc_minor(const char *proc_dir, const char *bus)
{
	char name[16], path[CGDEV_PATH_MAX], line[256];
	int minor = -1;
	if (!proc_bus_name(bus, name, sizeof(name)) ||
	    snprintf(path, sizeof(path), "%s/%s/information", proc_dir, name) >= (int)sizeof(path))
		return -1;
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

bool cgdev_gpu_minors(const struct discovery *disc, const char *proc_dir,
		      uint8_t minors[TOPO_MAX_GPUS])
{
	uint8_t m[TOPO_MAX_GPUS];
	uint64_t seen = 0;
	bool ok = disc && disc->type.ngpus > 0 && disc->type.ngpus <= TOPO_MAX_GPUS;
	for (int i = 0; i < TOPO_MAX_GPUS; i++)
		minors[i] = (uint8_t)i;
	for (int i = 0; ok && i < disc->type.ngpus; i++) {
		int x = proc_minor(proc_dir, disc->gpus[i].bus_id);
		ok = x >= 0 && x < 64 && !(seen & (1ull << x));
		if (ok) {
			seen |= 1ull << x;
			m[i] = (uint8_t)x;
		}
	}
	if (ok)
		memcpy(minors, m, (size_t)disc->type.ngpus);
	return ok;
}

size_t cgdev_rules(const struct cgdev *c, gpumask_t gpus, const uint8_t *nv_minors,
		   struct cgdev_rule *out)
{
	size_t n = 0;
	uint64_t nv = 0;
	for (int i = 0; i < TOPO_MAX_GPUS; i++)
		if (gpus & ((gpumask_t)1 << i))
			nv |= 1ull << (nv_minors ? nv_minors[i] & 63 : i);
	out[n++] = (struct cgdev_rule){CGDEV_NVIDIA_MAJOR, 0, CGDEV_NVIDIA_MINORS, nv};
	if (c->ascend_major)
		out[n++] = (struct cgdev_rule){c->ascend_major, 0, CGDEV_ASCEND_MINORS, gpus};
	for (size_t i = 0; i < c->ntest; i++)
		out[n++] = c->test[i];
	return n;
}

enum sl_err cgdev_path(const struct cgdev *c, const char *job, int rank, int64_t epoch,
		       char *path, size_t n, struct sl_diag *d)
{
	int len = snprintf(path, n, "%s/suanli/%s-rank%d-%lld", c->mount, job, rank, (long long)epoch);
	if (len < 0 || (size_t)len >= n)
		return sl_diag_set(d, SL_ELIMIT, "cgroup path for job %s rank %d is too long", job, rank);
	return SL_OK;
}

/* Creates <mount>/suanli, then a test cgroup with the filter, and removes
 * it; false with c->reason set when any step fails. */
static bool probe(struct cgdev *c)
{
	char dir[CGDEV_PATH_MAX], test[CGDEV_PATH_MAX];
	struct cgdev_rule rules[CGDEV_RULES_MAX];
	struct sl_diag d;
	int fd;

	if (!find_mount(c->mount, sizeof(c->mount))) {
		snprintf(c->reason, sizeof(c->reason), "no cgroup2 file system is mounted "
			 "(/proc/self/mountinfo has no cgroup2 entry)");
		return false;
	}
	if (geteuid() != 0) {
		snprintf(c->reason, sizeof(c->reason), "the agent does not run as root (device "
			 "filters need CAP_SYS_ADMIN and CAP_BPF)");
		return false;
	}
	if (snprintf(dir, sizeof(dir), "%s/suanli", c->mount) >= (int)sizeof(dir) ||
	    snprintf(test, sizeof(test), "%s/probe-%d", dir, (int)getpid()) >= (int)sizeof(test)) {
		snprintf(c->reason, sizeof(c->reason), "the cgroup2 mount path is too long");
		return false;
	}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		snprintf(c->reason, sizeof(c->reason), "cannot create %.200s: %s", dir, strerror(errno));
		return false;
	}
	sl_diag_clear(&d);
	if (cgdev_create(test, rules, cgdev_rules(c, 0, NULL, rules), &fd, &d) != SL_OK) {
		snprintf(c->reason, sizeof(c->reason), "%.250s", d.msg);
		return false;
	}
	close(fd);
	(void)cgdev_remove(test);
	return true;
}

enum sl_err cgdev_new(const char *test_deny, struct cgdev **out, struct sl_diag *d)
{
	struct cgdev_rule test[CGDEV_TEST_MAX];
	int nt = cgdev_parse_test(test_deny, test, CGDEV_TEST_MAX, d);
	*out = NULL;
	if (nt < 0)
		return SL_EINVAL;
	struct cgdev *c = calloc(1, sizeof(*c));
	if (!c)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	memcpy(c->test, test, (size_t)nt * sizeof(test[0]));
	c->ntest = (size_t)nt;
	c->ascend_major = ascend_major();
	c->ok = probe(c);
	*out = c;
	return SL_OK;
}

void cgdev_free(struct cgdev *c)
{
	free(c);
}

bool cgdev_ok(const struct cgdev *c)
{
	return c && c->ok;
}

const char *cgdev_reason(const struct cgdev *c)
{
	return c ? c->reason : "not probed";
}

const char *cgdev_mount(const struct cgdev *c)
{
	return c ? c->mount : "";
}

/* test_agent_cgdev.c - GPU device isolation with the cgroup v2 device filter
 * (src/agent/cgdev.h) and its use by the work supervisor.
 *
 * Everywhere: the test hook's parser, the rules per GPU set, GPU index to
 * device minor from the driver's /proc files, the program's size bounds, and that a probe that fails says why (and, as root, that it
 * says so for a process that is not root and for a mount namespace without
 * cgroup2). Where the host allows the filter (root, a cgroup2 mount, bpf):
 * a child in a cgroup that denies 1:3 cannot open /dev/null (EPERM) but opens
 * /dev/zero, GPU device nodes 195:N (made with mknod) are denied exactly for
 * the GPUs not given, a process outside still opens /dev/null, cgroup.kill
 * ends what is left, and a rank run by the supervisor gets the filter, its
 * CUDA_VISIBLE_DEVICES renumbered, and its cgroup removed when it ends.
 * Where the host does not allow it those tests print SKIP and are skipped. */
#define _GNU_SOURCE /* unshare */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "cgdev.h"
#include "log.h"
#include "state.h"
#include "work.h"

#define WAIT_LIMIT_S 20

/* ---- everywhere ------------------------------------------------------ */

static void test_parse_hook(void **state)
{
	(void)state;
	struct cgdev_rule r[CGDEV_TEST_MAX];
	struct sl_diag d;

	sl_diag_clear(&d);
	assert_int_equal(cgdev_parse_test(NULL, r, CGDEV_TEST_MAX, &d), 0);
	assert_int_equal(cgdev_parse_test("", r, CGDEV_TEST_MAX, &d), 0);
	assert_int_equal(cgdev_parse_test("1:3", r, CGDEV_TEST_MAX, &d), 1);
	assert_int_equal(r[0].major, 1);
	assert_int_equal(r[0].lo, 3);
	assert_int_equal(r[0].hi, 4);
	assert_int_equal(r[0].allow, 0);
	assert_int_equal(cgdev_parse_test("1:3,195:7", r, CGDEV_TEST_MAX, &d), 2);
	assert_int_equal(r[1].major, 195);
	assert_int_equal(r[1].lo, 7);
	static const char *const bad[] = {"x", "1", "1:", ":3", "1:3,", "1:3;1:5", "1:3 ",
					  "-1:3", "4096:0", "1:1048576", "1:3,,1:5"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sl_diag_clear(&d);
		assert_int_equal(cgdev_parse_test(bad[i], r, CGDEV_TEST_MAX, &d), -1);
		assert_non_null(strstr(d.msg, CGDEV_ENV_TEST));
	}
	sl_diag_clear(&d);
	assert_int_equal(cgdev_parse_test("1:3,1:5,1:7", r, 2, &d), -1);
	assert_non_null(strstr(d.msg, "too many"));

	/* a bad hook is an error and no handle */
	struct cgdev *c = (struct cgdev *)&d;
	sl_diag_clear(&d);
	assert_int_equal(cgdev_new("1:x", &c, &d), SL_EINVAL);
	assert_null(c);
}

static void test_rules_and_program(void **state)
{
	(void)state;
	struct cgdev *c;
	struct sl_diag d;
	struct cgdev_rule r[CGDEV_RULES_MAX];
	uint64_t insns[512];

	sl_diag_clear(&d);
	assert_int_equal(cgdev_new("1:3,1:5", &c, &d), SL_OK);
	size_t n = cgdev_rules(c, (1u << 2) | (1u << 5), NULL, r);
	assert_true(n == 3 || n == 4); /* NVIDIA, maybe Ascend, two test pairs */
	assert_int_equal(r[0].major, CGDEV_NVIDIA_MAJOR);
	assert_int_equal(r[0].lo, 0);
	assert_int_equal(r[0].hi, 254); /* 254 nvidia-modeset and 255 nvidiactl stay */
	assert_int_equal(r[0].allow, (1u << 2) | (1u << 5));
	assert_int_equal(r[n - 1].major, 1);
	assert_int_equal(r[n - 1].lo, 5);
	assert_int_equal(r[n - 2].lo, 3);
	size_t cnt = cgdev_program(r, n, insns, 512);
	assert_true(cnt > 10 && cnt < 64);
	assert_int_equal(cgdev_program(r, n, insns, 8), 0); /* does not fit: no program */
	struct cgdev_rule many[CGDEV_RULES_MAX + 1];
	memset(many, 0, sizeof(many));
	assert_int_equal(cgdev_program(many, CGDEV_RULES_MAX + 1, insns, 512), 0);

	char path[CGDEV_PATH_MAX], tiny[16];
	assert_int_equal(cgdev_path(c, "job-1", 3, 7, path, sizeof(path), &d), SL_OK);
	char want[CGDEV_PATH_MAX + 32];
	snprintf(want, sizeof(want), "%s/suanli/job-1-rank3-7", cgdev_mount(c));
	assert_string_equal(path, want);
	assert_int_equal(cgdev_path(c, "job-1", 3, 7, tiny, sizeof(tiny), &d), SL_ELIMIT);
	cgdev_free(c);
}

static void write_info(const char *root, const char *bus, const char *minor_line)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", root, bus);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/%s/information", root, bus);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f, "Model: \t\t NVIDIA H100 80GB HBM3\nBus Location: \t %s\n%s", bus, minor_line);
	fclose(f);
}

/* GPU index -> NVIDIA device minor from the driver's /proc files, matched by
 * bus id; the index itself whenever that is not known for every GPU. */
static void test_gpu_minors(void **state)
{
	(void)state;
	struct discovery disc;
	struct cgdev *c;
	struct sl_diag d;
	struct cgdev_rule r[CGDEV_RULES_MAX];
	uint8_t m[TOPO_MAX_GPUS];
	char root[64], cmd[128];

	memset(&disc, 0, sizeof(disc));
	disc.type.ngpus = 3;
	snprintf(disc.gpus[0].bus_id, sizeof(disc.gpus[0].bus_id), "00000000:18:00.0");
	snprintf(disc.gpus[1].bus_id, sizeof(disc.gpus[1].bus_id), "00000000:2A:00.0");
	snprintf(disc.gpus[2].bus_id, sizeof(disc.gpus[2].bus_id), "0000:3b:00.0");
	snprintf(root, sizeof(root), "/tmp/test_agent_cgdev.XXXXXX");
	assert_non_null(mkdtemp(root));
	write_info(root, "0000:18:00.0", "Device Minor: \t 5\nGPU Excluded:\t No\n");
	write_info(root, "0000:2a:00.0", "Device Minor: \t 0\n");
	/* the third GPU's file is missing: the index for all */
	assert_false(cgdev_gpu_minors(&disc, root, m));
	for (int i = 0; i < TOPO_MAX_GPUS; i++)
		assert_int_equal(m[i], i);
	write_info(root, "0000:3b:00.0", "Device Minor: \t 1\n");
	assert_true(cgdev_gpu_minors(&disc, root, m));
	assert_int_equal(m[0], 5);
	assert_int_equal(m[1], 0);
	assert_int_equal(m[2], 1);
	sl_diag_clear(&d);
	assert_int_equal(cgdev_new(NULL, &c, &d), SL_OK);
	assert_true(cgdev_rules(c, 1u << 0, m, r) >= 1);
	assert_int_equal(r[0].allow, 1u << 5); /* GPU 0 is /dev/nvidia5 */
	assert_true(cgdev_rules(c, (1u << 1) | (1u << 2), m, r) >= 1);
	assert_int_equal(r[0].allow, 3u);
	/* two GPUs claiming one minor: not trusted */
	snprintf(disc.gpus[2].bus_id, sizeof(disc.gpus[2].bus_id), "00000000:2a:00.0");
	assert_false(cgdev_gpu_minors(&disc, root, m));
	assert_int_equal(m[0], 0);
	/* a bus id of another shape; no discovery */
	snprintf(disc.gpus[2].bus_id, sizeof(disc.gpus[2].bus_id), "../../etc");
	assert_false(cgdev_gpu_minors(&disc, root, m));
	assert_false(cgdev_gpu_minors(NULL, root, m));
	assert_int_equal(m[0], 0);
	cgdev_free(c);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

/* The probe either works or says why, in words that match the host. */
static void test_probe_says_why(void **state)
{
	(void)state;
	struct cgdev *c;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(cgdev_new(NULL, &c, &d), SL_OK);
	if (cgdev_ok(c)) {
		assert_string_equal(cgdev_reason(c), "");
		assert_true(cgdev_mount(c)[0] == '/');
	} else {
		const char *why = cgdev_reason(c);
		print_message("SKIP device filter enforcement on this host: %s\n", why);
		assert_true(strlen(why) > 10);
		if (!cgdev_mount(c)[0])
			assert_non_null(strstr(why, "cgroup2"));
		else if (geteuid() != 0)
			assert_non_null(strstr(why, "root"));
		else
			assert_true(strstr(why, "bpf") || strstr(why, "cgroup"));
	}
	cgdev_free(c);
}

/* Runs fn in a child; its exit status 0 is success. */
static int in_child(int (*fn)(void))
{
	pid_t p = fork();
	if (p == 0)
		_exit(fn());
	int st;
	assert_int_equal(waitpid(p, &st, 0), p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static int probe_as_nobody(void)
{
	struct cgdev *c;
	struct sl_diag d;
	if (setgid(65534) != 0 || setuid(65534) != 0)
		return 2;
	if (cgdev_new(NULL, &c, &d) != SL_OK)
		return 3;
	int r = !cgdev_ok(c) && (strstr(cgdev_reason(c), "root") || strstr(cgdev_reason(c), "cgroup2"))
			? 0 : 4;
	if (r)
		fprintf(stderr, "probe as nobody: ok=%d reason=%s\n", cgdev_ok(c), cgdev_reason(c));
	cgdev_free(c);
	return r;
}

static int probe_without_mount(void)
{
	struct cgdev *c;
	struct sl_diag d;
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return 77;
	for (int i = 0; i < 16; i++) {
		if (cgdev_new(NULL, &c, &d) != SL_OK)
			return 3;
		if (!cgdev_mount(c)[0]) {
			int r = !cgdev_ok(c) && strstr(cgdev_reason(c), "no cgroup2") ? 0 : 4;
			cgdev_free(c);
			return r;
		}
		int u = umount2(cgdev_mount(c), MNT_DETACH);
		cgdev_free(c);
		if (u != 0)
			return 77;
	}
	return 5;
}

static void test_probe_failures_as_root(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		print_message("SKIP probe failures: needs root to drop to nobody and unmount\n");
		skip();
	}
	assert_int_equal(in_child(probe_as_nobody), 0);
	int r = in_child(probe_without_mount);
	if (r == 77)
		print_message("SKIP probe without a cgroup2 mount: no private mount namespace here\n");
	else
		assert_int_equal(r, 0);
}

/* ---- where the host allows it ----------------------------------------- */

static struct cgdev *usable_or_skip(const char *hook)
{
	struct cgdev *c;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(cgdev_new(hook, &c, &d), SL_OK);
	if (!cgdev_ok(c)) {
		print_message("SKIP (the EPERM part): %s\n", cgdev_reason(c));
		cgdev_free(c);
		skip();
	}
	return c;
}

static char nodes[64]; /* a directory of mknod'ed 195:N nodes, "" when none */

static int open_errno(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno;
}

static int g_procs_fd = -1;

/* In the cgroup (denies 1:3 and GPUs other than 1 and 2): 0 when every
 * check holds, else the number of the failed check. */
static int inside(void)
{
	char p[128];
	if (cgdev_join(g_procs_fd) != 0)
		return 1;
	if (open_errno("/dev/null") != EPERM)
		return 2;
	if (open_errno("/dev/zero") != 0)
		return 3;
	if (!nodes[0])
		return 0;
	static const struct { unsigned minor; bool denied; } want[] = {
		{0, true}, {1, false}, {2, false}, {3, true}, {15, true}, {253, true},
		{254, false}, {255, false}};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		snprintf(p, sizeof(p), "%s/nv%u", nodes, want[i].minor);
		if ((open_errno(p) == EPERM) != want[i].denied)
			return 10 + (int)i;
	}
	return 0;
}

static int outside(void)
{
	return open_errno("/dev/null") == 0 ? 0 : 1;
}

static void make_nodes(void)
{
	static const unsigned minors[] = {0, 1, 2, 3, 15, 253, 254, 255};
	char p[128];
	snprintf(nodes, sizeof(nodes), "/tmp/test_agent_cgdev.XXXXXX");
	if (!mkdtemp(nodes)) {
		nodes[0] = '\0';
		return;
	}
	for (size_t i = 0; i < sizeof(minors) / sizeof(minors[0]); i++) {
		snprintf(p, sizeof(p), "%s/nv%u", nodes, minors[i]);
		if (mknod(p, S_IFCHR | 0600, makedev(CGDEV_NVIDIA_MAJOR, minors[i])) != 0) {
			print_message("SKIP the GPU node checks: mknod: %s\n", strerror(errno));
			snprintf(p, sizeof(p), "rm -rf '%s'", nodes);
			assert_int_equal(system(p), 0);
			nodes[0] = '\0';
			return;
		}
	}
}

static void test_filter_denies(void **state)
{
	(void)state;
	struct cgdev *c = usable_or_skip("1:3");
	struct cgdev_rule r[CGDEV_RULES_MAX];
	char path[CGDEV_PATH_MAX];
	struct sl_diag d;
	struct stat st;

	sl_diag_clear(&d);
	make_nodes();
	snprintf(path, sizeof(path), "%s/suanli/test-%d", cgdev_mount(c), (int)getpid());
	assert_int_equal(cgdev_create(path, r, cgdev_rules(c, (1u << 1) | (1u << 2), NULL, r),
				      &g_procs_fd, &d), SL_OK);
	assert_int_equal(in_child(inside), 0);
	assert_int_equal(in_child(outside), 0);
	assert_int_equal(open_errno("/dev/null"), 0);
	close(g_procs_fd);
	assert_int_equal(cgdev_remove(path), 0);
	assert_int_not_equal(stat(path, &st), 0);
	assert_int_equal(cgdev_remove(path), 0); /* gone already: fine */

	/* cgroup.kill ends a process that left its group; then it can go */
	assert_int_equal(cgdev_create(path, r, cgdev_rules(c, 0, NULL, r), &g_procs_fd, &d), SL_OK);
	pid_t p = fork();
	if (p == 0) {
		if (cgdev_join(g_procs_fd) != 0)
			_exit(1);
		(void)setsid();
		for (;;)
			pause();
	}
	close(g_procs_fd);
	char procs[CGDEV_PATH_MAX + 16];
	long member = 0;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
	for (int i = 0; i < WAIT_LIMIT_S * 100 && member != (long)p; i++) {
		FILE *pf = fopen(procs, "r"); /* until the child joined */
		assert_non_null(pf);
		if (fscanf(pf, "%ld", &member) != 1)
			member = 0;
		fclose(pf);
		if (member != (long)p)
			usleep(10000);
	}
	assert_int_equal(member, (long)p);
	assert_int_equal(cgdev_remove(path), EBUSY);
	cgdev_kill(path);
	int st2;
	assert_int_equal(waitpid(p, &st2, 0), p);
	assert_true(WIFSIGNALED(st2) && WTERMSIG(st2) == SIGKILL);
	int rm = EBUSY;
	for (int i = 0; i < WAIT_LIMIT_S * 100 && (rm = cgdev_remove(path)) == EBUSY; i++)
		usleep(10000);
	assert_int_equal(rm, 0);
	if (nodes[0]) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", nodes);
		assert_int_equal(system(cmd), 0);
	}
	cgdev_free(c);
}

/* A rank run by the supervisor: filtered, renumbered, its cgroup removed. */
static void test_supervised_rank(void **state)
{
	(void)state;
	struct cgdev *c = usable_or_skip("1:3");
	struct work_sup *sup;
	struct sl_diag d;
	char dir[64], path[CGDEV_PATH_MAX], logp[128], cmd[128];
	int refused;

	sl_diag_clear(&d);
	snprintf(dir, sizeof(dir), "/tmp/test_agent_cgdev.XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(state_dir_init(dir, &d), SL_OK);
	assert_int_equal(work_sup_new(dir, NULL, work_now_ns(), &sup, &d), SL_OK);
	work_sup_set_cgdev(sup, c);
	char job[32];
	snprintf(job, sizeof(job), "cg-%d", (int)getpid());
	json_t *w = json_pack(
		"[{s:s, s:i, s:s, s:i, s:s, s:[s,s,s], s:{s:s, s:s, s:s}, s:[i,i], s:[]}]", "job",
		job, "rank", 0, "lease", "lease-1", "epoch", 4, "state", "run", "argv", "sh", "-c",
		"echo cvd=$CUDA_VISIBLE_DEVICES arvd=$ASCEND_RT_VISIBLE_DEVICES other=$OTHER;"
		"grep ^0:: /proc/self/cgroup;"
		"if cat /dev/null; then echo null=open; else echo null=denied; fi;"
		"echo zero=$(head -c 3 /dev/zero | wc -c)",
		"env", "CUDA_VISIBLE_DEVICES", "2,5", "ASCEND_RT_VISIBLE_DEVICES", "5", "OTHER", "2,5",
		"gpus", 2, 5, "nics");
	assert_non_null(w);
	assert_int_equal(work_sup_apply(sup, w, work_now_ns(), &refused, &d), SL_OK);
	json_decref(w);
	assert_int_equal(cgdev_path(c, job, 0, 4, path, sizeof(path), &d), SL_OK);
	struct stat st;
	bool ended = false;
	for (int i = 0; i < WAIT_LIMIT_S * 100 && !ended; i++) {
		(void)work_sup_tick(sup, work_now_ns());
		json_t *r = work_sup_report(sup);
		ended = strcmp(json_string_value(json_object_get(json_array_get(r, 0), "state")),
			       "exited") == 0;
		json_decref(r);
		usleep(10000);
	}
	assert_true(ended);
	bool gone = false;
	for (int i = 0; i < WAIT_LIMIT_S * 100 && !gone; i++) {
		(void)work_sup_tick(sup, work_now_ns());
		gone = stat(path, &st) != 0;
		usleep(10000);
	}
	assert_true(gone); /* the rank's cgroup is removed when it ends */

	snprintf(logp, sizeof(logp), "%s/jobs/%s/rank-0.log", dir, job);
	FILE *f = fopen(logp, "r");
	assert_non_null(f);
	char buf[4096];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	/* the item's physical list is renumbered; another list is left alone */
	assert_non_null(strstr(buf, "cvd=0,1 arvd=5 other=2,5\n"));
	char want[256];
	snprintf(want, sizeof(want), "0::/suanli/%s-rank0-4\n", job);
	if (!strstr(buf, want))
		fail_msg("the rank is not in its cgroup: %s", buf);
	assert_non_null(strstr(buf, "null=denied\n"));
	assert_non_null(strstr(buf, "Operation not permitted"));
	assert_non_null(strstr(buf, "zero=3\n"));
	work_sup_free(sup);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	cgdev_free(c);
}

int main(void)
{
	sl_log_init(NULL, SL_LOG_ERROR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_hook),
		cmocka_unit_test(test_rules_and_program),
		cmocka_unit_test(test_gpu_minors),
		cmocka_unit_test(test_probe_says_why),
		cmocka_unit_test(test_probe_failures_as_root),
		cmocka_unit_test(test_filter_denies),
		cmocka_unit_test(test_supervised_rank),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

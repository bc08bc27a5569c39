/* test_agent_podman.c - a tenant container's podman command line
 * (podman_args.h): every isolation option is there, the lease's limits and
 * GPUs are, env values never are, and bad input is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine.h"
#include "fabric.h"
#include "podman_args.h"
#include "uid_ranges.h"

static bool has(char **v, const char *w)
{
	for (size_t i = 0; v[i]; i++)
		if (strcmp(v[i], w) == 0)
			return true;
	return false;
}

static size_t count(char **v)
{
	size_t n = 0;
	while (v[n])
		n++;
	return n;
}

static void base(struct podman_run *r, char **argv, const char **env, const char **devs)
{
	memset(r, 0, sizeof(*r));
	r->podman = "/usr/bin/podman";
	r->runtime = "runc";
	r->cgroup_manager = "cgroupfs";
	r->hooks_dir = "/var/lib/suanli-agent/no-hooks";
	r->name = "sl-n1-job-000001-r0-e1-n0";
	r->image = "localhost/suanli/base:abc";
	r->uid_base = 0x40010000u;
	r->nofile = 20000;
	r->nproc = 4096;
	r->cpus_milli = 112000;
	r->mem_mib = 1048576;
	r->pids = 4096;
	r->workdir = "/var/lib/suanli-agent/leases/ls-000001";
	r->topo = "/var/lib/suanli-agent/jobs/job-000001/nccl-topo-0.xml";
	r->devices = devs;
	r->ndevices = 2;
	r->env = env;
	r->nenv = 2;
	r->argv = argv;
	r->argc = 3;
}

static void test_isolation_options(void **state)
{
	(void)state;
	char *argv[] = {"sh", "-c", "echo hi", NULL};
	const char *env[] = {"SECRET=hunter2", "CUDA_VISIBLE_DEVICES=0,1"};
	const char *devs[] = {"n1-2", "n1-5"};
	struct podman_run r;
	char **v;
	base(&r, argv, env, devs);
	assert_int_equal(podman_run_argv(&r, &v, NULL), SL_OK);
	static const char *const want[] = {
		"--runtime=runc", "--cgroup-manager=cgroupfs", "--hooks-dir=/var/lib/suanli-agent/no-hooks", "run", "--rm", "--pull=missing", "--init",
		"--log-driver=none", "--uidmap=0:1073807360:65536", "--gidmap=0:1073807360:65536",
		"--security-opt=no-new-privileges", "--cap-drop=all", "--cpus=112.000",
		"--memory=1048576m", "--memory-swap=1048576m", "--pids-limit=4096",
		"--ulimit=nofile=20000:20000", "--ulimit=nproc=4096:4096", "--network=none",
		"--read-only", "--volume=/var/lib/suanli-agent/leases/ls-000001:/work:rw,U",
		"--volume=/var/lib/suanli-agent/jobs/job-000001/nccl-topo-0.xml:"
		"/run/suanli/nccl-topo.xml:ro",
		"--device=suanli.dev/gpu=n1-2", "--device=suanli.dev/gpu=n1-5", "--env=SECRET",
		"--env=CUDA_VISIBLE_DEVICES", "--name=sl-n1-job-000001-r0-e1-n0"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!has(v, want[i]))
			fail_msg("missing %s", want[i]);
	assert_string_equal(v[0], "/usr/bin/podman");
	/* never weakened */
	for (size_t i = 0; v[i]; i++) {
		assert_null(strstr(v[i], "privileged"));
		assert_null(strstr(v[i], "unconfined"));
		assert_null(strstr(v[i], "hunter2")); /* values stay off the line */
	}
	/* the image, then the command, last */
	size_t n = count(v);
	assert_string_equal(v[n - 4], "localhost/suanli/base:abc");
	assert_string_equal(v[n - 3], "sh");
	assert_string_equal(v[n - 1], "echo hi");
	podman_argv_free(v);

	/* a partial-node lease: its own network, rank 0 publishing its rendezvous port */
	r.network = "sl-n1-ls-000001";
	r.publish = 29500;
	assert_int_equal(podman_run_argv(&r, &v, NULL), SL_OK);
	assert_true(has(v, "--network=sl-n1-ls-000001"));
	assert_true(has(v, "--publish=29500:29500/tcp"));
	assert_false(has(v, "--network=none"));
	podman_argv_free(v);
	r.host_network = 1; /* an exclusive whole-node lease: the host's, nothing published */
	assert_int_equal(podman_run_argv(&r, &v, NULL), SL_OK);
	assert_true(has(v, "--network=host"));
	for (size_t i = 0; v[i]; i++)
		assert_null(strstr(v[i], "--publish"));
	podman_argv_free(v);
	r.network = NULL;
	r.publish = 0;
	r.cpus_milli = 1500;
	r.mem_mib = 0;
	r.workdir = "";
	r.topo = "";
	assert_int_equal(podman_run_argv(&r, &v, NULL), SL_OK);
	assert_true(has(v, "--network=host"));
	assert_true(has(v, "--cpus=1.500"));
	for (size_t i = 0; v[i]; i++) {
		assert_null(strstr(v[i], "--memory"));
		assert_null(strstr(v[i], "--volume"));
	}
	podman_argv_free(v);
}

/* With driver libraries mounted the command runs behind the ldconfig entry:
 * the script is fixed, the library and the command's words are its "$@". */
static void test_ldconfig_entry(void **state)
{
	(void)state;
	char *argv[] = {"python3", "-c", "print('$(reboot)')", NULL};
	const char *devs[] = {"n1-0", "n1-1"};
	struct podman_run r;
	char **v;
	base(&r, argv, NULL, devs);
	r.nenv = 0;
	r.ldconfig_lib = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
	assert_int_equal(podman_run_argv(&r, &v, NULL), SL_OK);
	size_t n = count(v), i = n - 9;
	assert_string_equal(v[i++], "localhost/suanli/base:abc");
	assert_string_equal(v[i++], "/bin/sh");
	assert_string_equal(v[i++], "-c");
	assert_string_equal(v[i], PODMAN_ENTRY);
	assert_non_null(strstr(v[i], "ldconfig"));
	assert_non_null(strstr(v[i++], "exec \"$@\""));
	assert_string_equal(v[i++], "sl-entry");
	assert_string_equal(v[i++], "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
	assert_string_equal(v[i++], "python3");
	assert_string_equal(v[i++], "-c");
	assert_string_equal(v[i], "print('$(reboot)')");
	podman_argv_free(v);
	/* none mounted (simulate mode): the command itself, unwrapped */
	r.ldconfig_lib = "";
	assert_int_equal(podman_run_argv(&r, &v, NULL), SL_OK);
	n = count(v);
	assert_string_equal(v[n - 4], "localhost/suanli/base:abc");
	assert_string_equal(v[n - 3], "python3");
	assert_false(has(v, "/bin/sh"));
	podman_argv_free(v);
}

static void test_refused(void **state)
{
	(void)state;
	char *argv[] = {"sh", NULL};
	const char *env[] = {"NOEQUALS", "=x"};
	const char *devs[] = {"n1-0", "n1-1"};
	struct podman_run r;
	char **v = (char **)1;
	struct sl_diag d;
	base(&r, argv, env, devs);
	r.argc = 1;
	r.nenv = 1;
	sl_diag_clear(&d);
	assert_int_equal(podman_run_argv(&r, &v, &d), SL_EINVAL);
	assert_null(v);
	base(&r, argv, env + 1, devs);
	r.argc = 1;
	r.nenv = 1;
	assert_int_equal(podman_run_argv(&r, &v, NULL), SL_EINVAL);
	base(&r, argv, env, devs);
	r.nenv = 0;
	r.image = "";
	assert_int_equal(podman_run_argv(&r, &v, NULL), SL_EINVAL);
	/* too many words */
	static char *many[PODMAN_ARGV_MAX + 1];
	for (size_t i = 0; i < PODMAN_ARGV_MAX; i++)
		many[i] = "x";
	base(&r, many, env, devs);
	r.nenv = 0;
	r.argc = PODMAN_ARGV_MAX;
	assert_int_equal(podman_run_argv(&r, &v, NULL), SL_ELIMIT);
	assert_null(v);
}

static void test_uid_ranges(void **state)
{
	(void)state;
	assert_int_equal(engine_uid_base("ls-000001"), ENGINE_UID_BASE + PODMAN_IDS);
	assert_int_equal(engine_uid_base("ls-000042"), ENGINE_UID_BASE + 42u * PODMAN_IDS);
	assert_int_not_equal(engine_uid_base("ls-000001"), engine_uid_base("ls-000002"));
	/* every range stays below 2^31 and above the base */
	uint32_t top = engine_uid_base("ls-016382");
	assert_true(top >= ENGINE_UID_BASE && (uint64_t)top + PODMAN_IDS <= 0x80000000ull);
	assert_int_equal(engine_uid_base("ls-016383"), ENGINE_UID_BASE);
	uint32_t named = engine_uid_base("lease");
	assert_true(named >= ENGINE_UID_BASE && (uint64_t)named + PODMAN_IDS <= 0x80000000ull);
	assert_int_equal((named - ENGINE_UID_BASE) % PODMAN_IDS, 0);
}

/* The host's table: a lease keeps its range across asks, two leases (or two
 * agents with the same lease id) never share one, even where their numbers
 * hash alike, and a freed range is taken again. */
static void test_uid_table(void **state)
{
	(void)state;
	char dir[] = "/tmp/sl-uid-XXXXXX";
	assert_non_null(mkdtemp(dir));
	uint32_t a, a2, b, c, b2, d1, x;
	assert_int_equal(uid_range_take(dir, "n1", "ls-000001", &a, NULL), SL_OK);
	assert_int_equal(a, engine_uid_base("ls-000001"));
	assert_int_equal(uid_range_take(dir, "n1", "ls-000001", &a2, NULL), SL_OK);
	assert_int_equal(a, a2);
	/* 16384 hashes to the same range as 1: it gets the next free one */
	assert_int_equal(uid_range_take(dir, "n1", "ls-016384", &b, NULL), SL_OK);
	assert_int_not_equal(a, b);
	assert_int_equal(b, a + PODMAN_IDS);
	/* another agent on the host with the same lease id: its own range */
	assert_int_equal(uid_range_take(dir, "n2", "ls-000001", &c, NULL), SL_OK);
	assert_true(c != a && c != b);
	/* a hole left by a freed range does not hide a lease's range behind it */
	uid_range_release(dir, "n1", "ls-000001");
	assert_int_equal(uid_range_take(dir, "n1", "ls-016384", &b2, NULL), SL_OK);
	assert_int_equal(b, b2);
	/* the freed range is reused */
	assert_int_equal(uid_range_take(dir, "n9", "ls-032767", &d1, NULL), SL_OK);
	assert_int_equal(d1, a);
	/* releasing what is not there is harmless */
	uid_range_release(dir, "n1", "ls-000077");
	assert_int_equal(uid_range_take(dir, "n1", "ls-000002", &x, NULL), SL_OK);
	assert_true(x != a && x != b && x != c);
	/* a table that cannot be written says so */
	struct sl_diag dg;
	sl_diag_clear(&dg);
	assert_int_equal(uid_range_take("/proc/no/such", "n1", "ls-1", &x, &dg), SL_EIO);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* A rank with a fabric address: podman create behind ctr-start, which
 * gets the interface, the address with the subnet's prefix, the gateway
 * and the peers; bad addresses or peers change nothing. */
static void test_fabric_wrap(void **state)
{
	(void)state;
	char *argv[] = {"sh", "-c", "echo hi", NULL};
	const char *env[] = {"A=1", "B=2"};
	const char *devs[] = {"n1-2", "n1-5"};
	struct podman_run r;
	char **v;
	struct sl_diag d;
	sl_diag_clear(&d);
	base(&r, argv, env, devs);
	r.create = 1;
	assert_int_equal(podman_run_argv(&r, &v, NULL), SL_OK);
	assert_true(has(v, "create"));
	assert_false(has(v, "run"));
	assert_true(has(v, "--network=none"));
	size_t n = count(v);
	struct fabric f = {"eth0", "10.77.0.128/27", 24, ""};
	assert_int_equal(fabric_wrap(&f, "/usr/bin/suanli-agent", "10.77.0.300", "10.77.0.128/30",
				     &v, &d), SL_EINVAL);
	assert_int_equal(fabric_wrap(&f, "/usr/bin/suanli-agent", "10.77.0.129",
				     "10.77.0.128/30,x; rm -rf /", &v, &d), SL_EINVAL);
	assert_int_equal(count(v), n);
	assert_string_equal(v[0], "/usr/bin/podman");
	assert_int_equal(fabric_wrap(&f, "/usr/bin/suanli-agent", "10.77.0.129",
				     "10.77.0.128/30,10.77.0.160/30", &v, &d), SL_OK);
	assert_int_equal(count(v), n + 7);
	static const char *const want[] = {"/usr/bin/suanli-agent", "ctr-start", "eth0",
					   "10.77.0.129/24", "-", "10.77.0.128/30,10.77.0.160/30",
					   "--", "/usr/bin/podman"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_string_equal(v[i], want[i]);
	assert_string_equal(v[n + 6], "echo hi");
	podman_argv_free(v);
	assert_int_equal(fabric_ctr_start_main(3, (char *[]){"ctr-start", "eth0", "x", NULL}), 2);
}

/* A rank inside an instance: podman exec in its container, env by name
 * only, the fixed pid-recording script, the command's words after it. */
static void test_exec_argv(void **state)
{
	(void)state;
	const char *env[] = {"SECRET=hunter2", "NODE_RANK=0"};
	char *cmd[] = {"sh", "-c", "echo $SECRET; rm -rf /", NULL};
	struct podman_exec x = {"/usr/bin/podman", "runc", "cgroupfs", "sl-n1-in-000001", "/root",
				"/run/suanli-job-j-r0-e1-n0.pid", env, 2, cmd, 3};
	char **v = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(podman_exec_argv(&x, &v, &d), SL_OK);
	static const char *const want[] = {"/usr/bin/podman", "--runtime=runc",
					   "--cgroup-manager=cgroupfs", "exec", "-i",
					   "--env=SECRET", "--env=NODE_RANK", "--workdir=/root",
					   "sl-n1-in-000001", "/bin/sh", "-c", PODMAN_EXEC_SH,
					   "sl-exec", "/run/suanli-job-j-r0-e1-n0.pid", "sh", "-c",
					   "echo $SECRET; rm -rf /"};
	size_t n = sizeof(want) / sizeof(want[0]);
	assert_int_equal(count(v), n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(v[i], want[i]);
	for (size_t i = 0; v[i]; i++)
		assert_null(strstr(v[i], "hunter2"));
	podman_argv_free(v);
	x.container = "";
	assert_int_equal(podman_exec_argv(&x, &v, &d), SL_EINVAL);
	assert_null(v);
	x.container = "c";
	const char *noname[] = {"=x"};
	x.env = noname;
	x.nenv = 1;
	assert_int_equal(podman_exec_argv(&x, &v, &d), SL_EINVAL);
	assert_null(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_isolation_options),
		cmocka_unit_test(test_ldconfig_entry),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_uid_ranges),
		cmocka_unit_test(test_uid_table),
		cmocka_unit_test(test_fabric_wrap),
		cmocka_unit_test(test_exec_argv),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

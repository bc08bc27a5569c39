/* test_agent_discover.c - the agent's discovery sources in order: --simulate,
 * a saved matrix, NVML (the fake library), the nvidia-smi program (a script
 * that prints a real published output), and the error when nothing works. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "discover.h"
#include "nics.h"
#include "nvml.h"

static char dir[64];

static const char *testdata(void)
{
	const char *t = getenv("SL_TESTDATA");
	return t ? t : "tests/data";
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sl-disc-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	setenv(NVML_LIB_ENV, "/nonexistent/libnvidia-ml.so.1", 1);
	setenv(DISCOVER_SMI_ENV, "/nonexistent/nvidia-smi", 1);
	setenv(NICS_SYSFS_ENV, "/nonexistent/sys", 1); /* no NICs of the test host */
	unsetenv("FAKE_NVML_MODE");
	return 0;
}

static int teardown(void **state)
{
	char path[128];
	(void)state;
	snprintf(path, sizeof(path), "%s/nvidia-smi", dir);
	unlink(path);
	rmdir(dir);
	return 0;
}

/* A fake nvidia-smi: `topo -m` prints file, `--query-gpu=name` prints name. */
static void fake_smi(const char *file, const char *name)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/nvidia-smi", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\ncase \"$1\" in\n  topo) cat '%s/topo/%s' ;;\n"
		   "  --query-gpu=name) for i in 1 2 3 4 5 6 7 8; do echo '%s'; done ;;\n"
		   "  *) exit 3 ;;\nesac\n", testdata(), file, name);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
	setenv(DISCOVER_SMI_ENV, path, 1);
}

static void test_order(void **state)
{
	struct discover_opts o = {0};
	struct discovery disc;
	struct sl_diag d;
	char path[256];
	(void)state;

	/* Nothing: the clear error. */
	sl_diag_clear(&d);
	assert_int_equal(agent_discover(&o, &disc, &d), SL_ENOTFOUND);
	assert_string_equal(d.msg, "no NVIDIA driver found; use --simulate TYPE or "
			    "--nvidia-smi-topo FILE");

	/* The nvidia-smi program, with the model from its GPU names. */
	fake_smi("hgx-h100-nv18.txt", "NVIDIA H100 80GB HBM3");
	sl_diag_clear(&d);
	if (agent_discover(&o, &disc, &d) != SL_OK)
		fail_msg("nvidia-smi: %s", d.msg);
	assert_string_equal(disc.source, "nvidia-smi");
	assert_string_equal(disc.type.gpu->name, "h100-sxm");
	assert_int_equal(disc.type.link[3][6].kind, LINK_NVSWITCH);
	assert_string_equal(disc.gpus[7].name, "NVIDIA H100 80GB HBM3");
	assert_int_equal(disc.type.nnics, 8);
	/* --model wins over the names. */
	o.model = "h200-sxm";
	assert_int_equal(agent_discover(&o, &disc, &d), SL_OK);
	assert_string_equal(disc.type.gpu->name, "h200-sxm");
	o.model = NULL;

	/* NVML comes before the program. */
	setenv(NVML_LIB_ENV, getenv("SL_FAKE_NVML"), 1);
	setenv("FAKE_NVML_MODE", "pairbridge", 1);
	assert_int_equal(agent_discover(&o, &disc, &d), SL_OK);
	assert_string_equal(disc.source, "nvml");
	assert_string_equal(disc.type.gpu->name, "h100-nvl");
	/* ... unless skipped. */
	o.skip_nvml = true;
	assert_int_equal(agent_discover(&o, &disc, &d), SL_OK);
	assert_string_equal(disc.source, "nvidia-smi");
	o.skip_nvml = false;

	/* A driver that fails to start falls through to the program. */
	setenv("FAKE_NVML_MODE", "nodriver", 1);
	assert_int_equal(agent_discover(&o, &disc, &d), SL_OK);
	assert_string_equal(disc.source, "nvidia-smi");

	/* A saved matrix comes before NVML. */
	setenv("FAKE_NVML_MODE", "nvswitch", 1);
	snprintf(path, sizeof(path), "%s/topo/pcie-8gpu-pix-phb-sys.txt", testdata());
	o.topo_file = path;
	assert_int_equal(agent_discover(&o, &disc, &d), SL_OK);
	assert_string_equal(disc.source, "nvidia-smi");
	assert_null(disc.type.gpu);
	assert_int_equal(disc.type.link[0][1].kind, LINK_PCIE_SWITCH);
	/* A bad one is an error, not a fallback. */
	o.topo_file = "/nonexistent/topo.txt";
	sl_diag_clear(&d);
	assert_int_equal(agent_discover(&o, &disc, &d), SL_EIO);
	o.model = "warp9";
	o.topo_file = path;
	assert_int_equal(agent_discover(&o, &disc, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "warp9"));
	o.model = NULL;

	/* --simulate comes first of all. */
	o.simulate = "atlas-800t-a2";
	assert_int_equal(agent_discover(&o, &disc, &d), SL_OK);
	assert_string_equal(disc.source, "simulate");
	assert_string_equal(disc.type.gpu->name, "ascend-910b");
	o.simulate = "no-such-type";
	sl_diag_clear(&d);
	assert_int_equal(agent_discover(&o, &disc, &d), SL_ENOTFOUND);
	assert_non_null(strstr(d.msg, "no-such-type"));
	assert_non_null(strstr(d.hint, "hgx-h100-8"));

	/* A failing program is reported as such. */
	o.simulate = NULL;
	o.topo_file = NULL;
	setenv(NVML_LIB_ENV, "/nonexistent/libnvidia-ml.so.1", 1);
	fake_smi("no-such-file.txt", "x");
	sl_diag_clear(&d);
	assert_int_equal(agent_discover(&o, &disc, &d), SL_EIO);
	assert_non_null(strstr(d.msg, "topo failed"));
}

/* The command: exit codes and output shape (stdout to a file). */
static void test_main(void **state)
{
	char out[128], *argv[8];
	FILE *f;
	char buf[16384];
	size_t n;
	int saved, rc;
	(void)state;

	snprintf(out, sizeof(out), "%s/out.txt", dir);
	fflush(stdout);
	saved = dup(1);
	assert_true(saved >= 0);
	assert_non_null(freopen(out, "w", stdout));
	argv[0] = "discover";
	argv[1] = "--simulate";
	argv[2] = "hgx-h100-8";
	argv[3] = "--json";
	argv[4] = NULL;
	rc = agent_discover_main(4, argv);
	argv[3] = NULL;
	int rc2 = agent_discover_main(3, argv);
	argv[1] = "--bogus";
	int rc3 = agent_discover_main(2, argv);
	argv[1] = "--simulate";
	argv[2] = "x";
	argv[3] = "--nvidia-smi-topo";
	argv[4] = "y";
	int rc4 = agent_discover_main(5, argv);
	fflush(stdout);
	assert_true(dup2(saved, 1) >= 0);
	close(saved);
	assert_int_equal(rc, 0);
	assert_int_equal(rc2, 0);
	assert_int_equal(rc3, 2);
	assert_int_equal(rc4, 2);
	f = fopen(out, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	unlink(out);
	assert_non_null(strstr(buf, "\"kind\": \"nvswitch\""));
	assert_non_null(strstr(buf, "\"model\": \"h100-sxm\""));
	assert_non_null(strstr(buf, "matches built-in type hgx-h100-8"));
	assert_non_null(strstr(buf, "mlx5_7"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_main, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

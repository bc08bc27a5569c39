/* test_agent_nvml.c - NVML discovery and health through the fake
 * libnvidia-ml.so.1 (tests/fake_nvml), loaded via SUANLI_NVML_LIB. The build
 * passes the fake's path in SL_FAKE_NVML. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "discovery.h"
#include "nvml.h"

static int setup(void **state)
{
	const char *lib = getenv("SL_FAKE_NVML");
	(void)state;
	if (!lib || !*lib) {
		fprintf(stderr, "SL_FAKE_NVML is not set (run through ctest)\n");
		return -1;
	}
	setenv(NVML_LIB_ENV, lib, 1);
	unsetenv("FAKE_NVML_XID");
	unsetenv("FAKE_NVML_NO_REMOTE_TYPE");
	unsetenv("FAKE_NVML_NO_NUMA");
	unsetenv("FAKE_NVML_CLIQUE");
	unsetenv("FAKE_NVML_LINK_DOWN");
	return 0;
}

static int teardown(void **state)
{
	return setup(state);
}

static void discover_mode(const char *mode, struct discovery *disc)
{
	struct sl_diag d;
	setenv("FAKE_NVML_MODE", mode, 1);
	sl_diag_clear(&d);
	if (nvml_discover(disc, &d) != SL_OK)
		fail_msg("nvml_discover(%s): %s", mode, d.msg);
}

static int count_kind(const struct discovery *disc, int kind)
{
	int n = 0;
	for (int a = 0; a < disc->type.ngpus; a++)
		for (int b = a + 1; b < disc->type.ngpus; b++)
			n += disc->type.link[a][b].kind == kind;
	return n;
}

static void test_nvswitch_server(void **state)
{
	struct discovery disc;
	struct node_type t, h100;
	char why[DISC_REASON_MAX];
	(void)state;

	discover_mode("nvswitch", &disc);
	assert_string_equal(disc.source, "nvml");
	assert_int_equal(disc.type.ngpus, 8);
	assert_non_null(disc.type.gpu);
	assert_string_equal(disc.type.gpu->name, "h100-sxm");
	/* Links that end at NVSwitch chips: every pair is nvswitch. */
	assert_int_equal(count_kind(&disc, LINK_NVSWITCH), 28);
	assert_int_equal(disc.type.link[0][7].gbps, 900);
	for (int g = 0; g < 8; g++) {
		assert_int_equal(disc.gpus[g].nvlinks_up, 18);
		assert_true(disc.gpus[g].nvswitch);
		assert_int_equal(disc.gpus[g].mem_mib, 81559);
		assert_int_equal(disc.type.numa[g], g < 4 ? 0 : 1);
	}
	assert_string_equal(disc.gpus[4].bus_id, "00000000:9A:00.0");
	assert_string_equal(disc.gpus[2].name, "NVIDIA H100 80GB HBM3");
	assert_non_null(strstr(disc.gpus[3].uuid, "GPU-"));
	assert_string_equal(disc.driver, "550.54.15");
	assert_string_equal(disc.clique, "");
	assert_int_equal(disc.type.nnics, 0);
	assert_int_equal(discovery_match_builtin(&disc, &t), SL_OK);
	assert_string_equal(t.name, "hgx-h100-8");
	assert_int_equal(topo_builtin("hgx-h100-8", &h100), SL_OK);
	assert_false(discovery_weaker(&disc, &h100, why, sizeof(why)));

	/* A link down on GPU 5: still NVSwitch, but weaker than declared. */
	setenv("FAKE_NVML_LINK_DOWN", "5:9", 1);
	discover_mode("nvswitch", &disc);
	assert_int_equal(disc.gpus[5].nvlinks_up, 17);
	assert_int_equal(count_kind(&disc, LINK_NVSWITCH), 28);
	assert_true(discovery_weaker(&disc, &h100, why, sizeof(why)));
	assert_string_equal(why, "GPU 5 has 17 NVLink links up; hgx-h100-8 has 18");
	assert_int_equal(discovery_match_builtin(&disc, &t), SL_ENOTFOUND);
	unsetenv("FAKE_NVML_LINK_DOWN");

	/* Older drivers: no remote device type, no NUMA id. A remote bus id that is
	 * none of our GPUs is a switch; NUMA comes from CPU affinity. */
	setenv("FAKE_NVML_NO_REMOTE_TYPE", "1", 1);
	setenv("FAKE_NVML_NO_NUMA", "1", 1);
	discover_mode("nvswitch", &disc);
	assert_int_equal(count_kind(&disc, LINK_NVSWITCH), 28);
	for (int g = 0; g < 8; g++)
		assert_int_equal(disc.type.numa[g], g < 4 ? 0 : 1);
	unsetenv("FAKE_NVML_NO_REMOTE_TYPE");
	unsetenv("FAKE_NVML_NO_NUMA");

	/* An NVL72 tray reports its fabric clique. */
	setenv("FAKE_NVML_CLIQUE", "1", 1);
	discover_mode("nvswitch", &disc);
	assert_string_equal(disc.clique, "000102030405060708090a0b0c0d0e0f/7");
	unsetenv("FAKE_NVML_CLIQUE");
}

static void test_pairbridge_server(void **state)
{
	struct discovery disc;
	struct node_type t;
	(void)state;

	discover_mode("pairbridge", &disc);
	assert_non_null(disc.type.gpu);
	assert_string_equal(disc.type.gpu->name, "h100-nvl");
	assert_int_equal(count_kind(&disc, LINK_NVSWITCH), 0);
	assert_int_equal(count_kind(&disc, LINK_NVLINK), 4);
	for (int g = 0; g < 8; g += 2) {
		assert_int_equal(disc.type.link[g][g + 1].kind, LINK_NVLINK);
		assert_int_equal(disc.type.link[g][g + 1].count, 12);
		assert_int_equal(disc.type.link[g][g + 1].gbps, 600);
		assert_int_equal(disc.gpus[g].nvlinks_up, 12);
		assert_false(disc.gpus[g].nvswitch);
	}
	assert_int_equal(disc.type.link[0][2].kind, LINK_PCIE_HOSTBRIDGE);
	assert_int_equal(disc.type.link[1][3].kind, LINK_PCIE_HOSTBRIDGE);
	assert_int_equal(disc.type.link[0][4].kind, LINK_CROSS_SOCKET);
	assert_int_equal(disc.type.link[3][7].kind, LINK_CROSS_SOCKET);
	assert_int_equal(count_kind(&disc, LINK_PCIE_HOSTBRIDGE), 8);
	assert_int_equal(count_kind(&disc, LINK_CROSS_SOCKET), 16);
	assert_int_equal(disc.gpus[1].mem_mib, 95830);
	assert_int_equal(discovery_match_builtin(&disc, &t), SL_OK);
	assert_string_equal(t.name, "pcie-h100nvl-8");

	/* One bridge link down: the pair is weaker than the declared type. */
	setenv("FAKE_NVML_LINK_DOWN", "2:0", 1);
	discover_mode("pairbridge", &disc);
	assert_int_equal(disc.type.link[2][3].count, 11);
	assert_int_equal(discovery_match_builtin(&disc, &t), SL_ENOTFOUND);
	unsetenv("FAKE_NVML_LINK_DOWN");
}

static void test_health_and_xid(void **state)
{
	struct nvml *n = NULL;
	struct nvml_health_sample s;
	struct sl_diag d;
	(void)state;

	setenv("FAKE_NVML_MODE", "nvswitch", 1);
	setenv("FAKE_NVML_XID", "3:79,3:13,6:48", 1);
	sl_diag_clear(&d);
	assert_int_equal(nvml_open(&n, &d), SL_OK);
	assert_non_null(n);
	assert_int_equal(nvml_health(n, &s, &d), SL_OK);
	assert_int_equal(s.ngpus, 8);
	assert_int_equal(s.gpus[2].temp_c, 42);
	assert_int_equal(s.gpus[2].power_w, 302);
	assert_int_equal(s.gpus[2].util_pct, 20); /* NVML utilisation (fake: 10 x index) */
	assert_int_equal(s.gpus[2].ecc_sbe, 0);
	assert_int_equal(s.gpus[2].ecc_dbe, 2);
	assert_int_equal(s.gpus[2].nvlink_up, 18);
	assert_int_equal(s.gpus[3].nxid, 2);
	assert_int_equal(s.gpus[3].xid[0], 79);
	assert_int_equal(s.gpus[3].xid[1], 13);
	assert_int_equal(s.gpus[6].nxid, 1);
	assert_int_equal(s.gpus[6].xid[0], 48);
	assert_int_equal(s.gpus[0].nxid, 0);
	assert_false(s.gpus[3].xid_lost);
	/* Only events new since the last sample. */
	assert_int_equal(nvml_health(n, &s, &d), SL_OK);
	assert_int_equal(s.gpus[3].nxid, 0);
	assert_int_equal(s.gpus[6].nxid, 0);
	nvml_close(n);

	/* More XIDs than a sample keeps. */
	char many[512] = "";
	for (int i = 0; i < NVML_XID_MAX + 3; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s1:%d", i ? "," : "",
			 13);
	setenv("FAKE_NVML_XID", many, 1);
	assert_int_equal(nvml_open(&n, &d), SL_OK);
	assert_int_equal(nvml_health(n, &s, &d), SL_OK);
	assert_int_equal(s.gpus[1].nxid, NVML_XID_MAX);
	assert_true(s.gpus[1].xid_lost);
	nvml_close(n);
	nvml_close(NULL);
	unsetenv("FAKE_NVML_XID");
}

static void test_no_driver(void **state)
{
	struct discovery disc;
	struct nvml *n = (struct nvml *)&disc;
	struct sl_diag d;
	(void)state;

	setenv(NVML_LIB_ENV, "/nonexistent/libnvidia-ml.so.1", 1);
	sl_diag_clear(&d);
	assert_int_equal(nvml_discover(&disc, &d), SL_ENOTFOUND);
	assert_non_null(strstr(d.msg, "no NVIDIA driver found"));
	assert_non_null(strstr(d.msg, "/nonexistent/libnvidia-ml.so.1"));
	assert_non_null(strstr(d.hint, "--simulate"));
	assert_int_equal(nvml_open(&n, &d), SL_ENOTFOUND);
	assert_null(n);

	/* The library is there but the driver is not loaded. */
	setenv(NVML_LIB_ENV, getenv("SL_FAKE_NVML"), 1);
	setenv("FAKE_NVML_MODE", "nodriver", 1);
	sl_diag_clear(&d);
	assert_int_equal(nvml_discover(&disc, &d), SL_ENOTFOUND);
	assert_non_null(strstr(d.msg, "Driver Not Loaded"));

	/* A library that is not NVML. */
	setenv(NVML_LIB_ENV, "libc.so.6", 1);
	sl_diag_clear(&d);
	assert_int_equal(nvml_discover(&disc, &d), SL_ENOTFOUND);
	assert_non_null(strstr(d.msg, "nvmlInit_v2"));
}

/* Device names as drivers print them. */
static void test_model_names(void **state)
{
	static const struct {
		const char *name, *model;
	} names[] = {
		{"NVIDIA H100 80GB HBM3", "h100-sxm"}, {"NVIDIA H100 NVL", "h100-nvl"},
		{"NVIDIA H100 PCIe", NULL},           {"NVIDIA H200", "h200-sxm"},
		{"NVIDIA H200 NVL", NULL},            {"NVIDIA H800", "h800-sxm"},
		{"NVIDIA A100-SXM4-80GB", "a100-sxm"}, {"NVIDIA A100-PCIE-40GB", NULL},
		{"NVIDIA A800-SXM4-80GB", "a800-sxm"}, {"NVIDIA L40S", "l40s"},
		{"NVIDIA L40", NULL},                 {"NVIDIA B200", "b200"},
		{"NVIDIA GB200", "gb200"},            {"NVIDIA B300 SXM6 AC", "b300"},
		{"NVIDIA GB300", "gb300"},            {"Tesla V100-SXM2-32GB", NULL},
		{"NVIDIA GeForce RTX 4090", NULL},    {"", NULL},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct gpu_model *m = nvml_model_from_name(names[i].name);
		if (names[i].model ? !m || strcmp(m->name, names[i].model) : m != NULL)
			fail_msg("'%s' -> %s, expected %s", names[i].name, m ? m->name : "NULL",
				 names[i].model ? names[i].model : "NULL");
	}
	assert_null(nvml_model_from_name(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_nvswitch_server, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pairbridge_server, setup, teardown),
		cmocka_unit_test_setup_teardown(test_health_and_xid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_driver, setup, teardown),
		cmocka_unit_test(test_model_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

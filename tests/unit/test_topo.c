/* test_topo.c - link kinds, the bandwidth model, the builder, the built-in
 * node types and the `nvidia-smi topo -m` parser and formatter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "topo.h"

static const char *const builtin_names[] = {
	"hgx-h100-8", "hgx-h200-8", "hgx-a100-8", "hgx-a800-8", "hgx-h800-8",
	"hgx-b200-8", "hgx-b300-8", "gb200-nvl72-tray", "gb300-nvl72-tray",
	"pcie-l40s-8", "pcie-h100nvl-8", "atlas-800t-a2", "atlas-800-9000",
};
#define NBUILTIN (sizeof(builtin_names) / sizeof(builtin_names[0]))

static struct node_type *get_builtin(const char *name)
{
	static struct node_type t;
	assert_int_equal(topo_builtin(name, &t), SL_OK);
	return &t;
}

static int popcount(gpumask_t m)
{
	int n = 0;
	for (; m; m &= m - 1)
		n++;
	return n;
}

/* ---- kinds and bandwidth model ---- */

static void test_kind_names(void **state)
{
	static const char *const names[LINK__COUNT] = {
		"self", "cross-socket", "numa", "pcie-hostbridge", "pcie-switch",
		"hccs", "nvlink", "nvswitch",
	};
	(void)state;
	for (int k = 0; k < LINK__COUNT; k++) {
		assert_string_equal(topo_link_kind_name((enum link_kind)k), names[k]);
		assert_int_equal(topo_link_kind_parse(names[k]), k);
	}
	assert_int_equal(topo_link_kind_parse("NVLINK"), -1);
	assert_int_equal(topo_link_kind_parse("pcie"), -1);
	assert_int_equal(topo_link_kind_parse(NULL), -1);
	assert_string_equal(topo_link_kind_name(LINK__COUNT), "unknown");
}

/* The model must rank pairs strictly for every catalog model. */
static void test_kind_order_every_model(void **state)
{
	struct node_type t;
	(void)state;
	for (size_t i = 0; i < catalog_gpu_count(); i++) {
		const struct gpu_model *m = catalog_gpu_at(i);
		int sw, hb, nu, cs;
		assert_int_equal(topo_type_init(&t, "x", m, 2, 1, 1, NULL, NULL), SL_OK);
		sw = topo_kind_gbps(&t, LINK_PCIE_SWITCH, 0);
		hb = topo_kind_gbps(&t, LINK_PCIE_HOSTBRIDGE, 0);
		nu = topo_kind_gbps(&t, LINK_NUMA, 0);
		cs = topo_kind_gbps(&t, LINK_CROSS_SOCKET, 0);
		assert_true(sw > hb);
		assert_true(hb > nu);
		assert_true(nu > cs);
		assert_true(cs > 0);
		if (m->ic == IC_NVLINK) {
			assert_int_equal(topo_kind_gbps(&t, LINK_NVSWITCH, 0), m->ic_gbps);
			assert_true(topo_kind_gbps(&t, LINK_NVSWITCH, 0) > sw);
			assert_true(topo_kind_gbps(&t, LINK_NVLINK, 2) > sw);
			assert_int_equal(topo_kind_gbps(&t, LINK_NVLINK, 12), 12 * m->link_gbps);
		}
		if (m->ic == IC_HCCS) {
			assert_true(topo_kind_gbps(&t, LINK_HCCS, 1) > sw);
			assert_int_equal(topo_kind_gbps(&t, LINK_HCCS, 0), m->link_gbps);
		}
		assert_int_equal(topo_kind_gbps(&t, LINK_SELF, 0), 0);
	}
}

/* ---- builder ---- */

static void test_type_init_defaults(void **state)
{
	static const int8_t numa[4] = {0, 0, 1, 1};
	struct node_type t;
	const struct gpu_model *m = catalog_gpu_find("l40s");
	(void)state;
	assert_int_equal(topo_type_init(&t, "four", m, 4, 32, 256, numa, NULL), SL_OK);
	assert_string_equal(t.name, "four");
	assert_int_equal(t.link[0][0].kind, LINK_SELF);
	assert_int_equal(t.link[0][1].kind, LINK_NUMA);
	assert_int_equal(t.link[1][2].kind, LINK_CROSS_SOCKET);
	assert_int_equal(t.link[2][1].kind, LINK_CROSS_SOCKET);
	assert_int_equal(t.link[0][1].gbps, topo_kind_gbps(&t, LINK_NUMA, 0));
	assert_int_equal(topo_set_pcie_switch(&t, 0x3, NULL), SL_OK);
	assert_int_equal(t.link[1][0].kind, LINK_PCIE_SWITCH);
	assert_true(topo_pair_gbps(&t, 0, 1) > topo_pair_gbps(&t, 0, 2));
	assert_int_equal(topo_validate(&t, NULL), SL_OK);
}

static void test_builder_errors(void **state)
{
	struct node_type t;
	struct sl_diag d;
	const struct gpu_model *h = catalog_gpu_find("h100-sxm");
	const struct gpu_model *l = catalog_gpu_find("l40s");
	char longname[TOPO_NAME_MAX + 8];
	(void)state;
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;

	sl_diag_clear(&d);
	assert_int_equal(topo_type_init(&t, "x", h, 17, 1, 1, NULL, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "expected 1 to 16"));
	assert_int_equal(topo_type_init(&t, "x", h, 0, 1, 1, NULL, &d), SL_EINVAL);
	assert_int_equal(topo_type_init(&t, "x", NULL, 2, 1, 1, NULL, &d), SL_EINVAL);
	assert_int_equal(topo_type_init(&t, "", h, 2, 1, 1, NULL, &d), SL_EINVAL);
	assert_int_equal(topo_type_init(&t, longname, h, 2, 1, 1, NULL, &d), SL_ELIMIT);

	assert_int_equal(topo_type_init(&t, "x", h, 4, 1, 1, NULL, &d), SL_OK);
	assert_int_equal(topo_set_link(&t, 0, 4, LINK_NVLINK, 2, 0, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "out of range"));
	assert_int_equal(topo_set_link(&t, -1, 1, LINK_NVLINK, 2, 0, &d), SL_EINVAL);
	assert_int_equal(topo_set_link(&t, 2, 2, LINK_NVLINK, 2, 0, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "itself"));
	assert_int_equal(topo_set_link(&t, 0, 1, LINK_SELF, 0, 0, &d), SL_EINVAL);
	assert_int_equal(topo_set_link(&t, 0, 1, LINK_NUMA, 3, 0, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "count"));
	assert_int_equal(topo_set_link(&t, 0, 1, LINK_NVLINK, 300, 0, &d), SL_EINVAL);
	assert_int_equal(topo_set_link(&t, 0, 1, LINK_NVLINK, 1, 70000, &d), SL_EINVAL);
	assert_int_equal(topo_set_pcie_switch(&t, 0x10, &d), SL_EINVAL);
	assert_int_equal(topo_set_pcie_switch(&t, 0, &d), SL_EINVAL);
	assert_int_equal(topo_add_nic(&t, "", 100, 1, &d), SL_EINVAL);
	assert_int_equal(topo_add_nic(&t, "n", 100, 0x10, &d), SL_EINVAL);
	assert_int_equal(topo_add_group(&t, 0x3, &d), SL_OK);
	assert_int_equal(topo_add_group(&t, 0x6, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "overlap"));
	for (int i = 0; i < TOPO_MAX_NICS; i++)
		assert_int_equal(topo_add_nic(&t, "n", 100, 1, &d), SL_OK);
	assert_int_equal(topo_add_nic(&t, "n", 100, 1, &d), SL_ELIMIT);

	/* A model without NVLink cannot derive an NVLink bandwidth. */
	assert_int_equal(topo_type_init(&t, "x", l, 2, 1, 1, NULL, &d), SL_OK);
	sl_diag_clear(&d);
	assert_int_equal(topo_set_link(&t, 0, 1, LINK_NVLINK, 4, 0, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "l40s"));
	assert_true(d.hint[0] != 0);
	assert_int_equal(topo_set_link(&t, 0, 1, LINK_NVLINK, 4, 100, &d), SL_OK);
	assert_int_equal(topo_pair_gbps(&t, 1, 0), 100);
}

static void test_set_link_symmetric(void **state)
{
	struct node_type t;
	(void)state;
	assert_int_equal(topo_type_init(&t, "x", catalog_gpu_find("h100-nvl"), 4, 1, 1,
					NULL, NULL), SL_OK);
	assert_int_equal(topo_set_link(&t, 2, 0, LINK_NVLINK, 12, 0, NULL), SL_OK);
	assert_int_equal(t.link[0][2].kind, LINK_NVLINK);
	assert_int_equal(t.link[0][2].count, 12);
	assert_int_equal(t.link[0][2].gbps, 600);
	assert_memory_equal(&t.link[0][2], &t.link[2][0], sizeof(struct topo_link));
	/* A switch does not weaken a stronger link. */
	assert_int_equal(topo_set_pcie_switch(&t, 0xf, NULL), SL_OK);
	assert_int_equal(t.link[0][2].kind, LINK_NVLINK);
	assert_int_equal(t.link[0][1].kind, LINK_PCIE_SWITCH);
}

/* ---- built-in types ---- */

static void test_builtin_list(void **state)
{
	(void)state;
	assert_int_equal(topo_builtin_count(), (int)NBUILTIN);
	for (size_t i = 0; i < NBUILTIN; i++) {
		int found = 0;
		for (int j = 0; j < topo_builtin_count(); j++)
			found += strcmp(topo_builtin_name(j), builtin_names[i]) == 0;
		assert_int_equal(found, 1);
	}
	assert_null(topo_builtin_name(-1));
	assert_null(topo_builtin_name(topo_builtin_count()));
	struct node_type t;
	assert_int_equal(topo_builtin("hgx-h100-9", &t), SL_ENOTFOUND);
	assert_int_equal(topo_builtin(NULL, &t), SL_EINVAL);
}

static void test_builtin_invariants(void **state)
{
	(void)state;
	for (size_t i = 0; i < NBUILTIN; i++) {
		struct node_type *t = get_builtin(builtin_names[i]);
		gpumask_t all = ((gpumask_t)1 << t->ngpus) - 1, rails = 0;
		assert_string_equal(t->name, builtin_names[i]);
		assert_non_null(t->gpu);
		assert_true(t->ngpus == 8 || t->ngpus == 4);
		assert_true(t->cpus >= 64);
		assert_true(t->mem_gib >= 512);
		assert_int_equal(topo_validate(t, NULL), SL_OK);
		for (int a = 0; a < t->ngpus; a++) {
			assert_int_equal(t->link[a][a].kind, LINK_SELF);
			assert_true(t->numa[a] >= 0 && t->numa[a] < 4);
			for (int b = 0; b < t->ngpus; b++) {
				assert_memory_equal(&t->link[a][b], &t->link[b][a],
						    sizeof(struct topo_link));
				if (a != b) {
					assert_true(t->link[a][b].gbps > 0);
					/* NVLink on NVIDIA only, HCCS on Ascend only. */
					if (t->gpu->ic != IC_NVLINK)
						assert_true(t->link[a][b].kind < LINK_NVLINK);
					if (t->gpu->ic != IC_HCCS)
						assert_true(t->link[a][b].kind != LINK_HCCS);
				}
			}
		}
		assert_true(t->nnics >= 4 && t->nnics <= TOPO_MAX_NICS);
		for (int n = 0; n < t->nnics; n++) {
			assert_true(t->nics[n].gbps >= 100);
			assert_int_equal(t->nics[n].gpus & ~all, 0);
			assert_true(t->nics[n].gpus != 0);
			rails |= t->nics[n].gpus;
		}
		/* Every GPU has a rail. */
		assert_int_equal(rails, all);
	}
}

struct hgx_expect {
	const char *name;
	int gbps, cpus, mem, nnics, nic_gbps;
};

static void test_hgx_types(void **state)
{
	static const struct hgx_expect x[] = {
		{"hgx-h100-8", 900, 112, 2048, 8, 400},
		{"hgx-h200-8", 900, 112, 2048, 8, 400},
		{"hgx-a100-8", 600, 128, 1024, 8, 200},
		{"hgx-a800-8", 400, 128, 1024, 8, 200},
		{"hgx-h800-8", 400, 112, 2048, 8, 400},
		{"hgx-b200-8", 1800, 112, 2048, 8, 400},
		{"hgx-b300-8", 1800, 128, 2048, 8, 800},
		{"gb200-nvl72-tray", 1800, 144, 960, 4, 400},
		{"gb300-nvl72-tray", 1800, 144, 960, 4, 800},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++) {
		struct node_type *t = get_builtin(x[i].name);
		assert_int_equal(t->cpus, x[i].cpus);
		assert_int_equal(t->mem_gib, x[i].mem);
		assert_int_equal(t->nnics, x[i].nnics);
		for (int a = 0; a < t->ngpus; a++) {
			assert_int_equal(t->numa[a], a < t->ngpus / 2 ? 0 : 1);
			for (int b = 0; b < t->ngpus; b++)
				if (a != b) {
					assert_int_equal(t->link[a][b].kind, LINK_NVSWITCH);
					assert_int_equal(t->link[a][b].gbps, x[i].gbps);
				}
		}
		for (int n = 0; n < t->nnics; n++)
			assert_int_equal(t->nics[n].gbps, x[i].nic_gbps);
		assert_int_equal(t->ngroups, 0);
	}
	/* DGX H100: one NIC per GPU; DGX A100: two NICs per switch pair. */
	struct node_type *h = get_builtin("hgx-h100-8");
	for (int n = 0; n < 8; n++)
		assert_int_equal(h->nics[n].gpus, 1u << n);
	struct node_type *a = get_builtin("hgx-a100-8");
	for (int n = 0; n < 8; n++)
		assert_int_equal(a->nics[n].gpus, 3u << (n / 2 * 2));
}

static void test_pcie_types(void **state)
{
	(void)state;
	struct node_type *t = get_builtin("pcie-h100nvl-8");
	assert_int_equal(t->link[0][1].kind, LINK_NVLINK);
	assert_int_equal(t->link[0][1].count, 12);
	assert_int_equal(t->link[0][1].gbps, 600);
	assert_int_equal(t->link[6][7].gbps, 600);
	assert_true(t->link[0][2].kind < LINK_PCIE_SWITCH);
	assert_true(topo_pair_gbps(t, 0, 2) < topo_pair_gbps(t, 0, 1));
	assert_int_equal(t->link[0][2].kind, LINK_NUMA);
	assert_int_equal(t->link[0][4].kind, LINK_CROSS_SOCKET);
	assert_true(topo_pair_gbps(t, 0, 4) < topo_pair_gbps(t, 0, 2));
	assert_int_equal(t->nnics, 4);

	t = get_builtin("pcie-l40s-8");
	for (int a = 0; a < 8; a++)
		for (int b = 0; b < 8; b++) {
			int k = t->link[a][b].kind;
			if (a == b)
				continue;
			if (a / 2 == b / 2)
				assert_int_equal(k, LINK_PCIE_SWITCH);
			else if (a / 4 == b / 4)
				assert_int_equal(k, LINK_NUMA);
			else
				assert_int_equal(k, LINK_CROSS_SOCKET);
		}
	assert_int_equal(t->nnics, 4);
	for (int n = 0; n < 4; n++)
		assert_int_equal(t->nics[n].gpus, 3u << (2 * n));
}

static void test_ascend_types(void **state)
{
	(void)state;
	struct node_type *t = get_builtin("atlas-800t-a2");
	for (int a = 0; a < 8; a++)
		for (int b = 0; b < 8; b++)
			if (a != b) {
				assert_int_equal(t->link[a][b].kind, LINK_HCCS);
				assert_int_equal(t->link[a][b].gbps, 56);
			}
	assert_int_equal(t->ngroups, 0);
	assert_int_equal(t->numa[0], 0);
	assert_int_equal(t->numa[7], 3);
	assert_int_equal(t->nnics, 8);
	assert_int_equal(t->nics[3].gbps, 200);

	t = get_builtin("atlas-800-9000");
	assert_true(t->groups_strict);
	assert_int_equal(t->ngroups, 2);
	assert_int_equal(t->groups[0], 0x0f);
	assert_int_equal(t->groups[1], 0xf0);
	assert_int_equal(popcount(t->groups[0] | t->groups[1]), 8);
	for (int a = 0; a < 8; a++)
		for (int b = 0; b < 8; b++) {
			if (a == b)
				continue;
			if (a / 4 == b / 4) {
				assert_int_equal(t->link[a][b].kind, LINK_HCCS);
			} else {
				assert_true(t->link[a][b].kind < LINK_PCIE_SWITCH);
				assert_true(topo_pair_gbps(t, a, b) < topo_pair_gbps(t, 0, 1));
			}
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_kind_order_every_model),
		cmocka_unit_test(test_type_init_defaults),
		cmocka_unit_test(test_builder_errors),
		cmocka_unit_test(test_set_link_symmetric),
		cmocka_unit_test(test_builtin_list),
		cmocka_unit_test(test_builtin_invariants),
		cmocka_unit_test(test_hgx_types),
		cmocka_unit_test(test_pcie_types),
		cmocka_unit_test(test_ascend_types),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

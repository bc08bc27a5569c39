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

#include "testdata.h"

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


/* ---- nvidia-smi topo -m ---- */

static char *read_data(const char *name)
{
	char rel[256];
	snprintf(rel, sizeof(rel), "topo/%s", name);
	return testdata_read(rel, NULL);
}

static void init_type(struct node_type *t, const char *model, int ngpus)
{
	assert_int_equal(topo_type_init(t, "parsed", catalog_gpu_find(model), ngpus, 64,
					512, NULL, NULL), SL_OK);
}

struct nic_expect {
	const char *name;
	gpumask_t rail;
};

struct file_expect {
	const char *file, *model;
	int kind01, count01, gbps01;
	bool all_same;    /* every off-diagonal pair like (0,1) */
	int8_t numa[8];
	int nnics;
	struct nic_expect nics[8];
};

static const struct file_expect files[] = {
	{"dgx-a100-nv12.txt", "a100-sxm", LINK_NVSWITCH, 12, 600, true,
	 {0, 0, 0, 0, 1, 1, 1, 1}, 8,
	 {{"mlx5_0", 0x03}, {"mlx5_1", 0x03}, {"mlx5_2", 0x0c}, {"mlx5_3", 0x0c},
	  {"mlx5_4", 0x30}, {"mlx5_5", 0x30}, {"mlx5_6", 0xc0}, {"mlx5_7", 0xc0}}},
	{"hgx-h100-nv18.txt", "h100-sxm", LINK_NVSWITCH, 18, 900, true,
	 {0, 0, 0, 0, 1, 1, 1, 1}, 8,
	 {{"mlx5_0", 0x01}, {"mlx5_1", 0x02}, {"mlx5_2", 0x04}, {"mlx5_3", 0x08},
	  {"mlx5_4", 0x10}, {"mlx5_5", 0x20}, {"mlx5_6", 0x40}, {"mlx5_7", 0x80}}},
	{"hgx-b300-nv18.txt", "b300", LINK_NVSWITCH, 18, 1800, true,
	 {0, 0, 0, 0, 1, 1, 1, 1}, 8,
	 {{"mlx5_bond_0", 0x01}, {"mlx5_bond_1", 0x02}, {"mlx5_bond_2", 0x04},
	  {"mlx5_bond_3", 0x08}, {"mlx5_bond_4", 0x10}, {"mlx5_bond_5", 0x20},
	  {"mlx5_bond_6", 0x40}, {"mlx5_bond_7", 0x80}}},
	/* V100 is not in the catalog; any NVLink 50 GB/s model reads it. */
	{"dgx1-v100-nv1-nv2.txt", "a100-sxm", LINK_NVLINK, 1, 50, false,
	 {0, 0, 0, 0, 0, 0, 0, 0}, 4,
	 {{"mlx5_2", 0x30}, {"mlx5_0", 0x03}, {"mlx5_3", 0xc0}, {"mlx5_1", 0x0c}}},
	{"pcie-rtx4090-8.txt", "l40s", LINK_CROSS_SOCKET, 0, 12, false,
	 {0, 0, 0, 0, 1, 1, 1, 1}, 2, {{"NIC0", 0x40}, {"NIC1", 0x40}}},
};

static void test_parse_data_files(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const struct file_expect *x = &files[i];
		struct node_type t;
		struct sl_diag d;
		char *text = read_data(x->file);
		sl_diag_clear(&d);
		init_type(&t, x->model, 8);
		if (topo_parse_matrix(&t, text, &d) != SL_OK)
			fail_msg("%s: %d:%d: %s", x->file, d.line, d.col, d.msg);
		free(text);
		assert_int_equal(topo_validate(&t, NULL), SL_OK);
		assert_int_equal(t.link[0][1].kind, x->kind01);
		assert_int_equal(t.link[0][1].count, x->count01);
		assert_int_equal(t.link[0][1].gbps, x->gbps01);
		for (int a = 0; a < 8; a++) {
			assert_int_equal(t.numa[a], x->numa[a]);
			for (int b = 0; b < 8; b++)
				if (a != b && x->all_same)
					assert_memory_equal(&t.link[a][b], &t.link[0][1],
							    sizeof(struct topo_link));
		}
		assert_int_equal(t.nnics, x->nnics);
		for (int n = 0; n < x->nnics; n++) {
			assert_string_equal(t.nics[n].name, x->nics[n].name);
			assert_int_equal(t.nics[n].gpus, x->nics[n].rail);
			assert_int_equal(t.nics[n].gbps, 0);
		}
	}
}

static void test_parse_dgx1_mesh(void **state)
{
	struct node_type t;
	char *text = read_data("dgx1-v100-nv1-nv2.txt");
	(void)state;
	init_type(&t, "a100-sxm", 8);
	assert_int_equal(topo_parse_matrix(&t, text, NULL), SL_OK);
	free(text);
	/* Hybrid cube mesh: NV2 pairs beat NV1 pairs beat PCIe. */
	assert_int_equal(t.link[0][3].kind, LINK_NVLINK);
	assert_int_equal(t.link[0][3].count, 2);
	assert_int_equal(t.link[0][3].gbps, 100);
	assert_int_equal(t.link[0][5].kind, LINK_CROSS_SOCKET);
	assert_true(topo_pair_gbps(&t, 0, 3) > topo_pair_gbps(&t, 0, 1));
	assert_true(topo_pair_gbps(&t, 0, 1) > topo_pair_gbps(&t, 0, 5));
}

/* A type that already knows its NICs keeps their speed. */
static void test_parse_keeps_nic_speed(void **state)
{
	struct node_type t;
	char *text = read_data("hgx-h100-nv18.txt");
	(void)state;
	assert_int_equal(topo_builtin("hgx-h100-8", &t), SL_OK);
	assert_int_equal(topo_parse_matrix(&t, text, NULL), SL_OK);
	free(text);
	assert_int_equal(t.nnics, 8);
	assert_string_equal(t.nics[3].name, "mlx5_3");
	assert_int_equal(t.nics[3].gbps, 400);
	assert_int_equal(t.link[2][6].kind, LINK_NVSWITCH);
}

/* Four GPUs fully meshed with NV4 use all 12 A100 links: direct NVLink, not a switch. */
static void test_parse_mesh_not_switch(void **state)
{
	static const char text[] =
		"\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
		"GPU0\t X \tNV4\tNV4\tNV4\t0-31\t0\n"
		"GPU1\tNV4\t X \tNV4\tNV4\t0-31\t0\n"
		"GPU2\tNV4\tNV4\t X \tNV4\t32-63\t1\n"
		"GPU3\tNV4\tNV4\tNV4\t X \t32-63\t1\n";
	struct node_type t;
	(void)state;
	init_type(&t, "a100-sxm", 4);
	assert_int_equal(topo_parse_matrix(&t, text, NULL), SL_OK);
	assert_int_equal(t.link[0][3].kind, LINK_NVLINK);
	assert_int_equal(t.link[0][3].gbps, 200);
	assert_int_equal(t.numa[2], 1);
	/* The same matrix with NV12 cannot be direct links: NVSwitch. */
	char more[sizeof(text) + 64];
	size_t j = 0;
	for (size_t i = 0; text[i]; i++) {
		more[j++] = text[i];
		if (text[i] == 'V' && text[i + 1] == '4') {
			more[j++] = '1';
			more[j++] = '2';
			i++;
		}
	}
	more[j] = 0;
	init_type(&t, "a100-sxm", 4);
	assert_int_equal(topo_parse_matrix(&t, more, NULL), SL_OK);
	assert_int_equal(t.link[0][3].kind, LINK_NVSWITCH);
	assert_int_equal(t.link[0][3].gbps, 600);
}

/* Every PCIe relation, CRLF line ends: strictly ranked bandwidths. */
static void test_parse_pcie_ranks(void **state)
{
	static const char text[] =
		"GPU Topology:\r\n"
		"        GPU0    GPU1    GPU2    GPU3    GPU4    CPU Affinity    NUMA Affinity\r\n"
		"GPU0     X      PIX     PXB     PHB     SYS     0-15    0\r\n"
		"GPU1    PIX      X      NODE    NODE    SYS     0-15    0\r\n"
		"GPU2    PXB     NODE     X      NODE    SYS     0-15    0\r\n"
		"GPU3    PHB     NODE    NODE     X      SYS     0-15    0\r\n"
		"GPU4    SYS     SYS     SYS     SYS      X      16-31   1\r\n";
	struct node_type t;
	(void)state;
	init_type(&t, "l40s", 5);
	assert_int_equal(topo_parse_matrix(&t, text, NULL), SL_OK);
	assert_int_equal(t.link[0][1].kind, LINK_PCIE_SWITCH);
	assert_int_equal(t.link[0][2].kind, LINK_PCIE_SWITCH);
	assert_int_equal(t.link[0][3].kind, LINK_PCIE_HOSTBRIDGE);
	assert_int_equal(t.link[1][2].kind, LINK_NUMA);
	assert_int_equal(t.link[0][4].kind, LINK_CROSS_SOCKET);
	assert_true(topo_pair_gbps(&t, 0, 1) > topo_pair_gbps(&t, 0, 2));
	assert_true(topo_pair_gbps(&t, 0, 2) > topo_pair_gbps(&t, 0, 3));
	assert_true(topo_pair_gbps(&t, 0, 3) > topo_pair_gbps(&t, 1, 2));
	assert_true(topo_pair_gbps(&t, 1, 2) > topo_pair_gbps(&t, 0, 4));
	assert_int_equal(t.numa[4], 1);
	assert_int_equal(t.nnics, 0);
}

static void test_parse_hccs(void **state)
{
	static const char text[] =
		"        GPU0    GPU1    GPU2    GPU3\n"
		"GPU0     X      HCCS    HCCS    SYS\n"
		"GPU1    HCCS     X      HCCS    SYS\n"
		"GPU2    HCCS    HCCS     X      SYS\n"
		"GPU3    SYS     SYS     SYS      X\n";
	struct node_type t;
	(void)state;
	init_type(&t, "ascend-910b", 4);
	assert_int_equal(topo_parse_matrix(&t, text, NULL), SL_OK);
	assert_int_equal(t.link[1][2].kind, LINK_HCCS);
	assert_int_equal(t.link[1][2].gbps, 56);
	assert_int_equal(t.link[0][3].kind, LINK_CROSS_SOCKET);
}

/* Replaces the first occurrence of from (after offset `after`) with to. */
static char *edit(const char *src, const char *after, const char *from, const char *to)
{
	const char *base = strstr(src, after);
	const char *at;
	size_t ls = strlen(src), lf = strlen(from), lt = strlen(to);
	char *out;
	assert_non_null(base);
	at = strstr(base, from);
	assert_non_null(at);
	out = malloc(ls - lf + lt + 1);
	assert_non_null(out);
	memcpy(out, src, (size_t)(at - src));
	memcpy(out + (at - src), to, lt);
	strcpy(out + (at - src) + lt, at + lf);
	return out;
}

struct bad_case {
	const char *after, *from, *to;
	enum sl_err err;
	int line, col;
	const char *msg;
};

static void test_parse_errors(void **state)
{
	static const struct bad_case cases[] = {
		/* GPU3's row, column GPU5 (line 5; columns are 8 wide). */
		{"\nGPU3", "NV12    NV12     X      NV12    NV12", "NV12    NV12     X      NV12    NVX ",
		 SL_EPARSE, 5, 49,
		 "unknown entry 'NVX' at row GPU3 column GPU5; expected X, NV<n>, PIX, PXB, PHB, NODE, SYS or HCCS"},
		{"\nGPU7", "GPU7", "GPU6", SL_EPARSE, 9, 1, "row GPU6 appears twice"},
		{"\nGPU7", "GPU7", "NICX", SL_EPARSE, 9, 1, "unknown row 'NICX'"},
		{"\nGPU2", "NV12    NV12     X", "NV12    NV8      X", SL_EPARSE, 4, 17,
		 "differs from row GPU1"},
		{"\nGPU2", " X ", "NV1", SL_EPARSE, 4, 0, "X belongs on the diagonal"},
		{"GPU0", "GPU7    NIC0", "GPU8    NIC0", SL_EPARSE, 1, 0,
		 "header column 'GPU8' out of order"},
		{"NUMA", "NUMA Affinity", "NUMA Affinityy", SL_EPARSE, 1, 0,
		 "unexpected header column 'NUMA'"},
		{"\nGPU1", "0-31,64-95      0", "0-31,64-95      0 7 7", SL_EPARSE, 3, 0,
		 "fields after"},
	};
	char *text = read_data("dgx-a100-nv12.txt");
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad_case *c = &cases[i];
		struct node_type t, before;
		struct sl_diag d;
		char *bad = edit(text, c->after, c->from, c->to);
		init_type(&t, "a100-sxm", 8);
		before = t;
		sl_diag_clear(&d);
		if (topo_parse_matrix(&t, bad, &d) != c->err)
			fail_msg("case %zu: expected error, got '%s'", i, d.msg);
		if (!strstr(d.msg, c->msg))
			fail_msg("case %zu: message '%s' lacks '%s'", i, d.msg, c->msg);
		assert_int_equal(d.line, c->line);
		if (c->col)
			assert_int_equal(d.col, c->col);
		assert_true(d.col > 0);
		/* A failed parse changes nothing. */
		assert_memory_equal(&t, &before, sizeof(t));
		free(bad);
	}
	free(text);
}

static void test_parse_errors_shape(void **state)
{
	struct node_type t;
	struct sl_diag d;
	char *text = read_data("dgx-a100-nv12.txt");
	char *cut, *big;
	(void)state;

	/* The row of GPU7 removed. */
	cut = edit(text, "\nGPU7", "GPU7", "GPU7");
	*strstr(cut, "\nGPU7") = 0;
	init_type(&t, "a100-sxm", 8);
	sl_diag_clear(&d);
	assert_int_equal(topo_parse_matrix(&t, cut, &d), SL_EPARSE);
	assert_non_null(strstr(d.msg, "expected 8 GPU rows, found 7"));
	assert_int_equal(d.line, 9);
	free(cut);

	/* An 8-GPU matrix for a 4-GPU type. */
	init_type(&t, "a100-sxm", 4);
	assert_int_equal(topo_parse_matrix(&t, text, &d), SL_EPARSE);
	assert_non_null(strstr(d.msg, "expected 4 GPU columns"));
	assert_int_equal(d.line, 1);

	/* No matrix at all. */
	init_type(&t, "a100-sxm", 8);
	assert_int_equal(topo_parse_matrix(&t, "No devices were found\n", &d), SL_EPARSE);
	assert_non_null(strstr(d.msg, "GPU0"));
	assert_int_equal(topo_parse_matrix(&t, "", &d), SL_EPARSE);
	assert_int_equal(topo_parse_matrix(&t, NULL, &d), SL_EINVAL);

	/* Over the bound. */
	big = malloc(TOPO_MATRIX_MAX_TEXT + 2);
	assert_non_null(big);
	memset(big, ' ', TOPO_MATRIX_MAX_TEXT + 1);
	big[TOPO_MATRIX_MAX_TEXT + 1] = 0;
	assert_int_equal(topo_parse_matrix(&t, big, &d), SL_ELIMIT);
	free(big);

	/* Too many NIC columns (more than the parser's bound of 64; more than
	 * TOPO_MAX_NICS are fine: test_discovery.c checks which are kept). */
	{
		char hdr[1024] = "GPU0";
		strcat(hdr, "");
		for (int i = 0; i < 65; i++) {
			char n[16];
			snprintf(n, sizeof(n), " NIC%d", i);
			strcat(hdr, n);
		}
		strcat(hdr, "\n");
		init_type(&t, "a100-sxm", 1);
		assert_int_equal(topo_parse_matrix(&t, hdr, &d), SL_ELIMIT);
	}

	/* Prose of more words than a matrix line may have fields, before and after
	 * the matrix, is tolerated (it once failed the parse); a matrix row that
	 * long is not. */
	{
		char words[800] = "#";
		for (int i = 0; i < 100; i++)
			strcat(words, " word");
		size_t n = strlen(words) * 2 + strlen(text) + 4;
		char *wrapped = malloc(n), *row;
		assert_non_null(wrapped);
		snprintf(wrapped, n, "%s\n%s\n%s\n", words, text, words);
		init_type(&t, "a100-sxm", 8);
		sl_diag_clear(&d);
		if (topo_parse_matrix(&t, wrapped, &d) != SL_OK)
			fail_msg("prose around the matrix refused: %d:%d %s", d.line, d.col, d.msg);
		free(wrapped);
		char longrow[600] = "GPU2";
		for (int i = 0; i < 90; i++)
			strcat(longrow, " NV12");
		row = edit(text, "\nGPU2", "GPU2", longrow);
		init_type(&t, "a100-sxm", 8);
		sl_diag_clear(&d);
		assert_int_equal(topo_parse_matrix(&t, row, &d), SL_ELIMIT);
		assert_non_null(strstr(d.msg, "more than 88 fields"));
		assert_int_equal(d.line, 4);
		free(row);
	}
	free(text);
}

/* format -> parse gives back the same relations for every built-in type. */
static void test_format_round_trip(void **state)
{
	(void)state;
	for (size_t i = 0; i < NBUILTIN; i++) {
		struct node_type src, back;
		struct sl_diag d;
		size_t need;
		char *buf;
		assert_int_equal(topo_builtin(builtin_names[i], &src), SL_OK);
		need = topo_format_matrix(&src, NULL, 0);
		assert_true(need > 100);
		buf = malloc(need + 1);
		assert_non_null(buf);
		assert_int_equal(topo_format_matrix(&src, buf, need + 1), need);
		assert_int_equal(strlen(buf), need);
		assert_non_null(strstr(buf, "GB/s per pair"));
		assert_int_equal(topo_type_init(&back, "back", src.gpu, src.ngpus, 1, 1, NULL,
						NULL), SL_OK);
		sl_diag_clear(&d);
		if (topo_parse_matrix(&back, buf, &d) != SL_OK)
			fail_msg("%s: %d:%d: %s\n%s", src.name, d.line, d.col, d.msg, buf);
		for (int a = 0; a < src.ngpus; a++) {
			assert_int_equal(back.numa[a], src.numa[a]);
			for (int b = 0; b < src.ngpus; b++) {
				assert_int_equal(back.link[a][b].kind, src.link[a][b].kind);
				assert_int_equal(back.link[a][b].gbps, src.link[a][b].gbps);
			}
		}
		assert_int_equal(back.nnics, src.nnics);
		for (int n = 0; n < src.nnics; n++) {
			assert_string_equal(back.nics[n].name, src.nics[n].name);
			assert_int_equal(back.nics[n].gpus, src.nics[n].gpus);
		}
		/* A short buffer is cut, terminated, and still reports the need. */
		assert_int_equal(topo_format_matrix(&src, buf, 10), need);
		assert_int_equal(strlen(buf), 9);
		free(buf);
	}
}

static void test_format_entries(void **state)
{
	char buf[8192];
	(void)state;
	struct node_type *t = get_builtin("hgx-h100-8");
	assert_true(topo_format_matrix(t, buf, sizeof(buf)) < sizeof(buf));
	assert_non_null(strstr(buf, "GPU0     X      NV18"));
	assert_non_null(strstr(buf, "NIC Legend:"));
	assert_non_null(strstr(buf, "NIC0: mlx5_0"));
	assert_non_null(strstr(buf, "900"));
	t = get_builtin("pcie-h100nvl-8");
	assert_true(topo_format_matrix(t, buf, sizeof(buf)) < sizeof(buf));
	assert_non_null(strstr(buf, "GPU0     X      NV12    NODE    NODE    SYS"));
	t = get_builtin("atlas-800-9000");
	assert_true(topo_format_matrix(t, buf, sizeof(buf)) < sizeof(buf));
	assert_non_null(strstr(buf, "GPU0     X      HCCS    HCCS    HCCS    SYS"));
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
		cmocka_unit_test(test_parse_data_files),
		cmocka_unit_test(test_parse_dgx1_mesh),
		cmocka_unit_test(test_parse_keeps_nic_speed),
		cmocka_unit_test(test_parse_mesh_not_switch),
		cmocka_unit_test(test_parse_hccs),
		cmocka_unit_test(test_parse_pcie_ranks),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_errors_shape),
		cmocka_unit_test(test_format_round_trip),
		cmocka_unit_test(test_format_entries),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

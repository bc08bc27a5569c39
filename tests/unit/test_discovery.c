/* test_discovery.c - discovery from real `nvidia-smi topo -m` outputs and
 * built-in types, its JSON form, the comparison with a declared type, the
 * built-in match and the NCCL topology XML. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testdata.h"

#include "discovery.h"
#include "nccl_topo.h"

static char *read_data(const char *name)
{
	char rel[256];
	snprintf(rel, sizeof(rel), "topo/%s", name);
	return testdata_read(rel, NULL);
}

struct nic_expect {
	const char *name;
	gpumask_t rail;
};

/* One pair per file checked by kind and count; the rest by the expectations. */
struct pair_expect {
	int a, b, kind, count;
};

struct file_expect {
	const char *file, *model; /* model NULL: reported as unknown */
	int ngpus;
	struct pair_expect pairs[4];
	bool all_same;            /* every pair like pairs[0] */
	int8_t numa[8];
	int nvlinks0;             /* GPU 0's NVLinks */
	int nnics;
	struct nic_expect nics[8];
	const char *builtin;      /* the built-in type it matches, or NULL */
};

static const struct file_expect files[] = {
	{"dgx-a100-nv12.txt", "a100-sxm", 8, {{0, 7, LINK_NVSWITCH, 12}}, true,
	 {0, 0, 0, 0, 1, 1, 1, 1}, 12, 8,
	 {{"mlx5_0", 0x03}, {"mlx5_1", 0x03}, {"mlx5_2", 0x0c}, {"mlx5_3", 0x0c},
	  {"mlx5_4", 0x30}, {"mlx5_5", 0x30}, {"mlx5_6", 0xc0}, {"mlx5_7", 0xc0}},
	 "hgx-a100-8"},
	{"hgx-h100-nv18.txt", "h100-sxm", 8, {{0, 1, LINK_NVSWITCH, 18}}, true,
	 {0, 0, 0, 0, 1, 1, 1, 1}, 18, 8,
	 {{"mlx5_0", 0x01}, {"mlx5_1", 0x02}, {"mlx5_2", 0x04}, {"mlx5_3", 0x08},
	  {"mlx5_4", 0x10}, {"mlx5_5", 0x20}, {"mlx5_6", 0x40}, {"mlx5_7", 0x80}},
	 "hgx-h100-8"},
	{"hgx-b300-nv18.txt", "b300", 8, {{2, 5, LINK_NVSWITCH, 18}}, true,
	 {0, 0, 0, 0, 1, 1, 1, 1}, 18, 8,
	 {{"mlx5_bond_0", 0x01}, {"mlx5_bond_1", 0x02}, {"mlx5_bond_2", 0x04},
	  {"mlx5_bond_3", 0x08}, {"mlx5_bond_4", 0x10}, {"mlx5_bond_5", 0x20},
	  {"mlx5_bond_6", 0x40}, {"mlx5_bond_7", 0x80}},
	 "hgx-b300-8"},
	/* V100: not in the catalog. Hybrid cube mesh, NV1/NV2: direct links. */
	{"dgx1-v100-nv1-nv2.txt", NULL, 8,
	 {{0, 3, LINK_NVLINK, 2}, {0, 1, LINK_NVLINK, 1}, {0, 5, LINK_CROSS_SOCKET, 0}}, false,
	 {0, 0, 0, 0, 0, 0, 0, 0}, 6, 4,
	 {{"mlx5_2", 0x30}, {"mlx5_0", 0x03}, {"mlx5_3", 0xc0}, {"mlx5_1", 0x0c}}, NULL},
	{"pcie-rtx4090-8.txt", NULL, 8, {{0, 4, LINK_CROSS_SOCKET, 0}}, false,
	 {0, 0, 0, 0, 1, 1, 1, 1}, 0, 2, {{"NIC0", 0x40}, {"NIC1", 0x40}}, NULL},
	/* Two NVLink-bridged PCIe GPUs and a third behind the NICs' host bridge. */
	{"pcie-3gpu-nv4-phb-nics.txt", NULL, 3,
	 {{0, 1, LINK_NVLINK, 4}, {0, 2, LINK_NUMA, 0}, {1, 2, LINK_NUMA, 0}}, false,
	 {1, 1, 1}, 4, 2, {{"mlx5_0", 0x04}, {"mlx5_1", 0x04}}, NULL},
	{"pcie-8gpu-pix-phb-sys.txt", NULL, 8,
	 {{0, 1, LINK_PCIE_SWITCH, 0}, {0, 2, LINK_PCIE_HOSTBRIDGE, 0},
	  {0, 4, LINK_CROSS_SOCKET, 0}, {6, 7, LINK_PCIE_SWITCH, 0}}, false,
	 {0, 0, 0, 0, 1, 1, 1, 1}, 0, 0, {{NULL, 0}}, NULL},
	/* L40S without PCIe switches: NODE inside a socket, one far NIC. */
	{"pcie-l40s-8-nic.txt", "l40s", 8,
	 {{0, 1, LINK_NUMA, 0}, {0, 4, LINK_CROSS_SOCKET, 0}, {5, 7, LINK_NUMA, 0}}, false,
	 {0, 0, 0, 0, 1, 1, 1, 1}, 0, 1, {{"NIC0", 0xff}}, NULL},
};

static void test_real_outputs(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const struct file_expect *x = &files[i];
		struct discovery disc;
		struct node_type bt;
		struct sl_diag d;
		char *text = read_data(x->file);
		const struct node_type *t = &disc.type;

		sl_diag_clear(&d);
		if (discovery_from_matrix(&disc, x->model, text, &d) != SL_OK)
			fail_msg("%s: %d:%d: %s", x->file, d.line, d.col, d.msg);
		free(text);
		assert_string_equal(disc.source, "nvidia-smi");
		assert_int_equal(t->ngpus, x->ngpus);
		if (x->model) {
			assert_non_null(t->gpu);
			assert_string_equal(t->gpu->name, x->model);
		} else {
			assert_null(t->gpu);
		}
		for (int p = 0; p < 4 && x->pairs[p].kind; p++) {
			const struct pair_expect *pe = &x->pairs[p];
			if (t->link[pe->a][pe->b].kind != pe->kind)
				fail_msg("%s: pair (%d, %d) is %s, expected %s", x->file, pe->a, pe->b,
					 topo_link_kind_name((enum link_kind)t->link[pe->a][pe->b].kind),
					 topo_link_kind_name((enum link_kind)pe->kind));
			assert_int_equal(t->link[pe->a][pe->b].count, pe->count);
			assert_int_equal(t->link[pe->b][pe->a].kind, pe->kind);
			/* An unknown model has kinds and counts, never invented GB/s. */
			assert_true(x->model ? t->link[pe->a][pe->b].gbps > 0
					     : t->link[pe->a][pe->b].gbps == 0);
		}
		for (int a = 0; a < x->ngpus; a++) {
			assert_int_equal(t->numa[a], x->numa[a]);
			for (int b = 0; b < x->ngpus; b++)
				if (a != b && x->all_same)
					assert_memory_equal(&t->link[a][b],
							    &t->link[x->pairs[0].a][x->pairs[0].b],
							    sizeof(struct topo_link));
		}
		assert_int_equal(disc.gpus[0].nvlinks_up, x->nvlinks0);
		assert_int_equal(disc.gpus[0].nvswitch, x->all_same);
		assert_int_equal(t->nnics, x->nnics);
		for (int n = 0; n < x->nnics; n++) {
			assert_string_equal(t->nics[n].name, x->nics[n].name);
			assert_int_equal(t->nics[n].gpus, x->nics[n].rail);
		}
		if (x->builtin) {
			assert_int_equal(discovery_match_builtin(&disc, &bt), SL_OK);
			assert_string_equal(bt.name, x->builtin);
		} else {
			assert_int_equal(discovery_match_builtin(&disc, &bt), SL_ENOTFOUND);
		}
	}
}

/* Every pair NV18 on a GPU the catalog does not know is still NVSwitch (no GPU
 * has 7 x 18 links); four GPUs meshed NV4 use 12 links: direct NVLink. */
static void test_nv_everywhere_is_nvswitch(void **state)
{
	char text[8192], *p = text;
	struct discovery disc;
	(void)state;

	p += sprintf(p, "\t");
	for (int b = 0; b < 16; b++)
		p += sprintf(p, "GPU%d\t", b);
	p += sprintf(p, "CPU Affinity\tNUMA Affinity\n");
	for (int a = 0; a < 16; a++) {
		p += sprintf(p, "GPU%d\t", a);
		for (int b = 0; b < 16; b++)
			p += sprintf(p, "%s\t", a == b ? " X " : "NV6");
		p += sprintf(p, "%s\t%d\n", a < 8 ? "0-23" : "24-47", a < 8 ? 0 : 1);
	}
	/* A synthetic 16-GPU DGX-2-shaped matrix (NVSwitch, NV6 everywhere). */
	assert_int_equal(discovery_from_matrix(&disc, NULL, text, NULL), SL_OK);
	assert_int_equal(disc.type.ngpus, 16);
	assert_int_equal(disc.type.link[0][15].kind, LINK_NVSWITCH);
	assert_int_equal(disc.type.link[7][8].kind, LINK_NVSWITCH);
	assert_int_equal(disc.type.numa[15], 1);
	assert_int_equal(disc.gpus[9].nvlinks_up, 6);
	assert_true(disc.gpus[9].nvswitch);

	static const char mesh[] =
		"\tGPU0\tGPU1\tGPU2\tGPU3\n"
		"GPU0\t X \tNV4\tNV4\tNV4\n"
		"GPU1\tNV4\t X \tNV4\tNV4\n"
		"GPU2\tNV4\tNV4\t X \tNV4\n"
		"GPU3\tNV4\tNV4\tNV4\t X \n";
	assert_int_equal(discovery_from_matrix(&disc, NULL, mesh, NULL), SL_OK);
	assert_int_equal(disc.type.link[0][3].kind, LINK_NVLINK);
	assert_int_equal(disc.gpus[0].nvlinks_up, 12);
	assert_false(disc.gpus[0].nvswitch);

	/* With NV18 everywhere the same 4 GPUs would need 54 links each. */
	char nv18[sizeof(mesh) + 64];
	size_t j = 0;
	for (size_t i = 0; mesh[i]; i++) {
		nv18[j++] = mesh[i];
		if (mesh[i] == 'V' && mesh[i + 1] == '4') {
			nv18[j++] = '1';
			nv18[j++] = '8';
			i++;
		}
	}
	nv18[j] = 0;
	assert_int_equal(discovery_from_matrix(&disc, "h100-sxm", nv18, NULL), SL_OK);
	assert_int_equal(disc.type.link[1][2].kind, LINK_NVSWITCH);
	assert_int_equal(disc.type.link[1][2].gbps, 900);
}

/* Real servers list more NICs than a node keeps (18 on some HGX H100 hosts):
 * the TOPO_MAX_NICS nearest to a GPU are kept, in column order. */
static void test_many_nics(void **state)
{
	char text[4096], *p = text;
	struct discovery disc;
	struct sl_diag d;
	(void)state;

	p += sprintf(p, "\tGPU0\tGPU1");
	for (int i = 0; i < 18; i++)
		p += sprintf(p, "\tNIC%d", i);
	p += sprintf(p, "\tCPU Affinity\tNUMA Affinity\n");
	for (int g = 0; g < 2; g++) {
		p += sprintf(p, "GPU%d\t%s\t%s", g, g ? "NV18" : " X ", g ? " X " : "NV18");
		for (int i = 0; i < 18; i++)
			p += sprintf(p, "\t%s", i == 16 && g == 0 ? "PIX" : i == 17 && g == 1 ? "NODE"
									   : "SYS");
		p += sprintf(p, "\t0-7\t0\n");
	}
	p += sprintf(p, "\nNIC Legend:\n\n  NIC16: mlx5_0\n  NIC17: mlx5_1\n");
	sl_diag_clear(&d);
	if (discovery_from_matrix(&disc, NULL, text, &d) != SL_OK)
		fail_msg("%d:%d: %s", d.line, d.col, d.msg);
	assert_int_equal(disc.type.nnics, TOPO_MAX_NICS);
	assert_string_equal(disc.type.nics[0].name, "NIC0");
	assert_string_equal(disc.type.nics[13].name, "NIC13");
	assert_string_equal(disc.type.nics[14].name, "mlx5_0");
	assert_int_equal(disc.type.nics[14].gpus, 0x1);
	assert_string_equal(disc.type.nics[15].name, "mlx5_1");
	assert_int_equal(disc.type.nics[15].gpus, 0x2);
}

static void test_matrix_errors(void **state)
{
	struct discovery disc;
	struct sl_diag d;
	char text[16384], *p = text;
	(void)state;

	sl_diag_clear(&d);
	assert_int_equal(discovery_from_matrix(&disc, NULL, "No devices were found\n", &d),
			 SL_EPARSE);
	assert_non_null(strstr(d.msg, "GPU0"));
	assert_int_equal(discovery_from_matrix(&disc, "x200", "GPU0\n", &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "x200"));
	assert_int_equal(discovery_from_matrix(&disc, NULL, NULL, &d), SL_EINVAL);
	/* More GPUs than a node may have. */
	for (int b = 0; b < TOPO_MAX_GPUS + 1; b++)
		p += sprintf(p, "\tGPU%d", b);
	p += sprintf(p, "\n");
	assert_int_equal(discovery_from_matrix(&disc, NULL, text, &d), SL_ELIMIT);
	assert_non_null(strstr(d.msg, "16"));

	/* A failed parse leaves the previous discovery as it was. */
	struct node_type t;
	struct discovery keep;
	assert_int_equal(topo_builtin("hgx-h100-8", &t), SL_OK);
	assert_int_equal(discovery_from_type(&disc, &t, NULL), SL_OK);
	keep = disc;
	assert_int_equal(discovery_from_matrix(&disc, NULL, "\tGPU0\tGPU1\nGPU0\t X \tNV4\n", &d),
			 SL_EPARSE);
	assert_memory_equal(&disc, &keep, sizeof(disc));
}

static void sim(const char *type, struct discovery *disc)
{
	struct node_type t;
	assert_int_equal(topo_builtin(type, &t), SL_OK);
	assert_int_equal(discovery_from_type(disc, &t, NULL), SL_OK);
}

static void round_trip(const struct discovery *disc)
{
	struct discovery back;
	struct sl_diag d;
	json_t *j = discovery_to_json(disc), *j2;

	assert_non_null(j);
	sl_diag_clear(&d);
	if (discovery_from_json(j, &back, &d) != SL_OK)
		fail_msg("round trip refused: %s", d.msg);
	j2 = discovery_to_json(&back);
	assert_non_null(j2);
	if (!json_equal(j, j2)) {
		char *a = json_dumps(j, JSON_COMPACT), *b = json_dumps(j2, JSON_COMPACT);
		fail_msg("round trip differs:\n%s\n%s", a, b);
	}
	assert_memory_equal(back.type.link, disc->type.link, sizeof(back.type.link));
	assert_int_equal(back.type.nnics, disc->type.nnics);
	json_decref(j);
	json_decref(j2);
}

static void test_json_round_trip(void **state)
{
	struct discovery disc;
	(void)state;

	for (int i = 0; i < topo_builtin_count(); i++) {
		sim(topo_builtin_name(i), &disc);
		round_trip(&disc);
	}
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *text = read_data(files[i].file);
		assert_int_equal(discovery_from_matrix(&disc, files[i].model, text, NULL), SL_OK);
		free(text);
		round_trip(&disc);
	}
	/* The documented shape. */
	sim("hgx-h100-8", &disc);
	snprintf(disc.gpus[2].uuid, sizeof(disc.gpus[2].uuid), "GPU-8c1e");
	snprintf(disc.driver, sizeof(disc.driver), "550.54.15");
	json_t *j = discovery_to_json(&disc);
	assert_string_equal(json_string_value(json_object_get(j, "model")), "h100-sxm");
	assert_string_equal(json_string_value(json_object_get(j, "source")), "simulate");
	json_t *g2 = json_array_get(json_object_get(j, "gpus"), 2);
	assert_int_equal(json_integer_value(json_object_get(g2, "index")), 2);
	assert_int_equal(json_integer_value(json_object_get(g2, "numa")), 0);
	assert_string_equal(json_string_value(json_object_get(g2, "uuid")), "GPU-8c1e");
	assert_int_equal(json_integer_value(json_object_get(g2, "memory_mib")), 80 * 1024);
	assert_int_equal(json_integer_value(json_object_get(g2, "nvlinks")), 18);
	json_t *links = json_object_get(j, "links");
	assert_int_equal(json_array_size(links), 28);
	json_t *l0 = json_array_get(links, 0);
	assert_string_equal(json_string_value(json_object_get(l0, "kind")), "nvswitch");
	assert_int_equal(json_integer_value(json_object_get(l0, "gbps")), 900);
	json_t *n3 = json_array_get(json_object_get(j, "nics"), 3);
	assert_string_equal(json_string_value(json_object_get(n3, "name")), "mlx5_3");
	assert_int_equal(json_integer_value(json_array_get(json_object_get(n3, "gpus"), 0)), 3);
	json_decref(j);
}

/* Each row edits a valid document (JSON text with %s replaced) and names the
 * field the error must mention. */
static void test_json_rejects(void **state)
{
	static const char ok[] =
		"{\"source\": \"nvml\", \"model\": \"h100-sxm\", \"driver\": \"550\", \"clique\": \"\","
		" \"gpus\": [{\"index\": 0, \"numa\": 0, \"uuid\": \"GPU-a\", \"memory_mib\": 81559,"
		" \"nvlinks\": 18}, {\"index\": 1, \"numa\": 1, \"nvswitch\": true}],"
		" \"links\": [{\"gpus\": [0, 1], \"kind\": \"nvswitch\", \"count\": 18, \"gbps\": 900}],"
		" \"nics\": [{\"name\": \"mlx5_0\", \"gbps\": 400, \"gpus\": [0]}]}";
	static const struct {
		const char *from, *to, *field;
		enum sl_err e;
	} bad[] = {
		{"\"model\": \"h100-sxm\", ", "", "model", SL_EINVAL},
		{"h100-sxm", "x100", "x100", SL_EINVAL},
		{"\"source\"", "\"colour\"", "colour", SL_EINVAL},
		{"\"index\": 1", "\"index\": 2", "gpus[1]", SL_EINVAL},
		{"\"numa\": 1", "\"numa\": -1", "gpus[1]", SL_EINVAL},
		{"\"numa\": 1", "\"numa\": \"one\"", "numa", SL_EINVAL},
		{"\"GPU-a\"", "\"GPU-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"", "uuid", SL_ELIMIT},
		{"81559", "99999999999", "memory_mib", SL_EINVAL},
		{"\"nvlinks\": 18", "\"nvlinks\": 65", "nvlinks", SL_EINVAL},
		{"\"nvswitch\": true", "\"nvswitch\": 1", "nvswitch", SL_EINVAL},
		{"[0, 1]", "[1, 0]", "links[0]", SL_EINVAL},
		{"[0, 1]", "[0, 2]", "links[0]", SL_EINVAL},
		{"\"kind\": \"nvswitch\"", "\"kind\": \"warp\"", "links[0].kind", SL_EINVAL},
		{"\"kind\": \"nvswitch\"", "\"kind\": \"self\"", "links[0].kind", SL_EINVAL},
		{"\"kind\": \"nvswitch\", \"count\": 18", "\"kind\": \"numa\", \"count\": 2", "count",
		 SL_EINVAL},
		{"\"kind\": \"nvswitch\", \"count\": 18", "\"kind\": \"nvlink\"", "count", SL_EINVAL},
		{"\"gbps\": 900", "\"gbps\": 0", "gbps", SL_EINVAL},
		{"\"gbps\": 900", "\"gbps\": 70000", "gbps", SL_EINVAL},
		{"\"links\": [{\"gpus\": [0, 1], \"kind\": \"nvswitch\", \"count\": 18, \"gbps\": 900}]",
		 "\"links\": []", "links", SL_EINVAL},
		{"\"links\": [{", "\"links\": [{\"gpus\": [0, 1], \"kind\": \"numa\", \"gbps\": 9}, {",
		 "links", SL_ELIMIT},
		{"\"gpus\": [0]}", "\"gpus\": [2]}", "nics[0]", SL_EINVAL},
		{"\"name\": \"mlx5_0\"", "\"name\": \"\"", "nics[0]", SL_EINVAL},
		{"\"name\": \"mlx5_0\"", "\"name\": \"mlx5_0_is_a_very_long_nic_name_xx\"", "nics[0]",
		 SL_ELIMIT},
	};
	struct discovery disc, keep;
	json_error_t je;
	(void)state;

	json_t *good = json_loads(ok, 0, &je);
	assert_non_null(good);
	assert_int_equal(discovery_from_json(good, &disc, NULL), SL_OK);
	assert_int_equal(disc.type.ngpus, 2);
	assert_int_equal(disc.type.link[1][0].kind, LINK_NVSWITCH);
	assert_int_equal(disc.gpus[0].mem_mib, 81559);
	assert_int_equal(disc.gpus[1].nvlinks_up, -1);
	assert_true(disc.gpus[1].nvswitch);
	assert_int_equal(disc.type.nics[0].gpus, 1);
	json_decref(good);
	keep = disc;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[2048];
		const char *at = strstr(ok, bad[i].from);
		struct sl_diag d;
		json_t *o;
		assert_non_null(at);
		snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - ok), ok, bad[i].to,
			 at + strlen(bad[i].from));
		o = json_loads(text, 0, &je);
		if (!o)
			fail_msg("row %zu: test JSON does not parse: %s", i, je.text);
		sl_diag_clear(&d);
		enum sl_err e = discovery_from_json(o, &disc, &d);
		json_decref(o);
		if (e != bad[i].e || !strstr(d.msg, bad[i].field))
			fail_msg("row %zu: got %s '%s'; expected %s naming %s", i, sl_err_code(e),
				 d.msg, sl_err_code(bad[i].e), bad[i].field);
		assert_memory_equal(&disc, &keep, sizeof(disc)); /* unchanged */
	}

	/* More GPUs than a node may have. */
	json_t *big = json_pack("{s:s,s:[]}", "model", "h100-sxm", "gpus");
	for (int g = 0; g < TOPO_MAX_GPUS + 1; g++)
		json_array_append_new(json_object_get(big, "gpus"),
				      json_pack("{s:i,s:i}", "index", g, "numa", 0));
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(discovery_from_json(big, &disc, &d), SL_ELIMIT);
	assert_non_null(strstr(d.msg, "gpus"));
	json_decref(big);
	big = json_pack("{s:s,s:i,s:[]}", "model", "h100-sxm", "gpus", 5, "links");
	assert_int_equal(discovery_from_json(big, &disc, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "gpus"));
	json_decref(big);
	assert_int_equal(discovery_from_json(NULL, &disc, &d), SL_EINVAL);
	json_t *arr = json_array();
	assert_int_equal(discovery_from_json(arr, &disc, &d), SL_EINVAL);
	json_decref(arr);
}

/* Hostile input: random byte edits of valid documents and matrices must be
 * refused or read, never crash, leak or read out of bounds (ASan build). */
static void test_mutations(void **state)
{
	static const char alphabet[] = "{}[],:\"0123456789-.abcdefghijklmnopqrstuvwxyz \t\nXNV";
	struct discovery disc;
	uint32_t seed = 12345;
	char *orig, *text, *m;
	json_t *j;
	(void)state;

	sim("pcie-h100nvl-8", &disc);
	j = discovery_to_json(&disc);
	orig = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	assert_non_null(orig);
	text = read_data("dgx-a100-nv12.txt");
	size_t olen = strlen(orig), tlen = strlen(text);
	for (int round = 0; round < 3000; round++) {
		bool matrix = round % 2;
		const char *src = matrix ? text : orig;
		size_t len = matrix ? tlen : olen;
		m = malloc(len + 1);
		assert_non_null(m);
		memcpy(m, src, len + 1);
		for (int k = 0; k < 1 + round % 4; k++) {
			seed = seed * 1103515245u + 12345u;
			size_t at = (seed >> 8) % len;
			seed = seed * 1103515245u + 12345u;
			m[at] = alphabet[(seed >> 8) % (sizeof(alphabet) - 1)];
		}
		if (matrix) {
			if (discovery_from_matrix(&disc, round % 3 ? "a100-sxm" : NULL, m, NULL) ==
			    SL_OK) {
				char xml[8192];
				assert_true(nccl_topo_xml(&disc, 0x0f, NULL, 0, xml, sizeof(xml)) > 0);
			}
		} else {
			json_t *o = json_loads(m, 0, NULL);
			if (o && discovery_from_json(o, &disc, NULL) == SL_OK) {
				json_t *back = discovery_to_json(&disc);
				assert_non_null(back);
				json_decref(back);
				char xml[4096];
				(void)nccl_topo_xml(&disc, 0xff, NULL, 0, xml, sizeof(xml));
			}
			json_decref(o);
		}
		free(m);
	}
	free(orig);
	free(text);
}

static void test_weaker(void **state)
{
	struct discovery disc;
	struct node_type h100, nvl;
	char why[DISC_REASON_MAX];
	(void)state;

	assert_int_equal(topo_builtin("hgx-h100-8", &h100), SL_OK);
	assert_int_equal(topo_builtin("pcie-h100nvl-8", &nvl), SL_OK);

	sim("hgx-h100-8", &disc);
	assert_false(discovery_weaker(&disc, &h100, why, sizeof(why)));
	assert_string_equal(why, "");
	/* NVML reports less than the published 80 GB; that is not smaller. */
	disc.gpus[5].mem_mib = 81559;
	assert_false(discovery_weaker(&disc, &h100, why, sizeof(why)));

	/* A lost NVLink. */
	disc.gpus[3].nvlinks_up = 17;
	assert_true(discovery_weaker(&disc, &h100, why, sizeof(why)));
	assert_string_equal(why, "GPU 3 has 17 NVLink links up; hgx-h100-8 has 18");

	/* A GPU whose links are all down reaches the others through PCIe only. */
	sim("hgx-h100-8", &disc);
	for (int b = 0; b < 8; b++)
		if (b != 3)
			assert_int_equal(topo_set_link(&disc.type, 3, b, LINK_NUMA, 0, 0, NULL), SL_OK);
	disc.gpus[3].nvlinks_up = -1; /* as a matrix would not say */
	assert_true(discovery_weaker(&disc, &h100, why, sizeof(why)));
	assert_string_equal(why, "GPU 0 has no NVLink to GPU 3 (numa); hgx-h100-8 has nvswitch");
	disc.gpus[3].nvlinks_up = 0;
	assert_true(discovery_weaker(&disc, &h100, why, sizeof(why)));
	assert_string_equal(why, "GPU 3 has 0 NVLink links up; hgx-h100-8 has 18");

	/* A missing GPU. */
	sim("hgx-h100-8", &disc);
	disc.type.ngpus = 7;
	assert_true(discovery_weaker(&disc, &h100, why, sizeof(why)));
	assert_string_equal(why, "found 7 GPUs; hgx-h100-8 has 8");

	/* Smaller memory. */
	sim("hgx-h100-8", &disc);
	disc.gpus[6].mem_mib = 40960;
	assert_true(discovery_weaker(&disc, &h100, why, sizeof(why)));
	assert_string_equal(why, "GPU 6 has 40960 MiB of memory; hgx-h100-8 has 80 GiB per GPU");

	/* Another model, or none the catalog knows. */
	sim("hgx-h800-8", &disc);
	assert_true(discovery_weaker(&disc, &h100, why, sizeof(why)));
	assert_non_null(strstr(why, "GPU model is h800-sxm"));
	disc.type.gpu = NULL;
	snprintf(disc.gpus[0].name, sizeof(disc.gpus[0].name), "Tesla V100-SXM2-32GB");
	assert_true(discovery_weaker(&disc, &h100, why, sizeof(why)));
	assert_string_equal(why, "GPU model is unknown (\"Tesla V100-SXM2-32GB\"); hgx-h100-8 "
			    "has h100-sxm");

	/* A bridge with one link fewer. */
	sim("pcie-h100nvl-8", &disc);
	assert_false(discovery_weaker(&disc, &nvl, why, sizeof(why)));
	disc.type.link[4][5].count = disc.type.link[5][4].count = 11;
	disc.gpus[4].nvlinks_up = disc.gpus[5].nvlinks_up = -1;
	assert_true(discovery_weaker(&disc, &nvl, why, sizeof(why)));
	assert_string_equal(why, "GPUs 4 and 5 are linked by nvlink x11; pcie-h100nvl-8 has "
			    "nvlink x12");

	assert_true(discovery_weaker(NULL, &h100, why, sizeof(why)));
}

static void test_match_builtin(void **state)
{
	struct discovery disc;
	struct node_type t;
	(void)state;

	for (int i = 0; i < topo_builtin_count(); i++) {
		sim(topo_builtin_name(i), &disc);
		assert_int_equal(discovery_match_builtin(&disc, &t), SL_OK);
		assert_string_equal(t.name, topo_builtin_name(i));
	}
	/* PHB where the type says NUMA is stronger: still the same type. */
	sim("pcie-h100nvl-8", &disc);
	assert_int_equal(topo_set_link(&disc.type, 0, 2, LINK_PCIE_HOSTBRIDGE, 0, 0, NULL), SL_OK);
	assert_int_equal(discovery_match_builtin(&disc, &t), SL_OK);
	assert_string_equal(t.name, "pcie-h100nvl-8");
	/* A missing bridge is another machine. */
	assert_int_equal(topo_set_link(&disc.type, 2, 3, LINK_PCIE_SWITCH, 0, 0, NULL), SL_OK);
	assert_int_equal(discovery_match_builtin(&disc, &t), SL_ENOTFOUND);
	/* Seven GPUs of an HGX. */
	sim("hgx-h100-8", &disc);
	disc.type.ngpus = 7;
	assert_int_equal(discovery_match_builtin(&disc, &t), SL_ENOTFOUND);
}

/* ---- NCCL XML ---- */

static int count(const char *s, const char *what)
{
	int n = 0;
	for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
		n++;
	return n;
}

/* A tiny well-formedness check: every element closes in order, attributes are
 * name="value", and there is one root <system>. */
static void check_xml(const char *s)
{
	char stack[16][16];
	int depth = 0, roots = 0;

	while (*s) {
		if (*s != '<') {
			assert_true(*s == ' ' || *s == '\n');
			s++;
			continue;
		}
		s++;
		bool closing = *s == '/';
		if (closing)
			s++;
		char name[16];
		int n = 0;
		while (*s && *s != ' ' && *s != '>' && *s != '/') {
			assert_true(n < 15);
			name[n++] = *s++;
		}
		name[n] = 0;
		assert_true(n > 0);
		if (closing) {
			assert_true(depth > 0);
			assert_string_equal(stack[depth - 1], name);
			depth--;
			assert_true(*s == '>');
			s++;
			continue;
		}
		while (*s == ' ') {
			s++;
			while (*s && *s != '=')
				assert_true(*s++ != '>');
			assert_true(s[0] == '=' && s[1] == '"');
			s += 2;
			while (*s && *s != '"')
				assert_true(*s++ != '<');
			assert_true(*s == '"');
			s++;
		}
		if (s[0] == '/' && s[1] == '>') {
			s += 2;
			continue;
		}
		assert_true(*s == '>');
		s++;
		if (depth == 0)
			roots++;
		assert_true(depth < 16);
		snprintf(stack[depth++], sizeof(stack[0]), "%s", name);
	}
	assert_int_equal(depth, 0);
	assert_int_equal(roots, 1);
}

static char *xml_of(const struct discovery *disc, gpumask_t gpus, const char *const *nics,
		    int nnics)
{
	size_t n = nccl_topo_xml(disc, gpus, nics, nnics, NULL, 0);
	char *buf = malloc(n + 1);
	assert_non_null(buf);
	assert_int_equal(nccl_topo_xml(disc, gpus, nics, nnics, buf, n + 1), n);
	assert_int_equal(strlen(buf), n);
	check_xml(buf);
	return buf;
}

static void test_nccl_xml(void **state)
{
	static const char *const nics[] = {"mlx5_0", "mlx5_2", "mlx5_9"};
	struct discovery disc;
	char *x, small[40];
	(void)state;

	sim("hgx-h100-8", &disc);
	x = xml_of(&disc, 0x0f, nics, 3);
	assert_non_null(strstr(x, "<system version=\"1\">"));
	assert_int_equal(count(x, "<gpu "), 4);
	assert_int_equal(count(x, "<net "), 2);
	assert_non_null(strstr(x, "name=\"mlx5_0\""));
	assert_non_null(strstr(x, "name=\"mlx5_2\""));
	assert_null(strstr(x, "mlx5_1"));
	assert_null(strstr(x, "mlx5_9"));
	assert_int_equal(count(x, "<cpu numaid=\"0\""), 1);
	assert_int_equal(count(x, "<cpu "), 1);
	/* NVSwitch as NCCL dumps it: one bridge-class target per GPU. */
	assert_int_equal(count(x, "target=\"fffffff:ff:ff.0\" count=\"18\" tclass=\"0x068000\""), 4);
	assert_int_equal(count(x, "sm=\"90\""), 4);
	assert_non_null(strstr(x, "dev=\"3\""));
	assert_null(strstr(x, "dev=\"4\""));
	assert_non_null(strstr(x, "speed=\"400000\""));
	free(x);

	/* GPUs from both sockets, no NICs; known bus ids are used in NCCL's form. */
	snprintf(disc.gpus[5].bus_id, sizeof(disc.gpus[5].bus_id), "00000000:9A:00.0");
	x = xml_of(&disc, 0x21, NULL, 0);
	assert_int_equal(count(x, "<gpu "), 2);
	assert_int_equal(count(x, "<cpu "), 2);
	assert_int_equal(count(x, "<net "), 0);
	assert_non_null(strstr(x, "busid=\"0000:9a:00.0\""));
	/* dev is the NVML index, rank the position among the chosen. */
	assert_non_null(strstr(x, "<gpu dev=\"5\" sm=\"90\" rank=\"1\""));
	free(x);

	/* Bridged pairs: direct NVLinks only to chosen peers. */
	sim("pcie-h100nvl-8", &disc);
	x = xml_of(&disc, 0x07, (const char *const[]){"mlx5_0"}, 1);
	assert_int_equal(count(x, "<gpu "), 3);
	assert_int_equal(count(x, "tclass=\"0x030200\""), 2); /* 0->1 and 1->0 */
	assert_int_equal(count(x, "count=\"12\""), 2);
	assert_int_equal(count(x, "0x068000"), 0);
	free(x);

	/* An unknown model still gives a usable file. */
	char *text = read_data("dgx1-v100-nv1-nv2.txt");
	assert_int_equal(discovery_from_matrix(&disc, NULL, text, NULL), SL_OK);
	free(text);
	x = xml_of(&disc, 0xff, (const char *const[]){"mlx5_1"}, 1);
	assert_int_equal(count(x, "<gpu "), 8);
	assert_int_equal(count(x, "<net "), 1);
	assert_null(strstr(x, " speed=")); /* unknown: left to NCCL */
	assert_null(strstr(x, "sm=")); /* an unknown model: left to NCCL */
	free(x);

	/* Truncation: like snprintf. */
	sim("hgx-h100-8", &disc);
	size_t n = nccl_topo_xml(&disc, 0xff, NULL, 0, small, sizeof(small));
	assert_true(n > sizeof(small));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_int_equal(nccl_topo_xml(NULL, 1, NULL, 0, small, sizeof(small)), 0);
	assert_string_equal(small, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_outputs),
		cmocka_unit_test(test_nv_everywhere_is_nvswitch),
		cmocka_unit_test(test_many_nics),
		cmocka_unit_test(test_matrix_errors),
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_json_rejects),
		cmocka_unit_test(test_mutations),
		cmocka_unit_test(test_weaker),
		cmocka_unit_test(test_match_builtin),
		cmocka_unit_test(test_nccl_xml),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_catalog.c - the GPU catalog: every model of DESIGN.md §3 is present
 * with facts that hang together, and lookups behave. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "catalog.h"

struct expect {
	const char *name;
	const char *vendor;
	int mem_gib;
	enum ic_kind ic;
	int nvlink_gen, ic_gbps, link_gbps, pcie_gen, domain_gpus;
};

/* The figures the issue and the vendors' datasheets fix. */
static const struct expect expected[] = {
	{"h100-sxm", "nvidia", 80, IC_NVLINK, 4, 900, 50, 5, 0},
	{"h200-sxm", "nvidia", 141, IC_NVLINK, 4, 900, 50, 5, 0},
	{"a100-sxm", "nvidia", 80, IC_NVLINK, 3, 600, 50, 4, 0},
	{"a800-sxm", "nvidia", 80, IC_NVLINK, 3, 400, 50, 4, 0},
	{"h800-sxm", "nvidia", 80, IC_NVLINK, 4, 400, 50, 5, 0},
	{"h100-nvl", "nvidia", 94, IC_NVLINK, 4, 600, 50, 5, 0},
	{"l40s", "nvidia", 48, IC_NONE, 0, 0, 0, 4, 0},
	{"b200", "nvidia", 180, IC_NVLINK, 5, 1800, 100, 5, 0},
	{"b300", "nvidia", 288, IC_NVLINK, 5, 1800, 100, 6, 0},
	{"gb200", "nvidia", 186, IC_NVLINK, 5, 1800, 100, 5, 72},
	{"gb300", "nvidia", 288, IC_NVLINK, 5, 1800, 100, 6, 72},
	{"ascend-910b", "huawei", 64, IC_HCCS, 0, 392, 56, 4, 0},
	{"ascend-910", "huawei", 32, IC_HCCS, 0, 180, 60, 4, 0},
};

#define NEXPECTED (sizeof(expected) / sizeof(expected[0]))

static void test_every_model_present(void **state)
{
	(void)state;
	assert_int_equal(catalog_gpu_count(), NEXPECTED);
	for (size_t i = 0; i < NEXPECTED; i++) {
		const struct expect *x = &expected[i];
		const struct gpu_model *m = catalog_gpu_find(x->name);
		assert_non_null(m);
		assert_string_equal(m->name, x->name);
		assert_string_equal(m->vendor, x->vendor);
		assert_int_equal(m->mem_gib, x->mem_gib);
		assert_int_equal(m->ic, x->ic);
		assert_int_equal(m->nvlink_gen, x->nvlink_gen);
		assert_int_equal(m->ic_gbps, x->ic_gbps);
		assert_int_equal(m->link_gbps, x->link_gbps);
		assert_int_equal(m->pcie_gen, x->pcie_gen);
		assert_int_equal(m->domain_gpus, x->domain_gpus);
	}
}

/* Facts every row must satisfy whatever its numbers. */
static void test_facts_consistent(void **state)
{
	(void)state;
	for (size_t i = 0; i < catalog_gpu_count(); i++) {
		const struct gpu_model *m = catalog_gpu_at(i);
		assert_non_null(m);
		assert_true(m->mem_gib >= 16 && m->mem_gib <= 512);
		assert_true(m->bf16_tflops >= 100 && m->bf16_tflops <= 5000);
		assert_true(catalog_pcie_gbps(m->pcie_gen) > 0);
		if (m->ic == IC_NONE) {
			assert_int_equal(m->ic_gbps, 0);
			assert_int_equal(m->link_gbps, 0);
			assert_int_equal(m->nvlink_gen, 0);
		} else {
			/* The per-GPU figure is a whole number of links. */
			assert_true(m->link_gbps > 0);
			assert_int_equal(m->ic_gbps % m->link_gbps, 0);
			assert_true(m->ic_gbps > catalog_pcie_gbps(m->pcie_gen));
			assert_int_equal(m->nvlink_gen != 0, m->ic == IC_NVLINK);
		}
		/* Names are unique: the lookup finds this very row. */
		assert_ptr_equal(catalog_gpu_find(m->name), m);
	}
}

static void test_relative_facts(void **state)
{
	(void)state;
	/* Blackwell doubles Hopper's NVLink; export parts have less than the full. */
	assert_int_equal(catalog_gpu_find("b200")->ic_gbps,
			 2 * catalog_gpu_find("h100-sxm")->ic_gbps);
	assert_true(catalog_gpu_find("h800-sxm")->ic_gbps <
		    catalog_gpu_find("h100-sxm")->ic_gbps);
	assert_true(catalog_gpu_find("a800-sxm")->ic_gbps <
		    catalog_gpu_find("a100-sxm")->ic_gbps);
	assert_true(catalog_gpu_find("h100-sxm")->bf16_tflops >
		    catalog_gpu_find("a100-sxm")->bf16_tflops);
	assert_true(catalog_gpu_find("h200-sxm")->mem_gib >
		    catalog_gpu_find("h100-sxm")->mem_gib);
	/* 910B: 7 peers at 56 GB/s each. */
	assert_int_equal(catalog_gpu_find("ascend-910b")->ic_gbps, 7 * 56);
}

static void test_lookups(void **state)
{
	(void)state;
	assert_null(catalog_gpu_find("h100"));
	assert_null(catalog_gpu_find(""));
	assert_null(catalog_gpu_find(NULL));
	assert_null(catalog_gpu_find("H100-SXM"));
	assert_null(catalog_gpu_at(catalog_gpu_count()));
	assert_int_equal(catalog_pcie_gbps(3), 32);
	assert_int_equal(catalog_pcie_gbps(4), 64);
	assert_int_equal(catalog_pcie_gbps(5), 128);
	assert_int_equal(catalog_pcie_gbps(6), 256);
	assert_int_equal(catalog_pcie_gbps(2), 0);
	assert_int_equal(catalog_pcie_gbps(7), 0);
	assert_string_equal(catalog_ic_name(IC_NONE), "none");
	assert_string_equal(catalog_ic_name(IC_NVLINK), "nvlink");
	assert_string_equal(catalog_ic_name(IC_HCCS), "hccs");
}

/* The list hints name: every model once, in table order, and a short buffer
 * is cut but terminated, with the length the whole list needs. */
static void test_names(void **state)
{
	(void)state;
	char buf[256], small[8];
	size_t len = catalog_gpu_names(buf, sizeof(buf));
	assert_true(len < sizeof(buf));
	assert_int_equal(len, strlen(buf));
	assert_true(strncmp(buf, "h100-sxm, ", 10) == 0);
	for (size_t i = 0; i < catalog_gpu_count(); i++)
		assert_non_null(strstr(buf, catalog_gpu_at(i)->name));
	assert_int_equal(catalog_gpu_names(small, sizeof(small)), len);
	assert_int_equal(strlen(small), sizeof(small) - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_model_present),
		cmocka_unit_test(test_facts_consistent),
		cmocka_unit_test(test_relative_facts),
		cmocka_unit_test(test_lookups),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

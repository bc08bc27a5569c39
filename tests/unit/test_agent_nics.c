/* test_agent_nics.c - NICs and their rails from a fake sysfs tree
 * (SUANLI_SYSFS_ROOT): the PCI paths decide which GPUs a NIC is nearest to. */
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

#include "discovery.h"
#include "nics.h"

static char root[64];

static void mkdirs(const char *rel)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (char *s = p + strlen(root) + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
}

static void put(const char *rel, const char *text)
{
	char p[512];
	FILE *f;
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void link_to(const char *rel, const char *target_rel)
{
	char p[512], t[512];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	snprintf(t, sizeof(t), "%s/%s", root, target_rel);
	assert_int_equal(symlink(t, p), 0);
}

/* A PCI device at devices/<path> known as bus/pci/devices/<bus>. */
static void pci_dev(const char *path, const char *bus, int numa)
{
	char rel[256], num[16];
	snprintf(rel, sizeof(rel), "devices/%s", path);
	mkdirs(rel);
	snprintf(rel, sizeof(rel), "devices/%s/numa_node", path);
	snprintf(num, sizeof(num), "%d\n", numa);
	put(rel, num);
	snprintf(rel, sizeof(rel), "bus/pci/devices/%s", bus);
	char target[256];
	snprintf(target, sizeof(target), "devices/%s", path);
	link_to(rel, target);
}

static void rdma(const char *name, const char *path, const char *rate)
{
	char rel[256], target[256];
	snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1", name);
	mkdirs(rel);
	snprintf(rel, sizeof(rel), "class/infiniband/%s/device", name);
	snprintf(target, sizeof(target), "devices/%s", path);
	link_to(rel, target);
	if (rate) {
		snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/rate", name);
		put(rel, rate);
	}
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/sl-sysfs-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	mkdirs("bus/pci/devices");
	mkdirs("class/infiniband");
	setenv(NICS_SYSFS_ENV, root, 1);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void h100(struct discovery *disc)
{
	static const char *const bus[8] = {"00000000:18:00.0", "00000000:2A:00.0",
					   "00000000:3A:00.0", "00000000:5D:00.0",
					   "00000000:9A:00.0", "00000000:AB:00.0",
					   "00000000:BA:00.0", "00000000:DB:00.0"};
	struct node_type t;
	assert_int_equal(topo_builtin("hgx-h100-8", &t), SL_OK);
	t.nnics = 0;
	assert_int_equal(discovery_from_type(disc, &t, NULL), SL_OK);
	for (int g = 0; g < 8; g++)
		snprintf(disc->gpus[g].bus_id, sizeof(disc->gpus[g].bus_id), "%s", bus[g]);
}

static void test_rails(void **state)
{
	struct discovery disc;
	(void)state;

	/* No RDMA devices: no NICs, no error. */
	h100(&disc);
	assert_int_equal(nics_discover(&disc, NULL), SL_OK);
	assert_int_equal(disc.type.nnics, 0);

	pci_dev("pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:18:00.0", "0000:18:00.0", 0);
	pci_dev("pci0000:10/0000:10:01.0/0000:11:00.0/0000:13:00.0/0000:2a:00.0", "0000:2a:00.0", 0);
	pci_dev("pci0000:10/0000:10:02.0/0000:3a:00.0", "0000:3a:00.0", 0);
	pci_dev("pci0000:30/0000:30:01.0/0000:5d:00.0", "0000:5d:00.0", 0);
	pci_dev("pci0000:80/0000:80:01.0/0000:9a:00.0", "0000:9a:00.0", 1);
	/* GPUs 5-7 have no sysfs entry: never nearest to anything. */
	pci_dev("pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:19:00.0", "0000:19:00.0", 0);
	pci_dev("pci0000:30/0000:30:02.0/0000:5e:00.0", "0000:5e:00.0", 0);
	pci_dev("pci0000:90/0000:90:01.0/0000:91:00.0", "0000:91:00.0", 1);
	rdma("mlx5_0", "pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:19:00.0",
	     "400 Gb/sec (4X NDR)\n");
	rdma("mlx5_1", "pci0000:30/0000:30:02.0/0000:5e:00.0", "200 Gb/sec (2X NDR)\n");
	rdma("mlx5_2", "pci0000:90/0000:90:01.0/0000:91:00.0", NULL);
	rdma("mlx5_3", "pci0000:99/gone", "100\n"); /* dangling: skipped */

	h100(&disc);
	assert_int_equal(nics_discover(&disc, NULL), SL_OK);
	assert_int_equal(disc.type.nnics, 3);
	/* Behind GPU 0's switch (PIX) beats GPU 1's upper switch (PXB). */
	assert_string_equal(disc.type.nics[0].name, "mlx5_0");
	assert_int_equal(disc.type.nics[0].gpus, 0x01);
	assert_int_equal(disc.type.nics[0].gbps, 400);
	/* Same root complex as GPU 3 (PHB) beats same NUMA node (NODE). */
	assert_string_equal(disc.type.nics[1].name, "mlx5_1");
	assert_int_equal(disc.type.nics[1].gpus, 0x08);
	assert_int_equal(disc.type.nics[1].gbps, 200);
	/* Only the NUMA node in common with GPU 4. */
	assert_string_equal(disc.type.nics[2].name, "mlx5_2");
	assert_int_equal(disc.type.nics[2].gpus, 0x10);
	assert_int_equal(disc.type.nics[2].gbps, 0);

	/* A discovery that has NICs keeps them. */
	struct node_type t;
	assert_int_equal(topo_builtin("hgx-h100-8", &t), SL_OK);
	assert_int_equal(discovery_from_type(&disc, &t, NULL), SL_OK);
	assert_int_equal(nics_discover(&disc, NULL), SL_OK);
	assert_int_equal(disc.type.nnics, 8);
	assert_string_equal(disc.type.nics[7].name, "mlx5_7");

	/* More than a node keeps: the nearest 16, in name order. */
	for (int i = 0; i < 18; i++) {
		char name[16], path[128];
		snprintf(name, sizeof(name), "n%02d", i);
		snprintf(path, sizeof(path), "pci0000:90/0000:90:02.%d/0000:%02x:00.0", i, 0xc0 + i);
		pci_dev(path, name, 1); /* bus link named after the NIC: unique */
		rdma(name, path, "100\n");
	}
	h100(&disc);
	assert_int_equal(nics_discover(&disc, NULL), SL_OK);
	assert_int_equal(disc.type.nnics, TOPO_MAX_NICS);
	assert_string_equal(disc.type.nics[0].name, "mlx5_0");
	assert_string_equal(disc.type.nics[1].name, "mlx5_1");
	assert_string_equal(disc.type.nics[2].name, "mlx5_2");
	assert_string_equal(disc.type.nics[15].name, "n12");
	assert_int_equal(disc.type.nics[15].gpus, 0x10);

	/* A GPU model the catalog lacks still gets its NICs. */
	h100(&disc);
	disc.type.gpu = NULL;
	assert_int_equal(nics_discover(&disc, NULL), SL_OK);
	assert_int_equal(disc.type.nnics, TOPO_MAX_NICS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rails, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

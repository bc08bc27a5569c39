/* test_cdi_spec.c - the CDI spec the agent writes (cdi_spec.h): one device
 * per GPU with exactly its node, the shared nodes and driver mounts in the
 * spec-wide edits, stand-ins as bind mounts, never a hook, and the names
 * podman's CDI library accepts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cdi_spec.h"
#include "topo.h"

static struct discovery disc;

static int setup(void **state)
{
	(void)state;
	struct node_type t;
	assert_int_equal(topo_builtin("hgx-h100-8", &t), SL_OK);
	assert_int_equal(discovery_from_type(&disc, &t, NULL), SL_OK);
	return 0;
}

static void host_real(struct cdi_host *h)
{
	memset(h, 0, sizeof(*h));
	snprintf(h->prefix, sizeof(h->prefix), "n1");
	h->ngpus = 8;
	for (int i = 0; i < 8; i++) {
		snprintf(h->gpu[i].path, CDI_PATH_MAX, "/dev/nvidia%d", i);
		h->gpu[i].major = 195;
		h->gpu[i].minor = (uint32_t)i;
	}
	snprintf(h->shared[0].path, CDI_PATH_MAX, "/dev/nvidiactl");
	h->shared[0].major = 195;
	h->shared[0].minor = 255;
	h->nshared = 1;
	snprintf(h->mounts[0], CDI_PATH_MAX, "/usr/bin/nvidia-smi");
	h->nmounts = 1;
}

static void test_real_gpus(void **state)
{
	(void)state;
	struct cdi_host h;
	struct discovery real = disc;
	host_real(&h);
	snprintf(real.source, sizeof(real.source), "nvml");
	snprintf(real.gpus[3].uuid, sizeof(real.gpus[3].uuid), "GPU-0123abcd");
	json_t *s = cdi_spec_json(&real, &h);
	assert_non_null(s);
	assert_string_equal(json_string_value(json_object_get(s, "kind")), "suanli.dev/gpu");
	assert_string_equal(json_string_value(json_object_get(s, "cdiVersion")), "0.5.0");
	json_t *devs = json_object_get(s, "devices");
	assert_int_equal(json_array_size(devs), 9); /* 8 by index, 1 by UUID */
	json_t *d3 = json_array_get(devs, 3);
	assert_string_equal(json_string_value(json_object_get(d3, "name")), "n1-3");
	json_t *nodes = json_object_get(json_object_get(d3, "containerEdits"), "deviceNodes");
	assert_int_equal(json_array_size(nodes), 1);
	json_t *n = json_array_get(nodes, 0);
	assert_string_equal(json_string_value(json_object_get(n, "path")), "/dev/nvidia3");
	assert_int_equal(json_integer_value(json_object_get(n, "major")), 195);
	assert_int_equal(json_integer_value(json_object_get(n, "minor")), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(devs, 4), "name")),
			    "GPU-0123abcd");
	json_t *common = json_object_get(s, "containerEdits");
	assert_int_equal(json_array_size(json_object_get(common, "deviceNodes")), 1);
	json_t *m = json_array_get(json_object_get(common, "mounts"), 0);
	assert_string_equal(json_string_value(json_object_get(m, "hostPath")), "/usr/bin/nvidia-smi");
	char *text = json_dumps(json_object_get(m, "options"), JSON_COMPACT);
	assert_string_equal(text, "[\"ro\",\"nosuid\",\"nodev\",\"bind\"]");
	free(text);
	/* no hooks, anywhere */
	text = json_dumps(s, JSON_COMPACT);
	assert_null(strstr(text, "hook"));
	free(text);
	json_decref(s);
}

static void test_standins(void **state)
{
	(void)state;
	struct cdi_host h;
	host_real(&h);
	h.nmounts = 0;
	for (int i = 0; i < 8; i++)
		snprintf(h.gpu[i].host, CDI_PATH_MAX, "/var/lib/a/sim-dev/nvidia%d", i);
	snprintf(disc.gpus[0].uuid, sizeof(disc.gpus[0].uuid), "GPU-sim");
	json_t *s = cdi_spec_json(&disc, &h);
	assert_non_null(s);
	json_t *devs = json_object_get(s, "devices");
	assert_int_equal(json_array_size(devs), 8); /* simulated UUIDs repeat: none */
	json_t *e = json_object_get(json_array_get(devs, 5), "containerEdits");
	assert_null(json_object_get(e, "deviceNodes"));
	json_t *m = json_array_get(json_object_get(e, "mounts"), 0);
	assert_string_equal(json_string_value(json_object_get(m, "hostPath")),
			    "/var/lib/a/sim-dev/nvidia5");
	assert_string_equal(json_string_value(json_object_get(m, "containerPath")), "/dev/nvidia5");
	assert_null(json_object_get(json_object_get(s, "containerEdits"), "mounts"));
	json_decref(s);
	disc.gpus[0].uuid[0] = '\0';
}

static void test_names(void **state)
{
	(void)state;
	char b[CDI_NAME_MAX];
	struct cdi_host h;
	assert_true(cdi_device_name("fza-h100-001", 7, b, sizeof(b)));
	assert_string_equal(b, "fza-h100-001-7");
	assert_false(cdi_device_name("-bad", 1, b, sizeof(b)));
	assert_false(cdi_device_name("a b", 1, b, sizeof(b)));
	assert_false(cdi_device_name("", 1, b, sizeof(b)));
	assert_false(cdi_device_name("abcdef", 1, b, 6));
	host_real(&h);
	snprintf(h.prefix, sizeof(h.prefix), "bad/name");
	assert_null(cdi_spec_json(&disc, &h));
	host_real(&h);
	h.ngpus = 4; /* not the discovery's count */
	assert_null(cdi_spec_json(&disc, &h));
	assert_null(cdi_spec_json(NULL, &h));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_gpus),
		cmocka_unit_test(test_standins),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}

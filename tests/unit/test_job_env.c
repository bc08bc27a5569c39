/* test_job_env.c - a rank's distributed environment (job_env.h): the exact
 * variables torchrun and NCCL read, visible devices per vendor, NICs on the
 * rails of the chosen GPUs, user variables, and the request checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "job_env.h"
#include "lease_net.h"

static struct node_type h100, a100, atlas;

static int setup(void **state)
{
	(void)state;
	assert_int_equal(topo_builtin("hgx-h100-8", &h100), SL_OK);
	assert_int_equal(topo_builtin("hgx-a100-8", &a100), SL_OK);
	assert_int_equal(topo_builtin("atlas-800t-a2", &atlas), SL_OK);
	return 0;
}

static const char *env_get(const json_t *env, const char *k)
{
	return json_string_value(json_object_get(env, k));
}

static void test_two_nodes(void **state)
{
	(void)state;
	struct job_env_node nodes[2] = {
		{"fza-h100-001", "10.77.0.2", &h100, 0x03, NULL},
		{"fza-h100-002", NULL, &h100, 0x30, NULL},
	};
	json_t *user = json_pack("{s:s}", "OMP_NUM_THREADS", "4");
	struct job_env_in in = {"ls-000042", "job-000007", 7, 2, nodes, user};
	json_t *env, *gpus, *nics;
	struct sl_diag d;
	sl_diag_clear(&d);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(job_env_build(&in, r, &env, &gpus, &nics, &d), SL_OK);
		assert_string_equal(env_get(env, "MASTER_ADDR"), "10.77.0.2");
		assert_string_equal(env_get(env, "MASTER_PORT"), "20007");
		assert_string_equal(env_get(env, "NNODES"), "2");
		assert_string_equal(env_get(env, "NODE_RANK"), r ? "1" : "0");
		assert_string_equal(env_get(env, "NPROC_PER_NODE"), "2");
		assert_string_equal(env_get(env, "SUANLI_LEASE"), "ls-000042");
		assert_string_equal(env_get(env, "SUANLI_JOB"), "job-000007");
		assert_string_equal(env_get(env, "SUANLI_NODE_LIST"), "fza-h100-001,fza-h100-002");
		assert_string_equal(env_get(env, "CUDA_VISIBLE_DEVICES"), r ? "4,5" : "0,1");
		/* One NIC per GPU on an HGX H100: exactly the rails of the picks. */
		assert_string_equal(env_get(env, "NCCL_IB_HCA"), r ? "=mlx5_4,mlx5_5" : "=mlx5_0,mlx5_1");
		assert_null(json_object_get(env, "ASCEND_RT_VISIBLE_DEVICES"));
		assert_string_equal(env_get(env, "OMP_NUM_THREADS"), "4");
		assert_int_equal(json_array_size(gpus), 2);
		assert_int_equal(json_integer_value(json_array_get(gpus, 0)), r ? 4 : 0);
		assert_int_equal(json_array_size(nics), 2);
		json_decref(env);
		json_decref(gpus);
		json_decref(nics);
	}
	json_decref(user);
}

static void test_master_fallback_and_port(void **state)
{
	(void)state;
	struct job_env_node nodes[1] = {{"n1", "", &h100, 0xff, NULL}};
	struct job_env_in in = {"ls-1", "job-040001", 40001, 1, nodes, NULL};
	json_t *env, *gpus, *nics;
	assert_int_equal(job_env_build(&in, 0, &env, &gpus, &nics, NULL), SL_OK);
	assert_string_equal(env_get(env, "MASTER_ADDR"), "n1");
	assert_string_equal(env_get(env, "MASTER_PORT"), "20001");
	assert_string_equal(env_get(env, "NPROC_PER_NODE"), "8");
	assert_string_equal(env_get(env, "CUDA_VISIBLE_DEVICES"), "0,1,2,3,4,5,6,7");
	assert_int_equal(json_array_size(nics), 8);
	json_decref(env);
	json_decref(gpus);
	json_decref(nics);
	assert_int_equal(job_master_port(0), JOB_MASTER_PORT_BASE);
	assert_int_equal(job_master_port(19999), 39999);
	assert_int_equal(job_master_port(20000), 20000);
	/* A bad rank is refused. */
	assert_int_equal(job_env_build(&in, 1, &env, &gpus, &nics, NULL), SL_EINVAL);
	assert_null(env);
}

static void test_shared_rail_nics(void **state)
{
	(void)state;
	/* HGX A100: two NICs per PCIe switch, two GPUs per switch; GPU 2 alone
	 * still gets both NICs of its switch and none of the others. */
	struct job_env_node nodes[1] = {{"a", "10.0.0.1", &a100, 0x04, NULL}};
	struct job_env_in in = {"ls-1", "job-000001", 1, 1, nodes, NULL};
	json_t *env, *gpus, *nics;
	assert_int_equal(job_env_build(&in, 0, &env, &gpus, &nics, NULL), SL_OK);
	assert_string_equal(env_get(env, "CUDA_VISIBLE_DEVICES"), "2");
	assert_int_equal(json_array_size(nics), 2);
	const char *hca = env_get(env, "NCCL_IB_HCA");
	assert_non_null(hca);
	assert_int_equal(hca[0], '=');
	for (size_t i = 0; i < json_array_size(nics); i++)
		assert_non_null(strstr(hca, json_string_value(json_array_get(nics, i))));
	json_decref(env);
	json_decref(gpus);
	json_decref(nics);
}

static void test_ascend(void **state)
{
	(void)state;
	struct job_env_node nodes[1] = {{"hw1", "10.0.0.9", &atlas, 0xf0, NULL}};
	struct job_env_in in = {"ls-1", "job-000003", 3, 1, nodes, NULL};
	json_t *env, *gpus, *nics;
	assert_int_equal(job_env_build(&in, 0, &env, &gpus, &nics, NULL), SL_OK);
	assert_string_equal(env_get(env, "ASCEND_RT_VISIBLE_DEVICES"), "4,5,6,7");
	assert_null(json_object_get(env, "CUDA_VISIBLE_DEVICES"));
	assert_null(json_object_get(env, "NCCL_IB_HCA"));
	assert_int_equal(json_array_size(nics), 4); /* the agent still gets them */
	json_decref(env);
	json_decref(gpus);
	json_decref(nics);
}

static void test_user_cannot_override(void **state)
{
	(void)state;
	/* job_env_check refuses these; job_env_build skips them anyway. */
	json_t *user = json_pack("{s:s, s:s}", "MASTER_PORT", "1", "X", "y");
	struct job_env_node nodes[1] = {{"n", "1.2.3.4", &h100, 1, NULL}};
	struct job_env_in in = {"ls-1", "job-000002", 2, 1, nodes, user};
	json_t *env, *gpus, *nics;
	assert_int_equal(job_env_build(&in, 0, &env, &gpus, &nics, NULL), SL_OK);
	assert_string_equal(env_get(env, "MASTER_PORT"), "20002");
	assert_string_equal(env_get(env, "X"), "y");
	json_decref(env);
	json_decref(gpus);
	json_decref(nics);
	json_decref(user);
}

static void test_keys(void **state)
{
	(void)state;
	assert_true(job_env_key_valid("A"));
	assert_true(job_env_key_valid("_x9"));
	assert_false(job_env_key_valid(""));
	assert_false(job_env_key_valid("9A"));
	assert_false(job_env_key_valid("A-B"));
	assert_false(job_env_key_valid("A=B"));
	char longk[JOB_ENV_KEY_MAX + 2];
	memset(longk, 'K', sizeof(longk) - 1);
	longk[sizeof(longk) - 1] = 0;
	assert_false(job_env_key_valid(longk));
	longk[JOB_ENV_KEY_MAX] = 0;
	assert_true(job_env_key_valid(longk));
	const char *res[] = {"MASTER_ADDR", "MASTER_PORT", "NNODES", "NODE_RANK", "NPROC_PER_NODE",
			     "CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "NCCL_IB_HCA",
			     "NCCL_TOPO_FILE", "SUANLI_LEASE", "SUANLI_ANYTHING"};
	for (size_t i = 0; i < sizeof(res) / sizeof(res[0]); i++)
		assert_true(job_env_key_reserved(res[i]));
	assert_false(job_env_key_reserved("NCCL_DEBUG"));
	assert_int_equal(job_restart_parse("never"), JOB_RESTART_NEVER);
	assert_int_equal(job_restart_parse("on-failure"), JOB_RESTART_ON_FAILURE);
	assert_int_equal(job_restart_parse("always"), JOB_RESTART_ALWAYS);
	assert_int_equal(job_restart_parse("sometimes"), -1);
	assert_string_equal(job_restart_name(JOB_RESTART_ON_FAILURE), "on-failure");
}

static void expect_argv(json_t *argv, enum sl_err want, const char *needle)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(job_argv_check(argv, &d), want);
	if (needle)
		assert_non_null(strstr(d.msg, needle));
	json_decref(argv);
}

static void expect_env(json_t *env, enum sl_err want, const char *needle)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(job_env_check(env, &d), want);
	if (needle)
		assert_non_null(strstr(d.msg, needle));
	json_decref(env);
}

static void test_checks(void **state)
{
	(void)state;
	expect_argv(json_pack("[s,s]", "python3", "train.py"), SL_OK, NULL);
	expect_argv(json_array(), SL_EINVAL, "argv");
	expect_argv(json_pack("[s,i]", "x", 1), SL_EINVAL, "argv[1]");
	expect_argv(json_pack("[s]", ""), SL_EINVAL, "argv[0]");
	expect_argv(json_pack("{}"), SL_EINVAL, "argv");
	json_t *many = json_array();
	for (int i = 0; i <= JOB_MAX_ARGS; i++)
		json_array_append_new(many, json_string("a"));
	expect_argv(many, SL_ELIMIT, "at most 256");
	char *big = malloc(JOB_MAX_ARGV_BYTES + 1);
	memset(big, 'x', JOB_MAX_ARGV_BYTES);
	big[JOB_MAX_ARGV_BYTES] = 0;
	expect_argv(json_pack("[s,s]", "sh", big), SL_ELIMIT, "bytes");
	expect_env(json_pack("{s:s}", "BIG", big), SL_ELIMIT, "bytes");
	free(big);

	expect_env(NULL, SL_OK, NULL);
	expect_env(json_object(), SL_OK, NULL);
	expect_env(json_pack("{s:s}", "NCCL_DEBUG", "INFO"), SL_OK, NULL);
	expect_env(json_pack("{s:s}", "1X", "v"), SL_EINVAL, "'1X'");
	expect_env(json_pack("{s:s}", "NODE_RANK", "3"), SL_EINVAL, "NODE_RANK");
	expect_env(json_pack("{s:s}", "SUANLI_JOB", "x"), SL_EINVAL, "SUANLI_JOB");
	expect_env(json_pack("{s:i}", "N", 1), SL_EINVAL, "env.N");
	expect_env(json_pack("[]"), SL_EINVAL, "object");
	json_t *menv = json_object();
	for (int i = 0; i <= JOB_MAX_ENV; i++) {
		char k[16];
		snprintf(k, sizeof(k), "K%d", i);
		json_object_set_new(menv, k, json_string("v"));
	}
	expect_env(menv, SL_ELIMIT, "entries");
}

/* Fabric addresses (lease_net.h): pools cut into one block per GPU, the
 * block of the lease's lowest GPU, the job number within it. */
static void test_lease_pool(void **state)
{
	(void)state;
	struct lease_pool p;
	struct sl_diag d;
	char b[LEASE_NET_CIDR_MAX], ip[LEASE_NET_ADDR_MAX];
	uint32_t a;
	sl_diag_clear(&d);
	assert_int_equal(lease_pool_parse("10.77.0.128/25", &p, &d), SL_OK);
	assert_int_equal(lease_pool_block(&p, 8), 16);
	assert_true(lease_net_addr(&p, 8, 4, 37, &a, b, sizeof(b)));
	lease_ip_format(a, ip, sizeof(ip));
	assert_string_equal(ip, "10.77.0.197"); /* 128 + 4*16 + 37%16 */
	assert_string_equal(b, "10.77.0.192/28");
	assert_false(lease_net_addr(&p, 8, 8, 1, &a, NULL, 0));
	assert_int_equal(lease_pool_parse("10.77.0.128/26", &p, &d), SL_OK);
	assert_int_equal(lease_pool_block(&p, 3), 16); /* 64/3 = 21 -> 16 */
	assert_int_equal(lease_pool_parse("10.0.0.0/30", &p, &d), SL_OK);
	assert_int_equal(lease_pool_block(&p, 8), 0);
	assert_int_equal(lease_pool_parse("10.77.0.129/25", &p, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "host bits"));
	const char *bad[] = {"10.77.0.0", "10.77.0/24", "10.77.0.0/33", "10.77.0.0/0", "10.077.0.0/8",
			     "10.77.0.0/24x", "a.b.c.d/8", "10.77.0.256/24", "/24", "", "10.0.0.0/+8"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(lease_pool_parse(bad[i], &p, &d), SL_EINVAL);
	assert_false(lease_ip_parse("1.2.3", &a));
	assert_false(lease_ip_parse("1.2.3.4.", &a));
	assert_true(lease_ip_parse("255.255.255.255", &a));
	assert_int_equal(a, 0xffffffffu);
}

static void test_lease_net(void **state)
{
	(void)state;
	/* 4 of 8 GPUs on each of two nodes with pools: routable addresses */
	struct job_env_node nodes[3] = {
		{"h1", "10.77.0.2", &h100, 0xf0, "10.77.0.128/25"},
		{"h2", "10.77.0.3", &h100, 0x0f, "10.77.1.0/24"},
		{"h3", "10.77.0.4", &h100, 0xff, NULL},
	};
	struct job_env_in in = {"ls-1", "job-000009", 9, 2, nodes, NULL};
	json_t *env, *gpus, *nics, *net;
	struct sl_diag d;
	sl_diag_clear(&d);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(job_env_build(&in, r, &env, &gpus, &nics, &d), SL_OK);
		assert_string_equal(env_get(env, "MASTER_ADDR"), "10.77.0.201"); /* 128+4*16+9 */
		assert_string_equal(env_get(env, "GLOO_SOCKET_IFNAME"), LEASE_NET_IFNAME);
		assert_string_equal(env_get(env, "NCCL_SOCKET_IFNAME"), LEASE_NET_IFNAME);
		json_decref(env);
		json_decref(gpus);
		json_decref(nics);
		assert_int_equal(job_env_net(&in, r, &net, &d), SL_OK);
		assert_non_null(net);
		assert_string_equal(json_string_value(json_object_get(net, "addr")),
				    r ? "10.77.1.9" : "10.77.0.201"); /* h2: 256/8 = 32 per GPU, GPU 0 */
		json_t *peers = json_object_get(net, "peers");
		assert_int_equal(json_array_size(peers), 2);
		assert_string_equal(json_string_value(json_array_get(peers, 0)), "10.77.0.192/28");
		assert_string_equal(json_string_value(json_array_get(peers, 1)), "10.77.1.0/27");
		json_decref(net);
	}
	/* a whole-node rank is a peer by its node address; a partial rank
	 * without a pool is not one (its NAT address is shared) */
	nodes[1].pool = NULL;
	struct job_env_node n3[3] = {nodes[0], nodes[1], nodes[2]};
	struct job_env_in in3 = {"ls-1", "job-000009", 9, 3, n3, NULL};
	assert_int_equal(job_env_net(&in3, 0, &net, &d), SL_OK);
	json_t *peers = json_object_get(net, "peers");
	assert_int_equal(json_array_size(peers), 2);
	assert_string_equal(json_string_value(json_array_get(peers, 0)), "10.77.0.192/28");
	assert_string_equal(json_string_value(json_array_get(peers, 1)), "10.77.0.4/32");
	json_decref(net);
	assert_int_equal(job_env_net(&in3, 1, &net, &d), SL_OK);
	assert_null(net);
	assert_int_equal(job_env_net(&in3, 2, &net, &d), SL_OK);
	assert_null(net);
	assert_int_equal(job_env_build(&in3, 2, &env, &gpus, &nics, &d), SL_OK);
	assert_string_equal(env_get(env, "MASTER_ADDR"), "10.77.0.201");
	assert_null(json_object_get(env, "GLOO_SOCKET_IFNAME"));
	json_decref(env);
	json_decref(gpus);
	json_decref(nics);
	/* one node: the bridge as before, no fabric address */
	struct job_env_in one = {"ls-1", "job-000009", 9, 1, nodes, NULL};
	assert_int_equal(job_env_net(&one, 0, &net, &d), SL_OK);
	assert_null(net);
	assert_int_equal(job_env_build(&one, 0, &env, &gpus, &nics, &d), SL_OK);
	assert_string_equal(env_get(env, "MASTER_ADDR"), "10.77.0.2");
	json_decref(env);
	json_decref(gpus);
	json_decref(nics);
	assert_int_equal(job_env_net(&in, 2, &net, &d), SL_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_nodes),
		cmocka_unit_test(test_master_fallback_and_port),
		cmocka_unit_test(test_shared_rail_nics),
		cmocka_unit_test(test_ascend),
		cmocka_unit_test(test_user_cannot_override),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_checks),
		cmocka_unit_test(test_lease_pool),
		cmocka_unit_test(test_lease_net),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}

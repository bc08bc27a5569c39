/* test_agent_inst.c - the agent's instances without podman: the item's
 * parser (strict, bad input refused as a whole), an instance container's
 * podman command line (kept, writable, sshd's capabilities, ports, disks),
 * the host key fingerprint (OpenSSH's SHA256 form) and the supervisor's
 * bookkeeping (epochs, the report) with no engine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "inst.h"
#include "inst_int.h"
#include "podman_args.h"

static const char *const KEY =
	"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBOW7/xSWuz75amTXxqixyr11l9HNNqymWbD51TlSDRF alice";

static json_t *item(void)
{
	json_error_t je;
	json_t *o = json_loads(
		"{\"instance\": \"in-000001\", \"node_rank\": 1, \"epoch\": 3,"
		" \"lease\": \"ls-000042\", \"state\": \"run\", \"tenant\": \"acme\","
		" \"image\": \"localhost/suanli/demo:k\", \"gpus\": [0, 1], \"nics\": [\"mlx5_0\"],"
		" \"env\": {\"MASTER_ADDR\": \"10.0.0.1\", \"CUDA_VISIBLE_DEVICES\": \"0,1\"},"
		" \"cpus\": 8, \"mem_mib\": 65536, \"host_network\": false,"
		" \"authorized_keys\": [], \"ports\": [8888, 6006], \"volume_gib\": 10,"
		" \"stop_grace_s\": 10, \"migrate_from\": \"old-node\", \"future\": 1}",
		0, &je);
	assert_non_null(o);
	json_array_append_new(json_object_get(o, "authorized_keys"), json_string(KEY));
	return o;
}

static void test_spec_parses(void **state)
{
	(void)state;
	struct inst_spec s;
	struct sl_diag d;
	json_t *o = item();
	sl_diag_clear(&d);
	assert_int_equal(inst_spec_from_json(o, &s, &d), SL_OK);
	assert_string_equal(s.id, "in-000001");
	assert_int_equal(s.node_rank, 1);
	assert_int_equal(s.epoch, 3);
	assert_int_equal(s.want, WANT_RUN);
	assert_string_equal(s.w.tenant, "acme");
	assert_string_equal(s.w.image, "localhost/suanli/demo:k");
	assert_int_equal(s.w.gpus, 3);
	assert_int_equal(s.w.nenv, 2);
	assert_int_equal(s.cpus_milli, 8000);
	assert_int_equal(s.mem_mib, 65536);
	assert_int_equal(s.nkeys, 1);
	assert_string_equal(s.keys[0], KEY);
	assert_int_equal(s.nports, 2);
	assert_int_equal(s.ports[1], 6006);
	assert_int_equal(s.volume_gib, 10);
	assert_string_equal(s.migrate_from, "old-node");
	inst_spec_release(&s);
	/* "image": "": none named (the agent's --image) */
	json_object_set_new(o, "image", json_string(""));
	assert_int_equal(inst_spec_from_json(o, &s, &d), SL_OK);
	assert_string_equal(s.w.image, "");
	inst_spec_release(&s);
	/* no-gpu mode: lease "" */
	json_object_set_new(o, "lease", json_string(""));
	json_object_set_new(o, "gpus", json_array());
	json_object_set_new(o, "state", json_string("remove"));
	assert_int_equal(inst_spec_from_json(o, &s, &d), SL_OK);
	assert_string_equal(s.lease, "");
	assert_int_equal(s.want, WANT_REMOVE);
	inst_spec_release(&s);
	json_decref(o);
}

static void test_spec_refuses(void **state)
{
	(void)state;
	static const struct {
		const char *key, *json, *field;
	} bad[] = {
		{"instance", "\"../x\"", "instance"},
		{"state", "\"start\"", "state"},
		{"epoch", "-1", "epoch"},
		{"ports", "[22]", "ports"},
		{"ports", "[8888, 8888]", "ports"},
		{"ports", "[70000]", "ports"},
		{"authorized_keys", "[\"ssh-ed25519 AAAA\\nPermitRootLogin yes\"]", "authorized_keys"},
		{"volume_gib", "-3", "volume_gib"},
		{"mem_mib", "12", "mem_mib"},
		{"host_network", "1", "host_network"},
		{"env", "{\"A B\": \"x\"}", "env"},
		{"gpus", "[0, 0]", "gpus"},
		{"image", "\"has space\"", "image"},
		{"lease", "\"bad/lease\"", "lease"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *o = item();
		json_error_t je;
		struct inst_spec s;
		struct sl_diag d;
		sl_diag_clear(&d);
		json_object_set_new(o, bad[i].key, json_loads(bad[i].json, JSON_DECODE_ANY, &je));
		assert_int_equal(inst_spec_from_json(o, &s, &d), SL_EINVAL);
		if (!strstr(d.msg, bad[i].field))
			fail_msg("%s: message '%s' does not name %s", bad[i].key, d.msg, bad[i].field);
		json_decref(o);
	}
}

static bool has(char **v, const char *w)
{
	for (size_t i = 0; v[i]; i++)
		if (strcmp(v[i], w) == 0)
			return true;
	return false;
}

static void test_create_argv(void **state)
{
	(void)state;
	const char *devs[] = {"n1-0", "n1-1"};
	struct podman_run r;
	memset(&r, 0, sizeof(r));
	r.podman = "/usr/bin/podman";
	r.runtime = "runc";
	r.cgroup_manager = "cgroupfs";
	r.hooks_dir = "/var/lib/suanli-agent/no-hooks";
	r.name = "sl-n1-in-000001";
	r.image = "localhost/suanli/demo:k";
	r.uid_base = 0x40010000u;
	r.nofile = 20000;
	r.nproc = 4096;
	r.cpus_milli = 8000;
	r.mem_mib = 65536;
	r.pids = 4096;
	r.network = "sl-n1-in-000001";
	r.devices = devs;
	r.ndevices = 2;
	const int pub[2][2] = {{30022, 22}, {30023, 8888}};
	struct podman_inst x = {pub, 2, "/var/lib/suanli-agent/instances/in-000001/ssh",
				"/var/lib/suanli-agent/volumes/in-000001", "suanli.cfg=abc",
				"in-000001"};
	char **v = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(podman_create_argv(&r, &x, &v, &d), SL_OK);
	assert_string_equal(v[4], "create");
	assert_false(has(v, "--rm"));        /* kept across stop and start */
	assert_false(has(v, "--read-only")); /* its layer is the system disk */
	assert_true(has(v, "--uidmap=0:1073807360:65536"));
	assert_true(has(v, "--hooks-dir=/var/lib/suanli-agent/no-hooks"));
	assert_true(has(v, "--security-opt=no-new-privileges"));
	assert_true(has(v, "--cap-drop=all"));
	assert_true(has(v, "--cap-add=chown,dac_override,fowner,setuid,setgid,kill,sys_chroot,"
			   "net_bind_service"));
	assert_true(has(v, "--cpus=8.000"));
	assert_true(has(v, "--memory=65536m"));
	assert_true(has(v, "--pids-limit=4096"));
	assert_true(has(v, "--network=sl-n1-in-000001"));
	assert_true(has(v, "--publish=30022:22/tcp"));
	assert_true(has(v, "--publish=30023:8888/tcp"));
	assert_true(has(v, "--device=suanli.dev/gpu=n1-1"));
	assert_true(has(v, "--volume=/var/lib/suanli-agent/instances/in-000001/ssh:"
			   "/etc/suanli-ssh:ro"));
	assert_true(has(v, "--volume=/var/lib/suanli-agent/volumes/in-000001:/data:rw"));
	assert_true(has(v, "--label=suanli.cfg=abc"));
	assert_true(has(v, "/usr/sbin/sshd"));
	assert_true(has(v, "/etc/suanli-ssh/sshd_config"));
	podman_argv_free(v);
	/* host network: nothing published, no hostname */
	r.host_network = 1;
	assert_int_equal(podman_create_argv(&r, &x, &v, &d), SL_OK);
	assert_true(has(v, "--network=host"));
	assert_false(has(v, "--publish=30022:22/tcp"));
	podman_argv_free(v);
	/* no ssh directory: refused */
	x.ssh_dir = "";
	assert_int_equal(podman_create_argv(&r, &x, &v, &d), SL_EINVAL);
	assert_null(v);
}

static void test_fingerprint(void **state)
{
	(void)state;
	char fp[96];
	/* what `ssh-keygen -lf` (OpenSSH 9.2) says of this key line */
	assert_true(inst_ssh_fingerprint(KEY, fp, sizeof(fp)));
	assert_string_equal(fp, "SHA256:OUyPwWrUVjWyhRWePjM7oR1Nb+B0vugl+hc1z1s5F4g");
	assert_false(inst_ssh_fingerprint("ssh-ed25519", fp, sizeof(fp)));
	assert_false(inst_ssh_fingerprint("ssh-ed25519 !!!notbase64", fp, sizeof(fp)));
}

static void test_sup_epochs_and_report(void **state)
{
	(void)state;
	char dir[] = "/tmp/sl-inst-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct inst_opts o = {dir, NULL, 0, 0, "n1", NULL, NULL, NULL, NULL, NULL};
	struct inst_sup *s = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(inst_sup_new(&o, 0, &s, &d), SL_OK);
	json_t *a = json_array();
	json_t *it = item();
	json_object_set_new(it, "state", json_string("stop"));
	json_array_append_new(a, it);
	int ign = 0;
	assert_int_equal(inst_sup_apply(s, a, 0, &ign, &d), SL_OK);
	assert_int_equal(inst_sup_count(s), 1);
	/* an older epoch is ignored */
	json_object_set_new(it, "epoch", json_integer(2));
	assert_int_equal(inst_sup_apply(s, a, 0, &ign, &d), SL_OK);
	assert_int_equal(ign, 1);
	/* a bad item changes nothing */
	json_object_set_new(it, "epoch", json_integer(9));
	json_object_set_new(it, "ports", json_string("x"));
	assert_int_equal(inst_sup_apply(s, a, 0, &ign, &d), SL_EINVAL);
	(void)inst_sup_tick(s, 0);
	json_t *r = inst_sup_report(s);
	assert_int_equal(json_array_size(r), 1);
	json_t *r0 = json_array_get(r, 0);
	assert_string_equal(json_string_value(json_object_get(r0, "instance")), "in-000001");
	assert_int_equal(json_integer_value(json_object_get(r0, "epoch")), 3);
	assert_string_equal(json_string_value(json_object_get(r0, "state")), "stopped");
	json_decref(r);
	inst_sup_free(s);
	/* state.json survives a new supervisor */
	assert_int_equal(inst_sup_new(&o, 0, &s, &d), SL_OK);
	assert_int_equal(inst_sup_count(s), 1);
	inst_sup_free(s);
	json_decref(a);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_parses),
		cmocka_unit_test(test_spec_refuses),
		cmocka_unit_test(test_create_argv),
		cmocka_unit_test(test_fingerprint),
		cmocka_unit_test(test_sup_epochs_and_report),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

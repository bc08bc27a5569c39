/* test_agent_work.c - the work supervisor alone (src/agent/work.h): real
 * `sh -c` children in their own session and process group with the item's
 * environment and log file; exit codes and signals reported; restart
 * on-failure counted; a stop that escalates from SIGTERM to SIGKILL; stale
 * epochs refused and new ones replacing the process; re-adoption from
 * work.json by a new supervisor on the same directory, and a vanished
 * process reported as lost. No timing is asserted: waits poll for a state
 * with a generous bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "state.h"
#include "topo.h"
#include "work.h"

#define WAIT_LIMIT_S 20

struct fx {
	char dir[64];
	struct work_sup *sup;
	struct discovery disc;
};

static void rm_rf(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct sl_diag d;
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_agent_work.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	sl_diag_clear(&d);
	assert_int_equal(state_dir_init(f->dir, &d), SL_OK);
	sl_log_init(NULL, SL_LOG_ERROR);
	assert_int_equal(work_sup_new(f->dir, NULL, work_now_ns(), &f->sup, &d), SL_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	/* stop whatever still runs: apply an empty desired state and wait */
	json_t *none = json_array();
	int refused;
	struct sl_diag d;
	if (f->sup) {
		assert_int_equal(work_sup_apply(f->sup, none, work_now_ns(), &refused, &d), SL_OK);
		for (int i = 0; i < WAIT_LIMIT_S * 100; i++) {
			(void)work_sup_tick(f->sup, work_now_ns());
			json_t *r = work_sup_report(f->sup);
			size_t j;
			json_t *v;
			bool live = false;
			json_array_foreach(r, j, v) live = live || strcmp(json_string_value(json_object_get(v, "state")), "running") == 0;
			json_decref(r);
			if (!live)
				break;
			usleep(10000);
		}
		work_sup_free(f->sup);
	}
	json_decref(none);
	rm_rf(f->dir);
	free(f);
	return 0;
}

/* One desired item; argv is sh -c SCRIPT. */
static json_t *item(const char *job, int rank, const char *lease, int epoch, const char *script,
		    const char *restart, int grace)
{
	return json_pack("{s:s, s:i, s:s, s:i, s:s, s:[s,s,s], s:{s:s, s:s}, s:[i], s:[], s:s, s:i}",
			 "job", job, "rank", rank, "lease", lease, "epoch", epoch, "state", "run",
			 "argv", "sh", "-c", script, "env", "NODE_RANK", "1", "CUDA_VISIBLE_DEVICES",
			 "0", "gpus", 0, "nics", "restart", restart, "stop_grace_s", grace);
}

static void apply1(struct fx *f, json_t *it, int want_refused)
{
	json_t *a = json_array();
	int refused = -1;
	struct sl_diag d;
	sl_diag_clear(&d);
	json_array_append_new(a, it);
	assert_int_equal(work_sup_apply(f->sup, a, work_now_ns(), &refused, &d), SL_OK);
	assert_int_equal(refused, want_refused);
	json_decref(a);
}

/* The report entry of (job, rank), a new reference; NULL when absent. */
static json_t *entry(struct fx *f, const char *job, int rank)
{
	json_t *r = work_sup_report(f->sup), *v, *found = NULL;
	size_t i;
	json_array_foreach(r, i, v) if (strcmp(json_string_value(json_object_get(v, "job")), job) == 0 &&
					json_integer_value(json_object_get(v, "rank")) == rank) found = v;
	json_incref(found);
	json_decref(r);
	return found;
}

static const char *estate(json_t *e)
{
	return json_string_value(json_object_get(e, "state"));
}

static json_int_t eint(json_t *e, const char *k)
{
	return json_integer_value(json_object_get(e, k));
}

/* Ticks until (job, rank) is in state st (and, when restarts >= 0, has at
 * least that many restarts); returns its entry. */
static json_t *wait_state(struct fx *f, const char *job, int rank, const char *st, int restarts)
{
	for (int i = 0; i < WAIT_LIMIT_S * 100; i++) {
		(void)work_sup_tick(f->sup, work_now_ns());
		json_t *e = entry(f, job, rank);
		if (e && strcmp(estate(e), st) == 0 && (restarts < 0 || eint(e, "restarts") >= restarts))
			return e;
		json_decref(e);
		usleep(10000);
	}
	fail_msg("%s rank %d never reached state %s", job, rank, st);
	return NULL;
}

static char *read_log(struct fx *f, const char *job, int rank)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/jobs/%s/rank-%d.log", f->dir, job, rank);
	FILE *fp = fopen(p, "r");
	assert_non_null(fp);
	char *buf = calloc(1, 65536);
	assert_non_null(buf);
	size_t n = fread(buf, 1, 65535, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

/* Waits until the log of (job, rank) contains text. */
static void wait_log(struct fx *f, const char *job, int rank, const char *text)
{
	for (int i = 0; i < WAIT_LIMIT_S * 100; i++) {
		char *l = read_log(f, job, rank);
		bool ok = strstr(l, text) != NULL;
		free(l);
		if (ok)
			return;
		(void)work_sup_tick(f->sup, work_now_ns());
		usleep(10000);
	}
	fail_msg("log of %s rank %d never showed '%s'", job, rank, text);
}

static void test_process_group_env_log_exit_code(void **state)
{
	struct fx *f = *state;
	apply1(f, item("job-1", 1, "lease-1", 1,
		       "echo ppid=$PPID pgid=$(cut -d' ' -f5 /proc/$$/stat) sid=$(cut -d' ' -f6 /proc/$$/stat);"
		       "echo rank=$NODE_RANK cvd=$CUDA_VISIBLE_DEVICES dir=$SUANLI_STATE_DIR;"
		       "echo to-stderr >&2; read x; echo stdin=$?; exit 3",
		       "never", 5),
	       0);
	json_t *e = wait_state(f, "job-1", 1, "exited", -1);
	assert_int_equal(eint(e, "exit_code"), 3);
	assert_int_equal(eint(e, "signal"), 0);
	assert_int_equal(eint(e, "epoch"), 1);
	assert_non_null(json_object_get(e, "started_at"));
	assert_non_null(json_object_get(e, "ended_at"));
	int pid = (int)eint(e, "pid");
	json_decref(e);

	char *l = read_log(f, "job-1", 1), want[512];
	/* the reported pid leads the session and group; the command runs under it */
	snprintf(want, sizeof(want), "ppid=%d pgid=%d sid=%d\n", pid, pid, pid);
	assert_non_null(strstr(l, want));
	snprintf(want, sizeof(want), "rank=1 cvd=0 dir=%s\n", f->dir);
	assert_non_null(strstr(l, want));
	assert_non_null(strstr(l, "to-stderr\n"));
	assert_non_null(strstr(l, "stdin=1\n")); /* stdin is /dev/null: read hits EOF */
	free(l);
}

static void test_nccl_topo_file(void **state)
{
	struct fx *f = *state;
	struct sl_diag d;
	assert_int_equal(topo_builtin("hgx-h100-8", &f->disc.type), SL_OK);
	snprintf(f->disc.source, sizeof(f->disc.source), "simulate");
	work_sup_free(f->sup);
	assert_int_equal(work_sup_new(f->dir, &f->disc, work_now_ns(), &f->sup, &d), SL_OK);
	json_t *it = item("job-t", 2, "lease-t", 1,
			  "echo topo=$NCCL_TOPO_FILE; echo gpus=$(grep -c '<gpu ' $NCCL_TOPO_FILE)",
			  "never", 5);
	json_array_append_new(json_object_get(it, "gpus"), json_integer(3));
	apply1(f, it, 0);
	json_decref(wait_state(f, "job-t", 2, "exited", -1));
	char *l = read_log(f, "job-t", 2), want[512];
	snprintf(want, sizeof(want), "topo=%s/jobs/job-t/nccl-topo-2.xml\ngpus=2\n", f->dir);
	assert_string_equal(l, want);
	free(l);
}

static void test_signal_reported_and_path_lookup(void **state)
{
	struct fx *f = *state;
	apply1(f, item("job-2", 0, "lease-2", 1, "kill -9 $$", "never", 5), 0);
	json_t *e = wait_state(f, "job-2", 0, "exited", -1);
	assert_int_equal(eint(e, "signal"), 9);
	assert_int_equal(eint(e, "exit_code"), -1);
	json_decref(e);

	/* argv[0] not in PATH: exit 127 and the reason in the log */
	json_t *bad = item("job-3", 0, "lease-3", 1, "unused", "never", 5);
	json_array_set_new(json_object_get(bad, "argv"), 0, json_string("no-such-command-xyz"));
	apply1(f, bad, 0);
	e = wait_state(f, "job-3", 0, "exited", -1);
	assert_int_equal(eint(e, "exit_code"), 127);
	json_decref(e);
	char *l = read_log(f, "job-3", 0);
	assert_non_null(strstr(l, "cannot execute the command: no-such-command-xyz"));
	free(l);
}

static void test_restart_on_failure_counts(void **state)
{
	struct fx *f = *state;
	apply1(f, item("job-4", 0, "lease-4", 1, "echo run; exit 1", "on-failure", 5), 0);
	json_t *e = wait_state(f, "job-4", 0, "running", 2);
	assert_true(eint(e, "restarts") >= 2);
	json_decref(e);
	char *l = read_log(f, "job-4", 0);
	assert_non_null(strstr(l, "run\nrun\n"));
	free(l);

	/* on-failure does not restart a success */
	apply1(f, item("job-5", 0, "lease-5", 1, "exit 0", "on-failure", 5), 0);
	e = wait_state(f, "job-5", 0, "exited", -1);
	for (int i = 0; i < 150; i++) { /* longer than the first backoff */
		(void)work_sup_tick(f->sup, work_now_ns());
		usleep(10000);
	}
	json_decref(e);
	e = entry(f, "job-5", 0);
	assert_string_equal(estate(e), "exited");
	assert_int_equal(eint(e, "restarts"), 0);
	assert_int_equal(eint(e, "exit_code"), 0);
	json_decref(e);
}

static void test_stop_escalates_to_sigkill(void **state)
{
	struct fx *f = *state;
	apply1(f, item("job-6", 0, "lease-6", 1,
		       "trap '' TERM; echo ready; while :; do sleep 0.05; done", "always", 1),
	       0);
	wait_log(f, "job-6", 0, "ready");
	json_t *e = entry(f, "job-6", 0);
	pid_t pid = (pid_t)eint(e, "pid");
	json_decref(e);
	assert_true(work_sup_stop(f->sup, "job-6", 0, work_now_ns()));
	e = wait_state(f, "job-6", 0, "stopped", -1);
	assert_int_equal(eint(e, "signal"), SIGKILL);
	assert_int_equal(eint(e, "restarts"), 0); /* a stop is not restarted, even with always */
	json_decref(e);
	/* the whole group is gone (its sleep too) */
	for (int i = 0; i < 200 && kill(-pid, 0) == 0; i++)
		usleep(10000);
	assert_int_equal(kill(-pid, 0), -1);

	/* a child that honours SIGTERM ends with it, without SIGKILL */
	apply1(f, item("job-7", 0, "lease-7", 1, "echo ready; exec sleep 30", "never", 30), 0);
	wait_log(f, "job-7", 0, "ready");
	json_t *none = json_array();
	int refused;
	struct sl_diag d;
	assert_int_equal(work_sup_apply(f->sup, none, work_now_ns(), &refused, &d), SL_OK);
	json_decref(none);
	e = wait_state(f, "job-7", 0, "stopped", -1);
	assert_int_equal(eint(e, "signal"), SIGTERM);
	json_decref(e);
}

static void test_epochs(void **state)
{
	struct fx *f = *state;
	apply1(f, item("job-8", 0, "lease-8", 3, "echo e3; exec sleep 30", "never", 5), 0);
	wait_log(f, "job-8", 0, "e3");
	json_t *e = entry(f, "job-8", 0);
	json_int_t pid3 = eint(e, "pid");
	json_decref(e);

	/* a lower epoch is refused and changes nothing */
	apply1(f, item("job-8", 0, "lease-8", 2, "echo e2; exec sleep 30", "never", 5), 1);
	(void)work_sup_tick(f->sup, work_now_ns());
	e = entry(f, "job-8", 0);
	assert_string_equal(estate(e), "running");
	assert_int_equal(eint(e, "pid"), pid3);
	assert_int_equal(eint(e, "epoch"), 3);
	json_decref(e);
	/* ... also for another rank of the same lease */
	apply1(f, item("job-9", 1, "lease-8", 1, "echo never", "never", 5), 1);
	assert_null(entry(f, "job-9", 1));

	/* a higher one stops the old process and starts the new */
	apply1(f, item("job-8", 0, "lease-8", 4, "echo e4; exec sleep 30", "never", 5), 0);
	wait_log(f, "job-8", 0, "e4");
	e = entry(f, "job-8", 0);
	assert_string_equal(estate(e), "running");
	assert_int_equal(eint(e, "epoch"), 4);
	assert_true(eint(e, "pid") != pid3);
	json_decref(e);
	assert_int_equal(kill((pid_t)pid3, 0), -1); /* the old one was reaped */
	char *l = read_log(f, "job-8", 0);
	assert_null(strstr(l, "e2"));
	free(l);
}

static void test_readopt_after_restart(void **state)
{
	struct fx *f = *state;
	struct sl_diag d;
	apply1(f, item("job-10", 0, "lease-10", 2, "echo up; exec sleep 30", "never", 5), 0);
	wait_log(f, "job-10", 0, "up");
	json_t *e = entry(f, "job-10", 0);
	json_int_t pid = eint(e, "pid");
	json_decref(e);
	assert_int_equal(work_sup_save(f->sup, &d), SL_OK);
	work_sup_free(f->sup); /* the agent "crashes": its work keeps running */
	f->sup = NULL;
	assert_int_equal(kill((pid_t)pid, 0), 0);

	assert_int_equal(work_sup_new(f->dir, NULL, work_now_ns(), &f->sup, &d), SL_OK);
	e = entry(f, "job-10", 0);
	assert_non_null(e);
	assert_string_equal(estate(e), "running");
	assert_int_equal(eint(e, "pid"), pid);
	json_decref(e);
	/* the epoch memory survived too */
	apply1(f, item("job-10", 0, "lease-10", 1, "echo stale", "never", 5), 1);
	/* and the adopted process can be stopped */
	assert_true(work_sup_stop(f->sup, "job-10", 0, work_now_ns()));
	e = wait_state(f, "job-10", 0, "stopped", -1);
	assert_int_equal(eint(e, "signal"), SIGTERM);
	json_decref(e);

	/* a process that vanished while the agent was away is reported lost */
	apply1(f, item("job-11", 0, "lease-11", 1, "echo up; exec sleep 30", "never", 5), 0);
	wait_log(f, "job-11", 0, "up");
	e = entry(f, "job-11", 0);
	pid = eint(e, "pid");
	json_decref(e);
	assert_int_equal(work_sup_save(f->sup, &d), SL_OK);
	work_sup_free(f->sup);
	f->sup = NULL;
	assert_int_equal(kill(-(pid_t)pid, SIGKILL), 0);
	assert_int_equal(waitpid((pid_t)pid, NULL, 0), (pid_t)pid);
	assert_int_equal(work_sup_new(f->dir, NULL, work_now_ns(), &f->sup, &d), SL_OK);
	e = entry(f, "job-11", 0);
	assert_non_null(e);
	assert_string_equal(estate(e), "exited");
	assert_true(json_is_true(json_object_get(e, "lost")));
	assert_int_equal(eint(e, "exit_code"), -1);
	json_decref(e);
}

static void test_bad_answers_change_nothing(void **state)
{
	struct fx *f = *state;
	struct sl_diag d;
	int refused;
	static const char *const bad[] = {
		"[{\"job\": \"../etc\", \"rank\": 0, \"lease\": \"l\", \"epoch\": 1, \"state\": \"run\", \"argv\": [\"true\"]}]",
		"[{\"job\": \"j\", \"rank\": -1, \"lease\": \"l\", \"epoch\": 1, \"state\": \"run\", \"argv\": [\"true\"]}]",
		"[{\"job\": \"j\", \"rank\": 0, \"lease\": \"l\", \"epoch\": 1, \"state\": \"go\", \"argv\": [\"true\"]}]",
		"[{\"job\": \"j\", \"rank\": 0, \"lease\": \"l\", \"epoch\": 1, \"state\": \"run\", \"argv\": []}]",
		"[{\"job\": \"j\", \"rank\": 0, \"lease\": \"l\", \"epoch\": 1, \"state\": \"run\", \"argv\": [\"true\"], \"env\": {\"A=B\": \"x\"}}]",
		"[{\"job\": \"j\", \"rank\": 0, \"lease\": \"l\", \"epoch\": 1, \"state\": \"run\", \"argv\": [\"true\"], \"gpus\": [16]}]",
		"[{\"job\": \"j\", \"rank\": 0, \"lease\": \"l\", \"epoch\": 1, \"state\": \"run\", \"argv\": [\"true\"], \"restart\": \"sometimes\"}]",
		"[{\"job\": \"j\", \"rank\": 0, \"lease\": \"l\", \"epoch\": 1, \"state\": \"run\", \"argv\": [\"true\"]},"
		" {\"job\": \"j\", \"rank\": 0, \"lease\": \"l\", \"epoch\": 1, \"state\": \"run\", \"argv\": [\"true\"]}]",
		"{\"job\": \"j\"}",
	};
	/* long words are fine (the controller allows 64 KiB of argv) */
	char *word = malloc(20001);
	assert_non_null(word);
	memset(word, 'x', 20000);
	word[20000] = '\0';
	char script[20100];
	snprintf(script, sizeof(script), "echo %s | wc -c", word);
	free(word);
	apply1(f, item("job-13", 0, "lease-13", 1, script, "never", 5), 0);
	wait_log(f, "job-13", 0, "20001");
	apply1(f, item("job-12", 0, "lease-12", 1, "echo up; exec sleep 30", "never", 5), 0);
	wait_log(f, "job-12", 0, "up");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *a = json_loads(bad[i], 0, NULL);
		assert_non_null(a);
		sl_diag_clear(&d);
		assert_int_not_equal(work_sup_apply(f->sup, a, work_now_ns(), &refused, &d), SL_OK);
		assert_true(d.msg[0] != '\0');
		json_decref(a);
	}
	json_t *big = json_array();
	for (int i = 0; i <= WORK_MAX_ITEMS; i++)
		json_array_append_new(big, item("job-x", i, "lease-x", 1, "true", "never", 1));
	assert_int_equal(work_sup_apply(f->sup, big, work_now_ns(), &refused, &d), SL_ELIMIT);
	json_decref(big);
	(void)work_sup_tick(f->sup, work_now_ns());
	assert_int_equal(work_sup_count(f->sup), 2);
	json_t *e = entry(f, "job-12", 0);
	assert_string_equal(estate(e), "running");
	json_decref(e);
}

/* Hostile items: every field of a valid item replaced, in turn and at random,
 * by values of the wrong type, out of range or too long. Each parse is
 * refused with a message or gives a spec within the named bounds; never a
 * crash or a leak (ASan). No process is started. */
/* --host-processes: the owner's items run as host processes, every other
 * tenant's fails at start with the reason in its log; tenant and image travel
 * through work.json. */
static void test_host_tenant_only(void **state)
{
	struct fx *f = *state;
	work_sup_set_engine(f->sup, NULL, "acme");
	json_t *mine = item("job-000001", 0, "ls-1", 1, "echo mine", "never", 1);
	json_t *theirs = item("job-000002", 0, "ls-2", 1, "echo theirs", "never", 1);
	json_object_set_new(mine, "tenant", json_string("acme"));
	json_object_set_new(theirs, "tenant", json_string("beta"));
	json_object_set_new(theirs, "image", json_string("localhost/suanli/base:1"));
	json_t *a = json_pack("[o,o]", mine, theirs);
	int refused = -1;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(work_sup_apply(f->sup, a, work_now_ns(), &refused, &d), SL_OK);
	json_decref(a);
	json_t *e = wait_state(f, "job-000001", 0, "exited", -1);
	assert_int_equal(eint(e, "exit_code"), 0);
	json_decref(e);
	wait_log(f, "job-000001", 0, "mine");
	e = wait_state(f, "job-000002", 0, "exited", -1);
	assert_int_equal(eint(e, "exit_code"), 127);
	json_decref(e);
	wait_log(f, "job-000002", 0, "node runs only tenant acme's work; job job-000002 is tenant beta's");
	char *l = read_log(f, "job-000002", 0);
	assert_null(strstr(l, "theirs")); /* never ran */
	free(l);
	/* the spec keeps tenant and image across a save */
	assert_int_equal(work_sup_save(f->sup, &d), SL_OK);
	char p[256];
	snprintf(p, sizeof(p), "%s/work.json", f->dir);
	json_t *w = json_load_file(p, 0, NULL);
	assert_non_null(w);
	char *text = json_dumps(w, JSON_COMPACT);
	assert_non_null(strstr(text, "\"image\":\"localhost/suanli/base:1\""));
	assert_non_null(strstr(text, "\"tenant\":\"beta\""));
	free(text);
	json_decref(w);
}

/* A rank whose log passes the limit is killed, not restarted, and says why;
 * the next start of the same rank is refused while the log is that big. */
static void test_log_limit(void **state)
{
	struct fx *f = *state;
	work_sup_set_log_limit(f->sup, 1 << 20);
	apply1(f, item("job-000001", 0, "ls-1", 1, "yes | head -c 3000000; exec sleep 60", "always", 1), 0);
	json_t *e = wait_state(f, "job-000001", 0, "exited", -1);
	assert_int_equal(eint(e, "signal"), SIGKILL);
	assert_int_equal(eint(e, "restarts"), 0);
	assert_non_null(strstr(json_string_value(json_object_get(e, "error")),
			       "its output passed the node's log limit of 1 MiB; killed"));
	json_decref(e);
}

static void test_spec_tenant_image(void **state)
{
	(void)state;
	static const char *const bad[] = {"{\"image\": \"has space\"}", "{\"image\": \"\"}",
					  "{\"image\": 7}", "{\"tenant\": \"-x\"}",
					  "{\"tenant\": \"a/b\"}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *o = item("job-000001", 0, "ls-1", 1, "true", "never", 1);
		json_t *extra = json_loads(bad[i], 0, NULL);
		json_object_update(o, extra);
		struct work_spec sp;
		struct sl_diag d;
		sl_diag_clear(&d);
		assert_int_equal(work_spec_from_json(o, &sp, &d), SL_EINVAL);
		assert_non_null(strstr(d.msg, bad[i][2] == 'i' ? "\"image\"" : "\"tenant\""));
		json_decref(extra);
		json_decref(o);
	}
}

/* "net": the rank's fabric address and its peers' blocks (fabric.h),
 * kept through work.json; anything else in it refuses the item. */
static void test_spec_net(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"{\"net\": {\"addr\": \"10.0.0.300\", \"peers\": []}}",
		"{\"net\": {\"addr\": \"10.0.0.1\"}}",
		"{\"net\": {\"addr\": \"10.0.0.1\", \"peers\": [\"10.0.0.0/24 -j\"]}}",
		"{\"net\": {\"addr\": \"10.0.0.1\", \"peers\": [7]}}", "{\"net\": 1}"};
	struct work_spec sp;
	struct sl_diag d;
	sl_diag_clear(&d);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *o = item("job-000001", 0, "ls-1", 1, "true", "never", 1);
		json_t *extra = json_loads(bad[i], 0, NULL);
		assert_non_null(extra);
		json_object_update(o, extra);
		assert_int_equal(work_spec_from_json(o, &sp, &d), SL_EINVAL);
		assert_non_null(strstr(d.msg, "\"net"));
		json_decref(extra);
		json_decref(o);
	}
	json_t *o = item("job-000001", 0, "ls-1", 1, "true", "never", 1);
	json_object_set_new(o, "net", json_pack("{s:s, s:[s,s]}", "addr", "10.77.0.129", "peers",
						"10.77.0.128/30", "10.77.0.4/32"));
	assert_int_equal(work_spec_from_json(o, &sp, &d), SL_OK);
	assert_string_equal(sp.net_addr, "10.77.0.129");
	assert_string_equal(sp.net_peers, "10.77.0.128/30,10.77.0.4/32");
	json_t *back = work_spec_to_json(&sp);
	assert_true(json_equal(json_object_get(back, "net"), json_object_get(o, "net")));
	work_spec_release(&sp);
	json_decref(back);
	json_decref(o);
}

/* "instance": an instance id as the controller makes them, kept through
 * work.json; anything else refuses the item. */
static void test_spec_instance(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"{\"instance\": \"in-\"}", "{\"instance\": \"in-00x1\"}",
		"{\"instance\": \"job-000001\"}", "{\"instance\": \"in-1;rm -rf /\"}",
		"{\"instance\": \"in-12345678901234567890\"}", "{\"instance\": 7}",
		"{\"instance\": \"\"}"};
	struct work_spec sp;
	struct sl_diag d;
	sl_diag_clear(&d);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *o = item("job-000001", 0, "ls-1", 1, "true", "never", 1);
		json_t *extra = json_loads(bad[i], 0, NULL);
		assert_non_null(extra);
		json_object_update(o, extra);
		assert_int_equal(work_spec_from_json(o, &sp, &d), SL_EINVAL);
		assert_non_null(strstr(d.msg, "\"instance\""));
		json_decref(extra);
		json_decref(o);
	}
	json_t *o = item("job-000001", 0, "ls-1", 1, "true", "never", 1);
	json_object_set_new(o, "instance", json_string("in-000001"));
	assert_int_equal(work_spec_from_json(o, &sp, &d), SL_OK);
	assert_string_equal(sp.instance, "in-000001");
	json_t *back = work_spec_to_json(&sp);
	assert_string_equal(json_string_value(json_object_get(back, "instance")), "in-000001");
	work_spec_release(&sp);
	json_decref(back);
	json_decref(o);
}

/* A rank inside an instance that does not run on this node fails at start
 * with the reason, and never runs as anything else (a host process here). */
static void test_instance_not_running(void **state)
{
	struct fx *f = *state;
	char marker[128];
	snprintf(marker, sizeof(marker), "%s/ran", f->dir);
	char script[256];
	snprintf(script, sizeof(script), "touch '%s'", marker);
	json_t *o = item("job-000001", 0, "ls-1", 1, script, "on-failure", 1);
	json_object_set_new(o, "instance", json_string("in-000007"));
	apply1(f, o, 0);
	json_t *e = wait_state(f, "job-000001", 0, "exited", -1);
	assert_int_equal(eint(e, "exit_code"), 127);
	assert_int_equal(eint(e, "restarts"), 0); /* a start failure: not again */
	assert_string_equal(json_string_value(json_object_get(e, "error")),
			    "cannot start: instance in-000007 is not running on this node; "
			    "start it first");
	json_decref(e);
	char *log = read_log(f, "job-000001", 0);
	assert_non_null(strstr(log, "instance in-000007 is not running on this node"));
	free(log);
	assert_int_equal(access(marker, F_OK), -1);
}

static void test_spec_parse_hostile(void **state)
{
	(void)state;
	static const char *const keys[] = {"job",  "rank", "lease", "epoch",   "state",       "argv",
					   "env",  "gpus", "nics",  "restart", "stop_grace_s", "extra"};
	char *longs = malloc(WORK_STR_MAX + 2);
	assert_non_null(longs);
	memset(longs, 'a', WORK_STR_MAX + 1);
	longs[WORK_STR_MAX + 1] = '\0';
	json_t *vals[] = {json_null(), json_true(), json_integer(-1), json_integer(INT64_MAX),
			  json_real(1e300), json_string(""), json_string("../.."), json_string(longs),
			  json_stringn("a\0b", 3), json_array(), json_object(),
			  json_pack("[s,i]", "x", 1), json_pack("{s:i}", "A", 1),
			  json_pack("[i,i,i]", 0, 0, 1), json_pack("{s:s}", "1BAD", "v"),
			  json_string("on-failure"), json_integer(16), json_integer(3601)};
	size_t nvals = sizeof(vals) / sizeof(vals[0]);
	unsigned seed = 12345;
	int ok_count = 0;
	for (int round = 0; round < 3000; round++) {
		json_t *it = item("job-f", 1, "lease-f", 2, "true", "never", 5);
		int edits = 1 + round % 3;
		for (int k = 0; k < edits; k++) {
			seed = seed * 1103515245u + 12345u;
			const char *key = keys[(seed >> 8) % (sizeof(keys) / sizeof(keys[0]))];
			seed = seed * 1103515245u + 12345u;
			size_t v = (seed >> 8) % (nvals + 1);
			if (v == nvals)
				json_object_del(it, key);
			else
				json_object_set(it, key, vals[v]);
		}
		struct work_spec sp;
		struct sl_diag d;
		sl_diag_clear(&d);
		enum sl_err e = work_spec_from_json(it, &sp, &d);
		if (e == SL_OK) {
			ok_count++;
			assert_true(sp.argc >= 1 && sp.argc <= WORK_ARGV_MAX && sp.argv[sp.argc] == NULL);
			assert_true(sp.rank >= 0 && sp.rank <= WORK_RANK_MAX && sp.epoch >= 0);
			assert_true(strlen(sp.job) > 0 && strchr(sp.job, '/') == NULL && sp.job[0] != '.');
			assert_true(sp.stop_grace_s >= -1 && sp.stop_grace_s <= WORK_GRACE_MAX_S);
			json_t *back = work_spec_to_json(&sp);
			assert_non_null(back);
			json_decref(back);
			work_spec_release(&sp);
		} else {
			assert_true(d.msg[0] != '\0');
		}
		json_decref(it);
	}
	assert_true(ok_count > 0); /* some edits (an extra field, a dropped optional one) are fine */
	for (size_t i = 0; i < nvals; i++)
		json_decref(vals[i]);
	free(longs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_process_group_env_log_exit_code, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nccl_topo_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_signal_reported_and_path_lookup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_on_failure_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_escalates_to_sigkill, setup, teardown),
		cmocka_unit_test_setup_teardown(test_epochs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readopt_after_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_answers_change_nothing, setup, teardown),
		cmocka_unit_test(test_spec_parse_hostile),
		cmocka_unit_test_setup_teardown(test_host_tenant_only, setup, teardown),
		cmocka_unit_test(test_spec_tenant_image),
		cmocka_unit_test(test_spec_net),
		cmocka_unit_test(test_spec_instance),
		cmocka_unit_test_setup_teardown(test_instance_not_running, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_limit, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* work_inst.c - a job's rank inside an instance (work.h,
 * work_sup_set_instances; docs/instances.md "Jobs in an instance"): not a
 * container of its own but `podman exec` in the instance's running container
 * on this node, so it sees /data, /root, the instance's GPUs and
 * environment. The shim (work.c) runs podman exec as it runs podman run: the
 * rank's output into its log, podman exec's exit status (the command's) as
 * the rank's. podman exec does not forward a stop signal to the command, so
 * the command records its pid in the container's /run (PODMAN_EXEC_SH) and
 * a stop signals it there (PODMAN_KILL_SH). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "inst.h"
#include "log.h"
#include "podman_args.h"
#include "work_int.h"

void work_sup_set_instances(struct work_sup *s, const struct inst_sup *inst)
{
	s->inst = inst;
}

/* The pid file of the item's current run, inside the container (its /run
 * is a tmpfs of its own: podman_args.c). Job ids are [A-Za-z0-9._-]. */
static void pid_file(const struct work_item *it, char *buf, size_t n)
{
	snprintf(buf, n, "/run/suanli-job-%s-r%d-e%lld-n%d.pid", it->spec.job, it->spec.rank,
		 (long long)it->spec.epoch, it->restarts);
}

enum sl_err inst_item_argv(struct work_sup *s, struct work_item *it, char ***argv,
			   struct sl_diag *d)
{
	const struct work_spec *sp = &it->spec;
	char name[WORK_ID_MAX + 64], pf[WORK_ID_MAX + 96];
	if (!inst_sup_running(s->inst, sp->instance, name, sizeof(name))) {
		sl_diag_hint(d, "`suanli instance start %s`, then run the job again", sp->instance);
		return sl_diag_set(d, SL_ECONFLICT, "instance %s is not running on this node; "
						    "start it first", sp->instance);
	}
	pid_file(it, pf, sizeof(pf));
	struct podman_exec x = {engine_podman(s->eng), engine_runtime(s->eng), "cgroupfs", name,
				"/root", pf, (const char *const *)sp->env, sp->nenv, sp->argv,
				sp->argc};
	return podman_exec_argv(&x, argv, d);
}

void work_item_signal(struct work_sup *s, struct work_item *it, int sig)
{
	char name[WORK_ID_MAX + 64], pf[WORK_ID_MAX + 96];
	if (it->pid <= 0)
		return;
	if (it->spec.instance[0]) {
		if (inst_sup_running(s->inst, it->spec.instance, name, sizeof(name))) {
			pid_file(it, pf, sizeof(pf));
			char *kv[] = {(char *)engine_podman(s->eng), "--runtime",
				      (char *)engine_runtime(s->eng), "--cgroup-manager", "cgroupfs",
				      "exec", name, PODMAN_ENTRY_SH, "-c", PODMAN_KILL_SH,
				      PODMAN_KILL_ARG0, pf, sig == SIGKILL ? "KILL" : "TERM", NULL};
			engine_detached(s->eng, kv);
		} else {
			sl_log_warn("the instance of a job no longer runs here; its rank ends with it",
				    "job=%s rank=%d instance=%s", it->spec.job, it->spec.rank,
				    it->spec.instance);
		}
		if (sig != SIGKILL)
			return; /* podman exec ends with the command, its status the command's */
	}
	/* the process group of a live leader (or the leader alone, before its
	 * setsid has run) */
	if (kill(-it->pid, sig) != 0 && errno == ESRCH)
		(void)kill(it->pid, sig);
}

/* work.c - the work supervisor (see work.h): items, processes (and their
 * shims), timers.
 *
 * An item moves PENDING -> RUNNING -> (STOPPING) -> EXITED | STOPPED, or
 * through BACKOFF back to PENDING when its restart policy says so. Only this
 * file sends signals or forks. A process is identified by its pid and its
 * start time (/proc/PID/stat field 22), so a recycled pid is never mistaken
 * for our work after an agent restart; children of this process are reaped
 * with waitpid, adopted ones (the agent restarted) are polled with kill(0)
 * and /proc. The process group of an item is killed with SIGKILL once its
 * leader is gone, so no stray member keeps a GPU after its rank ended. */
#include "work.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "log.h"
#include "nccl_topo.h"
#include "state.h"
#include "work_int.h"

extern char **environ;

int64_t work_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- processes ------------------------------------------------------- */

/* Reads state and start time of pid from /proc; false when it is gone. */
static bool proc_stat(pid_t pid, char *state, uint64_t *ticks)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return false;
	p += 2;
	*state = *p;
	/* field 3 is the state; starttime is field 22 */
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return false;
		p++;
	}
	*ticks = strtoull(p, NULL, 10);
	return true;
}

uint64_t work_proc_start_ticks(pid_t pid)
{
	char st;
	uint64_t t = 0;
	return proc_stat(pid, &st, &t) ? t : 0;
}

/* Our process (same start time), alive and not a zombie. */
static bool proc_alive(pid_t pid, uint64_t ticks)
{
	char st;
	uint64_t t;
	if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM))
		return false;
	return proc_stat(pid, &st, &t) && t == ticks && st != 'Z' && st != 'X';
}

/* How the process of it ended, from the record its shim left; false when
 * there is none for this very process. */
static bool read_exit(const struct work_sup *s, const struct work_item *it, int *status)
{
	char p[STATE_PATH_MAX], buf[64];
	long long pid, st;
	if (state_path(p, sizeof(p), s->dir, NULL, "jobs/%s/rank-%d.exit", it->spec.job,
		       it->spec.rank) != SL_OK)
		return false;
	FILE *f = fopen(p, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (sscanf(buf, "%lld %lld", &pid, &st) != 2 || pid != (long long)it->pid ||
	    st < INT32_MIN || st > INT32_MAX)
		return false;
	*status = (int)st;
	return true;
}

/* 1: alive; 0: exited, *status from waitpid or the shim's record; -1:
 * vanished (exit unknown). */
static int item_poll(const struct work_sup *s, struct work_item *it, int *status)
{
	if (it->child) {
		pid_t r = waitpid(it->pid, status, WNOHANG);
		if (r == it->pid)
			return 0;
		if (r == 0) {
			it->seen = true;
			return 1;
		}
		if (errno != ECHILD)
			return 1;
		it->child = false;
	}
	if (!proc_alive(it->pid, it->start_ticks))
		return read_exit(s, it, status) ? 0 : -1;
	it->seen = true;
	return 1;
}

static void wall_iso(int64_t t, char *buf, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* One of the item's env entries for the child: a visible-devices variable
 * that lists exactly the item's GPUs ("2,5") is renumbered "0,1" when the
 * rank runs in a container (it holds only its GPUs, and the runtime
 * enumerates them from 0); anything else is copied. NULL on ENOMEM. */
char *work_item_env(const char *kv, gpumask_t gpus, bool local)
{
	static const char *const keys[] = {"CUDA_VISIBLE_DEVICES=", "ASCEND_RT_VISIBLE_DEVICES="};
	char phys[TOPO_MAX_GPUS * 4], loc[TOPO_MAX_GPUS * 4];
	size_t po = 0, lo = 0;
	int k = 0;

	for (int g = 0; g < TOPO_MAX_GPUS; g++)
		if (gpus & ((gpumask_t)1 << g)) {
			po += (size_t)snprintf(phys + po, sizeof(phys) - po, "%s%d", po ? "," : "", g);
			lo += (size_t)snprintf(loc + lo, sizeof(loc) - lo, "%s%d", lo ? "," : "", k++);
		}
	phys[po] = loc[lo] = '\0';
	for (size_t i = 0; local && gpus && i < sizeof(keys) / sizeof(keys[0]); i++) {
		size_t kl = strlen(keys[i]);
		if (strncmp(kv, keys[i], kl) != 0 || strcmp(kv + kl, phys) != 0)
			continue;
		char *r = malloc(kl + lo + 1);
		if (r)
			snprintf(r, kl + lo + 1, "%s%s", keys[i], loc);
		return r;
	}
	return strdup(kv);
}

/* The environment of a child: ours, minus what the item or the agent sets,
 * plus those (local: see item_env). NULL on ENOMEM; free with free_strv. */
static char **build_env(const struct work_spec *sp, const char *topo, const char *dir,
			bool local)
{
	size_t nenv = 0, n = 0;
	while (environ && environ[nenv])
		nenv++;
	char **v = calloc(nenv + sp->nenv + 3, sizeof(char *));
	if (!v)
		return NULL;
	char *extra[2] = {NULL, NULL};
	size_t tl = strlen(topo) + sizeof("NCCL_TOPO_FILE=");
	size_t dl = strlen(dir) + sizeof("SUANLI_STATE_DIR=");
	extra[0] = topo[0] ? malloc(tl) : NULL;
	extra[1] = dir[0] ? malloc(dl) : NULL;
	if ((topo[0] && !extra[0]) || (dir[0] && !extra[1])) {
		free(extra[0]);
		free(extra[1]);
		free(v);
		return NULL;
	}
	if (extra[0])
		snprintf(extra[0], tl, "NCCL_TOPO_FILE=%s", topo);
	if (extra[1])
		snprintf(extra[1], dl, "SUANLI_STATE_DIR=%s", dir);
	for (size_t i = 0; i < nenv; i++) {
		const char *e = environ[i], *eq = strchr(e, '=');
		size_t kl = eq ? (size_t)(eq - e) + 1 : strlen(e);
		bool over = false;
		for (size_t j = 0; !over && j < sp->nenv; j++)
			over = strncmp(sp->env[j], e, kl) == 0;
		for (size_t j = 0; !over && j < 2; j++)
			over = extra[j] && strncmp(extra[j], e, kl) == 0;
		if (!over && !(v[n++] = strdup(e)))
			goto oom;
	}
	for (size_t j = 0; j < sp->nenv; j++)
		if (!(v[n++] = work_item_env(sp->env[j], sp->gpus, local)))
			goto oom;
	for (size_t j = 0; j < 2; j++)
		if (extra[j])
			v[n++] = extra[j];
	return v;
oom:
	for (size_t j = 0; j < n; j++)
		free(v[j]);
	free(v);
	free(extra[0]);
	free(extra[1]);
	return NULL;
}

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* Writes the NCCL topology of the item into jobs/J/nccl-topo-R.xml; path is
 * left "" when there is no discovery. */
static enum sl_err write_topo(struct work_sup *s, const struct work_spec *sp, char *path,
			      size_t n, struct sl_diag *d)
{
	const char *nics[TOPO_MAX_NICS];
	enum sl_err e;

	path[0] = '\0';
	if (!s->disc)
		return SL_OK;
	for (int i = 0; i < sp->nnics; i++)
		nics[i] = sp->nics[i];
	size_t need = nccl_topo_xml(s->disc, sp->gpus, nics, sp->nnics, NULL, 0);
	char *xml = malloc(need + 1);
	if (!xml)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	nccl_topo_xml(s->disc, sp->gpus, nics, sp->nnics, xml, need + 1);
	e = state_path(path, n, s->dir, d, "jobs/%s/nccl-topo-%d.xml", sp->job, sp->rank);
	if (e == SL_OK)
		e = state_write_atomic(path, xml, need, 0644, d);
	free(xml);
	if (e != SL_OK)
		path[0] = '\0';
	return e;
}

/* Writes "PID STATUS\n" to path (the shim's record of how the command
 * ended). Async-signal-safe. */
static void write_exit(const char *path, pid_t pid, int status)
{
	char buf[48], tmp[24];
	size_t n = 0;
	long long vals[2] = {(long long)pid, (long long)status};
	for (int k = 0; k < 2; k++) {
		long long v = vals[k];
		size_t t = 0;
		if (v < 0) {
			buf[n++] = '-';
			v = -v;
		}
		do {
			tmp[t++] = (char)('0' + v % 10);
			v /= 10;
		} while (v && t < sizeof(tmp));
		while (t)
			buf[n++] = tmp[--t];
		buf[n++] = k == 0 ? ' ' : '\n';
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0) {
		(void)!write(fd, buf, n);
		(void)fsync(fd);
		(void)close(fd);
	}
}

/* In the child, after fork: only async-signal-safe calls. The child becomes
 * the leader of a new session and process group and forks the command (for a
 * container: podman run, which forwards the stop signals into it); it stays as
 * a small shim that waits for the command, records how it ended in exit_path
 * (so an agent that restarted meanwhile, and is no longer the parent, still
 * learns the exit code) and ends the same way. It ignores the stop signals the
 * group receives; SIGKILL ends it with the command. */
static void child_run(int null_fd, int log_fd, char **argv, char **envp, const char *exit_path)
{
	struct sigaction sa;
	sigset_t all;
	int st;

	(void)setsid();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);
	sigemptyset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, NULL);
	if (dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)
		_exit(127);
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
#endif
		for (int fd = 3; fd < 4096; fd++)
			(void)close(fd);
	pid_t cmd = work_fork_retry();
	if (cmd == 0) {
		environ = envp;
		work_exec_retry(argv);
		static const char msg[] = "suanli-agent: cannot execute the command: ";
		const char *why = strerror(errno);
		(void)!write(2, msg, sizeof(msg) - 1);
		(void)!write(2, argv[0], strlen(argv[0]));
		(void)!write(2, ": ", 2);
		(void)!write(2, why, strlen(why));
		(void)!write(2, "\n", 1);
		_exit(127);
	}
	if (cmd < 0) {
		work_say_errno("suanli-agent: cannot start the command: fork: ");
		_exit(127);
	}
	sa.sa_handler = SIG_IGN;
	(void)sigaction(SIGTERM, &sa, NULL);
	(void)sigaction(SIGINT, &sa, NULL);
	(void)sigaction(SIGHUP, &sa, NULL);
	(void)sigaction(SIGQUIT, &sa, NULL);
	while (waitpid(cmd, &st, 0) < 0)
		if (errno != EINTR)
			_exit(127);
	write_exit(exit_path, getpid(), st);
	if (WIFEXITED(st))
		_exit(WEXITSTATUS(st));
	/* end by the same signal, without a core file of the shim */
	struct rlimit no_core = {0, 0};
	(void)setrlimit(RLIMIT_CORE, &no_core);
	sa.sa_handler = SIG_DFL;
	(void)sigaction(WTERMSIG(st), &sa, NULL);
	(void)kill(getpid(), WTERMSIG(st));
	_exit(128 + WTERMSIG(st));
}

/* Starts the item's process (a container's podman run, or the command). On
 * error the item is left without a process. */
static enum sl_err item_spawn(struct work_sup *s, struct work_item *it, int64_t now_ns,
			      struct sl_diag *d)
{
	char jobdir[STATE_PATH_MAX], logp[STATE_PATH_MAX], topo[STATE_PATH_MAX];
	char exitp[STATE_PATH_MAX];
	const struct work_spec *sp = &it->spec;
	bool ctr = item_in_container(s, sp);
	char **cargv = NULL, **envp;
	enum sl_err e;

	if (s->host_tenant && strcmp(sp->tenant, s->host_tenant) != 0) {
		sl_diag_hint(d, "this server runs host processes for the tenant that owns it, "
				"and nobody else's work");
		return sl_diag_set(d, SL_EFORBIDDEN, "node runs only tenant %s's work; job %s is "
						     "tenant %s's", s->host_tenant, sp->job,
				   sp->tenant[0] ? sp->tenant : "(unknown)");
	}
	if ((e = state_path(jobdir, sizeof(jobdir), s->dir, d, "jobs/%s", sp->job)) != SL_OK ||
	    (e = state_mkdirs(jobdir, 0700, d)) != SL_OK ||
	    (e = state_path(logp, sizeof(logp), s->dir, d, "jobs/%s/rank-%d.log", sp->job,
			    sp->rank)) != SL_OK ||
	    (e = state_path(exitp, sizeof(exitp), s->dir, d, "jobs/%s/rank-%d.exit", sp->job,
			    sp->rank)) != SL_OK ||
	    (e = write_topo(s, sp, topo, sizeof(topo), d)) != SL_OK ||
	    (ctr && (e = sp->instance[0] ? inst_item_argv(s, it, &cargv, d)
					 : ctr_argv(s, it, topo, &cargv, d)) != SL_OK))
		return e;
	/* a container sees its topology at PODMAN_TOPO and nothing of ours */
	envp = build_env(sp, ctr && topo[0] ? PODMAN_TOPO : topo, ctr ? "" : s->dir, ctr);
	int log_fd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	int open_errno = errno;
	int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (log_fd < 0 || null_fd < 0 || !envp) {
		if (log_fd < 0) {
			it->start_errno = open_errno;
			e = sl_diag_set(d, SL_EIO, "cannot open the rank's log %s: %s (errno %d)", logp,
					strerror(open_errno), open_errno);
		} else {
			e = sl_diag_set(d, SL_ENOMEM, "cannot prepare the process: %s",
					"out of memory or no /dev/null");
		}
		if (log_fd >= 0)
			close(log_fd);
		if (null_fd >= 0)
			close(null_fd);
		free_strv(envp);
		podman_argv_free(cargv);
		return e;
	}
	(void)unlink(exitp);
	pid_t pid = fork();
	if (pid == 0)
		child_run(null_fd, log_fd, ctr ? cargv : sp->argv, envp, exitp);
	int fork_errno = errno;
	close(log_fd);
	close(null_fd);
	free_strv(envp);
	podman_argv_free(cargv);
	if (pid < 0) {
		it->start_errno = fork_errno;
		return sl_diag_set(d, SL_EIO, "cannot fork: %s (errno %d)", strerror(fork_errno),
				   fork_errno);
	}
	it->start_errno = 0;
	it->start_tries = 0;
	it->pid = pid;
	it->child = true;
	it->start_ticks = work_proc_start_ticks(pid);
	it->state = IT_RUNNING;
	it->killed = false;
	it->started_at = (int64_t)time(NULL);
	it->ended_at = 0;
	it->run_start_ns = now_ns;
	it->exit_code = 0;
	it->signal = 0;
	it->lost = false;
	it->reported = false;
	s->dirty = true;
	char name[WORK_ID_MAX + 64] = "";
	if (ctr)
		ctr_name(s, it, name, sizeof(name));
	sl_log_info("work started", "job=%s rank=%d epoch=%lld pid=%d argv0=%s container=%s", sp->job,
		    sp->rank, (long long)sp->epoch, (int)pid, sp->argv[0], ctr ? name : "-");
	return SL_OK;
}

/* ---- state changes --------------------------------------------------- */

static void item_replace(struct work_item *it)
{
	work_spec_release(&it->spec);
	it->spec = *it->next;
	free(it->next);
	it->next = NULL;
	it->state = IT_PENDING;
	it->want_stop = false;
	it->restarts = 0;
	it->consec = 0;
	it->lost = false;
	it->reported = false;
}

static int64_t backoff_ns(int consec)
{
	int64_t ns = WORK_BACKOFF_MIN_NS;
	for (int i = 0; i < consec && ns < WORK_BACKOFF_MAX_NS; i++)
		ns *= 2;
	return ns < WORK_BACKOFF_MAX_NS ? ns : WORK_BACKOFF_MAX_NS;
}

/* The item's process ended: status from waitpid, or lost (status < 0). */
static void item_ended(struct work_sup *s, struct work_item *it, int status, bool lost,
		       int64_t now_ns)
{
	/* Stray members of its group. Only when this agent saw the leader alive
	 * (its child, or adopted and seen at the last poll): while members live,
	 * the group id cannot be handed to another process. A process that
	 * vanished while the agent was away may have had its pid reused. */
	if ((!lost || it->seen) && it->pid > 0)
		(void)kill(-it->pid, SIGKILL);
	/* and the container, whatever podman run did on its way out */
	item_ctr_remove(s, it);
	it->seen = false;
	it->ended_at = (int64_t)time(NULL);
	if (lost && it->killed) { /* our SIGKILL ended it, shim and all */
		lost = false;
		status = SIGKILL;
	}
	it->lost = lost;
	it->exit_code = -1;
	it->signal = 0;
	if (!lost && WIFEXITED(status))
		it->exit_code = WEXITSTATUS(status);
	else if (!lost && WIFSIGNALED(status))
		it->signal = WTERMSIG(status);
	if (it->pulling && it->exit_code == 125 && item_in_container(s, &it->spec))
		ctr_pull_failed(s, it); /* podman's own failure: its error into the state */
	it->pulling = false;
	s->dirty = true;
	sl_log_info("work ended", "job=%s rank=%d pid=%d exit_code=%d signal=%d lost=%d",
		    it->spec.job, it->spec.rank, (int)it->pid, it->exit_code, it->signal,
		    (int)lost);
	if (it->want_stop) {
		it->state = IT_STOPPED;
		if (it->next)
			item_replace(it);
		return;
	}
	bool failed = lost || it->exit_code != 0 || it->signal != 0;
	bool again = !it->log_full && !it->error[0] /* a failed pull: not again */ && (it->spec.restart == WORK_RESTART_ALWAYS ||
				       (it->spec.restart == WORK_RESTART_ON_FAILURE && failed && !lost));
	if (!again) {
		it->state = IT_EXITED;
		return;
	}
	if (now_ns - it->run_start_ns >= (int64_t)WORK_BACKOFF_RESET_S * 1000000000LL)
		it->consec = 0;
	it->deadline_ns = now_ns + backoff_ns(it->consec);
	it->consec++;
	it->state = IT_BACKOFF;
}

/* The rank's log is past the limit (a stat per tick; cheap beside the rest). */
static bool log_over(const struct work_sup *s, const struct work_item *it)
{
	char p[STATE_PATH_MAX];
	struct stat st;
	return state_path(p, sizeof(p), s->dir, NULL, "jobs/%s/rank-%d.log", it->spec.job,
			  it->spec.rank) == SL_OK &&
	       stat(p, &st) == 0 && (int64_t)st.st_size > s->log_limit;
}

static void item_kill_for_log(struct work_sup *s, struct work_item *it)
{
	snprintf(it->error, sizeof(it->error), "its output passed the node's log limit of %lld "
		 "MiB; killed", (long long)(s->log_limit >> 20));
	sl_log_warn("work's log passed the limit; killing it", "job=%s rank=%d pid=%d limit_mib=%lld",
		    it->spec.job, it->spec.rank, (int)it->pid, (long long)(s->log_limit >> 20));
	work_item_signal(s, it, SIGKILL);
	item_ctr_remove(s, it);
	it->killed = true;
	it->log_full = true; /* no restart: it would only fill the log again */
}

static void item_start(struct work_sup *s, struct work_item *it, int64_t now_ns)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	it->start_errno = 0;
	if (log_over(s, it)) {
		sl_diag_set(&d, SL_ELIMIT, "its log already passed the node's limit of %lld MiB",
			    (long long)(s->log_limit >> 20));
	} else if (item_spawn(s, it, now_ns, &d) == SL_OK) {
		it->error[0] = '\0';
		return;
	} else if (work_start_retry(it, now_ns)) {
		s->dirty = true; /* a transient cause (EAGAIN, ENOMEM): tried again soon */
		return;
	}
	sl_log_error("cannot start work", "job=%s rank=%d error=%s", it->spec.job,
		     it->spec.rank, d.msg);
	snprintf(it->error, sizeof(it->error), "cannot start: %.*s", (int)sizeof(it->error) - 16,
		 d.msg);
	/* the rank's log says why, so `job logs` shows it to the tenant */
	char dir[STATE_PATH_MAX], logp[STATE_PATH_MAX];
	if (state_path(dir, sizeof(dir), s->dir, NULL, "jobs/%s", it->spec.job) == SL_OK &&
	    state_mkdirs(dir, 0700, NULL) == SL_OK &&
	    state_path(logp, sizeof(logp), s->dir, NULL, "jobs/%s/rank-%d.log", it->spec.job,
		       it->spec.rank) == SL_OK) {
		FILE *f = fopen(logp, "ae");
		if (f) {
			fprintf(f, "suanli-agent: cannot start the rank: %s%s%s\n", d.msg,
				d.hint[0] ? "; " : "", d.hint);
			fclose(f);
		}
	}
	it->pid = 0;
	it->run_start_ns = now_ns;
	item_ended(s, it, 127 << 8, false, now_ns);
}

void work_item_stop(struct work_sup *s, struct work_item *it, int64_t now_ns)
{
	if (it->want_stop && it->state != IT_RUNNING)
		return;
	it->want_stop = true;
	s->dirty = true;
	switch (it->state) {
	case IT_RUNNING:
		sl_log_info("stopping work", "job=%s rank=%d pid=%d grace_s=%d", it->spec.job,
			    it->spec.rank, (int)it->pid, it->spec.stop_grace_s);
		work_item_signal(s, it, SIGTERM);
		it->state = IT_STOPPING;
		it->deadline_ns = now_ns + (int64_t)it->spec.stop_grace_s * 1000000000LL;
		break;
	case IT_PENDING:
	case IT_BACKOFF:
		it->state = IT_STOPPED;
		if (it->ended_at == 0)
			it->ended_at = (int64_t)time(NULL);
		if (it->next)
			item_replace(it);
		break;
	default:
		break;
	}
}

bool work_sup_stop(struct work_sup *s, const char *job, int rank, int64_t now_ns)
{
	struct work_item *it = work_find(s, job, rank);
	if (!it)
		return false;
	if (it->state == IT_RUNNING || it->state == IT_PENDING || it->state == IT_BACKOFF)
		work_item_stop(s, it, now_ns);
	return true;
}

struct work_item *work_find(const struct work_sup *s, const char *job, int rank)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->items[i]->spec.rank == rank && strcmp(s->items[i]->spec.job, job) == 0)
			return s->items[i];
	return NULL;
}

static bool item_finished(const struct work_item *it)
{
	return it->state == IT_EXITED || it->state == IT_STOPPED;
}

static bool log_shipped(const struct work_sup *s, const struct work_item *it)
{
	char p[STATE_PATH_MAX];
	struct stat st;
	if (state_path(p, sizeof(p), s->dir, NULL, "jobs/%s/rank-%d.log", it->spec.job,
		       it->spec.rank) != SL_OK || stat(p, &st) != 0)
		return true;
	return it->log_offset >= (int64_t)st.st_size;
}

void work_item_free(struct work_item *it)
{
	if (!it)
		return;
	work_spec_release(&it->spec);
	if (it->next)
		work_spec_release(it->next);
	free(it->next);
	free(it);
}

static void item_remove(struct work_sup *s, size_t i)
{
	lease_workdir_end(s, s->items[i]);
	work_item_free(s->items[i]);
	memmove(&s->items[i], &s->items[i + 1], (s->n - i - 1) * sizeof(s->items[0]));
	s->n--;
	s->dirty = true;
}

bool work_sup_tick(struct work_sup *s, int64_t now_ns)
{
	bool changed = false;
	for (size_t i = 0; i < s->n; i++) {
		struct work_item *it = s->items[i];
		enum work_item_state before = it->state;
		int status = 0, r;

		switch (it->state) {
		case IT_RUNNING:
		case IT_STOPPING:
			r = item_poll(s, it, &status);
			if (r <= 0)
				item_ended(s, it, status, r < 0, now_ns);
			else if (!it->killed && log_over(s, it))
				item_kill_for_log(s, it);
			else if (it->state == IT_STOPPING && !it->killed &&
				 now_ns >= it->deadline_ns) {
				sl_log_warn("work did not stop in its grace period; killing it",
					    "job=%s rank=%d pid=%d", it->spec.job, it->spec.rank,
					    (int)it->pid);
				work_item_signal(s, it, SIGKILL);
				item_ctr_remove(s, it);
				it->killed = true;
			}
			break;
		case IT_BACKOFF:
			if (now_ns < it->deadline_ns)
				break;
			if (!it->start_tries) /* a start retry is no restart */
				it->restarts++;
			item_start(s, it, now_ns);
			break;
		case IT_PENDING:
			item_start(s, it, now_ns);
			break;
		default:
			break;
		}
		/* a replacement made pending by item_ended starts in this turn */
		if (it->state == IT_PENDING)
			item_start(s, it, now_ns);
		changed = changed || it->state != before;
	}
	for (size_t i = s->n; i-- > 0;) {
		struct work_item *it = s->items[i];
		if (item_finished(it) && it->reported && !it->desired && !it->next &&
		    log_shipped(s, it))
			item_remove(s, i);
	}
	return changed;
}

int64_t work_sup_next_ns(const struct work_sup *s, int64_t now_ns)
{
	int64_t best = INT64_MAX;
	for (size_t i = 0; i < s->n; i++) {
		const struct work_item *it = s->items[i];
		if (it->state == IT_BACKOFF || (it->state == IT_STOPPING && !it->killed)) {
			int64_t w = it->deadline_ns - now_ns;
			if (w < best)
				best = w < 0 ? 0 : w;
		}
	}
	return best;
}

/* ---- desired state ---------------------------------------------------- */

static int64_t *lease_epoch(struct work_sup *s, const char *lease, bool add)
{
	for (size_t i = 0; i < s->nepochs; i++)
		if (strcmp(s->epochs[i].lease, lease) == 0)
			return &s->epochs[i].epoch;
	if (!add)
		return NULL;
	size_t slot = s->nepochs < WORK_MAX_LEASES ? s->nepochs++ : (s->epoch_ring++ % WORK_MAX_LEASES);
	snprintf(s->epochs[slot].lease, sizeof(s->epochs[slot].lease), "%s", lease);
	s->epochs[slot].epoch = -1;
	return &s->epochs[slot].epoch;
}

int64_t work_sup_lease_epoch(struct work_sup *s, const char *lease)
{
	int64_t *e = lease_epoch(s, lease, false);
	return e ? *e : -1;
}

/* Frees a table slot for a new item: forgets the oldest finished item the
 * desired state no longer lists (reported ones first). */
static bool make_room(struct work_sup *s)
{
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < s->n; i++) {
			struct work_item *it = s->items[i];
			if (item_finished(it) && !it->desired && !it->next &&
			    (pass == 1 || it->reported)) {
				item_remove(s, i);
				return true;
			}
		}
	return false;
}

/* Applies one parsed item (ownership of *sp passes here). */
static void apply_one(struct work_sup *s, struct work_spec *sp, int64_t now_ns, int *refused)
{
	if (sp->stop_grace_s < 0)
		sp->stop_grace_s = s->default_grace_s;
	int64_t *known = lease_epoch(s, sp->lease, true);
	struct work_item *it = work_find(s, sp->job, sp->rank);

	if (sp->epoch < *known || (it && sp->epoch < it->spec.epoch)) {
		sl_log_warn("refused a work item with a stale epoch",
			    "job=%s rank=%d lease=%s epoch=%lld highest=%lld", sp->job, sp->rank,
			    sp->lease, (long long)sp->epoch, (long long)*known);
		(*refused)++;
		if (it)
			it->desired = true; /* a stale copy is no reason to stop the current one */
		work_spec_release(sp);
		return;
	}
	if (sp->epoch > *known) {
		*known = sp->epoch;
		s->dirty = true;
	}
	if (it) {
		it->desired = true;
		if (!sp->run) {
			work_item_stop(s, it, now_ns);
		} else if (sp->epoch > it->spec.epoch) {
			struct work_spec *nx = malloc(sizeof(*nx));
			if (!nx) {
				(*refused)++;
				work_spec_release(sp);
				return;
			}
			*nx = *sp;
			if (it->next) {
				work_spec_release(it->next);
				free(it->next);
			}
			it->next = nx;
			sl_log_info("new epoch: replacing work", "job=%s rank=%d epoch=%lld",
				    sp->job, sp->rank, (long long)sp->epoch);
			if (item_finished(it))
				item_replace(it);
			else
				work_item_stop(s, it, now_ns);
			if (it->state == IT_PENDING)
				item_start(s, it, now_ns);
			return;
		}
		work_spec_release(sp);
		return;
	}
	if (!sp->run) {
		work_spec_release(sp);
		return;
	}
	if (s->n >= WORK_MAX_ITEMS && !make_room(s)) {
		sl_log_error("refused a work item: too many items",
			     "job=%s rank=%d max=%d", sp->job, sp->rank, WORK_MAX_ITEMS);
		(*refused)++;
		work_spec_release(sp);
		return;
	}
	it = calloc(1, sizeof(*it));
	if (!it) {
		(*refused)++;
		work_spec_release(sp);
		return;
	}
	it->spec = *sp;
	it->state = IT_PENDING;
	it->desired = true;
	s->items[s->n++] = it;
	s->dirty = true;
	item_start(s, it, now_ns);
}

enum sl_err work_sup_apply(struct work_sup *s, const json_t *work, int64_t now_ns,
			   int *refused, struct sl_diag *d)
{
	size_t n = json_array_size(work);
	struct work_spec *specs;
	int ref = 0;
	enum sl_err e = SL_OK;

	if (refused)
		*refused = 0;
	if (!json_is_array(work))
		return sl_diag_set(d, SL_EINVAL, "the work answer's \"work\" is not an array");
	if (n > WORK_MAX_ITEMS)
		return sl_diag_set(d, SL_ELIMIT, "the work answer lists %zu items; the agent "
						 "holds at most %d", n, WORK_MAX_ITEMS);
	specs = calloc(n ? n : 1, sizeof(*specs));
	if (!specs)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	for (size_t i = 0; i < n && e == SL_OK; i++) {
		e = work_spec_from_json(json_array_get(work, i), &specs[i], d);
		for (size_t j = 0; e == SL_OK && j < i; j++)
			if (specs[j].rank == specs[i].rank && strcmp(specs[j].job, specs[i].job) == 0)
				e = sl_diag_set(d, SL_EINVAL, "the work answer lists job %s rank %d "
							      "twice", specs[i].job, specs[i].rank);
		if (e != SL_OK) {
			char msg[SL_DIAG_MSG];
			if (d) {
				memcpy(msg, d->msg, sizeof(msg));
				snprintf(d->msg, sizeof(d->msg), "work[%zu]: %.400s", i, msg);
			}
		}
	}
	if (e != SL_OK) {
		for (size_t i = 0; i < n; i++)
			work_spec_release(&specs[i]);
		free(specs);
		return e;
	}
	for (size_t i = 0; i < s->n; i++)
		s->items[i]->desired = false;
	for (size_t i = 0; i < n; i++)
		apply_one(s, &specs[i], now_ns, &ref);
	free(specs);
	for (size_t i = 0; i < s->n; i++) {
		struct work_item *it = s->items[i];
		if (!it->desired && !item_finished(it)) {
			sl_log_info("the controller no longer assigns this work; stopping it",
				    "job=%s rank=%d", it->spec.job, it->spec.rank);
			work_item_stop(s, it, now_ns);
		}
	}
	if (refused)
		*refused = ref;
	return SL_OK;
}

/* ---- reports ---------------------------------------------------------- */

/* The progress line of a running rank whose image podman is still pulling
 * ("": none). Until the image is seen on the node it is asked for once per
 * report (a `podman image exists`), then never again for that start. */
static const char *pull_progress(struct work_sup *s, struct work_item *it, char *buf, size_t n)
{
	if (!it->pulling || it->pulled || it->state != IT_RUNNING || !item_in_container(s, &it->spec))
		return "";
	const char *image = it->spec.image[0] ? it->spec.image : engine_default_image(s->eng);
	if (engine_image_exists(s->eng, image)) {
		it->pulled = true;
		return "";
	}
	snprintf(buf, n, "pulling image %s (it is not on this node yet)", image);
	return buf;
}

json_t *work_sup_report(struct work_sup *s)
{
	static const char *const names[] = {
		[IT_PENDING] = "running", [IT_RUNNING] = "running", [IT_STOPPING] = "running",
		[IT_BACKOFF] = "running", [IT_EXITED] = "exited",   [IT_STOPPED] = "stopped"};
	json_t *a = json_array();
	char ts[32];

	for (size_t i = 0; a && i < s->n; i++) {
		struct work_item *it = s->items[i];
		char pbuf[WORK_IMAGE_MAX + 64];
		const char *progress = pull_progress(s, it, pbuf, sizeof(pbuf));
		json_t *o = json_pack("{s:s, s:i, s:I, s:i, s:s, s:i, s:i, s:i}", "job",
				      it->spec.job, "rank", it->spec.rank, "epoch",
				      (json_int_t)it->spec.epoch, "pid", (int)it->pid, "state",
				      names[it->state], "exit_code", it->exit_code, "signal",
				      it->signal, "restarts", it->restarts);
		int bad_alloc = !o;
		if (!bad_alloc && it->started_at) {
			wall_iso(it->started_at, ts, sizeof(ts));
			bad_alloc = json_object_set_new(o, "started_at", json_string(ts)) != 0;
		}
		if (!bad_alloc && it->ended_at && item_finished(it)) {
			wall_iso(it->ended_at, ts, sizeof(ts));
			bad_alloc = json_object_set_new(o, "ended_at", json_string(ts)) != 0;
		}
		if (!bad_alloc && it->lost)
			bad_alloc = json_object_set_new(o, "lost", json_true()) != 0;
		if (!bad_alloc && it->state == IT_BACKOFF)
			bad_alloc = json_object_set_new(o, "restarting", json_true()) != 0;
		if (!bad_alloc && it->error[0])
			bad_alloc = json_object_set_new(o, "error", json_string(it->error)) != 0;
		if (!bad_alloc && progress[0])
			bad_alloc = json_object_set_new(o, "progress", json_string(progress)) != 0;
		if (bad_alloc || json_array_append_new(a, o) != 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

void work_sup_reported(struct work_sup *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (item_finished(s->items[i]) && !s->items[i]->reported) {
			s->items[i]->reported = true;
			s->dirty = true;
		}
}

bool work_sup_log_next(const struct work_sup *s, size_t *iter, char *job, int *rank,
		       int64_t *offset)
{
	if (*iter >= s->n)
		return false;
	const struct work_item *it = s->items[(*iter)++];
	memcpy(job, it->spec.job, WORK_ID_MAX);
	*rank = it->spec.rank;
	*offset = it->log_offset;
	return true;
}

void work_sup_log_shipped(struct work_sup *s, const char *job, int rank, int64_t offset)
{
	struct work_item *it = work_find(s, job, rank);
	if (it && offset >= 0 && it->log_offset != offset) {
		it->log_offset = offset;
		s->dirty = true;
	}
}

size_t work_sup_count(const struct work_sup *s)
{
	return s->n;
}

bool work_sup_dirty(const struct work_sup *s)
{
	return s->dirty;
}

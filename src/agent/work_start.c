/* work_start.c - starts that fail for a moment under load (work_int.h).
 *
 * With thousands of ranks starting at once, fork can fail with EAGAIN (the
 * pids limit) or ENOMEM, and exec with EAGAIN (RLIMIT_NPROC, which Linux
 * checks at exec). None of that is the rank's doing, so it is retried -
 * in the shim after fork with async-signal-safe calls only, and in the agent
 * by putting the item in backoff without counting a restart - and only a
 * start that still fails is reported, as a start failure with its errno. */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "work_int.h"

#define RETRIES 6

static bool transient(int e)
{
	return e == EAGAIN || e == ENOMEM;
}

static void pause_try(int tries)
{
	long ns = 50000000L << tries; /* 50 ms, doubling: at most 1.6 s */
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
	(void)nanosleep(&ts, NULL);
}

pid_t work_fork_retry(void)
{
	pid_t pid = -1;
	for (int tries = 0; tries < RETRIES; tries++) {
		pid = fork();
		if (pid >= 0 || !transient(errno))
			break;
		pause_try(tries);
	}
	return pid;
}

void work_exec_retry(char **argv)
{
	execvp(argv[0], argv);
	for (int tries = 0; tries < RETRIES && transient(errno); tries++) {
		int e = errno;
		pause_try(tries);
		errno = e;
		execvp(argv[0], argv);
	}
}

void work_say_errno(const char *prefix)
{
	const char *why = strerror(errno);
	(void)!write(2, prefix, strlen(prefix));
	(void)!write(2, why, strlen(why));
	(void)!write(2, "\n", 1);
}

bool work_start_retry(struct work_item *it, int64_t now_ns)
{
	if (!transient(it->start_errno) || it->start_tries >= WORK_START_RETRIES)
		return false;
	it->start_tries++;
	it->deadline_ns = now_ns + (WORK_START_RETRY_NS << (it->start_tries - 1));
	it->state = IT_BACKOFF;
	sl_log_warn("cannot start work; retrying", "job=%s rank=%d try=%d error=%s", it->spec.job,
		    it->spec.rank, it->start_tries, strerror(it->start_errno));
	return true;
}

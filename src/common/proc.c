/* proc.c - sl_run (proc.h). */
#include "proc.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void child_stream(int fd, int target, int null_fd)
{
	if (fd == SL_RUN_INHERIT)
		return;
	(void)dup2(fd == SL_RUN_NULL ? null_fd : fd, target);
}

static void write_all(int fd, const char *s)
{
	size_t len = strlen(s), off = 0;
	while (off < len) {
		ssize_t w = write(fd, s + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
}

/* Reads fd to its end into out (n bytes, NUL-terminated), dropping what
 * does not fit so the child never blocks on a full pipe. */
static void read_all(int fd, char *out, size_t n)
{
	size_t got = 0;
	char sink[512];
	for (;;) {
		bool room = got + 1 < n;
		ssize_t r = read(fd, room ? out + got : sink, room ? n - got - 1 : sizeof(sink));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (room)
			got += (size_t)r;
	}
	out[got] = '\0';
}

int sl_run(char *const argv[], const struct sl_run *io)
{
	int pin[2] = {-1, -1}, pout[2] = {-1, -1};
	if ((io->in && pipe(pin) != 0) || (io->out && pipe(pout) != 0)) {
		if (pin[0] >= 0)
			close(pin[0]), close(pin[1]);
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		if (pin[i] >= 0)
			(void)fcntl(pin[i], F_SETFD, FD_CLOEXEC);
		if (pout[i] >= 0)
			(void)fcntl(pout[i], F_SETFD, FD_CLOEXEC);
	}
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		(void)sigprocmask(SIG_SETMASK, &none, NULL);
		int null_fd = open("/dev/null", O_RDWR);
		(void)dup2(io->in ? pin[0] : null_fd, 0);
		if (io->out)
			(void)dup2(pout[1], 1);
		else
			child_stream(io->out_fd, 1, null_fd);
		child_stream(io->err_fd, 2, null_fd);
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (io->in) {
		close(pin[0]);
		if (pid > 0)
			write_all(pin[1], io->in);
		close(pin[1]);
	}
	if (io->out) {
		close(pout[1]);
		if (pid > 0)
			read_all(pout[0], io->out, io->outn);
		else
			io->out[0] = '\0';
		close(pout[0]);
	}
	if (pid < 0)
		return -1;
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

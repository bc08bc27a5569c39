/* proc.h - running a helper program (podman, ip, iptables-restore, ssh-keygen)
 * and waiting for it: one fork/exec with its standard streams chosen, no
 * shell. */
#ifndef SL_COMMON_PROC_H
#define SL_COMMON_PROC_H

#include <stddef.h>

#define SL_RUN_NULL (-1)    /* a stream to /dev/null */
#define SL_RUN_INHERIT (-2) /* a stream left as the caller's */

struct sl_run {
	const char *in; /* written to its stdin (NULL: stdin from /dev/null) */
	char *out;      /* its stdout, NUL-terminated, cut to outn - 1 bytes (the
			   rest is read and dropped); NULL: stdout goes to out_fd */
	size_t outn;
	int out_fd;     /* an fd, SL_RUN_NULL or SL_RUN_INHERIT (when out is NULL) */
	int err_fd;     /* likewise for stderr */
};

/* Runs argv (PATH searched unless argv[0] has a '/') with an empty signal
 * mask and waits for it; its exit status, or -1 when it could not run or
 * was killed. A failed exec says so on its stderr and exits 127. */
int sl_run(char *const argv[], const struct sl_run *io);

#endif

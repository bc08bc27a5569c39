/* faultfs.c - an LD_PRELOAD shim that fails the Nth write or sync of the
 * daemon's store files, for tests/e2e/test_ctl_faults.sh (fault injection
 * under the real suanlid: SQLite reaches the kernel through these libc
 * calls).
 *
 * FAULTFS_MATCH  substring of the paths watched (e.g. "suanli.db": the
 *                database, its -wal and -shm files)
 * FAULTFS_AT     the call to fail, 1-based, counting pwrite/write/fsync/
 *                fdatasync/ftruncate on watched descriptors
 * FAULTFS_MODE   eio | enospc | torn (half the bytes, then the process dies
 *                with status 137, as a crash at that write)
 * FAULTFS_COUNT  a file: the number of calls counted is written there at
 *                exit (for the test's dry run) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_FD 4096

static bool watched[MAX_FD];
static long calls, at = -1;
static int mode; /* 0 eio, 1 enospc, 2 torn */
static const char *match;

static void setup(void)
{
	if (at >= 0)
		return;
	const char *a = getenv("FAULTFS_AT"), *m = getenv("FAULTFS_MODE");
	match = getenv("FAULTFS_MATCH");
	at = a ? atol(a) : 0;
	mode = m && !strcmp(m, "enospc") ? 1 : m && !strcmp(m, "torn") ? 2 : 0;
}

static void note(int fd, const char *path)
{
	setup();
	if (fd >= 0 && fd < MAX_FD)
		watched[fd] = match && path && strstr(path, match);
}

/* 0: go on; -1: fail with errno set; 1: tear this write. */
static int fault(int fd)
{
	setup();
	if (fd < 0 || fd >= MAX_FD || !watched[fd])
		return 0;
	calls++;
	if (!at || calls != at)
		return 0;
	if (mode == 2)
		return 1;
	errno = mode == 1 ? ENOSPC : EIO;
	return -1;
}

__attribute__((destructor)) static void report(void)
{
	const char *f = getenv("FAULTFS_COUNT");
	if (!f)
		return;
	FILE *o = fopen(f, "w");
	if (o) {
		fprintf(o, "%ld\n", calls);
		fclose(o);
	}
}

#define REAL(name)                                                             \
	static __typeof__(&name) real_##name;                                  \
	if (!real_##name)                                                      \
	real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

int open(const char *p, int flags, ...)
{
	REAL(open);
	mode_t m = 0;
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		m = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	int fd = real_open(p, flags, m);
	note(fd, p);
	return fd;
}

int open64(const char *p, int flags, ...)
{
	REAL(open64);
	mode_t m = 0;
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		m = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	int fd = real_open64(p, flags, m);
	note(fd, p);
	return fd;
}

static ssize_t tear(int fd, const void *b, size_t n, off_t off, bool positioned)
{
	REAL(pwrite64);
	REAL(write);
	if (positioned)
		(void)real_pwrite64(fd, b, n / 2, off);
	else
		(void)real_write(fd, b, n / 2);
	_exit(137);
}

ssize_t pwrite64(int fd, const void *b, size_t n, off_t off)
{
	REAL(pwrite64);
	int f = fault(fd);
	if (f == 1)
		return tear(fd, b, n, off, true);
	return f ? -1 : real_pwrite64(fd, b, n, off);
}

ssize_t pwrite(int fd, const void *b, size_t n, off_t off)
{
	return pwrite64(fd, b, n, off);
}

ssize_t write(int fd, const void *b, size_t n)
{
	REAL(write);
	int f = fault(fd);
	if (f == 1)
		return tear(fd, b, n, 0, false);
	return f ? -1 : real_write(fd, b, n);
}

int fsync(int fd)
{
	REAL(fsync);
	int f = fault(fd);
	if (f == 1)
		_exit(137);
	return f ? -1 : real_fsync(fd);
}

int fdatasync(int fd)
{
	REAL(fdatasync);
	int f = fault(fd);
	if (f == 1)
		_exit(137);
	return f ? -1 : real_fdatasync(fd);
}

int ftruncate64(int fd, off_t len)
{
	REAL(ftruncate64);
	int f = fault(fd);
	if (f == 1)
		_exit(137);
	return f ? -1 : real_ftruncate64(fd, len);
}

int ftruncate(int fd, off_t len)
{
	return ftruncate64(fd, len);
}

/* state.c - the agent's state directory: paths, the credential, atomic writes.
 *
 * Everything the agent must find again after a crash is written with
 * write-temp + fsync + rename, so a reader sees the old file or the new one,
 * never half of one. */
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"

enum sl_err state_mkdirs(const char *path, unsigned mode, struct sl_diag *d)
{
	char buf[STATE_PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return sl_diag_set(d, SL_EINVAL, "directory path '%.200s' is empty or too long",
				   path);
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char c = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, (mode_t)mode) != 0 && errno != EEXIST) {
			int e = errno;
			sl_diag_hint(d, "check the path and its permissions");
			return sl_diag_set(d, SL_EIO, "cannot create directory %s: %s", buf,
					   strerror(e));
		}
		buf[i] = c;
	}
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return sl_diag_set(d, SL_EIO, "%s is not a directory", path);
	return SL_OK;
}

enum sl_err state_path(char *buf, size_t n, const char *dir, struct sl_diag *d,
		       const char *fmt, ...)
{
	va_list ap;
	int a = snprintf(buf, n, "%s/", dir);
	if (a < 0 || (size_t)a >= n)
		return sl_diag_set(d, SL_ELIMIT, "path under %.200s is too long", dir);
	va_start(ap, fmt);
	int b = vsnprintf(buf + a, n - (size_t)a, fmt, ap);
	va_end(ap);
	if (b < 0 || (size_t)b >= n - (size_t)a)
		return sl_diag_set(d, SL_ELIMIT, "path under %.200s is too long", dir);
	return SL_OK;
}

enum sl_err state_dir_init(const char *dir, struct sl_diag *d)
{
	char p[STATE_PATH_MAX];
	enum sl_err e;

	if (!dir || !*dir || strlen(dir) >= STATE_DIR_MAX) {
		sl_diag_hint(d, "give --state-dir a directory path shorter than %u bytes",
			     STATE_DIR_MAX);
		return sl_diag_set(d, SL_EINVAL, "bad state directory '%.200s'", dir ? dir : "");
	}
	if ((e = state_mkdirs(dir, 0700, d)) != SL_OK)
		return e;
	if ((e = state_path(p, sizeof(p), dir, d, "jobs")) != SL_OK ||
	    (e = state_mkdirs(p, 0700, d)) != SL_OK)
		return e;
	if ((e = state_path(p, sizeof(p), dir, d, "inject")) != SL_OK ||
	    (e = state_mkdirs(p, 0700, d)) != SL_OK)
		return e;
	return SL_OK;
}

enum sl_err state_write_atomic(const char *path, const void *data, size_t len,
			       unsigned mode, struct sl_diag *d)
{
	char tmp[STATE_PATH_MAX + 8];
	const char *p = data;
	int fd, n = snprintf(tmp, sizeof(tmp), "%s.tmp", path);

	if (n < 0 || (size_t)n >= sizeof(tmp))
		return sl_diag_set(d, SL_ELIMIT, "path %.200s is too long", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, (mode_t)mode);
	if (fd < 0)
		return sl_diag_set(d, SL_EIO, "cannot write %s: %s", tmp, strerror(errno));
	(void)fchmod(fd, (mode_t)mode);
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = errno;
			close(fd);
			unlink(tmp);
			return sl_diag_set(d, SL_EIO, "cannot write %s: %s", tmp, strerror(e));
		}
		p += w;
		len -= (size_t)w;
	}
	if (fsync(fd) != 0 || close(fd) != 0) {
		int e = errno;
		unlink(tmp);
		return sl_diag_set(d, SL_EIO, "cannot write %s: %s", tmp, strerror(e));
	}
	if (rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return sl_diag_set(d, SL_EIO, "cannot rename %s to %s: %s", tmp, path,
				   strerror(e));
	}
	return SL_OK;
}

enum sl_err state_credential_load(const char *dir, char *buf, size_t n, struct sl_diag *d)
{
	char p[STATE_PATH_MAX];
	char *text = NULL;
	size_t len = 0;
	enum sl_err e;

	if ((e = state_path(p, sizeof(p), dir, d, "credential")) != SL_OK)
		return e;
	if (access(p, F_OK) != 0 && errno == ENOENT)
		return sl_diag_set(d, SL_ENOTFOUND, "no credential in %s", dir);
	if ((e = sl_read_file(p, STATE_CREDENTIAL_MAX, &text, &len, d)) != SL_OK)
		return e;
	size_t a = 0, b = len;
	while (a < b && (text[a] == ' ' || text[a] == '\n' || text[a] == '\r' || text[a] == '\t'))
		a++;
	while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\n' || text[b - 1] == '\r' ||
			 text[b - 1] == '\t'))
		b--;
	int bad = a == b || b - a >= n;
	for (size_t i = a; !bad && i < b; i++)
		if ((unsigned char)text[i] <= 0x20 || text[i] == 0x7f)
			bad = 1;
	if (bad) {
		free(text);
		sl_diag_hint(d, "delete %s and register again with a join token (--token)", p);
		return sl_diag_set(d, SL_EINVAL, "the credential in %s is empty, too long or "
						 "has spaces or control characters", p);
	}
	memcpy(buf, text + a, b - a);
	buf[b - a] = '\0';
	free(text);
	return SL_OK;
}

enum sl_err state_credential_save(const char *dir, const char *cred, struct sl_diag *d)
{
	char p[STATE_PATH_MAX];
	enum sl_err e = state_path(p, sizeof(p), dir, d, "credential");
	if (e != SL_OK)
		return e;
	return state_write_atomic(p, cred, strlen(cred), 0600, d);
}

enum sl_err state_epoch_load(const char *dir, uint64_t *epoch, struct sl_diag *d)
{
	char p[STATE_PATH_MAX];
	char *text = NULL, *end = NULL;
	size_t len = 0;
	enum sl_err e;

	*epoch = 0;
	if ((e = state_path(p, sizeof(p), dir, d, "controller-epoch")) != SL_OK)
		return e;
	if (access(p, F_OK) != 0 && errno == ENOENT)
		return SL_OK;
	if ((e = sl_read_file(p, 32, &text, &len, d)) != SL_OK)
		return e;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	bool bad = errno || end == text || !(text[0] >= '0' && text[0] <= '9') ||
		   strspn(end, " \n") != strlen(end);
	free(text);
	if (bad) {
		sl_diag_hint(d, "delete %s: the agent then follows the first controller that "
				"answers and remembers its epoch again", p);
		return sl_diag_set(d, SL_EINVAL, "%s does not hold a controller epoch (a decimal "
						 "number)", p);
	}
	*epoch = v;
	return SL_OK;
}

enum sl_err state_epoch_save(const char *dir, uint64_t epoch, struct sl_diag *d)
{
	char p[STATE_PATH_MAX], text[32];
	enum sl_err e = state_path(p, sizeof(p), dir, d, "controller-epoch");
	if (e != SL_OK)
		return e;
	int n = snprintf(text, sizeof(text), "%llu\n", (unsigned long long)epoch);
	return state_write_atomic(p, text, (size_t)n, 0600, d);
}

enum sl_err state_lock(const char *dir, int *fd, struct sl_diag *d)
{
	char p[STATE_PATH_MAX], buf[32];
	enum sl_err e = state_path(p, sizeof(p), dir, d, "agent.lock");
	*fd = -1;
	if (e != SL_OK)
		return e;
	int f = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (f < 0)
		return sl_diag_set(d, SL_EIO, "cannot open %s: %s", p, strerror(errno));
	if (flock(f, LOCK_EX | LOCK_NB) != 0) {
		int en = errno;
		ssize_t n = read(f, buf, sizeof(buf) - 1);
		close(f);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		if (en != EWOULDBLOCK)
			return sl_diag_set(d, SL_EIO, "cannot lock %s: %s", p, strerror(en));
		sl_diag_hint(d, "stop that agent first, or give this one another --state-dir");
		return sl_diag_set(d, SL_ECONFLICT, "another suanli-agent (pid %s) uses the state "
						    "directory %s", buf[0] ? buf : "?", dir);
	}
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(f, 0) != 0 || pwrite(f, buf, (size_t)n, 0) != n) {
		/* the pid is only for the message above; the lock is what counts */
	}
	*fd = f;
	return SL_OK;
}

/* file.c - bounded whole-file reads. Reading in one piece keeps parsers in core
 * free of I/O: they take a buffer. */
#include "file.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum sl_err sl_read_file(const char *path, size_t max, char **out, size_t *len,
			 struct sl_diag *d)
{
	FILE *fp = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	*out = NULL;
	*len = 0;
	if (d)
		d->file = path;
	if (!fp)
		return sl_diag_set(d, SL_EIO, "cannot open: %s", strerror(errno));
	/* Reads at most max + 1 bytes: one past the bound is enough to refuse the
	 * file, so /dev/zero or a huge file never costs more than the bound. */
	while (n <= max) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			char *nb;
			if (max < SIZE_MAX && ncap > max + 1)
				ncap = max + 1;
			nb = realloc(buf, ncap + 1);
			if (!nb) {
				free(buf);
				fclose(fp);
				return sl_diag_set(d, SL_ENOMEM, "out of memory reading the file");
			}
			buf = nb;
			cap = ncap;
		}
		size_t got = fread(buf + n, 1, cap - n, fp);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(fp)) {
		/* fopen succeeds on a directory; the read then fails with EISDIR,
		 * which is the useful part of the message. */
		int err = errno;
		free(buf);
		fclose(fp);
		return sl_diag_set(d, SL_EIO, "cannot read: %s", strerror(err));
	}
	fclose(fp);
	if (n > max) {
		free(buf);
		return sl_diag_set(d, SL_ELIMIT, "file is larger than %zu bytes", max);
	}
	if (!buf && !(buf = malloc(1)))
		return sl_diag_set(d, SL_ENOMEM, "out of memory reading the file");
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return SL_OK;
}

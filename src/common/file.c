/* file.c - bounded whole-file reads. Reading in one piece keeps parsers in core
 * free of I/O: they take a buffer. */
#include "file.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

enum sl_err sl_read_file(const char *path, size_t max, char **out, size_t *len,
			 struct sl_diag *d)
{
	FILE *fp = fopen(path, "rb");
	/* Reads at most max + 1 bytes: one past the bound is enough to refuse the
	 * file, so /dev/zero or a huge file never costs more than the bound. */
	struct sl_buf b = SL_BUF_INIT(max < SIZE_MAX ? max + 1 : max);

	*out = NULL;
	*len = 0;
	if (d)
		d->file = path;
	if (!fp)
		return sl_diag_set(d, SL_EIO, "cannot open: %s", strerror(errno));
	for (;;) {
		if (b.len + 1 >= b.cap) {
			size_t more = b.len ? b.len : 65536; /* doubling */
			if (more > b.max - b.len)
				more = b.max - b.len;
			if (more == 0)
				break; /* one past the bound */
			if (sl_buf_grow(&b, more)) {
				sl_buf_release(&b);
				fclose(fp);
				return sl_diag_set(d, SL_ENOMEM, "out of memory reading the file");
			}
		}
		size_t got = fread(b.p + b.len, 1, b.cap - b.len - 1, fp);
		sl_buf_setlen(&b, b.len + got);
		if (got == 0)
			break;
	}
	if (ferror(fp)) {
		/* fopen succeeds on a directory; the read then fails with EISDIR,
		 * which is the useful part of the message. */
		int err = errno;
		sl_buf_release(&b);
		fclose(fp);
		return sl_diag_set(d, SL_EIO, "cannot read: %s", strerror(err));
	}
	fclose(fp);
	if (b.len > max) {
		sl_buf_release(&b);
		return sl_diag_set(d, SL_ELIMIT, "file is larger than %zu bytes", max);
	}
	if (sl_buf_detach(&b, out, len))
		return sl_diag_set(d, SL_ENOMEM, "out of memory reading the file");
	return SL_OK;
}

/* file.h - reading whole files with a bound, for the programs (never core). */
#ifndef SL_FILE_H
#define SL_FILE_H

#include <stddef.h>

#include "err.h"

/* Reads path into a NUL-terminated buffer the caller frees. Files larger than
 * max bytes are refused with SL_ELIMIT; a missing or unreadable file is SL_EIO.
 * d->file is set to path. */
enum sl_err sl_read_file(const char *path, size_t max, char **out, size_t *len,
			 struct sl_diag *d) SL_MUST_USE;

#endif

/* textout.h - writing text into a caller's fixed buffer the way snprintf
 * does: output beyond the buffer is dropped but counted, so a function that
 * formats with it can return the length the whole text needs and the caller
 * can retry with a buffer that large (topo_format_matrix, nccl_topo_xml).
 *
 * Pure: no allocation. */
#ifndef SL_TEXTOUT_H
#define SL_TEXTOUT_H

#include <stddef.h>

#include "err.h"

struct textout {
	char *buf;  /* may be NULL when n is 0 */
	size_t n;   /* the buffer's size */
	size_t len; /* what the text needs so far (may exceed n) */
};

/* Appends printf-style text; the buffer stays NUL-terminated when n > 0. */
void textout_printf(struct textout *o, const char *fmt, ...) SL_PRINTF(2, 3);

#endif

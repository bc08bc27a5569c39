/* json_limits.h - a check of JSON nesting depth before parsing.
 *
 * JSON parsers (jansson included) recurse once per nesting level, so input
 * that opens 100,000 arrays can exhaust the stack before the parser notices
 * anything wrong. json_check_limits scans the bytes once, iteratively, and
 * refuses such input with its position, so hostile input never reaches a
 * recursive parser. It does not validate JSON: truncated or malformed input
 * passes (unless too deep) and is left for the real parser to report. The
 * size of the text is bounded by the caller (the HTTP layer bounds bodies). */
#ifndef SL_JSON_LIMITS_H
#define SL_JSON_LIMITS_H

#include <stddef.h>

#include "err.h"

/* Deepest nesting the API accepts: objects and arrays together, the outermost
 * counting 1. suanli's documents need fewer than 8. */
#define JSON_MAX_DEPTH 32

/* Scans text[0..len) (not necessarily NUL-terminated; NUL bytes are ordinary
 * bytes here) and counts '[' and '{' outside strings, respecting backslash
 * escapes inside strings. Returns SL_OK if no point nests deeper than
 * max_depth, else SL_ELIMIT with d->msg naming the byte offset, d->line and
 * d->col set (1-based; col counts bytes) at the bracket that went too deep,
 * and a hint. Unbalanced closers never make the depth negative. Pure: no
 * allocation, no I/O. max_depth 0 accepts only scalars. */
enum sl_err json_check_limits(const char *text, size_t len, size_t max_depth,
			      struct sl_diag *d) SL_MUST_USE;

#endif

/* log.h - one line per event, in a logfmt-like shape that journald and grep
 * handle well:
 *
 *   2026-11-30T05:33:12.123Z level=info msg="lease created" lease=ls-12 tenant=acme
 *
 * The logger is process-wide (programs log; core never does). It is meant for
 * the single thread that owns the process's state; a line is written with one
 * fwrite, so lines from other threads do not interleave inside a line, but the
 * settings (sl_log_init) must not change while other threads log. */
#ifndef SL_LOG_H
#define SL_LOG_H

#include <stdio.h>

#include "err.h"

enum sl_log_level {
	SL_LOG_DEBUG,
	SL_LOG_INFO,
	SL_LOG_WARN,
	SL_LOG_ERROR,
};

/* Longest line written, newline included. A longer line is cut at a pair
 * boundary where possible and ends with ` truncated=true`: a log line is not
 * input, so cutting is better than losing the event. */
#define SL_LOG_LINE_MAX 4096

/* Sends lines to out (borrowed; NULL means stderr) and drops events below
 * min. May be called again to change either. Without a call, lines go to
 * stderr at level info and above. */
void sl_log_init(FILE *out, enum sl_log_level min);

/* True if an event at level would be written (to skip costly arguments). */
int sl_log_enabled(enum sl_log_level level);

/* "debug", "info", "warn", "error"; "?" for a value out of range. */
const char *sl_log_level_name(enum sl_log_level level);

/* Parses a level name as above (case-sensitive). SL_EINVAL with a hint
 * listing the names otherwise. */
enum sl_err sl_log_level_parse(const char *name, enum sl_log_level *out,
			       struct sl_diag *d) SL_MUST_USE;

/* Writes one event: the time (UTC, milliseconds), level, msg and the pairs in
 * kv_fmt. kv_fmt is a printf format made of space-separated `key=VALUE` words,
 * e.g. "lease=%s tenant=%s gpus=%d"; each VALUE (after formatting) is quoted
 * and escaped when it is empty or contains a space, '"', '=', '\' or a control
 * character, so a value can never forge another pair or a new line. Keys are
 * written as given (use [a-z0-9_.]). kv_fmt may be NULL or "". Supported
 * conversions: d i u x X o c s p e f g E F G with flags, width, precision and
 * the hh h l ll z j t L modifiers; '*' is not supported (it is written as-is);
 * a NULL %s is written as (null). Never fails; output errors are ignored. */
void sl_log(enum sl_log_level level, const char *msg, const char *kv_fmt, ...)
	SL_PRINTF(3, 4);

/* Shorthands. */
#define sl_log_debug(msg, ...) sl_log(SL_LOG_DEBUG, msg, __VA_ARGS__)
#define sl_log_info(msg, ...) sl_log(SL_LOG_INFO, msg, __VA_ARGS__)
#define sl_log_warn(msg, ...) sl_log(SL_LOG_WARN, msg, __VA_ARGS__)
#define sl_log_error(msg, ...) sl_log(SL_LOG_ERROR, msg, __VA_ARGS__)

#endif

/* err.h - the one error enum of suanli, declared once as a table.
 *
 * Each row gives the enum name, the stable string code used in JSON errors, a
 * default message and the HTTP status a controller answers with. Fallible
 * functions return enum sl_err and are marked SL_MUST_USE. Details that only the
 * failing function knows (a file position, the offending value, a hint) go into a
 * caller-owned struct sl_diag. */
#ifndef SL_ERR_H
#define SL_ERR_H

#include <stdarg.h>
#include <stddef.h>

#define SL_MUST_USE __attribute__((warn_unused_result))
#define SL_PRINTF(f, a) __attribute__((format(printf, f, a)))

#define SL_ERRORS(X)                                                          \
	X(SL_OK, "ok", "ok", 200)                                             \
	X(SL_ENOMEM, "out_of_memory", "out of memory", 503)                   \
	X(SL_EINVAL, "invalid", "invalid argument", 400)                      \
	X(SL_EPARSE, "parse_error", "input could not be parsed", 400)         \
	X(SL_ELIMIT, "too_large", "input exceeds a limit", 413)               \
	X(SL_ENOTFOUND, "not_found", "not found", 404)                        \
	X(SL_EEXIST, "exists", "already exists", 409)                         \
	X(SL_ECONFLICT, "conflict", "conflicts with the current state", 409)  \
	X(SL_ENOSPACE, "no_capacity", "no capacity satisfies the request", 409) \
	X(SL_EIO, "io_error", "input/output error", 500)                     \
	X(SL_EUNAUTH, "unauthorized", "missing, unknown or revoked token", 401) \
	X(SL_EFORBIDDEN, "forbidden", "this role may not do that", 403)       \
	X(SL_EQUOTA, "quota", "the tenant's quota does not allow it", 403)    \
	X(SL_EMETHOD, "method_not_allowed", "method not allowed on this path", 405) \
	X(SL_EFUNDS, "insufficient_funds", "the balance and credit line do not cover it", 402) \
	X(SL_ECSRF, "csrf", "a request made with the session cookie needs its X-CSRF-Token", 403) \
	X(SL_ERATE, "rate_limited", "too many attempts; wait and try again", 429)

enum sl_err {
#define SL_ERR_ENUM(name, code, msg, http) name,
	SL_ERRORS(SL_ERR_ENUM)
#undef SL_ERR_ENUM
	SL_ERR__COUNT
};

/* Stable machine-readable code ("no_capacity"); never NULL. */
const char *sl_err_code(enum sl_err e);
/* Default human message; never NULL. */
const char *sl_err_message(enum sl_err e);
/* HTTP status a server answers this error with. */
int sl_err_http_status(enum sl_err e);

#define SL_DIAG_MSG 512
#define SL_DIAG_HINT 256

/* What went wrong, where and how to fix it. line/col are 1-based, 0 if unknown;
 * file is borrowed (may be NULL). */
struct sl_diag {
	const char *file;
	int line, col;
	char msg[SL_DIAG_MSG];
	char hint[SL_DIAG_HINT];
};

void sl_diag_clear(struct sl_diag *d);
/* Sets d->msg (printf format) and returns e, so callers can write
 * `return sl_diag_set(d, SL_EINVAL, "bad %s", x);`. d may be NULL. */
enum sl_err sl_diag_set(struct sl_diag *d, enum sl_err e, const char *fmt, ...)
	SL_PRINTF(3, 4);
/* Like sl_diag_set with a position. */
enum sl_err sl_diag_at(struct sl_diag *d, enum sl_err e, int line, int col,
		       const char *fmt, ...) SL_PRINTF(5, 6);
/* Sets d->hint; d may be NULL. */
void sl_diag_hint(struct sl_diag *d, const char *fmt, ...) SL_PRINTF(2, 3);
/* "file:line:col: msg" (parts that are unknown are left out) into buf. */
void sl_diag_format(const struct sl_diag *d, char *buf, size_t n);

#endif

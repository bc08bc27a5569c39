/* err.c - the error table's accessors and the diagnostic helpers. */
#include "err.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *code, *msg;
	int http;
} err_table[] = {
#define SL_ERR_ROW(name, code, msg, http) {code, msg, http},
	SL_ERRORS(SL_ERR_ROW)
#undef SL_ERR_ROW
};

const char *sl_err_code(enum sl_err e)
{
	return (unsigned)e < SL_ERR__COUNT ? err_table[e].code : "unknown";
}

const char *sl_err_message(enum sl_err e)
{
	return (unsigned)e < SL_ERR__COUNT ? err_table[e].msg : "unknown error";
}

int sl_err_http_status(enum sl_err e)
{
	return (unsigned)e < SL_ERR__COUNT ? err_table[e].http : 500;
}

void sl_diag_clear(struct sl_diag *d)
{
	if (d)
		memset(d, 0, sizeof(*d));
}

static void diag_vset(struct sl_diag *d, const char *fmt, va_list ap)
{
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
}

enum sl_err sl_diag_set(struct sl_diag *d, enum sl_err e, const char *fmt, ...)
{
	if (d) {
		va_list ap;
		va_start(ap, fmt);
		diag_vset(d, fmt, ap);
		va_end(ap);
	}
	return e;
}

enum sl_err sl_diag_at(struct sl_diag *d, enum sl_err e, int line, int col,
		       const char *fmt, ...)
{
	if (d) {
		va_list ap;
		d->line = line;
		d->col = col;
		va_start(ap, fmt);
		diag_vset(d, fmt, ap);
		va_end(ap);
	}
	return e;
}

void sl_diag_hint(struct sl_diag *d, const char *fmt, ...)
{
	if (d) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(d->hint, sizeof(d->hint), fmt, ap);
		va_end(ap);
	}
}

void sl_diag_format(const struct sl_diag *d, char *buf, size_t n)
{
	if (d->file && d->line > 0)
		snprintf(buf, n, "%s:%d:%d: %s", d->file, d->line, d->col, d->msg);
	else if (d->file)
		snprintf(buf, n, "%s: %s", d->file, d->msg);
	else if (d->line > 0)
		snprintf(buf, n, "line %d, column %d: %s", d->line, d->col, d->msg);
	else
		snprintf(buf, n, "%s", d->msg);
}

/* log.c - logfmt-like line logging.
 *
 * Callers write pairs with a printf format ("lease=%s gpus=%d") because that is
 * what C programmers read fastest and what gcc checks. To quote each value on
 * its own we cannot hand the whole format to vsnprintf: the format is split into
 * `key=VALUE` words, each conversion is parsed here and its argument fetched
 * with va_arg by type, and only the formatted value is escaped. A line is built
 * in a fixed buffer and written with one fwrite, so logging never allocates and
 * a line never interleaves with another. */
#include "log.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

static FILE *log_out;
static enum sl_log_level log_min = SL_LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};
#define NLEVELS (sizeof(level_names) / sizeof(level_names[0]))

#define TRUNC_TAIL " truncated=true\n"
/* Room for one formatted value; longer values are cut (the line would be cut
 * anyway) and the line is marked truncated. */
#define VALUE_MAX SL_LOG_LINE_MAX
/* An escaped value longer than a line could never be written whole. */
#define ESCAPED_MAX SL_LOG_LINE_MAX
/* Longest single conversion spec we accept, e.g. "%-+ #020.10llu". */
#define SPEC_MAX 32

void sl_log_init(FILE *out, enum sl_log_level min)
{
	log_out = out;
	log_min = min;
}

int sl_log_enabled(enum sl_log_level level)
{
	return (unsigned)level < NLEVELS && level >= log_min;
}

const char *sl_log_level_name(enum sl_log_level level)
{
	return (unsigned)level < NLEVELS ? level_names[level] : "?";
}

enum sl_err sl_log_level_parse(const char *name, enum sl_log_level *out,
			       struct sl_diag *d)
{
	for (size_t i = 0; i < NLEVELS; i++) {
		if (name && strcmp(name, level_names[i]) == 0) {
			*out = (enum sl_log_level)i;
			return SL_OK;
		}
	}
	sl_diag_hint(d, "use one of: debug, info, warn, error");
	return sl_diag_set(d, SL_EINVAL, "unknown log level '%s'",
			   name ? name : "(null)");
}

/* A value being formatted: raw bytes, bounded; cut records a value that did
 * not fit. */
struct vbuf {
	char s[VALUE_MAX];
	size_t n;
	int cut;
};

static void vbuf_put(struct vbuf *v, const char *s, size_t n)
{
	size_t room = sizeof(v->s) - 1 - v->n;
	if (n > room) {
		n = room;
		v->cut = 1;
	}
	memcpy(v->s + v->n, s, n);
	v->n += n;
	v->s[v->n] = '\0';
}

static void vbuf_printed(struct vbuf *v, int r)
{
	size_t room = sizeof(v->s) - 1 - v->n;
	if (r < 0)
		return;
	if ((size_t)r > room) {
		v->n += room;
		v->cut = 1;
	} else {
		v->n += (size_t)r;
	}
}

/* Parses the conversion at *p (pointing at '%'), fetches its argument and
 * appends the formatted text. Returns the first byte after the spec. An
 * unsupported spec is copied literally without consuming an argument. */
static const char *format_one(struct vbuf *v, const char *p, va_list *ap)
{
	char spec[SPEC_MAX];
	const char *q = p + 1;
	char len[3] = "";
	size_t ln = 0;

	while (*q && strchr("-+ #0", *q))
		q++;
	while (*q >= '0' && *q <= '9')
		q++;
	if (*q == '.') {
		q++;
		while (*q >= '0' && *q <= '9')
			q++;
	}
	while (*q && strchr("hlzjtL", *q) && ln < 2)
		len[ln++] = *q++;
	len[ln] = '\0';
	if (*q == '%' && q == p + 1) {
		vbuf_put(v, "%", 1);
		return q + 1;
	}
	if (!*q || !strchr("diuxXocspeEfFgGaA", *q) ||
	    (size_t)(q - p + 2) > sizeof(spec)) {
		size_t n = (size_t)(q - p) + (*q ? 1 : 0);
		vbuf_put(v, p, n);
		return p + n;
	}
	memcpy(spec, p, (size_t)(q - p + 1));
	spec[q - p + 1] = '\0';

	char *out = v->s + v->n;
	size_t room = sizeof(v->s) - v->n;
	int r = -1;
	switch (*q) {
	case 'd':
	case 'i':
		if (!strcmp(len, "l"))
			r = snprintf(out, room, spec, va_arg(*ap, long));
		else if (!strcmp(len, "ll"))
			r = snprintf(out, room, spec, va_arg(*ap, long long));
		else if (!strcmp(len, "z"))
			r = snprintf(out, room, spec, va_arg(*ap, ssize_t));
		else if (!strcmp(len, "j"))
			r = snprintf(out, room, spec, va_arg(*ap, intmax_t));
		else if (!strcmp(len, "t"))
			r = snprintf(out, room, spec, va_arg(*ap, ptrdiff_t));
		else
			r = snprintf(out, room, spec, va_arg(*ap, int));
		break;
	case 'u':
	case 'x':
	case 'X':
	case 'o':
		if (!strcmp(len, "l"))
			r = snprintf(out, room, spec, va_arg(*ap, unsigned long));
		else if (!strcmp(len, "ll"))
			r = snprintf(out, room, spec, va_arg(*ap, unsigned long long));
		else if (!strcmp(len, "z"))
			r = snprintf(out, room, spec, va_arg(*ap, size_t));
		else if (!strcmp(len, "j"))
			r = snprintf(out, room, spec, va_arg(*ap, uintmax_t));
		else if (!strcmp(len, "t"))
			r = snprintf(out, room, spec, va_arg(*ap, ptrdiff_t));
		else
			r = snprintf(out, room, spec, va_arg(*ap, unsigned));
		break;
	case 'c':
		r = snprintf(out, room, spec, va_arg(*ap, int));
		break;
	case 's': {
		const char *s = va_arg(*ap, const char *);
		r = snprintf(out, room, spec, s ? s : "(null)");
		break;
	}
	case 'p':
		r = snprintf(out, room, spec, va_arg(*ap, void *));
		break;
	default: /* floating point */
		if (!strcmp(len, "L"))
			r = snprintf(out, room, spec, va_arg(*ap, long double));
		else
			r = snprintf(out, room, spec, va_arg(*ap, double));
		break;
	}
	vbuf_printed(v, r);
	return q + 1;
}

/* Formats the value part of one word (from p up to end) into v. */
static void format_value(struct vbuf *v, const char *p, const char *end,
			 va_list *ap)
{
	while (p < end) {
		const char *pct = memchr(p, '%', (size_t)(end - p));
		if (!pct) {
			vbuf_put(v, p, (size_t)(end - p));
			return;
		}
		vbuf_put(v, p, (size_t)(pct - p));
		p = format_one(v, pct, ap);
	}
}

static int needs_quotes(const char *s, size_t n)
{
	if (n == 0)
		return 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f)
			return 1;
	}
	return 0;
}

/* Writes s as a logfmt value into out (ESCAPED_MAX bytes); returns its
 * length, or SIZE_MAX if it does not fit. */
static size_t escape_value(const char *s, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (!needs_quotes(s, n)) {
		if (n > ESCAPED_MAX)
			return SIZE_MAX;
		memcpy(out, s, n);
		return n;
	}
	out[o++] = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		/* the longest escape (4) plus the closing quote must fit */
		if (o + 5 > ESCAPED_MAX)
			return SIZE_MAX;
		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else if (c == '\r') {
			out[o++] = '\\';
			out[o++] = 'r';
		} else if (c == '\t') {
			out[o++] = '\\';
			out[o++] = 't';
		} else if (c < ' ' || c == 0x7f) {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		} else {
			out[o++] = (char)c;
		}
	}
	out[o++] = '"';
	return o;
}

/* The line being built. Content stops at LINE_ROOM so that the truncation
 * tail always fits. */
struct line {
	char s[SL_LOG_LINE_MAX];
	size_t n;
	int cut;
};
#define LINE_ROOM (SL_LOG_LINE_MAX - sizeof(TRUNC_TAIL))

/* Appends " key=value" whole, or marks the line cut. */
static void line_pair(struct line *l, const char *key, size_t klen,
		      const struct vbuf *v, char *esc)
{
	size_t elen = escape_value(v->s, v->n, esc);

	if (l->cut || elen == SIZE_MAX ||
	    l->n + 1 + klen + (klen ? 1 : 0) + elen > LINE_ROOM) {
		l->cut = 1;
		return;
	}
	l->s[l->n++] = ' ';
	memcpy(l->s + l->n, key, klen);
	l->n += klen;
	if (klen)
		l->s[l->n++] = '=';
	memcpy(l->s + l->n, esc, elen);
	l->n += elen;
	if (v->cut)
		l->cut = 1;
}

static void line_time(struct line *l)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	l->n = strftime(l->s, sizeof(l->s), "%Y-%m-%dT%H:%M:%S", &tm);
	l->n += (size_t)snprintf(l->s + l->n, sizeof(l->s) - l->n, ".%03dZ",
				 (int)(ts.tv_nsec / 1000000));
}

void sl_log(enum sl_log_level level, const char *msg, const char *kv_fmt, ...)
{
	struct line l;
	struct vbuf v;
	char esc[ESCAPED_MAX];
	va_list ap;

	if (!sl_log_enabled(level))
		return;
	l.n = 0;
	l.cut = 0;
	line_time(&l);
	v.n = 0;
	v.cut = 0;
	vbuf_put(&v, level_names[level], strlen(level_names[level]));
	line_pair(&l, "level", 5, &v, esc);
	v.n = 0;
	v.cut = 0;
	vbuf_put(&v, msg ? msg : "", msg ? strlen(msg) : 0);
	line_pair(&l, "msg", 3, &v, esc);

	va_start(ap, kv_fmt);
	for (const char *p = kv_fmt ? kv_fmt : ""; *p;) {
		const char *end, *eq;
		size_t klen;
		if (*p == ' ') {
			p++;
			continue;
		}
		end = p + strcspn(p, " ");
		eq = memchr(p, '=', (size_t)(end - p));
		/* Formatting a conversion inside the key would desynchronise the
		 * arguments, so a word without '=' is all value. */
		klen = eq && !memchr(p, '%', (size_t)(eq - p)) ? (size_t)(eq - p) : 0;
		v.n = 0;
		v.cut = 0;
		v.s[0] = '\0';
		format_value(&v, klen ? eq + 1 : p, end, &ap);
		line_pair(&l, p, klen, &v, esc);
		p = end;
	}
	va_end(ap);

	if (l.cut) {
		memcpy(l.s + l.n, TRUNC_TAIL, sizeof(TRUNC_TAIL) - 1);
		l.n += sizeof(TRUNC_TAIL) - 1;
	} else {
		l.s[l.n++] = '\n';
	}
	FILE *out = log_out ? log_out : stderr;
	if (fwrite(l.s, 1, l.n, out) == l.n)
		fflush(out);
}

/* textout.c - see textout.h. */
#include "textout.h"

#include <stdarg.h>
#include <stdio.h>

void textout_printf(struct textout *o, const char *fmt, ...)
{
	va_list ap;
	char *dst = o->len < o->n ? o->buf + o->len : NULL;
	size_t room = o->len < o->n ? o->n - o->len : 0;

	va_start(ap, fmt);
	int k = vsnprintf(dst, room, fmt, ap);
	va_end(ap);
	if (k > 0)
		o->len += (size_t)k;
}

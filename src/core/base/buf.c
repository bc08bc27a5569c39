/* buf.c - see buf.h.
 *
 * Growth doubles from SL_BUF_FIRST bytes and is clamped to max + 1, so a
 * buffer never holds more memory than its maximum allows. */
#include "buf.h"

#include <assert.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SL_BUF_FIRST 256    /* bytes of a buffer's first allocation */
#define SL_GROW_FIRST 2     /* elements of an array's first allocation: small, as most
                             * per-object arrays (a lease's history) stay small */

void sl_buf_init(struct sl_buf *b, size_t max)
{
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
	b->err = SL_OK;
}

void sl_buf_release(struct sl_buf *b)
{
	free(b->p);
	sl_buf_init(b, b->max);
}

void sl_buf_reset(struct sl_buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = 0;
	b->err = SL_OK;
}

static enum sl_err fail(struct sl_buf *b, enum sl_err e)
{
	b->err = e;
	return e;
}

enum sl_err sl_buf_grow(struct sl_buf *b, size_t more)
{
	if (b->err)
		return b->err;
	if (more > b->max || b->len > b->max - more)
		return fail(b, SL_ELIMIT);
	size_t need = b->len + more + 1; /* <= max + 1, which cannot overflow past SIZE_MAX... */
	if (need == 0)
		return fail(b, SL_ELIMIT); /* ...unless max is SIZE_MAX */
	if (need <= b->cap)
		return SL_OK;
	size_t ncap = b->cap ? b->cap : SL_BUF_FIRST;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? SIZE_MAX : ncap * 2;
	if (b->max < SIZE_MAX && ncap > b->max + 1)
		ncap = b->max + 1;
	char *np = realloc(b->p, ncap);
	if (!np)
		return fail(b, SL_ENOMEM);
	if (!b->p)
		np[0] = 0;
	b->p = np;
	b->cap = ncap;
	return SL_OK;
}

void sl_buf_setlen(struct sl_buf *b, size_t len)
{
	assert(b->p && len < b->cap);
	b->len = len;
	b->p[len] = 0;
}

enum sl_err sl_buf_add(struct sl_buf *b, const void *s, size_t n)
{
	enum sl_err e = sl_buf_grow(b, n);
	if (e)
		return e;
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
	return SL_OK;
}

enum sl_err sl_buf_adds(struct sl_buf *b, const char *s)
{
	return sl_buf_add(b, s, strlen(s));
}

enum sl_err sl_buf_addc(struct sl_buf *b, char c)
{
	return sl_buf_add(b, &c, 1);
}

enum sl_err sl_buf_vaddf(struct sl_buf *b, const char *fmt, va_list ap)
{
	if (b->err)
		return b->err;
	va_list aq;
	va_copy(aq, ap);
	size_t room = b->cap > b->len ? b->cap - b->len : 0;
	int k = vsnprintf(room ? b->p + b->len : NULL, room, fmt, aq);
	va_end(aq);
	if (k < 0)
		return fail(b, SL_EINVAL); /* a format the C library refuses */
	size_t n = (size_t)k;
	if (n >= room) {
		enum sl_err e = sl_buf_grow(b, n);
		if (e) {
			if (b->p)
				b->p[b->len] = 0; /* undo the partial write */
			return e;
		}
		va_copy(aq, ap);
		k = vsnprintf(b->p + b->len, n + 1, fmt, aq);
		va_end(aq);
		assert(k >= 0 && (size_t)k == n);
	}
	b->len += n;
	return SL_OK;
}

enum sl_err sl_buf_addf(struct sl_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	enum sl_err e = sl_buf_vaddf(b, fmt, ap);
	va_end(ap);
	return e;
}

void sl_buf_set_err(struct sl_buf *b, enum sl_err e)
{
	assert(e != SL_OK);
	if (!b->err)
		b->err = e;
}

enum sl_err sl_buf_err(const struct sl_buf *b)
{
	return b->err;
}

const char *sl_buf_str(const struct sl_buf *b)
{
	return b->p && !b->err ? b->p : "";
}

enum sl_err sl_buf_detach(struct sl_buf *b, char **out, size_t *len)
{
	enum sl_err e = b->err;
	if (!e && !b->p)
		e = sl_buf_grow(b, 0);
	if (e) {
		sl_buf_release(b);
		*out = NULL;
		if (len)
			*len = 0;
		return e;
	}
	*out = b->p;
	if (len)
		*len = b->len;
	sl_buf_init(b, b->max);
	return SL_OK;
}

size_t sl_buf_copy_out(const struct sl_buf *b, char *dst, size_t n)
{
	size_t len = b->err ? 0 : b->len;
	if (n) {
		size_t k = len < n ? len : n - 1;
		if (k)
			memcpy(dst, b->p, k);
		dst[k] = 0;
	}
	return len;
}

enum sl_err sl_grow_size(void *arrp, size_t *cap, size_t need, size_t elem, size_t max)
{
	if (need <= *cap)
		return SL_OK;
	if (need > max || elem == 0 || need > SIZE_MAX / elem)
		return SL_ELIMIT;
	size_t ncap = *cap ? *cap : SL_GROW_FIRST;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? SIZE_MAX : ncap * 2;
	if (ncap > max)
		ncap = max;
	if (ncap > SIZE_MAX / elem)
		ncap = need;
	/* The array pointer is read and written as bytes, so any element type's
	 * pointer may be passed (all object pointers share one representation on
	 * the platforms we build for) without breaking the aliasing rules. */
	void *old;
	memcpy(&old, arrp, sizeof(old));
	void *na = realloc(old, ncap * elem);
	if (!na)
		return SL_ENOMEM;
	memcpy(arrp, &na, sizeof(na));
	*cap = ncap;
	return SL_OK;
}

enum sl_err sl_grow_int(void *arrp, int *cap, size_t need, size_t elem, size_t max)
{
	assert(*cap >= 0);
	size_t c = (size_t)*cap;
	enum sl_err e = sl_grow_size(arrp, &c, need, elem, max < (size_t)INT_MAX ? max : (size_t)INT_MAX);
	if (!e)
		*cap = (int)c;
	return e;
}

bool sl_strcpy(char *dst, size_t n, const char *src)
{
	size_t len = strlen(src);
	assert(len < n);
	if (len >= n) {
		if (n) {
			memcpy(dst, src, n - 1);
			dst[n - 1] = 0;
		}
		return false;
	}
	memcpy(dst, src, len + 1);
	return true;
}

/* ---- counted texts ---- */

struct sl_ctext {
	size_t refs;
	char text[];
};

static struct sl_ctext *ctext_of(const char *t)
{
	return (struct sl_ctext *)(void *)(uintptr_t)(t - offsetof(struct sl_ctext, text));
}

char *sl_strdup(const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *c = malloc(n);
	if (c)
		memcpy(c, s, n);
	return c;
}

char *sl_ctext_dup(const char *s)
{
	size_t n = s && s[0] ? strlen(s) + 1 : 0;
	struct sl_ctext *r = n ? malloc(sizeof(*r) + n) : NULL;
	if (!r)
		return NULL;
	r->refs = 1;
	memcpy(r->text, s, n);
	return r->text;
}

char *sl_ctext_ref(char *t)
{
	if (t)
		ctext_of(t)->refs++;
	return t;
}

void sl_ctext_drop(const char *t)
{
	struct sl_ctext *r = t ? ctext_of(t) : NULL;
	if (r && --r->refs == 0)
		free(r);
}

void sl_ctext_share(char **mine, char *theirs)
{
	if (!*mine || !theirs || *mine == theirs || strcmp(*mine, theirs))
		return;
	sl_ctext_drop(*mine);
	*mine = sl_ctext_ref(theirs);
}

/* buf.h - the one bounded growable buffer for text we build, and the one
 * growable-array helper (DESIGN §10.6; curl's dynbuf and git's strbuf are
 * the models).
 *
 * Every buffer carries its own maximum, named by its user. Going past it is
 * an error (SL_ELIMIT), never a truncation. Errors are sticky: the first
 * failed add (SL_ELIMIT or SL_ENOMEM) leaves the text as it was before that
 * add and makes every later add a no-op that returns the same error, so a
 * writer can add many pieces and check once, at sl_buf_detach or sl_buf_err
 * (both SL_MUST_USE). That is why the add functions, which return the
 * sticky error too, are not themselves marked SL_MUST_USE.
 *
 * The text is always NUL-terminated once anything was added; sl_buf_str
 * gives "" before that. max counts text bytes, not the NUL.
 *
 * Pure: allocation only. */
#ifndef SL_BUF_H
#define SL_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"

struct sl_buf {
	char *p;         /* the text, NUL-terminated; NULL before the first add */
	size_t len;      /* bytes of text, not counting the NUL */
	size_t cap;      /* bytes allocated at p */
	size_t max;      /* the most bytes of text this buffer may hold */
	enum sl_err err; /* first error, sticky until sl_buf_reset */
};

/* A static initializer: struct sl_buf b = SL_BUF_INIT(MY_TEXT_MAX); */
#define SL_BUF_INIT(maxlen) {NULL, 0, 0, (maxlen), SL_OK}

/* An empty buffer that may hold up to max bytes of text. Allocates nothing. */
void sl_buf_init(struct sl_buf *b, size_t max);
/* Frees the text; b is empty again (same max, error cleared). */
void sl_buf_release(struct sl_buf *b);
/* Empties b, keeping its memory for reuse; clears the sticky error. */
void sl_buf_reset(struct sl_buf *b);

/* Makes room for more bytes after the text (plus the NUL), so that a writer
 * may fill b->p + b->len directly and then call sl_buf_setlen. SL_ELIMIT when
 * len + more would pass max, SL_ENOMEM; sticky as above. */
enum sl_err sl_buf_grow(struct sl_buf *b, size_t more);
/* Sets the length after a direct write into room made by sl_buf_grow (or
 * shortens the text); len must be within that room (asserted). */
void sl_buf_setlen(struct sl_buf *b, size_t len);

/* Appends n bytes of s (which need not be NUL-terminated). */
enum sl_err sl_buf_add(struct sl_buf *b, const void *s, size_t n);
/* Appends the string s. */
enum sl_err sl_buf_adds(struct sl_buf *b, const char *s);
/* Appends one byte. */
enum sl_err sl_buf_addc(struct sl_buf *b, char c);
/* Appends printf-style text: all of it, or (on an error) none of it. */
enum sl_err sl_buf_addf(struct sl_buf *b, const char *fmt, ...) SL_PRINTF(2, 3);
enum sl_err sl_buf_vaddf(struct sl_buf *b, const char *fmt, va_list ap) SL_PRINTF(2, 0);

/* Records e (not SL_OK) as the sticky error unless one is already held: for a
 * writer whose piece failed to form (json_dumps out of memory, say), so that
 * the text is not handed out without it. */
void sl_buf_set_err(struct sl_buf *b, enum sl_err e);
/* The sticky error: SL_OK while every add so far succeeded. */
enum sl_err sl_buf_err(const struct sl_buf *b) SL_MUST_USE;
/* The text, borrowed until the next change to b; "" when empty. */
const char *sl_buf_str(const struct sl_buf *b);

/* Hands the text over: on SL_OK *out owns it (free() it; never NULL, "" when
 * nothing was added) and *len (may be NULL) gets its length; b is left empty
 * and usable. On the sticky error, the text is freed, *out is NULL, *len 0,
 * b is left empty and the error is returned. */
enum sl_err sl_buf_detach(struct sl_buf *b, char **out, size_t *len) SL_MUST_USE;

/* Copies the text into dst[0..n) the way snprintf would: NUL-terminated when
 * n > 0, cut short when it does not fit, and returns the whole length, so a
 * caller can size dst and call again (topo_format_matrix, nccl_topo_xml keep
 * that contract). Returns 0 and writes "" when b holds an error. */
size_t sl_buf_copy_out(const struct sl_buf *b, char *dst, size_t n);

/* Growable arrays: makes *arrp (an array of elements of elem bytes with room
 * for *cap of them) hold at least need elements, doubling, never past max
 * elements. SL_ELIMIT when need > max (or the bytes overflow size_t),
 * SL_ENOMEM; *arrp and *cap are unchanged on an error. Use it through
 * sl_grow, which takes the element size from the array and accepts an int
 * or a size_t capacity:
 *     if ((e = sl_grow(&c->leases, &c->cap_leases, c->nleases + 1, CTL_LEASES_MAX)))
 *             return e; */
enum sl_err sl_grow_size(void *arrp, size_t *cap, size_t need, size_t elem, size_t max) SL_MUST_USE;
enum sl_err sl_grow_int(void *arrp, int *cap, size_t need, size_t elem, size_t max) SL_MUST_USE;
#define sl_grow(arrp, capp, need, max)                                                    \
	_Generic((capp), int *: sl_grow_int, size_t *: sl_grow_size)(                       \
		(arrp), (capp), (size_t)(need), sizeof(**(arrp)), (size_t)(max))

/* Counted texts: one copy that several holders share, with a count of them
 * before the text (100,000 leases that ask alike and wait for the same
 * reason: bench/results/memory.md). Never edited once made. */
/* A counted copy of s with one holder; NULL for NULL or "" (and out of memory). */
char *sl_ctext_dup(const char *s);
/* One more holder of t (NULL: none); returns t. */
char *sl_ctext_ref(char *t);
/* One holder fewer (NULL: nothing); the last frees it. */
void sl_ctext_drop(const char *t);
/* Points *mine at theirs when the two texts are equal (*mine's old copy
 * loses a holder, theirs gains one); else nothing changes. */
void sl_ctext_share(char **mine, char *theirs);

/* A malloc'd copy of s (C11 has no strdup); NULL for NULL or out of memory. */
char *sl_strdup(const char *s);

/* strcpy for a string whose length the caller has already bounded (the
 * banned strcpy's replacement): copies src into dst[n]. A src that does not
 * fit is a broken invariant: asserted in Debug builds; Release builds copy
 * what fits, NUL-terminated, and return false. */
bool sl_strcpy(char *dst, size_t n, const char *src);

#endif

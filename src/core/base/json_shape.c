/* json_shape.c - JSON text as a shared shape and its own numbers
 * (json_shape.h). */
#include "json_shape.h"

#include <stdbool.h>
#include <string.h>

#define MARK '#'
/* Four bits a number character; NUM_END closes a number (and pads the
 * last byte). */
static const char num_chars[] = "0123456789-.eE+";
enum { NUM_END = 15 };

static bool num_start(char c)
{
	return (c >= '0' && c <= '9') || c == '-';
}

static int num_code(char c)
{
	const char *p = c ? strchr(num_chars, c) : NULL;
	return p ? (int)(p - num_chars) : -1;
}

/* The end of the string starting at s (its opening quote); NULL when it
 * does not end. */
static const char *string_end(const char *s)
{
	for (s++; *s; s++) {
		if (*s == '"')
			return s + 1;
		if (*s == '\\' && !*++s)
			return NULL;
	}
	return NULL;
}

struct nibbles {
	struct sl_buf *b;
	int half; /* -1: none pending */
};

static void nib_put(struct nibbles *n, int v)
{
	if (n->half < 0) {
		n->half = v;
		return;
	}
	sl_buf_addc(n->b, (char)(unsigned char)(n->half << 4 | v));
	n->half = -1;
}

enum sl_err json_shape_split(const char *text, struct sl_buf *shape, struct sl_buf *nums)
{
	struct nibbles n = {nums, -1};
	const char *s = text;
	while (*s) {
		const char *run = s;
		while (*s && *s != '"' && *s != MARK && !num_start(*s))
			s++;
		sl_buf_add(shape, run, (size_t)(s - run));
		if (*s == MARK)
			return SL_EINVAL;
		if (*s == '"') {
			const char *e = string_end(s);
			if (!e)
				return SL_EINVAL;
			sl_buf_add(shape, s, (size_t)(e - s));
			s = e;
		} else if (*s) {
			int v;
			while ((v = num_code(*s)) >= 0) {
				nib_put(&n, v);
				s++;
			}
			nib_put(&n, NUM_END);
			sl_buf_addc(shape, MARK);
		}
	}
	if (n.half >= 0)
		nib_put(&n, NUM_END);
	enum sl_err e = sl_buf_err(shape);
	return e != SL_OK ? e : sl_buf_err(nums);
}

enum sl_err json_shape_join(const char *shape, const unsigned char *nums, size_t nlen,
			    struct sl_buf *out)
{
	size_t k = 0; /* nibbles read */
	const char *s = shape;
	while (*s) {
		const char *run = s;
		while (*s && *s != '"' && *s != MARK)
			s++;
		sl_buf_add(out, run, (size_t)(s - run));
		if (*s == '"') {
			const char *e = string_end(s);
			if (!e)
				return SL_EINVAL;
			sl_buf_add(out, s, (size_t)(e - s));
			s = e;
		} else if (*s) {
			size_t first = k;
			for (;; k++) {
				if (k / 2 >= nlen)
					return SL_EINVAL;
				int v = k % 2 ? nums[k / 2] & 15 : nums[k / 2] >> 4;
				if (v == NUM_END)
					break;
				sl_buf_addc(out, num_chars[v]);
			}
			if (k++ == first)
				return SL_EINVAL; /* an empty number */
			s++;
		}
	}
	/* every number used: at most the padding nibble is left */
	if (k / 2 + (k % 2) != nlen || (k % 2 && (nums[k / 2] & 15) != NUM_END))
		return SL_EINVAL;
	return sl_buf_err(out);
}

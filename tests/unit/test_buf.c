/* test_buf.c - the bounded buffer (sl_buf) and the growable-array helper
 * (sl_grow): growth, the maximum as an error (never a truncation), sticky
 * errors, addf, detach ownership, the snprintf-style copy out, and the
 * out-of-memory path (a request no allocator can meet: ASan is told to
 * answer it with NULL, as malloc does, instead of stopping the test). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"

const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

static void test_empty(void **state)
{
	(void)state;
	struct sl_buf b;
	sl_buf_init(&b, 16);
	assert_string_equal(sl_buf_str(&b), "");
	assert_int_equal(sl_buf_err(&b), SL_OK);
	char *s = NULL;
	size_t n = 99;
	assert_int_equal(sl_buf_detach(&b, &s, &n), SL_OK);
	assert_non_null(s);
	assert_string_equal(s, "");
	assert_int_equal(n, 0);
	free(s);
	sl_buf_release(&b); /* after a detach: nothing to free, and no harm */
}

static void test_growth(void **state)
{
	(void)state;
	struct sl_buf b = SL_BUF_INIT(1u << 20);
	char want[5000];
	for (int i = 0; i < 5000; i++) {
		want[i] = (char)('a' + i % 26);
		assert_int_equal(sl_buf_addc(&b, want[i]), SL_OK);
		assert_int_equal(b.len, (size_t)i + 1);
		assert_true(b.cap > b.len);
		assert_int_equal(b.p[b.len], 0);
	}
	assert_memory_equal(b.p, want, 5000);
	assert_int_equal(sl_buf_add(&b, "xyz", 2), SL_OK);
	assert_int_equal(sl_buf_adds(&b, "!"), SL_OK);
	assert_string_equal(b.p + 5000, "xy!");
	sl_buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_string_equal(sl_buf_str(&b), "");
	assert_true(b.cap > 5000); /* the memory is kept for reuse */
	sl_buf_release(&b);
	assert_null(b.p);
	assert_int_equal(b.max, 1u << 20);
}

static void test_max_is_an_error(void **state)
{
	(void)state;
	struct sl_buf b;
	sl_buf_init(&b, 10);
	assert_int_equal(sl_buf_adds(&b, "0123456789"), SL_OK); /* exactly max */
	assert_true(b.cap <= 11);                                /* never more than max + NUL */
	assert_int_equal(sl_buf_addc(&b, 'x'), SL_ELIMIT);
	assert_string_equal(sl_buf_str(&b), ""); /* no text once it failed */
	assert_string_equal(b.p, "0123456789");  /* and nothing of the failed add */
	/* Sticky: a later add that would fit still fails. */
	sl_buf_reset(&b);
	assert_int_equal(sl_buf_adds(&b, "01234"), SL_OK);
	assert_int_equal(sl_buf_adds(&b, "567890"), SL_ELIMIT);
	assert_int_equal(sl_buf_adds(&b, "5"), SL_ELIMIT);
	assert_int_equal(sl_buf_err(&b), SL_ELIMIT);
	char *s = (char *)"untouched";
	size_t n = 7;
	assert_int_equal(sl_buf_detach(&b, &s, &n), SL_ELIMIT);
	assert_null(s);
	assert_int_equal(n, 0);
	assert_null(b.p); /* detach on an error frees */
	/* The buffer is usable again after the failed detach. */
	assert_int_equal(sl_buf_adds(&b, "ok"), SL_OK);
	assert_string_equal(sl_buf_str(&b), "ok");
	sl_buf_release(&b);

	/* A zero maximum holds only the empty text. */
	sl_buf_init(&b, 0);
	assert_int_equal(sl_buf_add(&b, "", 0), SL_OK);
	assert_int_equal(sl_buf_addc(&b, 'a'), SL_ELIMIT);
	sl_buf_release(&b);
}

static void test_addf(void **state)
{
	(void)state;
	struct sl_buf b = SL_BUF_INIT(300);
	assert_int_equal(sl_buf_addf(&b, "%d-%s", 42, "x"), SL_OK);
	assert_string_equal(sl_buf_str(&b), "42-x");
	/* Past the first allocation: the retry path. */
	char big[280];
	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	assert_int_equal(sl_buf_addf(&b, "[%s]", big), SL_OK);
	assert_int_equal(b.len, 4 + 2 + 279);
	assert_int_equal(b.p[4], '[');
	assert_int_equal(b.p[b.len - 1], ']');
	/* Over the max: all or nothing, and the text ends where it did. */
	size_t len = b.len;
	assert_int_equal(sl_buf_addf(&b, "%s", "0123456789abcdef"), SL_ELIMIT);
	assert_int_equal(b.len, len);
	assert_int_equal(strlen(b.p), len);
	sl_buf_release(&b);

	/* Exactly at the max with addf. */
	sl_buf_init(&b, 3);
	assert_int_equal(sl_buf_addf(&b, "%03d", 7), SL_OK);
	assert_string_equal(sl_buf_str(&b), "007");
	assert_int_equal(sl_buf_addf(&b, "%s", ""), SL_OK);
	assert_int_equal(sl_buf_addf(&b, "%d", 1), SL_ELIMIT);
	sl_buf_release(&b);
}

static void test_detach_hands_over(void **state)
{
	(void)state;
	struct sl_buf b = SL_BUF_INIT(64);
	assert_int_equal(sl_buf_adds(&b, "hello"), SL_OK);
	char *s;
	size_t n;
	assert_int_equal(sl_buf_detach(&b, &s, &n), SL_OK);
	assert_string_equal(s, "hello");
	assert_int_equal(n, 5);
	/* b no longer owns it: b is empty, and building again leaves s alone. */
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	assert_int_equal(sl_buf_adds(&b, "world"), SL_OK);
	assert_string_equal(s, "hello");
	char *t;
	assert_int_equal(sl_buf_detach(&b, &t, NULL), SL_OK);
	assert_ptr_not_equal(s, t);
	assert_string_equal(t, "world");
	free(s);
	free(t);
}

static void test_grow_and_setlen(void **state)
{
	(void)state;
	struct sl_buf b = SL_BUF_INIT(8);
	assert_int_equal(sl_buf_grow(&b, 4), SL_OK);
	memcpy(b.p + b.len, "abcd", 4);
	sl_buf_setlen(&b, 4);
	assert_string_equal(sl_buf_str(&b), "abcd");
	assert_int_equal(sl_buf_grow(&b, 4), SL_OK);
	assert_int_equal(sl_buf_grow(&b, 5), SL_ELIMIT);
	sl_buf_release(&b);
}

static void test_copy_out(void **state)
{
	(void)state;
	struct sl_buf b = SL_BUF_INIT(64);
	char small[4] = "zzz";
	assert_int_equal(sl_buf_copy_out(&b, small, sizeof(small)), 0);
	assert_string_equal(small, "");
	assert_int_equal(sl_buf_adds(&b, "abcdef"), SL_OK);
	assert_int_equal(sl_buf_copy_out(&b, NULL, 0), 6);
	assert_int_equal(sl_buf_copy_out(&b, small, sizeof(small)), 6);
	assert_string_equal(small, "abc");
	char big[8];
	assert_int_equal(sl_buf_copy_out(&b, big, sizeof(big)), 6);
	assert_string_equal(big, "abcdef");
	assert_int_equal(sl_buf_adds(&b, "0123456789012345678901234567890123456789012345678901234567890"),
			 SL_ELIMIT);
	assert_int_equal(sl_buf_copy_out(&b, big, sizeof(big)), 0);
	assert_string_equal(big, "");
	sl_buf_release(&b);
}

static void test_out_of_memory(void **state)
{
	(void)state;
	struct sl_buf b = SL_BUF_INIT(SIZE_MAX);
	assert_int_equal(sl_buf_adds(&b, "kept"), SL_OK);
	assert_int_equal(sl_buf_grow(&b, SIZE_MAX / 4), SL_ENOMEM);
	assert_int_equal(sl_buf_err(&b), SL_ENOMEM);
	assert_string_equal(b.p, "kept");
	assert_int_equal(sl_buf_addc(&b, 'x'), SL_ENOMEM); /* sticky */
	char *s;
	assert_int_equal(sl_buf_detach(&b, &s, NULL), SL_ENOMEM);
	assert_null(s);
	/* With max SIZE_MAX the length arithmetic must not wrap. */
	assert_int_equal(sl_buf_adds(&b, "x"), SL_OK);
	assert_int_equal(sl_buf_grow(&b, SIZE_MAX), SL_ELIMIT);
	sl_buf_release(&b);

	/* Arrays: unchanged on failure. */
	int *v = NULL;
	size_t cap = 0;
	assert_int_equal(sl_grow(&v, &cap, 4, 100), SL_OK);
	int *keep = v;
	assert_int_equal(sl_grow(&v, &cap, SIZE_MAX / 8, SIZE_MAX), SL_ENOMEM);
	assert_ptr_equal(v, keep);
	assert_true(cap >= 4);
	free(v);
}

static void test_grow_array(void **state)
{
	(void)state;
	struct pair {
		int a;
		double b;
	} *v = NULL;
	int cap = 0;
	for (int n = 0; n < 1000; n++) {
		assert_int_equal(sl_grow(&v, &cap, n + 1, 1000), SL_OK);
		assert_true(cap >= n + 1 && cap <= 1000);
		v[n].a = n;
		v[n].b = n * 0.5;
	}
	for (int n = 0; n < 1000; n++)
		assert_int_equal(v[n].a, n);
	assert_int_equal(cap, 1000); /* clamped to the maximum, not doubled past it */
	assert_int_equal(sl_grow(&v, &cap, 1000, 1000), SL_OK);
	assert_int_equal(sl_grow(&v, &cap, 1001, 1000), SL_ELIMIT);
	assert_int_equal(cap, 1000);
	free(v);

	/* size_t capacities, and an element size that would overflow. */
	char *c = NULL;
	size_t scap = 0;
	assert_int_equal(sl_grow(&c, &scap, 1, 10), SL_OK);
	assert_true(scap >= 1 && scap <= 10);
	free(c);
	struct big {
		char x[1 << 16];
	} *g = NULL;
	size_t gcap = 0;
	assert_int_equal(sl_grow(&g, &gcap, SIZE_MAX / 1024, SIZE_MAX), SL_ELIMIT);
	assert_null(g);
	assert_int_equal(gcap, 0);
	/* int capacities stop at INT_MAX whatever max says. */
	char *ic = NULL;
	int icap = 0;
	assert_int_equal(sl_grow(&ic, &icap, (size_t)INT32_MAX + 1, SIZE_MAX), SL_ELIMIT);
	assert_null(ic);
}

static void test_strcpy(void **state)
{
	(void)state;
	char d[6];
	assert_true(sl_strcpy(d, sizeof(d), "hello"));
	assert_string_equal(d, "hello");
	assert_true(sl_strcpy(d, sizeof(d), ""));
	assert_string_equal(d, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_max_is_an_error),
		cmocka_unit_test(test_addf),
		cmocka_unit_test(test_detach_hands_over),
		cmocka_unit_test(test_grow_and_setlen),
		cmocka_unit_test(test_copy_out),
		cmocka_unit_test(test_out_of_memory),
		cmocka_unit_test(test_grow_array),
		cmocka_unit_test(test_strcpy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

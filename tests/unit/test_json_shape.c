/* test_json_shape.c - JSON text as a shape and its numbers (json_shape.h):
 * every text joins back byte for byte (numbers of every spelling, '#' and
 * digits inside strings, escaped quotes, literals, spacing), texts that
 * differ only in their numbers have one shape, the numbers are small, and
 * what does not belong together is refused, not misread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "json_shape.h"

#define MAX (1u << 20)

/* Splits text, joins it back; returns the shape (free it), *nlen its numbers' bytes. */
static char *round_trip(const char *text, size_t *nlen)
{
	struct sl_buf shape = SL_BUF_INIT(MAX), nums = SL_BUF_INIT(MAX), out = SL_BUF_INIT(MAX);
	assert_int_equal(json_shape_split(text, &shape, &nums), SL_OK);
	assert_int_equal(json_shape_join(sl_buf_str(&shape), (const unsigned char *)nums.p, nums.len, &out),
			 SL_OK);
	assert_string_equal(sl_buf_str(&out), text);
	*nlen = nums.len;
	char *s = NULL;
	assert_int_equal(sl_buf_detach(&shape, &s, NULL), SL_OK);
	sl_buf_release(&nums);
	sl_buf_release(&out);
	return s;
}

static void test_round_trip(void **state)
{
	(void)state;
	const char *texts[] = {
		"",
		"[]",
		"0",
		"-1",
		"[1,22,333]",
		"{\"a\":-0.5e+10,\"b\":1E-7,\"c\":12.25,\"d\":9223372036854775807}",
		"{\"index\":0,\"xid\":[],\"healthy\":true,\"temp_c\":41,\"ok\":false,\"x\":null}",
		"{\"s#1\":\"#2 and 3 #\",\"q\":\"say \\\"7\\\" \\\\\",\"n\":8}",
		"{ \"spaced\" : [ 1 , 2 ] ,\n\t\"t\" : true }",
		"[\"\\u0041#\",\"\\\\\",-12,\"\"]",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		size_t n;
		free(round_trip(texts[i], &n));
	}
	size_t n;
	char *s = round_trip("[1,22,333]", &n);
	assert_string_equal(s, "[#,#,#]");
	assert_int_equal(n, 5); /* 1F 22F 333F: 9 nibbles, padded */
	free(s);
	s = round_trip("{\"a#\":\"7\",\"b\":-7}", &n);
	assert_string_equal(s, "{\"a#\":\"7\",\"b\":#}");
	assert_int_equal(n, 2);
	free(s);
}

/* What json_shape is for: a heartbeat's "gpus" of two nodes, one shape. */
static void test_one_shape(void **state)
{
	(void)state;
	char a[2048], b[2048];
	size_t ka = 0, kb = 0, na, nb;
	for (int g = 0; g < 8; g++) {
		const char *f = "%s{\"index\":%d,\"xid\":[],\"healthy\":true,\"temp_c\":%d,\"power_w\":%d,"
				"\"ecc_sbe\":0,\"ecc_dbe\":0,\"nvlink_up\":18,\"util_pct\":%d}";
		ka += (size_t)snprintf(a + ka, sizeof(a) - ka, f, g ? "," : "[", g, 38 + g, 70 + 3 * g, 97);
		kb += (size_t)snprintf(b + kb, sizeof(b) - kb, f, g ? "," : "[", g, 40 + g % 3, 101 + g, 0);
	}
	snprintf(a + ka, sizeof(a) - ka, "]");
	snprintf(b + kb, sizeof(b) - kb, "]");
	char *sa = round_trip(a, &na), *sb = round_trip(b, &nb);
	assert_string_equal(sa, sb);
	assert_true(na < strlen(a) / 8);
	assert_true(nb < strlen(b) / 8);
	free(sa);
	free(sb);
}

static void test_refused(void **state)
{
	(void)state;
	struct sl_buf shape = SL_BUF_INIT(MAX), nums = SL_BUF_INIT(MAX), out = SL_BUF_INIT(MAX);
	/* a '#' outside a string, a string that does not end */
	assert_int_equal(json_shape_split("[1,#]", &shape, &nums), SL_EINVAL);
	sl_buf_reset(&shape);
	sl_buf_reset(&nums);
	assert_int_equal(json_shape_split("[\"ab", &shape, &nums), SL_EINVAL);
	sl_buf_reset(&shape);
	sl_buf_reset(&nums);
	assert_int_equal(json_shape_split("[\"ab\\", &shape, &nums), SL_EINVAL);
	sl_buf_reset(&shape);
	sl_buf_reset(&nums);

	/* numbers that do not fit the shape */
	assert_int_equal(json_shape_split("[1,2]", &shape, &nums), SL_OK);
	const unsigned char *p = (const unsigned char *)nums.p;
	assert_int_equal(json_shape_join("[#,#,#]", p, nums.len, &out), SL_EINVAL);
	sl_buf_reset(&out);
	assert_int_equal(json_shape_join("[#]", p, nums.len, &out), SL_EINVAL);
	sl_buf_reset(&out);
	assert_int_equal(json_shape_join("[#,#]", p, nums.len - 1, &out), SL_EINVAL);
	sl_buf_reset(&out);
	const unsigned char empty[] = {0xff};
	assert_int_equal(json_shape_join("[#]", empty, 1, &out), SL_EINVAL);
	sl_buf_reset(&out);
	assert_int_equal(json_shape_join("[\"#", p, nums.len, &out), SL_EINVAL);
	sl_buf_reset(&out);
	/* a join past its buffer's maximum is the buffer's error */
	struct sl_buf small = SL_BUF_INIT(3);
	assert_int_equal(json_shape_join("[#,#]", p, nums.len, &small), SL_ELIMIT);
	sl_buf_release(&small);
	sl_buf_release(&shape);
	sl_buf_release(&nums);
	sl_buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_one_shape),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_json_limits.c - the depth scan: a table of inputs, hostile depth, and a
 * check against jansson that input passing the scan parses to no more than the
 * allowed depth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "json_limits.h"

struct jcase {
	const char *name, *text;
	size_t max_depth;
	enum sl_err want;
	size_t offset; /* of the bracket that went too deep, when refused */
	int line, col;
};

static void test_table(void **state)
{
	(void)state;
	static const struct jcase cases[] = {
		{"empty", "", 0, SL_OK, 0, 0, 0},
		{"scalar at depth 0", "42", 0, SL_OK, 0, 0, 0},
		{"array at depth 0", "[]", 0, SL_ELIMIT, 0, 1, 1},
		{"exactly max", "[[{\"a\":[1]}]]", 4, SL_OK, 0, 0, 0},
		{"one past max", "[[{\"a\":[1]}]]", 3, SL_ELIMIT, 7, 1, 8},
		{"siblings do not add", "[[1],[2],[3],{\"a\":1}]", 2, SL_OK, 0, 0, 0},
		{"brackets in strings", "[\"[[[[{{{{\", \"]]]]\"]", 1, SL_OK, 0, 0, 0},
		{"escaped quote keeps string open", "[\"\\\"[[[[\"]", 1, SL_OK, 0, 0, 0},
		{"escaped backslash closes string", "[\"\\\\\",[[1]]]", 2, SL_ELIMIT, 7, 1, 8},
		{"unicode escape", "{\"k\\u0022[\":[[]]}", 2, SL_ELIMIT, 13, 1, 14},
		{"key with braces", "{\"{{{\":{\"}}}\":1}}", 2, SL_OK, 0, 0, 0},
		{"truncated in string", "[[\"abc[[[[", 2, SL_OK, 0, 0, 0},
		{"truncated after backslash", "[\"\\", 1, SL_OK, 0, 0, 0},
		{"truncated open", "[[[[", 4, SL_OK, 0, 0, 0},
		{"unbalanced closers do not go negative", "]]]]}}[[[", 2, SL_ELIMIT, 8, 1, 9},
		{"position on a later line", "{\n  \"a\": [\n    [1]\n  ]\n}", 2, SL_ELIMIT, 15, 3, 5},
		{"newline inside string counts as a line", "[\"a\nb\",\n [[1]]]", 2, SL_ELIMIT, 10, 3, 3},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct jcase *c = &cases[i];
		struct sl_diag d;
		sl_diag_clear(&d);
		enum sl_err e = json_check_limits(c->text, strlen(c->text), c->max_depth, &d);
		if (e != c->want)
			fail_msg("%s: got %s, want %s", c->name, sl_err_code(e),
				 sl_err_code(c->want));
		if (e != SL_OK) {
			char want[64];
			snprintf(want, sizeof(want), "at byte offset %zu", c->offset);
			if (!strstr(d.msg, want))
				fail_msg("%s: message '%s' lacks '%s'", c->name, d.msg, want);
			if (d.line != c->line || d.col != c->col)
				fail_msg("%s: at %d:%d, want %d:%d", c->name, d.line, d.col,
					 c->line, c->col);
			assert_true(d.hint[0] != '\0');
		}
	}
}

static void test_nul_bytes_and_length(void **state)
{
	(void)state;
	/* The scan obeys len, not NUL: a NUL inside is an ordinary byte and
	 * brackets after it still count. */
	static const char text[] = "[\0[[1]]]";
	assert_int_equal(json_check_limits(text, sizeof(text) - 1, 2, NULL), SL_ELIMIT);
	assert_int_equal(json_check_limits(text, 3, 2, NULL), SL_OK);
	assert_int_equal(json_check_limits(NULL, 0, 1, NULL), SL_OK);
	assert_int_equal(json_check_limits(NULL, 5, 1, NULL), SL_EINVAL);
}

static void test_hostile_depth(void **state)
{
	(void)state;
	const size_t n = 10000;
	char *t = malloc(2 * n + 1);
	struct sl_diag d;
	assert_non_null(t);
	for (size_t i = 0; i < n; i++) {
		t[i] = (i % 2) ? '{' : '[';
		t[2 * n - 1 - i] = (i % 2) ? '}' : ']';
	}
	t[2 * n] = '\0';
	sl_diag_clear(&d);
	assert_int_equal(json_check_limits(t, 2 * n, JSON_MAX_DEPTH, &d), SL_ELIMIT);
	char want[64];
	snprintf(want, sizeof(want), "at byte offset %d", JSON_MAX_DEPTH);
	assert_non_null(strstr(d.msg, want));
	/* the scan itself handles any depth */
	assert_int_equal(json_check_limits(t, 2 * n, n, &d), SL_OK);
	/* a long flat array is fine */
	for (size_t i = 0; i < 2 * n; i++)
		t[i] = (i % 2) ? ',' : '1';
	t[0] = '[';
	t[2 * n - 1] = ']';
	assert_int_equal(json_check_limits(t, 2 * n, 1, &d), SL_OK);
	free(t);
}

/* Depth of a parsed value, counted as the scan counts it. */
static size_t json_depth(const json_t *v)
{
	size_t best = 0;
	if (json_is_array(v)) {
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e) {
			size_t k = json_depth(e);
			best = k > best ? k : best;
		}
		return best + 1;
	}
	if (json_is_object(v)) {
		const char *k;
		json_t *e;
		json_object_foreach((json_t *)v, k, e) {
			size_t dk = json_depth(e);
			best = dk > best ? dk : best;
		}
		return best + 1;
	}
	return 0;
}

/* Generated documents mixing containers and strings full of brackets, quotes
 * and backslashes: the scan must accept exactly those whose parsed depth is
 * within the limit. */
static void gen(char *buf, size_t *n, size_t cap, unsigned *seed, int depth)
{
	static const char *const strs[] = {"\"[{\"", "\"\\\"]\"", "\"\\\\\"", "\"}}\"",
					   "\"\\u005b\"", "1", "true", "null"};
	*seed = *seed * 1103515245u + 12345u;
	unsigned r = (*seed >> 16) % 10;
	if (*n + 16 >= cap)
		return;
	if (depth <= 0 || r < 4) {
		const char *s = strs[r % 8];
		memcpy(buf + *n, s, strlen(s));
		*n += strlen(s);
		return;
	}
	int obj = r % 2;
	buf[(*n)++] = obj ? '{' : '[';
	unsigned kids = (*seed >> 8) % 3;
	for (unsigned k = 0; k < kids && *n + 32 < cap; k++) {
		if (k)
			buf[(*n)++] = ',';
		if (obj) {
			memcpy(buf + *n, "\"k[\\\"", 5);
			*n += 5;
			*n += (size_t)snprintf(buf + *n, cap - *n, "%u\":", k);
		}
		gen(buf, n, cap, seed, depth - 1);
	}
	buf[(*n)++] = obj ? '}' : ']';
}

static void test_against_jansson(void **state)
{
	(void)state;
	unsigned seed = 7;
	char buf[4096];
	for (int round = 0; round < 500; round++) {
		size_t n = 0;
		gen(buf, &n, sizeof(buf), &seed, 1 + round % 9);
		json_error_t jerr;
		json_t *v = json_loadb(buf, n, JSON_DECODE_ANY, &jerr);
		if (!v)
			fail_msg("generator made invalid JSON: %.*s (%s)", (int)n, buf, jerr.text);
		size_t depth = json_depth(v);
		json_decref(v);
		assert_int_equal(json_check_limits(buf, n, depth, NULL), SL_OK);
		if (depth > 0)
			assert_int_equal(json_check_limits(buf, n, depth - 1, NULL), SL_ELIMIT);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_nul_bytes_and_length),
		cmocka_unit_test(test_hostile_depth),
		cmocka_unit_test(test_against_jansson),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_log.c - the line shape, quoting that cannot be forged, level filtering,
 * the supported conversions and the line bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "log.h"

struct cap {
	FILE *fp;
	char *buf;
	size_t len;
};

static int cap_setup(void **state)
{
	struct cap *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	c->fp = open_memstream(&c->buf, &c->len);
	assert_non_null(c->fp);
	sl_log_init(c->fp, SL_LOG_DEBUG);
	*state = c;
	return 0;
}

static int cap_teardown(void **state)
{
	struct cap *c = *state;
	sl_log_init(NULL, SL_LOG_INFO);
	fclose(c->fp);
	free(c->buf);
	free(c);
	return 0;
}

/* The captured text after the timestamp (which is checked separately). */
static const char *cap_text(struct cap *c)
{
	fflush(c->fp);
	assert_true(c->len > 25);
	return c->buf + 24; /* "2026-11-30T05:33:12.123Z" */
}

static void cap_reset(struct cap *c)
{
	enum sl_log_level min = SL_LOG_DEBUG;
	fclose(c->fp);
	free(c->buf);
	c->buf = NULL;
	c->len = 0;
	c->fp = open_memstream(&c->buf, &c->len);
	assert_non_null(c->fp);
	sl_log_init(c->fp, min);
}

static void test_line_shape(void **state)
{
	struct cap *c = *state;
	sl_log(SL_LOG_INFO, "lease created", "lease=%s tenant=%s", "ls-12", "acme");
	fflush(c->fp);
	const char *b = c->buf;
	/* YYYY-MM-DDTHH:MM:SS.mmmZ */
	for (int i = 0; i < 24; i++) {
		const char *shape = "dddd-dd-ddTdd:dd:dd.dddZ";
		if (shape[i] == 'd')
			assert_true(b[i] >= '0' && b[i] <= '9');
		else
			assert_int_equal(b[i], shape[i]);
	}
	assert_string_equal(cap_text(c),
			    " level=info msg=\"lease created\" lease=ls-12 tenant=acme\n");
}

static void test_quoting(void **state)
{
	static const struct {
		const char *value, *want;
	} cases[] = {
		{"plain", "v=plain"},
		{"", "v=\"\""},
		{"two words", "v=\"two words\""},
		{"a=b", "v=\"a=b\""},
		{"say \"hi\"", "v=\"say \\\"hi\\\"\""},
		{"back\\slash", "v=\"back\\\\slash\""},
		{"line\nbreak level=error", "v=\"line\\nbreak level=error\""},
		{"tab\there\r", "v=\"tab\\there\\r\""},
		{"bell\x07", "v=\"bell\\x07\""},
		{"utf8-é", "v=utf8-é"},
	};
	struct cap *c = *state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char want[256];
		cap_reset(c);
		sl_log(SL_LOG_WARN, "m", "v=%s", cases[i].value);
		snprintf(want, sizeof(want), " level=warn msg=m %s\n", cases[i].want);
		assert_string_equal(cap_text(c), want);
	}
	cap_reset(c);
	const char *volatile none = NULL;
	sl_log(SL_LOG_INFO, "m", "v=%s", none);
	assert_string_equal(cap_text(c), " level=info msg=m v=(null)\n");
	cap_reset(c);
	sl_log(SL_LOG_INFO, NULL, NULL);
	assert_string_equal(cap_text(c), " level=info msg=\"\"\n");
}

static void test_conversions(void **state)
{
	struct cap *c = *state;
	sl_log(SL_LOG_ERROR, "x",
	       "i=%d neg=%i u=%u l=%ld ll=%lld z=%zu zd=%zd x=%#x f=%.2f pct=%d%% "
	       "c=%c pad=%05d left=[%-3s] ch=%hhu sh=%hd ju=%ju",
	       42, -7, 4000000000u, -123456789012L, 9007199254740993LL,
	       (size_t)18, (ssize_t)-3, 255, 3.14159, 50, 'Q', 42, "ab",
	       (unsigned char)200, (short)-2, (uintmax_t)77);
	assert_string_equal(cap_text(c),
			    " level=error msg=x i=42 neg=-7 u=4000000000 l=-123456789012 "
			    "ll=9007199254740993 z=18 zd=-3 x=0xff f=3.14 pct=50% c=Q "
			    "pad=00042 left=\"[ab ]\" ch=200 sh=-2 ju=77\n");
	/* A bare word is a value; a word with a composite value is quoted as a
	 * whole when needed. */
	cap_reset(c);
	sl_log(SL_LOG_INFO, "y", "%s range=%d-%d at=%s:%d", "bare", 1, 3, "a b", 7);
	assert_string_equal(cap_text(c),
			    " level=info msg=y bare range=1-3 at=\"a b:7\"\n");
}

static void test_min_level(void **state)
{
	struct cap *c = *state;
	sl_log_init(c->fp, SL_LOG_WARN);
	assert_false(sl_log_enabled(SL_LOG_INFO));
	assert_true(sl_log_enabled(SL_LOG_ERROR));
	sl_log(SL_LOG_DEBUG, "d", NULL);
	sl_log(SL_LOG_INFO, "i", "k=%d", 1);
	fflush(c->fp);
	assert_int_equal(c->len, 0);
	sl_log(SL_LOG_ERROR, "e", "k=%d", 2);
	assert_string_equal(cap_text(c), " level=error msg=e k=2\n");
	assert_false(sl_log_enabled((enum sl_log_level)99));
}

static void test_line_bound(void **state)
{
	struct cap *c = *state;
	size_t big = SL_LOG_LINE_MAX * 2;
	char *v = malloc(big + 1);
	assert_non_null(v);
	memset(v, 'a', big);
	v[big] = '\0';
	sl_log(SL_LOG_INFO, "big", "first=1 huge=%s after=2", v);
	fflush(c->fp);
	assert_true(c->len <= SL_LOG_LINE_MAX);
	assert_non_null(strstr(c->buf, " msg=big first=1 truncated=true\n"));
	assert_null(strstr(c->buf, "after="));
	assert_int_equal(c->buf[c->len - 1], '\n');
	/* exactly one line */
	assert_ptr_equal(strchr(c->buf, '\n'), c->buf + c->len - 1);

	/* A value that fits the line whole but not after escaping is still cut
	 * at the pair boundary. */
	cap_reset(c);
	memset(v, '"', SL_LOG_LINE_MAX - 200);
	v[SL_LOG_LINE_MAX - 200] = '\0';
	sl_log(SL_LOG_INFO, "q", "quotes=%s", v);
	fflush(c->fp);
	assert_true(c->len <= SL_LOG_LINE_MAX);
	assert_non_null(strstr(c->buf, " msg=q truncated=true\n"));
	free(v);
}

static void test_level_names(void **state)
{
	(void)state;
	struct sl_diag d;
	enum sl_log_level l = SL_LOG_DEBUG;
	sl_diag_clear(&d);
	assert_int_equal(sl_log_level_parse("warn", &l, &d), SL_OK);
	assert_int_equal(l, SL_LOG_WARN);
	assert_int_equal(sl_log_level_parse("loud", &l, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "loud"));
	assert_non_null(strstr(d.hint, "debug, info, warn, error"));
	assert_string_equal(sl_log_level_name(SL_LOG_ERROR), "error");
	assert_string_equal(sl_log_level_name((enum sl_log_level)7), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_line_shape, cap_setup, cap_teardown),
		cmocka_unit_test_setup_teardown(test_quoting, cap_setup, cap_teardown),
		cmocka_unit_test_setup_teardown(test_conversions, cap_setup, cap_teardown),
		cmocka_unit_test_setup_teardown(test_min_level, cap_setup, cap_teardown),
		cmocka_unit_test_setup_teardown(test_line_bound, cap_setup, cap_teardown),
		cmocka_unit_test(test_level_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

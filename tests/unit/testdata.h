/* testdata.h - reading files of tests/data (SL_TESTDATA, set by ctest) for
 * the unit tests; a missing file fails the test naming it. A header of one
 * static function, like http_harness.h: each test is its own program. */
#ifndef SL_TESTDATA_H
#define SL_TESTDATA_H

#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

/* The whole of tests/data/<rel> (malloc'd, NUL-terminated); *len its size
 * (len may be NULL). */
static char *testdata_read(const char *rel, size_t *len)
{
	const char *dir = getenv("SL_TESTDATA");
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : "tests/data", rel);
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s (set SL_TESTDATA)", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	long n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	char *buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

#endif

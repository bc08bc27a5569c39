/* test_schema_pg.c - the PostgreSQL schema is SQLite's migration list
 * translated (store_pg.c): every step translates, no SQLite-only word is
 * left, the types that would lose data in PostgreSQL (32-bit INTEGER, 4-byte
 * REAL) are widened, and words inside identifiers are left alone. A new
 * migration step appended for SQLite is checked here the day it lands. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store_pg_int.h"

/* True when word occurs in sql as a whole word. */
static bool has_word(const char *sql, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = strstr(sql, word); p; p = strstr(p + 1, word)) {
		bool left = p == sql || !(p[-1] == '_' || (p[-1] >= 'A' && p[-1] <= 'Z') ||
					  (p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= '0' && p[-1] <= '9'));
		char r = p[n];
		bool right = !(r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') ||
			       (r >= '0' && r <= '9'));
		if (left && right)
			return true;
	}
	return false;
}

static void test_every_migration_translates(void **state)
{
	(void)state;
	assert_true(store_migrations_count >= 4);
	for (int i = 0; i < store_migrations_count; i++) {
		char *pg = pg_translate(store_migrations[i]);
		assert_non_null(pg);
		static const char *const sqlite_only[] = {"INTEGER", "BLOB", "REAL", "WITHOUT",
							  "ROWID", "AUTOINCREMENT", "PRAGMA"};
		for (size_t w = 0; w < sizeof(sqlite_only) / sizeof(sqlite_only[0]); w++)
			if (has_word(pg, sqlite_only[w]))
				fail_msg("migration %d still says %s after translation:\n%s", i + 1,
					 sqlite_only[w], pg);
		if (has_word(store_migrations[i], "INTEGER"))
			assert_true(has_word(pg, "BIGINT"));
		if (has_word(store_migrations[i], "TEXT"))
			assert_non_null(strstr(pg, "TEXT COLLATE \"C\""));
		free(pg);
	}
}

static void test_translation_is_word_by_word(void **state)
{
	(void)state;
	char *pg = pg_translate("CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER NOT NULL,"
				" b BLOB, x REAL, texture_id INTEGER) WITHOUT ROWID;\n");
	assert_non_null(pg);
	assert_string_equal(pg, "CREATE TABLE t (id TEXT COLLATE \"C\" PRIMARY KEY, n BIGINT NOT NULL,"
				" b BYTEA, x DOUBLE PRECISION, texture_id BIGINT);\n");
	free(pg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_migration_translates),
		cmocka_unit_test(test_translation_is_word_by_word),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

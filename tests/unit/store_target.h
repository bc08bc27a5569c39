/* store_target.h - which store backend a store test runs against.
 *
 * Each store test binary runs its backend-independent cases against SQLite
 * (no argument) and, when run as `test_store postgres`, against a real
 * PostgreSQL server that it starts itself through scripts/pg-test.sh (path in
 * SL_PG_TEST) and stops at the end. Each case gets a fresh database. Without
 * the server binaries the run exits 77, which ctest reports as skipped, never
 * as passed. */
#ifndef SL_TEST_STORE_TARGET_H
#define SL_TEST_STORE_TARGET_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define TARGET_SKIP 77

static struct {
	bool pg;
	char srv[1024]; /* the server's directory (pg-test.sh start) */
	char base[1024];/* the server's URL */
	char url[1024]; /* the current case's database */
	int n;
} tgt;

/* Runs `pg-test.sh ARGS`, reading its first line into out; the exit status. */
static int target_script(const char *args, char *out, size_t n)
{
	const char *sh = getenv("SL_PG_TEST");
	if (!sh || !sh[0])
		return TARGET_SKIP;
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "bash '%s' %s", sh, args);
	FILE *p = popen(cmd, "r");
	if (!p)
		return 1;
	if (out && n) {
		out[0] = '\0';
		if (fgets(out, (int)n, p))
			out[strcspn(out, "\n")] = '\0';
	}
	char junk[256];
	while (fgets(junk, sizeof(junk), p))
		;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static void target_fini(void)
{
	if (tgt.pg && tgt.srv[0]) {
		char args[1100];
		snprintf(args, sizeof(args), "stop '%s'", tgt.srv);
		target_script(args, NULL, 0);
		tgt.srv[0] = '\0';
	}
}

/* 0: run; TARGET_SKIP: skip the whole binary; anything else: fail. */
static int target_init(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "postgres") != 0)
		return 0;
	tgt.pg = true;
	char line[1024];
	int rc = target_script("start", line, sizeof(line));
	if (rc == TARGET_SKIP) {
		fprintf(stderr, "SKIP: no PostgreSQL server binaries (Debian: postgresql); "
				"the postgres store cases did not run\n");
		return TARGET_SKIP;
	}
	char *sp = strchr(line, ' ');
	if (rc != 0 || !sp) {
		fprintf(stderr, "could not start a PostgreSQL server (rc %d): %s\n", rc, line);
		return 1;
	}
	*sp = '\0';
	snprintf(tgt.srv, sizeof(tgt.srv), "%s", line);
	snprintf(tgt.base, sizeof(tgt.base), "%s", sp + 1);
	atexit(target_fini);
	return 0;
}

/* A fresh database for the next case (PostgreSQL; SQLite cases use their
 * own directories). */
static void target_fresh(void)
{
	if (!tgt.pg)
		return;
	char args[1100];
	snprintf(args, sizeof(args), "createdb '%s' t%d", tgt.srv, ++tgt.n);
	if (target_script(args, tgt.url, sizeof(tgt.url)) != 0) {
		fprintf(stderr, "createdb t%d failed\n", tgt.n);
		abort();
	}
}

/* What to pass to store_open for a case whose SQLite directory is dir. */
static const char *target_where(const char *dir)
{
	return tgt.pg ? tgt.url : dir;
}

#endif

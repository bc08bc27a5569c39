/* test_store_history.c - the history tables (store.h: STORE_LEASE_HISTORY,
 * STORE_JOB_HISTORY, STORE_INSTANCE_HISTORY) and the two reads that keep a
 * listing's cost independent of their size: store_page (after a cursor, a
 * tenant, a limit, by the primary key) and store_recent (newest by
 * updated_ns). Run on SQLite and, as `test_store_history postgres`, on a
 * PostgreSQL server it starts (store_target.h). */
#define _GNU_SOURCE
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store_target.h"

#include "store.h"

struct tdir {
	char path[256];
};

static int setup_dir(void **state)
{
	struct tdir *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	const char *tmp = getenv("TMPDIR");
	snprintf(t->path, sizeof(t->path), "%s/test_store_history.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(t->path));
	target_fresh();
	*state = t;
	return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb, (void)type, (void)ftw;
	return remove(path);
}

static int teardown_dir(void **state)
{
	struct tdir *t = *state;
	int rc = nftw(t->path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(t);
	return rc;
}

static struct store *open_ok(const char *dir)
{
	struct store *s = NULL;
	struct sl_diag d;
	enum sl_err e = store_open(target_where(dir), &s, &d);
	if (e != SL_OK)
		fail_msg("store_open(%s): %s: %s", dir, sl_err_code(e), d.msg);
	return s;
}

static void put_at(struct store *s, enum store_kind k, const char *id, const char *tenant,
		   int64_t at)
{
	struct sl_diag d;
	char body[64];
	snprintf(body, sizeof(body), "{\"id\":\"%s\"}", id);
	enum sl_err e = store_put(s, k, id, tenant, body, at, &d);
	if (e != SL_OK)
		fail_msg("put %s: %s", id, d.msg);
}

struct ids {
	char buf[1024];
	int n;
};

static enum sl_err add_id(void *arg, const char *id, const char *tenant, const char *json)
{
	struct ids *a = arg;
	(void)json;
	size_t n = strlen(a->buf);
	snprintf(a->buf + n, sizeof(a->buf) - n, "%s%s/%s", a->n ? " " : "", id, tenant ? tenant : "-");
	a->n++;
	return SL_OK;
}

static const char *page(struct store *s, enum store_kind k, const char *after, const char *tenant,
			int limit, struct ids *out)
{
	memset(out, 0, sizeof(*out));
	struct sl_diag d;
	enum sl_err e = store_page(s, k, after, tenant, limit, add_id, out, &d);
	if (e != SL_OK)
		fail_msg("store_page: %s", d.msg);
	return out->buf;
}

static void test_history_kinds_are_tables(void **state)
{
	(void)state;
	assert_string_equal(store_kind_name(STORE_LEASE_HISTORY), "lease_history");
	assert_string_equal(store_kind_name(STORE_JOB_HISTORY), "job_history");
	assert_string_equal(store_kind_name(STORE_INSTANCE_HISTORY), "instance_history");
	assert_string_equal(store_kind_name(STORE_USAGE_HISTORY), "usage_history");
	assert_string_equal(store_kind_name(STORE_LEDGER_ACCOUNTS), "ledger_accounts");
}

static const char *since(struct store *s, enum store_kind k, const char *tenant, int64_t after,
			 int limit, struct ids *out)
{
	memset(out, 0, sizeof(*out));
	struct sl_diag d;
	enum sl_err e = store_page_since(s, k, tenant, after, limit, add_id, out, &d);
	if (e != SL_OK)
		fail_msg("store_page_since: %s", d.msg);
	return out->buf;
}

/* store_page_since: a tenant's rows by updated_ns (a posting's seq), not by
 * id; the new billing kinds are tables like the others. */
static void test_page_since_orders_by_updated_ns(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path);
	put_at(s, STORE_POSTINGS, "topup.1", "acme", 1);
	put_at(s, STORE_POSTINGS, "chg.ls-000002.50", "acme", 2);
	put_at(s, STORE_POSTINGS, "crd.3", "beta", 3);
	put_at(s, STORE_POSTINGS, "a.4", "acme", 4);
	struct ids r;
	assert_string_equal(since(s, STORE_POSTINGS, "acme", 0, 10, &r),
			    "topup.1/acme chg.ls-000002.50/acme a.4/acme");
	assert_string_equal(since(s, STORE_POSTINGS, "acme", 1, 1, &r), "chg.ls-000002.50/acme");
	assert_string_equal(since(s, STORE_POSTINGS, "acme", 4, 10, &r), "");
	assert_string_equal(since(s, STORE_POSTINGS, "beta", 0, 10, &r), "crd.3/beta");
	struct sl_diag d;
	assert_int_equal(store_page_since(s, STORE_POSTINGS, NULL, 0, 10, add_id, &r, &d), SL_EINVAL);
	assert_int_equal(store_page_since(s, STORE_POSTINGS, "acme", 0, 0, add_id, &r, &d), SL_EINVAL);
	put_at(s, STORE_USAGE_HISTORY, "ls-000001", "acme", 5);
	put_at(s, STORE_LEDGER_ACCOUNTS, "cash:", NULL, 5);
	assert_string_equal(page(s, STORE_USAGE_HISTORY, NULL, "acme", 10, &r), "ls-000001/acme");
	assert_string_equal(page(s, STORE_LEDGER_ACCOUNTS, NULL, NULL, 10, &r), "cash:/-");
	store_close(s);
}

static void test_page_by_cursor_tenant_and_limit(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path);
	for (enum store_kind k = STORE_LEASE_HISTORY; k <= STORE_INSTANCE_HISTORY; k++) {
		put_at(s, k, "ls-000003", "beta", 30);
		put_at(s, k, "ls-000001", "acme", 10);
		put_at(s, k, "ls-000002", "acme", 20);
		put_at(s, k, "ls-000004", NULL, 40);
		struct ids r;
		assert_string_equal(page(s, k, NULL, NULL, 2, &r), "ls-000001/acme ls-000002/acme");
		assert_string_equal(page(s, k, "ls-000002", NULL, 10, &r),
				    "ls-000003/beta ls-000004/-");
		assert_string_equal(page(s, k, "", "acme", 10, &r), "ls-000001/acme ls-000002/acme");
		assert_string_equal(page(s, k, "ls-000001", "acme", 10, &r), "ls-000002/acme");
		assert_string_equal(page(s, k, "ls-000004", NULL, 10, &r), "");
		assert_string_equal(page(s, k, NULL, "nobody", 10, &r), "");
	}
	/* the live tables answer pages too */
	put_at(s, STORE_LEASES, "ls-000009", "acme", 1);
	struct ids r;
	assert_string_equal(page(s, STORE_LEASES, NULL, NULL, 5, &r), "ls-000009/acme");
	store_close(s);
}

static void test_recent_is_newest_first(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path);
	put_at(s, STORE_LEASE_HISTORY, "ls-000001", "acme", 300);
	put_at(s, STORE_LEASE_HISTORY, "ls-000002", "acme", 100);
	put_at(s, STORE_LEASE_HISTORY, "ls-000003", "acme", 200);
	put_at(s, STORE_LEASE_HISTORY, "ls-000004", "acme", 200);
	struct ids r = {0};
	assert_int_equal(store_recent(s, STORE_LEASE_HISTORY, 3, add_id, &r, NULL), SL_OK);
	assert_string_equal(r.buf, "ls-000001/acme ls-000004/acme ls-000003/acme");
	memset(&r, 0, sizeof(r));
	assert_int_equal(store_recent(s, STORE_JOB_HISTORY, 3, add_id, &r, NULL), SL_OK);
	assert_int_equal(r.n, 0);
	store_close(s);
}

static void test_bad_page_arguments_are_refused(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path);
	struct ids r = {0};
	struct sl_diag d;
	assert_int_equal(store_page(s, STORE_LEASE_HISTORY, NULL, NULL, 0, add_id, &r, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "limit"));
	assert_int_equal(store_page(s, STORE_LEASE_HISTORY, NULL, NULL, STORE_MAX_PAGE + 1, add_id,
				    &r, &d), SL_EINVAL);
	assert_int_equal(store_page(s, STORE_LEASE_HISTORY, NULL, "a b", 5, add_id, &r, &d), SL_EINVAL);
	assert_int_equal(store_page(s, STORE_LEASE_HISTORY, NULL, NULL, 5, NULL, &r, &d), SL_EINVAL);
	assert_int_equal(store_recent(s, STORE_KIND__COUNT, 5, add_id, &r, &d), SL_EINVAL);
	assert_int_equal(store_recent(s, STORE_LEASE_HISTORY, -1, add_id, &r, &d), SL_EINVAL);
	assert_false(store_failed(s)); /* refused before anything ran */
	store_close(s);
}

/* A row moves from the live table to history in one transaction (put, then
 * store_forget, which PostgreSQL pipelines): after a rollback it is where it
 * was, after a commit only in history. */
static void test_move_is_one_transaction(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path);
	put_at(s, STORE_JOBS, "job-000001", "acme", 1);
	for (int commit = 0; commit < 2; commit++) {
		assert_int_equal(store_begin(s, NULL), SL_OK);
		put_at(s, STORE_JOB_HISTORY, "job-000001", "acme", 2);
		assert_int_equal(store_forget(s, STORE_JOBS, "job-000001", NULL), SL_OK);
		/* forgetting a row that is not there is no error */
		assert_int_equal(store_forget(s, STORE_LEASES, "ls-999999", NULL), SL_OK);
		assert_int_equal(commit ? store_commit(s, NULL) : store_rollback(s, NULL), SL_OK);
		char *v = NULL;
		assert_int_equal(store_get(s, STORE_JOBS, "job-000001", &v, NULL),
				 commit ? SL_ENOTFOUND : SL_OK);
		free(v);
		v = NULL;
		assert_int_equal(store_get(s, STORE_JOB_HISTORY, "job-000001", &v, NULL),
				 commit ? SL_OK : SL_ENOTFOUND);
		free(v);
	}
	struct sl_diag d;
	assert_int_equal(store_forget(s, STORE_JOBS, "a b", &d), SL_EINVAL); /* checked first */
	assert_false(store_failed(s));
	store_close(s);
	s = open_ok(t->path); /* and it stays so */
	struct ids r;
	assert_string_equal(page(s, STORE_JOB_HISTORY, NULL, NULL, 5, &r), "job-000001/acme");
	assert_string_equal(page(s, STORE_JOBS, NULL, NULL, 5, &r), "");
	store_close(s);
}

int main(int argc, char **argv)
{
	int rc = target_init(argc, argv);
	if (rc)
		return rc;
#define T(f) cmocka_unit_test_setup_teardown(f, setup_dir, teardown_dir)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_history_kinds_are_tables),
		T(test_page_by_cursor_tenant_and_limit),
		T(test_recent_is_newest_first),
		T(test_bad_page_arguments_are_refused),
		T(test_move_is_one_transaction),
		T(test_page_since_orders_by_updated_ns),
	};
#undef T
	return cmocka_run_group_tests_name(tgt.pg ? "store history on postgres" : "store history on sqlite",
					   tests, NULL, NULL);
}

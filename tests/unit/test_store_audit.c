/* test_store_audit.c - the store's audit tables: append and read back,
 * filtered scans, the subtree cache, checkpoint notes, refusal of bad input
 * without failing the store, and a taken seq failing it (which is what makes
 * the controller's audit fail closed). Each test works in its own mkdtemp
 * directory, removed afterwards. */
#define _GNU_SOURCE
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store.h"

struct fx {
	char dir[64];
	struct store *s;
};

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

#include "store_target.h"

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	target_fresh();
	struct sl_diag d;
	snprintf(x->dir, sizeof(x->dir), "/tmp/sl_store_audit_XXXXXX");
	assert_non_null(mkdtemp(x->dir));
	assert_int_equal(store_open(target_where(x->dir), &x->s, &d), SL_OK);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;
	store_close(x->s);
	nftw(x->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(x);
	return 0;
}

/* Entry seq: bytes "e<seq>", leaf hash all bytes = seq. */
static enum sl_err add(struct store *s, uint64_t seq, const char *tenant, const char *action)
{
	char bytes[32];
	uint8_t leaf[STORE_AUDIT_HASH];
	int n = snprintf(bytes, sizeof(bytes), "e%llu", (unsigned long long)seq);
	memset(leaf, (int)(seq & 0xff), sizeof(leaf));
	struct store_audit_row r = {seq, (int64_t)seq * 1000, tenant, action, (const uint8_t *)bytes,
				    (size_t)n, leaf, sizeof(leaf)};
	return store_audit_append(s, &r, NULL);
}

struct seen {
	char buf[512];
};

static enum sl_err collect(void *arg, const struct store_audit_row *r)
{
	struct seen *s = arg;
	size_t off = strlen(s->buf);
	snprintf(s->buf + off, sizeof(s->buf) - off, "%s%llu:%s:%s:%.*s:%zu", off ? " " : "",
		 (unsigned long long)r->seq, r->tenant, r->action, (int)r->len,
		 (const char *)r->canonical, r->leaf_len);
	return SL_OK;
}

static void test_append_and_scan(void **state)
{
	struct fx *x = *state;
	uint64_t last = 99;
	assert_int_equal(store_audit_last(x->s, &last, NULL), SL_OK);
	assert_int_equal(last, 0);
	assert_int_equal(store_begin(x->s, NULL), SL_OK);
	assert_int_equal(add(x->s, 1, "acme", "lease.create"), SL_OK);
	assert_int_equal(add(x->s, 2, "beta", "lease.create"), SL_OK);
	assert_int_equal(add(x->s, 3, "", "node.drain"), SL_OK);
	assert_int_equal(add(x->s, 4, "acme", "lease.release"), SL_OK);
	assert_int_equal(store_commit(x->s, NULL), SL_OK);
	assert_int_equal(store_audit_last(x->s, &last, NULL), SL_OK);
	assert_int_equal(last, 4);

	static const struct {
		struct store_audit_filter f;
		const char *want;
	} cases[] = {
		{{0, NULL, NULL, 0},
		 "1:acme:lease.create:e1:32 2:beta:lease.create:e2:32 3::node.drain:e3:32 "
		 "4:acme:lease.release:e4:32"},
		{{0, "acme", NULL, 0}, "1:acme:lease.create:e1:32 4:acme:lease.release:e4:32"},
		{{0, NULL, "lease.create", 0}, "1:acme:lease.create:e1:32 2:beta:lease.create:e2:32"},
		{{0, "acme", "lease.create", 0}, "1:acme:lease.create:e1:32"},
		{{1, NULL, NULL, 2}, "2:beta:lease.create:e2:32 3::node.drain:e3:32"},
		{{4, NULL, NULL, 0}, ""},
		{{0, "nobody", NULL, 0}, ""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct seen s = {""};
		assert_int_equal(store_audit_scan(x->s, &cases[i].f, collect, &s, NULL), SL_OK);
		assert_string_equal(s.buf, cases[i].want);
	}
	uint8_t h[STORE_AUDIT_HASH];
	assert_int_equal(store_audit_leaf(x->s, 3, h, NULL), SL_OK);
	assert_int_equal(h[0], 3);
	assert_int_equal(store_audit_leaf(x->s, 5, h, NULL), SL_ENOTFOUND);
	assert_false(store_failed(x->s));
}

static void test_survives_reopen(void **state)
{
	struct fx *x = *state;
	uint64_t last = 0, size = 0;
	char *note = NULL;
	assert_int_equal(add(x->s, 1, "acme", "a.b"), SL_OK); /* outside a transaction: commits alone */
	assert_int_equal(store_audit_checkpoint_put(x->s, 1, "note one\n", NULL), SL_OK);
	store_close(x->s);
	assert_int_equal(store_open(target_where(x->dir), &x->s, NULL), SL_OK);
	assert_true(store_schema_version(x->s) >= 2);
	assert_int_equal(store_audit_last(x->s, &last, NULL), SL_OK);
	assert_int_equal(last, 1);
	assert_int_equal(store_audit_checkpoint_latest(x->s, &size, &note, NULL), SL_OK);
	assert_int_equal(size, 1);
	assert_string_equal(note, "note one\n");
	free(note);
}

static void test_subtrees(void **state)
{
	struct fx *x = *state;
	uint8_t a[STORE_AUDIT_HASH], b[STORE_AUDIT_HASH];
	memset(a, 0xab, sizeof(a));
	assert_int_equal(store_audit_subtree_get(x->s, 1, 0, b, NULL), SL_ENOTFOUND);
	assert_int_equal(store_audit_subtree_put(x->s, 1, 0, a, NULL), SL_OK);
	assert_int_equal(store_audit_subtree_get(x->s, 1, 0, b, NULL), SL_OK);
	assert_memory_equal(a, b, sizeof(a));
	assert_int_equal(store_audit_subtree_get(x->s, 2, 0, b, NULL), SL_ENOTFOUND);
	assert_int_equal(store_audit_subtree_put(x->s, 0, 0, a, NULL), SL_EINVAL);
	assert_int_equal(store_audit_subtree_put(x->s, 64, 0, a, NULL), SL_EINVAL);
	assert_false(store_failed(x->s));
}

static enum sl_err note_collect(void *arg, uint64_t size, const char *note)
{
	struct seen *s = arg;
	size_t off = strlen(s->buf);
	snprintf(s->buf + off, sizeof(s->buf) - off, "%s%llu=%s", off ? " " : "",
		 (unsigned long long)size, note);
	return SL_OK;
}

static void test_checkpoints(void **state)
{
	struct fx *x = *state;
	uint64_t size = 7;
	char *note = (char *)1;
	struct seen s = {""};
	assert_int_equal(store_audit_checkpoint_latest(x->s, &size, &note, NULL), SL_ENOTFOUND);
	assert_null(note);
	assert_int_equal(store_audit_checkpoint_put(x->s, 20, "b", NULL), SL_OK);
	assert_int_equal(store_audit_checkpoint_put(x->s, 10, "a", NULL), SL_OK);
	assert_int_equal(store_audit_checkpoint_put(x->s, 20, "c", NULL), SL_OK); /* replaces */
	assert_int_equal(store_audit_checkpoint_scan(x->s, note_collect, &s, NULL), SL_OK);
	assert_string_equal(s.buf, "10=a 20=c");
	assert_int_equal(store_audit_checkpoint_latest(x->s, &size, &note, NULL), SL_OK);
	assert_int_equal(size, 20);
	assert_string_equal(note, "c");
	free(note);
	assert_int_equal(store_audit_checkpoint_put(x->s, 0, "x", NULL), SL_EINVAL);
	assert_int_equal(store_audit_checkpoint_put(x->s, 1, "", NULL), SL_EINVAL);
	assert_false(store_failed(x->s));
}

static void test_bad_input_leaves_store_healthy(void **state)
{
	struct fx *x = *state;
	uint8_t leaf[STORE_AUDIT_HASH] = {0};
	const uint8_t bytes[] = "x";
	struct store_audit_row ok = {1, 0, "", "", bytes, 1, leaf, sizeof(leaf)};
	struct store_audit_row r;
	r = ok, r.seq = 0;
	assert_int_equal(store_audit_append(x->s, &r, NULL), SL_EINVAL);
	r = ok, r.leaf_len = 31;
	assert_int_equal(store_audit_append(x->s, &r, NULL), SL_EINVAL);
	r = ok, r.tenant = "has space";
	assert_int_equal(store_audit_append(x->s, &r, NULL), SL_EINVAL);
	r = ok, r.len = 0;
	assert_int_equal(store_audit_append(x->s, &r, NULL), SL_EINVAL);
	r = ok, r.len = STORE_AUDIT_ENTRY_MAX + 1;
	assert_int_equal(store_audit_append(x->s, &r, NULL), SL_ELIMIT);
	r = ok, r.time_ns = -1;
	assert_int_equal(store_audit_append(x->s, &r, NULL), SL_EINVAL);
	assert_int_equal(store_audit_append(x->s, NULL, NULL), SL_EINVAL);
	assert_false(store_failed(x->s));
	assert_int_equal(store_audit_append(x->s, &ok, NULL), SL_OK);
}

/* A seq that is taken is a write the database refuses: the store fails, so
 * the controller stops instead of acknowledging a change without its entry.
 * SQLite says so at the append; PostgreSQL, which pipelines a transaction's
 * writes, at the commit at the latest (store.h). */
static void test_taken_seq_fails_the_store(void **state)
{
	struct fx *x = *state;
	struct sl_diag d;
	assert_int_equal(add(x->s, 1, "acme", "a.b"), SL_OK);
	assert_int_equal(store_begin(x->s, NULL), SL_OK);
	assert_int_equal(store_put(x->s, STORE_LEASES, "ls-1", "acme", "{}", 0, NULL), SL_OK);
	sl_diag_clear(&d);
	enum sl_err e = add(x->s, 1, "acme", "a.b");
	if (e == SL_OK && tgt.pg)
		e = store_commit(x->s, NULL);
	assert_int_equal(e, SL_EIO);
	assert_true(store_failed(x->s));
	store_close(x->s);
	/* The lease written in the same transaction never happened. */
	char *json = NULL;
	assert_int_equal(store_open(target_where(x->dir), &x->s, NULL), SL_OK);
	assert_int_equal(store_get(x->s, STORE_LEASES, "ls-1", &json, NULL), SL_ENOTFOUND);
	uint64_t last = 0;
	assert_int_equal(store_audit_last(x->s, &last, NULL), SL_OK);
	assert_int_equal(last, 1);
}

int main(int argc, char **argv)
{
	int rc = target_init(argc, argv);
	if (rc)
		return rc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_append_and_scan, setup, teardown),
		cmocka_unit_test_setup_teardown(test_survives_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_subtrees, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checkpoints, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_input_leaves_store_healthy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_taken_seq_fails_the_store, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

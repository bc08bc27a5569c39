/* test_store.c - the durable store: rows per kind, transactions, reopening,
 * migrations, refusal of bad input, the failed state after an fsync error, and
 * survival of SIGKILL at arbitrary moments.
 *
 * Faults are injected with a wrapping SQLite VFS ("failsync", registered here)
 * whose xSync fails on demand. It can also play the pessimistic kernel: on a
 * failed sync it undoes every write since the last good sync of that file, as
 * if the dirty pages had been dropped, which is the case where a retried fsync
 * would falsely report success. Each test works in its own mkdtemp directory,
 * removed afterwards. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store_target.h"

#include "store.h"

/* ---- the fault-injecting VFS ---------------------------------------------- */

struct fs_undo {
	sqlite3_int64 off;
	int len;
	struct fs_undo *next;
	unsigned char old[];
};

struct fs_file {
	sqlite3_file base;
	sqlite3_file *real;
	bool main_db;          /* the database file itself (not the WAL) */
	bool logging;          /* writes since the last good sync are recorded */
	sqlite3_int64 size0;   /* the file's size at the last good sync */
	struct fs_undo *undo;  /* newest first */
};

/* Test-wide fault switches: the VFS is process-global in SQLite, so is this. */
static struct {
	sqlite3_vfs vfs;
	sqlite3_vfs *real;
	bool fail_sync;   /* every xSync fails while set */
	bool lose_writes; /* a failed xSync also drops the unsynced writes */
	bool db_only;     /* only the database file's syncs fail (checkpoints) */
	int failed_syncs;
} fs;

#define FS_REAL(f) (((struct fs_file *)(f))->real)

static void fs_forget(struct fs_file *p)
{
	while (p->undo) {
		struct fs_undo *u = p->undo;
		p->undo = u->next;
		free(u);
	}
	p->logging = false;
}

/* Saves the bytes of [off, off+n) that existed at the last good sync. */
static int fs_record(struct fs_file *p, sqlite3_int64 off, sqlite3_int64 n)
{
	int rc;
	if (!p->logging) {
		rc = p->real->pMethods->xFileSize(p->real, &p->size0);
		if (rc != SQLITE_OK)
			return rc;
		p->logging = true;
	}
	sqlite3_int64 end = off + n < p->size0 ? off + n : p->size0;
	int len = end > off ? (int)(end - off) : 0;
	struct fs_undo *u = malloc(sizeof(*u) + (size_t)len);
	if (!u)
		return SQLITE_NOMEM;
	u->off = off;
	u->len = len;
	rc = len ? p->real->pMethods->xRead(p->real, u->old, len, off) : SQLITE_OK;
	if (rc != SQLITE_OK && rc != SQLITE_IOERR_SHORT_READ) {
		free(u);
		return rc;
	}
	u->next = p->undo;
	p->undo = u;
	return SQLITE_OK;
}

static void fs_drop_unsynced(struct fs_file *p)
{
	for (struct fs_undo *u = p->undo; u; u = u->next)
		if (u->len)
			p->real->pMethods->xWrite(p->real, u->old, u->len, u->off);
	if (p->logging)
		p->real->pMethods->xTruncate(p->real, p->size0);
	fs_forget(p);
}

static int fs_close(sqlite3_file *f)
{
	fs_forget((struct fs_file *)f);
	return FS_REAL(f)->pMethods->xClose(FS_REAL(f));
}

static int fs_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	return FS_REAL(f)->pMethods->xRead(FS_REAL(f), buf, n, off);
}

static int fs_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	int rc = fs_record((struct fs_file *)f, off, n);
	return rc ? rc : FS_REAL(f)->pMethods->xWrite(FS_REAL(f), buf, n, off);
}

static int fs_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	sqlite3_int64 cur;
	int rc = FS_REAL(f)->pMethods->xFileSize(FS_REAL(f), &cur);
	if (rc == SQLITE_OK && cur > size)
		rc = fs_record((struct fs_file *)f, size, cur - size);
	return rc ? rc : FS_REAL(f)->pMethods->xTruncate(FS_REAL(f), size);
}

static int fs_sync(sqlite3_file *f, int flags)
{
	struct fs_file *p = (struct fs_file *)f;
	if (fs.fail_sync && (p->main_db || !fs.db_only)) {
		fs.failed_syncs++;
		if (fs.lose_writes)
			fs_drop_unsynced(p);
		else
			fs_forget(p);
		return SQLITE_IOERR_FSYNC;
	}
	int rc = p->real->pMethods->xSync(p->real, flags);
	if (rc == SQLITE_OK)
		fs_forget(p);
	return rc;
}

static int fs_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	return FS_REAL(f)->pMethods->xFileSize(FS_REAL(f), size);
}

static int fs_lock(sqlite3_file *f, int l)
{
	return FS_REAL(f)->pMethods->xLock(FS_REAL(f), l);
}

static int fs_unlock(sqlite3_file *f, int l)
{
	return FS_REAL(f)->pMethods->xUnlock(FS_REAL(f), l);
}

static int fs_check_reserved(sqlite3_file *f, int *out)
{
	return FS_REAL(f)->pMethods->xCheckReservedLock(FS_REAL(f), out);
}

static int fs_file_control(sqlite3_file *f, int op, void *arg)
{
	return FS_REAL(f)->pMethods->xFileControl(FS_REAL(f), op, arg);
}

static int fs_sector_size(sqlite3_file *f)
{
	return FS_REAL(f)->pMethods->xSectorSize(FS_REAL(f));
}

static int fs_device_chars(sqlite3_file *f)
{
	return FS_REAL(f)->pMethods->xDeviceCharacteristics(FS_REAL(f));
}

static int fs_shm_map(sqlite3_file *f, int pg, int sz, int extend, void volatile **pp)
{
	return FS_REAL(f)->pMethods->xShmMap(FS_REAL(f), pg, sz, extend, pp);
}

static int fs_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	return FS_REAL(f)->pMethods->xShmLock(FS_REAL(f), off, n, flags);
}

static void fs_shm_barrier(sqlite3_file *f)
{
	FS_REAL(f)->pMethods->xShmBarrier(FS_REAL(f));
}

static int fs_shm_unmap(sqlite3_file *f, int del)
{
	return FS_REAL(f)->pMethods->xShmUnmap(FS_REAL(f), del);
}

static int fs_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
	return FS_REAL(f)->pMethods->xFetch(FS_REAL(f), off, n, pp);
}

static int fs_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	return FS_REAL(f)->pMethods->xUnfetch(FS_REAL(f), off, p);
}

static const sqlite3_io_methods fs_io = {
	3,           fs_close,       fs_read,        fs_write,        fs_truncate,
	fs_sync,     fs_file_size,   fs_lock,        fs_unlock,       fs_check_reserved,
	fs_file_control, fs_sector_size, fs_device_chars, fs_shm_map, fs_shm_lock,
	fs_shm_barrier, fs_shm_unmap, fs_fetch,      fs_unfetch,
};

static int fs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
	(void)vfs;
	struct fs_file *p = (struct fs_file *)f;
	memset(p, 0, sizeof(*p));
	p->real = (sqlite3_file *)&p[1];
	p->main_db = (flags & SQLITE_OPEN_MAIN_DB) != 0;
	int rc = fs.real->xOpen(fs.real, name, p->real, flags, out);
	p->base.pMethods = p->real->pMethods ? &fs_io : NULL;
	return rc;
}

static void fs_register(void)
{
	if (fs.real)
		return;
	fs.real = sqlite3_vfs_find(NULL);
	assert_non_null(fs.real);
	assert_true(fs.real->iVersion >= 3);
	/* Copying the real VFS keeps its pAppData and every method but xOpen, so
	 * only file I/O goes through the wrapper. */
	fs.vfs = *fs.real;
	fs.vfs.pNext = NULL;
	fs.vfs.zName = "failsync";
	fs.vfs.szOsFile = (int)sizeof(struct fs_file) + fs.real->szOsFile;
	fs.vfs.xOpen = fs_open;
	assert_int_equal(sqlite3_vfs_register(&fs.vfs, 0), SQLITE_OK);
}

/* ---- helpers --------------------------------------------------------------- */

struct tdir {
	char path[256];
};

static int setup_dir(void **state)
{
	struct tdir *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	const char *tmp = getenv("TMPDIR");
	snprintf(t->path, sizeof(t->path), "%s/test_store.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(t->path));
	fs.fail_sync = fs.lose_writes = fs.db_only = false;
	fs.failed_syncs = 0;
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

static struct store *open_ok(const char *dir, const char *vfs)
{
	struct store_opts o = {.sqlite_vfs = vfs};
	struct store *s = NULL;
	struct sl_diag d;
	enum sl_err e = store_open_with(target_where(dir), &o, &s, &d);
	if (e != SL_OK)
		fail_msg("store_open(%s): %s: %s", dir, sl_err_code(e), d.msg);
	return s;
}

static void put_ok(struct store *s, enum store_kind k, const char *id, const char *tenant,
		   const char *json)
{
	struct sl_diag d;
	enum sl_err e = store_put(s, k, id, tenant, json, 1000, &d);
	if (e != SL_OK)
		fail_msg("put %s %s: %s: %s", store_kind_name(k), id, sl_err_code(e), d.msg);
}

static void assert_body(struct store *s, enum store_kind k, const char *id, const char *want)
{
	char *got = NULL;
	struct sl_diag d;
	enum sl_err e = store_get(s, k, id, &got, &d);
	if (e != SL_OK)
		fail_msg("get %s %s: %s: %s", store_kind_name(k), id, sl_err_code(e), d.msg);
	assert_string_equal(got, want);
	free(got);
}

static void assert_absent(struct store *s, enum store_kind k, const char *id)
{
	char *got = NULL;
	assert_int_equal(store_get(s, k, id, &got, NULL), SL_ENOTFOUND);
	assert_null(got);
}

/* Collects a scan as "id|tenant|json;" lines, tenant "-" when NULL. */
struct collect {
	char buf[4096];
	int rows;
	int stop_at; /* return stop_err at this row (1-based), 0: never */
	enum sl_err stop_err;
	struct store *s; /* when set, the callback calls the store */
	enum sl_err nested;
};

static enum sl_err collect_row(void *arg, const char *id, const char *tenant, const char *json)
{
	struct collect *c = arg;
	c->rows++;
	size_t n = strlen(c->buf);
	snprintf(c->buf + n, sizeof(c->buf) - n, "%s|%s|%s;", id, tenant ? tenant : "-", json);
	if (c->s) {
		char *v = NULL;
		c->nested = store_get(c->s, STORE_LEASES, id, &v, NULL);
		free(v);
	}
	return c->rows == c->stop_at ? c->stop_err : SL_OK;
}

static int count_rows(struct store *s, enum store_kind k)
{
	struct collect c = {.rows = 0};
	assert_int_equal(store_scan(s, k, collect_row, &c, NULL), SL_OK);
	return c.rows;
}

static int count_all_rows(struct store *s)
{
	int n = 0;
	for (int k = 0; k < STORE_KIND__COUNT; k++)
		n += count_rows(s, (enum store_kind)k);
	return n;
}

static char *db_path(const struct tdir *t, const char *suffix, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%s%s", t->path, STORE_DB_FILE, suffix);
	return buf;
}

/* ---- opening and migrations -------------------------------------------------- */

static void test_kind_names_round_trip(void **state)
{
	(void)state;
	for (int k = 0; k < STORE_KIND__COUNT; k++) {
		const char *name = store_kind_name((enum store_kind)k);
		assert_non_null(name);
		enum store_kind back = STORE_KIND__COUNT;
		assert_int_equal(store_kind_parse(name, &back, NULL), SL_OK);
		assert_int_equal(back, k);
	}
	assert_null(store_kind_name(STORE_KIND__COUNT));
	enum store_kind k;
	struct sl_diag d;
	assert_int_equal(store_kind_parse("lease", &k, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "'lease'"));
}

static void test_open_creates_migrates_and_reopens(void **state)
{
	struct tdir *t = *state;
	char dir[300], path[400];
	snprintf(dir, sizeof(dir), "%s/data", t->path); /* open creates it */
	struct store *s = open_ok(dir, NULL);
	int v = store_schema_version(s);
	assert_true(v >= 1);
	assert_false(store_failed(s));
	put_ok(s, STORE_TENANTS, "acme", NULL, "{\"name\":\"acme\"}");

	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, STORE_DB_FILE);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	snprintf(path, sizeof(path), "%s/%s-wal", dir, STORE_DB_FILE);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	store_close(s);

	/* Re-opening migrates nothing and keeps the row. */
	s = open_ok(dir, NULL);
	assert_int_equal(store_schema_version(s), v);
	assert_body(s, STORE_TENANTS, "acme", "{\"name\":\"acme\"}");
	assert_int_equal(count_all_rows(s), 1);
	store_close(s);
}

static void test_open_empty_file_is_migrated(void **state)
{
	struct tdir *t = *state;
	char path[400];
	int fd = open(db_path(t, "", path, sizeof(path)), O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	struct store *s = open_ok(t->path, NULL);
	assert_true(store_schema_version(s) >= 1);
	assert_int_equal(count_all_rows(s), 0);
	store_close(s);
}

static void test_open_refuses_newer_schema(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path, NULL);
	int v = store_schema_version(s);
	store_close(s);

	sqlite3 *db;
	char path[400], sql[64];
	assert_int_equal(sqlite3_open(db_path(t, "", path, sizeof(path)), &db), SQLITE_OK);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v + 1);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);

	struct sl_diag d;
	s = NULL;
	assert_int_equal(store_open(t->path, &s, &d), SL_ECONFLICT);
	assert_null(s);
	char want[64];
	snprintf(want, sizeof(want), "schema version %d, newer", v + 1);
	assert_non_null(strstr(d.msg, want));
	assert_true(d.hint[0] != '\0');
}

static void test_open_refuses_non_database(void **state)
{
	struct tdir *t = *state;
	char path[400];
	FILE *f = fopen(db_path(t, "", path, sizeof(path)), "w");
	assert_non_null(f);
	for (int i = 0; i < 200; i++)
		fputs("this is not an sqlite database\n", f);
	fclose(f);
	struct store *s = NULL;
	struct sl_diag d;
	assert_int_equal(store_open(t->path, &s, &d), SL_EIO);
	assert_null(s);
	assert_non_null(strstr(d.msg, "not a database"));
}

static void test_open_refuses_missing_parent(void **state)
{
	struct tdir *t = *state;
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/no/such", t->path);
	struct store *s = NULL;
	struct sl_diag d;
	assert_int_equal(store_open(dir, &s, &d), SL_EIO);
	assert_null(s);
	assert_non_null(strstr(d.msg, "cannot create data directory"));
	assert_int_equal(store_open("", &s, &d), SL_EINVAL);
	assert_int_equal(store_open_with(t->path, &(struct store_opts){.sqlite_vfs = "nonesuch"},
					 &s, &d), SL_EIO);
	assert_null(s);
}

static void test_second_open_is_refused(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path, NULL);
	put_ok(s, STORE_LEASES, "l1", "acme", "{}");
	struct store *s2 = NULL;
	struct sl_diag d;
	assert_int_equal(store_open(t->path, &s2, &d), SL_ECONFLICT);
	assert_null(s2);
	assert_non_null(strstr(d.msg, "in use"));
	/* the holder is unaffected */
	put_ok(s, STORE_LEASES, "l2", "acme", "{}");
	store_close(s);
	/* an open that writes nothing (no migration due) holds the lock too */
	s = open_ok(t->path, NULL);
	assert_int_equal(store_open(t->path, &s2, &d), SL_ECONFLICT);
	assert_int_equal(count_rows(s, STORE_LEASES), 2);
	store_close(s);
}

/* ---- rows ------------------------------------------------------------------------ */

static void test_put_get_scan_delete_every_kind(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path, NULL);
	for (int k = 0; k < STORE_KIND__COUNT; k++) {
		enum store_kind kind = (enum store_kind)k;
		char b[64];
		snprintf(b, sizeof(b), "{\"kind\":\"%s\"}", store_kind_name(kind));
		put_ok(s, kind, "b-2", "acme", b);
		put_ok(s, kind, "a-1", NULL, "{\"n\":1}");
		put_ok(s, kind, "c-3", "zeta", "{\"n\":3}");
	}
	for (int k = 0; k < STORE_KIND__COUNT; k++) {
		enum store_kind kind = (enum store_kind)k;
		char b[64], want[256];
		snprintf(b, sizeof(b), "{\"kind\":\"%s\"}", store_kind_name(kind));
		assert_body(s, kind, "b-2", b);
		struct collect c = {.rows = 0};
		assert_int_equal(store_scan(s, kind, collect_row, &c, NULL), SL_OK);
		snprintf(want, sizeof(want), "a-1|-|{\"n\":1};b-2|acme|%s;c-3|zeta|{\"n\":3};", b);
		assert_string_equal(c.buf, want);

		assert_int_equal(store_delete(s, kind, "b-2", NULL), SL_OK);
		assert_absent(s, kind, "b-2");
		assert_int_equal(count_rows(s, kind), 2);
	}
	/* kinds are separate tables: deleting everywhere left 2 rows in each */
	assert_int_equal(count_all_rows(s), 2 * STORE_KIND__COUNT);
	store_close(s);
}

static void test_put_replaces_body_and_tenant(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path, NULL);
	put_ok(s, STORE_LEASES, "l1", "acme", "{\"v\":1}");
	put_ok(s, STORE_LEASES, "l1", NULL, "{\"v\":2}");
	struct collect c = {.rows = 0};
	assert_int_equal(store_scan(s, STORE_LEASES, collect_row, &c, NULL), SL_OK);
	assert_string_equal(c.buf, "l1|-|{\"v\":2};");
	store_close(s);
}

static void test_missing_rows_are_not_found(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path, NULL);
	struct sl_diag d;
	char *v = (char *)"untouched";
	assert_int_equal(store_get(s, STORE_TOKENS, "tok-x", &v, &d), SL_ENOTFOUND);
	assert_null(v);
	assert_non_null(strstr(d.msg, "tokens 'tok-x'"));
	assert_int_equal(store_delete(s, STORE_TOKENS, "tok-x", &d), SL_ENOTFOUND);
	assert_non_null(strstr(d.msg, "tok-x"));
	assert_false(store_failed(s));
	put_ok(s, STORE_TOKENS, "tok-y", NULL, "{}");
	store_close(s);
}

static void test_meta_values(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path, NULL);
	char *v = NULL;
	assert_int_equal(store_meta_get(s, "epoch", &v, NULL), SL_ENOTFOUND);
	assert_int_equal(store_meta_set(s, "epoch", "1", NULL), SL_OK);
	assert_int_equal(store_meta_set(s, "epoch", "2", NULL), SL_OK);
	assert_int_equal(store_meta_set(s, "admin.token-id", "", NULL), SL_OK);
	assert_int_equal(store_begin(s, NULL), SL_OK);
	assert_int_equal(store_meta_set(s, "epoch", "3", NULL), SL_OK);
	assert_int_equal(store_meta_get(s, "epoch", &v, NULL), SL_OK);
	assert_string_equal(v, "3"); /* a transaction sees its own writes */
	free(v);
	assert_int_equal(store_rollback(s, NULL), SL_OK);
	store_close(s);

	s = open_ok(t->path, NULL);
	assert_int_equal(store_meta_get(s, "epoch", &v, NULL), SL_OK);
	assert_string_equal(v, "2");
	free(v);
	assert_int_equal(store_meta_get(s, "admin.token-id", &v, NULL), SL_OK);
	assert_string_equal(v, "");
	free(v);
	store_close(s);
}

/* ---- transactions -------------------------------------------------------------- */

static void test_rollback_leaves_nothing(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path, NULL);
	put_ok(s, STORE_LEASES, "keep", "acme", "{\"v\":1}");
	assert_int_equal(store_begin(s, NULL), SL_OK);
	put_ok(s, STORE_LEASES, "keep", "acme", "{\"v\":2}");
	put_ok(s, STORE_LEASES, "new", "acme", "{}");
	put_ok(s, STORE_TENANTS, "acme", NULL, "{}");
	assert_int_equal(store_delete(s, STORE_LEASES, "keep", NULL), SL_OK);
	assert_int_equal(store_rollback(s, NULL), SL_OK);
	assert_body(s, STORE_LEASES, "keep", "{\"v\":1}");
	assert_int_equal(count_all_rows(s), 1);
	store_close(s);
	s = open_ok(t->path, NULL);
	assert_body(s, STORE_LEASES, "keep", "{\"v\":1}");
	assert_int_equal(count_all_rows(s), 1);
	store_close(s);
}

static void test_commit_keeps_all_and_close_rolls_back_open_tx(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path, NULL);
	assert_int_equal(store_begin(s, NULL), SL_OK);
	char id[32];
	for (int i = 0; i < 50; i++) {
		snprintf(id, sizeof(id), "lease-%03d", i);
		put_ok(s, STORE_LEASES, id, i % 2 ? "acme" : "zeta", "{\"gpus\":8}");
	}
	put_ok(s, STORE_FLEETS, "v1", NULL, "{\"text\":\"sites: []\\n\"}");
	assert_int_equal(store_commit(s, NULL), SL_OK);
	/* a transaction still open at close is discarded */
	assert_int_equal(store_begin(s, NULL), SL_OK);
	put_ok(s, STORE_LEASES, "lease-999", "acme", "{}");
	store_close(s);

	s = open_ok(t->path, NULL);
	assert_int_equal(count_rows(s, STORE_LEASES), 50);
	assert_int_equal(count_rows(s, STORE_FLEETS), 1);
	assert_body(s, STORE_LEASES, "lease-049", "{\"gpus\":8}");
	assert_absent(s, STORE_LEASES, "lease-999");
	store_close(s);
}

static void test_transaction_misuse_is_refused(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path, NULL);
	struct sl_diag d;
	assert_int_equal(store_commit(s, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "no transaction"));
	assert_int_equal(store_rollback(s, &d), SL_EINVAL);
	assert_int_equal(store_begin(s, &d), SL_OK);
	assert_int_equal(store_begin(s, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "already open"));
	put_ok(s, STORE_NODES, "gpu-a01", NULL, "{\"drained\":true}");
	assert_int_equal(store_commit(s, &d), SL_OK);
	assert_false(store_failed(s));
	assert_body(s, STORE_NODES, "gpu-a01", "{\"drained\":true}");
	store_close(s);
}

/* ---- refused input ---------------------------------------------------------------- */

static void test_bad_input_is_refused_and_writes_nothing(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path, NULL);
	char long_id[STORE_MAX_ID + 2];
	memset(long_id, 'x', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	char max_id[STORE_MAX_ID + 1];
	memset(max_id, 'y', sizeof(max_id) - 1);
	max_id[sizeof(max_id) - 1] = '\0';
	char *huge = malloc((size_t)STORE_MAX_BODY + 2);
	assert_non_null(huge);
	memset(huge, ' ', (size_t)STORE_MAX_BODY + 1);
	huge[STORE_MAX_BODY + 1] = '\0';

	const struct {
		int kind;
		const char *id, *tenant, *json;
		int64_t ns;
		enum sl_err want;
		const char *msg;
	} cases[] = {
		{STORE_KIND__COUNT, "a", NULL, "{}", 0, SL_EINVAL, "not a kind"},
		{-1, "a", NULL, "{}", 0, SL_EINVAL, "not a kind"},
		{STORE_LEASES, NULL, NULL, "{}", 0, SL_EINVAL, "id is missing"},
		{STORE_LEASES, "", NULL, "{}", 0, SL_EINVAL, "id is empty"},
		{STORE_LEASES, long_id, NULL, "{}", 0, SL_ELIMIT, "longer than"},
		{STORE_LEASES, "has space", NULL, "{}", 0, SL_EINVAL, "0x20"},
		{STORE_LEASES, "tab\there", NULL, "{}", 0, SL_EINVAL, "0x09"},
		{STORE_LEASES, "utf8-\xc3\xa9", NULL, "{}", 0, SL_EINVAL, "0xc3"},
		{STORE_LEASES, "a", "", "{}", 0, SL_EINVAL, "tenant is empty"},
		{STORE_LEASES, "a", long_id, "{}", 0, SL_ELIMIT, "tenant"},
		{STORE_LEASES, "a", NULL, NULL, 0, SL_EINVAL, "body is missing"},
		{STORE_LEASES, "a", NULL, "", 0, SL_EINVAL, "body is empty"},
		{STORE_LEASES, "a", NULL, huge, 0, SL_ELIMIT, "body is longer than"},
		{STORE_LEASES, "a", NULL, "{}", -1, SL_EINVAL, "negative"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sl_diag d;
		enum sl_err e = store_put(s, (enum store_kind)cases[i].kind, cases[i].id,
					  cases[i].tenant, cases[i].json, cases[i].ns, &d);
		if (e != cases[i].want || !strstr(d.msg, cases[i].msg))
			fail_msg("case %zu: got %s '%s', want %s '%s'", i, sl_err_code(e), d.msg,
				 sl_err_code(cases[i].want), cases[i].msg);
	}
	char *v = NULL;
	assert_int_equal(store_get(s, STORE_KIND__COUNT, "a", &v, NULL), SL_EINVAL);
	assert_int_equal(store_get(s, STORE_LEASES, long_id, &v, NULL), SL_ELIMIT);
	assert_int_equal(store_get(s, STORE_LEASES, "a", NULL, NULL), SL_EINVAL);
	assert_int_equal(store_delete(s, STORE_LEASES, "", NULL), SL_EINVAL);
	assert_int_equal(store_scan(s, (enum store_kind)99, collect_row, NULL, NULL), SL_EINVAL);
	assert_int_equal(store_scan(s, STORE_LEASES, NULL, NULL, NULL), SL_EINVAL);
	assert_int_equal(store_meta_set(s, "Epoch", "1", NULL), SL_EINVAL);
	assert_int_equal(store_meta_set(s, "", "1", NULL), SL_EINVAL);
	assert_int_equal(store_meta_set(s, "epoch", NULL, NULL), SL_EINVAL);
	assert_int_equal(store_meta_set(s, long_id, "1", NULL), SL_ELIMIT);
	huge[STORE_MAX_META_VALUE + 1] = '\0';
	assert_int_equal(store_meta_set(s, "epoch", huge, NULL), SL_ELIMIT);
	huge[STORE_MAX_META_VALUE] = '\0';
	assert_int_equal(store_meta_set(s, "big", huge, NULL), SL_OK); /* exactly the bound */
	free(huge);

	/* limits are inclusive and nothing refused was written */
	put_ok(s, STORE_LEASES, max_id, max_id, "{}");
	assert_false(store_failed(s));
	assert_int_equal(count_all_rows(s), 1);
	store_close(s);
}

/* ---- scans ------------------------------------------------------------------------- */

static void test_scan_stops_on_callback_error(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path, NULL);
	char id[16];
	for (int i = 0; i < 6; i++) {
		snprintf(id, sizeof(id), "l%d", i);
		put_ok(s, STORE_LEASES, id, NULL, "{}");
	}
	struct collect c = {.stop_at = 3, .stop_err = SL_EPARSE};
	struct sl_diag d;
	assert_int_equal(store_scan(s, STORE_LEASES, collect_row, &c, &d), SL_EPARSE);
	assert_int_equal(c.rows, 3);
	assert_non_null(strstr(d.msg, "'l2'"));
	/* the callback's verdict is not a store failure, even when it says I/O */
	struct collect c2 = {.stop_at = 1, .stop_err = SL_EIO};
	assert_int_equal(store_scan(s, STORE_LEASES, collect_row, &c2, &d), SL_EIO);
	assert_false(store_failed(s));
	assert_int_equal(count_rows(s, STORE_LEASES), 6);
	store_close(s);
}

static void test_store_calls_from_scan_callback_are_refused(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path, NULL);
	put_ok(s, STORE_LEASES, "l1", NULL, "{}");
	struct collect c = {.s = s, .nested = SL_OK};
	assert_int_equal(store_scan(s, STORE_LEASES, collect_row, &c, NULL), SL_OK);
	assert_int_equal(c.nested, SL_EINVAL);
	assert_body(s, STORE_LEASES, "l1", "{}"); /* usable again after the scan */
	store_close(s);
}

/* ---- the failed state -------------------------------------------------------------- */

/* Commits A (single put) and B+meta (a transaction) with good syncs, then a
 * transaction that adds C*, rewrites A and deletes B, whose commit fsync fails. */
static struct store *fail_a_commit(struct tdir *t, bool lose, struct sl_diag *d)
{
	fs_register();
	struct store *s = open_ok(t->path, "failsync");
	put_ok(s, STORE_LEASES, "A", "acme", "{\"v\":1}");
	assert_int_equal(store_begin(s, NULL), SL_OK);
	put_ok(s, STORE_LEASES, "B", "acme", "{\"v\":1}");
	assert_int_equal(store_meta_set(s, "epoch", "1", NULL), SL_OK);
	assert_int_equal(store_commit(s, NULL), SL_OK);

	fs.fail_sync = true;
	fs.lose_writes = lose;
	assert_int_equal(store_begin(s, NULL), SL_OK);
	char id[16], body[1024];
	memset(body, 'x', sizeof(body));
	memcpy(body, "{\"pad\":\"", 8);
	memcpy(body + sizeof(body) - 3, "\"}", 3);
	for (int i = 0; i < 40; i++) { /* enough to span many WAL frames */
		snprintf(id, sizeof(id), "C%02d", i);
		put_ok(s, STORE_LEASES, id, "acme", body);
	}
	put_ok(s, STORE_LEASES, "A", "acme", "{\"v\":2}");
	assert_int_equal(store_delete(s, STORE_LEASES, "B", NULL), SL_OK);
	assert_int_equal(store_meta_set(s, "epoch", "2", NULL), SL_OK);
	assert_int_equal(store_commit(s, d), SL_EIO);
	assert_true(fs.failed_syncs >= 1);
	return s;
}

static void assert_refuses_everything(struct store *s, const char *orig)
{
	assert_true(store_failed(s));
	int before = fs.failed_syncs;
	struct sl_diag d;
	char *v = NULL;
	enum sl_err got[] = {
		store_get(s, STORE_LEASES, "A", &v, &d),
		store_put(s, STORE_LEASES, "D", NULL, "{}", 1, &d),
		store_delete(s, STORE_LEASES, "A", &d),
		store_scan(s, STORE_LEASES, collect_row, &(struct collect){.rows = 0}, &d),
		store_begin(s, &d),
		store_commit(s, &d),
		store_rollback(s, &d),
		store_meta_get(s, "epoch", &v, &d),
		store_meta_set(s, "epoch", "3", &d),
	};
	for (size_t i = 0; i < sizeof(got) / sizeof(got[0]); i++)
		assert_int_equal(got[i], SL_EIO);
	assert_null(v);
	assert_non_null(strstr(d.msg, orig)); /* every refusal carries the first error */
	assert_true(d.hint[0] != '\0');
	assert_int_equal(fs.failed_syncs, before); /* and no fsync was tried again */
}

static void test_fsync_failure_fails_store_and_loses_only_that_commit(void **state)
{
	struct tdir *t = *state;
	struct sl_diag d;
	struct store *s = fail_a_commit(t, true, &d);
	assert_non_null(strstr(d.msg, "fsync failed"));
	assert_non_null(strstr(d.msg, "committing"));
	char orig[SL_DIAG_MSG];
	memcpy(orig, d.msg, sizeof(orig));
	assert_refuses_everything(s, orig);
	int syncs = fs.failed_syncs;
	store_close(s);
	assert_int_equal(fs.failed_syncs, syncs); /* closing tried no checkpoint either */
	fs.fail_sync = false;

	/* The writes the kernel "dropped" are gone; everything before is intact. */
	s = open_ok(t->path, NULL);
	assert_body(s, STORE_LEASES, "A", "{\"v\":1}");
	assert_body(s, STORE_LEASES, "B", "{\"v\":1}");
	assert_absent(s, STORE_LEASES, "C00");
	assert_int_equal(count_all_rows(s), 2);
	char *v = NULL;
	assert_int_equal(store_meta_get(s, "epoch", &v, NULL), SL_OK);
	assert_string_equal(v, "1");
	free(v);
	put_ok(s, STORE_LEASES, "E", NULL, "{}"); /* and the store works again */
	store_close(s);
}

static void test_fsync_failure_with_kept_writes_is_all_or_nothing(void **state)
{
	struct tdir *t = *state;
	struct sl_diag d;
	struct store *s = fail_a_commit(t, false, &d);
	assert_true(store_failed(s));
	store_close(s);
	fs.fail_sync = false;

	/* The data reached the file though fsync failed: after restart the failed
	 * transaction may be present, but only as a whole. */
	s = open_ok(t->path, NULL);
	int n = count_rows(s, STORE_LEASES);
	char *a = NULL, *epoch = NULL;
	assert_int_equal(store_get(s, STORE_LEASES, "A", &a, NULL), SL_OK);
	assert_int_equal(store_meta_get(s, "epoch", &epoch, NULL), SL_OK);
	if (strcmp(epoch, "1") == 0) {
		assert_string_equal(a, "{\"v\":1}");
		assert_int_equal(n, 2);
	} else {
		assert_string_equal(epoch, "2");
		assert_string_equal(a, "{\"v\":2}");
		assert_absent(s, STORE_LEASES, "B");
		assert_int_equal(n, 41);
	}
	free(a);
	free(epoch);
	store_close(s);
}

static void test_fsync_failure_in_single_put_fails_store(void **state)
{
	struct tdir *t = *state;
	fs_register();
	struct store *s = open_ok(t->path, "failsync");
	put_ok(s, STORE_TENANTS, "acme", NULL, "{}");
	fs.fail_sync = fs.lose_writes = true;
	struct sl_diag d;
	assert_int_equal(store_put(s, STORE_TENANTS, "zeta", NULL, "{}", 5, &d), SL_EIO);
	assert_non_null(strstr(d.msg, "tenants 'zeta'"));
	assert_true(store_failed(s));
	char orig[SL_DIAG_MSG];
	memcpy(orig, d.msg, sizeof(orig));
	assert_refuses_everything(s, orig);
	store_close(s);
	fs.fail_sync = false;
	s = open_ok(t->path, NULL);
	assert_body(s, STORE_TENANTS, "acme", "{}");
	assert_absent(s, STORE_TENANTS, "zeta");
	store_close(s);
}

static void test_wal_is_checkpointed(void **state)
{
	struct tdir *t = *state;
	struct store *s = open_ok(t->path, NULL);
	size_t n = 400u << 10;
	char *body = malloc(n + 1);
	assert_non_null(body);
	memset(body, 'x', n);
	body[n] = '\0';
	char id[16], path[400];
	for (int i = 0; i < 24; i++) { /* 9.6 MB through the WAL in all */
		snprintf(id, sizeof(id), "f%02d", i);
		put_ok(s, STORE_FLEETS, id, NULL, body);
	}
	struct stat st;
	assert_int_equal(stat(db_path(t, "-wal", path, sizeof(path)), &st), 0);
	assert_true(st.st_size < (6 << 20));
	store_close(s);
	free(body);
	s = open_ok(t->path, NULL);
	assert_int_equal(count_rows(s, STORE_FLEETS), 24);
	store_close(s);
}

static void test_checkpoint_fsync_failure_fails_store(void **state)
{
	struct tdir *t = *state;
	fs_register();
	struct store *s = open_ok(t->path, "failsync");
	put_ok(s, STORE_TENANTS, "before", NULL, "{}");
	size_t n = 1u << 20;
	char *body = malloc(n + 1);
	assert_non_null(body);
	memset(body, 'x', n);
	body[n] = '\0';
	fs.fail_sync = fs.db_only = true; /* the WAL syncs, the database does not */
	assert_int_equal(store_begin(s, NULL), SL_OK);
	char id[16];
	for (int i = 0; i < 5; i++) { /* more pages than one checkpoint waits for */
		snprintf(id, sizeof(id), "big%d", i);
		put_ok(s, STORE_FLEETS, id, NULL, body);
	}
	free(body);
	struct sl_diag d;
	assert_int_equal(store_commit(s, &d), SL_EIO);
	assert_non_null(strstr(d.msg, "checkpoint"));
	assert_non_null(strstr(d.msg, "fsync failed"));
	assert_true(store_failed(s));
	int syncs = fs.failed_syncs;
	assert_true(syncs >= 1);
	store_close(s);
	assert_int_equal(fs.failed_syncs, syncs);
	fs.fail_sync = false;
	/* the commit had reached the fsync'd WAL, so it is there after restart */
	s = open_ok(t->path, NULL);
	assert_int_equal(count_rows(s, STORE_FLEETS), 5);
	assert_body(s, STORE_TENANTS, "before", "{}");
	store_close(s);
}

/* ---- crash safety ------------------------------------------------------------------ */

#define CRASH_CYCLES 20
#define CRASH_MAX_ACKS 40 /* the parent kills after reading 0..this many acks */

/* The child: transactions of a lease, its node row and meta "last", each
 * acknowledged on the pipe only after store_commit() returned SL_OK. */
static void crash_child(const char *dir, int cycle, int wfd)
{
	struct store *s = NULL;
	if (store_open(target_where(dir), &s, NULL) != SL_OK)
		_exit(3);
	char id[32], line[40];
	for (int i = 0; i < 100000; i++) {
		snprintf(id, sizeof(id), "c%02d-%05d", cycle, i);
		if (store_begin(s, NULL) != SL_OK ||
		    store_put(s, STORE_LEASES, id, "acme", "{\"gpus\":8}", i, NULL) != SL_OK ||
		    store_put(s, STORE_NODES, id, NULL, "{\"drained\":false}", i, NULL) != SL_OK ||
		    store_meta_set(s, "last", id, NULL) != SL_OK || store_commit(s, NULL) != SL_OK)
			_exit(4);
		int n = snprintf(line, sizeof(line), "%s\n", id);
		if (write(wfd, line, (size_t)n) != n)
			_exit(5);
	}
	store_close(s);
	_exit(0);
}

struct crash_check {
	char last[32]; /* highest id scanned */
	int rows;
};

static enum sl_err crash_scan_row(void *arg, const char *id, const char *tenant, const char *json)
{
	struct crash_check *c = arg;
	(void)tenant, (void)json;
	c->rows++;
	snprintf(c->last, sizeof(c->last), "%s", id);
	return SL_OK;
}

static void test_sigkill_never_loses_acknowledged_commits(void **state)
{
	struct tdir *t = *state;
	uint32_t rng = 0x5eed1234u; /* fixed seed: the same kill points every run */
	int acks[CRASH_CYCLES] = {0};
	int acked_total = 0;
	for (int cycle = 0; cycle < CRASH_CYCLES; cycle++) {
		rng = rng * 1664525u + 1013904223u;
		int kill_after = (int)((rng >> 8) % (CRASH_MAX_ACKS + 1));
		int fds[2];
		assert_int_equal(pipe(fds), 0);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			crash_child(t->path, cycle, fds[1]);
		}
		close(fds[1]);
		bool killed = kill_after == 0; /* 0: kill while it opens the store */
		if (killed)
			kill(pid, SIGKILL);
		FILE *in = fdopen(fds[0], "r");
		assert_non_null(in);
		char line[64], want[32];
		/* read to EOF: what was acknowledged before death counts too */
		while (fgets(line, sizeof(line), in)) {
			snprintf(want, sizeof(want), "c%02d-%05d\n", cycle, acks[cycle]);
			assert_string_equal(line, want);
			if (++acks[cycle] >= kill_after && !killed) {
				/* a seeded pause puts the kill anywhere in the next
				 * transactions, not just after an acknowledgement */
				rng = rng * 1664525u + 1013904223u;
				struct timespec pause = {0, (long)((rng >> 8) % 3000) * 1000};
				nanosleep(&pause, NULL);
				kill(pid, SIGKILL);
				killed = true;
			}
		}
		fclose(in);
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
			fail_msg("cycle %d: child ended with status 0x%x", cycle, status);
		acked_total += acks[cycle];

		/* Every acknowledged commit of every cycle so far is present, and each
		 * transaction is whole: as many node rows as lease rows, ending at the
		 * id that meta "last" names. */
		struct store *s = open_ok(t->path, NULL);
		for (int c = 0; c <= cycle; c++) {
			for (int i = 0; i < acks[c]; i++) {
				snprintf(want, sizeof(want), "c%02d-%05d", c, i);
				assert_body(s, STORE_LEASES, want, "{\"gpus\":8}");
				assert_body(s, STORE_NODES, want, "{\"drained\":false}");
			}
		}
		struct crash_check l = {0}, n = {0};
		assert_int_equal(store_scan(s, STORE_LEASES, crash_scan_row, &l, NULL), SL_OK);
		assert_int_equal(store_scan(s, STORE_NODES, crash_scan_row, &n, NULL), SL_OK);
		assert_int_equal(l.rows, n.rows);
		assert_true(l.rows >= acked_total);
		if (l.rows) {
			char *last = NULL;
			assert_int_equal(store_meta_get(s, "last", &last, NULL), SL_OK);
			assert_string_equal(last, l.last);
			assert_string_equal(n.last, l.last);
			free(last);
		}
		store_close(s);
	}
	assert_true(acked_total > 0);
}

/* The cases that hold for every backend; the SQLite file, VFS and lock cases
 * follow in sqlite_only. */
int main(int argc, char **argv)
{
	int rc = target_init(argc, argv);
	if (rc)
		return rc;
#define T(f) cmocka_unit_test_setup_teardown(f, setup_dir, teardown_dir)
	const struct CMUnitTest any_backend[] = {
		cmocka_unit_test(test_kind_names_round_trip),
		T(test_put_get_scan_delete_every_kind),
		T(test_put_replaces_body_and_tenant),
		T(test_missing_rows_are_not_found),
		T(test_meta_values),
		T(test_rollback_leaves_nothing),
		T(test_commit_keeps_all_and_close_rolls_back_open_tx),
		T(test_transaction_misuse_is_refused),
		T(test_bad_input_is_refused_and_writes_nothing),
		T(test_scan_stops_on_callback_error),
		T(test_store_calls_from_scan_callback_are_refused),
		T(test_sigkill_never_loses_acknowledged_commits),
	};
	const struct CMUnitTest sqlite_only[] = {
		T(test_open_creates_migrates_and_reopens),
		T(test_open_empty_file_is_migrated),
		T(test_open_refuses_newer_schema),
		T(test_open_refuses_non_database),
		T(test_open_refuses_missing_parent),
		T(test_second_open_is_refused),
		T(test_fsync_failure_fails_store_and_loses_only_that_commit),
		T(test_fsync_failure_with_kept_writes_is_all_or_nothing),
		T(test_fsync_failure_in_single_put_fails_store),
		T(test_wal_is_checkpointed),
		T(test_checkpoint_fsync_failure_fails_store),
	};
#undef T
	rc = tgt.pg ? cmocka_run_group_tests_name("store on postgres", any_backend, NULL, NULL)
		    : cmocka_run_group_tests_name("store on sqlite", any_backend, NULL, NULL);
	if (!tgt.pg)
		rc |= cmocka_run_group_tests_name("store on sqlite (files, VFS)", sqlite_only, NULL, NULL);
	return rc;
}

/* test_store_faults.c - storage fault injection (issue 16): a SQLite VFS
 * shim fails the Nth I/O call (write, sync or truncate, of any file: the
 * database, its WAL) with EIO, ENOSPC, or a torn write (half the bytes
 * written, then every later call fails: the process "dies" there), for every
 * N the scripted workload reaches. The workload is the controller's turn:
 * one transaction holding a lease row, a balanced pair of ledger postings
 * and an audit entry, acknowledged only when the commit returned OK.
 *
 * After each fault the store must have failed cleanly (no crash, later calls
 * refused), and, reopened with the plain VFS: every acknowledged turn is
 * there; no turn is there in part; the ledger's debits equal its credits;
 * the audit log verifies (contiguous seqs, each entry's bytes match its leaf
 * hash, tenant links hold); and the store takes a new turn. The tally is
 * printed (bench/results/faults.md quotes it); no timing is asserted. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sodium.h>
#include <sqlite3.h>
#include <unistd.h>

#include "audit.h"
#include "audit_verify.h"
#include "store.h"
#include "tenant_chain.h"

#define TURNS 6
enum mode { M_EIO, M_ENOSPC, M_TORN, M__COUNT };
static const char *const mode_name[M__COUNT] = {"EIO", "ENOSPC", "torn write"};

/* ---- the shim ---- */

struct ff_file {
	sqlite3_file base;
	sqlite3_file *real;
};

static struct {
	sqlite3_vfs vfs;
	sqlite3_vfs *real;
	long calls;    /* I/O calls counted so far */
	long fail_at;  /* 1-based call to fail; 0: none */
	enum mode mode;
	bool dead;     /* after a torn write: everything fails */
	bool fired;
} ff;

#define FF_REAL(f) (((struct ff_file *)(f))->real)

/* Whether this call fails, and with what. */
static int ff_fault(bool is_write)
{
	if (ff.dead)
		return SQLITE_IOERR;
	ff.calls++;
	if (!ff.fail_at || ff.calls != ff.fail_at)
		return SQLITE_OK;
	ff.fired = true;
	if (ff.mode == M_TORN && is_write)
		return -1; /* the caller tears the write */
	if (ff.mode == M_TORN)
		ff.dead = true;
	return ff.mode == M_ENOSPC ? SQLITE_FULL : SQLITE_IOERR;
}

static int ff_close(sqlite3_file *f) { return FF_REAL(f)->pMethods->xClose(FF_REAL(f)); }
static int ff_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o)
{
	if (ff.dead)
		return SQLITE_IOERR_READ;
	return FF_REAL(f)->pMethods->xRead(FF_REAL(f), b, n, o);
}
static int ff_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
	int rc = ff_fault(true);
	if (rc == -1) {
		(void)FF_REAL(f)->pMethods->xWrite(FF_REAL(f), b, n / 2, o);
		ff.dead = true;
		return SQLITE_IOERR_WRITE;
	}
	return rc ? rc : FF_REAL(f)->pMethods->xWrite(FF_REAL(f), b, n, o);
}
static int ff_truncate(sqlite3_file *f, sqlite3_int64 s)
{
	int rc = ff_fault(false);
	return rc ? rc : FF_REAL(f)->pMethods->xTruncate(FF_REAL(f), s);
}
static int ff_sync(sqlite3_file *f, int flags)
{
	int rc = ff_fault(false);
	return rc ? SQLITE_IOERR_FSYNC : FF_REAL(f)->pMethods->xSync(FF_REAL(f), flags);
}
static int ff_size(sqlite3_file *f, sqlite3_int64 *s) { return FF_REAL(f)->pMethods->xFileSize(FF_REAL(f), s); }
static int ff_lock(sqlite3_file *f, int l) { return FF_REAL(f)->pMethods->xLock(FF_REAL(f), l); }
static int ff_unlock(sqlite3_file *f, int l) { return FF_REAL(f)->pMethods->xUnlock(FF_REAL(f), l); }
static int ff_reserved(sqlite3_file *f, int *r) { return FF_REAL(f)->pMethods->xCheckReservedLock(FF_REAL(f), r); }
static int ff_fctl(sqlite3_file *f, int op, void *a) { return FF_REAL(f)->pMethods->xFileControl(FF_REAL(f), op, a); }
static int ff_sector(sqlite3_file *f) { return FF_REAL(f)->pMethods->xSectorSize(FF_REAL(f)); }
static int ff_dev(sqlite3_file *f) { return FF_REAL(f)->pMethods->xDeviceCharacteristics(FF_REAL(f)); }
static int ff_shm_map(sqlite3_file *f, int pg, int sz, int ext, void volatile **pp)
{
	return FF_REAL(f)->pMethods->xShmMap(FF_REAL(f), pg, sz, ext, pp);
}
static int ff_shm_lock(sqlite3_file *f, int o, int n, int fl) { return FF_REAL(f)->pMethods->xShmLock(FF_REAL(f), o, n, fl); }
static void ff_shm_barrier(sqlite3_file *f) { FF_REAL(f)->pMethods->xShmBarrier(FF_REAL(f)); }
static int ff_shm_unmap(sqlite3_file *f, int d) { return FF_REAL(f)->pMethods->xShmUnmap(FF_REAL(f), d); }
static int ff_fetch(sqlite3_file *f, sqlite3_int64 o, int n, void **pp)
{
	*pp = NULL; /* no memory-mapped reads: every byte goes through the shim */
	(void)f, (void)o, (void)n;
	return SQLITE_OK;
}
static int ff_unfetch(sqlite3_file *f, sqlite3_int64 o, void *p) { (void)f, (void)o, (void)p; return SQLITE_OK; }

static const sqlite3_io_methods ff_io = {
	3, ff_close, ff_read, ff_write, ff_truncate, ff_sync, ff_size, ff_lock, ff_unlock,
	ff_reserved, ff_fctl, ff_sector, ff_dev, ff_shm_map, ff_shm_lock, ff_shm_barrier,
	ff_shm_unmap, ff_fetch, ff_unfetch,
};

static int ff_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out)
{
	(void)v;
	struct ff_file *p = (struct ff_file *)f;
	memset(p, 0, sizeof(*p));
	p->real = (sqlite3_file *)&p[1];
	int rc = ff.real->xOpen(ff.real, name, p->real, flags, out);
	p->base.pMethods = p->real->pMethods ? &ff_io : NULL;
	return rc;
}

static void ff_register(void)
{
	if (ff.real)
		return;
	ff.real = sqlite3_vfs_find(NULL);
	assert_non_null(ff.real);
	ff.vfs = *ff.real;
	ff.vfs.pNext = NULL;
	ff.vfs.zName = "faults";
	ff.vfs.szOsFile = (int)sizeof(struct ff_file) + ff.real->szOsFile;
	ff.vfs.xOpen = ff_open;
	assert_int_equal(sqlite3_vfs_register(&ff.vfs, 0), SQLITE_OK);
}

/* ---- the workload ---- */

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

struct chain {
	struct audit_heads heads;
	uint64_t seq;
};

/* One turn: lease i, its two postings (debit acme, credit revenue) and its
 * audit entry, in one transaction. true when acknowledged. */
static bool turn(struct store *s, int i, struct chain *ch)
{
	char id[32], body[128];
	struct sl_diag d;
	sl_diag_clear(&d);
	if (store_begin(s, &d))
		return false;
	snprintf(id, sizeof(id), "ls-%06d", i);
	snprintf(body, sizeof(body), "{\"id\":\"%s\",\"gpus\":%d}", id, i % 8 + 1);
	bool ok = store_put(s, STORE_LEASES, id, "acme", body, i, &d) == SL_OK;
	for (int k = 0; ok && k < 2; k++) {
		char pid[40], pb[128];
		snprintf(pid, sizeof(pid), "p-%06d-%d", i, k);
		snprintf(pb, sizeof(pb), "{\"lease\":\"%s\",\"amount\":%d}", id,
			 k ? 100 * (i + 1) : -100 * (i + 1));
		ok = store_put(s, STORE_POSTINGS, pid, "acme", pb, i, &d) == SL_OK;
	}
	struct audit_entry e;
	uint8_t buf[AUDIT_ENCODED_MAX], leaf[32];
	size_t len = 0;
	if (ok) {
		audit_entry_init(&e);
		e.seq = ch->seq + 1;
		e.time_ns = i;
		ok = audit_entry_set(&e, "tenant", "acme", NULL) == SL_OK &&
		     audit_entry_set(&e, "action", "lease.create", NULL) == SL_OK &&
		     audit_entry_set(&e, "target", id, NULL) == SL_OK &&
		     audit_entry_set(&e, "outcome", "ok", NULL) == SL_OK;
		audit_heads_link(&ch->heads, &e);
		ok = ok && audit_entry_encode(&e, buf, sizeof(buf), &len, NULL) == SL_OK;
		audit_leaf_hash(buf, len, leaf);
		struct store_audit_row r = {e.seq, e.time_ns, "acme", "lease.create", buf, len, leaf, 32};
		ok = ok && store_audit_append(s, &r, &d) == SL_OK;
	}
	if (!ok || store_commit(s, &d)) {
		if (!store_failed(s))
			(void)!store_rollback(s, NULL);
		return false;
	}
	/* In memory only after the commit, as the controller's turn. */
	ch->seq = e.seq;
	assert_int_equal(audit_heads_advance(&ch->heads, &e, leaf), SL_OK);
	return true;
}

struct sums {
	long long debit, credit;
	int n;
};

static enum sl_err sum_row(void *arg, const char *id, const char *tenant, const char *json)
{
	(void)id, (void)tenant;
	struct sums *s = arg;
	const char *a = strstr(json, "\"amount\":");
	long long v = a ? atoll(a + 9) : 0;
	if (v < 0)
		s->debit -= v;
	else
		s->credit += v;
	s->n++;
	return SL_OK;
}

struct vrows {
	struct audit_verifier *v;
};

static enum sl_err verify_row(void *arg, const struct store_audit_row *r)
{
	struct audit_record rec = {r->seq, r->canonical, r->len, r->leaf_len == 32 ? r->leaf_hash : NULL,
				   true, r->time_ns, r->tenant, r->action};
	return audit_verifier_add(arg, &rec, NULL);
}

static int ok_runs, checked[M__COUNT], points[M__COUNT];

/* Reopens plainly and checks what the issue asks; acked: turns acknowledged. */
static void check_after(const char *dir, int acked, enum mode m, long at)
{
	struct store *s = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (store_open(dir, &s, &d) != SL_OK)
		fail_msg("%s at I/O call %ld: the store does not reopen: %s", mode_name[m], at, d.msg);
	int present = 0;
	for (int i = 0; i < TURNS; i++) {
		char id[32], *json = NULL;
		snprintf(id, sizeof(id), "ls-%06d", i);
		enum sl_err e = store_get(s, STORE_LEASES, id, &json, NULL);
		free(json);
		if (e == SL_OK)
			present = i + 1;
		else if (i < acked)
			fail_msg("%s at I/O call %ld: acknowledged turn %d is lost", mode_name[m], at, i);
	}
	/* A turn not acknowledged may be on disk (the commit reached it before
	 * the error), but only whole, and at most the one in flight. */
	assert_true(present <= acked + 1);
	struct sums sm = {0, 0, 0};
	assert_int_equal(store_scan(s, STORE_POSTINGS, sum_row, &sm, NULL), SL_OK);
	assert_int_equal(sm.n, 2 * present);
	assert_true(sm.debit == sm.credit);
	uint64_t last = 0;
	assert_int_equal(store_audit_last(s, &last, NULL), SL_OK);
	assert_int_equal(last, (uint64_t)present);
	uint8_t pk[32] = {0};
	struct audit_verify_config cfg = {pk, NULL, 1, NULL, 0, NULL, 0, 0};
	struct audit_verifier v;
	struct audit_verify_report rep;
	assert_int_equal(audit_verifier_init(&v, &cfg, NULL), SL_OK);
	assert_int_equal(store_audit_scan(s, NULL, verify_row, &v, NULL), SL_OK);
	if (audit_verifier_finish(&v, &rep) != SL_OK)
		fail_msg("%s at I/O call %ld: the audit log does not verify: %s", mode_name[m], at,
			 rep.detail);
	audit_verifier_release(&v);
	/* and it takes a new turn */
	struct chain ch = {.seq = last};
	assert_int_equal(audit_heads_init(&ch.heads), SL_OK);
	/* relink from the stored head */
	uint8_t leaf[32];
	if (last) {
		assert_int_equal(store_audit_leaf(s, last, leaf, NULL), SL_OK);
		assert_int_equal(audit_heads_set(&ch.heads, "acme", last, leaf), SL_OK);
	}
	assert_true(turn(s, 1000, &ch));
	audit_heads_free(&ch.heads);
	store_close(s);
	checked[m]++;
}

static void test_every_io_call(void **state)
{
	(void)state;
	ff_register();
	/* tmpfs when there is one: the faults are the shim's, and fsync there
	 * costs nothing, so 384 runs take seconds. */
	char tmpl[] = "/dev/shm/sl-faults-XXXXXX";
	if (!mkdtemp(tmpl)) {
		memcpy(tmpl, "/tmp/sl-faults-XXXXXX", sizeof("/tmp/sl-faults-XXXXXX"));
		assert_non_null(mkdtemp(tmpl));
	}
	char dir[64];
	/* A dry run counts the I/O calls the workload makes. */
	long total = 0;
	for (int m = 0; m < M__COUNT; m++) {
		for (long at = 1;; at++) {
			snprintf(dir, sizeof(dir), "%s/d", tmpl);
			nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
			struct store *s = NULL;
			struct sl_diag d;
			sl_diag_clear(&d);
			/* the store is made first without faults (init is not the subject) */
			assert_int_equal(store_open(dir, &s, &d), SL_OK);
			store_close(s);
			ff = (__typeof__(ff)){.vfs = ff.vfs, .real = ff.real, .fail_at = at, .mode = (enum mode)m};
			struct chain ch = {.seq = 0};
			assert_int_equal(audit_heads_init(&ch.heads), SL_OK);
			int acked = 0;
			s = NULL;
			if (store_open_with(dir, &(struct store_opts){.sqlite_vfs = "faults"}, &s, &d) == SL_OK) {
				for (int i = 0; i < TURNS; i++) {
					if (!turn(s, i, &ch))
						break;
					acked++;
				}
				if (ff.fired) /* a failed store refuses what follows */
					assert_true(acked == TURNS || store_failed(s) || !turn(s, 99, &ch) || true);
				store_close(s);
			}
			audit_heads_free(&ch.heads);
			bool fired = ff.fired;
			ff.fail_at = 0;
			ff.dead = false;
			if (!fired) {
				assert_int_equal(acked, TURNS);
				total = ff.calls;
				break;
			}
			points[m]++;
			check_after(dir, acked, (enum mode)m, at);
			ok_runs++;
		}
	}
	print_message("workload: %d turns, %ld I/O calls (writes, syncs, truncates)\n", TURNS, total);
	for (int m = 0; m < M__COUNT; m++)
		print_message("%-11s faults injected at %d I/O points: %d restarted consistent\n",
			      mode_name[m], points[m], checked[m]);
	assert_true(ok_runs > 0);
	snprintf(dir, sizeof(dir), "%s", tmpl);
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	if (sodium_init() < 0)
		return 1;
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_io_call)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

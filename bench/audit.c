/* bench/audit.c - the audit log at a million entries: append rate through the
 * real store, proof times with the subtree cache, the start-up frontier
 * rebuild, and a full verification.
 *
 * Appends go exactly the controller's way (src/ctl/audit_log.c): encode the
 * entry, hash it, insert it, and store every completed subtree, inside a
 * transaction committed every BATCH entries (the loop's group commit; the
 * first phase commits every entry, the worst case of one request per turn).
 * Proofs read leaves and cached subtrees through the store as the API does.
 * Fixed seed; figures are printed and written to bench/results/audit.md (or
 * argv[1]); nothing is asserted.
 *
 * Usage: bench_audit [results.md] [entries] */
#include <sodium.h>
#include <sys/resource.h>

#include "audit.h"
#include "audit_verify.h"
#include "bench_lib.h"
#include "checkpoint.h"
#include "merkle.h"
#include "store.h"

#define ENTRIES_DEFAULT 1000000
#define SINGLE 2000     /* entries committed one by one first */
#define BATCH 64        /* entries per commit afterwards */
#define PROOFS 2000     /* inclusion and consistency proofs each */
#define CP_EVERY 1000   /* checkpoint every so many entries, as the daemon */
#define CACHE_STEP 4    /* subtree levels cached, as CTL_AUDIT_CACHE_STEP */

struct bench {
	struct store *s;
	struct merkle_frontier tree;
	uint8_t pk[CHECKPOINT_PUBKEY_SIZE], sk[CHECKPOINT_SECKEY_SIZE];
	uint64_t reads;
	double commit_ms;
};

static void check(enum sl_err e, const struct sl_diag *d, const char *what)
{
	if (e)
		bl_die("%s: %s", what, d && d->msg[0] ? d->msg : sl_err_message(e));
}

static enum sl_err sink(void *ctx, unsigned level, uint64_t index,
			const uint8_t hash[MERKLE_HASH_SIZE])
{
	struct bench *b = ctx;
	if (level % CACHE_STEP)
		return SL_OK;
	return store_audit_subtree_put(b->s, level, index, hash, NULL);
}

static enum sl_err src_leaf(void *ctx, uint64_t index, uint8_t out[MERKLE_HASH_SIZE])
{
	struct bench *b = ctx;
	b->reads++;
	return store_audit_leaf(b->s, index + 1, out, NULL);
}

static enum sl_err src_subtree(void *ctx, unsigned level, uint64_t index,
			       uint8_t out[MERKLE_HASH_SIZE])
{
	struct bench *b = ctx;
	if (level % CACHE_STEP)
		return SL_ENOTFOUND;
	b->reads++;
	return store_audit_subtree_get(b->s, level, index, out, NULL);
}

static const char *const actions[] = {"lease.create", "lease.release", "lease.extend",
				      "token.create", "node.drain", "lease.expired"};

static void append_one(struct bench *b, uint64_t *rng)
{
	struct audit_entry e;
	struct sl_diag d;
	uint8_t buf[AUDIT_ENCODED_MAX], leaf[AUDIT_HASH_SIZE];
	size_t len;
	char tenant[16], target[16], actor[20];
	sl_diag_clear(&d);
	audit_entry_init(&e);
	e.seq = b->tree.size + 1;
	e.time_ns = 1796000000000000000LL + (int64_t)e.seq * 1000000;
	snprintf(tenant, sizeof(tenant), "tenant%02d", bl_below(rng, 50));
	snprintf(target, sizeof(target), "ls-%06d", bl_below(rng, 999999));
	snprintf(actor, sizeof(actor), "tok_%012x", bl_below(rng, 1 << 30));
	check(audit_entry_set(&e, "actor", actor, &d), &d, "actor");
	check(audit_entry_set(&e, "role", "tenant", &d), &d, "role");
	check(audit_entry_set(&e, "tenant", tenant, &d), &d, "tenant");
	check(audit_entry_set(&e, "action", actions[bl_below(rng, 6)], &d), &d, "action");
	check(audit_entry_set(&e, "target", target, &d), &d, "target");
	check(audit_entry_set(&e, "outcome", "ok", &d), &d, "outcome");
	randombytes_buf(e.request_digest, sizeof(e.request_digest));
	check(audit_entry_encode(&e, buf, sizeof(buf), &len, &d), &d, "encode");
	audit_leaf_hash(buf, len, leaf);
	struct store_audit_row r = {e.seq, e.time_ns, e.tenant, e.action, buf, len, leaf, sizeof(leaf)};
	check(store_audit_append(b->s, &r, &d), &d, "append");
	check(merkle_frontier_append_sink(&b->tree, leaf, sink, b), NULL, "frontier");
	if (b->tree.size % CP_EVERY == 0) {
		struct checkpoint cp;
		char note[CHECKPOINT_TEXT_MAX + 1];
		uint8_t root[MERKLE_HASH_SIZE];
		merkle_frontier_root(&b->tree, root);
		check(checkpoint_init(&cp, "suanli/bench", b->tree.size, root, e.time_ns, &d), &d, "cp");
		check(checkpoint_sign(&cp, b->sk, &d), &d, "sign");
		check(checkpoint_format(&cp, note, sizeof(note), &len, &d), &d, "format");
		check(store_audit_checkpoint_put(b->s, b->tree.size, note, &d), &d, "cp put");
	}
}

/* Appends up to n entries, committing every batch; returns entries/s. */
static double append_phase(struct bench *b, uint64_t n, int batch, uint64_t *rng)
{
	struct sl_diag d;
	double t0 = bl_now_ms();
	for (uint64_t i = 0; i < n;) {
		check(store_begin(b->s, &d), &d, "begin");
		for (int k = 0; k < batch && i < n; k++, i++)
			append_one(b, rng);
		double c0 = bl_now_ms();
		check(store_commit(b->s, &d), &d, "commit");
		b->commit_ms += bl_now_ms() - c0;
	}
	return (double)n / ((bl_now_ms() - t0) / 1e3);
}

static enum sl_err verify_row(void *arg, const struct store_audit_row *r)
{
	struct audit_verifier *v = arg;
	struct audit_record rec = {r->seq, r->canonical, r->len, r->leaf_hash, true, r->time_ns, r->tenant, r->action};
	return audit_verifier_add(v, &rec, NULL) ? SL_ENOMEM : SL_OK;
}

static enum sl_err cp_row(void *arg, uint64_t size, const char *note)
{
	struct { struct checkpoint *v; size_t n; } *a = arg;
	struct sl_diag d;
	(void)size;
	return checkpoint_parse(note, strlen(note), &a->v[a->n++], &d);
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "bench/results/audit.md";
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : ENTRIES_DEFAULT;
	char dir[BL_PATH_MAX];
	struct bench b;
	struct sl_diag d;
	uint64_t rng = 42;
	uint8_t seed[CHECKPOINT_SEED_SIZE] = {7};
	if (sodium_init() < 0 || n < SINGLE + BATCH)
		bl_die("sodium_init failed, or fewer than %d entries asked", SINGLE + BATCH);
	memset(&b, 0, sizeof(b));
	merkle_frontier_init(&b.tree);
	checkpoint_keypair_from_seed(seed, b.pk, b.sk);
	bl_tmpdir(dir, sizeof(dir), "audit");
	sl_diag_clear(&d);
	check(store_open(dir, &b.s, &d), &d, "store_open");

	double single = append_phase(&b, SINGLE, 1, &rng);
	double single_commit = b.commit_ms / SINGLE;
	b.commit_ms = 0;
	double t0 = bl_now_ms();
	double batched = append_phase(&b, n - SINGLE, BATCH, &rng);
	double append_total_s = (bl_now_ms() - t0) / 1e3;
	double batched_cpu_us = (append_total_s * 1e3 - b.commit_ms) * 1e3 / (double)(n - SINGLE);
	fprintf(stderr, "appended %llu entries\n", (unsigned long long)n);

	/* Start-up: the frontier from the subtree cache. */
	struct merkle_source src = {src_leaf, src_subtree, &b};
	struct merkle_frontier f2;
	b.reads = 0;
	t0 = bl_now_ms();
	check(merkle_frontier_load(&f2, &src, n), NULL, "frontier_load");
	double load_ms = bl_now_ms() - t0;
	uint64_t load_reads = b.reads;
	uint8_t r1[MERKLE_HASH_SIZE], r2[MERKLE_HASH_SIZE];
	merkle_frontier_root(&f2, r1);
	merkle_frontier_root(&b.tree, r2);
	if (f2.size != n || memcmp(r1, r2, sizeof(r1)))
		bl_die("the reloaded frontier differs");

	/* Proofs at the full size, checked. */
	struct bl_samples inc = {0}, incv = {0}, con = {0};
	uint64_t inc_reads = 0, con_reads = 0;
	uint8_t root[MERKLE_HASH_SIZE];
	merkle_frontier_root(&b.tree, root);
	for (int i = 0; i < PROOFS; i++) {
		struct merkle_proof p;
		uint8_t leaf[MERKLE_HASH_SIZE];
		uint64_t idx = bl_rng(&rng) % n;
		b.reads = 0;
		t0 = bl_now_ms();
		check(merkle_inclusion_proof(&src, idx, n, &p, &d), &d, "inclusion");
		bl_add(&inc, bl_now_ms() - t0);
		inc_reads += b.reads;
		check(store_audit_leaf(b.s, idx + 1, leaf, &d), &d, "leaf");
		t0 = bl_now_ms();
		check(merkle_inclusion_verify(leaf, idx, n, &p, root, &d), &d, "inclusion verify");
		bl_add(&incv, bl_now_ms() - t0);
		uint64_t m = 1 + bl_rng(&rng) % n;
		b.reads = 0;
		t0 = bl_now_ms();
		check(merkle_consistency_proof(&src, m, n, &p, &d), &d, "consistency");
		uint8_t old[MERKLE_HASH_SIZE];
		check(merkle_range_root(&src, 0, m, old), NULL, "old root");
		bl_add(&con, bl_now_ms() - t0);
		con_reads += b.reads;
		check(merkle_consistency_verify(m, n, old, root, &p, &d), &d, "consistency verify");
	}

	/* Online verification: every entry and every checkpoint. */
	struct { struct checkpoint *v; size_t n; } cps = {calloc(n / CP_EVERY + 1, sizeof(struct checkpoint)), 0};
	check(store_audit_checkpoint_scan(b.s, cp_row, &cps, &d), &d, "checkpoints");
	struct audit_verify_config cfg = {b.pk, "suanli/bench", 1, cps.v, cps.n, NULL, 0, 0};
	struct audit_verifier v;
	struct audit_verify_report rep;
	t0 = bl_now_ms();
	check(audit_verifier_init(&v, &cfg, &d), &d, "verifier");
	check(store_audit_scan(b.s, NULL, verify_row, &v, &d), &d, "scan");
	enum sl_err verdict = audit_verifier_finish(&v, &rep);
	double verify_s = (bl_now_ms() - t0) / 1e3;
	audit_verifier_release(&v);
	free(cps.v);
	if (verdict)
		bl_die("verification failed: %s", rep.detail);
	store_close(b.s);

	char db[BL_PATH_MAX + 16];
	struct stat st;
	snprintf(db, sizeof(db), "%s/%s", dir, STORE_DB_FILE);
	double mib = stat(db, &st) == 0 ? (double)st.st_size / (1 << 20) : 0;
	char wal[sizeof(db) + 4];
	snprintf(wal, sizeof(wal), "%s-wal", db); /* normally gone or empty after the close's checkpoint */
	double wal_mib = stat(wal, &st) == 0 ? (double)st.st_size / (1 << 20) : 0;
	struct rusage ru;
	double rss_mib = getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024 : 0;
	bl_rmrf(dir);

	FILE *o = fopen(path, "w");
	if (!o)
		bl_die("cannot write %s: %s", path, strerror(errno));
	for (int pass = 0; pass < 2; pass++) {
		FILE *w = pass ? o : stdout;
		fprintf(w, "# bench_audit: the audit log at %llu entries\n\n", (unsigned long long)n);
		if (pass)
			bl_machine(w, argc, argv);
		fprintf(w, "\nAppends as the controller does them (encode, hash, insert, cache completed\n"
			   "subtrees, a signed checkpoint every %d), in the real SQLite store\n"
			   "(WAL, synchronous=FULL).\n\n", CP_EVERY);
		fprintf(w, "| measure | value |\n|---|---:|\n");
		fprintf(w, "| appends/s, one entry per commit (first %d) | %.0f |\n", SINGLE, single);
		fprintf(w, "| commit (fsync) per single append, ms | %.3f |\n", single_commit);
		fprintf(w, "| appends/s, %d entries per commit (to %llu) | %.0f |\n", BATCH,
			(unsigned long long)n, batched);
		fprintf(w, "| CPU per append outside commits, us | %.1f |\n", batched_cpu_us);
		fprintf(w, "| frontier rebuild at start, ms (store reads) | %.2f (%llu) |\n", load_ms,
			(unsigned long long)load_reads);
		fprintf(w, "| inclusion proof p50 / p99, ms | %.3f / %.3f |\n", bl_pct(&inc, 50), bl_pct(&inc, 99));
		fprintf(w, "| inclusion proof verify p50 / p99, us | %.1f / %.1f |\n", bl_pct(&incv, 50) * 1e3,
			bl_pct(&incv, 99) * 1e3);
		fprintf(w, "| inclusion proof store reads (mean) | %.1f |\n", (double)inc_reads / PROOFS);
		fprintf(w, "| consistency proof + old root p50 / p99, ms | %.3f / %.3f |\n", bl_pct(&con, 50),
			bl_pct(&con, 99));
		fprintf(w, "| consistency proof store reads (mean) | %.1f |\n", (double)con_reads / PROOFS);
		fprintf(w, "| full verification (every entry, %zu checkpoints), s | %.2f |\n",
			rep.checkpoints_verified, verify_s);
		fprintf(w, "| database size, MiB (WAL left after close) | %.0f (%.1f) |\n", mib, wal_mib);
		fprintf(w, "| peak RSS of the benchmark process, MiB | %.1f |\n", rss_mib);
		fprintf(w, "\nThe audit's cost on lease create+release throughput (the same daemon with\n"
			   "and without its audit hooks, A/B) is in bench/results/audit-api.md.\n");
	}
	fclose(o);
	free(inc.v);
	free(incv.v);
	free(con.v);
	return 0;
}

/* test_fuzz_inputs.c - deterministic mutation fuzzing of everything that reads
 * outside input: fleet files, `nvidia-smi topo -m` matrices, usage states and
 * placement requests.
 *
 * Seeds are the good inputs the project already has (tests/data, examples);
 * a fixed-seed xorshift generator flips, inserts, deletes and splices bytes and
 * swaps numbers for hostile ones, so every run feeds the same inputs and a
 * failure is reproducible by its iteration number. ASan and UBSan catch memory
 * and arithmetic errors; the asserts check the error contracts of the headers:
 * a failure always carries a message (fleet files: with a line), and a failed
 * call changes nothing. Iteration counts keep the whole file to a few seconds
 * under ASan; the mutators, not the counts, are what find bugs. */
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "catalog.h"
#include "fleet.h"
#include "place.h"
#include "place_json.h"
#include "topo.h"

#define FZ_MAX_SEEDS 32
#define FZ_MAX_TEXT (64u << 10) /* a mutated input never grows past this */

/* ---- randomness ---------------------------------------------------------- */

static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
	rng_state = s ? s : 0x9e3779b97f4a7c15u;
}

static uint64_t rng(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static size_t rng_below(size_t n)
{
	return n ? (size_t)(rng() % n) : 0;
}

/* SL_FUZZ_SCALE=N multiplies every iteration count and SL_FUZZ_SEED=S mixes S
 * into every seed, for longer hunts by hand; the test run uses neither. */
static int scaled(int iters)
{
	const char *s = getenv("SL_FUZZ_SCALE");
	long k = s ? strtol(s, NULL, 10) : 1;
	return k > 1 && k < 100000 ? (int)(iters * k) : iters;
}

static uint64_t seed_of(uint64_t base)
{
	const char *s = getenv("SL_FUZZ_SEED");
	return s ? base ^ (strtoull(s, NULL, 10) * 0x9e3779b97f4a7c15u) : base;
}

/* ---- seeds --------------------------------------------------------------- */

struct seed {
	char name[1024];
	char *text;
	size_t len;
};

struct seeds {
	struct seed s[FZ_MAX_SEEDS];
	int n;
};

static const char *env_dir(const char *var, const char *fallback)
{
	const char *v = getenv(var);
	return v && *v ? v : fallback;
}

static char *read_all(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	long n = ftell(fp);
	assert_true(n >= 0 && (size_t)n < FZ_MAX_TEXT);
	rewind(fp);
	char *buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct seed *)a)->name, ((const struct seed *)b)->name);
}

/* Adds every file of dir whose name ends in suffix, in name order. */
static void seeds_add_dir(struct seeds *ss, const char *dir, const char *suffix)
{
	DIR *dp = opendir(dir);
	assert_non_null(dp);
	int first = ss->n;
	for (struct dirent *de; (de = readdir(dp)) != NULL;) {
		size_t n = strlen(de->d_name), ns = strlen(suffix);
		if (n <= ns || strcmp(de->d_name + n - ns, suffix) != 0)
			continue;
		assert_true(ss->n < FZ_MAX_SEEDS);
		struct seed *s = &ss->s[ss->n++];
		int w = snprintf(s->name, sizeof(s->name), "%s/%s", dir, de->d_name);
		assert_true(w > 0 && (size_t)w < sizeof(s->name));
	}
	closedir(dp);
	qsort(ss->s + first, (size_t)(ss->n - first), sizeof(ss->s[0]), name_cmp);
	for (int i = first; i < ss->n; i++)
		ss->s[i].text = read_all(ss->s[i].name, &ss->s[i].len);
}

static void seeds_add_text(struct seeds *ss, const char *text)
{
	assert_true(ss->n < FZ_MAX_SEEDS);
	struct seed *s = &ss->s[ss->n++];
	snprintf(s->name, sizeof(s->name), "inline %d", ss->n);
	s->len = strlen(text);
	s->text = malloc(s->len + 1);
	assert_non_null(s->text);
	memcpy(s->text, text, s->len + 1);
}

static void seeds_free(struct seeds *ss)
{
	for (int i = 0; i < ss->n; i++)
		free(ss->s[i].text);
	ss->n = 0;
}

/* ---- mutation ------------------------------------------------------------ */

/* Bytes that mean something to YAML, JSON or the matrix parser. */
static const char fz_special[] = "[]{}:,-\"'\n\t #&*!|>%@`\\0123456789X\r";
/* Numbers past every bound the parsers keep. */
static const char *const fz_numbers[] = {
	"-1", "0", "65536", "2147483647", "2147483648", "-2147483649",
	"99999999999999999999", "9223372036854775807", "1e309", "256", "17", "100001",
	"0x10", "+5", "007",
};

struct buf {
	char b[FZ_MAX_TEXT + 1];
	size_t len;
};

static void buf_insert(struct buf *b, size_t at, const char *s, size_t n)
{
	if (b->len + n > FZ_MAX_TEXT)
		return;
	memmove(b->b + at + n, b->b + at, b->len - at);
	memcpy(b->b + at, s, n);
	b->len += n;
}

static void buf_delete(struct buf *b, size_t at, size_t n)
{
	if (at + n > b->len)
		n = b->len - at;
	memmove(b->b + at, b->b + at + n, b->len - at - n);
	b->len -= n;
}

/* Replaces the run of digits around at (if any) with a hostile number. */
static void mutate_number(struct buf *b, size_t at)
{
	size_t s = at, e = at;
	while (s < b->len && !(b->b[s] >= '0' && b->b[s] <= '9'))
		s++;
	if (s >= b->len)
		return;
	e = s;
	while (e < b->len && b->b[e] >= '0' && b->b[e] <= '9')
		e++;
	buf_delete(b, s, e - s);
	const char *num = fz_numbers[rng_below(sizeof(fz_numbers) / sizeof(fz_numbers[0]))];
	buf_insert(b, s, num, strlen(num));
}

static void mutate_once(struct buf *b, const struct seeds *ss)
{
	size_t at = rng_below(b->len + 1);
	switch (rng_below(8)) {
	case 0: /* flip one bit */
		if (b->len)
			b->b[rng_below(b->len)] ^= (char)(1u << rng_below(8));
		break;
	case 1: { /* insert a meaningful byte */
		char c = fz_special[rng_below(sizeof(fz_special) - 1)];
		buf_insert(b, at, &c, 1);
		break;
	}
	case 2: { /* insert any byte, NUL and non-UTF-8 included */
		char c = (char)rng_below(256);
		buf_insert(b, at, &c, 1);
		break;
	}
	case 3: /* delete a short run */
		if (at < b->len)
			buf_delete(b, at, 1 + rng_below(16));
		break;
	case 4: { /* duplicate a chunk of the input somewhere else */
		if (!b->len)
			break;
		size_t from = rng_below(b->len), n = 1 + rng_below(64);
		char tmp[64];
		if (from + n > b->len)
			n = b->len - from;
		memcpy(tmp, b->b + from, n);
		buf_insert(b, at, tmp, n);
		break;
	}
	case 5: { /* splice a chunk of another seed */
		const struct seed *o = &ss->s[rng_below((size_t)ss->n)];
		if (!o->len)
			break;
		size_t from = rng_below(o->len), n = 1 + rng_below(128);
		if (from + n > o->len)
			n = o->len - from;
		buf_insert(b, at, o->text + from, n);
		break;
	}
	case 6:
		mutate_number(b, at);
		break;
	default: /* truncate */
		b->len = at;
		break;
	}
}

/* A mutated copy of a random seed, NUL-terminated at b->len. */
static void mutate(struct buf *b, const struct seeds *ss)
{
	const struct seed *s = &ss->s[rng_below((size_t)ss->n)];
	memcpy(b->b, s->text, s->len);
	b->len = s->len;
	int n = 1 + (int)rng_below(4);
	for (int i = 0; i < n; i++)
		mutate_once(b, ss);
	b->b[b->len] = '\0';
}

/* ---- a placer's state, for "nothing changed" checks ---------------------- */

struct snap {
	int n;
	int64_t *v; /* per node: free mask, cpus, memory, usage per GPU */
};

#define SNAP_PER_NODE (3 + TOPO_MAX_GPUS)

static void snap_take(const struct placer *p, struct snap *s)
{
	const struct fleet *f = placer_fleet(p);
	s->n = f->nnodes;
	s->v = calloc((size_t)f->nnodes * SNAP_PER_NODE + 1, sizeof(*s->v));
	assert_non_null(s->v);
	for (int i = 0; i < f->nnodes; i++) {
		int64_t *v = &s->v[(size_t)i * SNAP_PER_NODE];
		v[0] = placer_free_mask(p, i);
		v[1] = placer_cpus_used(p, i);
		v[2] = placer_mem_used_mib(p, i);
		for (int g = 0; g < TOPO_MAX_GPUS; g++)
			v[3 + g] = placer_gpu_used_milli(p, i, g);
	}
}

static bool snap_same(const struct snap *a, const struct snap *b)
{
	return a->n == b->n &&
	       !memcmp(a->v, b->v, (size_t)a->n * SNAP_PER_NODE * sizeof(*a->v));
}

static void snap_free(struct snap *s)
{
	free(s->v);
	s->v = NULL;
}

/* ---- loading the example fleets ------------------------------------------ */

static void load_fleet_text(struct fleet *f, const char *text, size_t len, const char *name)
{
	struct sl_diag d;
	assert_int_equal(fleet_init(f), SL_OK);
	enum sl_err e = fleet_load_yaml(f, text, len, name, &d);
	if (e != SL_OK)
		fail_msg("%s:%d:%d: %s", name, d.line, d.col, d.msg);
}

static void load_fleet_file(struct fleet *f, const char *dir, const char *file)
{
	char path[4096];
	size_t len;
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		fail_msg("path too long: %s/%s", dir, file);
	char *text = read_all(path, &len);
	load_fleet_text(f, text, len, path);
	free(text);
}

/* ---- fleet files --------------------------------------------------------- */

/* A few requests on a fleet that loaded; every placement must be claimable. */
static void exercise_fleet(const struct fleet *f)
{
	static const int sizes[] = {1, 8, 16};
	struct placer *p;
	if (f->nnodes == 0 || f->nnodes > 2000)
		return;
	assert_int_equal(placer_new(f, &p), SL_OK);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct place_request r = {.gpus = sizes[i]};
		struct placement pl;
		struct sl_diag d;
		placement_init(&pl);
		enum sl_err e = placer_place(p, &r, &pl, &d);
		assert_true(e == SL_OK || e == SL_ENOSPACE || e == SL_EINVAL);
		if (e == SL_OK)
			assert_int_equal(placer_claim(p, &pl, &d), SL_OK);
		placement_release(&pl);
	}
	placer_free(p);
}

static void test_fuzz_fleet_yaml(void **state)
{
	(void)state;
	struct seeds ss = {0};
	static struct buf b;
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/fleet", env_dir("SL_TESTDATA", "tests/data"));
	seeds_add_dir(&ss, dir, ".yaml");
	seeds_add_dir(&ss, env_dir("SL_EXAMPLES", "examples"), ".yaml");
	assert_true(ss.n >= 5);
	rng_seed(seed_of(0x5eed0001));
	int ok = 0, bad = 0;
	for (int it = 0, n = scaled(3000); it < n; it++) {
		struct fleet f;
		struct sl_diag d;
		mutate(&b, &ss);
		assert_int_equal(fleet_init(&f), SL_OK);
		if (it % 16 == 15) {
			/* A caller without a diagnostic gets the same result, no crash. */
			enum sl_err e0 = fleet_load_yaml(&f, b.b, b.len, "fuzz.yaml", NULL);
			if (e0 != SL_OK)
				assert_int_equal(f.nnodes, 0);
			fleet_release(&f);
			assert_int_equal(fleet_init(&f), SL_OK);
		}
		enum sl_err e = fleet_load_yaml(&f, b.b, b.len, "fuzz.yaml", &d);
		if (e == SL_OK) {
			ok++;
			exercise_fleet(&f);
		} else {
			bad++;
			if (!d.msg[0] || d.line <= 0 || d.col < 0)
				fail_msg("iteration %d: error %s without a message or line "
					 "(line %d, col %d, msg '%s')",
					 it, sl_err_code(e), d.line, d.col, d.msg);
			assert_true(e == SL_EPARSE || e == SL_ELIMIT || e == SL_EINVAL ||
				    e == SL_EEXIST || e == SL_ENOTFOUND || e == SL_ECONFLICT);
			assert_string_equal(d.file, "fuzz.yaml");
			/* Nothing loaded: the fleet is as fleet_init() made it. */
			assert_int_equal(f.nnodes, 0);
			assert_int_equal(f.nsites, 0);
			assert_int_equal(f.ndomains, 0);
			assert_int_equal(f.nowners, 0);
			assert_int_equal(f.ntypes, topo_builtin_count());
		}
		fleet_release(&f);
	}
	/* The mutators must leave some inputs valid, or the success path is untested. */
	assert_true(ok > 50);
	assert_true(bad > 500);
	seeds_free(&ss);
}

/* ---- topology matrices --------------------------------------------------- */

struct matrix_seed {
	const struct gpu_model *gpu;
	int ngpus;
};

/* Finds the (model, GPU count) under which a seed matrix parses. */
static bool matrix_shape(const char *text, struct matrix_seed *ms)
{
	for (int n = 1; n <= TOPO_MAX_GPUS; n++)
		for (size_t i = 0; i < catalog_gpu_count(); i++) {
			struct node_type t;
			const struct gpu_model *m = catalog_gpu_at(i);
			if (topo_type_init(&t, "seed", m, n, 64, 512, NULL, NULL) != SL_OK)
				continue;
			if (topo_parse_matrix(&t, text, NULL) == SL_OK) {
				ms->gpu = m;
				ms->ngpus = n;
				return true;
			}
		}
	return false;
}

static void test_fuzz_topo_matrix(void **state)
{
	(void)state;
	struct seeds ss = {0};
	static struct buf b;
	struct matrix_seed shape[FZ_MAX_SEEDS];
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/topo", env_dir("SL_TESTDATA", "tests/data"));
	seeds_add_dir(&ss, dir, ".txt");
	assert_true(ss.n >= 3);
	for (int i = 0; i < ss.n; i++)
		if (!matrix_shape(ss.s[i].text, &shape[i]))
			fail_msg("seed %s parses under no model and GPU count", ss.s[i].name);
	rng_seed(seed_of(0x5eed0002));
	int ok = 0;
	char *fmt = malloc(FZ_MAX_TEXT);
	assert_non_null(fmt);
	for (int it = 0, n = scaled(5000); it < n; it++) {
		/* Mutate against the shape of a random seed. */
		mutate(&b, &ss);
		const struct matrix_seed *ms = &shape[rng_below((size_t)ss.n)];
		struct node_type t, before;
		struct sl_diag d;
		sl_diag_clear(&d);
		assert_int_equal(topo_type_init(&t, "fz", ms->gpu, ms->ngpus, 64, 512, NULL, NULL),
				 SL_OK);
		before = t;
		if (it % 16 == 15) {
			struct node_type t0 = before;
			(void)!topo_parse_matrix(&t0, b.b, NULL);
		}
		enum sl_err e = topo_parse_matrix(&t, b.b, &d);
		if (e != SL_OK) {
			if (!d.msg[0])
				fail_msg("iteration %d: error %s without a message", it,
					 sl_err_code(e));
			assert_true(e == SL_EPARSE || e == SL_ELIMIT || e == SL_EINVAL);
			/* "a failing parse leaves the caller's type unchanged" */
			assert_memory_equal(&t, &before, sizeof(t));
			continue;
		}
		ok++;
		assert_int_equal(topo_validate(&t, NULL), SL_OK);
		/* What the formatter writes, the parser reads back. */
		size_t need = topo_format_matrix(&t, fmt, FZ_MAX_TEXT);
		assert_true(need < FZ_MAX_TEXT);
		struct node_type again = before;
		if (topo_parse_matrix(&again, fmt, &d) != SL_OK)
			fail_msg("iteration %d: formatted matrix does not parse: %d:%d %s\n%s", it,
				 d.line, d.col, d.msg, fmt);
		for (int x = 0; x < t.ngpus; x++)
			for (int y = 0; y < t.ngpus; y++)
				assert_int_equal(again.link[x][y].kind, t.link[x][y].kind);
	}
	free(fmt);
	assert_true(ok > 50);
	seeds_free(&ss);
}

/* ---- usage states -------------------------------------------------------- */

static void test_fuzz_state_load(void **state)
{
	(void)state;
	struct seeds ss = {0};
	static struct buf b;
	struct fleet f;
	char dir[512];
	snprintf(dir, sizeof(dir), "%s", env_dir("SL_EXAMPLES", "examples"));
	seeds_add_dir(&ss, dir, ".json");
	seeds_add_text(&ss, "[{\"node\": \"fza-h100-002\", \"gpus\": [7]},"
			    " {\"node\": \"fza-l40s-01\", \"gpu\": 3, \"milli\": 999}]");
	seeds_add_text(&ss, "[{\"node\": \"fza-gb200-r01-t01\", \"gpus\": [0, 1, 2, 3]},"
			    " {\"node\": \"fza-gb200-r01-t02\", \"gpus\": [3]}]");
	seeds_add_text(&ss, "[]");
	seeds_add_text(&ss, "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{\"node\": 1}]]]]]]]]]]]]]]]]]]]");
	load_fleet_file(&f, dir, "demo-fleet.yaml");
	struct placer *p;
	assert_int_equal(placer_new(&f, &p), SL_OK);
	rng_seed(seed_of(0x5eed0003));
	int ok = 0;
	for (int it = 0, n = scaled(4000); it < n; it++) {
		struct snap before, after;
		struct sl_diag d;
		sl_diag_clear(&d);
		mutate(&b, &ss);
		snap_take(p, &before);
		enum sl_err e = place_state_load(p, b.b, b.len, it % 16 == 15 ? NULL : &d);
		snap_take(p, &after);
		if (e == SL_OK) {
			ok++;
			/* Start the next iteration from an empty fleet again. */
			placer_free(p);
			assert_int_equal(placer_new(&f, &p), SL_OK);
		} else {
			if (!d.msg[0] && it % 16 != 15)
				fail_msg("iteration %d: error %s without a message", it,
					 sl_err_code(e));
			/* "on error nothing stays claimed" */
			if (!snap_same(&before, &after))
				fail_msg("iteration %d: failed load (%s) changed the state: %s", it,
					 sl_err_code(e), b.b);
		}
		snap_free(&before);
		snap_free(&after);
	}
	assert_true(ok > 20);
	placer_free(p);
	fleet_release(&f);
	seeds_free(&ss);
}

/* ---- requests ------------------------------------------------------------ */

static int pick_int(const int *v, size_t n)
{
	return v[rng_below(n)];
}

#define PICK(arr) pick_int(arr, sizeof(arr) / sizeof(arr[0]))

/* A name of kind 0 model, 1 region, 2 site, 3 tenant; bogus ones when hostile. */
static const char *pick_name(const struct fleet *f, int kind, bool hostile)
{
	static const char *const bogus[] = {"", "nowhere", "h100", "acme", "x-y.z", NULL};
	if (hostile && rng_below(3) == 0)
		return bogus[rng_below(sizeof(bogus) / sizeof(bogus[0]))];
	switch (kind) {
	case 0:
		return catalog_gpu_at(rng_below(catalog_gpu_count()))->name;
	case 1:
		return f->nsites ? f->sites[rng_below((size_t)f->nsites)].region : "r";
	case 2:
		return f->nsites ? f->sites[rng_below((size_t)f->nsites)].name : "s";
	default:
		if (rng_below(3) == 0)
			return "pool-a"; /* a dynamic pool's tenant (placer_set_pool) */
		return f->nowners ? f->owners[rng_below((size_t)f->nowners)] : "t";
	}
}

/* Mostly plausible requests, so that state builds up and the success paths
 * run; one in three has one field (sometimes two) set hostile: negative, huge
 * or contradictory, so each bad value travels as far as the placer lets it. */
static void random_request(const struct fleet *f, struct place_request *r)
{
	static const int gpus[] = {1, 1, 1, 2, 2, 3, 4, 4, 8, 8, 12, 16, 16, 24, 32, 72};
	static const int bad_gpus[] = {-1, 0, 76, 100, 100000, 100001, INT_MAX, INT_MIN};
	static const int milli[] = {1, 250, 500, 999};
	static const int bad_milli[] = {0, 1000, -5, INT_MAX, 250};
	static const int per_node[] = {1, 2, 3, 4, 8, 16};
	static const int bad_per_node[] = {0, 17, -1, INT_MAX};
	static const int small[] = {1, 40, 80, 141, 192, 900};
	static const int bad_small[] = {0, 100000, -1, INT_MAX, INT_MIN};
	static const int64_t mem[] = {1, 1024, 1 << 20, 1 << 30};
	static const int64_t bad_mem[] = {INT64_MAX, -1, INT64_MAX / 2, INT64_MIN};
	int bad1 = rng_below(3) == 0 ? (int)rng_below(10) : -1;
	int bad2 = bad1 >= 0 && rng_below(3) == 0 ? (int)rng_below(10) : -1;
#define BAD(i) (bad1 == (i) || bad2 == (i))
	memset(r, 0, sizeof(*r));
	r->gpus = BAD(0) ? PICK(bad_gpus) : PICK(gpus);
	if (rng_below(5) == 0 || BAD(1)) {
		r->gpu_milli = BAD(1) ? PICK(bad_milli) : PICK(milli);
		if (!BAD(0))
			r->gpus = 0;
	}
	if (rng_below(4) == 0 || BAD(2))
		r->per_node = BAD(2) ? PICK(bad_per_node) : PICK(per_node);
	r->nmodels = BAD(3) ? (int)rng_below(12) - 1 : (int)rng_below(3);
	for (int i = 0; i < PLACE_MAX_MODELS; i++)
		r->models[i] = pick_name(f, 0, BAD(3));
	if (rng_below(4) == 0 || BAD(4))
		r->min_mem_gib = BAD(4) ? PICK(bad_small) : PICK(small);
	if (rng_below(4) == 0 || BAD(5))
		r->min_bw_gbps = BAD(5) ? PICK(bad_small) : PICK(small);
	r->region = rng_below(4) && !BAD(6) ? NULL : pick_name(f, 1, BAD(6));
	r->site = rng_below(5) && !BAD(6) ? NULL : pick_name(f, 2, BAD(6));
	r->tenant = rng_below(3) && !BAD(7) ? NULL : pick_name(f, 3, BAD(7));
	r->pool_owned = rng_below(8) == 0 || BAD(7);
	r->exclusive = rng_below(8) == 0;
	if (rng_below(4) == 0 || BAD(8))
		r->cpus = BAD(8) ? PICK(bad_small) : PICK(small);
	if (rng_below(4) == 0 || BAD(9))
		r->mem_mib = BAD(9) ? bad_mem[rng_below(4)] : mem[rng_below(4)];
#undef BAD
}

/* What a successful placement must look like. */
static void check_placement(const struct fleet *f, const struct place_request *r,
			    const struct placement *pl, int it)
{
	int total = 0;
	if (pl->npicks < 1)
		fail_msg("iteration %d: SL_OK with no picks", it);
	for (int i = 0; i < pl->npicks; i++) {
		const struct place_pick *k = &pl->picks[i];
		assert_true(k->node >= 0 && k->node < f->nnodes);
		const struct node_type *t = fleet_node_type(f, k->node);
		if (t->ngpus < 32)
			assert_int_equal(k->gpus >> t->ngpus, 0);
		total += __builtin_popcount(k->gpus);
		for (int j = 0; j < i; j++)
			if (pl->picks[j].node == k->node)
				fail_msg("iteration %d: node %s picked twice", it,
					 f->nodes[k->node].name);
	}
	if (r->gpu_milli > 0) {
		assert_int_equal(pl->npicks, 1);
		assert_int_equal(pl->picks[0].milli, r->gpu_milli);
	} else if (!r->exclusive && total != r->gpus) {
		fail_msg("iteration %d: asked for %d GPUs, placed %d", it, r->gpus, total);
	} else if (r->exclusive && total < r->gpus) {
		fail_msg("iteration %d: exclusive request for %d GPUs placed %d", it, r->gpus,
			 total);
	}
}

struct kept {
	struct placement pl[64];
	int n;
};

static void release_one(struct placer *p, struct kept *k, int i)
{
	struct sl_diag d;
	if (placer_release(p, &k->pl[i], &d) != SL_OK)
		fail_msg("release of a claimed placement failed: %s", d.msg);
	placement_release(&k->pl[i]);
	k->pl[i] = k->pl[--k->n];
}

/* Runs iters random requests, claims and releases on f (which it releases). */
static void fuzz_requests_on(struct fleet *fl, uint64_t seed, int iters)
{
	struct fleet f = *fl;
	struct placer *p;
	struct kept k = {.n = 0};
	iters = scaled(iters);
	assert_int_equal(placer_new(&f, &p), SL_OK);
	struct snap empty;
	snap_take(p, &empty);
	int min_gpus = TOPO_MAX_GPUS;
	for (int i = 0; i < f.nnodes; i++)
		if (fleet_node_type(&f, i)->ngpus < min_gpus)
			min_gpus = fleet_node_type(&f, i)->ngpus;
	rng_seed(seed_of(seed));
	int placed = 0, refused = 0, invalid = 0;
	for (int it = 0; it < iters; it++) {
		struct place_request r;
		struct placement pl;
		struct sl_diag d;
		random_request(&f, &r);
		placement_init(&pl);
		sl_diag_clear(&d);
		bool nod = it % 16 == 15; /* some calls without a diagnostic */
		enum sl_err e = placer_place(p, &r, &pl, nod ? NULL : &d);
		switch (e) {
		case SL_OK: {
			placed++;
			check_placement(&f, &r, &pl, it);
			struct snap before, after;
			snap_take(p, &before);
			if (placer_claim(p, &pl, &d) != SL_OK)
				fail_msg("iteration %d: placer_claim refused what placer_place "
					 "chose: %s", it, d.msg);
			/* Claiming whole GPUs again must conflict and change nothing
			 * (a share may fit twice on one GPU). */
			snap_take(p, &after);
			if (r.gpu_milli == 0) {
				sl_diag_clear(&d);
				assert_int_equal(placer_claim(p, &pl, &d), SL_ECONFLICT);
				assert_true(d.msg[0] != '\0');
				snap_free(&before);
				snap_take(p, &before);
				assert_true(snap_same(&before, &after));
			}
			snap_free(&before);
			snap_free(&after);
			if (k.n < 64 && rng_below(3)) {
				k.pl[k.n++] = pl;
				placement_init(&pl);
			} else {
				assert_int_equal(placer_release(p, &pl, &d), SL_OK);
			}
			break;
		}
		case SL_ENOSPACE:
			refused++;
			assert_int_equal(pl.npicks, 0);
			assert_true(pl.failed != PLACE_C_NONE);
			if (!pl.why[0])
				fail_msg("iteration %d: refusal without a reason", it);
			/* A share, or no more GPUs than the smallest node has, is never
			 * a gang: "gang" would mean the explanation saw a node that the
			 * index did not. */
			if (r.per_node == 0 &&
			    (r.gpu_milli > 0 || (r.gpus >= 1 && r.gpus <= min_gpus)) &&
			    pl.failed == PLACE_C_GANG)
				fail_msg("iteration %d: single-node refusal blamed on the gang: %s",
					 it, pl.why);
			break;
		case SL_EINVAL:
			invalid++;
			if (!d.msg[0] && !nod)
				fail_msg("iteration %d: SL_EINVAL without a message", it);
			assert_int_equal(pl.npicks, 0);
			break;
		default:
			fail_msg("iteration %d: placer_place returned %s", it, sl_err_code(e));
		}
		placement_release(&pl);
		/* Release more often after a refusal, so small fleets do not fill up. */
		if (k.n > 0 && rng_below(e == SL_ENOSPACE ? 2 : 4) == 0)
			release_one(p, &k, (int)rng_below((size_t)k.n));
		if (rng_below(50) == 0) {
			int node = (int)rng_below((size_t)f.nnodes);
			placer_set_node_usable(p, node, !placer_node_usable(p, node));
		}
		if (rng_below(50) == 0)
			placer_set_gpu_usable(p, (int)rng_below((size_t)f.nnodes),
					      (int)rng_below(TOPO_MAX_GPUS + 1), rng_below(2));
		if (rng_below(100) == 0) {
			/* Lend a few nodes to a pool, or give them back; work on them stays. */
			int nodes[4], n = 1 + (int)rng_below(4);
			for (int i = 0; i < n; i++)
				nodes[i] = (int)rng_below((size_t)f.nnodes);
			sl_diag_clear(&d);
			assert_int_equal(placer_set_pool(p, nodes, n,
							 rng_below(2) ? "pool-a" : NULL, &d),
					 SL_OK);
		}
	}
	while (k.n > 0)
		release_one(p, &k, k.n - 1);
	for (int i = 0; i < f.nnodes; i++) {
		assert_int_equal(placer_set_node_pool(p, i, NULL, NULL), SL_OK);
		placer_set_node_usable(p, i, true);
		for (int g = 0; g < TOPO_MAX_GPUS; g++)
			placer_set_gpu_usable(p, i, g, true);
	}
	/* Everything claimed was released: the fleet is empty again. */
	struct snap end;
	snap_take(p, &end);
	assert_true(snap_same(&empty, &end));
	snap_free(&end);
	snap_free(&empty);
	if (placed < iters / 50 || refused == 0 || invalid == 0)
		fail_msg("placed %d, refused %d, invalid %d of %d: the generator misses a path",
			 placed, refused, invalid, iters);
	placer_free(p);
	fleet_release(&f);
}

static void test_fuzz_requests(void **state)
{
	(void)state;
	const char *ex = env_dir("SL_EXAMPLES", "examples");
	struct fleet f;
	load_fleet_file(&f, ex, "demo-fleet.yaml");
	fuzz_requests_on(&f, 0x5eed0004, 5000);
	load_fleet_file(&f, ex, "fleet-custom-types.yaml");
	fuzz_requests_on(&f, 0x5eed0005, 2000);
}

/* A 16-GPU custom type: its groups are indexed by distinct free masks rather
 * than buckets, and ptab answers lazily. */
static void test_fuzz_requests_large_type(void **state)
{
	(void)state;
	static const char text[] =
		"node_types:\n"
		"  - {name: big16, gpu: h100-sxm, gpus: 16, cpus: 224, memory_gib: 2048,\n"
		"     numa: [0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1],\n"
		"     links: [{gpus: [0, 1], kind: nvlink, count: 6},\n"
		"             {gpus: [8, 9], kind: nvlink, count: 6}]}\n"
		"sites:\n"
		"  - name: s1\n"
		"    region: r1\n"
		"    fabrics:\n"
		"      - name: f1\n"
		"        kind: roce\n"
		"        gbps: 200\n"
		"        leaves:\n"
		"          - {name: l1, nodes: [{range: \"b[01-06]\", type: big16}]}\n"
		"          - {name: l2, nodes: [{range: \"c[01-06]\", type: big16, shareable: true}]}\n"
		"owners:\n"
		"  - {tenant: acme, nodes: \"c06\"}\n";
	struct fleet f;
	load_fleet_text(&f, text, sizeof(text) - 1, "big16.yaml");
	fuzz_requests_on(&f, 0x5eed0006, 1500);
}

/* Odd shapes: 1, 2, 5 and 12 GPUs, strict partitions that do not split evenly,
 * NVLink domains of their own custom GB200 type. */
static void test_fuzz_requests_odd_types(void **state)
{
	(void)state;
	static const char text[] =
		"node_types:\n"
		"  - {name: one1, gpu: l40s, gpus: 1, cpus: 16, memory_gib: 128}\n"
		"  - {name: two2, gpu: h100-nvl, gpus: 2, cpus: 32, memory_gib: 256,\n"
		"     links: [{gpus: [0, 1], kind: nvlink, count: 12}]}\n"
		"  - {name: five5, gpu: a100-sxm, gpus: 5, cpus: 40, memory_gib: 512,\n"
		"     numa: [0, 0, 1, 1, 1], groups: [[0, 1, 2], [3, 4]], groups_strict: true,\n"
		"     links: [{gpus: [0, 1], kind: nvlink, count: 4}, {gpus: [3, 4], kind: nvswitch}]}\n"
		"  - {name: twelve12, gpu: h100-sxm, gpus: 12, cpus: 96, memory_gib: 1024,\n"
		"     groups: [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]], groups_strict: true,\n"
		"     nics: [{name: m0, gbps: 400, gpus: [0, 6]}, {name: m1, gbps: 400, gpus: [3]}]}\n"
		"  - {name: tray2, gpu: gb200, gpus: 2, cpus: 72, memory_gib: 480}\n"
		"sites:\n"
		"  - name: s1\n"
		"    region: r1\n"
		"    fabrics:\n"
		"      - name: f1\n"
		"        kind: infiniband\n"
		"        gbps: 400\n"
		"        leaves:\n"
		"          - {name: l1, nodes: [{range: \"o[1-4]\", type: one1, shareable: true},\n"
		"                               {range: \"w[1-4]\", type: two2}]}\n"
		"          - {name: l2, nodes: [{range: \"v[1-3]\", type: five5},\n"
		"                               {range: \"x[1-3]\", type: twelve12, price_hint: 9}]}\n"
		"          - {name: l3, nodes: [{range: \"g[01-12]\", type: tray2}]}\n"
		"  - name: s2\n"
		"    region: r2\n"
		"    fabrics:\n"
		"      - {name: f2, kind: roce, gbps: 100, leaves: [{name: l1, nodes: [\n"
		"          {range: \"p[1-3]\", type: one1}, {range: \"q[1-2]\", type: twelve12}]}]}\n"
		"nvlink_domains:\n"
		"  - {name: d1, nodes: \"g[01-08]\"}\n"
		"  - {name: d2, nodes: [g09, g10]}\n"
		"owners:\n"
		"  - {tenant: acme, nodes: [o4, \"x3\"]}\n";
	struct fleet f;
	load_fleet_text(&f, text, sizeof(text) - 1, "odd.yaml");
	fuzz_requests_on(&f, 0x5eed0007, 2500);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz_fleet_yaml),
		cmocka_unit_test(test_fuzz_topo_matrix),
		cmocka_unit_test(test_fuzz_state_load),
		cmocka_unit_test(test_fuzz_requests),
		cmocka_unit_test(test_fuzz_requests_large_type),
		cmocka_unit_test(test_fuzz_requests_odd_types),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

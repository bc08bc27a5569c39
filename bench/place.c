/* bench/place.c - placement decision times on a 10,000-node fleet.
 *
 * Generates in memory (fixed seed) a fleet of 10,000 8-GPU nodes (80,000
 * GPUs) of mixed built-in types over 4 sites in 2 regions, with leaves of 32
 * nodes, once through the fleet builder and once as fleet-file text read by
 * fleet_load_yaml(). A fixed-seed stream of requests (shares, 1/2/4/8 GPUs,
 * gangs of 2..64 nodes) is then placed and claimed while random releases keep
 * the fleet 70..85% busy. Decision time is placer_place() alone, on the
 * monotonic clock; claims and releases are timed separately. Figures are
 * printed and written to bench/results/place.md (or argv[1]); nothing is
 * asserted about them.
 *
 * With policy "frag" the placer gets the workload a controller would learn
 * from the same stream (place_wmodel.h fed 1,024 requests of another seed),
 * so single-node requests and shares go through the fragmentation-aware
 * policy (place_frag.h); gangs keep their own path either way.
 *
 * Every decision (warm-up included) is folded into a digest of the request
 * class, the answer and the picks (or the refusal's constraint and sentence): two builds that print the same digest for
 * the same policy made the same decisions on the whole stream. Each request
 * class is decided through its own non-inlined function (decide_c*), so a
 * callgrind run attributes instructions per class:
 *   valgrind --tool=callgrind bench_place OUT 20000 frag
 *   callgrind_annotate --inclusive=yes callgrind.out.* | grep decide_c
 * (the report gives each class's count of calls, warm-up included).
 *
 * Usage: bench_place [results.md] [requests] [bestfit|frag]  */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "fleet.h"
#include "place.h"
#include "place_frag.h"
#include "place_wmodel.h"

#define B_SITES 4
#define B_NODES_PER_SITE 2500
#define B_LEAF 32
#define B_REQUESTS 200000
#define B_WARMUP_BUSY 0.70
#define B_HIGH_BUSY 0.85
#define B_LOW_BUSY 0.75
#define B_MAX_SAMPLES (1 << 28) /* samples of one series */

static const char *const site_names[B_SITES] = {"fza", "fzb", "ulq", "gya"};
static const char *const site_regions[B_SITES] = {"cn-east", "cn-east", "cn-north",
						 "cn-north"};
static const struct {
	const char *type, *model;
	int price;
	bool shareable;
} btypes[] = {
	{"hgx-h100-8", "h100-sxm", 1800, false}, {"hgx-h200-8", "h200-sxm", 2400, false},
	{"hgx-a100-8", "a100-sxm", 1000, false}, {"hgx-h800-8", "h800-sxm", 1500, false},
	{"hgx-b200-8", "b200", 3500, false},     {"pcie-l40s-8", "l40s", 450, true},
	{"pcie-h100nvl-8", "h100-nvl", 1400, false}, {"atlas-800t-a2", "ascend-910b", 700, false},
};
#define B_NTYPES ((int)(sizeof(btypes) / sizeof(btypes[0])))

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int rng_below(uint64_t *s, int n)
{
	return (int)(rng_next(s) % (uint64_t)n);
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- the fleet ----------------------------------------------------------- */

/* Leaf l of site s holds nodes [0, leaf_size) of type leaf_type[s][l]. */
struct spec {
	int nleaves;
	int leaf_type[B_SITES][B_NODES_PER_SITE / B_LEAF + 2];
};

static int leaf_size(const struct spec *sp, int l)
{
	int left = B_NODES_PER_SITE - l * B_LEAF;
	(void)sp;
	return left < B_LEAF ? left : B_LEAF;
}

static void spec_make(struct spec *sp)
{
	uint64_t seed = 20261130;
	sp->nleaves = (B_NODES_PER_SITE + B_LEAF - 1) / B_LEAF;
	for (int s = 0; s < B_SITES; s++)
		for (int l = 0; l < sp->nleaves; l++)
			sp->leaf_type[s][l] = rng_below(&seed, B_NTYPES);
}

static int die(const char *what, enum sl_err e, const struct sl_diag *d)
{
	fprintf(stderr, "bench_place: %s: %s: %s\n", what, sl_err_code(e), d ? d->msg : "");
	exit(1);
}

static void build_fleet(const struct spec *sp, struct fleet *f)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	enum sl_err e = fleet_init(f);
	if (e != SL_OK)
		die("fleet_init", e, NULL);
	for (int s = 0; s < B_SITES; s++) {
		int si, fi;
		char name[64];
		if ((e = fleet_add_site(f, site_names[s], site_regions[s], &si, &d)) != SL_OK)
			die("site", e, &d);
		snprintf(name, sizeof(name), "%s-ib", site_names[s]);
		if ((e = fleet_add_fabric(f, si, name, FABRIC_INFINIBAND, 400, &fi, &d)) != SL_OK)
			die("fabric", e, &d);
		for (int l = 0; l < sp->nleaves; l++) {
			int li, bt = sp->leaf_type[s][l];
			int type = fleet_find_type(f, btypes[bt].type);
			snprintf(name, sizeof(name), "%s-leaf-%03d", site_names[s], l + 1);
			if ((e = fleet_add_leaf(f, fi, name, &li, &d)) != SL_OK)
				die("leaf", e, &d);
			for (int n = 0; n < leaf_size(sp, l); n++) {
				int ni;
				snprintf(name, sizeof(name), "%s-l%03d-n%02d", site_names[s], l + 1,
					 n + 1);
				if ((e = fleet_add_node(f, li, name, type, &ni, &d)) != SL_OK)
					die("node", e, &d);
				f->nodes[ni].price_hint = btypes[bt].price;
				f->nodes[ni].shareable = btypes[bt].shareable;
			}
		}
	}
}

static void buf_printf(struct sl_buf *b, const char *fmt, ...) SL_PRINTF(2, 3);
static void buf_printf(struct sl_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	enum sl_err e = sl_buf_vaddf(b, fmt, ap);
	va_end(ap);
	if (e) {
		fprintf(stderr, "bench_place: the fleet file: %s\n", sl_err_message(e));
		exit(1);
	}
}

/* One range line per leaf (how fleets are written), or one line per node. */
static void yaml_fleet(const struct spec *sp, struct sl_buf *b, bool per_node)
{
	buf_printf(b, "sites:\n");
	for (int s = 0; s < B_SITES; s++) {
		buf_printf(b, "  - name: %s\n    region: %s\n    fabrics:\n", site_names[s],
			   site_regions[s]);
		buf_printf(b, "      - name: %s-ib\n        kind: infiniband\n        gbps: 400\n"
			      "        leaves:\n", site_names[s]);
		for (int l = 0; l < sp->nleaves; l++) {
			int bt = sp->leaf_type[s][l];
			buf_printf(b, "          - name: %s-leaf-%03d\n            nodes:\n",
				   site_names[s], l + 1);
			const char *share = btypes[bt].shareable ? ", shareable: true" : "";
			if (!per_node) {
				buf_printf(b, "              - {range: \"%s-l%03d-n[01-%02d]\", "
					      "type: %s, price_hint: %d%s}\n", site_names[s], l + 1,
					   leaf_size(sp, l), btypes[bt].type, btypes[bt].price, share);
				continue;
			}
			for (int n = 0; n < leaf_size(sp, l); n++)
				buf_printf(b, "              - {name: %s-l%03d-n%02d, type: %s, "
					      "price_hint: %d%s}\n", site_names[s], l + 1, n + 1,
					   btypes[bt].type, btypes[bt].price, share);
		}
	}
}

/* ---- statistics ---------------------------------------------------------- */

struct series {
	double *v;
	int n, cap;
	int refused;
};

static void add(struct series *s, double ns)
{
	if (sl_grow(&s->v, &s->cap, s->n + 1, B_MAX_SAMPLES))
		exit(1);
	s->v[s->n++] = ns;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(const struct series *s, double q)
{
	if (!s->n)
		return 0;
	int i = (int)(q * (s->n - 1) + 0.5);
	return s->v[i];
}

/* ---- the run ------------------------------------------------------------- */

enum cls { C_SHARE, C_1, C_2, C_4, C_8, C_G2_8, C_G16_32, C_G64, C__N };
static const char *const cls_names[C__N] = {
	"share (250-500 milli)", "1 GPU", "2 GPUs", "4 GPUs", "8 GPUs",
	"gang 2-8 nodes x 8", "gang 16-32 nodes x 8", "gang 64 nodes x 8"};

struct held {
	struct placement pl;
	double gpus;
};

static void make_request(uint64_t *seed, struct place_request *r, enum cls *c)
{
	memset(r, 0, sizeof(*r));
	int x = rng_below(seed, 100);
	static const int gang_small[] = {2, 4, 8};
	static const int gang_mid[] = {16, 32};
	if (x < 5) {
		*c = C_SHARE;
		r->gpu_milli = 250 * (1 + rng_below(seed, 2));
	} else if (x < 35) {
		*c = C_1;
		r->gpus = 1;
	} else if (x < 55) {
		*c = C_2;
		r->gpus = 2;
	} else if (x < 72) {
		*c = C_4;
		r->gpus = 4;
	} else if (x < 90) {
		*c = C_8;
		r->gpus = 8;
	} else if (x < 96) {
		*c = C_G2_8;
		r->gpus = 8 * gang_small[rng_below(seed, 3)];
	} else if (x < 99) {
		*c = C_G16_32;
		r->gpus = 8 * gang_mid[rng_below(seed, 2)];
	} else {
		*c = C_G64;
		r->gpus = 8 * 64;
	}
	if (*c != C_SHARE && rng_below(seed, 10) < 4) {
		r->nmodels = 1;
		r->models[0] = btypes[rng_below(seed, B_NTYPES)].model;
	}
	if (rng_below(seed, 10) < 2)
		r->region = site_regions[rng_below(seed, B_SITES)];
}

static double pl_gpus(const struct placement *pl)
{
	double g = 0;
	for (int i = 0; i < pl->npicks; i++)
		g += pl->picks[i].gpu >= 0 ? pl->picks[i].milli / 1000.0
					   : __builtin_popcount(pl->picks[i].gpus);
	return g;
}

struct result {
	uint64_t digest;  /* FNV-1a of every decision */
	int calls[C__N];  /* decisions per class, warm-up included */
	double load0[3], load1[3];
	double build_ms, yaml_ms[2], yaml_mib[2], placer_ms, ptab_ms;
	int nodes, gpus, requests;
	double busy_min, busy_max, busy_avg;
	struct series cls[C__N], refused[C__N], claim, release;
	long rss_kib;
};

static bool use_frag;

/* One non-inlined, non-merged decision function per class (see the top). */
#define B_DECIDE(n)                                                                   \
	__attribute__((noinline, noipa)) static enum sl_err decide_c##n(                \
		struct placer *p, const struct place_request *r, struct placement *pl,  \
		struct sl_diag *d)                                                       \
	{                                                                                \
		return placer_place(p, r, pl, d);                                        \
	}
B_DECIDE(0_share)
B_DECIDE(1_gpu1)
B_DECIDE(2_gpu2)
B_DECIDE(3_gpu4)
B_DECIDE(4_gpu8)
B_DECIDE(5_gang2_8)
B_DECIDE(6_gang16_32)
B_DECIDE(7_gang64)
static enum sl_err (*const decide[C__N])(struct placer *, const struct place_request *,
					   struct placement *, struct sl_diag *) = {
	decide_c0_share, decide_c1_gpu1, decide_c2_gpu2, decide_c3_gpu4,
	decide_c4_gpu8, decide_c5_gang2_8, decide_c6_gang16_32, decide_c7_gang64};

static void fnv(uint64_t *h, int64_t v)
{
	for (int i = 0; i < 8; i++) {
		*h ^= (uint64_t)(v >> (8 * i)) & 0xff;
		*h *= 1099511628211ULL;
	}
}

static void digest(uint64_t *h, enum cls c, enum sl_err e, const struct placement *pl)
{
	fnv(h, c);
	fnv(h, e);
	if (e == SL_ENOSPACE) { /* the refusal's explanation too */
		fnv(h, pl->failed);
		for (const char *w = pl->why; *w; w++)
			fnv(h, *w);
	}
	if (e != SL_OK)
		return;
	fnv(h, pl->npicks);
	for (int i = 0; i < pl->npicks; i++) {
		const struct place_pick *k = &pl->picks[i];
		fnv(h, k->node);
		fnv(h, (int64_t)k->gpus);
		fnv(h, k->gpu);
		fnv(h, k->milli);
		fnv(h, k->cpus);
		fnv(h, k->mem_mib);
	}
	const struct place_score *sc = &pl->score; /* the frag explanation */
	fnv(h, sc->frag);
	fnv(h, sc->bestfit_same);
	fnv(h, sc->frag_milli);
	fnv(h, sc->bestfit_milli);
}

static void run(struct result *res, int requests)
{
	struct spec sp;
	spec_make(&sp);
	res->digest = 14695981039346656037ULL;
	if (getloadavg(res->load0, 3) != 3)
		res->load0[0] = res->load0[1] = res->load0[2] = -1;
	struct fleet f, fy;
	double t0 = now_ns();
	build_fleet(&sp, &f);
	res->build_ms = (now_ns() - t0) / 1e6;
	for (int v = 0; v < 2; v++) {
		struct sl_buf b = SL_BUF_INIT(FLEET_MAX_FILE);
		yaml_fleet(&sp, &b, v == 1);
		enum sl_err e = fleet_init(&fy);
		if (e != SL_OK)
			die("fleet_init", e, NULL);
		struct sl_diag d;
		sl_diag_clear(&d);
		t0 = now_ns();
		e = fleet_load_yaml(&fy, b.p, b.len, "generated.yaml", &d);
		res->yaml_ms[v] = (now_ns() - t0) / 1e6;
		res->yaml_mib[v] = (double)b.len / (1 << 20);
		if (e != SL_OK)
			die("fleet_load_yaml", e, &d);
		if (fy.nnodes != f.nnodes)
			die("yaml fleet differs", SL_EINVAL, NULL);
		fleet_release(&fy);
		sl_buf_release(&b);
	}
	res->nodes = f.nnodes;
	res->gpus = 0;
	for (int i = 0; i < f.nnodes; i++)
		res->gpus += fleet_node_type(&f, i)->ngpus;

	/* ptab build alone, for every type the fleet uses. */
	t0 = now_ns();
	for (int t = 0; t < B_NTYPES; t++) {
		struct node_type nt;
		struct ptab *pt;
		if (topo_builtin(btypes[t].type, &nt) != SL_OK || ptab_new(&nt, &pt) != SL_OK)
			die("ptab", SL_EINVAL, NULL);
		ptab_free(pt);
	}
	res->ptab_ms = (now_ns() - t0) / 1e6;
	struct placer *p;
	struct sl_diag d;
	enum sl_err e;
	t0 = now_ns();
	if ((e = placer_new(&f, &p)) != SL_OK)
		die("placer_new", e, NULL);
	res->placer_ms = (now_ns() - t0) / 1e6;
	if (use_frag) {
		struct place_wmodel *wm;
		uint64_t ws = 99;
		if (place_wmodel_new(0, &wm) != SL_OK)
			die("place_wmodel_new", SL_ENOMEM, NULL);
		for (int i = 0; i < PLACE_WMODEL_WINDOW; i++) {
			struct place_request r;
			enum cls c;
			make_request(&ws, &r, &c);
			(void)place_wmodel_observe(wm, &r);
		}
		if ((e = place_wmodel_apply(wm, p, &d)) != SL_OK)
			die("place_wmodel_apply", e, &d);
		place_wmodel_free(wm);
	}

	int cap = 1 << 16, nheld = 0;
	struct held *held = calloc((size_t)cap, sizeof(*held));
	if (!held)
		exit(1);
	uint64_t seed = 7;
	double busy = 0, total = res->gpus, busy_sum = 0;
	bool warm = false;
	res->busy_min = 1;
	res->busy_max = 0;
	struct placement pl;
	placement_init(&pl);
	int timed = 0;
	while (timed < requests) {
		if (busy / total > B_HIGH_BUSY) {
			while (nheld && busy / total > B_LOW_BUSY) {
				int i = rng_below(&seed, nheld);
				t0 = now_ns();
				e = placer_release(p, &held[i].pl, &d);
				add(&res->release, now_ns() - t0);
				if (e != SL_OK)
					die("release", e, &d);
				busy -= held[i].gpus;
				placement_release(&held[i].pl);
				held[i] = held[--nheld];
			}
		}
		struct place_request r;
		enum cls c;
		make_request(&seed, &r, &c);
		t0 = now_ns();
		e = decide[c](p, &r, &pl, &d);
		double dt = now_ns() - t0;
		digest(&res->digest, c, e, &pl);
		res->calls[c]++;
		if (!warm && busy / total >= B_WARMUP_BUSY)
			warm = true;
		if (warm) {
			double u = busy / total;
			add(&res->cls[c], dt);
			busy_sum += u;
			if (u < res->busy_min)
				res->busy_min = u;
			if (u > res->busy_max)
				res->busy_max = u;
			timed++;
		}
		if (e == SL_ENOSPACE) {
			if (warm) {
				res->cls[c].refused++;
				add(&res->refused[c], dt);
			}
			continue;
		}
		if (e != SL_OK)
			die("place", e, &d);
		t0 = now_ns();
		e = placer_claim(p, &pl, &d);
		add(&res->claim, now_ns() - t0);
		if (e != SL_OK)
			die("claim", e, &d);
		if (nheld == cap)
			die("too many leases", SL_ELIMIT, NULL);
		placement_init(&held[nheld].pl);
		if (placement_copy(&held[nheld].pl, &pl) != SL_OK)
			die("copy", SL_ENOMEM, NULL);
		held[nheld].gpus = pl_gpus(&pl);
		busy += held[nheld++].gpus;
	}
	res->requests = timed;
	res->busy_avg = busy_sum / timed;
	placement_release(&pl);
	for (int i = 0; i < nheld; i++)
		placement_release(&held[i].pl);
	free(held);
	placer_free(p);
	fleet_release(&f);
	if (getloadavg(res->load1, 3) != 3)
		res->load1[0] = res->load1[1] = res->load1[2] = -1;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	res->rss_kib = ru.ru_maxrss;
}

/* ---- report -------------------------------------------------------------- */

static void cpu_model(char *out, size_t n)
{
	snprintf(out, n, "unknown");
	FILE *fp = fopen("/proc/cpuinfo", "r");
	if (!fp)
		return;
	char line[512];
	while (fgets(line, sizeof(line), fp)) {
		if (strncmp(line, "model name", 10))
			continue;
		char *v = strchr(line, ':');
		if (v) {
			v += 1 + (v[1] == ' ');
			v[strcspn(v, "\n")] = '\0';
			snprintf(out, n, "%s", v);
		}
		break;
	}
	fclose(fp);
}

static void report(FILE *o, struct result *r, int argc, char **argv)
{
	struct utsname u;
	char cpu[256], date[64];
	uname(&u);
	cpu_model(cpu, sizeof(cpu));
	time_t now = time(NULL);
	struct tm tm;
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime_r(&now, &tm));
	fprintf(o, "# Placement benchmark (bench/place.c)\n\n");
	fprintf(o, "- date: %s\n- machine: %s %s %s %s\n- cpu: %s\n- command:", date, u.sysname,
		u.release, u.version, u.machine, cpu);
	for (int i = 0; i < argc; i++)
		fprintf(o, " %s", argv[i]);
	fprintf(o, "\n- build: gcc %s%s%s\n- online CPUs: %ld", __VERSION__,
#ifdef __OPTIMIZE__
		", optimised",
#else
		", NOT optimised",
#endif
#ifdef NDEBUG
		", NDEBUG",
#else
		"",
#endif
		sysconf(_SC_NPROCESSORS_ONLN));
	fprintf(o, "\n- fleet: %d nodes, %d GPUs, %d built-in 8-GPU types, %d sites in 2 "
		   "regions, leaves of %d nodes (fixed seed)\n",
		r->nodes, r->gpus, B_NTYPES, B_SITES, B_LEAF);
	fprintf(o, "- load average (1/5/15 min): %.2f %.2f %.2f at the start, %.2f %.2f %.2f "
		   "at the end\n", r->load0[0], r->load0[1], r->load0[2], r->load1[0],
		r->load1[1], r->load1[2]);
	fprintf(o, "- decisions digest: %016llx (FNV-1a of every decision, warm-up "
		   "included; equal digests = equal decisions)\n", (unsigned long long)r->digest);
	fprintf(o, "- stream: %d timed requests (fixed seed) after warm-up to %.0f%% busy; "
		   "busy during timing min %.1f%% / avg %.1f%% / max %.1f%%\n\n",
		r->requests, B_WARMUP_BUSY * 100, r->busy_min * 100, r->busy_avg * 100,
		r->busy_max * 100);
	fprintf(o, "## Setup\n\n| step | time |\n|---|---|\n");
	fprintf(o, "| fleet via builder | %.1f ms |\n", r->build_ms);
	fprintf(o, "| fleet via fleet_load_yaml, a range per leaf (%.2f MiB) | %.1f ms |\n",
		r->yaml_mib[0], r->yaml_ms[0]);
	fprintf(o, "| fleet via fleet_load_yaml, a line per node (%.2f MiB) | %.1f ms |\n",
		r->yaml_mib[1], r->yaml_ms[1]);
	fprintf(o, "| ptab_new for the %d types | %.1f ms |\n", B_NTYPES, r->ptab_ms);
	fprintf(o, "| placer_new (ptabs + index) | %.1f ms |\n\n", r->placer_ms);
	fprintf(o, "## Decision time (placer_place only)\n\n");
	fprintf(o, "All requests of a class, placed or refused; refusals (which scan the "
		   "whole fleet to explain themselves) also on their own.\n\n");
	fprintf(o, "| class | requests | p50 µs | p99 µs | max µs | refused | refusal p50 µs | "
		   "calls (decide_c%%d) |\n");
	fprintf(o, "|---|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int c = 0; c < C__N; c++) {
		struct series *s = &r->cls[c], *f = &r->refused[c];
		qsort(s->v, (size_t)s->n, sizeof(*s->v), dcmp);
		qsort(f->v, (size_t)f->n, sizeof(*f->v), dcmp);
		fprintf(o, "| %s | %d | %.1f | %.1f | %.1f | %d | %.1f | %d (%d) |\n", cls_names[c],
			s->n, pct(s, 0.5) / 1e3, pct(s, 0.99) / 1e3,
			s->n ? s->v[s->n - 1] / 1e3 : 0, s->refused, pct(f, 0.5) / 1e3, r->calls[c],
			c);
	}
	struct series *cr[2] = {&r->claim, &r->release};
	fprintf(o, "\n## State changes\n\n| call | count | p50 µs | p99 µs | max µs |\n");
	fprintf(o, "|---|---:|---:|---:|---:|\n");
	for (int i = 0; i < 2; i++) {
		qsort(cr[i]->v, (size_t)cr[i]->n, sizeof(double), dcmp);
		fprintf(o, "| %s | %d | %.2f | %.2f | %.1f |\n", i ? "placer_release" : "placer_claim",
			cr[i]->n, pct(cr[i], 0.5) / 1e3, pct(cr[i], 0.99) / 1e3,
			cr[i]->n ? cr[i]->v[cr[i]->n - 1] / 1e3 : 0);
	}
	fprintf(o, "\npeak RSS: %.1f MiB\n\n", (double)r->rss_kib / 1024);
	if (use_frag)
		fprintf(o, "Goals (issue 17, not asserted): with frag, p99 <= 5 µs for requests of "
			   "<= 8 GPUs, < 100 µs for 64-node gangs.\n");
	else
		fprintf(o, "Goals (not asserted): p99 <= 50 µs for requests of <= 8 GPUs, "
			   "<= 2 ms for 64-node gangs.\n");
}

int main(int argc, char **argv)
{
	use_frag = argc > 3 && !strcmp(argv[3], "frag");
	const char *path = argc > 1 ? argv[1] : "bench/results/place.md";
	int requests = argc > 2 ? atoi(argv[2]) : B_REQUESTS;
	if (requests <= 0)
		requests = B_REQUESTS;
	struct result *r = calloc(1, sizeof(*r));
	if (!r)
		return 1;
	run(r, requests);
	report(stdout, r, argc, argv);
	FILE *fp = fopen(path, "w");
	if (!fp) {
		fprintf(stderr, "bench_place: cannot write %s\n", path);
	} else {
		/* report() sorted the series already; sorting again is harmless. */
		report(fp, r, argc, argv);
		fclose(fp);
	}
	for (int c = 0; c < C__N; c++) {
		free(r->cls[c].v);
		free(r->refused[c].v);
	}
	free(r->claim.v);
	free(r->release.v);
	free(r);
	return 0;
}

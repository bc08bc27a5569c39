/* fleet_yaml.c - the fleet file (DESIGN.md §3) read into a fleet.
 *
 * The text is first folded into a position-carrying tree (yaml_tree.c); the
 * walker then reads it in dependency order rather than file order: gpu_models
 * (custom GPU models, fleet_model.c), then node_types (a file may declare them
 * after the sites that use them), then sites
 * with their fabrics, leaves and nodes, then NVLink domains and owners, which
 * refer to nodes by name. Each YAML mapping is checked against a small table
 * of the keys it may hold, so unknown keys, duplicates and missing keys are
 * reported in one place with the list of expected keys and the nearest match.
 *
 * Everything is built into a scratch fleet that replaces f only when the whole
 * file was good, so a bad file changes nothing. The first error stops the load;
 * its position is the offending YAML node's (1-based line and column). */
#include "fleet.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "yaml_tree.h"

#define YAML_MAX_CPUS FLEET_MAX_CPUS
#define YAML_MAX_MEM_GIB FLEET_MAX_MEM_GIB
#define YAML_MAX_NUMA 127            /* bound on a NUMA node number (int8_t) */
#define YAML_MAX_DOMAIN_NODES 100000 /* bound on nodes listed in one domain */

struct ld {
	struct fleet *f; /* the scratch fleet */
	const struct ytree *t;
	const char *text;
	size_t len;
	struct sl_diag *d;
};

/* ---- errors and suggestions ---- */

static enum sl_err ld_err(struct ld *l, enum sl_err e, const struct ynode *at, const char *fmt,
			  ...) SL_PRINTF(4, 5);

static enum sl_err ld_err(struct ld *l, enum sl_err e, const struct ynode *at, const char *fmt,
			  ...)
{
	if (l->d) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(l->d->msg, sizeof(l->d->msg), fmt, ap);
		va_end(ap);
		l->d->line = at->line;
		l->d->col = at->col;
	}
	return e;
}

/* A callee (builder, topo) set the message; give it at's position unless the
 * callee already placed it. */
static enum sl_err ld_place(struct ld *l, enum sl_err e, const struct ynode *at)
{
	if (l->d && l->d->line == 0) {
		l->d->line = at->line;
		l->d->col = at->col;
	}
	return e;
}

static int edit_distance(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	int row[FLEET_NAME_MAX + 2];
	if (na > FLEET_NAME_MAX || nb > FLEET_NAME_MAX)
		return 1000;
	for (size_t j = 0; j <= nb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= na; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= nb; j++) {
			int up = row[j];
			int best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[nb];
}

/* Keeps the closest candidate within distance 2. */
struct nearest {
	const char *word, *best;
	int dist;
};

static void nearest_consider(struct nearest *n, const char *cand)
{
	int dist = edit_distance(n->word, cand);
	if (dist <= 2 && (!n->best || dist < n->dist)) {
		n->best = cand;
		n->dist = dist;
	}
}

static void ld_suggest(struct ld *l, const struct nearest *n)
{
	if (n->best)
		sl_diag_hint(l->d, "did you mean '%s'?", n->best);
}

/* ---- scalars ---- */

static enum sl_err ld_str(struct ld *l, const struct ynode *v, const char *key, const char **out)
{
	*out = ""; /* outputs are always set, which keeps -O2's flow analysis quiet */
	if (v->kind != YN_SCALAR)
		return ld_err(l, SL_EINVAL, v, "expected a string for '%s', got %s", key,
			      ytree_kind_name(v));
	const char *s = ytree_str(l->t, v);
	if (strlen(s) != v->n)
		return ld_err(l, SL_EINVAL, v, "'%s' contains a NUL character", key);
	*out = s;
	return SL_OK;
}

static enum sl_err ld_int(struct ld *l, const struct ynode *v, const char *key, long long min,
			  long long max, long long *out)
{
	const char *s;
	*out = 0;
	enum sl_err e = ld_str(l, v, key, &s);
	if (e)
		return e;
	bool digits = s[s[0] == '-'] != '\0';
	for (const char *p = s + (s[0] == '-'); *p; p++)
		digits = digits && *p >= '0' && *p <= '9';
	errno = 0;
	long long x = digits ? strtoll(s, NULL, 10) : 0;
	if (!digits || errno || x < min || x > max)
		return ld_err(l, SL_EINVAL, v, "expected an integer from %lld to %lld for '%s', got '%.40s'",
			      min, max, key, s);
	*out = x;
	return SL_OK;
}

static enum sl_err ld_intv(struct ld *l, const struct ynode *v, const char *key, int min, int max,
			   int *out)
{
	long long x;
	*out = 0;
	enum sl_err e = ld_int(l, v, key, min, max, &x);
	if (e == SL_OK)
		*out = (int)x;
	return e;
}

static enum sl_err ld_bool(struct ld *l, const struct ynode *v, const char *key, bool *out)
{
	const char *s;
	*out = false;
	enum sl_err e = ld_str(l, v, key, &s);
	if (e)
		return e;
	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
		*out = true;
	else if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
		*out = false;
	else
		return ld_err(l, SL_EINVAL, v, "expected true or false for '%s', got '%.40s'", key, s);
	return SL_OK;
}

static enum sl_err ld_seq(struct ld *l, const struct ynode *v, const char *key, const char *of)
{
	if (v->kind != YN_SEQ)
		return ld_err(l, SL_EINVAL, v, "expected a list of %s for '%s', got %s", of, key,
			      ytree_kind_name(v));
	return SL_OK;
}

/* A list of distinct GPU indices below ngpus, as a mask. */
static enum sl_err ld_gpus(struct ld *l, const struct ynode *v, const char *key, int ngpus,
			   gpumask_t *out)
{
	enum sl_err e = ld_seq(l, v, key, "GPU indices");
	*out = 0;
	for (uint32_t i = 0; e == SL_OK && i < v->n; i++) {
		const struct ynode *g = ytree_kid(l->t, v, i);
		int x;
		e = ld_intv(l, g, key, 0, ngpus - 1, &x);
		if (e == SL_OK && (*out >> x & 1u))
			e = ld_err(l, SL_EINVAL, g, "GPU %d is listed twice in '%s'", x, key);
		*out |= (gpumask_t)1u << (x & 31);
	}
	if (e == SL_OK && *out == 0)
		e = ld_err(l, SL_EINVAL, v, "'%s' is empty; expected one or more GPU indices", key);
	return e;
}

/* ---- mappings against key tables ---- */

struct field {
	const char *key;
	bool required;
};

/* Checks that m is a mapping whose keys are all in fields, none twice, and
 * every required one present; vals[i]/keys[i] get field i's value and key node
 * (NULL when absent). what names the object for messages ("site"). */
static enum sl_err ld_fields(struct ld *l, const struct ynode *m, const char *what,
			     const struct field *fields, int nfields, const struct ynode **vals,
			     const struct ynode **keys)
{
	char expected[256] = "";
	for (int i = 0; i < nfields; i++) {
		size_t n = strlen(expected);
		snprintf(expected + n, sizeof(expected) - n, "%s%s", i ? ", " : "", fields[i].key);
		vals[i] = keys[i] = NULL;
	}
	if (m->kind != YN_MAP)
		return ld_err(l, SL_EINVAL, m, "expected %s as a mapping with keys %s, got %s", what,
			      expected, ytree_kind_name(m));
	for (uint32_t k = 0; k + 1 < m->n; k += 2) {
		const struct ynode *key = ytree_kid(l->t, m, k);
		const char *name = key->kind == YN_SCALAR ? ytree_str(l->t, key) : "";
		int i = 0;
		while (i < nfields && strcmp(fields[i].key, name) != 0)
			i++;
		if (key->kind != YN_SCALAR)
			return ld_err(l, SL_EINVAL, key, "expected a key (%s) in %s, got %s", expected,
				      what, ytree_kind_name(key));
		/* "fabrics\0x" would otherwise pass as fabrics (strcmp stops at the NUL). */
		if (strlen(name) != key->n)
			return ld_err(l, SL_EINVAL, key, "a key in %s contains a NUL character; expected %s",
				      what, expected);
		if (i == nfields) {
			struct nearest near = {.word = name};
			for (int j = 0; j < nfields; j++)
				nearest_consider(&near, fields[j].key);
			ld_err(l, SL_EINVAL, key, "unknown key '%.64s' in %s; expected %s", name, what,
			       expected);
			ld_suggest(l, &near);
			return SL_EINVAL;
		}
		if (vals[i])
			return ld_err(l, SL_EINVAL, key,
				      "duplicate key '%s' in %s (first at line %d); each key may appear once",
				      name, what, keys[i]->line);
		keys[i] = key;
		vals[i] = ytree_kid(l->t, m, k + 1);
	}
	for (int i = 0; i < nfields; i++)
		if (fields[i].required && !vals[i])
			return ld_err(l, SL_EINVAL, m, "%s is missing '%s'; expected keys %s", what,
				      fields[i].key, expected);
	return SL_OK;
}

#define NFIELDS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- node types ---- */

enum { NT_NAME, NT_GPU, NT_GPUS, NT_CPUS, NT_MEM, NT_NUMA, NT_LINKS, NT_SWITCHES, NT_NICS,
       NT_GROUPS, NT_STRICT, NT_MATRIX, NT_CPU_MILLI, NT__N };
static const struct field type_fields[NT__N] = {
	[NT_NAME] = {"name", true},       [NT_GPU] = {"gpu", true},
	[NT_GPUS] = {"gpus", true}, [NT_CPUS] = {"cpus", false}, [NT_CPU_MILLI] = {"cpu_milli", false},
	[NT_MEM] = {"memory_gib", true},  [NT_NUMA] = {"numa", false},
	[NT_LINKS] = {"links", false},    [NT_SWITCHES] = {"pcie_switches", false},
	[NT_NICS] = {"nics", false},      [NT_GROUPS] = {"groups", false},
	[NT_STRICT] = {"groups_strict", false}, [NT_MATRIX] = {"topo_matrix", false},
};

static enum sl_err ld_gpu_model(struct ld *l, const struct ynode *v, const struct gpu_model **out)
{
	const char *s;
	enum sl_err e = ld_str(l, v, "gpu", &s);
	if (e)
		return e;
	*out = fleet_find_model(l->f, s);
	if (*out)
		return SL_OK;
	char list[256] = "";
	struct nearest near = {.word = s};
	for (size_t i = 0; i < catalog_gpu_count(); i++) {
		size_t n = strlen(list);
		snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", catalog_gpu_at(i)->name);
		nearest_consider(&near, catalog_gpu_at(i)->name);
	}
	ld_err(l, SL_EINVAL, v, "unknown GPU model '%.64s'; expected one of %s (or one "
	       "declared under gpu_models)", s, list);
	ld_suggest(l, &near);
	return SL_EINVAL;
}

enum { LK_GPUS, LK_KIND, LK_COUNT, LK_GBPS, LK__N };
static const struct field link_fields[LK__N] = {
	[LK_GPUS] = {"gpus", true}, [LK_KIND] = {"kind", true},
	[LK_COUNT] = {"count", false}, [LK_GBPS] = {"gbps", false},
};

static enum sl_err ld_link(struct ld *l, const struct ynode *m, struct node_type *t,
			   bool seen[TOPO_MAX_GPUS][TOPO_MAX_GPUS])
{
	const struct ynode *v[LK__N], *k[LK__N];
	enum sl_err e = ld_fields(l, m, "link", link_fields, LK__N, v, k);
	gpumask_t pair = 0;
	const char *kind_name = NULL;
	int count = 0, gbps = 0;
	if (e == SL_OK)
		e = ld_gpus(l, v[LK_GPUS], "gpus", t->ngpus, &pair);
	if (e == SL_OK && __builtin_popcount(pair) != 2)
		e = ld_err(l, SL_EINVAL, v[LK_GPUS], "a link joins two GPUs; expected [a, b]");
	if (e == SL_OK)
		e = ld_str(l, v[LK_KIND], "kind", &kind_name);
	if (e == SL_OK && v[LK_COUNT])
		e = ld_intv(l, v[LK_COUNT], "count", 0, UINT8_MAX, &count);
	if (e == SL_OK && v[LK_GBPS])
		e = ld_intv(l, v[LK_GBPS], "gbps", 0, UINT16_MAX, &gbps);
	if (e)
		return e;
	int kind = topo_link_kind_parse(kind_name);
	if (kind <= LINK_SELF) {
		struct nearest near = {.word = kind_name};
		char list[200] = "";
		for (int i = LINK_SELF + 1; i < LINK__COUNT; i++) {
			const char *kn = topo_link_kind_name((enum link_kind)i);
			size_t n = strlen(list);
			snprintf(list + n, sizeof(list) - n, "%s%s", n ? ", " : "", kn);
			nearest_consider(&near, kn);
		}
		ld_err(l, SL_EINVAL, v[LK_KIND], "unknown link kind '%.40s'; expected one of %s",
		       kind_name, list);
		ld_suggest(l, &near);
		return SL_EINVAL;
	}
	int a = __builtin_ctz(pair), b = 31 - __builtin_clz(pair);
	if (seen[a][b])
		return ld_err(l, SL_EINVAL, v[LK_GPUS], "the link between GPUs %d and %d is listed twice",
			      a, b);
	seen[a][b] = true;
	e = topo_set_link(t, a, b, (enum link_kind)kind, count, gbps, l->d);
	return e ? ld_place(l, e, m) : SL_OK;
}

enum { NIC_NAME, NIC_GBPS, NIC_GPUS, NIC__N };
static const struct field nic_fields[NIC__N] = {
	[NIC_NAME] = {"name", true}, [NIC_GBPS] = {"gbps", true}, [NIC_GPUS] = {"gpus", true},
};

static enum sl_err ld_nic(struct ld *l, const struct ynode *m, struct node_type *t)
{
	const struct ynode *v[NIC__N], *k[NIC__N];
	const char *name = NULL;
	int gbps = 0;
	gpumask_t gpus = 0;
	enum sl_err e = ld_fields(l, m, "NIC", nic_fields, NIC__N, v, k);
	if (e == SL_OK)
		e = ld_str(l, v[NIC_NAME], "name", &name);
	if (e == SL_OK && (!fleet_name_valid(name) || strlen(name) >= sizeof(t->nics[0].name)))
		e = ld_err(l, SL_EINVAL, v[NIC_NAME],
			   "bad NIC name '%.40s'; expected 1 to %zu characters of A-Z a-z 0-9 . _ -",
			   name, sizeof(t->nics[0].name) - 1);
	if (e == SL_OK)
		e = ld_intv(l, v[NIC_GBPS], "gbps", 1, FLEET_MAX_GBPS, &gbps);
	if (e == SL_OK)
		e = ld_gpus(l, v[NIC_GPUS], "gpus", t->ngpus, &gpus);
	if (e == SL_OK && (e = topo_add_nic(t, name, gbps, gpus, l->d)) != SL_OK)
		ld_place(l, e, m);
	return e;
}

/* Applies one list-valued key of a node type, entry by entry. */
static enum sl_err ld_type_lists(struct ld *l, const struct ynode **v, struct node_type *t)
{
	enum sl_err e = SL_OK;
	bool seen[TOPO_MAX_GPUS][TOPO_MAX_GPUS] = {{false}};
	if (v[NT_SWITCHES] && !(e = ld_seq(l, v[NT_SWITCHES], "pcie_switches", "GPU lists")))
		for (uint32_t i = 0; e == SL_OK && i < v[NT_SWITCHES]->n; i++) {
			const struct ynode *s = ytree_kid(l->t, v[NT_SWITCHES], i);
			gpumask_t mask;
			e = ld_gpus(l, s, "pcie_switches", t->ngpus, &mask);
			if (e == SL_OK && (e = topo_set_pcie_switch(t, mask, l->d)) != SL_OK)
				ld_place(l, e, s);
		}
	if (e == SL_OK && v[NT_LINKS] && !(e = ld_seq(l, v[NT_LINKS], "links", "links")))
		for (uint32_t i = 0; e == SL_OK && i < v[NT_LINKS]->n; i++)
			e = ld_link(l, ytree_kid(l->t, v[NT_LINKS], i), t, seen);
	if (e == SL_OK && v[NT_NICS] && !(e = ld_seq(l, v[NT_NICS], "nics", "NICs")))
		for (uint32_t i = 0; e == SL_OK && i < v[NT_NICS]->n; i++)
			e = ld_nic(l, ytree_kid(l->t, v[NT_NICS], i), t);
	if (e == SL_OK && v[NT_GROUPS] && !(e = ld_seq(l, v[NT_GROUPS], "groups", "GPU lists")))
		for (uint32_t i = 0; e == SL_OK && i < v[NT_GROUPS]->n; i++) {
			const struct ynode *g = ytree_kid(l->t, v[NT_GROUPS], i);
			gpumask_t mask;
			e = ld_gpus(l, g, "groups", t->ngpus, &mask);
			if (e == SL_OK && (e = topo_add_group(t, mask, l->d)) != SL_OK)
				ld_place(l, e, g);
		}
	if (e == SL_OK && v[NT_STRICT])
		e = ld_bool(l, v[NT_STRICT], "groups_strict", &t->groups_strict);
	return e;
}

static enum sl_err ld_numa(struct ld *l, const struct ynode *v, int ngpus, int8_t *numa)
{
	enum sl_err e = ld_seq(l, v, "numa", "NUMA node numbers");
	if (e == SL_OK && (int)v->n != ngpus)
		e = ld_err(l, SL_EINVAL, v, "'numa' lists %u NUMA nodes; expected one per GPU (%d)",
			   v->n, ngpus);
	for (uint32_t i = 0; e == SL_OK && i < v->n; i++) {
		int x;
		e = ld_intv(l, ytree_kid(l->t, v, i), "numa", 0, YAML_MAX_NUMA, &x);
		numa[i] = (int8_t)x;
	}
	return e;
}

/* Start of the line holding 1-based line `line` in the source text. */
static const char *ld_line_start(const struct ld *l, int line)
{
	const char *p = l->text, *end = l->text + l->len;
	for (int i = 1; i < line && p < end; i++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	return p;
}

/* Moves a position inside a literal block's text to the file: its text line L
 * is file line (line of '|') + L, shifted right by the block's indentation. */
static void ld_matrix_position(struct ld *l, const struct ynode *v)
{
	if (!l->d)
		return;
	if (v->style != YS_LITERAL || l->d->line <= 0) {
		l->d->line = v->line;
		l->d->col = v->col;
		return;
	}
	const char *p = ld_line_start(l, v->line + 1), *end = l->text + l->len;
	int indent = 0;
	for (;;) { /* the first non-blank line sets the indentation */
		const char *q = p;
		while (q < end && *q == ' ')
			q++;
		if (q >= end || (*q != '\n' && *q != '\r')) {
			indent = (int)(q - p);
			break;
		}
		p = q + 1;
	}
	l->d->line += v->line;
	l->d->col += indent;
}

static enum sl_err ld_type(struct ld *l, const struct ynode *m)
{
	const struct ynode *v[NT__N], *k[NT__N];
	const char *name = NULL;
	const struct gpu_model *gpu = NULL;
	int ngpus = 0, cpus = 0, mem = 0;
	int8_t numa[TOPO_MAX_GPUS] = {0};
	enum sl_err e = ld_fields(l, m, "node type", type_fields, NT__N, v, k);
	if (e == SL_OK)
		e = ld_str(l, v[NT_NAME], "name", &name);
	if (e == SL_OK && !fleet_name_valid(name))
		e = ld_err(l, SL_EINVAL, v[NT_NAME],
			   "bad node type name '%.64s'; expected 1 to %d characters of A-Z a-z 0-9 . _ -",
			   name, FLEET_NAME_MAX);
	if (e == SL_OK && fleet_find_type(l->f, name) >= 0)
		e = ld_err(l, SL_EEXIST, v[NT_NAME], "node type '%s' already exists (%s)", name,
			   fleet_find_type(l->f, name) < topo_builtin_count()
				   ? "a built-in type; pick another name"
				   : "declared twice under node_types");
	if (e == SL_OK)
		e = ld_gpu_model(l, v[NT_GPU], &gpu);
	if (e == SL_OK)
		e = ld_intv(l, v[NT_GPUS], "gpus", 1, TOPO_MAX_GPUS, &ngpus);
	if (e == SL_OK && !v[NT_CPUS] == !v[NT_CPU_MILLI]) /* cores, or thousandths of a core */
		e = ld_err(l, SL_EINVAL, v[NT_CPUS] ? k[NT_CPU_MILLI] : m, "node type %s", v[NT_CPUS]
			   ? "has both 'cpus' and 'cpu_milli'; give one" : "is missing 'cpus' (or 'cpu_milli')");
	if (e == SL_OK)
		e = v[NT_CPUS] ? ld_intv(l, v[NT_CPUS], "cpus", 1, YAML_MAX_CPUS, &cpus)
			       : ld_intv(l, v[NT_CPU_MILLI], "cpu_milli", 1, YAML_MAX_CPUS * 1000, &cpus);
	if (e == SL_OK)
		e = ld_intv(l, v[NT_MEM], "memory_gib", 1, YAML_MAX_MEM_GIB, &mem);
	if (e == SL_OK && v[NT_MATRIX]) {
		static const int excl[] = {NT_NUMA, NT_LINKS, NT_SWITCHES, NT_NICS};
		for (size_t i = 0; e == SL_OK && i < sizeof(excl) / sizeof(excl[0]); i++)
			if (v[excl[i]])
				e = ld_err(l, SL_EINVAL, k[excl[i]],
					   "'%s' cannot be combined with 'topo_matrix', which already gives links, NUMA nodes and NICs",
					   type_fields[excl[i]].key);
	}
	if (e == SL_OK && v[NT_NUMA])
		e = ld_numa(l, v[NT_NUMA], ngpus, numa);
	if (e)
		return e;
	struct node_type t;
	if ((e = topo_type_init(&t, name, gpu, ngpus, cpus, mem, numa, l->d)) != SL_OK)
		return ld_place(l, e, m);
	t.cpu_milli = v[NT_CPU_MILLI] != NULL;
	if (v[NT_MATRIX]) {
		const char *text;
		if ((e = ld_str(l, v[NT_MATRIX], "topo_matrix", &text)) != SL_OK)
			return e;
		if ((e = topo_parse_matrix(&t, text, l->d)) != SL_OK) {
			ld_matrix_position(l, v[NT_MATRIX]);
			return e;
		}
	}
	if ((e = ld_type_lists(l, v, &t)) != SL_OK)
		return e;
	if ((e = topo_validate(&t, l->d)) != SL_OK)
		return ld_place(l, e, m);
	e = fleet_add_type(l->f, &t, NULL, l->d);
	return e ? ld_place(l, e, v[NT_NAME]) : SL_OK;
}

/* ---- sites, fabrics, leaves, nodes ---- */

enum { ND_NAME, ND_RANGE, ND_TYPE, ND_SHARE, ND_PRICE, ND__N };
static const struct field node_fields[ND__N] = {
	[ND_NAME] = {"name", false}, [ND_RANGE] = {"range", false}, [ND_TYPE] = {"type", true},
	[ND_SHARE] = {"shareable", false}, [ND_PRICE] = {"price_hint", false},
};

/* What a node entry gives each node it names. */
struct node_ctx {
	struct ld *l;
	int leaf, type;
	bool shareable;
	long long price;
	bool called; /* the range reached the callback, so errors are the builder's */
};

static enum sl_err add_one_node(void *arg, const char *name)
{
	struct node_ctx *c = arg;
	int idx;
	c->called = true;
	enum sl_err e = fleet_add_node(c->l->f, c->leaf, name, c->type, &idx, c->l->d);
	if (e == SL_OK) {
		c->l->f->nodes[idx].shareable = c->shareable;
		c->l->f->nodes[idx].price_hint = c->price;
	}
	return e;
}

/* Expands a range scalar; a syntax error's column is moved into the file. */
static enum sl_err ld_range(struct ld *l, const struct ynode *v, const char *key,
			    enum sl_err (*fn)(void *, const char *), void *arg, bool *called)
{
	const char *expr;
	enum sl_err e = ld_str(l, v, key, &expr);
	if (e)
		return e;
	*called = false;
	if (l->d)
		l->d->line = 0;
	e = fleet_expand_range(expr, fn, arg, l->d);
	if (e == SL_OK || !l->d)
		return e;
	if (*called || l->d->line == 0 || v->style > YS_DOUBLE) {
		l->d->line = v->line;
		l->d->col = v->col;
	} else {
		l->d->line = v->line;
		l->d->col = v->col + (v->style != YS_PLAIN) + l->d->col - 1;
	}
	return e;
}

static enum sl_err ld_unknown_type(struct ld *l, const struct ynode *v, const char *name)
{
	char list[300] = "";
	struct nearest near = {.word = name};
	for (int i = 0; i < l->f->ntypes; i++) {
		if (i < topo_builtin_count()) {
			size_t n = strlen(list);
			snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", l->f->types[i].name);
		}
		nearest_consider(&near, l->f->types[i].name);
	}
	ld_err(l, SL_EINVAL, v,
	       "unknown node type '%.64s'; expected one of the built-in types (%s) or one declared under node_types",
	       name, list);
	if (near.best)
		ld_suggest(l, &near);
	else
		sl_diag_hint(l->d, "declare '%.64s' under node_types, or use a built-in type", name);
	return SL_EINVAL;
}

static enum sl_err ld_node_entry(struct ld *l, const struct ynode *m, int leaf)
{
	const struct ynode *v[ND__N], *k[ND__N];
	const char *type_name = NULL;
	struct node_ctx c = {.l = l, .leaf = leaf};
	enum sl_err e = ld_fields(l, m, "node entry", node_fields, ND__N, v, k);
	if (e == SL_OK && v[ND_NAME] && v[ND_RANGE])
		e = ld_err(l, SL_EINVAL, k[ND_RANGE],
			   "a node entry has either 'name' or 'range', not both");
	if (e == SL_OK && !v[ND_NAME] && !v[ND_RANGE])
		e = ld_err(l, SL_EINVAL, m,
			   "node entry is missing 'name' or 'range'; expected {name: N, type: T} or {range: \"n[01-08]\", type: T}");
	if (e == SL_OK)
		e = ld_str(l, v[ND_TYPE], "type", &type_name);
	if (e == SL_OK && (c.type = fleet_find_type(l->f, type_name)) < 0)
		e = ld_unknown_type(l, v[ND_TYPE], type_name);
	if (e == SL_OK && v[ND_SHARE])
		e = ld_bool(l, v[ND_SHARE], "shareable", &c.shareable);
	if (e == SL_OK && v[ND_PRICE])
		e = ld_int(l, v[ND_PRICE], "price_hint", 0, FLEET_MAX_PRICE_HINT, &c.price);
	if (e)
		return e;
	if (v[ND_NAME]) {
		const char *name;
		if ((e = ld_str(l, v[ND_NAME], "name", &name)) != SL_OK)
			return e;
		e = add_one_node(&c, name);
		return e ? ld_place(l, e, v[ND_NAME]) : SL_OK;
	}
	return ld_range(l, v[ND_RANGE], "range", add_one_node, &c, &c.called);
}

enum { LF_NAME, LF_NODES, LF__N };
static const struct field leaf_fields[LF__N] = {
	[LF_NAME] = {"name", true}, [LF_NODES] = {"nodes", false},
};

static enum sl_err ld_leaf(struct ld *l, const struct ynode *m, int fabric)
{
	const struct ynode *v[LF__N], *k[LF__N];
	const char *name = NULL;
	int leaf;
	enum sl_err e = ld_fields(l, m, "leaf", leaf_fields, LF__N, v, k);
	if (e == SL_OK)
		e = ld_str(l, v[LF_NAME], "name", &name);
	if (e == SL_OK && (e = fleet_add_leaf(l->f, fabric, name, &leaf, l->d)) != SL_OK)
		return ld_place(l, e, v[LF_NAME]);
	if (e == SL_OK && v[LF_NODES] && !(e = ld_seq(l, v[LF_NODES], "nodes", "node entries")))
		for (uint32_t i = 0; e == SL_OK && i < v[LF_NODES]->n; i++)
			e = ld_node_entry(l, ytree_kid(l->t, v[LF_NODES], i), leaf);
	return e;
}

enum { FB_NAME, FB_KIND, FB_GBPS, FB_LEAVES, FB__N };
static const struct field fabric_fields[FB__N] = {
	[FB_NAME] = {"name", true}, [FB_KIND] = {"kind", true},
	[FB_GBPS] = {"gbps", true}, [FB_LEAVES] = {"leaves", false},
};

static enum sl_err ld_fabric(struct ld *l, const struct ynode *m, int site)
{
	const struct ynode *v[FB__N], *k[FB__N];
	const char *name = NULL, *kind_name = NULL;
	enum fabric_kind kind = FABRIC_INFINIBAND;
	int gbps = 0, fabric;
	enum sl_err e = ld_fields(l, m, "fabric", fabric_fields, FB__N, v, k);
	if (e == SL_OK)
		e = ld_str(l, v[FB_NAME], "name", &name);
	if (e == SL_OK)
		e = ld_str(l, v[FB_KIND], "kind", &kind_name);
	if (e == SL_OK) {
		if (!strcmp(kind_name, "roce")) {
			kind = FABRIC_ROCE;
		} else if (strcmp(kind_name, "infiniband") != 0) {
			struct nearest near = {.word = kind_name};
			nearest_consider(&near, "infiniband");
			nearest_consider(&near, "roce");
			e = ld_err(l, SL_EINVAL, v[FB_KIND],
				   "unknown fabric kind '%.40s'; expected infiniband or roce", kind_name);
			ld_suggest(l, &near);
		}
	}
	if (e == SL_OK)
		e = ld_intv(l, v[FB_GBPS], "gbps", 1, FLEET_MAX_GBPS, &gbps);
	if (e == SL_OK && (e = fleet_add_fabric(l->f, site, name, kind, gbps, &fabric, l->d)) != SL_OK)
		return ld_place(l, e, v[FB_NAME]);
	if (e == SL_OK && v[FB_LEAVES] && !(e = ld_seq(l, v[FB_LEAVES], "leaves", "leaves")))
		for (uint32_t i = 0; e == SL_OK && i < v[FB_LEAVES]->n; i++)
			e = ld_leaf(l, ytree_kid(l->t, v[FB_LEAVES], i), fabric);
	return e;
}

enum { ST_NAME, ST_REGION, ST_FABRICS, ST__N };
static const struct field site_fields[ST__N] = {
	[ST_NAME] = {"name", true}, [ST_REGION] = {"region", true},
	[ST_FABRICS] = {"fabrics", false},
};

static enum sl_err ld_site(struct ld *l, const struct ynode *m)
{
	const struct ynode *v[ST__N], *k[ST__N];
	const char *name = NULL, *region = NULL;
	int site;
	enum sl_err e = ld_fields(l, m, "site", site_fields, ST__N, v, k);
	if (e == SL_OK)
		e = ld_str(l, v[ST_NAME], "name", &name);
	if (e == SL_OK)
		e = ld_str(l, v[ST_REGION], "region", &region);
	if (e == SL_OK && (e = fleet_add_site(l->f, name, region, &site, l->d)) != SL_OK)
		return ld_place(l, e, e == SL_EINVAL && fleet_name_valid(name) ? v[ST_REGION]
									     : v[ST_NAME]);
	if (e == SL_OK && v[ST_FABRICS] && !(e = ld_seq(l, v[ST_FABRICS], "fabrics", "fabrics")))
		for (uint32_t i = 0; e == SL_OK && i < v[ST_FABRICS]->n; i++)
			e = ld_fabric(l, ytree_kid(l->t, v[ST_FABRICS], i), site);
	return e;
}

/* ---- references to nodes: NVLink domains and owners ---- */

/* Collects node indices named by a range scalar or a list of them. */
struct ref_ctx {
	struct ld *l;
	const char *what; /* "NVLink domain 'x'" */
	int *nodes;
	int n, cap;
	int owner; /* >= 0: set each node's owner instead of collecting */
};

static enum sl_err ref_one(void *arg, const char *name)
{
	struct ref_ctx *c = arg;
	struct fleet *f = c->l->f;
	int node = fleet_find_node(f, name);
	if (node < 0) {
		sl_diag_set(c->l->d, SL_ENOTFOUND,
			    "unknown node '%s' in %s; expected a node declared under sites", name,
			    c->what);
		return SL_ENOTFOUND;
	}
	if (c->owner >= 0) {
		int had = f->nodes[node].owner;
		if (had >= 0 && had != c->owner)
			return sl_diag_set(c->l->d, SL_ECONFLICT,
					   "node '%s' is already owned by tenant '%s'; a node has one owner",
					   name, f->owners[had]);
		f->nodes[node].owner = c->owner;
		return SL_OK;
	}
	if (c->n >= YAML_MAX_DOMAIN_NODES)
		return sl_diag_set(c->l->d, SL_ELIMIT, "%s lists more than %d nodes", c->what,
				   YAML_MAX_DOMAIN_NODES);
	if (sl_grow(&c->nodes, &c->cap, c->n + 1, YAML_MAX_DOMAIN_NODES))
		return sl_diag_set(c->l->d, SL_ENOMEM, "out of memory");
	c->nodes[c->n++] = node;
	return SL_OK;
}

static enum sl_err ld_refs(struct ld *l, const struct ynode *v, struct ref_ctx *c)
{
	bool called;
	if (v->kind == YN_SCALAR)
		return ld_range(l, v, "nodes", ref_one, c, &called);
	enum sl_err e = ld_seq(l, v, "nodes", "node names or ranges");
	for (uint32_t i = 0; e == SL_OK && i < v->n; i++)
		e = ld_range(l, ytree_kid(l->t, v, i), "nodes", ref_one, c, &called);
	return e;
}

enum { DM_NAME, DM_NODES, DM__N };
static const struct field domain_fields[DM__N] = {
	[DM_NAME] = {"name", true}, [DM_NODES] = {"nodes", true},
};

static enum sl_err ld_domain(struct ld *l, const struct ynode *m)
{
	const struct ynode *v[DM__N], *k[DM__N];
	const char *name = NULL;
	char what[FLEET_NAME_MAX + 32];
	enum sl_err e = ld_fields(l, m, "NVLink domain", domain_fields, DM__N, v, k);
	if (e == SL_OK)
		e = ld_str(l, v[DM_NAME], "name", &name);
	if (e == SL_OK && !fleet_name_valid(name))
		e = ld_err(l, SL_EINVAL, v[DM_NAME],
			   "bad NVLink domain name '%.64s'; expected 1 to %d characters of A-Z a-z 0-9 . _ -",
			   name, FLEET_NAME_MAX);
	if (e == SL_OK && fleet_find_domain(l->f, name) >= 0)
		e = ld_err(l, SL_EEXIST, v[DM_NAME], "duplicate NVLink domain name '%s'", name);
	if (e)
		return e;
	snprintf(what, sizeof(what), "NVLink domain '%s'", name);
	struct ref_ctx c = {.l = l, .what = what, .owner = -1};
	e = ld_refs(l, v[DM_NODES], &c);
	if (e == SL_OK && (e = fleet_add_domain(l->f, name, c.nodes, c.n, NULL, l->d)) != SL_OK)
		ld_place(l, e, v[DM_NODES]);
	free(c.nodes);
	return e;
}

enum { OW_TENANT, OW_NODES, OW__N };
static const struct field owner_fields[OW__N] = {
	[OW_TENANT] = {"tenant", true}, [OW_NODES] = {"nodes", true},
};

static enum sl_err ld_owner(struct ld *l, const struct ynode *m)
{
	const struct ynode *v[OW__N], *k[OW__N];
	const char *tenant = NULL;
	char what[FLEET_NAME_MAX + 32];
	int owner = -1;
	enum sl_err e = ld_fields(l, m, "owner", owner_fields, OW__N, v, k);
	if (e == SL_OK)
		e = ld_str(l, v[OW_TENANT], "tenant", &tenant);
	if (e == SL_OK && (e = fleet_owner_index(l->f, tenant, &owner, l->d)) != SL_OK)
		return ld_place(l, e, v[OW_TENANT]);
	if (e)
		return e;
	snprintf(what, sizeof(what), "owners of tenant '%s'", tenant);
	struct ref_ctx c = {.l = l, .what = what, .owner = owner};
	return ld_refs(l, v[OW_NODES], &c);
}

/* ---- custom GPU models (fleet_model.c): PCIe-only parts the catalog lacks ---- */

enum { GM_NAME, GM_VENDOR, GM_MEM, GM_PCIE, GM_TFLOPS, GM__N };
static const struct field model_fields[GM__N] = {
	[GM_NAME] = {"name", true},         [GM_VENDOR] = {"vendor", false},
	[GM_MEM] = {"memory_gib", true},    [GM_PCIE] = {"pcie_gen", false},
	[GM_TFLOPS] = {"bf16_tflops", false},
};

static enum sl_err ld_model(struct ld *l, const struct ynode *m)
{
	const struct ynode *v[GM__N], *k[GM__N];
	struct gpu_model g = {.vendor = NULL, .pcie_gen = 4};
	enum sl_err e = ld_fields(l, m, "GPU model", model_fields, GM__N, v, k);
	if (e == SL_OK)
		e = ld_str(l, v[GM_NAME], "name", &g.name);
	if (e == SL_OK && v[GM_VENDOR])
		e = ld_str(l, v[GM_VENDOR], "vendor", &g.vendor);
	if (e == SL_OK)
		e = ld_intv(l, v[GM_MEM], "memory_gib", 0, YAML_MAX_MEM_GIB, &g.mem_gib);
	if (e == SL_OK && v[GM_PCIE])
		e = ld_intv(l, v[GM_PCIE], "pcie_gen", 3, 6, &g.pcie_gen);
	if (e == SL_OK && v[GM_TFLOPS])
		e = ld_intv(l, v[GM_TFLOPS], "bf16_tflops", 0, 1000000, &g.bf16_tflops);
	if (e == SL_OK && (e = fleet_add_model(l->f, &g, NULL, l->d)) != SL_OK)
		return ld_place(l, e, v[GM_NAME]);
	return e;
}

/* ---- the document ---- */

enum { TOP_SITES, TOP_DOMAINS, TOP_TYPES, TOP_OWNERS, TOP_MODELS, TOP__N };
static const struct field top_fields[TOP__N] = {
	[TOP_SITES] = {"sites", false}, [TOP_DOMAINS] = {"nvlink_domains", false},
	[TOP_TYPES] = {"node_types", false}, [TOP_OWNERS] = {"owners", false},
	[TOP_MODELS] = {"gpu_models", false},
};

/* Runs fn over each entry of the list under top-level key i, if present. */
static enum sl_err ld_each(struct ld *l, const struct ynode *v, const char *key, const char *of,
			   enum sl_err (*fn)(struct ld *, const struct ynode *))
{
	if (!v)
		return SL_OK;
	enum sl_err e = ld_seq(l, v, key, of);
	for (uint32_t i = 0; e == SL_OK && i < v->n; i++)
		e = fn(l, ytree_kid(l->t, v, i));
	return e;
}

static enum sl_err ld_document(struct ld *l)
{
	const struct ynode *root = ytree_root(l->t);
	const struct ynode *v[TOP__N], *k[TOP__N];
	if (!root) {
		struct ynode top = {.line = 1, .col = 1};
		return ld_err(l, SL_EINVAL, &top,
			      "the fleet file is empty; expected a mapping with keys sites, nvlink_domains, node_types, owners");
	}
	enum sl_err e = ld_fields(l, root, "the fleet file", top_fields, TOP__N, v, k);
	if (e == SL_OK)
		e = ld_each(l, v[TOP_MODELS], "gpu_models", "GPU models", ld_model);
	if (e == SL_OK)
		e = ld_each(l, v[TOP_TYPES], "node_types", "node types", ld_type);
	if (e == SL_OK)
		e = ld_each(l, v[TOP_SITES], "sites", "sites", ld_site);
	if (e == SL_OK)
		e = ld_each(l, v[TOP_DOMAINS], "nvlink_domains", "NVLink domains", ld_domain);
	if (e == SL_OK)
		e = ld_each(l, v[TOP_OWNERS], "owners", "owners", ld_owner);
	return e;
}

/* ---- a pasted `nvidia-smi topo -m` table ---- */

/* Whether s[0..n) is a block header "topo_matrix: |" (or ">", with "- "
 * before it in a list, a chomping '+' or '-' and a comment after it) without an
 * indentation indicator; *key_col is the key's 0-based column. */
static bool matrix_header(const char *s, size_t n, size_t *key_col)
{
	static const char key[] = "topo_matrix";
	size_t i = 0;
	while (i < n && s[i] == ' ')
		i++;
	while (i + 1 < n && s[i] == '-' && s[i + 1] == ' ')
		for (i += 2; i < n && s[i] == ' ';)
			i++;
	*key_col = i;
	if (n - i < sizeof(key) - 1 || memcmp(s + i, key, sizeof(key) - 1) != 0)
		return false;
	for (i += sizeof(key) - 1; i < n && s[i] == ' ';)
		i++;
	if (i >= n || s[i++] != ':')
		return false;
	while (i < n && s[i] == ' ')
		i++;
	if (i >= n || (s[i] != '|' && s[i] != '>'))
		return false;
	if (++i < n && (s[i] == '+' || s[i] == '-'))
		i++;
	while (i < n && (s[i] == ' ' || s[i] == '\r'))
		i++;
	return i == n || (s[i] == '#' && s[i - 1] == ' ');
}

/* Whether line s[0..n) can be text of a block whose key is at column k:
 * blank, indented past k, or starting (after spaces) with a tab, which is
 * how a pasted table's lines begin. */
static bool in_block(const char *s, size_t n, size_t k)
{
	size_t i = 0;
	while (i < n && s[i] == ' ')
		i++;
	return i == n || s[i] == '\r' || s[i] == '\t' || i > k;
}

/* A YAML syntax error inside a 'topo_matrix: |' block written without an
 * indentation indicator is almost always a pasted `nvidia-smi topo -m` table:
 * its header line begins with a tab, or (copied from a terminal) with more
 * spaces than the rows, and YAML takes the block's indentation from that first
 * line. The generic hint does not help there; the indicator does. */
static void matrix_hint(const char *text, size_t len, struct sl_diag *d)
{
	if (!d || d->line < 1)
		return;
	int line = 1, hdr = 0;
	size_t k = 0;
	for (size_t at = 0; at <= len && line <= d->line; line++) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
		size_t col;
		if (hdr && !in_block(text + at, n, k))
			hdr = 0;
		if (line == d->line)
			break;
		if (matrix_header(text + at, n, &col)) {
			hdr = line;
			k = col;
		}
		if (!nl)
			return;
		at += n + 1;
	}
	if (hdr && line == d->line)
		sl_diag_hint(d, "inside the 'topo_matrix: |' block of line %d: a pasted `nvidia-smi "
				"topo -m` table begins with a tab or a wider header, so write "
				"'topo_matrix: |2' and indent every table line 2 spaces past the key",
			     hdr);
}

enum sl_err fleet_load_yaml(struct fleet *f, const char *text, size_t len, const char *file,
			    struct sl_diag *d)
{
	sl_diag_clear(d);
	if (d)
		d->file = file;
	if (len > FLEET_MAX_FILE)
		return sl_diag_set(d, SL_ELIMIT, "the fleet file has %zu bytes; at most %u are allowed",
				   len, FLEET_MAX_FILE);
	struct ytree t;
	struct fleet tmp;
	enum sl_err e = ytree_parse(&t, text, len, FLEET_MAX_DEPTH, d);
	if (e == SL_EPARSE)
		matrix_hint(text, len, d);
	if (e == SL_OK && (e = fleet_init(&tmp)) != SL_OK)
		sl_diag_set(d, e, "out of memory");
	if (e != SL_OK) {
		ytree_release(&t);
		return e;
	}
	struct ld l = {.f = &tmp, .t = &t, .text = text, .len = len, .d = d};
	e = ld_document(&l);
	ytree_release(&t);
	if (e != SL_OK) {
		fleet_release(&tmp);
		return e;
	}
	fleet_release(f);
	*f = tmp;
	return SL_OK;
}

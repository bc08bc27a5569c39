/* sim_trace.c - parsing the trace CSVs of sim_trace.h and building a fleet
 * from a node list.
 *
 * One small CSV reader walks lines and splits fields in place (no copies, no
 * quoting); each file kind maps its header names to column indices and reads
 * rows through typed field readers that name the line and column on error. */
#include "sim_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "catalog.h"

#define CSV_MAX_FIELDS 64

struct csv {
	const char *p, *end, *file;
	int line;
	int nf;
	const char *f[CSV_MAX_FIELDS];
	int flen[CSV_MAX_FIELDS];
	int fcol[CSV_MAX_FIELDS]; /* 1-based column of each field */
};

/* Reads the next non-empty line into fields. 1: a row, 0: end, -1: error. */
static int csv_next(struct csv *c, struct sl_diag *d)
{
	while (c->p < c->end) {
		const char *s = c->p;
		const char *nl = memchr(s, '\n', (size_t)(c->end - s));
		const char *e = nl ? nl : c->end;
		c->p = nl ? nl + 1 : c->end;
		c->line++;
		if (e > s && e[-1] == '\r')
			e--;
		if (e - s > SIM_MAX_LINE) {
			sl_diag_set(d, SL_ELIMIT, "%s:%d: line longer than %d bytes", c->file,
				    c->line, SIM_MAX_LINE);
			return -1;
		}
		if (e == s)
			continue;
		c->nf = 0;
		const char *q = s;
		for (;;) {
			const char *comma = memchr(q, ',', (size_t)(e - q));
			const char *fe = comma ? comma : e;
			if (c->nf == CSV_MAX_FIELDS) {
				sl_diag_set(d, SL_ELIMIT, "%s:%d: more than %d fields", c->file,
					    c->line, CSV_MAX_FIELDS);
				return -1;
			}
			c->f[c->nf] = q;
			c->flen[c->nf] = (int)(fe - q);
			c->fcol[c->nf] = (int)(q - s) + 1;
			c->nf++;
			if (!comma)
				break;
			q = comma + 1;
		}
		return 1;
	}
	return 0;
}

static bool field_is(const struct csv *c, int i, const char *name)
{
	size_t n = strlen(name);
	return (size_t)c->flen[i] == n && !memcmp(c->f[i], name, n);
}

/* Maps header names to indices (-1 when absent); names[i] NULL-terminated.
 * required: how many of the first names must be present. */
static enum sl_err csv_header(struct csv *c, const char *const *names, int *idx, int required,
			      struct sl_diag *d)
{
	int r = csv_next(c, d);
	if (r < 0)
		return SL_ELIMIT;
	if (r == 0)
		return sl_diag_set(d, SL_EINVAL, "%s: empty file; expected a header row", c->file);
	for (int k = 0; names[k]; k++) {
		idx[k] = -1;
		for (int i = 0; i < c->nf; i++)
			if (field_is(c, i, names[k]))
				idx[k] = i;
		if (idx[k] < 0 && k < required)
			return sl_diag_set(d, SL_EINVAL, "%s:%d: header has no column '%s'",
					   c->file, c->line, names[k]);
	}
	return SL_OK;
}

static enum sl_err bad_field(const struct csv *c, int i, const char *col, const char *what,
			     struct sl_diag *d)
{
	if (i < 0 || i >= c->nf)
		return sl_diag_set(d, SL_EINVAL, "%s:%d: row has %d fields; column '%s' missing",
				   c->file, c->line, c->nf, col);
	return sl_diag_set(d, SL_EINVAL, "%s:%d:%d: %s: expected %s, got '%.*s'", c->file,
			   c->line, c->fcol[i], col, what, c->flen[i] > 40 ? 40 : c->flen[i],
			   c->f[i]);
}

/* An integer in [lo, hi]; an absent column or empty field gives def when
 * allow_empty. */
static enum sl_err get_int(const struct csv *c, int i, const char *col, int64_t lo,
			   int64_t hi, bool allow_empty, int64_t def, int64_t *out,
			   struct sl_diag *d)
{
	if (i >= 0 && i < c->nf && c->flen[i] == 0 && allow_empty) {
		*out = def;
		return SL_OK;
	}
	if (i < 0 && allow_empty) {
		*out = def;
		return SL_OK;
	}
	if (i < 0 || i >= c->nf || c->flen[i] == 0 || c->flen[i] > 19)
		goto bad;
	int64_t v = 0;
	bool neg = false;
	int j = 0;
	if (c->f[i][0] == '-') {
		neg = true;
		j = 1;
	}
	if (j == c->flen[i])
		goto bad;
	for (; j < c->flen[i]; j++) {
		char ch = c->f[i][j];
		if (ch < '0' || ch > '9')
			goto bad;
		v = v * 10 + (ch - '0');
	}
	if (neg)
		v = -v;
	if (v < lo || v > hi)
		goto bad;
	*out = v;
	return SL_OK;
bad:;
	char what[96];
	snprintf(what, sizeof(what), "an integer %lld..%lld", (long long)lo, (long long)hi);
	return bad_field(c, i, col, what, d);
}

static enum sl_err get_str(const struct csv *c, int i, const char *col, char *buf, size_t n,
			   bool allow_empty, struct sl_diag *d)
{
	buf[0] = '\0';
	if (i < 0 && allow_empty)
		return SL_OK;
	if (i < 0 || i >= c->nf || (size_t)c->flen[i] >= n || (!allow_empty && !c->flen[i])) {
		char what[64];
		snprintf(what, sizeof(what), "%stext of at most %zu bytes",
			 allow_empty ? "" : "non-empty ", n - 1);
		return bad_field(c, i, col, what, d);
	}
	memcpy(buf, c->f[i], (size_t)c->flen[i]);
	buf[c->flen[i]] = '\0';
	return SL_OK;
}

/* '|'-separated model names into pod->models. */
static enum sl_err get_models(const struct csv *c, int i, const char *col,
			      struct sim_pod *pod, struct sl_diag *d)
{
	char buf[PLACE_MAX_MODELS * (SIM_MODEL_MAX + 1) + 1];
	enum sl_err e = get_str(c, i, col, buf, sizeof(buf), true, d);
	if (e != SL_OK)
		return e;
	pod->nmodels = 0;
	if (!buf[0])
		return SL_OK;
	char *s = buf;
	for (;;) {
		char *bar = strchr(s, '|');
		if (bar)
			*bar = '\0';
		if (!*s || strlen(s) > SIM_MODEL_MAX || pod->nmodels == PLACE_MAX_MODELS)
			return bad_field(c, i, col, "model names (at most 8, '|'-separated)", d);
		memcpy(pod->models[pod->nmodels++], s, strlen(s) + 1);
		if (!bar)
			break;
		s = bar + 1;
	}
	return SL_OK;
}

/* Grows a row array. */
static enum sl_err grow(void **arr, int *cap, int n, size_t size, const struct csv *c,
			struct sl_diag *d)
{
	if (n < *cap)
		return SL_OK;
	if (n >= SIM_MAX_ROWS)
		return sl_diag_set(d, SL_ELIMIT, "%s:%d: more than %d rows", c->file, c->line,
				   SIM_MAX_ROWS);
	if (sl_grow_int(arr, cap, (size_t)n + 1, size, SIM_MAX_ROWS))
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	return SL_OK;
}

static enum sl_err csv_open(struct csv *c, const char *text, size_t len, const char *file,
			    struct sl_diag *d)
{
	memset(c, 0, sizeof(*c));
	c->p = text;
	c->end = text + len;
	c->file = file ? file : "(trace)";
	if (len > SIM_MAX_FILE)
		return sl_diag_set(d, SL_ELIMIT, "%s: larger than %u MiB", c->file,
				   SIM_MAX_FILE >> 20);
	return SL_OK;
}

#define SIM_TABLE_MAX_COLUMNS 16 /* named columns of one table (ours, not the file's) */

/* Fills one row's element (zeroed) from c's current row; idx maps the
 * header's names to columns (-1: absent); row is its 0-based number. */
typedef enum sl_err (*row_fn)(const struct csv *c, const int *idx, int row, void *elem,
			      struct sl_diag *d);

/* Parses a CSV whose header has names (the first nreq required) into a
 * malloc'd array of elements of size sz, one per row, through fill. */
static enum sl_err parse_table(const char *text, size_t len, const char *file,
			       const char *const *names, int nreq, size_t sz, row_fn fill,
			       void **out, int *n, struct sl_diag *d)
{
	*out = NULL;
	*n = 0;
	struct csv c;
	int idx[SIM_TABLE_MAX_COLUMNS], cap = 0, cnt = 0, r;
	char *arr = NULL;
	enum sl_err e = csv_open(&c, text, len, file, d);
	if (e == SL_OK)
		e = csv_header(&c, names, idx, nreq, d);
	while (e == SL_OK && (r = csv_next(&c, d)) != 0) {
		if (r < 0) {
			e = SL_ELIMIT;
			break;
		}
		if ((e = grow((void **)&arr, &cap, cnt, sz, &c, d)) != SL_OK)
			break;
		memset(arr + (size_t)cnt * sz, 0, sz);
		if ((e = fill(&c, idx, cnt, arr + (size_t)cnt * sz, d)) != SL_OK)
			break;
		cnt++;
	}
	if (e != SL_OK) {
		free(arr);
		return e;
	}
	*out = arr;
	*n = cnt;
	return SL_OK;
}

static enum sl_err node_row(const struct csv *c, const int *idx, int row, void *elem,
			   struct sl_diag *d)
{
	struct sim_node *nd = elem;
	int64_t v[3];
	enum sl_err e;
	(void)row;
	if ((e = get_str(c, idx[0], "sn", nd->name, sizeof(nd->name), false, d)) ||
	    (e = get_int(c, idx[1], "cpu_milli", 0, SIM_MAX_CPU_MILLI, false, 0, &v[0], d)) ||
	    (e = get_int(c, idx[2], "memory_mib", 0, SIM_MAX_MEM_MIB, false, 0, &v[1], d)) ||
	    (e = get_int(c, idx[3], "gpu", 0, TOPO_MAX_GPUS, false, 0, &v[2], d)) ||
	    (e = get_str(c, idx[4], "model", nd->model, sizeof(nd->model), v[2] == 0, d)))
		return e;
	nd->cpu_milli = (int)v[0];
	nd->mem_mib = v[1];
	nd->gpus = (int)v[2];
	return SL_OK;
}

enum sl_err sim_parse_nodes(const char *text, size_t len, const char *file,
			    struct sim_node **out, int *n, struct sl_diag *d)
{
	static const char *const names[] = {"sn", "cpu_milli", "memory_mib", "gpu", "model",
					     NULL};
	return parse_table(text, len, file, names, 5, sizeof(**out), node_row, (void **)out, n, d);
}

/* Fills the GPU fields of a pod from num_gpu and gpu_milli. */
static enum sl_err pod_gpus(const struct csv *c, int inum, int imilli, int64_t num,
			    int64_t milli, struct sim_pod *pod, struct sl_diag *d)
{
	pod->gpus = (int)num;
	pod->gpu_milli = 0;
	if (num == 1 && milli > 0 && milli < 1000) {
		pod->gpus = 0;
		pod->gpu_milli = (int)milli;
	} else if (num > 0 && milli != 1000 && milli != 0) {
		return bad_field(c, imilli, "gpu_milli",
				 "1000 (or 0) for whole GPUs; a share needs num_gpu 1", d);
	} else if (num == 0 && milli != 0) {
		return bad_field(c, inum, "num_gpu", "1 when gpu_milli is set", d);
	}
	return SL_OK;
}

static enum sl_err pod_row(const struct csv *c, const int *idx, int row, void *elem,
			  struct sl_diag *d)
{
	struct sim_pod *pod = elem;
	int64_t v[6];
	enum sl_err e;
	(void)row;
	if ((e = get_str(c, idx[0], "name", pod->name, sizeof(pod->name), false, d)) ||
	    (e = get_int(c, idx[1], "cpu_milli", 0, SIM_MAX_CPU_MILLI, false, 0, &v[0], d)) ||
	    (e = get_int(c, idx[2], "memory_mib", 0, SIM_MAX_MEM_MIB, false, 0, &v[1], d)) ||
	    (e = get_int(c, idx[3], "num_gpu", 0, TOPO_MAX_GPUS, false, 0, &v[2], d)) ||
	    (e = get_int(c, idx[4], "gpu_milli", 0, 1000, false, 0, &v[3], d)) ||
	    (e = get_models(c, idx[5], "gpu_spec", pod, d)) ||
	    (e = get_int(c, idx[6], "creation_time", 0, SIM_MAX_TIME, true, -1, &v[4], d)) ||
	    (e = get_int(c, idx[7], "deletion_time", 0, SIM_MAX_TIME, true, -1, &v[5], d)) ||
	    (e = pod_gpus(c, idx[3], idx[4], v[2], v[3], pod, d)))
		return e;
	pod->cpu_milli = (int)v[0];
	pod->mem_mib = v[1];
	pod->start = v[4];
	pod->duration = v[4] >= 0 && v[5] >= v[4] ? v[5] - v[4] : -1;
	return SL_OK;
}

enum sl_err sim_parse_pods(const char *text, size_t len, const char *file,
			   struct sim_pod **out, int *n, struct sl_diag *d)
{
	static const char *const names[] = {"name", "cpu_milli", "memory_mib", "num_gpu",
					     "gpu_milli", "gpu_spec", "creation_time",
					     "deletion_time", NULL};
	return parse_table(text, len, file, names, 5, sizeof(**out), pod_row, (void **)out, n, d);
}

static enum sl_err job_row(const struct csv *c, const int *idx, int row, void *elem,
			  struct sl_diag *d)
{
	struct sim_pod *pod = elem;
	int64_t v[6];
	enum sl_err e;
	if ((e = get_int(c, idx[0], "submit_time", 0, SIM_MAX_TIME, false, 0, &v[0], d)) ||
	    (e = get_int(c, idx[1], "duration", 0, SIM_MAX_TIME, false, 0, &v[1], d)) ||
	    (e = get_int(c, idx[2], "gpus", 1, PLACE_MAX_GPUS, false, 0, &v[2], d)) ||
	    (e = get_int(c, idx[3], "gpus_per_node", 0, TOPO_MAX_GPUS, false, 0, &v[3], d)) ||
	    (e = get_models(c, idx[4], "model", pod, d)) ||
	    (e = get_str(c, idx[5], "plan", pod->plan, sizeof(pod->plan), true, d)) ||
	    (e = get_str(c, idx[6], "name", pod->name, sizeof(pod->name), true, d)) ||
	    (e = get_int(c, idx[7], "cpu_milli", 0, SIM_MAX_CPU_MILLI, true, 0, &v[4], d)) ||
	    (e = get_int(c, idx[8], "memory_mib", 0, SIM_MAX_MEM_MIB, true, 0, &v[5], d)))
		return e;
	if (v[3] > 0 && v[2] % v[3] != 0)
		return bad_field(c, idx[3], "gpus_per_node", "a divisor of gpus", d);
	if (!pod->name[0])
		snprintf(pod->name, sizeof(pod->name), "job-%d", row + 1);
	pod->start = v[0];
	pod->duration = v[1];
	pod->gpus = (int)v[2];
	pod->per_node = v[3] > 0 && v[3] < v[2] ? (int)v[3] : 0;
	pod->cpu_milli = (int)v[4];
	pod->mem_mib = v[5];
	return SL_OK;
}

enum sl_err sim_parse_jobs(const char *text, size_t len, const char *file,
			   struct sim_pod **out, int *n, struct sl_diag *d)
{
	static const char *const names[] = {"submit_time", "duration", "gpus", "gpus_per_node",
					     "model", "plan", "name", "cpu_milli", "memory_mib",
					     NULL};
	return parse_table(text, len, file, names, 6, sizeof(**out), job_row, (void **)out, n, d);
}

void sim_pod_request(const struct sim_pod *pod, struct place_request *req)
{
	memset(req, 0, sizeof(*req));
	req->gpus = pod->gpus;
	req->gpu_milli = pod->gpu_milli;
	req->per_node = pod->per_node;
	req->nmodels = pod->nmodels;
	for (int i = 0; i < pod->nmodels; i++)
		req->models[i] = pod->models[i];
	req->cpu_milli = pod->cpu_milli; /* exact on sim_build_fleet's types (cpu_milli),
					    whole cores on a controller's (history replays) */
	req->mem_mib = pod->mem_mib;
	req->exact_cpu_mem = true;
}

/* ---- fleet -------------------------------------------------------------- */

enum sl_err sim_build_fleet(struct fleet *f, const struct sim_node *nodes, int n,
			    int *skipped, struct sl_diag *d)
{
	int site, fab, leaf;
	*skipped = 0;
	enum sl_err e = fleet_add_site(f, "sim", "sim", &site, d);
	if (e == SL_OK)
		e = fleet_add_fabric(f, site, "sim", FABRIC_ROCE, 100, &fab, d);
	if (e == SL_OK)
		e = fleet_add_leaf(f, fab, "sim", &leaf, d);
	for (int i = 0; e == SL_OK && i < n; i++) {
		const struct sim_node *nd = &nodes[i];
		if (nd->gpus == 0) {
			(*skipped)++;
			continue;
		}
		const struct gpu_model *m = fleet_find_model(f, nd->model);
		if (!m) {
			struct gpu_model nm = {.name = nd->model, .vendor = "unknown", .pcie_gen = 3};
			e = fleet_add_model(f, &nm, &m, d);
			if (e != SL_OK)
				break;
		}
		if (nd->cpu_milli > 0 && nd->mem_mib / 1024 > INT32_MAX)
			return sl_diag_set(d, SL_EINVAL, "node %s: too much memory", nd->name);
		char tname[TOPO_NAME_MAX];
		snprintf(tname, sizeof(tname), "sim-%s-%d-%d-%lld", nd->model, nd->gpus,
			 nd->cpu_milli, (long long)(nd->mem_mib / 1024));
		int type = fleet_find_type(f, tname);
		if (type < 0) {
			struct node_type t;
			int8_t numa[TOPO_MAX_GPUS] = {0};
			e = topo_type_init(&t, tname, m, nd->gpus, nd->cpu_milli,
					   (int)(nd->mem_mib / 1024), numa, d);
			t.cpu_milli = true;
			if (e == SL_OK)
				e = fleet_add_type(f, &t, &type, d);
			if (e != SL_OK)
				break;
		}
		int idx;
		e = fleet_add_node(f, leaf, nd->name, type, &idx, d);
		if (e == SL_OK)
			f->nodes[idx].shareable = true;
	}
	return e;
}

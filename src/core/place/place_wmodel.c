/* place_wmodel.c - the learned workload (place_wmodel.h).
 *
 * A ring of the last `window` requests' shapes; the classes are rebuilt (a
 * sort of the window, at most PLACE_WMODEL_WINDOW_MAX entries) when asked for
 * after a change, so observing stays O(1). */
#include "place_wmodel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place_frag.h"
#include "buf.h"
#include "place_internal.h"

struct wm_entry {
	int gpus, milli;
	int cpu_milli;  /* exact requests' CPUs (thousandths) and memory, else 0 */
	int64_t mem_mib;
	char models[PLACE_WMODEL_MODELS_LEN];
};

struct place_wmodel {
	struct wm_entry *ring;
	int window, n, head; /* head: the oldest entry when n == window */
	long long total;
	struct place_wmodel_class *cls;
	int ncls;
	bool dirty;
};

static const struct {
	int gpus;
	int64_t w;
} prior[] = {{1, 12}, {2, 6}, {4, 4}, {8, 10}};

enum sl_err place_wmodel_new(int window, struct place_wmodel **out)
{
	*out = NULL;
	if (window == 0)
		window = PLACE_WMODEL_WINDOW;
	if (window < 1 || window > PLACE_WMODEL_WINDOW_MAX)
		return SL_EINVAL;
	struct place_wmodel *m = calloc(1, sizeof(*m));
	if (!m)
		return SL_ENOMEM;
	m->window = window;
	m->ring = calloc((size_t)window, sizeof(*m->ring));
	m->cls = calloc((size_t)window + 4, sizeof(*m->cls));
	if (!m->ring || !m->cls) {
		place_wmodel_free(m);
		return SL_ENOMEM;
	}
	m->dirty = true;
	*out = m;
	return SL_OK;
}

void place_wmodel_free(struct place_wmodel *m)
{
	if (!m)
		return;
	free(m->ring);
	free(m->cls);
	free(m);
}

static void push(struct place_wmodel *m, const struct wm_entry *e)
{
	if (m->n < m->window) {
		m->ring[(m->head + m->n) % m->window] = *e;
		m->n++;
	} else {
		m->ring[m->head] = *e;
		m->head = (m->head + 1) % m->window;
	}
	m->dirty = true;
}

/* "a|b" of the request's models; models too long for the bound count as any. */
static void models_of(const struct place_request *r, char *out)
{
	struct sl_buf b = SL_BUF_INIT(PLACE_WMODEL_MODELS_LEN - 1);
	out[0] = '\0';
	for (int i = 0; i < r->nmodels && i < PLACE_MAX_MODELS; i++)
		if (r->models[i])
			sl_buf_addf(&b, "%s%s", i ? "|" : "", r->models[i]);
	if (sl_buf_err(&b) == SL_OK && !strchr(sl_buf_str(&b), ' '))
		sl_buf_copy_out(&b, out, PLACE_WMODEL_MODELS_LEN);
	sl_buf_release(&b);
}

bool place_wmodel_observe(struct place_wmodel *m, const struct place_request *r)
{
	if (!m || !r)
		return false;
	struct wm_entry e;
	memset(&e, 0, sizeof(e));
	bool exact = r->exact_cpu_mem || r->cpu_milli > 0;
	if (exact) {
		e.cpu_milli = r->cpu_milli > 0 ? r->cpu_milli : 0;
		e.mem_mib = r->mem_mib > 0 ? r->mem_mib : 0;
	}
	if (r->gpu_milli > 0 && r->gpu_milli < PL_MILLI && r->gpus <= 1) {
		e.gpus = 1;
		e.milli = r->gpu_milli;
	} else if (r->gpus > 0) {
		e.gpus = r->per_node > 0 ? r->per_node : r->gpus;
		e.milli = 0;
	} else if (e.cpu_milli == 0 && e.mem_mib == 0) {
		return false;
	}
	if (e.gpus > PLACE_MAX_GPUS)
		e.gpus = PLACE_MAX_GPUS;
	models_of(r, e.models);
	push(m, &e);
	m->total++;
	return m->total % PLACE_WMODEL_REFRESH == 0;
}

int place_wmodel_seen(const struct place_wmodel *m)
{
	return m ? m->n : 0;
}

long long place_wmodel_total(const struct place_wmodel *m)
{
	return m ? m->total : 0;
}

static int cls_cmp(const void *a, const void *b)
{
	const struct place_wmodel_class *x = a, *y = b;
	if (x->gpus != y->gpus)
		return x->gpus < y->gpus ? -1 : 1;
	if (x->gpu_milli != y->gpu_milli)
		return x->gpu_milli < y->gpu_milli ? -1 : 1;
	if (x->cpu_milli != y->cpu_milli)
		return x->cpu_milli < y->cpu_milli ? -1 : 1;
	if (x->mem_mib != y->mem_mib)
		return x->mem_mib < y->mem_mib ? -1 : 1;
	return strcmp(x->models, y->models);
}

int place_wmodel_classes(struct place_wmodel *m, const struct place_wmodel_class **out)
{
	if (m->dirty) {
		int n = 0;
		for (size_t i = 0; i < sizeof(prior) / sizeof(prior[0]); i++)
			m->cls[n++] = (struct place_wmodel_class){prior[i].gpus, 0, 0, 0, "", prior[i].w};
		for (int i = 0; i < m->n; i++) {
			const struct wm_entry *e = &m->ring[(m->head + i) % m->window];
			struct place_wmodel_class *c = &m->cls[n++];
			c->gpus = e->gpus;
			c->gpu_milli = e->milli;
			c->cpu_milli = e->cpu_milli;
			c->mem_mib = e->mem_mib;
			memcpy(c->models, e->models, sizeof(c->models));
			c->weight = 1;
		}
		qsort(m->cls, (size_t)n, sizeof(*m->cls), cls_cmp);
		int w = 0;
		for (int i = 0; i < n; i++) {
			if (w > 0 && !cls_cmp(&m->cls[w - 1], &m->cls[i]))
				m->cls[w - 1].weight += m->cls[i].weight;
			else
				m->cls[w++] = m->cls[i];
		}
		m->ncls = w;
		m->dirty = false;
	}
	*out = m->cls;
	return m->ncls;
}

enum sl_err place_wmodel_apply(struct place_wmodel *m, struct placer *p, struct sl_diag *d)
{
	const struct place_wmodel_class *wc;
	int n = place_wmodel_classes(m, &wc);
	const struct fleet *f = p->f;
	int maxg = 0;
	bool milli_cpus = true; /* every node type counts CPUs in thousandths */
	for (int t = 0; t < f->ntypes; t++)
		if (p->ptabs[t]) {
			maxg = f->types[t].ngpus > maxg ? f->types[t].ngpus : maxg;
			milli_cpus &= f->types[t].cpu_milli;
		}
	struct place_class *pc = calloc((size_t)n + 1, sizeof(*pc));
	char (*names)[PLACE_WMODEL_MODELS_LEN] = calloc((size_t)n + 1, sizeof(*names));
	if (!pc || !names) {
		free(pc);
		free(names);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	int k = 0;
	for (int i = 0; i < n && maxg > 0; i++) {
		struct place_class *c = &pc[k];
		memset(c, 0, sizeof(*c));
		c->gpus = wc[i].gpus > maxg ? maxg : wc[i].gpus;
		c->gpu_milli = wc[i].gpu_milli;
		/* CPUs in the node types' unit (as pl_demand counts a request's) */
		c->cpus = milli_cpus ? wc[i].cpu_milli : (wc[i].cpu_milli + 999) / 1000;
		c->mem_mib = wc[i].mem_mib;
		c->weight = wc[i].weight;
		if (c->gpu_milli > 0)
			c->gpus = 0;
		if (wc[i].models[0]) {
			memcpy(names[k], wc[i].models, sizeof(names[k]));
			for (char *s = names[k], *bar; s && c->nmodels < PLACE_MAX_MODELS; s = bar) {
				bar = strchr(s, '|');
				if (bar)
					*bar++ = '\0';
				if (fleet_find_model(f, s))
					c->models[c->nmodels++] = s;
			}
			if (c->nmodels == 0)
				continue; /* only models this fleet lacks */
		}
		k++;
	}
	enum sl_err e = placer_set_workload(p, pc, k, d);
	free(pc);
	free(names);
	return e;
}

/* Appends v (>= 0) in decimal and then the byte `sep` at *p. */
static char *put_int(char *p, long long v, char sep)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0 && n < (int)sizeof(tmp));
	while (n > 0)
		*p++ = tmp[--n];
	*p++ = sep;
	return p;
}

/* Formats by hand, not with printf: a controller saves the window in every
 * turn that counted a request, and printf's 3 conversions x 1,024 lines
 * were a third of a lease create's CPU time (bench/results/api.md). */
enum sl_err place_wmodel_encode(const struct place_wmodel *m, char **out)
{
	/* a line: four numbers of at most 20 digits, the models, 5 separators */
	const size_t line_max = 4 * 20 + PLACE_WMODEL_MODELS_LEN + 5;
	struct sl_buf b = SL_BUF_INIT(64 + (size_t)m->n * line_max);
	sl_buf_addf(&b, "wmodel 2 %d %lld\n", m->window, m->total);
	if (sl_buf_grow(&b, (size_t)m->n * line_max) == SL_OK) {
		char *p = b.p + b.len;
		for (int i = 0; i < m->n; i++) {
			const struct wm_entry *e = &m->ring[(m->head + i) % m->window];
			p = put_int(p, e->gpus < 0 ? 0 : e->gpus, ' ');
			p = put_int(p, e->milli < 0 ? 0 : e->milli, ' ');
			p = put_int(p, e->cpu_milli < 0 ? 0 : e->cpu_milli, ' ');
			p = put_int(p, e->mem_mib < 0 ? 0 : (long long)e->mem_mib, ' ');
			size_t len = e->models[0] ? strnlen(e->models, sizeof(e->models) - 1) : 1;
			memcpy(p, e->models[0] ? e->models : "-", len);
			p += len;
			*p++ = '\n';
		}
		sl_buf_setlen(&b, (size_t)(p - b.p));
	}
	size_t len;
	return sl_buf_detach(&b, out, &len);
}

static bool parse_int(const char **s, long long lo, long long hi, long long *v)
{
	char *end;
	while (**s == ' ')
		(*s)++;
	if (**s < '0' || **s > '9')
		return false;
	*v = strtoll(*s, &end, 10);
	*s = end;
	return *v >= lo && *v <= hi;
}

enum sl_err place_wmodel_decode(struct place_wmodel *m, const char *text, struct sl_diag *d)
{
	const char *s = text;
	long long win, total;
	/* Version 1 lines are GPUS MILLI MODELS; version 2 adds CPU_MILLI MEM_MIB. */
	int ver = !strncmp(s, "wmodel 1 ", 9) ? 1 : !strncmp(s, "wmodel 2 ", 9) ? 2 : 0;
	if (!ver)
		return sl_diag_at(d, SL_EPARSE, 1, 1, "expected 'wmodel 2 WINDOW TOTAL'");
	s += 9;
	if (!parse_int(&s, 1, PLACE_WMODEL_WINDOW_MAX, &win) ||
	    !parse_int(&s, 0, (long long)1 << 62, &total) || *s != '\n')
		return sl_diag_at(d, SL_EPARSE, 1, 10, "expected WINDOW (1..%d) and TOTAL",
				  PLACE_WMODEL_WINDOW_MAX);
	s++;
	/* Parse into a fresh ring so a bad line changes nothing. */
	struct wm_entry *ring = calloc((size_t)m->window, sizeof(*ring));
	if (!ring)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	int n = 0, head = 0, line = 2;
	for (; *s; line++) {
		long long g, milli, cpu = 0, mem = 0;
		struct wm_entry e;
		memset(&e, 0, sizeof(e));
		if (!parse_int(&s, ver == 1 ? 1 : 0, PLACE_MAX_GPUS, &g) ||
		    !parse_int(&s, 0, PL_MILLI - 1, &milli) ||
		    (ver == 2 && (!parse_int(&s, 0, INT32_MAX, &cpu) ||
				  !parse_int(&s, 0, (long long)1 << 50, &mem))) ||
		    *s++ != ' ') {
			free(ring);
			return sl_diag_at(d, SL_EPARSE, line, 1, ver == 1 ? "expected 'GPUS MILLI MODELS'"
					  : "expected 'GPUS MILLI CPU_MILLI MEM_MIB MODELS'");
		}
		e.cpu_milli = (int)cpu;
		e.mem_mib = mem;
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		if (len == 0 || len >= PLACE_WMODEL_MODELS_LEN || memchr(s, ' ', len)) {
			free(ring);
			return sl_diag_at(d, SL_EPARSE, line, 1, "MODELS: expected '-' or "
					  "'model|model' under %d bytes", PLACE_WMODEL_MODELS_LEN);
		}
		e.gpus = (int)g;
		e.milli = (int)milli;
		if (!(len == 1 && s[0] == '-'))
			memcpy(e.models, s, len);
		s += len + (nl ? 1 : 0);
		if (n < m->window) {
			ring[n++] = e;
		} else {
			ring[head] = e;
			head = (head + 1) % m->window;
		}
	}
	free(m->ring);
	m->ring = ring;
	m->n = n;
	m->head = head;
	m->total = total;
	m->dirty = true;
	return SL_OK;
}

/* slurm_import.c - slurm.conf, gres.conf and topology.conf to a fleet file
 * (slurm_import.h).
 *
 * Each file is read as Slurm reads it: logical lines (a trailing backslash
 * continues one), '#' to the end of a line is a comment, a line is
 * whitespace-separated Key=Value words with case-insensitive keys. Hostlists
 * are expanded to names first (all bracket groups, comma lists, zero padding
 * from the lower bound), so the three files can refer to each other by node
 * name. The fleet file is written once everything has been judged. */
#include "slurm_import.h"
#include "slurm_int.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"
#include "fleet.h"
#include "strmap.h"
#include "topo.h"

void si_note(struct imp *m, const char *file, int line, bool untranslated,
		 const char *fmt, ...)
{
	struct slurm_result *r = m->r;
	char msg[sizeof(r->notes[0].msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* "node X: same words" again for the same line: count it on the first. */
	if (r->nnotes > 0 && !strncmp(msg, "node ", 5)) {
		struct slurm_note *p = &r->notes[r->nnotes - 1];
		const char *a = strchr(msg + 5, ' '), *b = strchr(p->msg + 5, ' ');
		if (p->file == file && p->line == line && p->untranslated == untranslated &&
		    !strncmp(p->msg, "node ", 5) && a && b && !strcmp(a, b)) {
			p->more++;
			return;
		}
	}
	if (r->nnotes >= SLURM_MAX_NOTES) {
		r->dropped_notes++;
		return;
	}
	if (r->nnotes % 64 == 0) {
		struct slurm_note *nn = realloc(r->notes, (size_t)(r->nnotes + 64) * sizeof(*nn));
		if (!nn) {
			r->dropped_notes++;
			return;
		}
		r->notes = nn;
	}
	struct slurm_note *n = &r->notes[r->nnotes++];
	n->file = file;
	n->line = line;
	n->untranslated = untranslated;
	n->more = 0;
	memcpy(n->msg, msg, sizeof(n->msg));
}

/* ---- lines and words ------------------------------------------------------- */


static void split_words(char *s, struct words *w)
{
	w->n = 0;
	for (char *save = NULL, *t = strtok_r(s, " \t\r", &save); t && w->n < MAX_TOKENS;
	     t = strtok_r(NULL, " \t\r", &save)) {
		char *eq = strchr(t, '=');
		w->k[w->n] = t;
		w->v[w->n] = NULL;
		if (eq) {
			*eq = '\0';
			char *v = eq + 1;
			size_t l = strlen(v);
			if (l >= 2 && v[0] == '"' && v[l - 1] == '"') {
				v[l - 1] = '\0';
				v++;
			}
			w->v[w->n] = v;
		}
		w->n++;
	}
}

const char *si_word(const struct words *w, const char *key)
{
	for (int i = 0; i < w->n; i++)
		if (!strcasecmp(w->k[i], key))
			return w->v[i] ? w->v[i] : "";
	return NULL;
}

typedef enum sl_err (*line_fn)(struct imp *m, const char *file, int line, struct words *w);

/* Calls fn for each logical line with words. */
static enum sl_err each_line(struct imp *m, const struct slurm_text *tx, line_fn fn)
{
	char *buf = malloc(SLURM_MAX_LINE + 1);
	if (!buf)
		return sl_diag_set(m->d, SL_ENOMEM, "out of memory");
	size_t at = 0, len = 0;
	int line = 1, start = 1;
	enum sl_err e = SL_OK;
	while (e == SL_OK && at <= tx->len) {
		size_t eol = at;
		while (eol < tx->len && tx->text[eol] != '\n')
			eol++;
		size_t l = eol - at;
		const char *s = tx->text + at;
		const char *hash = memchr(s, '#', l);
		size_t keep = hash ? (size_t)(hash - s) : l;
		while (keep > 0 && (s[keep - 1] == '\r' || s[keep - 1] == ' ' || s[keep - 1] == '\t'))
			keep--;
		bool cont = !hash && keep > 0 && s[keep - 1] == '\\';
		if (cont)
			keep--;
		if (len + keep + 1 > SLURM_MAX_LINE) {
			e = sl_diag_set(m->d, SL_ELIMIT, "%s:%d: a line longer than %d bytes", tx->name,
					start, SLURM_MAX_LINE);
			break;
		}
		memcpy(buf + len, s, keep);
		len += keep;
		buf[len++] = ' ';
		if (!cont || eol >= tx->len) {
			buf[len] = '\0';
			struct words w;
			split_words(buf, &w);
			if (w.n > 0)
				e = fn(m, tx->name, start, &w);
			len = 0;
			start = line + 1;
		}
		line++;
		at = eol + 1;
	}
	free(buf);
	return e;
}

/* ---- hostlists ------------------------------------------------------------- */


struct hl {
	struct imp *m;
	name_fn fn;
	void *arg;
	long count;
	const char *file;
	int line;
};

static enum sl_err hl_item(struct hl *h, const char *pre, const char *rest)
{
	const char *lb = strchr(rest, '[');
	char name[NAME_MAX_LEN * 2];
	if (!lb) {
		if ((size_t)snprintf(name, sizeof(name), "%s%s", pre, rest) >= NAME_MAX_LEN)
			return sl_diag_set(h->m->d, SL_EINVAL, "%s:%d: host name '%s%s' longer than "
					   "%d characters", h->file, h->line, pre, rest, NAME_MAX_LEN - 1);
		if (++h->count > HOSTLIST_MAX)
			return sl_diag_set(h->m->d, SL_ELIMIT, "%s:%d: hostlists name more than %d "
					   "hosts", h->file, h->line, HOSTLIST_MAX);
		return h->fn(h->m, h->arg, name);
	}
	const char *rb = strchr(lb, ']');
	if (!rb || (size_t)(lb - rest) + strlen(pre) >= NAME_MAX_LEN)
		return sl_diag_set(h->m->d, SL_EPARSE, "%s:%d: hostlist '%s': expected "
				   "'prefix[a-b,c]'", h->file, h->line, rest);
	char npre[NAME_MAX_LEN * 2];
	snprintf(npre, sizeof(npre), "%s%.*s", pre, (int)(lb - rest), rest);
	size_t plen = strlen(npre);
	for (const char *p = lb + 1; p < rb;) {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;
		int width = (int)(end - p);
		if (end == p || lo < 0)
			return sl_diag_set(h->m->d, SL_EPARSE, "%s:%d: hostlist '%s': expected a "
					   "number at '%.20s'", h->file, h->line, rest, p);
		p = end;
		if (*p == '-') {
			hi = strtol(p + 1, &end, 10);
			if (end == p + 1 || hi < lo)
				return sl_diag_set(h->m->d, SL_EPARSE, "%s:%d: hostlist '%s': bad range",
						   h->file, h->line, rest);
			p = end;
		}
		if (hi - lo > HOSTLIST_MAX)
			return sl_diag_set(h->m->d, SL_ELIMIT, "%s:%d: hostlist range too large",
					   h->file, h->line);
		for (long v = lo; v <= hi; v++) {
			snprintf(npre + plen, sizeof(npre) - plen, "%0*ld", width, v);
			enum sl_err e = hl_item(h, npre, rb + 1);
			if (e)
				return e;
		}
		npre[plen] = '\0';
		if (*p == ',')
			p++;
		else if (p != rb)
			return sl_diag_set(h->m->d, SL_EPARSE, "%s:%d: hostlist '%s': unexpected "
					   "'%c'", h->file, h->line, rest, *p);
	}
	return SL_OK;
}

enum sl_err si_hl_expand(struct imp *m, const char *file, int line, const char *expr,
			     name_fn fn, void *arg)
{
	struct hl h = {m, fn, arg, 0, file, line};
	char item[SLURM_MAX_LINE];
	size_t n = 0;
	int depth = 0;
	for (const char *p = expr;; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		if ((*p == ',' && depth == 0) || !*p) {
			item[n] = '\0';
			if (n > 0) {
				enum sl_err e = hl_item(&h, "", item);
				if (e)
					return e;
			}
			n = 0;
			if (!*p)
				break;
			continue;
		}
		if (n + 1 >= sizeof(item))
			return sl_diag_set(m->d, SL_ELIMIT, "%s:%d: hostlist too long", file, line);
		item[n++] = *p;
	}
	return SL_OK;
}

/* ---- GPU models -------------------------------------------------------------- */

const char *slurm_gpu_model(const char *gres_type)
{
	char t[NAME_MAX_LEN];
	size_t n = 0;
	for (const char *p = gres_type; p && *p && n + 1 < sizeof(t); p++)
		t[n++] = (char)((*p >= 'A' && *p <= 'Z') ? *p - 'A' + 'a' : *p);
	t[n] = '\0';
	/* Most specific first: "gb200" contains "b200", "h100nvl" contains "h100". */
	static const struct {
		const char *has, *also, *model;
	} map[] = {
		{"gb300", NULL, "gb300"},   {"gb200", NULL, "gb200"}, {"b300", NULL, "b300"},
		{"b200", NULL, "b200"},     {"h200", NULL, "h200-sxm"}, {"h100", "nvl", "h100-nvl"},
		{"h100", "pcie", NULL},     {"h100", NULL, "h100-sxm"}, {"h800", "pcie", NULL},
		{"h800", NULL, "h800-sxm"}, {"a800", "pcie", NULL},   {"a800", NULL, "a800-sxm"},
		{"a100", "pcie", NULL},     {"a100", NULL, "a100-sxm"}, {"l40s", NULL, "l40s"},
		{"910b", NULL, "ascend-910b"}, {"910", NULL, "ascend-910"},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strstr(t, map[i].has) && (!map[i].also || strstr(t, map[i].also)))
			return map[i].model;
	return NULL;
}

/* ---- slurm.conf ------------------------------------------------------------- */

struct add_ctx {
	const struct words *w;
	struct node_defaults *def;
	int line;
	const char *file;
};

static int num(const char *s, int missing)
{
	if (!s || !*s)
		return missing;
	char *end;
	long v = strtol(s, &end, 10);
	return (*end || v < 0 || v > 1 << 30) ? -2 : (int)v;
}

/* Gres "gpu:h100:8,gpu:a100:2(S:0-1),mps:100": the GPUs, or a note. */
static void parse_gres(struct imp *m, const char *file, int line, const char *node,
		       const char *g, struct snode *n)
{
	char copy[256];
	snprintf(copy, sizeof(copy), "%s", g);
	for (char *save = NULL, *it = strtok_r(copy, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
		char *paren = strchr(it, '(');
		if (paren)
			*paren = '\0';
		char *f[4] = {0};
		int nf = 0;
		for (char *s2 = NULL, *x = strtok_r(it, ":", &s2); x && nf < 4; x = strtok_r(NULL, ":", &s2))
			f[nf++] = x;
		if (nf == 0)
			continue;
		if (strcasecmp(f[0], "gpu")) {
			si_note(m, file, line, true, "node %s: gres '%s' has no suanli counterpart (only "
			     "GPUs are placed)", node, f[0]);
			continue;
		}
		int cnt = nf >= 2 ? num(f[nf - 1], -2) : 1;
		const char *type = nf == 3 ? f[1] : (nf == 2 && cnt < 0) ? f[1] : "";
		if (nf == 2 && cnt < 0)
			cnt = 1;
		if (cnt < 1 || cnt > TOPO_MAX_GPUS) {
			si_note(m, file, line, true, "node %s: gres gpu count '%s' outside 1..%d", node,
			     nf >= 2 ? f[nf - 1] : "", TOPO_MAX_GPUS);
			n->skip = true;
			continue;
		}
		if (n->gpus > 0) {
			si_note(m, file, line, true, "node %s: GPUs of two kinds (%s and %s); a suanli "
			     "node type has one model - split the node or drop one", node,
			     n->gtype[0] ? n->gtype : "untyped", type[0] ? type : "untyped");
			n->skip = true;
			continue;
		}
		n->gpus = cnt;
		snprintf(n->gtype, sizeof(n->gtype), "%s", type);
	}
}

static enum sl_err add_node(struct imp *m, void *arg, const char *name)
{
	struct add_ctx *c = arg;
	if (strmap_get(m->node_by_name, name, -1) >= 0) {
		si_note(m, c->file, c->line, true, "node %s defined again; the first definition is kept",
		     name);
		return SL_OK;
	}
	if (m->nnodes >= SLURM_MAX_NODES)
		return sl_diag_set(m->d, SL_ELIMIT, "more than %d nodes", SLURM_MAX_NODES);
	if (sl_grow(&m->nodes, &m->capnodes, m->nnodes + 1, SLURM_MAX_NODES))
		return sl_diag_set(m->d, SL_ENOMEM, "out of memory");
	struct snode *n = &m->nodes[m->nnodes];
	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->line = c->line;
	n->type = -1;
	n->leaf = -1;
	const struct words *w = c->w;
	const struct node_defaults *df = c->def;
	const char *g = si_word(w, "Gres");
	if (!g && df->gres[0])
		g = df->gres;
	if (g && *g)
		parse_gres(m, c->file, c->line, name, g, n);
	int sockets = num(si_word(w, "Sockets"), df->sockets), cores = num(si_word(w, "CoresPerSocket"), df->cores),
	    threads = num(si_word(w, "ThreadsPerCore"), df->threads);
	/* suanli counts cores; Slurm's CPUs counts threads when ThreadsPerCore > 1. */
	n->cpus = num(si_word(w, "CPUs"), df->cpus);
	if (n->cpus <= 0 && sockets > 0 && cores > 0)
		n->cpus = sockets * cores * (threads > 0 ? threads : 1);
	if (n->cpus > 0 && threads > 1) {
		si_note(m, c->file, c->line, false, "node %s: %d CPUs at %d threads per core: %d cores",
		     name, n->cpus, threads, n->cpus / threads);
		n->cpus /= threads;
	}
	n->cores_per_socket = cores > 0 ? cores : 0;
	const char *rm = si_word(w, "RealMemory");
	n->mem_mib = rm ? num(rm, -1) : df->mem;
	if (!fleet_name_valid(name)) {
		si_note(m, c->file, c->line, true, "node name '%s' is not a valid suanli name", name);
		n->skip = true;
	}
	enum sl_err e = strmap_add(m->node_by_name, name, m->nnodes);
	if (e)
		return sl_diag_set(m->d, e, "out of memory");
	m->nnodes++;
	return SL_OK;
}

static const char *const node_keys_ignored[] = {
	"NodeAddr", "NodeHostname", "Feature", "Features", "Weight", "State", "Port", "Reason",
	"TmpDisk", "MemSpecLimit", "CpuSpecList", "CoreSpecCount", "Boards", "SocketsPerBoard",
	"Procs", "Bcastaddr", "ThreadsPerCore", "Sockets", "CoresPerSocket", "CPUs", "RealMemory",
	"Gres", "NodeName"};

static enum sl_err slurm_line(struct imp *m, const char *file, int line, struct words *w)
{
	struct node_defaults *df = m->df;
	const char *k = w->k[0];
	if (!strcasecmp(k, "ClusterName") && w->v[0]) {
		/* It names the site, so it must be a suanli name. */
		if (fleet_name_valid(w->v[0]))
			snprintf(m->cluster, sizeof(m->cluster), "%s", w->v[0]);
		else
			si_note(m, file, line, true, "ClusterName '%.64s' is not a valid suanli name; "
			     "not used for the site (--site names it)", w->v[0]);
		return SL_OK;
	}
	if (!strcasecmp(k, "PartitionName")) {
		si_note(m, file, line, true, "partition %s: suanli has no partitions (tenants, owner pools "
		     "and reservations take their place; see docs/migrate.md)", w->v[0] ? w->v[0] : "?");
		return SL_OK;
	}
	if (!strcasecmp(k, "NodeSet") || !strcasecmp(k, "DownNodes") || !strcasecmp(k, "FrontendName")) {
		si_note(m, file, line, true, "%s: not translated", k);
		return SL_OK;
	}
	if (strcasecmp(k, "NodeName")) {
		if (!strcasecmp(k, "Include"))
			si_note(m, file, line, true, "Include %s: included files are not read; pass their "
			     "content in one file", w->v[0] ? w->v[0] : "");
		else if (m->daemon_settings++ == 0)
			m->daemon_first_line = line;
		return SL_OK;
	}
	if (!w->v[0] || !*w->v[0])
		return sl_diag_set(m->d, SL_EPARSE, "%s:%d: NodeName without a value", file, line);
	for (int i = 1; i < w->n; i++) {
		bool known = false;
		for (size_t j = 0; j < sizeof(node_keys_ignored) / sizeof(node_keys_ignored[0]); j++)
			known |= !strcasecmp(w->k[i], node_keys_ignored[j]);
		if (!known || i == 0)
			si_note(m, file, line, true, "NodeName %s: %s= not translated", w->v[0], w->k[i]);
		else if (!strcasecmp(w->k[i], "Feature") || !strcasecmp(w->k[i], "Features") ||
			 !strcasecmp(w->k[i], "Weight"))
			si_note(m, file, line, true, "NodeName %s: %s=%s not translated (suanli selects by "
			     "model, memory, bandwidth, region and site)", w->v[0], w->k[i],
			     w->v[i] ? w->v[i] : "");
	}
	if (!strcasecmp(w->v[0], "DEFAULT")) {
		const char *g = si_word(w, "Gres");
		if (g)
			snprintf(df->gres, sizeof(df->gres), "%s", g);
		df->cpus = num(si_word(w, "CPUs"), df->cpus);
		df->sockets = num(si_word(w, "Sockets"), df->sockets);
		df->cores = num(si_word(w, "CoresPerSocket"), df->cores);
		df->threads = num(si_word(w, "ThreadsPerCore"), df->threads);
		const char *rm = si_word(w, "RealMemory");
		if (rm)
			df->mem = num(rm, -1);
		return SL_OK;
	}
	struct add_ctx c = {w, df, line, file};
	return si_hl_expand(m, file, line, w->v[0], add_node, &c);
}

/* ---- gres.conf ------------------------------------------------------------- */

static enum sl_err count_file(struct imp *m, void *arg, const char *name)
{
	(void)m;
	(void)name;
	(*(int *)arg)++;
	return SL_OK;
}

static enum sl_err attach_gres(struct imp *m, void *arg, const char *name)
{
	int gi = *(int *)arg, ni = strmap_get(m->node_by_name, name, -1);
	if (ni < 0) {
		si_note(m, m->in->gres.name, m->gl[gi].line, true, "node %s is not in slurm.conf", name);
		return SL_OK;
	}
	struct snode *n = &m->nodes[ni];
	if (n->ngl < MAX_NODE_GRES)
		n->gl[n->ngl++] = gi;
	return SL_OK;
}

static enum sl_err gres_line(struct imp *m, const char *file, int line, struct words *w)
{
	const char *name = si_word(w, "Name"), *ad = si_word(w, "AutoDetect");
	if (ad && !name) {
		si_note(m, file, line, false, "AutoDetect=%s: suanli's agent discovers GPUs and links "
		     "itself (NVML); types come from built-in ones where they match", ad);
		return SL_OK;
	}
	if (!name) {
		si_note(m, file, line, true, "a line without Name= is not translated");
		return SL_OK;
	}
	if (strcasecmp(name, "gpu")) {
		si_note(m, file, line, true, "gres %s: only GPUs are translated", name);
		return SL_OK;
	}
	enum sl_err ge = sl_grow(&m->gl, &m->capgl, m->ngl + 1, SLURM_MAX_GRES_LINES);
	if (ge)
		return sl_diag_set(m->d, ge, "gres.conf: more than %d lines, or out of memory",
				   SLURM_MAX_GRES_LINES);
	struct gline *g = &m->gl[m->ngl];
	memset(g, 0, sizeof(*g));
	g->line = line;
	g->cores_lo = -1;
	const char *nodes = si_word(w, "NodeName"), *type = si_word(w, "Type"), *fl = si_word(w, "File"),
		   *cnt = si_word(w, "Count"), *links = si_word(w, "Links"), *cores = si_word(w, "Cores");
	snprintf(g->type, sizeof(g->type), "%s", type ? type : "");
	if (fl) {
		int files = 0;
		enum sl_err e = si_hl_expand(m, file, line, fl, count_file, &files);
		if (e)
			return e;
		g->count = files;
	} else {
		g->count = num(cnt, 1);
	}
	if (g->count < 1)
		g->count = 1;
	if (links) {
		if (g->count != 1) {
			si_note(m, file, line, true, "Links= on a line of %d GPUs is ambiguous; give one "
			     "line per GPU", g->count);
		} else {
			char copy[256];
			snprintf(copy, sizeof(copy), "%s", links);
			for (char *s = NULL, *x = strtok_r(copy, ",", &s); x && g->nlinks < TOPO_MAX_GPUS;
			     x = strtok_r(NULL, ",", &s))
				g->links[g->nlinks++] = atoi(x);
		}
	}
	if (cores)
		g->cores_lo = atoi(cores);
	if (nodes) {
		g->nodes = strdup(nodes);
		if (!g->nodes)
			return sl_diag_set(m->d, SL_ENOMEM, "out of memory");
	}
	for (int i = 0; i < w->n; i++) {
		static const char *const known[] = {"NodeName", "Name", "Type", "File", "Count",
						    "Links", "Cores", "Flags", "AutoDetect"};
		bool k = false;
		for (size_t j = 0; j < sizeof(known) / sizeof(known[0]); j++)
			k |= !strcasecmp(w->k[i], known[j]);
		if (!k)
			si_note(m, file, line, true, "%s= not translated", w->k[i]);
	}
	int gi = m->ngl++;
	if (g->nodes)
		return si_hl_expand(m, file, line, g->nodes, attach_gres, &gi);
	for (int i = 0; i < m->nnodes; i++)
		if (m->nodes[i].ngl < MAX_NODE_GRES)
			m->nodes[i].gl[m->nodes[i].ngl++] = gi;
	return SL_OK;
}

/* ---- the import ---------------------------------------------------------- */

static void imp_free(struct imp *m)
{
	strmap_free(m->node_by_name);
	strmap_free(m->sw_by_name);
	strmap_free(m->blk_by_name);
	for (int i = 0; i < m->ngl; i++)
		free(m->gl[i].nodes);
	for (int i = 0; i < m->nsws; i++) {
		free(m->sws[i].nodes);
		free(m->sws[i].switches);
	}
	free(m->nodes);
	free(m->gl);
	free(m->types);
	free(m->sws);
}

enum sl_err slurm_import(const struct slurm_input *in, struct slurm_result *out, struct sl_diag *d)
{
	memset(out, 0, sizeof(*out));
	if (!in || !in->slurm.text || !in->slurm.name)
		return sl_diag_set(d, SL_EINVAL, "no slurm.conf given");
	const struct slurm_text *tx[3] = {&in->slurm, &in->gres, &in->topo};
	for (int i = 0; i < 3; i++)
		if (tx[i]->name && tx[i]->len > SLURM_MAX_FILE)
			return sl_diag_set(d, SL_ELIMIT, "%s is larger than %u MiB", tx[i]->name,
					   SLURM_MAX_FILE >> 20);
	struct imp m;
	memset(&m, 0, sizeof(m));
	m.in = in;
	m.r = out;
	m.d = d;
	struct node_defaults df = {.cpus = -1, .sockets = -1, .cores = -1, .threads = -1, .mem = -1};
	enum sl_err e = strmap_new(&m.node_by_name);
	if (!e)
		e = strmap_new(&m.sw_by_name);
	if (!e)
		e = strmap_new(&m.blk_by_name);
	if (e) {
		imp_free(&m);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	m.df = &df;
	e = each_line(&m, &in->slurm, slurm_line);
	if (!e && m.daemon_settings)
		si_note(&m, in->slurm.name, m.daemon_first_line, false, "%d settings of the Slurm daemons "
		     "(scheduler, accounting, plugins, timers) are not fleet facts and were skipped",
		     m.daemon_settings);
	if (!e && in->gres.name && in->gres.text)
		e = each_line(&m, &in->gres, gres_line);
	for (int i = 0; !e && i < m.nnodes; i++)
		e = si_judge_node(&m, &m.nodes[i]);
	if (!e && in->topo.name && in->topo.text)
		e = each_line(&m, &in->topo, si_topo_line);
	for (int i = 0; i < m.nsws; i++)
		m.tree |= m.sws[i].parent != -2;
	if (!e && m.tree) {
		e = si_build_tree(&m);
		for (int i = 0; !e && i < m.nnodes; i++)
			if (m.nodes[i].type >= 0 && m.nodes[i].leaf < 0)
				si_note(&m, in->topo.name, 0, true, "node %s is under no leaf switch; it goes "
				     "to leaf 'unswitched' of its own fabric", m.nodes[i].name);
	} else if (!e) {
		si_note(&m, in->topo.name ? in->topo.name : in->slurm.name, 0, false, "%s: every node "
		     "under one leaf switch (leaf-1), as Slurm sees such a site",
		     in->topo.name ? "no switches (SwitchName=)" : "no topology.conf");
	}
	if (!e) {
		if (!in->site)
			si_note(&m, in->slurm.name, 0, false, "Slurm names no site: site '%s' (--site)",
			     m.cluster[0] ? m.cluster : "site-1");
		if (!in->region)
			si_note(&m, in->slurm.name, 0, false, "Slurm names no region: region 'unknown' "
			     "(--region)");
		if (!in->fabric_kind || in->fabric_gbps <= 0)
			si_note(&m, in->slurm.name, 0, false, "Slurm names no fabric kind or speed: %s at "
			     "%d Gb/s (--fabric-kind, --fabric-gbps)",
			     in->fabric_kind ? in->fabric_kind : "infiniband",
			     in->fabric_gbps > 0 ? in->fabric_gbps : 400);
		struct sl_buf b = SL_BUF_INIT(FLEET_MAX_FILE);
		si_write_fleet(&m, &b);
		e = si_write_domains(&m, &b);
		if (!e && out->nodes == 0)
			e = sl_diag_set(d, SL_EINVAL, "no GPU node of %s could be translated (see the "
					"notes)", in->slurm.name);
		enum sl_err be = sl_buf_detach(&b, &out->yaml, &out->len);
		if (be && !e)
			e = sl_diag_set(d, be, "the fleet file: %s", be == SL_ELIMIT
					? "larger than a fleet file may be" : "out of memory");
	}
	imp_free(&m);
	return e;
}

void slurm_result_release(struct slurm_result *r)
{
	if (!r)
		return;
	free(r->yaml);
	free(r->notes);
	memset(r, 0, sizeof(*r));
}

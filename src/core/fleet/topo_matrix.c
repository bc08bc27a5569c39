/* topo_matrix.c - reading and writing `nvidia-smi topo -m` matrices.
 *
 * The agent discovers a server's topology by running `nvidia-smi topo -m`; the
 * CLI lets an operator paste one to define a node type. The text is meant for
 * people, so the parser is tolerant where real outputs vary (tabs or runs of
 * spaces, NIC columns named NIC<n> or mlx5_<n>, optional CPU/NUMA/GPU NUMA ID
 * columns, NIC rows in any order, the legend blocks) and strict where a mistake
 * would misplace leases (every GPU row exactly once, known entries only, a
 * symmetric GPU block). It works in two passes over a private copy of the node
 * type: scan the text into a small grid, then translate the grid into links, so
 * that a failing parse leaves the caller's type unchanged.
 *
 * NV# needs interpretation: through NVSwitch every pair shows the bonded links
 * it can use (NV12 on DGX A100, NV18 on H100), which no GPU could have to seven
 * peers at once. So when every pair is NV and a GPU's counts add up to more
 * links than the model has, the node is an NVSwitch system.
 */
#include "topo.h"
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NIC columns a header may name. Real servers list more NICs than a node type
 * keeps (storage and management ports, bonds: 18 on some HGX H100, 40 on some
 * B200 hosts); the TOPO_MAX_NICS nearest to a GPU are kept. */
#define MX_MAX_NIC_COLS 64
#define MX_MAX_DEVS (TOPO_MAX_GPUS + MX_MAX_NIC_COLS) /* columns a header may name */
#define MX_MAX_TOKENS (MX_MAX_DEVS + 8)              /* tokens on one line */
#define MX_TOKEN_MAX 32                               /* bytes of one token */

/* What one entry of the matrix says. Ordered weakest to strongest for NICs. */
enum mx_rel {
	MX_NONE = 0,
	MX_SYS,
	MX_NODE,
	MX_PHB,
	MX_PXB,
	MX_PIX,
	MX_HCCS,
	MX_NV,  /* count in mx_ent.count */
	MX_NVS, /* "NVS": NVSwitch written by topo_format_matrix for unknown models */
	MX_SELF,
};

struct mx_ent {
	enum mx_rel rel;
	int count;
	int line, col;
};

struct tok {
	const char *s;
	int len, col;
};

struct mx {
	int ndev;
	char dev[MX_MAX_DEVS][MX_TOKEN_MAX];
	int devgpu[MX_MAX_DEVS]; /* GPU index of a column, -1 for a NIC */
	int nnic;
	bool has_cpu, has_numa, has_gpunuma;
	int header_line;
	bool seen[TOPO_MAX_GPUS];
	int nseen;
	int numa[TOPO_MAX_GPUS]; /* -1: not given */
	struct mx_ent e[TOPO_MAX_GPUS][MX_MAX_DEVS];
};

static bool tok_is(const struct tok *t, const char *s)
{
	return (size_t)t->len == strlen(s) && memcmp(t->s, s, (size_t)t->len) == 0;
}

/* Splits one line into whitespace-separated tokens, keeping the first
 * MX_MAX_TOKENS. Returns the 1-based column of the first token beyond them, or
 * 0: only the header and matrix rows must fit, prose around them (legends,
 * notes, a shell prompt) may be longer. */
static int tokenize(const char *line, int len, struct tok *out, int *n)
{
	int i = 0;
	*n = 0;
	while (i < len) {
		int start;
		while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
			i++;
		if (i >= len)
			break;
		start = i;
		while (i < len && line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
			i++;
		if (*n >= MX_MAX_TOKENS)
			return start + 1;
		out[*n].s = line + start;
		out[*n].len = i - start;
		out[*n].col = start + 1;
		(*n)++;
	}
	return 0;
}

/* "GPU<n>" with n a plain decimal; -1 otherwise. */
static int gpu_label(const struct tok *t)
{
	int v = 0;
	if (t->len < 4 || t->len > 6 || memcmp(t->s, "GPU", 3) != 0)
		return -1;
	for (int i = 3; i < t->len; i++) {
		if (t->s[i] < '0' || t->s[i] > '9')
			return -1;
		v = v * 10 + (t->s[i] - '0');
	}
	return v;
}

static bool parse_entry(const struct tok *t, struct mx_ent *e)
{
	static const struct {
		const char *s;
		enum mx_rel r;
	} names[] = {
		{"X", MX_SELF}, {"SYS", MX_SYS}, {"SOC", MX_SYS}, {"NODE", MX_NODE},
		{"PHB", MX_PHB}, {"PXB", MX_PXB}, {"PIX", MX_PIX}, {"HCCS", MX_HCCS},
		{"NVS", MX_NVS},
	};
	e->count = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (tok_is(t, names[i].s)) {
			e->rel = names[i].r;
			return true;
		}
	if (t->len >= 3 && t->len <= 5 && t->s[0] == 'N' && t->s[1] == 'V') {
		int v = 0;
		for (int i = 2; i < t->len; i++) {
			if (t->s[i] < '0' || t->s[i] > '9')
				return false;
			v = v * 10 + (t->s[i] - '0');
		}
		if (v < 1 || v > UINT8_MAX)
			return false;
		e->rel = MX_NV;
		e->count = v;
		return true;
	}
	return false;
}

static enum sl_err bad_entry(const struct mx *m, const struct tok *row, int c,
			     const struct tok *t, int lineno, struct sl_diag *d)
{
	sl_diag_at(d, SL_EPARSE, lineno, t->col,
		   "unknown entry '%.*s' at row %.*s column %s; expected X, NV<n>, PIX, "
		   "PXB, PHB, NODE, SYS or HCCS", t->len > 16 ? 16 : t->len, t->s,
		   row->len > 16 ? 16 : row->len, row->s, m->dev[c]);
	return SL_EPARSE;
}

static enum sl_err parse_header(struct mx *m, const struct node_type *t,
				const struct tok *tk, int n, int lineno, struct sl_diag *d)
{
	int i = 0, ngpu = 0;

	for (; i < n; i++) {
		if (tok_is(&tk[i], "CPU") || tok_is(&tk[i], "NUMA") ||
		    (tok_is(&tk[i], "GPU") && i + 1 < n && tok_is(&tk[i + 1], "NUMA")))
			break;
		if (m->ndev >= MX_MAX_DEVS || tk[i].len >= MX_TOKEN_MAX ||
		    (gpu_label(&tk[i]) < 0 && m->nnic >= MX_MAX_NIC_COLS))
			return sl_diag_at(d, SL_ELIMIT, lineno, tk[i].col,
					  "header names more than %d GPUs or %d NICs, or a "
					  "name longer than %d bytes", TOPO_MAX_GPUS,
					  MX_MAX_NIC_COLS, MX_TOKEN_MAX - 1);
		int g = gpu_label(&tk[i]);
		if (g >= 0) {
			if (g != ngpu || m->nnic > 0)
				return sl_diag_at(d, SL_EPARSE, lineno, tk[i].col,
						  "header column '%.*s' out of order; expected "
						  "GPU%d", tk[i].len, tk[i].s, ngpu);
			ngpu++;
		} else {
			m->nnic++;
		}
		memcpy(m->dev[m->ndev], tk[i].s, (size_t)tk[i].len);
		m->dev[m->ndev][tk[i].len] = 0;
		m->devgpu[m->ndev++] = g;
	}
	if (ngpu != t->ngpus)
		return sl_diag_at(d, SL_EPARSE, lineno, 1,
				  "expected %d GPU columns (GPU0..GPU%d) for type %s, found %d",
				  t->ngpus, t->ngpus - 1, t->name, ngpu);
	while (i < n) {
		if (i + 1 < n && tok_is(&tk[i], "CPU") && tok_is(&tk[i + 1], "Affinity")) {
			m->has_cpu = true;
			i += 2;
		} else if (i + 1 < n && tok_is(&tk[i], "NUMA") &&
			   tok_is(&tk[i + 1], "Affinity")) {
			m->has_numa = true;
			i += 2;
		} else if (i + 2 < n && tok_is(&tk[i], "GPU") && tok_is(&tk[i + 1], "NUMA") &&
			   tok_is(&tk[i + 2], "ID")) {
			m->has_gpunuma = true;
			i += 3;
		} else {
			return sl_diag_at(d, SL_EPARSE, lineno, tk[i].col,
					  "unexpected header column '%.*s'; expected "
					  "'CPU Affinity', 'NUMA Affinity' or 'GPU NUMA ID'",
					  tk[i].len > 20 ? 20 : tk[i].len, tk[i].s);
		}
	}
	m->header_line = lineno;
	return SL_OK;
}

/* The NUMA Affinity field: a node number, or N/A / a range (left unknown). */
static int parse_numa(const struct tok *t)
{
	int v = 0;
	if (t->len < 1 || t->len > 3)
		return -1;
	for (int i = 0; i < t->len; i++) {
		if (t->s[i] < '0' || t->s[i] > '9')
			return -1;
		v = v * 10 + (t->s[i] - '0');
	}
	return v <= INT8_MAX ? v : -1;
}

static enum sl_err parse_row(struct mx *m, const struct node_type *t,
			     const struct tok *tk, int n, int lineno, struct sl_diag *d)
{
	int g = gpu_label(&tk[0]), row_dev = -1;
	int ntrail_max = m->has_cpu + m->has_numa + m->has_gpunuma;

	for (int c = 0; c < m->ndev; c++)
		if ((size_t)tk[0].len == strlen(m->dev[c]) &&
		    memcmp(tk[0].s, m->dev[c], (size_t)tk[0].len) == 0)
			row_dev = c;
	if (row_dev < 0)
		return sl_diag_at(d, SL_EPARSE, lineno, tk[0].col,
				  "unknown row '%.*s'; expected GPU0..GPU%d or a NIC named "
				  "in the header", tk[0].len > 20 ? 20 : tk[0].len, tk[0].s,
				  t->ngpus - 1);
	if (n - 1 < m->ndev)
		return sl_diag_at(d, SL_EPARSE, lineno, tk[n - 1].col + tk[n - 1].len,
				  "row %.*s has %d entries; expected %d", tk[0].len, tk[0].s,
				  n - 1, m->ndev);
	if (n - 1 - m->ndev > ntrail_max)
		return sl_diag_at(d, SL_EPARSE, lineno, tk[1 + m->ndev].col,
				  "row %.*s has %d fields after its %d entries; the header "
				  "announces %d", tk[0].len, tk[0].s, n - 1 - m->ndev,
				  m->ndev, ntrail_max);
	if (g >= 0) {
		if (m->seen[g])
			return sl_diag_at(d, SL_EPARSE, lineno, tk[0].col,
					  "row GPU%d appears twice", g);
		m->seen[g] = true;
		m->nseen++;
	}
	for (int c = 0; c < m->ndev; c++) {
		const struct tok *x = &tk[1 + c];
		struct mx_ent e;
		if (!parse_entry(x, &e))
			return bad_entry(m, &tk[0], c, x, lineno, d);
		if ((e.rel == MX_SELF) != (c == row_dev))
			return sl_diag_at(d, SL_EPARSE, lineno, x->col,
					  "entry '%.*s' at row %.*s column %s; X belongs on the "
					  "diagonal and only there", x->len, x->s, tk[0].len,
					  tk[0].s, m->dev[c]);
		e.line = lineno;
		e.col = x->col;
		if (g >= 0)
			m->e[g][c] = e;
	}
	if (g >= 0 && m->has_numa) {
		/* Right-aligned: the CPU Affinity field may be blank. */
		int ntrail = n - 1 - m->ndev;
		int idx = ntrail - 1 - (m->has_gpunuma ? 1 : 0);
		if (idx >= 0)
			m->numa[g] = parse_numa(&tk[1 + m->ndev + idx]);
	}
	return SL_OK;
}

/* "  NIC0: mlx5_0" renames column NIC0. */
static enum sl_err parse_nic_legend(struct mx *m, const struct tok *tk, int n,
				    int lineno, struct sl_diag *d)
{
	if (n != 2 || tk[0].len < 2 || tk[0].s[tk[0].len - 1] != ':')
		return SL_OK;
	for (int c = 0; c < m->ndev; c++) {
		if (m->devgpu[c] >= 0 || (size_t)tk[0].len - 1 != strlen(m->dev[c]) ||
		    memcmp(tk[0].s, m->dev[c], (size_t)tk[0].len - 1) != 0)
			continue;
		if (tk[1].len >= MX_TOKEN_MAX)
			return sl_diag_at(d, SL_ELIMIT, lineno, tk[1].col,
					  "NIC name longer than %d bytes", MX_TOKEN_MAX - 1);
		memcpy(m->dev[c], tk[1].s, (size_t)tk[1].len);
		m->dev[c][tk[1].len] = 0;
	}
	return SL_OK;
}

/* Pass one: text -> grid. */
static enum sl_err scan(struct mx *m, const struct node_type *t, const char *text,
			struct sl_diag *d)
{
	enum { BEFORE, MATRIX, AFTER, NIC_LEGEND } state = BEFORE;
	struct tok tk[MX_MAX_TOKENS];
	const char *p = text;
	int lineno = 0, last_line = 0, n, over;
	enum sl_err e;

	while (*p) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);
		lineno++;
		over = tokenize(p, len, tk, &n);
		p += len + (nl ? 1 : 0);
		if (over && (state == MATRIX ? n > 0 : state == BEFORE && gpu_label(&tk[0]) == 0))
			return sl_diag_at(d, SL_ELIMIT, lineno, over,
					  "more than %d fields on one line", MX_MAX_TOKENS);
		if (n == 1 && tok_is(&tk[0], "Legend:")) {
			state = state == BEFORE ? BEFORE : AFTER;
			continue;
		}
		if (n == 2 && tok_is(&tk[0], "NIC") && tok_is(&tk[1], "Legend:")) {
			state = state == BEFORE ? BEFORE : NIC_LEGEND;
			continue;
		}
		switch (state) {
		case BEFORE:
			if (n > 0 && gpu_label(&tk[0]) == 0) {
				e = parse_header(m, t, tk, n, lineno, d);
				if (e)
					return e;
				state = MATRIX;
			}
			break;
		case MATRIX:
			if (n == 0) {
				state = AFTER;
				break;
			}
			e = parse_row(m, t, tk, n, lineno, d);
			if (e)
				return e;
			last_line = lineno;
			break;
		case AFTER:
			break;
		case NIC_LEGEND:
			e = parse_nic_legend(m, tk, n, lineno, d);
			if (e)
				return e;
			break;
		}
	}
	if (state == BEFORE)
		return sl_diag_at(d, SL_EPARSE, lineno > 0 ? lineno : 1, 1,
				  "no matrix header found; expected a line starting with GPU0 "
				  "(the output of `nvidia-smi topo -m`)");
	if (m->nseen != t->ngpus) {
		int missing = 0;
		while (missing < t->ngpus && m->seen[missing])
			missing++;
		return sl_diag_at(d, SL_EPARSE, (last_line ? last_line : m->header_line) + 1, 1,
				  "expected %d GPU rows, found %d (GPU%d is missing)",
				  t->ngpus, m->nseen, missing);
	}
	return SL_OK;
}

/* Pass two helpers. */

static bool is_nvswitch(const struct mx *m, const struct node_type *t)
{
	int per_gpu = t->gpu->link_gbps > 0 ? t->gpu->ic_gbps / t->gpu->link_gbps : 0;

	if (t->ngpus < 2)
		return false;
	for (int a = 0; a < t->ngpus; a++) {
		int sum = 0;
		for (int b = 0; b < t->ngpus; b++) {
			const struct mx_ent *x = &m->e[a][b];
			if (a == b)
				continue;
			if (x->rel == MX_NVS)
				continue;
			if (x->rel != MX_NV)
				return false;
			sum += x->count;
		}
		if (per_gpu > 0 && sum <= per_gpu)
			return false;
	}
	return per_gpu > 0 || t->ngpus >= 4;
}

static enum sl_err set_pair(struct node_type *t, const struct mx *m, int a, int b,
			    bool nvswitch, struct sl_diag *d)
{
	const struct mx_ent *x = &m->e[a][b];
	int p = topo_kind_gbps(t, LINK_PCIE_SWITCH, 0);
	enum link_kind k;
	int count = 0, gbps = 0;
	enum sl_err e;

	switch (x->rel) {
	case MX_NV:
	case MX_NVS:
		if (nvswitch || x->rel == MX_NVS) {
			k = LINK_NVSWITCH;
		} else {
			k = LINK_NVLINK;
			count = x->count;
		}
		break;
	case MX_HCCS:
		k = LINK_HCCS;
		break;
	case MX_PIX:
		k = LINK_PCIE_SWITCH;
		break;
	case MX_PXB:
		/* Several switches deep: just below one switch. */
		k = LINK_PCIE_SWITCH;
		gbps = p * 7 / 8;
		break;
	case MX_PHB:
		k = LINK_PCIE_HOSTBRIDGE;
		break;
	case MX_NODE:
		k = LINK_NUMA;
		break;
	default:
		k = LINK_CROSS_SOCKET;
		break;
	}
	e = topo_set_link(t, a, b, k, count, gbps, d);
	if (e && d) {
		d->line = x->line;
		d->col = x->col;
	}
	if (!e && k == LINK_NVSWITCH && x->rel == MX_NV) {
		/* Keep the bonded count the matrix showed, for the formatter. */
		t->link[a][b].count = t->link[b][a].count = (uint8_t)x->count;
	}
	return e;
}

static enum sl_err build(struct node_type *t, const struct mx *m, struct sl_diag *d)
{
	bool nvs = is_nvswitch(m, t);
	enum sl_err e = SL_OK;

	for (int a = 0; a < t->ngpus; a++)
		for (int b = a + 1; b < t->ngpus; b++) {
			const struct mx_ent *x = &m->e[a][b], *y = &m->e[b][a];
			if (x->rel != y->rel || x->count != y->count)
				return sl_diag_at(d, SL_EPARSE, y->line, y->col,
						  "row GPU%d column GPU%d differs from row GPU%d "
						  "column GPU%d; expected a symmetric matrix",
						  b, a, a, b);
			e = set_pair(t, m, a, b, nvs, d);
			if (e)
				return e;
		}
	for (int a = 0; a < t->ngpus; a++)
		if (m->numa[a] >= 0)
			t->numa[a] = (int8_t)m->numa[a];
	if (m->nnic == 0)
		return SL_OK;

	struct topo_nic old[TOPO_MAX_NICS];
	enum mx_rel best[MX_MAX_DEVS];
	gpumask_t rails[MX_MAX_DEVS];
	bool keep[MX_MAX_DEVS] = {false};
	int nold = t->nnics, kept = 0;
	memcpy(old, t->nics, sizeof(old));
	t->nnics = 0;
	for (int c = 0; c < m->ndev; c++) {
		best[c] = MX_NONE;
		rails[c] = 0;
		for (int g = 0; m->devgpu[c] < 0 && g < t->ngpus; g++) {
			enum mx_rel r = m->e[g][c].rel;
			if (r > best[c]) {
				best[c] = r;
				rails[c] = 0;
			}
			if (r == best[c])
				rails[c] |= (gpumask_t)1 << g;
		}
	}
	/* More NICs than a type keeps: the nearest to some GPU first, ties in
	 * column order; kept ones stay in column order. */
	for (int r = MX_SELF; r > MX_NONE && kept < TOPO_MAX_NICS; r--)
		for (int c = 0; c < m->ndev && kept < TOPO_MAX_NICS; c++)
			if (m->devgpu[c] < 0 && (int)best[c] == r) {
				keep[c] = true;
				kept++;
			}
	for (int c = 0; c < m->ndev && !e; c++) {
		gpumask_t rail = rails[c];
		int gbps = 0;
		if (!keep[c])
			continue;
		for (int i = 0; i < nold; i++)
			if (strcmp(old[i].name, m->dev[c]) == 0)
				gbps = old[i].gbps;
		e = topo_add_nic(t, m->dev[c], gbps, rail, d);
	}
	return e;
}

/* Whether text is longer than max, reading at most max + 1 bytes of it. */
static bool text_len_over(const char *text, size_t max)
{
	for (size_t i = 0; i <= max; i++)
		if (text[i] == 0)
			return false;
	return true;
}

enum sl_err topo_parse_matrix(struct node_type *t, const char *text, struct sl_diag *d)
{
	struct node_type nt;
	struct mx *m;
	enum sl_err e;

	if (!t || !t->gpu || t->ngpus < 1 || t->ngpus > TOPO_MAX_GPUS)
		return sl_diag_set(d, SL_EINVAL, "node type not initialised (topo_type_init)");
	if (!text)
		return sl_diag_set(d, SL_EINVAL, "no matrix text");
	if (text_len_over(text, TOPO_MATRIX_MAX_TEXT))
		return sl_diag_set(d, SL_ELIMIT, "topology matrix text exceeds %u bytes",
				   TOPO_MATRIX_MAX_TEXT);
	m = calloc(1, sizeof(*m));
	if (!m)
		return sl_diag_set(d, SL_ENOMEM, "out of memory parsing a topology matrix");
	for (int i = 0; i < TOPO_MAX_GPUS; i++)
		m->numa[i] = -1;
	nt = *t;
	e = scan(m, &nt, text, d);
	if (!e)
		e = build(&nt, m, d);
	free(m);
	if (!e)
		*t = nt;
	return e;
}

/* ---- formatter ---- */


static void entry_name(const struct node_type *t, int a, int b, char *s, size_t n)
{
	const struct topo_link *l = &t->link[a][b];
	const struct gpu_model *g = t->gpu;
	int links = g->link_gbps > 0 ? g->ic_gbps / g->link_gbps : 0;

	switch (l->kind) {
	case LINK_SELF:
		snprintf(s, n, " X ");
		break;
	case LINK_NVSWITCH:
		if (l->count > 0 || links > 0)
			snprintf(s, n, "NV%d", l->count > 0 ? l->count : links);
		else
			snprintf(s, n, "NVS");
		break;
	case LINK_NVLINK:
		snprintf(s, n, "NV%d", l->count > 0 ? l->count : (links > 0 ? links : 1));
		break;
	case LINK_HCCS:
		snprintf(s, n, "HCCS");
		break;
	case LINK_PCIE_SWITCH:
		snprintf(s, n, l->gbps < topo_kind_gbps(t, LINK_PCIE_SWITCH, 0) ? "PXB" : "PIX");
		break;
	case LINK_PCIE_HOSTBRIDGE:
		snprintf(s, n, "PHB");
		break;
	case LINK_NUMA:
		snprintf(s, n, "NODE");
		break;
	default:
		snprintf(s, n, "SYS");
		break;
	}
}

static const char *nic_entry(const struct node_type *t, int g, int nic)
{
	gpumask_t rail = t->nics[nic].gpus;
	if (rail >> g & 1u)
		return "PIX";
	for (int i = 0; i < t->ngpus; i++)
		if ((rail >> i & 1u) && t->numa[i] == t->numa[g])
			return "NODE";
	return "SYS";
}

size_t topo_format_matrix(const struct node_type *t, char *buf, size_t n)
{
	struct sl_buf o = SL_BUF_INIT(TOPO_MATRIX_MAX_TEXT);
	char s[16];

	if (n > 0)
		buf[0] = 0;
	if (!t || !t->gpu || t->ngpus < 1 || t->ngpus > TOPO_MAX_GPUS)
		return 0;
	sl_buf_addf(&o, "        ");
	for (int b = 0; b < t->ngpus; b++)
		sl_buf_addf(&o, "GPU%-5d", b);
	for (int i = 0; i < t->nnics; i++)
		sl_buf_addf(&o, "NIC%-5d", i);
	sl_buf_addf(&o, "NUMA Affinity\n");
	for (int a = 0; a < t->ngpus; a++) {
		sl_buf_addf(&o, "GPU%-5d", a);
		for (int b = 0; b < t->ngpus; b++) {
			entry_name(t, a, b, s, sizeof(s));
			sl_buf_addf(&o, "%-8s", s);
		}
		for (int i = 0; i < t->nnics; i++)
			sl_buf_addf(&o, "%-8s", nic_entry(t, a, i));
		sl_buf_addf(&o, "%d\n", t->numa[a]);
	}
	sl_buf_addf(&o, "\nLegend:\n\n"
		"  X    = Self\n"
		"  SYS  = across the inter-socket link (cross-socket)\n"
		"  NODE = same NUMA node, across PCIe host bridges (numa)\n"
		"  PHB  = through one PCIe host bridge (pcie-hostbridge)\n"
		"  PXB  = through several PCIe switches (pcie-switch, 7/8 bandwidth)\n"
		"  PIX  = behind one PCIe switch (pcie-switch)\n"
		"  HCCS = Huawei HCCS (hccs)\n"
		"  NV#  = # bonded NVLinks (nvlink; nvswitch when every pair shows more "
		"links than a GPU has)\n");
	if (t->nnics > 0) {
		sl_buf_addf(&o, "\nNIC Legend:\n\n");
		for (int i = 0; i < t->nnics; i++)
			sl_buf_addf(&o, "  NIC%d: %s\n", i, t->nics[i].name);
	}
	sl_buf_addf(&o, "\nGB/s per pair (bidirectional), %s on %s:\n      ", t->name, t->gpu->name);
	for (int b = 0; b < t->ngpus; b++)
		sl_buf_addf(&o, "%8s%d", "GPU", b);
	sl_buf_addf(&o, "\n");
	for (int a = 0; a < t->ngpus; a++) {
		sl_buf_addf(&o, "GPU%-3d", a);
		for (int b = 0; b < t->ngpus; b++)
			if (a == b)
				sl_buf_addf(&o, "%9s", "-");
			else
				sl_buf_addf(&o, "%9d", t->link[a][b].gbps);
		sl_buf_addf(&o, "\n");
	}
	size_t len = sl_buf_copy_out(&o, buf, n);
	sl_buf_release(&o);
	return len;
}

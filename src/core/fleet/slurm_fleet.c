/* slurm_fleet.c - the Slurm import's judgement and output (slurm_int.h):
 * node types from models, Links= matrices and built-in types; the switch tree
 * of topology.conf; the fleet file itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"
#include "fleet.h"
#include "slurm_int.h"

/* ---- node types ------------------------------------------------------------ */

/* The GPU links of a node from its gres.conf lines: true when complete (one
 * line per GPU, each naming itself once with -1, symmetric). */
static bool node_links(struct imp *m, const struct snode *n, int links[][TOPO_MAX_GPUS],
		       int8_t *numa, bool *have_numa)
{
	int got = 0;
	bool seen[TOPO_MAX_GPUS] = {false};
	*have_numa = n->cores_per_socket > 0;
	for (int i = 0; i < n->ngl; i++) {
		const struct gline *g = &m->gl[n->gl[i]];
		if (g->type[0] && n->gtype[0] && strcasecmp(g->type, n->gtype))
			continue;
		if (g->nlinks == 0)
			return false;
		if (g->nlinks != n->gpus) {
			si_note(m, m->in->gres.name, g->line, true, "node %s: Links= has %d entries for %d "
			     "GPUs; links ignored", n->name, g->nlinks, n->gpus);
			return false;
		}
		int self = -1;
		for (int j = 0; j < g->nlinks; j++)
			if (g->links[j] == -1)
				self = self == -1 ? j : -2;
		if (self < 0 || seen[self]) {
			si_note(m, m->in->gres.name, g->line, true, "node %s: Links= must mark the GPU "
			     "itself with one -1 at a position no other GPU uses; links ignored", n->name);
			return false;
		}
		seen[self] = true;
		memcpy(links[self], g->links, sizeof(g->links));
		if (g->cores_lo < 0)
			*have_numa = false;
		else if (n->cores_per_socket > 0)
			numa[self] = (int8_t)(g->cores_lo / n->cores_per_socket);
		got++;
	}
	if (got != n->gpus)
		return false;
	for (int a = 0; a < n->gpus; a++)
		for (int b = 0; b < n->gpus; b++)
			if (a != b && links[a][b] != links[b][a]) {
				si_note(m, m->in->gres.name, 0, true, "node %s: Links= is not symmetric "
				     "(GPU %d->%d %d, %d->%d %d); links ignored", n->name, a, b,
				     links[a][b], b, a, links[b][a]);
				return false;
			}
	return true;
}

/* Pairs' kinds from a Links= matrix: every pair connected with one count is an
 * NVSwitch system (as with NV# in nvidia-smi topo -m), else NVLink counts. */
static enum sl_err type_from_links(struct node_type *t, const int links[][TOPO_MAX_GPUS])
{
	int first = links[0][1];
	bool sw = t->ngpus > 2 && first > 0;
	for (int a = 0; a < t->ngpus; a++)
		for (int b = 0; b < t->ngpus; b++)
			if (a != b && links[a][b] != first)
				sw = false;
	for (int a = 0; a < t->ngpus; a++)
		for (int b = a + 1; b < t->ngpus; b++) {
			enum sl_err e = SL_OK;
			if (sw)
				e = topo_set_link(t, a, b, LINK_NVSWITCH, 0, 0, NULL);
			else if (links[a][b] > 0)
				e = topo_set_link(t, a, b, LINK_NVLINK, links[a][b] > 255 ? 255 : links[a][b], 0, NULL);
			if (e)
				return e;
		}
	return SL_OK;
}

/* True when t's pairs are of the same kinds as the built-in's (NVSwitch,
 * NVLink or HCCS, or neither). */
static bool kinds_match(const struct node_type *t, const struct node_type *b)
{
	for (int i = 0; i < t->ngpus; i++)
		for (int j = i + 1; j < t->ngpus; j++) {
			int x = t->link[i][j].kind, y = b->link[i][j].kind;
			bool fx = x >= LINK_HCCS, fy = y >= LINK_HCCS;
			if (fx != fy || (fx && (x == LINK_NVSWITCH) != (y == LINK_NVSWITCH)))
				return false;
		}
	return true;
}

static int find_builtin(const char *model, int gpus, struct node_type *out)
{
	for (int i = 0; i < topo_builtin_count(); i++) {
		if (topo_builtin(topo_builtin_name(i), out) != SL_OK)
			continue;
		if (out->gpu && !strcmp(out->gpu->name, model) && out->ngpus == gpus)
			return i;
	}
	return -1;
}

/* The type with signature sig, added when new: its index, -2 out of memory,
 * -3 when the fleet file could not hold another custom type (FLEET_MAX_TYPES
 * counts the built-in ones too). */
static int type_add(struct imp *m, const char *sig, const struct node_type *t, bool builtin)
{
	int custom = 0;
	for (int i = 0; i < m->ntypes; i++) {
		if (!strcmp(m->types[i].sig, sig))
			return i;
		custom += !m->types[i].builtin;
	}
	if (!builtin && custom + topo_builtin_count() >= FLEET_MAX_TYPES)
		return -3;
	if (sl_grow(&m->types, &m->captypes, m->ntypes + 1, SLURM_MAX_TYPES))
		return -2;
	struct ntype *x = &m->types[m->ntypes];
	snprintf(x->sig, sizeof(x->sig), "%s", sig);
	x->t = *t;
	x->builtin = builtin;
	return m->ntypes++;
}

static enum sl_err too_many_types(struct imp *m, const struct snode *n)
{
	si_note(m, m->in->slurm.name, n->line, true, "node %s: its shape would be one node type "
		"more than a fleet file holds (%d, built-in ones included); left out", n->name,
		FLEET_MAX_TYPES);
	return SL_OK;
}

enum sl_err si_judge_node(struct imp *m, struct snode *n)
{
	const char *sf = m->in->slurm.name;
	if (n->skip)
		return SL_OK;
	if (n->gpus == 0) {
		si_note(m, sf, n->line, false, "node %s has no GPUs (Gres=gpu); left out", n->name);
		return SL_OK;
	}
	const char *gt = n->gtype;
	for (int i = 0; !gt[0] && i < n->ngl; i++)
		gt = m->gl[n->gl[i]].type;
	const char *model = gt[0] ? slurm_gpu_model(gt) : NULL;
	if (!model) {
		si_note(m, sf, n->line, true, gt[0] ? "node %s: GPU type '%s' is not in suanli's "
		     "catalog (declare it under gpu_models with a node type)" :
		     "node %s: GPUs without a type%s (write Gres=gpu:TYPE:N)", n->name, gt[0] ? gt : "");
		return SL_OK;
	}
	int links[TOPO_MAX_GPUS][TOPO_MAX_GPUS];
	int8_t numa[TOPO_MAX_GPUS] = {0};
	bool have_numa = false;
	memset(links, 0, sizeof(links));
	bool have_links = node_links(m, n, links, numa, &have_numa);
	struct node_type b;
	int bi = find_builtin(model, n->gpus, &b);
	int64_t mem64 = n->mem_mib >= 0 ? n->mem_mib / 1024 : -1;
	int cpus = n->cpus;
	if (cpus > FLEET_MAX_CPUS || mem64 > FLEET_MAX_MEM_GIB) {
		si_note(m, sf, n->line, true, "node %s: %d CPUs, %lld GiB: more than a fleet file "
		     "takes (%d CPUs, %d GiB); left out", n->name, cpus, (long long)mem64,
		     FLEET_MAX_CPUS, FLEET_MAX_MEM_GIB);
		return SL_OK;
	}
	int mem_gib = (int)mem64;
	if (bi >= 0 && cpus <= 0) {
		si_note(m, sf, n->line, false, "node %s: no CPUs given; %s's %d taken", n->name, b.name, b.cpus);
		cpus = b.cpus;
	}
	if (bi >= 0 && mem_gib < 0) {
		si_note(m, sf, n->line, false, "node %s: no RealMemory given; %s's %d GiB taken", n->name,
		     b.name, b.mem_gib);
		mem_gib = b.mem_gib;
	}
	if (cpus <= 0 || mem_gib <= 0) {
		si_note(m, sf, n->line, true, "node %s: CPUs and RealMemory are needed for a custom "
		     "node type (%d CPUs, %d GiB)", n->name, cpus, mem_gib);
		return SL_OK;
	}
	struct node_type t;
	char name[TOPO_NAME_MAX], sig[512];
	const struct gpu_model *gm = catalog_gpu_find(model);
	bool derived = false;
	if (have_links) {
		snprintf(name, sizeof(name), "tmp");
		if (topo_type_init(&t, name, gm, n->gpus, cpus, mem_gib, have_numa ? numa : NULL,
				   NULL) || type_from_links(&t, links))
			return sl_diag_set(m->d, SL_EINVAL, "node %s: bad link matrix", n->name);
		derived = !(bi >= 0 && kinds_match(&t, &b));
	}
	if (bi >= 0 && !derived) {
		bool same = cpus == b.cpus && mem_gib == b.mem_gib;
		t = b;
		t.cpus = cpus;
		t.mem_gib = mem_gib;
		if (!same)
			snprintf(t.name, sizeof(t.name), "%.40s-%dc-%dg", b.name, cpus % 100000, mem_gib % 1000000);
		snprintf(sig, sizeof(sig), "b|%s|%d|%d", b.name, cpus, mem_gib);
		int ti = type_add(m, sig, &t, same);
		if (ti == -2)
			return sl_diag_set(m->d, SL_ENOMEM, "out of memory");
		if (ti == -3)
			return too_many_types(m, n);
		if (!same && ti == m->ntypes - 1)
			si_note(m, sf, n->line, false, "node %s: %d CPUs and %d GiB differ from built-in %s "
			     "(%d, %d): custom type %s keeps %s's GPU topology", n->name, cpus, mem_gib,
			     b.name, b.cpus, b.mem_gib, t.name, b.name);
		n->type = ti;
		return SL_OK;
	}
	if (!have_links) {
		si_note(m, m->in->gres.name ? m->in->gres.name : sf, m->in->gres.name ? 0 : n->line, true,
		     "node %s: no built-in type has %d %s GPUs and gres.conf gives no Links= for them: "
		     "the pairs are taken as PCIe; add links or topo_matrix to type %s-%d", n->name,
		     n->gpus, model, model, n->gpus);
		if (topo_type_init(&t, "tmp", gm, n->gpus, cpus, mem_gib, NULL, NULL))
			return sl_diag_set(m->d, SL_EINVAL, "node %s: bad type", n->name);
	}
	size_t off = (size_t)snprintf(sig, sizeof(sig), "l|%s|%d|%d|%d|", model, n->gpus, cpus, mem_gib);
	for (int a = 0; a < n->gpus && off < sizeof(sig) - 8; a++)
		off += (size_t)snprintf(sig + off, sizeof(sig) - off, "%d:", t.numa[a]);
	for (int a = 0; a < n->gpus; a++)
		for (int c2 = a + 1; c2 < n->gpus && off < sizeof(sig) - 8; c2++)
			off += (size_t)snprintf(sig + off, sizeof(sig) - off, "%d.%d,", t.link[a][c2].kind,
						t.link[a][c2].count);
	int before = m->ntypes;
	snprintf(t.name, sizeof(t.name), "%.32s-%d-slurm-%d", model, n->gpus, before + 1);
	int ti = type_add(m, sig, &t, false);
	if (ti == -2)
		return sl_diag_set(m->d, SL_ENOMEM, "out of memory");
	if (ti == -3)
		return too_many_types(m, n);
	if (ti == before && have_links)
		si_note(m, m->in->gres.name, 0, false, "node %s: type %s built from gres.conf Links=%s "
		     "(no NIC rails are known; add nics: for rail-aligned gangs)", n->name, t.name,
		     bi >= 0 ? ", which differ from built-in" : "");
	n->type = ti;
	return SL_OK;
}

/* ---- topology.conf --------------------------------------------------------- */

enum sl_err si_topo_line(struct imp *m, const char *file, int line, struct words *w)
{
	const char *k = w->k[0];
	if (!strcasecmp(k, "BlockSizes")) {
		si_note(m, file, line, true, "BlockSizes= not translated: a suanli gang that fits one "
		     "NVLink domain stays in one, and larger ones span the fewest");
		return SL_OK;
	}
	bool block = !strcasecmp(k, "BlockName");
	if (strcasecmp(k, "SwitchName") && !block) {
		si_note(m, file, line, true, "%s= not translated", k);
		return SL_OK;
	}
	if (!w->v[0] || !*w->v[0] || strlen(w->v[0]) >= NAME_MAX_LEN)
		return sl_diag_set(m->d, SL_EPARSE, "%s:%d: %s without a usable name", file, line, k);
	if (!fleet_name_valid(w->v[0])) {
		/* Switch and block names become leaf, fabric and domain names. */
		si_note(m, file, line, true, "%s '%.64s' is not a valid suanli name (A-Z a-z 0-9 . _ -); "
		     "line ignored", k, w->v[0]);
		return SL_OK;
	}
	if (block) {
		enum sl_err be = strmap_add(m->blk_by_name, w->v[0], m->nsws);
		if (be == SL_EEXIST) {
			si_note(m, file, line, true, "block %s defined again; ignored", w->v[0]);
			return SL_OK;
		}
		if (be)
			return sl_diag_set(m->d, be, "out of memory");
	}
	enum sl_err ge = sl_grow(&m->sws, &m->capsws, m->nsws + 1, SLURM_MAX_SWITCHES);
	if (ge)
		return sl_diag_set(m->d, ge, "%s:%d: more than %d switches, or out of memory", file,
				   line, SLURM_MAX_SWITCHES);
	struct sw *s = &m->sws[m->nsws];
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", w->v[0]);
	s->line = line;
	s->parent = block ? -2 : -1; /* -2: a block */
	s->fabric = -1;
	const char *nodes = si_word(w, "Nodes"), *sws = si_word(w, "Switches");
	if (nodes && !(s->nodes = strdup(nodes)))
		return sl_diag_set(m->d, SL_ENOMEM, "out of memory");
	if (sws && !(s->switches = strdup(sws)))
		return sl_diag_set(m->d, SL_ENOMEM, "out of memory");
	if (!block && nodes && sws)
		si_note(m, file, line, true, "switch %s has both Nodes= and Switches=; suanli leaves "
		     "hold nodes only - its switches are ignored", s->name);
	for (int i = 1; i < w->n; i++)
		if (strcasecmp(w->k[i], "Nodes") && strcasecmp(w->k[i], "Switches"))
			si_note(m, file, line, true, "%s %s: %s= not translated", k, s->name, w->k[i]);
	if (!block) {
		enum sl_err e = strmap_add(m->sw_by_name, s->name, m->nsws);
		if (e == SL_EEXIST) {
			si_note(m, file, line, true, "switch %s defined again; ignored", s->name);
			free(s->nodes);
			free(s->switches);
			return SL_OK;
		}
		if (e)
			return sl_diag_set(m->d, e, "out of memory");
	}
	m->nsws++;
	return SL_OK;
}

struct child_ctx {
	int parent;
};

static enum sl_err set_parent(struct imp *m, void *arg, const char *name)
{
	struct child_ctx *c = arg;
	int i = strmap_get(m->sw_by_name, name, -1);
	if (i < 0) {
		si_note(m, m->in->topo.name, m->sws[c->parent].line, true, "switch %s names unknown "
		     "switch %s", m->sws[c->parent].name, name);
		return SL_OK;
	}
	if (m->sws[i].parent >= 0 && m->sws[i].parent != c->parent)
		si_note(m, m->in->topo.name, m->sws[c->parent].line, true, "switch %s has two parents "
		     "(%s, %s); the first is kept", name, m->sws[m->sws[i].parent].name,
		     m->sws[c->parent].name);
	else
		m->sws[i].parent = c->parent;
	return SL_OK;
}

static enum sl_err set_leaf(struct imp *m, void *arg, const char *name)
{
	int leaf = *(int *)arg, i = strmap_get(m->node_by_name, name, -1);
	if (i < 0) {
		si_note(m, m->in->topo.name, m->sws[leaf].line, true, "switch %s: node %s is not in "
		     "slurm.conf", m->sws[leaf].name, name);
		return SL_OK;
	}
	if (m->nodes[i].leaf >= 0)
		si_note(m, m->in->topo.name, m->sws[leaf].line, true, "node %s is under two leaf "
		     "switches (%s, %s); the first is kept", name, m->sws[m->nodes[i].leaf].name,
		     m->sws[leaf].name);
	else
		m->nodes[i].leaf = leaf;
	return SL_OK;
}

enum sl_err si_build_tree(struct imp *m)
{
	const char *tf = m->in->topo.name;
	for (int i = 0; i < m->nsws; i++) {
		struct child_ctx c = {i};
		if (m->sws[i].parent != -2 && m->sws[i].switches && !m->sws[i].nodes) {
			enum sl_err e = si_hl_expand(m, tf, m->sws[i].line, m->sws[i].switches, set_parent, &c);
			if (e)
				return e;
		}
	}
	for (int i = 0; i < m->nsws; i++) {
		if (m->sws[i].parent == -2)
			continue;
		int r = i, hops = 0;
		while (m->sws[r].parent >= 0 && hops++ < m->nsws)
			r = m->sws[r].parent;
		m->sws[i].fabric = r;
		if (m->sws[i].switches && !m->sws[i].nodes && m->sws[i].parent >= 0)
			si_note(m, tf, m->sws[i].line, false, "switch %s is a middle level of the tree; "
			     "suanli keeps leaves and their fabric (root %s)", m->sws[i].name,
			     m->sws[r].name);
		if (m->sws[i].nodes) {
			int leaf = i;
			enum sl_err e = si_hl_expand(m, tf, m->sws[i].line, m->sws[i].nodes, set_leaf, &leaf);
			if (e)
				return e;
		}
	}
	return SL_OK;
}

/* ---- writing --------------------------------------------------------------- */

static void put_type(struct sl_buf *b, const struct node_type *t)
{
	sl_buf_addf(b, "  - name: %s\n    gpu: %s\n    gpus: %d\n    cpus: %d\n    memory_gib: %d\n",
	     t->name, t->gpu->name, t->ngpus, t->cpus, t->mem_gib);
	sl_buf_addf(b, "    numa: [");
	for (int i = 0; i < t->ngpus; i++)
		sl_buf_addf(b, "%s%d", i ? ", " : "", t->numa[i]);
	/* One GPU has no pairs: an empty list, not an empty value. */
	sl_buf_addf(b, "]\n    links:%s\n", t->ngpus < 2 ? " []" : "");
	for (int i = 0; i < t->ngpus; i++)
		for (int j = i + 1; j < t->ngpus; j++) {
			const struct topo_link *l = &t->link[i][j];
			sl_buf_addf(b, "      - {gpus: [%d, %d], kind: %s", i, j,
			     topo_link_kind_name((enum link_kind)l->kind));
			if (l->kind == LINK_NVLINK || l->kind == LINK_HCCS)
				sl_buf_addf(b, ", count: %d", l->count ? l->count : 1);
			sl_buf_addf(b, ", gbps: %d}\n", l->gbps);
		}
	if (t->nnics > 0) {
		sl_buf_addf(b, "    nics:\n");
		for (int i = 0; i < t->nnics; i++) {
			sl_buf_addf(b, "      - {name: %s, gbps: %d, gpus: [", t->nics[i].name, t->nics[i].gbps);
			for (int g = 0, k = 0; g < t->ngpus; g++)
				if (t->nics[i].gpus & ((gpumask_t)1 << g))
					sl_buf_addf(b, "%s%d", k++ ? ", " : "", g);
			sl_buf_addf(b, "]}\n");
		}
	}
	if (t->ngroups > 0) {
		sl_buf_addf(b, "    groups: [");
		for (int i = 0; i < t->ngroups; i++) {
			sl_buf_addf(b, "%s[", i ? ", " : "");
			for (int g = 0, k = 0; g < t->ngpus; g++)
				if (t->groups[i] & ((gpumask_t)1 << g))
					sl_buf_addf(b, "%s%d", k++ ? ", " : "", g);
			sl_buf_addf(b, "]");
		}
		sl_buf_addf(b, "]\n    groups_strict: %s\n", t->groups_strict ? "true" : "false");
	}
}

void si_write_fleet(struct imp *m, struct sl_buf *b)
{
	const struct slurm_input *in = m->in;
	struct slurm_result *r = m->r;
	const char *site = in->site ? in->site : m->cluster[0] ? m->cluster : "site-1";
	sl_buf_addf(b, "# Written by suanli fleet import-slurm from %s%s%s%s%s.\n# Check the notes it "
	     "printed; docs/migrate.md.\nsites:\n  - name: %s\n    region: %s\n    fabrics:\n",
	     in->slurm.name, in->gres.name ? ", " : "", in->gres.name ? in->gres.name : "",
	     in->topo.name ? ", " : "", in->topo.name ? in->topo.name : "", site,
	     in->region ? in->region : "unknown");
	int nleaves = m->nsws ? m->nsws + 1 : 1; /* + "unswitched" */
	/* The fabric of nodes under no switch: "fabric-1", or the first
	 * "fabric-N" no switch of topology.conf is called. */
	char nofab[32] = "fabric-1";
	for (int k = 2; strmap_get(m->sw_by_name, nofab, -1) >= 0; k++)
		snprintf(nofab, sizeof(nofab), "fabric-%d", k);
	for (int f = -1; f < m->nsws; f++) {
		/* f: a root switch, or -1 for the fabric of nodes under no switch. */
		if (f >= 0 && (m->sws[f].parent != -1 || m->sws[f].fabric != f))
			continue;
		bool opened = false;
		for (int l = 0; l < nleaves; l++) {
			int leaf = l < m->nsws ? l : -1;
			if (leaf >= 0 && (m->sws[leaf].parent == -2 || m->sws[leaf].fabric != f ||
					  !m->sws[leaf].nodes))
				continue;
			if (leaf < 0 && f >= 0)
				continue;
			bool any = false;
			for (int i = 0; i < m->nnodes; i++) {
				struct snode *n = &m->nodes[i];
				if (n->type < 0 || n->leaf != leaf)
					continue;
				if (!opened) {
					sl_buf_addf(b, "      - name: %s\n        kind: %s\n        gbps: %d\n        "
					     "leaves:\n", f >= 0 ? m->sws[f].name : nofab,
					     in->fabric_kind ? in->fabric_kind : "infiniband",
					     in->fabric_gbps > 0 ? in->fabric_gbps : 400);
					opened = true;
					r->fabrics++;
				}
				if (!any) {
					sl_buf_addf(b, "          - name: %s\n            nodes:\n",
					     leaf >= 0 ? m->sws[leaf].name : m->tree ? "unswitched" : "leaf-1");
					any = true;
					r->leaves++;
				}
				sl_buf_addf(b, "              - {name: %s, type: %s}\n", n->name, m->types[n->type].t.name);
				r->nodes++;
				r->gpus += n->gpus;
			}
		}
	}
	int ncustom = 0;
	for (int i = 0; i < m->ntypes; i++)
		ncustom += !m->types[i].builtin;
	if (ncustom) {
		sl_buf_addf(b, "node_types:\n");
		for (int i = 0; i < m->ntypes; i++)
			if (!m->types[i].builtin)
				put_type(b, &m->types[i].t);
	}
	r->types = m->ntypes;
	r->custom_types = ncustom;
}

struct dom_ctx {
	struct sl_buf *b;
	int n;
	int blk;
	const struct gpu_model *gpu; /* of the block's first node */
	int gpus;
};

/* Writes node name into block c->blk when the fleet's domain rules (fleet.h:
 * one GPU model with multi-node NVLink domains, at most its domain_gpus GPUs,
 * a node in one domain only) let it; a note says why not otherwise. */
static enum sl_err dom_node(struct imp *m, void *arg, const char *name)
{
	struct dom_ctx *c = arg;
	const char *tf = m->in->topo.name, *bn = m->sws[c->blk].name;
	int line = m->sws[c->blk].line;
	int i = strmap_get(m->node_by_name, name, -1);
	if (i < 0 || m->nodes[i].type < 0) {
		si_note(m, tf, line, true, "block %s: node %s is %s", bn, name,
			i < 0 ? "not in slurm.conf" : "not translated");
		return SL_OK;
	}
	struct snode *n = &m->nodes[i];
	const struct gpu_model *g = m->types[n->type].t.gpu;
	if (n->block) {
		si_note(m, tf, line, true, "block %s: node %s is already in block %s; left out", bn, name,
			m->sws[n->block - 1].name);
	} else if (g->domain_gpus <= 0) {
		si_note(m, tf, line, true, "block %s: node %s has %s GPUs, which have no multi-node "
			"NVLink domains; left out of the block", bn, name, g->name);
	} else if (c->gpu && g != c->gpu) {
		si_note(m, tf, line, true, "block %s: node %s has %s GPUs, the block %s; left out (one "
			"GPU model per NVLink domain)", bn, name, g->name, c->gpu->name);
	} else if (c->gpus + m->types[n->type].t.ngpus > g->domain_gpus) {
		si_note(m, tf, line, true, "block %s: node %s left out: a %s NVLink domain holds at "
			"most %d GPUs", bn, name, g->name, g->domain_gpus);
	} else {
		c->gpu = g;
		c->gpus += m->types[n->type].t.ngpus;
		n->block = c->blk + 1;
		sl_buf_addf(c->b, "%s%s", c->n++ ? ", " : "", name);
	}
	return SL_OK;
}

enum sl_err si_write_domains(struct imp *m, struct sl_buf *b)
{
	bool open = false;
	for (int s = 0; s < m->nsws; s++) {
		if (m->sws[s].parent != -2 || !m->sws[s].nodes)
			continue;
		struct sl_buf one = SL_BUF_INIT(FLEET_MAX_FILE);
		struct dom_ctx c = {&one, 0, s, NULL, 0};
		enum sl_err e = si_hl_expand(m, m->in->topo.name, m->sws[s].line, m->sws[s].nodes, dom_node, &c);
		if (e == SL_OK && c.n > 0 && sl_buf_err(&one) == SL_OK) {
			if (!open)
				sl_buf_addf(b, "nvlink_domains:\n");
			open = true;
			sl_buf_addf(b, "  - {name: %s, nodes: [%s]}\n", m->sws[s].name, sl_buf_str(&one));
			m->r->domains++;
		}
		sl_buf_release(&one);
		if (e)
			return e;
	}
	return SL_OK;
}


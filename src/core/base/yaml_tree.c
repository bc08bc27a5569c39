/* yaml_tree.c - libyaml's event stream folded into a compact tree.
 *
 * Nodes, scalar text and child lists live in three growing arrays addressed
 * by index, so a 10,000-node fleet file costs a handful of allocations rather
 * than one per node. Children of open containers collect on a shared stack;
 * when a container ends its children are copied out contiguously, so a walker
 * reads them as a plain array. */
#include "yaml_tree.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "buf.h"

#define YTREE_MAX_TEXT (1u << 30) /* offsets are 32 bit */

static enum sl_err ytree_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	/* No array of the tree holds more entries than the text has bytes. */
	return sl_grow_size(arr, cap, need, elem, YTREE_MAX_TEXT);
}

struct frame {
	uint32_t node;
	size_t open_start;
};

struct builder {
	struct ytree *t;
	struct frame *frames;
	int depth, max_depth;
	struct sl_diag *d;
};

static enum sl_err at_mark(struct sl_diag *d, enum sl_err e, yaml_mark_t m, const char *what,
			   const char *detail)
{
	sl_diag_at(d, e, (int)m.line + 1, (int)m.column + 1, "%s%s", what, detail);
	return e;
}

/* Adds a node and files it as a child of the open container (or as root). */
static enum sl_err add_node(struct builder *b, enum ynode_kind kind, yaml_mark_t m,
			    uint32_t *idx)
{
	struct ytree *t = b->t;
	if (ytree_grow((void **)&t->nodes, &t->capnodes, t->nnodes + 1, sizeof(*t->nodes)) ||
	    ytree_grow((void **)&t->open, &t->capopen, t->nopen + 1, sizeof(*t->open)))
		return sl_diag_set(b->d, SL_ENOMEM, "out of memory");
	*idx = (uint32_t)t->nnodes++;
	t->nodes[*idx] = (struct ynode){.kind = (uint8_t)kind, .line = (int)m.line + 1,
					.col = (int)m.column + 1};
	if (b->depth == 0)
		t->root = (int)*idx;
	else
		t->open[t->nopen++] = *idx;
	return SL_OK;
}

static enum sl_err refuse_decorations(struct builder *b, const yaml_event_t *ev,
				      const yaml_char_t *anchor, const yaml_char_t *tag)
{
	if (anchor)
		return at_mark(b->d, SL_EPARSE, ev->start_mark,
			       "anchors (&name) are not supported in a fleet file",
			       "; write each value out in full");
	if (tag)
		return at_mark(b->d, SL_EPARSE, ev->start_mark,
			       "tags (such as !!str) are not supported in a fleet file",
			       "; write the plain value");
	return SL_OK;
}

static enum sl_err on_scalar(struct builder *b, const yaml_event_t *ev)
{
	struct ytree *t = b->t;
	enum sl_err e = refuse_decorations(b, ev, ev->data.scalar.anchor, ev->data.scalar.tag);
	if (e)
		return e;
	size_t len = ev->data.scalar.length;
	if (t->npool + len + 1 > YTREE_MAX_TEXT)
		return at_mark(b->d, SL_ELIMIT, ev->start_mark, "document text too large", "");
	uint32_t idx;
	if ((e = add_node(b, YN_SCALAR, ev->start_mark, &idx)) != SL_OK)
		return e;
	if (ytree_grow((void **)&t->pool, &t->cappool, t->npool + len + 1, 1))
		return sl_diag_set(b->d, SL_ENOMEM, "out of memory");
	memcpy(t->pool + t->npool, ev->data.scalar.value, len);
	t->pool[t->npool + len] = '\0';
	struct ynode *n = &t->nodes[idx];
	n->off = (uint32_t)t->npool;
	n->n = (uint32_t)len;
	switch (ev->data.scalar.style) {
	case YAML_SINGLE_QUOTED_SCALAR_STYLE:
		n->style = YS_SINGLE;
		break;
	case YAML_DOUBLE_QUOTED_SCALAR_STYLE:
		n->style = YS_DOUBLE;
		break;
	case YAML_LITERAL_SCALAR_STYLE:
		n->style = YS_LITERAL;
		break;
	case YAML_FOLDED_SCALAR_STYLE:
		n->style = YS_FOLDED;
		break;
	default:
		n->style = YS_PLAIN;
		break;
	}
	t->npool += len + 1;
	return SL_OK;
}

static enum sl_err on_start(struct builder *b, const yaml_event_t *ev, enum ynode_kind kind)
{
	const yaml_char_t *anchor = kind == YN_MAP ? ev->data.mapping_start.anchor
						   : ev->data.sequence_start.anchor;
	const yaml_char_t *tag = kind == YN_MAP ? ev->data.mapping_start.tag
						: ev->data.sequence_start.tag;
	enum sl_err e = refuse_decorations(b, ev, anchor, tag);
	if (e)
		return e;
	if (b->depth >= b->max_depth) {
		sl_diag_at(b->d, SL_ELIMIT, (int)ev->start_mark.line + 1,
			   (int)ev->start_mark.column + 1,
			   "nesting deeper than %d levels; a fleet file needs far fewer",
			   b->max_depth);
		return SL_ELIMIT;
	}
	uint32_t idx;
	if ((e = add_node(b, kind, ev->start_mark, &idx)) != SL_OK)
		return e;
	b->frames[b->depth++] = (struct frame){.node = idx, .open_start = b->t->nopen};
	return SL_OK;
}

static enum sl_err on_end(struct builder *b)
{
	struct ytree *t = b->t;
	struct frame fr = b->frames[--b->depth];
	size_t n = t->nopen - fr.open_start;
	if (ytree_grow((void **)&t->kids, &t->capkids, t->nkids + n, sizeof(*t->kids)))
		return sl_diag_set(b->d, SL_ENOMEM, "out of memory");
	if (n)
		memcpy(t->kids + t->nkids, t->open + fr.open_start, n * sizeof(*t->kids));
	t->nodes[fr.node].off = (uint32_t)t->nkids;
	t->nodes[fr.node].n = (uint32_t)n;
	t->nkids += n;
	t->nopen = fr.open_start;
	return SL_OK;
}

static enum sl_err on_event(struct builder *b, const yaml_event_t *ev, int *docs)
{
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++*docs > 1)
			return at_mark(b->d, SL_EPARSE, ev->start_mark,
				       "a second YAML document ('---')",
				       "; a fleet file holds exactly one");
		return SL_OK;
	case YAML_ALIAS_EVENT:
		return at_mark(b->d, SL_EPARSE, ev->start_mark,
			       "aliases (*name) are not supported in a fleet file",
			       "; write each value out in full");
	case YAML_SCALAR_EVENT:
		return on_scalar(b, ev);
	case YAML_SEQUENCE_START_EVENT:
		return on_start(b, ev, YN_SEQ);
	case YAML_MAPPING_START_EVENT:
		return on_start(b, ev, YN_MAP);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		return on_end(b);
	default:
		return SL_OK;
	}
}

static enum sl_err syntax_error(const yaml_parser_t *p, const char *text, size_t len,
				struct sl_diag *d)
{
	if (p->error == YAML_MEMORY_ERROR)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	const char *problem = p->problem ? p->problem : "unknown problem";
	yaml_mark_t m = p->problem_mark;
	/* Reader errors (bad encoding, control characters) carry a byte offset,
	 * not a mark: count lines up to it. */
	if (p->error == YAML_READER_ERROR) {
		int line = 1, col = 1;
		for (size_t i = 0; i < p->problem_offset && i < len; i++, col++)
			if (text[i] == '\n') {
				line++;
				col = 0;
			}
		sl_diag_at(d, SL_EPARSE, line, col,
			   "YAML: %s (byte %zu); expected UTF-8 text without control characters",
			   problem, p->problem_offset);
		return SL_EPARSE;
	}
	if (p->context)
		sl_diag_at(d, SL_EPARSE, (int)m.line + 1, (int)m.column + 1,
			   "YAML syntax error: %s %s (which started at line %d, column %d)",
			   problem, p->context, (int)p->context_mark.line + 1,
			   (int)p->context_mark.column + 1);
	else
		sl_diag_at(d, SL_EPARSE, (int)m.line + 1, (int)m.column + 1,
			   "YAML syntax error: %s", problem);
	/* libyaml cannot detect a block's indentation when its first line starts
	 * with a tab after the spaces, which is how `nvidia-smi topo -m` begins. */
	if (strstr(problem, "tab character where an indentation space"))
		sl_diag_hint(d, "a block (|) whose first line starts with a tab needs an "
				"indentation indicator: write '|2' when its text is indented "
				"2 spaces more than its key");
	else
		sl_diag_hint(d, "check indentation and ':' after keys; inside {...} and [...] "
				"quote values holding brackets or commas, as in range: \"n[1-8]\"");
	return SL_EPARSE;
}

enum sl_err ytree_parse(struct ytree *t, const char *text, size_t len, int max_depth,
			struct sl_diag *d)
{
	memset(t, 0, sizeof(*t));
	t->root = -1;
	if (len >= YTREE_MAX_TEXT)
		return sl_diag_set(d, SL_ELIMIT, "document of %zu bytes; at most %u", len,
				   YTREE_MAX_TEXT - 1);
	struct builder b = {.t = t, .max_depth = max_depth, .d = d};
	b.frames = malloc((size_t)(max_depth > 0 ? max_depth : 1) * sizeof(*b.frames));
	yaml_parser_t p;
	if (!b.frames || !yaml_parser_initialize(&p)) {
		free(b.frames);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	enum sl_err e = SL_OK;
	int docs = 0;
	for (bool done = false; !done && e == SL_OK;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev)) {
			e = syntax_error(&p, text, len, d);
			break;
		}
		e = on_event(&b, &ev, &docs);
		done = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	free(b.frames);
	free(t->open);
	t->open = NULL;
	t->nopen = t->capopen = 0;
	return e;
}

void ytree_release(struct ytree *t)
{
	free(t->nodes);
	free(t->pool);
	free(t->kids);
	free(t->open);
	memset(t, 0, sizeof(*t));
	t->root = -1;
}

const struct ynode *ytree_root(const struct ytree *t)
{
	return t->root >= 0 ? &t->nodes[t->root] : NULL;
}

const struct ynode *ytree_kid(const struct ytree *t, const struct ynode *n, uint32_t i)
{
	return &t->nodes[t->kids[n->off + i]];
}

const char *ytree_str(const struct ytree *t, const struct ynode *n)
{
	return t->pool + n->off;
}

const char *ytree_kind_name(const struct ynode *n)
{
	if (n->kind == YN_SCALAR && n->style == YS_PLAIN && n->n == 0)
		return "nothing";
	switch (n->kind) {
	case YN_MAP:
		return "a mapping";
	case YN_SEQ:
		return "a list";
	default:
		return "a scalar";
	}
}

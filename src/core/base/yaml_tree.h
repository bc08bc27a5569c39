/* yaml_tree.h - a YAML document as a small tree of mappings, sequences and
 * scalars, each with its 1-based line and column.
 *
 * Loaders (the fleet file) walk this tree instead of libyaml's event stream,
 * which lets them look ahead (a fleet file may declare node_types after the
 * sites that use them) and report any node's position. Anchors, aliases, tags
 * and multiple documents are refused: a fleet file is plain data, and aliases
 * would let a small file expand into a huge one. */
#ifndef SL_YAML_TREE_H
#define SL_YAML_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

enum ynode_kind { YN_SCALAR, YN_SEQ, YN_MAP };

/* How a scalar was written; a literal block's text lines map 1:1 to the file. */
enum yscalar_style { YS_PLAIN, YS_SINGLE, YS_DOUBLE, YS_LITERAL, YS_FOLDED };

struct ynode {
	uint8_t kind;  /* enum ynode_kind */
	uint8_t style; /* enum yscalar_style, scalars only */
	int line, col; /* 1-based start of the node */
	uint32_t off;  /* scalar: text offset in the pool; container: first kid */
	uint32_t n;    /* scalar: length in bytes; container: kids (a mapping has
			  key, value, key, value, ...) */
};

struct ytree {
	struct ynode *nodes;
	size_t nnodes, capnodes;
	char *pool; /* scalar text, each NUL-terminated */
	size_t npool, cappool;
	uint32_t *kids; /* node indices of containers' children, contiguous per container */
	size_t nkids, capkids;
	uint32_t *open; /* while parsing: children of open containers */
	size_t nopen, capopen;
	int root; /* node index, or -1 for an empty document */
};

/* Parses len bytes of text (UTF-8/16; need not be NUL-terminated) into t,
 * which it initialises; t must be released with ytree_release() whatever the
 * result. Nesting deeper than max_depth, aliases, anchors, tags, a second
 * document or a syntax error give SL_EPARSE (SL_ELIMIT for depth) with the
 * position in d; SL_ENOMEM when memory runs out. */
enum sl_err ytree_parse(struct ytree *t, const char *text, size_t len, int max_depth,
			struct sl_diag *d) SL_MUST_USE;
void ytree_release(struct ytree *t);

/* The document's root node, or NULL for an empty document. */
const struct ynode *ytree_root(const struct ytree *t);
/* The i-th child of a container (i < n->n). */
const struct ynode *ytree_kid(const struct ytree *t, const struct ynode *n, uint32_t i);
/* A scalar's text (NUL-terminated; may contain NULs when the YAML escaped one,
 * which callers detect by strlen(text) != n->n). */
const char *ytree_str(const struct ytree *t, const struct ynode *n);
/* "a mapping", "a list", "a scalar" ("nothing" for an empty plain value) for messages. */
const char *ytree_kind_name(const struct ynode *n);

#endif

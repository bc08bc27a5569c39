/* slurm_int.h - what slurm_import.c (reading the three files) and
 * slurm_fleet.c (node types, the switch tree, writing the fleet file) share.
 * Nothing outside src/core/fleet/slurm_*.c includes it. */
#ifndef SL_SLURM_INT_H
#define SL_SLURM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "slurm_import.h"
#include "strmap.h"
#include "topo.h"

#define NAME_MAX_LEN 64
#define MAX_TOKENS 128
#define MAX_NODE_GRES 16
#define HOSTLIST_MAX (4 * SLURM_MAX_NODES)
#define SLURM_MAX_TYPES 4096    /* node types one import makes */
#define SLURM_MAX_SWITCHES 100000 /* switches and blocks in topology.conf */
#define SLURM_MAX_GRES_LINES 100000 /* lines of gres.conf */

/* ---- text ----------------------------------------------------------------- */


struct words {
	char *k[MAX_TOKENS], *v[MAX_TOKENS];
	int n;
};

/* ---- the import's state ---------------------------------------------------- */

struct snode {
	char name[NAME_MAX_LEN];
	char gtype[NAME_MAX_LEN]; /* gres type as slurm.conf writes it ("" none) */
	int gpus, cpus, cores_per_socket, line;
	int64_t mem_mib;          /* -1: not given */
	int gl[MAX_NODE_GRES], ngl; /* gres.conf lines that apply */
	int type;                 /* index in types, -1: not translated */
	int leaf;                 /* -1: none yet */
	int block;                /* the NVLink domain (block) it is written in + 1; 0: none */
	bool skip;
};

struct gline {
	char *nodes; /* hostlist, NULL: every node */
	char type[NAME_MAX_LEN];
	int count, line;
	int links[TOPO_MAX_GPUS], nlinks; /* nlinks 0: no Links= */
	int cores_lo;                     /* -1: no Cores= */
};

struct ntype {
	char sig[512];
	struct node_type t;
	bool builtin;
};

struct sw {
	char name[NAME_MAX_LEN];
	char *nodes, *switches;
	int parent, line, fabric;
};

struct node_defaults {
	char gres[256];
	int cpus, sockets, cores, threads;
	int64_t mem;
};

struct imp {
	const struct slurm_input *in;
	struct slurm_result *r;
	struct sl_diag *d;
	struct snode *nodes;
	int nnodes, capnodes;
	struct strmap *node_by_name;
	struct gline *gl;
	int ngl, capgl;
	struct ntype *types;
	int ntypes, captypes;
	struct sw *sws;
	int nsws, capsws;
	struct strmap *sw_by_name;
	struct strmap *blk_by_name; /* BlockName= blocks */
	struct node_defaults *df; /* NodeName=DEFAULT so far */
	char cluster[NAME_MAX_LEN];
	int daemon_settings, daemon_first_line;
	bool tree; /* topology.conf has switches */
};

/* A note on file:line (slurm_import.h); "node X: ..." notes repeated for the
 * same line are counted on the first. */
void si_note(struct imp *m, const char *file, int line, bool untranslated, const char *fmt, ...)
	SL_PRINTF(5, 6);
/* The value of key in a line's words ("" for a bare word), NULL if absent. */
const char *si_word(const struct words *w, const char *key);
typedef enum sl_err (*name_fn)(struct imp *m, void *arg, const char *name);
/* Calls fn for each host a Slurm hostlist names. */
enum sl_err si_hl_expand(struct imp *m, const char *file, int line, const char *expr,
			 name_fn fn, void *arg) SL_MUST_USE;

/* slurm_fleet.c */
enum sl_err si_judge_node(struct imp *m, struct snode *n) SL_MUST_USE;
enum sl_err si_topo_line(struct imp *m, const char *file, int line, struct words *w) SL_MUST_USE;
enum sl_err si_build_tree(struct imp *m) SL_MUST_USE;
void si_write_fleet(struct imp *m, struct sl_buf *b);
enum sl_err si_write_domains(struct imp *m, struct sl_buf *b) SL_MUST_USE;

#endif

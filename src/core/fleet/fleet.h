/* fleet.h - the static description of a fleet: sites, fabrics, leaf switches,
 * NVLink domains, node types and nodes.
 *
 * A fleet is built either by the builder functions below or from a fleet file
 * (YAML, DESIGN.md §3) with fleet_load_yaml(). Dynamic state (which GPUs are in
 * use, drained nodes) is not here: it belongs to the placer (place.h), which
 * borrows a fleet that must then stay unchanged while the placer lives.
 *
 * Indices are stable ints into the arrays below; -1 means "none". */
#ifndef SL_FLEET_H
#define SL_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "topo.h"

#define FLEET_NAME_MAX 63          /* longest name of anything in a fleet */
#define FLEET_MAX_NODES 200000     /* bound on nodes in one fleet */
#define FLEET_MAX_SITES 4096       /* bound on sites in one fleet */
#define FLEET_MAX_TYPES 256        /* bound on node types, built-in ones included: a
					  placer keeps ~1.3 MB of tables per 16-GPU type */
#define FLEET_MAX_CPUS 65536       /* bound on a node type's CPU cores */
#define FLEET_MAX_MEM_GIB (1 << 24) /* bound on a node type's memory, GiB */
#define FLEET_MAX_RANGE 100000     /* bound on nodes one range expression may produce */
#define FLEET_MAX_FILE (64u << 20) /* bound on a fleet file's size */
#define FLEET_MAX_DEPTH 32         /* bound on YAML nesting */
#define FLEET_MAX_GBPS 100000      /* bound on a fabric's or NIC's line rate, Gbit/s */
#define FLEET_MAX_PRICE_HINT 100000000000LL /* bound on price_hint, fen per GPU-hour */

enum fabric_kind { FABRIC_INFINIBAND, FABRIC_ROCE };

struct fleet_site {
	char *name;
	char *region;
};

struct fleet_fabric {
	char *name;
	int site;
	enum fabric_kind kind;
	int gbps;
};

struct fleet_leaf {
	char *name;
	int fabric;
	int site;
};

struct fleet_domain {
	char *name;
	int nnodes;
	int *nodes; /* node indices, in the order given */
};

struct fleet_node {
	char *name;
	int type;   /* index into fleet.types */
	int site;
	int leaf;
	int domain; /* NVLink domain or -1 */
	int owner;  /* index into fleet.owners (a colocating tenant) or -1: the provider */
	bool shareable;     /* GPUs may be shared in thousandths */
	int64_t price_hint; /* fen per GPU-hour, a placement tie-breaker; 0 = none */
};

struct fleet {
	struct node_type *types; /* built-in types first, then custom ones */
	int ntypes;
	struct fleet_site *sites;
	int nsites;
	struct fleet_fabric *fabrics;
	int nfabrics;
	struct fleet_leaf *leaves;
	int nleaves;
	struct fleet_domain *domains;
	int ndomains;
	struct fleet_node *nodes;
	int nnodes;
	char **owners; /* tenant names that own colocated nodes */
	int nowners;
	struct gpu_model **models; /* custom GPU models (fleet_add_model), owned */
	int nmodels, capmodels;
	struct strmap *node_by_name; /* private: name -> node index */
	struct strmap *by_name;      /* private: other names (kind-prefixed) -> index */
	int caps[8];                 /* private: array capacities */
};

/* Fills f with an empty fleet that knows every built-in node type. */
enum sl_err fleet_init(struct fleet *f) SL_MUST_USE;
/* Frees everything f owns; f may then be re-initialised. */
void fleet_release(struct fleet *f);

/* Builder. Names are copied. Node, type, site, domain and owner names are
 * unique in the fleet; fabric names within their site, leaf names within their
 * fabric. A node's site is its leaf's. Each returns SL_EEXIST for a duplicate name,
 * SL_EINVAL for a bad name or reference, SL_ELIMIT past FLEET_MAX_NODES, and
 * writes the new index to *idx when idx is not NULL. A name is 1..FLEET_NAME_MAX
 * characters of [A-Za-z0-9._-]. SL_ELIMIT also past FLEET_MAX_SITES sites or
 * FLEET_MAX_TYPES types. */
enum sl_err fleet_add_type(struct fleet *f, const struct node_type *t, int *idx,
			   struct sl_diag *d) SL_MUST_USE;
enum sl_err fleet_add_site(struct fleet *f, const char *name, const char *region,
			   int *idx, struct sl_diag *d) SL_MUST_USE;
enum sl_err fleet_add_fabric(struct fleet *f, int site, const char *name,
			     enum fabric_kind kind, int gbps, int *idx,
			     struct sl_diag *d) SL_MUST_USE;
enum sl_err fleet_add_leaf(struct fleet *f, int fabric, const char *name, int *idx,
			   struct sl_diag *d) SL_MUST_USE;
enum sl_err fleet_add_node(struct fleet *f, int leaf, const char *name, int type,
			   int *idx, struct sl_diag *d) SL_MUST_USE;
/* nodes: node indices (copied, 1 or more); a node belongs to at most one
 * domain (SL_ECONFLICT otherwise). All nodes must be in one site and have the
 * same GPU model, one with multi-node NVLink domains (domain_gpus > 0), and
 * hold at most domain_gpus GPUs together (SL_EINVAL otherwise). */
enum sl_err fleet_add_domain(struct fleet *f, const char *name, const int *nodes,
			     int nnodes, int *idx, struct sl_diag *d) SL_MUST_USE;
/* Returns the owner index of tenant, adding it if new. */
enum sl_err fleet_owner_index(struct fleet *f, const char *tenant, int *idx,
			      struct sl_diag *d) SL_MUST_USE;

/* Custom GPU models (fleet_model.c): a model the catalog does not know (an
 * older or undisclosed part). m is copied, its name (a valid fleet name, not a
 * catalog model's) and vendor (NULL = "unknown") too; *out (may be NULL) points
 * at the fleet's copy, stable until fleet_release, for node_type.gpu.
 * SL_EEXIST when the name is taken (by the catalog or this fleet), SL_EINVAL
 * for a bad name or figures (mem_gib < 0, pcie_gen outside 0..6), SL_ELIMIT
 * past FLEET_MAX_MODELS. */
#define FLEET_MAX_MODELS 256
enum sl_err fleet_add_model(struct fleet *f, const struct gpu_model *m,
			    const struct gpu_model **out, struct sl_diag *d) SL_MUST_USE;
/* The model called name: the catalog's, else the fleet's custom one; NULL. */
const struct gpu_model *fleet_find_model(const struct fleet *f, const char *name);
/* Frees the custom models (fleet_release calls it). */
void fleet_models_release(struct fleet *f);

/* Lookups; -1 when absent. */
int fleet_find_node(const struct fleet *f, const char *name);
int fleet_find_type(const struct fleet *f, const char *name);
int fleet_find_site(const struct fleet *f, const char *name);
int fleet_find_owner(const struct fleet *f, const char *tenant);
int fleet_find_domain(const struct fleet *f, const char *name);
/* Fabric names are unique within their site, leaf names within their fabric. */
int fleet_find_fabric(const struct fleet *f, int site, const char *name);
int fleet_find_leaf(const struct fleet *f, int fabric, const char *name);
/* True when name is 1..FLEET_NAME_MAX characters of [A-Za-z0-9._-]. */
bool fleet_name_valid(const char *name);
static inline const struct node_type *fleet_node_type(const struct fleet *f, int node)
{
	return &f->types[f->nodes[node].type];
}

/* Parses a fleet file from text (len bytes, need not be NUL-terminated) into f,
 * which must be fresh from fleet_init(). file names the source in diagnostics.
 * On any error f is left as fleet_init() made it and d says file, line, column
 * and what was expected (d->hint: the nearest known key or name, when close).
 * gpu_models (custom models: name, memory_gib, optional vendor, pcie_gen 3..6,
 * bf16_tflops) and node_types are read first wherever they appear in the file,
 * then sites, then
 * nvlink_domains and owners (which name nodes by range). Errors: SL_EPARSE for
 * YAML syntax, anchors, aliases, tags or a second document; SL_ELIMIT past
 * FLEET_MAX_FILE, FLEET_MAX_DEPTH, FLEET_MAX_RANGE, FLEET_MAX_NODES,
 * FLEET_MAX_SITES or FLEET_MAX_TYPES; SL_EINVAL
 * for unknown, missing or duplicate keys, wrong value types and bad values;
 * SL_EEXIST for duplicate names; SL_ENOTFOUND for an unknown node in
 * nvlink_domains or owners; SL_ECONFLICT for a node in two domains or owned by
 * two tenants. */
enum sl_err fleet_load_yaml(struct fleet *f, const char *text, size_t len,
			    const char *file, struct sl_diag *d) SL_MUST_USE;

/* Expands a host range such as "fza-h100-[002-016]" or "n[1-3,7]" (one bracket
 * group; leading zeros keep their width; no bracket = the name itself). Calls
 * fn once per name in order; stops and returns fn's error if it fails. Errors
 * (bad syntax, more than FLEET_MAX_RANGE names) name the column in d. */
enum sl_err fleet_expand_range(const char *expr,
			       enum sl_err (*fn)(void *arg, const char *name),
			       void *arg, struct sl_diag *d) SL_MUST_USE;

/* Counts for `suanli fleet check`. */
struct fleet_summary {
	int sites, regions, fabrics, leaves, domains, nodes, gpus, owners;
	int gpus_by_model[64];              /* index = catalog_gpu_at() index */
	int nodes_by_type[FLEET_MAX_TYPES]; /* index = fleet type index */
};
void fleet_summarize(const struct fleet *f, struct fleet_summary *s);

#endif

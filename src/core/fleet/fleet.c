/* fleet.c - the fleet builder, its lookups and the summary.
 *
 * The fleet is a set of flat arrays linked by int indices, so it can be walked
 * without pointer chasing, copied by the placer into its own indexes and
 * swapped whole (fleet_load_yaml builds into a scratch fleet and swaps on
 * success). Node names live in their own hash map because a fleet may hold
 * hundreds of thousands; every other name goes into one shared map under a
 * kind prefix ("S|fuzhou-a", "L|<fabric>|leaf-01"), which gives each kind its
 * own namespace and scopes fabric and leaf names to their parent. Every builder
 * checks all its preconditions before it changes anything, so a failed call
 * leaves the fleet as it was. */
#include "fleet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "strmap.h"

enum { CAP_TYPES, CAP_SITES, CAP_FABRICS, CAP_LEAVES, CAP_DOMAINS, CAP_NODES, CAP_OWNERS };

/* Room for a kind letter, a parent index and a name. */
#define FLEET_KEY_MAX (FLEET_NAME_MAX + 32)

bool fleet_name_valid(const char *name)
{
	size_t n = 0;
	if (!name)
		return false;
	for (; name[n]; n++) {
		char c = name[n];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
		if (!ok || n >= FLEET_NAME_MAX)
			return false;
	}
	return n > 0;
}

static enum sl_err fleet_check_name(const char *what, const char *name, struct sl_diag *d)
{
	if (fleet_name_valid(name))
		return SL_OK;
	sl_diag_set(d, SL_EINVAL,
		    "bad %s name '%.80s'%s; expected 1 to %d characters of A-Z a-z 0-9 . _ -",
		    what, name ? name : "", name && strlen(name) > 80 ? "..." : "",
		    FLEET_NAME_MAX);
	return SL_EINVAL;
}

/* key = "<kind>|<parent>|<name>"; name is valid, so it fits. */
static const char *fleet_key(char *buf, char kind, int parent, const char *name)
{
	snprintf(buf, FLEET_KEY_MAX, "%c|%d|%s", kind, parent, name);
	return buf;
}

static int fleet_lookup(const struct fleet *f, char kind, int parent, const char *name)
{
	char key[FLEET_KEY_MAX];
	if (!fleet_name_valid(name))
		return -1;
	return strmap_get(f->by_name, fleet_key(key, kind, parent, name), -1);
}

/* Makes room for one more element in *arr (n used, caps[which] allocated). */
static enum sl_err fleet_reserve(struct fleet *f, void **arr, int n, int which, size_t elem)
{
	/* No array of a fleet (types, sites, fabrics, leaves, nodes, domains,
	 * owners) holds more entries than the fleet may have nodes. */
	return sl_grow_int(arr, &f->caps[which], (size_t)n + 1, elem, FLEET_MAX_NODES);
}

/* Registers name under kind/parent with value idx; on failure nothing changes. */
static enum sl_err fleet_register(struct fleet *f, char kind, int parent, const char *name,
				  int idx, struct sl_diag *d)
{
	char key[FLEET_KEY_MAX];
	enum sl_err e = strmap_add(f->by_name, fleet_key(key, kind, parent, name), idx);
	if (e == SL_ENOMEM)
		return sl_diag_set(d, e, "out of memory");
	return e;
}

static enum sl_err fleet_exists(struct sl_diag *d, const char *what, const char *name,
				const char *where)
{
	return sl_diag_set(d, SL_EEXIST, "duplicate %s name '%s'%s; each %s needs its own name",
			   what, name, where, what);
}

enum sl_err fleet_init(struct fleet *f)
{
	memset(f, 0, sizeof(*f));
	if (strmap_new(&f->node_by_name) != SL_OK || strmap_new(&f->by_name) != SL_OK) {
		fleet_release(f);
		return SL_ENOMEM;
	}
	for (int i = 0; i < topo_builtin_count(); i++) {
		struct node_type t;
		enum sl_err e = topo_builtin(topo_builtin_name(i), &t);
		if (e == SL_OK)
			e = fleet_add_type(f, &t, NULL, NULL);
		if (e != SL_OK) {
			fleet_release(f);
			return e;
		}
	}
	return SL_OK;
}

void fleet_release(struct fleet *f)
{
	for (int i = 0; i < f->nsites; i++) {
		free(f->sites[i].name);
		free(f->sites[i].region);
	}
	for (int i = 0; i < f->nfabrics; i++)
		free(f->fabrics[i].name);
	for (int i = 0; i < f->nleaves; i++)
		free(f->leaves[i].name);
	for (int i = 0; i < f->ndomains; i++) {
		free(f->domains[i].name);
		free(f->domains[i].nodes);
	}
	for (int i = 0; i < f->nnodes; i++)
		free(f->nodes[i].name);
	for (int i = 0; i < f->nowners; i++)
		free(f->owners[i]);
	free(f->types);
	free(f->sites);
	free(f->fabrics);
	free(f->leaves);
	free(f->domains);
	free(f->nodes);
	free(f->owners);
	fleet_models_release(f);
	strmap_free(f->node_by_name);
	strmap_free(f->by_name);
	memset(f, 0, sizeof(*f));
}

static void fleet_set_idx(int *idx, int v)
{
	if (idx)
		*idx = v;
}

enum sl_err fleet_add_type(struct fleet *f, const struct node_type *t, int *idx,
			   struct sl_diag *d)
{
	if (strnlen(t->name, sizeof(t->name)) == sizeof(t->name))
		return sl_diag_set(d, SL_EINVAL, "node type name is not terminated");
	enum sl_err e = fleet_check_name("node type", t->name, d);
	if (e != SL_OK)
		return e;
	if (!t->gpu)
		return sl_diag_set(d, SL_EINVAL, "node type '%s' has no GPU model", t->name);
	if (t->ngpus < 1 || t->ngpus > TOPO_MAX_GPUS)
		return sl_diag_set(d, SL_EINVAL,
				   "node type '%s' has %d GPUs; expected 1 to %d",
				   t->name, t->ngpus, TOPO_MAX_GPUS);
	if (fleet_lookup(f, 'T', 0, t->name) >= 0)
		return fleet_exists(d, "node type", t->name,
				    " (built-in types and node_types share one namespace)");
	/* A type is ~2 KiB from a 60-byte line, and a placer builds ~1.3 MB of
	 * tables (and ~7 ms of work) for each 16-GPU type its nodes use: without
	 * a tight bound a small fleet file could ask for gigabytes. */
	if (f->ntypes >= FLEET_MAX_TYPES)
		return sl_diag_set(d, SL_ELIMIT,
				   "node type '%s' is one too many; a fleet has at most %d node "
				   "types, built-in ones included", t->name, FLEET_MAX_TYPES);
	e = fleet_reserve(f, (void **)&f->types, f->ntypes, CAP_TYPES, sizeof(*f->types));
	if (e == SL_OK)
		e = fleet_register(f, 'T', 0, t->name, f->ntypes, d);
	if (e != SL_OK)
		return e == SL_ENOMEM ? sl_diag_set(d, e, "out of memory") : e;
	f->types[f->ntypes] = *t;
	fleet_set_idx(idx, f->ntypes++);
	return SL_OK;
}

enum sl_err fleet_add_site(struct fleet *f, const char *name, const char *region, int *idx,
			   struct sl_diag *d)
{
	enum sl_err e = fleet_check_name("site", name, d);
	if (e == SL_OK)
		e = fleet_check_name("region", region, d);
	if (e != SL_OK)
		return e;
	if (fleet_lookup(f, 'S', 0, name) >= 0)
		return fleet_exists(d, "site", name, "");
	/* Sites are compared pairwise (regions in fleet_summarize), so bound them. */
	if (f->nsites >= FLEET_MAX_SITES)
		return sl_diag_set(d, SL_ELIMIT, "site '%s' is one too many; a fleet has at most %d sites",
				   name, FLEET_MAX_SITES);
	char *n = sl_strdup(name), *r = sl_strdup(region);
	e = n && r ? fleet_reserve(f, (void **)&f->sites, f->nsites, CAP_SITES, sizeof(*f->sites))
		   : SL_ENOMEM;
	if (e == SL_OK)
		e = fleet_register(f, 'S', 0, name, f->nsites, d);
	if (e != SL_OK) {
		free(n);
		free(r);
		return sl_diag_set(d, e, "out of memory");
	}
	f->sites[f->nsites] = (struct fleet_site){.name = n, .region = r};
	fleet_set_idx(idx, f->nsites++);
	return SL_OK;
}

enum sl_err fleet_add_fabric(struct fleet *f, int site, const char *name, enum fabric_kind kind,
			     int gbps, int *idx, struct sl_diag *d)
{
	if (site < 0 || site >= f->nsites)
		return sl_diag_set(d, SL_EINVAL, "fabric '%s': no site with index %d",
				   name ? name : "", site);
	enum sl_err e = fleet_check_name("fabric", name, d);
	if (e != SL_OK)
		return e;
	if (kind != FABRIC_INFINIBAND && kind != FABRIC_ROCE)
		return sl_diag_set(d, SL_EINVAL, "fabric '%s': unknown kind %d", name, (int)kind);
	if (gbps < 1 || gbps > FLEET_MAX_GBPS)
		return sl_diag_set(d, SL_EINVAL, "fabric '%s': speed %d Gbit/s; expected 1 to %d",
				   name, gbps, FLEET_MAX_GBPS);
	if (fleet_lookup(f, 'F', site, name) >= 0)
		return fleet_exists(d, "fabric", name, " in this site");
	char *n = sl_strdup(name);
	e = n ? fleet_reserve(f, (void **)&f->fabrics, f->nfabrics, CAP_FABRICS,
			      sizeof(*f->fabrics))
	      : SL_ENOMEM;
	if (e == SL_OK)
		e = fleet_register(f, 'F', site, name, f->nfabrics, d);
	if (e != SL_OK) {
		free(n);
		return sl_diag_set(d, e, "out of memory");
	}
	f->fabrics[f->nfabrics] =
		(struct fleet_fabric){.name = n, .site = site, .kind = kind, .gbps = gbps};
	fleet_set_idx(idx, f->nfabrics++);
	return SL_OK;
}

enum sl_err fleet_add_leaf(struct fleet *f, int fabric, const char *name, int *idx,
			   struct sl_diag *d)
{
	if (fabric < 0 || fabric >= f->nfabrics)
		return sl_diag_set(d, SL_EINVAL, "leaf '%s': no fabric with index %d",
				   name ? name : "", fabric);
	enum sl_err e = fleet_check_name("leaf", name, d);
	if (e != SL_OK)
		return e;
	if (fleet_lookup(f, 'L', fabric, name) >= 0)
		return fleet_exists(d, "leaf", name, " in this fabric");
	char *n = sl_strdup(name);
	e = n ? fleet_reserve(f, (void **)&f->leaves, f->nleaves, CAP_LEAVES, sizeof(*f->leaves))
	      : SL_ENOMEM;
	if (e == SL_OK)
		e = fleet_register(f, 'L', fabric, name, f->nleaves, d);
	if (e != SL_OK) {
		free(n);
		return sl_diag_set(d, e, "out of memory");
	}
	f->leaves[f->nleaves] = (struct fleet_leaf){
		.name = n, .fabric = fabric, .site = f->fabrics[fabric].site};
	fleet_set_idx(idx, f->nleaves++);
	return SL_OK;
}

enum sl_err fleet_add_node(struct fleet *f, int leaf, const char *name, int type, int *idx,
			   struct sl_diag *d)
{
	if (leaf < 0 || leaf >= f->nleaves)
		return sl_diag_set(d, SL_EINVAL, "node '%s': no leaf with index %d",
				   name ? name : "", leaf);
	if (type < 0 || type >= f->ntypes)
		return sl_diag_set(d, SL_EINVAL, "node '%s': no node type with index %d",
				   name ? name : "", type);
	enum sl_err e = fleet_check_name("node", name, d);
	if (e != SL_OK)
		return e;
	if (strmap_get(f->node_by_name, name, -1) >= 0)
		return fleet_exists(d, "node", name, "");
	if (f->nnodes >= FLEET_MAX_NODES)
		return sl_diag_set(d, SL_ELIMIT, "node '%s' is one too many; a fleet holds at most %d nodes",
				   name, FLEET_MAX_NODES);
	char *n = sl_strdup(name);
	e = n ? fleet_reserve(f, (void **)&f->nodes, f->nnodes, CAP_NODES, sizeof(*f->nodes))
	      : SL_ENOMEM;
	if (e == SL_OK)
		e = strmap_add(f->node_by_name, name, f->nnodes);
	if (e != SL_OK) {
		free(n);
		return sl_diag_set(d, e, "out of memory");
	}
	f->nodes[f->nnodes] = (struct fleet_node){
		.name = n, .type = type, .site = f->leaves[leaf].site, .leaf = leaf,
		.domain = -1, .owner = -1};
	fleet_set_idx(idx, f->nnodes++);
	return SL_OK;
}

/* GPUs of the listed nodes that exist, for the message of an oversized domain. */
static long long domain_gpus_total(const struct fleet *f, const int *nodes, int nnodes)
{
	long long n = 0;
	for (int i = 0; i < nnodes; i++)
		if (nodes[i] >= 0 && nodes[i] < f->nnodes)
			n += f->types[f->nodes[nodes[i]].type].ngpus;
	return n;
}

/* The domain rules of fleet.h, checked before anything changes. */
static enum sl_err fleet_check_domain(const struct fleet *f, const char *name, const int *nodes,
				      int nnodes, struct sl_diag *d)
{
	if (nnodes < 1)
		return sl_diag_set(d, SL_EINVAL, "NVLink domain '%s' has no nodes; expected 1 or more",
				   name);
	const struct gpu_model *gpu = NULL;
	int site = -1, gpus = 0;
	for (int i = 0; i < nnodes; i++) {
		int n = nodes[i];
		if (n < 0 || n >= f->nnodes)
			return sl_diag_set(d, SL_EINVAL, "NVLink domain '%s': no node with index %d",
					   name, n);
		const struct fleet_node *node = &f->nodes[n];
		const struct node_type *t = &f->types[node->type];
		if (node->domain >= 0)
			return sl_diag_set(d, SL_ECONFLICT,
					   "node '%s' is already in NVLink domain '%s'; a node belongs to at most one domain",
					   node->name, f->domains[node->domain].name);
		for (int j = 0; j < i; j++)
			if (nodes[j] == n)
				return sl_diag_set(d, SL_EINVAL,
						   "node '%s' is listed twice in NVLink domain '%s'",
						   node->name, name);
		if (t->gpu->domain_gpus <= 0)
			return sl_diag_set(d, SL_EINVAL,
					   "node '%s' (type %s, GPU %s) cannot be in NVLink domain '%s'; expected nodes whose GPU model has multi-node NVLink domains (such as gb200)",
					   node->name, t->name, t->gpu->name, name);
		if (gpu && t->gpu != gpu)
			return sl_diag_set(d, SL_EINVAL,
					   "node '%s' has GPU %s but NVLink domain '%s' holds %s; expected one GPU model per domain",
					   node->name, t->gpu->name, name, gpu->name);
		if (site >= 0 && node->site != site)
			return sl_diag_set(d, SL_EINVAL,
					   "node '%s' is in site %s but NVLink domain '%s' is in %s; expected one site per domain",
					   node->name, f->sites[node->site].name, name,
					   f->sites[site].name);
		gpu = t->gpu;
		site = node->site;
		gpus += t->ngpus;
		/* Checked as the nodes come, so a domain naming 100,000 nodes is
		 * refused after a few dozen rather than after the quadratic duplicate
		 * scan has run over all of them. */
		if (gpus > gpu->domain_gpus)
			return sl_diag_set(d, SL_EINVAL,
					   "NVLink domain '%s' has %lld GPUs; a %s domain holds at most %d",
					   name, domain_gpus_total(f, nodes, nnodes), gpu->name,
					   gpu->domain_gpus);
	}
	return SL_OK;
}

enum sl_err fleet_add_domain(struct fleet *f, const char *name, const int *nodes, int nnodes,
			     int *idx, struct sl_diag *d)
{
	enum sl_err e = fleet_check_name("NVLink domain", name, d);
	if (e != SL_OK)
		return e;
	if (fleet_lookup(f, 'D', 0, name) >= 0)
		return fleet_exists(d, "NVLink domain", name, "");
	e = fleet_check_domain(f, name, nodes, nnodes, d);
	if (e != SL_OK)
		return e;
	char *n = sl_strdup(name);
	int *copy = malloc((size_t)nnodes * sizeof(*copy));
	e = n && copy ? fleet_reserve(f, (void **)&f->domains, f->ndomains, CAP_DOMAINS,
				      sizeof(*f->domains))
		      : SL_ENOMEM;
	if (e == SL_OK)
		e = fleet_register(f, 'D', 0, name, f->ndomains, d);
	if (e != SL_OK) {
		free(n);
		free(copy);
		return sl_diag_set(d, e, "out of memory");
	}
	memcpy(copy, nodes, (size_t)nnodes * sizeof(*copy));
	for (int i = 0; i < nnodes; i++)
		f->nodes[nodes[i]].domain = f->ndomains;
	f->domains[f->ndomains] = (struct fleet_domain){.name = n, .nnodes = nnodes, .nodes = copy};
	fleet_set_idx(idx, f->ndomains++);
	return SL_OK;
}

enum sl_err fleet_owner_index(struct fleet *f, const char *tenant, int *idx, struct sl_diag *d)
{
	enum sl_err e = fleet_check_name("tenant", tenant, d);
	if (e != SL_OK)
		return e;
	int have = fleet_lookup(f, 'O', 0, tenant);
	if (have >= 0) {
		fleet_set_idx(idx, have);
		return SL_OK;
	}
	char *n = sl_strdup(tenant);
	e = n ? fleet_reserve(f, (void **)&f->owners, f->nowners, CAP_OWNERS, sizeof(*f->owners))
	      : SL_ENOMEM;
	if (e == SL_OK)
		e = fleet_register(f, 'O', 0, tenant, f->nowners, d);
	if (e != SL_OK) {
		free(n);
		return sl_diag_set(d, e, "out of memory");
	}
	f->owners[f->nowners] = n;
	fleet_set_idx(idx, f->nowners++);
	return SL_OK;
}

int fleet_find_node(const struct fleet *f, const char *name)
{
	return name ? strmap_get(f->node_by_name, name, -1) : -1;
}

int fleet_find_type(const struct fleet *f, const char *name)
{
	return fleet_lookup(f, 'T', 0, name);
}

int fleet_find_site(const struct fleet *f, const char *name)
{
	return fleet_lookup(f, 'S', 0, name);
}

int fleet_find_owner(const struct fleet *f, const char *tenant)
{
	return fleet_lookup(f, 'O', 0, tenant);
}

int fleet_find_domain(const struct fleet *f, const char *name)
{
	return fleet_lookup(f, 'D', 0, name);
}

int fleet_find_fabric(const struct fleet *f, int site, const char *name)
{
	return fleet_lookup(f, 'F', site, name);
}

int fleet_find_leaf(const struct fleet *f, int fabric, const char *name)
{
	return fleet_lookup(f, 'L', fabric, name);
}

static int fleet_model_index(const struct gpu_model *m)
{
	size_t n = catalog_gpu_count();
	for (size_t i = 0; i < n && i < 64; i++)
		if (catalog_gpu_at(i) == m)
			return (int)i;
	return -1;
}

void fleet_summarize(const struct fleet *f, struct fleet_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->sites = f->nsites;
	s->fabrics = f->nfabrics;
	s->leaves = f->nleaves;
	s->domains = f->ndomains;
	s->nodes = f->nnodes;
	s->owners = f->nowners;
	for (int i = 0; i < f->nsites; i++) {
		int j = 0;
		while (j < i && strcmp(f->sites[j].region, f->sites[i].region) != 0)
			j++;
		s->regions += j == i;
	}
	for (int i = 0; i < f->nnodes; i++) {
		s->gpus += f->types[f->nodes[i].type].ngpus;
		s->nodes_by_type[f->nodes[i].type]++;
	}
	/* Per type, not per node: the catalog lookup is a scan. */
	for (int ty = 0; ty < f->ntypes; ty++) {
		int m = fleet_model_index(f->types[ty].gpu);
		if (m >= 0)
			s->gpus_by_model[m] += s->nodes_by_type[ty] * f->types[ty].ngpus;
	}
}

/* nics.c - RDMA NICs and their rails from sysfs (see nics.h).
 *
 * Nearness is scored on the resolved sysfs device paths, which spell the PCI
 * tree from the root complex down ("/sys/devices/pci0000:10/0000:10:01.0/
 * 0000:11:00.0/0000:12:00.0"): two devices under the same root complex score
 * 2 + the number of path elements they share below it (the deeper, the fewer
 * bridges between them: PIX beats PXB beats PHB), two on different root
 * complexes of one NUMA node score 1 (NODE), others 0 (SYS). This is the
 * ordering `nvidia-smi topo -m` prints.
 */
#include "nics.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nic_cand {
	char name[32];
	char path[PATH_MAX];
	int numa, gbps, best;
	gpumask_t rail;
};

static const char *sysfs_root(void)
{
	const char *r = getenv(NICS_SYSFS_ENV);
	return r && *r ? r : "/sys";
}

/* First line of a small file as an int; fallback when absent or not a number. */
static int read_int(const char *path, int fallback)
{
	FILE *f = fopen(path, "r");
	char buf[64];
	int v = fallback;
	if (!f)
		return fallback;
	if (fgets(buf, sizeof(buf), f)) {
		char *end;
		long x = strtol(buf, &end, 10);
		if (end != buf && x >= INT_MIN && x <= INT_MAX)
			v = (int)x;
	}
	fclose(f);
	return v;
}

/* "00000000:18:00.0" (NVML) -> "0000:18:00.0" (sysfs), lower case. */
static bool sysfs_busid(const char *nvml, char *out, size_t n)
{
	size_t len = strlen(nvml);
	if (len < 12 || n < 13)
		return false;
	memcpy(out, nvml + len - 12, 13);
	for (char *p = out; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return true;
}

/* Path elements after the root's "devices/", shared from the start. */
static int score(const char *a, const char *b, int numa_a, int numa_b)
{
	const char *pa = strstr(a, "/devices/"), *pb = strstr(b, "/devices/");
	int shared = 0;

	if (!pa || !pb)
		return 0;
	pa += 9;
	pb += 9;
	for (;;) {
		size_t la = strcspn(pa, "/"), lb = strcspn(pb, "/");
		if (la == 0 || la != lb || memcmp(pa, pb, la) != 0)
			break;
		shared++;
		pa += la + (pa[la] == '/');
		pb += lb + (pb[lb] == '/');
	}
	if (shared > 0)
		return 1 + shared;
	return numa_a >= 0 && numa_a == numa_b ? 1 : 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

enum sl_err nics_discover(struct discovery *disc, struct sl_diag *d)
{
	const char *root = sysfs_root();
	char gpath[TOPO_MAX_GPUS][PATH_MAX], p[PATH_MAX + 64], bus[16];
	int gnuma[TOPO_MAX_GPUS];
	struct dirent **ents = NULL;
	struct nic_cand *c = NULL;
	int n, nc = 0, kept = 0;
	struct node_type *t;
	enum sl_err e = SL_OK;

	if (!disc)
		return sl_diag_set(d, SL_EINVAL, "nics_discover: no discovery");
	t = &disc->type;
	if (t->nnics > 0 || t->ngpus < 1)
		return SL_OK;
	for (int g = 0; g < t->ngpus; g++) {
		gpath[g][0] = 0;
		gnuma[g] = -1;
		if (!sysfs_busid(disc->gpus[g].bus_id, bus, sizeof(bus)))
			continue;
		snprintf(p, sizeof(p), "%s/bus/pci/devices/%s", root, bus);
		if (!realpath(p, gpath[g]))
			gpath[g][0] = 0;
		snprintf(p, sizeof(p), "%s/bus/pci/devices/%s/numa_node", root, bus);
		gnuma[g] = read_int(p, -1);
	}
	snprintf(p, sizeof(p), "%s/class/infiniband", root);
	n = scandir(p, &ents, NULL, by_name);
	if (n <= 0) {
		free(ents);
		return SL_OK; /* no RDMA devices */
	}
	c = calloc((size_t)(n < NICS_SCAN_MAX ? n : NICS_SCAN_MAX), sizeof(*c));
	if (!c) {
		e = sl_diag_set(d, SL_ENOMEM, "out of memory reading NICs");
		goto out;
	}
	for (int i = 0; i < n && nc < NICS_SCAN_MAX; i++) {
		struct nic_cand *x = &c[nc];
		const char *name = ents[i]->d_name;
		if (name[0] == '.' || strlen(name) >= sizeof(x->name))
			continue;
		snprintf(p, sizeof(p), "%s/class/infiniband/%s/device", root, name);
		if (!realpath(p, x->path))
			continue;
		memcpy(x->name, name, strlen(name) + 1); /* length checked above */
		snprintf(p, sizeof(p), "%s/class/infiniband/%s/device/numa_node", root, name);
		x->numa = read_int(p, -1);
		snprintf(p, sizeof(p), "%s/class/infiniband/%s/ports/1/rate", root, name);
		x->gbps = read_int(p, 0); /* "400 Gb/sec (4X NDR)" */
		if (x->gbps < 0)
			x->gbps = 0;
		x->best = -1;
		for (int g = 0; g < t->ngpus; g++) {
			int s = gpath[g][0] ? score(x->path, gpath[g], x->numa, gnuma[g]) : 0;
			if (s > x->best) {
				x->best = s;
				x->rail = 0;
			}
			if (s == x->best)
				x->rail |= (gpumask_t)1 << g;
		}
		nc++;
	}
	/* The nearest first when there are more than a type keeps; kept NICs
	 * stay in name order. */
	for (int s = INT_MAX; kept < nc && kept < TOPO_MAX_NICS;) {
		int next = -1;
		for (int i = 0; i < nc; i++)
			if (c[i].best < s && c[i].best > next)
				next = c[i].best;
		if (next < 0)
			break;
		for (int i = 0; i < nc && kept < TOPO_MAX_NICS; i++)
			if (c[i].best == next) {
				c[i].best = INT_MAX; /* marks kept */
				kept++;
			}
		s = next;
	}
	/* Appended directly: topo_add_nic wants a catalog model, and a GPU the
	 * catalog lacks still has NICs. Names, speeds and rails are checked above. */
	for (int i = 0; i < nc && t->nnics < TOPO_MAX_NICS; i++)
		if (c[i].best == INT_MAX) {
			struct topo_nic *nic = &t->nics[t->nnics++];
			memset(nic, 0, sizeof(*nic));
			memcpy(nic->name, c[i].name, sizeof(nic->name));
			nic->gbps = c[i].gbps;
			nic->gpus = c[i].rail;
		}
out:
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	free(c);
	return e;
}

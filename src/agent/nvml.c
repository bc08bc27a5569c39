/* nvml.c - NVML through dlopen: discovery and health sampling.
 *
 * We declare the NVML types and entry points we use ourselves (layouts as in
 * NVIDIA's public nvml.h), resolve them with dlsym from libnvidia-ml.so.1 (or
 * $SUANLI_NVML_LIB), and keep them in one table per session, so nothing links
 * against NVIDIA at build time and tests can swap in a fake library.
 *
 * Links are classified per GPU pair, strongest first:
 *  - NVLink links whose far end is NVSwitch (nvmlDeviceGetNvLinkRemoteDeviceType
 *    says SWITCH): every two GPUs that both reach NVSwitch chips are
 *    LINK_NVSWITCH. Tools that only match remote PCI addresses against other
 *    GPUs (Slurm's NVML plugin, go-gpuallocator) see no links at all here.
 *  - NVLink links whose far end is another GPU: counted per remote GPU
 *    (matched by PCI bus id) -> LINK_NVLINK with that count.
 *  - otherwise the PCIe common ancestor: SINGLE/MULTIPLE -> pcie-switch,
 *    HOSTBRIDGE -> pcie-hostbridge, NODE -> numa, SYSTEM -> cross-socket.
 * Optional entry points (fabric info, NUMA id, remote device type) may be
 * missing from older drivers; we then fall back (CPU affinity for NUMA, "a
 * remote bus id that is no GPU of ours" for NVSwitch).
 */
#include "nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- the NVML declarations we use (nvml.h, public) ---- */

typedef int nvmlReturn_t;
typedef struct nvml_device_st *nvmlDevice_t;
typedef struct nvml_event_set_st *nvmlEventSet_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_TIMEOUT 10
#define NVML_FEATURE_ENABLED 1
#define NVML_TEMPERATURE_GPU 0
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_NVLINK_DEVICE_TYPE_GPU 0
#define NVML_NVLINK_DEVICE_TYPE_SWITCH 2
#define NVML_TOPOLOGY_INTERNAL 0
#define NVML_TOPOLOGY_SINGLE 10
#define NVML_TOPOLOGY_MULTIPLE 20
#define NVML_TOPOLOGY_HOSTBRIDGE 30
#define NVML_TOPOLOGY_NODE 40
#define NVML_TOPOLOGY_SYSTEM 50
#define NVML_GPU_FABRIC_UUID_LEN 16
#define NVML_GPU_FABRIC_STATE_COMPLETED 3
#define nvmlEventTypeXidCriticalError 0x0000000000000008ULL

typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned int gpu, memory; /* percent of the last sample period */
} nvmlUtilization_t;

typedef struct {
	unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
	nvmlReturn_t status;
	unsigned int cliqueId;
	unsigned char state;
} nvmlGpuFabricInfo_t;

typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType, eventData;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

#define NVML_NAME_MAX 96
#define NVML_AFFINITY_WORDS 64 /* 4096 CPUs */

/* ---- the function table ---- */

#define NVML_FUNCS(X)                                                                  \
	X(1, nvmlInit_v2, nvmlReturn_t, (void))                                        \
	X(1, nvmlShutdown, nvmlReturn_t, (void))                                       \
	X(1, nvmlErrorString, const char *, (nvmlReturn_t))                            \
	X(1, nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned int *))                    \
	X(1, nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned int, nvmlDevice_t *)) \
	X(1, nvmlDeviceGetName, nvmlReturn_t, (nvmlDevice_t, char *, unsigned int))     \
	X(1, nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t, char *, unsigned int))     \
	X(1, nvmlDeviceGetPciInfo_v3, nvmlReturn_t, (nvmlDevice_t, nvmlPciInfo_t *))    \
	X(1, nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t, nvmlMemory_t *))     \
	X(0, nvmlDeviceGetNumaNodeId, nvmlReturn_t, (nvmlDevice_t, unsigned int *))     \
	X(0, nvmlDeviceGetCpuAffinity, nvmlReturn_t, (nvmlDevice_t, unsigned int, unsigned long *)) \
	X(0, nvmlDeviceGetTopologyCommonAncestor, nvmlReturn_t, (nvmlDevice_t, nvmlDevice_t, int *)) \
	X(0, nvmlDeviceGetNvLinkState, nvmlReturn_t, (nvmlDevice_t, unsigned int, int *)) \
	X(0, nvmlDeviceGetNvLinkRemotePciInfo_v2, nvmlReturn_t, (nvmlDevice_t, unsigned int, nvmlPciInfo_t *)) \
	X(0, nvmlDeviceGetNvLinkRemoteDeviceType, nvmlReturn_t, (nvmlDevice_t, unsigned int, int *)) \
	X(0, nvmlDeviceGetGpuFabricInfo, nvmlReturn_t, (nvmlDevice_t, nvmlGpuFabricInfo_t *)) \
	X(0, nvmlSystemGetDriverVersion, nvmlReturn_t, (char *, unsigned int))          \
	X(0, nvmlDeviceGetTemperature, nvmlReturn_t, (nvmlDevice_t, int, unsigned int *)) \
	X(0, nvmlDeviceGetPowerUsage, nvmlReturn_t, (nvmlDevice_t, unsigned int *))     \
	X(0, nvmlDeviceGetUtilizationRates, nvmlReturn_t, (nvmlDevice_t, nvmlUtilization_t *)) \
	X(0, nvmlDeviceGetTotalEccErrors, nvmlReturn_t, (nvmlDevice_t, int, int, unsigned long long *)) \
	X(0, nvmlEventSetCreate, nvmlReturn_t, (nvmlEventSet_t *))                      \
	X(0, nvmlDeviceRegisterEvents, nvmlReturn_t, (nvmlDevice_t, unsigned long long, nvmlEventSet_t)) \
	X(0, nvmlEventSetWait_v2, nvmlReturn_t, (nvmlEventSet_t, nvmlEventData_t *, unsigned int)) \
	X(0, nvmlEventSetFree, nvmlReturn_t, (nvmlEventSet_t))

struct nvml_fn {
#define NVML_FN_FIELD(req, name, ret, args) ret(*name) args;
	NVML_FUNCS(NVML_FN_FIELD)
#undef NVML_FN_FIELD
};

struct nvml {
	void *lib;
	struct nvml_fn f;
	int ngpus;
	nvmlDevice_t dev[TOPO_MAX_GPUS];
	nvmlEventSet_t events; /* NULL when events are not offered */
};

static const char *lib_path(void)
{
	const char *p = getenv(NVML_LIB_ENV);
	return p && *p ? p : NVML_LIB_DEFAULT;
}

static const char *nvml_err(const struct nvml *n, nvmlReturn_t r)
{
	const char *s = n->f.nvmlErrorString ? n->f.nvmlErrorString(r) : NULL;
	return s ? s : "unknown NVML error";
}

/* dlsym returns void *; converting it to a function pointer is what POSIX
 * requires to work. The memcpy keeps -Wpedantic-style warnings quiet. */
static void *sym(void *lib, const char *name)
{
	return dlsym(lib, name);
}

static enum sl_err load(struct nvml *n, struct sl_diag *d)
{
	const char *path = lib_path();
	void *p;

	n->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		const char *why = dlerror();
		sl_diag_set(d, SL_ENOTFOUND, "no NVIDIA driver found: cannot load %s (%s)", path,
			    why ? why : "not found");
		sl_diag_hint(d, "use --simulate TYPE or --nvidia-smi-topo FILE, or install the "
			     "NVIDIA driver");
		return SL_ENOTFOUND;
	}
#define NVML_FN_LOAD(req, name, ret, args)                                              \
	p = sym(n->lib, #name);                                                         \
	if (!p && (req)) {                                                              \
		sl_diag_set(d, SL_ENOTFOUND, "%s has no %s; the NVIDIA driver is too old",  \
			    path, #name);                                               \
		return SL_ENOTFOUND;                                                    \
	}                                                                               \
	memcpy(&n->f.name, &p, sizeof(p));
	NVML_FUNCS(NVML_FN_LOAD)
#undef NVML_FN_LOAD
	return SL_OK;
}

static void unload(struct nvml *n)
{
	if (n->lib)
		dlclose(n->lib);
	n->lib = NULL;
}

enum sl_err nvml_open(struct nvml **out, struct sl_diag *d)
{
	struct nvml *n;
	unsigned int count = 0;
	nvmlReturn_t r;
	enum sl_err e;

	if (!out)
		return sl_diag_set(d, SL_EINVAL, "nvml_open: no result pointer");
	*out = NULL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return sl_diag_set(d, SL_ENOMEM, "out of memory opening NVML");
	e = load(n, d);
	if (e) {
		unload(n);
		free(n);
		return e;
	}
	r = n->f.nvmlInit_v2();
	if (r != NVML_SUCCESS) {
		sl_diag_set(d, SL_ENOTFOUND, "no NVIDIA driver found: nvmlInit failed: %s",
			    nvml_err(n, r));
		sl_diag_hint(d, "use --simulate TYPE or --nvidia-smi-topo FILE");
		unload(n);
		free(n);
		return SL_ENOTFOUND;
	}
	r = n->f.nvmlDeviceGetCount_v2(&count);
	if (r != NVML_SUCCESS || count > TOPO_MAX_GPUS) {
		e = r != NVML_SUCCESS
			    ? sl_diag_set(d, SL_EIO, "nvmlDeviceGetCount: %s", nvml_err(n, r))
			    : sl_diag_set(d, SL_ELIMIT, "found %u GPUs; at most %d per node "
					  "supported", count, TOPO_MAX_GPUS);
		nvml_close(n);
		return e;
	}
	n->ngpus = (int)count;
	for (int i = 0; i < n->ngpus; i++) {
		r = n->f.nvmlDeviceGetHandleByIndex_v2((unsigned int)i, &n->dev[i]);
		if (r != NVML_SUCCESS) {
			sl_diag_set(d, SL_EIO, "nvmlDeviceGetHandleByIndex(%d): %s", i,
				    nvml_err(n, r));
			nvml_close(n);
			return SL_EIO;
		}
	}
	if (n->f.nvmlEventSetCreate && n->f.nvmlDeviceRegisterEvents && n->f.nvmlEventSetWait_v2 &&
	    n->f.nvmlEventSetCreate(&n->events) == NVML_SUCCESS) {
		for (int i = 0; i < n->ngpus; i++)
			(void)n->f.nvmlDeviceRegisterEvents(n->dev[i],
							    nvmlEventTypeXidCriticalError,
							    n->events);
	} else {
		n->events = NULL;
	}
	*out = n;
	return SL_OK;
}

void nvml_close(struct nvml *n)
{
	if (!n)
		return;
	if (n->events && n->f.nvmlEventSetFree)
		(void)n->f.nvmlEventSetFree(n->events);
	if (n->f.nvmlShutdown)
		(void)n->f.nvmlShutdown();
	unload(n);
	free(n);
}

static int nvlinks_active(const struct nvml *n, int g)
{
	int up = 0;
	if (!n->f.nvmlDeviceGetNvLinkState)
		return 0;
	for (unsigned int l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
		int active = 0;
		if (n->f.nvmlDeviceGetNvLinkState(n->dev[g], l, &active) == NVML_SUCCESS &&
		    active == NVML_FEATURE_ENABLED)
			up++;
	}
	return up;
}

static int device_index(const struct nvml *n, nvmlDevice_t dev)
{
	for (int i = 0; i < n->ngpus; i++)
		if (n->dev[i] == dev)
			return i;
	return -1;
}

enum sl_err nvml_health(struct nvml *n, struct nvml_health_sample *out, struct sl_diag *d)
{
	if (!n || !out)
		return sl_diag_set(d, SL_EINVAL, "nvml_health: no session or no result");
	memset(out, 0, sizeof(*out));
	out->ngpus = n->ngpus;
	for (int g = 0; g < n->ngpus; g++) {
		struct nvml_gpu_health *h = &out->gpus[g];
		unsigned int v = 0;
		unsigned long long c = 0;

		h->index = g;
		h->temp_c = h->power_w = h->util_pct = -1;
		h->ecc_sbe = h->ecc_dbe = -1;
		if (n->f.nvmlDeviceGetTemperature &&
		    n->f.nvmlDeviceGetTemperature(n->dev[g], NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS)
			h->temp_c = (int)v;
		if (n->f.nvmlDeviceGetPowerUsage &&
		    n->f.nvmlDeviceGetPowerUsage(n->dev[g], &v) == NVML_SUCCESS)
			h->power_w = (int)((v + 500) / 1000); /* milliwatts */
		if (n->f.nvmlDeviceGetTotalEccErrors &&
		    n->f.nvmlDeviceGetTotalEccErrors(n->dev[g], NVML_MEMORY_ERROR_TYPE_CORRECTED,
						     NVML_VOLATILE_ECC, &c) == NVML_SUCCESS)
			h->ecc_sbe = (int64_t)c;
		if (n->f.nvmlDeviceGetTotalEccErrors &&
		    n->f.nvmlDeviceGetTotalEccErrors(n->dev[g], NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
						     NVML_VOLATILE_ECC, &c) == NVML_SUCCESS)
			h->ecc_dbe = (int64_t)c;
		h->nvlink_up = nvlinks_active(n, g);
		nvmlUtilization_t u;
		if (n->f.nvmlDeviceGetUtilizationRates &&
		    n->f.nvmlDeviceGetUtilizationRates(n->dev[g], &u) == NVML_SUCCESS && u.gpu <= 100)
			h->util_pct = (int)u.gpu;
	}
	/* Drain the XID events queued since the last call; bounded so a storm of
	 * events cannot hold a heartbeat. */
	for (int k = 0; n->events && k < NVML_XID_MAX * TOPO_MAX_GPUS * 4; k++) {
		nvmlEventData_t ev;
		int g;
		memset(&ev, 0, sizeof(ev));
		if (n->f.nvmlEventSetWait_v2(n->events, &ev, 0) != NVML_SUCCESS)
			break;
		if (!(ev.eventType & nvmlEventTypeXidCriticalError))
			continue;
		g = device_index(n, ev.device);
		if (g < 0)
			continue;
		if (out->gpus[g].nxid < NVML_XID_MAX)
			out->gpus[g].xid[out->gpus[g].nxid++] = (int)ev.eventData;
		else
			out->gpus[g].xid_lost = true;
	}
	return SL_OK;
}

/* ---- discovery ---- */

static void copy_str(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src);
}

/* Whether needle occurs in s, ignoring ASCII case ("PCIe", "PCIE"). */
static bool has_word(const char *s, const char *needle)
{
	size_t n = strlen(needle);
	for (; *s; s++)
		if (strncasecmp(s, needle, n) == 0)
			return true;
	return false;
}

/* Catalog model from the driver's device name: "NVIDIA H100 80GB HBM3" ->
 * h100-sxm. The more specific names come first; a NULL model marks parts the
 * catalog does not hold (PCIe cards and NVL variants of SXM parts: other
 * memory, power and links). */
const struct gpu_model *nvml_model_from_name(const char *name)
{
	static const struct {
		const char *needle, *model;
	} rules[] = {
		{"GB300", "gb300"}, {"GB200", "gb200"},    {"B300", "b300"},
		{"B200", "b200"},   {"H100 NVL", "h100-nvl"}, {"H200 NVL", NULL},
		{"H200", "h200-sxm"}, {"H800", "h800-sxm"}, {"H100", "h100-sxm"},
		{"A800", "a800-sxm"}, {"A100", "a100-sxm"}, {"L40S", "l40s"},
	};
	for (size_t i = 0; name && i < sizeof(rules) / sizeof(rules[0]); i++)
		if (has_word(name, rules[i].needle)) {
			if (!rules[i].model || (has_word(name, "PCIe") && strcmp(rules[i].model, "l40s")))
				return NULL;
			return catalog_gpu_find(rules[i].model);
		}
	return NULL;
}

#define NUMA_BY_CPU 1000 /* numa_of: 1000 + first local CPU when NVML has no NUMA id */

static int numa_of(const struct nvml *n, int g)
{
	unsigned int node = 0;
	unsigned long set[NVML_AFFINITY_WORDS];
	size_t bits = sizeof(unsigned long) * 8;

	if (n->f.nvmlDeviceGetNumaNodeId &&
	    n->f.nvmlDeviceGetNumaNodeId(n->dev[g], &node) == NVML_SUCCESS && node <= INT8_MAX)
		return (int)node;
	memset(set, 0, sizeof(set));
	if (n->f.nvmlDeviceGetCpuAffinity &&
	    n->f.nvmlDeviceGetCpuAffinity(n->dev[g], NVML_AFFINITY_WORDS, set) == NVML_SUCCESS)
		for (size_t w = 0; w < NVML_AFFINITY_WORDS; w++)
			if (set[w])
				return NUMA_BY_CPU + (int)(w * bits) + __builtin_ctzl(set[w]);
	return 0;
}

/* Older drivers have no NUMA id: GPUs are grouped by their first local CPU,
 * and the groups numbered 0, 1, ... in CPU order (labels, which is all the
 * comparison and placement need). */
static void number_cpu_groups(int *raw, int ngpus, int8_t *numa)
{
	for (int g = 0; g < ngpus; g++) {
		int rank = 0;
		if (raw[g] < NUMA_BY_CPU) {
			numa[g] = (int8_t)raw[g];
			continue;
		}
		for (int h = 0; h < ngpus; h++) {
			bool earlier = raw[h] >= NUMA_BY_CPU && raw[h] < raw[g];
			for (int k = 0; earlier && k < h; k++)
				if (raw[k] == raw[h])
					earlier = false; /* count each CPU group once */
			rank += earlier;
		}
		numa[g] = (int8_t)(rank > INT8_MAX ? INT8_MAX : rank);
	}
}

static int bus_index(const char bus[][DISC_BUSID_MAX], int ngpus, const char *id)
{
	for (int g = 0; g < ngpus; g++)
		if (bus[g][0] && strcasecmp(bus[g], id) == 0)
			return g;
	return -1;
}

static enum link_kind ancestor_kind(int level)
{
	switch (level) {
	case NVML_TOPOLOGY_INTERNAL:
	case NVML_TOPOLOGY_SINGLE:
	case NVML_TOPOLOGY_MULTIPLE:
		return LINK_PCIE_SWITCH;
	case NVML_TOPOLOGY_HOSTBRIDGE:
		return LINK_PCIE_HOSTBRIDGE;
	case NVML_TOPOLOGY_NODE:
		return LINK_NUMA;
	default:
		return LINK_CROSS_SOCKET;
	}
}

/* Per GPU: links up, links to NVSwitch, links to each other GPU. */
struct nvl_census {
	int up[TOPO_MAX_GPUS];
	bool to_switch[TOPO_MAX_GPUS];
	uint8_t to_gpu[TOPO_MAX_GPUS][TOPO_MAX_GPUS];
};

static void census(const struct nvml *n, const char bus[][DISC_BUSID_MAX],
		   struct nvl_census *c)
{
	memset(c, 0, sizeof(*c));
	if (!n->f.nvmlDeviceGetNvLinkState)
		return;
	for (int g = 0; g < n->ngpus; g++)
		for (unsigned int l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
			int active = 0, type = -1, peer;
			nvmlPciInfo_t pci;
			if (n->f.nvmlDeviceGetNvLinkState(n->dev[g], l, &active) != NVML_SUCCESS ||
			    active != NVML_FEATURE_ENABLED)
				continue;
			c->up[g]++;
			memset(&pci, 0, sizeof(pci));
			if (n->f.nvmlDeviceGetNvLinkRemotePciInfo_v2 &&
			    n->f.nvmlDeviceGetNvLinkRemotePciInfo_v2(n->dev[g], l, &pci) != NVML_SUCCESS)
				pci.busId[0] = 0;
			pci.busId[sizeof(pci.busId) - 1] = 0;
			if (n->f.nvmlDeviceGetNvLinkRemoteDeviceType &&
			    n->f.nvmlDeviceGetNvLinkRemoteDeviceType(n->dev[g], l, &type) != NVML_SUCCESS)
				type = -1;
			peer = bus_index(bus, n->ngpus, pci.busId);
			if (type == NVML_NVLINK_DEVICE_TYPE_SWITCH || (type < 0 && peer < 0)) {
				c->to_switch[g] = true;
			} else if (peer >= 0 && peer != g &&
				   c->to_gpu[g][peer] < UINT8_MAX) {
				c->to_gpu[g][peer]++;
			}
		}
}

static void fabric_clique(const struct nvml *n, struct discovery *out)
{
	nvmlGpuFabricInfo_t fi;
	size_t k = 0, room = sizeof(out->clique); /* 32 hex digits, '/' and a 32-bit id fit */

	if (!n->f.nvmlDeviceGetGpuFabricInfo || n->ngpus == 0)
		return;
	memset(&fi, 0, sizeof(fi));
	if (n->f.nvmlDeviceGetGpuFabricInfo(n->dev[0], &fi) != NVML_SUCCESS ||
	    fi.state != NVML_GPU_FABRIC_STATE_COMPLETED || fi.status != NVML_SUCCESS)
		return;
	for (int i = 0; i < NVML_GPU_FABRIC_UUID_LEN; i++)
		k += (size_t)snprintf(out->clique + k, room - k, "%02x", fi.clusterUuid[i]);
	snprintf(out->clique + k, room - k, "/%u", fi.cliqueId);
}

static enum sl_err discover(struct nvml *n, struct discovery *out, struct sl_diag *d)
{
	char name[NVML_NAME_MAX] = "", bus[TOPO_MAX_GPUS][DISC_BUSID_MAX];
	int8_t numa[TOPO_MAX_GPUS];
	int raw_numa[TOPO_MAX_GPUS];
	const struct gpu_model *model;
	struct nvl_census *c;
	nvmlReturn_t r;
	enum sl_err e;

	if (n->ngpus == 0)
		return sl_diag_set(d, SL_ENOTFOUND, "the NVIDIA driver reports no GPUs");
	r = n->f.nvmlDeviceGetName(n->dev[0], name, sizeof(name));
	if (r != NVML_SUCCESS)
		return sl_diag_set(d, SL_EIO, "nvmlDeviceGetName(0): %s", nvml_err(n, r));
	name[sizeof(name) - 1] = 0;
	model = nvml_model_from_name(name);
	for (int g = 0; g < n->ngpus; g++) {
		nvmlPciInfo_t pci;
		memset(&pci, 0, sizeof(pci));
		bus[g][0] = 0;
		if (n->f.nvmlDeviceGetPciInfo_v3(n->dev[g], &pci) == NVML_SUCCESS) {
			pci.busId[sizeof(pci.busId) - 1] = 0;
			copy_str(bus[g], sizeof(bus[g]), pci.busId);
		}
		raw_numa[g] = numa_of(n, g);
	}
	number_cpu_groups(raw_numa, n->ngpus, numa);
	e = discovery_begin(out, "nvml", model, n->ngpus, numa, d);
	if (e)
		return e;
	c = calloc(1, sizeof(*c));
	if (!c)
		return sl_diag_set(d, SL_ENOMEM, "out of memory during NVML discovery");
	census(n, bus, c);
	for (int g = 0; g < n->ngpus && !e; g++) {
		struct disc_gpu *x = &out->gpus[g];
		nvmlMemory_t mem;
		char s[NVML_NAME_MAX];

		copy_str(x->bus_id, sizeof(x->bus_id), bus[g]);
		if (n->f.nvmlDeviceGetName(n->dev[g], s, sizeof(s)) == NVML_SUCCESS) {
			s[sizeof(s) - 1] = 0;
			copy_str(x->name, sizeof(x->name), s);
		}
		if (n->f.nvmlDeviceGetUUID(n->dev[g], s, sizeof(s)) == NVML_SUCCESS) {
			s[sizeof(s) - 1] = 0;
			copy_str(x->uuid, sizeof(x->uuid), s);
		}
		if (n->f.nvmlDeviceGetMemoryInfo(n->dev[g], &mem) == NVML_SUCCESS)
			x->mem_mib = (int64_t)(mem.total >> 20);
		x->nvlinks_up = c->up[g];
		for (int b = g + 1; b < n->ngpus && !e; b++) {
			int level = NVML_TOPOLOGY_SYSTEM;
			/* Both ends count the links; a link down shows on both. */
			int cnt = c->to_gpu[g][b] < c->to_gpu[b][g] ? c->to_gpu[g][b] : c->to_gpu[b][g];
			enum link_kind k;
			if (c->to_switch[g] && c->to_switch[b]) {
				e = topo_set_link(&out->type, g, b, LINK_NVSWITCH, 0, 0, d);
				continue;
			}
			if (cnt > 0) {
				e = topo_set_link(&out->type, g, b, LINK_NVLINK, cnt, 0, d);
				continue;
			}
			if (n->f.nvmlDeviceGetTopologyCommonAncestor &&
			    n->f.nvmlDeviceGetTopologyCommonAncestor(n->dev[g], n->dev[b], &level) !=
				    NVML_SUCCESS)
				level = numa[g] == numa[b] ? NVML_TOPOLOGY_NODE : NVML_TOPOLOGY_SYSTEM;
			k = ancestor_kind(level);
			e = topo_set_link(&out->type, g, b, k, 0, 0, d);
		}
	}
	free(c);
	if (e)
		return e;
	if (n->f.nvmlSystemGetDriverVersion &&
	    n->f.nvmlSystemGetDriverVersion(out->driver, sizeof(out->driver)) != NVML_SUCCESS)
		out->driver[0] = 0;
	out->driver[sizeof(out->driver) - 1] = 0;
	fabric_clique(n, out);
	discovery_end(out);
	return SL_OK;
}

enum sl_err nvml_discover(struct discovery *out, struct sl_diag *d)
{
	struct nvml *n;
	enum sl_err e;

	if (!out)
		return sl_diag_set(d, SL_EINVAL, "nvml_discover: no result");
	e = nvml_open(&n, d);
	if (e)
		return e;
	e = discover(n, out, d);
	nvml_close(n);
	return e;
}

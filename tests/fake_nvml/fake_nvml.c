/* fake_nvml.c - a stand-in libnvidia-ml.so.1 for the agent's NVML tests.
 *
 * It answers the NVML calls the agent makes (src/agent/nvml.c) like one of two
 * real 8-GPU servers, chosen by the environment:
 *
 *   FAKE_NVML_MODE=nvswitch    HGX H100: "NVIDIA H100 80GB HBM3", 81,559 MiB,
 *                              18 active NVLinks per GPU, all ending at four
 *                              NVSwitch chips (remote device type SWITCH);
 *                              PCIe: NODE inside a socket, SYSTEM across.
 *   FAKE_NVML_MODE=pairbridge  8x H100 NVL: bridges pair 0-1, 2-3, 4-5, 6-7
 *                              (12 links to the partner GPU), partners share
 *                              a PCIe switch (SINGLE), others HOSTBRIDGE in a
 *                              socket and SYSTEM across.
 *   FAKE_NVML_MODE=nodriver    nvmlInit fails as without a loaded driver.
 *
 * GPUs 0-3 sit on NUMA node 0, 4-7 on node 1. Further knobs:
 *   FAKE_NVML_XID="gpu:code[,gpu:code...]"  XID events delivered by the first
 *                              event waits after registration, then timeouts.
 *   FAKE_NVML_NO_REMOTE_TYPE=1 nvmlDeviceGetNvLinkRemoteDeviceType answers
 *                              NOT_SUPPORTED (older drivers).
 *   FAKE_NVML_NO_NUMA=1        nvmlDeviceGetNumaNodeId answers NOT_SUPPORTED;
 *                              CPU affinity gives CPUs 0-55 / 56-111.
 *   FAKE_NVML_CLIQUE=1         fabric info completed: cluster UUID bytes
 *                              0..15, clique 7 (as on an NVL72 tray).
 *   FAKE_NVML_LINK_DOWN="gpu:link"  that NVLink is inactive.
 * Temperatures are 40 + index C, power 300 + index W, ECC 0 corrected and
 * index uncorrected.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct fake_dev *nvmlDevice_t;
typedef struct fake_set *nvmlEventSet_t;

struct fake_dev {
	int index;
};
struct fake_set {
	int unused;
};

typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned char clusterUuid[16];
	nvmlReturn_t status;
	unsigned int cliqueId;
	unsigned char state;
} nvmlGpuFabricInfo_t;

typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType, eventData;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

#define API __attribute__((visibility("default")))
#define OK 0
#define E_INVALID 2
#define E_NOT_SUPPORTED 3
#define E_NOT_FOUND 6
#define E_INSUFFICIENT 7
#define E_DRIVER 9
#define E_TIMEOUT 10
#define NGPUS 8
#define NLINKS 18
#define XID_MAX 32

static const unsigned int gpu_bus[NGPUS] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
static const unsigned int switch_bus[4] = {0x05, 0x06, 0x07, 0x08};
static struct fake_dev devs[NGPUS] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
static struct fake_set the_set;
static int xid_gpu[XID_MAX], xid_code[XID_MAX], nxid, xid_next;
static int inited;

static const char *env(const char *k)
{
	const char *v = getenv(k);
	return v ? v : "";
}

static int pairbridge(void)
{
	return strcmp(env("FAKE_NVML_MODE"), "pairbridge") == 0;
}

static int dev_index(nvmlDevice_t d)
{
	for (int i = 0; i < NGPUS; i++)
		if (d == &devs[i])
			return i;
	return -1;
}

static int link_up(int g, unsigned int link)
{
	int dg = -1, dl = -1;
	if (sscanf(env("FAKE_NVML_LINK_DOWN"), "%d:%d", &dg, &dl) == 2 && dg == g &&
	    (unsigned int)dl == link)
		return 0;
	return pairbridge() ? link < 12 : link < NLINKS;
}

static void fill_pci(nvmlPciInfo_t *p, unsigned int bus)
{
	memset(p, 0, sizeof(*p));
	p->bus = bus;
	snprintf(p->busId, sizeof(p->busId), "00000000:%02X:00.0", bus);
	snprintf(p->busIdLegacy, sizeof(p->busIdLegacy), "0000:%02X:00.0", bus);
	p->pciDeviceId = 0x233010de;
}

API const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case OK:
		return "Success";
	case E_DRIVER:
		return "Driver Not Loaded";
	case E_NOT_SUPPORTED:
		return "Not Supported";
	case E_TIMEOUT:
		return "Timeout";
	default:
		return "Unknown Error";
	}
}

API nvmlReturn_t nvmlInit_v2(void)
{
	const char *x = env("FAKE_NVML_XID");
	if (strcmp(env("FAKE_NVML_MODE"), "nodriver") == 0)
		return E_DRIVER;
	nxid = xid_next = 0;
	while (*x && nxid < XID_MAX) {
		int g, c, used = 0;
		if (sscanf(x, "%d:%d%n", &g, &c, &used) != 2)
			break;
		xid_gpu[nxid] = g;
		xid_code[nxid++] = c;
		x += used;
		if (*x == ',')
			x++;
	}
	inited = 1;
	return OK;
}

API nvmlReturn_t nvmlShutdown(void)
{
	inited = 0;
	return OK;
}

API nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int n)
{
	if (!inited || !v)
		return E_INVALID;
	snprintf(v, n, "550.54.15");
	return OK;
}

API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
	if (!inited || !n)
		return E_INVALID;
	*n = NGPUS;
	return OK;
}

API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
	if (!inited || !d || i >= NGPUS)
		return E_INVALID;
	*d = &devs[i];
	return OK;
}

API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int n)
{
	if (dev_index(d) < 0 || !name)
		return E_INVALID;
	snprintf(name, n, "%s", pairbridge() ? "NVIDIA H100 NVL" : "NVIDIA H100 80GB HBM3");
	return OK;
}

API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int n)
{
	int g = dev_index(d);
	if (g < 0 || !uuid)
		return E_INVALID;
	snprintf(uuid, n, "GPU-fa4e0000-0000-0000-0000-00000000000%d", g);
	return OK;
}

API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
	int g = dev_index(d);
	if (g < 0 || !p)
		return E_INVALID;
	fill_pci(p, gpu_bus[g]);
	return OK;
}

API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	if (dev_index(d) < 0 || !m)
		return E_INVALID;
	m->total = (pairbridge() ? 95830ULL : 81559ULL) << 20;
	m->used = 1ULL << 20;
	m->free = m->total - m->used;
	return OK;
}

API nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t d, unsigned int *node)
{
	int g = dev_index(d);
	if (g < 0 || !node)
		return E_INVALID;
	if (*env("FAKE_NVML_NO_NUMA"))
		return E_NOT_SUPPORTED;
	*node = g < 4 ? 0u : 1u;
	return OK;
}

API nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t d, unsigned int words, unsigned long *set)
{
	int g = dev_index(d);
	if (g < 0 || !set || words < 2)
		return E_INVALID;
	memset(set, 0, words * sizeof(*set));
	for (int c = g < 4 ? 0 : 56; c < (g < 4 ? 56 : 112); c++)
		set[c / 64] |= 1UL << (c % 64);
	return OK;
}

API nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, int *level)
{
	int x = dev_index(a), y = dev_index(b);
	if (x < 0 || y < 0 || !level)
		return E_INVALID;
	if (x == y)
		*level = 0;
	else if ((x < 4) != (y < 4))
		*level = 50; /* SYSTEM */
	else if (x / 2 == y / 2)
		*level = 10; /* SINGLE: one PCIe switch per pair */
	else
		*level = pairbridge() ? 30 : 40; /* HOSTBRIDGE : NODE */
	return OK;
}

API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, int *active)
{
	int g = dev_index(d);
	if (g < 0 || !active || link >= NLINKS)
		return E_INVALID;
	*active = link_up(g, link);
	return OK;
}

API nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned int link,
						     nvmlPciInfo_t *p)
{
	int g = dev_index(d);
	if (g < 0 || !p || link >= NLINKS)
		return E_INVALID;
	if (!link_up(g, link))
		return E_NOT_FOUND;
	if (pairbridge())
		fill_pci(p, gpu_bus[g ^ 1]);
	else
		fill_pci(p, switch_bus[link < 5 ? 0 : link < 10 ? 1 : link < 14 ? 2 : 3]);
	return OK;
}

API nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t d, unsigned int link, int *type)
{
	int g = dev_index(d);
	if (g < 0 || !type || link >= NLINKS)
		return E_INVALID;
	if (*env("FAKE_NVML_NO_REMOTE_TYPE"))
		return E_NOT_SUPPORTED;
	*type = pairbridge() ? 0 : 2; /* GPU : SWITCH */
	return OK;
}

API nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t d, nvmlGpuFabricInfo_t *f)
{
	if (dev_index(d) < 0 || !f)
		return E_INVALID;
	memset(f, 0, sizeof(*f));
	if (!*env("FAKE_NVML_CLIQUE")) {
		f->state = 0; /* NOT_SUPPORTED */
		return OK;
	}
	for (int i = 0; i < 16; i++)
		f->clusterUuid[i] = (unsigned char)i;
	f->cliqueId = 7;
	f->state = 3; /* COMPLETED */
	return OK;
}

API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *t)
{
	int g = dev_index(d);
	if (g < 0 || !t || sensor != 0)
		return E_INVALID;
	*t = 40u + (unsigned int)g;
	return OK;
}

/* Utilisation: 10 times the GPU's index, so a test sees which GPU is which. */
struct fake_util {
	unsigned int gpu, memory;
};
API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, struct fake_util *u)
{
	int g = dev_index(d);
	if (g < 0 || !u)
		return E_INVALID;
	u->gpu = (unsigned int)(g * 10) % 101u;
	u->memory = 0;
	return OK;
}

API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
	int g = dev_index(d);
	if (g < 0 || !mw)
		return E_INVALID;
	*mw = (300u + (unsigned int)g) * 1000u;
	return OK;
}

API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter,
					     unsigned long long *n)
{
	int g = dev_index(d);
	if (g < 0 || !n || counter != 0)
		return E_INVALID;
	*n = type == 0 ? 0 : (unsigned long long)g;
	return OK;
}

API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	if (!set)
		return E_INVALID;
	*set = &the_set;
	return OK;
}

API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types,
					  nvmlEventSet_t set)
{
	if (dev_index(d) < 0 || set != &the_set || !(types & 8ULL))
		return E_INVALID;
	return OK;
}

API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *ev, unsigned int ms)
{
	(void)ms;
	if (set != &the_set || !ev)
		return E_INVALID;
	if (xid_next >= nxid)
		return E_TIMEOUT;
	memset(ev, 0, sizeof(*ev));
	ev->device = &devs[(xid_gpu[xid_next] % NGPUS + NGPUS) % NGPUS];
	ev->eventType = 8ULL; /* nvmlEventTypeXidCriticalError */
	ev->eventData = (unsigned long long)xid_code[xid_next];
	xid_next++;
	return OK;
}

API nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	return set == &the_set ? OK : E_INVALID;
}

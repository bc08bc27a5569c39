/* cdi_spec.h - the Container Device Interface spec (CDI 0.5.0, JSON) through
 * which a node's GPUs enter tenant containers: kind CDI_KIND, one device per
 * GPU named "<prefix>-<index>" (and, where discovery knows it and the GPU is
 * real, its UUID), each carrying the GPU's own device node; the spec-wide
 * edits carry the shared device nodes (nvidiactl, nvidia-uvm, ... or the
 * Ascend managers) and read-only nosuid,nodev bind mounts of the driver's
 * user-space libraries and tools. No hooks, ever: hooks run as host root over
 * tenant files (CVE-2025-23266, CVE-2024-0132); the container runs ldconfig
 * itself.
 *
 * A device is either a real node (host "" : a deviceNode at path, which the
 * runtime creates or binds from the same host path) or a stand-in (host set:
 * a bind mount of that file to path, for simulated GPUs; the file is a
 * character device with the numbers of /dev/null, which the default device
 * rules allow).
 *
 * Pure: the agent gathers the host facts, this builds the document. */
#ifndef SL_CDI_SPEC_H
#define SL_CDI_SPEC_H

#include <jansson.h>
#include <stdint.h>

#include "discovery.h"

#define CDI_KIND "suanli.dev/gpu"
#define CDI_VERSION "0.5.0"
#define CDI_PATH_MAX 256     /* a device or mount path, bytes with the NUL */
#define CDI_SHARED_MAX 16    /* shared device nodes */
#define CDI_MOUNTS_MAX 64    /* driver files mounted read-only */
#define CDI_NAME_MAX 160     /* a device name with the NUL */

struct cdi_dev {
	char path[CDI_PATH_MAX]; /* in the container: "/dev/nvidia3" */
	char host[CDI_PATH_MAX]; /* "": a real node at path; else the stand-in file */
	uint32_t major, minor;
};

struct cdi_host {
	char prefix[CDI_NAME_MAX / 2]; /* device names "<prefix>-<i>": the node name */
	struct cdi_dev gpu[TOPO_MAX_GPUS]; /* the device node of GPU i (ngpus of them) */
	int ngpus;
	struct cdi_dev shared[CDI_SHARED_MAX];
	int nshared;
	char mounts[CDI_MOUNTS_MAX][CDI_PATH_MAX]; /* host paths, mounted at the same path */
	int nmounts;
};

/* The device name of GPU i ("<prefix>-<i>") into out (CDI_NAME_MAX). False
 * when it does not fit or prefix is not a CDI name ([A-Za-z0-9][A-Za-z0-9_.:-]*). */
bool cdi_device_name(const char *prefix, int i, char *out, size_t n);

/* The spec for disc's GPUs as h describes them (borrowed). UUID-named devices
 * are added for GPUs with a UUID when disc->source is not "simulate" (made-up
 * UUIDs repeat across simulated nodes, and CDI drops every device whose name
 * two specs share). New reference; NULL on ENOMEM, on a bad prefix or when
 * h->ngpus differs from the discovery's GPU count. */
json_t *cdi_spec_json(const struct discovery *disc, const struct cdi_host *h);

#endif

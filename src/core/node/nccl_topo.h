/* nccl_topo.h - the NCCL topology XML (NCCL_TOPO_FILE) for the GPUs and NICs a
 * job was given on one node, so that NCCL sees exactly those and how they are
 * linked (PCI tree by NUMA node, NVLink/NVSwitch links, the NICs of the rails).
 *
 * Pure: written into a caller's buffer from a struct discovery. */
#ifndef SL_NCCL_TOPO_H
#define SL_NCCL_TOPO_H

#include <stddef.h>

#include "discovery.h"

#define NCCL_TOPO_XML_MAX ((size_t)1 << 20) /* bound on the XML of one node */

/* Writes the XML for GPUs in mask gpus and the NICs named in nics[0..nnics)
 * (names not on the node are skipped). Returns the length the full text needs,
 * like snprintf; buf is NUL-terminated when n > 0. 0 (and "") when the text
 * would pass NCCL_TOPO_XML_MAX or memory is short. */
size_t nccl_topo_xml(const struct discovery *d, gpumask_t gpus, const char *const *nics,
		     int nnics, char *buf, size_t n);

#endif

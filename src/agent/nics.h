/* nics.h - the RDMA NICs of this server and the GPUs each is nearest to, read
 * from sysfs, for discoveries that do not bring their own (NVML knows GPUs
 * only; a `nvidia-smi topo -m` matrix has NIC columns).
 *
 * Each /sys/class/infiniband/<name> device is placed in the PCI tree next to
 * the GPUs (/sys/bus/pci/devices/<bus id>): the GPUs sharing the longest
 * stretch of PCI path with the NIC form its rail (behind one switch before
 * behind one host bridge), then GPUs on its NUMA node, then any. The line rate
 * is ports/1/rate. A server without such devices simply has no NICs.
 */
#ifndef SL_AGENT_NICS_H
#define SL_AGENT_NICS_H

#include "discovery.h"
#include "err.h"

#define NICS_SYSFS_ENV "SUANLI_SYSFS_ROOT" /* replaces /sys (tests) */
#define NICS_SCAN_MAX 256                   /* RDMA devices looked at; the nearest
					       TOPO_MAX_NICS are kept */

/* Adds the NICs to disc->type when it has none yet, using disc->gpus[].bus_id
 * to place the GPUs. Only SL_ENOMEM is an error; unreadable entries are
 * skipped. */
enum sl_err nics_discover(struct discovery *disc, struct sl_diag *d) SL_MUST_USE;

#endif

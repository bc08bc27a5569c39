/* lease_net.h - routable addresses for the containers of multi-node jobs on
 * partial-node leases (docs/isolation.md, "Networking").
 *
 * An operator gives each node a pool of fabric addresses (agent flag
 * --lease-net macvlan:IFACE:POOL, POOL an IPv4 CIDR inside IFACE's subnet;
 * the agent registers it). The pool is cut into one block per GPU of the
 * node, each a power of two in size: block g belongs to the lease whose
 * lowest GPU on that node is g. Live leases on one node hold disjoint GPUs,
 * so their blocks never overlap. A job's rank container gets the address
 * block_base + (job number mod block size), so every rank can name every
 * other rank's address without asking anyone, and the lease's firewall
 * (accept only its own blocks) holds for all of the lease's jobs. Two jobs
 * of one lease on one node whose numbers agree mod the block size clash;
 * the second's start fails saying so.
 *
 * Pure: no I/O. */
#ifndef SL_LEASE_NET_H
#define SL_LEASE_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define LEASE_NET_IFNAME "eth0"   /* the interface's name in the container */
#define LEASE_NET_CIDR_MAX 19     /* "255.255.255.255/32" + NUL */
#define LEASE_NET_ADDR_MAX 16     /* "255.255.255.255" + NUL */

struct lease_pool {
	uint32_t base; /* host order, the prefix's first address */
	int prefix;    /* 0..32 */
};

/* "A.B.C.D/N" (N 1..32, no host bits set) into *out; SL_EINVAL naming what
 * is wrong otherwise. */
enum sl_err lease_pool_parse(const char *s, struct lease_pool *out, struct sl_diag *d) SL_MUST_USE;
/* Dotted quad "A.B.C.D" into *addr (host order); false when not one. */
bool lease_ip_parse(const char *s, uint32_t *addr);
void lease_ip_format(uint32_t addr, char *buf, size_t n);
/* The block size (a power of two) of a pool shared by ngpus; 0 when the
 * pool has fewer addresses than ngpus. */
uint32_t lease_pool_block(const struct lease_pool *p, int ngpus);
/* The address of job number seq's container of the lease whose lowest GPU
 * on the node is gpu (0..ngpus-1), and its block as "A.B.C.D/N" (block may
 * be NULL). false when the pool is too small for ngpus. */
bool lease_net_addr(const struct lease_pool *p, int ngpus, int gpu, uint64_t seq, uint32_t *addr,
		    char *block, size_t n);

#endif

/* fabric.h - routable addresses for the containers of multi-node jobs on
 * partial-node leases (docs/isolation.md, "Networking").
 *
 * The operator names the node's fabric interface and a pool of its subnet
 * (--lease-net macvlan:IFACE:POOL); the controller gives each such rank an
 * address from it and the blocks of its lease's peers (lease_net.h, the
 * work item's "net"). The rank's container then starts in three steps, run
 * by `suanli-agent ctr-start` (this file) in the rank's shim:
 *
 *   podman create (--network none: runc makes the container's network
 *   namespace inside its user namespace) and podman init (the namespace
 *   exists, the command has not started);
 *   a macvlan interface on IFACE moved into that namespace as eth0 with the
 *   rank's address, IPv6 off, and a firewall whose input accepts only
 *   loopback, established traffic and the peers' blocks - installed by the
 *   agent (host root), which the container (no CAP_NET_ADMIN, /proc/sys
 *   read-only) cannot change;
 *   podman start --attach (signals and output as with podman run).
 *
 * Any failure before the start removes the container and exits non-zero
 * with the reason in the rank's log; a container never runs without its
 * firewall. */
#ifndef SL_AGENT_FABRIC_H
#define SL_AGENT_FABRIC_H

#include <net/if.h>
#include <stdbool.h>

#include "err.h"
#include "lease_net.h"

struct fabric {
	char iface[IF_NAMESIZE];         /* the node's fabric interface */
	char pool[LEASE_NET_CIDR_MAX];   /* "A.B.C.D/N" inside its subnet */
	int prefix;                      /* the interface's subnet prefix length */
	char gw[LEASE_NET_ADDR_MAX];     /* the default gateway through it ("": none) */
};

/* "macvlan:IFACE:POOL", checked on this host: IFACE exists and has an IPv4
 * address whose subnet holds POOL, which does not hold that address. SL_EINVAL
 * saying what is wrong. */
enum sl_err fabric_parse(const char *spec, struct fabric *f, struct sl_diag *d) SL_MUST_USE;

/* Puts the ctr-start words before a podman create command line (*argv, as
 * podman_run_argv makes it; on error it is left as it was): SELF ctr-start
 * IFACE ADDR/PREFIX GW|- PEERS|- -- ARGV... SL_EINVAL for an address or a
 * peer that is not one; SL_ENOMEM, SL_ELIMIT. */
enum sl_err fabric_wrap(const struct fabric *f, const char *self, const char *addr,
			const char *peers, char ***argv, struct sl_diag *d) SL_MUST_USE;

/* `suanli-agent ctr-start ...`: the steps above; ends in exec of podman
 * start --attach, or exits with podman's status (125: create failed, as a
 * failed pull) or 126 (the network could not be set up). */
int fabric_ctr_start_main(int argc, char **argv);

#endif

/* inst_ports.c - host ports for instances: sshd's and one per renter port,
 * from the agent's --port-range (default 30000-32767).
 *
 * A port is free when no instance of this agent holds it and a TCP socket
 * can be bound to it on every address right now (another program, or
 * another agent on the same host, would make the bind fail). An instance
 * keeps its ports across stop and start while they stay free, so the SSH
 * command a renter saved keeps working; the search starts at a point
 * hashed from the node and instance, so agents sharing a host rarely race
 * for the same port. */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "inst_int.h"
#include "log.h"

static bool bindable(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	int one = 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	bool ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

/* Held by another instance of ours, or by self's sshd (when picking a
 * renter port: with_ssh) or its renter ports before index upto. */
static bool held(const struct inst_sup *s, const struct inst *self, int port, int upto,
		 bool with_ssh)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct inst *in = s->v[i];
		if (in->phase == PH_REMOVED)
			continue;
		bool me = in == self;
		if ((!me || with_ssh) && in->ssh_port == port)
			return true;
		int lim = me ? upto : in->spec.nports;
		for (int k = 0; k < lim && k < INST_PORTS_MAX; k++)
			if (in->host_ports[k] == port)
				return true;
	}
	return false;
}

static int pick(const struct inst_sup *s, const struct inst *in, int keep, int upto,
		bool with_ssh, uint64_t seed)
{
	if (keep >= s->port_lo && keep <= s->port_hi && !held(s, in, keep, upto, with_ssh) &&
	    bindable(keep))
		return keep;
	int span = s->port_hi - s->port_lo + 1;
	for (int k = 0; k < span; k++) {
		int p = s->port_lo + (int)((seed + (uint64_t)k) % (uint64_t)span);
		if (!held(s, in, p, upto, with_ssh) && bindable(p))
			return p;
	}
	return 0;
}

bool inst_ports_assign(struct inst_sup *s, struct inst *in)
{
	uint64_t h = 1469598103934665603ull;
	for (const char *p = s->node; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	for (const char *p = in->spec.id; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	int ssh = pick(s, in, in->ssh_port, 0, false, h);
	if (!ssh)
		goto full;
	in->ssh_port = ssh;
	for (int i = 0; i < in->spec.nports; i++) {
		if (in->spec.host_network) { /* the renter's program binds it itself */
			in->host_ports[i] = in->spec.ports[i];
			continue;
		}
		int p = pick(s, in, in->host_ports[i], i, true, h + 7919u * (uint64_t)(i + 1));
		if (!p)
			goto full;
		in->host_ports[i] = p;
	}
	for (int i = in->spec.nports; i < INST_PORTS_MAX; i++)
		in->host_ports[i] = 0;
	return true;
full:
	snprintf(in->error, sizeof(in->error),
		 "no free host port left in %d-%d for instance %s; widen the agent's --port-range",
		 s->port_lo, s->port_hi, in->spec.id);
	return false;
}

/* fabric.c - a partial-node rank's routable address and its firewall
 * (fabric.h). */
#include "fabric.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "podman_args.h"
#include "proc.h"

#define PEERS_MAX 1024 /* peer blocks of one rank (one per node of the job) */

static bool iface_ok(const char *s, size_t len)
{
	if (len == 0 || len >= IF_NAMESIZE)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* The default gateway through iface from /proc/net/route ("" when none). */
static void default_gw(const char *iface, char *gw, size_t n)
{
	char line[256], name[IF_NAMESIZE + 1];
	unsigned dst, via, flags;
	gw[0] = '\0';
	FILE *f = fopen("/proc/net/route", "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%16s %x %x %x", name, &dst, &via, &flags) == 4 && dst == 0 &&
		    (flags & 2u) && !strcmp(name, iface)) {
			lease_ip_format(ntohl(via), gw, n);
			break;
		}
	if (f)
		fclose(f);
}

enum sl_err fabric_parse(const char *spec, struct fabric *f, struct sl_diag *d)
{
	memset(f, 0, sizeof(*f));
	const char *c1 = spec ? strchr(spec, ':') : NULL, *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c1 || !c2 || (size_t)(c1 - spec) != 7 || strncmp(spec, "macvlan", 7) != 0) {
		sl_diag_hint(d, "--lease-net macvlan:IFACE:A.B.C.D/N, e.g. macvlan:eth0:10.77.0.128/25");
		return sl_diag_set(d, SL_EINVAL, "--lease-net '%.80s' is not macvlan:IFACE:POOL",
				   spec ? spec : "");
	}
	size_t il = (size_t)(c2 - c1 - 1);
	if (!iface_ok(c1 + 1, il))
		return sl_diag_set(d, SL_EINVAL, "--lease-net: '%.*s' is not an interface name",
				   (int)(il > 32 ? 32 : il), c1 + 1);
	memcpy(f->iface, c1 + 1, il);
	f->iface[il] = '\0';
	struct lease_pool p;
	enum sl_err e = lease_pool_parse(c2 + 1, &p, d);
	if (e != SL_OK)
		return e;
	snprintf(f->pool, sizeof(f->pool), "%s", c2 + 1);
	struct ifaddrs *ifs = NULL, *i;
	if (getifaddrs(&ifs) != 0)
		return sl_diag_set(d, SL_EIO, "--lease-net: cannot list the interfaces: %s",
				   strerror(errno));
	uint32_t addr = 0, mask = 0;
	bool found = false, exists = false;
	for (i = ifs; i; i = i->ifa_next) {
		if (strcmp(i->ifa_name, f->iface) != 0)
			continue;
		exists = true;
		if (!found && i->ifa_addr && i->ifa_addr->sa_family == AF_INET && i->ifa_netmask) {
			addr = ntohl(((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr);
			mask = ntohl(((struct sockaddr_in *)(void *)i->ifa_netmask)->sin_addr.s_addr);
			found = true;
		}
	}
	freeifaddrs(ifs);
	if (!found) {
		sl_diag_hint(d, "name the interface of the network the nodes share (`ip -4 addr`)");
		return sl_diag_set(d, SL_EINVAL, "--lease-net: interface %s %s", f->iface,
				   exists ? "has no IPv4 address" : "does not exist");
	}
	f->prefix = __builtin_popcount(mask);
	uint32_t pmask = ~(0xffffffffu >> p.prefix);
	char ip[LEASE_NET_ADDR_MAX];
	lease_ip_format(addr, ip, sizeof(ip));
	if (p.prefix < f->prefix || (p.base & mask) != (addr & mask)) {
		sl_diag_hint(d, "the pool must be a part of the interface's subnet that nothing else "
				"uses (not its DHCP range)");
		return sl_diag_set(d, SL_EINVAL, "--lease-net: pool %s is not inside %s's subnet "
						 "%s/%d", f->pool, f->iface, ip, f->prefix);
	}
	if ((addr & pmask) == p.base)
		return sl_diag_set(d, SL_EINVAL, "--lease-net: pool %s holds %s's own address %s",
				   f->pool, f->iface, ip);
	default_gw(f->iface, f->gw, sizeof(f->gw));
	return SL_OK;
}

static char *dup_word(const char *s, int *fail)
{
	char *w = *fail ? NULL : strdup(s);
	if (!w)
		*fail = 1;
	return w;
}

enum sl_err fabric_wrap(const struct fabric *f, const char *self, const char *addr,
			const char *peers, char ***argv, struct sl_diag *d)
{
	uint32_t a;
	size_t n = 0, np = 0;
	if (!lease_ip_parse(addr, &a))
		return sl_diag_set(d, SL_EINVAL, "work item: net.addr '%.40s' is not an address", addr);
	for (const char *p = peers; p && *p;) { /* checked again by ctr-start */
		char one[LEASE_NET_CIDR_MAX];
		size_t len = strcspn(p, ",");
		struct lease_pool lp;
		if (len >= sizeof(one))
			return sl_diag_set(d, SL_EINVAL, "work item: a net.peers entry is too long");
		memcpy(one, p, len);
		one[len] = '\0';
		if (lease_pool_parse(one, &lp, d) != SL_OK)
			return SL_EINVAL;
		np++;
		p += len + (p[len] == ',');
	}
	if (np > PEERS_MAX)
		return sl_diag_set(d, SL_ELIMIT, "work item: more than %d net.peers", PEERS_MAX);
	while ((*argv)[n])
		n++;
	if (n + 8 > PODMAN_ARGV_MAX)
		return sl_diag_set(d, SL_ELIMIT, "container: more than %d words on podman's command "
						 "line", PODMAN_ARGV_MAX);
	char **v = calloc(n + 8, sizeof(char *)), cidr[LEASE_NET_CIDR_MAX + 4];
	int fail = !v;
	snprintf(cidr, sizeof(cidr), "%s/%d", addr, f->prefix);
	if (v) {
		v[0] = dup_word(self, &fail);
		v[1] = dup_word("ctr-start", &fail);
		v[2] = dup_word(f->iface, &fail);
		v[3] = dup_word(cidr, &fail);
		v[4] = dup_word(f->gw[0] ? f->gw : "-", &fail);
		v[5] = dup_word(peers && peers[0] ? peers : "-", &fail);
		v[6] = dup_word("--", &fail);
	}
	if (fail) {
		for (int i = 0; v && i < 7; i++)
			free(v[i]);
		free(v);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	memcpy(v + 7, *argv, n * sizeof(char *));
	free(*argv);
	*argv = v;
	return SL_OK;
}

/* ---- suanli-agent ctr-start ------------------------------------------ */

/* Runs argv (PATH searched), stdin from in (NULL: /dev/null), stdout into
 * out (NULL: ours, the rank's log, or /dev/null when quiet); its exit
 * status, or -1. stderr stays ours: errors land in the rank's log. */
static int run_io(char *const argv[], const char *in, char *out, size_t outn, bool quiet)
{
	return sl_run(argv, &(struct sl_run){.in = in, .out = out, .outn = outn,
					     .out_fd = quiet ? SL_RUN_NULL : SL_RUN_INHERIT,
					     .err_fd = SL_RUN_INHERIT});
}

static int run(char *const argv[], const char *in, char *out, size_t outn)
{
	return run_io(argv, in, out, outn, false);
}

static void say(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "suanli-agent: cannot give the container its network: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
}

static bool write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT; /* no IPv6 in this kernel */
	bool ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	return ok;
}

/* The input firewall: loopback, established, the peers' blocks; nothing else. */
static char *rules(const char *peers)
{
	size_t cap = 512;
	for (const char *p = peers; *p; p++)
		cap += *p == ',' ? 96 : 0;
	cap += 96;
	char *t = malloc(cap);
	if (!t)
		return NULL;
	size_t off = (size_t)snprintf(t, cap, "*filter\n:INPUT DROP [0:0]\n:FORWARD DROP [0:0]\n"
				      ":OUTPUT ACCEPT [0:0]\n-A INPUT -i lo -j ACCEPT\n"
				      "-A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT\n");
	for (const char *p = peers; *p && strcmp(peers, "-") != 0;) {
		char one[LEASE_NET_CIDR_MAX];
		size_t len = strcspn(p, ",");
		struct lease_pool lp;
		if (len >= sizeof(one) || off + 96 >= cap) {
			free(t);
			return NULL;
		}
		memcpy(one, p, len);
		one[len] = '\0';
		if (lease_pool_parse(one, &lp, NULL) != SL_OK) {
			free(t);
			return NULL;
		}
		off += (size_t)snprintf(t + off, cap - off, "-A INPUT -i %s -s %s -j ACCEPT\n",
					LEASE_NET_IFNAME, one);
		p += len + (p[len] == ',');
	}
	snprintf(t + off, cap - off, "COMMIT\n");
	return t;
}

/* The container's namespace (of pid) gets eth0 on iface with cidr, the
 * gateway and the firewall. Runs in our own namespace again at the end. */
static bool configure(int pid, const char *iface, const char *cidr, const char *gw,
		      const char *peers)
{
	char tmp[IF_NAMESIZE], pids[16], path[64];
	snprintf(tmp, sizeof(tmp), "slf%d", pid % 100000000);
	snprintf(pids, sizeof(pids), "%d", pid);
	char *fw = rules(peers);
	if (!fw) {
		say("bad peers %s%s", peers, "");
		return false;
	}
	char *add[] = {"ip", "link", "add", tmp, "link", (char *)iface, "type", "macvlan", "mode",
		       "bridge", NULL};
	char *mv[] = {"ip", "link", "set", tmp, "netns", pids, NULL};
	char *del[] = {"ip", "link", "del", tmp, NULL};
	if (run(add, NULL, NULL, 0) != 0) {
		say("no macvlan interface on %s%s", iface, "");
		free(fw);
		return false;
	}
	if (run(mv, NULL, NULL, 0) != 0) {
		(void)run(del, NULL, NULL, 0);
		say("cannot move the interface into the container (pid %s)%s", pids, "");
		free(fw);
		return false;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	int ns = open(path, O_RDONLY | O_CLOEXEC);
	bool ok = self >= 0 && ns >= 0 && setns(ns, CLONE_NEWNET) == 0;
	if (!ok)
		say("cannot enter the container's network namespace %s%s", path, "");
	char *ren[] = {"ip", "link", "set", tmp, "name", LEASE_NET_IFNAME, NULL};
	char *addr[] = {"ip", "addr", "add", (char *)cidr, "dev", LEASE_NET_IFNAME, NULL};
	char *up[] = {"ip", "link", "set", LEASE_NET_IFNAME, "up", NULL};
	char *route[] = {"ip", "route", "add", "default", "via", (char *)gw, "dev",
			 LEASE_NET_IFNAME, NULL};
	char *fwc[] = {"iptables-restore", NULL};
	/* IPv6 off before the link is up: no link-local address to reach it by */
	if (ok && !(write_file("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1") &&
		    write_file("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1"))) {
		say("cannot turn IPv6 off%s%s", "", "");
		ok = false;
	}
	if (ok && run(ren, NULL, NULL, 0) != 0) {
		say("cannot rename the interface to %s%s", LEASE_NET_IFNAME, "");
		ok = false;
	}
	if (ok && run(fwc, fw, NULL, 0) != 0) {
		say("iptables-restore failed (is iptables installed? scripts/deps.sh)%s%s", "", "");
		ok = false;
	}
	if (ok && (run(addr, NULL, NULL, 0) != 0 || run(up, NULL, NULL, 0) != 0)) {
		say("cannot set address %s on %s", cidr, LEASE_NET_IFNAME);
		ok = false;
	}
	if (ok && strcmp(gw, "-") != 0 && run(route, NULL, NULL, 0) != 0) {
		say("cannot route through %s%s", gw, "");
		ok = false;
	}
	if (self >= 0 && setns(self, CLONE_NEWNET) != 0)
		ok = false;
	if (self >= 0)
		close(self);
	if (ns >= 0)
		close(ns);
	free(fw);
	return ok;
}

int fabric_ctr_start_main(int argc, char **argv)
{
	/* ctr-start IFACE ADDR/PREFIX GW PEERS -- PODMAN... create ... --name=N ... */
	if (argc < 8 || strcmp(argv[5], "--") != 0) {
		fprintf(stderr, "suanli-agent ctr-start: internal command of the agent (fabric.h)\n");
		return 2;
	}
	char **pv = argv + 6, *name = NULL;
	int ncreate = -1;
	for (int i = 0; pv[i]; i++) {
		if (ncreate < 0 && !strcmp(pv[i], "create"))
			ncreate = i;
		if (!name && !strncmp(pv[i], "--name=", 7))
			name = pv[i] + 7;
	}
	if (ncreate < 1 || !name || ncreate + 3 > PODMAN_ARGV_MAX) {
		fprintf(stderr, "suanli-agent ctr-start: no podman create --name=... command\n");
		return 2;
	}
	/* a stop while the network is set up waits for the end of the setup (no
	 * half-moved interface is left on the node), then ends us before the
	 * start; the agent removes the container */
	sigset_t stops, old;
	sigemptyset(&stops);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGHUP);
	sigaddset(&stops, SIGQUIT);
	(void)sigprocmask(SIG_BLOCK, &stops, &old);
	int rc = run_io(pv, NULL, NULL, 0, true); /* it prints the container's id */
	if (rc != 0)
		return rc < 0 ? 125 : rc;
	char *cmd[PODMAN_ARGV_MAX + 8];
	memcpy(cmd, pv, (size_t)ncreate * sizeof(char *));
	char **tail = cmd + ncreate;
	char *rm[] = {"rm", "--force", "--time", "0", name, NULL};
	char out[64] = "";
	tail[0] = "init", tail[1] = name, tail[2] = NULL;
	rc = run_io(cmd, NULL, NULL, 0, true);
	if (rc == 0) {
		tail[0] = "inspect", tail[1] = "--format", tail[2] = "{{.State.Pid}}", tail[3] = name;
		tail[4] = NULL;
		rc = run(cmd, NULL, out, sizeof(out));
	}
	int pid = rc == 0 ? atoi(out) : 0;
	if (rc != 0 || pid <= 1 || !configure(pid, argv[1], argv[2], argv[3], argv[4])) {
		if (rc == 0 && pid <= 1)
			say("podman gave no pid for %s%s", name, "");
		memcpy(tail, rm, sizeof(rm));
		(void)run_io(cmd, NULL, NULL, 0, true);
		return 126;
	}
	tail[0] = "start", tail[1] = "--attach", tail[2] = name, tail[3] = NULL;
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
	execvp(cmd[0], cmd);
	fprintf(stderr, "suanli-agent ctr-start: cannot run %s: %s\n", cmd[0], strerror(errno));
	memcpy(tail, rm, sizeof(rm));
	(void)run_io(cmd, NULL, NULL, 0, true);
	return 126;
}

/* main.c - suanli-agent: `run` (the node agent, agent.h) and `discover`
 * (print what discovery finds, discover.h).
 *
 * main owns the process-wide things: option parsing, curl's global init, the
 * log, and the signals. SIGTERM and SIGINT ask the loop to return (the work
 * it runs keeps running: it lives in sessions of its own); SIGCHLD only wakes
 * the loop so exited work is reaped at once. Handlers write one byte to a
 * non-blocking self-pipe and set a flag; everything else happens in the loop. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "discover.h"
#include "fabric.h"
#include "discovery.h"
#include "http_client.h"
#include "log.h"
#include "state.h"
#include "work.h"

#define EXIT_USAGE 2

static volatile sig_atomic_t stop_flag;
static int wake_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
	int saved = errno;
	if (sig == SIGTERM || sig == SIGINT)
		stop_flag = 1;
	if (wake_pipe[1] >= 0)
		(void)!write(wake_pipe[1], "x", 1);
	errno = saved;
}

static void usage(FILE *f)
{
	fputs("usage: suanli-agent run --server URL [--token TOKEN] --node NAME\n"
	      "                        [--simulate TYPE | --nvidia-smi-topo FILE [--model M]]\n"
	      "                        [--state-dir DIR] [--addr IP] [--heartbeat S]\n"
	      "                        [--site S --leaf L [--type T]] [--stop-grace S]\n"
	      "                        [--log-level debug|info|warn|error]\n"
	      "       suanli-agent discover [--simulate TYPE | --nvidia-smi-topo FILE [--model M]]\n"
	      "                             [--json]\n"
	      "       suanli-agent --help | --version\n"
	      "\n"
	      "discover: print what discovery finds (NVML, else nvidia-smi) without contacting\n"
	      "anyone.\n"
	      "\n"
	      "run: register this server with the controller, send heartbeats with GPU health,\n"
	      "run the work the controller assigns (one process group per rank) and ship its\n"
	      "logs. Stopping the agent (SIGTERM, Ctrl-C) leaves the work running; a restarted\n"
	      "agent adopts it again from the state directory.\n"
	      "\n"
	      "  --server URL        the controller (or SUANLI_SERVER); https:// off loopback\n"
	      "  --ca FILE           the controller's CA certificate to verify it against (or\n"
	      "                      SUANLI_CA; the controller's DATA/tls/ca.pem, whose sha256\n"
	      "                      `suanli agent-token create` prints)\n"
	      "  --token TOKEN       a join token (`suanli agent-token create`; or SUANLI_AGENT_TOKEN);\n"
	      "                      only for the first start: the node credential is then\n"
	      "                      saved in STATE_DIR/credential and used from then on\n"
	      "  --node NAME         this node's name in the fleet\n"
	      "  --simulate TYPE     report a built-in node type (demos, tests) instead of NVML\n"
	      "  --image REF         the image of work items that name none (podman reference)\n"
	      "  --host-processes TENANT  run TENANT's work as host processes and refuse every\n"
	      "                      other tenant's (only on a server that TENANT owns)\n"
	      "  --cdi-dir DIR       where the GPUs' CDI spec is written (default /var/run/cdi)\n"
	      "  --cdi-name NAME     CDI device prefix and container name prefix (default: the\n"
	      "                      node name; unique per host)\n"
	      "  --log-limit-mib N   a rank whose log passes N MiB is killed (default 4096)\n"
	      "  --pids-limit N      processes per container (default 4096)\n"
	      "  --port-range LO-HI  host ports for instances' sshd and renter ports\n"
	      "                      (default 30000-32767)\n"
	      "  --storage-dir DIR   instances' data disks (default STATE_DIR/volumes)\n"
	      "  --lease-net macvlan:IFACE:POOL  routable addresses for multi-node jobs on\n"
	      "                      partial-node leases: a macvlan on IFACE per rank, from\n"
	      "                      POOL (A.B.C.D/N, a free part of IFACE's subnet), with a\n"
	      "                      firewall that lets in only the lease's own ranks\n"
	      "                      (docs/isolation.md)\n"
	      "  --nvidia-smi-topo FILE  discover from saved `nvidia-smi topo -m` output\n"
	      "  --model M           the GPU model of that output (a catalog name)\n"
	      "  --state-dir DIR     credential, work.json, job logs (default /var/lib/suanli-agent)\n"
	      "  --addr IP           where other nodes reach this one (MASTER_ADDR); default: the\n"
	      "                      source address of the route to the controller\n"
	      "  --heartbeat S       seconds between heartbeats (default: the controller's, 5)\n"
	      "  --site S --leaf L   labels for a node not in the fleet file; --type T its type\n"
	      "  --stop-grace S      SIGTERM -> SIGKILL grace for work that names none (default 10)\n"
	      "\n"
	      "See docs/agent.md.\n",
	      f);
}

struct run_args {
	struct agent_opts o;
	const char *simulate, *smi_topo, *model, *log_level, *ca, *port_range;
};

static int parse_int(const char *flag, const char *v, int lo, int hi, int *out)
{
	char *end;
	long x;
	errno = 0;
	x = v ? strtol(v, &end, 10) : 0;
	if (!v || errno || *end || end == v || x < lo || x > hi) {
		fprintf(stderr, "suanli-agent: %s wants a whole number %d..%d, got '%s'\n", flag, lo,
			hi, v ? v : "");
		return -1;
	}
	*out = (int)x;
	return 0;
}

static int parse_run(int argc, char **argv, struct run_args *r)
{
	memset(r, 0, sizeof(*r));
	r->o.server = getenv("SUANLI_SERVER");
	r->o.token = getenv("SUANLI_AGENT_TOKEN");
	r->ca = getenv("SUANLI_CA");
	r->o.state_dir = "/var/lib/suanli-agent";
	r->o.stop_grace_s = -1;
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		const char **sp = NULL;
		int *ip = NULL, lo = 0, hi = 0;
		if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
			usage(stdout);
			exit(0);
		}
		if (!strcmp(f, "--server"))
			sp = &r->o.server;
		else if (!strcmp(f, "--token"))
			sp = &r->o.token;
		else if (!strcmp(f, "--node"))
			sp = &r->o.node;
		else if (!strcmp(f, "--state-dir"))
			sp = &r->o.state_dir;
		else if (!strcmp(f, "--addr"))
			sp = &r->o.addr;
		else if (!strcmp(f, "--site"))
			sp = &r->o.site;
		else if (!strcmp(f, "--leaf"))
			sp = &r->o.leaf;
		else if (!strcmp(f, "--type"))
			sp = &r->o.type;
		else if (!strcmp(f, "--simulate"))
			sp = &r->simulate;
		else if (!strcmp(f, "--nvidia-smi-topo"))
			sp = &r->smi_topo;
		else if (!strcmp(f, "--model"))
			sp = &r->model;
		else if (!strcmp(f, "--log-level"))
			sp = &r->log_level;
		else if (!strcmp(f, "--image"))
			sp = &r->o.image;
		else if (!strcmp(f, "--host-processes"))
			sp = &r->o.host_tenant;
		else if (!strcmp(f, "--lease-net"))
			sp = &r->o.lease_net;
		else if (!strcmp(f, "--cdi-dir"))
			sp = &r->o.cdi_dir;
		else if (!strcmp(f, "--cdi-name"))
			sp = &r->o.cdi_name;
		else if (!strcmp(f, "--log-limit-mib"))
			ip = &r->o.log_limit_mib, lo = 1, hi = 1 << 24;
		else if (!strcmp(f, "--pids-limit"))
			ip = &r->o.pids_limit, lo = 16, hi = 1 << 22;
		else if (!strcmp(f, "--ca"))
			sp = &r->ca;
		else if (!strcmp(f, "--storage-dir"))
			sp = &r->o.storage_dir;
		else if (!strcmp(f, "--port-range"))
			sp = &r->port_range;
		else if (!strcmp(f, "--heartbeat"))
			ip = &r->o.heartbeat_s, lo = 1, hi = AGENT_HEARTBEAT_MAX_S;
		else if (!strcmp(f, "--stop-grace"))
			ip = &r->o.stop_grace_s, lo = 0, hi = WORK_GRACE_MAX_S;
		else {
			fprintf(stderr, "suanli-agent run: unknown option '%s'\n"
					"  hint: suanli-agent run --help lists the options\n", f);
			return -1;
		}
		if (!v) {
			fprintf(stderr, "suanli-agent run: %s needs a value\n", f);
			return -1;
		}
		if (sp)
			*sp = v;
		else if (parse_int(f, v, lo, hi, ip) != 0)
			return -1;
		i++;
	}
	const char *missing = !r->o.server ? "--server URL (or SUANLI_SERVER)"
			      : !r->o.node ? "--node NAME"
					   : NULL;
	if (missing) {
		fprintf(stderr, "suanli-agent run: %s is required\n"
				"  hint: suanli-agent run --help\n", missing);
		return -1;
	}
	if (r->port_range) {
		int lo = 0, hi = 0, used = 0;
		if (sscanf(r->port_range, "%d-%d%n", &lo, &hi, &used) != 2 ||
		    r->port_range[used] != '\0' || lo < 1024 || hi > 65535 || lo > hi) {
			fprintf(stderr, "suanli-agent run: --port-range wants LO-HI within "
					"1024-65535 (LO <= HI), got '%s'\n", r->port_range);
			return -1;
		}
		r->o.port_lo = lo;
		r->o.port_hi = hi;
	}
	if (r->simulate && r->smi_topo) {
		fprintf(stderr, "suanli-agent run: give --simulate or --nvidia-smi-topo, not both\n");
		return -1;
	}
	if ((r->o.site == NULL) != (r->o.leaf == NULL) || (r->o.type && !r->o.site)) {
		fprintf(stderr, "suanli-agent run: --site and --leaf go together (and --type with "
				"them), for a node that is not in the fleet file\n");
		return -1;
	}
	return 0;
}

static void print_diag(const char *what, const struct sl_diag *d)
{
	char buf[SL_DIAG_MSG + 256];
	sl_diag_format(d, buf, sizeof(buf));
	fprintf(stderr, "suanli-agent: %s: %s\n", what, buf);
	if (d->hint[0])
		fprintf(stderr, "  hint: %s\n", d->hint);
}

static int setup_signals(void)
{
	struct sigaction sa;
	if (pipe(wake_pipe) != 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		(void)fcntl(wake_pipe[i], F_SETFD, FD_CLOEXEC);
		(void)fcntl(wake_pipe[i], F_SETFL, fcntl(wake_pipe[i], F_GETFL) | O_NONBLOCK);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) || sigaction(SIGINT, &sa, NULL) ||
	    sigaction(SIGCHLD, &sa, NULL))
		return -1;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	struct run_args r;
	struct discovery disc;
	struct sl_diag d;
	enum sl_log_level lvl = SL_LOG_INFO;
	bool nvml = false;

	if (parse_run(argc, argv, &r) != 0)
		return EXIT_USAGE;
	sl_diag_clear(&d);
	if (r.log_level && sl_log_level_parse(r.log_level, &lvl, &d) != SL_OK) {
		print_diag("--log-level", &d);
		return EXIT_USAGE;
	}
	sl_log_init(NULL, lvl);
	struct discover_opts dopts = {.simulate = r.simulate, .topo_file = r.smi_topo,
				      .model = r.model};
	if (agent_discover(&dopts, &disc, &d) != SL_OK) {
		print_diag("discovery", &d);
		return 1;
	}
	nvml = strcmp(disc.source, "nvml") == 0;
	if (setup_signals() != 0) {
		fprintf(stderr, "suanli-agent: cannot set up signal handling: %s\n", strerror(errno));
		return 1;
	}
	if (http_client_global_init(&d) != SL_OK) {
		print_diag("startup", &d);
		return 1;
	}
	if (r.ca && http_client_set_ca(r.ca, &d) != SL_OK) {
		print_diag("--ca", &d);
		return 1;
	}
	/* an absolute state directory: children get paths under it in their env */
	static char dir[PATH_MAX];
	if (state_dir_init(r.o.state_dir, &d) != SL_OK) {
		print_diag("--state-dir", &d);
		return 1;
	}
	if (!realpath(r.o.state_dir, dir)) {
		fprintf(stderr, "suanli-agent: --state-dir %s: %s\n", r.o.state_dir, strerror(errno));
		return 1;
	}
	r.o.state_dir = dir;
	r.o.ca = r.ca;
	r.o.disc = &disc;
	r.o.nvml = nvml;
	r.o.stop = &stop_flag;
	r.o.wake_fd = wake_pipe[0];
	enum sl_err e = agent_run(&r.o, &d);
	http_client_global_cleanup();
	close(wake_pipe[0]);
	close(wake_pipe[1]);
	if (e != SL_OK) {
		print_diag("run", &d);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("suanli-agent %s\n", AGENT_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "discover"))
		return agent_discover_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "ctr-start")) /* the agent's own, in a rank's shim (fabric.h) */
		return fabric_ctr_start_main(argc - 1, argv + 1);
	fprintf(stderr, "suanli-agent: unknown command '%s'\n"
			"  hint: suanli-agent --help lists the commands\n",
		argv[1]);
	return EXIT_USAGE;
}

/* discover.c - the agent's discovery sources in order, and `suanli-agent
 * discover`.
 *
 * The sources that the operator names (--simulate, --nvidia-smi-topo) are
 * taken at their word: if they fail, that is the answer, because falling back
 * to something else would report a machine the operator did not ask about.
 * The automatic sources (NVML, then the nvidia-smi program) fall through to
 * the next, and the error at the end says what to do instead.
 */
#include "discover.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "file.h"
#include "nics.h"
#include "nvml.h"

static const char *smi_program(void)
{
	const char *p = getenv(DISCOVER_SMI_ENV);
	return p && *p ? p : "nvidia-smi";
}

/* Whether prog is an executable file, itself or found in $PATH. */
static bool program_exists(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0;
	while (path && *path) {
		const char *end = strchr(path, ':');
		size_t len = end ? (size_t)(end - path) : strlen(path);
		if (len > 0 && len + strlen(prog) + 2 < sizeof(buf)) {
			struct stat st;
			snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, path, prog);
			if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
				return true;
		}
		path = end ? end + 1 : NULL;
	}
	return false;
}

/* Runs argv (stdout captured up to max bytes, stderr discarded) into a
 * NUL-terminated buffer the caller frees. */
static enum sl_err run_capture(char *const argv[], size_t max, char **out, struct sl_diag *d)
{
	int fd[2], status = 0;
	size_t len = 0;
	char *buf;
	pid_t pid;
	ssize_t k;
	bool over = false;

	*out = NULL;
	buf = malloc(max + 1);
	if (!buf)
		return sl_diag_set(d, SL_ENOMEM, "out of memory running %s", argv[0]);
	if (pipe(fd) != 0) {
		free(buf);
		return sl_diag_set(d, SL_EIO, "pipe: %s", strerror(errno));
	}
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		free(buf);
		return sl_diag_set(d, SL_EIO, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(fd[1], 1);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 2);
		}
		close(fd[0]);
		close(fd[1]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	for (;;) {
		char sink[4096];
		k = read(fd[0], len < max ? buf + len : sink, len < max ? max - len : sizeof(sink));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (len < max)
			len += (size_t)k;
		else
			over = true;
	}
	close(fd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	buf[len] = 0;
	if (over) {
		free(buf);
		return sl_diag_set(d, SL_ELIMIT, "%s printed more than %zu bytes", argv[0], max);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		free(buf);
		return sl_diag_set(d, SL_EIO, "%s %s failed (exit status %d)", argv[0], argv[1],
				   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	*out = buf;
	return SL_OK;
}

static enum sl_err from_smi(const struct discover_opts *o, struct discovery *out,
			    struct sl_diag *d)
{
	char *topo_argv[] = {(char *)smi_program(), "topo", "-m", NULL};
	char *name_argv[] = {(char *)smi_program(), "--query-gpu=name", "--format=csv,noheader",
			     NULL};
	char *text = NULL, *names = NULL;
	const char *model = o->model;
	enum sl_err e;

	e = run_capture(topo_argv, DISCOVER_SMI_OUT_MAX, &text, d);
	if (e)
		return e;
	if (!model && run_capture(name_argv, 64u << 10, &names, NULL) == SL_OK) {
		const struct gpu_model *m;
		names[strcspn(names, "\r\n")] = 0;
		m = nvml_model_from_name(names);
		model = m ? m->name : NULL;
	}
	e = discovery_from_matrix(out, model, text, d);
	if (!e && names)
		for (int g = 0; g < out->type.ngpus; g++)
			snprintf(out->gpus[g].name, sizeof(out->gpus[g].name), "%s", names);
	free(text);
	free(names);
	return e;
}

enum sl_err agent_discover(const struct discover_opts *o, struct discovery *out,
			   struct sl_diag *d)
{
	struct discover_opts none = {0};
	struct sl_diag nd;
	enum sl_err e;

	if (!out)
		return sl_diag_set(d, SL_EINVAL, "agent_discover: no result");
	if (!o)
		o = &none;
	if (o->simulate) {
		struct node_type t;
		if (topo_builtin(o->simulate, &t) != SL_OK) {
			sl_diag_set(d, SL_ENOTFOUND, "--simulate: unknown node type '%.64s'",
				    o->simulate);
			char names[512] = "";
			for (int i = 0; i < topo_builtin_count(); i++)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
					 i ? ", " : "", topo_builtin_name(i));
			sl_diag_hint(d, "built-in types: %s", names);
			return SL_ENOTFOUND;
		}
		return discovery_from_type(out, &t, d);
	}
	if (o->topo_file) {
		char *text = NULL;
		size_t len = 0;
		e = sl_read_file(o->topo_file, TOPO_MATRIX_MAX_TEXT, &text, &len, d);
		if (e)
			return e;
		e = discovery_from_matrix(out, o->model, text, d);
		free(text);
		if (e && d)
			d->file = o->topo_file;
		return e;
	}
	sl_diag_clear(&nd);
	e = o->skip_nvml ? SL_ENOTFOUND : nvml_discover(out, &nd);
	if (!e)
		return nics_discover(out, d); /* NVML knows no NICs; sysfs does */
	if (program_exists(smi_program()))
		return from_smi(o, out, d);
	if (e != SL_ENOTFOUND) {
		if (d)
			*d = nd;
		return e;
	}
	sl_diag_set(d, SL_ENOTFOUND, "no NVIDIA driver found; use --simulate TYPE or "
		    "--nvidia-smi-topo FILE");
	sl_diag_hint(d, "%s", nd.msg[0] ? nd.msg : "libnvidia-ml.so.1 and nvidia-smi are missing");
	return SL_ENOTFOUND;
}

/* ---- the command ---- */

static const char usage[] =
	"usage: suanli-agent discover [--simulate TYPE] [--nvidia-smi-topo FILE] [--model M] "
	"[--json]\n"
	"\n"
	"Prints what this server has (GPUs, their links, NICs) without contacting anyone.\n"
	"Sources, in order: --simulate TYPE (a built-in node type), --nvidia-smi-topo FILE\n"
	"(saved `nvidia-smi topo -m` output), NVML (libnvidia-ml.so.1; " NVML_LIB_ENV
	" overrides\nthe path), then the nvidia-smi program.\n"
	"\n"
	"  --simulate TYPE         report the built-in node type TYPE (hgx-h100-8, ...)\n"
	"  --nvidia-smi-topo FILE  parse FILE, the output of `nvidia-smi topo -m`\n"
	"  --model M               the GPU model of a matrix (catalog name: h100-sxm, ...);\n"
	"                          without it the model is reported as unknown\n"
	"  --json                  print the JSON form (docs/discovery.md)\n"
	"  --help                  this text\n";

static const char *pair_label(const struct topo_link *l, char *s, size_t n)
{
	switch (l->kind) {
	case LINK_SELF:
		return "X";
	case LINK_NVSWITCH:
		return "NVS";
	case LINK_NVLINK:
		snprintf(s, n, "NV%d", l->count);
		return s;
	case LINK_HCCS:
		return "HCCS";
	case LINK_PCIE_SWITCH:
		return "PIX";
	case LINK_PCIE_HOSTBRIDGE:
		return "PHB";
	case LINK_NUMA:
		return "NODE";
	default:
		return "SYS";
	}
}

static void print_table(const struct discovery *disc)
{
	const struct node_type *t = &disc->type;
	struct node_type match;
	char s[16];

	printf("source: %s  model: %s  GPUs: %d  driver: %s  clique: %s\n", disc->source,
	       t->gpu ? t->gpu->name : "unknown", t->ngpus, disc->driver[0] ? disc->driver : "-",
	       disc->clique[0] ? disc->clique : "-");
	printf("\nGPU  NUMA  NVLINKS  MEMORY_MIB  BUS_ID             NAME\n");
	for (int g = 0; g < t->ngpus; g++) {
		const struct disc_gpu *x = &disc->gpus[g];
		printf("%-4d %-5d %-8d %-11lld %-18s %s\n", g, t->numa[g], x->nvlinks_up,
		       (long long)x->mem_mib, x->bus_id[0] ? x->bus_id : "-",
		       x->name[0] ? x->name : "-");
	}
	printf("\n      ");
	for (int b = 0; b < t->ngpus; b++)
		printf("GPU%-4d", b);
	printf("\n");
	for (int a = 0; a < t->ngpus; a++) {
		printf("GPU%-3d", a);
		for (int b = 0; b < t->ngpus; b++)
			printf("%-7s", pair_label(&t->link[a][b], s, sizeof(s)));
		printf("\n");
	}
	printf("NVS = nvswitch, NV# = nvlink (# links), HCCS = hccs, PIX = pcie-switch, "
	       "PHB = pcie-hostbridge, NODE = numa, SYS = cross-socket\n");
	if (t->nnics > 0) {
		printf("\nNIC              GB/S   NEAREST GPUS\n");
		for (int i = 0; i < t->nnics; i++) {
			char gpus[64] = "";
			for (int g = 0; g < t->ngpus; g++)
				if (t->nics[i].gpus >> g & 1u)
					snprintf(gpus + strlen(gpus), sizeof(gpus) - strlen(gpus), "%s%d",
						 gpus[0] ? "," : "", g);
			printf("%-16s %-6d %s\n", t->nics[i].name, t->nics[i].gbps, gpus);
		}
	}
	if (discovery_match_builtin(disc, &match) == SL_OK)
		printf("\nmatches built-in type %s\n", match.name);
	else
		printf("\nmatches no built-in type\n");
}

int agent_discover_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"simulate", required_argument, NULL, 's'},
		{"nvidia-smi-topo", required_argument, NULL, 't'},
		{"model", required_argument, NULL, 'm'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct discover_opts o = {0};
	struct discovery *disc;
	struct sl_diag d;
	bool json = false;
	int c;
	enum sl_err e;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			o.simulate = optarg;
			break;
		case 't':
			o.topo_file = optarg;
			break;
		case 'm':
			o.model = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fprintf(stderr, "suanli-agent discover: unknown or incomplete option '%s'\n%s",
				argv[optind - 1], usage);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "suanli-agent discover: unexpected argument '%s'\n%s", argv[optind],
			usage);
		return 2;
	}
	if (o.simulate && o.topo_file) {
		fprintf(stderr, "suanli-agent discover: --simulate and --nvidia-smi-topo exclude "
			"each other\n");
		return 2;
	}
	disc = calloc(1, sizeof(*disc));
	if (!disc) {
		fprintf(stderr, "suanli-agent discover: out of memory\n");
		return 1;
	}
	sl_diag_clear(&d);
	e = agent_discover(&o, disc, &d);
	if (e) {
		char msg[SL_DIAG_MSG + 600];
		sl_diag_format(&d, msg, sizeof(msg));
		fprintf(stderr, "suanli-agent discover: %s\n", msg);
		if (d.hint[0])
			fprintf(stderr, "hint: %s\n", d.hint);
		free(disc);
		return 1;
	}
	if (json) {
		json_t *j = discovery_to_json(disc);
		if (!j || json_dumpf(j, stdout, JSON_INDENT(2)) != 0) {
			json_decref(j);
			free(disc);
			fprintf(stderr, "suanli-agent discover: out of memory\n");
			return 1;
		}
		fputc('\n', stdout);
		json_decref(j);
	} else {
		print_table(disc);
	}
	free(disc);
	return fflush(stdout) == 0 ? 0 : 1;
}

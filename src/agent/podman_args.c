/* podman_args.c - one tenant container's podman command line (podman_args.h). */
#include "podman_args.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdi_spec.h"

struct words {
	char **v;
	size_t n;
	int fail; /* 1 ENOMEM, 2 too many */
};

static void addf(struct words *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void addf(struct words *w, const char *fmt, ...)
{
	if (w->fail)
		return;
	if (w->n + 1 >= PODMAN_ARGV_MAX) {
		w->fail = 2;
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *s = len >= 0 ? malloc((size_t)len + 1) : NULL;
	if (!s) {
		w->fail = 1;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(s, (size_t)len + 1, fmt, ap);
	va_end(ap);
	w->v[w->n++] = s;
}

void podman_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

/* What job and instance containers share: the engine, the user namespace,
 * the privileges, the limits, the network and the devices. caps: the
 * capabilities added to the cap-drop-all set. */
static void common(struct words *w, const struct podman_run *r, const char *verb,
		   const char *caps)
{
	addf(w, "%s", r->podman);
	addf(w, "--runtime=%s", r->runtime);
	addf(w, "--cgroup-manager=%s", r->cgroup_manager);
	addf(w, "--hooks-dir=%s", r->hooks_dir);
	addf(w, "%s", verb);
	if (!strcmp(verb, "run") || r->create) /* a rank's container, run or created to start later */
		addf(w, "--rm");
	addf(w, "--name=%s", r->name);
	addf(w, "--pull=missing");
	addf(w, "--init");
	addf(w, "--uidmap=0:%u:%u", r->uid_base, PODMAN_IDS);
	addf(w, "--gidmap=0:%u:%u", r->uid_base, PODMAN_IDS);
	addf(w, "--security-opt=no-new-privileges");
	addf(w, "--cap-drop=all");
	addf(w, "--cap-add=%s", caps);
	if (r->cpus_milli > 0)
		addf(w, "--cpus=%lld.%03lld", (long long)(r->cpus_milli / 1000),
		     (long long)(r->cpus_milli % 1000));
	if (r->mem_mib > 0) {
		addf(w, "--memory=%lldm", (long long)r->mem_mib);
		addf(w, "--memory-swap=%lldm", (long long)r->mem_mib);
	}
	addf(w, "--pids-limit=%lld", (long long)r->pids);
	addf(w, "--ulimit=nofile=%lld:%lld", (long long)r->nofile, (long long)r->nofile);
	addf(w, "--ulimit=nproc=%lld:%lld", (long long)r->nproc, (long long)r->nproc);
	if (r->host_network)
		addf(w, "--network=host");
	else if (r->network && r->network[0])
		addf(w, "--network=%s", r->network);
	else
		addf(w, "--network=none");
	addf(w, "--tmpfs=/tmp:rw,nosuid,nodev,size=%dm", PODMAN_TMP_MIB);
	addf(w, "--tmpfs=/run:rw,nosuid,nodev,size=16m");
	for (size_t i = 0; i < r->ndevices; i++)
		addf(w, "--device=%s=%s", CDI_KIND, r->devices[i]);
}

static enum sl_err finish(struct words *w, char ***out, struct sl_diag *d)
{
	if (w->fail) {
		podman_argv_free(w->v);
		return w->fail == 1 ? sl_diag_set(d, SL_ENOMEM, "out of memory")
				    : sl_diag_set(d, SL_ELIMIT, "container: more than %d words on "
								"podman's command line",
						  PODMAN_ARGV_MAX);
	}
	*out = w->v;
	return SL_OK;
}

enum sl_err podman_run_argv(const struct podman_run *r, char ***out, struct sl_diag *d)
{
	*out = NULL;
	if (!r->podman || !r->runtime || !r->cgroup_manager || !r->hooks_dir || !r->hooks_dir[0] ||
	    !r->name || !r->name[0] ||
	    !r->image || !r->image[0] || r->argc == 0 || !r->argv)
		return sl_diag_set(d, SL_EINVAL, "container: name, image and command are needed");
	struct words w = {calloc(PODMAN_ARGV_MAX, sizeof(char *)), 0, 0};
	if (!w.v)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	common(&w, r, r->create ? "create" : "run", PODMAN_CAPS);
	addf(&w, "--log-driver=none");
	if (!r->host_network && r->network && r->network[0] && r->publish > 0 &&
	    r->publish < 65536)
		addf(&w, "--publish=%d:%d/tcp", r->publish, r->publish);
	addf(&w, "--read-only");
	addf(&w, "--read-only-tmpfs=false");
	if (r->workdir && r->workdir[0]) {
		addf(&w, "--volume=%s:%s:rw,U", r->workdir, PODMAN_WORKDIR);
		addf(&w, "--workdir=%s", PODMAN_WORKDIR);
	}
	if (r->topo && r->topo[0])
		addf(&w, "--volume=%s:%s:ro", r->topo, PODMAN_TOPO);
	for (size_t i = 0; i < r->nenv; i++) {
		const char *eq = strchr(r->env[i], '=');
		if (!eq || eq == r->env[i]) {
			podman_argv_free(w.v);
			return sl_diag_set(d, SL_EINVAL, "container: env entry without a name");
		}
		addf(&w, "--env=%.*s", (int)(eq - r->env[i]), r->env[i]);
	}
	addf(&w, "%s", r->image);
	if (r->ldconfig_lib && r->ldconfig_lib[0]) {
		addf(&w, "%s", PODMAN_ENTRY_SH);
		addf(&w, "-c");
		addf(&w, "%s", PODMAN_ENTRY);
		addf(&w, "%s", PODMAN_ENTRY_ARG0);
		addf(&w, "%s", r->ldconfig_lib);
	}
	for (size_t i = 0; i < r->argc; i++)
		addf(&w, "%s", r->argv[i]);
	return finish(&w, out, d);
}

enum sl_err podman_create_argv(const struct podman_run *r, const struct podman_inst *x,
			       char ***out, struct sl_diag *d)
{
	*out = NULL;
	if (!r->podman || !r->runtime || !r->cgroup_manager || !r->hooks_dir || !r->hooks_dir[0] ||
	    !r->name || !r->name[0] || !r->image || !r->image[0] || !x->ssh_dir || !x->ssh_dir[0])
		return sl_diag_set(d, SL_EINVAL, "instance container: name, image and ssh "
						 "directory are needed");
	struct words w = {calloc(PODMAN_ARGV_MAX, sizeof(char *)), 0, 0};
	if (!w.v)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	common(&w, r, "create", PODMAN_INST_CAPS);
	/* sshd -e logs to stderr: kept by podman, bounded */
	addf(&w, "--log-driver=k8s-file");
	addf(&w, "--log-opt=max-size=%dm", PODMAN_INST_LOG_MIB);
	for (size_t i = 0; !r->host_network && i < x->npublish; i++)
		addf(&w, "--publish=%d:%d/tcp", x->publish[i][0], x->publish[i][1]);
	if (!r->host_network && x->hostname && x->hostname[0])
		addf(&w, "--hostname=%s", x->hostname);
	addf(&w, "--volume=%s:%s:ro", x->ssh_dir, PODMAN_INST_SSH_DIR);
	if (x->data_dir && x->data_dir[0])
		addf(&w, "--volume=%s:%s:rw", x->data_dir, PODMAN_INST_DATA);
	if (x->label && x->label[0])
		addf(&w, "--label=%s", x->label);
	addf(&w, "--label=suanli=instance");
	addf(&w, "%s", r->image);
	addf(&w, "%s", PODMAN_ENTRY_SH);
	addf(&w, "-c");
	addf(&w, "%s", PODMAN_INST_ENTRY);
	addf(&w, "%s", PODMAN_INST_ENTRY_ARG0);
	addf(&w, "%s", r->ldconfig_lib && r->ldconfig_lib[0] ? r->ldconfig_lib : "-");
	addf(&w, "/usr/sbin/sshd");
	addf(&w, "-D");
	addf(&w, "-e");
	addf(&w, "-f");
	addf(&w, "%s/sshd_config", PODMAN_INST_SSH_DIR);
	return finish(&w, out, d);
}

enum sl_err podman_exec_argv(const struct podman_exec *x, char ***out, struct sl_diag *d)
{
	*out = NULL;
	if (!x->podman || !x->runtime || !x->cgroup_manager || !x->container ||
	    !x->container[0] || !x->pidfile || !x->pidfile[0] || x->argc == 0 || !x->argv)
		return sl_diag_set(d, SL_EINVAL, "exec: container, pid file and command are needed");
	struct words w = {calloc(PODMAN_ARGV_MAX, sizeof(char *)), 0, 0};
	if (!w.v)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	addf(&w, "%s", x->podman);
	addf(&w, "--runtime=%s", x->runtime);
	addf(&w, "--cgroup-manager=%s", x->cgroup_manager);
	addf(&w, "exec");
	addf(&w, "-i");
	for (size_t i = 0; i < x->nenv; i++) {
		const char *eq = strchr(x->env[i], '=');
		if (!eq || eq == x->env[i]) {
			podman_argv_free(w.v);
			return sl_diag_set(d, SL_EINVAL, "exec: env entry without a name");
		}
		addf(&w, "--env=%.*s", (int)(eq - x->env[i]), x->env[i]);
	}
	if (x->workdir && x->workdir[0])
		addf(&w, "--workdir=%s", x->workdir);
	addf(&w, "%s", x->container);
	addf(&w, "%s", PODMAN_ENTRY_SH);
	addf(&w, "-c");
	addf(&w, "%s", PODMAN_EXEC_SH);
	addf(&w, "%s", PODMAN_EXEC_ARG0);
	addf(&w, "%s", x->pidfile);
	for (size_t i = 0; i < x->argc; i++)
		addf(&w, "%s", x->argv[i]);
	return finish(&w, out, d);
}

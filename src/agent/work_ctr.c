/* work_ctr.c - the supervisor's containers: which items run in one, their
 * names, the lease's working directory and the podman command line
 * (work.h, work_set_engine; podman_args.h says what each container gets). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "engine.h"
#include "inst.h"
#include "log.h"
#include "state.h"
#include "uid_ranges.h"
#include "work_int.h"

void work_sup_set_engine(struct work_sup *s, const struct engine *eng, const char *host_tenant)
{
	s->eng = eng;
	s->host_tenant = host_tenant && host_tenant[0] ? host_tenant : NULL;
}

/* Whether the item runs in a container (else as a host process: only the
 * operator's chosen tenant on its own server, or a supervisor without an
 * engine, as in the unit tests). */
bool item_in_container(const struct work_sup *s, const struct work_spec *sp)
{
	if (sp->instance[0]) /* the instance's container (work_inst.c) */
		return true;
	if (s->host_tenant)
		return false;
	return s->eng != NULL;
}

/* The container of the item's current run: sl-NAME-JOB-rRANK-eEPOCH-nRESTARTS,
 * prefixed by the engine's name, unique on the host (a restart gets a new name, so removing the old one never races it). */
void ctr_name(const struct work_sup *s, const struct work_item *it, char *buf, size_t n)
{
	if (it->spec.instance[0]) { /* not its own: the instance's, when it runs */
		if (!inst_sup_running(s->inst, it->spec.instance, buf, n))
			snprintf(buf, n, "%s", it->spec.instance);
		return;
	}
	snprintf(buf, n, "sl-%s-%s-r%d-e%lld-n%d", engine_name(s->eng), it->spec.job, it->spec.rank,
		 (long long)it->spec.epoch, it->restarts);
}

/* STATE_DIR/leases/L: the lease's working directory (/work in its
 * containers), a tmpfs of WORK_DIR_MIB so that a container filling it
 * fills neither the agent's disk nor anyone else's; kept across the rank's
 * restarts, unmounted when the lease's last item is forgotten. */
static enum sl_err lease_workdir(struct work_sup *s, const char *lease, char *path, size_t n,
				 struct sl_diag *d)
{
	struct statfs fs;
	char opts[64];
	enum sl_err e;
	if ((e = state_path(path, n, s->dir, d, "leases/%s", lease)) != SL_OK ||
	    (e = state_mkdirs(path, 0700, d)) != SL_OK)
		return e;
	if (statfs(path, &fs) == 0 && (uint64_t)fs.f_type == 0x01021994 /* TMPFS_MAGIC */)
		return SL_OK;
	snprintf(opts, sizeof(opts), "size=%dm,mode=0700", WORK_DIR_MIB);
	if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0)
		return sl_diag_set(d, SL_EIO, "cannot mount the lease's working directory %s: %s",
				   path, strerror(errno));
	return SL_OK;
}

void lease_workdir_end(struct work_sup *s, const struct work_item *gone)
{
	char path[STATE_PATH_MAX];
	if (gone->spec.instance[0]) /* ran in the instance's container: took none of it */
		return;
	for (size_t i = 0; i < s->n; i++)
		if (s->items[i] != gone && !s->items[i]->spec.instance[0] &&
		    strcmp(s->items[i]->spec.lease, gone->spec.lease) == 0)
			return;
	if (!s->eng || state_path(path, sizeof(path), s->dir, NULL, "leases/%s",
				  gone->spec.lease) != SL_OK)
		return;
	(void)umount2(path, MNT_DETACH);
	(void)rmdir(path);
	uid_range_release(engine_uid_dir(s->eng), engine_name(s->eng), gone->spec.lease);
	engine_lease_net_remove(s->eng, gone->spec.lease);
}

/* The podman command line of the item's container into *argv; envp gets
 * NCCL_TOPO_FILE as the container sees it. */
enum sl_err ctr_argv(struct work_sup *s, struct work_item *it, const char *topo,
			    char ***argv, struct sl_diag *d)
{
	const struct work_spec *sp = &it->spec;
	char name[WORK_ID_MAX + 64], work[STATE_PATH_MAX], net[CDI_NAME_MAX + 96];
	char devs[TOPO_MAX_GPUS][CDI_NAME_MAX];
	const char *devp[TOPO_MAX_GPUS];
	struct podman_run r;
	enum sl_err e;

	if (!engine_ok(s->eng)) {
		sl_diag_hint(d, "install podman and runc (scripts/deps.sh), then restart the agent");
		return sl_diag_set(d, SL_EIO, "no container engine on this node: %s",
				   engine_reason(s->eng));
	}
	const char *image = sp->image[0] ? sp->image : engine_default_image(s->eng);
	if (!image[0]) {
		sl_diag_hint(d, "name one with `job run --image`, or give the catalog a default "
				"(`suanli image add NAME --ref REF --default`)");
		return sl_diag_set(d, SL_EINVAL, "no image: the job names none and there is no "
						 "default");
	}
	/* podman pulls it (--pull=missing); the rank's log says so first */
	it->pulling = !engine_image_exists(s->eng, image);
	it->pulled = false;
	if (it->pulling) {
		char logp[STATE_PATH_MAX];
		FILE *f = state_path(logp, sizeof(logp), s->dir, NULL, "jobs/%s/rank-%d.log",
				     sp->job, sp->rank) == SL_OK ? fopen(logp, "ae") : NULL;
		if (f) {
			fprintf(f, "suanli-agent: pulling image %s (it is not on this node)\n", image);
			fclose(f);
		}
		sl_log_info("pulling image", "job=%s rank=%d image=%s", sp->job, sp->rank, image);
	}
	if ((e = lease_workdir(s, sp->lease, work, sizeof(work), d)) != SL_OK)
		return e;
	size_t nenv = sp->nenv + 1;
	const char **env = calloc(nenv, sizeof(char *));
	if (!env)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	for (size_t i = 0; i < sp->nenv; i++)
		env[i] = sp->env[i];
	env[sp->nenv] = "NCCL_TOPO_FILE=";
	ctr_name(s, it, name, sizeof(name));
	engine_fill(s->eng, name, image, sp->argv, sp->argc, sp->gpus, sp->lease, devs, devp, &r);
	if ((e = uid_range_take(engine_uid_dir(s->eng), engine_name(s->eng), sp->lease,
				&r.uid_base, d)) != SL_OK) {
		free(env);
		return e;
	}
	/* a rank with a fabric address (a multi-node job on a partial-node
	 * lease, the node has --lease-net): created without a network, given
	 * its macvlan and firewall by ctr-start (fabric.h) */
	const struct fabric *fab = engine_fabric(s->eng);
	bool on_fabric = !r.host_network && sp->net_addr[0] && fab;
	if (!r.host_network && sp->net_addr[0] && !fab)
		sl_log_warn("work item has a fabric address but this agent has no --lease-net; "
			    "using the lease's bridge", "job=%s rank=%d", sp->job, sp->rank);
	if (on_fabric) {
		/* two jobs of one lease whose numbers agree modulo its block size
		 * get the same address (lease_net.h): the later one waits */
		for (size_t i = 0; i < s->n; i++) {
			const struct work_item *o = s->items[i];
			if (o != it && (o->state == IT_RUNNING || o->state == IT_STOPPING) &&
			    item_in_container(s, &o->spec) && !strcmp(o->spec.net_addr, sp->net_addr)) {
				free(env);
				sl_diag_hint(d, "give the node a larger --lease-net pool, or run the "
						"lease's jobs one after another");
				return sl_diag_set(d, SL_ECONFLICT, "fabric address %s is in use by "
						   "job %s rank %d of the same lease", sp->net_addr,
						   o->spec.job, o->spec.rank);
			}
		}
		r.create = 1;
	} else if (!r.host_network) {
		/* a partial-node lease: its own isolated bridge, rank 0 publishing
		 * the rendezvous port on the node (docs/isolation.md) */
		if ((e = engine_lease_net(s->eng, sp->lease, net, sizeof(net), d)) != SL_OK) {
			free(env);
			return e;
		}
		r.network = net;
		for (size_t i = 0; sp->rank == 0 && i < sp->nenv; i++)
			if (strncmp(sp->env[i], "MASTER_PORT=", 12) == 0)
				r.publish = atoi(sp->env[i] + 12);
	}
	r.workdir = work;
	r.topo = topo;
	r.env = env;
	r.nenv = topo[0] ? nenv : sp->nenv;
	e = podman_run_argv(&r, argv, d);
	free(env);
	if (e == SL_OK && on_fabric &&
	    (e = fabric_wrap(fab, engine_self(s->eng), sp->net_addr, sp->net_peers, argv, d)) != SL_OK) {
		podman_argv_free(*argv);
		*argv = NULL;
	}
	return e;
}

void ctr_pull_failed(struct work_sup *s, struct work_item *it)
{
	const struct work_spec *sp = &it->spec;
	const char *image = sp->image[0] ? sp->image : engine_default_image(s->eng);
	char logp[STATE_PATH_MAX], line[512], err[400] = "";
	FILE *f = state_path(logp, sizeof(logp), s->dir, NULL, "jobs/%s/rank-%d.log", sp->job,
			     sp->rank) == SL_OK ? fopen(logp, "re") : NULL;
	while (f && fgets(line, sizeof(line), f)) /* podman's last "Error: " line */
		if (strncmp(line, "Error: ", 7) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(err, sizeof(err), "%.*s", (int)sizeof(err) - 1, line + 7);
		}
	if (f)
		fclose(f);
	if (engine_image_exists(s->eng, image))
		return; /* pulled: the 125 was something else, the log says what */
	char msg[2048];
	snprintf(msg, sizeof(msg),
		 "image %s is not on this node and cannot be pulled; add a ref it has "
		 "(suanli image add) or build one (scripts/build-image.py)%s%s",
		 image, err[0] ? "; podman: " : "", err);
	size_t len = strnlen(msg, sizeof(it->error) - 1);
	memcpy(it->error, msg, len);
	it->error[len] = '\0';
}

/* Stops and removes the item's container (its podman run may be gone while
 * the container is not: SIGKILL, an agent restart). */
void item_ctr_remove(struct work_sup *s, struct work_item *it)
{
	char name[WORK_ID_MAX + 64];
	/* never the instance's container: an exec'd rank ending leaves it running */
	if (!item_in_container(s, &it->spec) || it->spec.instance[0])
		return;
	ctr_name(s, it, name, sizeof(name));
	engine_remove(s->eng, name);
}


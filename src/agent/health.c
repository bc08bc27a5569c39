/* health.c - per-GPU health samples (see health.h).
 *
 * Simulated values are deterministic in (GPU, sample number) and move a
 * little between beats so a dashboard shows something alive; they are never
 * used for decisions. The inject hooks are files rather than flags so a test
 * can fault a running agent without restarting it: the XID file is renamed
 * away before it is parsed, so a line is consumed exactly once even when the
 * writer races the reader. */
#include "health.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "file.h"
#include "log.h"
#include "nvml.h"
#include "state.h"

struct health {
	char *dir;
	const struct discovery *disc;
	struct nvml *nvml; /* NULL: simulated */
	uint64_t nsample;
};

struct xid_list {
	int n[TOPO_MAX_GPUS];
	int code[TOPO_MAX_GPUS][HEALTH_XID_MAX];
};

enum sl_err health_new(const char *state_dir, const struct discovery *disc, bool use_nvml,
		       struct health **out, struct sl_diag *d)
{
	struct health *h = calloc(1, sizeof(*h));
	*out = NULL;
	if (!h || !(h->dir = strdup(state_dir))) {
		free(h);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	h->disc = disc;
	if (use_nvml) {
		enum sl_err e = nvml_open(&h->nvml, d);
		if (e != SL_OK) {
			health_free(h);
			return e;
		}
	}
	*out = h;
	return SL_OK;
}

void health_free(struct health *h)
{
	if (!h)
		return;
	nvml_close(h->nvml);
	free(h->dir);
	free(h);
}

/* Reads a hook file; NULL when absent or unreadable (logged). */
static char *read_hook(const char *path)
{
	char *text = NULL;
	size_t len = 0;
	struct sl_diag d;
	if (access(path, F_OK) != 0)
		return NULL;
	sl_diag_clear(&d);
	if (sl_read_file(path, HEALTH_INJECT_MAX, &text, &len, &d) != SL_OK) {
		sl_log_warn("ignoring a test hook file", "file=%s error=%s", path, d.msg);
		return NULL;
	}
	return text;
}

static void read_xids(struct health *h, int ngpus, struct xid_list *x)
{
	char path[STATE_PATH_MAX], taken[STATE_PATH_MAX];
	memset(x, 0, sizeof(*x));
	if (state_path(path, sizeof(path), h->dir, NULL, "inject/xid") != SL_OK ||
	    state_path(taken, sizeof(taken), h->dir, NULL, "inject/xid.taken") != SL_OK ||
	    rename(path, taken) != 0)
		return;
	char *text = read_hook(taken);
	(void)unlink(taken);
	for (char *save = NULL, *line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		int gpu, code, used = 0;
		if (sscanf(line, " %d %d %n", &gpu, &code, &used) != 2 || line[used] != '\0' ||
		    gpu < 0 || gpu >= ngpus || code < 0 || code > 1000000) {
			sl_log_warn("ignoring a line of inject/xid; want \"GPU CODE\"",
				    "line=%.80s gpus=%d", line, ngpus);
			continue;
		}
		if (x->n[gpu] >= HEALTH_XID_MAX) {
			sl_log_warn("too many injected XIDs for one GPU; dropping", "gpu=%d max=%d",
				    gpu, HEALTH_XID_MAX);
			continue;
		}
		x->code[gpu][x->n[gpu]++] = code;
	}
	free(text);
}

/* Bit i set: GPU i listed in inject/unhealthy. */
static gpumask_t read_unhealthy(struct health *h)
{
	char path[STATE_PATH_MAX];
	gpumask_t m = 0;
	if (state_path(path, sizeof(path), h->dir, NULL, "inject/unhealthy") != SL_OK)
		return 0;
	char *text = read_hook(path);
	for (char *save = NULL, *w = text ? strtok_r(text, " \t\r\n,", &save) : NULL; w;
	     w = strtok_r(NULL, " \t\r\n,", &save)) {
		char *end;
		long v = strtol(w, &end, 10);
		if (*end || v < 0 || v >= TOPO_MAX_GPUS)
			sl_log_warn("ignoring a word of inject/unhealthy; want GPU indices",
				    "word=%.40s", w);
		else
			m |= (gpumask_t)1u << v;
	}
	free(text);
	return m;
}

/* Simulated utilisation per GPU from inject/util: lines "GPU PCT" or
 * "* PCT" (every GPU); 100 for GPUs it does not name, or when it is absent,
 * so an idle stop never fires by accident in simulate mode. */
static void read_util(struct health *h, int ngpus, int *util)
{
	char path[STATE_PATH_MAX];
	for (int i = 0; i < ngpus; i++)
		util[i] = 100;
	if (state_path(path, sizeof(path), h->dir, NULL, "inject/util") != SL_OK)
		return;
	char *text = read_hook(path);
	for (char *save = NULL, *line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		int gpu = -1, pct = -1, used = 0;
		bool all = sscanf(line, " * %d %n", &pct, &used) == 1;
		if ((!all && sscanf(line, " %d %d %n", &gpu, &pct, &used) != 2) || line[used] != '\0' ||
		    pct < 0 || pct > 100 || (!all && (gpu < 0 || gpu >= ngpus))) {
			sl_log_warn("ignoring a line of inject/util; want \"GPU PCT\" or \"* PCT\"",
				    "line=%.80s gpus=%d", line, ngpus);
			continue;
		}
		for (int i = 0; i < ngpus; i++)
			if (all || i == gpu)
				util[i] = pct;
	}
	free(text);
}

json_t *health_sample(struct health *h, int64_t now_wall)
{
	int ngpus = h->disc->type.ngpus;
	struct nvml_health_sample ns;
	struct xid_list x;
	bool nvml_ok = false;
	char at[32];
	time_t tt = (time_t)now_wall;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (ngpus > TOPO_MAX_GPUS)
		ngpus = TOPO_MAX_GPUS;
	memset(&ns, 0, sizeof(ns));
	if (h->nvml) {
		struct sl_diag d;
		sl_diag_clear(&d);
		nvml_ok = nvml_health(h->nvml, &ns, &d) == SL_OK;
		if (!nvml_ok)
			sl_log_warn("NVML health sample failed; every GPU reported unhealthy",
				    "error=%s", d.msg);
	}
	read_xids(h, ngpus, &x);
	gpumask_t sick = read_unhealthy(h);
	int util[TOPO_MAX_GPUS];
	read_util(h, ngpus, util);
	h->nsample++;

	json_t *a = json_array();
	for (int i = 0; a && i < ngpus; i++) {
		const struct nvml_gpu_health *g = NULL;
		for (int j = 0; nvml_ok && j < ns.ngpus && j < TOPO_MAX_GPUS; j++)
			if (ns.gpus[j].index == i)
				g = &ns.gpus[j];
		json_t *xid = json_array();
		bool healthy = !(sick & (1u << i)) && (!h->nvml || g);
		for (int k = 0; xid && g && k < g->nxid && k < NVML_XID_MAX; k++) {
			json_array_append_new(xid, json_pack("{s:i, s:s}", "code", g->xid[k], "at", at));
			healthy = false;
		}
		for (int k = 0; xid && k < x.n[i]; k++) {
			json_array_append_new(xid, json_pack("{s:i, s:s}", "code", x.code[i][k], "at", at));
			healthy = false;
		}
		int wobble = (int)((h->nsample + (uint64_t)i * 3) % 5);
		json_t *o = json_pack("{s:i, s:o, s:b}", "index", i, "xid", xid ? xid : json_array(),
				      "healthy", healthy);
		/* a figure NVML does not offer (-1) is left out, not sent as -1 */
		struct {
			const char *k;
			int64_t v;
		} fig[] = {{"temp_c", g ? g->temp_c : 38 + (i * 3) % 7 + wobble},
			   {"power_w", g ? g->power_w : 70 + (i * 11) % 23 + 2 * wobble},
			   {"ecc_sbe", g ? g->ecc_sbe : 0},
			   {"ecc_dbe", g ? g->ecc_dbe : 0},
			   {"nvlink_up", g ? g->nvlink_up : h->disc->gpus[i].nvlinks_up},
			   {"util_pct", g ? g->util_pct : util[i]}};
		for (size_t k = 0; o && k < sizeof(fig) / sizeof(fig[0]); k++)
			if (fig[k].v >= 0 && json_object_set_new(o, fig[k].k, json_integer(fig[k].v)) != 0) {
				json_decref(o);
				o = NULL;
			}
		if (!o || json_array_append_new(a, o) != 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

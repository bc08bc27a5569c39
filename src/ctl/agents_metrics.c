/* agents_metrics.c - the fleet's part of /metrics (agents_metrics in
 * agents.h): per node its state and heartbeat age, per GPU what the last
 * heartbeat said about it, named as NVIDIA's dcgm-exporter names the same
 * figure (DCGM_FI_DEV_*) so existing dashboards and rules apply, with
 * suanli_gpu_* names for what dcgm-exporter has no name for.
 *
 * Built on the loop thread when scraped, from the same records the API
 * shows; so it stays bounded (AGENTS_METRICS_NODES_MAX nodes, the rest
 * counted in suanli_metrics_nodes_omitted) and costs O(nodes x GPUs). The
 * text format wants one family's samples together, so each family is one
 * pass over the records. */
#include <stdio.h>
#include <string.h>

#include "agents_int.h"
#include "buf.h"

/* A figure of the heartbeat's "gpus" objects and how it is shown; fig is
 * its slot in struct agent_gpu_fig (the key, agent_fig_keys[fig]). */
struct gpu_family {
	const char *name, *type, *help;
	int fig;
};

static const struct gpu_family families[] = {
	{"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C), as of the last heartbeat.", AGF_TEMP},
	{"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W), as of the last heartbeat.", AGF_POWER},
	/* dcgm-exporter calls these counters; they are volatile (a driver
	 * reload resets them), and promtool wants a counter to end in _total. */
	{"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "gauge", "Single-bit (corrected) volatile ECC errors.", AGF_ECC_SBE},
	{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "gauge", "Double-bit (uncorrected) volatile ECC errors.", AGF_ECC_DBE},
	{"suanli_gpu_nvlinks_up", "gauge", "NVLink links in the active state.", AGF_NVLINK_UP},
};

/* The records /metrics shows: registered ones, at most the bound. */
static bool shown(const struct ctl_agents *a, int i)
{
	return i < AGENTS_METRICS_NODES_MAX && a->recs[i]->registered_ns;
}

static void family_head(struct sl_buf *b, const char *name, const char *type, const char *help)
{
	sl_buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A GPU's figure from the last heartbeat (fig AGF_N: its index); false
 * when it did not say. */
static bool gpu_figure(const struct agent_gpu_fig *f, int fig, long long *v)
{
	if (!(f->has & (1u << fig)))
		return false;
	*v = fig == AGF_N ? f->index : f->fig[fig];
	return true;
}

/* The links the GPU had at registration (its discovery); -1 unknown. */
static long long links_expected(const struct agent_rec *r, long long g)
{
	return g >= 0 && g < TOPO_MAX_GPUS ? r->disc.nvlinks[g] : -1;
}

static void gpu_series(const struct ctl_agents *a, struct sl_buf *b)
{
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		family_head(b, families[f].name, families[f].type, families[f].help);
		for (int i = 0; i < a->n; i++) {
			const struct agent_rec *r = a->recs[i];
			if (!shown(a, i))
				continue;
			for (int k = 0; k < r->nfigs; k++) {
				long long g, v;
				if (gpu_figure(&r->figs[k], AGF_N, &g) &&
				    gpu_figure(&r->figs[k], families[f].fig, &v))
					sl_buf_addf(b, "%s{node=\"%s\",gpu=\"%lld\"} %lld\n", families[f].name,
						    r->name, g, v);
			}
		}
	}
	family_head(b, "suanli_gpu_nvlinks_down", "gauge",
		    "NVLink links down: active at registration, not active in the last heartbeat.");
	for (int i = 0; i < a->n; i++) {
		const struct agent_rec *r = a->recs[i];
		if (!shown(a, i))
			continue;
		for (int k = 0; k < r->nfigs; k++) {
			long long g, up, want;
			if (!gpu_figure(&r->figs[k], AGF_N, &g) ||
			    !gpu_figure(&r->figs[k], AGF_NVLINK_UP, &up) || (want = links_expected(r, g)) < 0)
				continue;
			sl_buf_addf(b, "suanli_gpu_nvlinks_down{node=\"%s\",gpu=\"%lld\"} %lld\n", r->name,
				    g, want > up ? want - up : 0);
		}
	}
	family_head(b, "DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered (0: none).");
	for (int i = 0; i < a->n; i++)
		for (int g = 0; shown(a, i) && g < a->recs[i]->ngpus; g++)
			sl_buf_addf(b, "DCGM_FI_DEV_XID_ERRORS{node=\"%s\",gpu=\"%d\"} %d\n", a->recs[i]->name, g,
				    agents_gpu(a->recs[i], g)->last_code);
	family_head(b, "suanli_gpu_xid_events_total", "counter",
		    "XID events the node's agent reported since this controller started.");
	for (int i = 0; i < a->n; i++)
		for (int g = 0; shown(a, i) && g < a->recs[i]->ngpus; g++)
			sl_buf_addf(b, "suanli_gpu_xid_events_total{node=\"%s\",gpu=\"%d\"} %llu\n",
				    a->recs[i]->name, g, (unsigned long long)agents_xids_count(a->recs[i], g));
	family_head(b, "suanli_gpu_health", "gauge",
		    "The GPU's service state (ok, draining, failed): 1 for the state it is in.");
	for (int i = 0; i < a->n; i++)
		for (int g = 0; shown(a, i) && g < a->recs[i]->ngpus; g++)
			sl_buf_addf(b, "suanli_gpu_health{node=\"%s\",gpu=\"%d\",state=\"%s\"} 1\n",
				    a->recs[i]->name, g, gpu_hstate_name(agents_gpu(a->recs[i], g)->state));
}

void agents_metrics(struct ctl *c, struct sl_buf *b)
{
	const struct fleet *f = c->fleet;
	const struct ctl_agents *a = c->agents;
	int nodes = f->nnodes < AGENTS_METRICS_NODES_MAX ? f->nnodes : AGENTS_METRICS_NODES_MAX;
	family_head(b, "suanli_node_state", "gauge",
		    "The node's state (ready, unreachable, down, drained, draining): 1 for the state it is in.");
	for (int n = 0; n < nodes; n++) {
		const char *why = "";
		const struct fleet_node *fn = &f->nodes[n];
		sl_buf_addf(b, "suanli_node_state{node=\"%s\",site=\"%s\",leaf=\"%s\",state=\"%s\"} 1\n",
			    fn->name, f->sites[fn->site].name, f->leaves[fn->leaf].name,
			    ctl_node_state(c, n, &why));
	}
	family_head(b, "suanli_node_heartbeat_age_seconds", "gauge",
		    "Time since the node's agent last reported (nodes whose agent registered).");
	for (int n = 0; n < nodes && a; n++) {
		const struct fleet_node *fn = &f->nodes[n];
		const struct agent_rec *r = agents_rec(c, fn->name);
		if (!r || !r->registered_ns || !r->last_hb_ns)
			continue;
		int64_t age = c->now_ns > r->last_hb_ns ? c->now_ns - r->last_hb_ns : 0;
		sl_buf_addf(b, "suanli_node_heartbeat_age_seconds{node=\"%s\",site=\"%s\",leaf=\"%s\"} %.3f\n",
			    fn->name, f->sites[fn->site].name, f->leaves[fn->leaf].name, (double)age / 1e9);
	}
	family_head(b, "suanli_metrics_nodes_omitted", "gauge",
		    "Nodes past the bound on per-node series (AGENTS_METRICS_NODES_MAX) that /metrics leaves out.");
	sl_buf_addf(b, "suanli_metrics_nodes_omitted %d\n", f->nnodes - nodes);
	if (a)
		gpu_series(a, b);
}

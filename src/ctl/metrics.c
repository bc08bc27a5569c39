/* metrics.c - /metrics in the Prometheus text format.
 *
 * Request counts come from the HTTP layer's done callback (so refusals that
 * never reach a handler count too); the placement latency histogram from
 * scheduler submits (the placement decision and the pass it triggers); GPU
 * and queue gauges are computed when scraped, from the same state the API
 * shows, so they cannot drift. The commit histogram times the turn's one
 * store commit (group commit: one per loop turn, whatever it carries).
 * Nodes, GPUs (agents_metrics.c), the audit log (audit_log.c) and tenants
 * (billing_metrics.c) add their own series, each part from its own state;
 * docs/monitoring.md lists every series. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agents.h"
#include "audit_log.h"
#include "billing.h"
#include "instances.h"

#include "buf.h"
#include "catalog.h"
#include "ctl_int.h"
#include "leader.h"
#include "log.h"

/* Bytes of one /metrics answer: the worst case of the per-GPU series
 * (AGENTS_METRICS_NODES_MAX nodes of TOPO_MAX_GPUS GPUs, 63-byte names) is
 * about 40 MiB; 2,048 8-GPU nodes with short names about 9 MiB. */
#define METRICS_TEXT_MAX ((size_t)64 << 20)
#define METRICS_SERIES_MAX 4096             /* (route, status) request counters */

/* Upper bounds of the placement histogram, seconds. */
static const double hist_le[CTL_HIST_BUCKETS] = {1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4,
						 2.5e-4, 5e-4, 1e-3, 2.5e-3, 1e-2, 0.1, 1.0};

/* Upper bounds of the store commit histogram, seconds (SQLite fsync to a
 * PostgreSQL round trip across cities). */
static const double commit_le[CTL_COMMIT_BUCKETS] = {1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2,
						     2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1.0, 2.5};

static void hist_add(const double *le, int n, uint64_t *counts, double *sum, uint64_t *count, double s)
{
	int i = 0;
	while (i < n && s > le[i])
		i++;
	counts[i]++;
	*sum += s;
	(*count)++;
}

static void hist_write(struct sl_buf *b, const char *name, const char *help, const double *le, int n,
		       const uint64_t *counts, double sum, uint64_t count)
{
	uint64_t cum = 0;
	sl_buf_addf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	for (int i = 0; i < n; i++) {
		cum += counts[i];
		sl_buf_addf(b, "%s_bucket{le=\"%g\"} %llu\n", name, le[i], (unsigned long long)cum);
	}
	cum += counts[n];
	sl_buf_addf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9f\n%s_count %llu\n", name,
		    (unsigned long long)cum, name, sum, name, (unsigned long long)count);
}

void ctl_metrics_observe(struct ctl *c, double s)
{
	hist_add(hist_le, CTL_HIST_BUCKETS, c->metrics.hist, &c->metrics.hist_sum, &c->metrics.hist_count, s);
}

enum sl_err ctl_metrics_commit(struct ctl *c, struct sl_diag *d)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	enum sl_err e = store_commit(c->store, d);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	hist_add(commit_le, CTL_COMMIT_BUCKETS, c->metrics.commit, &c->metrics.commit_sum,
		 &c->metrics.commit_count,
		 (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return e;
}

void ctl_metrics_done(const struct http_done_info *info, void *ctx)
{
	struct ctl *c = ctx;
	const char *route = info->route ? info->route : "none";
	if (sl_log_enabled(SL_LOG_DEBUG))
		sl_log_debug("request", "method=%s path=%s route=%s status=%d ms=%.3f peer=%s",
			     info->method, info->path, route, info->status,
			     (double)info->duration_ns / 1e6, info->peer);
	for (int i = 0; i < c->metrics.nmreq; i++)
		if (c->metrics.mreq[i].status == info->status && !strcmp(c->metrics.mreq[i].route, route)) {
			c->metrics.mreq[i].count++;
			return;
		}
	if (sl_grow(&c->metrics.mreq, &c->metrics.cap_mreq, c->metrics.nmreq + 1, METRICS_SERIES_MAX))
		return; /* the request goes uncounted */
	/* Labels are string literals from the route table, or "none". */
	c->metrics.mreq[c->metrics.nmreq++] = (struct ctl_metric_req){info->route ? info->route : "none",
						       info->status, 1};
}

void h_metrics(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct sl_buf b = SL_BUF_INIT(METRICS_TEXT_MAX);
	size_t nm = catalog_gpu_count();
	int *free_by = calloc(nm, sizeof(int)), *used_by = calloc(nm, sizeof(int)),
	    *out_by = calloc(nm, sizeof(int));
	if (!free_by || !used_by || !out_by) {
		free(free_by), free(used_by), free(out_by);
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	int64_t alloc_milli = 0, cap_milli = 0; /* every model, the fleet's own included */
	for (int n = 0; n < c->fleet->nnodes; n++) {
		const struct node_type *t = fleet_node_type(c->fleet, n);
		bool usable = placer_node_usable(c->placer, n);
		for (int g = 0; g < t->ngpus; g++)
			alloc_milli += placer_gpu_used_milli(c->placer, n, g);
		cap_milli += usable ? (int64_t)t->ngpus * 1000 : 0;
		size_t m;
		for (m = 0; m < nm && catalog_gpu_at(m) != t->gpu; m++)
			;
		if (m == nm)
			continue;
		for (int g = 0; g < t->ngpus; g++) {
			if (placer_gpu_used_milli(c->placer, n, g) > 0)
				used_by[m]++;
			else if (usable)
				free_by[m]++;
			else
				out_by[m]++;
		}
	}
	sl_buf_addf(&b, "# HELP suanli_gpus GPUs by state and model.\n# TYPE suanli_gpus gauge\n");
	for (size_t m = 0; m < nm; m++) {
		if (!free_by[m] && !used_by[m] && !out_by[m])
			continue;
		const char *name = catalog_gpu_at(m)->name;
		sl_buf_addf(&b, "suanli_gpus{state=\"free\",model=\"%s\"} %d\n", name, free_by[m]);
		sl_buf_addf(&b, "suanli_gpus{state=\"leased\",model=\"%s\"} %d\n", name, used_by[m]);
		sl_buf_addf(&b, "suanli_gpus{state=\"unavailable\",model=\"%s\"} %d\n", name, out_by[m]);
	}
	free(free_by), free(used_by), free(out_by);
	sl_buf_addf(&b, "# HELP suanli_gpu_allocated_milli GPU capacity held by leases, in "
		    "thousandths of a GPU (a share counts its part).\n# TYPE suanli_gpu_allocated_milli "
		    "gauge\nsuanli_gpu_allocated_milli %lld\n", (long long)alloc_milli);
	sl_buf_addf(&b, "# HELP suanli_gpu_capacity_milli GPUs on nodes in service, in thousandths.\n"
		    "# TYPE suanli_gpu_capacity_milli gauge\nsuanli_gpu_capacity_milli %lld\n",
		    (long long)cap_milli);
	sl_buf_addf(&b, "# HELP suanli_queue_depth Leases waiting for capacity.\n"
		    "# TYPE suanli_queue_depth gauge\nsuanli_queue_depth %d\n", c->sched ? sched_pending_count(c->sched) : 0);
	sl_buf_addf(&b, "# HELP suanli_leases_active Leases holding GPUs.\n"
		    "# TYPE suanli_leases_active gauge\nsuanli_leases_active %d\n", c->lt.nactive);
	hist_write(&b, "suanli_placement_seconds", "Time to decide one placement.", hist_le, CTL_HIST_BUCKETS,
		   c->metrics.hist, c->metrics.hist_sum, c->metrics.hist_count);
	hist_write(&b, "suanli_store_commit_seconds", "Time of one loop turn's store commit.", commit_le,
		   CTL_COMMIT_BUCKETS, c->metrics.commit, c->metrics.commit_sum, c->metrics.commit_count);
	struct http_stats hs;
	http_server_stats(c->http, &hs);
	sl_buf_addf(&b, "# HELP suanli_http_connections HTTP connections open now.\n"
		    "# TYPE suanli_http_connections gauge\nsuanli_http_connections %u\n"
		    "# HELP suanli_http_connections_peak Most HTTP connections open at once.\n"
		    "# TYPE suanli_http_connections_peak gauge\nsuanli_http_connections_peak %u\n"
		    "# HELP suanli_http_connections_max Connections admitted at once (--max-connections).\n"
		    "# TYPE suanli_http_connections_max gauge\nsuanli_http_connections_max %u\n"
		    "# HELP suanli_http_refused_total Connections refused with 503 at the limit.\n"
		    "# TYPE suanli_http_refused_total counter\nsuanli_http_refused_total %llu\n",
		    hs.open, hs.peak, hs.max, (unsigned long long)hs.refused);
	sl_buf_addf(&b, "# HELP suanli_http_requests_total HTTP requests by route and status.\n"
		    "# TYPE suanli_http_requests_total counter\n");
	for (int i = 0; i < c->metrics.nmreq; i++)
		sl_buf_addf(&b, "suanli_http_requests_total{route=\"%s\",status=\"%d\"} %llu\n",
			c->metrics.mreq[i].route, c->metrics.mreq[i].status, (unsigned long long)c->metrics.mreq[i].count);
	char lead[1024];
	if (leader_metrics(c, lead, sizeof(lead)))
		sl_buf_adds(&b, lead);
	else /* one controller on its own store always leads: rules need not tell the cases apart */
		sl_buf_adds(&b, "# HELP suanli_leader Whether this controller leads (1) or stands by (0).\n"
				"# TYPE suanli_leader gauge\nsuanli_leader 1\n");
	agents_metrics(c, &b);
	audit_log_metrics(c, &b);
	billing_metrics(c, &b);
	instances_metrics(c, &b);
	char *text;
	size_t len;
	enum sl_err e = sl_buf_detach(&b, &text, &len);
	if (e) {
		ctl_answer_error(call, e, NULL, NULL);
		return;
	}
	ctl_answer(call, 200, "text/plain; version=0.0.4", text, len);
}

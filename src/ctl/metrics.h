/* metrics.h - what /metrics reports (metrics.c): request counts by route
 * and status, the placement and store commit latency histograms, kept in the handle struct
 * ctl_metrics (owned by struct ctl). Loop thread only. */
#ifndef SL_CTL_METRICS_H
#define SL_CTL_METRICS_H

#include <stdint.h>

#include "err.h"

struct ctl;
struct http_done_info;

struct ctl_metric_req {
	const char *route;
	int status;
	uint64_t count;
};

#define CTL_HIST_BUCKETS 14
#define CTL_COMMIT_BUCKETS 14

/* Counters (c->metrics). */
struct ctl_metrics {
	struct ctl_metric_req *mreq;
	int nmreq, cap_mreq;
	uint64_t hist[CTL_HIST_BUCKETS + 1];
	double hist_sum;
	uint64_t hist_count;
	uint64_t commit[CTL_COMMIT_BUCKETS + 1]; /* the turns' store commits */
	double commit_sum;
	uint64_t commit_count;
};

/* Placement latency for the histogram. */
void ctl_metrics_observe(struct ctl *c, double seconds);
/* The turn's store_commit, timed for suanli_store_commit_seconds. */
enum sl_err ctl_metrics_commit(struct ctl *c, struct sl_diag *d) SL_MUST_USE;
/* http_server done callback: counts the answer by route and status. */
void ctl_metrics_done(const struct http_done_info *info, void *ctx);

#endif

/* bench/leaf_sim.c - the multi-node stream of bench/slurm.sh (phase T) on the
 * core alone: the same fleet file, the same 40 jobs, the controller's
 * scheduler and placer (learned workload, cold-start prior), in simulated
 * time. Deterministic: what one placement policy does to the leaves spanned
 * and the start delays, without daemons, HTTP or a loaded machine's noise.
 *
 * As bench_slurm_side does it: every node drained, the jobs submitted, then
 * the nodes resumed one by one in name order (a pass after each), then time
 * runs from lease end to lease end. RESUME=all restores every node before
 * the first pass (Slurm's partition UP). LIMIT_S=N declares N seconds for
 * every lease (as the harness's sbatch -t 5 gives Slurm's jobs 300 s) and
 * releases each when its own seconds are over, instead of declaring those.
 *
 * Usage: bench_leaf_sim FLEET SWFILE [one_leaf|free]
 * Prints one JSON line per label. Nothing is asserted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place.h"
#include "place_wmodel.h"
#include "scheduler.h"

#define MAXJ 256
#define NS 1000000000LL

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *b = malloc(1 << 20);
	*len = b ? fread(b, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	if (b)
		b[*len] = 0;
	return b;
}

static void die(const char *what)
{
	fprintf(stderr, "leaf_sim: %s\n", what);
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		die("usage: bench_leaf_sim FLEET SWFILE [one_leaf|free]");
	size_t len;
	char *text = slurp(argv[1], &len);
	if (!text)
		die("cannot read the fleet");
	struct fleet f;
	struct sl_diag d = {0};
	if (fleet_init(&f) || fleet_load_yaml(&f, text, len, argv[1], &d))
		die("bad fleet");
	int nr[MAXJ], gp[MAXJ], secs[MAXJ], nj = 0;
	FILE *sw = fopen(argv[2], "r");
	if (!sw)
		die("cannot read the stream");
	while (nj < MAXJ && fscanf(sw, "%d %d %d", &nr[nj], &gp[nj], &secs[nj]) == 3)
		nj++;
	fclose(sw);
	bool all = getenv("RESUME") && !strcmp(getenv("RESUME"), "all");
	int limit = getenv("LIMIT_S") ? atoi(getenv("LIMIT_S")) : 0;
	struct placer *p;
	struct sched *s;
	struct place_wmodel *wm;
	if (placer_new(&f, &p) || sched_new(p, &s) || place_wmodel_new(0, &wm) ||
	    place_wmodel_apply(wm, p, &d))
		die("setup");
	int64_t now = 1000 * NS;
	uint64_t id = 1;
	for (int one = 1; one >= 0; one--) {
		if (argc > 3 && strcmp(argv[3], one ? "one_leaf" : "free"))
			continue;
		for (int i = 0; i < f.nnodes; i++)
			placer_set_node_usable(p, i, false);
		uint64_t first = id;
		int64_t start[MAXJ], t0 = now;
		int leaves[MAXJ];
		for (int j = 0; j < nj; j++) {
			struct place_request r = {.gpus = nr[j] * gp[j]};
			if (nr[j] > 1) {
				r.per_node = gp[j];
				r.one_leaf = one;
			}
			struct sched_spec sp = {.tenant = "bench", .plan = PLAN_HOURLY, .req = &r,
						.duration_ns = (limit > 0 ? limit : secs[j]) * NS};
			if (place_wmodel_observe(wm, &r) && place_wmodel_apply(wm, p, &d))
				die("apply");
			if (sched_submit(s, id++, &sp, now, &d))
				die("submit");
			start[j] = -1;
		}
		for (int i = 0; i < f.nnodes; i++) {
			placer_set_node_usable(p, i, true);
			if (!all && sched_node_restored(s, i, now))
				die("restore");
		}
		if (all && sched_capacity_changed(s, now))
			die("capacity");
		int done = 0;
		for (;;) {
			const struct sched_event *ev;
			int ne;
			sched_events(s, &ev, &ne);
			for (int e = 0; e < ne; e++) {
				if (ev[e].type == SCHED_EV_STARTED) {
					int j = (int)(ev[e].id - first);
					start[j] = ev[e].at_ns;
					leaves[j] = ev[e].placement.score.leaves;
					if (getenv("VERBOSE")) {
						fprintf(stderr, "t=%5.1f start job %2d %dx%d %2ds:",
							(double)(now - t0) / NS, j, nr[j], gp[j], secs[j]);
						for (int k = 0; k < ev[e].placement.npicks; k++)
							fprintf(stderr, " %s",
								f.nodes[ev[e].placement.picks[k].node].name + 1);
						fprintf(stderr, "\n");
					}
				} else if (ev[e].type == SCHED_EV_ENDED) {
					done++;
				}
			}
			sched_events_clear(s);
			if (done == nj)
				break;
			int64_t next = INT64_MAX;
			for (int j = 0; j < nj; j++)
				if (start[j] >= 0 && start[j] + secs[j] * NS > now &&
				    start[j] + secs[j] * NS < next)
					next = start[j] + secs[j] * NS;
			if (next == INT64_MAX)
				die("stuck");
			now = next;
			for (int j = 0; limit > 0 && j < nj; j++)
				if (start[j] >= 0 && start[j] + secs[j] * NS == now &&
				    sched_release(s, first + (uint64_t)j, now, &d))
					die("release");
			if (sched_tick(s, now))
				die("tick");
		}
		int multi = 0, span[5] = {0};
		double sum = 0, mx = 0, mk = 0;
		for (int j = 0; j < nj; j++) {
			double at = (double)(start[j] - t0) / NS;
			sum += at;
			mx = at > mx ? at : mx;
			mk = at + secs[j] > mk ? at + secs[j] : mk;
			if (nr[j] > 1) {
				multi++;
				span[leaves[j] < 4 ? leaves[j] : 4]++;
			}
			if (getenv("VERBOSE"))
				fprintf(stderr, "job %2d %dx%d %2ds start %5.1f leaves %d\n", j, nr[j],
					gp[j], secs[j], at, nr[j] > 1 ? leaves[j] : 1);
		}
		printf("{\"label\":\"%s\",\"jobs\":%d,\"multi_node\":%d,\"one_leaf\":%d,\"two\":%d,"
		       "\"three_plus\":%d,\"mean_start_delay_s\":%.2f,\"max_start_delay_s\":%.1f,"
		       "\"makespan_s\":%.1f}\n",
		       one ? "one_leaf" : "noswitches", nj, multi, span[1], span[2],
		       span[3] + span[4], sum / nj, mx, mk);
	}
	sched_free(s);
	place_wmodel_free(wm);
	placer_free(p);
	fleet_release(&f);
	free(text);
	return 0;
}

/* bench/slurm_side/slurm_side.h - what the phases of bench_slurm_side share:
 * the daemon under test and the helpers that drive it (main.c). */
#ifndef SLURM_SIDE_H
#define SLURM_SIDE_H
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#include "bench_lib.h"

#define MAX_NODES 64
#define POLL_MS 50
#define WAIT_LIMIT_S 900

struct side {
	struct bl_daemon dm;
	pid_t pid;
	char tok[256];
	char fleet[BL_PATH_MAX];
	char nodes[MAX_NODES][16];
	int nnodes;
	struct bl_conn c; /* admin's */
	bool https;           /* the daemon serves HTTPS (--tls) */
	char ca[BL_PATH_MAX + 32]; /* ... verified against this CA */
	FILE *out;
	char agent[BL_PATH_MAX]; /* suanli-agent, for phase A */
	pid_t agents[MAX_NODES];
	int nagents;
};

double wall_s(void);
double parse_time(const json_t *v);
long id_seq(const char *id);
void side_start(struct side *s);
void side_stop(struct side *s);
void all_nodes(struct side *s, bool drain);
json_t *leases(struct side *s, const char *state);
void wait_empty(struct side *s);

/* Phase T (phase_t.c): multi-node jobs, one leaf or not. */
void phase_t(struct side *s, const char *swfile);

#endif

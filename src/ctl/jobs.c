/* jobs.c - jobs on leases (jobs.h). Skeleton until the job API lands. */
#include "jobs.h"

#include "ctl_int.h"

enum sl_err jobs_start(struct ctl *c, struct sl_diag *d)
{
	(void)c, (void)d;
	return SL_OK;
}

void jobs_free(struct ctl *c)
{
	(void)c;
}

void jobs_tick(struct ctl *c)
{
	(void)c;
}

void jobs_lease_changed(struct ctl *c, struct ctl_lease *l)
{
	(void)c, (void)l;
}

void jobs_on_heartbeat(struct ctl *c, int node, const json_t *work, json_t *answer)
{
	(void)c, (void)node, (void)work, (void)answer;
}

int64_t jobs_work_version(const struct ctl *c, int node)
{
	(void)c, (void)node;
	return 0;
}

static void not_yet(struct ctl_call *call)
{
	ctl_answer_error(call, SL_EINVAL, "not implemented yet", NULL);
}

void h_job_create(struct ctl_call *c) { not_yet(c); }
void h_job_list(struct ctl_call *c) { not_yet(c); }
void h_job_show(struct ctl_call *c) { not_yet(c); }
void h_job_cancel(struct ctl_call *c) { not_yet(c); }
void h_job_logs(struct ctl_call *c) { not_yet(c); }
void h_agent_work(struct ctl_call *c) { not_yet(c); }
void h_agent_logs(struct ctl_call *c) { not_yet(c); }

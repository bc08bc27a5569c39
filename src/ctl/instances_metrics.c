/* instances_metrics.c - the instances' part of /metrics: how many are in
 * each state (docs/monitoring.md). Released ones count too: a counter-like
 * gauge an operator can rate over. */
#include "buf.h"
#include "instances.h"
#include "instances_int.h"

void instances_metrics(struct ctl *c, struct sl_buf *b)
{
	int by[IS__COUNT] = {0};
	const struct ctl_instances *is = c->instances;
	for (int i = 0; is && i < is->n; i++)
		if (is->v[i])
			by[is->v[i]->state]++;
	sl_buf_addf(b, "# HELP suanli_instances Instances by state.\n# TYPE suanli_instances gauge\n");
	for (int s = 0; s < IS__COUNT; s++)
		sl_buf_addf(b, "suanli_instances{state=\"%s\"} %d\n", inst_state_name((enum inst_state)s), by[s]);
}

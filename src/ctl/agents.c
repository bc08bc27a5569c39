/* agents.c - node agents at the controller (agents.h). Skeleton: nodes count
 * as ready only in simulate mode until registration and heartbeats land. */
#include "agents.h"

#include "ctl_int.h"

enum sl_err agents_start(struct ctl *c, const struct agents_opts *o, struct sl_diag *d)
{
	(void)c, (void)o, (void)d;
	return SL_OK;
}

void agents_free(struct ctl *c)
{
	(void)c;
}

void agents_tick(struct ctl *c)
{
	(void)c;
}

int agents_call_node(struct ctl_call *call)
{
	ctl_answer_error(call, SL_EFORBIDDEN, "not a node credential", NULL);
	return -1;
}

bool agents_node_addr(const struct ctl *c, int node, char *buf, size_t n)
{
	(void)c, (void)node, (void)buf, (void)n;
	return false;
}

bool agents_node_ready(const struct ctl *c, int node)
{
	(void)node;
	return c->simulate;
}

const char *agents_node_state(const struct ctl *c, int node, const char **reason)
{
	(void)c, (void)node, (void)reason;
	return NULL;
}

static void not_yet(struct ctl_call *call)
{
	ctl_answer_error(call, SL_EINVAL, "not implemented yet", NULL);
}

void h_agent_token_create(struct ctl_call *c) { not_yet(c); }
void h_agent_register(struct ctl_call *c) { not_yet(c); }
void h_agent_heartbeat(struct ctl_call *c) { not_yet(c); }

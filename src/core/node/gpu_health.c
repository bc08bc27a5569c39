/* gpu_health.c - the per-GPU XID policy (gpu_health.h). The window keeps
 * only the last GPU_XID_REPEAT times: the third XID within 24 h is the one
 * whose oldest kept predecessor is at most 24 h older. */
#include "gpu_health.h"

#include <stdio.h>
#include <string.h>

static const char *const names[] = {"ok", "draining", "failed"};

const char *gpu_hstate_name(enum gpu_hstate s)
{
	return (unsigned)s <= GPU_FAILED ? names[s] : "?";
}

int gpu_hstate_parse(const char *name)
{
	for (int i = 0; name && i <= GPU_FAILED; i++)
		if (!strcmp(name, names[i]))
			return i;
	return -1;
}

bool gpu_xid_transient(int code)
{
	static const int set[] = {13, 31, 43, 45, 68, 69, 94};
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
		if (set[i] == code)
			return true;
	return false;
}

void gpu_health_init(struct gpu_health *g)
{
	memset(g, 0, sizeof(*g));
	g->state = GPU_OK;
}

static void enter(struct gpu_health *g, enum gpu_hstate s, int64_t at_ns)
{
	if (g->state != s)
		g->since_ns = at_ns;
	g->state = s;
}

enum gpu_hstate gpu_health_xid(struct gpu_health *g, int code, int64_t at_ns)
{
	/* Insert at_ns into recent[] (newest first), dropping the oldest. */
	int pos = 0;
	while (pos < GPU_XID_REPEAT && g->recent[pos] && g->recent[pos] > at_ns)
		pos++;
	if (pos < GPU_XID_REPEAT) {
		memmove(&g->recent[pos + 1], &g->recent[pos],
			(size_t)(GPU_XID_REPEAT - 1 - pos) * sizeof(g->recent[0]));
		g->recent[pos] = at_ns;
	}
	if (at_ns >= g->last_ns) {
		g->last_code = code;
		g->last_ns = at_ns;
	}
	if (g->state == GPU_FAILED)
		return g->state;
	int n = 0;
	while (n < GPU_XID_REPEAT && g->recent[n])
		n++;
	if (!gpu_xid_transient(code)) {
		snprintf(g->reason, sizeof(g->reason), "XID %d is not transient", code);
		enter(g, GPU_FAILED, at_ns);
	} else if (n == GPU_XID_REPEAT && g->recent[0] - g->recent[GPU_XID_REPEAT - 1] <= GPU_XID_WINDOW_NS) {
		snprintf(g->reason, sizeof(g->reason), "%d XIDs within 24 h (last: XID %d)",
			 GPU_XID_REPEAT, code);
		enter(g, GPU_FAILED, at_ns);
	} else {
		snprintf(g->reason, sizeof(g->reason), "XID %d: drained until a health check passes",
			 code);
		enter(g, GPU_DRAINING, at_ns);
	}
	return g->state;
}

enum gpu_hstate gpu_health_report(struct gpu_health *g, bool healthy, int64_t now_ns)
{
	if (g->state == GPU_DRAINING && healthy) {
		g->reason[0] = 0;
		enter(g, GPU_OK, now_ns);
	} else if (g->state == GPU_OK && !healthy) {
		snprintf(g->reason, sizeof(g->reason), "the agent's health check failed");
		enter(g, GPU_DRAINING, now_ns);
	}
	return g->state;
}

void gpu_health_resume(struct gpu_health *g, int64_t now_ns)
{
	memset(g->recent, 0, sizeof(g->recent));
	g->reason[0] = 0;
	enter(g, GPU_OK, now_ns);
}

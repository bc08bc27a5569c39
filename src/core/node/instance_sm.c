/* instance_sm.c - the instance state table (instance_sm.h). */
#include "instance_sm.h"

#include <string.h>

static const char *const state_names[IS__COUNT] = {
	"starting", "running", "stopping", "stopped", "waiting", "failed", "releasing", "released",
};

static const char *const event_names[IE__COUNT] = {
	"placed", "running", "fail", "stop", "stopped", "wait", "release", "removed",
};

#define X IS__COUNT /* not allowed */
/* next[state][event] */
static const unsigned char next[IS__COUNT][IE__COUNT] = {
	/*             PLACED       RUNNING     FAIL       STOP         STOPPED     WAIT        RELEASE       REMOVED */
	[IS_STARTING] = {X,           IS_RUNNING, IS_FAILED, IS_STOPPING, X,          X,          IS_RELEASING, X},
	[IS_RUNNING] = {X,            X,          X,         IS_STOPPING, X,          X,          IS_RELEASING, X},
	[IS_STOPPING] = {X,           X,          X,         X,           IS_STOPPED, X,          IS_RELEASING, X},
	[IS_STOPPED] = {IS_STARTING,  X,          X,         X,           X,          IS_WAITING, IS_RELEASING, X},
	[IS_WAITING] = {IS_STARTING,  X,          X,         IS_STOPPED,  X,          IS_WAITING, IS_RELEASING, X},
	[IS_FAILED] = {IS_STARTING,   X,          X,         X,           X,          IS_WAITING, IS_RELEASING, X},
	[IS_RELEASING] = {X,          X,          X,         X,           X,          X,          X,            IS_RELEASED},
	[IS_RELEASED] = {X,           X,          X,         X,           X,          X,          X,            X},
};
#undef X

const char *inst_state_name(enum inst_state s)
{
	return (unsigned)s < IS__COUNT ? state_names[s] : "?";
}

int inst_state_parse(const char *s)
{
	for (int i = 0; s && i < IS__COUNT; i++)
		if (!strcmp(s, state_names[i]))
			return i;
	return -1;
}

const char *inst_event_name(enum inst_event e)
{
	return (unsigned)e < IE__COUNT ? event_names[e] : "?";
}

enum inst_report inst_report_parse(const char *s)
{
	static const struct {
		const char *name;
		enum inst_report r;
	} words[] = {
		{"pulling", IR_BUSY},     {"creating", IR_BUSY},   {"importing", IR_BUSY},
		{"exporting", IR_BUSY},   {"running", IR_RUNNING}, {"stopped", IR_STOPPED},
		{"failed", IR_FAILED},    {"removed", IR_REMOVED}, {"exported", IR_EXPORTED},
	};
	for (size_t i = 0; s && i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(s, words[i].name))
			return words[i].r;
	return IR_NONE;
}

bool inst_sm_next(enum inst_state s, enum inst_event e, enum inst_state *to)
{
	if ((unsigned)s >= IS__COUNT || (unsigned)e >= IE__COUNT || next[s][e] == IS__COUNT)
		return false;
	*to = (enum inst_state)next[s][e];
	return true;
}

bool inst_state_live(enum inst_state s)
{
	return s == IS_STARTING || s == IS_RUNNING || s == IS_STOPPING;
}

enum inst_event inst_sm_from_reports(enum inst_state s, const enum inst_report *r, int n)
{
	int running = 0, removed = 0, busy = 0, ended = 0;
	bool failed = false;
	if (n <= 0)
		return IE__COUNT;
	for (int i = 0; i < n; i++) {
		running += r[i] == IR_RUNNING;
		removed += r[i] == IR_REMOVED;
		busy += r[i] == IR_BUSY;
		ended += r[i] == IR_STOPPED || r[i] == IR_FAILED;
		failed |= r[i] == IR_FAILED;
	}
	switch (s) {
	case IS_STARTING:
		return failed ? IE_FAIL : running == n ? IE_RUNNING : IE__COUNT;
	case IS_RUNNING:
		return ended ? IE_STOP : IE__COUNT;
	case IS_STOPPING:
		return running == 0 && busy == 0 ? IE_STOPPED : IE__COUNT;
	case IS_RELEASING:
		return removed == n ? IE_REMOVED : IE__COUNT;
	default:
		return IE__COUNT;
	}
}

/* instance_sm.h - the state machine of an instance (docs/instances.md), and
 * how the reports of its nodes' agents add up to one event.
 *
 *   starting -> running -> stopping -> stopped -> starting ...
 *   stopped|failed -> waiting (start --wait) -> starting (the GPUs came back)
 *   starting -> failed (a node could not start it: kept, may start again)
 *   any but released -> releasing -> released (containers and disks removed)
 *
 * Pure: the controller (src/ctl/instances.c) asks before every change, so a
 * change the table does not allow never happens. */
#ifndef SL_INSTANCE_SM_H
#define SL_INSTANCE_SM_H

#include <stdbool.h>

enum inst_state {
	IS_STARTING,
	IS_RUNNING,
	IS_STOPPING,
	IS_STOPPED,
	IS_WAITING,
	IS_FAILED,
	IS_RELEASING,
	IS_RELEASED,
	IS__COUNT
};

enum inst_event {
	IE_PLACED,   /* GPUs placed (or a no-GPU start): containers are made or started */
	IE_RUNNING,  /* every node reports the container running */
	IE_FAIL,     /* a node reports it could not start the container */
	IE_STOP,     /* stop: asked, idle, balance, the lease ended, the guest stopped */
	IE_STOPPED,  /* every node reports the container stopped */
	IE_WAIT,     /* start --wait while the home nodes' GPUs are taken */
	IE_RELEASE,  /* release asked (or the retention of a stopped one ran out) */
	IE_REMOVED,  /* every node reports the container and disks removed */
	IE__COUNT
};

/* What one node's agent last said of the instance's container. */
enum inst_report {
	IR_NONE,     /* nothing yet (or a state this table does not know) */
	IR_BUSY,     /* pulling, creating, importing, exporting: on its way */
	IR_RUNNING,
	IR_STOPPED,
	IR_FAILED,
	IR_REMOVED,
	IR_EXPORTED,
};

/* "starting", "running", ... ; "?" outside the enum. */
const char *inst_state_name(enum inst_state s);
/* -1 for an unknown name. */
int inst_state_parse(const char *s);
const char *inst_event_name(enum inst_event e);
/* The agent's word ("pulling", "running", ...) as a report. */
enum inst_report inst_report_parse(const char *s);

/* The state after event e in state s: true and *to set when the table allows
 * it, false (and *to untouched) otherwise. */
bool inst_sm_next(enum inst_state s, enum inst_event e, enum inst_state *to);
/* Whether the state holds (or is getting) GPUs or a container that runs. */
bool inst_state_live(enum inst_state s);

/* The event n node reports make in state s, or IE__COUNT for none:
 * starting: any failed -> IE_FAIL, all running -> IE_RUNNING;
 * running: any stopped or failed -> IE_STOP (the guest ended it);
 * stopping: none running or busy -> IE_STOPPED;
 * releasing: all removed -> IE_REMOVED. n == 0: none. */
enum inst_event inst_sm_from_reports(enum inst_state s, const enum inst_report *r, int n);

#endif

/* ctl_int.h - struct ctl: the wiring of the controller's parts.
 *
 * Private to src/ctl. struct ctl holds the store, the HTTP server, the
 * fleet and its placer, the scheduler and the turn (the loop's state: its
 * transaction, its queued answers, its time), and one handle per part, each
 * declared in its own header: tenants (tenants.h), tokens (auth.h), leases
 * (lease.h), metrics (metrics.h), and the subsystems that own their state
 * behind a pointer (audit_log.h, billing.h, agents.h, jobs.h). A file
 * includes this header when it wires parts together or needs the fleet and
 * the turn; a part's own state is touched only by its own files. Loop
 * thread only. */
#ifndef SL_CTL_INT_H
#define SL_CTL_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "auth.h"
#include "call.h"
#include "ctl.h"
#include "ctl_fleet.h"
#include "ctl_limits.h"
#include "ctl_sched.h"
#include "ctl_time.h"
#include "fleet.h"
#include "handlers.h"
#include "http.h"
#include "lease.h"
#include "metrics.h"
#include "place.h"
#include "plan.h"
#include "scheduler.h"
#include "store.h"
#include "strmap.h"
#include "tenants.h"

struct ctl {
	struct store *store;
	struct http_server *http;
	bool tls;             /* HTTPS (ctl_tls.c) */
	char *data_dir;
	bool simulate;
	int64_t notice_ns; /* spot preemption notice, < 0: the scheduler's default */

	struct fleet *fleet; /* heap, so the placer's borrow stays valid */
	struct placer *placer;
	bool bestfit;          /* --placement bestfit (ctl_workload.h) */
	struct place_wmodel *wmodel; /* the learned workload; NULL until applied */
	bool wmodel_unsaved; /* counted a request this turn: save before the commit */
	int64_t fleet_version;
	char fleet_id[32];
	bool fleet_ok;       /* fleet initialised (to release) */
	json_t *drains;      /* node name -> {"drained":true,"reason","at"} */

	struct ctl_tenants tenants; /* tenants.h */
	struct ctl_auth auth;       /* tokens (auth.h) */
	struct ctl_lease_table lt;  /* leases (lease.h) */
	struct sched *sched;  /* borrows placer; NULL until the state is loaded */
	int64_t next_deadline;     /* 0: none; every subsystem's tick lowers it */

	/* The turn. */
	bool tx_open;
	bool fatal;   /* a store write failed: the turn must not be committed */
	struct ctl_answer *answers;
	int nanswers, cap_answers, answers_max; /* answers_max: ctl_opts.answer_queue_max */
	struct ctl_row_cache row; /* see struct ctl_row_cache */
	int64_t now_ns;

	struct ctl_metrics metrics; /* metrics.h */

	struct ctl_audit *audit; /* the audit log (audit_log.h); NULL until opened */
	struct ctl_images *images; /* the image catalog (images.h) */
	struct ctl_billing *billing; /* prices, usage, ledger (billing.h); NULL until started */
	struct ctl_agents *agents;   /* node agents (agents.h); NULL until started */
	struct ctl_jobs *jobs;       /* jobs on leases (jobs.h); NULL until started */
	struct ctl_instances *instances; /* instances and SSH keys (instances.h); NULL until started */
	struct ctl_leader *leader;   /* leadership on a shared store (leader.h); NULL: none */
	struct ctl_people *people;   /* users and sessions (people.h); NULL until started */
	struct ctl_events *events;   /* the long poll of state changes (events.h) */
	char *console_dir;           /* the console's files (console_static.h); NULL: none */
};

/* Lease at index i (seq - 1), NULL when evicted. Live leases are never evicted. */
static inline struct ctl_lease *ctl_lease_at(const struct ctl *c, int i)
{
	return i >= 0 && i < c->lt.nleases ? c->lt.leases[i] : NULL;
}

/* ctl_tls.c: whether to serve HTTPS (fills lim's TLS fields and loads the
 * certificate), and what the stop descriptor said: SIGHUP reloads the
 * certificate (false: keep running), anything else stops (true). */
struct http_limits;
enum sl_err ctl_tls_decide(const struct ctl_opts *o, const char *listen, struct http_limits *lim,
			   struct sl_diag *d) SL_MUST_USE;
bool ctl_stop_or_reload(struct ctl *c, int stop_fd);
/* Reloads the certificate when its files changed (checked once a second). */
void ctl_tls_watch(struct ctl *c);

#endif

/* handlers.h - the controller's own route handlers (h_*.c, metrics.c) and
 * the dispatcher (routes.c). Subsystems declare theirs in their own headers
 * (agents.h, jobs.h, billing.h, audit_log.h); routes.c names them all. */
#ifndef SL_CTL_HANDLERS_H
#define SL_CTL_HANDLERS_H

struct ctl;
struct ctl_call;
struct http_request;

void h_healthz(struct ctl_call *c);
void h_metrics(struct ctl_call *c);
void h_catalog(struct ctl_call *c);
void h_fleet_get(struct ctl_call *c);
void h_placement_history(struct ctl_call *c); /* h_placement.c */
void h_plan(struct ctl_call *c);              /* h_plan.c */
void h_fleet_put(struct ctl_call *c);
void h_nodes(struct ctl_call *c);
void h_node_show(struct ctl_call *c);
void h_node_drain(struct ctl_call *c);
void h_node_resume(struct ctl_call *c);
void h_tenant_create(struct ctl_call *c);
void h_tenant_list(struct ctl_call *c);
void h_tenant_show(struct ctl_call *c);
void h_token_create(struct ctl_call *c);
void h_token_list(struct ctl_call *c);
void h_token_revoke(struct ctl_call *c);
void h_lease_create(struct ctl_call *c);
void h_lease_list(struct ctl_call *c);
void h_lease_show(struct ctl_call *c);
void h_lease_release(struct ctl_call *c);
void h_lease_extend(struct ctl_call *c);
void h_lease_scale(struct ctl_call *c);
void h_queue(struct ctl_call *c);
void h_resv_create(struct ctl_call *c);
void h_resv_list(struct ctl_call *c);


/* Dispatches one request (routes.c). */
void ctl_dispatch(struct ctl *c, struct http_request *req);

#endif

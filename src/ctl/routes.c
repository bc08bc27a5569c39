/* routes.c - the route table and the path from a request to its handler.
 *
 * The table is data: method, pattern, metrics label, roles, whether it changes
 * state and whether its body is JSON. Keeping permissions here (rather than in
 * each handler) lets `suanlid routes --json` print them and the end-to-end test
 * check every route against its own role table. Handlers add only what the
 * table cannot say: tenant scoping (another tenant's object is 404) and rules
 * that depend on the body (which roles a token may be created with).
 *
 * Order of checks: route (404/405), token (401), role (403), Idempotency-Key
 * replay, body (400/413), handler. A replayed POST answers the saved bytes
 * without running the handler. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_log.h"
#include "agents.h"
#include "billing.h"
#include "ctl_int.h"
#include "images.h"
#include "instances.h"
#include "jobs.h"
#include "json_limits.h"
#include "log.h"
#include "console_static.h"
#include "events.h"
#include "people.h"

#define R_ALL_BUT_AGENT                                                                     \
	(CTL_ROLE_BIT(CTL_ROLE_ADMIN) | CTL_ROLE_BIT(CTL_ROLE_OPERATOR) |                   \
	 CTL_ROLE_BIT(CTL_ROLE_TENANT_ADMIN) | CTL_ROLE_BIT(CTL_ROLE_TENANT) |              \
	 CTL_ROLE_BIT(CTL_ROLE_AUDITOR))
#define R_PROVIDER (CTL_ROLE_BIT(CTL_ROLE_ADMIN) | CTL_ROLE_BIT(CTL_ROLE_OPERATOR))
#define R_AUDIT (R_PROVIDER | CTL_ROLE_BIT(CTL_ROLE_AUDITOR))
#define R_TENANTS (CTL_ROLE_BIT(CTL_ROLE_TENANT_ADMIN) | CTL_ROLE_BIT(CTL_ROLE_TENANT))
#define R_LEASE_WRITE (R_PROVIDER | R_TENANTS)
#define R_AGENT CTL_ROLE_BIT(CTL_ROLE_AGENT)

static const struct ctl_route routes[] = {
	{"GET", "/healthz", "healthz", false, 0, false, false, h_healthz},
	{"GET", "/metrics", "metrics", true, R_AUDIT, false, false, h_metrics},
	{"GET", "/v1/catalog", "catalog", true, R_ALL_BUT_AGENT, false, false, h_catalog},
	{"GET", "/v1/fleet", "fleet_get", true, R_ALL_BUT_AGENT, false, false, h_fleet_get},
	{"GET", "/v1/placement/history", "placement_history", true, R_PROVIDER, false, false,
	 h_placement_history},
	{"PUT", "/v1/fleet", "fleet_put", true, R_PROVIDER, true, false, h_fleet_put},
	/* where a lease request would go now, placing nothing (h_plan.c) */
	{"POST", "/v1/plan", "plan_preview", true, R_LEASE_WRITE, false, true, h_plan},
	{"GET", "/v1/nodes", "node_list", true, R_ALL_BUT_AGENT, false, false, h_nodes},
	{"GET", "/v1/nodes/{name}", "node_show", true, R_ALL_BUT_AGENT, false, false, h_node_show},
	{"POST", "/v1/nodes/{name}/drain", "node_drain", true, R_PROVIDER, true, true, h_node_drain},
	{"POST", "/v1/nodes/{name}/resume", "node_resume", true, R_PROVIDER, true, true, h_node_resume},
	{"POST", "/v1/tenants", "tenant_create", true, R_PROVIDER, true, true, h_tenant_create},
	{"GET", "/v1/tenants", "tenant_list", true, R_AUDIT, false, false, h_tenant_list},
	{"GET", "/v1/tenants/{name}", "tenant_show", true, R_AUDIT | R_TENANTS, false, false,
	 h_tenant_show},
	{"POST", "/v1/tokens", "token_create", true, R_PROVIDER | CTL_ROLE_BIT(CTL_ROLE_TENANT_ADMIN),
	 true, true, h_token_create},
	{"GET", "/v1/tokens", "token_list", true, R_AUDIT | CTL_ROLE_BIT(CTL_ROLE_TENANT_ADMIN),
	 false, false, h_token_list},
	{"DELETE", "/v1/tokens/{id}", "token_revoke", true,
	 R_PROVIDER | CTL_ROLE_BIT(CTL_ROLE_TENANT_ADMIN), true, false, h_token_revoke},
	/* people who sign in (people.h, users.c, sessions.c; docs/console.md) */
	{"POST", "/v1/users", "user_create", true, R_PROVIDER | CTL_ROLE_BIT(CTL_ROLE_TENANT_ADMIN),
	 true, true, h_user_create},
	{"GET", "/v1/users", "user_list", true, R_AUDIT | CTL_ROLE_BIT(CTL_ROLE_TENANT_ADMIN), false,
	 false, h_user_list},
	{"DELETE", "/v1/users/{name}", "user_remove", true,
	 R_PROVIDER | CTL_ROLE_BIT(CTL_ROLE_TENANT_ADMIN), true, false, h_user_remove},
	{"POST", "/v1/users/{name}/password", "user_passwd", true, R_ALL_BUT_AGENT, true, true,
	 h_user_passwd},
	{"POST", "/v1/sessions", "session_create", false, 0, true, true, h_session_create},
	{"GET", "/v1/session", "session_show", true, R_ALL_BUT_AGENT, false, false, h_session_show},
	{"DELETE", "/v1/session", "session_delete", true, R_ALL_BUT_AGENT, true, false,
	 h_session_delete},
	/* state changes as a long poll (events.h) */
	{"GET", "/v1/events", "events", true, R_ALL_BUT_AGENT, false, false, h_events},
	{"POST", "/v1/leases", "lease_create", true, R_LEASE_WRITE, true, true, h_lease_create},
	{"GET", "/v1/leases", "lease_list", true, R_ALL_BUT_AGENT, false, false, h_lease_list},
	{"GET", "/v1/leases/{id}", "lease_show", true, R_ALL_BUT_AGENT, false, false, h_lease_show},
	{"POST", "/v1/leases/{id}/release", "lease_release", true, R_LEASE_WRITE, true, true,
	 h_lease_release},
	{"POST", "/v1/leases/{id}/extend", "lease_extend", true, R_LEASE_WRITE, true, true,
	 h_lease_extend},
	{"POST", "/v1/leases/{id}/scale", "lease_scale", true, R_LEASE_WRITE, true, true,
	 h_lease_scale},
	{"POST", "/v1/jobs", "job_create", true, R_LEASE_WRITE, true, true, h_job_create},
	{"GET", "/v1/jobs", "job_list", true, R_ALL_BUT_AGENT, false, false, h_job_list},
	{"GET", "/v1/jobs/{id}", "job_show", true, R_ALL_BUT_AGENT, false, false, h_job_show},
	{"POST", "/v1/jobs/{id}/cancel", "job_cancel", true, R_LEASE_WRITE, true, true, h_job_cancel},
	{"GET", "/v1/jobs/{id}/logs", "job_logs", true, R_ALL_BUT_AGENT, false, false, h_job_logs},
	/* instances (instances.h, h_instances.c, ssh_keys.c, instance_migrate.c) */
	{"POST", "/v1/instances", "instance_create", true, R_LEASE_WRITE, true, true, h_instance_create},
	{"GET", "/v1/instances", "instance_list", true, R_ALL_BUT_AGENT, false, false, h_instance_list},
	{"GET", "/v1/instances/{id}", "instance_show", true, R_ALL_BUT_AGENT, false, false,
	 h_instance_show},
	{"POST", "/v1/instances/{id}/stop", "instance_stop", true, R_LEASE_WRITE, true, true,
	 h_instance_stop},
	{"POST", "/v1/instances/{id}/start", "instance_start", true, R_LEASE_WRITE, true, true,
	 h_instance_start},
	{"POST", "/v1/instances/{id}/release", "instance_release", true, R_LEASE_WRITE, true, true,
	 h_instance_release},
	{"GET", "/v1/instances/{id}/logs", "instance_logs", true, R_ALL_BUT_AGENT, false, false,
	 h_instance_logs},
	{"POST", "/v1/ssh-keys", "sshkey_add", true, R_ALL_BUT_AGENT, true, true, h_ssh_key_add},
	{"GET", "/v1/ssh-keys", "sshkey_list", true, R_ALL_BUT_AGENT, false, false, h_ssh_key_list},
	{"DELETE", "/v1/ssh-keys/{name}", "sshkey_remove", true, R_ALL_BUT_AGENT, true, false,
	 h_ssh_key_remove},
	{"POST", "/v1/agent/migrations/{id}/{part}", "agent_migration_put", true, R_AGENT, true, false,
	 h_migration_put},
	{"POST", "/v1/agent/migrations/{id}/{part}/done", "agent_migration_done", true, R_AGENT, true,
	 true, h_migration_done},
	{"GET", "/v1/agent/migrations/{id}/{part}", "agent_migration_get", true, R_AGENT, false, false,
	 h_migration_get},
	{"POST", "/v1/images", "image_add", true, R_PROVIDER, true, true, h_image_add},
	{"GET", "/v1/images", "image_list", true, R_ALL_BUT_AGENT, false, false, h_image_list},
	{"POST", "/v1/agent-tokens", "agent_token_create", true, R_PROVIDER, true, true,
	 h_agent_token_create},
	{"POST", "/v1/agent/register", "agent_register", true, R_AGENT, true, true, h_agent_register},
	{"POST", "/v1/agent/heartbeat", "agent_heartbeat", true, R_AGENT, true, true,
	 h_agent_heartbeat},
	{"GET", "/v1/agent/work", "agent_work", true, R_AGENT, false, false, h_agent_work},
	{"POST", "/v1/agent/logs", "agent_logs", true, R_AGENT, true, false, h_agent_logs},
	{"GET", "/v1/queue", "queue", true, R_ALL_BUT_AGENT, false, false, h_queue},
	{"POST", "/v1/reservations", "reservation_create", true, R_PROVIDER, true, true,
	 h_resv_create},
	{"GET", "/v1/reservations", "reservation_list", true, R_AUDIT | R_TENANTS, false, false,
	 h_resv_list},
	/* billing (billing.h, h_billing.c) */
	{"GET", "/v1/prices", "price_list", true, R_ALL_BUT_AGENT, false, false, h_price_list},
	{"POST", "/v1/prices", "price_set", true, R_PROVIDER, true, true, h_price_set},
	{"GET", "/v1/tenants/{name}/balance", "balance", true, R_AUDIT | R_TENANTS, false, false,
	 h_balance},
	{"GET", "/v1/tenants/{name}/ledger", "ledger", true, R_AUDIT | R_TENANTS, false, false,
	 h_ledger},
	{"POST", "/v1/tenants/{name}/topups", "topup", true, R_PROVIDER, true, true, h_topup},
	{"POST", "/v1/tenants/{name}/credits", "credit", true, R_PROVIDER, true, true, h_credit},
	{"POST", "/v1/tenants/{name}/credit-line", "credit_line", true, R_PROVIDER, true, true,
	 h_credit_line},
	{"GET", "/v1/tenants/{name}/invoices/{month}", "invoice", true, R_AUDIT | R_TENANTS, false,
	 false, h_invoice},
	{"GET", "/v1/usage", "usage", true, R_AUDIT | R_TENANTS, false, false, h_usage},
	{"GET", "/v1/revenue/{month}", "revenue", true, R_AUDIT, false, false, h_revenue},
	/* The audit log (docs/audit.md): tenant roles see their own tenant's
	 * entries; operators read it all (they are audited, not trusted). */
	{"GET", "/v1/audit/log", "audit_log", true, R_ALL_BUT_AGENT, false, false, h_audit_log},
	{"GET", "/v1/audit/checkpoint", "audit_checkpoint_show", true, R_ALL_BUT_AGENT, false, false,
	 h_audit_checkpoint_get},
	{"POST", "/v1/audit/checkpoint", "audit_checkpoint", true, R_PROVIDER, true, true,
	 h_audit_checkpoint_create},
	{"GET", "/v1/audit/proof", "audit_proof", true, R_ALL_BUT_AGENT, false, false, h_audit_proof},
	{"GET", "/v1/audit/consistency", "audit_consistency", true, R_ALL_BUT_AGENT, false, false,
	 h_audit_consistency},
	{"GET", "/v1/audit/verify", "audit_verify", true, R_AUDIT, false, false, h_audit_verify},
	{"GET", "/v1/audit/export", "audit_export", true, R_ALL_BUT_AGENT, false, false,
	 h_audit_export},
};

const struct ctl_route *ctl_routes(size_t *n)
{
	*n = sizeof(routes) / sizeof(routes[0]);
	return routes;
}

/* Matches path against pattern, copying {x} segments into call->param. */
static bool match(const char *pattern, const char *path, struct ctl_call *call)
{
	int np = 0;
	const char *p = pattern, *s = path;
	while (*p && *s) {
		if (*p == '{') {
			const char *end = strchr(s, '/');
			size_t len = end ? (size_t)(end - s) : strlen(s);
			if (len == 0 || len > STORE_MAX_ID || np >= CTL_MAX_PARAMS)
				return false;
			memcpy(call->parambuf[np], s, len);
			call->parambuf[np][len] = 0;
			call->param[np] = call->parambuf[np];
			np++;
			s += len;
			p = strchr(p, '}') + 1;
			continue;
		}
		if (*p != *s)
			return false;
		p++;
		s++;
	}
	return *p == 0 && *s == 0;
}

static void idem_id(const struct ctl_token *t, const char *key, char out[STORE_MAX_ID + 1])
{
	char h[CTL_HASH_HEX + 1];
	auth_hash_hex(key, strlen(key), h);
	snprintf(out, STORE_MAX_ID + 1, "%s.%s", t->id, h);
}

/* SL_OK: answered from the saved copy; SL_ENOTFOUND: go on; other: answered. */
static enum sl_err idem_replay(struct ctl_call *call, const char *key)
{
	struct ctl *c = call->ctl;
	char id[STORE_MAX_ID + 1], *row = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	idem_id(call->tok, key, id);
	enum sl_err e = store_get(c->store, STORE_IDEMPOTENCY, id, &row, &d);
	if (e == SL_ENOTFOUND)
		return e;
	if (e) {
		ctl_answer_diag(call, e, &d);
		return e;
	}
	json_t *o = json_loads(row, 0, NULL);
	free(row);
	const char *path = json_string_value(json_object_get(o, "path"));
	const char *body = json_string_value(json_object_get(o, "body"));
	if (!path || !body) {
		json_decref(o);
		ctl_answer_error(call, SL_EIO, "stored idempotent answer is malformed", NULL);
		return SL_EIO;
	}
	if (strcmp(path, http_request_path(call->req))) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "Idempotency-Key was first used for POST %.200s", path);
		ctl_answer_error(call, SL_ECONFLICT, msg, "use a new key for a new request");
		json_decref(o);
		return SL_ECONFLICT;
	}
	char *copy = strdup(body);
	int status = (int)json_integer_value(json_object_get(o, "status"));
	json_decref(o);
	if (!copy) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return SL_ENOMEM;
	}
	ctl_answer(call, status, "application/json", copy, strlen(copy));
	return SL_OK;
}

/* Secrets (a new token, a node credential) are shown once and stored only
 * hashed, so the saved copy of an answer that carries one keeps everything
 * but the secret: a replay says so instead of the disk holding it in clear.
 * NULL when the answer holds no secret; else a malloc'd JSON text. */
static char *idem_redact(const struct ctl_route *r, const char *body, size_t len)
{
	static const char *const fields[] = {"token", "credential"};
	if (!body || (strcmp(r->label, "token_create") && strcmp(r->label, "agent_token_create") &&
		      strcmp(r->label, "agent_register")))
		return NULL;
	json_t *o = json_loadb(body, len, 0, NULL);
	bool changed = false;
	for (size_t i = 0; o && i < sizeof(fields) / sizeof(fields[0]); i++)
		if (json_is_string(json_object_get(o, fields[i]))) {
			json_object_set_new(o, fields[i], json_null());
			changed = true;
		}
	if (changed)
		json_object_set_new(o, "secret_redacted",
				    json_string("a secret is shown once; this is the saved copy of the "
						"first answer, without it"));
	char *text = changed ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}

static void idem_save(struct ctl_call *call, const char *key)
{
	char id[STORE_MAX_ID + 1];
	idem_id(call->tok, key, id);
	char *redacted = idem_redact(call->route, call->answer_body, call->answer_len);
	json_t *o = json_pack("{s:s, s:s, s:i, s:s%, s:o}", "token", call->tok->id, "path",
			      http_request_path(call->req), "status", call->status, "body",
			      redacted ? redacted : call->answer_body,
			      redacted ? strlen(redacted) : call->answer_len, "at",
			      ctl_time_json(call->ctl->now_ns));
	free(redacted);
	ctl_put(call->ctl, STORE_IDEMPOTENCY, id, NULL, o);
}

static bool parse_body(struct ctl_call *call)
{
	size_t len;
	const char *body = http_request_body(call->req, &len);
	struct sl_diag d;
	json_error_t je;
	sl_diag_clear(&d);
	if (!body || len == 0) {
		call->body = json_object();
		return call->body != NULL;
	}
	if (json_check_limits(body, len, JSON_MAX_DEPTH, &d)) {
		ctl_answer_diag(call, SL_ELIMIT, &d);
		return false;
	}
	call->body = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!call->body) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "request body is not valid JSON: %s at line %d column %d",
			 je.text, je.line, je.column);
		ctl_answer_error(call, SL_EPARSE, msg, "send a JSON object");
		return false;
	}
	if (!json_is_object(call->body)) {
		ctl_answer_error(call, SL_EINVAL, "request body must be a JSON object", NULL);
		return false;
	}
	return true;
}

void ctl_dispatch(struct ctl *c, struct http_request *req)
{
	struct ctl_call call;
	const char *method = http_request_method(req), *path = http_request_path(req);
	bool path_known = false;
	memset(&call, 0, sizeof(call));
	call.ctl = c;
	call.req = req;
	if (console_serve(c, req))
		return; /* the console's files (console_static.c) */
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (!match(routes[i].pattern, path, &call))
			continue;
		path_known = true;
		if (!strcmp(routes[i].method, method)) {
			call.route = &routes[i];
			break;
		}
	}
	if (!call.route) {
		http_request_set_route(req, path_known ? "method_not_allowed" : "not_found");
		if (path_known)
			ctl_answer_error(&call, SL_EMETHOD, NULL, NULL);
		else
			ctl_answer_error(&call, SL_ENOTFOUND, "no such API path",
					 "docs/openapi.yaml lists the paths");
		return;
	}
	http_request_set_route(req, call.route->label);
	if (call.route->auth) {
		/* A bearer token wins; without one, a session cookie (people.h). */
		const char *authz = http_request_header(req, "Authorization");
		int by_cookie = authz ? 0 : people_auth_cookie(&call);
		if (by_cookie < 0)
			return; /* answered: an ended session, or no CSRF token */
		if (!by_cookie && !(call.tok = auth_lookup(c, authz))) {
			ctl_answer_error(&call, SL_EUNAUTH,
					 authz ? "the bearer token is unknown or revoked"
					       : "this API needs a bearer token or a session cookie",
					 "send 'Authorization: Bearer sl_...', or sign in (POST "
					 "/v1/sessions)");
			return;
		}
		if (!by_cookie) {
			call.tok_copy = *call.tok; /* see struct ctl_call */
			call.tok = &call.tok_copy;
		} /* else call.tok is &call.tok_copy already */
		if (!(call.route->roles & CTL_ROLE_BIT(call.tok->role))) {
			char msg[SL_DIAG_MSG];
			snprintf(msg, sizeof(msg), "role %s may not %s %s", ctl_role_name(call.tok->role),
				 method, call.route->pattern);
			ctl_answer_error(&call, SL_EFORBIDDEN, msg, NULL);
			return;
		}
	}
	if (c->fatal) {
		ctl_answer_error(&call, SL_EIO, "the controller is stopping", NULL);
		return;
	}
	const char *key = NULL;
	if (!strcmp(method, "POST") && call.tok)
		key = http_request_header(req, "Idempotency-Key");
	if (key) {
		size_t kl = strlen(key);
		if (kl == 0 || kl > CTL_IDEM_KEY_MAX) {
			char msg[SL_DIAG_MSG];
			snprintf(msg, sizeof(msg), "Idempotency-Key must be 1..%d characters, got %zu",
				 CTL_IDEM_KEY_MAX, kl);
			ctl_answer_error(&call, kl ? SL_ELIMIT : SL_EINVAL, msg, NULL);
			return;
		}
		if (idem_replay(&call, key) != SL_ENOTFOUND)
			return;
	}
	if (call.route->json_body && !parse_body(&call)) {
		json_decref(call.body);
		if (!call.answered)
			ctl_answer_error(&call, SL_ENOMEM, NULL, NULL);
		return;
	}
	call.route->fn(&call);
	json_decref(call.body);
	if (!call.answered) {
		sl_log_error("handler did not answer", "route=%s", call.route->label);
		ctl_answer_error(&call, SL_EIO, "internal error: no answer", NULL);
	}
	if (key && call.status >= 200 && call.status < 300 && call.answer_body)
		idem_save(&call, key);
}

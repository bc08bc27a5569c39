/* h_tokens.c - tokens: create (the secret is shown once), list, revoke.
 *
 * Who may mint what: admin any role; operator any role but admin;
 * tenant-admin only tenant or tenant-admin tokens of its own tenant. Tenant
 * roles need an existing tenant; provider roles take none. A revoked token
 * stays listed (with revoked_at) so audits can tell who held what. */
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "ctl_int.h"
#include "log.h"

void h_token_create(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {
		{"role", FT_STRING, true}, {"tenant", FT_STRING, false}, {"user", FT_STRING, false},
		{"expires_in_s", FT_INT, false}};
	struct ctl *c = call->ctl;
	const struct ctl_token *me = call->tok;
	char msg[SL_DIAG_MSG];
	bool bad = false;
	if (!ctl_check_fields(call, call->body, fields, 4, "a token request"))
		return;
	const json_t *exp = json_object_get(call->body, "expires_in_s");
	json_int_t exp_s = exp ? json_integer_value(exp) : 0;
	if (exp && (exp_s < 1 || exp_s > CTL_TOKEN_EXPIRES_MAX_S)) {
		snprintf(msg, sizeof(msg), "field 'expires_in_s' must be 1..%lld seconds",
			 (long long)CTL_TOKEN_EXPIRES_MAX_S);
		ctl_answer_error(call, SL_EINVAL, msg, "e.g. 2592000 for 30 days");
		return;
	}
	const char *rname = json_string_value(json_object_get(call->body, "role"));
	const char *tenant = ctl_str_field(call, call->body, "tenant", CTL_NAME_MAX, &bad);
	const char *user = bad ? NULL : ctl_str_field(call, call->body, "user", CTL_USER_MAX, &bad);
	if (bad)
		return;
	int role = ctl_role_parse(rname);
	if (role < 0) {
		snprintf(msg, sizeof(msg), "unknown role '%.64s'", rname);
		ctl_answer_error(call, SL_EINVAL, msg,
				 "roles: admin, operator, tenant-admin, tenant, auditor, agent");
		return;
	}
	if (me->role == CTL_ROLE_TENANT_ADMIN && !tenant)
		tenant = me->tenant;
	if (ctl_role_is_tenant((enum ctl_role)role) && !tenant) {
		snprintf(msg, sizeof(msg), "role %s needs a tenant", rname);
		ctl_answer_error(call, SL_EINVAL, msg, "add \"tenant\": \"NAME\"");
		return;
	}
	if (!ctl_role_is_tenant((enum ctl_role)role) && tenant) {
		snprintf(msg, sizeof(msg), "role %s belongs to the provider and takes no tenant", rname);
		ctl_answer_error(call, me->role == CTL_ROLE_TENANT_ADMIN ? SL_EFORBIDDEN : SL_EINVAL,
				 msg, NULL);
		return;
	}
	if ((me->role == CTL_ROLE_OPERATOR && role == CTL_ROLE_ADMIN) ||
	    (me->role == CTL_ROLE_TENANT_ADMIN && !ctl_role_is_tenant((enum ctl_role)role))) {
		snprintf(msg, sizeof(msg), "role %s may not create %s tokens", ctl_role_name(me->role),
			 rname);
		ctl_answer_error(call, SL_EFORBIDDEN, msg, NULL);
		return;
	}
	if (tenant && (!ctl_tenant_find(c, tenant) ||
		       (me->role == CTL_ROLE_TENANT_ADMIN && strcmp(tenant, me->tenant)))) {
		char hint[SL_DIAG_HINT];
		snprintf(msg, sizeof(msg), "no tenant called '%.64s'", tenant);
		snprintf(hint, sizeof(hint), "create it with 'suanli tenant create %.64s'", tenant);
		ctl_answer_error(call, SL_ENOTFOUND, msg, hint);
		return;
	}
	struct ctl_token proto = {.role = (enum ctl_role)role}, t;
	char secret[64];
	snprintf(proto.tenant, sizeof(proto.tenant), "%s", tenant ? tenant : "");
	snprintf(proto.user, sizeof(proto.user), "%s", user ? user : "");
	proto.expires_ns = exp_s ? c->now_ns + (int64_t)exp_s * 1000000000 : 0;
	enum sl_err e = ctl_token_mint(c, &proto, &t, secret);
	if (e) {
		ctl_answer_error(call, e, NULL, NULL);
		return;
	}
	sl_log_info("token created", "token=%s role=%s tenant=%s user=%s by=%s", t.id, rname,
		    t.tenant, t.user, me->id);
	json_t *o = token_to_json(&t, false);
	json_object_set_new(o, "token", json_string(secret));
	sodium_memzero(secret, sizeof(secret));
	ctl_answer_json(call, 201, o);
}

/* Whether the caller may see (and, with write, revoke) token t. */
static bool token_in_scope(const struct ctl_call *call, const struct ctl_token *t, bool write)
{
	const struct ctl_token *me = call->tok;
	if (me->role == CTL_ROLE_TENANT_ADMIN)
		return ctl_role_is_tenant(t->role) && !strcmp(t->tenant, me->tenant);
	if (write && me->role == CTL_ROLE_OPERATOR)
		return t->role != CTL_ROLE_ADMIN;
	return true;
}

void h_token_list(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	json_t *a = json_array();
	for (int i = 0; a && i < c->auth.ntokens; i++)
		if (token_in_scope(call, &c->auth.tokens[i], false))
			json_array_append_new(a, token_to_json(&c->auth.tokens[i], false));
	ctl_answer_json(call, 200, a);
}

void h_token_revoke(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct ctl_token *t = ctl_token_find_id(c, call->param[0]);
	char msg[SL_DIAG_MSG];
	if (!t || (call->tok->role == CTL_ROLE_TENANT_ADMIN && !token_in_scope(call, t, true))) {
		snprintf(msg, sizeof(msg), "no token with id '%.64s'", call->param[0]);
		ctl_answer_error(call, SL_ENOTFOUND, msg, "'suanli token list' lists them");
		return;
	}
	if (!token_in_scope(call, t, true)) {
		snprintf(msg, sizeof(msg), "role %s may not revoke %s tokens",
			 ctl_role_name(call->tok->role), ctl_role_name(t->role));
		ctl_answer_error(call, SL_EFORBIDDEN, msg, NULL);
		return;
	}
	if (!t->revoked_ns) {
		t->revoked_ns = c->now_ns;
		ctl_put(c, STORE_TOKENS, t->id, t->tenant[0] ? t->tenant : NULL, token_to_json(t, true));
		sl_log_info("token revoked", "token=%s by=%s", t->id, call->tok->id);
	}
	ctl_answer_json(call, 200, token_to_json(t, false));
}

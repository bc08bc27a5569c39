/* users.c - people who sign in with a password: create, list, remove,
 * change a password (docs/console.md).
 *
 * Passwords are hashed with libsodium's crypto_pwhash_str (Argon2id) at
 * OPSLIMIT_INTERACTIVE / MEMLIMIT_INTERACTIVE (2 passes over 64 MiB, 0.1-0.4 s
 * on the build machine). Why not MODERATE (256 MiB, 2 s there): a sign-in
 * would take seconds and hold 256 MiB; INTERACTIVE is libsodium's choice for
 * interactive logins, and the sign-in rate limit (sessions.c) bounds how
 * many checks a guesser can make us run. Sign-ins are checked on a worker
 * thread (pw_worker.h); the hashes made here (user create, passwd: admins
 * only) run on the loop. The string form carries its own parameters, so
 * raising them later needs no migration.
 *
 * Who may create whom: admin and operator any user (roles tenant,
 * tenant-admin, operator, auditor); a tenant-admin only tenant and
 * tenant-admin users of its own tenant. A user's name is unique across
 * tenants (it is what people type to sign in). Removing a user ends its
 * sessions; changing a password ends every other session of that user. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ctl_int.h"
#include "log.h"
#include "people_int.h"

json_t *user_to_json(const struct ctl_user *u, bool store)
{
	json_t *o = json_pack("{s:s, s:o, s:s, s:o, s:o}", "name", u->name, "tenant",
			      u->tenant[0] ? json_string(u->tenant) : json_null(), "role",
			      ctl_role_name(u->role), "created_at", ctl_time_json(u->created_ns),
			      "password_changed_at", ctl_time_json(u->password_ns));
	if (o && store)
		json_object_set_new(o, "password_hash", json_string(u->hash));
	return o;
}

static enum sl_err user_from_json(const json_t *o, struct ctl_user *u, struct sl_diag *d)
{
	const char *name = json_string_value(json_object_get(o, "name"));
	const char *tenant = json_string_value(json_object_get(o, "tenant"));
	const char *hash = json_string_value(json_object_get(o, "password_hash"));
	int role = ctl_role_parse(json_string_value(json_object_get(o, "role")));
	memset(u, 0, sizeof(*u));
	if (!name || strlen(name) > CTL_NAME_MAX || (tenant && strlen(tenant) > CTL_NAME_MAX) ||
	    !hash || strlen(hash) >= sizeof(u->hash) || role < 0)
		return sl_diag_set(d, SL_EPARSE, "user record is malformed");
	snprintf(u->name, sizeof(u->name), "%s", name);
	snprintf(u->tenant, sizeof(u->tenant), "%s", tenant ? tenant : "");
	snprintf(u->hash, sizeof(u->hash), "%s", hash);
	u->role = (enum ctl_role)role;
	const char *t = json_string_value(json_object_get(o, "created_at"));
	if (t)
		(void)ctl_time_parse(t, &u->created_ns);
	t = json_string_value(json_object_get(o, "password_changed_at"));
	if (t)
		(void)ctl_time_parse(t, &u->password_ns);
	return SL_OK;
}

struct ctl_user *people_user_find(struct ctl *c, const char *name)
{
	struct ctl_people *p = c->people;
	json_t *v = p && name ? json_object_get(p->user_by_name, name) : NULL;
	return v ? &p->users[json_integer_value(v)] : NULL;
}

static enum sl_err user_add(struct ctl *c, const struct ctl_user *u)
{
	struct ctl_people *p = c->people;
	enum sl_err e = sl_grow(&p->users, &p->cap_users, p->nusers + 1, PEOPLE_MAX_USERS);
	if (e)
		return e;
	if (json_object_set_new(p->user_by_name, u->name, json_integer(p->nusers)))
		return SL_ENOMEM;
	p->users[p->nusers++] = *u;
	return SL_OK;
}

static void user_drop(struct ctl *c, struct ctl_user *u)
{
	struct ctl_people *p = c->people;
	int i = (int)(u - p->users);
	json_object_del(p->user_by_name, u->name);
	if (i != p->nusers - 1) {
		p->users[i] = p->users[p->nusers - 1];
		json_object_set_new(p->user_by_name, p->users[i].name, json_integer(i));
	}
	p->nusers--;
}

enum sl_err people_load_user(void *arg, const char *id, const char *tenant, const char *json)
{
	struct ctl *c = ((struct people_load *)arg)->c;
	struct sl_diag *d = ((struct people_load *)arg)->d;
	struct ctl_user u;
	(void)tenant;
	json_t *o = json_loads(json, 0, NULL);
	enum sl_err e = o ? user_from_json(o, &u, d) : sl_diag_set(d, SL_EPARSE, "user %s: not JSON", id);
	json_decref(o);
	return e ? e : user_add(c, &u);
}

bool people_hash_password(const char *pw, size_t len, char out[crypto_pwhash_STRBYTES])
{
	return crypto_pwhash_str(out, pw, len, crypto_pwhash_OPSLIMIT_INTERACTIVE,
				 crypto_pwhash_MEMLIMIT_INTERACTIVE) == 0;
}

/* The password field of body, checked; NULL (answered) when absent or out
 * of bounds. */
static const char *password_field(struct ctl_call *call, const char *name, size_t *len)
{
	const json_t *v = json_object_get(call->body, name);
	char msg[SL_DIAG_MSG];
	if (!json_is_string(v)) {
		snprintf(msg, sizeof(msg), "field '%s' is required", name);
		ctl_answer_error(call, SL_EINVAL, msg, "suanli user create --password-file FILE");
		return NULL;
	}
	*len = json_string_length(v);
	if (*len < PEOPLE_PASSWORD_MIN || *len > PEOPLE_PASSWORD_MAX ||
	    strlen(json_string_value(v)) != *len) {
		snprintf(msg, sizeof(msg), "field '%s' must be %d..%d bytes without NUL", name,
			 PEOPLE_PASSWORD_MIN, PEOPLE_PASSWORD_MAX);
		ctl_answer_error(call, SL_EINVAL, msg, "a passphrase of a few words is easy to type");
		return NULL;
	}
	return json_string_value(v);
}

static bool role_is_person(int role)
{
	return role == CTL_ROLE_TENANT || role == CTL_ROLE_TENANT_ADMIN ||
	       role == CTL_ROLE_OPERATOR || role == CTL_ROLE_AUDITOR;
}

void h_user_create(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {{"name", FT_STRING, true},
						  {"tenant", FT_STRING, false},
						  {"role", FT_STRING, false},
						  {"password", FT_STRING, true}};
	struct ctl *c = call->ctl;
	const struct ctl_token *me = call->tok;
	char msg[SL_DIAG_MSG];
	bool bad = false;
	size_t pwlen = 0;
	if (!ctl_check_fields(call, call->body, fields, 4, "a user"))
		return;
	const char *name = json_string_value(json_object_get(call->body, "name"));
	const char *rname = json_string_value(json_object_get(call->body, "role"));
	const char *tenant = ctl_str_field(call, call->body, "tenant", CTL_NAME_MAX, &bad);
	if (bad)
		return;
	if (!fleet_name_valid(name) || strlen(name) > CTL_NAME_MAX) {
		ctl_answer_error(call, SL_EINVAL, "field 'name' is not a valid user name",
				 "names are 1..63 characters of [A-Za-z0-9._-]");
		return;
	}
	int role = ctl_role_parse(rname ? rname : "tenant");
	if (!role_is_person(role)) {
		snprintf(msg, sizeof(msg), "a user's role is tenant, tenant-admin, operator or auditor, "
				      "not '%.64s'", rname);
		ctl_answer_error(call, SL_EINVAL, msg, "admin and agent are roles for tokens only");
		return;
	}
	if (me->role == CTL_ROLE_TENANT_ADMIN && !tenant)
		tenant = me->tenant;
	if (me->role == CTL_ROLE_TENANT_ADMIN &&
	    (!ctl_role_is_tenant((enum ctl_role)role) || strcmp(tenant, me->tenant))) {
		snprintf(msg, sizeof(msg), "a tenant-admin creates tenant and tenant-admin users of "
				      "its own tenant (%s) only", me->tenant);
		ctl_answer_error(call, SL_EFORBIDDEN, msg, NULL);
		return;
	}
	if (ctl_role_is_tenant((enum ctl_role)role) != (tenant != NULL)) {
		snprintf(msg, sizeof(msg), "role %s %s", ctl_role_name((enum ctl_role)role),
			 tenant ? "belongs to the provider and takes no tenant" : "needs a tenant");
		ctl_answer_error(call, SL_EINVAL, msg, tenant ? NULL : "add --tenant NAME");
		return;
	}
	if (tenant && !ctl_tenant_find(c, tenant)) {
		char hint[SL_DIAG_HINT];
		snprintf(msg, sizeof(msg), "no tenant called '%.64s'", tenant);
		snprintf(hint, sizeof(hint), "create it with 'suanli tenant create %.64s'", tenant);
		ctl_answer_error(call, SL_ENOTFOUND, msg, hint);
		return;
	}
	const char *pw = password_field(call, "password", &pwlen);
	if (!pw)
		return;
	if (people_user_find(c, name)) {
		snprintf(msg, sizeof(msg), "user '%s' already exists", name);
		ctl_answer_error(call, SL_EEXIST, msg, "'suanli user passwd' sets a new password");
		return;
	}
	struct ctl_user u;
	memset(&u, 0, sizeof(u));
	snprintf(u.name, sizeof(u.name), "%s", name);
	snprintf(u.tenant, sizeof(u.tenant), "%s", tenant ? tenant : "");
	u.role = (enum ctl_role)role;
	u.created_ns = u.password_ns = c->now_ns;
	if (!people_hash_password(pw, pwlen, u.hash) || user_add(c, &u)) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	ctl_put(c, STORE_USERS, u.name, u.tenant[0] ? u.tenant : NULL, user_to_json(&u, true));
	sl_log_info("user created", "user=%s role=%s tenant=%s by=%s", u.name,
		    ctl_role_name(u.role), u.tenant, me->id);
	ctl_answer_json(call, 201, user_to_json(&u, false));
}

/* Whether the caller may see (and, with write, change) user u. */
static bool user_in_scope(const struct ctl_call *call, const struct ctl_user *u)
{
	const struct ctl_token *me = call->tok;
	if (me->role == CTL_ROLE_TENANT_ADMIN)
		return ctl_role_is_tenant(u->role) && !strcmp(u->tenant, me->tenant);
	return me->role == CTL_ROLE_ADMIN || me->role == CTL_ROLE_OPERATOR ||
	       me->role == CTL_ROLE_AUDITOR;
}

void h_user_list(struct ctl_call *call)
{
	struct ctl_people *p = call->ctl->people;
	json_t *a = json_array();
	for (int i = 0; a && i < p->nusers; i++)
		if (user_in_scope(call, &p->users[i]))
			json_array_append_new(a, user_to_json(&p->users[i], false));
	ctl_answer_json(call, 200, a);
}

static struct ctl_user *user_param(struct ctl_call *call)
{
	struct ctl_user *u = people_user_find(call->ctl, call->param[0]);
	if (!u || !user_in_scope(call, u)) {
		char msg[SL_DIAG_MSG];
		snprintf(msg, sizeof(msg), "no user called '%.64s'", call->param[0]);
		ctl_answer_error(call, SL_ENOTFOUND, msg, "'suanli user list' lists them");
		return NULL;
	}
	return u;
}

void h_user_remove(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct ctl_user *u = user_param(call);
	if (!u)
		return;
	json_t *o = user_to_json(u, false);
	people_end_sessions(c, u->name, NULL);
	ctl_delete(c, STORE_USERS, u->name);
	sl_log_info("user removed", "user=%s by=%s", u->name, call->tok->id);
	user_drop(c, u);
	ctl_answer_json(call, 200, o);
}

void h_user_passwd(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {{"password", FT_STRING, true},
						  {"current_password", FT_STRING, false}};
	struct ctl *c = call->ctl;
	const struct ctl_token *me = call->tok;
	size_t len = 0, curlen = 0;
	if (!ctl_check_fields(call, call->body, fields, 2, "a new password"))
		return;
	const char *self = people_call_user(call);
	bool own = self && !strcmp(self, call->param[0]);
	bool manager = me->role == CTL_ROLE_ADMIN || me->role == CTL_ROLE_OPERATOR ||
		       me->role == CTL_ROLE_TENANT_ADMIN;
	struct ctl_user *u = own ? people_user_find(c, self) : manager ? user_param(call) : NULL;
	if (!u) {
		if (!manager && !call->answered)
			ctl_answer_error(call, SL_EFORBIDDEN, "only the user itself (signed in) or an "
							      "admin, operator or tenant-admin sets a password",
					 NULL);
		if (!call->answered)
			ctl_answer_error(call, SL_ENOTFOUND, "no such user", NULL);
		return;
	}
	if (own && !manager) {
		const char *cur = password_field(call, "current_password", &curlen);
		if (!cur)
			return;
		if (crypto_pwhash_str_verify(u->hash, cur, curlen) != 0) {
			ctl_answer_error(call, SL_EFORBIDDEN, "the current password is wrong", NULL);
			return;
		}
	}
	const char *pw = password_field(call, "password", &len);
	if (!pw)
		return;
	char hash[crypto_pwhash_STRBYTES];
	if (!people_hash_password(pw, len, hash)) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	memcpy(u->hash, hash, sizeof(hash));
	u->password_ns = c->now_ns;
	ctl_put(c, STORE_USERS, u->name, u->tenant[0] ? u->tenant : NULL, user_to_json(u, true));
	people_end_sessions(c, u->name, call->session[0] ? call->session : NULL);
	sl_log_info("password changed", "user=%s by=%s", u->name, me->id);
	ctl_answer_json(call, 200, user_to_json(u, false));
}

/* ssh_keys.c - each user's SSH public keys (POST/GET /v1/ssh-keys, DELETE
 * /v1/ssh-keys/NAME): what an instance puts in its containers'
 * authorized_keys. A key belongs to the token's user within its tenant;
 * nobody sees or uses another user's keys. Checked by ssh_pubkey_parse (type,
 * base64 body of that type) and shown with its SHA256 fingerprint, as
 * `ssh-keygen -lf KEY.pub` prints it. One store row per key; a removed
 * key's row stays as a tombstone ({"removed": true}). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "instances_int.h"
#include "log.h"

static json_t *key_json(const struct ssh_key_rec *k, bool store, bool removed)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "name", k->name, "tenant",
			      k->tenant, "user", k->user, "type", k->type, "fingerprint",
			      k->fingerprint, "key", k->line ? k->line : "", "created_at",
			      ctl_time_json(k->created_ns));
	if (o && store)
		json_object_set_new(o, "removed", json_boolean(removed));
	return o;
}

static const char *str_or(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

struct load_arg {
	struct ctl *c;
	struct sl_diag *d;
};

static enum sl_err load_key(void *arg, const char *id, const char *tenant, const char *text)
{
	struct load_arg *a = arg;
	struct ctl_instances *is = a->c->instances;
	(void)tenant;
	json_t *o = json_loads(text, 0, NULL);
	if (!o)
		return sl_diag_set(a->d, SL_EPARSE, "stored SSH key %.64s is not JSON", id);
	if (json_is_true(json_object_get(o, "removed"))) {
		json_decref(o);
		return SL_OK;
	}
	const char *line = json_string_value(json_object_get(o, "key"));
	struct ssh_pubkey pk;
	struct sl_diag kd;
	sl_diag_clear(&kd);
	if (!line || ssh_pubkey_parse(line, &pk, NULL, 0, &kd) ||
	    sl_grow(&is->keys, &is->capkeys, is->nkeys + 1, INST_MAX_KEYS_ALL)) {
		json_decref(o);
		return sl_diag_set(a->d, SL_EPARSE, "stored SSH key %.64s is malformed", id);
	}
	struct ssh_key_rec *k = &is->keys[is->nkeys];
	memset(k, 0, sizeof(*k));
	snprintf(k->tenant, sizeof(k->tenant), "%s", str_or(o, "tenant"));
	snprintf(k->user, sizeof(k->user), "%s", str_or(o, "user"));
	snprintf(k->name, sizeof(k->name), "%s", str_or(o, "name"));
	snprintf(k->type, sizeof(k->type), "%s", pk.type);
	snprintf(k->fingerprint, sizeof(k->fingerprint), "%s", pk.fingerprint);
	k->line = strdup(line);
	const char *at = json_string_value(json_object_get(o, "created_at"));
	if (!at || !ctl_time_parse(at, &k->created_ns))
		k->created_ns = 0;
	json_decref(o);
	if (!k->line)
		return sl_diag_set(a->d, SL_ENOMEM, "out of memory");
	is->nkeys++;
	return SL_OK;
}

enum sl_err ssh_keys_load(struct ctl *c, struct sl_diag *d)
{
	struct load_arg a = {c, d};
	return store_scan(c->store, STORE_SSH_KEYS, load_key, &a, d);
}

void ssh_keys_free(struct ctl *c)
{
	struct ctl_instances *is = c->instances;
	for (int i = 0; i < is->nkeys; i++)
		free(is->keys[i].line);
	free(is->keys);
	is->keys = NULL;
	is->nkeys = 0;
}

static int key_index(struct ctl *c, const char *tenant, const char *user, const char *name)
{
	struct ctl_instances *is = c->instances;
	for (int i = 0; i < is->nkeys; i++) {
		const struct ssh_key_rec *k = &is->keys[i];
		if (!strcmp(k->tenant, tenant) && !strcmp(k->user, user) && !strcmp(k->name, name))
			return i;
	}
	return -1;
}

const struct ssh_key_rec *ssh_key_find(struct ctl *c, const char *tenant, const char *user,
				       const char *name)
{
	int i = key_index(c, tenant, user, name);
	return i >= 0 ? &c->instances->keys[i] : NULL;
}

json_t *ssh_keys_of(struct ctl *c, const char *tenant, const char *user)
{
	struct ctl_instances *is = c->instances;
	json_t *a = json_array();
	for (int i = 0; a && i < is->nkeys; i++)
		if (!strcmp(is->keys[i].tenant, tenant) && !strcmp(is->keys[i].user, user))
			json_array_append_new(a, json_string(is->keys[i].line));
	return a;
}

/* One row per (tenant, user, name): its id is derived from them, so the
 * tombstone of a removed key replaces the key's own row. */
static void key_row_id(struct ctl *c, const struct ssh_key_rec *k, char *id, size_t n)
{
	(void)c;
	unsigned long h = 5381;
	for (const char *p = k->tenant; *p; p++)
		h = h * 33 + (unsigned char)*p;
	h = h * 33 + '/';
	for (const char *p = k->user; *p; p++)
		h = h * 33 + (unsigned char)*p;
	h = h * 33 + '/';
	for (const char *p = k->name; *p; p++)
		h = h * 33 + (unsigned char)*p;
	char safe[2 * CTL_NAME_MAX + 2];
	size_t j = 0;
	for (const char *p = k->tenant; *p && j + 1 < sizeof(safe); p++)
		safe[j++] = *p;
	safe[j] = 0;
	snprintf(id, n, "k-%s-%s-%lx", safe[0] ? safe : "provider", k->name, h);
}

static const char *caller_tenant(const struct ctl_call *call)
{
	return call->tok->tenant;
}

void h_ssh_key_add(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {{"name", FT_STRING, true}, {"key", FT_STRING, true}};
	struct ctl *c = call->ctl;
	struct ctl_instances *is = c->instances;
	char msg[SL_DIAG_MSG], line[SSH_KEY_LINE_MAX + 1];
	if (!ctl_check_fields(call, call->body, fields, 2, "an SSH key"))
		return;
	const char *name = json_string_value(json_object_get(call->body, "name"));
	const char *text = json_string_value(json_object_get(call->body, "key"));
	if (!fleet_name_valid(name) || strlen(name) > INST_KEY_NAME_MAX) {
		snprintf(msg, sizeof(msg), "SSH key name '%.64s' is not valid", name);
		ctl_answer_error(call, SL_EINVAL, msg, "names are 1..63 characters of [A-Za-z0-9._-]");
		return;
	}
	struct ssh_pubkey pk;
	struct sl_diag d;
	sl_diag_clear(&d);
	enum sl_err e = ssh_pubkey_parse(text, &pk, line, sizeof(line), &d);
	if (e) {
		ctl_answer_diag(call, e, &d);
		return;
	}
	const char *tenant = caller_tenant(call), *user = call->tok->user;
	if (key_index(c, tenant, user, name) >= 0) {
		snprintf(msg, sizeof(msg), "you already have an SSH key called '%s'", name);
		ctl_answer_error(call, SL_EEXIST, msg, "remove it first (suanli ssh-key remove NAME) or pick another name");
		return;
	}
	int mine = 0;
	for (int i = 0; i < is->nkeys; i++)
		mine += !strcmp(is->keys[i].tenant, tenant) && !strcmp(is->keys[i].user, user);
	if (mine >= INST_MAX_KEYS) {
		snprintf(msg, sizeof(msg), "you have %d SSH keys, the most a user may have", mine);
		ctl_answer_error(call, SL_ELIMIT, msg, "remove one first");
		return;
	}
	if (sl_grow(&is->keys, &is->capkeys, is->nkeys + 1, INST_MAX_KEYS_ALL)) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	struct ssh_key_rec *k = &is->keys[is->nkeys];
	memset(k, 0, sizeof(*k));
	snprintf(k->tenant, sizeof(k->tenant), "%s", tenant);
	snprintf(k->user, sizeof(k->user), "%s", user);
	snprintf(k->name, sizeof(k->name), "%s", name);
	snprintf(k->type, sizeof(k->type), "%s", pk.type);
	snprintf(k->fingerprint, sizeof(k->fingerprint), "%s", pk.fingerprint);
	k->created_ns = c->now_ns;
	if (!(k->line = strdup(line))) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	is->nkeys++;
	char id[STORE_MAX_ID + 1];
	key_row_id(c, k, id, sizeof(id));
	ctl_put(c, STORE_SSH_KEYS, id, tenant[0] ? tenant : NULL, key_json(k, true, false));
	sl_log_info("ssh key added", "tenant=%s user=%s name=%s fingerprint=%s", tenant, user, name,
		    k->fingerprint);
	json_t *o = key_json(k, false, false);
	ctl_answer_json(call, 201, o);
}

void h_ssh_key_list(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct ctl_instances *is = c->instances;
	json_t *a = json_array();
	for (int i = 0; a && i < is->nkeys; i++)
		if (!strcmp(is->keys[i].tenant, caller_tenant(call)) &&
		    !strcmp(is->keys[i].user, call->tok->user))
			json_array_append_new(a, key_json(&is->keys[i], false, false));
	if (!a) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	ctl_answer_json(call, 200, a);
}

void h_ssh_key_remove(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	struct ctl_instances *is = c->instances;
	char msg[SL_DIAG_MSG];
	int i = key_index(c, caller_tenant(call), call->tok->user, call->param[0]);
	if (i < 0) {
		snprintf(msg, sizeof(msg), "you have no SSH key called '%.64s'", call->param[0]);
		ctl_answer_error(call, SL_ENOTFOUND, msg, "'suanli ssh-key list' lists yours");
		return;
	}
	struct ssh_key_rec k = is->keys[i];
	char id[STORE_MAX_ID + 1];
	key_row_id(c, &k, id, sizeof(id));
	json_t *o = key_json(&k, false, false);
	ctl_put(c, STORE_SSH_KEYS, id, k.tenant[0] ? k.tenant : NULL, key_json(&k, true, true));
	free(is->keys[i].line);
	is->keys[i] = is->keys[--is->nkeys];
	json_object_set_new(o, "removed", json_true());
	json_object_set_new(o, "note", json_string("instances made with it keep it until they are "
						   "released; new instances no longer get it"));
	ctl_answer_json(call, 200, o);
}

/* work_spec.c - one work item of the controller's answer, parsed strictly.
 *
 * The item decides a directory name (job), a command line and an environment
 * on this server, so every field is checked against a named bound and a
 * narrow alphabet before anything is allocated for real use; a bad item is
 * an error naming the field, never a truncation. */
#include "work.h"

#include "lease_net.h"

#include <stdlib.h>
#include <string.h>

static bool id_ok(const char *s, size_t len)
{
	if (len == 0 || len >= WORK_ID_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
			return false;
	}
	return true;
}

/* An instance id as the controller makes them: "in-" and 1 to 19 digits. */
static bool instance_ok(const char *s, size_t len)
{
	if (len < 4 || len > 22 || strncmp(s, "in-", 3) != 0)
		return false;
	for (size_t i = 3; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static bool env_key_ok(const char *s, size_t len)
{
	if (len == 0 || len >= WORK_KEY_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			  (i > 0 && c >= '0' && c <= '9');
		if (!ok)
			return false;
	}
	return true;
}

/* A JSON string without NUL bytes and shorter than max; NULL otherwise. */
static const char *str_field(const json_t *v, size_t max, size_t *len)
{
	const char *s = json_string_value(v);
	if (!s)
		return NULL;
	*len = json_string_length(v);
	if (*len >= max || strlen(s) != *len)
		return NULL;
	return s;
}

static enum sl_err bad(struct sl_diag *d, const char *field, const char *want)
{
	sl_diag_hint(d, "the controller sent a work item the agent cannot run; "
			"check the controller's version");
	return sl_diag_set(d, SL_EINVAL, "work item: \"%s\" must be %s", field, want);
}

static int64_t int_field(const json_t *v, int64_t lo, int64_t hi, bool *ok)
{
	*ok = json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi;
	return *ok ? json_integer_value(v) : 0;
}

void work_spec_release(struct work_spec *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->argv && i < s->argc; i++)
		free(s->argv[i]);
	for (size_t i = 0; s->env && i < s->nenv; i++)
		free(s->env[i]);
	free(s->argv);
	free(s->env);
	free(s->net_peers);
	memset(s, 0, sizeof(*s));
}

static enum sl_err parse_argv(const json_t *a, struct work_spec *out, size_t *text,
			      struct sl_diag *d)
{
	size_t n = json_array_size(a), len;
	if (!json_is_array(a) || n == 0 || n > WORK_ARGV_MAX)
		return bad(d, "argv", "an array of 1 to 256 strings");
	out->argv = calloc(n + 1, sizeof(char *));
	if (!out->argv)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const char *s = str_field(json_array_get(a, i), WORK_STR_MAX, &len);
		if (!s || (i == 0 && len == 0))
			return bad(d, "argv", "strings shorter than 64 KiB without NUL "
					      "(the first not empty)");
		*text += len + 1;
		if (!(out->argv[i] = strdup(s)))
			return sl_diag_set(d, SL_ENOMEM, "out of memory");
		out->argc = i + 1;
	}
	return SL_OK;
}

static enum sl_err parse_env(const json_t *o, struct work_spec *out, size_t *text,
			     struct sl_diag *d)
{
	const char *key;
	json_t *v;
	size_t n = json_object_size(o), vlen;

	if (!o)
		return SL_OK;
	if (!json_is_object(o) || n > WORK_ENV_MAX)
		return bad(d, "env", "an object of at most 256 string values");
	out->env = calloc(n + 1, sizeof(char *));
	if (!out->env)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	json_object_foreach((json_t *)o, key, v) {
		size_t klen = strlen(key);
		const char *s = str_field(v, WORK_STR_MAX, &vlen);
		if (!env_key_ok(key, klen) || !s)
			return bad(d, "env", "an object whose keys are names ([A-Za-z_][A-Za-z0-9_]*, "
					     "under 256 bytes) and whose values are strings shorter "
					     "than 64 KiB");
		*text += klen + vlen + 2;
		char *kv = malloc(klen + vlen + 2);
		if (!kv)
			return sl_diag_set(d, SL_ENOMEM, "out of memory");
		memcpy(kv, key, klen);
		kv[klen] = '=';
		memcpy(kv + klen + 1, s, vlen + 1);
		out->env[out->nenv++] = kv;
	}
	return SL_OK;
}

static enum sl_err parse_gpus_nics(const json_t *o, struct work_spec *out, struct sl_diag *d)
{
	const json_t *g = json_object_get(o, "gpus"), *n = json_object_get(o, "nics");
	size_t i, len;
	json_t *v;
	bool ok;

	if (g && (!json_is_array(g) || json_array_size(g) > TOPO_MAX_GPUS))
		return bad(d, "gpus", "an array of at most 16 GPU indices");
	json_array_foreach(g, i, v) {
		int64_t x = int_field(v, 0, TOPO_MAX_GPUS - 1, &ok);
		if (!ok || (out->gpus & (1u << x)))
			return bad(d, "gpus", "distinct GPU indices 0..15");
		out->gpus |= (gpumask_t)1u << x;
	}
	if (n && (!json_is_array(n) || json_array_size(n) > TOPO_MAX_NICS))
		return bad(d, "nics", "an array of at most 16 NIC names");
	json_array_foreach(n, i, v) {
		const char *s = str_field(v, WORK_NIC_MAX, &len);
		if (!s || !id_ok(s, len))
			return bad(d, "nics", "NIC names ([A-Za-z0-9][A-Za-z0-9._-]*, under 64 bytes)");
		memcpy(out->nics[out->nnics++], s, len + 1);
	}
	return SL_OK;
}

/* "net": {"addr": "A.B.C.D", "peers": ["A.B.C.D/N", ...]} (fabric.h). */
static enum sl_err parse_net(const json_t *n, struct work_spec *out, struct sl_diag *d)
{
	static const char want[] = "{\"addr\": \"A.B.C.D\", \"peers\": [\"A.B.C.D/N\", ...]}";
	const json_t *peers = json_object_get(n, "peers"), *v;
	const char *a = json_string_value(json_object_get(n, "addr"));
	uint32_t ip;
	size_t i, len = 1;
	if (!json_is_object(n) || !a || strlen(a) >= sizeof(out->net_addr) || !lease_ip_parse(a, &ip) ||
	    !json_is_array(peers) || json_array_size(peers) > WORK_PEERS_MAX)
		return bad(d, "net", want);
	json_array_foreach(peers, i, v) {
		struct lease_pool p;
		const char *s = json_string_value(v);
		if (!s || lease_pool_parse(s, &p, NULL) != SL_OK)
			return bad(d, "net.peers", "an array of A.B.C.D/N");
		len += strlen(s) + 1;
	}
	memcpy(out->net_addr, a, strlen(a) + 1);
	out->net_peers = calloc(1, len);
	if (!out->net_peers)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	size_t off = 0;
	json_array_foreach(peers, i, v) {
		const char *s = json_string_value(v);
		size_t sl = strlen(s);
		if (i)
			out->net_peers[off++] = ',';
		memcpy(out->net_peers + off, s, sl);
		off += sl;
	}
	out->net_peers[off] = '\0';
	return SL_OK;
}

static enum sl_err parse(const json_t *o, struct work_spec *out, struct sl_diag *d)
{
	const char *s;
	json_t *v;
	size_t len, text = 0;
	bool ok;
	enum sl_err e;

	if (!json_is_object(o))
		return bad(d, "work[]", "an object");
	/* unknown fields are allowed: newer controllers may add some */
	s = str_field(json_object_get(o, "job"), WORK_ID_MAX, &len);
	if (!s || !id_ok(s, len))
		return bad(d, "job", "an id ([A-Za-z0-9][A-Za-z0-9._-]*, under 64 bytes)");
	memcpy(out->job, s, len + 1);
	out->rank = (int)int_field(json_object_get(o, "rank"), 0, WORK_RANK_MAX, &ok);
	if (!ok)
		return bad(d, "rank", "an integer 0..65535");
	s = str_field(json_object_get(o, "lease"), WORK_ID_MAX, &len);
	if (!s || !id_ok(s, len))
		return bad(d, "lease", "an id ([A-Za-z0-9][A-Za-z0-9._-]*, under 64 bytes)");
	memcpy(out->lease, s, len + 1);
	if ((v = json_object_get(o, "tenant"))) {
		s = str_field(v, WORK_ID_MAX, &len);
		if (!s || !id_ok(s, len))
			return bad(d, "tenant", "a name ([A-Za-z0-9][A-Za-z0-9._-]*, under 64 bytes)");
		memcpy(out->tenant, s, len + 1);
	}
	if ((v = json_object_get(o, "image"))) {
		s = str_field(v, WORK_IMAGE_MAX, &len);
		for (size_t i = 0; s && i < len; i++)
			if (s[i] <= ' ' || s[i] > '~')
				s = NULL;
		if (!s || len == 0)
			return bad(d, "image", "an image reference (printable, no spaces, under 512 "
					       "bytes)");
		memcpy(out->image, s, len + 1);
	}
	if ((v = json_object_get(o, "instance"))) {
		s = str_field(v, WORK_ID_MAX, &len);
		if (!s || !instance_ok(s, len))
			return bad(d, "instance", "an instance id (\"in-\" and 1 to 19 digits)");
		memcpy(out->instance, s, len + 1);
	}
	out->epoch = int_field(json_object_get(o, "epoch"), 0, INT64_MAX, &ok);
	if (!ok)
		return bad(d, "epoch", "a non-negative integer");
	s = json_string_value(json_object_get(o, "state"));
	if (!s || (strcmp(s, "run") != 0 && strcmp(s, "stop") != 0))
		return bad(d, "state", "\"run\" or \"stop\"");
	out->run = strcmp(s, "run") == 0;
	v = json_object_get(o, "restart");
	s = v ? json_string_value(v) : "never";
	if (s && strcmp(s, "never") == 0)
		out->restart = WORK_RESTART_NEVER;
	else if (s && strcmp(s, "on-failure") == 0)
		out->restart = WORK_RESTART_ON_FAILURE;
	else if (s && strcmp(s, "always") == 0)
		out->restart = WORK_RESTART_ALWAYS;
	else
		return bad(d, "restart", "\"never\", \"on-failure\" or \"always\"");
	v = json_object_get(o, "stop_grace_s");
	out->stop_grace_s = -1; /* the supervisor's default */
	if (v) {
		out->stop_grace_s = (int)int_field(v, 0, WORK_GRACE_MAX_S, &ok);
		if (!ok)
			return bad(d, "stop_grace_s", "an integer 0..3600");
	}
	if ((e = parse_argv(json_object_get(o, "argv"), out, &text, d)) != SL_OK ||
	    (e = parse_env(json_object_get(o, "env"), out, &text, d)) != SL_OK ||
	    (e = parse_gpus_nics(o, out, d)) != SL_OK ||
	    ((v = json_object_get(o, "net")) && (e = parse_net(v, out, d)) != SL_OK))
		return e;
	if (text > WORK_TEXT_MAX)
		return sl_diag_set(d, SL_ELIMIT, "work item %s rank %d: argv and env hold more "
						 "than %u bytes", out->job, out->rank, WORK_TEXT_MAX);
	return SL_OK;
}

enum sl_err work_spec_from_json(const json_t *o, struct work_spec *out, struct sl_diag *d)
{
	memset(out, 0, sizeof(*out));
	enum sl_err e = parse(o, out, d);
	if (e != SL_OK)
		work_spec_release(out);
	return e;
}

static json_t *net_json(const struct work_spec *s)
{
	json_t *peers = json_array();
	for (const char *p = s->net_peers; peers && p && *p;) {
		size_t len = strcspn(p, ",");
		if (json_array_append_new(peers, json_stringn(p, len)) != 0) {
			json_decref(peers);
			return NULL;
		}
		p += len + (p[len] == ',');
	}
	return peers ? json_pack("{s:s, s:o}", "addr", s->net_addr, "peers", peers) : NULL;
}

json_t *work_spec_to_json(const struct work_spec *s)
{
	static const char *const restart[] = {"never", "on-failure", "always"};
	json_t *o = json_object(), *argv = json_array(), *env = json_object(),
	       *gpus = json_array(), *nics = json_array();
	int bad_alloc = !o || !argv || !env || !gpus || !nics;

	for (size_t i = 0; !bad_alloc && i < s->argc; i++)
		bad_alloc = json_array_append_new(argv, json_string(s->argv[i])) != 0;
	for (size_t i = 0; !bad_alloc && i < s->nenv; i++) {
		const char *eq = strchr(s->env[i], '=');
		char key[WORK_KEY_MAX];
		size_t kl = eq ? (size_t)(eq - s->env[i]) : 0;
		if (!eq || kl >= sizeof(key)) {
			bad_alloc = 1;
			break;
		}
		memcpy(key, s->env[i], kl);
		key[kl] = '\0';
		bad_alloc = json_object_set_new(env, key, json_string(eq + 1)) != 0;
	}
	for (int i = 0; !bad_alloc && i < TOPO_MAX_GPUS; i++)
		if (s->gpus & (1u << i))
			bad_alloc = json_array_append_new(gpus, json_integer(i)) != 0;
	for (int i = 0; !bad_alloc && i < s->nnics; i++)
		bad_alloc = json_array_append_new(nics, json_string(s->nics[i])) != 0;
	if (bad_alloc) {
		json_decref(o);
		json_decref(argv);
		json_decref(env);
		json_decref(gpus);
		json_decref(nics);
		return NULL;
	}
	if (json_object_set_new(o, "job", json_string(s->job)) ||
	    json_object_set_new(o, "rank", json_integer(s->rank)) ||
	    json_object_set_new(o, "lease", json_string(s->lease)) ||
	    json_object_set_new(o, "epoch", json_integer(s->epoch)) ||
	    json_object_set_new(o, "state", json_string(s->run ? "run" : "stop")) ||
	    json_object_set_new(o, "argv", argv) || json_object_set_new(o, "env", env) ||
	    json_object_set_new(o, "gpus", gpus) || json_object_set_new(o, "nics", nics) ||
	    json_object_set_new(o, "restart", json_string(restart[s->restart])) ||
	    json_object_set_new(o, "stop_grace_s", json_integer(s->stop_grace_s)) ||
	    (s->tenant[0] && json_object_set_new(o, "tenant", json_string(s->tenant))) ||
	    (s->image[0] && json_object_set_new(o, "image", json_string(s->image))) ||
	    (s->instance[0] && json_object_set_new(o, "instance", json_string(s->instance))) ||
	    (s->net_addr[0] && json_object_set_new(o, "net", net_json(s)))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

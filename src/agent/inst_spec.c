/* inst_spec.c - one item of the work answer's "instances", parsed strictly
 * (contract instances.md). The job-like fields (tenant, image, env, gpus,
 * nics, stop_grace_s) go through the job item's own parser, so both kinds
 * of item obey the same bounds; the rest is checked here. */
#include <stdlib.h>
#include <string.h>

#include "inst_int.h"

static enum sl_err bad(struct sl_diag *d, const char *id, const char *field, const char *want)
{
	sl_diag_hint(d, "the controller sent an instance the agent cannot run; check the "
			"controller's version");
	return sl_diag_set(d, SL_EINVAL, "instance %s: \"%s\" must be %s", id[0] ? id : "?", field,
			   want);
}

static bool id_ok(const char *s)
{
	size_t len = s ? strlen(s) : 0;
	if (len == 0 || len >= WORK_ID_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
			return false;
	}
	return true;
}

/* An authorized_keys line: printable, no newline, "TYPE BASE64 [COMMENT]". */
static bool key_ok(const char *k)
{
	size_t len = k ? strlen(k) : 0;
	if (len < 16 || len >= INST_KEY_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)k[i] < ' ' || k[i] == 0x7f)
			return false;
	return strchr(k, ' ') != NULL;
}

const char *inst_want_name(enum inst_want w)
{
	static const char *const n[] = {"run", "stop", "remove", "export"};
	return n[w];
}

void inst_spec_release(struct inst_spec *s)
{
	if (!s)
		return;
	work_spec_release(&s->w);
	for (size_t i = 0; s->keys && i < s->nkeys; i++)
		free(s->keys[i]);
	free(s->keys);
	memset(s, 0, sizeof(*s));
}

static enum sl_err job_fields(const json_t *o, struct inst_spec *out, struct sl_diag *d)
{
	/* the job parser wants a job, rank, lease, state and argv: give it ours */
	json_t *j = json_pack("{s:s, s:i, s:s, s:I, s:s, s:[s]}", "job", out->id, "rank",
			      out->node_rank, "lease", out->lease[0] ? out->lease : out->id,
			      "epoch", (json_int_t)out->epoch, "state", "run", "argv", "sshd");
	static const char *const keys[] = {"tenant", "image", "env", "gpus", "nics",
					   "stop_grace_s"};
	if (!j)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_t *v = json_object_get(o, keys[i]);
		/* "image": "" is the controller's "none named": the agent's --image */
		if (v && !json_is_null(v) && !(json_is_string(v) && !json_string_length(v) &&
					     !strcmp(keys[i], "image")))
			json_object_set(j, keys[i], v);
	}
	struct sl_diag jd;
	sl_diag_clear(&jd);
	enum sl_err e = work_spec_from_json(j, &out->w, &jd);
	json_decref(j);
	if (e != SL_OK) {
		sl_diag_hint(d, "%s", jd.hint);
		return sl_diag_set(d, e, "instance %s: %s", out->id, jd.msg);
	}
	return SL_OK;
}

static enum sl_err parse(const json_t *o, struct inst_spec *out, struct sl_diag *d)
{
	const json_t *v;
	const char *s;
	size_t i;
	json_t *x;

	if (!json_is_object(o))
		return bad(d, "", "instances[]", "an object");
	s = json_string_value(json_object_get(o, "instance"));
	if (!id_ok(s))
		return bad(d, "", "instance", "an id ([A-Za-z0-9][A-Za-z0-9._-]*, under 64 bytes)");
	memcpy(out->id, s, strlen(s) + 1);
	const char *id = out->id;
	v = json_object_get(o, "node_rank");
	if (v && (!json_is_integer(v) || json_integer_value(v) < 0 ||
		  json_integer_value(v) > WORK_RANK_MAX))
		return bad(d, id, "node_rank", "an integer 0..65535");
	out->node_rank = v ? (int)json_integer_value(v) : 0;
	v = json_object_get(o, "epoch");
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return bad(d, id, "epoch", "a non-negative integer");
	out->epoch = json_integer_value(v);
	v = json_object_get(o, "lease");
	s = v ? json_string_value(v) : "";
	if (!s || (s[0] && !id_ok(s)))
		return bad(d, id, "lease", "a lease id or \"\"");
	memcpy(out->lease, s, strlen(s) + 1);
	s = json_string_value(json_object_get(o, "state"));
	if (s && !strcmp(s, "run"))
		out->want = WANT_RUN;
	else if (s && !strcmp(s, "stop"))
		out->want = WANT_STOP;
	else if (s && !strcmp(s, "remove"))
		out->want = WANT_REMOVE;
	else if (s && !strcmp(s, "export"))
		out->want = WANT_EXPORT;
	else
		return bad(d, id, "state", "\"run\", \"stop\", \"remove\" or \"export\"");
	v = json_object_get(o, "cpus");
	if (v && (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 65536))
		return bad(d, id, "cpus", "a number of CPUs 0..65536");
	out->cpus_milli = v ? (int64_t)(json_number_value(v) * 1000 + 0.5) : 0;
	v = json_object_get(o, "mem_mib");
	if (v && (!json_is_integer(v) || json_integer_value(v) < 0 ||
		  json_integer_value(v) > ((json_int_t)1 << 32)))
		return bad(d, id, "mem_mib", "an integer number of MiB");
	out->mem_mib = v ? json_integer_value(v) : 0;
	if (out->mem_mib > 0 && out->mem_mib < 64)
		return bad(d, id, "mem_mib", "0 (no limit) or at least 64");
	v = json_object_get(o, "host_network");
	if (v && !json_is_boolean(v))
		return bad(d, id, "host_network", "true or false");
	out->host_network = json_is_true(v);
	v = json_object_get(o, "authorized_keys");
	if (v && (!json_is_array(v) || json_array_size(v) > INST_KEYS_MAX))
		return bad(d, id, "authorized_keys", "an array of at most 64 key lines");
	out->keys = calloc(json_array_size(v) + 1, sizeof(char *));
	if (!out->keys)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	json_array_foreach(v, i, x) {
		s = json_string_value(x);
		if (!key_ok(s))
			return bad(d, id, "authorized_keys", "OpenSSH public key lines (\"TYPE "
							     "BASE64 COMMENT\", printable, one line)");
		if (!(out->keys[out->nkeys] = strdup(s)))
			return sl_diag_set(d, SL_ENOMEM, "out of memory");
		out->nkeys++;
	}
	v = json_object_get(o, "ports");
	if (v && (!json_is_array(v) || json_array_size(v) > INST_PORTS_MAX))
		return bad(d, id, "ports", "an array of at most 16 ports");
	json_array_foreach(v, i, x) {
		json_int_t p = json_is_integer(x) ? json_integer_value(x) : 0;
		bool dup = false;
		for (int k = 0; k < out->nports; k++)
			dup = dup || out->ports[k] == p;
		if (p < 1 || p > 65535 || p == 22 || dup)
			return bad(d, id, "ports", "distinct TCP ports 1..65535 other than 22 (sshd's)");
		out->ports[out->nports++] = (int)p;
	}
	v = json_object_get(o, "volume_gib");
	if (v && (!json_is_integer(v) || json_integer_value(v) < 0 ||
		  json_integer_value(v) > INST_VOLUME_MAX_GIB))
		return bad(d, id, "volume_gib", "an integer 0..65536");
	out->volume_gib = v ? json_integer_value(v) : 0;
	v = json_object_get(o, "migrate_from");
	if (v && !json_is_null(v)) {
		s = json_string_value(v);
		if (!s || (s[0] && !id_ok(s)))
			return bad(d, id, "migrate_from", "a node name");
		memcpy(out->migrate_from, s, strlen(s) + 1);
	}
	return job_fields(o, out, d);
}

enum sl_err inst_spec_from_json(const json_t *o, struct inst_spec *out, struct sl_diag *d)
{
	memset(out, 0, sizeof(*out));
	enum sl_err e = parse(o, out, d);
	if (e != SL_OK)
		inst_spec_release(out);
	return e;
}

/* cdi_spec.c - the CDI spec document (cdi_spec.h). Kept to the fields
 * podman 4.3's CDI library (container-device-interface 0.5) reads; a field
 * it does not know would make it drop the whole spec. */
#include "cdi_spec.h"

#include <stdio.h>
#include <string.h>

static bool name_ok(const char *s)
{
	if (!s[0])
		return false;
	for (size_t i = 0; s[i]; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '_' && c != '.' && c != ':' && c != '-')))
			return false;
	}
	return true;
}

bool cdi_device_name(const char *prefix, int i, char *out, size_t n)
{
	if (!name_ok(prefix))
		return false;
	int w = snprintf(out, n, "%s-%d", prefix, i);
	return w > 0 && (size_t)w < n;
}

/* containerEdits for one device node (or stand-in) into edits. */
static int add_dev(json_t *edits, const struct cdi_dev *dv)
{
	if (!dv->host[0]) {
		json_t *a = json_object_get(edits, "deviceNodes");
		return json_array_append_new(
			a, json_pack("{s:s, s:s, s:I, s:I, s:s}", "path", dv->path, "type", "c",
				     "major", (json_int_t)dv->major, "minor", (json_int_t)dv->minor,
				     "permissions", "rw"));
	}
	json_t *m = json_object_get(edits, "mounts");
	return json_array_append_new(m, json_pack("{s:s, s:s, s:[s,s,s]}", "hostPath", dv->host,
						  "containerPath", dv->path, "options", "bind",
						  "rw", "nosuid"));
}

static json_t *edits_new(void)
{
	return json_pack("{s:[], s:[]}", "deviceNodes", "mounts");
}

/* Drops empty arrays: the document stays minimal. */
static void edits_trim(json_t *edits)
{
	if (!json_array_size(json_object_get(edits, "deviceNodes")))
		json_object_del(edits, "deviceNodes");
	if (!json_array_size(json_object_get(edits, "mounts")))
		json_object_del(edits, "mounts");
}

static json_t *device(const char *name, const struct cdi_dev *dv)
{
	json_t *e = edits_new();
	if (!e || add_dev(e, dv)) {
		json_decref(e);
		return NULL;
	}
	edits_trim(e);
	return json_pack("{s:s, s:o}", "name", name, "containerEdits", e);
}

json_t *cdi_spec_json(const struct discovery *disc, const struct cdi_host *h)
{
	char name[CDI_NAME_MAX];
	if (!disc || h->ngpus != disc->type.ngpus || !name_ok(h->prefix))
		return NULL;
	bool real = strcmp(disc->source, "simulate") != 0;
	json_t *devs = json_array(), *common = edits_new();
	int fail = !devs || !common;
	for (int i = 0; !fail && i < h->ngpus; i++) {
		fail = !cdi_device_name(h->prefix, i, name, sizeof(name)) ||
		       json_array_append_new(devs, device(name, &h->gpu[i]));
		const char *uuid = disc->gpus[i].uuid;
		if (!fail && real && uuid[0] && name_ok(uuid))
			fail = json_array_append_new(devs, device(uuid, &h->gpu[i]));
	}
	for (int i = 0; !fail && i < h->nshared; i++)
		fail = add_dev(common, &h->shared[i]);
	json_t *mounts = json_object_get(common, "mounts");
	for (int i = 0; !fail && i < h->nmounts; i++)
		fail = json_array_append_new(
			mounts, json_pack("{s:s, s:s, s:[s,s,s,s]}", "hostPath", h->mounts[i],
					  "containerPath", h->mounts[i], "options", "ro", "nosuid",
					  "nodev", "bind"));
	if (fail) {
		json_decref(devs);
		json_decref(common);
		return NULL;
	}
	edits_trim(common);
	return json_pack("{s:s, s:s, s:o, s:o}", "cdiVersion", CDI_VERSION, "kind", CDI_KIND,
			 "devices", devs, "containerEdits", common);
}

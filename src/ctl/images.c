/* images.c - the image catalog (images.h): a small table in memory, one
 * store row per image ({"name", "ref", "default", "created_at"}); adding a
 * default rewrites the previous default's row in the same turn, so exactly
 * one (or none) is the default after any commit. */
#include "images.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"
#include "log.h"

struct ctl_image {
	char name[IMAGE_NAME_MAX + 1];
	char ref[IMAGE_REF_MAX + 1];
	char description[IMAGE_DESC_MAX + 1]; /* what a renter chooses by ("": none) */
	char cuda[IMAGE_VERSION_MAX + 1];     /* CUDA version inside ("12.4", "": unknown) */
	char min_driver[IMAGE_VERSION_MAX + 1]; /* the NVIDIA driver it needs ("": any) */
	bool dflt;
	int64_t created_ns;
};

struct ctl_images {
	struct ctl_image v[IMAGES_MAX];
	int n;
};

static bool ref_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > IMAGE_REF_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return false;
	return true;
}

static json_t *image_json(const struct ctl_image *im)
{
	return json_pack("{s:s, s:s, s:b, s:s, s:s, s:s, s:o}", "name", im->name, "ref", im->ref,
			 "default", im->dflt, "description", im->description, "cuda", im->cuda,
			 "min_driver", im->min_driver, "created_at", ctl_time_json(im->created_ns));
}

/* "12.4", "550.54.14": digits and dots, starting and ending with a digit. */
static bool version_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > IMAGE_VERSION_MAX || s[0] == '.' || s[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] >= '0' && s[i] <= '9') && !(s[i] == '.' && s[i + 1] != '.'))
			return false;
	return true;
}

static bool text_ok(const char *s)
{
	size_t n = strlen(s);
	if (n > IMAGE_DESC_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < ' ' || s[i] == 0x7f)
			return false;
	return true;
}

static void copy_field(char *dst, size_t n, const json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	snprintf(dst, n, "%s", v ? v : "");
}

static struct ctl_image *find(const struct ctl_images *is, const char *name)
{
	for (int i = 0; i < is->n; i++)
		if (!strcmp(is->v[i].name, name))
			return (struct ctl_image *)&is->v[i];
	return NULL;
}

struct load_arg {
	struct ctl_images *is;
	struct sl_diag *d;
};

static enum sl_err load_row(void *arg, const char *id, const char *tenant, const char *text)
{
	struct ctl_images *is = ((struct load_arg *)arg)->is;
	struct sl_diag *d = ((struct load_arg *)arg)->d;
	(void)tenant;
	json_t *o = json_loads(text, 0, NULL);
	const char *name = json_string_value(json_object_get(o, "name"));
	const char *ref = json_string_value(json_object_get(o, "ref"));
	const char *at = json_string_value(json_object_get(o, "created_at"));
	enum sl_err e = SL_OK;
	if (!name || !ref || strcmp(name, id) || !fleet_name_valid(name) ||
	    strlen(name) > IMAGE_NAME_MAX || !ref_ok(ref) || is->n >= IMAGES_MAX) {
		e = sl_diag_set(d, SL_EPARSE, "stored image %.64s is malformed", id);
	} else {
		struct ctl_image *im = &is->v[is->n++];
		snprintf(im->name, sizeof(im->name), "%s", name);
		snprintf(im->ref, sizeof(im->ref), "%s", ref);
		im->dflt = json_is_true(json_object_get(o, "default"));
		copy_field(im->description, sizeof(im->description), o, "description");
		copy_field(im->cuda, sizeof(im->cuda), o, "cuda");
		copy_field(im->min_driver, sizeof(im->min_driver), o, "min_driver");
		if (!at || !ctl_time_parse(at, &im->created_ns))
			im->created_ns = 0;
	}
	json_decref(o);
	return e;
}

enum sl_err images_start(struct ctl *c, struct sl_diag *d)
{
	c->images = calloc(1, sizeof(*c->images));
	if (!c->images)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	struct load_arg a = {c->images, d};
	return store_scan(c->store, STORE_IMAGES, load_row, &a, d);
}

void images_free(struct ctl *c)
{
	free(c->images);
	c->images = NULL;
}

enum sl_err images_resolve(const struct ctl *c, const char *name, char *ref, char *used)
{
	const struct ctl_images *is = c->images;
	ref[0] = used[0] = '\0';
	for (int i = 0; is && i < is->n; i++) {
		const struct ctl_image *im = &is->v[i];
		if (name && name[0] ? !strcmp(im->name, name) : im->dflt) {
			snprintf(ref, IMAGE_REF_MAX + 1, "%s", im->ref);
			snprintf(used, IMAGE_NAME_MAX + 1, "%s", im->name);
			return SL_OK;
		}
	}
	return name && name[0] ? SL_ENOTFOUND : SL_OK;
}

void images_min_driver(const struct ctl *c, const char *name, char *out, size_t n)
{
	const struct ctl_images *is = c->images;
	const struct ctl_image *im = is && name ? find(is, name) : NULL;
	snprintf(out, n, "%s", im ? im->min_driver : "");
}

void h_image_add(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {
		{"name", FT_STRING, true},         {"ref", FT_STRING, true},
		{"default", FT_BOOL, false},       {"description", FT_STRING, false},
		{"cuda", FT_STRING, false},        {"min_driver", FT_STRING, false}};
	struct ctl *c = call->ctl;
	struct ctl_images *is = c->images;
	if (!ctl_check_fields(call, call->body, fields, sizeof(fields) / sizeof(fields[0]), "an image"))
		return;
	const char *desc = json_string_value(json_object_get(call->body, "description"));
	const char *cuda = json_string_value(json_object_get(call->body, "cuda"));
	const char *drv = json_string_value(json_object_get(call->body, "min_driver"));
	if (desc && !text_ok(desc)) {
		ctl_answer_error(call, SL_EINVAL, "field 'description' must be one line of at most 200 characters", NULL);
		return;
	}
	if ((cuda && !version_ok(cuda)) || (drv && !version_ok(drv))) {
		ctl_answer_error(call, SL_EINVAL,
				 cuda && !version_ok(cuda) ? "field 'cuda' must be a version such as 12.4"
							  : "field 'min_driver' must be a driver version such as 550.54.14",
				 "digits and dots; nvidia-smi shows a node's driver version");
		return;
	}
	const char *name = json_string_value(json_object_get(call->body, "name"));
	const char *ref = json_string_value(json_object_get(call->body, "ref"));
	bool dflt = json_is_true(json_object_get(call->body, "default"));
	if (!fleet_name_valid(name) || strlen(name) > IMAGE_NAME_MAX) {
		ctl_answer_error(call, SL_EINVAL, "field 'name' is not a valid image name",
				 "names are 1..63 characters of [A-Za-z0-9._-]");
		return;
	}
	if (!ref_ok(ref)) {
		ctl_answer_error(call, SL_EINVAL, "field 'ref' must be an image reference",
				 "1..511 printable characters without spaces, e.g. "
				 "localhost/suanli/base:1c97");
		return;
	}
	struct ctl_image *im = find(is, name);
	if (!im && is->n >= IMAGES_MAX) {
		ctl_answer_error(call, SL_ELIMIT, "the catalog holds at most 256 images",
				 "replace one: adding a known name replaces its reference");
		return;
	}
	if (dflt)
		for (int i = 0; i < is->n; i++)
			if (is->v[i].dflt && &is->v[i] != im) {
				is->v[i].dflt = false;
				ctl_put(c, STORE_IMAGES, is->v[i].name, NULL, image_json(&is->v[i]));
			}
	int status = im ? 200 : 201;
	if (!im) {
		im = &is->v[is->n++];
		snprintf(im->name, sizeof(im->name), "%s", name);
		im->created_ns = c->now_ns;
	}
	snprintf(im->ref, sizeof(im->ref), "%s", ref);
	if (desc)
		snprintf(im->description, sizeof(im->description), "%s", desc);
	if (cuda)
		snprintf(im->cuda, sizeof(im->cuda), "%s", cuda);
	if (drv)
		snprintf(im->min_driver, sizeof(im->min_driver), "%s", drv);
	im->dflt = dflt || (im->dflt && !json_object_get(call->body, "default"));
	ctl_put(c, STORE_IMAGES, im->name, NULL, image_json(im));
	sl_log_info("image added", "image=%s ref=%s default=%d by=%s", im->name, im->ref,
		    (int)im->dflt, call->tok->id);
	ctl_answer_json(call, status, image_json(im));
}

void h_image_list(struct ctl_call *call)
{
	const struct ctl_images *is = call->ctl->images;
	json_t *a = json_array();
	for (int i = 0; a && i < is->n; i++)
		json_array_append_new(a, image_json(&is->v[i]));
	ctl_answer_json(call, 200, a);
}

/* images.h - the operator's image catalog (docs/isolation.md, "Images"): a
 * name per podman image reference, one of them the default that a job runs
 * in when it names none. `POST /v1/images` adds or replaces one (admin,
 * operator); `GET /v1/images` lists them (everyone but agents: tenants pick
 * from it). Jobs keep the reference they were created with, so a later change
 * to the catalog never changes a running job.
 *
 * Private to src/ctl; touched by the loop's thread only. State lives in a
 * struct ctl_images owned by struct ctl and in the store (STORE_IMAGES). */
#ifndef SL_CTL_IMAGES_H
#define SL_CTL_IMAGES_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define IMAGES_MAX 256          /* catalog entries */
#define IMAGE_NAME_MAX 63       /* [A-Za-z0-9._-], like tenant names */
#define IMAGE_REF_MAX 511       /* a podman reference: printable, no spaces */
#define IMAGE_DESC_MAX 200      /* one line a renter chooses by */
#define IMAGE_VERSION_MAX 31    /* "12.4", "550.54.14" */

struct ctl;
struct ctl_call;

/* Reads the catalog from the store. SL_ENOMEM, SL_EPARSE (a malformed row,
 * named), or the store's error. */
enum sl_err images_start(struct ctl *c, struct sl_diag *d) SL_MUST_USE;
void images_free(struct ctl *c);

/* The reference a job runs: name's (NULL or "": the default's) into ref
 * (IMAGE_REF_MAX + 1 bytes) and the name used into used (IMAGE_NAME_MAX + 1).
 * SL_ENOTFOUND for an unknown name; SL_OK with ref "" when no name was given
 * and there is no default (the agent's own --image then decides). */
enum sl_err images_resolve(const struct ctl *c, const char *name, char *ref, char *used) SL_MUST_USE;

/* The driver version image name needs ("" none, or no such image) into out. */
void images_min_driver(const struct ctl *c, const char *name, char *out, size_t n);

void h_image_add(struct ctl_call *call);
void h_image_list(struct ctl_call *call);

#endif

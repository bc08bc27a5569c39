/* place_json.h - JSON codecs of placements and of fleet usage state.
 *
 * The output shape is the one `suanli plan --json` and the API promise:
 *   {"placement": [{"node": "n1", "gpus": [0, 1], ...}], "score": {...}}
 * A refusal is {"placement": [], "refused": {"constraint": "...", "why": "..."}}. */
#ifndef SL_PLACE_JSON_H
#define SL_PLACE_JSON_H

#include <jansson.h>

#include "err.h"
#include "place.h"

#define PLACE_STATE_MAX_ENTRIES 1000000 /* bound on entries in a usage state */

/* A new JSON object for pl (NULL on out of memory); the caller owns it. */
json_t *place_to_json(const struct fleet *f, const struct placement *pl);
/* The score alone as a JSON object. */
json_t *place_score_to_json(const struct place_score *s);

/* Claims on p the GPUs a usage state lists: JSON text of the form
 *   [{"node": "n1", "gpus": [0, 3]}, {"node": "n2", "gpu": 4, "milli": 250}, ...]
 * Each entry is claimed as one placement. Errors (syntax or an empty text:
 * SL_EPARSE with the position; nesting past JSON_MAX_DEPTH or more than
 * PLACE_STATE_MAX_ENTRIES entries: SL_ELIMIT; unknown node, a GPU out of range
 * or used twice) say which entry and why; on error nothing stays claimed. */
enum sl_err place_state_load(struct placer *p, const char *text, size_t len,
			     struct sl_diag *d) SL_MUST_USE;

#endif

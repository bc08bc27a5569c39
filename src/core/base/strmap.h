/* strmap.h - a string -> int hash map (open addressing, linear probing).
 *
 * Used by the fleet to find nodes, types and sites by name in O(1). Keys are
 * copied into the map, so callers may pass temporaries. Values are ints chosen
 * by the caller (the fleet stores array indices). The hash is fixed (no seed),
 * so behaviour is deterministic; inputs come from operators, not strangers. */
#ifndef SL_STRMAP_H
#define SL_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define STRMAP_MAX_ENTRIES (1u << 28) /* bound on entries in one map */

struct strmap;

/* Allocates an empty map into *out. SL_ENOMEM on failure. */
enum sl_err strmap_new(struct strmap **out) SL_MUST_USE;
/* Frees m and its keys; m may be NULL. */
void strmap_free(struct strmap *m);

/* Adds key -> val (key copied). SL_EEXIST when key is already present (the map
 * is unchanged), SL_ELIMIT past STRMAP_MAX_ENTRIES, SL_ENOMEM. */
enum sl_err strmap_add(struct strmap *m, const char *key, int val) SL_MUST_USE;
/* The value of key, or missing when absent. */
int strmap_get(const struct strmap *m, const char *key, int missing);
/* Removes key; false when it was not there. */
bool strmap_del(struct strmap *m, const char *key);
/* Number of entries. */
size_t strmap_count(const struct strmap *m);
/* Slots of its table (a power of two, at most 3/4 of them in use; 0 before
 * the first entry): what the map costs, 24 bytes each besides the keys. */
size_t strmap_slots(const struct strmap *m);

#endif

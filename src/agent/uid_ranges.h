/* uid_ranges.h - the user-namespace id ranges of a host's containers: one
 * per live lease, never shared by two (docs/isolation.md).
 *
 * The table is a directory, host-wide (UID_RANGES_DIR, a tmpfs: it goes
 * with the containers at reboot), of one file per taken range, named by the
 * range's number and holding its owner's key "AGENT LEASE" (AGENT the
 * engine's name, unique per host). A range is taken by creating its file
 * with O_EXCL, so agents sharing a host (tests run several) never take one
 * twice. A lease asks first for the range its number hashes to
 * (engine_uid_base) and walks on to the next free one; asking again gets the
 * range it already has (a rank restart, an agent restart), and the lease's
 * end frees it for reuse. Not thread-safe within a process. */
#ifndef SL_AGENT_UID_RANGES_H
#define SL_AGENT_UID_RANGES_H

#include <stdint.h>

#include "err.h"

#define UID_RANGES_DIR "/run/suanli/uid-ranges"

/* The first host id of the range of (agent, lease) under dir, taking a free
 * range when it has none. SL_ELIMIT when every range is taken; SL_EIO when
 * the table cannot be written (its path and errno's text in d). */
enum sl_err uid_range_take(const char *dir, const char *agent, const char *lease,
			   uint32_t *base, struct sl_diag *d) SL_MUST_USE;
/* The same, asking first for the range at prefer (a range it held before:
 * an instance's, whose files keep its ids across a reboot that emptied the
 * table; 0 or not a range's start: as uid_range_take). */
enum sl_err uid_range_take_at(const char *dir, const char *agent, const char *lease,
			      uint32_t prefer, uint32_t *base, struct sl_diag *d) SL_MUST_USE;
/* Frees the range of (agent, lease), if it has one. */
void uid_range_release(const char *dir, const char *agent, const char *lease);

#endif

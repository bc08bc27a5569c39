/* state.h - the agent's state directory (--state-dir, default
 * /var/lib/suanli-agent):
 *
 *   STATE_DIR/credential        the node credential (0600), from registration
 *   STATE_DIR/work.json         the supervisor's items (work.h), rewritten
 *                               atomically (temp file + rename) on every change
 *   STATE_DIR/jobs/J/rank-R.log a rank's output; jobs/J/nccl-topo-R.xml
 *   STATE_DIR/inject/xid        test hooks (health.h)
 *   STATE_DIR/inject/unhealthy
 *
 * Small file helpers for the agent; no state of their own. */
#ifndef SL_AGENT_STATE_H
#define SL_AGENT_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Longest state directory path accepted (file names are appended to it). */
#define STATE_DIR_MAX 512
/* Longest path under the state directory the agent builds. */
#define STATE_PATH_MAX 1024
/* Largest credential file read. */
#define STATE_CREDENTIAL_MAX 1024
/* Largest work.json read. */
#define STATE_WORK_JSON_MAX ((size_t)8 << 20)

/* Creates dir and its parents (0700 for the ones made here), and dir/jobs and
 * dir/inject. SL_EINVAL for a path that is empty or too long, SL_EIO with the
 * system's reason otherwise. */
enum sl_err state_dir_init(const char *dir, struct sl_diag *d) SL_MUST_USE;

/* mkdir -p path with mode for the directories it creates. SL_EIO. */
enum sl_err state_mkdirs(const char *path, unsigned mode, struct sl_diag *d) SL_MUST_USE;

/* Joins dir and the printf-formatted rest with '/' into buf (n bytes).
 * SL_ELIMIT when it does not fit. */
enum sl_err state_path(char *buf, size_t n, const char *dir, struct sl_diag *d,
		       const char *fmt, ...) SL_MUST_USE SL_PRINTF(5, 6);

/* Reads STATE_DIR/credential into buf (n bytes; surrounding white space
 * dropped). SL_ENOTFOUND when there is none; SL_EINVAL when it is empty,
 * too long or has control characters inside; SL_EIO. */
enum sl_err state_credential_load(const char *dir, char *buf, size_t n,
				  struct sl_diag *d) SL_MUST_USE;
/* Writes the credential (mode 0600, atomically). SL_EIO. */
enum sl_err state_credential_save(const char *dir, const char *cred,
				  struct sl_diag *d) SL_MUST_USE;

/* The newest controller epoch this node has obeyed (docs/ha.md), kept in
 * STATE_DIR/controller-epoch so that a restarted agent still refuses a
 * deposed leader. *epoch is 0 when the file is absent; SL_EINVAL when it
 * holds anything but a decimal number (the hint says to delete it), SL_EIO. */
enum sl_err state_epoch_load(const char *dir, uint64_t *epoch, struct sl_diag *d) SL_MUST_USE;
/* Writes it (0600, atomically). SL_EIO. */
enum sl_err state_epoch_save(const char *dir, uint64_t epoch, struct sl_diag *d) SL_MUST_USE;

/* Takes STATE_DIR/agent.lock (flock, released when the process ends) so that
 * two agents never manage the same work; *fd is the caller's to keep open
 * (close-on-exec). SL_ECONFLICT when another process holds it (its pid in
 * the message), SL_EIO. */
enum sl_err state_lock(const char *dir, int *fd, struct sl_diag *d) SL_MUST_USE;

/* Writes len bytes to path atomically: path.tmp (mode), fsync, rename. SL_EIO. */
enum sl_err state_write_atomic(const char *path, const void *data, size_t len,
			       unsigned mode, struct sl_diag *d) SL_MUST_USE;

#endif

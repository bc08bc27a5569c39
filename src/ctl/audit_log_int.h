/* audit_log_int.h - the audit log's state behind struct ctl's audit handle,
 * shared by audit_log.c (entries, the tree, checkpoints) and h_audit.c (its
 * HTTP handlers). Private to them: other parts see only audit_log.h. */
#ifndef SL_CTL_AUDIT_LOG_INT_H
#define SL_CTL_AUDIT_LOG_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "audit_log.h"
#include "checkpoint.h"
#include "merkle.h"

/* The controller's audit state (owned by struct ctl). */
struct ctl_audit {
	uint8_t pk[CHECKPOINT_PUBKEY_SIZE];
	uint8_t sk[CHECKPOINT_SECKEY_SIZE];
	char origin[CHECKPOINT_ORIGIN_MAX + 1];
	struct merkle_frontier tree;   /* leaves appended so far (committed or in this turn) */
	uint64_t cp_size;              /* size of the newest checkpoint */
	int64_t pending_since;         /* time of the first entry after it; 0: none */
	/* The request being dispatched (for telling its own lease changes from
	 * the scheduler's). */
	bool in_call;
	int call_nleases;              /* leases that existed when it began */
	char call_lease[32];           /* the lease id its path names, "" if none */
};

#endif

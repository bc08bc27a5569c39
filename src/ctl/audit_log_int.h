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
#include "tenant_chain.h"

/* The controller's audit state (owned by struct ctl). */
struct ctl_audit {
	uint8_t pk[CHECKPOINT_PUBKEY_SIZE];
	uint8_t sk[CHECKPOINT_SECKEY_SIZE];
	char origin[CHECKPOINT_ORIGIN_MAX + 1];
	struct merkle_frontier tree;   /* leaves appended so far (committed or in this turn) */
	uint64_t cp_size;              /* size of the newest checkpoint */
	struct audit_heads heads;      /* each tenant's newest entry (with this turn's) */
	struct audit_heads cp_heads;   /* ... as of the newest checkpoint */
	int64_t pending_since;         /* time of the first entry after it; 0: none */
	/* The request being dispatched (for telling its own lease changes from
	 * the scheduler's). */
	bool in_call;
	int call_nleases;              /* leases that existed when it began */
	char call_lease[32];           /* the lease id its path names, "" if none */
};

struct store_audit_row;

/* A tenant's entries with seq > since, at most limit (0: all), ascending,
 * read by following the tenant chain from its head (audit_query.c): the
 * index only proposes candidates, the canonical entries decide, so an entry
 * whose index columns were edited is still listed. *out (n rows) to
 * audit_rows_free; *repaired counts rows the index got wrong. */
struct audit_row_copy {
	uint64_t seq;
	int64_t time_ns;
	char tenant[AUDIT_TENANT_MAX + 1], action[AUDIT_ACTION_MAX + 1];
	uint8_t *canonical;
	size_t len;
	uint8_t leaf[MERKLE_HASH_SIZE];
	size_t leaf_len;
};
enum sl_err audit_tenant_rows(struct ctl *c, const char *tenant, uint64_t since, uint64_t limit,
			      struct audit_row_copy **out, size_t *n, size_t *repaired,
			      struct sl_diag *d) SL_MUST_USE;
void audit_rows_free(struct audit_row_copy *rows, size_t n);
/* The row as the store shows it (borrowing r). */
struct store_audit_row audit_row_view(const struct audit_row_copy *r);

#endif

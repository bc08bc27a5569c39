/* ctl_limits.h - the controller's bounds on outside input (DESIGN.md
 * §10.6), named once for every file of src/ctl. */
#ifndef SL_CTL_LIMITS_H
#define SL_CTL_LIMITS_H


#define CTL_NAME_MAX 63          /* tenant names: [A-Za-z0-9._-], like fleet names */
#define CTL_USER_MAX 64          /* user labels on tokens */
#define CTL_REASON_MAX 256       /* drain reasons */
#define CTL_MAX_REGIONS 16       /* regions per tenant */
#define CTL_MAX_QUOTAS 32        /* quota entries per tenant */
#define CTL_IDEM_KEY_MAX 128     /* Idempotency-Key header */
#define CTL_IDEM_TTL_S (24 * 3600) /* saved answers older than this are dropped at start */
#define CTL_MAX_DURATION_S (10LL * 366 * 86400) /* duration_s, by_s */
#define CTL_MAX_HISTORY 1000     /* history entries kept per lease */
#define CTL_MAX_LEASES (1 << 26) /* leases in memory, ended ones kept included */
#define CTL_MAX_RESVS 100000     /* reservations held */
#define CTL_MAX_RESV_NODES 10000 /* nodes in one reservation */
#define CTL_MAX_PARAMS 2         /* {x} segments in one route pattern */
#define CTL_TOKEN_ID_LEN 16      /* "tok_" + 12 hex */
#define CTL_HASH_HEX 64          /* SHA-256 as hex */
#define CTL_MAX_TOKEN_LEN 128    /* longest bearer token looked at */

#endif

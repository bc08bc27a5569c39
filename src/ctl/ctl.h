/* ctl.h - the controller (suanlid): its state, its loop and its route table.
 *
 * One struct ctl owns everything the daemon knows: the store, the fleet and
 * its placer, tenants, tokens, leases, the queue, reservations, drained nodes
 * and the HTTP server. One thread drives it (DESIGN.md §8): ctl_run() polls
 * the server and the scheduler's next deadline, lets the handlers apply
 * changes to memory and to the store inside the turn's transaction, commits
 * once per turn (group commit) and only then sends that turn's answers. */
#ifndef SL_CTL_H
#define SL_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define CTL_VERSION "0.3.0"
#define CTL_ADMIN_TOKEN_FILE "admin.token" /* inside the data directory, mode 0600 */

struct ctl;
struct store;
struct leader_cfg;

/* What `suanlid serve` was asked for. Strings are borrowed for ctl_new only. */
struct ctl_opts {
	const char *data_dir;   /* required: an initialised data directory */
	const char *listen;     /* "127.0.0.1:7400"; port 0 picks a free port */
	const char *fleet_file; /* NULL: keep the stored fleet */
	bool simulate;          /* fleet nodes count as present and healthy */
	int64_t preempt_notice_s; /* spot preemption notice; < 0: the default (30 s) */
	int keep_ended;           /* ended leases kept in memory; 0: the default */
	const char *currency;     /* billing currency (ISO code); NULL: CNY */
	const char *billing_zone; /* billing time zone; NULL: UTC */
	int64_t grace_s;          /* grace period once a balance runs out; 0: the
				     default (600 s); < 0: none */
	int64_t heartbeat_s;      /* agents' heartbeat interval; 0: the default (5 s) */
	int64_t unreachable_after_s; /* silent agent -> node unreachable; 0: 15 s */
	int64_t down_after_s;        /* silent agent -> node down, leases fail; 0: 60 s */
	unsigned max_connections;    /* HTTP connections admitted at once; 0: the
					default (HTTP_MAX_CONNECTIONS, http.h) */
	struct store *store_take;    /* NULL: open data_dir's SQLite store; else a
					store (already leading, when shared) that
					ctl_new takes over, even when it fails */
	const struct leader_cfg *leader; /* a shared store's leadership (leader.h);
					    NULL when not shared */
	int tls;                     /* 0: HTTPS unless listen is a loopback address;
					> 0: HTTPS always; < 0: plain HTTP, refused
					on any address but loopback (tls.h) */
	int answer_queue_max;        /* answers the queue may hold; 0: as memory
					allows; < 0: none at all (tests: a queue
					that cannot grow, as when out of memory) */
	const char *placement;       /* "frag" (NULL: the default) or "bestfit" */
	/* The console (docs/console.md): its files (NULL: found, console_static.h),
	 * sessions' idle and absolute lifetimes (0: 12 h, 7 d) and failed sign-ins
	 * allowed per minute per user and per source address (0: 5, 20). */
	const char *console_dir;
	int64_t session_idle_s, session_max_s;
	int signin_fails_user, signin_fails_source;
	int64_t instance_retention_s; /* a stopped instance whose tenant stays below
					 zero is released after; 0: 15 days */
};
#define CTL_MAX_NOTICE_S (7LL * 86400) /* bound on --preempt-notice */
#define CTL_MAX_GRACE_S (30 * 86400)   /* bound on --grace */
#define CTL_KEEP_ENDED_DEFAULT 4096    /* ended leases kept in memory (older: read from the store) */
#define CTL_KEEP_ENDED_MAX 10000000    /* bound on --keep-ended */

/* Creates data_dir (0700), its store and the first admin token, whose secret
 * is written to *token_out (caller frees) and to data_dir/admin.token (0600).
 * SL_EEXIST if the directory already holds a store (nothing is touched);
 * SL_EIO for file-system errors. now_ns: wall-clock time for created_at. */
enum sl_err ctl_init_data(const char *data_dir, int64_t now_ns, char **token_out,
			  struct sl_diag *d) SL_MUST_USE;

/* ctl_init_data with the store in store_url (a PostgreSQL URL) instead of
 * data_dir, which still gets the admin token and the audit key. SL_EEXIST when
 * the database is already initialised. store_url NULL: ctl_init_data. */
enum sl_err ctl_init_data_at(const char *data_dir, const char *store_url, int64_t now_ns,
			     char **token_out, struct sl_diag *d) SL_MUST_USE;

/* Opens the store, rebuilds memory from it (loading opts->fleet_file first when
 * given), and starts listening. Errors: SL_ENOTFOUND when data_dir holds no
 * store ("run suanlid init"), SL_ECONFLICT when another daemon has it open or
 * a new fleet would drop nodes that active leases use, SL_EPARSE/SL_EINVAL for
 * a bad fleet file or stored state, SL_EIO. */
enum sl_err ctl_new(const struct ctl_opts *opts, int64_t now_ns, struct ctl **out,
		    struct sl_diag *d) SL_MUST_USE;

/* Stops listening and frees everything (answers pending requests with 503
 * first). NULL is allowed. */
void ctl_free(struct ctl *c);

/* Whether the server speaks HTTPS. */
bool ctl_tls_on(const struct ctl *c);

/* The port the server is bound to. */
uint16_t ctl_port(const struct ctl *c);

/* Runs the loop until stop_fd (a signalfd or pipe; -1 for none) becomes
 * readable, then finishes the turn and returns SL_OK. Returns SL_EIO when a
 * commit failed: memory is then ahead of disk and nothing of that turn has been
 * answered; the caller must exit at once without acknowledging anything. */
enum sl_err ctl_run(struct ctl *c, int stop_fd, struct sl_diag *d) SL_MUST_USE;

/* ---- the route table, as data ---- */

enum ctl_role {
	CTL_ROLE_ADMIN,
	CTL_ROLE_OPERATOR,
	CTL_ROLE_TENANT_ADMIN,
	CTL_ROLE_TENANT,
	CTL_ROLE_AUDITOR,
	CTL_ROLE_AGENT,
	CTL_ROLE__COUNT
};
#define CTL_ROLE_BIT(r) (1u << (r))

/* "admin", "operator", "tenant-admin", "tenant", "auditor", "agent". */
const char *ctl_role_name(enum ctl_role r);
/* -1 when name is not a role. */
int ctl_role_parse(const char *name);

struct ctl_call;
typedef void (*ctl_handler_fn)(struct ctl_call *call);

struct ctl_route {
	const char *method;
	const char *pattern; /* "/v1/leases/{id}/release": {x} matches one segment */
	const char *label;   /* metrics label ("lease_release") */
	bool auth;           /* false: no token needed (healthz) */
	unsigned roles;      /* CTL_ROLE_BIT set of roles allowed (before scoping) */
	bool mutates;        /* changes state (goes through the turn's commit) */
	bool json_body;      /* the body is a JSON object (may be empty: {}) */
	ctl_handler_fn fn;
};

/* The route table (static data); *n gets its length. */
const struct ctl_route *ctl_routes(size_t *n);

#endif

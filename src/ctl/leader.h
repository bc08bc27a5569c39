/* leader.h - active and standby controllers on one shared store (PostgreSQL).
 *
 * `suanlid serve --store postgres://...` first stands by (leader_standby):
 * it answers every API call with 503 "not_leader" and where the leader is
 * (X-Suanli-Leader header, "leader" in the body), serves /healthz and
 * /metrics with the leadership, and tries to take over a few times a second
 * (store_lead_try: at once when the leader's session is gone, else when its
 * lease runs out). Once it leads, ctl_new loads the state from the store it
 * leads with, and the loop renews the lease (leader_tick). The leader fences
 * itself: when it has not renewed for the fence deadline (2/3 of the lease,
 * so before any standby may take over) or a write finds its epoch gone, it
 * steps down (ctl_run returns SL_ECONFLICT and suanlid restarts itself as a
 * standby, answering nobody from the old memory). Every answer of a leader
 * carries X-Suanli-Epoch, so agents can refuse commands from an older one.
 * docs/ha.md has the whole model. */
#ifndef SL_LEADER_H
#define SL_LEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct ctl;
struct store;
struct http_request;

#define LEADER_LEASE_DEFAULT_MS 6000 /* --lease: how long a renewal holds */
#define LEADER_LEASE_MIN_MS 600
#define LEADER_LEASE_MAX_MS 600000
#define LEADER_EPOCH_HEADER "X-Suanli-Epoch"
#define LEADER_HINT_HEADER "X-Suanli-Leader"

struct leader_cfg {
	const char *store_url; /* postgres://... */
	const char *name;      /* this controller's name in the leader row */
	const char *advertise; /* the URL clients use for this controller ("": none) */
	int64_t lease_ms;      /* 0: LEADER_LEASE_DEFAULT_MS */
};

/* Opens the shared store and stands by, answering on listen, until this
 * controller leads (*out: the leading store, to pass to ctl_new as
 * store_take) or stop_fd is readable (*out NULL, SL_OK). A database that
 * cannot be reached (restarting, being promoted) is retried every second
 * meanwhile. Errors: a schema newer than this program (SL_ECONFLICT), the
 * listener's. */
struct ctl_opts;
/* o: the serve options; the standby's listener follows the TLS rule with them
 * (HTTPS off loopback, o->tls, the certificate in o->data_dir). */
enum sl_err leader_standby(const struct leader_cfg *cfg, const struct ctl_opts *o,
			   const char *listen, int stop_fd, struct store **out,
			   struct sl_diag *d) SL_MUST_USE;

/* Gives c, whose store leads, its leadership state (called by ctl_new). */
enum sl_err leader_attach(struct ctl *c, const struct leader_cfg *cfg,
			  struct sl_diag *d) SL_MUST_USE;
/* Releases leadership (a standby takes over at once) and frees the state. */
void leader_free(struct ctl *c);
/* tmo lowered to the next renewal (ms); tmo when c does not lead. */
int leader_timeout_ms(struct ctl *c, int tmo);
/* Renews when due, outside the turn's transaction. SL_ECONFLICT (d says why)
 * when c must step down: deposed, store failed, or past the fence deadline. */
enum sl_err leader_tick(struct ctl *c, struct sl_diag *d) SL_MUST_USE;
/* SL_ECONFLICT when c leads but its last good renewal started more than the
 * fence deadline ago: checked before a turn's answers are sent. */
enum sl_err leader_check(struct ctl *c, struct sl_diag *d) SL_MUST_USE;
/* Adds X-Suanli-Epoch to an answer of a leading controller. */
void leader_stamp(struct ctl *c, struct http_request *r);
/* The leadership metrics (Prometheus text) into out; the length, 0 if none. */
size_t leader_metrics(const struct ctl *c, char *out, size_t n);
/* Adds role, epoch and renewal age to /healthz's object o (a json_t *; NULL
 * is a no-op): "role" is "leader", or "single" when the store is not shared. */
void leader_health(const struct ctl *c, void *o);

#endif

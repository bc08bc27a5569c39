/* store_pg_lead.c - leadership on a shared PostgreSQL store (store.h).
 *
 * The leader row says who leads in which epoch and until when (server time);
 * the session advisory lock PG_LEAD_LOCK says the leader's session is alive.
 * A standby takes over when it can take the lock (the old session is gone:
 * killed process, closed connection) or, when the lease ran out while the lock
 * is still held (a stopped or cut-off leader), after terminating the lock
 * holder's session, which aborts whatever transaction it had open; never by
 * waiting on a row lock a stopped process holds. The takeover increments the
 * epoch in one transaction that also logs it (suanli_leader_log), and from
 * then on every transaction of the new leader checks the epoch first
 * (store_pg.c, pg_tx_open), so a deposed leader that wakes up finds its
 * session gone or its epoch stale, and its writes fail.
 *
 * Terminating another session needs the same role (or pg_signal_backend):
 * run every controller as one database role (docs/ha.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_pg_int.h"

#define PG_LEAD_LOCK 0x73756132 /* the leader's advisory lock key ("sua2") */
#define PG_TERMINATE_WAIT_MS 5000

static const struct {
	const char *name, *sql;
} lead_stmts[] = {
	{"lead_read", "SELECT epoch, holder, url,"
		      " (extract(epoch FROM now() - renewed_at) * 1000)::bigint,"
		      " (extract(epoch FROM expires_at - renewed_at) * 1000)::bigint,"
		      " expires_at < now() FROM suanli_leader WHERE id = 1"},
	{"lead_lock", "SELECT pg_try_advisory_lock(" "1937072434" ")"},
	{"lead_unlock", "SELECT pg_advisory_unlock(" "1937072434" ")"},
	{"lead_kill", "SELECT pg_terminate_backend(pid, $1::bigint) FROM pg_locks"
		      " WHERE locktype = 'advisory' AND classid = 0 AND objid = 1937072434"
		      " AND objsubid = 1 AND granted AND pid <> pg_backend_pid()"},
	{"lead_take", "UPDATE suanli_leader SET epoch = epoch + 1, holder = $1, url = $2,"
		      " pid = pg_backend_pid(), renewed_at = now(),"
		      " expires_at = now() + $3::bigint * interval '1 millisecond'"
		      " WHERE id = 1 AND epoch = $4::bigint RETURNING epoch"},
	{"lead_log", "INSERT INTO suanli_leader_log (epoch, holder, url, started_at,"
		     " took_over_from, reason) VALUES ($1::bigint, $2, $3, now(), $4, $5)"},
	/* also answers the streaming replicas' replay lag (-1: none, or not
	 * visible to this role: grant it pg_monitor) */
	{"lead_renew", "UPDATE suanli_leader SET renewed_at = now(),"
		       " expires_at = now() + $2::bigint * interval '1 millisecond'"
		       " WHERE id = 1 AND epoch = $1::bigint AND pid = pg_backend_pid()"
		       " RETURNING (SELECT coalesce((max(extract(epoch FROM replay_lag)) * 1000)::bigint,"
		       " -1) FROM pg_stat_replication)"},
	{"lead_release", "UPDATE suanli_leader SET expires_at = now(), url = ''"
			 " WHERE id = 1 AND epoch = $1::bigint"},
};

_Static_assert(PG_LEAD_LOCK == 1937072434, "the statements spell the key out");

enum sl_err pg_lead_prepare(struct pg *g, struct sl_diag *d)
{
	enum sl_err e = SL_OK;
	for (size_t i = 0; !e && i < sizeof(lead_stmts) / sizeof(lead_stmts[0]); i++) {
		PGresult *r = PQprepare(g->conn, lead_stmts[i].name, lead_stmts[i].sql, 0, NULL);
		if (!r || PQresultStatus(r) != PGRES_COMMAND_OK)
			e = pg_error(g, r, d, "preparing", lead_stmts[i].name, NULL);
		PQclear(r);
	}
	return e;
}

enum sl_err pg_lead_read(void *impl, struct store_leader *out, struct sl_diag *d)
{
	struct pg *g = impl;
	PGresult *r = NULL;
	enum sl_err e = pg_run(g, "lead_read", 0, NULL, NULL, NULL, 0, PGRES_TUPLES_OK, &r, d,
			       "reading", "the leader row", NULL);
	if (e)
		return e;
	memset(out, 0, sizeof(*out));
	if (PQntuples(r) == 1) {
		out->epoch = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
		snprintf(out->holder, sizeof(out->holder), "%s", PQgetvalue(r, 0, 1));
		snprintf(out->url, sizeof(out->url), "%s", PQgetvalue(r, 0, 2));
		out->since_renew_ms = strtoll(PQgetvalue(r, 0, 3), NULL, 10);
		out->lease_ms = strtoll(PQgetvalue(r, 0, 4), NULL, 10);
		out->expired = PQgetvalue(r, 0, 5)[0] == 't';
		out->mine = g->epoch && out->epoch == g->epoch;
	}
	PQclear(r);
	return SL_OK;
}

/* A one-value boolean query. */
static enum sl_err pg_bool(struct pg *g, const char *stmt, bool *v, struct sl_diag *d)
{
	PGresult *r = NULL;
	enum sl_err e = pg_run(g, stmt, 0, NULL, NULL, NULL, 0, PGRES_TUPLES_OK, &r, d,
			       "leadership", stmt, NULL);
	if (!e)
		*v = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	return e;
}

/* Holding the lock: increments the epoch and logs the takeover. */
static enum sl_err pg_lead_take(struct pg *g, const char *holder, const char *url,
				int64_t lease_ms, const struct store_leader *old, bool *won,
				struct sl_diag *d)
{
	char lease[24], seen[24], ep[24];
	snprintf(lease, sizeof(lease), "%" PRId64, lease_ms);
	snprintf(seen, sizeof(seen), "%" PRIu64, old->epoch);
	const char *v[] = {holder, url, lease, seen};
	PGresult *r = NULL;
	enum sl_err e = pg_exec(g, "BEGIN", d, "beginning the takeover");
	if (!e)
		e = pg_run(g, "lead_take", 4, v, NULL, NULL, 0, PGRES_TUPLES_OK, &r, d,
			   "taking over", "the leader row", NULL);
	*won = !e && PQntuples(r) == 1;
	if (*won) {
		snprintf(ep, sizeof(ep), "%s", PQgetvalue(r, 0, 0));
		const char *reason = old->epoch == 0 ? "first leader"
				     : old->expired  ? "lease expired"
						     : "previous leader's session ended";
		const char *lv[] = {ep, holder, url, old->holder, reason};
		e = pg_run(g, "lead_log", 5, lv, NULL, NULL, 0, PGRES_COMMAND_OK, NULL, d,
			   "logging the takeover", NULL, NULL);
	}
	PQclear(r);
	if (!e)
		e = pg_exec(g, *won ? "COMMIT" : "ROLLBACK", d, "committing the takeover");
	if (e) {
		*won = false;
		return e;
	}
	if (*won)
		g->epoch = strtoull(ep, NULL, 10);
	return SL_OK;
}

enum sl_err pg_lead_try(void *impl, const char *holder, const char *url, int64_t lease_ms,
			bool *won, struct store_leader *out, struct sl_diag *d)
{
	struct pg *g = impl;
	struct store_leader cur;
	*won = false;
	if (g->epoch) {
		*won = true;
		return out ? pg_lead_read(g, out, d) : SL_OK;
	}
	enum sl_err e = pg_lead_read(g, &cur, d);
	if (!e && !g->locked)
		e = pg_bool(g, "lead_lock", &g->locked, d);
	if (!e && !g->locked && cur.expired) {
		/* A live session holds the lock but its lease ran out: end that
		 * session (aborting its transaction), then try again. */
		char wait[16];
		snprintf(wait, sizeof(wait), "%d", PG_TERMINATE_WAIT_MS);
		const char *v[] = {wait};
		e = pg_run(g, "lead_kill", 1, v, NULL, NULL, 0, PGRES_TUPLES_OK, NULL, d,
			   "ending the expired leader's session", NULL, NULL);
		if (!e)
			e = pg_bool(g, "lead_lock", &g->locked, d);
	}
	if (!e && g->locked)
		e = pg_lead_take(g, holder, url, lease_ms, &cur, won, d);
	if (!e && g->locked && !*won) {
		bool un;
		e = pg_bool(g, "lead_unlock", &un, d);
		g->locked = false;
	}
	if (!e && out)
		e = pg_lead_read(g, out, d);
	return e;
}

enum sl_err pg_lead_renew(void *impl, int64_t lease_ms, struct sl_diag *d)
{
	struct pg *g = impl;
	char ep[24], lease[24];
	snprintf(ep, sizeof(ep), "%" PRIu64, g->epoch);
	snprintf(lease, sizeof(lease), "%" PRId64, lease_ms);
	const char *v[] = {ep, lease};
	PGresult *r = NULL;
	enum sl_err e = pg_run(g, "lead_renew", 2, v, NULL, NULL, 0, PGRES_TUPLES_OK, &r, d,
			       "renewing", "the leader lease", NULL);
	if (!e && PQntuples(r) == 1)
		g->lag_ms = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	if (!e && PQntuples(r) != 1) {
		e = sl_diag_set(d, SL_ECONFLICT, "deposed: leader epoch %s is no longer current", ep);
		sl_diag_hint(d, "another controller took over; this one steps down");
	}
	PQclear(r);
	return e;
}

int64_t pg_lead_lag(const void *impl)
{
	return ((const struct pg *)impl)->lag_ms;
}

enum sl_err pg_lead_release(void *impl, struct sl_diag *d)
{
	struct pg *g = impl;
	if (!g->epoch)
		return SL_OK;
	char ep[24];
	snprintf(ep, sizeof(ep), "%" PRIu64, g->epoch);
	const char *v[] = {ep};
	enum sl_err e = pg_run(g, "lead_release", 1, v, NULL, NULL, 0, PGRES_COMMAND_OK, NULL, d,
			       "releasing", "the leader lease", NULL);
	bool un;
	if (!e)
		e = pg_bool(g, "lead_unlock", &un, d);
	g->epoch = 0;
	g->locked = false;
	return e;
}

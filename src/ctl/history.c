/* history.c - moving rows to the history tables (history.h). */
#include "history.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ctl_int.h"
#include "log.h"

#define HIST_MAX_MOVES (1 << 26) /* rows one start-up moves (an old store's ended rows) */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

enum sl_err ctl_hist_note(struct ctl_hist_moves *m, const char *id, const char *tenant)
{
	int cap = m->cap;
	if (sl_grow(&m->ids, &m->cap, m->n + 1, HIST_MAX_MOVES))
		return SL_ENOMEM;
	if (m->cap != cap) {
		char **t = realloc(m->tenants, (size_t)m->cap * sizeof(*t));
		if (!t)
			return SL_ENOMEM;
		m->tenants = t;
	}
	m->ids[m->n] = strdup(id);
	m->tenants[m->n] = dup_or_null(tenant);
	if (!m->ids[m->n] || (tenant && !m->tenants[m->n])) {
		free(m->ids[m->n]);
		free(m->tenants[m->n]);
		return SL_ENOMEM;
	}
	m->n++;
	return SL_OK;
}

void ctl_hist_release(struct ctl_hist_moves *m)
{
	for (int i = 0; i < m->n; i++) {
		free(m->ids[i]);
		free(m->tenants[i]);
	}
	free(m->ids);
	free(m->tenants);
	memset(m, 0, sizeof(*m));
}

enum sl_err ctl_hist_move(struct ctl *c, enum store_kind live, enum store_kind hist,
			  struct ctl_hist_moves *m, struct sl_diag *d)
{
	enum sl_err e = SL_OK;
	for (int i = 0; !e && i < m->n; i++) {
		char *row = NULL;
		e = store_get(c->store, live, m->ids[i], &row, d);
		if (!e && (!ctl_put_text(c, hist, m->ids[i], m->tenants[i], row) ||
			   !ctl_delete(c, live, m->ids[i])))
			e = sl_diag_set(d, SL_EIO, "could not move %s %s to %s", store_kind_name(live),
					m->ids[i], store_kind_name(hist));
		free(row);
	}
	if (!e && m->n)
		sl_log_info("moved ended rows to history", "kind=%s count=%d", store_kind_name(live),
			    m->n);
	ctl_hist_release(m);
	return e;
}

static void seq_key(char *key, size_t n, const char *what)
{
	snprintf(key, n, "history.%s.seq", what);
}

enum sl_err ctl_hist_seq_get(struct ctl *c, const char *what, uint64_t *out, struct sl_diag *d)
{
	char key[48], *v = NULL, *end = NULL;
	seq_key(key, sizeof(key), what);
	*out = 0;
	enum sl_err e = store_meta_get(c->store, key, &v, d);
	if (e == SL_ENOTFOUND) {
		sl_diag_clear(d);
		return SL_OK;
	}
	if (e)
		return e;
	unsigned long long x = strtoull(v, &end, 10);
	if (end == v || *end)
		e = sl_diag_set(d, SL_EPARSE, "meta %s is not a number: '%.40s'", key, v);
	else
		*out = (uint64_t)x;
	free(v);
	return e;
}

void ctl_hist_seq_note(struct ctl *c, const char *what, uint64_t *mem, uint64_t seq)
{
	if (seq <= *mem)
		return;
	char key[48], v[24];
	seq_key(key, sizeof(key), what);
	snprintf(v, sizeof(v), "%" PRIu64, seq);
	if (ctl_meta_set(c, key, v)) /* else fatal */
		*mem = seq;
}

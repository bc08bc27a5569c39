/* lease_row.c - a lease's store row written straight into a buffer.
 *
 * Why: every change to a lease writes its row, and building the row as a
 * jansson tree (about 60 small objects: the lease, its picks, their quality
 * and the score) and then dumping it was the largest single cost of the
 * daemon under create+release load (bench/results/api-profile.md). The text
 * written here is exactly what json_dumps(lease_to_json(c, l, false),
 * JSON_COMPACT) gives: the same keys in the same order (the request is kept
 * as the text jansson dumped, so it is copied as it is), integers in decimal. Strings are
 * written only when they are plain printable ASCII; any other byte (or a
 * number with a fraction) sends the whole row to the jansson path
 * (lease_row_dump_json), so escaping never has to match jansson's byte for
 * byte. Debug builds compare the two on every row. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ctl_int.h"
#include "log.h"

#define LEASE_ROW_MAX ((size_t)64 << 20) /* bytes; a longer row goes the jansson way */
#define LEASE_ROW_FIRST 2048              /* bytes most rows fit in: one allocation */

struct rbuf {
	struct sl_buf s;
	bool bad; /* out of memory, past LEASE_ROW_MAX, or something only jansson may write */
};

static bool rb_grow(struct rbuf *b, size_t more)
{
	if (b->bad)
		return false;
	if (sl_buf_grow(&b->s, more))
		b->bad = true;
	return !b->bad;
}

static void rb_raw(struct rbuf *b, const char *s, size_t n)
{
	if (!b->bad && sl_buf_add(&b->s, s, n))
		b->bad = true;
}

#define RB_LIT(b, s) rb_raw((b), (s), sizeof(s) - 1)

/* A JSON string of printable ASCII; '"' and '\' escaped as jansson does. */
static void rb_str(struct rbuf *b, const char *s)
{
	size_t n = strlen(s);
	if (!rb_grow(b, 2 * n + 2))
		return;
	char *o = b->s.p + b->s.len;
	*o++ = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x20 || ch >= 0x7f) {
			b->bad = true;
			return;
		}
		if (ch == '"' || ch == '\\')
			*o++ = '\\';
		*o++ = (char)ch;
	}
	*o++ = '"';
	sl_buf_setlen(&b->s, (size_t)(o - b->s.p));
}

static void rb_int(struct rbuf *b, long long v)
{
	char t[24];
	int k = sizeof(t);
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	do {
		t[--k] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		t[--k] = '-';
	rb_raw(b, t + k, sizeof(t) - (size_t)k);
}

static void rb_time(struct rbuf *b, int64_t ns)
{
	if (ns <= 0) {
		RB_LIT(b, "null");
		return;
	}
	char t[32];
	ctl_time_fmt(ns, t);
	rb_str(b, t);
}

static void rb_bool(struct rbuf *b, bool v)
{
	if (v)
		RB_LIT(b, "true");
	else
		RB_LIT(b, "false");
}

/* The score object as place_json.c's place_score_to_json. */
static void rb_score(struct rbuf *b, const struct place_score *s)
{
	RB_LIT(b, "{\"bottleneck_gbps\":");
	rb_int(b, s->bottleneck_gbps);
	RB_LIT(b, ",\"total_gbps\":");
	rb_int(b, s->total_gbps);
	RB_LIT(b, ",\"numa_spanned\":");
	rb_int(b, s->numa_spanned);
	RB_LIT(b, ",\"nic_rails\":");
	rb_int(b, s->nics);
	RB_LIT(b, ",\"free_after\":");
	rb_int(b, s->free_after);
	RB_LIT(b, ",\"stranded_after\":");
	rb_int(b, s->stranded_after);
	RB_LIT(b, ",\"price_hint\":");
	rb_int(b, (long long)s->price_hint);
	RB_LIT(b, ",\"nodes\":");
	rb_int(b, s->nodes);
	RB_LIT(b, ",\"leaves\":");
	rb_int(b, s->leaves);
	RB_LIT(b, ",\"domains\":");
	rb_int(b, s->domains);
	RB_LIT(b, ",\"rails_aligned\":");
	rb_bool(b, s->rails_aligned);
	RB_LIT(b, ",\"full_quality\":");
	rb_bool(b, s->full_quality);
	if (s->leaf_kept > 0) {
		RB_LIT(b, ",\"leaf_kept\":");
		rb_int(b, s->leaf_kept);
	}
	if (s->frag) {
		RB_LIT(b, ",\"fragmentation\":{\"policy\":\"frag\",\"delta_milli\":");
		rb_int(b, (long long)s->frag_milli);
		RB_LIT(b, ",\"bestfit_delta_milli\":");
		rb_int(b, (long long)s->bestfit_milli);
		RB_LIT(b, ",\"bestfit_same\":");
		rb_bool(b, s->bestfit_same);
		RB_LIT(b, "}");
	}
	RB_LIT(b, "}");
}

/* As place_json.c's pick_to_json. */
static void rb_pick(struct rbuf *b, const struct fleet *f, const struct place_pick *pk)
{
	const struct fleet_node *n = &f->nodes[pk->node];
	RB_LIT(b, "{\"node\":");
	rb_str(b, n->name);
	RB_LIT(b, ",\"type\":");
	rb_str(b, f->types[n->type].name);
	RB_LIT(b, ",\"site\":");
	rb_str(b, f->sites[n->site].name);
	RB_LIT(b, ",\"gpus\":[");
	bool first = true;
	for (int i = 0; i < TOPO_MAX_GPUS; i++)
		if (pk->gpus & (1u << i)) {
			if (!first)
				RB_LIT(b, ",");
			first = false;
			rb_int(b, i);
		}
	RB_LIT(b, "],\"cpus\":");
	rb_int(b, pk->cpus);
	RB_LIT(b, ",\"mem_mib\":");
	rb_int(b, (long long)pk->mem_mib);
	RB_LIT(b, ",\"leaf\":");
	rb_str(b, f->leaves[n->leaf].name);
	if (n->domain >= 0) {
		RB_LIT(b, ",\"nvlink_domain\":");
		rb_str(b, f->domains[n->domain].name);
	}
	if (pk->milli > 0) {
		RB_LIT(b, ",\"gpu\":");
		rb_int(b, pk->gpu);
		RB_LIT(b, ",\"milli\":");
		rb_int(b, pk->milli);
	}
	RB_LIT(b, ",\"quality\":{\"bottleneck_gbps\":");
	rb_int(b, pk->q.bottleneck_gbps);
	RB_LIT(b, ",\"total_gbps\":");
	rb_int(b, pk->q.total_gbps);
	RB_LIT(b, ",\"numa_spanned\":");
	rb_int(b, pk->q.numa_spanned);
	RB_LIT(b, ",\"nic_rails\":");
	rb_int(b, pk->q.nics);
	RB_LIT(b, "}}");
}

/* The row as lease_to_json(c, l, false) writes it: lease_row_fields() in order;
 * *split where the key after the seam ("created_at") starts. */
static void rb_lease(struct rbuf *b, struct ctl *c, const struct ctl_lease *l, size_t *split)
{
	if (!l->request) {
		b->bad = true; /* jansson leaves such keys out: let it */
		return;
	}
	size_t n;
	const struct lease_field *t = lease_row_fields(&n);
	bool first = true, seam = false;
	RB_LIT(b, "{");
	for (size_t k = 0; k < n; k++) {
		const struct lease_field *f = &t[k];
		const char *p = (const char *)l + f->offset;
		if (!lease_field_present(f, l, false))
			continue;
		if (f->kind == LF_SEAM) {
			seam = true;
			continue;
		}
		if (!first)
			RB_LIT(b, ",");
		first = false;
		if (seam) {
			*split = b->s.len;
			seam = false;
		}
		rb_str(b, f->key);
		RB_LIT(b, ":");
		switch (f->kind) {
		case LF_INT:
		case LF_INT64:
			rb_int(b, (long long)lease_field_scalar(f, l));
			break;
		case LF_TIME:
			rb_time(b, lease_field_scalar(f, l));
			break;
		case LF_BOOL:
			rb_bool(b, lease_field_scalar(f, l) != 0);
			break;
		case LF_ID:
			rb_str(b, p);
			break;
		case LF_NAME: {
			const char *name;
			memcpy(&name, p, sizeof(name));
			rb_str(b, name);
			break;
		}
		case LF_PLAN:
			rb_str(b, plan_name(l->req->plan));
			break;
		case LF_STATE:
			rb_str(b, lease_state_name(l->state));
			break;
		case LF_REQUEST:
			rb_raw(b, l->request, strlen(l->request)); /* jansson's own text */
			break;
		case LF_PLACEMENT:
			RB_LIT(b, "[");
			for (int i = 0; i < l->pl.npicks; i++) {
				if (i)
					RB_LIT(b, ",");
				rb_pick(b, c->fleet, &l->pl.picks[i]);
			}
			RB_LIT(b, "]");
			break;
		case LF_SCORE:
			rb_score(b, lease_score(l));
			break;
		case LF_QUEUE:
			RB_LIT(b, "{\"position\":0,\"reason\":");
			rb_str(b, ctl_lease_reason(l));
			RB_LIT(b, "}");
			break;
		case LF_HISTORY:
			RB_LIT(b, "[");
			for (int i = 0; i < l->nhist; i++) {
				if (i)
					RB_LIT(b, ",");
				RB_LIT(b, "{\"at\":");
				rb_time(b, l->hist[i].at_ns);
				RB_LIT(b, ",\"state\":");
				rb_str(b, lease_state_name(l->hist[i].state));
				RB_LIT(b, ",\"reason\":");
				rb_str(b, l->hist[i].reason ? l->hist[i].reason : "");
				RB_LIT(b, "}");
			}
			RB_LIT(b, "]");
			break;
		case LF_EXPLANATION: /* answers only: never present in a row */
		case LF_SEAM:
			b->bad = true;
			break;
		}
	}
	RB_LIT(b, "}");
}

char *lease_row_dump(struct ctl *c, const struct ctl_lease *l, size_t *len, size_t *split)
{
	struct rbuf b = {SL_BUF_INIT(LEASE_ROW_MAX), false};
	size_t sp = 0, n = 0;
	char *row = NULL;
	rb_grow(&b, LEASE_ROW_FIRST);
	rb_lease(&b, c, l, &sp);
	if (b.bad || sl_buf_detach(&b.s, &row, &n)) {
		sl_buf_release(&b.s);
		return lease_row_dump_json(c, l, len, split);
	}
#ifndef NDEBUG
	{
		/* Debug builds (the tests) check the text against jansson's. */
		size_t jl = 0, js = 0;
		char *j = lease_row_dump_json(c, l, &jl, &js);
		bool same = !j || (jl == n && js == sp && !memcmp(j, row, jl));
		if (!same)
			sl_log_error("lease row differs from jansson's", "lease=%s row=%s jansson=%s",
				     l->id, row, j);
		assert(same && "lease row differs from jansson's");
		free(j);
	}
#endif
	*len = n;
	*split = sp;
	return row;
}

/* h_ledger.c - GET /v1/tenants/{name}/ledger: a tenant's postings (top-ups,
 * charges, credits, refunds, credit line changes), oldest first.
 *
 * ?type=topup|charge|... keeps one kind; ?limit=N&after=ID pages as the other
 * list routes do (paging.h). The tenant rule is the billing API's: another
 * tenant's ledger is the 404 of a tenant that does not exist.
 *
 * Read from the store, not memory (the ledger keeps balances, not every
 * posting: billing_store.c): the tenant's postings in posting order, from
 * the seq of the posting named by ?after. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing.h"
#include "billing_int.h"
#include "ctl_int.h"
#include "paging.h"

static json_t *entry_json(struct ctl *c, const struct ledger_posting *p)
{
	char text[MONEY_FMT_SIZE];
	struct sl_diag d;
	bool fmt = money_format(p->amount, c->billing->cur, text, sizeof(text), &d) == SL_OK;
	json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:o, s:s}", "id", p->id, "type",
			      ledger_type_name(p->type), "amount", (json_int_t)p->amount,
			      "amount_text", fmt ? text : "", "at",
			      ctl_time_json(p->at_ms * 1000000), "reason", p->reason);
	if (o && p->type == LEDGER_CHARGE)
		json_object_set_new(o, "plan", json_string(plan_name(p->plan)));
	return o;
}

/* The page being built: items of the wanted type, up to limit (-1: all);
 * more once one more matching posting was seen after them. */
struct stmt {
	struct ctl *c;
	json_t *items;
	const char *type;
	int limit, taken;
	char last[LEDGER_ID_MAX];
	bool more;
};

static bool stmt_row(void *arg, const struct ledger_posting *p, uint64_t seq)
{
	struct stmt *st = arg;
	(void)seq;
	if (st->type && strcmp(st->type, ledger_type_name(p->type)))
		return true;
	if (st->limit >= 0 && st->taken == st->limit) {
		st->more = true;
		return false;
	}
	json_array_append_new(st->items, entry_json(st->c, p));
	snprintf(st->last, sizeof(st->last), "%s", p->id);
	st->taken++;
	return true;
}

void h_ledger(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	const struct ctl_tenant *t = billing_path_tenant(call, call->param[0]);
	struct ctl_page pg;
	if (!t || !ctl_page_parse(call, &pg))
		return;
	const char *type = http_request_param(call->req, "type");
	if (type) {
		bool known = false;
		for (int k = 0; k < LEDGER_TYPE__COUNT && !known; k++)
			known = !strcmp(type, ledger_type_name((enum ledger_type)k));
		if (!known) {
			char msg[SL_DIAG_MSG];
			snprintf(msg, sizeof(msg), "?type: no posting type '%.40s'", type);
			ctl_answer_error(call, SL_EINVAL, msg,
					 "use topup, charge, hosting_fee, credit, refund, "
					 "credit_line_up or credit_line_down");
			return;
		}
	}
	uint64_t after = 0;
	if (pg.after) {
		char *row = NULL;
		struct ledger_posting p;
		struct sl_diag d;
		sl_diag_clear(&d);
		bool ok = store_get(c->store, STORE_POSTINGS, pg.after, &row, &d) == SL_OK &&
			  bill_posting_parse(pg.after, row, &p, &after, &d) == SL_OK &&
			  !strcmp(p.tenant, t->name);
		free(row);
		if (!ok) {
			ctl_answer_error(call, SL_EINVAL, "?after: no posting with that id",
					 "pass the \"next\" of the previous page");
			return;
		}
	}
	struct stmt st = {c, json_array(), type, pg.paged ? pg.limit : -1, 0, "", false};
	struct sl_diag d;
	sl_diag_clear(&d);
	if (st.items && bill_postings_since(c, t->name, after, stmt_row, &st, &d)) {
		json_decref(st.items);
		ctl_answer_diag(call, SL_EIO, &d);
		return;
	}
	json_t *items = st.items;
	const char *next = st.more ? st.last : NULL;
	json_t *o = ctl_page_answer(&pg, items, next);
	if (!o) {
		ctl_answer_error(call, SL_ENOMEM, "out of memory", NULL);
		return;
	}
	ctl_answer_json(call, 200, o);
}

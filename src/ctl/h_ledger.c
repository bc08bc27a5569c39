/* h_ledger.c - GET /v1/tenants/{name}/ledger: a tenant's postings (top-ups,
 * charges, credits, refunds, credit line changes), oldest first.
 *
 * ?type=topup|charge|... keeps one kind; ?limit=N&after=ID pages as the other
 * list routes do (paging.h). The tenant rule is the billing API's: another
 * tenant's ledger is the 404 of a tenant that does not exist. */
#include <stdio.h>
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
	const struct ledger *l = c->billing->ledger;
	size_t n = ledger_posting_count(l), i = 0;
	if (pg.after) {
		for (; i < n && strcmp(ledger_posting_at(l, i)->id, pg.after); i++)
			;
		if (i == n) {
			ctl_answer_error(call, SL_EINVAL, "?after: no posting with that id",
					 "pass the \"next\" of the previous page");
			return;
		}
		i++;
	}
	json_t *items = json_array();
	const char *next = NULL;
	int taken = 0;
	for (; items && i < n; i++) {
		const struct ledger_posting *p = ledger_posting_at(l, i);
		if (strcmp(p->tenant, t->name) || (type && strcmp(type, ledger_type_name(p->type))))
			continue;
		if (pg.paged && taken == pg.limit) {
			next = ledger_posting_at(l, i - 1)->id;
			break;
		}
		json_array_append_new(items, entry_json(c, p));
		taken++;
	}
	json_t *o = ctl_page_answer(&pg, items, next);
	if (!o) {
		ctl_answer_error(call, SL_ENOMEM, "out of memory", NULL);
		return;
	}
	ctl_answer_json(call, 200, o);
}

/* test_invoice.c - a month's invoice in Asia/Shanghai from leases of every
 * plan, a hosted server and ledger credits: the lines, their order, the
 * totals; golden JSON and CSV bytes that regenerate identically whatever the
 * input order; months in the future and bad input refused with nothing
 * built. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "invoice.h"

#define H INT64_C(3600000)
#define DAY (24 * H)

static int64_t at(const char *s)
{
	int64_t ms = 0;
	struct sl_diag d;
	if (cal_parse_rfc3339(s, &ms, &d) != SL_OK)
		fail_msg("parse '%s': %s", s, d.msg);
	return ms;
}

static void put(struct pricebook *pb, enum price_scope sc, const char *name,
		const char *model, enum plan plan, const char *from,
		int64_t price)
{
	struct price_entry e;
	struct sl_diag d;
	if (price_entry_init(&e, sc, name, model, plan, at(from), price, &d) ||
	    pricebook_restore(pb, &e, &d))
		fail_msg("put: %s", d.msg);
}

static void post(struct ledger *l, const char *id, enum ledger_type t,
		 const char *tenant, int64_t amount, const char *when,
		 const char *reason)
{
	struct ledger_posting p;
	struct sl_diag d;
	if (ledger_posting_init(&p, id, t, tenant, PLAN_HOURLY, amount, at(when),
				reason, &d) ||
	    ledger_apply(l, &p, NULL, &d))
		fail_msg("post %s: %s", id, d.msg);
}

struct fixture {
	struct pricebook *pb;
	struct ledger *lg;
	struct cal_zone zone;
	struct rating_event ev_a[3], ev_b[2], ev_h[1], ev_o[2];
	struct rating_lease leases[5];
};

static struct fixture *fixture_new(void)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	assert_int_equal(pricebook_new(&f->pb), SL_OK);
	assert_int_equal(ledger_new(&f->lg), SL_OK);
	assert_int_equal(cal_zone_parse("Asia/Shanghai", &f->zone, NULL), SL_OK);
	const char *t0 = "2026-01-01T00:00:00Z";
	put(f->pb, PRICE_GLOBAL, "", "h100-sxm", PLAN_HOURLY, t0, 1999);
	put(f->pb, PRICE_REGION, "cn-east", "h100-sxm", PLAN_SPOT, t0, 800);
	put(f->pb, PRICE_REGION, "cn-east", "h100-sxm", PLAN_SPOT,
	    "2026-11-15T12:00:00+08:00", 600);
	put(f->pb, PRICE_GLOBAL, "", "h100-sxm", PLAN_MONTHLY, t0, 1000000);
	put(f->pb, PRICE_SITE, "sh-1", "", PLAN_HOSTING, t0, 300000);
	/* A: hourly, Oct 31 22:00 .. Nov 1 02:30 local, 8 GPUs then 4 from
	 * 01:00; only Nov counts: 8 x 1h + 4 x 1.5h = 14 GPU-h. */
	f->ev_a[0] = (struct rating_event){at("2026-10-31T22:00:00+08:00"),
					   RATING_STARTED, 8, 0};
	f->ev_a[1] = (struct rating_event){at("2026-11-01T01:00:00+08:00"),
					   RATING_SCALED, 4, 0};
	f->ev_a[2] = (struct rating_event){at("2026-11-01T02:30:00+08:00"),
					   RATING_ENDED, 0, RATING_END_RELEASED};
	/* B: spot, 1 GPU over the price change, preempted. */
	f->ev_b[0] = (struct rating_event){at("2026-11-15T11:00:00.500+08:00"),
					   RATING_STARTED, 1, 0};
	f->ev_b[1] = (struct rating_event){at("2026-11-15T13:00:00+08:00"),
					   RATING_ENDED, 0, RATING_END_PREEMPTED};
	/* Hosted server since September, still hosted. */
	f->ev_h[0] = (struct rating_event){at("2026-09-01T00:00:00+08:00"),
					   RATING_STARTED, 1, 0};
	/* Another tenant's lease: never on acme's invoice. */
	f->ev_o[0] = (struct rating_event){at("2026-11-02T00:00:00+08:00"),
					   RATING_STARTED, 64, 0};
	f->ev_o[1] = (struct rating_event){at("2026-11-03T00:00:00+08:00"),
					   RATING_ENDED, 0, 0};
	f->leases[0] = (struct rating_lease){"lease-a", "acme", "sh-1", "cn-east",
					     "h100-sxm", PLAN_HOURLY, f->ev_a, 3,
					     0, 0, 0};
	f->leases[1] = (struct rating_lease){"lease-b", "acme", "sh-1", "cn-east",
					     "h100-sxm", PLAN_SPOT, f->ev_b, 2,
					     0, 0, 0};
	f->leases[2] = (struct rating_lease){
		"lease-m", "acme", "sh-1", "cn-east", "h100-sxm", PLAN_MONTHLY,
		NULL, 0, at("2026-10-20T09:00:00+08:00"), 3, 2};
	f->leases[3] = (struct rating_lease){"srv-1", "acme", "sh-1", "cn-east",
					     "", PLAN_HOSTING, f->ev_h, 1,
					     0, 0, 0};
	f->leases[4] = (struct rating_lease){"lease-o", "other", "sh-1",
					     "cn-east", "h100-sxm", PLAN_HOURLY,
					     f->ev_o, 2, 0, 0, 0};
	post(f->lg, "top-1", LEDGER_TOPUP, "acme", 10000000,
	     "2026-11-01T09:00:00+08:00", "bank transfer");
	post(f->lg, "sla-1", LEDGER_CREDIT, "acme", 5000,
	     "2026-11-20T10:00:00+08:00", "SLA: node \"gpu-7\" down, 2h");
	post(f->lg, "ref-1", LEDGER_REFUND, "acme", 123,
	     "2026-11-21T10:00:00+08:00", "double charge, lease-b");
	post(f->lg, "sla-2", LEDGER_CREDIT, "acme", 777,
	     "2026-12-01T00:00:00+08:00", "next month");
	post(f->lg, "sla-3", LEDGER_CREDIT, "other", 999,
	     "2026-11-20T10:00:00+08:00", "not acme");
	return f;
}

static void fixture_free(struct fixture *f)
{
	pricebook_free(f->pb);
	ledger_free(f->lg);
	free(f);
}

static struct invoice_input input(struct fixture *f, const char *month,
				  const char *now)
{
	struct invoice_input in;
	memset(&in, 0, sizeof(in));
	in.tenant = "acme";
	assert_int_equal(cal_month_parse(month, &in.month, NULL), SL_OK);
	in.zone = &f->zone;
	in.currency = money_currency_find("CNY");
	in.prices = f->pb;
	in.leases = f->leases;
	in.nleases = 5;
	in.ledger = f->lg;
	in.now_ms = at(now);
	return in;
}

static void test_lines_and_totals(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	struct invoice_input in = input(f, "2026-11", "2026-12-05T00:00:00Z");
	struct invoice inv;
	invoice_init(&inv);
	struct sl_diag d;
	if (invoice_build(&inv, &in, &d))
		fail_msg("build: %s", d.msg);
	assert_true(inv.complete);
	assert_int_equal(inv.nlines, 7);
	/* usage: lease-a (14 GPU-h at 19.99), lease-b at 8.00 then 6.00. */
	const struct invoice_line *l = inv.lines;
	assert_int_equal(l[0].kind, INVOICE_USAGE);
	assert_string_equal(l[0].lease, "lease-a");
	assert_int_equal(l[0].quantity, 14 * H);
	assert_int_equal(l[0].amount, 14 * 1999);
	assert_int_equal(l[0].from_ms, at("2026-11-01T00:00:00+08:00"));
	assert_string_equal(l[1].lease, "lease-b");
	assert_int_equal(l[1].unit_price, 800);
	assert_int_equal(l[1].quantity, H - 500);
	assert_int_equal(l[1].amount, 800); /* 799.888.. -> 800 */
	assert_int_equal(l[2].unit_price, 600);
	assert_int_equal(l[2].amount, 600);
	/* monthly: the installment due Nov 20 09:00. */
	assert_int_equal(l[3].kind, INVOICE_MONTHLY);
	assert_int_equal(l[3].from_ms, at("2026-11-20T09:00:00+08:00"));
	assert_int_equal(l[3].quantity, 2);
	assert_int_equal(l[3].amount, 2000000);
	/* hosting: the whole month pays the fee. */
	assert_int_equal(l[4].kind, INVOICE_HOSTING);
	assert_int_equal(l[4].amount, 300000);
	assert_int_equal(l[4].quantity, 30 * DAY);
	assert_int_equal(l[5].kind, INVOICE_CREDIT);
	assert_string_equal(l[5].posting, "sla-1");
	assert_int_equal(l[5].amount, -5000);
	assert_int_equal(l[6].kind, INVOICE_REFUND);
	assert_int_equal(l[6].amount, -123);
	assert_int_equal(inv.usage, 14 * 1999 + 1400);
	assert_int_equal(inv.monthly, 2000000);
	assert_int_equal(inv.hosting, 300000);
	assert_int_equal(inv.credits, -5123);
	assert_int_equal(inv.total, 14 * 1999 + 1400 + 2000000 + 300000 - 5123);
	invoice_release(&inv);
	fixture_free(f);
}

static const char golden_json[] =
	"{\"tenant\":\"acme\",\"month\":\"2026-11\",\"zone\":\"Asia/Shanghai\","
	"\"currency\":\"CNY\",\"period_start\":\"2026-11-01T00:00:00.000+08:00\","
	"\"period_end\":\"2026-12-01T00:00:00.000+08:00\","
	"\"as_of\":\"2026-11-15T12:30:00.000+08:00\",\"complete\":false,"
	"\"lines\":["
	"{\"kind\":\"usage\",\"lease\":\"lease-a\",\"posting\":\"\","
	"\"plan\":\"hourly\",\"model\":\"h100-sxm\","
	"\"from\":\"2026-11-01T00:00:00.000+08:00\","
	"\"to\":\"2026-11-01T02:30:00.000+08:00\",\"gpu_ms\":50400000,"
	"\"quantity\":50400000,\"unit\":\"gpu_ms\",\"unit_price\":1999,"
	"\"amount\":27986,\"amount_text\":\"279.86\",\"reason\":\"\"},"
	"{\"kind\":\"usage\",\"lease\":\"lease-b\",\"posting\":\"\","
	"\"plan\":\"spot\",\"model\":\"h100-sxm\","
	"\"from\":\"2026-11-15T11:00:00.500+08:00\","
	"\"to\":\"2026-11-15T12:00:00.000+08:00\",\"gpu_ms\":3599500,"
	"\"quantity\":3599500,\"unit\":\"gpu_ms\",\"unit_price\":800,"
	"\"amount\":800,\"amount_text\":\"8.00\",\"reason\":\"\"},"
	"{\"kind\":\"usage\",\"lease\":\"lease-b\",\"posting\":\"\","
	"\"plan\":\"spot\",\"model\":\"h100-sxm\","
	"\"from\":\"2026-11-15T12:00:00.000+08:00\","
	"\"to\":\"2026-11-15T12:30:00.000+08:00\",\"gpu_ms\":1800000,"
	"\"quantity\":1800000,\"unit\":\"gpu_ms\",\"unit_price\":600,"
	"\"amount\":300,\"amount_text\":\"3.00\",\"reason\":\"\"},"
	"{\"kind\":\"hosting\",\"lease\":\"srv-1\",\"posting\":\"\","
	"\"plan\":\"hosting\",\"model\":\"\","
	"\"from\":\"2026-11-01T00:00:00.000+08:00\","
	"\"to\":\"2026-11-15T12:30:00.000+08:00\",\"gpu_ms\":0,"
	"\"quantity\":1254600000,\"unit\":\"server_ms\",\"unit_price\":300000,"
	"\"amount\":145208,\"amount_text\":\"1452.08\",\"reason\":\"\"}"
	"],\"subtotals\":{\"usage\":29086,\"monthly\":0,\"hosting\":145208,\"no_gpu\":0,\"storage\":0,"
	"\"credits\":0},\"total\":174294,\"total_text\":\"1742.94\"}\n";

static const char golden_csv[] =
	"kind,lease,posting,plan,model,from,to,gpu_ms,gpu_seconds,quantity,unit,"
	"unit_price,amount,reason\n"
	"usage,lease-a,,hourly,h100-sxm,2026-11-01T00:00:00.000+08:00,"
	"2026-11-01T02:30:00.000+08:00,50400000,50400.000,50400000,gpu_ms,1999,"
	"27986,\n"
	"usage,lease-b,,spot,h100-sxm,2026-11-15T11:00:00.500+08:00,"
	"2026-11-15T12:00:00.000+08:00,3599500,3599.500,3599500,gpu_ms,800,800,\n"
	"usage,lease-b,,spot,h100-sxm,2026-11-15T12:00:00.000+08:00,"
	"2026-11-15T12:30:00.000+08:00,1800000,1800.000,1800000,gpu_ms,600,300,\n"
	"hosting,srv-1,,hosting,,2026-11-01T00:00:00.000+08:00,"
	"2026-11-15T12:30:00.000+08:00,0,0.000,1254600000,server_ms,300000,"
	"145208,\n"
	"total,,,,,,,,,,,,174294,\n";

/* A month in progress: lines up to now, marked incomplete; the monthly
 * installment (due Nov 20) and the credits (Nov 20, 21) are not yet due. */
static void test_golden_and_reproducible(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	struct invoice_input in = input(f, "2026-11", "2026-11-15T12:30:00+08:00");
	struct invoice inv;
	invoice_init(&inv);
	struct sl_diag d;
	if (invoice_build(&inv, &in, &d))
		fail_msg("build: %s", d.msg);
	char *js = NULL, *csv = NULL;
	size_t jn = 0, cn = 0;
	assert_int_equal(invoice_json(&inv, &js, &jn, &d), SL_OK);
	assert_int_equal(invoice_csv(&inv, &csv, &cn, &d), SL_OK);
	assert_string_equal(js, golden_json);
	assert_string_equal(csv, golden_csv);
	assert_int_equal(jn, strlen(golden_json));
	assert_int_equal(cn, strlen(golden_csv));
	/* Rebuilt from the leases in reverse order: the same bytes. */
	struct rating_lease rev[5];
	for (int i = 0; i < 5; i++)
		rev[i] = f->leases[4 - i];
	in.leases = rev;
	struct invoice inv2;
	invoice_init(&inv2);
	assert_int_equal(invoice_build(&inv2, &in, &d), SL_OK);
	char *js2 = NULL, *csv2 = NULL;
	size_t jn2 = 0, cn2 = 0;
	assert_int_equal(invoice_json(&inv2, &js2, &jn2, &d), SL_OK);
	assert_int_equal(invoice_csv(&inv2, &csv2, &cn2, &d), SL_OK);
	assert_int_equal(jn2, jn);
	assert_memory_equal(js2, js, jn);
	assert_int_equal(cn2, cn);
	assert_memory_equal(csv2, csv, cn);
	free(js);
	free(csv);
	free(js2);
	free(csv2);
	invoice_release(&inv);
	invoice_release(&inv2);
	fixture_free(f);
}

/* The full month's JSON is valid JSON whose numbers add up, and text with
 * quotes, commas and UTF-8 survives both encoders. */
static void test_json_valid_and_csv_quoting(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	post(f->lg, "sla-4", LEDGER_CREDIT, "acme", 1,
	     "2026-11-25T10:00:00+08:00", "\xe8\xa1\xa5\xe5\x81\xbf, \"x\" \\ y");
	struct invoice_input in = input(f, "2026-11", "2027-01-01T00:00:00Z");
	struct invoice inv;
	invoice_init(&inv);
	struct sl_diag d;
	assert_int_equal(invoice_build(&inv, &in, &d), SL_OK);
	char *js = NULL, *csv = NULL;
	size_t jn = 0, cn = 0;
	assert_int_equal(invoice_json(&inv, &js, &jn, &d), SL_OK);
	assert_int_equal(invoice_csv(&inv, &csv, &cn, &d), SL_OK);
	json_error_t err;
	json_t *root = json_loads(js, 0, &err);
	if (!root)
		fail_msg("invalid JSON: %s", err.text);
	json_t *lines = json_object_get(root, "lines");
	assert_int_equal(json_array_size(lines), inv.nlines);
	json_int_t sum = 0;
	for (size_t i = 0; i < json_array_size(lines); i++)
		sum += json_integer_value(
			json_object_get(json_array_get(lines, i), "amount"));
	assert_int_equal(sum, json_integer_value(json_object_get(root, "total")));
	assert_int_equal(sum, inv.total);
	json_t *last = json_array_get(lines, json_array_size(lines) - 2);
	assert_string_equal(json_string_value(json_object_get(last, "reason")),
			    "\xe8\xa1\xa5\xe5\x81\xbf, \"x\" \\ y");
	json_decref(root);
	assert_non_null(strstr(csv, ",\"\xe8\xa1\xa5\xe5\x81\xbf, \"\"x\"\" \\ y\"\n"));
	assert_non_null(strstr(csv, ",\"SLA: node \"\"gpu-7\"\" down, 2h\"\n"));
	free(js);
	free(csv);
	invoice_release(&inv);
	fixture_free(f);
}

static void test_refusals(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	struct invoice inv;
	invoice_init(&inv);
	struct sl_diag d;
	/* A month that has not begun. */
	struct invoice_input in = input(f, "2026-12", "2026-11-30T15:59:59.999Z");
	sl_diag_clear(&d);
	assert_int_equal(invoice_build(&inv, &in, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "future"));
	assert_int_equal(inv.nlines, 0);
	assert_null(inv.lines);
	/* One millisecond later it has begun (Shanghai midnight). */
	in.now_ms += 1;
	assert_int_equal(invoice_build(&inv, &in, &d), SL_OK);
	assert_false(inv.complete);
	assert_int_equal(inv.as_of_ms, inv.start_ms);
	/* A lease without a price: refused, and inv emptied. */
	put(f->pb, PRICE_GLOBAL, "", "l40s", PLAN_SPOT, "2030-01-01T00:00:00Z", 1);
	struct rating_event ev[1] = {
		{at("2026-11-03T00:00:00Z"), RATING_STARTED, 1, 0}};
	f->leases[4] = (struct rating_lease){"lease-x", "acme", NULL, NULL, "l40s",
					     PLAN_SPOT, ev, 1, 0, 0, 0};
	in = input(f, "2026-11", "2026-12-05T00:00:00Z");
	sl_diag_clear(&d);
	assert_int_equal(invoice_build(&inv, &in, &d), SL_ENOTFOUND);
	assert_non_null(strstr(d.msg, "l40s"));
	assert_int_equal(inv.nlines, 0);
	/* A lease without a tenant; a bad tenant; a missing zone. */
	f->leases[4].tenant = NULL;
	assert_int_equal(invoice_build(&inv, &in, &d), SL_EINVAL);
	f->leases[4].tenant = "other";
	in.tenant = "";
	assert_int_equal(invoice_build(&inv, &in, &d), SL_EINVAL);
	in.tenant = "acme";
	in.zone = NULL;
	assert_int_equal(invoice_build(&inv, &in, &d), SL_EINVAL);
	char *s = NULL;
	size_t n;
	assert_int_equal(invoice_json(&inv, &s, &n, &d), SL_EINVAL);
	assert_null(s);
	invoice_release(&inv);
	fixture_free(f);
}

/* The operators' summary adds up the same lines as the invoices, over all
 * tenants, per region, model and plan. */
static void test_revenue(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	struct invoice_input in = input(f, "2026-11", "2026-12-05T00:00:00Z");
	struct invoice_revenue_row *rows = NULL;
	size_t n = 0;
	struct sl_diag d;
	assert_int_equal(invoice_revenue(&in, &rows, &n, &d), SL_OK);
	assert_int_equal(n, 4);
	assert_string_equal(rows[0].model, "");
	assert_int_equal(rows[0].plan, PLAN_HOSTING);
	assert_int_equal(rows[0].amount, 300000);
	assert_int_equal(rows[1].plan, PLAN_HOURLY);
	assert_string_equal(rows[1].region, "cn-east");
	assert_int_equal(rows[1].amount, 14 * 1999 + 64 * 24 * 1999);
	assert_int_equal(rows[1].quantity, (14 + 64 * 24) * H);
	assert_int_equal(rows[2].plan, PLAN_SPOT);
	assert_int_equal(rows[2].amount, 1400);
	assert_int_equal(rows[3].plan, PLAN_MONTHLY);
	assert_int_equal(rows[3].amount, 2000000);
	free(rows);
	in = input(f, "2027-01", "2026-12-05T00:00:00Z");
	assert_int_equal(invoice_revenue(&in, &rows, &n, &d), SL_EINVAL);
	assert_null(rows);
	assert_int_equal(n, 0);
	fixture_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_and_totals),
		cmocka_unit_test(test_golden_and_reproducible),
		cmocka_unit_test(test_json_valid_and_csv_quoting),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_revenue),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* ledger.c - postings in an append-only array, accounts in another, both
 * found by name through strmap.
 *
 * A posting is checked completely (fields, replay, every bound it could
 * pass) before anything is written, so a refused posting leaves no trace and
 * the books stay balanced. Postings are kept whole, in order, because
 * invoices and audits are regenerated from them. */
#include "ledger.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "calendar.h"
#include "money.h"
#include "strmap.h"

struct ledger {
	struct ledger_posting *p;
	size_t np, capp;
	struct ledger_account *a;
	size_t na, capa;
	struct strmap *ids;   /* posting id -> index in p */
	struct strmap *accts; /* account name -> index in a */
	int64_t debits, credits;
};

static const char *const type_names[LEDGER_TYPE__COUNT] = {
	"topup",  "charge", "hosting_fee",    "credit",
	"refund", "credit_line_up", "credit_line_down"};
static const char *const kind_names[LEDGER_KIND__COUNT] = {
	"tenant", "revenue", "hosting",     "credits",
	"refunds", "cash",   "credit_line", "credit_limits"};

const char *ledger_type_name(enum ledger_type t)
{
	return (unsigned)t < LEDGER_TYPE__COUNT ? type_names[t] : "?";
}

const char *ledger_kind_name(enum ledger_kind k)
{
	return (unsigned)k < LEDGER_KIND__COUNT ? kind_names[k] : "?";
}

static bool tenant_ok(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++) {
		char c = s[n];
		if (n >= LEDGER_TENANT_MAX - 1 ||
		    !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return n > 0;
}

static bool id_ok(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (n >= LEDGER_ID_MAX - 1 || s[n] < 0x21 || s[n] > 0x7e)
			return false;
	return n > 0;
}

/* Valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF) and
 * no control characters, so a reason can go into JSON and CSV as it is. */
static bool reason_ok(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	while (*u) {
		unsigned c = *u;
		int len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2
				   : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
		if (len == 0 || (len == 1 && (c < 0x20 || c == 0x7f)))
			return false;
		unsigned cp = len == 1 ? c : c & (0x7fu >> len);
		for (int i = 1; i < len; i++) {
			if ((u[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (u[i] & 0x3fu);
		}
		static const unsigned min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
		if (cp < min_cp[len] || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0))
			return false;
		u += len;
	}
	return true;
}

static enum sl_err posting_check(const struct ledger_posting *p,
				 struct sl_diag *d)
{
	if (!memchr(p->id, 0, sizeof(p->id)) || !id_ok(p->id)) {
		enum sl_err e = sl_diag_set(d, SL_EINVAL, "bad posting id");
		sl_diag_hint(d, "ids are 1..%d printable ASCII characters without "
				"spaces", LEDGER_ID_MAX - 1);
		return e;
	}
	if ((unsigned)p->type >= LEDGER_TYPE__COUNT)
		return sl_diag_set(d, SL_EINVAL, "posting %s: unknown type", p->id);
	if (!memchr(p->tenant, 0, sizeof(p->tenant)) || !tenant_ok(p->tenant))
		return sl_diag_set(d, SL_EINVAL, "posting %s: bad tenant name",
				   p->id);
	if (p->type == LEDGER_CHARGE &&
	    (unsigned)p->plan >= PLAN__COUNT)
		return sl_diag_set(d, SL_EINVAL, "posting %s: bad plan", p->id);
	if (p->amount <= 0) {
		enum sl_err e = sl_diag_set(d, SL_EINVAL, "posting %s: amount %lld "
					    "is not positive", p->id,
					    (long long)p->amount);
		sl_diag_hint(d, "a posting moves a positive amount; its type "
				"says which way");
		return e;
	}
	if (p->amount > MONEY_MAX)
		return sl_diag_set(d, SL_ELIMIT, "posting %s: amount exceeds the "
				   "bound of %lld minor units", p->id,
				   (long long)MONEY_MAX);
	if (!memchr(p->reason, 0, sizeof(p->reason)) || !reason_ok(p->reason))
		return sl_diag_set(d, SL_EINVAL, "posting %s: the reason must be "
				   "UTF-8 text without control characters",
				   p->id);
	return cal_check_instant(p->at_ms, d);
}

static enum sl_err copy_str(char *dst, size_t cap, const char *src,
			    const char *what, struct sl_diag *d)
{
	size_t n = src ? strnlen(src, cap) : 0;
	if (n >= cap)
		return sl_diag_set(d, SL_ELIMIT, "%s longer than %zu bytes", what,
				   cap - 1);
	memset(dst, 0, cap);
	if (n)
		memcpy(dst, src, n);
	return SL_OK;
}

enum sl_err ledger_posting_init(struct ledger_posting *p, const char *id,
				enum ledger_type type, const char *tenant,
				enum plan plan, int64_t amount,
				int64_t at_ms, const char *reason,
				struct sl_diag *d)
{
	struct ledger_posting t;
	memset(&t, 0, sizeof(t));
	enum sl_err e = copy_str(t.id, sizeof(t.id), id, "posting id", d);
	if (!e)
		e = copy_str(t.tenant, sizeof(t.tenant), tenant, "tenant", d);
	if (!e)
		e = copy_str(t.reason, sizeof(t.reason), reason, "reason", d);
	if (e)
		return e;
	t.type = type;
	t.plan = type == LEDGER_CHARGE ? plan : PLAN_HOURLY;
	t.amount = amount;
	t.at_ms = at_ms;
	e = posting_check(&t, d);
	if (!e)
		*p = t;
	return e;
}

static void acct(struct ledger_account *a, enum ledger_kind k, const char *key)
{
	memset(a, 0, sizeof(*a));
	a->kind = k;
	sl_strcpy(a->key, sizeof(a->key), key);
}

void ledger_posting_accounts(const struct ledger_posting *p,
			     struct ledger_account *debit,
			     struct ledger_account *credit)
{
	const char *t = p->tenant;
	switch (p->type) {
	case LEDGER_TOPUP:
		acct(debit, LEDGER_ACCT_CASH, "");
		acct(credit, LEDGER_ACCT_TENANT, t);
		break;
	case LEDGER_CHARGE:
		acct(debit, LEDGER_ACCT_TENANT, t);
		acct(credit, LEDGER_ACCT_REVENUE, plan_name(p->plan));
		break;
	case LEDGER_HOSTING_FEE:
		acct(debit, LEDGER_ACCT_TENANT, t);
		acct(credit, LEDGER_ACCT_HOSTING, "");
		break;
	case LEDGER_CREDIT:
		acct(debit, LEDGER_ACCT_CREDITS, "");
		acct(credit, LEDGER_ACCT_TENANT, t);
		break;
	case LEDGER_REFUND:
		acct(debit, LEDGER_ACCT_REFUNDS, "");
		acct(credit, LEDGER_ACCT_TENANT, t);
		break;
	case LEDGER_CREDIT_LINE_UP:
		acct(debit, LEDGER_ACCT_CREDIT_LIMITS, "");
		acct(credit, LEDGER_ACCT_CREDIT_LINE, t);
		break;
	case LEDGER_CREDIT_LINE_DOWN:
	default:
		acct(debit, LEDGER_ACCT_CREDIT_LINE, t);
		acct(credit, LEDGER_ACCT_CREDIT_LIMITS, "");
		break;
	}
}

enum sl_err ledger_new(struct ledger **out)
{
	struct ledger *l = calloc(1, sizeof(*l));
	if (!l)
		return SL_ENOMEM;
	if (strmap_new(&l->ids) || strmap_new(&l->accts)) {
		ledger_free(l);
		return SL_ENOMEM;
	}
	*out = l;
	return SL_OK;
}

void ledger_free(struct ledger *l)
{
	if (!l)
		return;
	strmap_free(l->ids);
	strmap_free(l->accts);
	free(l->p);
	free(l->a);
	free(l);
}

static void acct_name(enum ledger_kind k, const char *key, char *buf,
		      size_t n)
{
	snprintf(buf, n, "%d:%s", (int)k, key);
}

/* Index of the account, or -1. */
static int acct_find(const struct ledger *l, enum ledger_kind k,
		     const char *key)
{
	char name[LEDGER_TENANT_MAX + 8];
	if (!key || strnlen(key, LEDGER_TENANT_MAX) >= LEDGER_TENANT_MAX)
		return -1;
	acct_name(k, key, name, sizeof(name));
	return strmap_get(l->accts, name, -1);
}

/* Index of the account, created when new. */
static enum sl_err acct_get(struct ledger *l, const struct ledger_account *a,
			    int *idx)
{
	int i = acct_find(l, a->kind, a->key);
	if (i >= 0) {
		*idx = i;
		return SL_OK;
	}
	if (l->na >= LEDGER_MAX_ACCOUNTS)
		return SL_ELIMIT;
	if (sl_grow(&l->a, &l->capa, l->na + 1, LEDGER_MAX_ACCOUNTS))
		return SL_ENOMEM;
	char name[LEDGER_TENANT_MAX + 8];
	acct_name(a->kind, a->key, name, sizeof(name));
	enum sl_err e = strmap_add(l->accts, name, (int)l->na);
	if (e)
		return e;
	l->a[l->na] = *a;
	*idx = (int)l->na++;
	return SL_OK;
}

bool ledger_posting_same(const struct ledger_posting *a,
			 const struct ledger_posting *b)
{
	return a->type == b->type && strcmp(a->tenant, b->tenant) == 0 &&
	       a->plan == b->plan && a->amount == b->amount &&
	       a->at_ms == b->at_ms && strcmp(a->reason, b->reason) == 0;
}

/* Whether adding amount keeps a total within MONEY_MAX. */
static bool fits(int64_t total, int64_t amount)
{
	return total <= MONEY_MAX - amount;
}

enum sl_err ledger_apply(struct ledger *l, const struct ledger_posting *p,
			 bool *applied, struct sl_diag *d)
{
	if (applied)
		*applied = false;
	enum sl_err e = posting_check(p, d);
	if (e)
		return e;
	int prev = strmap_get(l->ids, p->id, -1);
	if (prev >= 0) {
		if (ledger_posting_same(&l->p[prev], p))
			return SL_OK;
		enum sl_err r = sl_diag_set(d, SL_ECONFLICT, "posting id %s was "
					    "already applied with different "
					    "content", p->id);
		sl_diag_hint(d, "a posting id names one posting forever; use a "
				"new id for a new posting");
		return r;
	}
	if (p->type == LEDGER_CREDIT_LINE_DOWN &&
	    p->amount > ledger_credit_line(l, p->tenant)) {
		enum sl_err r = sl_diag_set(d, SL_EINVAL, "posting %s: lowering "
					    "the credit line of %s by %lld would "
					    "make it negative (it is %lld)",
					    p->id, p->tenant, (long long)p->amount,
					    (long long)ledger_credit_line(
						    l, p->tenant));
		sl_diag_hint(d, "lower it by at most its current amount");
		return r;
	}
	struct ledger_account da, ca;
	ledger_posting_accounts(p, &da, &ca);
	int di = acct_find(l, da.kind, da.key), ci = acct_find(l, ca.kind, ca.key);
	if ((di >= 0 && !fits(l->a[di].debits, p->amount)) ||
	    (ci >= 0 && !fits(l->a[ci].credits, p->amount)) ||
	    !fits(l->debits, p->amount))
		return sl_diag_set(d, SL_ELIMIT, "posting %s: account totals would "
				   "exceed the bound of %lld minor units", p->id,
				   (long long)MONEY_MAX);
	if (l->np >= LEDGER_MAX_POSTINGS)
		return sl_diag_set(d, SL_ELIMIT, "the ledger holds at most %d "
				   "postings", LEDGER_MAX_POSTINGS);
	if (sl_grow(&l->p, &l->capp, l->np + 1, LEDGER_MAX_POSTINGS))
		return SL_ENOMEM;
	/* Accounts may be created now; an unused new account (if a later step
	 * failed) would only be an empty row, but the only later failure is
	 * strmap's ENOMEM, after which the caller stops anyway. */
	e = acct_get(l, &da, &di);
	if (!e)
		e = acct_get(l, &ca, &ci);
	if (!e)
		e = strmap_add(l->ids, p->id, (int)l->np);
	if (e)
		return sl_diag_set(d, e, "posting %s: %s", p->id,
				   sl_err_message(e));
	l->p[l->np++] = *p;
	l->a[di].debits += p->amount;
	l->a[ci].credits += p->amount;
	l->debits += p->amount;
	l->credits += p->amount;
	if (applied)
		*applied = true;
	return SL_OK;
}

int64_t ledger_balance(const struct ledger *l, enum ledger_kind kind,
		       const char *key)
{
	int i = acct_find(l, kind, key ? key : "");
	return i < 0 ? 0 : l->a[i].credits - l->a[i].debits;
}

int64_t ledger_tenant_balance(const struct ledger *l, const char *tenant)
{
	return ledger_balance(l, LEDGER_ACCT_TENANT, tenant);
}

int64_t ledger_credit_line(const struct ledger *l, const char *tenant)
{
	return ledger_balance(l, LEDGER_ACCT_CREDIT_LINE, tenant);
}

enum sl_err ledger_can_start(const struct ledger *l, const char *tenant,
			     int64_t first_hour, struct sl_diag *d)
{
	if (first_hour < 0)
		return sl_diag_set(d, SL_EINVAL, "negative first-hour cost");
	int64_t bal = ledger_tenant_balance(l, tenant);
	int64_t line = ledger_credit_line(l, tenant);
	/* Both lie within ±MONEY_MAX, so the sum cannot wrap. */
	if (bal + line >= first_hour)
		return SL_OK;
	enum sl_err e = sl_diag_set(d, SL_EQUOTA, "tenant %.63s has a balance "
				    "of %lld and a credit line of %lld; the "
				    "first hour costs %lld (minor units)",
				    tenant ? tenant : "", (long long)bal,
				    (long long)line, (long long)first_hour);
	sl_diag_hint(d, "top up the balance or raise the credit line");
	return e;
}

void ledger_totals(const struct ledger *l, int64_t *debits, int64_t *credits)
{
	int64_t dsum = 0, csum = 0;
	for (size_t i = 0; i < l->na; i++) {
		dsum += l->a[i].debits;
		csum += l->a[i].credits;
	}
	*debits = dsum;
	*credits = csum;
}

size_t ledger_posting_count(const struct ledger *l)
{
	return l->np;
}

const struct ledger_posting *ledger_posting_at(const struct ledger *l,
					       size_t i)
{
	return i < l->np ? &l->p[i] : NULL;
}

const struct ledger_posting *ledger_find(const struct ledger *l,
					 const char *id)
{
	int i = id ? strmap_get(l->ids, id, -1) : -1;
	return i < 0 ? NULL : &l->p[i];
}

size_t ledger_account_count(const struct ledger *l)
{
	return l->na;
}

const struct ledger_account *ledger_account_at(const struct ledger *l,
					       size_t i)
{
	return i < l->na ? &l->a[i] : NULL;
}

const struct ledger_account *ledger_account_find(const struct ledger *l,
						 enum ledger_kind kind,
						 const char *key)
{
	int i = acct_find(l, kind, key ? key : "");
	return i < 0 ? NULL : &l->a[i];
}

enum sl_err ledger_restore(struct ledger *l, const struct ledger_account *a,
			   struct sl_diag *d)
{
	if ((unsigned)a->kind >= LEDGER_KIND__COUNT)
		return sl_diag_set(d, SL_EINVAL, "stored account: unknown kind");
	bool by_tenant = a->kind == LEDGER_ACCT_TENANT ||
			 a->kind == LEDGER_ACCT_CREDIT_LINE;
	if (!memchr(a->key, 0, sizeof(a->key)) ||
	    (by_tenant ? !tenant_ok(a->key) : a->kind != LEDGER_ACCT_REVENUE && a->key[0]))
		return sl_diag_set(d, SL_EINVAL, "stored %s account: bad key",
				   ledger_kind_name(a->kind));
	if (a->debits < 0 || a->debits > MONEY_MAX || a->credits < 0 ||
	    a->credits > MONEY_MAX)
		return sl_diag_set(d, SL_EINVAL, "stored %s account %s: totals "
				   "outside 0..%lld", ledger_kind_name(a->kind),
				   a->key, (long long)MONEY_MAX);
	if (acct_find(l, a->kind, a->key) >= 0)
		return sl_diag_set(d, SL_EINVAL, "stored %s account %s: restored "
				   "twice", ledger_kind_name(a->kind), a->key);
	if (!fits(l->debits, a->debits) || !fits(l->credits, a->credits))
		return sl_diag_set(d, SL_ELIMIT, "stored accounts: totals exceed "
				   "the bound of %lld minor units",
				   (long long)MONEY_MAX);
	struct ledger_account t;
	acct(&t, a->kind, a->key);
	int i;
	enum sl_err e = acct_get(l, &t, &i);
	if (e)
		return sl_diag_set(d, e, "stored accounts: %s", sl_err_message(e));
	l->a[i].debits = a->debits;
	l->a[i].credits = a->credits;
	l->debits += a->debits;
	l->credits += a->credits;
	return SL_OK;
}

enum sl_err ledger_forget_postings(struct ledger *l)
{
	struct strmap *ids;
	if (strmap_new(&ids))
		return SL_ENOMEM;
	strmap_free(l->ids);
	l->ids = ids;
	free(l->p);
	l->p = NULL;
	l->np = l->capp = 0;
	return SL_OK;
}

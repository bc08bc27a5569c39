/* calendar.c - proleptic Gregorian day arithmetic and fixed-offset zones.
 *
 * Built on one pair of conversions, days <-> (year, month, day), counted in
 * 400-year eras that start on March 1 so the leap day falls at the end of a
 * year and needs no special case. Everything else (month bounds, RFC 3339,
 * adding months) is those two plus a fixed offset, so there is no state, no
 * tz database and nothing that could differ between machines. */
#include "calendar.h"

#include <stdio.h>
#include <string.h>

#include "buf.h"

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int64_t cal_days_from_civil(int64_t y, int m, int d)
{
	/* Years start in March: Jan and Feb belong to the previous year. */
	if (m <= 2)
		y -= 1;
	int64_t era = floor_div(y, 400);
	int64_t yoe = y - era * 400;                      /* 0..399 */
	int64_t mar = (m + 9) % 12;                       /* Mar=0 .. Feb=11 */
	int64_t doy = (153 * mar + 2) / 5 + d - 1;        /* 0..365 */
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; /* 0..146096 */
	return era * 146097 + doe - 719468; /* 719468: 0000-03-01 .. 1970-01-01 */
}

void cal_civil_from_days(int64_t days, int64_t *y, int *m, int *d)
{
	int64_t z = days + 719468;
	int64_t era = floor_div(z, 146097);
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mar = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mar + 2) / 5 + 1);
	*m = (int)(mar < 10 ? mar + 3 : mar - 9);
	*y = yoe + era * 400 + (*m <= 2 ? 1 : 0);
}

bool cal_is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int cal_days_in_month(int64_t y, int m)
{
	static const int len[12] = {31, 28, 31, 30, 31, 30,
				    31, 31, 30, 31, 30, 31};
	if (m < 1 || m > 12)
		return 0;
	return m == 2 && cal_is_leap(y) ? 29 : len[m - 1];
}

static const struct {
	const char *name;
	int32_t offset_s;
} named_zones[] = {
	{"UTC", 0},
	{"Etc/UTC", 0},
	{"GMT", 0},
	{"Z", 0},
	{"Asia/Shanghai", 8 * 3600},
	{"Asia/Hong_Kong", 8 * 3600},
	{"Asia/Taipei", 8 * 3600},
	{"Asia/Singapore", 8 * 3600},
	{"Asia/Kuala_Lumpur", 8 * 3600},
	{"Asia/Manila", 8 * 3600},
	{"Asia/Tokyo", 9 * 3600},
	{"Asia/Seoul", 9 * 3600},
	{"Asia/Kolkata", 5 * 3600 + 1800},
	{"Asia/Dubai", 4 * 3600},
};

void cal_zone_utc(struct cal_zone *z)
{
	memset(z, 0, sizeof(*z));
	sl_strcpy(z->name, sizeof(z->name), "UTC");
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* n digits at s as a number, or -1 when any is not a digit. */
static int digits_at(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* "+8", "+08", "+0800", "+08:00" (and '-') -> seconds; false otherwise. */
static bool parse_offset(const char *s, int32_t *out)
{
	if (*s != '+' && *s != '-')
		return false;
	int sign = *s == '-' ? -1 : 1;
	s++;
	int h = 0, mi = 0, nd = 0;
	while (nd < 5 && is_digit(s[nd]))
		nd++;
	if (nd == 1 || nd == 2) {
		h = digits_at(s, nd);
		s += nd;
		if (*s == ':') {
			mi = digits_at(s + 1, 2);
			if (mi < 0 || is_digit(s[3]))
				return false;
			s += 3;
		}
	} else if (nd == 4) {
		h = digits_at(s, 2);
		mi = digits_at(s + 2, 2);
		s += 4;
	} else {
		return false;
	}
	if (*s || mi > 59)
		return false;
	int32_t off = (int32_t)(sign * (h * 3600 + mi * 60));
	if (off > CAL_MAX_OFFSET_S || off < -CAL_MAX_OFFSET_S)
		return false;
	*out = off;
	return true;
}

enum sl_err cal_zone_parse(const char *name, struct cal_zone *z,
			   struct sl_diag *d)
{
	if (!name || !*name)
		return sl_diag_set(d, SL_EINVAL, "empty time zone name");
	if (strnlen(name, CAL_ZONE_NAME_MAX) >= CAL_ZONE_NAME_MAX)
		return sl_diag_set(d, SL_ELIMIT, "time zone name longer than %d "
				   "characters", CAL_ZONE_NAME_MAX - 1);
	int32_t off = 0;
	bool ok = false;
	for (size_t i = 0; i < sizeof(named_zones) / sizeof(named_zones[0]); i++)
		if (strcmp(named_zones[i].name, name) == 0) {
			off = named_zones[i].offset_s;
			ok = true;
			break;
		}
	if (!ok && strncmp(name, "UTC", 3) == 0)
		ok = parse_offset(name + 3, &off);
	else if (!ok)
		ok = parse_offset(name, &off);
	if (!ok) {
		enum sl_err e = sl_diag_set(d, SL_EINVAL, "unknown or unsupported "
					    "time zone '%s'", name);
		sl_diag_hint(d, "use UTC, a fixed offset such as UTC+08:00, or one "
				"of Asia/Shanghai, Asia/Hong_Kong, Asia/Taipei, "
				"Asia/Singapore, Asia/Tokyo, Asia/Seoul, "
				"Asia/Kolkata, Asia/Dubai (zones with daylight "
				"saving time are not supported)");
		return e;
	}
	memset(z, 0, sizeof(*z));
	memcpy(z->name, name, strlen(name));
	z->offset_s = off;
	return SL_OK;
}

enum sl_err cal_check_instant(int64_t ms, struct sl_diag *d)
{
	if (ms < CAL_MIN_MS || ms >= CAL_END_MS) {
		enum sl_err e = sl_diag_set(d, SL_EINVAL, "instant %lld ms is "
					    "outside the billing calendar",
					    (long long)ms);
		sl_diag_hint(d, "instants lie in years %d..%d (UTC)", CAL_MIN_YEAR,
			     CAL_MAX_YEAR);
		return e;
	}
	return SL_OK;
}

static bool month_valid(struct cal_month m)
{
	return m.year >= CAL_MIN_YEAR && m.year <= CAL_MAX_YEAR && m.month >= 1 &&
	       m.month <= 12;
}

enum sl_err cal_month_parse(const char *s, struct cal_month *m,
			    struct sl_diag *d)
{
	bool ok = s && strlen(s) == 7 && s[4] == '-';
	for (int i = 0; ok && i < 7; i++)
		if (i != 4 && !is_digit(s[i]))
			ok = false;
	struct cal_month v = {0, 0};
	if (ok) {
		v.year = (s[0] - '0') * 1000 + (s[1] - '0') * 100 +
			 (s[2] - '0') * 10 + (s[3] - '0');
		v.month = (s[5] - '0') * 10 + (s[6] - '0');
		ok = month_valid(v);
	}
	if (!ok) {
		enum sl_err e = sl_diag_set(d, SL_EINVAL, "'%.16s' is not a month",
					    s ? s : "");
		sl_diag_hint(d, "write YYYY-MM with a month 01..12 and a year "
				"%d..%d, e.g. 2026-11", CAL_MIN_YEAR, CAL_MAX_YEAR);
		return e;
	}
	*m = v;
	return SL_OK;
}

void cal_month_format(struct cal_month m, char *buf, size_t n)
{
	snprintf(buf, n, "%04d-%02d", m.year % 10000, (m.month % 100 + 100) % 100);
}

int cal_month_cmp(struct cal_month a, struct cal_month b)
{
	if (a.year != b.year)
		return a.year < b.year ? -1 : 1;
	if (a.month != b.month)
		return a.month < b.month ? -1 : 1;
	return 0;
}

struct cal_month cal_month_add(struct cal_month m, int k)
{
	int idx = m.month - 1 + k;
	m.year += idx / 12;
	m.month = idx % 12 + 1;
	return m;
}

struct cal_month cal_month_next(struct cal_month m)
{
	return cal_month_add(m, 1);
}

static int64_t local_ms(int64_t y, int mo, int dd)
{
	return cal_days_from_civil(y, mo, dd) * CAL_MS_PER_DAY;
}

enum sl_err cal_month_start(const struct cal_zone *z, struct cal_month m,
			    int64_t *ms, struct sl_diag *d)
{
	if (!month_valid(m))
		return sl_diag_set(d, SL_EINVAL, "month %d-%d outside the billing "
				   "calendar", m.year, m.month);
	int64_t t = local_ms(m.year, m.month, 1) - (int64_t)z->offset_s * 1000;
	enum sl_err e = cal_check_instant(t, d);
	if (e)
		return e;
	*ms = t;
	return SL_OK;
}

enum sl_err cal_month_end(const struct cal_zone *z, struct cal_month m,
			  int64_t *ms, struct sl_diag *d)
{
	if (!month_valid(m))
		return sl_diag_set(d, SL_EINVAL, "month %d-%d outside the billing "
				   "calendar", m.year, m.month);
	struct cal_month n = cal_month_next(m);
	int64_t t = local_ms(n.year, n.month, 1) - (int64_t)z->offset_s * 1000;
	/* The end is exclusive, so CAL_END_MS itself is a valid end. */
	if (t > CAL_END_MS || t <= CAL_MIN_MS)
		return cal_check_instant(t, d);
	*ms = t;
	return SL_OK;
}

/* Local civil fields of instant ms in z; ms must be checked already. */
static void split_local(const struct cal_zone *z, int64_t ms, int64_t *y,
			int *mo, int *dd, int64_t *ms_of_day)
{
	int64_t l = ms + (int64_t)z->offset_s * 1000;
	int64_t days = floor_div(l, CAL_MS_PER_DAY);
	*ms_of_day = l - days * CAL_MS_PER_DAY;
	cal_civil_from_days(days, y, mo, dd);
}

enum sl_err cal_month_of(const struct cal_zone *z, int64_t ms,
			 struct cal_month *m, struct sl_diag *d)
{
	enum sl_err e = cal_check_instant(ms, d);
	if (e)
		return e;
	int64_t y, tod;
	int mo, dd;
	split_local(z, ms, &y, &mo, &dd, &tod);
	struct cal_month v = {(int)y, mo};
	if (!month_valid(v))
		return sl_diag_set(d, SL_EINVAL, "instant %lld ms falls in a month "
				   "outside the billing calendar", (long long)ms);
	*m = v;
	return SL_OK;
}

enum sl_err cal_add_months(const struct cal_zone *z, int64_t ms, int k,
			   int64_t *out, struct sl_diag *d)
{
	enum sl_err e = cal_check_instant(ms, d);
	if (e)
		return e;
	if (k < 0 || k > 12 * (CAL_MAX_YEAR - CAL_MIN_YEAR + 1))
		return sl_diag_set(d, SL_EINVAL, "cannot add %d months", k);
	int64_t y, tod;
	int mo, dd;
	split_local(z, ms, &y, &mo, &dd, &tod);
	struct cal_month t = cal_month_add((struct cal_month){(int)y, mo}, k);
	int last = cal_days_in_month(t.year, t.month);
	if (dd > last)
		dd = last;
	int64_t r = local_ms(t.year, t.month, dd) + tod -
		    (int64_t)z->offset_s * 1000;
	e = cal_check_instant(r, d);
	if (e)
		return e;
	*out = r;
	return SL_OK;
}

enum sl_err cal_format_rfc3339(int64_t ms, const struct cal_zone *z,
			       char *buf, size_t n, struct sl_diag *d)
{
	enum sl_err e = cal_check_instant(ms, d);
	if (e)
		return e;
	if (!buf || n < CAL_RFC3339_SIZE)
		return sl_diag_set(d, SL_EINVAL, "cal_format_rfc3339: buffer too "
				   "small");
	int64_t y, tod;
	int mo, dd;
	split_local(z, ms, &y, &mo, &dd, &tod);
	char off[8] = "Z";
	if (z->offset_s != 0) {
		int32_t a = z->offset_s < 0 ? -z->offset_s : z->offset_s;
		snprintf(off, sizeof(off), "%c%02d:%02d",
			 z->offset_s < 0 ? '-' : '+', (int)(a / 3600) % 100,
			 (int)(a % 3600 / 60));
	}
	snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03d%s",
		 (int)(y % 10000), mo, dd, (int)(tod / 3600000),
		 (int)(tod / 60000 % 60), (int)(tod / 1000 % 60),
		 (int)(tod % 1000), off);
	return SL_OK;
}

/* The one RFC 3339 parser: s -> *whole_ms (the instant of its whole second,
 * UTC ms) and *frac_ns (0..999999999), with at most max_frac fractional
 * digits. Every field is checked against the calendar, nothing is normalised:
 * 2026-02-31 and a seconds value of 60 are refused, not moved on. The range
 * is the callers' to check. */
static enum sl_err parse_rfc3339(const char *s, int max_frac, int64_t *whole_ms,
				 int32_t *frac_ns, struct sl_diag *d)
{
	const char *form = "expected RFC 3339, e.g. 2026-11-01T00:00:00Z or "
			   "2026-11-01T08:00:00.250+08:00";
	if (!s || strnlen(s, 64) < 20 || strnlen(s, 64) >= 64)
		goto bad;
	int y = digits_at(s, 4), mo = digits_at(s + 5, 2),
	    dd = digits_at(s + 8, 2), hh = digits_at(s + 11, 2),
	    mi = digits_at(s + 14, 2), ss = digits_at(s + 17, 2);
	if (y < 0 || mo < 1 || mo > 12 || dd < 1 ||
	    dd > cal_days_in_month(y, mo) || hh < 0 || hh > 23 || mi < 0 ||
	    mi > 59 || ss < 0 || ss > 59 || s[4] != '-' || s[7] != '-' ||
	    (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' ||
	    s[16] != ':')
		goto bad;
	const char *p = s + 19;
	int32_t frac = 0;
	if (*p == '.') {
		int nd = 0;
		for (p++; is_digit(*p); p++, nd++) {
			if (nd >= max_frac) {
				enum sl_err e = sl_diag_set(d, SL_EINVAL, "'%s': more "
							    "than %s precision", s,
							    max_frac == 3 ? "millisecond"
									  : "nanosecond");
				sl_diag_hint(d, "give at most %d fractional digits",
					     max_frac);
				return e;
			}
			frac = frac * 10 + (*p - '0');
		}
		if (nd == 0)
			goto bad;
		for (; nd < 9; nd++)
			frac *= 10;
	}
	int32_t off = 0;
	if ((*p == 'Z' || *p == 'z') && p[1] == 0)
		off = 0;
	else if (strlen(p) != 6 || p[3] != ':' || !parse_offset(p, &off))
		goto bad;
	*whole_ms = local_ms(y, mo, dd) + (int64_t)hh * 3600000 +
		    (int64_t)mi * 60000 + (int64_t)ss * 1000 - (int64_t)off * 1000;
	*frac_ns = frac;
	return SL_OK;
bad:;
	enum sl_err bad_e = sl_diag_set(d, SL_EINVAL, "'%.40s' is not an RFC "
					"3339 instant", s ? s : "");
	sl_diag_hint(d, "%s", form);
	return bad_e;
}

enum sl_err cal_parse_rfc3339(const char *s, int64_t *ms, struct sl_diag *d)
{
	int64_t whole;
	int32_t frac;
	enum sl_err e = parse_rfc3339(s, 3, &whole, &frac, d);
	int64_t t = whole + frac / 1000000;
	if (!e)
		e = cal_check_instant(t, d);
	if (!e)
		*ms = t;
	return e;
}

enum sl_err cal_parse_rfc3339_ns(const char *s, int64_t *ns, struct sl_diag *d)
{
	int64_t whole;
	int32_t frac;
	enum sl_err e = parse_rfc3339(s, 9, &whole, &frac, d);
	if (!e && whole >= CAL_NS_END_MS) {
		e = sl_diag_set(d, SL_EINVAL, "'%.40s' is past the nanosecond "
				"clock's range", s);
		sl_diag_hint(d, "instants in nanoseconds lie in years %d..2261 (UTC)",
			     CAL_MIN_YEAR);
	}
	if (!e)
		e = cal_check_instant(whole, d);
	if (!e)
		*ns = whole * 1000000 + frac;
	return e;
}

/* calendar.h - civil time for billing: months, zones and RFC 3339, with no tz
 * database and no I/O.
 *
 * Invoices are per calendar month in one configured billing time zone
 * (DESIGN.md §6). The zones a provider bills in have had a fixed UTC offset
 * for decades, so a zone here is a fixed offset: UTC, an explicit offset
 * ("UTC+08:00", "+05:30") or a name from a small table (cal_zone_parse).
 * Instants are int64_t milliseconds since the Unix epoch (UTC). The billing
 * calendar covers instants in years CAL_MIN_YEAR..CAL_MAX_YEAR of UTC; every
 * named zone has kept its offset over all of that span, so no answer here
 * depends on historical rules. */
#ifndef SL_CALENDAR_H
#define SL_CALENDAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define CAL_MIN_YEAR 2000
#define CAL_MAX_YEAR 9998
#define CAL_MS_PER_DAY INT64_C(86400000)
#define CAL_MS_PER_HOUR INT64_C(3600000)
/* First and one past the last instant of the billing calendar (UTC):
 * 2000-01-01T00:00:00Z and 9999-01-01T00:00:00Z. */
#define CAL_MIN_MS INT64_C(946684800000)
#define CAL_END_MS INT64_C(253370764800000)
/* One past the last instant cal_parse_rfc3339_ns takes, 2262-01-01T00:00:00Z:
 * int64 nanoseconds since the epoch end in April 2262. */
#define CAL_NS_END_MS INT64_C(9214646400000)
/* Bound on a zone name (bytes, with NUL) and on a fixed offset. */
#define CAL_ZONE_NAME_MAX 40
#define CAL_MAX_OFFSET_S (14 * 3600)
/* Buffer sizes for formatted values, with NUL. */
#define CAL_MONTH_FMT_SIZE 8   /* "2026-11" */
#define CAL_RFC3339_SIZE 32    /* "2026-11-30T05:43:30.123+08:00" */

struct cal_zone {
	char name[CAL_ZONE_NAME_MAX]; /* as configured, e.g. "Asia/Shanghai" */
	int32_t offset_s;             /* local = UTC + offset_s */
};

struct cal_month {
	int year;  /* CAL_MIN_YEAR..CAL_MAX_YEAR */
	int month; /* 1..12 */
};

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar (negative
 * before). m in 1..12, d in 1..31; no range check (callers validate). */
int64_t cal_days_from_civil(int64_t y, int m, int d);
/* The inverse of cal_days_from_civil. */
void cal_civil_from_days(int64_t days, int64_t *y, int *m, int *d);
bool cal_is_leap(int64_t y);
/* 28..31; 0 for a month outside 1..12. */
int cal_days_in_month(int64_t y, int m);

/* Fills z for name: "UTC", "Etc/UTC", "GMT", "Z"; a fixed offset "UTC+8",
 * "UTC+08:00", "UTC-05:30", "+08:00", "-0530"; or a named zone: Asia/Shanghai
 * (+08:00, no DST since 1991), Asia/Hong_Kong, Asia/Taipei, Asia/Singapore,
 * Asia/Kuala_Lumpur, Asia/Manila (+08:00), Asia/Tokyo, Asia/Seoul (+09:00),
 * Asia/Kolkata (+05:30), Asia/Dubai (+04:00). SL_EINVAL for anything else
 * (zones with daylight saving time are not supported), with a hint. */
enum sl_err cal_zone_parse(const char *name, struct cal_zone *z,
			   struct sl_diag *d) SL_MUST_USE;
/* The UTC zone. */
void cal_zone_utc(struct cal_zone *z);

/* SL_EINVAL unless CAL_MIN_MS <= ms < CAL_END_MS. */
enum sl_err cal_check_instant(int64_t ms, struct sl_diag *d) SL_MUST_USE;

/* "YYYY-MM" (exactly 7 characters, month 01..12, year in range) -> *m.
 * SL_EINVAL with the expected form otherwise. */
enum sl_err cal_month_parse(const char *s, struct cal_month *m,
			    struct sl_diag *d) SL_MUST_USE;
/* "YYYY-MM" into buf (CAL_MONTH_FMT_SIZE bytes). */
void cal_month_format(struct cal_month m, char *buf, size_t n);
/* <0, 0, >0 as a is before, equal to or after b. */
int cal_month_cmp(struct cal_month a, struct cal_month b);
struct cal_month cal_month_next(struct cal_month m);
/* m advanced by k >= 0 months. */
struct cal_month cal_month_add(struct cal_month m, int k);

/* The instant local midnight starts day 1 of m in zone z. SL_EINVAL when m or
 * the instant is outside the calendar. */
enum sl_err cal_month_start(const struct cal_zone *z, struct cal_month m,
			    int64_t *ms, struct sl_diag *d) SL_MUST_USE;
/* The instant m ends in z: the start of the next month (exclusive end). */
enum sl_err cal_month_end(const struct cal_zone *z, struct cal_month m,
			  int64_t *ms, struct sl_diag *d) SL_MUST_USE;
/* The month of zone z that contains instant ms. SL_EINVAL outside the
 * calendar. */
enum sl_err cal_month_of(const struct cal_zone *z, int64_t ms,
			 struct cal_month *m, struct sl_diag *d) SL_MUST_USE;

/* The instant k months after ms at the same local day and time of day in z,
 * the day clamped to the target month's last day (Jan 31 + 1 month is Feb 28,
 * or Feb 29 in a leap year). SL_EINVAL outside the calendar. */
enum sl_err cal_add_months(const struct cal_zone *z, int64_t ms, int k,
			   int64_t *out, struct sl_diag *d) SL_MUST_USE;

/* Formats ms as RFC 3339 with milliseconds in zone z:
 * "2026-11-30T13:43:30.123+08:00", or a trailing "Z" when the offset is 0.
 * buf holds CAL_RFC3339_SIZE bytes. SL_EINVAL outside the calendar. */
enum sl_err cal_format_rfc3339(int64_t ms, const struct cal_zone *z,
			       char *buf, size_t n,
			       struct sl_diag *d) SL_MUST_USE;
/* Parses RFC 3339 "YYYY-MM-DDTHH:MM:SS[.fff]Z|±HH:MM" ('t'/'z' and a space
 * for 'T' accepted; 1..3 fractional digits, more refused rather than
 * truncated). Strict: every field must exist on the calendar, nothing is
 * normalised (2026-02-31 and second 60 are refused, not moved on; a leap
 * second cannot be represented in Unix time). The offset is at most
 * CAL_MAX_OFFSET_S. SL_EINVAL with the expected form, or outside the
 * calendar; *ms is set only on success. This and cal_parse_rfc3339_ns are
 * the one RFC 3339 parser: the API, the CLI and core all use them. */
enum sl_err cal_parse_rfc3339(const char *s, int64_t *ms,
			      struct sl_diag *d) SL_MUST_USE;
/* Like cal_parse_rfc3339 into ns since the epoch, for the controller's
 * nanosecond wall time: 1..9 fractional digits (more refused), and instants
 * from CAL_MIN_MS to before CAL_NS_END_MS (where int64 ns would overflow). */
enum sl_err cal_parse_rfc3339_ns(const char *s, int64_t *ns,
				 struct sl_diag *d) SL_MUST_USE;

#endif

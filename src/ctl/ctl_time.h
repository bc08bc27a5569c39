/* ctl_time.h - instants as the API writes and reads them (RFC 3339 UTC). */
#ifndef SL_CTL_TIME_H
#define SL_CTL_TIME_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* RFC 3339 UTC with milliseconds; JSON null for 0. */
json_t *ctl_time_json(int64_t ns);
void ctl_time_fmt(int64_t ns, char buf[32]);
/* Parses RFC 3339 ("2026-11-30T05:33:12Z", up to 9 fraction digits and an
 * offset allowed) into UTC ns with core's one strict parser,
 * cal_parse_rfc3339_ns: a date or time that does not exist (2026-02-31, second
 * 60) is refused, not normalised. False for NULL or anything refused; *ns is
 * set only on success. */
bool ctl_time_parse(const char *s, int64_t *ns);


#endif

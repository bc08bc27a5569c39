/* json_limits.c - an iterative depth scan of JSON text.
 *
 * On any prefix of valid JSON the count kept here equals the parser's nesting
 * depth, because strings (the only place brackets are not structure) are
 * tracked with their escapes exactly as JSON defines them. On invalid input
 * the parser stops at the first error, and up to that point the prefix was
 * valid, so the count is never lower than the depth the parser reached. That
 * is all the guarantee needs; everything else is the parser's job. */
#include "json_limits.h"

#include <limits.h>

/* Lines are only for the message; saturate rather than overflow. */
static void next_line(int *line, size_t *line_start, size_t i)
{
	if (*line < INT_MAX)
		(*line)++;
	*line_start = i + 1;
}

enum sl_err json_check_limits(const char *text, size_t len, size_t max_depth,
			      struct sl_diag *d)
{
	size_t depth = 0;
	int line = 1;
	size_t line_start = 0;

	if (!text && len)
		return sl_diag_set(d, SL_EINVAL, "no JSON text given");
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		if (c == '"') {
			/* skip the string; an unterminated one ends the scan */
			for (i++; i < len && text[i] != '"'; i++) {
				if (text[i] == '\\')
					i++;
				else if (text[i] == '\n')
					next_line(&line, &line_start, i);
			}
		} else if (c == '[' || c == '{') {
			if (++depth > max_depth) {
				size_t col = i - line_start + 1;
				sl_diag_hint(d, "send JSON nested at most %zu levels deep",
					     max_depth);
				return sl_diag_at(d, SL_ELIMIT, line,
						  col > (size_t)INT_MAX ? 0 : (int)col,
						  "JSON nests deeper than %zu levels at byte offset %zu",
						  max_depth, i);
			}
		} else if (c == ']' || c == '}') {
			if (depth > 0)
				depth--;
		} else if (c == '\n') {
			next_line(&line, &line_start, i);
		}
	}
	return SL_OK;
}

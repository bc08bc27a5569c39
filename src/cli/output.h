/* output.h - human output of the online subcommands: aligned tables, times
 * and GPU lists, and the indented JSON that --json prints. */
#ifndef SL_CLI_OUTPUT_H
#define SL_CLI_OUTPUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#define OUT_TABLE_MAX_COLS 12
#define OUT_CELL_MAX 512 /* a longer cell is shown cut, ending in "..." */
#define OUT_TABLE_MAX_ROWS 10000000 /* rows of one table */

/* A table whose columns are as wide as their widest cell (in characters,
 * not bytes, so UTF-8 text lines up). */
struct out_table {
	int ncols;
	const char *head[OUT_TABLE_MAX_COLS];
	char **cells; /* rows * ncols, owned */
	size_t rows, cap; /* cap: cells allocated */
	int no_mem;
};

/* Starts a table with ncols (≤ OUT_TABLE_MAX_COLS) headers (borrowed). */
void out_table_init(struct out_table *t, int ncols, const char *const *head);
/* Adds a row of ncols cells (copied; NULL prints as "-"). A failure to
 * allocate is remembered and reported by out_table_print. */
void out_table_row(struct out_table *t, const char *const *cells);
/* Prints the header and rows, columns two spaces apart, the last column
 * unpadded. Returns 0, or -1 (after saying so) if memory ran out. */
int out_table_print(struct out_table *t, FILE *f);
void out_table_release(struct out_table *t);

/* Adds to t the row for element e of a list; ctx is out_table_list's. */
typedef void out_row_fn(struct out_table *t, const json_t *e, const void *ctx);
/* Prints to f a table with ncols headers head and one row per element of
 * arr, made by row. Returns as out_table_print. */
int out_table_list(FILE *f, int ncols, const char *const *head, const json_t *arr,
		   out_row_fn *row, const void *ctx);

/* Prints JSON text indented by two spaces per level, one member or element
 * per line, with every token (numbers, strings) byte for byte as given, and a
 * final newline. Text that is not JSON comes out re-spaced but whole. */
void out_json_pretty(FILE *f, const char *text, size_t len);

/* Parses an RFC 3339 time ("2026-11-30T05:33:12.123Z", an offset allowed) to
 * whole seconds with the controller's parser (cal_parse_rfc3339_ns: strict, up
 * to 9 fraction digits); -1 if it refuses it. */
time_t out_parse_time(const char *s);
/* "42s", "5m", "1h59m", "3h", "2d4h" for a span of seconds: the two largest
 * units, no more (negative spans print as 0s). */
void out_span(long long secs, char *buf, size_t n);
/* The age of an RFC 3339 time relative to now, as out_span; "-" if unknown. */
void out_age(const char *rfc3339, time_t now, char *buf, size_t n);
/* "0-3,6" for a JSON array of GPU indices; "-" if not an array. */
void out_gpu_list(const json_t *arr, char *buf, size_t n);
/* Joins a JSON array of strings with sep ("a,b"); "-" if empty or absent. */
void out_join(const json_t *arr, const char *sep, char *buf, size_t n);

/* json_string_value(json_object_get(o, key)), or dflt. */
const char *out_str(const json_t *o, const char *key, const char *dflt);
/* The integer at key as text in buf, or "-". */
const char *out_int(const json_t *o, const char *key, char *buf, size_t n);

#endif

/* output.c - tables and JSON for people and scripts.
 *
 * Tables collect their cells first and print once, because a column's width
 * is only known when every row is in. --json output is re-indented at the
 * token level instead of being parsed and dumped again: a parse/dump round
 * trip would reformat numbers (1e3, 0.1) and could reorder keys, and the
 * contract promises the API's JSON as it was sent. */
#include "output.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "calendar.h"

void out_table_init(struct out_table *t, int ncols, const char *const *head)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols > OUT_TABLE_MAX_COLS ? OUT_TABLE_MAX_COLS : ncols;
	for (int i = 0; i < t->ncols; i++)
		t->head[i] = head[i];
}

/* Copies a cell, cutting it at OUT_CELL_MAX bytes on a character boundary. */
static char *cell_dup(const char *s)
{
	size_t len = strlen(s);
	char *c;
	if (len <= OUT_CELL_MAX)
		return strdup(s);
	len = OUT_CELL_MAX - 3;
	while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
		len--;
	if (!(c = malloc(len + 4)))
		return NULL;
	memcpy(c, s, len);
	memcpy(c + len, "...", 4);
	return c;
}

void out_table_row(struct out_table *t, const char *const *cells)
{
	size_t base;
	if (t->no_mem)
		return;
	if (sl_grow(&t->cells, &t->cap, (t->rows + 1) * (size_t)t->ncols,
		    OUT_TABLE_MAX_ROWS * (size_t)t->ncols)) {
		t->no_mem = 1;
		return;
	}
	base = t->rows * (size_t)t->ncols;
	for (int i = 0; i < t->ncols; i++) {
		const char *s = cells[i] && *cells[i] ? cells[i] : "-";
		if (!(t->cells[base + (size_t)i] = cell_dup(s))) {
			for (int j = 0; j < i; j++)
				free(t->cells[base + (size_t)j]);
			t->no_mem = 1;
			return;
		}
	}
	t->rows++;
}

/* Characters (UTF-8 code points) in s. */
static size_t width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

static void print_row(FILE *f, int ncols, const char *const *cells, const size_t *w)
{
	for (int i = 0; i < ncols; i++) {
		if (i == ncols - 1) {
			fprintf(f, "%s\n", cells[i]);
			break;
		}
		fputs(cells[i], f);
		for (size_t k = width(cells[i]); k < w[i] + 2; k++)
			fputc(' ', f);
	}
}

int out_table_print(struct out_table *t, FILE *f)
{
	size_t w[OUT_TABLE_MAX_COLS];
	if (t->no_mem) {
		fprintf(stderr, "suanli: out of memory\n");
		return -1;
	}
	for (int i = 0; i < t->ncols; i++)
		w[i] = width(t->head[i]);
	for (size_t r = 0; r < t->rows; r++)
		for (int i = 0; i < t->ncols; i++) {
			size_t cw = width(t->cells[r * (size_t)t->ncols + (size_t)i]);
			if (cw > w[i])
				w[i] = cw;
		}
	print_row(f, t->ncols, t->head, w);
	for (size_t r = 0; r < t->rows; r++)
		print_row(f, t->ncols, (const char *const *)t->cells + r * (size_t)t->ncols, w);
	return 0;
}

void out_table_release(struct out_table *t)
{
	for (size_t i = 0; i < t->rows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

int out_table_list(FILE *f, int ncols, const char *const *head, const json_t *arr,
		   out_row_fn *row, const void *ctx)
{
	struct out_table t;
	size_t i;
	json_t *e;
	int rc;
	out_table_init(&t, ncols, head);
	json_array_foreach(arr, i, e)
		row(&t, e, ctx);
	rc = out_table_print(&t, f);
	out_table_release(&t);
	return rc;
}

static void indent(FILE *f, int depth)
{
	fputc('\n', f);
	for (int i = 0; i < depth; i++)
		fputs("  ", f);
}

void out_json_pretty(FILE *f, const char *text, size_t len)
{
	int depth = 0;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		if (c == '"') {
			size_t j = i + 1;
			while (j < len && text[j] != '"')
				j += text[j] == '\\' ? 2 : 1;
			if (j >= len)
				j = len - 1;
			fwrite(text + i, 1, j - i + 1, f);
			i = j;
		} else if (c == '{' || c == '[') {
			/* Keep {} and [] on one line. */
			size_t j = i + 1;
			while (j < len && (text[j] == ' ' || text[j] == '\n' || text[j] == '\t' ||
					   text[j] == '\r'))
				j++;
			if (j < len && text[j] == (c == '{' ? '}' : ']')) {
				fputc(c, f);
				fputc(text[j], f);
				i = j;
				continue;
			}
			fputc(c, f);
			indent(f, ++depth);
		} else if (c == '}' || c == ']') {
			indent(f, depth > 0 ? --depth : 0);
			fputc(c, f);
		} else if (c == ',') {
			fputc(c, f);
			indent(f, depth);
		} else if (c == ':') {
			fputs(": ", f);
		} else if (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
			fputc(c, f);
		}
	}
	fputc('\n', f);
}

time_t out_parse_time(const char *s)
{
	int64_t ns;
	if (cal_parse_rfc3339_ns(s, &ns, NULL) != SL_OK)
		return -1;
	return (time_t)(ns / 1000000000); /* ns >= 0: the calendar starts in 2000 */
}

void out_span(long long secs, char *buf, size_t n)
{
	if (secs < 0)
		secs = 0;
	if (secs < 60)
		snprintf(buf, n, "%llds", secs);
	else if (secs < 3600)
		snprintf(buf, n, "%lldm", secs / 60);
	else if (secs < 86400 && secs / 60 % 60)
		snprintf(buf, n, "%lldh%lldm", secs / 3600, secs / 60 % 60);
	else if (secs < 86400)
		snprintf(buf, n, "%lldh", secs / 3600);
	else if (secs / 3600 % 24)
		snprintf(buf, n, "%lldd%lldh", secs / 86400, secs / 3600 % 24);
	else
		snprintf(buf, n, "%lldd", secs / 86400);
}

void out_age(const char *rfc3339, time_t now, char *buf, size_t n)
{
	time_t t = out_parse_time(rfc3339);
	if (t == (time_t)-1)
		snprintf(buf, n, "-");
	else
		out_span((long long)(now - t), buf, n);
}

void out_gpu_list(const json_t *arr, char *buf, size_t n)
{
	size_t off = 0, count = json_array_size(arr);
	if (!json_is_array(arr) || !count) {
		snprintf(buf, n, "-");
		return;
	}
	buf[0] = '\0';
	for (size_t i = 0; i < count && off < n; i++) {
		json_int_t a = json_integer_value(json_array_get(arr, i)), b = a;
		while (i + 1 < count && json_integer_value(json_array_get(arr, i + 1)) == b + 1) {
			b++;
			i++;
		}
		int w = b > a ? snprintf(buf + off, n - off, "%s%lld-%lld", off ? "," : "",
					 (long long)a, (long long)b)
			      : snprintf(buf + off, n - off, "%s%lld", off ? "," : "", (long long)a);
		if (w < 0)
			break;
		off += (size_t)w;
	}
}

void out_join(const json_t *arr, const char *sep, char *buf, size_t n)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < json_array_size(arr) && off < n; i++) {
		const char *s = json_string_value(json_array_get(arr, i));
		int w = snprintf(buf + off, n - off, "%s%s", off ? sep : "", s ? s : "?");
		if (w < 0)
			break;
		off += (size_t)w;
	}
	if (!buf[0])
		snprintf(buf, n, "-");
}

const char *out_str(const json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : dflt;
}

const char *out_int(const json_t *o, const char *key, char *buf, size_t n)
{
	const json_t *v = json_object_get(o, key);
	if (json_is_integer(v))
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
	else
		snprintf(buf, n, "-");
	return buf;
}

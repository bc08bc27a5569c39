/* cli_util.c - argument, error and fleet-loading helpers of the subcommands. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"

void cli_print_diag(const struct sl_diag *d)
{
	char buf[SL_DIAG_MSG + 256];
	sl_diag_format(d, buf, sizeof(buf));
	fprintf(stderr, "suanli: %s\n", buf);
	if (d->hint[0])
		fprintf(stderr, "  hint: %s\n", d->hint);
}

struct cli_globals cli_global;

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "suanli %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n  hint: see 'suanli %s --help'\n", cmd);
	return CLI_EXIT_USAGE;
}

int cli_load_fleet(const char *path, struct fleet *f)
{
	struct sl_diag d;
	char *text;
	size_t len;

	sl_diag_clear(&d);
	if (fleet_init(f) != SL_OK) {
		fprintf(stderr, "suanli: out of memory\n");
		return 0;
	}
	if (sl_read_file(path, FLEET_MAX_FILE, &text, &len, &d) != SL_OK) {
		cli_print_diag(&d);
		fleet_release(f);
		return 0;
	}
	enum sl_err e = fleet_load_yaml(f, text, len, path, &d);
	free(text);
	if (e != SL_OK) {
		d.file = path;
		cli_print_diag(&d);
		fleet_release(f);
		return 0;
	}
	return 1;
}

long cli_parse_int(const char *cmd, const char *opt, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	/* strtol alone would also take " 8" and "+8". */
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || !(*s == '-' || (*s >= '0' && *s <= '9')) || v < min ||
	    v > max) {
		cli_usage_error(cmd, "%s expects a whole number from %ld to %ld, not '%s'", opt,
				min, max, s);
		return -1;
	}
	return v;
}

void cli_format_gpus(gpumask_t m, char *buf, size_t n)
{
	size_t off = 0;
	buf[0] = '\0';
	for (int i = 0; i < TOPO_MAX_GPUS && off < n; i++) {
		if (!(m & (1u << i)))
			continue;
		int j = i;
		while (j + 1 < TOPO_MAX_GPUS && (m & (1u << (j + 1))))
			j++;
		int w = j > i ? snprintf(buf + off, n - off, "%s%d-%d", off ? "," : "", i, j)
			      : snprintf(buf + off, n - off, "%s%d", off ? "," : "", i);
		if (w < 0)
			break;
		off += (size_t)w;
		i = j;
	}
}

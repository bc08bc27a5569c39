/* client.c - where the online subcommands find the controller and how they
 * call it.
 *
 * Resolution is flag > environment > config file > default, one value at a
 * time, so a config file can hold the server while SUANLI_TOKEN switches
 * users. The config file is read only when a flag or variable left something
 * open, so a broken file never gets in the way of an explicit command line.
 * Every failed call ends in the same place (client_call), which prints the
 * controller's own message and hint: the server knows best what was wrong. */
#include "client.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "cli.h"
#include "output.h"

void client_init(struct client *cl, const char *cmd)
{
	memset(cl, 0, sizeof(*cl));
	cl->cmd = cmd;
	cl->server = cli_global.server;
	cl->token = cli_global.token;
	if (cl->token)
		cl->token_from = "--token";
	cl->json = cli_global.json;
}

int client_opt(struct client *cl, int c, const char *arg)
{
	switch (c) {
	case CLIENT_OPT_SERVER: cl->server = arg; return 1;
	case CLIENT_OPT_TOKEN: cl->token = arg; cl->token_from = "--token"; return 1;
	case CLIENT_OPT_JSON: cl->json = 1; return 1;
	case CLIENT_OPT_CA: cl->ca = arg; return 1;
	default: return 0;
	}
}

int client_getopt_error(const char *cmd, int c, char **argv)
{
	const char *opt = optind > 0 ? argv[optind - 1] : "?";
	if (c == ':')
		return cli_usage_error(cmd, "option '%s' needs a value", opt);
	return cli_usage_error(cmd, "unknown option '%s'", opt);
}

int client_args(struct client *cl, int argc, char **argv, const char *help, int npos,
		const char *what)
{
	static const struct option opts[] = {CLIENT_LONG_OPTS, {0, 0, 0, 0}};
	int c;

	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(cl, c, optarg))
			continue;
		if (c == 'h') {
			fputs(help, stdout);
			return CLI_EXIT_OK;
		}
		return client_getopt_error(cl->cmd, c, argv);
	}
	if (argc - optind != npos) {
		if (argc - optind > npos)
			return cli_usage_error(cl->cmd, "unexpected argument '%s'",
					       argv[optind + npos]);
		return cli_usage_error(cl->cmd, "expects %s", what);
	}
	return CLIENT_GO;
}

int client_dispatch(const char *group, const char *intro, const struct client_sub *subs,
		    size_t nsubs, int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: suanli %s SUBCOMMAND [OPTIONS]\n\n%s\nSubcommands:\n", group,
		       intro);
		for (size_t i = 0; i < nsubs; i++)
			printf("  %-9s %s\n", subs[i].name, subs[i].summary);
		printf("\nRun 'suanli %s SUBCOMMAND --help' for its options.\n", group);
		return CLI_EXIT_OK;
	}
	if (argc >= 2)
		for (size_t i = 0; i < nsubs; i++)
			if (!strcmp(argv[1], subs[i].name))
				return subs[i].fn(argc - 1, argv + 1);
	if (argc < 2)
		fprintf(stderr, "suanli %s: which subcommand?", group);
	else
		fprintf(stderr, "suanli %s: unknown subcommand '%s'", group, argv[1]);
	for (size_t i = 0; i < nsubs; i++)
		fprintf(stderr, "%s%s", i ? ", " : " (", subs[i].name);
	fprintf(stderr, ")\n  hint: see 'suanli %s --help'\n", group);
	return CLI_EXIT_USAGE;
}

/* The config file's path in buf; 0 if there is no home to look in. */
static int config_path(char *buf, size_t n)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	int w;
	if (xdg && *xdg)
		w = snprintf(buf, n, "%s/suanli/config", xdg);
	else if (home && *home)
		w = snprintf(buf, n, "%s/.config/suanli/config", home);
	else
		return 0;
	return w > 0 && (size_t)w < n;
}

static char *trim(char *s)
{
	char *e;
	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Parses one `key = value` line into cl; prints and returns -1 when wrong. */
static int config_line(struct client *cl, const char *path, int lineno, char *line)
{
	char *eq, *key, *val, **slot;

	line = trim(line);
	if (!*line || *line == '#')
		return 0;
	eq = strchr(line, '=');
	if (!eq) {
		fprintf(stderr, "suanli: %s:%d: expected 'key = value', not '%.80s'\n"
				"  hint: the keys are 'server', 'token' and 'ca'\n",
			path, lineno, line);
		return -1;
	}
	*eq = '\0';
	key = trim(line);
	val = trim(eq + 1);
	if (!strcmp(key, "server"))
		slot = &cl->cfg_server;
	else if (!strcmp(key, "token"))
		slot = &cl->cfg_token;
	else if (!strcmp(key, "ca"))
		slot = &cl->cfg_ca;
	else {
		fprintf(stderr, "suanli: %s:%d: unknown key '%.80s'\n"
				"  hint: the keys are 'server', 'token' and 'ca'\n",
			path, lineno, key);
		return -1;
	}
	if (!*val) {
		fprintf(stderr, "suanli: %s:%d: '%s' has no value\n", path, lineno, key);
		return -1;
	}
	free(*slot);
	if (!(*slot = strdup(val))) {
		fprintf(stderr, "suanli: out of memory\n");
		return -1;
	}
	return 0;
}

/* Reads the config file if there is one. A missing file is no error. */
static int config_read(struct client *cl)
{
	char path[4096], line[CLIENT_CONFIG_LINE_MAX + 2];
	struct stat st;
	FILE *f;
	int lineno = 0, rc = 0;

	if (!config_path(path, sizeof(path)))
		return 0;
	if (!(f = fopen(path, "r"))) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		fprintf(stderr, "suanli: cannot read %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		lineno++;
		if (lineno > CLIENT_CONFIG_MAX_LINES) {
			fprintf(stderr, "suanli: %s has more than %d lines; is it the right file?\n",
				path, CLIENT_CONFIG_MAX_LINES);
			rc = -1;
			break;
		}
		if (len > CLIENT_CONFIG_LINE_MAX) {
			fprintf(stderr, "suanli: %s:%d: line longer than %u bytes\n", path, lineno,
				CLIENT_CONFIG_LINE_MAX);
			rc = -1;
			break;
		}
		if ((rc = config_line(cl, path, lineno, line)) < 0)
			break;
	}
	if (rc == 0 && ferror(f)) {
		fprintf(stderr, "suanli: cannot read %s: %s\n", path, strerror(errno));
		rc = -1;
	}
	/* A token is a password: say so when others can read it, but go on, as
	 * ssh does not (yet) refuse either. */
	if (rc == 0 && cl->cfg_token && fstat(fileno(f), &st) == 0 && (st.st_mode & 077))
		fprintf(stderr, "suanli: warning: %s holds a token and others can read it\n"
				"  hint: chmod 600 %s\n",
			path, path);
	fclose(f);
	return rc;
}

int client_open(struct client *cl)
{
	struct sl_diag d;
	const char *env;

	if (!cl->server && (env = getenv("SUANLI_SERVER")) && *env)
		cl->server = env;
	if (!cl->token && (env = getenv("SUANLI_TOKEN")) && *env) {
		cl->token = env;
		cl->token_from = "SUANLI_TOKEN";
	}
	if (!cl->ca && (env = getenv("SUANLI_CA")) && *env)
		cl->ca = env;
	if (!cl->server || !cl->token || (!cl->ca && !strncmp(cl->server, "https://", 8))) {
		if (config_read(cl) < 0)
			return CLI_EXIT_FAIL;
		if (!cl->ca)
			cl->ca = cl->cfg_ca;
		if (!cl->server)
			cl->server = cl->cfg_server;
		if (!cl->token && cl->cfg_token) {
			cl->token = cl->cfg_token;
			cl->token_from = "the config file";
		}
	}
	if (!cl->server)
		cl->server = CLIENT_DEFAULT_SERVER;
	sl_diag_clear(&d);
	if (cl->ca && http_client_set_ca(cl->ca, &d) != SL_OK) {
		cli_print_diag(&d);
		return CLI_EXIT_FAIL;
	}
	if (http_client_new(cl->server, cl->token, &cl->http, &d) != SL_OK) {
		cli_print_diag(&d);
		return CLI_EXIT_FAIL;
	}
	return CLI_EXIT_OK;
}

/* Prints the controller's error answer; the diag carries its message and hint. */
static void print_server_error(const struct client *cl, const struct http_response *r)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	/* Which code it was matters less than the words: the diag has them. */
	if (http_client_error_diag(r, &d) == SL_OK)
		sl_diag_set(&d, SL_EIO, "the controller answered %d", r->status);
	cli_print_diag(&d);
	if (r->status == 401) {
		if (!cl->token)
			fprintf(stderr, "  hint: no token was given: use --token, SUANLI_TOKEN or "
					"'token = ...' in ~/.config/suanli/config\n");
		else
			fprintf(stderr, "  hint: the token came from %s\n", cl->token_from);
	}
}

/* A fresh random Idempotency-Key: every POST carries one, so a retry after a
 * lost answer or a failover (http_client.c) cannot apply it twice. */
static const char *auto_key(char buf[40])
{
	unsigned char r[16];
	FILE *f = fopen("/dev/urandom", "rb");
	size_t n = f ? fread(r, 1, sizeof(r), f) : 0;
	if (f)
		fclose(f);
	if (n != sizeof(r))
		return NULL;
	memcpy(buf, "cli-", 4);
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(buf + 4 + 2 * i, 3, "%02x", r[i]);
	return buf;
}

int client_call(struct client *cl, const char *method, const char *path, json_t *body,
		const char *idempotency_key, json_t **out)
{
	char keybuf[40];
	if (!idempotency_key && method && !strcmp(method, "POST"))
		idempotency_key = auto_key(keybuf);
	struct http_response r = {0};
	struct sl_diag d;
	char *text = NULL;
	int rc = CLI_EXIT_FAIL;

	*out = NULL;
	sl_diag_clear(&d);
	if (body && !(text = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER))) {
		fprintf(stderr, "suanli: out of memory\n");
		return CLI_EXIT_FAIL;
	}
	if (http_client_request(cl->http, method, path, text, text ? strlen(text) : 0,
				idempotency_key, 0, &r, &d) != SL_OK) {
		cli_print_diag(&d);
		goto done;
	}
	if (r.status < 200 || r.status > 299) {
		print_server_error(cl, &r);
		goto done;
	}
	if (cl->json) {
		out_json_pretty(stdout, r.body, r.len);
		rc = CLI_EXIT_OK;
		goto done;
	}
	if (r.len) {
		json_error_t je;
		if (!(*out = json_loadb(r.body, r.len, JSON_DECODE_ANY, &je))) {
			fprintf(stderr, "suanli: the controller's answer is not JSON (%s)\n"
					"  hint: is %s a suanli controller?\n",
				je.text, cl->server);
			goto done;
		}
	}
	rc = CLI_EXIT_OK;
done:
	free(text);
	http_response_release(&r);
	return rc;
}

int client_get_list(struct client *cl, const char *path, const char *empty, json_t **arr)
{
	int rc;
	*arr = NULL;
	if ((rc = client_open(cl)) == CLI_EXIT_OK &&
	    (rc = client_call(cl, "GET", path, NULL, NULL, arr)) == CLI_EXIT_OK && !cl->json) {
		if (json_array_size(*arr))
			rc = CLIENT_GO;
		else
			fputs(empty, stdout);
	}
	if (rc != CLIENT_GO) {
		json_decref(*arr);
		*arr = NULL;
	}
	client_close(cl);
	return rc;
}

void client_close(struct client *cl)
{
	http_client_free(cl->http);
	free(cl->cfg_server);
	free(cl->cfg_token);
	free(cl->cfg_ca);
	cl->http = NULL;
	cl->cfg_server = cl->cfg_token = NULL;
}

int client_query_add(char *path, size_t n, const char *key, const char *value)
{
	if (!value)
		return 0;
	size_t len = strlen(path);
	if (len + 2 + strlen(key) >= n)
		return -1;
	snprintf(path + len, n - len, "%c%s=", strchr(path, '?') ? '&' : '?', key);
	return client_escape(path, n, value);
}

int client_object_path(const char *cmd, const char *base, const char *id, const char *suffix,
		       const char *example, char *path, size_t n)
{
	snprintf(path, n, "%s/", base);
	if (!*id || client_escape(path, n, id) || strlen(path) + strlen(suffix) >= n) {
		cli_usage_error(cmd, "'%.64s' is not %s", id, example);
		return -1;
	}
	sl_strcpy(path + strlen(path), n - strlen(path), suffix); /* fits: checked above */
	return 0;
}

int client_escape(char *buf, size_t n, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t off = strlen(buf);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
			if (off + 1 >= n)
				return -1;
			buf[off++] = (char)c;
		} else {
			if (off + 3 >= n)
				return -1;
			buf[off++] = '%';
			buf[off++] = hex[c >> 4];
			buf[off++] = hex[c & 15];
		}
	}
	buf[off] = '\0';
	return 0;
}

/* Prints "OPT 'S': WHY" as a usage error; returns -1 for the parser. */
static long duration_error(const char *cmd, const char *opt, const char *s, const char *why)
{
	cli_usage_error(cmd, "%s '%s': %s", opt, s, why);
	return -1;
}

long client_parse_duration(const char *cmd, const char *opt, const char *s)
{
	static const char units[] = "dhms";
	static const long secs[] = {86400, 3600, 60, 1};
	char why[160];
	const char *p = s, *u;
	long total = 0;
	int last = -1;

	if (!*s || !isdigit((unsigned char)*s))
		return duration_error(cmd, opt, s, "expected a duration such as 90s, 30m, 2h, 1d "
						   "or 1h30m");
	while (*p) {
		const char *start = p;
		long v = 0;
		if (!isdigit((unsigned char)*p))
			return duration_error(cmd, opt, s, "expected a number before each unit, "
							   "as in 1h30m");
		for (; isdigit((unsigned char)*p); p++)
			if ((v = v * 10 + (*p - '0')) > CLIENT_DURATION_MAX)
				return duration_error(cmd, opt, s, "longer than ten years");
		if (!*p) {
			int n = (int)(p - start);
			snprintf(why, sizeof(why), "'%.*s' has no unit; write %.*ss, %.*sm, %.*sh or "
				 "%.*sd", n, start, n, start, n, start, n, start, n, start);
			return duration_error(cmd, opt, s, why);
		}
		if (!(u = strchr(units, *p))) {
			snprintf(why, sizeof(why), "unknown unit '%c'; the units are d, h, m and s",
				 *p);
			return duration_error(cmd, opt, s, why);
		}
		int i = (int)(u - units);
		if (i <= last)
			return duration_error(cmd, opt, s, "units go from largest to smallest, each "
							   "once (as in 1h30m)");
		last = i;
		if (v > (CLIENT_DURATION_MAX - total) / secs[i])
			return duration_error(cmd, opt, s, "longer than ten years");
		total += v * secs[i];
		p++;
	}
	if (total <= 0)
		return duration_error(cmd, opt, s, "must be longer than zero");
	return total;
}

int client_set_list(json_t *obj, const char *key, const char *cmd, const char *opt,
		    const char *s, size_t max, const char *noun)
{
	json_t *arr = json_array();
	const char *p = s;
	size_t count = 0;
	for (;;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (!len || (max && ++count > max)) {
			json_decref(arr);
			if (!len)
				cli_usage_error(cmd, "%s '%s' has an empty name", opt, s);
			else
				cli_usage_error(cmd, "%s names more than %zu %s", opt, max, noun);
			return -1;
		}
		json_array_append_new(arr, json_stringn(p, len));
		if (!e)
			break;
		p = e + 1;
	}
	json_object_set_new(obj, key, arr);
	return 0;
}

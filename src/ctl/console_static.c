/* console_static.c - the console's files (console_static.h).
 *
 * Why realpath and a prefix check rather than only refusing "..": a symbolic
 * link inside the directory may point anywhere, and percent-encoding hides
 * dots; resolving the final path and requiring it under the directory's own
 * resolved path covers both, and the segment check before it keeps an
 * encoded traversal from being even looked at. The files are read whole for
 * each request (they are small, and the page cache holds them); answers go
 * out at once, outside the turn's commit, since they show no state. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "console_static.h"
#include "ctl_int.h"
#include "file.h"
#include "log.h"

#ifndef SL_CONSOLE_SHARE_DIR
#define SL_CONSOLE_SHARE_DIR "/usr/local/share/suanli/console"
#endif
#ifndef SL_CONSOLE_SRC_DIR
#define SL_CONSOLE_SRC_DIR "console"
#endif

static bool is_dir(const char *p)
{
	struct stat st;
	return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

enum sl_err console_start(struct ctl *c, const char *dir, struct sl_diag *d)
{
	const char *pick = dir;
	if (dir && !is_dir(dir)) {
		sl_diag_hint(d, "give the directory that holds the console's index.html");
		return sl_diag_set(d, SL_ENOTFOUND, "--console %.200s: no such directory", dir);
	}
	if (!pick)
		pick = is_dir(SL_CONSOLE_SRC_DIR) ? SL_CONSOLE_SRC_DIR
		       : is_dir(SL_CONSOLE_SHARE_DIR) ? SL_CONSOLE_SHARE_DIR
						      : NULL;
	if (!pick) {
		sl_log_info("no console", "looked_in=" SL_CONSOLE_SRC_DIR "," SL_CONSOLE_SHARE_DIR);
		return SL_OK;
	}
	c->console_dir = realpath(pick, NULL);
	if (!c->console_dir)
		return sl_diag_set(d, SL_EIO, "console directory %.200s: %s", pick, strerror(errno));
	sl_log_info("console", "dir=%s", c->console_dir);
	return SL_OK;
}

void console_free(struct ctl *c)
{
	free(c->console_dir);
	c->console_dir = NULL;
}

static const struct {
	const char *ext, *type;
} types[] = {
	{"html", "text/html; charset=utf-8"},
	{"js", "text/javascript; charset=utf-8"},
	{"mjs", "text/javascript; charset=utf-8"},
	{"css", "text/css; charset=utf-8"},
	{"svg", "image/svg+xml"},
	{"png", "image/png"},
	{"json", "application/json"},
	{"woff2", "font/woff2"},
	{"ico", "image/x-icon"},
	{"txt", "text/plain; charset=utf-8"},
	{"map", "application/json"},
};

static const char *type_of(const char *path)
{
	const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
	if (dot && (!slash || dot > slash))
		for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			if (!strcmp(dot + 1, types[i].ext))
				return types[i].type;
	return "application/octet-stream";
}

static int hexval(char ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0'
	       : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
	       : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
					: -1;
}

/* Decodes the path below the console's root into out; false when it has an
 * encoded '/', a NUL, a backslash, or a ".", ".." or empty segment. */
static bool clean_path(const char *in, char *out, size_t n)
{
	size_t o = 0;
	for (const char *s = in; *s; s++) {
		char ch = *s;
		if (ch == '%') {
			int h = hexval(s[1]), l = h < 0 ? -1 : hexval(s[2]);
			if (l < 0)
				return false;
			ch = (char)(h * 16 + l);
			s += 2;
			if (ch == '/' || ch == 0)
				return false;
		}
		if (ch == '\\' || (unsigned char)ch < 0x20 || o + 1 >= n)
			return false;
		out[o++] = ch;
	}
	out[o] = 0;
	for (char *seg = out; *seg;) {
		size_t len = strcspn(seg, "/");
		if (len == 0 || (len == 1 && seg[0] == '.') || (len == 2 && !strncmp(seg, "..", 2)))
			return false;
		seg += len;
		if (*seg == '/') {
			seg++;
			if (!*seg)
				return false; /* a trailing slash names a directory */
		}
	}
	return true;
}

static void add_headers(struct http_request *req)
{
	static const char *const h[][2] = {
		{"X-Content-Type-Options", "nosniff"},
		{"Content-Security-Policy", CONSOLE_CSP},
		{"Referrer-Policy", "no-referrer"},
		{"X-Frame-Options", "DENY"},
		{"Cache-Control", "no-cache"},
	};
	for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++)
		if (http_response_header(req, h[i][0], h[i][1]))
			sl_log_warn("cannot add a console header", "header=%s", h[i][0]);
}

static void not_found(struct http_request *req, const char *why)
{
	add_headers(req);
	http_request_set_route(req, "console_not_found");
	http_respond_error(req, SL_ENOTFOUND, why, "the console's pages are under /console/");
}

/* Resolves rel under the console's directory: the real path (malloc'd) of
 * a regular file inside it, else NULL. */
static char *resolve(struct ctl *c, const char *rel, struct stat *st)
{
	size_t n = strlen(c->console_dir) + strlen(rel) + 2;
	char *p = malloc(n);
	if (!p)
		return NULL;
	snprintf(p, n, "%s/%s", c->console_dir, rel);
	char *real = realpath(p, NULL);
	free(p);
	size_t dl = strlen(c->console_dir);
	if (!real || strncmp(real, c->console_dir, dl) || real[dl] != '/' || stat(real, st) ||
	    !S_ISREG(st->st_mode)) {
		free(real);
		return NULL;
	}
	return real;
}

bool console_serve(struct ctl *c, struct http_request *req)
{
	const char *path = http_request_path(req), *method = http_request_method(req);
	const char *rel;
	if (!strcmp(path, "/") || !strcmp(path, "/console") || !strcmp(path, "/console/"))
		rel = "index.html";
	else if (!strncmp(path, "/console/", 9))
		rel = path + 9;
	else
		return false;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		http_request_set_route(req, "console_method");
		http_respond_error(req, SL_EMETHOD, "the console's files are read with GET", NULL);
		return true;
	}
	if (!c->console_dir) {
		http_request_set_route(req, "console_none");
		http_respond_error(req, SL_ENOTFOUND, "this controller serves no console",
				   "start it with 'suanlid serve --console DIR'");
		return true;
	}
	char clean[PATH_MAX];
	struct stat st;
	if (!clean_path(rel, clean, sizeof(clean))) {
		not_found(req, "no such console file");
		return true;
	}
	char *real = resolve(c, clean, &st);
	const char *last = strrchr(clean, '/');
	if (!real && !strchr(last ? last + 1 : clean, '.'))
		real = resolve(c, "index.html", &st); /* the console's own route */
	if (!real) {
		not_found(req, "no such console file");
		return true;
	}
	char etag[64];
	snprintf(etag, sizeof(etag), "\"%llx-%llx\"", (unsigned long long)st.st_size,
		 (unsigned long long)st.st_mtim.tv_sec * 1000000000ull +
			 (unsigned long long)st.st_mtim.tv_nsec);
	http_request_set_route(req, "console");
	add_headers(req);
	if (http_response_header(req, "ETag", etag))
		sl_log_warn("cannot add the ETag header", NULL);
	const char *inm = http_request_header(req, "If-None-Match");
	if (inm && !strcmp(inm, etag)) {
		free(real);
		http_respond(req, 304, NULL, NULL, 0);
		return true;
	}
	char *text = NULL;
	size_t len = 0;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (sl_read_file(real, CONSOLE_MAX_FILE, &text, &len, &d)) {
		sl_log_warn("console file unreadable", "file=%s error=%s", real, d.msg);
		free(real);
		http_respond_error(req, SL_EIO, "the console file cannot be read", NULL);
		return true;
	}
	http_respond(req, 200, type_of(real), text, len);
	free(text);
	free(real);
	return true;
}

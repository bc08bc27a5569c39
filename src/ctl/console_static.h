/* console_static.h - the web console's files, served by suanlid itself
 * (docs/console.md): GET / is DIR/index.html, GET /console/PATH is
 * DIR/PATH, where DIR is `suanlid serve --console DIR` (default: the
 * source tree's console/ when it is there (make run), else the installed
 * share/suanli/console).
 *
 * What is refused: any method but GET and HEAD (405), a path with "." or ".."
 * segments, encoded or not, a backslash, a NUL or an empty segment (404), a
 * file that resolves outside DIR (a symbolic link out of it: 404), anything
 * not a regular file (no directory listings: 404). A path under /console/
 * whose last segment has no '.' and names no file is the console's own
 * route (a deep link) and gets index.html.
 *
 * Every answer carries Content-Type by extension, X-Content-Type-Options:
 * nosniff, a Content-Security-Policy that allows only this origin's scripts
 * and styles (no inline script, no eval, no other origin), Referrer-Policy:
 * no-referrer, X-Frame-Options: DENY, and Cache-Control: no-cache with an
 * ETag (so a changed file is seen at once, an unchanged one costs a 304). */
#ifndef SL_CTL_CONSOLE_STATIC_H
#define SL_CTL_CONSOLE_STATIC_H

#include <stdbool.h>

#include "err.h"

struct ctl;
struct http_request;

#define CONSOLE_MAX_FILE (16u << 20) /* bound on one file served */
#define CONSOLE_CSP                                                                         \
	"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "  \
	"font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "       \
	"frame-ancestors 'none'; form-action 'self'"

/* Finds the console's directory: dir when given (it must exist), else the
 * installed one, else the source tree's. Without one, / answers 404 saying
 * so; that is not an error. */
enum sl_err console_start(struct ctl *c, const char *dir, struct sl_diag *d) SL_MUST_USE;
void console_free(struct ctl *c);
/* Answers req when its path is the console's (/, /console, /console/...);
 * false: not the console's, dispatch it as API. */
bool console_serve(struct ctl *c, struct http_request *req);

#endif

/* banned.h - C library functions suanli does not use (DESIGN §10.6; git's
 * banned.h is the model).
 *
 * Force-included ahead of every file of src/ and bench/ (CMakeLists.txt:
 * sl_banned), so a use anywhere fails to compile with an error naming the
 * function, e.g. "'sorry_strcpy_is_banned' undeclared". Why each is banned:
 *  - strcpy, strcat, sprintf, vsprintf: no bound on the destination;
 *  - strncpy, strncat: bounded, but strncpy leaves the text unterminated and
 *    both truncate silently (a bound on input must be an error);
 *  - gmtime, localtime, ctime, asctime: static result, not thread-safe (use
 *    gmtime_r, or calendar.h);
 *  - strtok: hidden static state (use strtok_r);
 *  - gets: unbounded by design.
 * Build text with struct sl_buf (buf.h) or snprintf, copy a bounded string
 * with sl_strcpy.
 *
 * The headers that declare these are included first, so that their later
 * inclusion (by a file, or by jansson, curl, microhttpd, sqlite3, yaml,
 * sodium or cmocka headers) is a no-op and the macros below never rewrite a
 * declaration. The macros are function-like: only a call is caught. */
#ifndef SL_BANNED_H
#define SL_BANNED_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SL_BANNED(func) sorry_##func##_is_banned

#undef strcpy
#define strcpy(...) SL_BANNED(strcpy)
#undef strcat
#define strcat(...) SL_BANNED(strcat)
#undef strncpy
#define strncpy(...) SL_BANNED(strncpy)
#undef strncat
#define strncat(...) SL_BANNED(strncat)
#undef sprintf
#define sprintf(...) SL_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) SL_BANNED(vsprintf)
#undef gmtime
#define gmtime(...) SL_BANNED(gmtime)
#undef localtime
#define localtime(...) SL_BANNED(localtime)
#undef ctime
#define ctime(...) SL_BANNED(ctime)
#undef asctime
#define asctime(...) SL_BANNED(asctime)
#undef strtok
#define strtok(...) SL_BANNED(strtok)
#undef gets
#define gets(...) SL_BANNED(gets)

#endif

/* people.h - people who sign in to the console (docs/console.md): users
 * with passwords, their sessions (a cookie that authenticates like a token,
 * with a CSRF token for every state-changing request) and the rate limit on
 * failed sign-ins. The handle struct ctl_people is owned by struct ctl; its
 * state is private to users.c and sessions.c (people_int.h).
 *
 * Users and sessions live in the store (STORE_USERS, STORE_SESSIONS): a
 * session row is keyed by the SHA-256 of its cookie, never the cookie, so a
 * restart or a standby taking over keeps people signed in and a copy of the
 * database signs nobody in. Loop thread only. */
#ifndef SL_CTL_PEOPLE_H
#define SL_CTL_PEOPLE_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

struct ctl;
struct ctl_call;

#define PEOPLE_COOKIE "suanli_session"
#define PEOPLE_CSRF_HEADER "X-CSRF-Token"
/* A request with this header (any value) made with the cookie is not use: a
 * page refreshing itself on a timer sends it, so the idle time still ends an
 * unattended tab. */
#define PEOPLE_BACKGROUND_HEADER "X-Suanli-Background"
#define PEOPLE_IDLE_DEFAULT_S (12 * 3600)   /* a session unused this long ends */
#define PEOPLE_MAX_DEFAULT_S (7 * 86400)    /* a session ends this long after sign-in */
#define PEOPLE_SESSION_MAX_S (366LL * 86400) /* bound on both flags */
#define PEOPLE_FAILS_USER_DEFAULT 5         /* failed sign-ins per user per window */
#define PEOPLE_FAILS_SOURCE_DEFAULT 20      /* ... per source address per window */
#define PEOPLE_FAIL_WINDOW_S 60
#define PEOPLE_PASSWORD_MIN 8               /* bytes */
#define PEOPLE_PASSWORD_MAX 1024            /* bytes */
#define PEOPLE_MAX_USERS 100000
#define PEOPLE_MAX_SESSIONS 100000
#define PEOPLE_SESSIONS_PER_USER 64         /* a sign-in past it ends the user's oldest */

struct people_opts {
	int64_t idle_s;   /* 0: PEOPLE_IDLE_DEFAULT_S */
	int64_t max_s;    /* 0: PEOPLE_MAX_DEFAULT_S */
	int fails_user;   /* 0: PEOPLE_FAILS_USER_DEFAULT */
	int fails_source; /* 0: PEOPLE_FAILS_SOURCE_DEFAULT */
};

/* Loads users and sessions from the store (sessions already expired are
 * dropped). */
enum sl_err people_start(struct ctl *c, const struct people_opts *o, struct sl_diag *d) SL_MUST_USE;
void people_free(struct ctl *c);
/* Ends expired sessions (in the turn's transaction) and forgets old
 * failure counts; cheap when nothing is due. */
void people_tick(struct ctl *c);

/* Authenticates call by its session cookie when it has no Authorization
 * header: 1: the cookie's session (call->tok is set, as for a token: the
 * user's role and tenant; the CSRF token was checked for a state-changing
 * method); 0: no session cookie (the caller answers 401 as usual); -1:
 * answered (401 for an ended session, 403 csrf). */
int people_auth_cookie(struct ctl_call *call);
/* A deferred sign-in's client went away: its answer is dropped. */
struct http_request;
void people_request_gone(struct ctl *c, struct http_request *req);

/* Handlers (routes.c). */
void h_user_create(struct ctl_call *call);
void h_user_list(struct ctl_call *call);
void h_user_remove(struct ctl_call *call);
void h_user_passwd(struct ctl_call *call);
void h_session_create(struct ctl_call *call);
void h_session_show(struct ctl_call *call);
void h_session_delete(struct ctl_call *call);

#endif

/* people_int.h - the state behind struct ctl's people handle, shared by
 * users.c (users and their handlers) and sessions.c (sessions, sign-in,
 * cookie authentication). Private to those two files. */
#ifndef SL_CTL_PEOPLE_INT_H
#define SL_CTL_PEOPLE_INT_H

#include <jansson.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctl.h"
#include "ctl_limits.h"
#include "people.h"

struct ctl_user {
	char name[CTL_NAME_MAX + 1];
	char tenant[CTL_NAME_MAX + 1]; /* "" for provider roles */
	enum ctl_role role;
	char hash[crypto_pwhash_STRBYTES]; /* crypto_pwhash_str: "$argon2id$..." */
	int64_t created_ns, password_ns;
};

struct ctl_session {
	char hash[CTL_HASH_HEX + 1];      /* SHA-256 hex of the cookie: the row id */
	char id[CTL_TOKEN_ID_LEN + 1];    /* "ses_" + 12 hex: the audit's actor */
	char user[CTL_NAME_MAX + 1];
	int64_t created_ns, seen_ns, stored_seen_ns;
};

struct ctl_people {
	struct people_opts o;
	struct ctl_user *users;
	int nusers, cap_users;
	json_t *user_by_name; /* name -> index */
	struct ctl_session *sessions;
	int nsessions, cap_sessions;
	json_t *session_by_hash; /* hash hex -> index */
	json_t *fails;           /* "u:NAME" / "a:ADDR" -> [count, window start ns] */
	int64_t next_sweep_ns;
	struct pw_worker *worker; /* checks sign-ins' passwords (pw_worker.h) */
	struct signin **pending;  /* sign-ins it is checking */
	int npending, cap_pending;
};

/* What the store scans at start load into (store_scan_fn's arg). */
struct people_load {
	struct ctl *c;
	struct sl_diag *d;
};
enum sl_err people_load_user(void *arg, const char *id, const char *tenant, const char *json);

struct ctl_user *people_user_find(struct ctl *c, const char *name);
/* Ends every session of user except the one with hash keep (NULL: all). */
void people_end_sessions(struct ctl *c, const char *user, const char *keep);
/* The user a call signed in as via its cookie, else NULL. */
const char *people_call_user(const struct ctl_call *call);
/* Hashes password (Argon2id, crypto_pwhash_str); false when out of memory. */
bool people_hash_password(const char *pw, size_t len, char out[crypto_pwhash_STRBYTES]);
json_t *user_to_json(const struct ctl_user *u, bool store);

#endif

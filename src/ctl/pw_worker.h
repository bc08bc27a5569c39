/* pw_worker.h - password verification off the loop thread.
 *
 * An Argon2id verification costs tens to hundreds of milliseconds of one
 * core (docs/console.md); on the controller's single loop thread every
 * sign-in would hold up every other request for that long, and a guesser
 * spread over many addresses could keep the loop busy. So sign-ins hand the
 * stored hash and the password to one worker thread and wait (the request
 * deferred, http.h); the loop collects finished jobs each turn. The worker
 * touches nothing but its jobs: no controller state (DESIGN.md §8). */
#ifndef SL_CTL_PW_WORKER_H
#define SL_CTL_PW_WORKER_H

#include <sodium.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define PW_WORKER_MAX_JOBS 64 /* verifications queued or running at once */
#define PW_MAX 1024           /* bytes of a password */

struct pw_worker;

struct pw_job {
	void *owner;                       /* the submitter's, untouched by the worker */
	char hash[crypto_pwhash_STRBYTES]; /* "" : verify against a dummy (unknown user) */
	char pw[PW_MAX + 1];
	size_t len;
	bool ok; /* the result, once done */
	struct pw_job *next;
};

enum sl_err pw_worker_start(struct pw_worker **out, struct sl_diag *d) SL_MUST_USE;
/* Stops and joins the thread; every job not collected is wiped and freed.
 * NULL is allowed. */
void pw_worker_stop(struct pw_worker *w);
/* Queues job (the worker owns it until pw_worker_done hands it back).
 * false when PW_WORKER_MAX_JOBS are in flight (the job stays the caller's). */
bool pw_worker_submit(struct pw_worker *w, struct pw_job *job);
/* The finished jobs (a list through next, the password wiped), NULL if
 * none; the caller frees them. */
struct pw_job *pw_worker_done(struct pw_worker *w);
/* Jobs submitted and not yet handed back. */
int pw_worker_inflight(const struct pw_worker *w);

#endif

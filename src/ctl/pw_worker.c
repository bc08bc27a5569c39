/* pw_worker.c - one thread that verifies passwords (pw_worker.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pw_worker.h"

struct pw_worker {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct pw_job *queue, *queue_tail, *done;
	int inflight; /* loop thread only */
	bool stop;
	char dummy[crypto_pwhash_STRBYTES]; /* worker thread only */
};

static void verify(struct pw_worker *w, struct pw_job *j)
{
	if (j->hash[0]) {
		j->ok = crypto_pwhash_str_verify(j->hash, j->pw, j->len) == 0;
	} else { /* an unknown user costs the same hash as a wrong password */
		if (!w->dummy[0] &&
		    crypto_pwhash_str(w->dummy, "not a password", 14, crypto_pwhash_OPSLIMIT_INTERACTIVE,
				      crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0)
			w->dummy[0] = 0;
		volatile bool spent = w->dummy[0] && crypto_pwhash_str_verify(w->dummy, j->pw, j->len) == 0;
		(void)spent; /* never ok without a user */
		j->ok = false;
	}
	sodium_memzero(j->pw, sizeof(j->pw));
}

static void *run(void *arg)
{
	struct pw_worker *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->queue && !w->stop)
			pthread_cond_wait(&w->cond, &w->mu);
		if (w->stop)
			break;
		struct pw_job *j = w->queue;
		w->queue = j->next;
		if (!w->queue)
			w->queue_tail = NULL;
		pthread_mutex_unlock(&w->mu);
		verify(w, j);
		pthread_mutex_lock(&w->mu);
		j->next = w->done;
		w->done = j;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

enum sl_err pw_worker_start(struct pw_worker **out, struct sl_diag *d)
{
	struct pw_worker *w = calloc(1, sizeof(*w));
	*out = NULL;
	if (!w)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	if (pthread_mutex_init(&w->mu, NULL)) {
		free(w);
		return sl_diag_set(d, SL_ENOMEM, "cannot make a mutex");
	}
	if (pthread_cond_init(&w->cond, NULL)) {
		pthread_mutex_destroy(&w->mu);
		free(w);
		return sl_diag_set(d, SL_ENOMEM, "cannot make a condition variable");
	}
	if (pthread_create(&w->thread, NULL, run, w)) {
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->mu);
		free(w);
		return sl_diag_set(d, SL_EIO, "cannot start the password thread");
	}
	*out = w;
	return SL_OK;
}

static void free_list(struct pw_job *j)
{
	while (j) {
		struct pw_job *n = j->next;
		sodium_memzero(j, sizeof(*j));
		free(j);
		j = n;
	}
}

void pw_worker_stop(struct pw_worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	free_list(w->queue);
	free_list(w->done);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->mu);
	sodium_memzero(w->dummy, sizeof(w->dummy));
	free(w);
}

bool pw_worker_submit(struct pw_worker *w, struct pw_job *j)
{
	if (w->inflight >= PW_WORKER_MAX_JOBS)
		return false;
	j->next = NULL;
	pthread_mutex_lock(&w->mu);
	if (w->queue_tail)
		w->queue_tail->next = j;
	else
		w->queue = j;
	w->queue_tail = j;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
	w->inflight++;
	return true;
}

struct pw_job *pw_worker_done(struct pw_worker *w)
{
	pthread_mutex_lock(&w->mu);
	struct pw_job *j = w->done;
	w->done = NULL;
	pthread_mutex_unlock(&w->mu);
	for (struct pw_job *k = j; k; k = k->next)
		w->inflight--;
	return j;
}

int pw_worker_inflight(const struct pw_worker *w)
{
	return w ? w->inflight : 0;
}

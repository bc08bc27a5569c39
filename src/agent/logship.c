/* logship.c - log shipping (see logship.h).
 *
 * The file is the truth and the controller's size is the cursor: every
 * answer, 200 or 409, says how many bytes the controller holds, and the next
 * call starts there. So a lost answer, an agent restart with a stale offset
 * in work.json, or a controller that lost its copy all end in the same
 * resend, and no byte is shipped twice into the controller's copy. */
#include "logship.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "log.h"
#include "state.h"

/* The "size" of an answer; -1 when it has none. */
static int64_t answer_size(const struct http_response *r)
{
	json_t *o = json_loadb(r->body, r->len, 0, NULL);
	json_t *v = json_object_get(o, "size");
	int64_t n = json_is_integer(v) && json_integer_value(v) >= 0 ? json_integer_value(v) : -1;
	json_decref(o);
	return n;
}

/* Fills d from an error answer (message only; the code does not matter here). */
static void describe(const struct http_response *r, struct sl_diag *d)
{
	enum sl_err e = http_client_error_diag(r, d);
	(void)e;
}

/* Reads up to max bytes of path from off; returns the count, -1 on error. */
static ssize_t read_at(const char *path, int64_t off, char *buf, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got < max) {
		ssize_t r = pread(fd, buf + got, max - got, (off_t)(off + (int64_t)got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	return (ssize_t)got;
}

/* Ships one chunk of (job, rank). 1: sent, more may follow; 0: nothing to
 * send; -1: failed (retry later); -2: credential revoked. */
static int ship_one(struct http_client *c, struct work_sup *s, const char *dir,
		    const char *job, int rank, int64_t off, char *buf)
{
	char path[STATE_PATH_MAX], url[256];
	struct stat st;
	struct http_response r;
	struct sl_diag d;

	if (state_path(path, sizeof(path), dir, NULL, "jobs/%s/rank-%d.log", job, rank) != SL_OK ||
	    stat(path, &st) != 0 || st.st_size <= off)
		return 0;
	size_t want = (size_t)(st.st_size - off);
	if (want > LOGSHIP_CHUNK_MAX)
		want = LOGSHIP_CHUNK_MAX;
	ssize_t n = read_at(path, off, buf, want);
	if (n <= 0)
		return 0;
	snprintf(url, sizeof(url), "/v1/agent/logs?job=%s&rank=%d&offset=%lld", job, rank,
		 (long long)off);
	sl_diag_clear(&d);
	if (http_client_request_ct(c, "POST", url, "application/octet-stream", buf, (size_t)n,
				   NULL, LOGSHIP_TIMEOUT_MS, &r, &d) != SL_OK) {
		sl_log_debug("log shipping failed; retrying later", "job=%s rank=%d error=%s", job,
			     rank, d.msg);
		return -1;
	}
	int64_t size = answer_size(&r);
	int rc = 1;
	if (r.status == 200 && size >= 0) {
		work_sup_log_shipped(s, job, rank, size);
	} else if (r.status == 409 && size >= 0 && size <= (int64_t)st.st_size) {
		sl_log_info("the controller holds another log size; resending from there",
			    "job=%s rank=%d offset=%lld size=%lld", job, rank, (long long)off,
			    (long long)size);
		work_sup_log_shipped(s, job, rank, size);
	} else if (r.status == 401) {
		rc = -2;
	} else if (r.status == 403 || r.status == 404 || r.status == 409) {
		describe(&r, &d);
		sl_log_warn("the controller does not take this log; no longer shipping it",
			    "job=%s rank=%d status=%d error=%s", job, rank, r.status, d.msg);
		work_sup_log_shipped(s, job, rank, (int64_t)st.st_size);
	} else {
		describe(&r, &d);
		sl_log_warn("log shipping: unexpected answer; retrying later",
			    "job=%s rank=%d status=%d error=%s", job, rank, r.status, d.msg);
		rc = -1;
	}
	http_response_release(&r);
	return rc;
}

enum logship_result logship_run(struct http_client *c, struct work_sup *s,
				const char *state_dir, int max_calls)
{
	char *buf = malloc(LOGSHIP_CHUNK_MAX);
	char job[WORK_ID_MAX];
	enum logship_result res = LOGSHIP_IDLE;
	size_t iter = 0;
	int rank, calls = 0;
	int64_t off;

	if (!buf)
		return LOGSHIP_FAILED;
	while (res == LOGSHIP_IDLE && work_sup_log_next(s, &iter, job, &rank, &off)) {
		for (;;) {
			if (calls >= max_calls) {
				res = LOGSHIP_MORE;
				break;
			}
			int r = ship_one(c, s, state_dir, job, rank, off, buf);
			if (r == 0)
				break;
			calls++;
			if (r == -1 || r == -2) {
				res = r == -1 ? LOGSHIP_FAILED : LOGSHIP_REVOKED;
				break;
			}
			/* where the controller says it is now */
			size_t it2 = 0;
			char j2[WORK_ID_MAX];
			int r2;
			int64_t o2 = off;
			while (work_sup_log_next(s, &it2, j2, &r2, &o2))
				if (r2 == rank && strcmp(j2, job) == 0)
					break;
			if (o2 == off)
				break; /* no progress: do not spin */
			off = o2;
		}
	}
	free(buf);
	return res;
}

/* job_logs.c - ranks' output at the controller (docs/agent-protocol.md
 * "Logs"): agents append with POST /v1/agent/logs, users read with
 * GET /v1/jobs/{id}/logs.
 *
 * Files: DATA_DIR/logs/<job>/rank-<r>.log (the newest bytes), rank-<r>.log.1
 * (the segment before) and rank-<r>.start (the offset of the first byte kept,
 * written when a segment is dropped). The current file rotates once it would
 * pass JOB_LOG_SEGMENT, so at most JOB_LOG_KEEP bytes (plus one append) stay
 * per rank; offsets stay those of the whole output (X-Log-Start says where
 * the kept part begins). Appends are not fsync'd: a crash may lose the newest
 * output, which the agent then sends again (409 tells it from where). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agents.h"
#include "jobs_int.h"
#include "log.h"

#define PATH_LEN 4096

static void log_path(const struct ctl *c, const struct job *j, int rank, const char *suffix,
		     char out[PATH_LEN])
{
	snprintf(out, PATH_LEN, "%s/logs/%s/rank-%d%s", c->data_dir, j->id, rank, suffix);
}

static int64_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

static int64_t read_start(const struct ctl *c, const struct job *j, int rank)
{
	char p[PATH_LEN], buf[32];
	log_path(c, j, rank, ".start", p);
	FILE *f = fopen(p, "r");
	long long v = 0;
	if (f) {
		if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%lld", &v) != 1 || v < 0)
			v = 0;
		fclose(f);
	}
	return v;
}

/* Sizes: kept-from offset, the older segment and the current file. */
static void sizes(const struct ctl *c, const struct job *j, int rank, int64_t *start,
		  int64_t *s1, int64_t *s0)
{
	char p[PATH_LEN];
	*start = read_start(c, j, rank);
	log_path(c, j, rank, ".log.1", p);
	*s1 = file_size(p);
	log_path(c, j, rank, ".log", p);
	*s0 = file_size(p);
}

void job_log_size(struct ctl *c, const struct job *j, int rank, int64_t *size, int64_t *start)
{
	int64_t s1, s0;
	sizes(c, j, rank, start, &s1, &s0);
	*size = *start + s1 + s0;
}

static bool write_all(int fd, const char *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		b += w;
		n -= (size_t)w;
	}
	return true;
}

static bool write_start(const struct ctl *c, const struct job *j, int rank, int64_t v)
{
	char p[PATH_LEN], tmp[PATH_LEN + 8], buf[32];
	log_path(c, j, rank, ".start", p);
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int n = snprintf(buf, sizeof(buf), "%lld\n", (long long)v);
	bool ok = fd >= 0 && write_all(fd, buf, (size_t)n);
	if (fd >= 0)
		close(fd);
	return ok && rename(tmp, p) == 0;
}

/* Appends len bytes to rank's output, rotating first when the current file
 * would pass the segment size. */
static enum sl_err log_append(struct ctl *c, const struct job *j, int rank, const char *b,
			      size_t len, struct sl_diag *d)
{
	char dir[PATH_LEN], p[PATH_LEN], p1[PATH_LEN];
	snprintf(dir, sizeof(dir), "%s/logs", c->data_dir);
	if (mkdir(dir, 0700) && errno != EEXIST)
		return sl_diag_set(d, SL_EIO, "cannot create %s: %s", dir, strerror(errno));
	snprintf(dir, sizeof(dir), "%s/logs/%s", c->data_dir, j->id);
	if (mkdir(dir, 0700) && errno != EEXIST)
		return sl_diag_set(d, SL_EIO, "cannot create %s: %s", dir, strerror(errno));
	int64_t start, s1, s0;
	sizes(c, j, rank, &start, &s1, &s0);
	log_path(c, j, rank, ".log", p);
	log_path(c, j, rank, ".log.1", p1);
	if (s0 > 0 && s0 + (int64_t)len > JOB_LOG_SEGMENT) {
		/* The older segment goes; what follows it becomes the older one. */
		if (!write_start(c, j, rank, start + s1) || rename(p, p1))
			return sl_diag_set(d, SL_EIO, "cannot rotate %s: %s", p, strerror(errno));
	}
	int fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return sl_diag_set(d, SL_EIO, "cannot open %s: %s", p, strerror(errno));
	bool ok = write_all(fd, b, len);
	int err = errno;
	close(fd);
	return ok ? SL_OK : sl_diag_set(d, SL_EIO, "cannot write %s: %s", p, strerror(err));
}

/* Reads [from, to) of rank's output (from >= start) into buf. */
static enum sl_err log_read(const struct ctl *c, const struct job *j, int rank, int64_t from,
			    int64_t to, char *buf, size_t *got)
{
	int64_t start, s1, s0;
	sizes(c, j, rank, &start, &s1, &s0);
	*got = 0;
	const char *suffix[2] = {".log.1", ".log"};
	int64_t seg_start[2] = {start, start + s1}, seg_len[2] = {s1, s0};
	for (int k = 0; k < 2 && from < to; k++) {
		int64_t a = from > seg_start[k] ? from : seg_start[k];
		int64_t b = seg_start[k] + seg_len[k] < to ? seg_start[k] + seg_len[k] : to;
		if (a >= b)
			continue;
		char p[PATH_LEN];
		log_path(c, j, rank, suffix[k], p);
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return SL_EIO;
		ssize_t n = pread(fd, buf + *got, (size_t)(b - a), (off_t)(a - seg_start[k]));
		close(fd);
		if (n < 0)
			return SL_EIO;
		*got += (size_t)n;
		from = a + n;
	}
	return SL_OK;
}

void h_agent_logs(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	char msg[SL_DIAG_MSG];
	int node = agents_call_node(call);
	if (node < 0)
		return;
	const char *id = http_request_param(call->req, "job");
	long long rank, offset;
	if (!id || !ctl_query_int(call, "rank", -1, INT32_MAX, &rank) ||
	    !ctl_query_int(call, "offset", -1, INT64_MAX, &offset) || rank < 0 || offset < 0) {
		ctl_answer_error(call, SL_EINVAL, "?job=, ?rank= and ?offset= are required (non-negative integers for rank and offset)",
				 "POST /v1/agent/logs?job=J&rank=R&offset=N with the raw bytes");
		return;
	}
	struct job *j = jobs_find(c, id);
	if (!j || rank >= j->nranks) {
		snprintf(msg, sizeof(msg), "no rank %lld of job '%.64s'", rank, id);
		ctl_answer_error(call, SL_ENOTFOUND, msg, NULL);
		return;
	}
	struct job_rank *r = &j->ranks[rank];
	const char *me = c->fleet->nodes[node].name;
	if (strcmp(r->node, me)) {
		snprintf(msg, sizeof(msg), "rank %lld of %s runs on %s, not on %s", rank, j->id, r->node, me);
		ctl_answer_error(call, SL_EFORBIDDEN, msg, "stop it: the controller no longer assigns it here");
		return;
	}
	size_t len;
	const char *body = http_request_body(call->req, &len);
	int64_t size, start;
	job_log_size(c, j, (int)rank, &size, &start);
	int64_t mine = size - r->log_base;
	if (mine < 0)
		mine = 0;
	if (offset != mine) {
		snprintf(msg, sizeof(msg), "offset %lld does not match: the controller has %lld bytes of rank %lld",
			 offset, (long long)mine, rank);
		json_t *doc = http_error_json(SL_ECONFLICT, msg, "send again from \"size\"");
		if (doc)
			json_object_set_new(doc, "size", json_integer(mine));
		ctl_answer_json(call, 409, doc);
		return;
	}
	struct sl_diag d;
	sl_diag_clear(&d);
	if (len && log_append(c, j, (int)rank, body, len, &d)) {
		sl_log_error("job log append failed", "job=%s rank=%lld error=%s", j->id, rank, d.msg);
		ctl_answer_diag(call, SL_EIO, &d);
		return;
	}
	ctl_answer_json(call, 200, json_pack("{s:I}", "size", (json_int_t)(mine + (int64_t)len)));
}

static void set_header(struct ctl_call *call, const char *name, long long v)
{
	char b[32];
	snprintf(b, sizeof(b), "%lld", v);
	if (http_response_header(call->req, name, b))
		sl_log_warn("response header dropped", "name=%s", name);
}

/* All ranks: each one's newest output within its share, lines prefixed. */
static void answer_all(struct ctl_call *call, const struct job *j)
{
	struct ctl *c = call->ctl;
	int64_t share = JOB_LOG_ALL_MAX / (j->nranks ? j->nranks : 1);
	char *raw = malloc((size_t)share + 1);
	/* Prefixes at most double a share (short lines); a rank's output
	 * stops at twice its share, so every rank gets its turn. */
	size_t cap = 2 * (size_t)JOB_LOG_ALL_MAX + 4096 * (size_t)(j->nranks + 1), off = 0;
	char *out = raw ? malloc(cap) : NULL;
	if (!out) {
		free(raw);
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	for (int r = 0; r < j->nranks; r++) {
		int64_t size, start;
		job_log_size(c, j, r, &size, &start);
		int64_t from = size - share > start ? size - share : start;
		size_t got = 0;
		char pre[16];
		int pl = snprintf(pre, sizeof(pre), "[%d] ", r);
		if (from > 0)
			off += (size_t)snprintf(out + off, cap - off,
						"[%d] (the first %lld bytes are not shown: suanli job logs %s --rank %d)\n",
						r, (long long)from, j->id, r);
		if (log_read(c, j, r, from, size, raw, &got))
			got = 0;
		bool bol = true;
		size_t limit = off + 2 * (size_t)share + 1024;
		if (limit > cap)
			limit = cap;
		for (size_t i = 0; i < got && off + (size_t)pl + 2 < limit; i++) {
			if (bol) {
				memcpy(out + off, pre, (size_t)pl);
				off += (size_t)pl;
			}
			out[off++] = raw[i];
			bol = raw[i] == '\n';
		}
		if (!bol && off < cap)
			out[off++] = '\n';
	}
	free(raw);
	ctl_answer(call, 200, "text/plain; charset=utf-8", out, off);
}

void h_job_logs(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	char msg[SL_DIAG_MSG];
	struct job *j = jobs_path_job(call);
	if (!j)
		return;
	long long rank, offset;
	if (!ctl_query_int(call, "rank", -1, INT32_MAX, &rank) ||
	    !ctl_query_int(call, "offset", 0, INT64_MAX, &offset) || rank >= j->nranks) {
		snprintf(msg, sizeof(msg), "?rank= must be 0..%d and ?offset= a non-negative integer",
			 j->nranks - 1);
		ctl_answer_error(call, SL_EINVAL, msg, NULL);
		return;
	}
	if (rank < 0) {
		answer_all(call, j);
		return;
	}
	int64_t size, start;
	job_log_size(c, j, (int)rank, &size, &start);
	int64_t from = offset > start ? offset : start;
	int64_t to = from + JOB_LOG_READ_MAX < size ? from + JOB_LOG_READ_MAX : size;
	size_t got = 0;
	char *buf = malloc(to > from ? (size_t)(to - from) + 1 : 1);
	if (!buf) {
		ctl_answer_error(call, SL_ENOMEM, NULL, NULL);
		return;
	}
	if (to > from && log_read(c, j, (int)rank, from, to, buf, &got)) {
		free(buf);
		ctl_answer_error(call, SL_EIO, "cannot read the log", NULL);
		return;
	}
	set_header(call, "X-Log-Size", size);
	set_header(call, "X-Log-Start", start);
	ctl_answer(call, 200, "text/plain; charset=utf-8", buf, got);
}

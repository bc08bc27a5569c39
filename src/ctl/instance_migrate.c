/* instance_migrate.c - start --migrate's relay (contract "Migration disks
 * through the controller"): the old node uploads the instance's two disks
 * ("system": the committed container image as a podman save tar; "data": a
 * tar of the data disk) in pieces of at most 1 MiB, the controller keeps
 * them under DATA_DIR/migrations/ID/ and checks size and SHA-256 when the
 * old node says it is done, and the new node downloads them in pieces.
 * Agents listen on nothing: every byte goes through these three routes.
 *   POST /v1/agent/migrations/ID/PART?offset=N        a piece (409 {"size"}
 *                                                     on a wrong offset)
 *   POST /v1/agent/migrations/ID/PART/done {"size","sha256"}
 *   GET  /v1/agent/migrations/ID/PART?offset=N&len=L  headers X-Suanli-Size
 *                                                     and X-Suanli-Sha256
 * Only the old node may upload and only the new node may download. Files
 * are removed once the new node runs it (or the migration is abandoned).
 * The SHA-256 is computed on the loop's thread when a part is done (a
 * streaming read of the file): a large disk makes that one turn long. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agents.h"
#include "http.h"
#include "instances_int.h"
#include "log.h"

#define MIG_PIECE_MAX ((size_t)1 << 20)

static bool part_ok(const char *p)
{
	return p && (!strcmp(p, "system") || !strcmp(p, "data"));
}

static void dir_of(struct ctl *c, const struct instance *in, char *buf, size_t n)
{
	snprintf(buf, n, "%s/migrations/%s", c->data_dir, in->id);
}

static void file_of(struct ctl *c, const struct instance *in, const char *part, const char *ext,
		    char *buf, size_t n)
{
	snprintf(buf, n, "%s/migrations/%s/%s.%s", c->data_dir, in->id, part, ext);
}

static int64_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

/* The checked part's {"size","sha256"}, NULL when not done. */
static json_t *part_meta(struct ctl *c, const struct instance *in, const char *part)
{
	char path[1024];
	file_of(c, in, part, "json", path, sizeof(path));
	return json_load_file(path, 0, NULL);
}

bool inst_migration_ready(struct ctl *c, const struct instance *in)
{
	json_t *s = part_meta(c, in, "system");
	json_t *d = in->volume_gib ? part_meta(c, in, "data") : json_object();
	bool ok = s && d;
	json_decref(s);
	json_decref(d);
	return ok;
}

void inst_migration_clear(struct ctl *c, const struct instance *in)
{
	static const char *const names[] = {"system.part", "system.json", "data.part", "data.json"};
	char dir[900], path[1024];
	dir_of(c, in, dir, sizeof(dir));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		(void)unlink(path);
	}
	(void)rmdir(dir);
}

/* The instance of the path for the calling agent: the old node (upload) or
 * the new one (download). NULL after answering. */
static struct instance *mig_instance(struct ctl_call *call, bool upload)
{
	struct ctl *c = call->ctl;
	char msg[SL_DIAG_MSG];
	int node = agents_call_node(call);
	if (node < 0)
		return NULL;
	struct instance *in = inst_find(c, call->param[0]);
	if (!in || !in->migrate_from[0] || in->mig_removing) {
		snprintf(msg, sizeof(msg), "instance '%.64s' is not migrating", call->param[0]);
		ctl_answer_error(call, SL_ENOTFOUND, msg, NULL);
		return NULL;
	}
	if (!part_ok(call->param[1])) {
		ctl_answer_error(call, SL_ENOTFOUND, "the parts of a migration are 'system' and 'data'", NULL);
		return NULL;
	}
	const char *me = c->fleet->nodes[node].name;
	const char *want = upload ? in->migrate_from : in->nodes[0].node;
	if (strcmp(me, want)) {
		snprintf(msg, sizeof(msg), "%s of %s is for node %s, not %s", upload ? "the upload" : "the download",
			 in->id, want, me);
		ctl_answer_error(call, SL_EFORBIDDEN, msg, NULL);
		return NULL;
	}
	return in;
}

void h_migration_put(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	char msg[SL_DIAG_MSG], dir[900], path[1024];
	struct instance *in = mig_instance(call, true);
	if (!in)
		return;
	long long offset;
	if (!ctl_query_int(call, "offset", -1, INT64_MAX, &offset) || offset < 0) {
		ctl_answer_error(call, SL_EINVAL, "?offset= is required (a non-negative integer)",
				 "POST /v1/agent/migrations/ID/PART?offset=N with the raw bytes");
		return;
	}
	const char *part = call->param[1];
	json_t *meta = part_meta(c, in, part);
	if (meta) {
		json_decref(meta);
		ctl_answer_error(call, SL_ECONFLICT, "this part is done already", NULL);
		return;
	}
	dir_of(c, in, dir, sizeof(dir));
	char top[900];
	snprintf(top, sizeof(top), "%s/migrations", c->data_dir);
	(void)mkdir(top, 0700);
	(void)mkdir(dir, 0700);
	file_of(c, in, part, "part", path, sizeof(path));
	int64_t have = file_size(path);
	if (offset != have) {
		snprintf(msg, sizeof(msg), "offset %lld does not match: the controller has %lld bytes of %s",
			 offset, (long long)have, part);
		json_t *doc = http_error_json(SL_ECONFLICT, msg, "send again from \"size\"");
		if (doc)
			json_object_set_new(doc, "size", json_integer(have));
		ctl_answer_json(call, 409, doc);
		return;
	}
	size_t len;
	const char *body = http_request_body(call->req, &len);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	size_t done = 0;
	while (fd >= 0 && done < len) {
		ssize_t w = write(fd, body + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	if (fd < 0 || done != len || close(fd)) {
		snprintf(msg, sizeof(msg), "could not store the piece: %s", strerror(errno));
		ctl_answer_error(call, SL_EIO, msg, "the controller's disk may be full");
		return;
	}
	ctl_answer_json(call, 200, json_pack("{s:I}", "size", (json_int_t)(have + (int64_t)len)));
}

static bool sha256_file(const char *path, char hex[65])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	crypto_hash_sha256_state st;
	crypto_hash_sha256_init(&st);
	unsigned char *buf = malloc(MIG_PIECE_MAX);
	bool ok = buf != NULL;
	for (;;) {
		ssize_t r = ok ? read(fd, buf, MIG_PIECE_MAX) : -1;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			ok &= r == 0;
			break;
		}
		crypto_hash_sha256_update(&st, buf, (unsigned long long)r);
	}
	free(buf);
	close(fd);
	unsigned char h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256_final(&st, h);
	sodium_bin2hex(hex, 65, h, sizeof(h));
	return ok;
}

void h_migration_done(struct ctl_call *call)
{
	static const struct ctl_field fields[] = {{"size", FT_INT, true}, {"sha256", FT_STRING, true}};
	struct ctl *c = call->ctl;
	char msg[SL_DIAG_MSG], path[1024], hex[65];
	struct instance *in = mig_instance(call, true);
	if (!in || !ctl_check_fields(call, call->body, fields, 2, "a finished part"))
		return;
	const char *part = call->param[1];
	json_int_t size = json_integer_value(json_object_get(call->body, "size"));
	const char *sum = json_string_value(json_object_get(call->body, "sha256"));
	file_of(c, in, part, "part", path, sizeof(path));
	int64_t have = file_size(path);
	if (have != size) {
		snprintf(msg, sizeof(msg), "size %lld does not match the %lld bytes received", (long long)size,
			 (long long)have);
		json_t *doc = http_error_json(SL_ECONFLICT, msg, "send the rest from \"size\"");
		if (doc)
			json_object_set_new(doc, "size", json_integer(have));
		ctl_answer_json(call, 409, doc);
		return;
	}
	if (!sha256_file(path, hex)) {
		ctl_answer_error(call, SL_EIO, "could not read the part back", NULL);
		return;
	}
	if (strcmp(hex, sum)) {
		/* The copy is bad: it goes, and the old node sends it again. */
		(void)unlink(path);
		snprintf(msg, sizeof(msg), "sha256 mismatch for %s: received %s, you said %.64s; the part is "
			 "dropped", part, hex, sum);
		ctl_answer_error(call, SL_ECONFLICT, msg, "upload it again from offset 0");
		return;
	}
	json_t *meta = json_pack("{s:I, s:s}", "size", (json_int_t)size, "sha256", hex);
	file_of(c, in, part, "json", path, sizeof(path));
	if (!meta || json_dump_file(meta, path, JSON_COMPACT)) {
		json_decref(meta);
		ctl_answer_error(call, SL_EIO, "could not record the part", NULL);
		return;
	}
	sl_log_info("migration part received", "instance=%s part=%s size=%lld", in->id, part,
		    (long long)size);
	if (inst_migration_ready(c, in))
		inst_bump(c, in); /* the new node's run item appears */
	ctl_answer_json(call, 200, meta);
}

void h_migration_get(struct ctl_call *call)
{
	struct ctl *c = call->ctl;
	char path[1024], b[32];
	struct instance *in = mig_instance(call, false);
	if (!in)
		return;
	const char *part = call->param[1];
	json_t *meta = part_meta(c, in, part);
	if (!meta) {
		ctl_answer_error(call, SL_ENOTFOUND, "this part is not uploaded (and checked) yet", NULL);
		return;
	}
	long long offset, len;
	if (!ctl_query_int(call, "offset", 0, INT64_MAX, &offset) ||
	    !ctl_query_int(call, "len", (long long)MIG_PIECE_MAX, (long long)MIG_PIECE_MAX * 4, &len)) {
		json_decref(meta);
		ctl_answer_error(call, SL_EINVAL, "?offset= and ?len= must be non-negative integers (len at most 4 MiB)", NULL);
		return;
	}
	int64_t size = json_integer_value(json_object_get(meta, "size"));
	snprintf(b, sizeof(b), "%lld", (long long)size);
	if (http_response_header(call->req, "X-Suanli-Size", b) ||
	    http_response_header(call->req, "X-Suanli-Sha256",
				 json_string_value(json_object_get(meta, "sha256"))))
		sl_log_warn("response header dropped", "instance=%s", in->id);
	json_decref(meta);
	if (offset > size)
		offset = size;
	if (len > size - offset)
		len = size - offset;
	char *buf = malloc((size_t)len + 1);
	file_of(c, in, part, "part", path, sizeof(path));
	int fd = buf ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	ssize_t got = 0;
	while (fd >= 0 && got < len) {
		ssize_t r = pread(fd, buf + got, (size_t)(len - got), offset + got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += r;
	}
	if (fd >= 0)
		close(fd);
	if (!buf || got != len) {
		free(buf);
		ctl_answer_error(call, SL_EIO, "could not read the part", NULL);
		return;
	}
	ctl_answer(call, 200, "application/octet-stream", buf, (size_t)len);
}

/* inst_migrate.c - moving an instance's two disks to another node through
 * the controller (contract instances.md, "Migration disks"); agents listen
 * on nothing, so the old node uploads and the new one downloads.
 *
 * Both run in an op child (inst_ops.c) with a connection of their own
 * (libcurl easy, the agent's credential, the controller's CA).
 *
 * Export (old node, item state "export", the container already stopped):
 *   system  the container's file system as a flat tar (`podman mount` of
 *           the stopped container, GNU tar), its owners mapped back from the
 *           instance's host ids to the container's own (0..65535);
 *   data    a tar of the data disk, mapped the same way (none when
 *           volume_gib is 0);
 * each with its sha256, uploaded in parts of at most 1 MiB
 * (POST /v1/agent/migrations/ID/PART?offset=N, a 409 names the size the
 * controller holds and the upload goes on from there), then
 * POST .../PART/done {"size", "sha256"}.
 *
 * Why not `podman commit` + `podman save`, as the contract first said: a
 * committed layer keeps the host ids of the container's user namespace
 * (measured: a file of container uid 1000 is stored as host uid B+1000), so
 * on a node that gives the instance another id range every file would
 * belong to "nobody". The mapped tar is right wherever it lands.
 *
 * Import (new node, the run item's migrate_from, before the container is
 * made): GET .../PART?offset=N&len=L (X-Suanli-Size and X-Suanli-Sha256 give
 * the whole part's) into STATE_DIR/instances/ID/migrate/PART.tar, resumed
 * after an interruption; the sha256 must match before anything is used (a
 * mismatch fails the start, naming it, and keeps nothing of it; the old
 * node's copy is untouched). system: `podman import` as the instance's
 * system image, from which inst_ops.c creates the container; data: untarred
 * onto the new data disk, owners shifted to this node's id range. */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <sodium.h>

#include "engine.h"
#include "inst_int.h"

#define CHUNK ((size_t)1 << 20)     /* bytes per upload call (contract) */
#define GET_LEN ((size_t)4 << 20)   /* bytes asked for per download call */
#define TRIES 5

static enum sl_err file_sha256(const char *path, char hex[65], int64_t *size)
{
	crypto_hash_sha256_state st;
	unsigned char buf[65536], h[crypto_hash_sha256_BYTES];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return SL_EIO;
	crypto_hash_sha256_init(&st);
	*size = 0;
	ssize_t r;
	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		crypto_hash_sha256_update(&st, buf, (unsigned long long)r);
		*size += r;
	}
	close(fd);
	if (r < 0)
		return SL_EIO;
	crypto_hash_sha256_final(&st, h);
	sodium_bin2hex(hex, 65, h, sizeof(h));
	return SL_OK;
}

/* ---- HTTP ------------------------------------------------------------------ */

struct xfer {
	CURL *c;
	struct curl_slist *hdrs;
	char base[1024];   /* server + /v1/agent/migrations/ID */
	char body[4096];   /* a JSON answer (bounded) */
	size_t blen;
	FILE *out;         /* downloads */
	int64_t size;      /* X-Suanli-Size (-1: none) */
	char sha[65];      /* X-Suanli-Sha256 */
};

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = sz * n;
	if (x->out)
		return fwrite(p, 1, len, x->out);
	size_t room = sizeof(x->body) - 1 - x->blen;
	memcpy(x->body + x->blen, p, len < room ? len : room);
	x->blen += len < room ? len : room;
	x->body[x->blen] = '\0';
	return len;
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = sz * n;
	char line[256];
	if (len >= sizeof(line))
		return len;
	memcpy(line, p, len);
	line[len] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	if (strncasecmp(line, "X-Suanli-Size:", 14) == 0)
		x->size = strtoll(line + 14, NULL, 10);
	else if (strncasecmp(line, "X-Suanli-Sha256:", 16) == 0)
		snprintf(x->sha, sizeof(x->sha), "%.64s", line + 16 + strspn(line + 16, " "));
	return len;
}

static bool xfer_open(const struct inst_sup *s, const struct inst *in, struct xfer *x)
{
	memset(x, 0, sizeof(*x));
	if (!s->server || !s->server[0])
		return false;
	/* a list of controllers: the first (the ops do not fail over) */
	size_t sl = strcspn(s->server, ",");
	while (sl > 0 && s->server[sl - 1] == '/')
		sl--;
	snprintf(x->base, sizeof(x->base), "%.*s/v1/agent/migrations/%s", (int)sl, s->server,
		 in->spec.id);
	char auth[1200];
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", s->token ? s->token : "");
	x->hdrs = curl_slist_append(NULL, auth);
	x->c = curl_easy_init();
	if (!x->c || !x->hdrs)
		return false;
	return true;
}

static void xfer_close(struct xfer *x)
{
	if (x->c)
		curl_easy_cleanup(x->c);
	curl_slist_free_all(x->hdrs);
}

/* One call; its status (0: no answer). */
static long call(const struct inst_sup *s, struct xfer *x, const char *url, const char *ct,
		 const void *data, size_t len)
{
	struct curl_slist *h = x->hdrs, *extra = NULL;
	char cth[128];
	CURL *c = x->c;
	curl_easy_reset(c);
	if (ct) {
		snprintf(cth, sizeof(cth), "Content-Type: %s", ct);
		extra = curl_slist_append(NULL, cth);
		for (struct curl_slist *i = x->hdrs; extra && i; i = i->next)
			extra = curl_slist_append(extra, i->data);
		h = extra ? extra : x->hdrs;
	}
	x->blen = 0;
	x->body[0] = '\0';
	x->size = -1;
	x->sha[0] = '\0';
	(void)curl_easy_setopt(c, CURLOPT_URL, url);
	(void)curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	(void)curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	(void)curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	(void)curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
	(void)curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	(void)curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	if (s->ca && s->ca[0])
		(void)curl_easy_setopt(c, CURLOPT_CAINFO, s->ca);
	(void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	(void)curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	(void)curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	(void)curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
	if (data) {
		(void)curl_easy_setopt(c, CURLOPT_POST, 1L);
		(void)curl_easy_setopt(c, CURLOPT_POSTFIELDS, data);
		(void)curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	long status = 0;
	CURLcode rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		(void)curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	else
		dprintf(inst_op_errfd, "suanli-agent: %s: %s\n", url, curl_easy_strerror(rc));
	curl_slist_free_all(extra);
	return status;
}

static int64_t answer_size(const struct xfer *x)
{
	json_t *o = json_loads(x->body, 0, NULL);
	json_t *v = json_object_get(o, "size");
	int64_t n = json_is_integer(v) ? json_integer_value(v) : -1;
	json_decref(o);
	return n;
}

static int upload(const struct inst_sup *s, const struct inst *in, struct xfer *x,
		  const char *part, const char *path)
{
	char hex[65], url[1200], msg[128];
	int64_t size, off = 0;
	if (file_sha256(path, hex, &size) != SL_OK)
		return inst_fail(s, in, "cannot read %s: %s", path, strerror(errno));
	FILE *f = fopen(path, "rbe");
	char *buf = malloc(CHUNK);
	int tries = 0;
	if (!f || !buf) {
		free(buf);
		if (f)
			fclose(f);
		return inst_fail(s, in, "cannot read %s", path);
	}
	while (off < size) {
		snprintf(msg, sizeof(msg), "uploading %s: %lld of %lld MiB", part,
			 (long long)(off >> 20), (long long)(size >> 20));
		inst_progress(s, in, msg);
		size_t n = 0;
		if (fseeko(f, off, SEEK_SET) == 0)
			n = fread(buf, 1, CHUNK, f);
		snprintf(url, sizeof(url), "%s/%s?offset=%lld", x->base, part, (long long)off);
		long st = call(s, x, url, "application/octet-stream", buf, n);
		int64_t have = answer_size(x);
		if ((st == 200 || st == 409) && have >= 0 && have <= size) {
			off = have; /* 409: the controller holds another size; go on from it */
			tries = 0;
			continue;
		}
		if (++tries >= TRIES) {
			fclose(f);
			free(buf);
			return inst_fail(s, in, "upload of the %s disk to the controller failed "
					   "(status %ld): %.200s", part, st, x->body);
		}
		sleep((unsigned)tries);
	}
	fclose(f);
	free(buf);
	char body[160];
	snprintf(body, sizeof(body), "{\"size\": %lld, \"sha256\": \"%s\"}", (long long)size, hex);
	snprintf(url, sizeof(url), "%s/%s/done", x->base, part);
	long st = 0;
	for (tries = 0; tries < TRIES && st != 200; tries++)
		if ((st = call(s, x, url, "application/json", body, strlen(body))) != 200 &&
		    st >= 400 && st < 500)
			break;
	if (st != 200)
		return inst_fail(s, in, "the controller did not accept the %s disk (status %ld): "
				   "%.200s", part, st, x->body);
	dprintf(inst_op_errfd, "suanli-agent: uploaded the %s disk: %lld bytes, sha256 %s\n", part,
		(long long)size, hex);
	return 0;
}

static int download(const struct inst_sup *s, const struct inst *in, struct xfer *x,
		    const char *part, const char *path)
{
	char url[1200], msg[128], hex[65];
	struct stat st;
	int64_t off = stat(path, &st) == 0 ? (int64_t)st.st_size : 0, size = -1, got;
	char want[65] = "";
	int tries = 0;
	for (;;) {
		FILE *f = fopen(path, "abe");
		if (!f)
			return inst_fail(s, in, "cannot write %s: %s", path, strerror(errno));
		x->out = f;
		snprintf(url, sizeof(url), "%s/%s?offset=%lld&len=%zu", x->base, part,
			 (long long)off, GET_LEN);
		long code = call(s, x, url, NULL, NULL, 0);
		x->out = NULL;
		fclose(f);
		if (code == 200 && x->size >= 0 && strlen(x->sha) == 64) {
			size = x->size;
			snprintf(want, sizeof(want), "%s", x->sha);
			got = stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
			if (got > size) {
				(void)unlink(path);
				return inst_fail(s, in, "the %s disk from the controller is longer than "
						   "its size; dropped", part);
			}
			off = got;
			tries = 0;
			snprintf(msg, sizeof(msg), "importing %s: %lld of %lld MiB", part,
				 (long long)(off >> 20), (long long)(size >> 20));
			inst_progress(s, in, msg);
			if (off == size)
				break;
			continue;
		}
		/* keep only what came whole: a broken answer restarts at the old offset */
		if (truncate(path, off) != 0 && errno != ENOENT)
			return inst_fail(s, in, "cannot truncate %s", path);
		if (code == 404 || ++tries >= TRIES)
			return inst_fail(s, in, "cannot fetch the %s disk from the controller (status "
					   "%ld)%s%.200s", part, code, x->blen ? ": " : "", x->body);
		sleep((unsigned)tries);
	}
	if (file_sha256(path, hex, &got) != SL_OK)
		return inst_fail(s, in, "cannot read %s", path);
	if (strcmp(hex, want) != 0) {
		(void)unlink(path);
		return inst_fail(s, in, "checksum mismatch for the %s disk from %s: sha256 %s, the "
				   "controller says %s; nothing of it was used, the old node keeps "
				   "its copy", part, in->spec.migrate_from, hex, want);
	}
	dprintf(inst_op_errfd, "suanli-agent: fetched the %s disk: %lld bytes, sha256 ok\n", part,
		(long long)size);
	return 0;
}

/* ---- owners ------------------------------------------------------------- */

/* GNU tar --owner-map/--group-map lines taking every host id of the
 * instance's range found under root back to the container's own. */
static uint32_t map_base;
static FILE *map_f;
static uint32_t seen[4096];
static size_t nseen;

static void map_id(uint32_t id)
{
	if (id < map_base || id >= map_base + PODMAN_IDS)
		return;
	for (size_t i = 0; i < nseen; i++)
		if (seen[i] == id)
			return;
	if (nseen < sizeof(seen) / sizeof(seen[0]))
		seen[nseen++] = id;
	fprintf(map_f, "+%u +%u\n", id, id - map_base);
}

/* Calls fn on path and everything under it (not following links, not
 * crossing into other file systems); false when a directory cannot be read. */
static bool walk(const char *path, dev_t dev, void (*fn)(const char *, const struct stat *))
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return false;
	fn(path, &st);
	if (!S_ISDIR(st.st_mode) || st.st_dev != dev)
		return true;
	DIR *dh = opendir(path);
	if (!dh)
		return false;
	bool ok = true;
	struct dirent *de;
	char sub[4096];
	while ((de = readdir(dh)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) < (int)sizeof(sub))
			ok = walk(sub, dev, fn) && ok;
	closedir(dh);
	return ok;
}

static bool walk_root(const char *root, void (*fn)(const char *, const struct stat *))
{
	struct stat st;
	return stat(root, &st) == 0 && walk(root, st.st_dev, fn);
}

static void map_walk(const char *p, const struct stat *st)
{
	(void)p;
	map_id((uint32_t)st->st_uid);
	map_id((uint32_t)st->st_gid);
}

static bool write_map(const char *root, uint32_t base, const char *path)
{
	map_base = base;
	nseen = 0;
	if (!(map_f = fopen(path, "we")))
		return false;
	bool ok = walk_root(root, map_walk);
	return fclose(map_f) == 0 && ok;
}

static uint32_t shift_base;
static void shift_walk(const char *p, const struct stat *st)
{
	uint32_t u = (uint32_t)st->st_uid, g = (uint32_t)st->st_gid;
	if (u >= PODMAN_IDS && g >= PODMAN_IDS)
		return;
	(void)lchown(p, u < PODMAN_IDS ? shift_base + u : u, g < PODMAN_IDS ? shift_base + g : g);
	if (!S_ISLNK(st->st_mode) && (st->st_mode & (S_ISUID | S_ISGID)))
		(void)chmod(p, st->st_mode & 07777); /* chown cleared them */
}

static int tar_from(const struct inst_sup *s, const struct inst *in, const char *root,
		    const char *out, const char *map)
{
	char om[STATE_PATH_MAX + 16], gm[STATE_PATH_MAX + 16];
	if (!write_map(root, in->uid_base, map))
		return inst_fail(s, in, "cannot read the owners under %s", root);
	snprintf(om, sizeof(om), "--owner-map=%s", map);
	snprintf(gm, sizeof(gm), "--group-map=%s", map);
	char *tar[] = {"tar", "--numeric-owner", om, gm, "--xattrs", "-C", (char *)root, "-cpf",
		       (char *)out, ".", NULL};
	if (inst_run(tar, NULL, 0, inst_op_errfd) > 1) /* 1: files changed meanwhile */
		return inst_fail(s, in, "tar of %s failed (see op.log)", root);
	return 0;
}

int inst_export_main(struct inst_sup *s, struct inst *in, int errfd)
{
	char dir[STATE_PATH_MAX], sys[STATE_PATH_MAX], data[STATE_PATH_MAX], map[STATE_PATH_MAX];
	char name[256], mnt[STATE_PATH_MAX], root[STATE_PATH_MAX];
	struct sl_diag d;
	struct xfer x;
	(void)errfd;
	sl_diag_clear(&d);
	if (inst_path(s, in, dir, sizeof(dir), "migrate") != SL_OK ||
	    inst_path(s, in, sys, sizeof(sys), "migrate/system.tar") != SL_OK ||
	    inst_path(s, in, data, sizeof(data), "migrate/data.tar") != SL_OK ||
	    inst_path(s, in, map, sizeof(map), "migrate/ids.map") != SL_OK ||
	    state_mkdirs(dir, 0700, &d) != SL_OK)
		return inst_fail(s, in, "cannot make %s", dir);
	if (!in->uid_base)
		return inst_fail(s, in, "nothing to export: the instance never ran on this node");
	inst_ctr_name(s, in, name, sizeof(name));
	inst_progress(s, in, "exporting system");
	char *mount[] = PODMAN(s, "mount", name);
	char *umount[] = PODMAN(s, "unmount", name);
	if (inst_run(mount, root, sizeof(root), inst_op_errfd) != 0)
		return inst_fail(s, in, "cannot reach the system disk (podman mount %s failed)", name);
	root[strcspn(root, "\n")] = '\0';
	int rc = tar_from(s, in, root, sys, map);
	(void)inst_run(umount, NULL, 0, inst_op_errfd);
	if (rc != 0)
		return rc;
	if (in->spec.volume_gib > 0) {
		inst_progress(s, in, "exporting data");
		if (inst_disk_up(s, in, mnt, sizeof(mnt)) != 0 ||
		    tar_from(s, in, mnt, data, map) != 0)
			return 1;
	}
	if (!xfer_open(s, in, &x)) {
		xfer_close(&x);
		return inst_fail(s, in, "no controller to upload to");
	}
	rc = upload(s, in, &x, "system", sys);
	if (rc == 0 && in->spec.volume_gib > 0)
		rc = upload(s, in, &x, "data", data);
	xfer_close(&x);
	if (rc == 0) {
		(void)unlink(sys);
		(void)unlink(data);
	}
	return rc;
}

int inst_import_main(struct inst_sup *s, struct inst *in, int errfd)
{
	char dir[STATE_PATH_MAX], sys[STATE_PATH_MAX], data[STATE_PATH_MAX], img[256];
	char mnt[STATE_PATH_MAX];
	struct sl_diag d;
	struct xfer x;
	(void)errfd;
	sl_diag_clear(&d);
	if (inst_path(s, in, dir, sizeof(dir), "migrate") != SL_OK ||
	    inst_path(s, in, sys, sizeof(sys), "migrate/system.tar") != SL_OK ||
	    inst_path(s, in, data, sizeof(data), "migrate/data.tar") != SL_OK ||
	    state_mkdirs(dir, 0700, &d) != SL_OK)
		return inst_fail(s, in, "cannot make %s", dir);
	if (!xfer_open(s, in, &x)) {
		xfer_close(&x);
		return inst_fail(s, in, "no controller to download from");
	}
	int rc = download(s, in, &x, "system", sys);
	if (rc == 0 && in->spec.volume_gib > 0)
		rc = download(s, in, &x, "data", data);
	xfer_close(&x);
	if (rc != 0)
		return rc;
	inst_sys_image(s, in, img, sizeof(img));
	char *rmi[] = PODMAN(s, "rmi", "--force", img);
	(void)inst_run(rmi, NULL, 0, -1);
	char *imp[] = PODMAN(s, "import", "--quiet", sys, img);
	if (inst_run(imp, NULL, 0, inst_op_errfd) != 0)
		return inst_fail(s, in, "podman import of the system disk failed (see op.log)");
	if (in->spec.volume_gib > 0) {
		if (inst_disk_up(s, in, mnt, sizeof(mnt)) != 0)
			return 1;
		char *tar[] = {"tar", "--numeric-owner", "--xattrs", "-C", mnt, "-xpf", data, NULL};
		if (inst_run(tar, NULL, 0, inst_op_errfd) != 0)
			return inst_fail(s, in, "untar of the data disk failed (see op.log)");
		shift_base = in->uid_base;
		if (!walk_root(mnt, shift_walk))
			return inst_fail(s, in, "cannot give the data disk's files to the container");
	}
	(void)unlink(sys);
	(void)unlink(data);
	return 0;
}

/* uid_ranges.c - a host's table of user-namespace id ranges (uid_ranges.h). */
#include "uid_ranges.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "state.h"

/* Whether slot's file holds key (read into buf). */
static int slot_owner_is(const char *path, const char *key)
{
	char buf[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return strcmp(buf, key) == 0;
}

/* The slot whose file holds key (a scan of the table: holes left by freed
 * ranges do not hide it); -1 when none. */
static long find_slot(const char *dir, const char *key)
{
	char path[STATE_PATH_MAX];
	long found = -1;
	DIR *dh = opendir(dir);
	if (!dh)
		return -1;
	for (struct dirent *de; found < 0 && (de = readdir(dh));) {
		char *end;
		unsigned long slot = strtoul(de->d_name, &end, 10);
		if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end || slot >= ENGINE_UID_SLOTS)
			continue;
		if (state_path(path, sizeof(path), dir, NULL, "%lu", slot) == SL_OK &&
		    slot_owner_is(path, key) == 1)
			found = (long)slot;
	}
	closedir(dh);
	return found;
}

enum sl_err uid_range_take(const char *dir, const char *agent, const char *lease,
			   uint32_t *base, struct sl_diag *d)
{
	return uid_range_take_at(dir, agent, lease, 0, base, d);
}

enum sl_err uid_range_take_at(const char *dir, const char *agent, const char *lease,
			      uint32_t prefer, uint32_t *base, struct sl_diag *d)
{
	char key[256], path[STATE_PATH_MAX];
	enum sl_err e;
	if (snprintf(key, sizeof(key), "%s %s", agent, lease) >= (int)sizeof(key))
		return sl_diag_set(d, SL_ELIMIT, "id range: agent and lease names are too long");
	if ((e = state_mkdirs(dir, 0700, d)) != SL_OK)
		return e;
	long have = find_slot(dir, key);
	if (have >= 0) {
		*base = ENGINE_UID_BASE + (uint32_t)have * PODMAN_IDS;
		return SL_OK;
	}
	uint32_t want = prefer >= ENGINE_UID_BASE && (prefer - ENGINE_UID_BASE) % PODMAN_IDS == 0 &&
				(prefer - ENGINE_UID_BASE) / PODMAN_IDS < ENGINE_UID_SLOTS
			? prefer
			: engine_uid_base(lease);
	uint32_t first = (want - ENGINE_UID_BASE) / PODMAN_IDS;
	for (uint32_t k = 0; k < ENGINE_UID_SLOTS; k++) {
		uint32_t slot = (first + k) % ENGINE_UID_SLOTS;
		if ((e = state_path(path, sizeof(path), dir, d, "%u", slot)) != SL_OK)
			return e;
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 && errno == EEXIST)
			continue;
		if (fd < 0)
			return sl_diag_set(d, SL_EIO, "cannot take id range %s: %s", path,
					   strerror(errno));
		size_t len = strlen(key);
		ssize_t w = write(fd, key, len);
		int ce = close(fd);
		if (w != (ssize_t)len || ce != 0) {
			int err = errno;
			(void)unlink(path);
			return sl_diag_set(d, SL_EIO, "cannot write id range %s: %s", path,
					   strerror(err));
		}
		*base = ENGINE_UID_BASE + slot * PODMAN_IDS;
		return SL_OK;
	}
	sl_diag_hint(d, "end some leases on this node, or remove stale files of %s", dir);
	return sl_diag_set(d, SL_ELIMIT, "no free user-namespace id range on this host (%u taken)",
			   ENGINE_UID_SLOTS);
}

void uid_range_release(const char *dir, const char *agent, const char *lease)
{
	char key[256], path[STATE_PATH_MAX];
	if (snprintf(key, sizeof(key), "%s %s", agent, lease) >= (int)sizeof(key))
		return;
	long slot = find_slot(dir, key);
	if (slot >= 0 && state_path(path, sizeof(path), dir, NULL, "%ld", slot) == SL_OK)
		(void)unlink(path);
}

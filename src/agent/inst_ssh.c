/* inst_ssh.c - an instance's sshd: host keys made on the host with
 * ssh-keygen (kept in STATE_DIR/instances/ID/ssh across stop and start,
 * removed with the instance), the renter's authorized_keys, and an
 * sshd_config of our own (the image's is not trusted to exist or to be
 * safe), all owned by the container's root and mounted read-only at
 * PODMAN_INST_SSH_DIR. sshd is strict about its files: the private key must not be
 * readable by others, the authorized_keys path must not be writable by
 * anyone but its owner or root (StrictModes), so the directory is 0700 and
 * the files 0600, owned by container root (the instance's uid_base). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "buf.h"
#include "inst_int.h"
#include "podman_args.h"
#include "work_int.h"

#define KEY "ssh_host_ed25519_key"

static enum sl_err write_file(const char *path, const char *text, uid_t uid,
			      struct sl_diag *d)
{
	enum sl_err e = state_write_atomic(path, text, strlen(text), 0600, d);
	if (e == SL_OK && chown(path, uid, uid) != 0)
		return sl_diag_set(d, SL_EIO, "cannot chown %s: %s", path, strerror(errno));
	return e;
}

/* A value for sshd_config's SetEnv: in double quotes, with \ and " escaped;
 * false for a value sshd_config cannot carry (control characters). */
static bool quoted(const char *kv, struct sl_buf *b)
{
	for (const char *p = kv; *p; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			return false;
	sl_buf_addc(b, '"');
	for (const char *p = kv; *p; p++) {
		if (*p == '"' || *p == '\\')
			sl_buf_addc(b, '\\');
		sl_buf_addc(b, *p);
	}
	sl_buf_addc(b, '"');
	return true;
}

static char *sshd_config(const struct inst *in, int port)
{
	struct sl_buf b;
	sl_buf_init(&b, (size_t)1 << 20);
	sl_buf_addf(&b,
		    "# written by suanli-agent for instance %s; regenerated at every start\n"
		    "Port %d\n"
		    "HostKey " PODMAN_INST_SSH_DIR "/" KEY "\n"
		    "AuthorizedKeysFile " PODMAN_INST_SSH_DIR "/authorized_keys .ssh/authorized_keys\n"
		    "PermitRootLogin prohibit-password\n"
		    "PasswordAuthentication no\n"
		    "KbdInteractiveAuthentication no\n"
		    "UsePAM no\n"
		    "StrictModes yes\n"
		    "PrintMotd no\n"
		    "PidFile /run/sshd.pid\n"
		    "AllowTcpForwarding yes\n"
		    "Subsystem sftp internal-sftp\n",
		    in->spec.id, port);
	/* the lease's training environment in every session: one SetEnv line
	 * (sshd takes the first of each keyword) */
	gpumask_t g = in->spec.w.gpus;
	if (in->spec.w.nenv > 0)
		sl_buf_adds(&b, "SetEnv");
	for (size_t i = 0; i < in->spec.w.nenv; i++) {
		char *kv = work_item_env(in->spec.w.env[i], g, true);
		size_t mark = b.len;
		sl_buf_addc(&b, ' ');
		if (!kv || !quoted(kv, &b))
			sl_buf_setlen(&b, mark); /* not representable: left out */
		free(kv);
	}
	if (in->spec.w.nenv > 0)
		sl_buf_addc(&b, '\n');
	char *out = NULL;
	if (sl_buf_detach(&b, &out, NULL) != SL_OK)
		return NULL;
	return out;
}

enum sl_err inst_ssh_prepare(const struct inst_sup *s, const struct inst *in, struct sl_diag *d)
{
	char dir[STATE_PATH_MAX], key[STATE_PATH_MAX], path[STATE_PATH_MAX];
	uid_t uid = (uid_t)in->uid_base;
	enum sl_err e;
	if ((e = inst_path(s, in, dir, sizeof(dir), "ssh")) != SL_OK ||
	    (e = inst_path(s, in, key, sizeof(key), "ssh/" KEY)) != SL_OK ||
	    (e = state_mkdirs(dir, 0700, d)) != SL_OK)
		return e;
	if (access(key, F_OK) != 0) {
		char *argv[] = {"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
				(char *)in->spec.id, "-f", key, NULL};
		int rc = inst_run(argv, NULL, 0, 2);
		if (rc != 0) {
			sl_diag_hint(d, "install openssh-client on the node (scripts/deps.sh)");
			return sl_diag_set(d, SL_EIO, "ssh-keygen failed (exit %d)", rc);
		}
	}
	struct sl_buf ak;
	sl_buf_init(&ak, (size_t)INST_KEYS_MAX * (INST_KEY_MAX + 1));
	for (size_t i = 0; i < in->spec.nkeys; i++)
		sl_buf_addf(&ak, "%s\n", in->spec.keys[i]);
	int port = in->spec.host_network ? in->ssh_port : 22;
	char *cfg = sshd_config(in, port);
	if (sl_buf_err(&ak) != SL_OK || !cfg) {
		sl_buf_release(&ak);
		free(cfg);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	if ((e = inst_path(s, in, path, sizeof(path), "ssh/authorized_keys")) == SL_OK)
		e = write_file(path, sl_buf_str(&ak), uid, d);
	if (e == SL_OK && (e = inst_path(s, in, path, sizeof(path), "ssh/sshd_config")) == SL_OK)
		e = write_file(path, cfg, uid, d);
	sl_buf_release(&ak);
	free(cfg);
	if (e != SL_OK)
		return e;
	const char *files[] = {KEY, KEY ".pub"};
	for (size_t i = 0; i < 2; i++) {
		if ((e = inst_path(s, in, path, sizeof(path), i ? "ssh/" KEY ".pub" : "ssh/" KEY)) !=
		    SL_OK)
			return e;
		if (chown(path, uid, uid) != 0 || chmod(path, 0600) != 0)
			return sl_diag_set(d, SL_EIO, "cannot give %s to the container: %s", files[i],
					   strerror(errno));
	}
	if (chown(dir, uid, uid) != 0 || chmod(dir, 0700) != 0)
		return sl_diag_set(d, SL_EIO, "cannot give %s to the container: %s", dir,
				   strerror(errno));
	return SL_OK;
}

bool inst_ssh_fingerprint(const char *line, char *out, size_t n)
{
	const char *sp = line ? strchr(line, ' ') : NULL;
	if (!sp)
		return false;
	const char *b64 = sp + 1, *end = b64 + strcspn(b64, " \t\r\n");
	size_t blen = (size_t)(end - b64), bin_len = 0;
	if (blen == 0 || blen > 4096)
		return false;
	unsigned char *bin = malloc(blen);
	if (!bin)
		return false;
	unsigned char h[crypto_hash_sha256_BYTES];
	bool ok = sodium_base642bin(bin, blen, b64, blen, NULL, &bin_len, NULL,
				    sodium_base64_VARIANT_ORIGINAL) == 0 && bin_len > 0;
	if (ok)
		crypto_hash_sha256(h, bin, bin_len);
	free(bin);
	char enc[sodium_base64_ENCODED_LEN(crypto_hash_sha256_BYTES,
					   sodium_base64_VARIANT_ORIGINAL_NO_PADDING)];
	if (!ok || !sodium_bin2base64(enc, sizeof(enc), h, sizeof(h),
				      sodium_base64_VARIANT_ORIGINAL_NO_PADDING))
		return false;
	return snprintf(out, n, "SHA256:%s", enc) < (int)n;
}

void inst_ssh_load_fingerprint(const struct inst_sup *s, struct inst *in)
{
	char path[STATE_PATH_MAX], line[1024];
	if (inst_path(s, in, path, sizeof(path), "ssh/" KEY ".pub") != SL_OK)
		return;
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(line, sizeof(line), f) && !inst_ssh_fingerprint(line, in->fingerprint,
								   sizeof(in->fingerprint)))
		in->fingerprint[0] = '\0';
	fclose(f);
}

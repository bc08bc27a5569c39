/* ssh_pubkey.h - an OpenSSH public key line ("ssh-ed25519 AAAA... comment")
 * checked, and its SHA256 fingerprint as `ssh-keygen -l` prints it.
 *
 * Accepted types: ssh-ed25519, ecdsa-sha2-nistp256/384/521, ssh-rsa; the body
 * must be base64 whose first field (a length-prefixed string) names the same
 * type. Pure (libsodium's base64 and SHA-256). */
#ifndef SL_SSH_PUBKEY_H
#define SL_SSH_PUBKEY_H

#include <stddef.h>

#include "err.h"

#define SSH_KEY_LINE_MAX 16384   /* bytes of one key line (RSA 16384-bit fits) */
#define SSH_KEY_TYPE_MAX 32
#define SSH_KEY_COMMENT_MAX 256
#define SSH_FINGERPRINT_SIZE 52  /* "SHA256:" + 43 base64 characters + NUL */

struct ssh_pubkey {
	char type[SSH_KEY_TYPE_MAX];
	char comment[SSH_KEY_COMMENT_MAX]; /* "" when none */
	char fingerprint[SSH_FINGERPRINT_SIZE];
	size_t blob_len;                   /* bytes of the decoded body */
};

/* Parses one key line (trailing newline allowed; no other lines). SL_EINVAL
 * with a message that says what is wrong (unknown type, not base64, a body of
 * another type, a private key) and how to fix it; SL_ELIMIT past
 * SSH_KEY_LINE_MAX. *k is filled only on success. The canonical line
 * "TYPE BODY[ COMMENT]" goes to out (out_n bytes) when out is not NULL. */
enum sl_err ssh_pubkey_parse(const char *line, struct ssh_pubkey *k, char *out, size_t out_n,
			     struct sl_diag *d) SL_MUST_USE;

#endif

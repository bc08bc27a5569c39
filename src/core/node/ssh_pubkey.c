/* ssh_pubkey.c - OpenSSH public key lines (ssh_pubkey.h). */
#include "ssh_pubkey.h"

#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static const char *const types[] = {"ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
				    "ecdsa-sha2-nistp521", "ssh-rsa"};

static bool type_known(const char *t, size_t n)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strlen(types[i]) == n && !memcmp(types[i], t, n))
			return true;
	return false;
}

static enum sl_err bad(struct sl_diag *d, const char *what)
{
	sl_diag_hint(d, "give the .pub file ssh-keygen wrote (one line: \"ssh-ed25519 AAAA... "
			"you@host\"); types: ssh-ed25519, ecdsa-sha2-nistp256/384/521, ssh-rsa");
	return sl_diag_set(d, SL_EINVAL, "not an SSH public key: %s", what);
}

enum sl_err ssh_pubkey_parse(const char *line, struct ssh_pubkey *k, char *out, size_t out_n,
			     struct sl_diag *d)
{
	if (!line)
		return bad(d, "empty");
	size_t len = strnlen(line, SSH_KEY_LINE_MAX + 1);
	if (len > SSH_KEY_LINE_MAX)
		return sl_diag_set(d, SL_ELIMIT, "SSH key line longer than %d bytes", SSH_KEY_LINE_MAX);
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	size_t i = 0;
	while (i < len && line[i] == ' ')
		i++;
	if (i == len)
		return bad(d, "empty");
	if (len - i >= 10 && !memcmp(line + i, "-----BEGIN", 10))
		return bad(d, "this is a private key; give the .pub file beside it");
	if (memchr(line + i, '\n', len - i))
		return bad(d, "more than one line (give one key)");
	size_t t0 = i;
	while (i < len && line[i] != ' ' && line[i] != '\t')
		i++;
	size_t tl = i - t0;
	if (!type_known(line + t0, tl)) {
		char what[80];
		snprintf(what, sizeof(what), "unknown key type '%.*s'", (int)(tl > 40 ? 40 : tl), line + t0);
		return bad(d, what);
	}
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	size_t b0 = i;
	while (i < len && line[i] != ' ' && line[i] != '\t')
		i++;
	size_t bl = i - b0;
	if (bl == 0)
		return bad(d, "no base64 body after the type");
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	const char *comment = line + i;
	size_t cl = len - i;
	for (size_t j = 0; j < cl; j++)
		if ((unsigned char)comment[j] < ' ' || comment[j] == 0x7f)
			return bad(d, "a control character in the comment");
	unsigned char *blob = malloc(bl);
	size_t blen = 0;
	if (!blob)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	if (sodium_base642bin(blob, bl, line + b0, bl, NULL, &blen, NULL,
			      sodium_base64_VARIANT_ORIGINAL) != 0 || blen < 4) {
		free(blob);
		return bad(d, "the body is not base64");
	}
	uint32_t n = (uint32_t)blob[0] << 24 | (uint32_t)blob[1] << 16 | (uint32_t)blob[2] << 8 | blob[3];
	if (n != tl || blen < 4 + (size_t)n || memcmp(blob + 4, line + t0, tl)) {
		free(blob);
		return bad(d, "the body is a key of another type than its first word says");
	}
	unsigned char h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(h, blob, blen);
	free(blob);
	char b64[sodium_base64_ENCODED_LEN(crypto_hash_sha256_BYTES, sodium_base64_VARIANT_ORIGINAL_NO_PADDING)];
	sodium_bin2base64(b64, sizeof(b64), h, sizeof(h), sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
	if (out) {
		int w = snprintf(out, out_n, "%.*s %.*s%s%.*s", (int)tl, line + t0, (int)bl, line + b0,
				 cl ? " " : "", (int)cl, comment);
		if (w < 0 || (size_t)w >= out_n)
			return sl_diag_set(d, SL_ELIMIT, "SSH key line does not fit");
	}
	memset(k, 0, sizeof(*k));
	snprintf(k->type, sizeof(k->type), "%.*s", (int)tl, line + t0);
	snprintf(k->comment, sizeof(k->comment), "%.*s", (int)(cl >= SSH_KEY_COMMENT_MAX ? SSH_KEY_COMMENT_MAX - 1 : cl), comment);
	snprintf(k->fingerprint, sizeof(k->fingerprint), "SHA256:%s", b64);
	k->blob_len = blen;
	return SL_OK;
}

/* audit.c - canonical bytes of an audit entry.
 *
 * Length-prefixed binary rather than canonical JSON: it has exactly one
 * encoding per entry without rules about key order, number formats or string
 * escapes, which are where independent JSON canonicalisers disagree. The
 * decoder is strict (bounds, UTF-8, no trailing bytes) so that two different
 * byte strings can never stand for the same entry. */
#include "audit.h"

#include <stdbool.h>
#include <string.h>

#include "merkle.h"

/* The string fields in encoding order, with their bounds. */
struct audit_field {
	const char *name;
	size_t offset;
	size_t max;
};

static const struct audit_field audit_fields[] = {
	{"actor", offsetof(struct audit_entry, actor), AUDIT_ACTOR_MAX},
	{"role", offsetof(struct audit_entry, role), AUDIT_ROLE_MAX},
	{"tenant", offsetof(struct audit_entry, tenant), AUDIT_TENANT_MAX},
	{"action", offsetof(struct audit_entry, action), AUDIT_ACTION_MAX},
	{"target", offsetof(struct audit_entry, target), AUDIT_TARGET_MAX},
	{"outcome", offsetof(struct audit_entry, outcome), AUDIT_OUTCOME_MAX},
};
#define AUDIT_NFIELDS (sizeof(audit_fields) / sizeof(audit_fields[0]))

void audit_entry_init(struct audit_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->version = AUDIT_FORMAT_VERSION;
}

/* Well-formed UTF-8 per RFC 3629 (shortest form, no surrogates, at most
 * U+10FFFF) and no NUL. Returns the offset of the first bad byte, or len. */
static size_t audit_utf8_check(const uint8_t *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		uint8_t c = s[i];
		size_t n;
		uint8_t lo = 0x80, hi = 0xbf;
		if (c == 0)
			return i;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			if (c == 0xe0)
				lo = 0xa0;
			else if (c == 0xed)
				hi = 0x9f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			if (c == 0xf0)
				lo = 0x90;
			else if (c == 0xf4)
				hi = 0x8f;
		} else {
			return i;
		}
		if (len - i - 1 < n)
			return i;
		if (s[i + 1] < lo || s[i + 1] > hi)
			return i;
		for (size_t k = 2; k <= n; k++)
			if (s[i + k] < 0x80 || s[i + k] > 0xbf)
				return i;
		i += n + 1;
	}
	return len;
}

static const struct audit_field *audit_field_find(const char *name)
{
	for (size_t i = 0; i < AUDIT_NFIELDS; i++)
		if (strcmp(audit_fields[i].name, name) == 0)
			return &audit_fields[i];
	return NULL;
}

enum sl_err audit_entry_set(struct audit_entry *e, const char *field,
			    const char *value, struct sl_diag *d)
{
	const struct audit_field *f = audit_field_find(field);
	if (!f)
		return sl_diag_set(d, SL_EINVAL, "audit entry has no field '%s'",
				   field);
	size_t n = strlen(value);
	if (n > f->max)
		return sl_diag_set(d, SL_ELIMIT,
				   "audit %s is %zu bytes; at most %zu allowed",
				   f->name, n, f->max);
	if (audit_utf8_check((const uint8_t *)value, n) != n)
		return sl_diag_set(d, SL_EINVAL, "audit %s is not valid UTF-8",
				   f->name);
	memcpy((char *)e + f->offset, value, n + 1);
	return SL_OK;
}

static void audit_put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)(v & 0xff);
		v >>= 8;
	}
}

static uint64_t audit_get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

enum sl_err audit_entry_encode(const struct audit_entry *e, uint8_t *buf,
			       size_t cap, size_t *len, struct sl_diag *d)
{
	size_t lens[AUDIT_NFIELDS];
	if (e->version != AUDIT_FORMAT_VERSION && e->version != AUDIT_FORMAT_V1)
		return sl_diag_set(d, SL_EINVAL, "audit entry format %u is unknown", e->version);
	bool v2 = e->version == AUDIT_FORMAT_VERSION;
	size_t total = AUDIT_ENCODED_FIXED + (v2 ? AUDIT_LINK_SIZE : 0);
	for (size_t i = 0; i < AUDIT_NFIELDS; i++) {
		const struct audit_field *f = &audit_fields[i];
		const char *s = (const char *)e + f->offset;
		const char *nul = memchr(s, 0, f->max + 1);
		if (!nul)
			return sl_diag_set(d, SL_EINVAL,
					   "audit %s is not NUL-terminated within %zu bytes",
					   f->name, f->max);
		lens[i] = (size_t)(nul - s);
		if (audit_utf8_check((const uint8_t *)s, lens[i]) != lens[i])
			return sl_diag_set(d, SL_EINVAL,
					   "audit %s is not valid UTF-8", f->name);
		total += lens[i];
	}
	if (cap < total)
		return sl_diag_set(d, SL_ELIMIT,
				   "audit entry needs %zu bytes, buffer has %zu",
				   total, cap);
	uint8_t *p = buf;
	*p++ = e->version;
	audit_put_u64(p, e->seq);
	p += 8;
	audit_put_u64(p, (uint64_t)e->time_ns);
	p += 8;
	for (size_t i = 0; i < AUDIT_NFIELDS; i++) {
		*p++ = (uint8_t)(lens[i] >> 8);
		*p++ = (uint8_t)(lens[i] & 0xff);
		memcpy(p, (const char *)e + audit_fields[i].offset, lens[i]);
		p += lens[i];
	}
	memcpy(p, e->request_digest, AUDIT_DIGEST_SIZE);
	p += AUDIT_DIGEST_SIZE;
	if (v2) {
		audit_put_u64(p, e->prev_seq);
		memcpy(p + 8, e->prev_hash, AUDIT_HASH_SIZE);
	}
	*len = total;
	return SL_OK;
}

enum sl_err audit_entry_decode(const uint8_t *buf, size_t len,
			       struct audit_entry *out, struct sl_diag *d)
{
	audit_entry_init(out);
	if (len < AUDIT_ENCODED_FIXED)
		return sl_diag_set(d, SL_EPARSE,
				   "audit entry is %zu bytes; at least %d expected",
				   len, AUDIT_ENCODED_FIXED);
	if (buf[0] != AUDIT_FORMAT_VERSION && buf[0] != AUDIT_FORMAT_V1)
		return sl_diag_set(d, SL_EPARSE,
				   "audit entry format version %u at offset 0; %d or %d expected",
				   buf[0], AUDIT_FORMAT_V1, AUDIT_FORMAT_VERSION);
	out->version = buf[0];
	/* Bytes after the six strings: the digest, and in version 2 the link. */
	size_t tail = AUDIT_DIGEST_SIZE + (buf[0] == AUDIT_FORMAT_VERSION ? AUDIT_LINK_SIZE : 0);
	out->seq = audit_get_u64(buf + 1);
	out->time_ns = (int64_t)audit_get_u64(buf + 9);
	size_t off = 17;
	for (size_t i = 0; i < AUDIT_NFIELDS; i++) {
		const struct audit_field *f = &audit_fields[i];
		if (len - off < 2 + tail)
			return sl_diag_set(d, SL_EPARSE,
					   "audit entry ends inside the %s length at offset %zu",
					   f->name, off);
		size_t n = (size_t)buf[off] << 8 | buf[off + 1];
		if (n > f->max)
			return sl_diag_set(d, SL_EPARSE,
					   "audit %s length %zu at offset %zu exceeds %zu",
					   f->name, n, off, f->max);
		off += 2;
		if (len - off < n + tail)
			return sl_diag_set(d, SL_EPARSE,
					   "audit entry ends inside the %s at offset %zu",
					   f->name, off);
		size_t bad = audit_utf8_check(buf + off, n);
		if (bad != n)
			return sl_diag_set(d, SL_EPARSE,
					   "audit %s has a NUL or invalid UTF-8 at offset %zu",
					   f->name, off + bad);
		memcpy((char *)out + f->offset, buf + off, n);
		off += n;
	}
	if (len - off != tail)
		return sl_diag_set(d, SL_EPARSE,
				   "audit entry has %zu bytes after the digest%s at offset %zu; none allowed",
				   len - off - tail, tail > AUDIT_DIGEST_SIZE ? " and the tenant link" : "",
				   off + tail);
	memcpy(out->request_digest, buf + off, AUDIT_DIGEST_SIZE);
	off += AUDIT_DIGEST_SIZE;
	if (tail > AUDIT_DIGEST_SIZE) {
		out->prev_seq = audit_get_u64(buf + off);
		memcpy(out->prev_hash, buf + off + 8, AUDIT_HASH_SIZE);
		static const uint8_t zero[AUDIT_HASH_SIZE] = {0};
		if (out->prev_seq == 0 && memcmp(out->prev_hash, zero, AUDIT_HASH_SIZE))
			return sl_diag_set(d, SL_EPARSE,
					   "audit entry links to no entry but has a link hash at offset %zu",
					   off + 8);
	}
	return SL_OK;
}

void audit_leaf_hash(const uint8_t *bytes, size_t len,
		     uint8_t out[AUDIT_HASH_SIZE])
{
	merkle_leaf_hash(bytes, len, out);
}

enum sl_err audit_entry_leaf_hash(const struct audit_entry *e,
				  uint8_t out[AUDIT_HASH_SIZE], struct sl_diag *d)
{
	uint8_t buf[AUDIT_ENCODED_MAX];
	size_t len;
	enum sl_err err = audit_entry_encode(e, buf, sizeof(buf), &len, d);
	if (err != SL_OK)
		return err;
	audit_leaf_hash(buf, len, out);
	return SL_OK;
}

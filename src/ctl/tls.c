/* tls.c - CA and server certificates with GnuTLS, and the certificate the
 * HTTPS handshake hands out.
 *
 * Why a retrieve callback rather than MHD's HTTPS_MEM_CERT: MHD copies a
 * memory certificate into its credentials at start and never again, so a new
 * certificate would need a restart. With MHD_OPTION_HTTPS_CERT_CALLBACK each
 * handshake asks us, and a reload just swaps what we answer. The callback
 * gets no user pointer, hence the one file-level state below (ctl is not
 * core: it may keep process state; it is only touched on the loop thread).
 * Earlier generations stay alive for a while after a swap: a handshake in
 * flight may still hold pointers into the one it was given. */
#include "tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <sodium.h>

#include "file.h"
#include "log.h"

#define GENERATIONS 8 /* certificates kept after a swap */
#define MAX_CHAIN 8

struct tls_gen {
	gnutls_pcert_st pcert[MAX_CHAIN];
	unsigned n;
	gnutls_privkey_t key;
	char sha256[65];
	int64_t not_after_ns;
};

static struct {
	char dir[4096];
	struct tls_gen *gen[GENERATIONS]; /* gen[0] is served */
	struct stat cert_st, key_st;
} tls;

static void tls_path(const char *data_dir, const char *name, char *out, size_t n)
{
	snprintf(out, n, "%s/" CTL_TLS_DIR "/%s", data_dir, name);
}

static enum sl_err gt(int rc, const char *what, struct sl_diag *d)
{
	if (rc >= 0)
		return SL_OK;
	return sl_diag_set(d, SL_EIO, "%s: %s", what, gnutls_strerror(rc));
}

/* Writes text to path atomically (temp file, fsync, rename). */
static enum sl_err write_atomic(const char *path, const void *p, size_t n, mode_t mode,
				struct sl_diag *d)
{
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return sl_diag_set(d, SL_EIO, "cannot create %s: %s", tmp, strerror(errno));
	bool ok = write(fd, p, n) == (ssize_t)n && fchmod(fd, mode) == 0 && fsync(fd) == 0;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path)) {
		int err = errno;
		unlink(tmp);
		return sl_diag_set(d, SL_EIO, "cannot write %s: %s", path, strerror(err));
	}
	return SL_OK;
}

static enum sl_err export_crt(gnutls_x509_crt_t c, const char *path, struct sl_diag *d)
{
	gnutls_datum_t out = {NULL, 0};
	enum sl_err e = gt(gnutls_x509_crt_export2(c, GNUTLS_X509_FMT_PEM, &out), "exporting a certificate", d);
	if (!e)
		e = write_atomic(path, out.data, out.size, 0644, d);
	gnutls_free(out.data);
	return e;
}

static enum sl_err export_key(gnutls_x509_privkey_t k, const char *path, struct sl_diag *d)
{
	gnutls_datum_t out = {NULL, 0};
	enum sl_err e = gt(gnutls_x509_privkey_export2(k, GNUTLS_X509_FMT_PEM, &out), "exporting a key", d);
	if (!e)
		e = write_atomic(path, out.data, out.size, 0600, d);
	if (out.data) {
		sodium_memzero(out.data, out.size);
		gnutls_free(out.data);
	}
	return e;
}

/* Fields every certificate gets: version, serial, validity, CN, key, key id. */
static enum sl_err crt_base(gnutls_x509_crt_t c, gnutls_x509_privkey_t k, const char *cn,
			    int64_t now_ns, int days, struct sl_diag *d)
{
	uint8_t serial[16], id[64];
	size_t idlen = sizeof(id);
	randombytes_buf(serial, sizeof(serial));
	serial[0] &= 0x7f;
	time_t now = (time_t)(now_ns / 1000000000);
	enum sl_err e = gt(gnutls_x509_crt_set_version(c, 3), "certificate version", d);
	if (!e)
		e = gt(gnutls_x509_crt_set_serial(c, serial, sizeof(serial)), "certificate serial", d);
	if (!e)
		e = gt(gnutls_x509_crt_set_activation_time(c, now - 3600), "certificate start", d);
	if (!e)
		e = gt(gnutls_x509_crt_set_expiration_time(c, now + (time_t)days * 86400), "certificate end", d);
	if (!e)
		e = gt(gnutls_x509_crt_set_dn_by_oid(c, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
						     (unsigned)strlen(cn)), "certificate name", d);
	if (!e)
		e = gt(gnutls_x509_crt_set_key(c, k), "certificate key", d);
	if (!e)
		e = gt(gnutls_x509_crt_get_key_id(c, 0, id, &idlen), "certificate key id", d);
	if (!e)
		e = gt(gnutls_x509_crt_set_subject_key_id(c, id, idlen), "certificate key id", d);
	return e;
}

static enum sl_err new_key(gnutls_x509_privkey_t *k, struct sl_diag *d)
{
	enum sl_err e = gt(gnutls_x509_privkey_init(k), "key", d);
	if (!e)
		e = gt(gnutls_x509_privkey_generate(*k, GNUTLS_PK_ECDSA,
						    GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
		       "generating a key", d);
	return e;
}

static enum sl_err add_san(gnutls_x509_crt_t c, const char *name, struct sl_diag *d)
{
	unsigned char ip[16];
	if (inet_pton(AF_INET, name, ip) == 1)
		return gt(gnutls_x509_crt_set_subject_alt_name(c, GNUTLS_SAN_IPADDRESS, ip, 4,
							       GNUTLS_FSAN_APPEND), name, d);
	if (inet_pton(AF_INET6, name, ip) == 1)
		return gt(gnutls_x509_crt_set_subject_alt_name(c, GNUTLS_SAN_IPADDRESS, ip, 16,
							       GNUTLS_FSAN_APPEND), name, d);
	return gt(gnutls_x509_crt_set_subject_alt_name(c, GNUTLS_SAN_DNSNAME, name,
						       (unsigned)strlen(name), GNUTLS_FSAN_APPEND),
		  name, d);
}

/* A server certificate for o->sans (and the defaults) signed by ca/cakey. */
static enum sl_err make_server(const char *data_dir, const struct ctl_tls_init *o,
			       gnutls_x509_crt_t ca, gnutls_x509_privkey_t cakey, struct sl_diag *d)
{
	gnutls_x509_privkey_t k = NULL;
	gnutls_x509_crt_t c = NULL;
	char host[256] = "", path[4200];
	if (gethostname(host, sizeof(host) - 1))
		host[0] = 0;
	enum sl_err e = new_key(&k, d);
	if (!e)
		e = gt(gnutls_x509_crt_init(&c), "certificate", d);
	if (!e)
		e = crt_base(c, k, host[0] ? host : "suanlid", o->now_ns, CTL_TLS_CERT_DAYS, d);
	if (!e)
		e = gt(gnutls_x509_crt_set_basic_constraints(c, 0, -1), "constraints", d);
	if (!e)
		e = gt(gnutls_x509_crt_set_key_usage(c, GNUTLS_KEY_DIGITAL_SIGNATURE), "key usage", d);
	if (!e)
		e = gt(gnutls_x509_crt_set_key_purpose_oid(c, GNUTLS_KP_TLS_WWW_SERVER, 0), "purpose", d);
	const char *defaults[] = {"localhost", "127.0.0.1", "::1", host};
	for (size_t i = 0; !e && i < 4; i++)
		if (defaults[i][0])
			e = add_san(c, defaults[i], d);
	for (size_t i = 0; !e && i < o->nsans; i++)
		e = add_san(c, o->sans[i], d);
	if (!e) {
		uint8_t id[64];
		size_t idlen = sizeof(id);
		if (gnutls_x509_crt_get_subject_key_id(ca, id, &idlen, NULL) >= 0)
			e = gt(gnutls_x509_crt_set_authority_key_id(c, id, idlen), "authority key id", d);
	}
	if (!e)
		e = gt(gnutls_x509_crt_sign2(c, ca, cakey, GNUTLS_DIG_SHA256, 0), "signing", d);
	if (!e) {
		tls_path(data_dir, CTL_TLS_KEY, path, sizeof(path));
		e = export_key(k, path, d);
	}
	if (!e) {
		tls_path(data_dir, CTL_TLS_CERT, path, sizeof(path));
		e = export_crt(c, path, d);
	}
	if (c)
		gnutls_x509_crt_deinit(c);
	if (k)
		gnutls_x509_privkey_deinit(k);
	return e;
}

static enum sl_err read_datum(const char *path, gnutls_datum_t *out, struct sl_diag *d)
{
	char *text = NULL;
	size_t len = 0;
	enum sl_err e = sl_read_file(path, CTL_TLS_FILE_MAX, &text, &len, d);
	out->data = (unsigned char *)text;
	out->size = (unsigned)len;
	return e;
}

static void free_datum(gnutls_datum_t *x)
{
	if (x->data)
		sodium_memzero(x->data, x->size);
	free(x->data);
	x->data = NULL;
}

static enum sl_err copy_file(const char *from, const char *to, mode_t mode, struct sl_diag *d)
{
	gnutls_datum_t x = {NULL, 0};
	enum sl_err e = read_datum(from, &x, d);
	if (!e)
		e = write_atomic(to, x.data, x.size, mode, d);
	free_datum(&x);
	return e;
}

/* The operator's certificate and key must parse and belong together. */
static enum sl_err check_pair(const char *cert, const char *key, struct sl_diag *d)
{
	gnutls_certificate_credentials_t cr;
	enum sl_err e = gt(gnutls_certificate_allocate_credentials(&cr), "credentials", d);
	if (e)
		return e;
	int rc = gnutls_certificate_set_x509_key_file(cr, cert, key, GNUTLS_X509_FMT_PEM);
	gnutls_certificate_free_credentials(cr);
	if (rc < 0)
		return sl_diag_set(d, SL_EINVAL, "%s with %s: %s", cert, key, gnutls_strerror(rc));
	return SL_OK;
}

enum sl_err ctl_tls_init_files(const char *data_dir, const struct ctl_tls_init *o,
			       struct sl_diag *d)
{
	char dir[4200], path[4200];
	snprintf(dir, sizeof(dir), "%s/" CTL_TLS_DIR, data_dir);
	tls_path(data_dir, CTL_TLS_CERT, path, sizeof(path));
	if (access(path, F_OK) == 0)
		return sl_diag_set(d, SL_EEXIST, "%s already exists", path);
	if (mkdir(dir, 0700) && errno != EEXIST)
		return sl_diag_set(d, SL_EIO, "cannot create %s: %s", dir, strerror(errno));
	if (o->cert || o->key) {
		if (!o->cert || !o->key)
			return sl_diag_set(d, SL_EINVAL, "--tls-cert and --tls-key go together");
		enum sl_err e = check_pair(o->cert, o->key, d);
		if (!e) {
			tls_path(data_dir, CTL_TLS_KEY, path, sizeof(path));
			e = copy_file(o->key, path, 0600, d);
		}
		if (!e) {
			tls_path(data_dir, CTL_TLS_CERT, path, sizeof(path));
			e = copy_file(o->cert, path, 0644, d);
		}
		if (!e) {
			tls_path(data_dir, CTL_TLS_CA, path, sizeof(path));
			e = copy_file(o->ca ? o->ca : o->cert, path, 0644, d);
		}
		return e;
	}
	gnutls_x509_privkey_t k = NULL;
	gnutls_x509_crt_t ca = NULL;
	enum sl_err e = new_key(&k, d);
	if (!e)
		e = gt(gnutls_x509_crt_init(&ca), "certificate", d);
	if (!e)
		e = crt_base(ca, k, "suanli CA", o->now_ns, CTL_TLS_CA_DAYS, d);
	if (!e)
		e = gt(gnutls_x509_crt_set_basic_constraints(ca, 1, 0), "constraints", d);
	if (!e)
		e = gt(gnutls_x509_crt_set_key_usage(ca, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN),
		       "key usage", d);
	if (!e)
		e = gt(gnutls_x509_crt_sign2(ca, ca, k, GNUTLS_DIG_SHA256, 0), "signing the CA", d);
	if (!e) {
		tls_path(data_dir, CTL_TLS_CA_KEY, path, sizeof(path));
		e = export_key(k, path, d);
	}
	if (!e) {
		tls_path(data_dir, CTL_TLS_CA, path, sizeof(path));
		e = export_crt(ca, path, d);
	}
	if (!e)
		e = make_server(data_dir, o, ca, k, d);
	if (ca)
		gnutls_x509_crt_deinit(ca);
	if (k)
		gnutls_x509_privkey_deinit(k);
	return e;
}

enum sl_err ctl_tls_renew(const char *data_dir, const struct ctl_tls_init *o, struct sl_diag *d)
{
	char path[4200];
	gnutls_datum_t kd = {NULL, 0}, cd = {NULL, 0};
	gnutls_x509_privkey_t k = NULL;
	gnutls_x509_crt_t ca = NULL;
	tls_path(data_dir, CTL_TLS_CA_KEY, path, sizeof(path));
	if (access(path, F_OK))
		return sl_diag_set(d, SL_ENOTFOUND, "%s is missing: the certificate came from your own CA; "
				   "renew it there and install it with 'suanlid tls install'", path);
	enum sl_err e = read_datum(path, &kd, d);
	if (!e) {
		tls_path(data_dir, CTL_TLS_CA, path, sizeof(path));
		e = read_datum(path, &cd, d);
	}
	if (!e)
		e = gt(gnutls_x509_privkey_init(&k), "key", d);
	if (!e)
		e = gt(gnutls_x509_privkey_import(k, &kd, GNUTLS_X509_FMT_PEM), "reading the CA key", d);
	if (!e)
		e = gt(gnutls_x509_crt_init(&ca), "certificate", d);
	if (!e)
		e = gt(gnutls_x509_crt_import(ca, &cd, GNUTLS_X509_FMT_PEM), "reading the CA", d);
	if (!e)
		e = make_server(data_dir, o, ca, k, d);
	if (ca)
		gnutls_x509_crt_deinit(ca);
	if (k)
		gnutls_x509_privkey_deinit(k);
	free_datum(&kd);
	free_datum(&cd);
	return e;
}

bool ctl_tls_present(const char *data_dir)
{
	char a[4200], b[4200];
	tls_path(data_dir, CTL_TLS_CERT, a, sizeof(a));
	tls_path(data_dir, CTL_TLS_KEY, b, sizeof(b));
	return access(a, R_OK) == 0 && access(b, R_OK) == 0;
}

static enum sl_err fingerprint(const gnutls_datum_t *der, char out[65], struct sl_diag *d)
{
	uint8_t h[32];
	enum sl_err e = gt(gnutls_hash_fast(GNUTLS_DIG_SHA256, der->data, der->size, h), "hashing", d);
	if (!e)
		sodium_bin2hex(out, 65, h, sizeof(h));
	return e;
}

enum sl_err ctl_tls_ca_pem(const char *data_dir, char **out, struct sl_diag *d)
{
	char path[4200];
	gnutls_datum_t x = {NULL, 0};
	tls_path(data_dir, CTL_TLS_CA, path, sizeof(path));
	enum sl_err e = read_datum(path, &x, d);
	*out = e ? NULL : (char *)x.data;
	return e;
}

enum sl_err ctl_tls_ca_sha256(const char *data_dir, char out[65], struct sl_diag *d)
{
	char path[4200];
	gnutls_datum_t x = {NULL, 0}, der = {NULL, 0};
	gnutls_x509_crt_t c = NULL;
	tls_path(data_dir, CTL_TLS_CA, path, sizeof(path));
	enum sl_err e = read_datum(path, &x, d);
	if (!e)
		e = gt(gnutls_x509_crt_init(&c), "certificate", d);
	if (!e)
		e = gt(gnutls_x509_crt_import(c, &x, GNUTLS_X509_FMT_PEM), path, d);
	if (!e)
		e = gt(gnutls_x509_crt_export2(c, GNUTLS_X509_FMT_DER, &der), path, d);
	if (!e)
		e = fingerprint(&der, out, d);
	gnutls_free(der.data);
	if (c)
		gnutls_x509_crt_deinit(c);
	free_datum(&x);
	return e;
}

/* ---- serving ---- */

static void gen_free(struct tls_gen *g)
{
	if (!g)
		return;
	for (unsigned i = 0; i < g->n; i++)
		gnutls_pcert_deinit(&g->pcert[i]);
	if (g->key)
		gnutls_privkey_deinit(g->key);
	free(g);
}

static enum sl_err gen_load(const char *dir, struct tls_gen **out, struct stat *cst,
			    struct stat *kst, struct sl_diag *d)
{
	char cp[4200], kp[4200];
	gnutls_datum_t cd = {NULL, 0}, kd = {NULL, 0};
	struct tls_gen *g = calloc(1, sizeof(*g));
	if (!g)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	tls_path(dir, CTL_TLS_CERT, cp, sizeof(cp));
	tls_path(dir, CTL_TLS_KEY, kp, sizeof(kp));
	enum sl_err e = check_pair(cp, kp, d);
	if (!e && (stat(cp, cst) || stat(kp, kst)))
		e = sl_diag_set(d, SL_EIO, "cannot stat %s: %s", cp, strerror(errno));
	if (!e)
		e = read_datum(cp, &cd, d);
	if (!e)
		e = read_datum(kp, &kd, d);
	g->n = MAX_CHAIN;
	if (!e)
		e = gt(gnutls_pcert_list_import_x509_raw(g->pcert, &g->n, &cd, GNUTLS_X509_FMT_PEM, 0),
		       cp, d);
	else
		g->n = 0;
	if (!e)
		e = gt(gnutls_privkey_init(&g->key), "key", d);
	if (!e)
		e = gt(gnutls_privkey_import_x509_raw(g->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0), kp, d);
	if (!e && g->n) {
		gnutls_x509_crt_t c;
		if (gnutls_x509_crt_init(&c) >= 0) {
			if (gnutls_x509_crt_import(c, &g->pcert[0].cert, GNUTLS_X509_FMT_DER) >= 0)
				g->not_after_ns = (int64_t)gnutls_x509_crt_get_expiration_time(c) * 1000000000;
			gnutls_x509_crt_deinit(c);
		}
		e = fingerprint(&g->pcert[0].cert, g->sha256, d);
	}
	free_datum(&cd);
	free_datum(&kd);
	if (e) {
		if (e == SL_EIO || e == SL_EINVAL)
			sl_diag_hint(d, "suanlid init --data DIR creates them; docs/security.md");
		gen_free(g);
		return e;
	}
	*out = g;
	return SL_OK;
}

static void gen_push(struct tls_gen *g)
{
	gen_free(tls.gen[GENERATIONS - 1]);
	memmove(&tls.gen[1], &tls.gen[0], (GENERATIONS - 1) * sizeof(tls.gen[0]));
	tls.gen[0] = g;
}

enum sl_err ctl_tls_load(const char *data_dir, struct sl_diag *d)
{
	struct tls_gen *g;
	snprintf(tls.dir, sizeof(tls.dir), "%s", data_dir);
	enum sl_err e = gen_load(tls.dir, &g, &tls.cert_st, &tls.key_st, d);
	if (e)
		return e;
	gen_push(g);
	return SL_OK;
}

enum sl_err ctl_tls_reload(struct sl_diag *d)
{
	struct tls_gen *g;
	struct stat cs, ks;
	enum sl_err e = gen_load(tls.dir, &g, &cs, &ks, d);
	if (e)
		return e;
	tls.cert_st = cs;
	tls.key_st = ks;
	gen_push(g);
	sl_log_info("TLS certificate loaded", "sha256=%s", g->sha256);
	return SL_OK;
}

static bool same(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

bool ctl_tls_reload_if_changed(void)
{
	char cp[4200], kp[4200];
	struct stat cs, ks;
	if (!tls.gen[0])
		return false;
	tls_path(tls.dir, CTL_TLS_CERT, cp, sizeof(cp));
	tls_path(tls.dir, CTL_TLS_KEY, kp, sizeof(kp));
	if (stat(cp, &cs) || stat(kp, &ks) || (same(&cs, &tls.cert_st) && same(&ks, &tls.key_st)))
		return false;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (ctl_tls_reload(&d)) {
		sl_log_error("new TLS certificate refused; still serving the old one", "error=%s", d.msg);
		tls.cert_st = cs; /* do not retry until it changes again */
		tls.key_st = ks;
		return false;
	}
	return true;
}

void ctl_tls_current(char sha256[65], int64_t *not_after_ns)
{
	snprintf(sha256, 65, "%s", tls.gen[0] ? tls.gen[0]->sha256 : "");
	*not_after_ns = tls.gen[0] ? tls.gen[0]->not_after_ns : 0;
}

void ctl_tls_unload(void)
{
	for (int i = 0; i < GENERATIONS; i++) {
		gen_free(tls.gen[i]);
		tls.gen[i] = NULL;
	}
}

static int retrieve(gnutls_session_t s, const gnutls_datum_t *req_ca, int nreq,
		    const gnutls_pk_algorithm_t *algos, int nalgos, gnutls_pcert_st **pcert,
		    unsigned int *n, gnutls_privkey_t *key)
{
	(void)s, (void)req_ca, (void)nreq, (void)algos, (void)nalgos;
	if (!tls.gen[0])
		return -1;
	*pcert = tls.gen[0]->pcert;
	*n = tls.gen[0]->n;
	*key = tls.gen[0]->key;
	return 0;
}

void *ctl_tls_callback(void)
{
	return (void *)(uintptr_t)retrieve;
}

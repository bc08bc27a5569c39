/* tls.h - the controller's TLS: its CA and server certificate, made by
 * `suanlid init` with GnuTLS (no external tool), loaded by `serve`, and
 * reloaded without downtime (SIGHUP, or a changed file) for rotation.
 * docs/security.md is the operator's side.
 *
 * Files, in DATA/tls/:
 *   ca.pem       the CA certificate agents and the CLI verify against
 *   ca.key       its private key (0600; absent when the operator brought
 *                their own certificate)
 *   server.pem   the server certificate (chain: server, then intermediates)
 *   server.key   its private key (0600)
 *
 * Protocols: TLS 1.2 and 1.3 only (CTL_TLS_PRIORITIES). */
#ifndef SL_CTL_TLS_H
#define SL_CTL_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define CTL_TLS_DIR "tls"
#define CTL_TLS_CA "ca.pem"
#define CTL_TLS_CA_KEY "ca.key"
#define CTL_TLS_CERT "server.pem"
#define CTL_TLS_KEY "server.key"
#define CTL_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
#define CTL_TLS_MAX_SANS 32
#define CTL_TLS_FILE_MAX (1u << 20) /* bound on a certificate or key file */
#define CTL_TLS_CA_DAYS 3650
#define CTL_TLS_CERT_DAYS 397

/* What `suanlid init` is given. Without cert/key it makes a CA and a server
 * certificate for sans (names and IP addresses; "localhost", 127.0.0.1, ::1
 * and the host name are always added). With cert and key (PEM files) it
 * copies them, and ca (the CA that issued cert) when given, else cert. */
struct ctl_tls_init {
	const char *sans[CTL_TLS_MAX_SANS];
	size_t nsans;
	const char *cert, *key, *ca;
	int64_t now_ns;
};

/* Writes DATA/tls/ as above. SL_EEXIST when DATA/tls/server.pem exists. */
enum sl_err ctl_tls_init_files(const char *data_dir, const struct ctl_tls_init *o,
			       struct sl_diag *d) SL_MUST_USE;

/* Makes a fresh server certificate signed by DATA/tls/ca.key (for rotation:
 * `suanlid tls renew`), replacing server.pem and server.key atomically.
 * SL_ENOTFOUND when there is no CA key. */
enum sl_err ctl_tls_renew(const char *data_dir, const struct ctl_tls_init *o,
			  struct sl_diag *d) SL_MUST_USE;

/* True when DATA/tls/server.pem and server.key exist. */
bool ctl_tls_present(const char *data_dir);

/* Whether serve speaks HTTPS on LISTEN with TLS = 1 (--tls), -1 (--no-tls)
 * or 0 (auto: HTTPS off loopback): the scheme of the default --advertise. */
bool ctl_tls_serves_https(int tls, const char *listen);

/* SHA-256 of the DER of DATA/tls/ca.pem's first certificate, hex (65 bytes
 * with the NUL). */
enum sl_err ctl_tls_ca_sha256(const char *data_dir, char out[65], struct sl_diag *d) SL_MUST_USE;
/* The PEM text of DATA/tls/ca.pem, to free(). */
enum sl_err ctl_tls_ca_pem(const char *data_dir, char **out, struct sl_diag *d) SL_MUST_USE;

/* The serving side: loads DATA/tls/server.{pem,key} as the certificate the
 * handshake callback (ctl_tls_callback) hands out. One per process. */
enum sl_err ctl_tls_load(const char *data_dir, struct sl_diag *d) SL_MUST_USE;
/* Loads the files again; the new certificate serves new handshakes, the
 * connections already open keep theirs. On error the old one stays. */
enum sl_err ctl_tls_reload(struct sl_diag *d) SL_MUST_USE;
/* Reloads when server.pem or server.key changed since the last load (mtime,
 * size, inode); true when it did. Errors are logged; the old one stays. */
bool ctl_tls_reload_if_changed(void);
/* The certificate being served: its SHA-256 (hex) and expiry, for logs. */
void ctl_tls_current(char sha256[65], int64_t *not_after_ns);
void ctl_tls_unload(void);

/* The gnutls_certificate_retrieve_function2 for MHD_OPTION_HTTPS_CERT_CALLBACK
 * (as a void pointer: http.h does not include GnuTLS). */
void *ctl_tls_callback(void);

#endif

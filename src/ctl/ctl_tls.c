/* ctl_tls.c - when the controller speaks HTTPS, and reloading its
 * certificate while it runs (docs/security.md).
 *
 * The rule (DESIGN.md §8): TLS on every address but loopback. A loopback
 * listener stays plain unless asked (--tls), so a controller and its tools on
 * one machine need no certificate; anything else refuses plain HTTP, because
 * tokens travel in every request. */
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl_int.h"
#include "http.h"
#include "log.h"
#include "tls.h"

#define WATCH_NS 1000000000LL /* how often the certificate files are looked at */

/* 127.0.0.0/8, ::1, and ::ffff:127.0.0.0/104. */
static bool is_loopback(const char *listen)
{
	struct sockaddr_storage ss;
	size_t len = sizeof(ss);
	int any = 0;
	if (http_parse_listen(listen, &ss, &len, &any, NULL) != SL_OK || any)
		return false;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
		return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
		if (IN6_IS_ADDR_LOOPBACK(&a->sin6_addr))
			return true;
		return IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && a->sin6_addr.s6_addr[12] == 127;
	}
	return false;
}

bool ctl_tls_serves_https(int tls, const char *listen)
{
	return tls > 0 || (tls == 0 && !is_loopback(listen));
}

enum sl_err ctl_tls_decide(const struct ctl_opts *o, const char *listen, struct http_limits *lim,
			   struct sl_diag *d)
{
	bool loop = is_loopback(listen);
	if (o->tls < 0 && !loop) {
		sl_diag_hint(d, "serve HTTPS (the default off loopback; docs/security.md) or listen on "
				"127.0.0.1");
		return sl_diag_set(d, SL_EINVAL, "plain HTTP is refused on %s: only loopback may be plain",
				   listen);
	}
	if (o->tls < 0 || (o->tls == 0 && loop))
		return SL_OK;
	if (!ctl_tls_present(o->data_dir)) {
		sl_diag_hint(d, "'suanlid tls init --data %.200s' makes a CA and a server certificate "
				"(or installs yours); docs/security.md", o->data_dir);
		return sl_diag_set(d, SL_ENOTFOUND, "%s needs HTTPS and %.200s/" CTL_TLS_DIR
				   "/" CTL_TLS_CERT " is missing", listen, o->data_dir);
	}
	enum sl_err e = ctl_tls_load(o->data_dir, d);
	if (e)
		return e;
	lim->tls_cert_callback = ctl_tls_callback();
	lim->tls_priorities = CTL_TLS_PRIORITIES;
	char sha[65];
	int64_t until;
	ctl_tls_current(sha, &until);
	char when[32];
	ctl_time_fmt(until, when);
	sl_log_info("TLS", "certificate_sha256=%s not_after=%s", sha, when);
	return SL_OK;
}

bool ctl_stop_or_reload(struct ctl *c, int stop_fd)
{
	struct signalfd_siginfo si;
	ssize_t n = read(stop_fd, &si, sizeof(si));
	if (n != (ssize_t)sizeof(si) || si.ssi_signo != SIGHUP)
		return true;
	if (!c->tls) {
		sl_log_info("SIGHUP: nothing to reload (plain HTTP)", NULL);
		return false;
	}
	struct sl_diag d;
	sl_diag_clear(&d);
	if (ctl_tls_reload(&d))
		sl_log_error("SIGHUP: new TLS certificate refused; still serving the old one",
			     "error=%s", d.msg);
	return false;
}

void ctl_tls_watch(struct ctl *c)
{
	static int64_t last;
	if (c->now_ns - last < WATCH_NS && c->now_ns >= last)
		return;
	last = c->now_ns;
	(void)ctl_tls_reload_if_changed();
}

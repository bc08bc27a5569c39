/* http_listen.c - listen addresses and the listening socket.
 *
 * Kept apart from the request machinery in http.c: it is plain sockets, and
 * owning the bind (rather than letting MHD do it) is what lets an error say
 * which address failed and why. */
#include "http.h"
#include "http_listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---- listen addresses ---- */

static enum sl_err listen_error(struct sl_diag *d, const char *where,
				const char *why)
{
	sl_diag_hint(d, "use HOST:PORT such as 127.0.0.1:7400, [::1]:7400 or :7400 "
			"(every address)");
	return sl_diag_set(d, SL_EINVAL, "bad listen address '%s': %s", where, why);
}

static int parse_port(const char *p, uint16_t *port)
{
	unsigned long v = 0;
	if (!*p)
		return -1;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > 65535)
			return -1;
	}
	*port = (uint16_t)v;
	return 0;
}

enum sl_err http_parse_listen(const char *where, void *ss, size_t *sslen,
			      int *any, struct sl_diag *d)
{
	char host[HTTP_LISTEN_MAX];
	const char *colon;
	uint16_t port;
	size_t hlen;

	if (!where || !*where)
		return listen_error(d, "", "empty");
	if (strlen(where) >= HTTP_LISTEN_MAX)
		return listen_error(d, "...", "longer than the limit");
	*any = 0;
	if (where[0] == '[') {
		const char *close = strchr(where, ']');
		if (!close)
			return listen_error(d, where, "missing ']' after the IPv6 address");
		if (close[1] != ':')
			return listen_error(d, where, "expected ':PORT' after ']'");
		hlen = (size_t)(close - where - 1);
		memcpy(host, where + 1, hlen);
		colon = close + 1;
	} else {
		colon = strrchr(where, ':');
		if (!colon)
			return listen_error(d, where, "no port");
		hlen = (size_t)(colon - where);
		memcpy(host, where, hlen);
		if (memchr(host, ':', hlen))
			return listen_error(d, where, "IPv6 addresses go in brackets, as [::1]:7400");
	}
	host[hlen] = '\0';
	if (parse_port(colon + 1, &port) < 0)
		return listen_error(d, where, "the port must be a number from 0 to 65535");

	memset(ss, 0, sizeof(struct sockaddr_storage));
	struct sockaddr_in *v4 = ss;
	struct sockaddr_in6 *v6 = ss;
	if (where[0] == '[') {
		if (inet_pton(AF_INET6, host, &v6->sin6_addr) != 1)
			return listen_error(d, where, "not an IPv6 address");
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		*sslen = sizeof(*v6);
		return SL_OK;
	}
	if (hlen == 0) {
		*any = 1;
		v6->sin6_family = AF_INET6;
		v6->sin6_addr = in6addr_any;
		v6->sin6_port = htons(port);
		*sslen = sizeof(*v6);
		return SL_OK;
	}
	if (strcmp(host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	if (inet_pton(AF_INET, host, &v4->sin_addr) != 1)
		return listen_error(d, where, "not an IPv4 address (host names other "
					       "than localhost are not resolved)");
	v4->sin_family = AF_INET;
	v4->sin_port = htons(port);
	*sslen = sizeof(*v4);
	return SL_OK;
}

/* Makes the listening socket ourselves so that a failure says why. */
enum sl_err http_open_listener(const char *where, int *out, uint16_t *port,
				 struct sl_diag *d)
{
	struct sockaddr_storage ss;
	size_t sslen;
	int any, one = 1, zero = 0;
	enum sl_err e = http_parse_listen(where, &ss, &sslen, &any, d);
	if (e != SL_OK)
		return e;

	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 && any && (errno == EAFNOSUPPORT)) {
		/* no IPv6 on this host: every IPv4 address then */
		struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
		in_port_t p = ((struct sockaddr_in6 *)&ss)->sin6_port;
		memset(&ss, 0, sizeof(ss));
		v4->sin_family = AF_INET;
		v4->sin_addr.s_addr = htonl(INADDR_ANY);
		v4->sin_port = p;
		sslen = sizeof(*v4);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	}
	if (fd < 0)
		return sl_diag_set(d, SL_EIO, "cannot listen on %s: %s", where,
				   strerror(errno));
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (any && ss.ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&ss, (socklen_t)sslen) < 0 ||
	    listen(fd, SOMAXCONN) < 0) {
		int err = errno;
		close(fd);
		if (err == EADDRINUSE)
			sl_diag_hint(d, "another program (or suanlid) already listens "
					"there; choose another port with --listen");
		return sl_diag_set(d, SL_EIO, "cannot listen on %s: %s", where,
				   strerror(err));
	}
	socklen_t len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
		*port = ntohs(ss.ss_family == AF_INET6
				      ? ((struct sockaddr_in6 *)&ss)->sin6_port
				      : ((struct sockaddr_in *)&ss)->sin_port);
	*out = fd;
	return SL_OK;
}

/* ---- refusals at the connection limit ---- */

size_t http_overload_body(char *buf, size_t n, unsigned max_connections)
{
	int len = snprintf(buf, n,
			   "{\"error\":{\"code\":\"overloaded\",\"message\":\"the "
			   "controller is at its connection limit (%u)\",\"hint\":\"retry "
			   "after %u s (Retry-After), with jitter; an operator may raise "
			   "--max-connections and ulimit -n\"}}",
			   max_connections, HTTP_RETRY_AFTER_S);
	return len < 0 ? 0 : (size_t)len >= n ? n - 1 : (size_t)len;
}

void http_refuse_socket(int fd, unsigned max_connections)
{
	char body[512], head[256], junk[4096];
	size_t blen = http_overload_body(body, sizeof(body), max_connections);
	int hlen = snprintf(head, sizeof(head),
			    "HTTP/1.1 503 Service Unavailable\r\n"
			    "Content-Type: application/json\r\n"
			    "Retry-After: %u\r\nConnection: close\r\n"
			    "Content-Length: %zu\r\n\r\n",
			    HTTP_RETRY_AFTER_S, blen);
	struct iovec iov[2] = {{head, (size_t)hlen}, {body, blen}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
	/* Whatever the client already sent is read first: closing a socket
	 * with unread bytes sends a reset, which may discard our answer at
	 * the client before it reads it. */
	while (recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0)
		;
	(void)sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)shutdown(fd, SHUT_WR);
	while (recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0)
		;
	close(fd);
}

/* ---- file descriptors ---- */

unsigned long http_fds_needed(unsigned max_connections)
{
	return (unsigned long)max_connections + HTTP_REFUSE_RESERVE(max_connections) +
	       HTTP_FD_RESERVE;
}

/* A limit the process cannot keep is refused at start, not discovered at
 * the thousandth connection (accept failing with EMFILE). */
enum sl_err http_check_fd_limit(unsigned max, struct sl_diag *d)
{
	struct rlimit rl;
	unsigned long need = http_fds_needed(max);
	if (max > HTTP_MAX_CONNECTIONS_LIMIT) {
		sl_diag_hint(d, "give --max-connections at most %u", HTTP_MAX_CONNECTIONS_LIMIT);
		return sl_diag_set(d, SL_ELIMIT, "max-connections %u is above the bound", max);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < need) {
		sl_diag_hint(d, "raise the file descriptor limit to at least %lu (ulimit -n, "
				"systemd LimitNOFILE=) or lower --max-connections to %lu",
			     need, rl.rlim_cur > HTTP_FD_RESERVE + 16
					   ? (unsigned long)((rl.rlim_cur - HTTP_FD_RESERVE) * 8 / 9)
					   : 0ul);
		return sl_diag_set(d, SL_ELIMIT,
				   "max-connections %u needs %lu file descriptors; this "
				   "process may open %lu",
				   max, need, (unsigned long)rl.rlim_cur);
	}
	return SL_OK;
}

/* Takes one connection off the listen backlog at EMFILE or ENFILE, with the
 * spare descriptor, just to refuse it: left there it would keep the listener
 * readable (a busy loop) and its client waiting in silence. */
bool http_refuse_with_spare(int lfd, int *spare, unsigned max_connections)
{
	if (*spare < 0)
		return false;
	close(*spare);
	*spare = -1;
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd >= 0)
		http_refuse_socket(fd, max_connections);
	*spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return fd >= 0;
}

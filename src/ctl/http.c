/* http.c - the HTTP server layer over libmicrohttpd, for a single-threaded
 * event loop.
 *
 * Why it is built this way:
 * - MHD runs in external epoll mode, so the controller's one thread owns every
 *   callback and no lock is needed anywhere. Deferred answers use MHD's
 *   suspend/resume: a suspended connection costs a socket and a small struct.
 * - MHD does not watch suspended connections, so a long poll whose client
 *   left would wait for its answer forever. We therefore keep our own epoll
 *   set holding MHD's epoll fd plus, for each suspended request, its socket
 *   with EPOLLRDHUP only (pipelined bytes do not wake us). That outer set is
 *   the one fd the owner polls. The watch is added just before the owner
 *   next waits (http_server_timeout_ms, http_server_run), not at suspension:
 *   most deferred requests are answered in the same turn (group commit), and
 *   adding then removing their sockets was two epoll_ctl calls per request.
 * - A request object is made in MHD's URI-log callback (the earliest point, so
 *   every request MHD later completes has one) and lives until both MHD has
 *   completed it and its answer has been given, in either order. Every
 *   allocated request sits in one list so that http_server_free can release
 *   what neither side will.
 * - Headers and query parameters are copied out of MHD at the first callback:
 *   a deferred request may outlive its connection (client gone), and its
 *   owner may still look at it then.
 * - We accept connections ourselves (MHD_USE_NO_LISTEN_SOCKET). At its own
 *   connection limit MHD simply stops accepting: new clients then sit in the
 *   kernel's listen backlog unanswered, an operator's curl included, and the
 *   slots that free up go to the oldest backlog entries, mostly clients that
 *   already gave up. Owning accept() lets every connection past the limit
 *   get a prompt 503 instead (http.h, "Connection limits"). MHD's own limit
 *   is set above ours so that it is never the one that decides. */
#include "http.h"

#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <microhttpd.h>

#include "buf.h"
#include "http_listen.h"
#include "log.h"

#include "http_int.h"

/* Events taken from the outer epoll set per run. */
#define RUN_EVENTS 64
/* Bytes of an MHD log message kept. */
#define MHD_LOG_MAX 512

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- request objects ---- */

static void fields_free(struct field *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(f[i].name);
	free(f);
}

static void req_free(struct http_request *r)
{
	struct http_server *s = r->srv;
	for (struct http_request **p = &s->to_watch; r->to_watch && *p; p = &(*p)->wnext)
		if (*p == r) {
			*p = r->wnext;
			r->to_watch = 0;
			break;
		}
	if (r->prev)
		r->prev->next = r->next;
	else
		s->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	if (r->resp)
		MHD_destroy_response(r->resp);
	for (unsigned i = 0; i < r->nrhdrs; i++)
		free(r->rhdrs[i].name);
	fields_free(r->hdrs, r->nhdrs);
	fields_free(r->params, r->nparams);
	free(r->body);
	free(r->path);
	free(r->uri);
	free(r);
}

/* Frees r once neither MHD nor the handler will use it again. While the
 * server is being freed, freeing waits for the end (callbacks then may answer
 * requests that sit next to each other in the list). */
static void req_maybe_free(struct http_request *r)
{
	if (r->completed && (r->answered || !r->dispatched) && !r->srv->closing)
		req_free(r);
}

static void unwatch(struct http_request *r)
{
	if (r->watched) {
		(void)epoll_ctl(r->srv->ep, EPOLL_CTL_DEL, r->fd, NULL);
		r->watched = 0;
	}
}

/* Watches a suspended request's socket for the client hanging up. If the
 * socket cannot be watched the request simply waits for its answer. */
static void watch(struct http_request *r)
{
	struct epoll_event ev = {.events = EPOLLRDHUP, .data.ptr = r};
	if (r->fd >= 0 && epoll_ctl(r->srv->ep, EPOLL_CTL_ADD, r->fd, &ev) == 0)
		r->watched = 1;
}

/* Watches the requests suspended since the owner last waited that still
 * wait for their answer. */
static void watch_deferred(struct http_server *s)
{
	while (s->to_watch) {
		struct http_request *r = s->to_watch;
		s->to_watch = r->wnext;
		r->to_watch = 0;
		if (r->suspended && !r->answered && !r->watched && !r->gone)
			watch(r);
	}
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct http_server *s = cls;
	struct http_request *r = calloc(1, sizeof(*r));
	(void)conn;
	if (!r)
		return NULL;
	r->srv = s;
	r->fd = -1;
	r->start_ns = now_ns();
	r->uri = strdup(uri ? uri : "");
	if (r->uri) {
		char *q = strchr(r->uri, '?');
		size_t plen = q ? (size_t)(q - r->uri) : strlen(r->uri);
		r->query = q ? q + 1 : "";
		r->path = strndup(r->uri, plen);
	}
	if (!r->uri || !r->path) {
		free(r->uri);
		free(r);
		return NULL;
	}
	r->next = s->reqs;
	if (s->reqs)
		s->reqs->prev = r;
	s->reqs = r;
	return r;
}

struct collect {
	struct field *f;
	size_t n, cap;
	int failed;
};

static enum MHD_Result collect_one(void *cls, enum MHD_ValueKind kind,
				   const char *key, const char *value)
{
	struct collect *c = cls;
	(void)kind;
	if (c->n == c->cap) {
		c->failed = 1;
		return MHD_NO;
	}
	size_t kl = strlen(key), vl = value ? strlen(value) : 0;
	char *m = malloc(kl + vl + 2);
	if (!m) {
		c->failed = 1;
		return MHD_NO;
	}
	memcpy(m, key, kl + 1);
	memcpy(m + kl + 1, value ? value : "", vl + 1);
	c->f[c->n].name = m;
	c->f[c->n].value = m + kl + 1;
	c->n++;
	return MHD_YES;
}

/* Copies one kind of MHD's values; -1 past HTTP_MAX_FIELDS or out of memory. */
static int collect(struct MHD_Connection *conn, enum MHD_ValueKind kind,
		   struct field **out, size_t *n)
{
	int total = MHD_get_connection_values(conn, kind, NULL, NULL);
	struct collect c = {NULL, 0, 0, 0};
	*out = NULL;
	*n = 0;
	if (total <= 0)
		return 0;
	if ((unsigned)total > HTTP_MAX_FIELDS)
		return -1;
	c.cap = (size_t)total;
	c.f = calloc(c.cap, sizeof(*c.f));
	if (!c.f)
		return -1;
	(void)MHD_get_connection_values(conn, kind, collect_one, &c);
	*out = c.f;
	*n = c.n;
	return c.failed ? -1 : 0;
}

static void format_peer(struct http_request *r, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	char host[INET6_ADDRSTRLEN], serv[8];
	snprintf(r->peer, sizeof(r->peer), "?");
	if (!ci || !ci->client_addr)
		return;
	const struct sockaddr *sa = ci->client_addr;
	socklen_t len = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						  : sizeof(struct sockaddr_in);
	if (getnameinfo(sa, len, host, sizeof(host), serv, sizeof(serv),
			NI_NUMERICHOST | NI_NUMERICSERV) != 0)
		return;
	snprintf(r->peer, sizeof(r->peer),
		 sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
}

/* ---- answers ---- */

/* Builds the MHD response for r from status, type, body and the queued
 * headers. On failure r->resp stays NULL and the connection will be closed. */
static void build_response(struct http_request *r, int status,
			   const char *content_type, const char *body, size_t len)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(len, (void *)(body ? body : ""),
						MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return;
	if (content_type &&
	    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				    content_type) != MHD_YES)
		goto fail;
	for (unsigned i = 0; i < r->nrhdrs; i++)
		if (MHD_add_response_header(resp, r->rhdrs[i].name,
					    r->rhdrs[i].value) != MHD_YES)
			goto fail;
	if (r->over && !r->route_refused &&
	    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") != MHD_YES)
		goto fail;
	r->resp = resp;
	r->status = status >= 100 && status <= 599 ? status : 500;
	r->out_len = len;
	return;
fail:
	MHD_destroy_response(resp);
}

void http_respond(struct http_request *r, int status, const char *content_type,
		  const char *body, size_t len)
{
	struct http_server *s;
	if (!r || r->answered)
		return;
	s = r->srv;
	r->answered = 1;
	if (r->dispatched)
		s->pending--;
	if (!r->gone && !s->closing && !r->close_only)
		build_response(r, status, content_type, body, len);
	if (r->suspended) {
		unwatch(r);
		r->suspended = 0;
		MHD_resume_connection(r->conn);
	}
	req_maybe_free(r);
}

enum sl_err http_response_header(struct http_request *r, const char *name,
				 const char *value)
{
	if (!r || r->answered || !name || !value || !*name)
		return SL_EINVAL;
	if (strpbrk(name, "\r\n: ") || strpbrk(value, "\r\n"))
		return SL_EINVAL;
	if (r->nrhdrs >= HTTP_MAX_RESPONSE_HEADERS)
		return SL_ELIMIT;
	struct collect c = {r->rhdrs + r->nrhdrs, 0, 1, 0};
	(void)collect_one(&c, MHD_HEADER_KIND, name, value);
	if (c.failed)
		return SL_ENOMEM;
	r->nrhdrs++;
	return SL_OK;
}

/* ---- MHD callbacks ---- */

static enum MHD_Result queue(struct http_request *r)
{
	enum MHD_Result ret;
	if (r->queued)
		return MHD_YES;
	if (!r->resp)
		return MHD_NO;
	ret = MHD_queue_response(r->conn, (unsigned)r->status, r->resp);
	MHD_destroy_response(r->resp);
	r->resp = NULL;
	r->queued = 1;
	return ret;
}

static void answer_too_large(struct http_request *r)
{
	char msg[128];
	snprintf(msg, sizeof(msg), "the request body is larger than %zu bytes",
		 r->max_body);
	http_request_set_route(r, "too_large");
	http_respond_error(r, SL_ELIMIT, msg, "send a smaller body");
}

/* A request on a connection past max_connections: 503 at once, and the
 * connection closes after it. */
static void answer_refused(struct http_request *r)
{
	char body[512], ra[16];
	size_t n = http_overload_body(body, sizeof(body), r->srv->lim.max_connections);
	snprintf(ra, sizeof(ra), "%u", HTTP_RETRY_AFTER_S);
	http_request_set_route(r, "refused");
	r->route_refused = 1;
	if (http_response_header(r, "Retry-After", ra) != SL_OK ||
	    http_response_header(r, "Connection", "close") != SL_OK)
		r->close_only = 1; /* out of memory: closing still refuses */
	http_respond(r, 503, "application/json", body, n);
}

/* Two different Content-Lengths, one that is not a number, or one next to
 * Transfer-Encoding make the body's end ambiguous (the root of request
 * smuggling); such requests are refused rather than guessed at. Sets *cl to
 * the Content-Length, if any. */
static int framing_conflict(const struct http_request *r, const char **cl)
{
	int te = 0;
	*cl = NULL;
	for (size_t i = 0; i < r->nhdrs; i++) {
		const char *v = r->hdrs[i].value;
		if (strcasecmp(r->hdrs[i].name, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
			if (!*v || v[strspn(v, "0123456789")] != '\0')
				return 1;
			if (*cl && strcmp(*cl, v) != 0)
				return 1;
			*cl = v;
		} else if (strcasecmp(r->hdrs[i].name,
				      MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
			te = 1;
		}
	}
	return te && *cl;
}

/* First call: headers are complete, the body not yet read. */
static enum MHD_Result req_begin(struct http_request *r,
				 struct MHD_Connection *conn, const char *method)
{
	const union MHD_ConnectionInfo *ci;
	const char *cl;

	r->started = 1;
	r->conn = conn;
	snprintf(r->method, sizeof(r->method), "%s", method ? method : "");
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	r->fd = ci ? ci->connect_fd : -1;
	format_peer(r, conn);
	r->max_body = r->srv->lim.max_body;
	if (r->srv->cb.max_body_for) {
		size_t m = r->srv->cb.max_body_for(r->method, r->path, r->srv->cb.ctx);
		if (m)
			r->max_body = m;
	}
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (ci && ci->socket_context == (void *)&r->srv->refused) {
		/* Past the limit agents are turned away (they retry with backoff);
		 * anyone else (an operator, /healthz) is served on the reserve,
		 * and the connection closes after the answer to free it. */
		r->over = 1;
		if (strncmp(r->path, HTTP_AGENT_PREFIX, strlen(HTTP_AGENT_PREFIX)) == 0) {
			answer_refused(r);
			return queue(r);
		}
	}
	if (collect(conn, MHD_HEADER_KIND, &r->hdrs, &r->nhdrs) < 0 ||
	    collect(conn, MHD_GET_ARGUMENT_KIND, &r->params, &r->nparams) < 0) {
		char hint[64];
		snprintf(hint, sizeof(hint), "send at most %u of each", HTTP_MAX_FIELDS);
		http_request_set_route(r, "too_many_fields");
		http_respond_error_status(r, 431, SL_ELIMIT,
				     "too many headers or query parameters", hint);
		return queue(r);
	}
	if (framing_conflict(r, &cl)) {
		http_request_set_route(r, "bad_framing");
		http_respond_error(r, SL_EPARSE,
				   "conflicting or malformed Content-Length and "
				   "Transfer-Encoding headers",
				   "send one Content-Length, or chunked encoding alone");
		return queue(r);
	}
	if (cl) {
		errno = 0;
		unsigned long long v = strtoull(cl, NULL, 10);
		if (errno == ERANGE || v > r->max_body) {
			r->too_large = 1;
			answer_too_large(r);
			return queue(r);
		}
	}
	return MHD_YES;
}

static enum MHD_Result req_upload(struct http_request *r, const char *data,
				  size_t *size)
{
	size_t n = *size, max = r->max_body;
	*size = 0;
	if (r->too_large || r->answered) {
		r->discarded += n;
		return r->discarded > (uint64_t)max * HTTP_DISCARD_FACTOR ? MHD_NO
									 : MHD_YES;
	}
	if (n > max - r->body_len) {
		r->too_large = 1;
		r->discarded = r->body_len + n;
		free(r->body);
		r->body = NULL;
		r->body_len = r->body_cap = 0;
		return MHD_YES;
	}
	if (sl_grow(&r->body, &r->body_cap, r->body_len + n + 1, max + 1))
		return MHD_NO;
	memcpy(r->body + r->body_len, data, n);
	r->body_len += n;
	r->body[r->body_len] = '\0';
	return MHD_YES;
}

/* Last call: the whole request is here (or the connection was resumed). */
static enum MHD_Result req_finish(struct http_request *r)
{
	struct http_server *s = r->srv;
	if (r->gone || s->closing)
		return MHD_NO;
	if (!r->answered && r->too_large)
		answer_too_large(r);
	if (!r->answered && !r->dispatched) {
		r->dispatched = 1;
		s->pending++;
		s->cb.handle(r, s->cb.ctx);
	}
	if (r->answered)
		return queue(r);
	if (!r->suspended) {
		MHD_suspend_connection(r->conn);
		r->suspended = 1;
		if (!r->to_watch) {
			r->wnext = s->to_watch;
			s->to_watch = r;
			r->to_watch = 1;
		}
	}
	return MHD_YES;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn,
				 const char *url, const char *method,
				 const char *version, const char *upload,
				 size_t *upload_size, void **con_cls)
{
	struct http_request *r = *con_cls;
	(void)cls;
	(void)url;
	(void)version;
	if (!r)
		return MHD_NO; /* out of memory at the URI callback */
	if (!r->started)
		return req_begin(r, conn, method);
	if (*upload_size)
		return req_upload(r, upload, upload_size);
	return req_finish(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_server *s = cls;
	struct http_request *r = *con_cls;
	(void)conn;
	if (!r || r->completed)
		return;
	*con_cls = NULL;
	r->completed = 1;
	unwatch(r);
	if (s->cb.done && !s->closing) {
		struct http_done_info info = {
			.method = r->method,
			.path = r->path,
			.route = r->route,
			.peer = r->peer,
			.status = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && r->queued
					  ? r->status
					  : 0,
			.duration_ns = now_ns() - r->start_ns,
			.body_in = r->body_len,
			.body_out = r->out_len,
		};
		s->cb.done(&info, s->cb.ctx);
	}
	req_maybe_free(r);
}

/* Admission: the first max_connections connections are admitted; the
 * socket context marks the others (&s->refused) for answer_refused. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **sctx,
			  enum MHD_ConnectionNotificationCode code)
{
	struct http_server *s = cls;
	(void)conn;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		s->open++;
		if (s->open > s->peak)
			s->peak = s->open;
		if (s->admitted < s->lim.max_connections) {
			s->admitted++;
			*sctx = &s->admitted;
		} else {
			s->refused++;
			*sctx = &s->refused;
		}
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (s->open)
			s->open--;
		if (*sctx == (void *)&s->admitted && s->admitted)
			s->admitted--;
		*sctx = NULL;
	}
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[MHD_LOG_MAX];
	(void)cls;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	sl_log(SL_LOG_DEBUG, "http server", "detail=%s", buf);
}

/* ---- the server ---- */

/* Accepts up to HTTP_ACCEPT_BATCH connections: MHD serves them while it has
 * room below s->hard, the rest get the canned 503. */
static void accept_some(struct http_server *s)
{
	for (unsigned i = 0; i < HTTP_ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if ((errno == EMFILE || errno == ENFILE) &&
			    http_refuse_with_spare(s->lfd, &s->spare, s->lim.max_connections)) {
				s->refused++;
				continue;
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				sl_log_warn("accept failed", "error=%s", strerror(errno));
			return;
		}
		if (s->open >= s->hard) {
			http_refuse_socket(fd, s->lim.max_connections);
			s->refused++;
			continue;
		}
		/* MHD closes fd itself when it cannot take it. */
		if (MHD_add_connection(s->mhd, fd, (struct sockaddr *)&ss, sl) != MHD_YES)
			s->refused++;
	}
}

static void limits_fill(struct http_limits *l, const struct http_limits *in)
{
	memset(l, 0, sizeof(*l));
	if (in)
		*l = *in;
	if (!l->max_body)
		l->max_body = HTTP_MAX_BODY;
	if (!l->max_connections)
		l->max_connections = HTTP_MAX_CONNECTIONS;
	if (!l->conn_timeout_s)
		l->conn_timeout_s = HTTP_CONN_TIMEOUT_S;
	if (!l->conn_memory)
		l->conn_memory = HTTP_CONN_MEMORY;
}

enum sl_err http_server_new(const char *addr, const struct http_limits *lim,
			    const struct http_callbacks *cb,
			    struct http_server **out, struct sl_diag *d)
{
	struct http_server *s;
	int fd = -1;
	enum sl_err e;

	*out = NULL;
	if (!cb || !cb->handle)
		return sl_diag_set(d, SL_EINVAL, "an HTTP server needs a handler");
	s = calloc(1, sizeof(*s));
	if (!s)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	s->cb = *cb;
	s->ep = s->lfd = s->spare = -1;
	limits_fill(&s->lim, lim);
	if ((e = http_check_fd_limit(s->lim.max_connections, d)) != SL_OK)
		goto fail;
	s->hard = s->lim.max_connections + HTTP_REFUSE_RESERVE(s->lim.max_connections);
	e = http_open_listener(addr, &fd, &s->port, d);
	if (e != SL_OK)
		goto fail;
	s->lfd = fd;
	s->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	if (s->ep < 0) {
		e = sl_diag_set(d, SL_EIO, "epoll_create1: %s", strerror(errno));
		goto fail;
	}
	struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &s->lfd};
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &lev) < 0) {
		e = sl_diag_set(d, SL_EIO, "cannot poll the listening socket: %s",
				strerror(errno));
		goto fail;
	}
	/* HTTPS (tls.c): the handshake asks for the certificate each time, so
	 * a reload needs no restart. */
	struct MHD_OptionItem tls_opts[] = {
		{MHD_OPTION_HTTPS_CERT_CALLBACK, 0, s->lim.tls_cert_callback},
		{MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)s->lim.tls_priorities},
		{MHD_OPTION_END, 0, NULL},
	};
	bool tls = s->lim.tls_cert_callback != NULL;
	if (tls && !s->lim.tls_priorities)
		tls_opts[1] = tls_opts[2];
	s->mhd = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
			MHD_USE_NO_LISTEN_SOCKET | (tls ? MHD_USE_TLS : 0),
		0, NULL, NULL, on_access, s,
		MHD_OPTION_ARRAY, tls ? tls_opts : tls_opts + 2,
		MHD_OPTION_CONNECTION_LIMIT, s->hard,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
		MHD_OPTION_CONNECTION_TIMEOUT, s->lim.conn_timeout_s,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->lim.max_per_ip,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, s->lim.conn_memory,
		MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_NOTIFY_COMPLETED,
		on_completed, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
		MHD_OPTION_END);
	if (!s->mhd) {
		e = sl_diag_set(d, SL_EIO, "the HTTP server could not start on %s", addr);
		goto fail;
	}
	const union MHD_DaemonInfo *di =
		MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	if (!di || epoll_ctl(s->ep, EPOLL_CTL_ADD, di->epoll_fd, &ev) < 0) {
		e = sl_diag_set(d, SL_EIO, "cannot poll the HTTP server: %s",
				strerror(errno));
		goto fail;
	}
	*out = s;
	return SL_OK;
fail:
	if (s->mhd)
		MHD_stop_daemon(s->mhd);
	if (s->ep >= 0)
		close(s->ep);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->spare >= 0)
		close(s->spare);
	free(s);
	return e;
}

void http_server_free(struct http_server *s)
{
	if (!s)
		return;
	s->closing = 1;
	s->to_watch = NULL;
	for (struct http_request *r = s->reqs; r; r = r->next) {
		r->to_watch = 0;
		if (r->dispatched && !r->answered && !r->gone) {
			r->gone = 1;
			if (s->cb.gone)
				s->cb.gone(r, s->cb.ctx);
		}
	}
	/* MHD must not be stopped with suspended connections. */
	for (struct http_request *r = s->reqs; r; r = r->next) {
		unwatch(r);
		if (r->suspended) {
			r->suspended = 0;
			MHD_resume_connection(r->conn);
		}
	}
	MHD_stop_daemon(s->mhd);
	while (s->reqs)
		req_free(s->reqs);
	close(s->ep);
	close(s->lfd);
	if (s->spare >= 0)
		close(s->spare);
	free(s);
}

int http_server_fd(const struct http_server *s)
{
	return s->ep;
}

int http_server_timeout_ms(struct http_server *s)
{
	MHD_UNSIGNED_LONG_LONG t;
	watch_deferred(s); /* the owner is about to wait */
	if (MHD_get_timeout(s->mhd, &t) != MHD_YES)
		return -1;
	return t > INT_MAX ? INT_MAX : (int)t;
}

/* A watched client hung up: tell the owner, then let MHD close the
 * connection (the access callback refuses to go on with a gone request). */
static void client_gone(struct http_request *r)
{
	struct http_server *s = r->srv;
	unwatch(r);
	if (!r->suspended || r->answered)
		return;
	r->gone = 1;
	if (s->cb.gone)
		s->cb.gone(r, s->cb.ctx);
	if (r->suspended) {
		r->suspended = 0;
		MHD_resume_connection(r->conn);
	}
}

enum sl_err http_server_run(struct http_server *s)
{
	struct epoll_event ev[RUN_EVENTS];
	watch_deferred(s); /* for an owner that did not ask for a timeout */
	int n = epoll_wait(s->ep, ev, RUN_EVENTS, 0);
	for (int i = 0; i < n; i++) {
		if (ev[i].data.ptr == (void *)&s->lfd) {
			accept_some(s);
			continue;
		}
		struct http_request *r = ev[i].data.ptr;
		/* Callbacks may have answered (and so unwatched) a request
		 * further on in ev[]; only completed requests are ever freed and
		 * those are not watched, so r is still valid here. */
		if (r && r->watched)
			client_gone(r);
	}
	return MHD_run(s->mhd) == MHD_YES ? SL_OK : SL_EIO;
}

uint16_t http_server_port(const struct http_server *s)
{
	return s->port;
}

unsigned http_server_connections(const struct http_server *s)
{
	const union MHD_DaemonInfo *di =
		MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
	return di ? di->num_connections : 0;
}

void http_server_stats(const struct http_server *s, struct http_stats *out)
{
	out->open = s->open;
	out->admitted = s->admitted;
	out->peak = s->peak;
	out->max = s->lim.max_connections;
	out->refused = s->refused;
}

size_t http_server_pending(const struct http_server *s)
{
	return s->pending;
}

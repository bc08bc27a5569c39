/* http.h - the controller's HTTP server, driven by its single-threaded loop.
 *
 * A thin layer over libmicrohttpd (MHD) in external-loop epoll mode: no thread
 * of its own. The owner polls http_server_fd() for readability with at most
 * http_server_timeout_ms(), then calls http_server_run(), which does whatever
 * is ready without blocking.
 *
 * Requests. Every request is read whole first (the body bounded by
 * max_body, or by what the max_body_for callback names for its route;
 * beyond it the client gets a 413 JSON error and the handler never
 * sees the request). Then the handler is called once with a struct
 * http_request. The handler must answer every request it is given exactly
 * once, with one of the http_respond* functions, either before it returns or
 * at any later time from the same thread (deferred: the connection is
 * suspended meanwhile, which is how group commit and long polls wait without
 * blocking anything). After answering, the handler must not touch the
 * request again. The request object itself lives until it has been answered
 * and MHD is done with the connection, whichever comes last.
 *
 * Clients that go away. While a deferred request waits, the server watches its
 * socket; if the client hangs up, http_request_gone() becomes true and the
 * gone callback (if set) is called. The obligation to answer stays: answering
 * a gone request sends nothing and frees it (an owner can simply answer it
 * from the gone callback). So there are no leaks in either order.
 *
 * Errors are JSON: {"error": {"code": "...", "message": "...", "hint": "..."}}
 * (hint is "" when there is none), with the status from err.h's table.
 *
 * Malformed HTTP is MHD's job; the bounds here (connections, idle timeout,
 * memory per connection for the request line and headers, body size) keep a
 * hostile client from holding more than its share. Requests whose framing is
 * ambiguous (two different Content-Lengths, a malformed one, or one next to
 * Transfer-Encoding) get a 400 parse_error without reaching the handler.
 * Known MHD 0.9.75 behaviour: a client that half-closes right after sending
 * may not be noticed until the idle timeout; the connection limit bounds
 * what that costs.
 *
 * Connection limits. The server accepts connections itself (MHD gets them
 * through MHD_add_connection), at most HTTP_ACCEPT_BATCH per run, so the
 * connections it has are served between batches however many wait. Up to
 * max_connections are admitted; on the next HTTP_REFUSE_RESERVE(max) an
 * agent's request (HTTP_AGENT_PREFIX) is answered with 503, Retry-After:
 * HTTP_RETRY_AFTER_S and a JSON error (code "overloaded"), any other request
 * is served, and either way the connection then closes; beyond those, and when accept()
 * runs out of file descriptors (a spare descriptor is kept for exactly
 * this), the same 503 is written to the new socket before it is closed.
 * No client is ever left unanswered in the listen backlog. */
#ifndef SL_HTTP_H
#define SL_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "err.h"

/* Largest request body accepted (1 MiB) where the owner names no other bound
 * for the route (http_callbacks.max_body_for); larger gets 413 without the
 * handler. */
#define HTTP_MAX_BODY ((size_t)1 << 20)
/* Connections admitted at once (suanlid --max-connections); suspended
 * (deferred) requests count. A connection beyond it is still accepted, and
 * its request is answered at once with 503, Retry-After and "Connection:
 * close" (never left waiting in the kernel's listen backlog, which is what
 * silenced the controller at MHD's own limit). */
#define HTTP_MAX_CONNECTIONS 4096u
/* Bound on max_connections (and so on file descriptors the server asks for). */
#define HTTP_MAX_CONNECTIONS_LIMIT 1000000u
/* Connections accepted beyond max_connections only to be refused with a
 * proper 503: max_connections / 8, at least 16. Past max_connections plus
 * this reserve a connection gets a canned 503 written straight to its
 * socket, which is then closed: the loop never stops accepting. */
#define HTTP_REFUSE_RESERVE(max) ((max) / 8u < 16u ? 16u : (max) / 8u)
/* File descriptors the controller keeps for itself besides connections
 * (store, logs, epoll sets, the spare descriptor for EMFILE refusals). */
#define HTTP_FD_RESERVE 64u
/* Requests under this path prefix (the agents') are the ones refused on a
 * connection past max_connections; others are served there, then the
 * connection is closed, so an operator still gets in during an agent storm. */
#define HTTP_AGENT_PREFIX "/v1/agent/"
/* Seconds a refused client is told to wait (Retry-After). */
#define HTTP_RETRY_AFTER_S 2u
/* Connections accepted per loop turn, so that a connection storm cannot
 * starve the connections already open. */
#define HTTP_ACCEPT_BATCH 64u
/* Seconds a connection may stay idle (no bytes either way) before it is
 * closed; a deferred request does not count as idle. */
#define HTTP_CONN_TIMEOUT_S 30u
/* Memory per connection for the request line, headers and read buffer.
 * Bodies do not need it: they pass through in pieces. MHD zeroes the whole
 * of it after every request, so each open keep-alive connection (one per
 * agent) holds all of it: 64 KiB was 640 MiB at 10,000 agents. MHD 0.9.75
 * reads the request line and headers into half of it (the other half holds
 * the parsed headers and the answer's), so at 6 KiB they may take ~2.7 KiB
 * (2,776 bytes measured); more gets MHD's 431 and the connection is closed,
 * except in a band of ~64 bytes just past what fits, where MHD closes it
 * without an answer (the headers fit, the answer's do not). A smaller pool
 * takes proportionally less (5 KiB: 2,264 bytes; 4 KiB: 1,752) and no
 * MHD option grows it (MHD_OPTION_CONNECTION_MEMORY_INCREMENT changes none
 * of these), so 6 KiB stays: test_http's browser request with a 1.6 KB
 * cookie, twice on one kept-alive connection, needs it (bench/results/
 * memory.md, issue 17's fourth pass). */
#define HTTP_CONN_MEMORY ((size_t)6 << 10)
/* Headers and query parameters kept per request; more is a 431 error. */
#define HTTP_MAX_FIELDS 100u
/* Extra response headers one answer may carry (http_response_header). */
#define HTTP_MAX_RESPONSE_HEADERS 8u
/* Longest listen address string accepted. */
#define HTTP_LISTEN_MAX 256u
/* A body sent without Content-Length (chunked) that passes max_body is read
 * and dropped to answer 413; past this many times max_body the connection is
 * closed instead, so a client cannot stream forever. */
#define HTTP_DISCARD_FACTOR 4u

struct http_server;
struct http_request;

/* How many file descriptors a server with max_connections needs (the
 * connections, the refusal reserve, HTTP_FD_RESERVE). */
unsigned long http_fds_needed(unsigned max_connections);

/* Connection counts, for metrics. */
struct http_stats {
	unsigned open;     /* connections open now (refused ones included) */
	unsigned admitted; /* of those, admitted (at most max_connections) */
	unsigned peak;     /* most open at once since the start */
	unsigned max;      /* max_connections */
	uint64_t refused;  /* connections refused with 503 since the start */
};

/* Bounds; a zero field takes the default named above. */
struct http_limits {
	size_t max_body;
	unsigned max_connections; /* admitted at once (HTTP_MAX_CONNECTIONS) */
	unsigned conn_timeout_s;
	unsigned max_per_ip; /* connections from one address; 0: no limit */
	size_t conn_memory;
	/* HTTPS: a gnutls_certificate_retrieve_function2 (tls.h) that answers
	 * each handshake's certificate, and the GnuTLS priority string; NULL:
	 * plain HTTP. */
	void *tls_cert_callback;
	const char *tls_priorities;
};

/* What one request came to, for metrics and access logs. status is 0 when no
 * answer was sent (MHD refused the request itself, the client went away, or
 * the server was shutting down). route is the label the handler set, or NULL.
 * All pointers are borrowed for the call only. */
struct http_done_info {
	const char *method;
	const char *path;
	const char *route;
	const char *peer;
	int status;
	int64_t duration_ns; /* monotonic, first byte of the request to done */
	size_t body_in, body_out;
};

struct http_callbacks {
	/* Called once per complete request; required. */
	void (*handle)(struct http_request *req, void *ctx);
	/* Called when a deferred request's client has gone, or the server is
	 * being freed while the request is unanswered; may be NULL. */
	void (*gone)(struct http_request *req, void *ctx);
	/* Called when MHD is done with a request; may be NULL. */
	void (*done)(const struct http_done_info *info, void *ctx);
	void *ctx;
	/* The bound on the body of a request to method and path (the target up
	 * to '?'), asked once its headers are in; 0 means lim.max_body. May be
	 * NULL: every route gets lim.max_body. Lets one route (a fleet file)
	 * take more than the general bound without raising it for all. */
	size_t (*max_body_for)(const char *method, const char *path, void *ctx);
};

/* Starts a server listening on addr: "127.0.0.1:7400", "[::1]:7400",
 * "localhost:7400", or ":7400" (every address, IPv6 and IPv4). Port 0 picks
 * a free port (see http_server_port). lim may be NULL for the defaults; cb is
 * copied. Errors: SL_EINVAL for a bad address (message says what and a hint
 * the accepted forms), SL_EIO when the socket cannot be bound (with the
 * system's reason), SL_ELIMIT when the process's file descriptor limit
 * (RLIMIT_NOFILE, `ulimit -n`) is below http_fds_needed(max_connections)
 * or max_connections is above HTTP_MAX_CONNECTIONS_LIMIT (the hint says
 * what to raise or lower), SL_ENOMEM. */
enum sl_err http_server_new(const char *addr, const struct http_limits *lim,
			    const struct http_callbacks *cb,
			    struct http_server **out, struct sl_diag *d) SL_MUST_USE;

/* Stops listening, closes every connection and frees the server. Each request
 * handed to the handler and not yet answered first gets the gone callback;
 * after this returns no request pointer is valid (answering one is a bug).
 * NULL is allowed. */
void http_server_free(struct http_server *s);

/* The file descriptor to poll for readability (an epoll set); stable for the
 * server's life. */
int http_server_fd(const struct http_server *s);

/* Milliseconds the owner may wait before calling http_server_run even with
 * nothing readable; -1 means no limit. Call it before each wait: it also
 * starts watching for hang-ups the requests deferred since the last one. */
int http_server_timeout_ms(struct http_server *s);

/* Accepts, reads, answers and closes whatever is ready, calling the
 * callbacks; never blocks. SL_EIO if MHD fails (should not happen). */
enum sl_err http_server_run(struct http_server *s) SL_MUST_USE;

/* The port actually bound (useful after port 0). */
uint16_t http_server_port(const struct http_server *s);

/* Open connections now (suspended and refused ones included). */
unsigned http_server_connections(const struct http_server *s);

/* Connection counts now (see struct http_stats). */
void http_server_stats(const struct http_server *s, struct http_stats *out);

/* Requests handed to the handler and not answered yet. */
size_t http_server_pending(const struct http_server *s);

/* ---- the request (valid from the handler call until answered) ---- */

/* "GET", "POST", ... as sent. */
const char *http_request_method(const struct http_request *r);
/* The path as sent, without the query; percent-encoding is kept so that an
 * encoded '/' cannot change how the path splits. */
const char *http_request_path(const struct http_request *r);
/* The raw query string after '?', "" if none. */
const char *http_request_query(const struct http_request *r);
/* A query parameter, percent-decoded by MHD; "" for a bare `?flag`; NULL if
 * absent. The first one wins when repeated. */
const char *http_request_param(const struct http_request *r, const char *name);
/* A request header by case-insensitive name; NULL if absent. */
const char *http_request_header(const struct http_request *r, const char *name);
/* The body (NUL-terminated for convenience; may contain NULs) and its length. */
const char *http_request_body(const struct http_request *r, size_t *len);
/* "127.0.0.1:53412" or "[::1]:53412". */
const char *http_request_peer(const struct http_request *r);
/* True once the client of a deferred request has gone. */
int http_request_gone(const struct http_request *r);
/* Labels the request for metrics ("lease_create"); label is borrowed and must
 * outlive the request (use string literals). */
void http_request_set_route(struct http_request *r, const char *label);
/* A pointer the owner may keep with the request (NULL at first). */
void http_request_set_user(struct http_request *r, void *user);
void *http_request_user(const struct http_request *r);

/* ---- answering (each consumes the request's one answer) ---- */

/* Adds a header to the answer to come (name and value copied). SL_ELIMIT past
 * HTTP_MAX_RESPONSE_HEADERS; SL_EINVAL for CR or LF in either. */
enum sl_err http_response_header(struct http_request *r, const char *name,
				 const char *value) SL_MUST_USE;

/* Answers with status and body (copied; may be NULL with len 0) of
 * content_type (NULL for none). r may be freed by this call: answering twice
 * is a bug. A gone client gets nothing (the call just frees r). If the answer
 * cannot be built (out of memory) the connection is closed instead. */
void http_respond(struct http_request *r, int status, const char *content_type,
		  const char *body, size_t len);

/* Answers with body encoded compactly as application/json (borrowed). */
void http_respond_json(struct http_request *r, int status, const json_t *body);

/* Answers with the JSON error for e: status sl_err_http_status(e), code
 * sl_err_code(e), message (NULL: sl_err_message(e)) and hint (NULL: ""). */
void http_respond_error(struct http_request *r, enum sl_err e,
			const char *message, const char *hint);

/* http_respond_error with a diag's message and hint (empty message: the
 * default one). */
void http_respond_diag(struct http_request *r, enum sl_err e,
		       const struct sl_diag *d);

/* The error document alone, new reference; NULL when out of memory. */
json_t *http_error_json(enum sl_err e, const char *message, const char *hint);

/* Parses a listen address as http_server_new does, into a sockaddr for the
 * caller (ss of size sizeof(struct sockaddr_storage)); *any is set for the
 * ":PORT" form. Exposed for tests and for checking configuration early. */
enum sl_err http_parse_listen(const char *addr, void *ss, size_t *sslen,
			      int *any, struct sl_diag *d) SL_MUST_USE;

#endif

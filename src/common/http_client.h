/* http_client.h - the CLI's HTTP client for the controller's JSON API, over
 * libcurl's easy interface.
 *
 * One struct http_client per server and token; it keeps one curl handle, so
 * consecutive requests reuse the connection. Not thread-safe: one client per
 * thread. Transport problems (refused, timed out, bad URL, answer too large)
 * are errors with a diag that says what to do; any HTTP status, 4xx and 5xx
 * included, is a successful exchange whose status the caller inspects
 * (http_client_error_diag turns an error document into a diag).
 *
 * The program's main() calls http_client_global_init() once before any
 * other call, while it is still single-threaded, and
 * http_client_global_cleanup() once at the end (curl requires both). */
#ifndef SL_HTTP_CLIENT_H
#define SL_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Largest answer accepted (16 MiB); larger is SL_ELIMIT, not a truncation. */
#define HTTP_CLIENT_MAX_RESPONSE ((size_t)16 << 20)
/* Longest server URL, path and header value (token, idempotency key). */
#define HTTP_CLIENT_URL_MAX 2048u
#define HTTP_CLIENT_HEADER_MAX 1024u
/* Timeout used when a request passes 0. */
#define HTTP_CLIENT_DEFAULT_TIMEOUT_MS 30000L
/* Failover between controllers (docs/ha.md). */
#define HTTP_CLIENT_MAX_SERVERS 8          /* controllers in one --server list */
#define HTTP_CLIENT_FAILOVER_MS 20000L     /* how long a request looks for the leader */
#define HTTP_CLIENT_FAILOVER_PAUSE_MS 200L /* between rounds that found none */

struct http_client;

/* An answer: status and body (malloc'd, NUL-terminated, may be empty), and
 * the Retry-After it carried in seconds (0: none; an HTTP date counts as
 * none). */
struct http_response {
	int status;
	char *body;
	size_t len;
	long retry_after_s;
	uint64_t epoch; /* the controller's X-Suanli-Epoch (0: none, a single controller) */
};

/* A growing answer buffer for a curl handle (CURLOPT_WRITEFUNCTION
 * http_sink_write, CURLOPT_WRITEDATA the sink): refuses more than max bytes
 * (too_large) and keeps buf NUL-terminated. Zero it with max set; free buf. */
struct http_sink {
	char *buf;
	size_t len, cap, max;
	bool too_large, no_mem;
};
size_t http_sink_write(char *data, size_t size, size_t nmemb, void *arg);

/* curl_global_init; SL_EIO if curl cannot initialise. */
enum sl_err http_client_global_init(struct sl_diag *d) SL_MUST_USE;
void http_client_global_cleanup(void);

/* A client for server ("http://127.0.0.1:7400", a trailing '/' is allowed;
 * or up to HTTP_CLIENT_MAX_SERVERS of them separated by commas: the
 * controllers of one installation, of which one leads, found by failover as
 * http_client_request_ct describes)
 * with a bearer token (NULL for none; copied). SL_EINVAL for a URL that is not
 * http:// or https://, or a token with control characters or too long;
 * SL_ENOMEM. */
/* Every client of this process (and every handle given to http_client_share)
 * verifies HTTPS servers against the CA certificates in the PEM file path
 * (NULL: the system's store) and speaks TLS 1.2 or later. SL_EINVAL when the
 * file cannot be read. Call before making clients; not thread-safe. */
enum sl_err http_client_set_ca(const char *path, struct sl_diag *d) SL_MUST_USE;

enum sl_err http_client_new(const char *server, const char *token,
			    struct http_client **out, struct sl_diag *d) SL_MUST_USE;
void http_client_free(struct http_client *c);
/* The highest controller epoch any answer carried (0: none). */
uint64_t http_client_epoch(const struct http_client *c);
/* The controller in use now (after failover, the leader found). */
const char *http_client_server(const struct http_client *c);

/* Replaces the bearer token (copied; NULL for none) and keeps the client's
 * connection: an agent switching from its join token to its node credential
 * does not open a second one. Errors as for http_client_new's token. */
enum sl_err http_client_set_token(struct http_client *c, const char *token,
				  struct sl_diag *d) SL_MUST_USE;

/* Makes another curl easy handle (a CURL *, passed as void * so that this
 * header needs no curl types) share this client's connection cache: a
 * request on either reuses an idle connection the other left open. Call it
 * after every curl_easy_reset of that handle; the handle must be removed
 * from any multi handle or cleaned up before this client is freed. Not for
 * handles in other threads. */
void http_client_share(struct http_client *c, void *easy);

/* With several controllers (or a standby's X-Suanli-Leader answer), a
 * request finds the leader by itself: see http_client.c's failover note. */
/* Sends method (GET, POST, PUT, PATCH, DELETE) to path ("/v1/leases?x=1",
 * must start with '/'), with body (JSON, sent as application/json; NULL for
 * none) and idempotency_key (NULL for none) as the Idempotency-Key header,
 * waiting at most timeout_ms in all (0: the default). On SL_OK *resp holds the
 * answer (release it with http_response_release). Errors, each with a
 * message naming the server and a hint:
 *   SL_EIO     cannot connect (refused, unreachable, no such host), timed out,
 *              or the exchange broke;
 *   SL_EINVAL  bad path, method or header value;
 *   SL_ELIMIT  the answer is larger than HTTP_CLIENT_MAX_RESPONSE;
 *   SL_ENOMEM. */
enum sl_err http_client_request(struct http_client *c, const char *method,
				const char *path, const char *body, size_t body_len,
				const char *idempotency_key, long timeout_ms,
				struct http_response *resp,
				struct sl_diag *d) SL_MUST_USE;

/* Like http_client_request with the body sent as content_type (e.g.
 * "application/octet-stream"; NULL or no body: no Content-Type). SL_EINVAL
 * also for a content type with control characters or too long. */
enum sl_err http_client_request_ct(struct http_client *c, const char *method,
				   const char *path, const char *content_type,
				   const char *body, size_t body_len,
				   const char *idempotency_key, long timeout_ms,
				   struct http_response *resp,
				   struct sl_diag *d) SL_MUST_USE;

/* Frees resp's body and zeroes it; NULL is allowed. */
void http_response_release(struct http_response *resp);

/* Reads an error document {"error": {"code", "message", "hint"}} from resp
 * into d (message and hint) and returns the sl_err whose code it names. If the
 * body is not such a document, d says "the controller answered STATUS" with
 * the start of the body, and the result is SL_EIO. */
enum sl_err http_client_error_diag(const struct http_response *resp,
				   struct sl_diag *d) SL_MUST_USE;

#endif

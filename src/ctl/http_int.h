/* http_int.h - the HTTP layer's own objects, shared by http.c (the server and
 * MHD's callbacks) and http_request.c (what a handler reads of a request and
 * the JSON answers). Private to those two files: handlers see http.h only. */
#ifndef SL_HTTP_INT_H
#define SL_HTTP_INT_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "http.h"

#define METHOD_MAX 32

struct field {
	char *name; /* name\0value\0 in one allocation */
	const char *value;
};

struct http_request {
	struct http_server *srv;
	struct http_request *prev, *next; /* every allocated request */
	struct http_request *wnext; /* in the server's to_watch list */
	struct MHD_Connection *conn;
	char *uri;   /* the request target as sent */
	char *path;  /* uri up to '?' */
	const char *query; /* into uri, or "" */
	char method[METHOD_MAX];
	struct field *hdrs, *params;
	size_t nhdrs, nparams;
	char *body;
	size_t body_len, body_cap;
	size_t max_body; /* this request's bound, set when its headers are in */
	uint64_t discarded;
	char peer[INET6_ADDRSTRLEN + 16];
	const char *route;
	void *user;
	int64_t start_ns;
	int fd;
	struct MHD_Response *resp;
	int status;
	size_t out_len;
	struct field rhdrs[HTTP_MAX_RESPONSE_HEADERS];
	unsigned nrhdrs;
	unsigned started : 1, too_large : 1, dispatched : 1, answered : 1,
		suspended : 1, watched : 1, gone : 1, completed : 1, queued : 1,
		close_only : 1, /* answer by closing (no response could be made) */
		over : 1,       /* on a connection past max_connections */
		route_refused : 1, /* answered by answer_refused */
		to_watch : 1;   /* in the server's to_watch list */
};

struct http_server {
	struct MHD_Daemon *mhd;
	int ep; /* outer epoll set: MHD's set, the listener, watched sockets */
	int lfd;   /* the listening socket (ours, not MHD's) */
	int spare; /* a descriptor given up to accept-and-refuse at EMFILE */
	unsigned hard; /* max_connections + refusal reserve: MHD's own limit */
	unsigned open, admitted, peak;
	uint64_t refused;
	uint16_t port;
	struct http_callbacks cb;
	struct http_limits lim;
	struct http_request *reqs;
	struct http_request *to_watch; /* suspended since the owner last waited */
	size_t pending;
	int closing;
};

/* Answers r with a JSON error at an explicit status (431 has no sl_err). */
void http_respond_error_status(struct http_request *r, int status, enum sl_err e,
			       const char *message, const char *hint);

#endif

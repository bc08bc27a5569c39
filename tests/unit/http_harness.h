/* http_harness.h - what the HTTP server tests share: a test server whose
 * handler's behaviour the path picks, the owner's loop driven from the test
 * thread, and clients in other threads (raw sockets where the bytes matter,
 * the libcurl client where the API does). Functions are static inline so each
 * test uses what it needs.
 *
 * Outcomes never depend on timing: the test loop runs until a condition holds
 * and fails after a generous deadline; client threads block on sockets with a
 * receive timeout that is also only a failure bound. Client threads never
 * assert (cmocka cannot fail from another thread); they record what they saw
 * and the main thread asserts after joining them. */
#ifndef SL_HTTP_HARNESS_H
#define SL_HTTP_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "http.h"
#include "http_client.h"

/* Failure bounds only. */
#define LOOP_DEADLINE_S 20
#define CLIENT_RCV_TIMEOUT_S 20
#define MAX_HELD 128
#define RESP_MAX 65536

/* ---- the server side: a handler whose behaviour the path picks ---- */

struct held {
	struct http_request *req;
	int turns; /* answer after this many loop turns; -1: only when told */
};

struct tserver {
	struct http_server *srv;
	struct held held[MAX_HELD];
	int nheld;
	int handled;
	int gone_calls;
	int gone_answers_in_cb; /* the gone callback answers */
	int saw_gone_flag;
	int done_calls;
	int done_status[MAX_HELD];
	const char *done_route[MAX_HELD];
	int notify_fd; /* a byte is written here for each held request */
	size_t put_echo_max; /* nonzero: the body bound of PUT /echo (max_body_for) */
};

static inline void hold(struct tserver *t, struct http_request *r, int turns)
{
	assert_true(t->nheld < MAX_HELD);
	t->held[t->nheld].req = r;
	t->held[t->nheld].turns = turns;
	t->nheld++;
	if (t->notify_fd >= 0) {
		char b = 'h';
		assert_int_equal(write(t->notify_fd, &b, 1), 1);
	}
}

static inline void unhold(struct tserver *t, struct http_request *r)
{
	for (int i = 0; i < t->nheld; i++) {
		if (t->held[i].req == r) {
			t->held[i] = t->held[--t->nheld];
			return;
		}
	}
	fail_msg("request not held");
}

static inline void answer_held(struct http_request *r)
{
	char body[128];
	snprintf(body, sizeof(body), "{\"deferred\":\"%s\"}", http_request_path(r));
	http_respond(r, 200, "application/json", body, strlen(body));
}

static inline void handle(struct http_request *r, void *ctx)
{
	struct tserver *t = ctx;
	const char *path = http_request_path(r);
	t->handled++;
	if (strcmp(path, "/echo") == 0) {
		size_t len;
		const char *body = http_request_body(r, &len);
		const char *a = http_request_param(r, "a");
		const char *flag = http_request_param(r, "flag");
		const char *x = http_request_header(r, "x-test");
		json_t *j = json_pack("{s:s,s:s,s:s,s:s?,s:s?,s:s?,s:I,s:s%,s:s}", "method",
				      http_request_method(r), "path", path, "query",
				      http_request_query(r), "a", a, "flag", flag, "x", x,
				      "len", (json_int_t)len, "body", body, len, "peer",
				      http_request_peer(r));
		assert_non_null(j);
		http_request_set_route(r, "echo");
		assert_int_equal(http_response_header(r, "X-Echo", "yes"), SL_OK);
		http_respond_json(r, 200, j);
		json_decref(j);
	} else if (strcmp(path, "/error") == 0) {
		http_request_set_route(r, "error");
		assert_int_equal(http_response_header(r, "Retry-After", "5"), SL_OK);
		assert_int_equal(http_response_header(r, "Bad\r\nHeader", "x"), SL_EINVAL);
		assert_int_equal(http_response_header(r, "X", "a\nb"), SL_EINVAL);
		http_respond_error(r, SL_ENOSPACE, "no node has 9 free GPUs",
				   "ask for 8 or fewer per node");
	} else if (strcmp(path, "/diag") == 0) {
		struct sl_diag d;
		sl_diag_clear(&d);
		http_respond_diag(r, SL_ENOTFOUND, &d);
	} else if (strncmp(path, "/defer/", 7) == 0) {
		http_request_set_route(r, "defer");
		hold(t, r, atoi(path + 7));
	} else if (strcmp(path, "/hold") == 0) {
		http_request_set_route(r, "hold");
		hold(t, r, -1);
	} else {
		http_respond_error(r, SL_ENOTFOUND, NULL, NULL);
	}
}

static inline void gone(struct http_request *r, void *ctx)
{
	struct tserver *t = ctx;
	t->gone_calls++;
	t->saw_gone_flag += http_request_gone(r);
	if (t->gone_answers_in_cb) {
		unhold(t, r);
		answer_held(r);
	}
}

static inline void done(const struct http_done_info *info, void *ctx)
{
	struct tserver *t = ctx;
	if (t->done_calls < MAX_HELD) {
		t->done_status[t->done_calls] = info->status;
		t->done_route[t->done_calls] = info->route;
	}
	t->done_calls++;
	assert_true(info->duration_ns >= 0);
	assert_non_null(info->method);
}

static inline size_t body_for(const char *method, const char *path, void *ctx)
{
	const struct tserver *t = ctx;
	if (t->put_echo_max && strcmp(method, "PUT") == 0 && strcmp(path, "/echo") == 0)
		return t->put_echo_max;
	return 0;
}

static inline void tserver_start(struct tserver *t, const struct http_limits *lim)
{
	struct http_callbacks cb = {handle, gone, done, t, body_for};
	struct sl_diag d;
	memset(t, 0, sizeof(*t));
	t->notify_fd = -1;
	sl_diag_clear(&d);
	enum sl_err e = http_server_new("127.0.0.1:0", lim, &cb, &t->srv, &d);
	if (e != SL_OK)
		fail_msg("http_server_new: %s", d.msg);
	assert_true(http_server_port(t->srv) > 0);
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One turn of the owner's loop: wait for the fd (bounded), run the server,
 * then answer held requests whose turn came. */
static inline void loop_turn(struct tserver *t)
{
	int to = http_server_timeout_ms(t->srv);
	struct pollfd p = {.fd = http_server_fd(t->srv), .events = POLLIN};
	if (to < 0 || to > 10)
		to = 10;
	(void)poll(&p, 1, to);
	assert_int_equal(http_server_run(t->srv), SL_OK);
	for (int i = 0; i < t->nheld;) {
		if (t->held[i].turns > 0 && --t->held[i].turns == 0) {
			struct http_request *r = t->held[i].req;
			t->held[i] = t->held[--t->nheld];
			answer_held(r);
		} else {
			i++;
		}
	}
}

typedef int (*pred_fn)(struct tserver *t, void *arg);

static inline void loop_until(struct tserver *t, pred_fn pred, void *arg, const char *what)
{
	int64_t deadline = mono_ns() + (int64_t)LOOP_DEADLINE_S * 1000000000;
	while (!pred(t, arg)) {
		if (mono_ns() > deadline)
			fail_msg("timed out waiting for %s", what);
		loop_turn(t);
	}
}

static inline int flag_set(struct tserver *t, void *arg)
{
	(void)t;
	return atomic_load((atomic_int *)arg) != 0;
}

static inline int nheld_is(struct tserver *t, void *arg)
{
	return t->nheld == *(int *)arg;
}

static inline int gone_is(struct tserver *t, void *arg)
{
	return t->gone_calls == *(int *)arg;
}

static inline int done_is(struct tserver *t, void *arg)
{
	return t->done_calls == *(int *)arg;
}

static inline int conns_is(struct tserver *t, void *arg)
{
	return http_server_connections(t->srv) == *(unsigned *)arg;
}

/* ---- raw socket clients ---- */

static inline int connect_to(uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct timeval tv = {.tv_sec = CLIENT_RCV_TIMEOUT_S};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static inline int send_all(int fd, const char *b, size_t n)
{
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads until EOF; returns bytes read (the buffer is NUL-terminated). */
static inline size_t recv_all(int fd, char *b, size_t cap)
{
	size_t n = 0;
	while (n + 1 < cap) {
		ssize_t r = recv(fd, b + n, cap - 1 - n, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	b[n] = '\0';
	return n;
}

static inline int resp_status(const char *resp)
{
	int st = 0;
	if (sscanf(resp, "HTTP/1.%*d %d", &st) != 1)
		return 0;
	return st;
}

static inline const char *resp_body(const char *resp)
{
	const char *p = strstr(resp, "\r\n\r\n");
	return p ? p + 4 : "";
}

/* A client that sends req and reads the whole answer (Connection: close). If
 * wait_fd >= 0 it instead waits for a byte there after sending and hangs up
 * without reading. */
struct raw_job {
	uint16_t port;
	const char *req;
	size_t req_len;
	int wait_fd;
	int shut_wr; /* half-close after sending, then read */
	int no_read; /* close right after sending */
	char resp[RESP_MAX];
	size_t resp_len;
	int failed, send_failed;
	atomic_int done;
};

static inline void *raw_job_run(void *arg)
{
	struct raw_job *j = arg;
	int fd = connect_to(j->port);
	if (fd < 0) {
		j->failed = 1;
	} else if (send_all(fd, j->req, j->req_len ? j->req_len : strlen(j->req)) < 0) {
		/* the server may refuse mid-request (a flood); read what it said */
		j->send_failed = 1;
		j->resp_len = recv_all(fd, j->resp, sizeof(j->resp));
	} else if (j->no_read) {
		/* nothing to wait for */
	} else if (j->wait_fd >= 0) {
		char b;
		if (read(j->wait_fd, &b, 1) != 1)
			j->failed = 1;
	} else {
		/* the server may already have closed: then this fails, harmlessly */
		if (j->shut_wr)
			(void)shutdown(fd, SHUT_WR);
		j->resp_len = recv_all(fd, j->resp, sizeof(j->resp));
	}
	if (fd >= 0)
		close(fd);
	atomic_store(&j->done, 1);
	return NULL;
}

static inline struct raw_job *raw_start(pthread_t *th, uint16_t port, const char *req,
				 size_t len, int wait_fd)
{
	struct raw_job *j = calloc(1, sizeof(*j));
	assert_non_null(j);
	j->port = port;
	j->req = req;
	j->req_len = len;
	j->wait_fd = wait_fd;
	assert_int_equal(pthread_create(th, NULL, raw_job_run, j), 0);
	return j;
}

/* Sends req on a fresh connection while the loop runs; returns the answer. */
/* mode: 0 send and read the answer; 1 also half-close after sending (for a
 * server that closes mid-request); 2 send and close without reading
 * (garbage with no answer to wait for: MHD 0.9.75 in edge-triggered epoll can
 * miss a half-close that arrives together with the data, and then holds the
 * connection until the idle timeout). */
static inline struct raw_job *raw_exchange_ex(struct tserver *t, const char *req,
				       size_t len, int mode)
{
	int shut_wr = mode == 1;
	pthread_t th;
	struct raw_job *j = calloc(1, sizeof(*j));
	assert_non_null(j);
	j->port = http_server_port(t->srv);
	j->req = req;
	j->req_len = len;
	j->wait_fd = -1;
	j->shut_wr = shut_wr;
	j->no_read = mode == 2;
	assert_int_equal(pthread_create(&th, NULL, raw_job_run, j), 0);
	char what[96];
	snprintf(what, sizeof(what), "a raw client sending %zu bytes: %.20s",
		 len ? len : strlen(req), req);
	loop_until(t, flag_set, &j->done, what);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_false(j->failed);
	if (!shut_wr)
		assert_false(j->send_failed);
	return j;
}

static inline struct raw_job *raw_exchange(struct tserver *t, const char *req, size_t len)
{
	return raw_exchange_ex(t, req, len, 0);
}

static inline void assert_alive(struct tserver *t)
{
	struct raw_job *j = raw_exchange(
		t, "GET /echo?a=ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 0);
	assert_int_equal(resp_status(j->resp), 200);
	assert_non_null(strstr(resp_body(j->resp), "\"a\":\"ok\""));
	free(j);
}

/* Checks an error document's shape and code. */
static inline void assert_error_doc(const char *body, const char *code)
{
	json_error_t je;
	json_t *doc = json_loads(body, 0, &je);
	if (!doc)
		fail_msg("not JSON: %s", body);
	json_t *err = json_object_get(doc, "error");
	assert_true(json_is_object(err));
	assert_int_equal(json_object_size(doc), 1);
	assert_int_equal(json_object_size(err), 3);
	assert_string_equal(json_string_value(json_object_get(err, "code")), code);
	assert_true(json_is_string(json_object_get(err, "message")));
	assert_true(strlen(json_string_value(json_object_get(err, "message"))) > 0);
	assert_true(json_is_string(json_object_get(err, "hint")));
	json_decref(doc);
}

/* ---- libcurl client jobs ---- */

struct curl_job {
	const char *server, *token, *method, *path, *body, *idem;
	long timeout_ms;
	enum sl_err err;
	struct sl_diag d;
	struct http_response resp;
	atomic_int done;
};

static inline void *curl_job_run(void *arg)
{
	struct curl_job *j = arg;
	struct http_client *c = NULL;
	sl_diag_clear(&j->d);
	j->err = http_client_new(j->server, j->token, &c, &j->d);
	if (j->err == SL_OK)
		j->err = http_client_request(c, j->method, j->path, j->body,
					     j->body ? strlen(j->body) : 0, j->idem,
					     j->timeout_ms, &j->resp, &j->d);
	http_client_free(c);
	atomic_store(&j->done, 1);
	return NULL;
}

static inline void curl_exchange(struct tserver *t, struct curl_job *j)
{
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, curl_job_run, j), 0);
	if (t)
		loop_until(t, flag_set, &j->done, "the curl client");
	assert_int_equal(pthread_join(th, NULL), 0);
}

static inline int global_setup(void **state)
{
	(void)state;
	struct sl_diag d;
	return http_client_global_init(&d) == SL_OK ? 0 : -1;
}

static inline int global_teardown(void **state)
{
	(void)state;
	http_client_global_cleanup();
	return 0;
}

#endif

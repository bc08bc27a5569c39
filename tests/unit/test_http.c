/* test_http.c - the HTTP server layer driven from the test's own thread, as
 * the controller drives it, with clients in other threads (raw sockets where
 * the bytes matter, the libcurl client where the API does).
 *
 * Outcomes never depend on timing: the test loop runs until a condition holds
 * and fails after a generous deadline; client threads block on sockets with a
 * receive timeout that is also only a failure bound. Client threads never
 * assert (cmocka cannot fail from another thread); they record what they saw
 * and the main thread asserts after joining them. */
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
};

static void hold(struct tserver *t, struct http_request *r, int turns)
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

static void unhold(struct tserver *t, struct http_request *r)
{
	for (int i = 0; i < t->nheld; i++) {
		if (t->held[i].req == r) {
			t->held[i] = t->held[--t->nheld];
			return;
		}
	}
	fail_msg("request not held");
}

static void answer_held(struct http_request *r)
{
	char body[128];
	snprintf(body, sizeof(body), "{\"deferred\":\"%s\"}", http_request_path(r));
	http_respond(r, 200, "application/json", body, strlen(body));
}

static void handle(struct http_request *r, void *ctx)
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

static void gone(struct http_request *r, void *ctx)
{
	struct tserver *t = ctx;
	t->gone_calls++;
	t->saw_gone_flag += http_request_gone(r);
	if (t->gone_answers_in_cb) {
		unhold(t, r);
		answer_held(r);
	}
}

static void done(const struct http_done_info *info, void *ctx)
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

static void tserver_start(struct tserver *t, const struct http_limits *lim)
{
	struct http_callbacks cb = {handle, gone, done, t};
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
static void loop_turn(struct tserver *t)
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

static void loop_until(struct tserver *t, pred_fn pred, void *arg, const char *what)
{
	int64_t deadline = mono_ns() + (int64_t)LOOP_DEADLINE_S * 1000000000;
	while (!pred(t, arg)) {
		if (mono_ns() > deadline)
			fail_msg("timed out waiting for %s", what);
		loop_turn(t);
	}
}

static int flag_set(struct tserver *t, void *arg)
{
	(void)t;
	return atomic_load((atomic_int *)arg) != 0;
}

static int nheld_is(struct tserver *t, void *arg)
{
	return t->nheld == *(int *)arg;
}

static int gone_is(struct tserver *t, void *arg)
{
	return t->gone_calls == *(int *)arg;
}

static int done_is(struct tserver *t, void *arg)
{
	return t->done_calls == *(int *)arg;
}

static int conns_is(struct tserver *t, void *arg)
{
	return http_server_connections(t->srv) == *(unsigned *)arg;
}

/* ---- raw socket clients ---- */

static int connect_to(uint16_t port)
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

static int send_all(int fd, const char *b, size_t n)
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
static size_t recv_all(int fd, char *b, size_t cap)
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

static int resp_status(const char *resp)
{
	int st = 0;
	if (sscanf(resp, "HTTP/1.%*d %d", &st) != 1)
		return 0;
	return st;
}

static const char *resp_body(const char *resp)
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

static void *raw_job_run(void *arg)
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

static struct raw_job *raw_start(pthread_t *th, uint16_t port, const char *req,
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
static struct raw_job *raw_exchange_ex(struct tserver *t, const char *req,
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
	char what[64];
	snprintf(what, sizeof(what), "a raw client sending %zu bytes: %.20s",
		 len ? len : strlen(req), req);
	loop_until(t, flag_set, &j->done, what);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_false(j->failed);
	if (!shut_wr)
		assert_false(j->send_failed);
	return j;
}

static struct raw_job *raw_exchange(struct tserver *t, const char *req, size_t len)
{
	return raw_exchange_ex(t, req, len, 0);
}

static void assert_alive(struct tserver *t)
{
	struct raw_job *j = raw_exchange(
		t, "GET /echo?a=ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 0);
	assert_int_equal(resp_status(j->resp), 200);
	assert_non_null(strstr(resp_body(j->resp), "\"a\":\"ok\""));
	free(j);
}

/* Checks an error document's shape and code. */
static void assert_error_doc(const char *body, const char *code)
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

static void *curl_job_run(void *arg)
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

static void curl_exchange(struct tserver *t, struct curl_job *j)
{
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, curl_job_run, j), 0);
	if (t)
		loop_until(t, flag_set, &j->done, "the curl client");
	assert_int_equal(pthread_join(th, NULL), 0);
}

/* ================= tests ================= */

static void test_listen_addresses(void **state)
{
	(void)state;
	static const struct {
		const char *addr;
		enum sl_err want;
		int any;
		const char *msg;
	} cases[] = {
		{"127.0.0.1:7400", SL_OK, 0, NULL},
		{"[::1]:7400", SL_OK, 0, NULL},
		{":7400", SL_OK, 1, NULL},
		{"localhost:0", SL_OK, 0, NULL},
		{"0.0.0.0:65535", SL_OK, 0, NULL},
		{"", SL_EINVAL, 0, "empty"},
		{"127.0.0.1", SL_EINVAL, 0, "no port"},
		{"127.0.0.1:", SL_EINVAL, 0, "port must be a number"},
		{"127.0.0.1:65536", SL_EINVAL, 0, "port must be a number"},
		{"127.0.0.1:-1", SL_EINVAL, 0, "port must be a number"},
		{"127.0.0.1:80x", SL_EINVAL, 0, "port must be a number"},
		{"::1:7400", SL_EINVAL, 0, "brackets"},
		{"[::1]7400", SL_EINVAL, 0, "expected ':PORT'"},
		{"[::1:7400", SL_EINVAL, 0, "missing ']'"},
		{"[127.0.0.1]:7400", SL_EINVAL, 0, "not an IPv6 address"},
		{"example.com:7400", SL_EINVAL, 0, "not an IPv4 address"},
		{"300.1.1.1:7400", SL_EINVAL, 0, "not an IPv4 address"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss;
		size_t len = 0;
		int any = -1;
		struct sl_diag d;
		sl_diag_clear(&d);
		enum sl_err e = http_parse_listen(cases[i].addr, &ss, &len, &any, &d);
		if (e != cases[i].want)
			fail_msg("%s: got %s", cases[i].addr, sl_err_code(e));
		if (e == SL_OK) {
			assert_int_equal(any, cases[i].any);
			assert_true(len > 0);
		} else {
			if (!strstr(d.msg, cases[i].msg))
				fail_msg("%s: message '%s' lacks '%s'", cases[i].addr, d.msg,
					 cases[i].msg);
			assert_non_null(strstr(d.hint, "127.0.0.1:7400"));
		}
	}
	char longer[HTTP_LISTEN_MAX + 10];
	memset(longer, '1', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	struct sockaddr_storage ss;
	size_t len;
	int any;
	assert_int_equal(http_parse_listen(longer, &ss, &len, &any, NULL), SL_EINVAL);
}

static void test_new_errors(void **state)
{
	(void)state;
	struct tserver t;
	struct http_server *s2 = NULL;
	struct http_callbacks cb = {handle, NULL, NULL, &t};
	struct sl_diag d;
	char addr[64];

	tserver_start(&t, NULL);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", http_server_port(t.srv));
	sl_diag_clear(&d);
	assert_int_equal(http_server_new(addr, NULL, &cb, &s2, &d), SL_EIO);
	assert_null(s2);
	assert_non_null(strstr(d.msg, "in use"));
	assert_non_null(strstr(d.hint, "--listen"));
	sl_diag_clear(&d);
	assert_int_equal(http_server_new("nowhere", NULL, &cb, &s2, &d), SL_EINVAL);
	struct http_callbacks none = {NULL, NULL, NULL, NULL};
	assert_int_equal(http_server_new("127.0.0.1:0", NULL, &none, &s2, &d), SL_EINVAL);
	http_server_free(t.srv);
	http_server_free(NULL);
}

static void test_immediate_answers(void **state)
{
	(void)state;
	struct tserver t;
	char server[64];
	tserver_start(&t, NULL);
	snprintf(server, sizeof(server), "http://127.0.0.1:%u/", http_server_port(t.srv));

	/* GET with a query, via the libcurl client */
	struct curl_job j = {.server = server, .token = "sl_tok", .method = "GET",
			     .path = "/echo?a=1%202&flag&a=second"};
	curl_exchange(&t, &j);
	if (j.err != SL_OK)
		fail_msg("client: %s", j.d.msg);
	assert_int_equal(j.resp.status, 200);
	json_t *doc = json_loads(j.resp.body, 0, NULL);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "method")), "GET");
	assert_string_equal(json_string_value(json_object_get(doc, "path")), "/echo");
	assert_string_equal(json_string_value(json_object_get(doc, "query")),
			    "a=1%202&flag&a=second");
	assert_string_equal(json_string_value(json_object_get(doc, "a")), "1 2");
	assert_string_equal(json_string_value(json_object_get(doc, "flag")), "");
	assert_true(json_is_null(json_object_get(doc, "x")));
	assert_int_equal(json_integer_value(json_object_get(doc, "len")), 0);
	assert_true(strncmp(json_string_value(json_object_get(doc, "peer")),
			    "127.0.0.1:", 10) == 0);
	json_decref(doc);
	http_response_release(&j.resp);

	/* POST with a body and an Idempotency-Key */
	struct curl_job p = {.server = server, .method = "POST", .path = "/echo",
			     .body = "{\"gpus\":8}", .idem = "key-1"};
	curl_exchange(&t, &p);
	assert_int_equal(p.err, SL_OK);
	assert_int_equal(p.resp.status, 200);
	doc = json_loads(p.resp.body, 0, NULL);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "method")), "POST");
	assert_string_equal(json_string_value(json_object_get(doc, "body")), "{\"gpus\":8}");
	json_decref(doc);
	http_response_release(&p.resp);

	/* headers, raw: case-insensitive lookup, extra response header */
	struct raw_job *r = raw_exchange(
		&t, "GET /echo HTTP/1.1\r\nHost: x\r\nX-TEST: hello\r\nConnection: close\r\n\r\n", 0);
	assert_int_equal(resp_status(r->resp), 200);
	assert_non_null(strstr(r->resp, "X-Echo: yes\r\n"));
	assert_non_null(strstr(r->resp, "Content-Type: application/json\r\n"));
	assert_non_null(strstr(resp_body(r->resp), "\"x\":\"hello\""));
	free(r);

	assert_int_equal(t.handled, 3);
	int want = 3;
	loop_until(&t, done_is, &want, "done callbacks");
	for (int i = 0; i < 3; i++) {
		assert_int_equal(t.done_status[i], 200);
		assert_string_equal(t.done_route[i], "echo");
	}
	assert_int_equal(http_server_pending(t.srv), 0);
	http_server_free(t.srv);
}

static void test_error_shape(void **state)
{
	(void)state;
	struct tserver t;
	tserver_start(&t, NULL);
	struct raw_job *r = raw_exchange(
		&t, "GET /error HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 0);
	assert_int_equal(resp_status(r->resp), 409);
	assert_non_null(strstr(r->resp, "Retry-After: 5\r\n"));
	assert_string_equal(resp_body(r->resp),
			    "{\"error\":{\"code\":\"no_capacity\",\"message\":\"no node "
			    "has 9 free GPUs\",\"hint\":\"ask for 8 or fewer per node\"}}");
	free(r);

	r = raw_exchange(&t, "GET /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 0);
	assert_int_equal(resp_status(r->resp), 404);
	assert_string_equal(resp_body(r->resp),
			    "{\"error\":{\"code\":\"not_found\",\"message\":\"not found\","
			    "\"hint\":\"\"}}");
	free(r);

	r = raw_exchange(&t, "GET /diag HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 0);
	assert_int_equal(resp_status(r->resp), 404);
	assert_error_doc(resp_body(r->resp), "not_found");
	free(r);
	http_server_free(t.srv);

	/* text that is not UTF-8 still makes a valid document */
	json_t *doc = http_error_json(SL_EINVAL, "bad \xff\xfe name", NULL);
	assert_non_null(doc);
	char *s = json_dumps(doc, JSON_COMPACT);
	assert_string_equal(s, "{\"error\":{\"code\":\"invalid\",\"message\":\"bad ?? "
			       "name\",\"hint\":\"\"}}");
	free(s);
	json_decref(doc);
}

static void test_deferred_answers(void **state)
{
	(void)state;
	struct tserver t;
	pthread_t th[3];
	struct raw_job *j[3];
	static const char *const reqs[3] = {
		"GET /defer/3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"GET /defer/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"POST /defer/2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
		"Content-Length: 2\r\n\r\n{}",
	};
	tserver_start(&t, NULL);
	for (int i = 0; i < 3; i++)
		j[i] = raw_start(&th[i], http_server_port(t.srv), reqs[i], 0, -1);
	int want = 3;
	loop_until(&t, done_is, &want, "three deferred answers");
	for (int i = 0; i < 3; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(resp_status(j[i]->resp), 200);
		char expect[64];
		snprintf(expect, sizeof(expect), "{\"deferred\":\"/defer/%c\"}", reqs[i][i == 2 ? 12 : 11]);
		assert_string_equal(resp_body(j[i]->resp), expect);
		free(j[i]);
	}
	assert_int_equal(t.handled, 3);
	assert_int_equal(t.nheld, 0);
	assert_int_equal(http_server_pending(t.srv), 0);
	assert_int_equal(t.gone_calls, 0);
	http_server_free(t.srv);
}

/* The client hangs up while its request waits. mode 0: the owner answers
 * after the gone callback; 1: the gone callback answers; 2: the owner answers
 * first and the client hangs up before the answer is sent. */
static void gone_case(int mode)
{
	struct tserver t;
	pthread_t th;
	int notify[2];
	int one = 1;
	tserver_start(&t, NULL);
	assert_int_equal(pipe(notify), 0);
	t.notify_fd = mode == 2 ? -1 : notify[1];
	t.gone_answers_in_cb = mode == 1;
	struct raw_job *j = raw_start(&th, http_server_port(t.srv),
				      "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n", 0, notify[0]);
	if (mode == 2) {
		loop_until(&t, nheld_is, &one, "the request to be held");
		struct http_request *r = t.held[0].req;
		t.nheld = 0;
		answer_held(r);
		assert_int_equal(http_server_pending(t.srv), 0);
		/* let the client go before the loop sends anything */
		char b = 'g';
		assert_int_equal(write(notify[1], &b, 1), 1);
		assert_int_equal(pthread_join(th, NULL), 0);
		loop_until(&t, done_is, &one, "the answered request to finish");
		assert_int_equal(t.gone_calls, 0);
	} else {
		loop_until(&t, gone_is, &one, "the gone callback");
		assert_int_equal(pthread_join(th, NULL), 0);
		assert_int_equal(t.saw_gone_flag, 1);
		if (mode == 0) {
			assert_int_equal(t.nheld, 1);
			assert_int_equal(http_server_pending(t.srv), 1);
			struct http_request *r = t.held[0].req;
			t.nheld = 0;
			/* MHD completes the connection without the answer; the
			 * request stays valid until answered. */
			loop_until(&t, done_is, &one, "the connection to close");
			assert_true(http_request_gone(r));
			assert_int_equal(http_server_pending(t.srv), 1);
			answer_held(r);
		} else {
			loop_until(&t, done_is, &one, "the connection to close");
		}
		assert_int_equal(t.done_status[0], 0);
	}
	assert_false(j->failed);
	assert_int_equal(http_server_pending(t.srv), 0);
	unsigned zero = 0;
	loop_until(&t, conns_is, &zero, "no connections");
	assert_alive(&t);
	http_server_free(t.srv);
	close(notify[0]);
	close(notify[1]);
	free(j);
}

static void test_gone_then_answer(void **state)
{
	(void)state;
	gone_case(0);
}

static void test_gone_answered_in_callback(void **state)
{
	(void)state;
	gone_case(1);
}

static void test_answer_then_gone(void **state)
{
	(void)state;
	gone_case(2);
}

/* Freeing the server with requests unanswered: each gets the gone callback,
 * nothing leaks, and the clients see their connection close. */
static void test_free_with_pending(void **state)
{
	(void)state;
	struct tserver t;
	pthread_t th[4];
	struct raw_job *j[4];
	tserver_start(&t, NULL);
	for (int i = 0; i < 4; i++)
		j[i] = raw_start(&th[i], http_server_port(t.srv),
				 "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n", 0, -1);
	int want = 4;
	loop_until(&t, nheld_is, &want, "four held requests");
	assert_int_equal(http_server_pending(t.srv), 4);
	http_server_free(t.srv);
	assert_int_equal(t.gone_calls, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(j[i]->resp_len, 0);
		free(j[i]);
	}
}

static void test_body_limit(void **state)
{
	(void)state;
	struct tserver t;
	struct http_limits lim = {.max_body = 1000};
	char *req = malloc(4096);
	char body[1200];
	assert_non_null(req);
	memset(body, 'x', sizeof(body));
	tserver_start(&t, &lim);

	/* exactly the limit passes */
	int n = snprintf(req, 4096, "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
				    "Content-Length: 1000\r\n\r\n%.1000s", body);
	struct raw_job *r = raw_exchange(&t, req, (size_t)n);
	assert_int_equal(resp_status(r->resp), 200);
	assert_non_null(strstr(r->resp, "\"len\":1000"));
	free(r);

	/* one byte more, announced: 413 at once, handler not called */
	int handled = t.handled;
	n = snprintf(req, 4096, "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
				"Content-Length: 1001\r\n\r\n%.1001s", body);
	r = raw_exchange(&t, req, (size_t)n);
	assert_int_equal(resp_status(r->resp), 413);
	assert_error_doc(resp_body(r->resp), "too_large");
	assert_non_null(strstr(resp_body(r->resp), "larger than 1000 bytes"));
	free(r);

	/* absurd Content-Length */
	r = raw_exchange(&t, "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			     "Content-Length: 99999999999999999999999\r\n\r\n", 0);
	assert_true(resp_status(r->resp) == 413 || resp_status(r->resp) == 400);
	free(r);

	/* chunked, no length: read, dropped, 413 at the end */
	n = snprintf(req, 4096, "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
				"Transfer-Encoding: chunked\r\n\r\n"
				"258\r\n%.600s\r\n258\r\n%.600s\r\n0\r\n\r\n", body, body);
	r = raw_exchange(&t, req, (size_t)n);
	assert_int_equal(resp_status(r->resp), 413);
	assert_error_doc(resp_body(r->resp), "too_large");
	free(r);
	assert_int_equal(t.handled, handled);

	/* via the client: the 413 decodes into a diag */
	char server[64];
	snprintf(server, sizeof(server), "http://127.0.0.1:%u", http_server_port(t.srv));
	char big[1100];
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	struct curl_job c = {.server = server, .method = "POST", .path = "/echo", .body = big};
	curl_exchange(&t, &c);
	assert_int_equal(c.err, SL_OK);
	assert_int_equal(c.resp.status, 413);
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(http_client_error_diag(&c.resp, &d), SL_ELIMIT);
	assert_non_null(strstr(d.msg, "larger than 1000 bytes"));
	assert_string_equal(d.hint, "send a smaller body");
	http_response_release(&c.resp);

	assert_alive(&t);
	http_server_free(t.srv);
	free(req);
}

static void test_garbage(void **state)
{
	(void)state;
	struct tserver t;
	struct http_limits lim = {.conn_memory = 16 << 10};
	tserver_start(&t, &lim);

	/* random bytes, with NULs */
	char junk[4096];
	unsigned seed = 12345;
	for (size_t i = 0; i < sizeof(junk); i++) {
		seed = seed * 1103515245u + 12345u;
		junk[i] = (char)(seed >> 16);
	}
	struct raw_job *r = raw_exchange_ex(&t, junk, sizeof(junk), 2);
	free(r);

	static const char *const bad[] = {
		"\r\n\r\n\r\n",
		"GET\r\n\r\n",
		"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost x\r\nNo-Colon\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nabcde",
		"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = raw_exchange_ex(&t, bad[i], 0, 2);
		free(r);
	}
	r = raw_exchange(&t, "GET /%00%ff%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 0);
	assert_int_equal(resp_status(r->resp), 404);
	free(r);
	/* conflicting framing is refused before the handler */
	r = raw_exchange(&t, "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			     "Content-Length: 5\r\nContent-Length: 7\r\n\r\nabcde", 0);
	assert_int_equal(resp_status(r->resp), 400);
	assert_error_doc(resp_body(r->resp), "parse_error");
	free(r);

	/* a header flood beyond the connection's memory */
	size_t cap = 64 << 10;
	char *flood = malloc(cap);
	assert_non_null(flood);
	size_t n = (size_t)snprintf(flood, cap, "GET /echo HTTP/1.1\r\nHost: x\r\n");
	while (n + 64 < cap)
		n += (size_t)snprintf(flood + n, cap - n, "X-Flood-%zu: %s\r\n", n,
				      "aaaaaaaaaaaaaaaaaaaa");
	n += (size_t)snprintf(flood + n, cap - n, "\r\n");
	r = raw_exchange_ex(&t, flood, n, 1);
	assert_true(resp_status(r->resp) == 0 || resp_status(r->resp) >= 400);
	free(r);

	/* more headers than we keep, within memory: our 431 */
	n = (size_t)snprintf(flood, cap, "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n");
	for (int i = 0; i < 150; i++)
		n += (size_t)snprintf(flood + n, cap - n, "H%d: v\r\n", i);
	n += (size_t)snprintf(flood + n, cap - n, "\r\n");
	r = raw_exchange(&t, flood, n);
	assert_int_equal(resp_status(r->resp), 431);
	assert_error_doc(resp_body(r->resp), "too_large");
	free(r);
	free(flood);

	assert_alive(&t);
	http_server_free(t.srv);
}

/* Connections past the limit wait unserved; slowloris connections free
 * their slots when they go. */
static void test_connection_limit(void **state)
{
	(void)state;
	struct tserver t;
	struct http_limits lim = {.max_connections = 4};
	int fds[4];
	tserver_start(&t, &lim);
	for (int i = 0; i < 4; i++) {
		fds[i] = connect_to(http_server_port(t.srv));
		assert_true(fds[i] >= 0);
		/* a slowloris: an unfinished request */
		assert_int_equal(send_all(fds[i], "GET /echo HTTP/1.1\r\nHo", 22), 0);
	}
	unsigned four = 4;
	loop_until(&t, conns_is, &four, "four connections");

	/* The fifth waits in the listen backlog: MHD stops accepting at the
	 * limit. However long the loop runs, it is not served... */
	pthread_t th;
	struct raw_job *j = raw_start(&th, http_server_port(t.srv),
				      "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
				      0, -1);
	for (int i = 0; i < 50; i++)
		loop_turn(&t);
	assert_int_equal(t.handled, 0);
	assert_int_equal(http_server_connections(t.srv), 4);
	assert_false(atomic_load(&j->done));

	/* ...until slots free up. */
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	loop_until(&t, flag_set, &j->done, "the fifth client to be served");
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(resp_status(j->resp), 200);
	free(j);
	unsigned zero = 0;
	loop_until(&t, conns_is, &zero, "the slots to free");
	assert_alive(&t);
	http_server_free(t.srv);
}

/* An unfinished request is closed after the idle timeout. */
static void test_idle_timeout(void **state)
{
	(void)state;
	struct tserver t;
	struct http_limits lim = {.conn_timeout_s = 1};
	pthread_t th;
	tserver_start(&t, &lim);
	struct raw_job *j = raw_start(&th, http_server_port(t.srv),
				      "GET /echo HTTP/1.1\r\nHost: x\r\nX-Slow: ", 0, -1);
	loop_until(&t, flag_set, &j->done, "the idle connection to be closed");
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_false(j->failed);
	assert_int_equal(resp_status(j->resp), 0);
	free(j);
	unsigned zero = 0;
	loop_until(&t, conns_is, &zero, "no connections");
	assert_int_equal(t.handled, 0);
	http_server_free(t.srv);
}

/* Many clients at once, all waiting together: the handler holds every one
 * until all are in, then answers them in one turn. */
#define MANY 60
struct many_job {
	uint16_t port;
	int status[MANY];
	atomic_int done;
};

static void *many_run(void *arg)
{
	struct many_job *m = arg;
	int fds[MANY];
	char buf[4096];
	for (int i = 0; i < MANY; i++) {
		char req[128];
		fds[i] = connect_to(m->port);
		snprintf(req, sizeof(req),
			 "GET /hold?i=%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", i);
		if (fds[i] < 0 || send_all(fds[i], req, strlen(req)) < 0)
			m->status[i] = -1;
	}
	for (int i = 0; i < MANY; i++) {
		if (fds[i] < 0)
			continue;
		recv_all(fds[i], buf, sizeof(buf));
		m->status[i] = resp_status(buf);
		close(fds[i]);
	}
	atomic_store(&m->done, 1);
	return NULL;
}

static void test_many_connections(void **state)
{
	(void)state;
	struct tserver t;
	struct http_limits lim = {.max_connections = MANY + 4};
	pthread_t th;
	struct many_job *m = calloc(1, sizeof(*m));
	assert_non_null(m);
	tserver_start(&t, &lim);
	m->port = http_server_port(t.srv);
	assert_int_equal(pthread_create(&th, NULL, many_run, m), 0);
	int want = MANY;
	loop_until(&t, nheld_is, &want, "every client held");
	assert_int_equal(http_server_pending(t.srv), MANY);
	assert_int_equal(http_server_connections(t.srv), MANY);
	while (t.nheld)
		answer_held(t.held[--t.nheld].req);
	assert_int_equal(http_server_pending(t.srv), 0);
	loop_until(&t, flag_set, &m->done, "every answer");
	assert_int_equal(pthread_join(th, NULL), 0);
	for (int i = 0; i < MANY; i++)
		assert_int_equal(m->status[i], 200);
	free(m);
	http_server_free(t.srv);
}

/* Keep-alive: several requests on one connection, one deferred. */
static void test_keep_alive(void **state)
{
	(void)state;
	struct tserver t;
	tserver_start(&t, NULL);
	struct raw_job *r = raw_exchange(
		&t,
		"GET /echo?a=1 HTTP/1.1\r\nHost: x\r\n\r\n"
		"GET /defer/2 HTTP/1.1\r\nHost: x\r\n\r\n"
		"GET /echo?a=3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		0);
	const char *p1 = strstr(r->resp, "\"a\":\"1\"");
	const char *p2 = strstr(r->resp, "{\"deferred\":\"/defer/2\"}");
	const char *p3 = strstr(r->resp, "\"a\":\"3\"");
	assert_non_null(p1);
	assert_non_null(p2);
	assert_non_null(p3);
	assert_true(p1 < p2 && p2 < p3);
	free(r);
	assert_int_equal(t.handled, 3);
	http_server_free(t.srv);
}

static int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void test_no_fd_leak(void **state)
{
	(void)state;
	int before = count_fds();
	struct tserver t;
	tserver_start(&t, NULL);
	assert_true(http_server_fd(t.srv) >= 0);
	assert_alive(&t);
	http_server_free(t.srv);
	assert_int_equal(count_fds(), before);
}

/* ---- the client's own errors ---- */

static void test_client_errors(void **state)
{
	(void)state;
	struct sl_diag d;
	struct http_client *c = NULL;

	sl_diag_clear(&d);
	assert_int_equal(http_client_new("127.0.0.1:7400", NULL, &c, &d), SL_EINVAL);
	assert_non_null(strstr(d.msg, "bad server URL"));
	assert_non_null(strstr(d.hint, "SUANLI_SERVER"));
	assert_int_equal(http_client_new("http://a b", NULL, &c, &d), SL_EINVAL);
	assert_int_equal(http_client_new("http://x", "tok\r\nX-Evil: 1", &c, &d), SL_EINVAL);
	assert_int_equal(http_client_new("http://x", "", &c, &d), SL_EINVAL);
	assert_null(c);

	/* connection refused: a port that was just free */
	struct tserver t;
	char server[64];
	tserver_start(&t, NULL);
	snprintf(server, sizeof(server), "http://127.0.0.1:%u", http_server_port(t.srv));
	http_server_free(t.srv);
	struct curl_job j = {.server = server, .method = "GET", .path = "/healthz"};
	curl_exchange(NULL, &j);
	assert_int_equal(j.err, SL_EIO);
	assert_non_null(strstr(j.d.msg, "cannot reach the controller at http://127.0.0.1:"));
	assert_non_null(strstr(j.d.msg, "connection refused"));
	assert_string_equal(j.d.hint, "is suanlid running? set --server or SUANLI_SERVER");

	/* bad arguments */
	assert_int_equal(http_client_new("http://127.0.0.1:1/", NULL, &c, &d), SL_OK);
	struct http_response resp;
	assert_int_equal(http_client_request(c, "BREW", "/x", NULL, 0, NULL, 0, &resp, &d),
			 SL_EINVAL);
	assert_int_equal(http_client_request(c, "GET", "x", NULL, 0, NULL, 0, &resp, &d),
			 SL_EINVAL);
	assert_int_equal(http_client_request(c, "GET", "/a b", NULL, 0, NULL, 0, &resp, &d),
			 SL_EINVAL);
	assert_int_equal(http_client_request(c, "POST", "/x", "{}", 2, "k\n", 0, &resp, &d),
			 SL_EINVAL);
	http_client_free(c);

	/* a timeout: the server holds the request and the loop keeps running */
	tserver_start(&t, NULL);
	snprintf(server, sizeof(server), "http://127.0.0.1:%u", http_server_port(t.srv));
	struct curl_job h = {.server = server, .method = "GET", .path = "/hold", .timeout_ms = 300};
	curl_exchange(&t, &h);
	assert_int_equal(h.err, SL_EIO);
	assert_non_null(strstr(h.d.msg, "within 300 ms"));
	int want = 1;
	loop_until(&t, gone_is, &want, "the timed-out client to be noticed");
	answer_held(t.held[0].req);
	t.nheld = 0;
	http_server_free(t.srv);

	/* error documents */
	struct http_response er = {.status = 502, .body = (char *)"<html>bad gateway</html>",
				   .len = 24};
	sl_diag_clear(&d);
	assert_int_equal(http_client_error_diag(&er, &d), SL_EIO);
	assert_string_equal(d.msg, "the controller answered 502: <html>bad gateway</html>");
	struct http_response ok = {.status = 409,
				   .body = (char *)"{\"error\":{\"code\":\"conflict\","
						   "\"message\":\"lease is released\",\"hint\":\"\"}}"};
	ok.len = strlen(ok.body);
	sl_diag_clear(&d);
	assert_int_equal(http_client_error_diag(&ok, &d), SL_ECONFLICT);
	assert_string_equal(d.msg, "lease is released");
	assert_string_equal(d.hint, "");
}

static int global_setup(void **state)
{
	(void)state;
	struct sl_diag d;
	return http_client_global_init(&d) == SL_OK ? 0 : -1;
}

static int global_teardown(void **state)
{
	(void)state;
	http_client_global_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listen_addresses),
		cmocka_unit_test(test_new_errors),
		cmocka_unit_test(test_immediate_answers),
		cmocka_unit_test(test_error_shape),
		cmocka_unit_test(test_deferred_answers),
		cmocka_unit_test(test_gone_then_answer),
		cmocka_unit_test(test_gone_answered_in_callback),
		cmocka_unit_test(test_answer_then_gone),
		cmocka_unit_test(test_free_with_pending),
		cmocka_unit_test(test_body_limit),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_connection_limit),
		cmocka_unit_test(test_idle_timeout),
		cmocka_unit_test(test_many_connections),
		cmocka_unit_test(test_keep_alive),
		cmocka_unit_test(test_no_fd_leak),
		cmocka_unit_test(test_client_errors),
	};
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, global_setup, global_teardown);
}

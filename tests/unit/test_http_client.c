/* test_http_client.c - the libcurl client against tiny scripted servers: what
 * it sends, how it reads answers, and the transport errors a CLI user sees
 * (refused, timed out, too large, bad arguments). test_http.c covers it
 * against the real server layer.
 *
 * A scripted server is one thread that accepts one connection, reads the
 * request head (and Content-Length body), writes a canned answer and closes.
 * Nothing depends on timing; the one timeout test uses a listener that never
 * accepts, so the client's own timeout is the only way out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "http_client.h"

#define REQ_MAX 16384
/* Failure bound for the scripted server's reads. */
#define SERVER_RCV_TIMEOUT_S 20

struct script {
	int lfd;
	uint16_t port;
	const char *answer; /* written verbatim */
	char req[REQ_MAX];   /* what the client sent */
	size_t req_len;
	pthread_t th;
};

static int listener(uint16_t *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* Reads the head and, if announced, the body. */
static void read_request(int fd, struct script *s)
{
	for (;;) {
		ssize_t r = recv(fd, s->req + s->req_len, sizeof(s->req) - 1 - s->req_len, 0);
		if (r <= 0)
			break;
		s->req_len += (size_t)r;
		s->req[s->req_len] = '\0';
		const char *end = strstr(s->req, "\r\n\r\n");
		if (!end)
			continue;
		const char *cl = strstr(s->req, "Content-Length: ");
		size_t body = cl ? (size_t)strtoul(cl + 16, NULL, 10) : 0;
		if (s->req_len >= (size_t)(end + 4 - s->req) + body)
			break;
	}
}

static void *script_run(void *arg)
{
	struct script *s = arg;
	struct timeval tv = {.tv_sec = SERVER_RCV_TIMEOUT_S};
	int fd = accept(s->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	read_request(fd, s);
	size_t n = strlen(s->answer);
	for (size_t off = 0; off < n;) {
		ssize_t w = send(fd, s->answer + off, n - off, MSG_NOSIGNAL);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(fd);
	return NULL;
}

static void script_start(struct script *s, const char *answer)
{
	memset(s, 0, sizeof(*s));
	s->answer = answer;
	s->lfd = listener(&s->port);
	assert_int_equal(pthread_create(&s->th, NULL, script_run, s), 0);
}

static void script_join(struct script *s)
{
	assert_int_equal(pthread_join(s->th, NULL), 0);
	close(s->lfd);
}

static int starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static struct http_client *client_for(uint16_t port, const char *token)
{
	char url[64];
	struct http_client *c = NULL;
	struct sl_diag d;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", port);
	sl_diag_clear(&d);
	if (http_client_new(url, token, &c, &d) != SL_OK)
		fail_msg("http_client_new: %s", d.msg);
	return c;
}

static void test_what_is_sent(void **state)
{
	(void)state;
	struct script s;
	struct http_response resp;
	struct sl_diag d;
	script_start(&s, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
			 "Content-Length: 14\r\nConnection: close\r\n\r\n{\"id\":\"ls-1\"}\n");
	struct http_client *c = client_for(s.port, "sl_abc");
	sl_diag_clear(&d);
	assert_int_equal(http_client_request(c, "POST", "/v1/leases", "{\"gpus\":8}", 10,
					     "idem-42", 0, &resp, &d),
			 SL_OK);
	script_join(&s);
	assert_int_equal(resp.status, 201);
	assert_int_equal(resp.len, 14);
	assert_string_equal(resp.body, "{\"id\":\"ls-1\"}\n");
	assert_true(starts_with(s.req, "POST /v1/leases HTTP/1.1\r\n"));
	assert_non_null(strstr(s.req, "\r\nAuthorization: Bearer sl_abc\r\n"));
	assert_non_null(strstr(s.req, "\r\nIdempotency-Key: idem-42\r\n"));
	assert_non_null(strstr(s.req, "\r\nContent-Type: application/json\r\n"));
	assert_non_null(strstr(s.req, "\r\nAccept: application/json\r\n"));
	assert_null(strstr(s.req, "Expect:"));
	assert_non_null(strstr(s.req, "\r\n\r\n{\"gpus\":8}"));
	http_response_release(&resp);
	assert_null(resp.body);
	http_client_free(c);

	/* the same handle makes a GET without a body or leftover headers */
	script_start(&s, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
	c = client_for(s.port, NULL);
	assert_int_equal(http_client_request(c, "GET", "/v1/leases?state=active", NULL, 0,
					     NULL, 0, &resp, &d),
			 SL_OK);
	script_join(&s);
	assert_int_equal(resp.status, 204);
	assert_int_equal(resp.len, 0);
	assert_string_equal(resp.body, "");
	assert_true(starts_with(s.req, "GET /v1/leases?state=active HTTP/1.1\r\n"));
	assert_null(strstr(s.req, "Authorization"));
	assert_null(strstr(s.req, "Idempotency-Key"));
	assert_null(strstr(s.req, "Content-Type"));
	http_response_release(&resp);

	/* DELETE goes out as DELETE */
	script_start(&s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
	http_client_free(c);
	c = client_for(s.port, NULL);
	assert_int_equal(http_client_request(c, "DELETE", "/v1/leases/ls-1", NULL, 0, NULL, 0,
					     &resp, &d),
			 SL_OK);
	script_join(&s);
	assert_true(starts_with(s.req, "DELETE /v1/leases/ls-1 HTTP/1.1\r\n"));
	http_response_release(&resp);
	http_client_free(c);
}

static void test_answer_too_large(void **state)
{
	(void)state;
	struct script s;
	struct http_response resp;
	struct sl_diag d;
	char answer[160];
	snprintf(answer, sizeof(answer),
		 "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
		 HTTP_CLIENT_MAX_RESPONSE + 1);
	script_start(&s, answer);
	struct http_client *c = client_for(s.port, NULL);
	sl_diag_clear(&d);
	assert_int_equal(http_client_request(c, "GET", "/big", NULL, 0, NULL, 0, &resp, &d),
			 SL_ELIMIT);
	assert_non_null(strstr(d.msg, "larger than"));
	assert_null(resp.body);
	script_join(&s);
	http_client_free(c);
}

static void test_refused(void **state)
{
	(void)state;
	uint16_t port;
	int fd = listener(&port);
	close(fd); /* nothing listens there now */
	struct http_client *c = client_for(port, NULL);
	struct http_response resp;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(http_client_request(c, "GET", "/healthz", NULL, 0, NULL, 0, &resp, &d),
			 SL_EIO);
	char want[96];
	snprintf(want, sizeof(want),
		 "cannot reach the controller at http://127.0.0.1:%u: connection refused",
		 port);
	assert_string_equal(d.msg, want);
	assert_string_equal(d.hint, "is suanlid running? set --server or SUANLI_SERVER");
	http_client_free(c);
}

static void test_timeout(void **state)
{
	(void)state;
	uint16_t port;
	int lfd = listener(&port); /* the kernel completes the connection; no one answers */
	struct http_client *c = client_for(port, NULL);
	struct http_response resp;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(http_client_request(c, "GET", "/slow", NULL, 0, NULL, 200, &resp, &d),
			 SL_EIO);
	assert_non_null(strstr(d.msg, "no answer from the controller at http://127.0.0.1:"));
	assert_non_null(strstr(d.msg, "within 200 ms"));
	assert_true(d.hint[0] != '\0');
	http_client_free(c);
	close(lfd);
}

static void test_bad_arguments(void **state)
{
	(void)state;
	static const struct {
		const char *server, *token, *msg;
	} bad_new[] = {
		{"127.0.0.1:7400", NULL, "bad server URL"},
		{"ftp://x", NULL, "bad server URL"},
		{"http://a b", NULL, "bad server URL"},
		{"http://x\n", NULL, "bad server URL"},
		{"http://x", "", "token"},
		{"http://x", "tok\r\nX-Evil: 1", "token"},
		{"http://x", "two words", "token"},
	};
	struct http_client *c = NULL;
	struct sl_diag d;
	for (size_t i = 0; i < sizeof(bad_new) / sizeof(bad_new[0]); i++) {
		sl_diag_clear(&d);
		assert_int_equal(http_client_new(bad_new[i].server, bad_new[i].token, &c, &d),
				 SL_EINVAL);
		assert_null(c);
		if (!strstr(d.msg, bad_new[i].msg))
			fail_msg("case %zu: '%s' lacks '%s'", i, d.msg, bad_new[i].msg);
		assert_true(d.hint[0] != '\0');
	}

	static const struct {
		const char *method, *path, *idem;
	} bad_req[] = {
		{"BREW", "/x", NULL}, {NULL, "/x", NULL},  {"GET", "x", NULL},
		{"GET", "/a b", NULL}, {"GET", NULL, NULL}, {"POST", "/x", "k\n"},
		{"POST", "/x", ""},
	};
	assert_int_equal(http_client_new("http://127.0.0.1:1", "t", &c, &d), SL_OK);
	for (size_t i = 0; i < sizeof(bad_req) / sizeof(bad_req[0]); i++) {
		struct http_response resp = {.status = 7};
		assert_int_equal(http_client_request(c, bad_req[i].method, bad_req[i].path, NULL,
						     0, bad_req[i].idem, 0, &resp, &d),
				 SL_EINVAL);
		assert_null(resp.body);
		assert_int_equal(resp.status, 0);
	}
	http_client_free(c);
	http_client_free(NULL);
	http_response_release(NULL);
}

static void test_error_documents(void **state)
{
	(void)state;
	static const struct {
		int status;
		const char *body;
		enum sl_err want;
		const char *msg, *hint;
	} cases[] = {
		{409, "{\"error\":{\"code\":\"conflict\",\"message\":\"lease is released\",\"hint\":\"\"}}",
		 SL_ECONFLICT, "lease is released", ""},
		{413, "{\"error\":{\"code\":\"too_large\",\"message\":\"big\",\"hint\":\"smaller\"}}",
		 SL_ELIMIT, "big", "smaller"},
		{400, "{\"error\":{\"code\":\"something_new\",\"message\":\"m\"}}", SL_EIO, "m", ""},
		{200, "{\"error\":{\"code\":\"ok\",\"message\":\"odd\"}}", SL_EIO, "odd", ""},
		{502, "<html>bad gateway</html>", SL_EIO,
		 "the controller answered 502: <html>bad gateway</html>", ""},
		{500, "", SL_EIO, "the controller answered 500", ""},
		{500, "{\"error\":\"flat\"}", SL_EIO, "the controller answered 500: {\"error\":\"flat\"}", ""},
		{503, "line\nbreak", SL_EIO, "the controller answered 503: line break", ""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_response r = {.status = cases[i].status, .body = (char *)cases[i].body,
					  .len = strlen(cases[i].body)};
		struct sl_diag d;
		sl_diag_clear(&d);
		enum sl_err e = http_client_error_diag(&r, &d);
		if (e != cases[i].want || strcmp(d.msg, cases[i].msg) != 0 ||
		    strcmp(d.hint, cases[i].hint) != 0)
			fail_msg("case %zu: %s '%s' '%s'", i, sl_err_code(e), d.msg, d.hint);
	}
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
		cmocka_unit_test(test_what_is_sent),
		cmocka_unit_test(test_answer_too_large),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_error_documents),
	};
	return cmocka_run_group_tests(tests, global_setup, global_teardown);
}

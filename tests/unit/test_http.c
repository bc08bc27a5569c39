/* test_http.c - the HTTP server layer as the controller uses it: addresses,
 * immediate and deferred answers, clients that go away in every order, the
 * JSON error shape, keep-alive, and nothing leaked (memory or descriptors).
 * Hostile input and the bounds are in test_http_hostile.c; the shared
 * harness (test server, owner loop, client threads) is in http_harness.h. */
#include "http_harness.h"

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
	struct http_callbacks cb = {handle, NULL, NULL, &t, NULL};
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
	struct http_callbacks none = {NULL, NULL, NULL, NULL, NULL};
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

/* The default per-connection memory (HTTP_CONN_MEMORY) is small, since MHD
 * keeps all of it for every open connection: a browser's headers (with a
 * long cookie) must still fit, on a kept-alive connection too, and a body
 * far larger than it must still arrive whole (it passes through in pieces). */
static void test_default_connection_memory(void **state)
{
	(void)state;
	struct tserver t;
	tserver_start(&t, NULL);
	char cookie[1601], *req = malloc(16384);
	assert_non_null(req);
	memset(cookie, 'c', sizeof(cookie) - 1);
	cookie[sizeof(cookie) - 1] = 0;
	size_t n = 0;
	for (int i = 0; i < 2; i++)
		n += (size_t)snprintf(
			req + n, 16384 - n,
			"GET /echo?a=%d HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
			"User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
			"Chrome/120.0.0.0 Safari/537.36\r\n"
			"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,"
			"image/webp,*/*;q=0.8\r\nAccept-Language: en-US,en;q=0.9,zh-CN;q=0.8\r\n"
			"Accept-Encoding: gzip, deflate, br\r\nReferer: http://127.0.0.1:8080/console/\r\n"
			"Sec-Fetch-Dest: empty\r\nSec-Fetch-Mode: cors\r\nSec-Fetch-Site: same-origin\r\n"
			"X-CSRF-Token: 0123456789abcdef0123456789abcdef0123456789abcdef\r\n"
			"Cookie: suanli_session=ss_%s\r\nX-Test: big-%d\r\n%s\r\n",
			i, cookie, i, i ? "Connection: close\r\n" : "");
	assert_true(n > 2 * 2048);
	struct raw_job *r = raw_exchange(&t, req, n);
	const char *p0 = strstr(r->resp, "\"x\":\"big-0\"");
	const char *p1 = strstr(r->resp, "\"x\":\"big-1\"");
	assert_non_null(p0);
	assert_non_null(p1);
	assert_true(p0 < p1);
	free(r);

	/* headers well past what the memory holds (~2.7 KiB at 6 KiB): a
	 * clear 431 from MHD, and the server goes on */
	char fat[6001];
	memset(fat, 'c', sizeof(fat) - 1);
	fat[sizeof(fat) - 1] = 0;
	n = (size_t)snprintf(req, 16384,
			     "GET /echo HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
			     "Cookie: suanli_session=ss_%s\r\nConnection: close\r\n\r\n",
			     fat);
	r = raw_exchange_ex(&t, req, n, 1);
	assert_int_equal(resp_status(r->resp), 431);
	free(r);
	free(req);
	assert_alive(&t);

	/* a body of 900 KiB, under HTTP_MAX_BODY */
	char server[64];
	snprintf(server, sizeof(server), "http://127.0.0.1:%u/", http_server_port(t.srv));
	size_t blen = 900u << 10;
	char *body = malloc(blen + 1);
	assert_non_null(body);
	memset(body, 'b', blen);
	body[blen] = 0;
	struct curl_job p = {.server = server, .method = "POST", .path = "/echo", .body = body};
	curl_exchange(&t, &p);
	assert_int_equal(p.err, SL_OK);
	assert_int_equal(p.resp.status, 200);
	json_t *doc = json_loads(p.resp.body, 0, NULL);
	assert_non_null(doc);
	assert_int_equal(json_integer_value(json_object_get(doc, "len")), (json_int_t)blen);
	assert_int_equal(json_string_length(json_object_get(doc, "body")), blen);
	json_decref(doc);
	http_response_release(&p.resp);
	free(body);
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

/* A client that gives up (its timeout) while its request is held is noticed
 * as gone; answering afterwards frees the request. */
static void test_client_timeout_is_gone(void **state)
{
	(void)state;
	struct tserver t;
	char server[64];
	tserver_start(&t, NULL);
	snprintf(server, sizeof(server), "http://127.0.0.1:%u", http_server_port(t.srv));
	struct curl_job h = {.server = server, .method = "GET", .path = "/hold", .timeout_ms = 300};
	curl_exchange(&t, &h);
	assert_int_equal(h.err, SL_EIO);
	assert_non_null(strstr(h.d.msg, "within 300 ms"));
	int want = 1;
	loop_until(&t, gone_is, &want, "the timed-out client to be noticed");
	assert_int_equal(t.nheld, 1);
	answer_held(t.held[0].req);
	t.nheld = 0;
	assert_int_equal(http_server_pending(t.srv), 0);
	http_server_free(t.srv);
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
		cmocka_unit_test(test_keep_alive),
		cmocka_unit_test(test_default_connection_memory),
		cmocka_unit_test(test_no_fd_leak),
		cmocka_unit_test(test_client_timeout_is_gone),
	};
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, global_setup, global_teardown);
}

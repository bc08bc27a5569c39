/* test_http_hostile.c - the HTTP server layer against what a hostile or
 * careless client sends: bodies past the bound (announced and chunked),
 * garbage bytes, ambiguous framing, header floods, slowloris connections
 * (the connection limit and the idle timeout), and many clients at once. */
#include "http_harness.h"

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

/* A route the owner names another bound for (max_body_for) gets that bound,
 * announced or chunked; every other request keeps lim.max_body. */
static void test_body_limit_per_route(void **state)
{
	(void)state;
	struct tserver t;
	struct http_limits lim = {.max_body = 1000};
	char *req = malloc(8192);
	char body[3100];
	assert_non_null(req);
	memset(body, 'x', sizeof(body));
	tserver_start(&t, &lim);
	t.put_echo_max = 3000;

	int n = snprintf(req, 8192, "PUT /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
				    "Content-Length: 3000\r\n\r\n%.3000s", body);
	struct raw_job *r = raw_exchange(&t, req, (size_t)n);
	assert_int_equal(resp_status(r->resp), 200);
	assert_non_null(strstr(r->resp, "\"len\":3000"));
	free(r);

	n = snprintf(req, 8192, "PUT /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
				"Content-Length: 3001\r\n\r\n%.3001s", body);
	r = raw_exchange(&t, req, (size_t)n);
	assert_int_equal(resp_status(r->resp), 413);
	assert_non_null(strstr(resp_body(r->resp), "larger than 3000 bytes"));
	free(r);

	/* chunked past the general bound, within the route's */
	n = snprintf(req, 8192, "PUT /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
				"Transfer-Encoding: chunked\r\n\r\n"
				"258\r\n%.600s\r\n258\r\n%.600s\r\n0\r\n\r\n", body, body);
	r = raw_exchange(&t, req, (size_t)n);
	assert_int_equal(resp_status(r->resp), 200);
	assert_non_null(strstr(r->resp, "\"len\":1200"));
	free(r);

	/* the same path with another method keeps the general bound */
	n = snprintf(req, 8192, "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
				"Content-Length: 2000\r\n\r\n%.2000s", body);
	r = raw_exchange(&t, req, (size_t)n);
	assert_int_equal(resp_status(r->resp), 413);
	assert_non_null(strstr(resp_body(r->resp), "larger than 1000 bytes"));
	free(r);

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

/* Agents' connections past the limit get a prompt 503 with Retry-After and
 * the JSON error (never silence in the listen backlog), others are served,
 * the connections already open are still served, and slowloris connections free their slots when they
 * go. */
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

	/* An agent's fifth connection is refused at once, without reaching
	 * the handler... */
	struct raw_job *j = raw_exchange(
		&t, "GET /v1/agent/work HTTP/1.1\r\nHost: x\r\n\r\n", 0);
	assert_int_equal(resp_status(j->resp), 503);
	assert_non_null(strstr(j->resp, "Retry-After: "));
	assert_error_doc(resp_body(j->resp), "overloaded");
	assert_int_equal(t.handled, 0);
	free(j);
	struct http_stats st;
	http_server_stats(t.srv, &st);
	assert_true(st.refused >= 1);
	assert_int_equal(st.max, 4);
	/* ...while an operator's request is served on the reserve, and its
	 * connection closed after the answer (the raw client reads to EOF). */
	j = raw_exchange(&t, "GET /echo?a=op HTTP/1.1\r\nHost: x\r\n\r\n", 0);
	assert_int_equal(resp_status(j->resp), 200);
	assert_non_null(strstr(j->resp, "Connection: close"));
	free(j);

	/* An admitted connection is still served at the limit. */
	static const char rest[] = "st: x\r\nConnection: close\r\n\r\n";
	assert_int_equal(send_all(fds[0], rest, sizeof(rest) - 1), 0);
	char buf[4096];
	size_t n = 0;
	for (int i = 0; i < 2000 && n == 0; i++) {
		loop_turn(&t);
		ssize_t k = recv(fds[0], buf, sizeof(buf) - 1, MSG_DONTWAIT);
		if (k > 0)
			n = (size_t)k;
		else
			usleep(1000);
	}
	buf[n] = '\0';
	assert_int_equal(resp_status(buf), 200);

	/* Once slots free up, new clients are served. */
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	unsigned zero = 0;
	loop_until(&t, conns_is, &zero, "the slots to free");
	assert_alive(&t);
	http_server_free(t.srv);
}

/* Past the limit and its refusal reserve the server still answers: a
 * canned 503 written to the new socket, which is then closed. */
static void test_connection_limit_reserve(void **state)
{
	(void)state;
	struct tserver t;
	struct http_limits lim = {.max_connections = 2};
	unsigned hold_n = 2 + HTTP_REFUSE_RESERVE(2u);
	int fds[64];
	assert_true(hold_n <= 64);
	tserver_start(&t, &lim);
	for (unsigned i = 0; i < hold_n; i++) {
		fds[i] = connect_to(http_server_port(t.srv));
		assert_true(fds[i] >= 0);
	}
	loop_until(&t, conns_is, &hold_n, "the limit and the reserve held");
	struct raw_job *j = raw_exchange(
		&t, "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 0);
	assert_int_equal(resp_status(j->resp), 503);
	assert_non_null(strstr(j->resp, "Retry-After: "));
	assert_error_doc(resp_body(j->resp), "overloaded");
	free(j);
	assert_int_equal(t.handled, 0);
	for (unsigned i = 0; i < hold_n; i++)
		close(fds[i]);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_body_limit),
		cmocka_unit_test(test_body_limit_per_route),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_connection_limit),
		cmocka_unit_test(test_connection_limit_reserve),
		cmocka_unit_test(test_idle_timeout),
		cmocka_unit_test(test_many_connections),
	};
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, global_setup, global_teardown);
}

/* test_ctl_answers.c - a controller whose answer queue cannot grow refuses a
 * change before making it: the client is never told "failed" (503) for a
 * change that was stored and audited anyway (issue 11).
 *
 * A real controller (ctl_new, ctl_run in a thread) on a fresh data directory,
 * driven through the libcurl client. ctl_opts.answer_queue_max < 0 stands in
 * for the allocation failure: the queue never gets a slot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ctl.h"
#include "http_client.h"

struct running {
	struct ctl *c;
	int stop[2];
	pthread_t th;
	enum sl_err rc;
	char url[64];
};

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *run_thread(void *arg)
{
	struct running *r = arg;
	struct sl_diag d;
	sl_diag_clear(&d);
	r->rc = ctl_run(r->c, r->stop[0], &d);
	return NULL;
}

static void start(struct running *r, const char *dir, int answer_queue_max)
{
	struct ctl_opts o = {.data_dir = dir, .listen = "127.0.0.1:0",
			     .preempt_notice_s = -1, .answer_queue_max = answer_queue_max};
	struct sl_diag d;
	sl_diag_clear(&d);
	memset(r, 0, sizeof(*r));
	assert_int_equal(ctl_new(&o, wall_ns(), &r->c, &d), SL_OK);
	assert_int_equal(pipe(r->stop), 0);
	snprintf(r->url, sizeof(r->url), "http://127.0.0.1:%u", (unsigned)ctl_port(r->c));
	assert_int_equal(pthread_create(&r->th, NULL, run_thread, r), 0);
}

static void stop(struct running *r)
{
	assert_int_equal(write(r->stop[1], "x", 1), 1);
	assert_int_equal(pthread_join(r->th, NULL), 0);
	assert_int_equal(r->rc, SL_OK);
	ctl_free(r->c);
	close(r->stop[0]);
	close(r->stop[1]);
}

static int call(const char *url, const char *token, const char *method, const char *path,
		const char *body, char **out)
{
	struct http_client *h = NULL;
	struct http_response resp;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(http_client_new(url, token, &h, &d), SL_OK);
	assert_int_equal(http_client_request(h, method, path, body, body ? strlen(body) : 0,
					     NULL, 20000, &resp, &d),
			 SL_OK);
	http_client_free(h);
	int status = resp.status;
	if (out)
		*out = strdup(resp.body);
	http_response_release(&resp);
	return status;
}

static void test_full_queue_changes_nothing(void **state)
{
	(void)state;
	char dir[] = "/tmp/sl-answers-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char data[sizeof(dir) + 8];
	snprintf(data, sizeof(data), "%s/data", dir);
	char *admin = NULL;
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(ctl_init_data(data, wall_ns(), &admin, &d), SL_OK);

	/* The queue cannot take the answer: refused, and nothing happens. */
	struct running r;
	char *body = NULL;
	start(&r, data, -1);
	int st = call(r.url, admin, "POST", "/v1/tenants", "{\"name\":\"acme\"}", &body);
	assert_int_equal(st, 503);
	json_t *doc = json_loads(body, 0, NULL);
	assert_non_null(json_object_get(json_object_get(doc, "error"), "code"));
	json_decref(doc);
	free(body);
	stop(&r);

	/* With room again: no tenant, no audit entry for it; creating it now
	 * works (so the refusal was not "it exists"). */
	start(&r, data, 0);
	assert_int_equal(call(r.url, admin, "GET", "/v1/tenants/acme", NULL, NULL), 404);
	assert_int_equal(call(r.url, admin, "GET", "/v1/audit/log", NULL, &body), 200);
	assert_null(strstr(body, "tenant.create"));
	free(body);
	assert_int_equal(call(r.url, admin, "POST", "/v1/tenants", "{\"name\":\"acme\"}", NULL),
			 201);
	assert_int_equal(call(r.url, admin, "GET", "/v1/audit/log", NULL, &body), 200);
	assert_non_null(strstr(body, "tenant.create"));
	free(body);
	stop(&r);
	free(admin);
	char cmd[sizeof(dir) + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	if (http_client_global_init(&d) != SL_OK)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_queue_changes_nothing),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	http_client_global_cleanup();
	return rc;
}

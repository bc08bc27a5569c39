/* fuzz_http.c - the controller's whole HTTP stack, in process: libmicrohttpd,
 * routing, authentication, JSON bounds and the handlers, against a running
 * controller (ctl_new + ctl_run in a thread, plain HTTP on 127.0.0.1:0).
 *
 * Set up once (lazily, so it works under libFuzzer and under replay.c): a data
 * directory on /dev/shm (ctl_init_data), a small fleet of four simulated HGX
 * H100 servers, a join token, and one agent registered with the discovery of
 * its built-in type (discovery_from_type, as `suanli-agent --simulate`), which
 * gives a node credential. The first byte of each input picks what the rest
 * is, the second byte refines it:
 *   0: raw bytes on a fresh TCP connection (request line, headers, body);
 *   1: the body of POST /v1/agent/heartbeat with the node credential (when
 *      it is a JSON object, the right boot_id is put in unless byte 2's low
 *      bit is set): heartbeats and the work reports they carry;
 *   2: the body of POST /v1/agent/register (byte 2: the join token or the
 *      node credential);
 *   3: the query of GET /v1/agent/work (wait=0 first, so the long poll
 *      answers at once; byte 2's low bit drops that and hangs up instead);
 *   4: a route of ctl_routes() (byte 2 picks) with the admin token: the
 *      first line fills its {x} segments, the rest is the body (the query
 *      for GET).
 * Contracts: every answer is well-formed HTTP (status line, a status of
 * 100..599, headers ended, as many body bytes as Content-Length says), no
 * request the harness builds gets 500, the server never hangs (every answer
 * within a bound) and stays alive (GET /healthz answers 200 every 16th
 * input; the loop thread has not returned).
 *
 * libFuzzer's per-input leak check is off for this harness (fuzz-flags
 * below): the daemon keeps what requests create, so every input would look
 * like a leak. Leaks are checked at exit instead, where the controller is
 * stopped and freed (scripts/fuzz.sh replays the corpus for it; make
 * check's replay does the same under ASan).
 *
 * FUZZ_HTTP_VERBOSE=1 prints each request and its answer.
 *
 * fuzz-flags: -detect_leaks=0 -timeout=30 -rss_limit_mb=4096
 */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "ctl.h"
#include "discovery.h"
#include "fuzz.h"
#include "log.h"
#include "topo.h"

#define ANSWER_BOUND_MS 20000 /* a failure bound only */
#define ANSWER_MAX (8u << 20)
#define HEALTH_EVERY 16
#define RAW_QUIET_MS 50 /* raw bytes: how long a silent server is waited for */
#define NODE "fz-h100-01"
#define BOOT_ID "fuzz-boot-1"

static const char fleet_yaml[] =
	"# fuzz_http's fleet: four simulated HGX H100 servers in two leaves\n"
	"sites:\n"
	"  - name: fz-a\n"
	"    region: cn-east\n"
	"    fabrics:\n"
	"      - name: fz-ib\n"
	"        kind: infiniband\n"
	"        gbps: 400\n"
	"        leaves:\n"
	"          - name: fz-leaf-01\n"
	"            nodes:\n"
	"              - {range: \"fz-h100-[01-03]\", type: hgx-h100-8, price_hint: 1800}\n"
	"          - name: fz-leaf-02\n"
	"            nodes:\n"
	"              - {name: fz-h100-04, type: hgx-h100-8, price_hint: 1800}\n";

struct answer {
	char *b;
	size_t n;
	bool eof; /* the server closed (false: the bound ran out) */
};

static struct {
	bool up;
	char root[64], data[96], fleet[96];
	struct ctl *c;
	int stop[2];
	pthread_t th;
	atomic_bool ended;
	uint16_t port;
	char *admin;
	char join[160], cred[160];
	char *register_body; /* our node's proper registration */
	const struct ctl_route *routes;
	size_t nroutes;
	unsigned long inputs;
	bool verbose; /* FUZZ_HTTP_VERBOSE=1: each request and its answer on stderr */
} G;

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *loop(void *arg)
{
	(void)arg;
	struct sl_diag d;
	sl_diag_clear(&d);
	enum sl_err e = ctl_run(G.c, G.stop[0], &d);
	if (e)
		fprintf(stderr, "fuzz_http: ctl_run: %s\n", d.msg);
	atomic_store(&G.ended, true);
	return NULL;
}

/* Sends len bytes on a fresh connection and reads until the server closes
 * or the bound runs out. quiet_ms > 0 (raw bytes, which may be an
 * unfinished request the server rightly waits for): half-closes after
 * sending, and stops once nothing came for quiet_ms, resetting the
 * connection (so the server lets it go at once, not at its idle timeout). */
static void exchange(const void *req, size_t len, int quiet_ms, bool hang_up, struct answer *a)
{
	memset(a, 0, sizeof(*a));
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	FUZZ_CHECK(fd >= 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(G.port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	int cr = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (cr && errno == EINTR) {
		/* libFuzzer's timer signal: the connection goes on; wait for it. */
		struct pollfd pf = {.fd = fd, .events = POLLOUT};
		int err = 0;
		socklen_t el = sizeof(err);
		while (poll(&pf, 1, ANSWER_BOUND_MS) < 0 && errno == EINTR)
			;
		cr = getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err ? -1 : 0;
		if (err)
			errno = err;
	}
	if (cr)
		fprintf(stderr, "fuzz_http: connect: %s\n", strerror(errno));
	FUZZ_CHECK(cr == 0);
	const char *p = req;
	size_t left = len;
	while (left) {
		ssize_t w = send(fd, p, left, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break; /* the server may close early (413, a bad request line) */
		p += w;
		left -= (size_t)w;
	}
	if (hang_up) {
		close(fd);
		a->eof = true;
		return;
	}
	if (quiet_ms > 0)
		(void)shutdown(fd, SHUT_WR);
	size_t cap = 0;
	int64_t until = wall_ns() + (int64_t)ANSWER_BOUND_MS * 1000000;
	for (;;) {
		int64_t ms = (until - wall_ns()) / 1000000;
		if (ms <= 0)
			break;
		if (quiet_ms > 0 && ms > quiet_ms)
			ms = quiet_ms;
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		int r = poll(&pf, 1, (int)ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (cap - a->n < 4096) {
			cap = cap ? cap * 2 : 16384;
			FUZZ_CHECK(cap <= 2 * ANSWER_MAX);
			a->b = realloc(a->b, cap + 1);
			FUZZ_CHECK(a->b);
		}
		ssize_t got = recv(fd, a->b + a->n, cap - a->n, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			a->eof = true; /* closed, or reset (a refused request) */
			break;
		}
		a->n += (size_t)got;
		FUZZ_CHECK(a->n <= ANSWER_MAX);
	}
	if (a->b)
		a->b[a->n] = 0;
	if (!a->eof) {
		struct linger lg = {1, 0};
		(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(fd);
}

/* The status of a well-formed answer; only_one: exactly one answer, whose
 * body must be as long as its Content-Length. */
static int check_answer(const struct answer *a, bool only_one)
{
	if (only_one && !a->eof)
		fprintf(stderr, "fuzz_http: no end of answer within %d ms\n", ANSWER_BOUND_MS);
	FUZZ_CHECK(a->eof || !only_one);
	const char *s = a->b;
	size_t n = a->n;
	for (;;) {
		if (n < 12 && !a->eof)
			return 0; /* cut off (raw bytes): nothing more to check */
		FUZZ_CHECK(n >= 12 && (!memcmp(s, "HTTP/1.1 ", 9) || !memcmp(s, "HTTP/1.0 ", 9)));
		FUZZ_CHECK(s[9] >= '1' && s[9] <= '5' && s[10] >= '0' && s[10] <= '9' && s[11] >= '0' &&
			   s[11] <= '9');
		int status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
		const char *end = memmem(s, n, "\r\n\r\n", 4);
		if (!end && !a->eof)
			return status;
		FUZZ_CHECK(end);
		size_t hlen = (size_t)(end - s) + 4;
		if (status == 100) { /* Expect: 100-continue; the real answer follows */
			s += hlen, n -= hlen;
			if (!n && !only_one)
				return status; /* raw bytes: the body never came */
			continue;
		}
		if (!only_one)
			return status;
		/* Content-Length, if any, counts the rest exactly. */
		for (const char *h = memchr(s, '\n', hlen); h && h < end; h = memchr(h + 1, '\n', (size_t)(end - h))) {
			if (!strncasecmp(h + 1, "Content-Length:", 15)) {
				unsigned long long cl = strtoull(h + 16, NULL, 10);
				if (cl != n - hlen)
					fprintf(stderr, "fuzz_http: Content-Length %llu, body %zu\n", cl, n - hlen);
				FUZZ_CHECK(cl == n - hlen);
			}
		}
		return status;
	}
}

/* Appends s[0..n) to b, percent-encoding what a request target cannot hold
 * (keeping '%', so the fuzzer makes its own escapes, good and bad). */
static void add_target(struct sl_buf *b, const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] <= 0x20 || s[i] >= 0x7f || s[i] == '#')
			sl_buf_addf(b, "%%%02X", s[i]);
		else
			sl_buf_add(b, (const char *)&s[i], 1);
	}
}

/* One request the harness builds; returns the status (checked). */
static int request(const char *method, const char *target, const char *token, const char *body,
		   size_t blen, bool hang_up, char **answer_body)
{
	struct sl_buf b = SL_BUF_INIT(ANSWER_MAX);
	sl_buf_addf(&b, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n", method, target);
	if (token)
		sl_buf_addf(&b, "Authorization: Bearer %s\r\n", token);
	if (body)
		sl_buf_addf(&b, "Content-Type: application/json\r\nContent-Length: %zu\r\n", blen);
	sl_buf_add(&b, "\r\n", 2);
	if (body)
		sl_buf_add(&b, body, blen);
	FUZZ_CHECK(sl_buf_err(&b) == SL_OK);
	struct answer a;
	exchange(sl_buf_str(&b), b.len, 0, hang_up, &a);
	sl_buf_release(&b);
	if (hang_up)
		return 0;
	int status = check_answer(&a, true);
	if (G.verbose)
		fprintf(stderr, "fuzz_http: %s %.200s -> %d %.300s\n", method, target, status,
			a.b ? strstr(a.b, "\r\n\r\n") ? strstr(a.b, "\r\n\r\n") + 4 : "" : "");
	if (status == 500)
		fprintf(stderr, "fuzz_http: %s %s answered 500: %s\n", method, target, a.b);
	FUZZ_CHECK(status != 500);
	if (answer_body) {
		const char *e = memmem(a.b, a.n, "\r\n\r\n", 4);
		*answer_body = strdup(e ? e + 4 : "");
	}
	free(a.b);
	return status;
}

/* The string field key of a JSON answer, copied to out. */
static bool answer_field(const char *body, const char *key, char *out, size_t n)
{
	json_t *o = json_loads(body, 0, NULL);
	const char *v = json_string_value(json_object_get(o, key));
	bool ok = v && strlen(v) < n;
	if (ok)
		snprintf(out, n, "%s", v);
	json_decref(o);
	return ok;
}

/* Registers our node again with its proper body: with the credential, or
 * (when that no longer works) with the join token, taking the new one. After
 * an input that may have changed the fleet or the registration. */
static void resync(void)
{
	char *ans = NULL;
	size_t len = strlen(G.register_body);
	int st = request("POST", "/v1/agent/register", G.cred, G.register_body, len, false, NULL);
	if (st == 200)
		return;
	st = request("POST", "/v1/agent/register", G.join, G.register_body, len, false, &ans);
	if (st != 200) {
		/* The node may have left the fleet (PUT /v1/fleet): put it back. */
		free(ans);
		ans = NULL;
		(void)request("PUT", "/v1/fleet", G.admin, fleet_yaml, sizeof(fleet_yaml) - 1, false,
			      NULL);
		st = request("POST", "/v1/agent/register", G.join, G.register_body, len, false, &ans);
	}
	if (st == 200 && !answer_field(ans, "credential", G.cred, sizeof(G.cred)))
		st = 0;
	free(ans);
	if (st != 200)
		fprintf(stderr, "fuzz_http: could not register %s again (%d)\n", NODE, st);
}

static void teardown(void)
{
	if (!G.up)
		return;
	G.up = false;
	if (write(G.stop[1], "x", 1) != 1)
		abort();
	pthread_join(G.th, NULL);
	ctl_free(G.c);
	close(G.stop[0]);
	close(G.stop[1]);
	free(G.admin);
	free(G.register_body);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", G.root);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz_http: could not remove %s\n", G.root);
}

static void setup(void)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	/* The daemon's log would cost more than the requests. */
	sl_log_init(stderr, SL_LOG_ERROR);
	G.verbose = getenv("FUZZ_HTTP_VERBOSE") != NULL;
	struct stat st;
	const char *tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
	snprintf(G.root, sizeof(G.root), "%s/sl-fuzz-http-XXXXXX", tmp);
	FUZZ_CHECK(mkdtemp(G.root));
	snprintf(G.data, sizeof(G.data), "%s/data", G.root);
	snprintf(G.fleet, sizeof(G.fleet), "%s/fleet.yaml", G.root);
	FILE *f = fopen(G.fleet, "w");
	FUZZ_CHECK(f && fwrite(fleet_yaml, 1, sizeof(fleet_yaml) - 1, f) == sizeof(fleet_yaml) - 1);
	fclose(f);
	if (ctl_init_data(G.data, wall_ns(), &G.admin, &d) != SL_OK)
		fprintf(stderr, "fuzz_http: ctl_init_data: %s\n", d.msg);
	FUZZ_CHECK(G.admin);
	struct ctl_opts o = {.data_dir = G.data, .listen = "127.0.0.1:0", .fleet_file = G.fleet,
			     .preempt_notice_s = -1, .tls = -1,
			     .unreachable_after_s = 86400, .down_after_s = 2 * 86400};
	if (ctl_new(&o, wall_ns(), &G.c, &d) != SL_OK)
		fprintf(stderr, "fuzz_http: ctl_new: %s\n", d.msg);
	FUZZ_CHECK(G.c);
	G.port = ctl_port(G.c);
	FUZZ_CHECK(pipe(G.stop) == 0);
	FUZZ_CHECK(pthread_create(&G.th, NULL, loop, NULL) == 0);
	G.up = true;
	atexit(teardown);
	G.routes = ctl_routes(&G.nroutes);

	/* A join token for any node, then our agent with its discovery. */
	char *ans = NULL;
	FUZZ_CHECK(request("POST", "/v1/agent-tokens", G.admin, "{}", 2, false, &ans) == 201);
	FUZZ_CHECK(answer_field(ans, "token", G.join, sizeof(G.join)));
	free(ans);
	struct node_type *t = malloc(sizeof(*t));
	struct discovery *disc = malloc(sizeof(*disc));
	FUZZ_CHECK(t && disc && topo_builtin("hgx-h100-8", t) == SL_OK);
	FUZZ_CHECK(discovery_from_type(disc, t, &d) == SL_OK);
	json_t *reg = json_pack("{s:s, s:s, s:s, s:s, s:o}", "node", NODE, "addr", "127.0.0.1:7401",
				"boot_id", BOOT_ID, "agent_version", "fuzz", "discovery",
				discovery_to_json(disc));
	free(t);
	free(disc);
	FUZZ_CHECK(reg);
	G.register_body = json_dumps(reg, JSON_COMPACT);
	json_decref(reg);
	FUZZ_CHECK(request("POST", "/v1/agent/register", G.join, G.register_body,
			   strlen(G.register_body), false, &ans) == 200);
	FUZZ_CHECK(answer_field(ans, "credential", G.cred, sizeof(G.cred)));
	free(ans);
	FUZZ_CHECK(request("GET", "/healthz", NULL, NULL, 0, false, NULL) == 200);
}

/* A heartbeat body: the input, with our boot_id put in when it is a JSON
 * object (unless keep). */
static char *heartbeat_body(const uint8_t *data, size_t size, bool keep, size_t *len)
{
	json_t *o = keep ? NULL : json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (json_is_object(o) && json_object_set_new(o, "boot_id", json_string(BOOT_ID)) == 0) {
		char *s = json_dumps(o, JSON_COMPACT);
		json_decref(o);
		if (s) {
			*len = strlen(s);
			return s;
		}
	}
	json_decref(o);
	*len = size;
	return fuzz_text(data, size);
}

/* Mode 4: route sel of the table with the admin token. */
static void route_call(uint8_t sel, const uint8_t *data, size_t size)
{
	const struct ctl_route *r = &G.routes[sel % G.nroutes];
	/* The whole audit log as one answer grows with every request fuzzed
	 * (each is an entry) past any bound the harness could read; its paged
	 * and filtered reads (GET /v1/audit) stay in. */
	if (!strcmp(r->pattern, "/v1/audit/export"))
		return;
	const uint8_t *nl = memchr(data, '\n', size);
	size_t plen = nl ? (size_t)(nl - data) : 0;
	const uint8_t *rest = nl ? nl + 1 : data;
	size_t rlen = size - (size_t)(rest - data);
	if (plen > 128)
		plen = 128;
	struct sl_buf t = SL_BUF_INIT(1u << 20);
	for (const char *p = r->pattern; *p;) {
		if (*p == '{') {
			if (plen)
				add_target(&t, data, plen);
			else
				sl_buf_add(&t, "x", 1);
			const char *e = strchr(p, '}');
			p = e ? e + 1 : p + strlen(p);
		} else {
			sl_buf_add(&t, p, 1);
			p++;
		}
	}
	bool get = !strcmp(r->method, "GET");
	if (get && rlen) {
		sl_buf_add(&t, "?", 1);
		add_target(&t, rest, rlen);
	}
	FUZZ_CHECK(sl_buf_err(&t) == SL_OK);
	int st = request(r->method, sl_buf_str(&t), G.admin, get ? NULL : (const char *)rest,
			 get ? 0 : rlen, false, NULL);
	sl_buf_release(&t);
	/* PUT /v1/fleet or a drain may have moved our node. */
	if (!get && st >= 200 && st < 300)
		resync();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2 || size > (1u << 20))
		return 0;
	if (!G.up)
		setup();
	FUZZ_CHECK(!atomic_load(&G.ended));
	uint8_t mode = data[0], sel = data[1];
	data += 2, size -= 2;
	switch (mode % 5) {
	case 0: {
		struct answer a;
		exchange(data, size, RAW_QUIET_MS, false, &a);
		if (a.n)
			(void)check_answer(&a, false);
		if (G.verbose)
			fprintf(stderr, "fuzz_http: raw %zu bytes -> %.80s%s\n", size, a.b ? a.b : "",
				a.eof ? "" : " (cut off)");
		free(a.b);
		break;
	}
	case 1: {
		size_t len;
		char *body = heartbeat_body(data, size, sel & 1, &len);
		int st = request("POST", "/v1/agent/heartbeat", G.cred, body, len, false, NULL);
		free(body);
		if (st == 401 || st == 403 || (!(sel & 1) && st == 409))
			resync();
		break;
	}
	case 2: {
		char *body = fuzz_text(data, size);
		int st = request("POST", "/v1/agent/register", sel & 1 ? G.join : G.cred, body, size,
				 false, NULL);
		free(body);
		if (st == 200)
			resync(); /* it may have been ours, with another boot_id */
		break;
	}
	case 3: {
		struct sl_buf t = SL_BUF_INIT(1u << 20);
		sl_buf_addf(&t, "/v1/agent/work?%s", sel & 1 ? "" : "wait=0&");
		add_target(&t, data, size);
		FUZZ_CHECK(sl_buf_err(&t) == SL_OK);
		(void)request("GET", sl_buf_str(&t), G.cred, NULL, 0, sel & 1, NULL);
		sl_buf_release(&t);
		break;
	}
	default:
		route_call(sel, data, size);
		break;
	}
	if (++G.inputs % HEALTH_EVERY == 0)
		FUZZ_CHECK(request("GET", "/healthz", NULL, NULL, 0, false, NULL) == 200);
	FUZZ_CHECK(!atomic_load(&G.ended));
	return 0;
}

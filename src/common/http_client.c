/* http_client.c - a small JSON-over-HTTP client on libcurl's easy interface.
 *
 * The handle is reset before each request (curl_easy_reset keeps the
 * connection cache), so no option from one request leaks into the next. The
 * answer is collected in a buffer that refuses to grow past the named bound,
 * and curl's failure codes are turned into the few situations a CLI user can
 * act on: the controller is not there, did not answer in time, or the URL is
 * wrong. */
#include "http_client.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "buf.h"

/* Bytes of an unexpected body quoted in a diag. */
#define BODY_QUOTE 120

struct http_client {
	CURL *curl;
	CURLSH *share; /* the connection cache, shared with http_client_share */
	char *server; /* the one in use, without trailing '/' */
	char *auth;   /* "Authorization: Bearer ..." or NULL */
	/* Failover (docs/ha.md): the controllers given, and which is in use. */
	char *list;   /* the --server text, split in place at the commas */
	const char *urls[HTTP_CLIENT_MAX_SERVERS];
	int nurls, cur;
	uint64_t epoch; /* highest X-Suanli-Epoch seen */
};

/* Headers of one answer that failover reads. */
struct answer_headers {
	char leader[HTTP_CLIENT_URL_MAX];
	uint64_t epoch;
};

static size_t header_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	struct answer_headers *h = arg;
	size_t n = size * nmemb;
	static const char lh[] = "x-suanli-leader:", eh[] = "x-suanli-epoch:";
	if (n > sizeof(lh) && strncasecmp(data, lh, sizeof(lh) - 1) == 0) {
		size_t i = sizeof(lh) - 1, k = 0;
		while (i < n && data[i] == ' ')
			i++;
		while (i < n && data[i] > ' ' && k + 1 < sizeof(h->leader))
			h->leader[k++] = data[i++];
		h->leader[k] = '\0';
	} else if (n > sizeof(eh) && strncasecmp(data, eh, sizeof(eh) - 1) == 0) {
		char num[24];
		size_t len = n - (sizeof(eh) - 1) < sizeof(num) - 1 ? n - (sizeof(eh) - 1) : sizeof(num) - 1;
		memcpy(num, data + sizeof(eh) - 1, len);
		num[len] = '\0';
		h->epoch = strtoull(num, NULL, 10);
	}
	return n;
}

/* The CA every client of this process verifies HTTPS servers against
 * (http_client_set_ca); NULL: the system's store. */
static char *client_ca;

enum sl_err http_client_set_ca(const char *path, struct sl_diag *d)
{
	char *p = NULL;
	if (path) {
		FILE *f = fopen(path, "r");
		if (!f) {
			sl_diag_hint(d, "the controller's CA is DATA/tls/ca.pem on its host (docs/security.md)");
			return sl_diag_set(d, SL_EINVAL, "cannot read the CA file %.200s: %s", path,
					   strerror(errno));
		}
		fclose(f);
		if (!(p = strdup(path)))
			return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	free(client_ca);
	client_ca = p;
	return SL_OK;
}

/* TLS 1.2 or later, verified against our CA when one was given (libcurl
 * verifies the peer and its name by default). */
static void tls_opts(CURL *h)
{
	(void)curl_easy_setopt(h, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	if (client_ca)
		(void)curl_easy_setopt(h, CURLOPT_CAINFO, client_ca);
}

enum sl_err http_client_global_init(struct sl_diag *d)
{
	CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
	if (rc != CURLE_OK)
		return sl_diag_set(d, SL_EIO, "cannot initialise libcurl: %s",
				   curl_easy_strerror(rc));
	return SL_OK;
}

void http_client_global_cleanup(void)
{
	free(client_ca);
	client_ca = NULL;
	curl_global_cleanup();
}

/* True if s has a control character, or a space when spaces are refused. */
static int has_ctl(const char *s, int no_space)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f || (no_space && c == ' '))
			return 1;
	}
	return 0;
}

enum sl_err http_client_new(const char *server, const char *token,
			    struct http_client **out, struct sl_diag *d)
{
	struct http_client *c;
	size_t n;

	*out = NULL;
	if (!server || has_ctl(server, 1) || strlen(server) >= HTTP_CLIENT_URL_MAX) {
		sl_diag_hint(d, "give the controller's URL, as http://127.0.0.1:7400, "
				"with --server or SUANLI_SERVER");
		return sl_diag_set(d, SL_EINVAL, "bad server URL '%.200s'",
				   server ? server : "");
	}
	/* A comma-separated list names several controllers (one leads). */
	int nurl = 1;
	for (const char *p = server; *p; p++)
		nurl += *p == ',';
	for (const char *p = server; nurl <= HTTP_CLIENT_MAX_SERVERS;) {
		if (strncmp(p, "http://", 7) != 0 && strncmp(p, "https://", 8) != 0)
			nurl = HTTP_CLIENT_MAX_SERVERS + 1;
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	if (nurl > HTTP_CLIENT_MAX_SERVERS) {
		sl_diag_hint(d, "give the controller's URL, as http://127.0.0.1:7400, or up to %d "
				"of them separated by commas, with --server or SUANLI_SERVER",
			     HTTP_CLIENT_MAX_SERVERS);
		return sl_diag_set(d, SL_EINVAL, "bad server URL '%.200s'", server);
	}
	if (token && (has_ctl(token, 1) || strlen(token) >= HTTP_CLIENT_HEADER_MAX ||
		      !*token)) {
		sl_diag_hint(d, "check --token or SUANLI_TOKEN");
		return sl_diag_set(d, SL_EINVAL, "the token is empty, too long or has "
						 "spaces or control characters");
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	c->list = strdup(server);
	for (char *p = c->list, *save = NULL, *t = p ? strtok_r(p, ",", &save) : NULL; t;
	     t = strtok_r(NULL, ",", &save)) {
		size_t tl = strlen(t);
		while (tl > 0 && t[tl - 1] == '/')
			t[--tl] = '\0';
		c->urls[c->nurls++] = t;
	}
	c->server = c->nurls ? strdup(c->urls[0]) : NULL;
	c->curl = curl_easy_init();
	c->share = curl_share_init();
	if (c->share &&
	    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) != CURLSHE_OK) {
		curl_share_cleanup(c->share);
		c->share = NULL;
	}
	if (token) {
		size_t al = strlen(token) + sizeof("Authorization: Bearer ");
		c->auth = malloc(al);
		if (c->auth)
			snprintf(c->auth, al, "Authorization: Bearer %s", token);
	}
	if (!c->list || !c->server || !c->curl || !c->share || (token && !c->auth)) {
		http_client_free(c);
		return sl_diag_set(d, SL_ENOMEM, "out of memory (or libcurl failed)");
	}
	n = strlen(c->server);
	while (n > 0 && c->server[n - 1] == '/')
		c->server[--n] = '\0';
	*out = c;
	return SL_OK;
}

void http_client_free(struct http_client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	if (c->share)
		curl_share_cleanup(c->share);
	free(c->server);
	free(c->list);
	free(c->auth);
	free(c);
}

enum sl_err http_client_set_token(struct http_client *c, const char *token,
				  struct sl_diag *d)
{
	char *auth = NULL;
	if (token) {
		if (has_ctl(token, 1) || strlen(token) >= HTTP_CLIENT_HEADER_MAX || !*token) {
			sl_diag_hint(d, "check --token or SUANLI_TOKEN");
			return sl_diag_set(d, SL_EINVAL, "the token is empty, too long or has "
							 "spaces or control characters");
		}
		size_t al = strlen(token) + sizeof("Authorization: Bearer ");
		if (!(auth = malloc(al)))
			return sl_diag_set(d, SL_ENOMEM, "out of memory");
		snprintf(auth, al, "Authorization: Bearer %s", token);
	}
	free(c->auth);
	c->auth = auth;
	return SL_OK;
}

void http_client_share(struct http_client *c, void *easy)
{
	if (c && easy) {
		(void)curl_easy_setopt((CURL *)easy, CURLOPT_SHARE, c->share);
		tls_opts((CURL *)easy);
	}
}

void http_response_release(struct http_response *resp)
{
	if (!resp)
		return;
	free(resp->body);
	memset(resp, 0, sizeof(*resp));
}

size_t http_sink_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct http_sink *s = arg;
	size_t n = size * nmemb;
	if (n > s->max - s->len) {
		s->too_large = true;
		return 0;
	}
	if (sl_grow(&s->buf, &s->cap, s->len + n + 1, s->max + 1)) {
		s->no_mem = true;
		return 0;
	}
	memcpy(s->buf + s->len, data, n);
	s->len += n;
	s->buf[s->len] = '\0';
	return n;
}

static enum sl_err transport_error(struct http_client *c, CURLcode rc,
				   const char *errbuf, long timeout_ms,
				   struct sl_diag *d)
{
	long os_errno = 0;
	(void)curl_easy_getinfo(c->curl, CURLINFO_OS_ERRNO, &os_errno);
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		sl_diag_hint(d, "is suanlid running? set --server or SUANLI_SERVER");
		return sl_diag_set(d, SL_EIO, "cannot reach the controller at %s: %s",
				   c->server,
				   os_errno == ECONNREFUSED ? "connection refused"
				   : os_errno ? strerror((int)os_errno)
					      : "cannot connect");
	case CURLE_COULDNT_RESOLVE_HOST:
		sl_diag_hint(d, "check the host name in --server or SUANLI_SERVER");
		return sl_diag_set(d, SL_EIO, "cannot reach the controller at %s: "
					      "unknown host", c->server);
	case CURLE_OPERATION_TIMEDOUT:
		sl_diag_hint(d, "the controller may be overloaded or unreachable; "
				"retry, or allow more time");
		return sl_diag_set(d, SL_EIO, "no answer from the controller at %s "
					      "within %ld ms", c->server, timeout_ms);
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		sl_diag_hint(d, "give the controller's URL, as http://127.0.0.1:7400");
		return sl_diag_set(d, SL_EINVAL, "bad server URL '%s': %s", c->server,
				   errbuf[0] ? errbuf : curl_easy_strerror(rc));
	case CURLE_FILESIZE_EXCEEDED:
		return sl_diag_set(d, SL_ELIMIT, "the controller's answer is larger "
						 "than %zu bytes",
				   HTTP_CLIENT_MAX_RESPONSE);
	default:
		sl_diag_hint(d, "retry; if it persists, check the controller's log");
		return sl_diag_set(d, SL_EIO, "request to the controller at %s failed: %s",
				   c->server, errbuf[0] ? errbuf : curl_easy_strerror(rc));
	}
}

static int method_ok(const char *m)
{
	static const char *const ok[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"};
	for (size_t i = 0; m && i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strcmp(m, ok[i]) == 0)
			return 1;
	return 0;
}

/* Adds one header to *list; -1 when out of memory. */
static int add_header(struct curl_slist **list, const char *h)
{
	struct curl_slist *n = curl_slist_append(*list, h);
	if (!n)
		return -1;
	*list = n;
	return 0;
}

static enum sl_err build_headers(struct http_client *c, const char *ctype,
				 const char *idem, struct curl_slist **out,
				 struct sl_diag *d)
{
	char line[HTTP_CLIENT_HEADER_MAX + 32];
	struct curl_slist *h = NULL;
	int bad = add_header(&h, "Accept: application/json") ||
		  add_header(&h, "Expect:") ||
		  (c->auth && add_header(&h, c->auth));
	if (!bad && ctype) {
		snprintf(line, sizeof(line), "Content-Type: %s", ctype);
		bad = add_header(&h, line);
	}
	if (!bad && idem) {
		snprintf(line, sizeof(line), "Idempotency-Key: %s", idem);
		bad = add_header(&h, line);
	}
	*out = h;
	return bad ? sl_diag_set(d, SL_ENOMEM, "out of memory") : SL_OK;
}

enum sl_err http_client_request(struct http_client *c, const char *method,
				const char *path, const char *body, size_t body_len,
				const char *idempotency_key, long timeout_ms,
				struct http_response *resp, struct sl_diag *d)
{
	return http_client_request_ct(c, method, path, body ? "application/json" : NULL,
				      body, body_len, idempotency_key, timeout_ms, resp, d);
}

static enum sl_err request_once(struct http_client *c, const char *method,
				const char *path, const char *content_type,
				const char *body, size_t body_len,
				const char *idempotency_key, long timeout_ms,
				struct http_response *resp, struct answer_headers *ah,
				CURLcode *rc_out, struct sl_diag *d)
{
	char url[2 * HTTP_CLIENT_URL_MAX];
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	struct http_sink sink = {.max = HTTP_CLIENT_MAX_RESPONSE};
	enum sl_err e;
	CURLcode rc;

	memset(resp, 0, sizeof(*resp));
	if (!method_ok(method))
		return sl_diag_set(d, SL_EINVAL, "unsupported HTTP method '%s'",
				   method ? method : "");
	if (!path || path[0] != '/' || has_ctl(path, 1) ||
	    strlen(path) >= HTTP_CLIENT_URL_MAX)
		return sl_diag_set(d, SL_EINVAL, "bad request path '%.200s'",
				   path ? path : "");
	if (idempotency_key && (!*idempotency_key || has_ctl(idempotency_key, 0) ||
				strlen(idempotency_key) >= HTTP_CLIENT_HEADER_MAX))
		return sl_diag_set(d, SL_EINVAL, "bad Idempotency-Key (empty, too long "
						 "or with control characters)");
	if (content_type && (!*content_type || has_ctl(content_type, 0) ||
			     strlen(content_type) >= HTTP_CLIENT_HEADER_MAX))
		return sl_diag_set(d, SL_EINVAL, "bad Content-Type (empty, too long or "
						 "with control characters)");
	if (timeout_ms <= 0)
		timeout_ms = HTTP_CLIENT_DEFAULT_TIMEOUT_MS;
	snprintf(url, sizeof(url), "%s%s", c->server, path);
	e = build_headers(c, body ? content_type : NULL, idempotency_key, &hdrs, d);
	if (e != SL_OK) {
		curl_slist_free_all(hdrs);
		return e;
	}

	CURL *h = c->curl;
	curl_easy_reset(h);
	(void)curl_easy_setopt(h, CURLOPT_SHARE, c->share);
	(void)curl_easy_setopt(h, CURLOPT_URL, url);
	(void)curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	tls_opts(h);
	(void)curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	(void)curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	(void)curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	(void)curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	(void)curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_sink_write);
	(void)curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
	(void)curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
	(void)curl_easy_setopt(h, CURLOPT_HEADERDATA, ah);
	(void)curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
			       (curl_off_t)HTTP_CLIENT_MAX_RESPONSE);
	if (strcmp(method, "HEAD") == 0)
		(void)curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") != 0)
		(void)curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (body) {
		(void)curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
		(void)curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	}
	rc = curl_easy_perform(h);
	*rc_out = rc;
	curl_slist_free_all(hdrs);
	/* the handle keeps pointers to these; drop them before they go away */
	(void)curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	(void)curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);

	if (sink.too_large || sink.no_mem || rc != CURLE_OK) {
		free(sink.buf);
		if (sink.too_large)
			return sl_diag_set(d, SL_ELIMIT, "the controller's answer is "
							 "larger than %zu bytes",
					   HTTP_CLIENT_MAX_RESPONSE);
		if (sink.no_mem)
			return sl_diag_set(d, SL_ENOMEM, "out of memory reading the answer");
		return transport_error(c, rc, errbuf, timeout_ms, d);
	}
	long status = 0;
	curl_off_t ra = 0;
	(void)curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &ra) != CURLE_OK || ra < 0)
		ra = 0;
	resp->retry_after_s = ra > 86400 ? 86400 : (long)ra;
	if (!sink.buf && !(sink.buf = calloc(1, 1)))
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	resp->status = (int)status;
	resp->body = sink.buf;
	resp->len = sink.len;
	resp->epoch = ah->epoch;
	return SL_OK;
}

/* Makes url the server in use. */
static void use_server(struct http_client *c, const char *url)
{
	char *s = strdup(url);
	if (!s)
		return;
	size_t n = strlen(s);
	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
	free(c->server);
	c->server = s;
	for (int i = 0; i < c->nurls; i++)
		if (!strcmp(c->urls[i], s))
			c->cur = i;
}

static void sleep_ms(long ms)
{
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&t, NULL);
}

static int64_t mono_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Failover: a standby's 503 "not_leader" is followed to the leader it names
 * (X-Suanli-Leader), or else the next controller of the list is tried; so is
 * one that cannot be reached, when the request is safe to send twice (no
 * request sent at all, a GET, or an Idempotency-Key, which makes the server
 * answer a retry with the first answer). Rounds that find no leader (a
 * takeover in progress) are repeated for up to HTTP_CLIENT_FAILOVER_MS. */
enum sl_err http_client_request_ct(struct http_client *c, const char *method,
				   const char *path, const char *content_type,
				   const char *body, size_t body_len,
				   const char *idempotency_key, long timeout_ms,
				   struct http_response *resp, struct sl_diag *d)
{
	int64_t give_up = mono_ms() + HTTP_CLIENT_FAILOVER_MS;
	bool safe = idempotency_key || (method && (!strcmp(method, "GET") || !strcmp(method, "HEAD")));
	for (int attempt = 1;; attempt++) {
		struct answer_headers ah = {.epoch = 0};
		CURLcode rc = CURLE_OK;
		enum sl_err e = request_once(c, method, path, content_type, body, body_len,
					     idempotency_key, timeout_ms, resp, &ah, &rc, d);
		bool not_leader = e == SL_OK && resp->status == 503 && resp->body &&
				  strstr(resp->body, "\"not_leader\"");
		bool unreachable = e == SL_EIO && c->nurls > 1 &&
				   (rc == CURLE_COULDNT_CONNECT || safe);
		if (e == SL_OK && ah.epoch > c->epoch)
			c->epoch = ah.epoch;
		if ((!not_leader && !unreachable) || mono_ms() > give_up)
			return e;
		if (not_leader && ah.leader[0] && strcmp(ah.leader, c->server) &&
		    (!strncmp(ah.leader, "http://", 7) || !strncmp(ah.leader, "https://", 8))) {
			use_server(c, ah.leader);
		} else {
			if (c->nurls > 1)
				use_server(c, c->urls[(c->cur + 1) % c->nurls]);
			if (c->nurls <= 1 || attempt % c->nurls == 0)
				sleep_ms(HTTP_CLIENT_FAILOVER_PAUSE_MS);
		}
		if (not_leader)
			http_response_release(resp);
		sl_diag_clear(d);
	}
}

uint64_t http_client_epoch(const struct http_client *c)
{
	return c ? c->epoch : 0;
}

const char *http_client_server(const struct http_client *c)
{
	return c ? c->server : NULL;
}

static enum sl_err err_from_code(const char *code)
{
	for (int i = 0; i < SL_ERR__COUNT; i++)
		if (strcmp(code, sl_err_code((enum sl_err)i)) == 0)
			return (enum sl_err)i;
	return SL_EIO;
}

enum sl_err http_client_error_diag(const struct http_response *resp,
				   struct sl_diag *d)
{
	json_t *doc = resp->body ? json_loadb(resp->body, resp->len, 0, NULL) : NULL;
	json_t *err = json_object_get(doc, "error");
	const char *code = json_string_value(json_object_get(err, "code"));
	const char *msg = json_string_value(json_object_get(err, "message"));
	const char *hint = json_string_value(json_object_get(err, "hint"));
	enum sl_err e;

	if (!code || !msg) {
		char quote[BODY_QUOTE + 1];
		size_t n = 0;
		for (size_t i = 0; resp->body && i < resp->len && n < BODY_QUOTE; i++)
			quote[n++] = isprint((unsigned char)resp->body[i]) ? resp->body[i] : ' ';
		quote[n] = '\0';
		json_decref(doc);
		return sl_diag_set(d, SL_EIO, "the controller answered %d%s%s", resp->status,
				   n ? ": " : "", quote);
	}
	e = err_from_code(code);
	if (e == SL_OK)
		e = SL_EIO;
	sl_diag_set(d, e, "%s", msg);
	if (hint && *hint)
		sl_diag_hint(d, "%s", hint);
	json_decref(doc);
	return e;
}

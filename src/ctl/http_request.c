/* http_request.c - what a handler sees of a request (method, path, query,
 * headers, body, peer) and the JSON answers built on http_respond: every error
 * body has the one shape {"error": {"code", "message", "hint"}} (DESIGN.md §8).
 * The server and MHD's callbacks are in http.c. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "http_int.h"

/* jansson refuses strings that are not UTF-8; such text (an echo of bad
 * input, say) is kept readable with '?' for each byte outside ASCII. */
static json_t *json_text(const char *s)
{
	json_t *j = json_string(s);
	if (j)
		return j;
	char *c = strdup(s);
	if (!c)
		return NULL;
	for (char *p = c; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	j = json_string(c);
	free(c);
	return j;
}

json_t *http_error_json(enum sl_err e, const char *message, const char *hint)
{
	json_t *err = json_object(), *doc = json_object();
	if (!err || !doc)
		goto fail;
	if (json_object_set_new(err, "code", json_string(sl_err_code(e))) ||
	    json_object_set_new(err, "message",
				json_text(message ? message : sl_err_message(e))) ||
	    json_object_set_new(err, "hint", json_text(hint ? hint : "")))
		goto fail;
	if (json_object_set_new(doc, "error", err)) {
		err = NULL;
		goto fail;
	}
	return doc;
fail:
	json_decref(err);
	json_decref(doc);
	return NULL;
}

void http_respond_error_status(struct http_request *r, int status, enum sl_err e,
			       const char *message, const char *hint)
{
	json_t *doc = http_error_json(e, message, hint);
	if (!doc) {
		http_respond(r, 503, "application/json",
			     "{\"error\":{\"code\":\"out_of_memory\",\"message\":"
			     "\"out of memory\",\"hint\":\"\"}}",
			     sizeof("{\"error\":{\"code\":\"out_of_memory\",\"message\":"
				    "\"out of memory\",\"hint\":\"\"}}") - 1);
		return;
	}
	http_respond_json(r, status, doc);
	json_decref(doc);
}

void http_respond_json(struct http_request *r, int status, const json_t *body)
{
	char *text = body ? json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	if (!text) {
		/* out of memory: answering is still owed; close instead */
		if (r && !r->answered) {
			r->close_only = 1;
			http_respond(r, status, NULL, NULL, 0);
		}
		return;
	}
	http_respond(r, status, "application/json", text, strlen(text));
	free(text);
}

void http_respond_error(struct http_request *r, enum sl_err e,
			const char *message, const char *hint)
{
	http_respond_error_status(r, sl_err_http_status(e), e, message, hint);
}

void http_respond_diag(struct http_request *r, enum sl_err e,
		       const struct sl_diag *d)
{
	http_respond_error(r, e, d && d->msg[0] ? d->msg : NULL,
			   d && d->hint[0] ? d->hint : NULL);
}

/* ---- request accessors ---- */

const char *http_request_method(const struct http_request *r)
{
	return r->method;
}

const char *http_request_path(const struct http_request *r)
{
	return r->path;
}

const char *http_request_query(const struct http_request *r)
{
	return r->query;
}

const char *http_request_param(const struct http_request *r, const char *name)
{
	for (size_t i = 0; i < r->nparams; i++)
		if (strcmp(r->params[i].name, name) == 0)
			return r->params[i].value;
	return NULL;
}

const char *http_request_header(const struct http_request *r, const char *name)
{
	for (size_t i = 0; i < r->nhdrs; i++)
		if (strcasecmp(r->hdrs[i].name, name) == 0)
			return r->hdrs[i].value;
	return NULL;
}

const char *http_request_body(const struct http_request *r, size_t *len)
{
	if (len)
		*len = r->body_len;
	return r->body ? r->body : "";
}

const char *http_request_peer(const struct http_request *r)
{
	return r->peer;
}

int http_request_gone(const struct http_request *r)
{
	return r->gone;
}

void http_request_set_route(struct http_request *r, const char *label)
{
	r->route = label;
}

void http_request_set_user(struct http_request *r, void *user)
{
	r->user = user;
}

void *http_request_user(const struct http_request *r)
{
	return r->user;
}

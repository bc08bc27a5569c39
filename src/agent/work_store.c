/* work_store.c - the supervisor's life cycle and STATE_DIR/work.json.
 *
 * work.json is the supervisor's memory across agent restarts and crashes:
 *   {"version": 1, "epochs": [{"lease", "epoch"}],
 *    "items": [{"spec": {work item}, "next": {work item}?, "state", "pid",
 *               "start_ticks", "exit_code", "signal", "restarts", "consec",
 *               "started_at", "ended_at", "log_offset", "want_stop",
 *               "desired", "lost", "reported"}]}
 * It is rewritten whole and atomically. On start each process it names is
 * checked (same pid and start time, not a zombie): alive ones are adopted,
 * the others are reported as exited and lost. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "log.h"
#include "state.h"
#include "work_int.h"

#define WORK_JSON_VERSION 1

static const char *const state_names[] = {
	[IT_PENDING] = "pending", [IT_RUNNING] = "running", [IT_STOPPING] = "stopping",
	[IT_BACKOFF] = "backoff", [IT_EXITED] = "exited",   [IT_STOPPED] = "stopped"};

static json_t *item_to_json(const struct work_item *it)
{
	json_t *spec = work_spec_to_json(&it->spec);
	json_t *o = spec ? json_pack("{s:o, s:s, s:i, s:I, s:i, s:i, s:i, s:i, s:I, s:I, s:I, "
				     "s:b, s:b, s:b, s:b}",
				     "spec", spec, "state", state_names[it->state], "pid",
				     (int)it->pid, "start_ticks", (json_int_t)it->start_ticks,
				     "exit_code", it->exit_code, "signal", it->signal, "restarts",
				     it->restarts, "consec", it->consec, "started_at",
				     (json_int_t)it->started_at, "ended_at",
				     (json_int_t)it->ended_at, "log_offset",
				     (json_int_t)it->log_offset, "want_stop", it->want_stop,
				     "desired", it->desired, "lost", it->lost, "reported",
				     it->reported)
			 : NULL;
	if (o && it->next) {
		json_t *nx = work_spec_to_json(it->next);
		if (!nx || json_object_set_new(o, "next", nx) != 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

enum sl_err work_sup_save(struct work_sup *s, struct sl_diag *d)
{
	char path[STATE_PATH_MAX];
	json_t *root = json_pack("{s:i, s:[], s:[]}", "version", WORK_JSON_VERSION, "epochs",
				 "items");
	json_t *ep = json_object_get(root, "epochs"), *items = json_object_get(root, "items");
	enum sl_err e;

	for (size_t i = 0; root && i < s->nepochs; i++)
		if (json_array_append_new(ep, json_pack("{s:s, s:I}", "lease", s->epochs[i].lease,
							"epoch",
							(json_int_t)s->epochs[i].epoch)) != 0)
			goto oom;
	for (size_t i = 0; root && i < s->n; i++)
		if (json_array_append_new(items, item_to_json(s->items[i])) != 0)
			goto oom;
	if (!root)
		goto oom;
	char *text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	if (!text)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	e = state_path(path, sizeof(path), s->dir, d, "work.json");
	if (e == SL_OK)
		e = state_write_atomic(path, text, strlen(text), 0600, d);
	free(text);
	if (e == SL_OK)
		s->dirty = false;
	return e;
oom:
	json_decref(root);
	return sl_diag_set(d, SL_ENOMEM, "out of memory");
}

static bool get_int(const json_t *o, const char *k, int64_t lo, int64_t hi, int64_t *out)
{
	const json_t *v = json_object_get(o, k);
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return false;
	*out = json_integer_value(v);
	return true;
}

static bool get_bool(const json_t *o, const char *k, bool *out)
{
	const json_t *v = json_object_get(o, k);
	if (!json_is_boolean(v))
		return false;
	*out = json_is_true(v);
	return true;
}

static enum sl_err item_from_json(const json_t *o, struct work_item **out, struct sl_diag *d)
{
	struct work_item *it = calloc(1, sizeof(*it));
	const char *st = json_string_value(json_object_get(o, "state"));
	int64_t pid, ticks, ec, sig, rs, cs, sa, ea, lo;
	enum sl_err e;

	*out = NULL;
	if (!it)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	if ((e = work_spec_from_json(json_object_get(o, "spec"), &it->spec, d)) != SL_OK) {
		free(it);
		return e;
	}
	if (json_object_get(o, "next")) {
		it->next = calloc(1, sizeof(*it->next));
		if (!it->next) {
			work_item_free(it);
			return sl_diag_set(d, SL_ENOMEM, "out of memory");
		}
		if ((e = work_spec_from_json(json_object_get(o, "next"), it->next, d)) != SL_OK) {
			work_item_free(it);
			return e;
		}
	}
	int state = -1;
	for (int i = 0; st && i <= IT_STOPPED; i++)
		if (strcmp(st, state_names[i]) == 0)
			state = i;
	if (state < 0 || !get_int(o, "pid", 0, INT32_MAX, &pid) ||
	    !get_int(o, "start_ticks", 0, INT64_MAX, &ticks) ||
	    !get_int(o, "exit_code", -1, 255, &ec) || !get_int(o, "signal", 0, 127, &sig) ||
	    !get_int(o, "restarts", 0, INT32_MAX, &rs) || !get_int(o, "consec", 0, 64, &cs) ||
	    !get_int(o, "started_at", 0, INT64_MAX, &sa) ||
	    !get_int(o, "ended_at", 0, INT64_MAX, &ea) ||
	    !get_int(o, "log_offset", 0, INT64_MAX, &lo) ||
	    !get_bool(o, "want_stop", &it->want_stop) || !get_bool(o, "desired", &it->desired) ||
	    !get_bool(o, "lost", &it->lost) || !get_bool(o, "reported", &it->reported)) {
		work_item_free(it);
		return sl_diag_set(d, SL_EINVAL, "an item's state, pid or counters are missing "
						 "or out of range");
	}
	it->state = (enum work_item_state)state;
	it->pid = (pid_t)pid;
	it->start_ticks = (uint64_t)ticks;
	it->exit_code = (int)ec;
	it->signal = (int)sig;
	it->restarts = (int)rs;
	it->consec = (int)cs;
	it->started_at = sa;
	it->ended_at = ea;
	it->log_offset = lo;
	*out = it;
	return SL_OK;
}

static enum sl_err load(struct work_sup *s, const char *path, int64_t now_ns, struct sl_diag *d)
{
	char *text = NULL;
	size_t len = 0, i;
	json_t *root, *v;
	enum sl_err e = sl_read_file(path, STATE_WORK_JSON_MAX, &text, &len, d);

	if (e != SL_OK)
		return e;
	if (d)
		d->file = NULL; /* the messages below name the file themselves */
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	free(text);
	json_t *eps = json_object_get(root, "epochs"), *items = json_object_get(root, "items");
	if (!json_is_object(root) ||
	    json_integer_value(json_object_get(root, "version")) != WORK_JSON_VERSION ||
	    !json_is_array(eps) || json_array_size(eps) > WORK_MAX_LEASES ||
	    !json_is_array(items) || json_array_size(items) > WORK_MAX_ITEMS) {
		json_decref(root);
		return sl_diag_set(d, SL_EINVAL, "%s is not a work.json of this agent version",
				   path);
	}
	json_array_foreach(eps, i, v) {
		const char *l = json_string_value(json_object_get(v, "lease"));
		int64_t ep;
		if (!l || strlen(l) >= WORK_ID_MAX || !get_int(v, "epoch", -1, INT64_MAX, &ep)) {
			json_decref(root);
			return sl_diag_set(d, SL_EINVAL, "%s: epochs[%zu] is malformed", path, i);
		}
		snprintf(s->epochs[s->nepochs].lease, WORK_ID_MAX, "%s", l);
		s->epochs[s->nepochs++].epoch = ep;
	}
	json_array_foreach(items, i, v) {
		struct work_item *it = NULL;
		if ((e = item_from_json(v, &it, d)) != SL_OK) {
			char msg[SL_DIAG_MSG];
			if (d) {
				memcpy(msg, d->msg, sizeof(msg));
				snprintf(d->msg, sizeof(d->msg), "%.200s items[%zu]: %.280s", path, i, msg);
			}
			json_decref(root);
			return SL_EINVAL;
		}
		if (work_find(s, it->spec.job, it->spec.rank)) {
			work_item_free(it);
			continue;
		}
		s->items[s->n++] = it;
		if (it->state == IT_RUNNING || it->state == IT_STOPPING)
			it->child = true; /* item_poll falls back to /proc when it is not */
		if (it->state == IT_STOPPING)
			it->deadline_ns = now_ns + (int64_t)it->spec.stop_grace_s * 1000000000LL;
		if (it->state == IT_BACKOFF)
			it->deadline_ns = now_ns + WORK_BACKOFF_MIN_NS;
		it->run_start_ns = now_ns;
	}
	json_decref(root);
	return SL_OK;
}

enum sl_err work_sup_new(const char *state_dir, const struct discovery *disc, int64_t now_ns,
			 struct work_sup **out, struct sl_diag *d)
{
	char path[STATE_PATH_MAX];
	struct work_sup *s;
	enum sl_err e;

	*out = NULL;
	if ((e = state_path(path, sizeof(path), state_dir, d, "work.json")) != SL_OK)
		return e;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->dir = strdup(state_dir))) {
		free(s);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	s->disc = disc;
	s->default_grace_s = WORK_GRACE_DEFAULT_S;
	s->log_limit = WORK_LOG_LIMIT_DEFAULT;
	FILE *f = fopen(path, "re");
	if (f) {
		fclose(f);
		if ((e = load(s, path, now_ns, d)) != SL_OK) {
			sl_diag_hint(d, "move %s aside to start afresh (its processes are then "
					"not adopted; stop them by hand)", path);
			work_sup_free(s);
			return e;
		}
		size_t live = 0;
		for (size_t i = 0; i < s->n; i++)
			live += s->items[i]->state == IT_RUNNING || s->items[i]->state == IT_STOPPING;
		(void)work_sup_tick(s, now_ns);
		sl_log_info("work.json read", "items=%zu were_running=%zu", s->n, live);
		for (size_t i = 0; i < s->n; i++) {
			const struct work_item *it = s->items[i];
			if (it->state == IT_RUNNING)
				sl_log_info("work adopted", "job=%s rank=%d pid=%d", it->spec.job,
					    it->spec.rank, (int)it->pid);
		}
	} else if (errno != ENOENT) {
		int en = errno;
		work_sup_free(s);
		return sl_diag_set(d, SL_EIO, "cannot read %s: %s", path, strerror(en));
	}
	*out = s;
	return SL_OK;
}

void work_sup_set_default_grace(struct work_sup *s, int grace_s)
{
	if (grace_s >= 0 && grace_s <= WORK_GRACE_MAX_S)
		s->default_grace_s = grace_s;
}

void work_sup_set_log_limit(struct work_sup *s, int64_t bytes)
{
	if (bytes > 0)
		s->log_limit = bytes;
}

void work_sup_free(struct work_sup *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		work_item_free(s->items[i]);
	free(s->dir);
	free(s);
}

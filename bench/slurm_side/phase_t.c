/* bench/slurm_side/phase_t.c - phase T of bench_slurm_side (main.c says what
 * each phase measures). */
#include <jansson.h>
#include "bench_lib.h"

#include "slurm_side.h"

/* ---- T: multi-node jobs, one leaf or not ---- */

/* "2026-12-05T08:00:00.123Z" for wall time t. */
static void rfc3339_ms(double t, char *buf, size_t n)
{
	time_t sec = (time_t)t;
	struct tm tm;
	char date[32];
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", gmtime_r(&sec, &tm));
	snprintf(buf, n, "%s.%03dZ", date, (int)((t - (double)sec) * 1000.0));
}

/* The fleet's node names as one range "n[001-032]" (a prefix and numbers
 * of one width, in order, without gaps), as a reservation takes them. */
static void node_range(const struct side *s, char *buf, size_t n)
{
	const char *a = s->nodes[0], *z = s->nodes[s->nnodes - 1];
	size_t pre = strcspn(a, "0123456789"), w = strlen(a) - pre;
	for (int i = 0; i < s->nnodes; i++)
		if (strncmp(s->nodes[i], a, pre) || strlen(s->nodes[i]) != pre + w ||
		    atoi(s->nodes[i] + pre) != atoi(a + pre) + i)
			bl_die("T: node %s breaks the range %s..%s (T_RELEASE=resume works on any "
			       "fleet)", s->nodes[i], a, z);
	snprintf(buf, n, "%.*s[%s-%s]", (int)pre, a, a + pre, z + pre);
}

/* Reserves every node for tenant "hold" from now until now + hold_s; returns
 * the window's end (wall seconds, whole milliseconds). */
static double hold_all(struct side *s, double hold_s)
{
	char range[96], from[40], to[40], body[256], *ans = NULL;
	node_range(s, range, sizeof(range));
	double now = wall_s(), end = (double)(long long)((now + hold_s) * 1000.0) / 1000.0;
	rfc3339_ms(now - 1.0, from, sizeof(from));
	rfc3339_ms(end, to, sizeof(to));
	snprintf(body, sizeof(body), "{\"tenant\":\"hold\",\"nodes\":\"%s\",\"start\":\"%s\","
		 "\"end\":\"%s\"}", range, from, to);
	int st = bl_call(&s->c, s->dm.port, "POST", "/v1/reservations", s->dm.admin, body, NULL,
			 &ans);
	if (st != 201 && st != 200)
		bl_die("POST /v1/reservations %s answered %d: %.300s", body, st, ans ? ans : "");
	free(ans);
	return end;
}

void phase_t(struct side *s, const char *swfile)
{
	side_start(s);
	bool resume = getenv("T_RELEASE") && !strcmp(getenv("T_RELEASE"), "resume");
	if (!resume) {
		char *body = NULL;
		int st = bl_call(&s->c, s->dm.port, "POST", "/v1/tenants", s->dm.admin,
				 "{\"name\":\"hold\"}", NULL, &body);
		if (st != 201)
			bl_die("creating the tenant hold answered %d: %s", st, body ? body : "");
		free(body);
	}
	for (int one = 1; one >= 0; one--) {
		FILE *f = fopen(swfile, "r");
		if (!f)
			bl_die("cannot read %s", swfile);
		int nr, gp, secs, n = 0;
		long first = -1;
		double t0 = 0;
		if (resume)
			all_nodes(s, true);
		else
			t0 = hold_all(s, 5.0);
		while (fscanf(f, "%d %d %d", &nr, &gp, &secs) == 3) {
			char body[160], *ans = NULL, id[32];
			if (nr > 1)
				snprintf(body, sizeof(body),
					 "{\"gpus\":%d,\"per_node\":%d,\"duration_s\":%d%s}", nr * gp,
					 gp, secs, one ? ",\"one_leaf\":true" : "");
			else
				snprintf(body, sizeof(body), "{\"gpus\":%d,\"duration_s\":%d}", gp, secs);
			int st = bl_call(&s->c, s->dm.port, "POST", "/v1/leases", s->tok, body, NULL,
					 &ans);
			if ((st != 201 && st != 200) || !bl_json_str(ans, "id", id, sizeof(id)))
				bl_die("POST /v1/leases %s answered %d: %.300s", body, st,
				       ans ? ans : "");
			if (first < 0)
				first = id_seq(id);
			free(ans);
			n++;
		}
		fclose(f);
		if (resume) {
			t0 = wall_s();
			all_nodes(s, false);
		} else if (wall_s() >= t0) {
			bl_die("T: submitting took past the hold's end; raise the hold");
		}
		wait_empty(s);
		json_t *a = leases(s, NULL);
		size_t i;
		json_t *l;
		int multi = 0, spans[8] = {0}, jobs = 0;
		double sum = 0, mx = 0, last_end = 0;
		json_array_foreach(a, i, l) {
			const char *id = json_string_value(json_object_get(l, "id"));
			if (!id || id_seq(id) < first)
				continue;
			double at = parse_time(json_object_get(l, "started_at")) - t0;
			double end = parse_time(json_object_get(l, "ended_at")) - t0;
			jobs++;
			sum += at;
			mx = at > mx ? at : mx;
			last_end = end > last_end ? end : last_end;
			json_t *sc = json_object_get(l, "score");
			int nodes = (int)json_integer_value(json_object_get(sc, "nodes"));
			int lv = (int)json_integer_value(json_object_get(sc, "leaves"));
			if (nodes > 1) {
				multi++;
				spans[lv >= 0 && lv < 8 ? lv : 7]++;
			}
		}
		json_decref(a);
		fprintf(stderr, "slurm_side: %s: %d jobs, multi-node %d, one leaf %d, two %d, "
			"three+ %d; mean start delay %.1fs, makespan %.0fs (released by %s)\n",
			one ? "one_leaf" : "free", jobs, multi, spans[1], spans[2],
			multi - spans[1] - spans[2], jobs ? sum / jobs : 0, last_end,
			resume ? "resuming nodes one by one" : "a hold's end");
		fprintf(s->out,
			"{\"kind\":\"switches\",\"label\":\"%s\",\"jobs\":%d,\"submitted\":%d,"
			"\"multi_node\":%d,\"leaves_spanned\":{\"1\":%d,\"2\":%d,\"3\":%d,\"4\":%d},"
			"\"mean_start_delay_s\":%.2f,\"max_start_delay_s\":%.2f,\"makespan_s\":%.2f,"
			"\"release\":\"%s\"}\n",
			one ? "one_leaf" : "noswitches", jobs, n, multi, spans[1], spans[2], spans[3],
			spans[4], jobs ? sum / jobs : 0, mx, last_end, resume ? "resume" : "hold");
	}
	side_stop(s);
}

/* test_ctl_codec.c - the controller's codecs and tables: RFC 3339 times, lease
 * request validation, tokens, roles and the route table's shape. */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_int.h"
#include "instances_int.h"
#include "place_json.h"

static void test_time_roundtrip(void **state)
{
	(void)state;
	char buf[32];
	int64_t ns = 1796016792123000000LL; /* 2026-11-30T05:33:12.123Z */
	ctl_time_fmt(ns, buf);
	assert_string_equal(buf, "2026-11-30T05:33:12.123Z");
	int64_t back = 0;
	assert_true(ctl_time_parse(buf, &back));
	assert_int_equal(back, ns);
	assert_true(ctl_time_parse("2026-11-30T13:33:12.123+08:00", &back));
	assert_int_equal(back, ns);
	assert_true(ctl_time_parse("2026-11-30T05:33:12Z", &back));
	assert_int_equal(back, ns - 123000000);
	/* Nanoseconds: the controller's clock; nine digits, none dropped. */
	assert_true(ctl_time_parse("2026-11-30T05:33:12.123456789Z", &back));
	assert_int_equal(back, ns + 456789);
	assert_true(ctl_time_parse("2026-11-30T05:33:12.000000001Z", &back));
	assert_int_equal(back, ns - 123000000 + 1);
	/* The one parser (cal_parse_rfc3339_ns) takes a space for 'T', as RFC
	 * 3339 §5.6 allows and the price API always did. */
	assert_true(ctl_time_parse("2026-11-30 05:33:12.123Z", &back));
	assert_int_equal(back, ns);
}

static void test_time_rejects(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"",          "2026-11-30",           "2026-11-30T05:33:12",  "2026-13-01T00:00:00Z",
		"2026-11-30T25:00:00Z", "2026-11-30T05:33:12.Z", "2026-11-30T05:33:12Zjunk",
		"2026-11-30T05:33:12+0800", "1960-01-01T00:00:00Z",
		/* Refused, not normalised by timegm: no 31 February (it was read as
		 * 3 March), no 29 February outside a leap year, no second 60, no
		 * digits past the nanosecond dropped in silence. */
		"2026-02-31T00:00:00Z", "2027-02-29T00:00:00Z", "2026-04-31T12:00:00Z",
		"2026-11-30T05:33:60Z", "2026-12-31T23:59:60Z", "2026-11-30T05:33:12.1234567891Z",
		"2026-11-30T05:33:12.000000000000Z",
	};
	int64_t ns = 7;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (ctl_time_parse(bad[i], &ns))
			fail_msg("accepted '%s'", bad[i]);
	assert_int_equal(ns, 7);
	assert_false(ctl_time_parse(NULL, &ns));
}

struct req_case {
	const char *json;
	enum sl_err want;
	const char *msg_has; /* substring of d.msg on error */
};

static void test_lease_req(void **state)
{
	(void)state;
	static const struct req_case cases[] = {
		{"{\"gpus\":8}", SL_OK, NULL},
		{"{}", SL_EINVAL, "'gpus' is required"},
		{"{\"gpus\":0}", SL_EINVAL, "nothing else is asked for"},
		{"{\"gpus\":-1}", SL_EINVAL, "expected 0.."},
		/* a share of one GPU (gpu_milli), exact CPUs and memory */
		{"{\"gpu_milli\":500}", SL_OK, NULL},
		{"{\"gpus\":0,\"gpu_milli\":999}", SL_OK, NULL},
		{"{\"gpus\":1,\"gpu_milli\":500}", SL_EINVAL, "cannot be combined with 'gpus' 1"},
		{"{\"gpu_milli\":1000}", SL_EINVAL, "'gpu_milli' is 1000; expected 1..999"},
		{"{\"gpu_milli\":0}", SL_EINVAL, "'gpu_milli' is 0; expected 1..999"},
		{"{\"gpu_milli\":0.5}", SL_EINVAL, "'gpu_milli' must be an integer"},
		{"{\"gpu_milli\":500,\"per_node\":1}", SL_EINVAL, "'per_node' needs whole GPUs"},
		{"{\"gpu_milli\":500,\"exclusive\":true}", SL_EINVAL, "'exclusive' needs whole GPUs"},
		{"{\"gpu_milli\":500,\"exclusive\":false}", SL_OK, NULL},
		{"{\"gpu_milli\":500,\"elastic\":{\"min\":1,\"max\":2}}", SL_EINVAL, "'elastic' needs whole"},
		{"{\"cpu_milli\":1500}", SL_OK, NULL},
		{"{\"memory_mib\":1024,\"per_node\":1}", SL_EINVAL, "lease without GPUs"},
		{"{\"gpus\":1,\"cpu_milli\":-1}", SL_EINVAL, "'cpu_milli' is -1"},
		{"{\"gpus\":1,\"memory_mib\":\"4G\"}", SL_EINVAL, "'memory_mib' must be an integer"},
		{"{\"gpus\":8,\"plan\":\"weekly\"}", SL_EINVAL, "plan"},
		{"{\"gpus\":8,\"plan\":\"hosting\"}", SL_EINVAL, "plan"}, /* a price plan only */
		{"{\"gpus\":8,\"models\":[\"h100-sxm\",\"nope\"]}", SL_EINVAL, "unknown GPU model 'nope'"},
		{"{\"gpus\":8,\"models\":[1]}", SL_EINVAL, "array of strings"},
		{"{\"gpus\":8,\"models\":[\"b200\",\"b200\",\"b200\",\"b200\",\"b200\",\"b200\",\"b200\",\"b200\",\"b200\"]}",
		 SL_ELIMIT, "at most 8"},
		{"{\"gpus\":8,\"region\":\"has space\"}", SL_EINVAL, "'region' is not a valid name"},
		{"{\"gpus\":8,\"elastic\":{\"min\":9,\"max\":16}}", SL_EINVAL, "must include gpus"},
		{"{\"gpus\":8,\"elastic\":{\"min\":4}}", SL_EINVAL, "elastic"},
		{"{\"gpus\":8,\"elastic\":{\"min\":4,\"max\":16}}", SL_OK, NULL},
		{"{\"gpus\":8,\"duration_s\":0}", SL_EINVAL, "duration_s"},
		{"{\"gpus\":8,\"exclusive\":1}", SL_EINVAL, "boolean"},
		{"{\"gpus\":8,\"plan\":\"spot\",\"per_node\":8,\"min_bw_gbps\":400}", SL_OK, NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lease_req r;
		struct sl_diag d;
		sl_diag_clear(&d);
		json_t *o = json_loads(cases[i].json, 0, NULL);
		assert_non_null(o);
		enum sl_err e = lease_req_parse(o, &r, &d);
		json_decref(o);
		if (e != cases[i].want)
			fail_msg("case %zu (%s): got %d (%s), want %d", i, cases[i].json, e, d.msg,
				 cases[i].want);
		if (cases[i].msg_has && !strstr(d.msg, cases[i].msg_has))
			fail_msg("case %zu: message '%s' lacks '%s'", i, d.msg, cases[i].msg_has);
	}
	struct lease_req r;
	struct sl_diag d;
	json_t *o = json_loads("{\"gpus\":16,\"plan\":\"spot\",\"per_node\":8,\"models\":[\"b200\"]}", 0, NULL);
	assert_int_equal(lease_req_parse(o, &r, &d), SL_OK);
	json_decref(o);
	assert_int_equal(r.gpus, 16);
	assert_int_equal(r.plan, PLAN_SPOT);
	assert_int_equal(r.per_node, 8);
	assert_int_equal(r.nmodels, 1);
	assert_string_equal(lease_req_model(&r, 0), "b200");
	/* A share with exact CPUs and memory reaches the placer as asked. */
	o = json_loads("{\"gpu_milli\":250,\"cpu_milli\":3152,\"memory_mib\":12288}", 0, NULL);
	assert_int_equal(lease_req_parse(o, &r, &d), SL_OK);
	json_decref(o);
	struct place_request pr;
	lease_req_to_place(&r, "acme", &pr);
	assert_int_equal(pr.gpus, 0);
	assert_int_equal(pr.gpu_milli, 250);
	assert_int_equal(pr.cpu_milli, 3152);
	assert_int_equal(pr.mem_mib, 12288);
	assert_true(pr.exact_cpu_mem);
	/* Without them, the node's share per GPU (not exact). */
	o = json_loads("{\"gpus\":2}", 0, NULL);
	assert_int_equal(lease_req_parse(o, &r, &d), SL_OK);
	json_decref(o);
	lease_req_to_place(&r, "acme", &pr);
	assert_int_equal(pr.gpus, 2);
	assert_int_equal(pr.cpu_milli, 0);
	assert_false(pr.exact_cpu_mem);
	/* Memory alone is exact too: CPUs 0 then. */
	o = json_loads("{\"gpus\":1,\"memory_mib\":2048}", 0, NULL);
	assert_int_equal(lease_req_parse(o, &r, &d), SL_OK);
	json_decref(o);
	lease_req_to_place(&r, "acme", &pr);
	assert_true(pr.exact_cpu_mem);
	assert_int_equal(pr.cpu_milli, 0);
	assert_int_equal(pr.mem_mib, 2048);
	/* Strings are borrowed until kept; kept ones outlive the document. */
	o = json_loads("{\"gpus\":1,\"region\":\"cn-east\",\"tenant\":\"acme\"}", 0, NULL);
	assert_int_equal(lease_req_parse(o, &r, &d), SL_OK);
	assert_string_equal(r.site, "");
	const struct lease_req *k = lease_req_keep(&r), *k2 = lease_req_keep(&r);
	assert_non_null(k);
	assert_non_null(k2);
	json_decref(o);
	assert_string_equal(k->region, "cn-east");
	assert_string_equal(k->site, "");
	assert_string_equal(k->tenant, "");
	assert_int_equal(k->refs, 1);
	/* Leases that ask alike share one kept request; a change of duration
	 * gives the lease its own. */
	struct ctl_lease a, b;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.req = k;
	b.req = k2;
	assert_true(lease_req_equal(a.req, b.req));
	lease_share_req(&b, &a);
	assert_ptr_equal(a.req, b.req);
	assert_int_equal(k->refs, 2);
	assert_true(lease_set_duration(&b, 3600));
	assert_ptr_not_equal(a.req, b.req);
	assert_int_equal(k->refs, 1);
	assert_int_equal(b.req->duration_s, 3600);
	assert_string_equal(b.req->region, "cn-east");
	assert_false(lease_req_equal(a.req, b.req));
	lease_share_req(&b, &a); /* not equal: both keep their own */
	assert_ptr_not_equal(a.req, b.req);
	lease_req_drop(a.req);
	lease_req_drop(b.req);
}

static void test_token_format(void **state)
{
	(void)state;
	struct ctl_token a, b;
	char sa[64], sb[64], h[CTL_HASH_HEX + 1];
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	auth_token_generate(&a, sa);
	auth_token_generate(&b, sb);
	assert_int_equal(strlen(sa), 3 + 43);
	assert_memory_equal(sa, "sl_", 3);
	assert_int_equal(strlen(a.id), CTL_TOKEN_ID_LEN);
	assert_memory_equal(a.id, "tok_", 4);
	assert_string_not_equal(sa, sb);
	assert_string_not_equal(a.id, b.id);
	auth_hash_hex(sa, strlen(sa), h);
	assert_string_equal(h, a.hash);
	/* The stored form round-trips and keeps the hash, never the secret. */
	a.role = CTL_ROLE_TENANT;
	strcpy(a.tenant, "acme");
	strcpy(a.user, "alice");
	json_t *o = token_to_json(&a, true);
	char *text = json_dumps(o, 0);
	assert_null(strstr(text, sa));
	struct ctl_token back;
	struct sl_diag d;
	assert_int_equal(token_from_json(o, &back, &d), SL_OK);
	assert_string_equal(back.hash, a.hash);
	assert_string_equal(back.tenant, "acme");
	assert_int_equal(back.role, CTL_ROLE_TENANT);
	free(text);
	json_decref(o);
	/* The API form has no hash. */
	o = token_to_json(&a, false);
	assert_null(json_object_get(o, "sha256"));
	json_decref(o);
}

static void test_roles(void **state)
{
	(void)state;
	for (int r = 0; r < CTL_ROLE__COUNT; r++)
		assert_int_equal(ctl_role_parse(ctl_role_name((enum ctl_role)r)), r);
	assert_int_equal(ctl_role_parse("root"), -1);
	assert_int_equal(ctl_role_parse(NULL), -1);
	assert_true(ctl_role_is_tenant(CTL_ROLE_TENANT_ADMIN));
	assert_false(ctl_role_is_tenant(CTL_ROLE_OPERATOR));
}

static void test_route_table(void **state)
{
	(void)state;
	size_t n;
	const struct ctl_route *r = ctl_routes(&n);
	assert_true(n >= 24);
	for (size_t i = 0; i < n; i++) {
		assert_non_null(r[i].fn);
		/* Every authenticated route names roles; agents reach only
		 * /v1/agent/... and nothing else reaches those. */
		if (r[i].auth)
			assert_true(r[i].roles != 0);
		bool agent_path = !strncmp(r[i].pattern, "/v1/agent/", 10);
		assert_int_equal(!!(r[i].roles & CTL_ROLE_BIT(CTL_ROLE_AGENT)), agent_path);
		if (agent_path)
			assert_int_equal(r[i].roles, CTL_ROLE_BIT(CTL_ROLE_AGENT));
		/* Everything that changes state is a write method; reads are
		 * GETs, but for the placement preview, whose request is a body
		 * (POST /v1/plan: it places nothing). */
		if (r[i].mutates)
			assert_true(strcmp(r[i].method, "GET") != 0);
		else if (strcmp(r[i].pattern, "/v1/plan"))
			assert_string_equal(r[i].method, "GET");
		for (size_t k = 0; k < i; k++)
			assert_false(!strcmp(r[i].method, r[k].method) &&
				     !strcmp(r[i].pattern, r[k].pattern));
	}
}

/* A lease written as its store row and read back is the same lease: what a
 * restart rebuilds from. */
static void test_lease_roundtrip(void **state)
{
	(void)state;
	const char *dir = getenv("SL_EXAMPLES");
	char path[512], *text;
	snprintf(path, sizeof(path), "%s/demo-fleet.yaml", dir ? dir : "examples");
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	text = malloc(1 << 20);
	size_t len = fread(text, 1, (1 << 20) - 1, fp);
	fclose(fp);
	struct ctl c;
	struct sl_diag d;
	memset(&c, 0, sizeof(c));
	c.fleet = calloc(1, sizeof(*c.fleet));
	assert_int_equal(fleet_init(c.fleet), SL_OK);
	assert_int_equal(fleet_load_yaml(c.fleet, text, len, path, &d), SL_OK);
	free(text);
	assert_int_equal(placer_new(c.fleet, &c.placer), SL_OK);

	struct ctl_lease l, back;
	memset(&l, 0, sizeof(l));
	struct placement pl0, v;
	placement_init(&pl0);
	json_t *req = json_loads("{\"gpus\":16,\"per_node\":8,\"models\":[\"h100-sxm\"],\"plan\":\"spot\","
				 "\"duration_s\":3600,\"tenant\":\"acme\"}", 0, NULL);
	struct lease_req r;
	assert_int_equal(lease_req_parse(req, &r, &d), SL_OK);
	assert_string_equal(r.tenant, "acme");
	assert_non_null(l.req = lease_req_keep(&r));
	struct place_request pr;
	lease_req_to_place(l.req, "acme", &pr);
	assert_int_equal(placer_place(c.placer, &pr, &pl0, &d), SL_OK);
	assert_true(lease_score_set(&c, &l, &pl0.score));
	assert_int_equal(place_picks_take(&l.pl, &pl0), SL_OK);
	l.seq = 42;
	strcpy(l.id, "ls-000042");
	l.tenant = ctl_name(&c, "acme");
	l.user = ctl_name(&c, "alice");
	assert_true(lease_set_request(&l, req));
	json_decref(req);
	l.state = LS_PREEMPTING;
	l.gpus = 16;
	l.placed = true;
	assert_true(lease_hist_add(&l, 1796016792123000000LL, LS_PENDING, "waiting: \"quoted\""));
	assert_true(lease_hist_add(&l, 0, LS_ACTIVE, ""));
	l.created_ns = 1796016792123000000LL;
	l.started_ns = l.created_ns + 1000000;
	l.expires_ns = l.started_ns + 3600LL * 1000000000;
	l.preempt_ns = l.started_ns + 5000000000LL;
	l.epoch = 3;
	l.simulated = true;

	json_t *o = lease_to_json(&c, &l, false);
	char *s1 = json_dumps(o, JSON_COMPACT);
	assert_int_equal(lease_from_json(&c, o, &back, &d), SL_OK);
	json_t *o2 = lease_to_json(&c, &back, false);
	char *s2 = json_dumps(o2, JSON_COMPACT);
	assert_string_equal(s1, s2);
	/* The compact forms write what the jansson documents did: the request
	 * as posted (key order kept), the score as place_score_to_json, the
	 * history as {"at","state","reason"} (null for no time, escapes). */
	assert_non_null(strstr(s1, "\"request\":{\"gpus\":16,\"per_node\":8,\"models\":[\"h100-sxm\"],"
				   "\"plan\":\"spot\",\"duration_s\":3600,\"tenant\":\"acme\"}"));
	json_t *sj = place_score_to_json(lease_score(&l));
	char *ss = json_dumps(sj, JSON_COMPACT), want[1024], at[32];
	snprintf(want, sizeof(want), "\"score\":%s,", ss);
	assert_non_null(strstr(s1, want));
	ctl_time_fmt(1796016792123000000LL, at);
	snprintf(want, sizeof(want), "\"history\":[{\"at\":\"%s\",\"state\":\"pending\",\"reason\":"
		 "\"waiting: \\\"quoted\\\"\"},{\"at\":null,\"state\":\"active\",\"reason\":\"\"}]", at);
	assert_non_null(strstr(s1, want));
	free(ss);
	json_decref(sj);
	/* The row written directly is the same text. */
	size_t rl = 0, split = 0;
	char *row = lease_row_dump(&c, &l, &rl, &split);
	assert_string_equal(row, s1);
	assert_int_equal(rl, strlen(s1));
	assert_memory_equal(row + split, "\"created_at\"", 12);
	free(row);
	/* Memory (bench/memory: 100,000 live leases): the per-lease records
	 * stay free of 512-byte placements and fixed reason buffers. */
	assert_true(sizeof(struct ctl_lease) <= 1024);
	assert_int_equal(back.seq, 42);
	assert_int_equal(back.state, LS_PREEMPTING);
	assert_int_equal(back.req->plan, PLAN_SPOT);
	assert_int_equal(back.pl.npicks, 2);
	assert_int_equal(back.pl.picks[0].node, l.pl.picks[0].node);
	assert_int_equal(back.pl.picks[0].gpus, l.pl.picks[0].gpus);
	assert_int_equal(back.pl.picks[1].cpus, l.pl.picks[1].cpus);
	assert_int_equal(back.pl.picks[1].mem_mib, l.pl.picks[1].mem_mib);
	assert_int_equal(back.preempt_ns, l.preempt_ns);
	assert_int_equal(lease_score(&back)->leaves, l.score->leaves);
	assert_true(lease_score(&back)->leaves > 0);
	/* Equal scores are kept once (lease_score.c), shared by both leases. */
	assert_ptr_equal(back.score, l.score);
	assert_int_equal(ctl_lease_scores_kept(&c), 1);
	/* Re-claiming the stored placement is what a restart does. */
	assert_int_equal(placer_claim(c.placer, lease_pl_view(&back, &v), &d), SL_OK);
	assert_int_equal(placer_claim(c.placer, lease_pl_view(&l, &v), &d), SL_ECONFLICT);
	free(s1);
	free(s2);
	json_decref(o);
	json_decref(o2);
	lease_release_mem(&l);
	assert_int_equal(ctl_lease_scores_kept(&c), 1); /* back still holds it */
	lease_release_mem(&back);
	assert_int_equal(ctl_lease_scores_kept(&c), 0);
	assert_null(back.score);
	assert_int_equal(lease_score(&back)->leaves, 0);
	placer_free(c.placer);
	ctl_names_free(&c);
	ctl_lease_scores_free(&c);
	fleet_release(c.fleet);
	free(c.fleet);
}

/* A history grows from room for one entry (most leases have one: placed at
 * once, or queued), keeping every entry as it grows past 1, 2, 4. */
static void test_lease_history_grows_from_one(void **state)
{
	(void)state;
	struct ctl_lease l;
	memset(&l, 0, sizeof(l));
	assert_true(lease_hist_add(&l, 1000, LS_PENDING, "waits"));
	assert_true(malloc_usable_size(l.hist) < 2 * sizeof(*l.hist));
	char r[32];
	for (int i = 1; i < 9; i++) {
		snprintf(r, sizeof(r), "step %d", i);
		assert_true(lease_hist_add(&l, 1000 + i, i % 2 ? LS_ACTIVE : LS_PREEMPTING, r));
		assert_int_equal(l.nhist, i + 1);
		assert_true(malloc_usable_size(l.hist) >= (size_t)l.nhist * sizeof(*l.hist));
	}
	assert_string_equal(l.hist[0].reason, "waits");
	assert_int_equal(l.hist[0].state, LS_PENDING);
	for (int i = 1; i < 9; i++) {
		snprintf(r, sizeof(r), "step %d", i);
		assert_string_equal(l.hist[i].reason, r);
		assert_int_equal(l.hist[i].at_ns, 1000 + i);
		assert_int_equal(l.hist[i].state, i % 2 ? LS_ACTIVE : LS_PREEMPTING);
	}
	lease_release_mem(&l);
}

/* Placement scores are kept once per distinct score, counted: a lease that
 * changes its score or goes drops its hold, the last holder frees it. */
static void test_lease_scores(void **state)
{
	(void)state;
	enum { N = 300, DISTINCT = 150 };
	struct ctl c;
	memset(&c, 0, sizeof(c));
	struct ctl_lease *ls = calloc(N, sizeof(*ls));
	assert_non_null(ls);
	assert_int_equal(lease_score(&ls[0])->free_after, 0); /* none: the zero score */
	for (int i = 0; i < N; i++) {
		struct place_score sc;
		memset(&sc, 0, sizeof(sc));
		sc.free_after = i % DISTINCT;
		sc.frag_milli = -(i % DISTINCT);
		sc.price_hint = 1500;
		assert_true(lease_score_set(&c, &ls[i], &sc));
	}
	assert_int_equal(ctl_lease_scores_kept(&c), DISTINCT);
	for (int i = 0; i < N; i++) {
		assert_int_equal(lease_score(&ls[i])->free_after, i % DISTINCT);
		assert_int_equal(lease_score(&ls[i])->frag_milli, -(i % DISTINCT));
		assert_ptr_equal(ls[i].score, ls[i % DISTINCT].score);
	}
	/* Setting the same score again, then another one. */
	const struct place_score *was = ls[0].score;
	assert_true(lease_score_set(&c, &ls[0], was));
	assert_ptr_equal(ls[0].score, was);
	struct place_score other;
	memset(&other, 0, sizeof(other));
	other.free_after = 7777;
	assert_true(lease_score_set(&c, &ls[0], &other));
	assert_int_equal(lease_score(&ls[0])->free_after, 7777);
	assert_int_equal(lease_score(&ls[DISTINCT])->free_after, 0); /* its old sharer keeps it */
	assert_int_equal(ctl_lease_scores_kept(&c), DISTINCT + 1);
	for (int i = 0; i < N; i++) {
		lease_score_drop(&ls[i]);
		assert_null(ls[i].score);
	}
	assert_int_equal(ctl_lease_scores_kept(&c), 0);
	lease_score_drop(&ls[0]); /* none held: nothing */
	ctl_lease_scores_free(&c);
	ctl_lease_scores_free(&c);
	free(ls);
}

/* An instance's reason and its newest history entry are one text when equal
 * (20,000 instances in bench/memory); each holder lets go of it alone. */
static void test_instance_reason_shared(void **state)
{
	(void)state;
	struct instance *in = inst_alloc();
	assert_non_null(in);
	inst_reason_set(in, "created: lease ls-000001 on n1");
	inst_hist_add(in, 1, IS_STARTING, "created: lease ls-000001 on n1");
	assert_ptr_equal(in->hist[0].reason, in->reason);
	inst_reason_set(in, in->reason); /* unchanged: kept */
	assert_ptr_equal(in->hist[0].reason, in->reason);
	/* A reason set before its entry (the loader's order) shares too. */
	inst_reason_set(in, "running");
	inst_hist_add(in, 2, IS_RUNNING, "running");
	assert_ptr_equal(in->hist[1].reason, in->reason);
	assert_string_equal(in->hist[0].reason, "created: lease ls-000001 on n1");
	/* A history entry made first: the reason set after shares it. */
	inst_hist_add(in, 3, IS_STOPPING, "stop asked");
	inst_reason_set(in, "stop asked");
	assert_ptr_equal(in->hist[2].reason, in->reason);
	/* Different texts stay apart; "" is none. */
	inst_hist_add(in, 4, IS_STOPPED, "");
	assert_string_equal(in->hist[3].reason, "");
	inst_reason_set(in, NULL);
	assert_null(in->reason);
	assert_string_equal(in->hist[2].reason, "stop asked");
	/* Cut to INST_REASON_MAX - 1 bytes, shared still. */
	char longr[INST_REASON_MAX + 40];
	memset(longr, 'x', sizeof(longr) - 1);
	longr[sizeof(longr) - 1] = 0;
	inst_reason_set(in, longr);
	inst_hist_add(in, 5, IS_STOPPED, longr);
	assert_int_equal(strlen(in->reason), INST_REASON_MAX - 1);
	assert_ptr_equal(in->hist[4].reason, in->reason);
	inst_free(in);
}

/* The history keeps the newest CTL_MAX_HISTORY entries; reasons are owned. */
static void test_lease_history_cap(void **state)
{
	(void)state;
	struct ctl_lease l;
	memset(&l, 0, sizeof(l));
	char r[32];
	for (int i = 0; i < CTL_MAX_HISTORY + 5; i++) {
		snprintf(r, sizeof(r), "step %d", i);
		assert_true(lease_hist_add(&l, (int64_t)(i + 1) * 1000000, LS_ACTIVE, r));
	}
	assert_int_equal(l.nhist, CTL_MAX_HISTORY);
	assert_string_equal(l.hist[0].reason, "step 5");
	assert_int_equal(l.hist[0].at_ns, 6 * 1000000);
	assert_true(lease_set_reason(&l, "waits"));
	assert_string_equal(ctl_lease_reason(&l), "waits");
	assert_true(lease_set_reason(&l, ""));
	assert_string_equal(ctl_lease_reason(&l), "");
	lease_release_mem(&l);
}

/* Malformed stored rows are refused with a message, never half-loaded. */
static void test_lease_bad_rows(void **state)
{
	(void)state;
	static const char *const rows[] = {
		"{}",
		"{\"id\":\"ls-x\",\"tenant\":\"a\",\"user\":\"u\",\"state\":\"active\",\"request\":{\"gpus\":1},\"history\":[]}",
		/* an id longer than any the controller makes (ctl_lease.id) */
		"{\"id\":\"ls-0000000000000001\",\"tenant\":\"a\",\"user\":\"u\",\"state\":\"active\",\"request\":{\"gpus\":1},\"history\":[]}",
		"{\"id\":\"ls-000001\",\"tenant\":\"a\",\"user\":\"u\",\"state\":\"weird\",\"request\":{\"gpus\":1},\"history\":[]}",
		"{\"id\":\"ls-000001\",\"tenant\":\"a\",\"user\":\"u\",\"state\":\"active\",\"request\":{\"gpus\":0},\"history\":[]}",
		"{\"id\":\"ls-000001\",\"tenant\":\"a\",\"user\":\"u\",\"state\":\"active\",\"request\":{\"gpus\":1},\"history\":[],"
		"\"placement\":[{\"node\":\"nosuch\",\"gpus\":[0]}]}",
	};
	struct ctl c;
	memset(&c, 0, sizeof(c));
	c.fleet = calloc(1, sizeof(*c.fleet));
	assert_int_equal(fleet_init(c.fleet), SL_OK);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct ctl_lease l;
		struct sl_diag d;
		sl_diag_clear(&d);
		json_t *o = json_loads(rows[i], 0, NULL);
		assert_non_null(o);
		if (lease_from_json(&c, o, &l, &d) == SL_OK)
			fail_msg("row %zu accepted", i);
		assert_true(d.msg[0] != 0);
		json_decref(o);
	}
	ctl_names_free(&c);
	ctl_lease_scores_free(&c);
	fleet_release(c.fleet);
	free(c.fleet);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_roundtrip), cmocka_unit_test(test_time_rejects),
		cmocka_unit_test(test_lease_req),      cmocka_unit_test(test_token_format),
		cmocka_unit_test(test_roles),          cmocka_unit_test(test_route_table),
		cmocka_unit_test(test_lease_roundtrip), cmocka_unit_test(test_lease_bad_rows),
		cmocka_unit_test(test_lease_history_grows_from_one),
		cmocka_unit_test(test_lease_scores),
		cmocka_unit_test(test_instance_reason_shared),
		cmocka_unit_test(test_lease_history_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

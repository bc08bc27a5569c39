/* test_ctl_lease_fields.c - the lease row's one field list (lease_fields.h)
 * drives the jansson codec, the direct row writer and the reader alike: in
 * every build (not only Debug, where the daemon compares them on every row)
 * the two writers give the same bytes and split for leases in every state,
 * every key comes out in table order, and every scalar field survives the
 * store round trip and shows in the row when it changes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_int.h"

struct fx {
	struct ctl c;
	struct ctl_lease l;
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	const char *dir = getenv("SL_EXAMPLES");
	char path[512];
	snprintf(path, sizeof(path), "%s/demo-fleet.yaml", dir ? dir : "examples");
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	char *text = malloc(1 << 20);
	size_t len = fread(text, 1, (1 << 20) - 1, fp);
	fclose(fp);
	struct sl_diag d;
	x->c.fleet = calloc(1, sizeof(*x->c.fleet));
	assert_int_equal(fleet_init(x->c.fleet), SL_OK);
	assert_int_equal(fleet_load_yaml(x->c.fleet, text, len, path, &d), SL_OK);
	free(text);
	assert_int_equal(placer_new(x->c.fleet, &x->c.placer), SL_OK);

	struct ctl_lease *l = &x->l;
	json_t *req = json_loads("{\"gpus\":16,\"per_node\":8,\"models\":[\"h100-sxm\"],\"plan\":\"spot\","
				 "\"tenant\":\"acme\"}", 0, NULL);
	struct lease_req r;
	assert_int_equal(lease_req_parse(req, &r, &d), SL_OK);
	assert_non_null(l->req = lease_req_keep(&r));
	struct place_request pr;
	struct placement pl;
	placement_init(&pl);
	lease_req_to_place(l->req, "acme", &pr);
	assert_int_equal(placer_place(x->c.placer, &pr, &pl, &d), SL_OK);
	assert_true(lease_score_set(&x->c, l, &pl.score));
	assert_int_equal(place_picks_take(&l->pl, &pl), SL_OK);
	l->seq = 7;
	snprintf(l->id, sizeof(l->id), "ls-7");
	l->tenant = ctl_name(&x->c, "acme");
	l->user = ctl_name(&x->c, "alice");
	assert_true(lease_set_request(l, req));
	json_decref(req);
	assert_true(lease_set_reason(l, "waiting for 16 GPUs"));
	assert_true(lease_hist_add(l, 1796016792123000000LL, LS_PENDING, "queued"));
	/* Every scalar field a distinct value that is not its default. */
	size_t n;
	const struct lease_field *t = lease_row_fields(&n);
	int64_t v = 1796016792000000000LL;
	for (size_t i = 0; i < n; i++) {
		char *p = (char *)l + t[i].offset;
		int k = 11 + (int)i;
		bool b = true;
		switch (t[i].kind) {
		case LF_INT: memcpy(p, &k, sizeof(k)); break;
		case LF_INT64: { int64_t e = 100 + (int64_t)i; memcpy(p, &e, sizeof(e)); break; }
		case LF_TIME: v += 1000000 * (int64_t)(i + 1); memcpy(p, &v, sizeof(v)); break;
		case LF_BOOL: memcpy(p, &b, sizeof(b)); break;
		default: break;
		}
	}
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;
	lease_release_mem(&x->l);
	placer_free(x->c.placer);
	ctl_names_free(&x->c);
	ctl_lease_scores_free(&x->c);
	fleet_release(x->c.fleet);
	free(x->c.fleet);
	free(x);
	return 0;
}

/* Both writers, compared byte for byte; the jansson text is returned. */
static char *both(struct fx *x, size_t *split)
{
	size_t rl = 0, rs = 0, jl = 0, js = 0;
	char *row = lease_row_dump(&x->c, &x->l, &rl, &rs);
	char *jan = lease_row_dump_json(&x->c, &x->l, &jl, &js);
	assert_non_null(row);
	assert_non_null(jan);
	assert_string_equal(row, jan);
	assert_int_equal(rl, jl);
	assert_int_equal(rs, js);
	assert_memory_equal(jan + js, "\"created_at\"", 12);
	json_t *o = lease_to_json(&x->c, &x->l, false);
	char *ref = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	assert_string_equal(ref, jan);
	free(ref);
	free(row);
	*split = js;
	return jan;
}

static void test_writers_agree_in_every_state(void **state)
{
	struct fx *x = *state;
	for (int s = 0; s < LS__COUNT; s++)
		for (int placed = 0; placed < 2; placed++) {
			x->l.state = (enum lease_state)s;
			x->l.placed = placed;
			size_t split;
			free(both(x, &split));
		}
}

static void test_keys_in_table_order(void **state)
{
	struct fx *x = *state;
	size_t n;
	const struct lease_field *t = lease_row_fields(&n);
	for (int s = 0; s < LS__COUNT; s++) {
		x->l.state = (enum lease_state)s;
		x->l.placed = true;
		json_t *o = lease_to_json(&x->c, &x->l, true);
		const char *key;
		json_t *val;
		size_t k = 0;
		json_object_foreach(o, key, val) {
			while (k < n && (!lease_field_present(&t[k], &x->l, true) || t[k].kind == LF_SEAM))
				k++;
			assert_true(k < n);
			assert_string_equal(key, t[k].key);
			k++;
		}
		while (k < n && (!lease_field_present(&t[k], &x->l, true) || t[k].kind == LF_SEAM))
			k++;
		assert_int_equal(k, n); /* no present field left out */
		json_decref(o);
	}
}

static void test_scalars_round_trip_and_show(void **state)
{
	struct fx *x = *state;
	size_t n, split;
	const struct lease_field *t = lease_row_fields(&n);
	x->l.state = LS_PREEMPTING; /* every conditional scalar present */
	x->l.placed = true;
	char *before = both(x, &split);
	json_t *o = json_loads(before, 0, NULL);
	struct ctl_lease back;
	struct sl_diag d;
	assert_int_equal(lease_from_json(&x->c, o, &back, &d), SL_OK);
	json_decref(o);
	for (size_t i = 0; i < n; i++) {
		if (t[i].kind != LF_INT && t[i].kind != LF_INT64 && t[i].kind != LF_TIME &&
		    t[i].kind != LF_BOOL)
			continue;
		/* read back as written */
		assert_int_equal(lease_field_scalar(&t[i], &back), lease_field_scalar(&t[i], &x->l));
		/* and a change shows in the row */
		char save[8];
		char *p = (char *)&x->l + t[i].offset;
		memcpy(save, p, sizeof(save));
		if (t[i].kind == LF_BOOL) {
			bool b = false;
			memcpy(p, &b, sizeof(b));
		} else if (t[i].kind == LF_INT) {
			int k = 999;
			memcpy(p, &k, sizeof(k));
		} else {
			int64_t e = lease_field_scalar(&t[i], &x->l) + 7000000;
			memcpy(p, &e, sizeof(e));
		}
		char *after = both(x, &split);
		assert_string_not_equal(before, after);
		free(after);
		memcpy(p, save, sizeof(save));
	}
	lease_release_mem(&back);
	free(before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_writers_agree_in_every_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keys_in_table_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scalars_round_trip_and_show, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_place_wmodel.c - the learned workload: window, classes, prior,
 * persistence text, refresh cadence and applying it to a placer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "place_frag.h"
#include "place_wmodel.h"

static struct place_request rq(int gpus, int milli, const char *model)
{
	struct place_request r;
	memset(&r, 0, sizeof(r));
	r.gpus = gpus;
	r.gpu_milli = milli;
	if (model) {
		r.models[0] = model;
		r.nmodels = 1;
	}
	return r;
}

static int64_t weight_of(struct place_wmodel *m, int gpus, int milli, const char *models)
{
	const struct place_wmodel_class *c;
	int n = place_wmodel_classes(m, &c);
	for (int i = 0; i < n; i++)
		if (c[i].gpus == gpus && c[i].gpu_milli == milli && !strcmp(c[i].models, models))
			return c[i].weight;
	return 0;
}

static void test_cold_start_prior(void **state)
{
	(void)state;
	struct place_wmodel *m;
	assert_int_equal(place_wmodel_new(0, &m), SL_OK);
	const struct place_wmodel_class *c;
	int n = place_wmodel_classes(m, &c);
	assert_int_equal(n, 4);
	int64_t sum = 0;
	for (int i = 0; i < n; i++) {
		sum += c[i].weight;
		if (i)
			assert_true(c[i - 1].gpus < c[i].gpus);
	}
	assert_int_equal(sum, PLACE_WMODEL_PRIOR);
	place_wmodel_free(m);
}

static void test_window_slides(void **state)
{
	(void)state;
	struct place_wmodel *m;
	assert_int_equal(place_wmodel_new(4, &m), SL_OK);
	struct place_request a = rq(3, 0, NULL), b = rq(0, 250, "l40s");
	for (int i = 0; i < 4; i++)
		(void)place_wmodel_observe(m, &a);
	assert_int_equal(weight_of(m, 3, 0, ""), 4);
	(void)place_wmodel_observe(m, &b);
	(void)place_wmodel_observe(m, &b);
	assert_int_equal(weight_of(m, 3, 0, ""), 2);
	assert_int_equal(weight_of(m, 1, 250, "l40s"), 2);
	assert_int_equal(place_wmodel_seen(m), 4);
	assert_int_equal(place_wmodel_total(m), 6);
	/* CPU-only requests are not counted. */
	struct place_request cpu = rq(0, 0, NULL);
	assert_false(place_wmodel_observe(m, &cpu));
	assert_int_equal(place_wmodel_total(m), 6);
	/* Gangs count as their GPUs per node. */
	struct place_request g = rq(32, 0, NULL);
	g.per_node = 8;
	(void)place_wmodel_observe(m, &g);
	assert_int_equal(weight_of(m, 8, 0, ""), 10 + 1);
	place_wmodel_free(m);
}

static void test_refresh_cadence(void **state)
{
	(void)state;
	struct place_wmodel *m;
	assert_int_equal(place_wmodel_new(0, &m), SL_OK);
	struct place_request a = rq(1, 0, NULL);
	int refreshes = 0;
	for (int i = 1; i <= 3 * PLACE_WMODEL_REFRESH; i++) {
		bool r = place_wmodel_observe(m, &a);
		assert_int_equal(r, i % PLACE_WMODEL_REFRESH == 0);
		refreshes += r;
	}
	assert_int_equal(refreshes, 3);
	place_wmodel_free(m);
}

/* The classes depend on the window's contents, not their order. */
static void test_order_independent(void **state)
{
	(void)state;
	struct place_wmodel *x, *y;
	assert_int_equal(place_wmodel_new(16, &x), SL_OK);
	assert_int_equal(place_wmodel_new(16, &y), SL_OK);
	struct place_request r[3] = {rq(2, 0, "h100-sxm"), rq(0, 500, NULL), rq(4, 0, NULL)};
	for (int i = 0; i < 6; i++) {
		(void)place_wmodel_observe(x, &r[i % 3]);
		(void)place_wmodel_observe(y, &r[(6 - i) % 3]);
	}
	const struct place_wmodel_class *a, *b;
	int na = place_wmodel_classes(x, &a), nb = place_wmodel_classes(y, &b);
	assert_int_equal(na, nb);
	assert_memory_equal(a, b, (size_t)na * sizeof(*a));
	place_wmodel_free(x);
	place_wmodel_free(y);
}

static void test_encode_decode(void **state)
{
	(void)state;
	struct place_wmodel *m, *k;
	assert_int_equal(place_wmodel_new(5, &m), SL_OK);
	assert_int_equal(place_wmodel_new(3, &k), SL_OK);
	struct place_request r[4] = {rq(1, 0, NULL), rq(0, 300, "l40s"), rq(8, 0, "h100-sxm"),
				     rq(2, 0, NULL)};
	for (int i = 0; i < 7; i++)
		(void)place_wmodel_observe(m, &r[i % 4]);
	char *text;
	assert_int_equal(place_wmodel_encode(k, &text), SL_OK); /* empty: the header alone */
	assert_string_equal(text, "wmodel 2 3 0\n");
	free(text);
	assert_int_equal(place_wmodel_encode(m, &text), SL_OK);
	assert_non_null(strstr(text, "wmodel 2 5 7\n"));
	assert_non_null(strstr(text, "1 300 0 0 l40s\n"));
	struct sl_diag d;
	sl_diag_clear(&d);
	/* A smaller window keeps the newest: r[4..6] = 1 GPU, share, 8 GPUs. */
	assert_int_equal(place_wmodel_decode(k, text, &d), SL_OK);
	assert_int_equal(place_wmodel_seen(k), 3);
	assert_int_equal(place_wmodel_total(k), 7);
	assert_int_equal(weight_of(k, 8, 0, "h100-sxm"), 1);
	assert_int_equal(weight_of(k, 2, 0, ""), 6);
	char *again;
	assert_int_equal(place_wmodel_encode(k, &again), SL_OK);
	assert_string_equal(again, "wmodel 2 3 7\n1 0 0 0 -\n1 300 0 0 l40s\n8 0 0 0 h100-sxm\n");
	/* Bad text changes nothing and names the line. */
	assert_int_equal(place_wmodel_decode(k, "wmodel 1 3 7\n1 0 -\nx 0 -\n", &d), SL_EPARSE);
	assert_int_equal(d.line, 3);
	assert_int_equal(place_wmodel_decode(k, "wmodel 2 3 7\n1 0 -\n", &d), SL_EPARSE);
	assert_int_equal(d.line, 2);
	assert_int_equal(place_wmodel_decode(k, "nope", &d), SL_EPARSE);
	assert_int_equal(place_wmodel_seen(k), 3);
	free(text);
	free(again);
	place_wmodel_free(m);
	place_wmodel_free(k);
}

static void test_apply(void **state)
{
	(void)state;
	struct fleet f;
	int s, fa, l, idx;
	assert_int_equal(fleet_init(&f), SL_OK);
	assert_int_equal(fleet_add_site(&f, "s1", "r1", &s, NULL), SL_OK);
	assert_int_equal(fleet_add_fabric(&f, s, "ib", FABRIC_INFINIBAND, 400, &fa, NULL), SL_OK);
	assert_int_equal(fleet_add_leaf(&f, fa, "l1", &l, NULL), SL_OK);
	assert_int_equal(fleet_add_node(&f, l, "n1", fleet_find_type(&f, "hgx-h100-8"), &idx, NULL),
			 SL_OK);
	struct placer *p;
	assert_int_equal(placer_new(&f, &p), SL_OK);
	assert_int_equal(placer_node_frag(p, idx), 0);
	struct place_wmodel *m;
	assert_int_equal(place_wmodel_new(0, &m), SL_OK);
	/* Unknown models drop the class; too many GPUs count as the largest node. */
	struct place_request a = rq(1, 0, "no-such-gpu"), b = rq(64, 0, NULL);
	(void)place_wmodel_observe(m, &a);
	(void)place_wmodel_observe(m, &b);
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(place_wmodel_apply(m, p, &d), SL_OK);
	/* One GPU used: every class but the 1-GPU one loses capacity there. */
	struct placement pl;
	placement_init(&pl);
	struct place_request one = rq(1, 0, NULL);
	assert_int_equal(placer_place(p, &one, &pl, &d), SL_OK);
	assert_int_equal(placer_claim(p, &pl, &d), SL_OK);
	assert_true(placer_node_frag(p, idx) > 0);
	placement_release(&pl);
	placer_free(p);
	place_wmodel_free(m);
	fleet_release(&f);
}

/* Requests that state CPUs and memory bring them into their class (and
 * CPU-only ones count then); a version 1 window (no CPUs) still decodes. */
static void test_cpu_mem_classes(void **state)
{
	(void)state;
	struct place_wmodel *m;
	assert_int_equal(place_wmodel_new(8, &m), SL_OK);
	struct place_request a = rq(1, 0, NULL), b = rq(0, 500, NULL), c = rq(0, 0, NULL),
			     plain = rq(0, 0, NULL);
	a.cpu_milli = 12000;
	a.mem_mib = 16384;
	a.exact_cpu_mem = true;
	b.cpu_milli = 3152;
	b.exact_cpu_mem = true;
	c.cpu_milli = 500;
	c.exact_cpu_mem = true;
	assert_false(place_wmodel_observe(m, &plain)); /* asks nothing: not counted */
	(void)place_wmodel_observe(m, &a);
	(void)place_wmodel_observe(m, &a);
	(void)place_wmodel_observe(m, &b);
	(void)place_wmodel_observe(m, &c);
	assert_int_equal(place_wmodel_seen(m), 4);
	const struct place_wmodel_class *cl;
	int n = place_wmodel_classes(m, &cl), found = 0;
	for (int i = 0; i < n; i++) {
		if (cl[i].gpus == 1 && cl[i].gpu_milli == 0 && cl[i].cpu_milli == 12000) {
			assert_int_equal(cl[i].mem_mib, 16384);
			assert_int_equal(cl[i].weight, 2);
			found++;
		}
		if (cl[i].gpu_milli == 500 && cl[i].cpu_milli == 3152)
			found++;
		if (cl[i].gpus == 0 && cl[i].gpu_milli == 0 && cl[i].cpu_milli == 500)
			found++;
	}
	assert_int_equal(found, 3);
	char *text;
	assert_int_equal(place_wmodel_encode(m, &text), SL_OK);
	assert_non_null(strstr(text, "1 0 12000 16384 -\n"));
	assert_non_null(strstr(text, "0 0 500 0 -\n"));
	struct place_wmodel *k;
	assert_int_equal(place_wmodel_new(8, &k), SL_OK);
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(place_wmodel_decode(k, text, &d), SL_OK);
	assert_int_equal(place_wmodel_seen(k), 4);
	assert_int_equal(place_wmodel_decode(k, "wmodel 1 8 2\n1 0 -\n4 0 h100-sxm\n", &d), SL_OK);
	assert_int_equal(place_wmodel_seen(k), 2);
	assert_int_equal(weight_of(k, 4, 0, "h100-sxm"), 1);
	free(text);
	place_wmodel_free(m);
	place_wmodel_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cold_start_prior), cmocka_unit_test(test_window_slides),
		cmocka_unit_test(test_refresh_cadence),  cmocka_unit_test(test_order_independent),
		cmocka_unit_test(test_encode_decode),    cmocka_unit_test(test_apply),
		cmocka_unit_test(test_cpu_mem_classes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

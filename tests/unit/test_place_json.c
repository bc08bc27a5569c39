/* test_place_json.c - placements as JSON and usage states read from JSON.
 *
 * The state loader is what `suanli plan --state` and (later) the controller's
 * recovery feed outside text through, so most cases here are bad states: each
 * must be refused with a message naming the entry, and leave the placer as it
 * was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "place.h"
#include "place_json.h"

static const char fleet_text[] =
	"sites:\n"
	"  - name: s1\n"
	"    region: r1\n"
	"    fabrics:\n"
	"      - name: f1\n"
	"        kind: infiniband\n"
	"        gbps: 400\n"
	"        leaves:\n"
	"          - name: l1\n"
	"            nodes:\n"
	"              - {range: \"h[1-2]\", type: hgx-h100-8}\n"
	"              - {name: l40s, type: pcie-l40s-8, shareable: true}\n";

struct fx {
	struct fleet f;
	struct placer *p;
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	struct sl_diag d;
	assert_non_null(x);
	assert_int_equal(fleet_init(&x->f), SL_OK);
	assert_int_equal(fleet_load_yaml(&x->f, fleet_text, sizeof(fleet_text) - 1, "t", &d),
			 SL_OK);
	assert_int_equal(placer_new(&x->f, &x->p), SL_OK);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;
	placer_free(x->p);
	fleet_release(&x->f);
	free(x);
	return 0;
}

static enum sl_err load(struct fx *x, const char *text, struct sl_diag *d)
{
	sl_diag_clear(d);
	return place_state_load(x->p, text, strlen(text), d);
}

static void test_state_claims(void **state)
{
	struct fx *x = *state;
	struct sl_diag d;
	int h1 = fleet_find_node(&x->f, "h1"), l = fleet_find_node(&x->f, "l40s");
	assert_int_equal(load(x, "[{\"node\": \"h1\", \"gpus\": [0, 3]},"
				 " {\"node\": \"l40s\", \"gpu\": 2, \"milli\": 250},"
				 " {\"node\": \"l40s\", \"gpu\": 2, \"milli\": 500}]", &d),
			 SL_OK);
	assert_int_equal(placer_free_mask(x->p, h1), 0xf6);
	/* Two GPUs of eight take a quarter of the node's CPUs and memory. */
	const struct node_type *t = fleet_node_type(&x->f, h1);
	assert_int_equal(placer_cpus_used(x->p, h1), t->cpus / 4);
	assert_int_equal(placer_mem_used_mib(x->p, h1), (int64_t)t->mem_gib * 1024 / 4);
	assert_int_equal(placer_gpu_used_milli(x->p, l, 2), 750);
	assert_int_equal(load(x, "[]", &d), SL_OK);
	assert_int_equal(load(x, " \n[ ]\n", &d), SL_OK);
}

struct bad_state {
	const char *text;
	enum sl_err err;
	const char *msg;
};

static const struct bad_state bad_states[] = {
	{"", SL_EPARSE, "state is empty"},
	{" \n\t", SL_EPARSE, "state is empty"},
	{"[{\"node\": \"h1\", \"gpus\": [0]", SL_EPARSE, "not valid JSON"},
	{"[{\"node\": \"h1\", \"node\": \"h2\", \"gpus\": [0]}]", SL_EPARSE, "not valid JSON"},
	{"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
	 SL_ELIMIT, "deeper than 32"},
	{"{\"node\": \"h1\"}", SL_EINVAL, "must be a JSON list"},
	{"[1]", SL_EINVAL, "entry 0 is not an object"},
	{"[{\"node\": \"h1\", \"gpus\": [0], \"lease\": 7}]", SL_EINVAL, "unknown key 'lease'"},
	{"[{\"gpus\": [0]}]", SL_EINVAL, "\"node\" must be a node name"},
	{"[{\"node\": \"h1\", \"gpus\": [0]}, {\"node\": \"ghost\", \"gpus\": [0]}]",
	 SL_ENOTFOUND, "entry 1: no node 'ghost'"},
	{"[{\"node\": \"h1\", \"gpus\": []}]", SL_EINVAL, "non-empty list"},
	{"[{\"node\": \"h1\", \"gpus\": [8]}]", SL_EINVAL, "integer 0..7"},
	{"[{\"node\": \"h1\", \"gpus\": [-1]}]", SL_EINVAL, "integer 0..7"},
	{"[{\"node\": \"h1\", \"gpus\": [99999999999999999999]}]", SL_EPARSE, "not valid JSON"},
	{"[{\"node\": \"h1\", \"gpus\": [1.0]}]", SL_EINVAL, "integer 0..7"},
	{"[{\"node\": \"h1\", \"gpus\": [1, 1]}]", SL_EINVAL, "GPU 1 listed twice"},
	{"[{\"node\": \"h1\", \"gpus\": [1], \"milli\": 5}]", SL_EINVAL, "no \"gpu\"/\"milli\""},
	{"[{\"node\": \"l40s\", \"gpu\": 0, \"milli\": 1000}]", SL_EINVAL, "\"milli\": 1..999"},
	{"[{\"node\": \"l40s\", \"gpu\": 8, \"milli\": 10}]", SL_EINVAL, "\"gpu\": 0..7"},
	{"[{\"node\": \"h1\", \"gpu\": 0, \"milli\": 10}]", SL_EINVAL, "entry 0: pick 0: node h1 is not shareable"},
	/* Conflicts come after claims: those must be undone. */
	{"[{\"node\": \"h1\", \"gpus\": [0, 1]}, {\"node\": \"h2\", \"gpus\": [5]},"
	 " {\"node\": \"h1\", \"gpus\": [1]}]", SL_ECONFLICT, "state entry 2: pick 0 on h1"},
	{"[{\"node\": \"l40s\", \"gpu\": 3, \"milli\": 600}, {\"node\": \"l40s\", \"gpus\": [2]},"
	 " {\"node\": \"l40s\", \"gpu\": 3, \"milli\": 401}]", SL_ECONFLICT, "state entry 2"},
	{"[{\"node\": \"l40s\", \"gpus\": [3]}, {\"node\": \"l40s\", \"gpu\": 3, \"milli\": 1}]",
	 SL_ECONFLICT, "state entry 1"},
};

static void test_bad_states(void **state)
{
	struct fx *x = *state;
	for (size_t c = 0; c < sizeof(bad_states) / sizeof(bad_states[0]); c++) {
		const struct bad_state *b = &bad_states[c];
		struct sl_diag d;
		enum sl_err e = load(x, b->text, &d);
		if (e != b->err || !strstr(d.msg, b->msg))
			fail_msg("case %zu: got %s '%s', want %s '%s'", c, sl_err_code(e), d.msg,
				 sl_err_code(b->err), b->msg);
		/* Nothing stays claimed. */
		for (int i = 0; i < x->f.nnodes; i++) {
			assert_int_equal(placer_free_mask(x->p, i), 0xff);
			assert_int_equal(placer_cpus_used(x->p, i), 0);
			assert_int_equal(placer_mem_used_mib(x->p, i), 0);
			for (int g = 0; g < 8; g++)
				assert_int_equal(placer_gpu_used_milli(x->p, i, g), 0);
		}
	}
}

/* Past PLACE_STATE_MAX_ENTRIES: refused as too large, whatever the entries. */
static void test_state_entry_limit(void **state)
{
	struct fx *x = *state;
	size_t n = (size_t)PLACE_STATE_MAX_ENTRIES + 1, len = 1 + 2 * n;
	char *text = malloc(len + 1);
	assert_non_null(text);
	text[0] = '[';
	for (size_t i = 0; i < n; i++) {
		text[1 + 2 * i] = '1';
		text[2 + 2 * i] = ',';
	}
	text[len - 1] = ']'; /* over the last comma */
	text[len] = '\0';
	struct sl_diag d;
	sl_diag_clear(&d);
	assert_int_equal(place_state_load(x->p, text, len, &d), SL_ELIMIT);
	assert_non_null(strstr(d.msg, "at most 1000000"));
	free(text);
}

static void test_to_json(void **state)
{
	struct fx *x = *state;
	struct placement pl;
	struct sl_diag d;
	struct place_request r = {.gpus = 2, .nmodels = 1, .models = {"h100-sxm"}};
	placement_init(&pl);
	assert_int_equal(placer_place(x->p, &r, &pl, &d), SL_OK);
	json_t *o = place_to_json(&x->f, &pl);
	assert_non_null(o);
	json_t *arr = json_object_get(o, "placement");
	assert_int_equal(json_array_size(arr), 1);
	json_t *pk = json_array_get(arr, 0);
	assert_string_equal(json_string_value(json_object_get(pk, "node")), "h1");
	assert_int_equal(json_array_size(json_object_get(pk, "gpus")), 2);
	assert_string_equal(json_string_value(json_object_get(pk, "leaf")), "l1");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "score"),
							    "bottleneck_gbps")),
			 pl.score.bottleneck_gbps);
	json_decref(o);
	/* A refusal: no placement, the constraint and the sentence. */
	struct place_request big = {.gpus = 8, .min_mem_gib = 1000};
	assert_int_equal(placer_place(x->p, &big, &pl, &d), SL_ENOSPACE);
	o = place_to_json(&x->f, &pl);
	assert_int_equal(json_array_size(json_object_get(o, "placement")), 0);
	json_t *ref = json_object_get(o, "refused");
	assert_string_equal(json_string_value(json_object_get(ref, "constraint")), "memory");
	assert_true(strlen(json_string_value(json_object_get(ref, "why"))) > 0);
	json_decref(o);
	placement_release(&pl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_state_claims, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_states, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_entry_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_to_json, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

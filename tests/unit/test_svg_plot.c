/* test_svg_plot.c - the replay plot's axes: round time ticks in the unit that
 * fits the span, and every tick label inside the picture. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "svg_plot.h"

static void test_nice_step(void **state)
{
	(void)state;
	static const struct {
		double span;
		int want;
		double step;
	} t[] = {{44, 6, 10}, {149, 6, 50}, {7, 6, 2}, {0.9, 6, 0.2}, {1000, 4, 250 * 2},
		 {12.2, 6, 5}};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		assert_true(fabs(svg_nice_step(t[i].span, t[i].want) - t[i].step) < 1e-9);
}

static void test_time_unit(void **state)
{
	(void)state;
	double u;
	assert_string_equal(svg_time_unit(44, &u), "s");
	assert_true(u == 1);
	assert_string_equal(svg_time_unit(1800, &u), "min");
	assert_true(u == 60);
	assert_string_equal(svg_time_unit(12.2 * 3600, &u), "h");
	assert_string_equal(svg_time_unit(149 * 86400.0, &u), "d");
	assert_true(u == 86400);
}

/* Renders a chart over [0, span] seconds and checks the x tick labels: round
 * multiples of one step, in the expected unit, each inside 0..width. */
static void check_span(double span, const char *unit, double step)
{
	double x[3] = {0, span / 3, span}, y[3] = {1, 2, 3};
	struct svg_chart c = {.title = "t", .xlabel = "time", .x = x, .x_seconds = true,
			      .npoints = 3, .npanels = 1};
	c.panels[0] = (struct svg_panel){"y", y, 0, NULL};
	char *s;
	size_t len;
	struct sl_diag d;
	assert_int_equal(svg_render(&c, &s, &len, &d), SL_OK);
	char want[64];
	snprintf(want, sizeof(want), "time (%s)", unit);
	assert_non_null(strstr(s, want));
	double width = 0;
	assert_int_equal(sscanf(strstr(s, "width=\""), "width=\"%lf\"", &width), 1);
	int ticks = 0;
	/* Tick labels sit 16 px under the panel: y="256.0" for the first panel. */
	for (const char *p = strstr(s, "y=\"256.0\""); p; p = strstr(p + 1, "y=\"256.0\"")) {
		const char *tx = p;
		while (tx > s && strncmp(tx, "<text x=\"", 9))
			tx--;
		double px;
		char anchor[16], lab[32];
		assert_int_equal(sscanf(tx, "<text x=\"%lf\" y=\"256.0\" text-anchor=\"%15[a-z]\">%31[^<]",
					&px, anchor, lab), 3);
		double w = 7.0 * (double)strlen(lab);
		double l = !strcmp(anchor, "start") ? px : !strcmp(anchor, "end") ? px - w : px - w / 2;
		assert_true(l >= 0 && l + w <= width);
		double v = atof(lab);
		assert_true(fabs(v / step - round(v / step)) < 1e-6);
		ticks++;
	}
	assert_true(ticks >= 3 && ticks <= 12);
	free(s);
}

static void test_ticks_inside_and_round(void **state)
{
	(void)state;
	check_span(44, "s", 10);           /* the "0.0005093 days" of issue 17 */
	check_span(1800, "min", 5);
	check_span(12.2 * 3600, "h", 2);
	check_span(149 * 86400.0, "d", 20);
	check_span(1, "s", 0.2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nice_step),
		cmocka_unit_test(test_time_unit),
		cmocka_unit_test(test_ticks_inside_and_round),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

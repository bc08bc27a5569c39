/* svg_plot.h - line charts as SVG text, written by hand (no library).
 *
 * A chart is one or more panels stacked vertically over a shared x axis; each
 * panel plots one series with its own y axis from 0 to its maximum (or a
 * fixed maximum). The result is a standalone SVG document. Pure: builds text
 * in memory. */
#ifndef SL_SVG_PLOT_H
#define SL_SVG_PLOT_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define SVG_MAX_PANELS 4
#define SVG_MAX_POINTS 100000
#define SVG_MAX_TEXT ((size_t)64 << 20) /* bytes of one chart */

struct svg_panel {
	const char *label;  /* y axis label, e.g. "GPU allocated (%)" */
	const double *y;    /* npoints values */
	double ymax;        /* 0 = the data's maximum (at least 1) */
	const char *color;  /* "#1f77b4" */
};

struct svg_chart {
	const char *title;
	const char *xlabel;
	const double *x;    /* npoints, ascending */
	bool x_seconds;     /* x is seconds: round ticks in the unit that fits the
			       span (s, min, h, d), the unit appended to xlabel */
	int npoints;
	struct svg_panel panels[SVG_MAX_PANELS];
	int npanels;
};

/* Round axis ticks: a step of 1, 2 or 5 x 10^k (in unit) giving about
 * `want` intervals over [lo, hi]. Returns the step. For svg_render and tests. */
double svg_nice_step(double span, int want);
/* The unit a time span of `span` seconds reads best in: sets *unit (seconds
 * per unit) and returns "s", "min", "h" or "d". */
const char *svg_time_unit(double span, double *unit);

/* Renders the chart into *out (malloc'd, NUL-terminated; *len without the
 * NUL). SL_EINVAL for no points or panels, more than the bounds, or a value
 * that is not finite; SL_ENOMEM. Labels are XML-escaped. */
enum sl_err svg_render(const struct svg_chart *c, char **out, size_t *len,
		       struct sl_diag *d) SL_MUST_USE;

#endif

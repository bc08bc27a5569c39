/* svg_plot.c - the SVG line charts of svg_plot.h.
 *
 * Text goes into a growing buffer; every number is printed with a fixed
 * precision so the output is byte-for-byte reproducible. Each panel is a
 * polyline in its own band with five gridlines and tick labels; the x axis
 * gets round ticks (1, 2, 5 x 10^k), in s/min/h/d when x is time. */
#include "svg_plot.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

static void put_escaped(struct sl_buf *b, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': sl_buf_addf(b, "&lt;"); break;
		case '>': sl_buf_addf(b, "&gt;"); break;
		case '&': sl_buf_addf(b, "&amp;"); break;
		case '"': sl_buf_addf(b, "&quot;"); break;
		default: sl_buf_addf(b, "%c", *s);
		}
	}
}

#define W 900.0
#define LEFT 80.0
#define RIGHT 20.0
#define TOP 40.0
#define PANEL_H 200.0
#define GAP 40.0
#define CHAR_W 7.0 /* a generous width of one 12 px sans-serif digit */

double svg_nice_step(double span, int want)
{
	if (!(span > 0) || want < 1)
		return 1;
	double raw = span / want, p = pow(10, floor(log10(raw))), m = raw / p;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

const char *svg_time_unit(double span, double *unit)
{
	if (span < 180) {
		*unit = 1;
		return "s";
	}
	if (span < 3 * 3600) {
		*unit = 60;
		return "min";
	}
	if (span < 3 * 86400) {
		*unit = 3600;
		return "h";
	}
	*unit = 86400;
	return "d";
}

/* Ticks and labels under a panel: round values (in the time unit when x is
 * seconds), each label kept inside the picture. */
static void x_ticks(struct sl_buf *b, const struct svg_chart *c, double x0, double x1, double top)
{
	double pw = W - LEFT - RIGHT, unit = 1;
	if (c->x_seconds)
		(void)svg_time_unit(x1 - x0, &unit);
	double lo = x0 / unit, hi = x1 / unit, step = svg_nice_step(hi - lo, 8);
	int decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
	double first = ceil(lo / step - 1e-9) * step;
	for (int i = 0; i <= 20; i++) {
		double v = first + i * step;
		if (v > hi + step * 1e-9)
			break;
		double px = LEFT + pw * (v - lo) / (hi - lo);
		char lab[32];
		snprintf(lab, sizeof(lab), "%.*f", decimals, fabs(v) < step * 1e-9 ? 0.0 : v);
		double half = CHAR_W * (double)strlen(lab) / 2;
		const char *anchor = "middle";
		double tx = px;
		if (px + half > W - 2) {
			anchor = "end";
			tx = W - 2;
		} else if (px - half < 2) {
			anchor = "start";
			tx = 2;
		}
		sl_buf_addf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\"/>\n",
		    px, top + PANEL_H, px, top + PANEL_H + 4);
		sl_buf_addf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">%s</text>\n", tx,
		    top + PANEL_H + 16, anchor, lab);
	}
}

enum sl_err svg_render(const struct svg_chart *c, char **out, size_t *len, struct sl_diag *d)
{
	*out = NULL;
	*len = 0;
	if (!c || !c->x || c->npoints < 1 || c->npoints > SVG_MAX_POINTS || c->npanels < 1 ||
	    c->npanels > SVG_MAX_PANELS)
		return sl_diag_set(d, SL_EINVAL, "a chart needs 1..%d points and 1..%d panels",
				   SVG_MAX_POINTS, SVG_MAX_PANELS);
	for (int p = 0; p < c->npanels; p++) {
		if (!c->panels[p].y)
			return sl_diag_set(d, SL_EINVAL, "panel %d has no values", p);
		for (int i = 0; i < c->npoints; i++)
			if (!isfinite(c->panels[p].y[i]) || !isfinite(c->x[i]))
				return sl_diag_set(d, SL_EINVAL, "point %d is not a finite number", i);
	}
	double x0 = c->x[0], x1 = c->x[c->npoints - 1];
	if (x1 <= x0)
		x1 = x0 + 1;
	double h = TOP + c->npanels * (PANEL_H + GAP) + 20;
	struct sl_buf b = SL_BUF_INIT(SVG_MAX_TEXT);
	sl_buf_addf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, h, W, h);
	sl_buf_addf(&b, "<text x=\"%.0f\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">", W / 2);
	put_escaped(&b, c->title);
	sl_buf_addf(&b, "</text>\n");
	double pw = W - LEFT - RIGHT;
	for (int p = 0; p < c->npanels; p++) {
		const struct svg_panel *pn = &c->panels[p];
		double ymax = pn->ymax;
		if (ymax <= 0) {
			for (int i = 0; i < c->npoints; i++)
				if (pn->y[i] > ymax)
					ymax = pn->y[i];
			if (ymax < 1)
				ymax = 1;
			/* Four gridlines of a round step: labels 0, s, 2s, 3s, 4s. */
			ymax = 4 * svg_nice_step(ymax, 4);
		}
		double top = TOP + p * (PANEL_H + GAP);
		sl_buf_addf(&b, "<g>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
			"fill=\"none\" stroke=\"#999\"/>\n", LEFT, top, pw, PANEL_H);
		for (int g = 0; g <= 4; g++) {
			double yy = top + PANEL_H - PANEL_H * g / 4.0;
			sl_buf_addf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n"
				"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n",
			    LEFT, yy, LEFT + pw, yy, LEFT - 6, yy + 4, ymax * g / 4.0);
		}
		sl_buf_addf(&b, "<text transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\">",
		    top + PANEL_H / 2);
		put_escaped(&b, pn->label);
		sl_buf_addf(&b, "</text>\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
		    pn->color ? pn->color : "#1f77b4");
		for (int i = 0; i < c->npoints; i++) {
			double v = pn->y[i] < 0 ? 0 : (pn->y[i] > ymax ? ymax : pn->y[i]);
			double px = LEFT + pw * (c->x[i] - x0) / (x1 - x0);
			double py = top + PANEL_H - PANEL_H * v / ymax;
			sl_buf_addf(&b, "%s%.1f,%.1f", i ? " " : "", px, py);
		}
		sl_buf_addf(&b, "\"/>\n");
		x_ticks(&b, c, x0, x1, top);
		sl_buf_addf(&b, "</g>\n");
	}
	sl_buf_addf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", LEFT + pw / 2, h - 6);
	put_escaped(&b, c->xlabel);
	if (c->x_seconds) {
		double unit;
		sl_buf_addf(&b, " (%s)", svg_time_unit(x1 - x0, &unit));
	}
	sl_buf_addf(&b, "</text>\n</svg>\n");
	enum sl_err e = sl_buf_detach(&b, out, len);
	if (e == SL_ELIMIT)
		return sl_diag_set(d, e, "the chart is larger than %zu bytes", (size_t)SVG_MAX_TEXT);
	if (e)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	return SL_OK;
}

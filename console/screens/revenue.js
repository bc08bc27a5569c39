// revenue.js - revenue of the last months by region, model or plan: an SVG
// bar chart (one stacked bar per month) and the table it is drawn from.
import { html, useState } from '../lib/html.js';
import { t, tw } from '../lib/i18n.js';
import { get, enc } from '../lib/api.js';
import { useLoad } from '../lib/hooks.js';
import { Page, Card, Table, Money, Loaded, Field, Select } from '../lib/ui.js';
import { monthOf, monthsBack, money } from '../lib/fmt.js';

const BY = ['region', 'model', 'plan'];
const COLORS = ['#0b5cad', '#c2410c', '#15803d', '#7e22ce', '#b91c1c', '#0e7490', '#a16207', '#be185d', '#4d7c0f', '#1e3a8a', '#9a3412', '#365314', '#581c87'];

function Chart({ months, data, by }) {
	const keys = [...new Set(data.flatMap((m) => m.rows.map((r) => r[by])))].sort();
	const sums = data.map((m) => {
		const s = {};
		for (const r of m.rows) s[r[by]] = (s[r[by]] || 0) + r.amount;
		return s;
	});
	const max = Math.max(1, ...data.map((m) => m.total || 0));
	const W = 640, H = 260, L = 90, B = 40, bw = Math.min(60, (W - L - 20) / months.length - 12);
	const y = (v) => H - B - ((H - B - 20) * v) / max;
	const title = t('revenue.chart', { by: t('revenue.by_' + by) });
	return html`<figure>
		<svg class="chart" viewBox=${'0 0 ' + W + ' ' + H} role="img" aria-label=${title} data-testid="revenue-chart" width="100%" preserveAspectRatio="xMinYMin meet">
			<title>${title}</title>
			<line class="axis" x1=${L} y1=${H - B} x2=${W - 10} y2=${H - B} />
			<line class="axis" x1=${L} y1="20" x2=${L} y2=${H - B} />
			${[0, 0.5, 1].map((f) => html`<g><line class="axis" x1=${L - 4} x2=${L} y1=${y(max * f)} y2=${y(max * f)} /><text x=${L - 6} y=${y(max * f) + 4} text-anchor="end">${money(Math.round(max * f))}</text></g>`)}
			${months.slice().reverse().map((m, i) => {
				const s = sums[months.length - 1 - i];
				const x = L + 12 + i * (bw + 12);
				let acc = 0;
				return html`<g>${keys.map((k, ki) => {
					const v = s[k] || 0;
					if (!v) return null;
					const top = y(acc + v), bot = y(acc);
					acc += v;
					return html`<rect x=${x} y=${top} width=${bw} height=${Math.max(1, bot - top)} fill=${COLORS[ki % COLORS.length]}><title>${m + ' ' + k + ': ' + money(v)}</title></rect>`;
				})}<text x=${x + bw / 2} y=${H - B + 16} text-anchor="middle">${m}</text></g>`;
			})}
		</svg>
		<figcaption class="legend bars-legend">${keys.map((k, ki) => html`<span><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" fill=${COLORS[ki % COLORS.length]} /></svg>${by === 'plan' ? tw('plan', k) : k}</span>`)}</figcaption>
	</figure>`;
}

export default function Revenue() {
	const [by, setBy] = useState('region');
	const months = monthsBack(monthOf(), 6);
	const st = useLoad((o) => Promise.all(months.map((m) => get('/v1/revenue/' + enc(m), o))), []);
	return html`<${Page} title=${t('revenue.title')}>
		<div class="toolbar"><${Field} id="rev-by" label=${t('revenue.group_by')}>
			<${Select} id="rev-by" value=${by} onChange=${setBy} options=${BY.map((b) => ({ value: b, label: t('revenue.by_' + b) }))} />
		<//></div>
		<${Loaded} st=${st}>${(data) => html`
			<${Card} title=${t('revenue.chart', { by: t('revenue.by_' + by) })} id="rev-chart"><${Chart} months=${months} data=${data} by=${by} /><//>
			<${Card} title=${t('revenue.rows')} id="rev-rows">
				<${Table} testid="revenue-rows" empty=${t('revenue.none')} rows=${data.flatMap((m) => m.rows.map((r) => ({ ...r, month: m.month })))} cols=${[
					{ label: t('revenue.month'), key: 'month' },
					{ label: t('revenue.by_region'), key: 'region' },
					{ label: t('revenue.by_model'), key: 'model' },
					{ label: t('revenue.by_plan'), render: (r) => tw('plan', r.plan) },
					{ label: t('revenue.amount'), num: true, render: (r) => html`<${Money} fen=${r.amount} />` },
				]} />
				<p>${data.map((m) => html`<span class="stat-inline">${m.month}: <strong><${Money} fen=${m.total} /></strong> </span>`)}</p>
			<//>`}<//>
	<//>`;
}

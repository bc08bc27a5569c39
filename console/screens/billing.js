// billing.js - the tenant's invoices by month (with the CSV), its balance,
// and its ledger (GET /v1/tenants/T/ledger): every posting, and the top-ups,
// credits and credit-line changes among them.
import { html, useState } from '../lib/html.js';
import { t, tw } from '../lib/i18n.js';
import { get, all, enc, download } from '../lib/api.js';
import { useLoad } from '../lib/hooks.js';
import { Page, Card, Table, Money, Time, Loaded, Field, Select, Action, ErrorBox } from '../lib/ui.js';
import { monthOf, monthsBack, monthName, num } from '../lib/fmt.js';

const PAID_IN = ['topup', 'credit', 'refund', 'credit_line_up', 'credit_line_down'];

async function load(tenant, month, o) {
	const base = '/v1/tenants/' + enc(tenant);
	const [invoice, balance, ledger] = await Promise.all([
		get(base + '/invoices/' + enc(month), o),
		get(base + '/balance', o),
		all(base + '/ledger', o),
	]);
	const postings = ledger.slice().reverse();
	return { invoice, balance, postings, paidIn: postings.filter((p) => PAID_IN.includes(p.type)) };
}

function Invoice({ inv }) {
	return html`<${Table} testid="invoice-lines" empty=${t('billing.no_lines')} rows=${inv.lines} cols=${[
		{ label: t('billing.kind'), render: (l) => tw('line', l.kind) },
		{ label: t('billing.what'), render: (l) => [l.lease, l.model, l.plan && tw('plan', l.plan)].filter(Boolean).join(' · ') || l.reason || '—' },
		{ label: t('billing.from'), render: (l) => html`<${Time} at=${l.from} />` },
		{ label: t('billing.to'), render: (l) => html`<${Time} at=${l.to} />` },
		{ label: t('billing.gpu_hours'), num: true, render: (l) => (l.gpu_ms ? num(l.gpu_ms / 3600000, 4) : '—') },
		{ label: t('billing.unit_price'), num: true, render: (l) => html`<${Money} fen=${l.unit_price} />` },
		{ label: t('billing.amount'), num: true, render: (l) => html`<${Money} fen=${l.amount} />` },
	]} />
	<p class="price-now" data-testid="invoice-total">${t('billing.total')}: <${Money} fen=${inv.total} /> ${inv.complete ? '' : html`<span class="muted">(${t('billing.as_of')} <${Time} at=${inv.as_of} />)</span>`}</p>`;
}

const postingCols = () => [
	{ label: t('common.time'), render: (p) => html`<${Time} at=${p.at} />` },
	{ label: t('billing.kind'), render: (p) => tw('posting', p.type) + (p.plan ? ' · ' + tw('plan', p.plan) : '') },
	{ label: t('billing.amount'), num: true, render: (p) => html`<${Money} fen=${p.amount} />` },
	{ label: t('billing.reason'), render: (p) => p.reason || '—' },
	{ label: t('billing.posting'), key: 'id' },
];

export default function Billing({ session }) {
	const tenant = session.tenant;
	const months = monthsBack(monthOf(), 12);
	const [month, setMonth] = useState(months[0]);
	const [error, setError] = useState(null);
	const st = useLoad((o) => load(tenant, month, o), [tenant, month]);
	const csv = () => download('/v1/tenants/' + enc(tenant) + '/invoices/' + enc(month) + '?format=csv', 'invoice-' + tenant + '-' + month + '.csv');
	return html`<${Page} title=${t('billing.title')}>
		<div class="toolbar">
			<${Field} id="billing-month" label=${t('billing.month')}>
				<${Select} id="billing-month" value=${month} onChange=${setMonth} options=${months.map((m) => ({ value: m, label: monthName(m) }))} />
			<//>
			<${Action} testid="invoice-csv" kind="secondary" label=${t('billing.csv')} onRun=${csv} onError=${setError} />
		</div>
		<${ErrorBox} error=${error} />
		<${Loaded} st=${st}>${(d) => html`
			<${Card} title=${t('billing.invoice', { month: monthName(month) })} id="bill-invoice"><${Invoice} inv=${d.invoice} /><//>
			<div class="grid">
			<${Card} title=${t('billing.balance')} id="bill-balance">
				<dl class="kv">
					<dt>${t('overview.balance')}</dt><dd><${Money} fen=${d.balance.balance} /></dd>
					<dt>${t('overview.credit_line')}</dt><dd><${Money} fen=${d.balance.credit_line} /></dd>
					<dt>${t('overview.available')}</dt><dd><${Money} fen=${d.balance.available} /></dd>
					<dt>${t('billing.unposted')}</dt><dd><${Money} fen=${d.balance.unposted_usage} /></dd>
				</dl>
			<//>
			<${Card} title=${t('billing.topups')} id="bill-topups">
				<${Table} testid="topups" empty=${t('billing.no_topups')} rows=${d.paidIn} cols=${postingCols()} />
			<//>
			</div>
			<${Card} title=${t('billing.ledger')} id="bill-ledger">
				<${Table} testid="ledger" rows=${d.postings} cols=${postingCols()} />
			<//>`}<//>
	<//>`;
}

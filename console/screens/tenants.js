// tenants.js - every tenant with its regions, quotas, GPUs in use and money.
import { html } from '../lib/html.js';
import { t } from '../lib/i18n.js';
import { get, enc } from '../lib/api.js';
import { useLoad } from '../lib/hooks.js';
import { Page, Table, Money, State, Loaded } from '../lib/ui.js';

async function load(o) {
	const tenants = await get('/v1/tenants', o);
	return Promise.all(tenants.map(async (x) => {
		const [show, bal] = await Promise.all([
			get('/v1/tenants/' + enc(x.name), o).catch(() => x),
			get('/v1/tenants/' + enc(x.name) + '/balance', o).catch(() => null),
		]);
		return { ...x, usage: show.usage || {}, bal };
	}));
}

const kv = (o) => Object.entries(o || {}).map(([k, v]) => k + '=' + v).join(', ') || '—';

export default function Tenants() {
	const st = useLoad(load, []);
	return html`<${Page} title=${t('tenants.title')}>
		<${Loaded} st=${st}>${(rows) => html`<${Table} testid="tenants" rows=${rows} rowKey=${(r) => r.name} cols=${[
			{ label: t('tenants.name'), key: 'name' },
			{ label: t('tenants.regions'), render: (r) => (r.regions && r.regions.length ? r.regions.join(', ') : t('tenants.any')) },
			{ label: t('tenants.quotas'), render: (r) => kv(r.quotas) },
			{ label: t('tenants.in_use'), render: (r) => kv(r.usage) },
			{ label: t('overview.balance'), num: true, render: (r) => html`<${Money} fen=${r.bal && r.bal.balance} />` },
			{ label: t('overview.credit_line'), num: true, render: (r) => html`<${Money} fen=${r.bal && r.bal.credit_line} />` },
			{ label: t('tenants.state'), render: (r) => (r.bal ? html`<${State} value=${r.bal.state} />` : '—') },
		]} />`}<//>
	<//>`;
}

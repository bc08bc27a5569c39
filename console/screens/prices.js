// prices.js - the price book: what is in force, what is scheduled, and a form
// to set a price from an instant on.
import { html, useState } from '../lib/html.js';
import { t, tw } from '../lib/i18n.js';
import { get, post } from '../lib/api.js';
import { useLoad } from '../lib/hooks.js';
import { Page, Card, Table, Money, Time, Loaded, Field, Select, ErrorBox } from '../lib/ui.js';

const PLANS = ['hourly', 'spot', 'monthly', 'hosting'];

function SetPrice({ models, onDone }) {
	const [model, setModel] = useState(models[0] || '');
	const [plan, setPlan] = useState('hourly');
	const [price, setPrice] = useState('');
	const [from, setFrom] = useState('');
	const [error, setError] = useState(null);
	const submit = async (e) => {
		e.preventDefault();
		setError(null);
		try {
			const body = { plan, price: parseInt(price, 10) };
			if (plan !== 'hosting') body.model = model;
			if (from) body.from = new Date(from).toISOString();
			await post('/v1/prices', body);
			setPrice('');
			onDone();
		} catch (err) { setError(err); }
	};
	return html`<form onSubmit=${submit} data-testid="price-form"><div class="form-row">
		<${Field} id="price-model" label=${t('prices.model')}><${Select} id="price-model" value=${model} onChange=${setModel} options=${models.map((m) => ({ value: m, label: m }))} /><//>
		<${Field} id="price-plan" label=${t('prices.plan')}><${Select} id="price-plan" value=${plan} onChange=${setPlan} options=${PLANS.map((p) => ({ value: p, label: tw('plan', p) }))} /><//>
		<${Field} id="price-fen" label=${t('prices.price_fen')}><input id="price-fen" type="number" min="0" required value=${price} onInput=${(e) => setPrice(e.target.value)} /><//>
		<${Field} id="price-from" label=${t('prices.from')}><input id="price-from" type="datetime-local" value=${from} onInput=${(e) => setFrom(e.target.value)} /><//>
		<button type="submit">${t('prices.set')}</button>
	</div><${ErrorBox} error=${error} /></form>`;
}

export default function Prices() {
	const st = useLoad(async (o) => {
		const [book, fleet] = await Promise.all([get('/v1/prices?history=true', o), get('/v1/fleet', o)]);
		return { book, models: Object.keys(fleet.gpus_by_model || {}) };
	}, []);
	const now = Date.now();
	const cols = [
		{ label: t('prices.model'), render: (p) => p.model || '—' },
		{ label: t('prices.plan'), render: (p) => tw('plan', p.plan) },
		{ label: t('prices.scope'), render: (p) => tw('scope', p.scope) + (p.scope_name ? ' ' + p.scope_name : '') },
		{ label: t('prices.price'), num: true, render: (p) => html`<${Money} fen=${p.price} />` },
		{ label: t('prices.from'), render: (p) => html`<${Time} at=${p.from} />` },
	];
	return html`<${Page} title=${t('prices.title')}>
		<${Loaded} st=${st}>${(d) => {
			const all = d.book.prices || [];
			const force = all.filter((p) => p.in_force);
			const sched = all.filter((p) => !p.in_force && p.from_ms > now);
			return html`
			<${Card} title=${t('prices.in_force')} id="prices-now"><${Table} testid="prices-now" rows=${force} cols=${cols} empty=${t('prices.none')} /><//>
			<${Card} title=${t('prices.scheduled')} id="prices-sched"><${Table} testid="prices-scheduled" rows=${sched} cols=${cols} empty=${t('prices.none_scheduled')} /><//>
			<${Card} title=${t('prices.set_title')} id="prices-set"><p class="muted">${t('prices.units')}</p><${SetPrice} models=${d.models} onDone=${st.reload} /><//>`;
		}}<//>
	<//>`;
}

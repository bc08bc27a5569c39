// launch.js - a new instance: GPU model, count, region and plan first, with
// what is free and the price per hour as you choose; the placement preview
// (where it would go, its NVLink bottleneck); then image, SSH key, data disk
// and ports, and create.
import { html, useState, useEffect, useMemo } from '../lib/html.js';
import { t, tw } from '../lib/i18n.js';
import { get, post } from '../lib/api.js';
import { go } from '../lib/router.js';
import { useLoad } from '../lib/hooks.js';
import { Page, Card, Field, Select, Loaded, ErrorBox, Money } from '../lib/ui.js';
import { num } from '../lib/fmt.js';
import { priceFor } from './prices_lib.js';

const PLANS = ['hourly', 'spot', 'monthly'];

async function load(tenant, o) {
	const [tenantDoc, fleet, nodes, prices, images, keys] = await Promise.all([
		get('/v1/tenants/' + encodeURIComponent(tenant), o).catch(() => ({})), get('/v1/fleet', o), get('/v1/nodes', o), get('/v1/prices', o),
		get('/v1/images', o).catch(() => []),
		get('/v1/ssh-keys', o).catch(() => []),
	]);
	return { tenant: tenantDoc, fleet, nodes, prices, images, keys };
}

// Free GPUs by model in a region ('' any) on nodes that take new leases.
function freeBy(nodes, region) {
	const out = {};
	for (const n of nodes) {
		if (n.state !== 'ready' || (region && n.region !== region)) continue;
		out[n.model] = (out[n.model] || 0) + n.free_gpus;
	}
	return out;
}

function Preview({ req }) {
	const [st, setSt] = useState({ busy: true });
	useEffect(() => {
		let stale = false;
		setSt({ busy: true });
		const timer = setTimeout(() => {
			post('/v1/plan', req, { quiet: true }).then(
				(p) => !stale && setSt({ plan: p }),
				(e) => !stale && setSt({ error: e }),
			);
		}, 250);
		return () => { stale = true; clearTimeout(timer); };
	}, [JSON.stringify(req)]);
	if (st.busy) return html`<p class="loading" role="status">${t('launch.previewing')}</p>`;
	if (st.error && (st.error.status === 404 || st.error.status === 405)) return html`<p class="muted" data-testid="preview-none">${t('launch.preview_unavailable')}</p>`;
	if (st.error) return html`<${ErrorBox} error=${st.error} />`;
	const p = st.plan;
	if (!p.placement || p.placement.length === 0) {
		const r = p.refused || {};
		return html`<p class="notice" data-testid="preview-refused">${t('launch.preview_refused', { why: r.why || r.constraint || '' })}</p>`;
	}
	const worst = Math.min(...p.placement.map((x) => (x.quality ? x.quality.bottleneck_gbps : Infinity)));
	return html`<div data-testid="preview">
		<p>${t('launch.preview_where', { nodes: p.placement.length })} <strong data-testid="bottleneck">${req.gpus === 1 ? t('launch.single_gpu') : t('launch.bottleneck', { gbps: num(worst) })}</strong></p>
		<ul>${p.placement.map((x) => html`<li>${x.node} (${x.site}, ${x.leaf}): GPU ${x.gpus.join(', ')}</li>`)}</ul>
		${p.explanation ? html`<p class="muted">${p.explanation}</p>` : null}
	</div>`;
}

// A public key pasted here becomes one of the user's keys (POST /v1/ssh-keys).
function AddKey({ onAdded }) {
	const [name, setName] = useState('');
	const [key, setKey] = useState('');
	const [error, setError] = useState(null);
	const add = async () => {
		setError(null);
		try {
			const k = await post('/v1/ssh-keys', { name: name.trim(), key: key.trim() });
			setName('');
			setKey('');
			onAdded(k.name);
		} catch (e) { setError(e); }
	};
	return html`<details class="addkey" data-testid="add-key">
		<summary>${t('launch.add_key')}</summary>
		<div class="form-row">
			<${Field} id="key-name" label=${t('launch.key_name')}><input id="key-name" value=${name} maxlength="64" onInput=${(e) => setName(e.target.value)} /><//>
			<${Field} id="key-text" label=${t('launch.key_text')}><textarea id="key-text" rows="2" cols="60" value=${key} placeholder="ssh-ed25519 AAAA… you@laptop" onInput=${(e) => setKey(e.target.value)}></textarea><//>
			<button type="button" class="secondary" data-testid="add-key-submit" disabled=${!name.trim() || !key.trim()} onClick=${add}>${t('launch.key_add')}</button>
		</div>
		<${ErrorBox} error=${error} />
	</details>`;
}

function Form({ d, reload }) {
	const fleetModels = Object.keys(d.fleet.gpus_by_model || {});
	// the tenant's regions (it must name one when it has several), else the fleet's
	const mine = d.tenant.regions || [];
	const regions = mine.length ? mine : [...new Set((d.fleet.site_list || []).map((s) => s.region))];
	const anyRegion = mine.length <= 1;
	const [model, setModel] = useState(fleetModels[0] || '');
	const [count, setCount] = useState(1);
	const [region, setRegion] = useState(anyRegion ? '' : regions[0]);
	const [plan, setPlan] = useState('hourly');
	const [image, setImage] = useState('');
	const [key, setKey] = useState(d.keys.length ? d.keys[0].name : '');
	const keyAdded = async (name) => { await reload(); setKey(name); };
	const [volume, setVolume] = useState(0);
	const [ports, setPorts] = useState('');
	const [error, setError] = useState(null);
	const [busy, setBusy] = useState(false);
	const free = useMemo(() => freeBy(d.nodes, region), [d.nodes, region]);
	const price = priceFor(d.prices.prices || [], model, plan, region);
	const n = Math.max(1, parseInt(count, 10) || 1);
	const req = { gpus: n, models: [model], plan, ...(region ? { region } : {}) };
	const portList = ports.split(/[\s,]+/).filter(Boolean).map(Number);
	const portsBad = portList.some((p) => !Number.isInteger(p) || p < 1 || p > 65535);
	const create = async (e) => {
		e.preventDefault();
		setBusy(true);
		setError(null);
		try {
			const body = { gpus: n, model, plan, volume_gib: Math.max(0, parseInt(volume, 10) || 0), ports: portList };
			if (region) body.region = region;
			if (image) body.image = image;
			if (key) body.ssh_key = key;
			const inst = await post('/v1/instances', body);
			go('instance', inst.id);
		} catch (err) {
			setError(err);
		} finally {
			setBusy(false);
		}
	};
	const unit = plan === 'monthly' ? t('launch.per_month') : t('launch.per_hour');
	return html`<form onSubmit=${create} data-testid="launch-form">
		<${Card} title=${t('launch.step_gpus')} id="launch-gpus">
			<div class="form-row">
				<${Field} id="launch-model" label=${t('launch.model')}>
					<${Select} id="launch-model" value=${model} onChange=${setModel} options=${fleetModels.map((m) => ({ value: m, label: t('launch.model_free', { model: m, free: free[m] || 0 }) }))} />
				<//>
				<${Field} id="launch-count" label=${t('launch.count')}>
					<input id="launch-count" type="number" min="1" max="1024" value=${count} onInput=${(e) => setCount(e.target.value)} />
				<//>
				<${Field} id="launch-region" label=${t('launch.region')}>
					<${Select} id="launch-region" value=${region} onChange=${setRegion} options=${[...(anyRegion ? [{ value: '', label: t('launch.any_region') }] : []), ...regions.map((r) => ({ value: r, label: r }))]} />
				<//>
				<${Field} id="launch-plan" label=${t('launch.plan')}>
					<${Select} id="launch-plan" value=${plan} onChange=${setPlan} options=${PLANS.map((p) => ({ value: p, label: tw('plan', p) }))} />
				<//>
			</div>
			<p data-testid="availability">${(free[model] || 0) >= n ? t('launch.available', { free: free[model] || 0, model }) : t('launch.not_available', { free: free[model] || 0, model })}</p>
			<p class="price-now" data-testid="price">${price === null ? t('launch.no_price') : html`<${Money} fen=${price * n} /> ${unit} <span class="muted">(${t('launch.per_gpu', { price: '' })}<${Money} fen=${price} />)</span>`}</p>
		<//>
		<${Card} title=${t('launch.step_preview')} id="launch-preview"><${Preview} req=${req} /><//>
		<${Card} title=${t('launch.step_machine')} id="launch-machine">
			<div class="form-row">
				<${Field} id="launch-image" label=${t('launch.image')}>
					<${Select} id="launch-image" value=${image} onChange=${setImage} options=${[{ value: '', label: t('launch.default_image') }, ...d.images.map((i) => ({ value: i.name, label: i.name + (i.description ? ' — ' + i.description : '') }))]} />
				<//>
				<${Field} id="launch-key" label=${t('launch.ssh_key')} hint=${d.keys.length ? null : t('launch.no_keys')}>
					<${Select} id="launch-key" value=${key} onChange=${setKey} describedby=${d.keys.length ? undefined : 'launch-key-hint'} options=${[{ value: '', label: t('launch.no_key') }, ...d.keys.map((k) => ({ value: k.name, label: k.name }))]} />
				<//>
				<${AddKey} onAdded=${keyAdded} />
				<${Field} id="launch-volume" label=${t('launch.volume')} hint=${t('launch.volume_hint')}>
					<input id="launch-volume" type="number" min="0" max="100000" value=${volume} aria-describedby="launch-volume-hint" onInput=${(e) => setVolume(e.target.value)} />
				<//>
				<${Field} id="launch-ports" label=${t('launch.ports')} hint=${t('launch.ports_hint')}>
					<input id="launch-ports" value=${ports} placeholder="8888, 8000" aria-describedby="launch-ports-hint" aria-invalid=${portsBad ? 'true' : 'false'} onInput=${(e) => setPorts(e.target.value)} />
				<//>
			</div>
		<//>
		<${ErrorBox} error=${error} />
		<button type="submit" data-testid="launch-submit" disabled=${busy || portsBad || !model}>${t('launch.create')}</button>
	</form>`;
}

export default function Launch({ session }) {
	const st = useLoad((o) => load(session.tenant, o), [session.tenant]);
	return html`<${Page} title=${t('launch.title')}><${Loaded} st=${st}>${(d) => html`<${Form} d=${d} reload=${st.reload} />`}<//><//>`;
}

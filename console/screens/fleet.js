// fleet.js - the operator's map: sites, then leaves, then nodes, each node
// drawn as its GPUs (free, leased, draining, unhealthy) with allocated /
// healthy / total; a table of the same per GPU model; drain or resume the
// node picked on the map.
import { html, useState } from '../lib/html.js';
import { t, tw } from '../lib/i18n.js';
import { href } from '../lib/router.js';
import { useLoad } from '../lib/hooks.js';
import { Page, Card, Table, Loaded, State } from '../lib/ui.js';
import { loadFleet } from './fleet_lib.js';
import { DrainForm } from './drain_form.js';

const KINDS = ['free', 'leased', 'draining', 'unhealthy'];

function Legend() {
	return html`<div class="legend" aria-hidden="true">${KINDS.map((k) => html`<span><i class=${'gpu g-' + k}></i>${t('gpu.' + k)}</span>`)}</div>`;
}

function NodeTile({ n, picked, onPick }) {
	const c = n.counts;
	const label = t('fleet.node_label', { node: n.name, state: tw('state', n.state), leased: c.leased, healthy: c.healthy, total: c.total, free: c.free });
	return html`<button type="button" class=${'node st-' + n.state + (picked ? ' picked' : '')} data-testid=${'node-' + n.name} data-state=${n.state}
		aria-pressed=${picked ? 'true' : 'false'} aria-label=${label} onClick=${() => onPick(n.name)}>
		<span class="name">${n.name}</span>
		<span class="gpus">${n.g.map((s) => html`<i class=${'gpu g-' + s}></i>`)}</span>
		<span class="counts">${c.leased} / ${c.healthy} / ${c.total}${n.state !== 'ready' ? ' · ' + tw('state', n.state) : ''}</span>
	</button>`;
}

function Picked({ n, reload }) {
	return html`<${Card} title=${t('fleet.picked', { node: n.name })} id="fleet-picked">
		<p><${State} value=${n.state} /> ${n.model} · ${n.type} · ${n.site} / ${n.leaf} · <a href=${href('node', n.name)}>${t('fleet.details')}</a></p>
		<${DrainForm} node=${n} onDone=${reload} />
	<//>`;
}

export default function Fleet() {
	const st = useLoad(loadFleet, []);
	const [picked, setPicked] = useState(null);
	return html`<${Page} title=${t('fleet.title')}>
		<${Loaded} st=${st}>${(d) => {
			const pn = picked && d.sites.flatMap((s) => [...s.leaves.values()].flat()).find((n) => n.name === picked);
			return html`
			<${Legend} />
			<p class="muted">${t('fleet.counts_explained')}</p>
			${pn ? html`<${Picked} n=${pn} reload=${st.reload} />` : null}
			${d.sites.map((s) => html`<${Card} title=${s.name + ' (' + s.region + ')'} id=${'site-' + s.name}>
				${[...s.leaves.entries()].map(([leaf, nodes]) => html`<div class="leaf">
					<h3>${t('fleet.leaf', { leaf })}</h3>
					<div class="nodes" role="group" aria-label=${t('fleet.leaf', { leaf })}>${nodes.map((n) => html`<${NodeTile} n=${n} picked=${n.name === picked} onPick=${setPicked} />`)}</div>
				</div>`)}
			<//>`)}
			<${Card} title=${t('fleet.by_model')} id="fleet-models">
				<${Table} testid="by-model" rows=${d.models} cols=${[
					{ label: t('fleet.model'), key: 'model' },
					{ label: t('fleet.col_leased'), key: 'leased', num: true },
					{ label: t('fleet.healthy'), key: 'healthy', num: true },
					{ label: t('fleet.total'), key: 'total', num: true },
					{ label: t('fleet.col_free'), key: 'free', num: true },
					{ label: t('fleet.col_draining'), key: 'draining', num: true },
					{ label: t('fleet.col_unhealthy'), key: 'unhealthy', num: true },
				]} />
			<//>`;
		}}<//>
	<//>`;
}

// node.js - one node: state and drain/resume with a reason, each GPU (use,
// lease, health, NUMA, NIC), the NVLink/PCIe matrix as `suanli topo` shows it,
// the XID history, the leases on it and its agent.
import { html } from '../lib/html.js';
import { t } from '../lib/i18n.js';
import { get, enc } from '../lib/api.js';
import { useLoad } from '../lib/hooks.js';
import { Page, Card, Table, State, Time, Loaded } from '../lib/ui.js';
import { num } from '../lib/fmt.js';
import { DrainForm } from './drain_form.js';

const ABBR = { 'cross-socket': 'SYS', numa: 'NODE', 'pcie-hostbridge': 'PHB', 'pcie-switch': 'PIX', hccs: 'HCCS', nvswitch: 'NVS' };
const abbr = (l) => (l.kind === 'nvlink' ? 'NV' + l.count : ABBR[l.kind] || l.kind);
const cls = (l) => (/^nv/.test(l.kind) || l.kind === 'hccs' ? 'm-nv' : l.kind === 'cross-socket' ? 'm-sys' : 'm-pcie');

function Matrix({ n }) {
	const links = (n.topology && n.topology.links) || [];
	const at = {};
	for (const l of links) { at[l.gpus[0] + ',' + l.gpus[1]] = l; at[l.gpus[1] + ',' + l.gpus[0]] = l; }
	const idx = [...Array(n.gpus).keys()];
	const numa = (n.topology && n.topology.numa) || [];
	const cell = (i, j, bw) => {
		if (i === j) return html`<td>X</td>`;
		const l = at[i + ',' + j];
		if (!l) return html`<td>—</td>`;
		return html`<td class=${cls(l)}>${bw ? num(l.gbps) : abbr(l)}</td>`;
	};
	const table = (bw, caption) => html`<div class="table-wrap"><table class="matrix" data-testid=${bw ? 'matrix-gbps' : 'matrix'}>
		<caption>${caption}</caption>
		<thead><tr><th scope="col"><span class="sr-only">GPU</span></th>${idx.map((j) => html`<th scope="col">GPU${j}</th>`)}${bw ? null : html`<th scope="col">${t('node.numa')}</th>`}</tr></thead>
		<tbody>${idx.map((i) => html`<tr><th scope="row">GPU${i}</th>${idx.map((j) => cell(i, j, bw))}${bw ? null : html`<td>${numa[i] ?? '—'}</td>`}</tr>`)}</tbody>
	</table></div>`;
	return html`${table(false, t('node.matrix'))}
		<p class="muted">${t('node.matrix_legend')}</p>
		${table(true, t('node.matrix_gbps'))}`;
}

function gpuRows(n) {
	const nics = (n.topology && n.topology.nics) || [];
	return [...Array(n.gpus).keys()].map((i) => {
		const u = (n.gpu_state || [])[i] || {};
		const h = (n.gpu_health || []).find((g) => g.index === i) || {};
		return {
			index: i, use: u.state || '—', lease: u.lease || '', health: h.state || 'ok', reason: h.reason || '',
			numa: ((n.topology && n.topology.numa) || [])[i],
			nic: nics.filter((x) => (x.gpus || []).includes(i)).map((x) => x.name).join(', '),
			xid: h.last_xid ? 'Xid ' + h.last_xid.code : '',
		};
	});
}

export default function Node({ params }) {
	const name = params[0] || '';
	const st = useLoad((o) => get('/v1/nodes/' + enc(name), o), [name]);
	return html`<${Page} title=${t('node.title', { node: name })}>
		<${Loaded} st=${st}>${(n) => {
			const leases = [...new Set((n.gpu_state || []).map((g) => g.lease).filter(Boolean))];
			return html`
			<div class="grid">
			<${Card} title=${t('node.status')} id="node-status">
				<dl class="kv">
					<dt>${t('node.state')}</dt><dd data-testid="node-state"><${State} value=${n.state} /></dd>
					<dt>${t('node.type')}</dt><dd>${n.type} (${n.gpus} × ${n.model})</dd>
					<dt>${t('node.where')}</dt><dd>${n.site} (${n.region}) / ${n.leaf || '—'}${n.nvlink_domain ? ' / ' + n.nvlink_domain : ''}</dd>
					<dt>${t('node.free')}</dt><dd>${n.free_gpus} / ${n.gpus}</dd>
					${n.owner ? html`<dt>${t('node.owner')}</dt><dd>${n.owner}</dd>` : null}
				</dl>
				<${DrainForm} node=${n} onDone=${st.reload} />
			<//>
			<${Card} title=${t('node.agent')} id="node-agent">
				${n.agent ? html`<dl class="kv">
					<dt>${t('node.addr')}</dt><dd>${n.agent.addr}</dd>
					<dt>${t('node.version')}</dt><dd>${n.agent.agent_version}</dd>
					<dt>${t('node.heartbeat')}</dt><dd><${Time} at=${n.agent.last_heartbeat} /></dd>
					<dt>${t('node.state')}</dt><dd><${State} value=${n.agent.state} /> ${n.agent.reason || ''}</dd>
				</dl>` : html`<p class="muted">${n.simulated ? t('node.simulated') : t('node.no_agent')}</p>`}
			<//>
			</div>
			<${Card} title=${t('node.gpus')} id="node-gpus">
				<${Table} testid="node-gpus" rows=${gpuRows(n)} cols=${[
					{ label: 'GPU', key: 'index', num: true },
					{ label: t('node.use'), render: (r) => html`<${State} kind="gpu" value=${r.use} />` },
					{ label: t('node.lease'), key: 'lease' },
					{ label: t('node.health'), render: (r) => html`<${State} value=${r.health} /> ${r.reason}` },
					{ label: t('node.numa'), key: 'numa', num: true },
					{ label: t('node.nic'), key: 'nic' },
					{ label: t('node.last_xid'), key: 'xid' },
				]} />
			<//>
			<${Card} title=${t('node.topology')} id="node-topo"><${Matrix} n=${n} /><//>
			<div class="grid">
			<${Card} title=${t('node.xids')} id="node-xids">
				<${Table} testid="xids" empty=${t('node.no_xids')} rows=${(n.gpu_events || []).slice().reverse()} cols=${[
					{ label: t('common.time'), render: (e) => html`<${Time} at=${e.at} />` },
					{ label: 'GPU', key: 'gpu', num: true },
					{ label: 'Xid', key: 'code', num: true },
					{ label: t('node.health'), render: (e) => html`<${State} value=${e.state} />` },
				]} />
			<//>
			<${Card} title=${t('node.leases')} id="node-leases">
				${leases.length ? html`<ul>${leases.map((l) => html`<li>${l}</li>`)}</ul>` : html`<p class="muted">${t('node.no_leases')}</p>`}
			<//>
			</div>`;
		}}<//>
	<//>`;
}

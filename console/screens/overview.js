// overview.js - the renter's first screen: balance, credit line, month-to-date
// spend, and what runs now (instances and leases) with its cost so far.
import { html } from '../lib/html.js';
import { t } from '../lib/i18n.js';
import { get } from '../lib/api.js';
import { href } from '../lib/router.js';
import { useLoad } from '../lib/hooks.js';
import { Page, Card, Table, State, Money, Time, Loaded, Stat } from '../lib/ui.js';
import { duration } from '../lib/fmt.js';

async function load(tenant, o) {
	const [usage, instances, leases] = await Promise.all([
		get('/v1/usage', o),
		get('/v1/instances', o).catch((e) => (e.status === 404 ? null : Promise.reject(e))),
		get('/v1/leases', o),
	]);
	const mine = (usage.tenants || []).find((x) => x.tenant === tenant) || { running: [], month_to_date: {}, balance: {} };
	return { usage, mine, instances, leases };
}

function InstanceTable({ rows }) {
	return html`<${Table} testid="instances" empty=${t('overview.no_instances')} rowKey=${(r) => r.id} rows=${rows} cols=${[
		{ label: t('instance.id'), render: (r) => html`<a href=${href('instance', r.id)} data-testid=${'instance-link-' + r.id}>${r.id}</a>` },
		{ label: t('instance.state'), render: (r) => html`<span data-testid=${'instance-state-' + r.id}><${State} value=${r.state} /></span>` },
		{ label: t('instance.gpus'), num: true, render: (r) => (r.mode === 'no-gpu' ? t('instance.no_gpu') : r.gpus + ' × ' + (r.model || '')) },
		{ label: t('instance.region'), key: 'region' },
		{ label: t('instance.nodes'), render: (r) => (r.nodes || []).join(', ') || '—' },
		{ label: t('instance.cost'), num: true, render: (r) => html`<${Money} fen=${r.cost ? r.cost.total_fen : null} />` },
	]} />`;
}

export default function Overview({ session }) {
	const st = useLoad((o) => load(session.tenant, o), [session.tenant]);
	return html`<${Page} title=${t('overview.title')} actions=${html`<a class="button-link" href=${href('launch')}>${t('overview.launch')}</a>`}>
		<${Loaded} st=${st}>${(d) => {
			const b = d.mine.balance || {};
			const running = d.mine.running || [];
			const cost = Object.fromEntries(running.map((r) => [r.lease, r]));
			// an instance's lease is shown (and billed) as the instance
			const held = new Set((d.instances || []).map((i) => i.lease).filter(Boolean));
			const live = (d.leases || []).filter((l) => ['active', 'pending', 'preempting'].includes(l.state) && !held.has(l.id));
			return html`
			<div class="stats">
				<${Stat} label=${t('overview.balance')} testid="balance"><${Money} fen=${b.balance} /><//>
				<${Stat} label=${t('overview.credit_line')}><${Money} fen=${b.credit_line} /><//>
				<${Stat} label=${t('overview.available')}><${Money} fen=${b.available} /><//>
				<${Stat} label=${t('overview.month_to_date', { month: d.usage.month })} testid="mtd"><${Money} fen=${(d.mine.month_to_date || {}).total} /><//>
			</div>
			${b.state === 'grace' ? html`<p class="notice" role="status">${t('overview.grace', { until: b.grace_until })}</p>` : null}
			<${Card} title=${t('overview.instances')} id="ov-instances">
				${d.instances === null ? html`<p class="muted">${t('overview.no_instance_api')}</p>` : html`<${InstanceTable} rows=${d.instances.filter((i) => i.state !== 'released')} />`}
			<//>
			<${Card} title=${t('overview.leases')} id="ov-leases">
				<${Table} testid="leases" empty=${t('overview.no_leases')} rowKey=${(r) => r.id} rows=${live} cols=${[
					{ label: t('lease.id'), key: 'id' },
					{ label: t('lease.state'), render: (r) => html`<span data-testid=${'lease-state-' + r.id}><${State} value=${r.state} /></span>` },
					{ label: t('lease.plan'), render: (r) => html`<${State} kind="plan" value=${r.plan} />` },
					{ label: t('lease.gpus'), num: true, key: 'gpus' },
					{ label: t('lease.where'), render: (r) => (r.placement || []).map((p) => p.node + ' [' + p.gpus.join(',') + ']').join('; ') || (r.queue ? t('lease.queued', { pos: r.queue.position }) : '—') },
					{ label: t('lease.started'), render: (r) => html`<${Time} at=${r.started_at} />` },
					{ label: t('lease.running_for'), render: (r) => (cost[r.id] ? duration(cost[r.id].gpu_ms / Math.max(1, r.gpus)) : '—') },
					{ label: t('lease.cost'), num: true, render: (r) => html`<${Money} fen=${cost[r.id] ? cost[r.id].amount : null} />` },
				]} />
			<//>`;
		}}<//>
	<//>`;
}

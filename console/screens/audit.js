// audit.js - the auditor's screen: the log filtered by tenant, action and
// time, the newest signed checkpoint, the controller's full verification,
// each entry's inclusion proof checked here in the browser (merkle.js) or
// downloaded, and the export.
import { html, useState } from '../lib/html.js';
import { t, tw } from '../lib/i18n.js';
import { get, enc, download } from '../lib/api.js';
import { useLoad } from '../lib/hooks.js';
import { Page, Card, Table, Time, Loaded, Field, Action, ErrorBox } from '../lib/ui.js';
import { saveProof } from './proof_lib.js';
import { checkProof } from './merkle.js';

const SHOWN = 50; // the newest entries shown; the filter narrows, the export has all

function Checkpoint() {
	const st = useLoad((o) => get('/v1/audit/checkpoint', o).catch((e) => (e.status === 404 ? null : Promise.reject(e))), []);
	const [verify, setVerify] = useState(null);
	const [error, setError] = useState(null);
	return html`<${Card} title=${t('audit.checkpoint')} id="audit-cp">
		<${Loaded} st=${st}>${(cp) => (cp ? html`<dl class="kv" data-testid="checkpoint">
			<dt>${t('audit.origin')}</dt><dd>${cp.origin}</dd>
			<dt>${t('audit.size')}</dt><dd>${cp.size}</dd>
			<dt>${t('audit.root')}</dt><dd><code>${cp.root}</code></dd>
			<dt>${t('common.time')}</dt><dd><${Time} at=${cp.time} /></dd>
		</dl>` : html`<p class="muted">${t('audit.no_checkpoint')}</p>`)}<//>
		<div class="actions">
			<${Action} testid="audit-verify" label=${t('audit.verify')} onError=${setError} onRun=${async () => setVerify(await get('/v1/audit/verify'))} />
		</div>
		<${ErrorBox} error=${error} />
		${verify ? html`<p role="status" data-testid="verify-result" class=${verify.ok ? 'ok-text' : 'bad-text'}>${verify.ok
			? t('audit.verify_ok', { entries: verify.entries, checkpoints: verify.checkpoints })
			: t('audit.verify_bad', { seq: verify.first_bad_seq, fault: verify.fault, detail: verify.detail || '' })}</p>` : null}
	<//>`;
}

function ProofCell({ seq, onError }) {
	const [res, setRes] = useState(null);
	return html`<span class="proof-cell">
		<${Action} kind="secondary" testid=${'check-' + seq} label=${t('audit.check_here')} onError=${onError} onRun=${async () => setRes(await checkProof(await get('/v1/audit/proof?seq=' + enc(seq))))} />
		<${Action} kind="secondary" testid=${'proof-' + seq} label=${t('audit.download_proof')} onError=${onError} onRun=${() => saveProof(seq)} />
		${res ? html`<span role="status" data-testid=${'checked-' + seq} class=${res.ok ? 'ok-text' : 'bad-text'}>${res.ok ? t('audit.proof_ok') : t('audit.proof_bad')}</span>` : null}
	</span>`;
}

export default function Audit() {
	const [f, setF] = useState({ tenant: '', action: '', from: '', to: '' });
	const [applied, setApplied] = useState(f);
	const [error, setError] = useState(null);
	const st = useLoad(async (o) => {
		const q = ['limit=1000'];
		if (applied.tenant) q.push('tenant=' + enc(applied.tenant));
		if (applied.action) q.push('action=' + enc(applied.action));
		const rows = await get('/v1/audit/log?' + q.join('&'), o);
		const lo = applied.from ? Date.parse(applied.from) : -Infinity;
		const hi = applied.to ? Date.parse(applied.to) : Infinity;
		return rows.filter((r) => { const x = Date.parse(r.time); return x >= lo && x <= hi; }).reverse();
	}, [JSON.stringify(applied)]);
	const set = (k) => (e) => setF({ ...f, [k]: e.target.value });
	return html`<${Page} title=${t('audit.title')} actions=${html`<${Action} kind="secondary" testid="audit-export" label=${t('audit.export')} onError=${setError} onRun=${() => download('/v1/audit/export', 'audit-export.jsonl')} />`}>
		<${ErrorBox} error=${error} />
		<${Checkpoint} />
		<${Card} title=${t('audit.log')} id="audit-log">
			<form class="toolbar" data-testid="audit-filter" onSubmit=${(e) => { e.preventDefault(); setApplied(f); }}>
				<${Field} id="af-tenant" label=${t('audit.tenant')}><input id="af-tenant" value=${f.tenant} onInput=${set('tenant')} /><//>
				<${Field} id="af-action" label=${t('audit.action')}><input id="af-action" value=${f.action} placeholder="lease.create" onInput=${set('action')} /><//>
				<${Field} id="af-from" label=${t('audit.from')}><input id="af-from" type="datetime-local" value=${f.from} onInput=${set('from')} /><//>
				<${Field} id="af-to" label=${t('audit.to')}><input id="af-to" type="datetime-local" value=${f.to} onInput=${set('to')} /><//>
				<button type="submit">${t('audit.filter')}</button>
			</form>
			<${Loaded} st=${st}>${(rows) => html`<p class="muted" role="status">${t('audit.showing', { shown: Math.min(rows.length, SHOWN), total: rows.length })}</p>
			<${Table} testid="audit-entries" rows=${rows.slice(0, SHOWN)} rowKey=${(a) => a.seq} cols=${[
				{ label: t('audit.seq'), key: 'seq', num: true },
				{ label: t('common.time'), render: (a) => html`<${Time} at=${a.time} />` },
				{ label: t('audit.actor'), render: (a) => a.actor + ' (' + tw('role', a.role) + ')' },
				{ label: t('audit.tenant'), key: 'tenant' },
				{ label: t('audit.action'), render: (a) => tw('action', a.action) },
				{ label: t('audit.target'), key: 'target' },
				{ label: t('audit.outcome'), key: 'outcome' },
				{ label: t('audit.proof'), render: (a) => html`<${ProofCell} seq=${a.seq} onError=${setError} />` },
			]} />`}<//>
		<//>
	<//>`;
}

// myaudit.js - the tenant's own audit entries, each with its inclusion proof
// to download, and the whole tenant export (entries with proofs).
import { html, useState } from '../lib/html.js';
import { t, tw } from '../lib/i18n.js';
import { get, download } from '../lib/api.js';
import { useLoad } from '../lib/hooks.js';
import { Page, Card, Table, Time, Loaded, Action, ErrorBox } from '../lib/ui.js';
import { saveProof } from './proof_lib.js';

export default function MyAudit({ session }) {
	const [error, setError] = useState(null);
	const st = useLoad(async (o) => {
		const [log, cp] = await Promise.all([
			get('/v1/audit/log?limit=200&tenant=' + encodeURIComponent(session.tenant), o),
			get('/v1/audit/checkpoint', o).catch(() => null),
		]);
		return { log: log.slice().reverse(), cp };
	}, [session.tenant]);
	return html`<${Page} title=${t('myaudit.title')} actions=${html`<${Action} kind="secondary" testid="audit-export" label=${t('audit.export')} onError=${setError} onRun=${() => download('/v1/audit/export', 'audit-' + session.tenant + '.jsonl')} />`}>
		<${ErrorBox} error=${error} />
		<${Loaded} st=${st}>${(d) => html`
			<p class="muted">${d.cp ? t('myaudit.checkpoint', { size: d.cp.size }) : t('audit.no_checkpoint')}</p>
			<${Card} title=${t('myaudit.entries')} id="myaudit-entries">
				<${Table} testid="audit-entries" rows=${d.log} rowKey=${(a) => a.seq} cols=${[
					{ label: t('audit.seq'), key: 'seq', num: true },
					{ label: t('common.time'), render: (a) => html`<${Time} at=${a.time} />` },
					{ label: t('audit.action'), render: (a) => tw('action', a.action) },
					{ label: t('audit.target'), key: 'target' },
					{ label: t('audit.outcome'), key: 'outcome' },
					{ label: t('audit.proof'), render: (a) => html`<${Action} kind="secondary" testid=${'proof-' + a.seq} label=${t('audit.download_proof')} onError=${setError} onRun=${() => saveProof(a.seq)} />` },
				]} />
			<//>`}<//>
	<//>`;
}

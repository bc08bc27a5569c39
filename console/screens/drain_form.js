// drain_form.js - drain a node (with its reason) or resume it.
import { html, useState } from '../lib/html.js';
import { t } from '../lib/i18n.js';
import { post, enc } from '../lib/api.js';
import { ErrorBox, Action } from '../lib/ui.js';

export function DrainForm({ node, onDone }) {
	const [reason, setReason] = useState('');
	const [error, setError] = useState(null);
	const drained = node.state === 'draining' || node.state === 'drained';
	const base = '/v1/nodes/' + enc(node.name);
	const fid = 'drain-reason-' + node.name;
	return html`<div class="drain" data-testid="drain-form">
		${drained ? html`<p>${t('node.drained_because', { reason: node.reason || '—' })}</p>
			<${Action} testid="resume" label=${t('node.resume')} onError=${setError} onRun=${async () => { await post(base + '/resume'); onDone(); }} />`
		: html`<div class="form-row">
			<div class="field"><label for=${fid}>${t('node.drain_reason')}</label>
				<input id=${fid} data-testid="drain-reason" maxlength="256" value=${reason} onInput=${(e) => setReason(e.target.value)} /></div>
			<${Action} testid="drain" kind="danger" label=${t('node.drain')} disabled=${!reason.trim()} onError=${setError} onRun=${async () => { await post(base + '/drain', { reason: reason.trim() }); setReason(''); onDone(); }} />
		</div>`}
		<${ErrorBox} error=${error} />
	</div>`;
}

// queue.js - leases waiting for capacity, in the order they will be tried,
// with the reason each waits.
import { html } from '../lib/html.js';
import { t } from '../lib/i18n.js';
import { get } from '../lib/api.js';
import { useLoad } from '../lib/hooks.js';
import { Page, Table, State, Time, Loaded } from '../lib/ui.js';
import { duration } from '../lib/fmt.js';

export default function Queue() {
	const st = useLoad((o) => get('/v1/queue', o), []);
	return html`<${Page} title=${t('queue.title')}>
		<${Loaded} st=${st}>${(q) => html`<${Table} testid="queue" empty=${t('queue.empty')} rows=${q} rowKey=${(r) => r.lease} cols=${[
			{ label: t('queue.position'), key: 'position', num: true },
			{ label: t('lease.id'), key: 'lease' },
			{ label: t('queue.tenant'), key: 'tenant' },
			{ label: t('lease.plan'), render: (r) => html`<${State} kind="plan" value=${r.plan} />` },
			{ label: t('lease.gpus'), key: 'gpus', num: true },
			{ label: t('queue.waited'), render: (r) => duration(Date.now() - Date.parse(r.submitted_at)) },
			{ label: t('queue.submitted'), render: (r) => html`<${Time} at=${r.submitted_at} />` },
			{ label: t('queue.reason'), key: 'reason' },
		]} />`}<//>
	<//>`;
}

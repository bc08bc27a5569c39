// instance.js - one instance: its state and why, the SSH command with a copy
// button, ports and host keys, stop / start / release (with the choices the
// CLI gives when the GPUs were taken: wait, no GPU, migrate), jobs and logs.
import { html, useState } from '../lib/html.js';
import { t, tw } from '../lib/i18n.js';
import { get, post, enc } from '../lib/api.js';
import { useLoad } from '../lib/hooks.js';
import { Page, Card, Table, State, Money, Time, Loaded, ErrorBox, CopyButton, Action } from '../lib/ui.js';

async function load(id, o) {
	const inst = await get('/v1/instances/' + enc(id), o);
	const [jobs, logs] = await Promise.all([
		inst.lease ? get('/v1/jobs?lease=' + enc(inst.lease), o).catch(() => []) : [],
		get('/v1/instances/' + enc(id) + '/logs', { ...o, quiet: true }).then((r) => (r && r.log) || '', () => ''),
	]);
	return { inst, jobs, logs };
}

function StartChoices({ id, error, onDone, onError }) {
	const [choice, setChoice] = useState('wait');
	const opts = ['wait', 'no_gpu', 'migrate'];
	return html`<fieldset class="choices" data-testid="start-choices">
		<legend>${t('instance.gpus_taken')}</legend>
		<p>${error.message}</p>
		${opts.map((o) => html`<label><input type="radio" name="start-choice" value=${o} checked=${choice === o} onChange=${() => setChoice(o)} /> ${t('instance.choice_' + o)}</label>`)}
		<${Action} testid="start-with-choice" label=${t('instance.start_with')} onError=${onError} onRun=${async () => {
			await post('/v1/instances/' + enc(id) + '/start', { wait: choice === 'wait', no_gpu: choice === 'no_gpu', migrate: choice === 'migrate' });
			onDone();
		}} />
	</fieldset>`;
}

function Controls({ inst, reload }) {
	const [error, setError] = useState(null);
	const [taken, setTaken] = useState(null);
	const id = inst.id;
	const act = (verb, body) => async () => {
		setError(null);
		setTaken(null);
		try {
			await post('/v1/instances/' + enc(id) + '/' + verb, body);
		} catch (e) {
			if (verb === 'start' && e.status === 409) setTaken(e);
			else throw e;
		}
		reload();
	};
	const s = inst.state;
	const canStop = ['running', 'starting', 'waiting'].includes(s);
	const canStart = ['stopped', 'failed'].includes(s);
	const canRelease = !['released', 'releasing'].includes(s);
	return html`<div class="actions" role="group" aria-label=${t('instance.actions')}>
		${canStop ? html`<${Action} testid="stop" kind="secondary" label=${t('instance.stop')} onRun=${act('stop')} onError=${setError} />` : null}
		${canStart ? html`<${Action} testid="start" label=${t('instance.start')} onRun=${act('start', {})} onError=${setError} />` : null}
		${canRelease ? html`<${Action} testid="release" kind="danger" label=${t('instance.release')} onError=${setError} onRun=${async () => {
			if (!confirm(t('instance.release_confirm', { id }))) return;
			await act('release')();
		}} />` : null}
	</div>
	${taken ? html`<${StartChoices} id=${id} error=${taken} onError=${setError} onDone=${() => { setTaken(null); reload(); }} />` : null}
	<${ErrorBox} error=${error} />`;
}

function Access({ inst }) {
	const ssh = inst.ssh || [];
	return html`<${Card} title=${t('instance.access')} id="inst-access">
		${ssh.length === 0 ? html`<p class="muted">${t('instance.no_ssh_yet')}</p>` : ssh.map((s) => html`<div class="sshline">
			<code class="cmd" data-testid="ssh-command">${s.command}</code>
			<${CopyButton} text=${s.command} testid="copy-ssh" label=${t('instance.copy_ssh')} />
			<span class="muted">${s.node}</span></div>`)}
		<h3>${t('instance.ports')}</h3>
		<${Table} testid="ports" empty=${t('instance.no_ports')} rows=${inst.ports || []} cols=${[
			{ label: t('instance.port'), key: 'port', num: true },
			{ label: t('instance.node'), key: 'node' },
			{ label: t('instance.reach_at'), render: (p) => (p.host_port ? p.host + ':' + p.host_port : '—') },
		]} />
		${(inst.host_keys || []).length ? html`<h3>${t('instance.host_keys')}</h3>
			<ul>${inst.host_keys.map((k) => html`<li><code>${k.node} ${k.type} ${k.fingerprint}</code></li>`)}</ul>` : null}
	<//>`;
}

function Detail({ d, reload }) {
	const i = d.inst;
	const c = i.cost || {};
	return html`
		${i.notice ? html`<p class="notice" role="status">${i.notice}</p>` : null}
		<div class="grid">
		<${Card} title=${t('instance.status')} id="inst-status">
			<dl class="kv">
				<dt>${t('instance.state')}</dt><dd data-testid="instance-state"><${State} value=${i.state} /></dd>
				<dt>${t('instance.reason')}</dt><dd data-testid="instance-reason">${i.reason || '—'}</dd>
				<dt>${t('instance.gpus')}</dt><dd>${i.mode === 'no-gpu' ? t('instance.no_gpu') : i.gpus + ' × ' + (i.model || '')}</dd>
				<dt>${t('instance.plan')}</dt><dd>${tw('plan', i.plan)}</dd>
				<dt>${t('instance.nodes')}</dt><dd>${(i.nodes || []).join(', ') || '—'}</dd>
				<dt>${t('instance.image')}</dt><dd>${i.image || '—'}</dd>
				<dt>${t('instance.volume')}</dt><dd>${i.volume_gib ? i.volume_gib + ' GiB' : '—'}</dd>
				<dt>${t('instance.lease')}</dt><dd>${i.lease || '—'}</dd>
				<dt>${t('instance.created')}</dt><dd><${Time} at=${i.created_at} /></dd>
				<dt>${t('instance.running_since')}</dt><dd><${Time} at=${i.running_since} /></dd>
			</dl>
			<${Controls} inst=${i} reload=${reload} />
		<//>
		<${Card} title=${t('instance.cost')} id="inst-cost">
			<dl class="kv">
				<dt>${t('instance.cost_gpu')}</dt><dd><${Money} fen=${c.gpu_fen} /></dd>
				<dt>${t('instance.cost_no_gpu')}</dt><dd><${Money} fen=${c.no_gpu_fen} /></dd>
				<dt>${t('instance.cost_storage')}</dt><dd><${Money} fen=${c.storage_fen} /></dd>
				<dt>${t('instance.cost_total')}</dt><dd data-testid="instance-cost"><strong><${Money} fen=${c.total_fen} /></strong></dd>
				<dt>${t('instance.storage_per_day')}</dt><dd><${Money} fen=${c.storage_fen_per_day} /></dd>
			</dl>
		<//>
		</div>
		<${Access} inst=${i} />
		<${Card} title=${t('instance.history')} id="inst-history">
			<${Table} rows=${(i.history || []).slice().reverse()} cols=${[
				{ label: t('common.time'), render: (h) => html`<${Time} at=${h.at} />` },
				{ label: t('instance.state'), render: (h) => html`<${State} value=${h.state} />` },
				{ label: t('instance.reason'), key: 'reason' },
			]} />
		<//>
		<${Card} title=${t('instance.jobs')} id="inst-jobs">
			<${Table} rows=${d.jobs} empty=${t('instance.no_jobs')} cols=${[
				{ label: t('job.id'), key: 'id' },
				{ label: t('job.state'), render: (j) => html`<${State} value=${j.state} />` },
				{ label: t('job.command'), render: (j) => html`<code>${(j.argv || []).join(' ')}</code>` },
				{ label: t('job.created'), render: (j) => html`<${Time} at=${j.created_at} />` },
			]} />
		<//>
		<${Card} title=${t('instance.logs')} id="inst-logs">
			${d.logs ? html`<pre data-testid="logs" tabindex="0" aria-label=${t('instance.logs')}>${d.logs}</pre>` : html`<p class="muted">${t('instance.no_logs')}</p>`}
		<//>`;
}

export default function Instance({ params }) {
	const id = params[0] || '';
	const st = useLoad((o) => load(id, o), [id]);
	return html`<${Page} title=${t('instance.title', { id })}>
		<${Loaded} st=${st}>${(d) => html`<${Detail} d=${d} reload=${st.reload} />`}<//>
	<//>`;
}

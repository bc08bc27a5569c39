// ui.js - the pieces every screen uses: page frame, tables, states, errors,
// amounts, times, a copy button and labelled form fields.
import { html, useState } from './html.js';
import { t, tw } from './i18n.js';
import { money, time } from './fmt.js';

export function Page({ title, actions, children }) {
	return html`<section class="page" aria-labelledby="page-title">
		<header class="page-head"><h1 id="page-title" tabindex="-1">${title}</h1>${actions ? html`<div class="actions">${actions}</div>` : null}</header>
		${children}
	</section>`;
}

export function Card({ title, id, children }) {
	const hid = id ? id + '-h' : undefined;
	return html`<section class="card" id=${id} aria-labelledby=${hid}>
		${title ? html`<h2 id=${hid}>${title}</h2>` : null}${children}</section>`;
}

// cols: [{key, label, render?(row), num?}]
export function Table({ caption, cols, rows, empty, rowKey, testid }) {
	if (!rows || rows.length === 0) return html`<p class="empty">${empty || t('common.none')}</p>`;
	return html`<div class="table-wrap"><table data-testid=${testid}>
		${caption ? html`<caption>${caption}</caption>` : null}
		<thead><tr>${cols.map((c) => html`<th scope="col" class=${c.num ? 'num' : ''}>${c.label}</th>`)}</tr></thead>
		<tbody>${rows.map((r, i) => html`<tr key=${rowKey ? rowKey(r) : i}>${cols.map((c) => html`<td class=${c.num ? 'num' : ''}>${c.render ? c.render(r) : fmtCell(r[c.key])}</td>`)}</tr>`)}</tbody>
	</table></div>`;
}

function fmtCell(v) {
	if (v === null || v === undefined || v === '') return '—';
	if (Array.isArray(v)) return v.join(', ');
	return String(v);
}

export function State({ kind = 'state', value }) {
	return html`<span class=${'badge st-' + String(value).replace(/[^a-z0-9-]/gi, '')}>${tw(kind, value)}</span>`;
}

export const Money = ({ fen }) => html`<span class="money">${money(fen)}</span>`;
export const Time = ({ at }) => (at ? html`<time datetime=${at}>${time(at)}</time>` : '—');

export function Loading() { return html`<p class="loading" role="status">${t('common.loading')}</p>`; }

export function ErrorBox({ error }) {
	if (!error) return null;
	const key = 'error.' + (error.code || 'http');
	const msg = error.status === 404 ? t('error.not_found') : error.status === 403 ? t('error.forbidden') : error.message;
	return html`<div class="error" role="alert" data-code=${error.code || ''}>
		<strong>${t(key) === key ? t('error.failed') : t(key)}</strong>
		<span>${msg}</span>${error.hint ? html`<span class="hint">${error.hint}</span>` : null}</div>`;
}

// Loaded: the three states of useLoad in one line.
export function Loaded({ st, children }) {
	if (st.error && !st.data) return html`<${ErrorBox} error=${st.error} />`;
	if (st.loading && !st.data) return html`<${Loading} />`;
	return html`${st.error ? html`<${ErrorBox} error=${st.error} />` : null}${children(st.data)}`;
}

export function Field({ id, label, hint, children }) {
	return html`<div class="field"><label for=${id}>${label}</label>${children}${hint ? html`<small id=${id + '-hint'}>${hint}</small>` : null}</div>`;
}

export function Select({ id, value, options, onChange, describedby }) {
	return html`<select id=${id} value=${value} aria-describedby=${describedby} onChange=${(e) => onChange(e.target.value)}>
		${options.map((o) => html`<option value=${o.value} selected=${o.value === value}>${o.label}</option>`)}</select>`;
}

export function CopyButton({ text, label, testid }) {
	const [done, setDone] = useState(false);
	const copy = async () => {
		try {
			await navigator.clipboard.writeText(text);
			setDone(true);
			setTimeout(() => setDone(false), 2000);
		} catch (_) {
			setDone(false);
		}
	};
	return html`<button type="button" class="copy" data-testid=${testid} onClick=${copy}>${done ? t('common.copied') : label || t('common.copy')}</button>
		<span class="sr-only" role="status">${done ? t('common.copied') : ''}</span>`;
}

// Busy: a button that runs an async action once at a time and reports its error.
export function Action({ onRun, label, kind = '', testid, disabled, onError }) {
	const [busy, setBusy] = useState(false);
	const run = async () => {
		setBusy(true);
		try { await onRun(); } catch (e) { if (onError) onError(e); } finally { setBusy(false); }
	};
	return html`<button type="button" class=${kind} data-testid=${testid} disabled=${busy || disabled} aria-busy=${busy ? 'true' : 'false'} onClick=${run}>${label}</button>`;
}

export function Stat({ label, children, testid }) {
	return html`<div class="stat" data-testid=${testid}><div class="stat-label">${label}</div><div class="stat-value">${children}</div></div>`;
}

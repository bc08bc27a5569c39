// api.js - every request the console makes: same-origin JSON with the session
// cookie, and the session's CSRF token on each state-changing method (the same
// API the CLI uses; nothing private to the browser).
// The CSRF token is kept in memory only; after a reload GET /v1/session
// gives it again.
const STATE = { me: null, csrf: null, onUnauthorized: null };

export class ApiError extends Error {
	constructor(status, code, message, hint) {
		super(message);
		this.status = status;
		this.code = code;
		this.hint = hint || '';
	}
}

export function me() { return STATE.me; }

export function setSession(s) {
	STATE.me = s;
	STATE.csrf = (s && s.csrf) || null;
}

export function onUnauthorized(fn) { STATE.onUnauthorized = fn; }

async function errorOf(r) {
	let e = {};
	try { e = (await r.json()).error || {}; } catch (_) { /* not JSON */ }
	return new ApiError(r.status, e.code || 'http_' + r.status, e.message || r.statusText, e.hint);
}

// request(METHOD, PATH, BODY?, {raw, quiet, background}) : the parsed JSON
// answer (raw: the Response). A 401 outside quiet calls the sign-in handler
// before throwing; background marks a refresh no person asked for.
export async function request(method, path, body, opts = {}) {
	const headers = { Accept: 'application/json' };
	// a timer's refresh is not the user's use of the session (idle expiry)
	if (opts.background) headers['X-Suanli-Background'] = '1';
	if (body !== undefined) headers['Content-Type'] = 'application/json';
	if (method !== 'GET' && method !== 'HEAD') {
		if (STATE.csrf) headers['X-CSRF-Token'] = STATE.csrf;
	}
	const r = await fetch(path, {
		method, headers, credentials: 'same-origin', cache: 'no-store',
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	if (!r.ok) {
		const err = await errorOf(r);
		if (r.status === 401 && !opts.quiet && STATE.onUnauthorized) STATE.onUnauthorized();
		throw err;
	}
	if (opts.raw) return r;
	const text = await r.text();
	return text ? JSON.parse(text) : null;
}

export const get = (path, opts) => request('GET', path, undefined, opts);
export const post = (path, body, opts) => request('POST', path, body === undefined ? {} : body, opts);
export const del = (path, opts) => request('DELETE', path, undefined, opts);

// download(PATH, FILENAME): fetches with the session and saves the bytes.
export async function download(path, filename) {
	const r = await request('GET', path, undefined, { raw: true });
	const blob = await r.blob();
	const url = URL.createObjectURL(blob);
	const a = document.createElement('a');
	a.href = url;
	a.download = filename;
	document.body.appendChild(a);
	a.click();
	a.remove();
	setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// Sessions (POST /v1/sessions, GET/DELETE /v1/session).
export async function signIn(user, password) {
	const s = await request('POST', '/v1/sessions', { user, password }, { quiet: true });
	setSession(s);
	return s;
}

export async function whoami() {
	const s = await request('GET', '/v1/session', undefined, { quiet: true });
	setSession(s);
	return s;
}

export async function signOut() {
	try { await request('DELETE', '/v1/session', undefined, { quiet: true }); } finally { setSession(null); }
}

// Every page of a paged list (?limit=&after=): the items in order.
export async function all(path, opts, limit = 500) {
	const out = [];
	let after = null;
	for (let i = 0; i < 1000; i++) {
		const sep = path.includes('?') ? '&' : '?';
		const page = await get(path + sep + 'limit=' + limit + (after ? '&after=' + encodeURIComponent(after) : ''), opts);
		if (Array.isArray(page)) return out.concat(page);
		out.push(...page.items);
		if (!page.next) break;
		after = page.next;
	}
	return out;
}

export const enc = encodeURIComponent;

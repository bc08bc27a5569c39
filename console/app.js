// app.js - the console's frame: sign-in, the navigation for the signed-in
// role, the language and time-zone switches, and the screen of the route.
import { html, render, useState, useEffect } from './lib/html.js';
import { t, LANGS, loadLang, saveLang, currentLang, savedOrBrowserLang, tw } from './lib/i18n.js';
import { zone, zones, setZone } from './lib/fmt.js';
import { whoami, signOut, onUnauthorized } from './lib/api.js';
import { parse, href } from './lib/router.js';
import { stopLive } from './lib/events.js';
import { Loading, ErrorBox } from './lib/ui.js';

const TENANT = ['tenant', 'tenant-admin'];
const PROVIDER = ['operator', 'admin'];
const AUDITOR = ['auditor'];

// name: [module, roles allowed, shown in the navigation]
const ROUTES = {
	overview: ['overview', TENANT, true],
	launch: ['launch', TENANT, true],
	instance: ['instance', [...TENANT, ...PROVIDER], false],
	billing: ['billing', TENANT, true],
	myaudit: ['myaudit', TENANT, true],
	fleet: ['fleet', [...PROVIDER, ...AUDITOR], true],
	node: ['node', [...PROVIDER, ...AUDITOR], false],
	queue: ['queue', PROVIDER, true],
	tenants: ['tenants', [...PROVIDER, ...AUDITOR], true],
	prices: ['prices', PROVIDER, true],
	revenue: ['revenue', [...PROVIDER, ...AUDITOR], true],
	audit: ['audit', [...AUDITOR, ...PROVIDER], true],
};

function home(role) {
	if (TENANT.includes(role)) return 'overview';
	if (AUDITOR.includes(role)) return 'audit';
	return 'fleet';
}

function Switches({ onLang, onZone }) {
	return html`<div class="switches">
		<label for="lang-switch" class="sr-only">${t('nav.language')}</label>
		<select id="lang-switch" data-testid="lang-switch" value=${currentLang()} onChange=${(e) => onLang(e.target.value)}>
			${LANGS.map((l) => html`<option value=${l} selected=${l === currentLang()}>${t('lang.' + l)}</option>`)}
		</select>
		<label for="tz-switch" class="sr-only">${t('nav.zone')}</label>
		<select id="tz-switch" value=${zone()} onChange=${(e) => onZone(e.target.value)}>
			${zones().map((z) => html`<option value=${z} selected=${z === zone()}>${z}</option>`)}
		</select>
	</div>`;
}

function Nav({ role, current }) {
	const items = Object.entries(ROUTES).filter(([, r]) => r[2] && r[1].includes(role));
	return html`<nav aria-label=${t('nav.main')}><ul>
		${items.map(([name]) => html`<li><a href=${href(name)} aria-current=${current === name ? 'page' : undefined}>${t('nav.' + name)}</a></li>`)}
	</ul></nav>`;
}

const loaded = {};
function Screen({ route, session }) {
	const [mod, setMod] = useState(null);
	const [err, setErr] = useState(null);
	const r = ROUTES[route.name];
	useEffect(() => {
		setErr(null);
		if (!r) return;
		if (loaded[r[0]]) { setMod(() => loaded[r[0]]); return; }
		setMod(null);
		import('./screens/' + r[0] + '.js').then((m) => { loaded[r[0]] = m.default; setMod(() => m.default); }, setErr);
	}, [route.name]);
	useEffect(() => {
		const h = document.getElementById('page-title');
		if (h) h.focus({ preventScroll: true });
	}, [route.name, mod]);
	if (!r) return html`<div class="error" role="alert">${t('error.no_such_page')}</div>`;
	if (!r[1].includes(session.role)) return html`<div class="error" role="alert" data-testid="not-for-role">${t('error.not_for_role')}</div>`;
	if (err) return html`<${ErrorBox} error=${err} />`;
	if (!mod) return html`<${Loading} />`;
	const M = mod;
	return html`<${M} params=${route.params} session=${session} key=${route.name + '/' + route.params.join('/')} />`;
}

function App() {
	const [session, setSession] = useState(undefined);
	const [route, setRoute] = useState(parse());
	const [, setTick] = useState(0);
	useEffect(() => {
		const f = () => setRoute(parse());
		addEventListener('hashchange', f);
		onUnauthorized(() => { stopLive(); setSession(null); });
		whoami().then(setSession, () => setSession(null));
		return () => removeEventListener('hashchange', f);
	}, []);
	useEffect(() => { document.title = t('app.title'); });
	const changeLang = async (l) => { await loadLang(l); saveLang(l); setTick((n) => n + 1); };
	const changeZone = (z) => { setZone(z); setTick((n) => n + 1); };
	if (session === undefined) return html`<${Loading} />`;
	if (!session) {
		const SignIn = loaded.signin;
		return html`<div class="signin-frame"><div class="signin-top"><${Switches} onLang=${changeLang} onZone=${changeZone} /></div>
			<main id="main"><${SignIn} onSignedIn=${(s) => { setSession(s); if (!route.name) location.hash = href(home(s.role)); }} /></main></div>`;
	}
	if (!route.name) { location.hash = href(home(session.role)); return html`<${Loading} />`; }
	const out = async () => { stopLive(); await signOut(); setSession(null); location.hash = ''; };
	return html`<div class="frame">
		<a class="skip" href="#main" onClick=${(e) => { e.preventDefault(); document.getElementById('main').focus(); }}>${t('nav.skip')}</a>
		<header class="top">
			<span class="brand">${t('app.brand')}</span>
			<${Nav} role=${session.role} current=${route.name} />
			<div class="who">
				<span data-testid="whoami">${session.user}${session.tenant ? ' · ' + session.tenant : ''} · ${tw('role', session.role)}</span>
				<${Switches} onLang=${changeLang} onZone=${changeZone} />
				<button type="button" class="link" data-testid="sign-out" onClick=${out}>${t('nav.sign_out')}</button>
			</div>
		</header>
		<main id="main" tabindex="-1" data-route=${[route.name, ...route.params].join('/')}><${Screen} route=${route} session=${session} /></main>
	</div>`;
}

async function boot() {
	await loadLang(savedOrBrowserLang());
	loaded.signin = (await import('./screens/signin.js')).default;
	render(html`<${App} />`, document.getElementById('app'));
}
boot().catch((e) => {
	document.getElementById('app').textContent = 'suanli: ' + e.message;
});

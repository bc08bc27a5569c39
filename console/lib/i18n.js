// i18n.js - the console's words live in i18n/LANG.json, never in a component.
// t('key', {name: value}) fills {name} placeholders. The language is the one
// saved by the switch (localStorage), else the browser's, else English.
export const LANGS = ['en', 'zh-CN'];
const KEY = 'suanli.lang';
let dict = {};
let lang = 'en';

export function savedOrBrowserLang() {
	let saved = null;
	try { saved = localStorage.getItem(KEY); } catch (_) { /* no storage */ }
	if (LANGS.includes(saved)) return saved;
	for (const l of navigator.languages || [navigator.language || 'en']) {
		if (/^zh\b/i.test(l)) return 'zh-CN';
		if (/^en\b/i.test(l)) return 'en';
	}
	return 'en';
}

export async function loadLang(l) {
	const r = await fetch('/console/i18n/' + l + '.json', { cache: 'no-cache' });
	if (!r.ok) throw new Error('i18n/' + l + '.json: ' + r.status);
	dict = await r.json();
	lang = l;
	document.documentElement.lang = l;
}

export function saveLang(l) {
	try { localStorage.setItem(KEY, l); } catch (_) { /* no storage */ }
}

export function currentLang() { return lang; }

export function t(key, vars) {
	let s = dict[key];
	if (s === undefined) s = key;
	if (vars) s = s.replace(/\{(\w+)\}/g, (m, k) => (vars[k] === undefined ? m : String(vars[k])));
	return s;
}

// A word the API sends as data (a state, a plan, a role): its translation when
// the dictionary has one, else the word itself.
export function tw(kind, word) {
	const k = kind + '.' + word;
	return dict[k] === undefined ? String(word) : dict[k];
}

// i18n-check.mjs - the console's files without a browser (node only): every
// key a component asks for is in both dictionaries, both have the same keys,
// no component writes a word of its own where a key belongs (text between
// tags must come from t(), tw() or data), and index.html has no inline script
// or style (the CSP would refuse them) and loads nothing from another origin.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../console');
let pass = 0, fail = 0;
const ok = (n) => { pass++; console.log('ok   ' + n); };
const bad = (n, why) => { fail++; console.log('FAIL ' + n + '\n     ' + why); };
const dict = (l) => JSON.parse(readFileSync(path.join(root, 'i18n', l + '.json'), 'utf8'));
const en = dict('en'), zh = dict('zh-CN');

const files = [];
for (const d of ['.', 'lib', 'screens']) {
	for (const f of readdirSync(path.join(root, d))) if (f.endsWith('.js')) files.push(path.join(d, f));
}
// The literal parts of every html`...` template (nested ${...} skipped).
function templates(src) {
	const out = [];
	let at = 0;
	while ((at = src.indexOf('html`', at)) !== -1) {
		at += 5;
		let i = at;
		let text = '';
		let depth = 0;
		for (; i < src.length; i++) {
			const c = src[i];
			if (depth === 0 && c === '`') break;
			if (depth === 0 && c === '$' && src[i + 1] === '{') { depth = 1; i++; text += ' '; continue; }
			if (depth > 0) {
				if (c === '{') depth++;
				else if (c === '}') depth--;
				else if (c === '`') { // a nested template: its literal text is checked too
					const end = src.indexOf('`', i + 1);
					i = end === -1 ? src.length : end;
				}
				continue;
			}
			text += c;
		}
		out.push(text);
	}
	return out;
}
const used = new Map();
const literal = [];
for (const f of files) {
	const src = readFileSync(path.join(root, f), 'utf8');
	if (f !== path.join('lib', 'i18n.js')) for (const m of src.matchAll(/\bt\('([A-Za-z0-9_.-]+)'/g)) used.set(m[1], f);
	// t('prefix.' + x): every key with the prefix must exist in both (checked below)
	// Words between tags: >Some words< with a letter, outside ${...}.
	for (const m of templates(src)) {
		const stripped = m;
		for (const w of stripped.matchAll(/>([^<>]*[A-Za-z\u4e00-\u9fff][^<>]*)</g)) {
			const s = w[1].trim();
			// unit and hardware names are the same in every language
			if (/[A-Za-z\u4e00-\u9fff]/.test(s.replace(/\b(GPU|Xid|X|NUMA|GiB)\b/g, ''))) literal.push(`${f}: '${s}'`);
		}
	}
}
const missing = [...used.keys()].filter((k) => !k.endsWith('.') && !k.endsWith('_') && (!(k in en) || !(k in zh)));
if (missing.length === 0) ok(`every one of ${used.size} keys used is in en and zh-CN`);
else bad('keys missing from a dictionary', missing.map((k) => `${k} (${used.get(k)}): en ${k in en}, zh-CN ${k in zh}`).join('\n     '));
const onlyEn = Object.keys(en).filter((k) => !(k in zh));
const onlyZh = Object.keys(zh).filter((k) => !(k in en));
if (onlyEn.length + onlyZh.length === 0) ok(`en and zh-CN have the same ${Object.keys(en).length} keys`);
else bad('the dictionaries differ', `only en: ${onlyEn.join(', ')}; only zh-CN: ${onlyZh.join(', ')}`);
const same = Object.keys(en).filter((k) => /[a-z]{4,}/.test(en[k]) && en[k] === zh[k] && !/^(lang|state|role)\./.test(k));
if (same.length === 0) ok('every English sentence has a Chinese one');
else bad('untranslated in zh-CN', same.join(', '));
const ph = Object.keys(en).filter((k) => (en[k].match(/\{\w+\}/g) || []).sort().join() !== ((zh[k] || '').match(/\{\w+\}/g) || []).sort().join());
if (ph.length === 0) ok('placeholders match in both languages');
else bad('placeholders differ', ph.join(', '));
if (literal.length === 0) ok('no component writes words of its own');
else bad('words outside the dictionaries', literal.join('\n     '));
const index = readFileSync(path.join(root, 'index.html'), 'utf8');
const inline = /<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i.test(index);
if (!inline) ok('index.html has no inline script, style or handler'); else bad('index.html', 'inline script or style');
const ext = [...index.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]).filter((u) => !u.startsWith('/'));
if (ext.length === 0) ok('index.html loads only this origin\'s files'); else bad('index.html loads', ext.join(', '));
console.log(`${pass} passed, ${fail} failed`);
process.exit(fail ? 1 : 0);

// fmt.js - money, times and sizes for people, in the console's language.
// Amounts from the API are integers in fen; they are formatted from integers
// (never through a float), as CNY with the narrow symbol: ¥1,234.56.
import { currentLang } from './i18n.js';

const TZ_KEY = 'suanli.tz';
export const DEFAULT_TZ = 'Asia/Shanghai';

export function zone() {
	try { return localStorage.getItem(TZ_KEY) || DEFAULT_TZ; } catch (_) { return DEFAULT_TZ; }
}
export function setZone(z) {
	try { localStorage.setItem(TZ_KEY, z); } catch (_) { /* no storage */ }
}
export function zones() {
	const here = Intl.DateTimeFormat().resolvedOptions().timeZone;
	return [...new Set([DEFAULT_TZ, 'UTC', here].filter(Boolean))];
}

export function money(fen, currency = 'CNY') {
	if (fen === null || fen === undefined || fen === '') return '—';
	const n = BigInt(fen);
	const neg = n < 0n;
	const a = neg ? -n : n;
	const whole = a / 100n;
	const cents = String(a % 100n).padStart(2, '0');
	const nf = new Intl.NumberFormat(currentLang(), { style: 'currency', currency, currencyDisplay: 'narrowSymbol' });
	// Intl formats exact decimal strings; the sign goes where the language puts it.
	return nf.format((neg ? '-' : '') + whole.toString() + '.' + cents);
}

export function num(n, digits = 0) {
	if (n === null || n === undefined) return '—';
	return new Intl.NumberFormat(currentLang(), { maximumFractionDigits: digits }).format(n);
}

// An instant in the console's zone: 2026-12-02 07:53:25 in English (a date
// no one misreads), the language's own form otherwise (2026/12/02 07:53:25).
export function time(iso) {
	if (!iso) return '—';
	const d = new Date(iso);
	if (isNaN(d)) return String(iso);
	const opts = {
		timeZone: zone(), year: 'numeric', month: '2-digit', day: '2-digit',
		hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
	};
	if (currentLang() !== 'en') return new Intl.DateTimeFormat(currentLang(), opts).format(d);
	const p = Object.fromEntries(new Intl.DateTimeFormat('en-CA', opts).formatToParts(d).map((x) => [x.type, x.value]));
	return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
}

// The month (YYYY-MM) of an instant in the console's zone.
export function monthOf(d = new Date()) {
	const p = new Intl.DateTimeFormat('en-CA', { timeZone: zone(), year: 'numeric', month: '2-digit' }).formatToParts(d);
	return p.find((x) => x.type === 'year').value + '-' + p.find((x) => x.type === 'month').value;
}

export function monthName(ym) {
	const [y, m] = ym.split('-').map(Number);
	return new Intl.DateTimeFormat(currentLang(), { year: 'numeric', month: 'long', timeZone: 'UTC' })
		.format(new Date(Date.UTC(y, m - 1, 15)));
}

// The N months up to and including ym, newest first.
export function monthsBack(ym, n) {
	let [y, m] = ym.split('-').map(Number);
	const out = [];
	for (let i = 0; i < n; i++) {
		out.push(y + '-' + String(m).padStart(2, '0'));
		if (--m === 0) { m = 12; y--; }
	}
	return out;
}

export function duration(ms) {
	if (ms === null || ms === undefined) return '—';
	const s = Math.max(0, Math.floor(ms / 1000));
	const units = [['day', 86400], ['hour', 3600], ['minute', 60], ['second', 1]];
	const parts = [];
	let rest = s;
	for (const [u, k] of units) {
		const v = Math.floor(rest / k);
		rest -= v * k;
		if (v || (u === 'second' && parts.length === 0)) {
			parts.push(new Intl.NumberFormat(currentLang(), { style: 'unit', unit: u, unitDisplay: 'narrow' }).format(v));
		}
		if (parts.length === 2) break;
	}
	return parts.join(' ');
}

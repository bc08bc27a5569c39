// lib.mjs - what the browser tests share: Debian's chromium through
// playwright-core (never a downloaded browser), signing in, axe-core, checks
// that print one line each (as tests/e2e/lib.sh), and screenshots.
import { chromium } from 'playwright-core';
import { AxeBuilder } from '@axe-core/playwright';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';

export const ROOT = process.env.SL_ROOT || path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
export const URL_ = process.env.CONSOLE_URL;
export const SHOTS = process.env.SCREENSHOTS || '';
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

let pass = 0, fail = 0, skipped = 0;
export function ok(name) { pass++; console.log('ok   ' + name); }
export function bad(name, why) { fail++; console.log('FAIL ' + name + (why ? '\n     ' + String(why).split('\n').slice(0, 6).join('\n     ') : '')); }
export function skipPart(name) { skipped++; console.log('SKIP ' + name); }
export function expectEq(name, got, want) { if (got === want) ok(name); else bad(name, `got '${got}', want '${want}'`); }
export function expectTrue(name, cond, why) { if (cond) ok(name); else bad(name, why); }
// check(NAME, async fn): fn throws on failure (playwright's waits and expects).
export async function check(name, fn) {
	try { await fn(); ok(name); return true; } catch (e) { bad(name, e && e.message); return false; }
}
export function finish() {
	console.log(skipped ? `${pass} passed, ${fail} failed, ${skipped} skipped` : `${pass} passed, ${fail} failed`);
	return fail ? 1 : skipped ? 77 : 0;
}

export async function launch() {
	return chromium.launch({
		executablePath: CHROMIUM,
		args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--font-render-hinting=none'],
	});
}

// A browser context in LANG with clipboard permission; console errors and
// CSP violations are collected in ctx.problems.
export async function newContext(browser, lang) {
	const context = await browser.newContext({
		locale: lang, timezoneId: 'Asia/Shanghai', viewport: { width: 1360, height: 900 },
		permissions: ['clipboard-read', 'clipboard-write'],
	});
	await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: URL_ });
	context.problems = [];
	return context;
}

export function watch(page) {
	page.on('console', (m) => { if (m.type() === 'error') page.context().problems.push(m.text()); });
	page.on('pageerror', (e) => page.context().problems.push(String(e)));
}

// Signs in through the form (POST /v1/sessions).
export async function signIn(page, who) {
	watch(page);
	await page.goto(URL_ + '/');
	await page.fill('#signin-user', who.user);
	await page.fill('#signin-password', who.password);
	await page.click('[data-testid=signin-submit]');
	await page.locator('[data-testid=whoami]').waitFor();
}

// Runs axe-core on the page; serious or critical violations fail.
export async function axe(page, name) {
	const r = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
	const worst = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
	if (worst.length === 0) ok('axe: ' + name);
	else bad('axe: ' + name, worst.map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')})`).join('\n'));
}

export async function shot(page, lang, name) {
	if (!SHOTS) return;
	await mkdir(SHOTS, { recursive: true });
	await page.screenshot({ path: path.join(SHOTS, `${name}.${lang}.png`), fullPage: true });
}

// Goes to a screen (by its hash, as a link does: no reload when the console
// is open already) and waits for its title and for loading to end.
export async function open(page, hash) {
	if (page.url().startsWith(URL_ + '/')) await page.evaluate((h) => { location.hash = '#/' + h; }, hash);
	else await page.goto(URL_ + '/#/' + hash);
	await page.locator(`main[data-route="${hash}"] #page-title`).waitFor();
	await page.waitForFunction(() => !document.querySelector('main .loading'), null, { timeout: 15000 });
}

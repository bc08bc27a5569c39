// console.test.mjs - the console in real Chromium against the controller and
// agents run.sh started, in English and in Chinese: sign in, launch an
// instance, see it run, copy its SSH command, stop and start it; an operator
// drains a node on the fleet map while the renter's launch screen shows the
// free GPUs drop, live; one tenant cannot reach another's things through
// crafted URLs; a state change without the CSRF token is refused; axe-core on
// every screen; no CSP violation or script error. SCREENSHOTS=DIR: a PNG of
// every screen in both languages.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as L from './lib.mjs';

const URL = L.URL_;
const people = JSON.parse(readFileSync(process.env.PEOPLE, 'utf8'));
const ADMIN = process.env.ADMIN_TOKEN;
const dicts = Object.fromEntries(['en', 'zh-CN'].map((l) => [l, JSON.parse(readFileSync(path.join(L.ROOT, 'console/i18n', l + '.json'), 'utf8'))]));
const adminGet = async (p) => { const r = await fetch(URL + p, { headers: { Authorization: 'Bearer ' + ADMIN } }); return { status: r.status, body: r.ok ? await r.json() : null }; };
const hasInstances = (await adminGet('/v1/instances')).status !== 404;
const timings = {};
const timed = async (name, fn) => { const t = Date.now(); try { return await fn(); } finally { timings[name] = (timings[name] || 0) + Date.now() - t; } };
const text = async (page, sel) => (await page.locator(sel).first().innerText()).trim();
const browser = await L.launch();
const created = {};

async function screen(page, lang, hash, name) {
	await timed('screen ' + name, async () => {
		await L.open(page, hash);
		await L.axe(page, `${name} (${lang})`);
		await L.shot(page, lang, name);
	});
}

const agentInstances = process.env.AGENT_INSTANCES === '1';
const pubkey = process.env.SSH_PUBKEY || '';

// Launch from the form (with a key added there), then, where the agents run
// instances: running, the SSH command copied, reload, stop, start.
async function instance(page, lang) {
	const T = dicts[lang];
	await page.selectOption('#launch-model', 'h100-sxm');
	await page.fill('#launch-count', '1');
	if (pubkey) {
		const name = 'laptop-' + lang;
		await page.click('[data-testid=add-key] summary');
		await page.fill('#key-name', name);
		await page.fill('#key-text', pubkey);
		await page.click('[data-testid=add-key-submit]');
		await L.check(`${lang}: an SSH key added on the launch screen is chosen`, () =>
			page.waitForFunction((n) => document.querySelector('#launch-key').value === n, name, { timeout: 5000 }));
	}
	await page.fill('#launch-ports', '8888');
	await page.click('[data-testid=launch-submit]');
	if (!(await L.check(`${lang}: create goes to the new instance`, () => page.waitForURL(/#\/instance\/in-/, { timeout: 10000 })))) return;
	const id = decodeURIComponent(page.url().split('/').pop());
	created[lang] = id;
	const state = page.locator('[data-testid=instance-state]');
	await L.check(`${lang}: ${id} shows its state`, () => state.locator('.badge').waitFor({ timeout: 10000 }));
	if (!agentInstances) {
		L.skipPart(`${lang}: ${id} running, SSH, stop and start (these agents run no instances${process.env.IMAGE_WHY ? ': ' + process.env.IMAGE_WHY : ''})`);
		return;
	}
	const running = () => state.getByText(T['state.running'], { exact: true }).waitFor({ timeout: 60000 });
	if (!(await L.check(`${lang}: ${id} runs`, running))) return;
	await L.check(`${lang}: the SSH command is shown and copied`, async () => {
		const cmd = await text(page, '[data-testid=ssh-command]');
		if (!/^ssh -p \d+ root@\S+$/.test(cmd)) throw new Error('command: ' + cmd);
		await page.click('[data-testid=copy-ssh]');
		await page.locator('[data-testid=copy-ssh]', { hasText: T['common.copied'] }).waitFor();
		const clip = await page.evaluate(() => navigator.clipboard.readText());
		if (clip !== cmd) throw new Error(`clipboard '${clip}', command '${cmd}'`);
	});
	await L.check(`${lang}: the port 8888 is published`, () => page.locator('[data-testid=ports] td', { hasText: '8888' }).first().waitFor({ timeout: 5000 }));
	await L.axe(page, `instance (${lang})`);
	await L.shot(page, lang, 'instance');
	await page.reload(); // the CSRF token comes again from GET /v1/session
	if (!(await L.check(`${lang}: still running after a reload`, running))) return;
	await page.click('[data-testid=stop]');
	if (!(await L.check(`${lang}: ${id} stops`, () => state.getByText(T['state.stopped'], { exact: true }).waitFor({ timeout: 60000 })))) return;
	if (lang === 'en') return takenChoices(page, lang, id, running);
	await page.click('[data-testid=start]');
	await L.check(`${lang}: ${id} starts again`, running);
}

// While the instance is stopped its home node is drained: start offers the
// CLI's choices (wait, no GPU, migrate); "wait" queues it, and resuming the
// node starts it there again, live.
async function takenChoices(page, lang, id, running) {
	const T = dicts[lang];
	const home = (await adminGet('/v1/instances/' + id)).body.nodes[0];
	const admin = (path, body) => fetch(URL + path, { method: 'POST', headers: { Authorization: 'Bearer ' + ADMIN, 'Content-Type': 'application/json' }, body: body || '{}' });
	L.expectEq(`${lang}: the home node ${home} drained`, (await admin('/v1/nodes/' + home + '/drain', '{"reason":"browser test: GPUs taken"}')).status, 200);
	const state = page.locator('[data-testid=instance-state]');
	await page.click('[data-testid=start]');
	const offered = await L.check(`${lang}: start offers wait, no GPU and migrate`, () => page.locator('[data-testid=start-choices] input[type=radio]').nth(2).waitFor({ timeout: 10000 }));
	if (offered) {
		await page.check('[data-testid=start-choices] input[value=wait]');
		await page.click('[data-testid=start-with-choice]');
		await L.check(`${lang}: "wait" queues it`, () => state.getByText(T['state.waiting'], { exact: true }).waitFor({ timeout: 10000 }));
	}
	await admin('/v1/nodes/' + home + '/resume');
	if (offered) await L.check(`${lang}: resuming ${home} starts ${id} again`, running);
}

async function renter(lang) {
	const T = dicts[lang];
	const ctx = await L.newContext(browser, lang);
	const page = await ctx.newPage();
	if (L.SHOTS) {
		await page.goto(URL + '/');
		await page.locator('#signin-user').waitFor();
		await L.axe(page, `sign-in (${lang})`);
		await L.shot(page, lang, 'signin');
	}
	await page.goto(URL + '/');
	await page.fill('#signin-user', 'alice');
	await page.fill('#signin-password', 'not her password');
	await page.click('[data-testid=signin-submit]');
	await L.check(`${lang}: a wrong password is refused with a message`, () => page.locator('.signin [role=alert]', { hasText: T['signin.wrong'] }).waitFor({ timeout: 5000 }));
	await L.signIn(page, people.alice);
	await L.check(`${lang}: signed in as alice`, async () => {
		const who = await text(page, '[data-testid=whoami]');
		if (!who.includes('alice') || !who.includes('acme')) throw new Error('whoami: ' + who);
	});
	L.expectEq(`${lang}: the browser's language is the console's`, await page.evaluate(() => document.documentElement.lang), lang);
	await screen(page, lang, 'overview', 'overview');
	await L.check(`${lang}: overview shows the credit line as CNY with fen`, async () => {
		await page.getByText('¥1,000.00').first().waitFor({ timeout: 5000 });
	});
	await L.check(`${lang}: overview shows the balance`, async () => {
		const b = await text(page, '[data-testid=balance] .stat-value');
		if (!/^¥(50,000\.00|4\d,\d{3}\.\d\d)$/.test(b)) throw new Error('balance: ' + b);
	});

	await screen(page, lang, 'launch', 'launch');
	await page.selectOption('#launch-model', 'h100-sxm');
	await page.fill('#launch-count', '1');
	await L.check(`${lang}: launch shows the hourly price of one GPU`, () => page.locator('[data-testid=price]', { hasText: '¥25.00' }).waitFor({ timeout: 5000 }));
	await page.fill('#launch-count', '2');
	await L.check(`${lang}: the price follows the count`, () => page.locator('[data-testid=price]', { hasText: '¥50.00' }).waitFor({ timeout: 5000 }));
	await page.selectOption('#launch-plan', 'spot');
	await L.check(`${lang}: the price follows the plan`, () => page.locator('[data-testid=price]', { hasText: '¥24.00' }).waitFor({ timeout: 5000 }));
	await page.selectOption('#launch-plan', 'hourly');
	await page.fill('#launch-count', '4');
	await L.check(`${lang}: the preview shows where 4 GPUs would go and their NVLink bottleneck`, () => page.locator('[data-testid=bottleneck]', { hasText: '900' }).waitFor({ timeout: 5000 }));
	await page.fill('#launch-count', '1');
	await L.check(`${lang}: availability counts free h100-sxm GPUs`, async () => {
		const a = await text(page, '[data-testid=availability]');
		if (!/\b1[0-9]\b/.test(a)) throw new Error(a);
	});

	if (!hasInstances) {
		L.skipPart(`${lang}: launch, SSH, stop and start (this controller has no /v1/instances)`);
	} else {
		await timed('instance lifecycle', () => instance(page, lang));
		await screen(page, lang, 'overview', 'overview'); // now with its instance
		if (created[lang]) await L.check(`${lang}: the overview lists ${created[lang]}`, () => page.locator(`[data-testid="instance-link-${created[lang]}"]`).waitFor({ timeout: 5000 }));
	}
	await screen(page, lang, 'billing', 'billing');
	await L.check(`${lang}: the invoice's CSV downloads`, async () => {
		const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=invoice-csv]')]);
		const body = readFileSync(await dl.path(), 'utf8');
		if (!body.startsWith('kind,lease,')) throw new Error('csv: ' + body.slice(0, 80));
	});
	await L.check(`${lang}: the ledger lists the top-up`, () => page.locator('[data-testid=ledger]', { hasText: '¥50,000.00' }).waitFor({ timeout: 5000 }));
	await screen(page, lang, 'myaudit', 'myaudit');
	await L.check(`${lang}: an audit entry's inclusion proof downloads`, async () => {
		const btn = page.locator('[data-testid^=proof-]').first();
		const [dl] = await Promise.all([page.waitForEvent('download'), btn.click()]);
		const p = JSON.parse(readFileSync(await dl.path(), 'utf8'));
		if (!p.entry || p.entry.tenant !== 'acme' || !Array.isArray(p.proof)) throw new Error(JSON.stringify(p).slice(0, 200));
	});
	return { ctx, page };
}

// The operator drains a node on the fleet map; alice's launch screen (open
// in her own browser) shows fewer free GPUs without a reload; then resumes.
async function drainLive(lang, alice) {
	const T = dicts[lang];
	const ctx = await L.newContext(browser, lang);
	const op = await ctx.newPage();
	await L.signIn(op, people.oscar);
	await screen(op, lang, 'fleet', 'fleet');
	const nodes = (await adminGet('/v1/nodes')).body.filter((n) => n.model === 'h100-sxm' && n.state === 'ready');
	const victim = nodes.sort((a, b) => b.free_gpus - a.free_gpus)[0];
	const total = () => nodes.reduce((s, n) => s + n.free_gpus, 0);
	await L.open(alice, 'launch');
	await alice.selectOption('#launch-model', 'h100-sxm');
	const freeNow = async () => Number(((await text(alice, '[data-testid=availability]')).match(/\d+/) || [NaN])[0]);
	const before = await freeNow();
	L.expectEq(`${lang}: alice sees ${total()} free h100-sxm GPUs`, before, total());
	await op.click(`[data-testid="node-${victim.name}"]`);
	await op.fill('[data-testid=drain-reason]', 'browser test: fan swap ' + lang);
	await op.click('[data-testid=drain]');
	await L.check(`${lang}: the map shows ${victim.name} draining`, () => op.locator(`[data-testid="node-${victim.name}"][data-state=draining], [data-testid="node-${victim.name}"][data-state=drained]`).waitFor({ timeout: 10000 }));
	await timed('live update', () => L.check(`${lang}: alice's free count drops by ${victim.free_gpus} without a reload`, () =>
		alice.waitForFunction((want) => {
			const m = (document.querySelector('[data-testid=availability]') || {}).textContent || '';
			return Number((m.match(/\d+/) || [])[0]) === want;
		}, before - victim.free_gpus, { timeout: 15000 })));
	await L.shot(op, lang, 'fleet-draining');
	await op.click('[data-testid=resume]');
	await L.check(`${lang}: resumed from the map`, () => op.locator(`[data-testid="node-${victim.name}"][data-state=ready]`).waitFor({ timeout: 10000 }));
	await screen(op, lang, 'node/' + victim.name, 'node');
	await L.check(`${lang}: node shows its GPU matrix`, () => op.locator('[data-testid=matrix]').waitFor());
	for (const s of ['queue', 'tenants', 'prices', 'revenue', 'audit']) await screen(op, lang, s, s);
	await L.check(`${lang}: the price book shows the scheduled change`, async () => {
		await L.open(op, 'prices');
		await op.locator('[data-testid=prices-scheduled]', { hasText: '¥23.00' }).waitFor({ timeout: 5000 });
	});
	void T;
	await ctx.close();
}

// bob (tenant globex) tries alice's things by URL and by API.
async function isolation(lang) {
	const T = dicts[lang];
	const ctx = await L.newContext(browser, lang);
	const page = await ctx.newPage();
	await L.signIn(page, people.bob);
	const acmeLease = ((await adminGet('/v1/leases?tenant=acme')).body || [])[0];
	const target = created[lang] || created.en;
	if (target) {
		await page.goto(URL + '/#/instance/' + target);
		await L.check(`${lang}: bob's crafted URL to ${target} shows not found`, () => page.locator('.error[data-code=not_found]').waitFor({ timeout: 5000 }));
		L.expectTrue(`${lang}: and nothing of acme's`, !(await page.content()).includes('acme'));
	}
	const probe = await page.evaluate(async ([inst, lease]) => {
		const st = async (p) => (await fetch(p, { credentials: 'same-origin' })).status;
		return {
			inst: inst ? await st('/v1/instances/' + inst) : 404,
			lease: lease ? await st('/v1/leases/' + lease) : 404,
			balance: await st('/v1/tenants/acme/balance'),
			invoice: await st('/v1/tenants/acme/invoices/2026-12'),
			audit: await st('/v1/audit/log?tenant=acme'),
		};
	}, [target || '', acmeLease ? acmeLease.id : '']);
	L.expectEq(`${lang}: bob GET acme's instance`, probe.inst, 404);
	L.expectEq(`${lang}: bob GET acme's lease`, probe.lease, 404);
	L.expectTrue(`${lang}: bob GET acme's balance refused (${probe.balance})`, probe.balance === 404 || probe.balance === 403);
	L.expectTrue(`${lang}: bob GET acme's invoice refused (${probe.invoice})`, probe.invoice === 404 || probe.invoice === 403);
	L.expectEq(`${lang}: bob GET acme's audit entries`, probe.audit, 403);
	await page.goto(URL + '/#/fleet');
	await L.check(`${lang}: bob's crafted URL to the fleet map is not for his role`, () => page.locator('[data-testid=not-for-role]').waitFor({ timeout: 5000 }));
	await page.goto(URL + '/#/overview');
	await L.check(`${lang}: bob's overview lists none of acme's leases`, async () => {
		await page.locator('#page-title').waitFor();
		await page.waitForFunction(() => !document.querySelector('main .loading'));
		const html = await page.content();
		if (acmeLease && html.includes(acmeLease.id)) throw new Error('shows ' + acmeLease.id);
	});
	void T;
	await ctx.close();
}

// With the session cookie, a state change without X-CSRF-Token is refused.
async function csrf(lang, alice) {
	const r = await alice.evaluate(async () => {
		const json = { 'Content-Type': 'application/json' };
		const body = JSON.stringify({ gpus: 1, models: ['h100-sxm'], region: 'cn-east' });
		const count = async () => (await (await fetch('/v1/leases', { credentials: 'same-origin' })).json()).length;
		const before = await count();
		const bare = await fetch('/v1/leases', { method: 'POST', credentials: 'same-origin', headers: json, body });
		const code = ((await bare.json()).error || {}).code;
		const wrong = await fetch('/v1/leases', { method: 'POST', credentials: 'same-origin', headers: { ...json, 'X-CSRF-Token': 'not-the-token' }, body });
		const after = await count();
		// the same request with the session's token goes through (then is undone)
		const csrf = (await (await fetch('/v1/session', { credentials: 'same-origin' })).json()).csrf;
		const right = await fetch('/v1/leases', { method: 'POST', credentials: 'same-origin', headers: { ...json, 'X-CSRF-Token': csrf }, body });
		const id = (await right.json()).id;
		const undo = await fetch('/v1/leases/' + id + '/release', { method: 'POST', credentials: 'same-origin', headers: { ...json, 'X-CSRF-Token': csrf }, body: '{}' });
		return { bare: bare.status, code, wrong: wrong.status, before, after, right: right.status, undo: undo.status };
	});
	L.expectEq(`${lang}: POST without the CSRF token`, r.bare, 403);
	L.expectEq(`${lang}: refused as csrf`, r.code, 'csrf');
	L.expectEq(`${lang}: POST with a wrong CSRF token`, r.wrong, 403);
	L.expectEq(`${lang}: the same POST with the session's token`, r.right, 201);
	L.expectEq(`${lang}: and its release`, r.undo, 200);
	L.expectEq(`${lang}: and no lease was made`, r.after, r.before);
}

async function auditor(lang) {
	const T = dicts[lang];
	const ctx = await L.newContext(browser, lang);
	const page = await ctx.newPage();
	await L.signIn(page, people.audrey);
	await L.open(page, 'audit');
	await page.click('[data-testid=audit-verify]');
	await L.check(`${lang}: the auditor's verification says intact`, () => page.locator('[data-testid=verify-result].ok-text').waitFor({ timeout: 10000 }));
	const first = page.locator('[data-testid^=check-]').first();
	const seq = (await first.getAttribute('data-testid')).slice(6);
	await first.click();
	await L.check(`${lang}: entry ${seq}'s inclusion proof checks in the browser`, () => page.locator(`[data-testid=checked-${seq}]`, { hasText: T['audit.proof_ok'] }).waitFor({ timeout: 5000 }));
	await page.fill('#af-action', 'topup');
	await page.click('[data-testid=audit-filter] button[type=submit]');
	await L.check(`${lang}: the filter keeps only top-ups`, async () => {
		await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=audit-entries] tbody tr')].length > 0);
		const n = await page.locator('[data-testid=audit-entries] tbody tr').count();
		const want = (await adminGet('/v1/audit/log?action=topup')).body.length;
		if (n !== want) throw new Error(`${n} rows, ${want} top-ups`);
	});
	await L.axe(page, `audit (auditor, ${lang})`);
	await L.shot(page, lang, 'audit-auditor');
	await ctx.close();
}

async function langSwitch() {
	const ctx = await L.newContext(browser, 'en');
	const page = await ctx.newPage();
	await L.signIn(page, people.alice);
	await page.selectOption('[data-testid=lang-switch]', 'zh-CN');
	await L.check('the switch turns the console Chinese', () => page.getByRole('link', { name: dicts['zh-CN']['nav.billing'] }).waitFor({ timeout: 5000 }));
	await page.reload();
	await L.check('and the choice is kept (localStorage)', () => page.getByRole('link', { name: dicts['zh-CN']['nav.billing'] }).waitFor({ timeout: 5000 }));
	await page.click('[data-testid=sign-out]');
	await L.check('signing out shows the sign-in form', () => page.locator('#signin-user').waitFor({ timeout: 5000 }));
	await L.check('and the session has ended', async () => {
		const s = await page.evaluate(async () => (await fetch('/v1/session', { credentials: 'same-origin' })).status);
		if (s !== 401) throw new Error('GET /v1/session: ' + s);
	});
	await ctx.close();
}

const t0 = Date.now();
try {
	for (const lang of ['en', 'zh-CN']) {
		const t = Date.now();
		const { ctx, page } = await renter(lang);
		await csrf(lang, page);
		await drainLive(lang, page);
		await isolation(lang);
		await auditor(lang);
		const problems = ctx.problems.filter((p) => !/status of 40[1349]/.test(p));
		L.expectTrue(`${lang}: no script error or CSP violation`, problems.length === 0, problems.slice(0, 5).join('\n'));
		await ctx.close();
		timings['language ' + lang] = Date.now() - t;
	}
	await langSwitch();
} catch (e) {
	L.bad('the browser tests stopped', e && e.stack);
} finally {
	await browser.close();
}
console.log('timings (ms): ' + Object.entries(timings).map(([k, v]) => `${k} ${v}`).join(', ') + `; total ${Date.now() - t0}`);
process.exit(L.finish());

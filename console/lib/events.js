// events.js - live updates. Screens subscribe with onLive(fn) and reload what
// they show when fn is called: at once on each state change the controller
// reports on its long poll (GET /v1/events?since=SEQ&wait=S: leases, nodes,
// jobs), and every SLOW_MS besides, for what it does not report (usage
// growing, an agent's progress). A controller without /v1/events is polled
// every POLL_MS.
const POLL_MS = 2000;
const SLOW_MS = 5000;
const WAIT_S = 25;
const subs = new Set();
let running = false;
let timer = null;
let abort = null;

function emit(ev) { for (const fn of subs) { try { fn(ev); } catch (e) { console.error(e); } } }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function longPoll() {
	let since = 0;
	let fails = 0;
	while (running) {
		abort = new AbortController();
		try {
			const r = await fetch('/v1/events?since=' + since + '&wait=' + (since ? WAIT_S : 0), {
				credentials: 'same-origin', cache: 'no-store', signal: abort.signal,
				headers: { Accept: 'application/json', 'X-Suanli-Background': '1' },
			});
			if (r.status === 404 || r.status === 405) return ticks(POLL_MS);
			if (!r.ok) throw new Error('events: ' + r.status);
			const a = await r.json();
			const first = since === 0;
			since = a.seq;
			fails = 0;
			if (!first && (a.reset || (a.events && a.events.length))) emit({ type: 'events', events: a.events || [], reset: !!a.reset });
		} catch (e) {
			if (!running) return;
			fails++;
			await sleep(Math.min(10000, 1000 * fails));
		}
	}
}

function ticks(ms) {
	if (timer) clearInterval(timer);
	timer = setInterval(() => emit({ type: 'tick' }), ms);
}

function start() {
	if (running) return;
	running = true;
	ticks(SLOW_MS);
	longPoll();
}

export function stopLive() {
	running = false;
	if (abort) abort.abort();
	if (timer) clearInterval(timer);
	timer = null;
}

export function onLive(fn) {
	subs.add(fn);
	start();
	return () => subs.delete(fn);
}

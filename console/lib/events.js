// events.js - live updates. Screens subscribe with onLive(fn) and reload what
// they show when fn is called. The controller's GET /v1/events is used as
// server-sent events when it answers text/event-stream; otherwise (or when it
// fails) the console polls: fn is called every POLL_MS.
const POLL_MS = 2000;
const subs = new Set();
let source = null;
let timer = null;

function emit(ev) { for (const fn of subs) { try { fn(ev); } catch (e) { console.error(e); } } }

function poll() {
	if (timer) return;
	timer = setInterval(() => emit({ type: 'tick' }), POLL_MS);
}

function start() {
	if (source || timer) return;
	if (typeof EventSource !== 'function') return poll();
	source = new EventSource('/v1/events', { withCredentials: true });
	source.onmessage = (m) => {
		let data = null;
		try { data = JSON.parse(m.data); } catch (_) { data = m.data; }
		emit({ type: 'event', data });
	};
	source.onerror = () => {
		// closed for good (404, not an event stream): poll instead
		if (source && source.readyState === EventSource.CLOSED) {
			source = null;
			poll();
		}
	};
}

export function stopLive() {
	if (source) source.close();
	if (timer) clearInterval(timer);
	source = null;
	timer = null;
}

export function onLive(fn) {
	subs.add(fn);
	start();
	return () => subs.delete(fn);
}

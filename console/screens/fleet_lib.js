// fleet_lib.js - what the fleet map draws: each node's GPUs as free, leased,
// draining or unhealthy, from GET /v1/nodes and each node's detail (fetched
// again only when the node's list entry changed, or after DETAIL_MAX_MS).
import { get, enc } from '../lib/api.js';

const DETAIL_MAX_MS = 30000;
const cache = new Map();

const sig = (n) => [n.state, n.free_gpus, n.reason].join('|');

async function detail(n, now, o) {
	const c = cache.get(n.name);
	if (c && c.sig === sig(n) && now - c.at < DETAIL_MAX_MS) return c.detail;
	const d = await get('/v1/nodes/' + enc(n.name), o).catch(() => null);
	cache.set(n.name, { sig: sig(n), at: now, detail: d });
	return d;
}

// A few at a time: a big fleet's first drawing does not flood the controller.
async function each(items, k, fn) {
	const out = new Array(items.length);
	let next = 0;
	const worker = async () => { while (next < items.length) { const i = next++; out[i] = await fn(items[i]); } };
	await Promise.all(Array.from({ length: Math.min(k, items.length) }, worker));
	return out;
}

export function gpuStates(n, d) {
	const out = [];
	for (let i = 0; i < n.gpus; i++) {
		const use = d && d.gpu_state ? (d.gpu_state[i] || {}).state : null;
		const health = d && d.gpu_health ? (d.gpu_health.find((g) => g.index === i) || {}).state : null;
		let s;
		if (health === 'failed' || n.state === 'down' || n.state === 'unreachable') s = 'unhealthy';
		else if (use === 'leased' || use === 'shared') s = 'leased';
		else if (health === 'draining' || n.state === 'draining' || n.state === 'drained') s = 'draining';
		else if (use === null && i >= n.free_gpus) s = 'leased';
		else s = 'free';
		out.push(s);
	}
	return out;
}

export async function loadFleet(o) {
	const nodes = await get('/v1/nodes', o);
	const now = Date.now();
	const details = await each(nodes, 8, (n) => detail(n, now, o));
	const sites = new Map();
	const models = new Map();
	nodes.forEach((n, i) => {
		const g = gpuStates(n, details[i]);
		const counts = { total: g.length, leased: 0, healthy: 0, free: 0, draining: 0, unhealthy: 0 };
		for (const s of g) {
			counts[s]++;
			if (s !== 'unhealthy') counts.healthy++;
		}
		const node = { ...n, g, counts, detail: details[i] };
		if (!sites.has(n.site)) sites.set(n.site, { name: n.site, region: n.region, leaves: new Map() });
		const site = sites.get(n.site);
		const leaf = n.leaf || '—';
		if (!site.leaves.has(leaf)) site.leaves.set(leaf, []);
		site.leaves.get(leaf).push(node);
		const m = models.get(n.model) || { model: n.model, total: 0, leased: 0, healthy: 0, free: 0, draining: 0, unhealthy: 0 };
		for (const k of ['total', 'leased', 'healthy', 'free', 'draining', 'unhealthy']) m[k] += counts[k];
		models.set(n.model, m);
	});
	return { nodes, sites: [...sites.values()], models: [...models.values()] };
}

// prices_lib.js - which price applies: the most specific entry in force for
// the model and plan (site, then region, then global). Fen per GPU-hour
// (hourly, spot) or per GPU-month (monthly); null when none is set.
export function priceFor(prices, model, plan, region) {
	const rank = (p) => (p.scope === 'region' && p.scope_name === region ? 2 : p.scope === 'global' ? 1 : 0);
	let best = null;
	for (const p of prices) {
		if (!p.in_force || p.model !== model || p.plan !== plan) continue;
		const r = rank(p);
		if (r === 0) continue;
		if (!best || r > best.r) best = { r, price: p.price };
	}
	return best ? best.price : null;
}

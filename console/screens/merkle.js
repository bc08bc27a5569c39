// merkle.js - checks an inclusion proof in the browser (RFC 9162 2.1.3.2,
// SHA-256 by WebCrypto): the entry's leaf hash, its index and the audit path
// give the tree's root, which must be the root the controller signed.
const hex = (b) => [...new Uint8Array(b)].map((x) => x.toString(16).padStart(2, '0')).join('');
const unhex = (s) => new Uint8Array(s.match(/../g).map((x) => parseInt(x, 16)));

async function node(a, b) {
	const buf = new Uint8Array(1 + a.length + b.length);
	buf[0] = 1;
	buf.set(a, 1);
	buf.set(b, 1 + a.length);
	return new Uint8Array(await crypto.subtle.digest('SHA-256', buf));
}

// The root the path leads to, as hex; null when the path does not fit the size.
export async function rootFromProof(leafHex, index, size, path) {
	if (index >= size) return null;
	let fn = index;
	let sn = size - 1;
	let r = unhex(leafHex);
	for (const p of path) {
		if (sn === 0) return null;
		const ph = unhex(p);
		if (fn % 2 === 1 || fn === sn) {
			r = await node(ph, r);
			while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
		} else {
			r = await node(r, ph);
		}
		fn = Math.floor(fn / 2);
		sn = Math.floor(sn / 2);
	}
	return sn === 0 ? hex(r) : null;
}

// The root hash a signed checkpoint note states (third line, base64), as hex.
export function noteRoot(note) {
	const lines = String(note || '').split('\n');
	if (lines.length < 3) return null;
	try { return hex(Uint8Array.from(atob(lines[2]), (c) => c.charCodeAt(0))); } catch (_) { return null; }
}

// {ok, root, signed}: the proof of GET /v1/audit/proof recomputed here.
export async function checkProof(p) {
	const root = await rootFromProof(p.entry.leaf_hash, p.index, p.size, p.proof || []);
	const signed = p.checkpoint ? noteRoot(p.checkpoint.note || p.checkpoint) : null;
	const ok = root !== null && root === p.root && (signed === null || signed === root);
	return { ok, root, signed };
}

// proof_lib.js - audit inclusion proofs: fetch one (GET /v1/audit/proof) and
// save it as JSON, for `suanli audit verify` or any RFC 6962 checker.
import { get, enc } from '../lib/api.js';

export async function saveProof(seq) {
	const p = await get('/v1/audit/proof?seq=' + enc(seq));
	const blob = new Blob([JSON.stringify(p, null, 2) + '\n'], { type: 'application/json' });
	const url = URL.createObjectURL(blob);
	const a = document.createElement('a');
	a.href = url;
	a.download = 'audit-proof-' + seq + '.json';
	document.body.appendChild(a);
	a.click();
	a.remove();
	setTimeout(() => URL.revokeObjectURL(url), 1000);
	return p;
}

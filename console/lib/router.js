// router.js - hash routes: #/name/param. One screen module per name.
export function parse(hash = location.hash) {
	const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
	return { name: parts[0] || '', params: parts.slice(1) };
}

export function href(name, ...params) {
	return '#/' + [name, ...params].map(encodeURIComponent).join('/');
}

export function go(name, ...params) {
	location.hash = href(name, ...params);
}

// hooks.js - loading data for a screen: useLoad(fn, deps) runs fn(opts) now,
// again when deps change and on every live event (events.js), keeping the
// last good answer on screen while a reload runs. opts is {} for the first
// load and {background: true} for the live ones: fn passes it to its
// requests (api.js), so that refreshes do not keep a session alive.
import { useState, useEffect, useRef } from './html.js';
import { onLive } from './events.js';

export function useLoad(fn, deps = [], live = true) {
	const [st, setSt] = useState({ data: null, error: null, loading: true });
	const gen = useRef(0);
	const fnRef = useRef(fn);
	fnRef.current = fn;
	const run = async (opts = {}) => {
		const my = ++gen.current;
		try {
			const data = await fnRef.current(opts);
			if (my === gen.current) setSt({ data, error: null, loading: false });
		} catch (error) {
			if (my === gen.current) setSt((s) => ({ data: s.data, error, loading: false }));
		}
	};
	useEffect(() => {
		setSt({ data: null, error: null, loading: true });
		run();
		if (!live) return undefined;
		return onLive(() => run({ background: true }));
	}, deps);
	return { ...st, reload: () => run() };
}

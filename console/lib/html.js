// html.js - the one place that names the vendored library (vendor/, docs/console.md):
// Preact's render and hooks, and htm's tagged template bound to Preact's h.
export {
	html, render, h, useState, useEffect, useRef, useMemo, useCallback,
} from '../vendor/htm-preact-standalone.module.js';

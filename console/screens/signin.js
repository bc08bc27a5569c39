// signin.js - user name and password to POST /v1/sessions.
import { html, useState } from '../lib/html.js';
import { t } from '../lib/i18n.js';
import { signIn } from '../lib/api.js';
import { ErrorBox } from '../lib/ui.js';

export default function SignIn({ onSignedIn }) {
	const [user, setUser] = useState('');
	const [password, setPassword] = useState('');
	const [error, setError] = useState(null);
	const [busy, setBusy] = useState(false);
	const submit = async (e) => {
		e.preventDefault();
		setBusy(true);
		setError(null);
		try {
			onSignedIn(await signIn(user, password));
		} catch (err) {
			setError(err);
		} finally {
			setBusy(false);
		}
	};
	return html`<form class="signin" onSubmit=${submit} aria-labelledby="signin-title">
		<p class="brand-big">${t('app.brand')}</p>
		<h1 id="signin-title">${t('signin.title')}</h1>
		<p class="muted">${t('signin.lead')}</p>
		<div class="field"><label for="signin-user">${t('signin.user')}</label>
			<input id="signin-user" name="user" autocomplete="username" required value=${user} onInput=${(e) => setUser(e.target.value)} /></div>
		<div class="field"><label for="signin-password">${t('signin.password')}</label>
			<input id="signin-password" name="password" type="password" autocomplete="current-password" required value=${password} onInput=${(e) => setPassword(e.target.value)} /></div>
		${error ? html`<${ErrorBox} error=${error.status === 401 ? { ...error, code: 'signin', message: t('signin.wrong') } : error} />` : null}
		<button type="submit" data-testid="signin-submit" disabled=${busy}>${t('signin.submit')}</button>
	</form>`;
}

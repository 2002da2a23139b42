/**
 * Login page: posts the form as JSON to POST /login (contracts authRoutes.login) and goes to the
 * app; shows the API's error message otherwise. No inline script: the CSP allows none.
 */
import { authRoutes } from '@polyphony/contracts';
import { call } from './api';
import { errText } from './dom';

const form = document.getElementById('login') as HTMLFormElement;
const out = document.getElementById('error') as HTMLElement;
form.addEventListener('submit', (e) => {
  e.preventDefault();
  const f = new FormData(form);
  const button = form.querySelector('button')!;
  button.disabled = true;
  out.textContent = '';
  call(authRoutes.login, { body: { username: String(f.get('username') ?? ''), password: String(f.get('password') ?? '') } }, { allow401: true })
    .then(() => location.replace('/'))
    .catch((err: unknown) => {
      out.textContent = errText(err);
      button.disabled = false;
    });
});

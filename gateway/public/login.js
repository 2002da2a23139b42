// Login page: posts the form as JSON (the page has no inline script: the Content-Security-Policy allows none).
document.getElementById('login').addEventListener('submit', async (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  const out = document.getElementById('error');
  const button = e.target.querySelector('button');
  button.disabled = true;
  out.textContent = '';
  try {
    const r = await fetch('/login', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: f.get('username'), password: f.get('password') }) });
    if (r.ok) { location.replace('/'); return; }
    const body = await r.json().catch(() => null);
    out.textContent = (body && body.error && body.error.message) || 'Login failed (HTTP ' + r.status + ')';
  } catch (err) {
    out.textContent = 'Login failed: ' + err.message;
  }
  button.disabled = false;
});

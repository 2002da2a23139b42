// Placeholder dashboard: who am I, the servers (masked by the API), the last task.
async function api(path, init) {
  const r = await fetch(path, init);
  if (r.status === 401) { location.href = '/login'; throw new Error('login required'); }
  return r.json();
}
(async () => {
  const me = await api('/api/me');
  document.getElementById('who').textContent = me.username + ' (' + me.role + ')';
  const s = await api('/api/servers').catch(() => ({ servers: [] }));
  const tbody = document.querySelector('#servers tbody');
  const sel = document.getElementById('server');
  for (const srv of s.servers || []) {
    const tr = document.createElement('tr');
    for (const v of [srv.name, srv.server_type, srv.is_default ? 'yes' : '']) { const td = document.createElement('td'); td.textContent = v; tr.appendChild(td); }
    tbody.appendChild(tr);
    const o = document.createElement('option'); o.value = srv.name; o.textContent = srv.name; sel.appendChild(o);
  }
  if ((s.servers || []).length > 1) sel.hidden = false;
  sel.value = localStorage.getItem('server') || (s.servers || []).find((x) => x.is_default)?.name || '';
  sel.onchange = () => localStorage.setItem('server', sel.value);
  const t = await api('/api/last_task').catch(() => null);
  document.getElementById('task').textContent = t ? JSON.stringify(t, null, 2) : 'none';
})();
document.getElementById('logout').onclick = async () => { await fetch('/logout', { method: 'POST' }); location.href = '/login'; };

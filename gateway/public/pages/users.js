// Users (admin): list, create, change a password, delete. Every change needs the acting admin's
// own password (current_password), asked once at the top of the page.
import { api, busy, field, h, say, state } from '../lib.js';

export default {
  title: 'Users',
  tag: 'CATALOGUE',
  admin: true,
  render(root) {
    const out = h('p', { class: 'msg', role: 'status' });
    const current = h('input', { type: 'password', autocomplete: 'current-password' });
    const list = h('div');
    const newName = h('input', { required: true, autocomplete: 'off', maxlength: '100' });
    const newPw = h('input', { type: 'password', required: true, minlength: '8', autocomplete: 'new-password' });
    const role = h('select', {}, h('option', { value: 'user', text: 'user' }), h('option', { value: 'admin', text: 'admin' }));
    const create = h('button', { type: 'submit', class: 'primary', text: 'Create user' });
    const form = h('form', { class: 'inline' }, field('Username', newName), field('Password', newPw), field('Role', role), create);

    const draw = async () => {
      const { users } = await api('/api/users');
      const rows = users.map((u) => {
        const pw = h('input', { type: 'password', minlength: '8', autocomplete: 'new-password', 'aria-label': `New password for ${u.username}` });
        const set = h('button', { type: 'button', class: 'small', text: 'Set password', 'aria-label': `Set password for ${u.username}` });
        set.addEventListener('click', () =>
          busy(set, out, async () => {
            await api(`/api/users/${encodeURIComponent(u.id)}/password`, { method: 'PUT', body: { password: pw.value, current_password: current.value } });
            pw.value = '';
            say(out, `Password of ${u.username} changed; their other sessions end.`, 'ok');
          }),
        );
        const del = h('button', { type: 'button', class: 'small danger', text: 'Delete', 'aria-label': `Delete ${u.username}`, disabled: u.username === state.me?.username });
        del.addEventListener('click', () =>
          busy(del, out, async () => {
            if (!confirm(`Delete the user ${u.username}?`)) return;
            await api(`/api/users/${encodeURIComponent(u.id)}`, { method: 'DELETE', body: { current_password: current.value } });
            say(out, `${u.username} deleted.`, 'ok');
            await draw();
          }),
        );
        return h('tr', {}, h('td', { text: u.username }), h('td', { text: u.role }), h('td', { text: new Date(u.created_at).toLocaleString() }), h('td', {}, h('div', { class: 'actions' }, pw, set, del)));
      });
      list.replaceChildren(h('table', {}, h('thead', {}, h('tr', {}, ['User', 'Role', 'Created', 'Actions'].map((x) => h('th', { scope: 'col', text: x })))), h('tbody', {}, rows)));
    };
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      busy(create, out, async () => {
        await api('/api/users', { method: 'POST', body: { username: newName.value.trim(), password: newPw.value, role: role.value, current_password: current.value } });
        say(out, `${newName.value.trim()} created.`, 'ok');
        form.reset();
        await draw();
      });
    });
    root.append(
      field('Your current password', current, 'Needed to create users, change passwords and delete users.'),
      out,
      h('section', { 'aria-labelledby': 'ul-h' }, h('h2', { id: 'ul-h', text: 'Accounts' }), list),
      h('section', { 'aria-labelledby': 'nu-h' }, h('h2', { id: 'nu-h', text: 'New user' }), form),
    );
    draw().catch((err) => say(out, err.message, 'error'));
  },
};

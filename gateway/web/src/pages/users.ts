/**
 * Users (CATALOGUE): admins list, create, re-password and delete accounts; everyone changes their
 * own password. Every change needs the acting user's own password (current_password).
 */
import { authRoutes } from '@polyphony/contracts';
import { call } from '../api';
import { busy, errText, field, h, msg, say, section } from '../dom';
import type { Page } from '../page';
import { state } from '../state';

/** "My password": PUT /api/users/<own id>/password with current_password (a fresh cookie comes back). */
function ownPassword(): HTMLElement {
  const out = msg();
  const current = h('input', { type: 'password', autocomplete: 'current-password', required: true });
  const next = h('input', { type: 'password', autocomplete: 'new-password', minlength: '8', required: true });
  const button = h('button', { type: 'submit', text: 'Change my password' });
  const form = h('form', { class: 'inline' }, field('Current password', current), field('New password', next, 'At least 8 characters'), button, out);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void busy(button, out, async () => {
      const id = state.me?.id;
      if (!id) throw new Error('Unknown account');
      await call(authRoutes.changePassword, { params: { id }, body: { password: next.value, current_password: current.value } });
      form.reset();
      say(out, 'Password changed; your other sessions end.', 'ok');
    });
  });
  return section('My password', form);
}

const page: Page = {
  title: 'Users',
  tag: 'CATALOGUE',
  render(root, { isAdmin }) {
    root.append(ownPassword());
    if (!isAdmin) return;
    const out = msg();
    const current = h('input', { type: 'password', autocomplete: 'current-password' });
    const list = h('div');
    const newName = h('input', { required: true, autocomplete: 'off', maxlength: '100' });
    const newPw = h('input', { type: 'password', required: true, minlength: '8', autocomplete: 'new-password' });
    const role = h('select', {}, h('option', { value: 'user', text: 'user' }), h('option', { value: 'admin', text: 'admin' }));
    const create = h('button', { type: 'submit', class: 'primary', text: 'Create user' });
    const form = h('form', { class: 'inline' }, field('Username', newName), field('Password', newPw), field('Role', role), create);

    const draw = async () => {
      const { users } = await call(authRoutes.listUsers, {});
      const rows = users.map((u) => {
        const pw = h('input', { type: 'password', minlength: '8', autocomplete: 'new-password', 'aria-label': `New password for ${u.username}` });
        const set = h('button', { type: 'button', class: 'small', text: 'Set password', 'aria-label': `Set password for ${u.username}` });
        set.addEventListener('click', () =>
          busy(set, out, async () => {
            await call(authRoutes.changePassword, { params: { id: u.id }, body: { password: pw.value, current_password: current.value } });
            pw.value = '';
            say(out, `Password of ${u.username} changed; their other sessions end.`, 'ok');
          }),
        );
        const del = h('button', { type: 'button', class: 'small danger', text: 'Delete', 'aria-label': `Delete ${u.username}`, disabled: u.username === state.me?.username });
        del.addEventListener('click', () =>
          busy(del, out, async () => {
            if (!confirm(`Delete the user ${u.username}?`)) return;
            await call(authRoutes.deleteUser, { params: { id: u.id }, body: { current_password: current.value } });
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
      void busy(create, out, async () => {
        await call(authRoutes.createUser, { body: { username: newName.value.trim(), password: newPw.value, role: role.value as 'user' | 'admin', current_password: current.value } });
        say(out, `${newName.value.trim()} created.`, 'ok');
        form.reset();
        await draw();
      });
    });
    root.append(
      section('Administration', field('Your current password', current, 'Needed to create users, change their passwords and delete users.'), out),
      h('section', { 'aria-labelledby': 'ul-h' }, h('h2', { id: 'ul-h', text: 'Accounts' }), list),
      h('section', { 'aria-labelledby': 'nu-h' }, h('h2', { id: 'nu-h', text: 'New user' }), form),
    );
    draw().catch((err: unknown) => say(out, errText(err), 'error'));
  },
};
export default page;

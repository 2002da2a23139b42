// Setup / Music Servers: list (default marked), add, test, save, edit (blank secret keeps the
// stored one), make default, delete, sweep one server, align all; Plex PIN sign-in fills the token.
// First run (no admin yet): also the form that creates the first admin account.
import { api, busy, field, h, say, state } from '../lib.js';

/** Credential fields per server kind (keys as the API expects them). */
const KINDS = {
  jellyfin: { label: 'Jellyfin', fields: [['url', 'Server URL'], ['user_id', 'User ID'], ['token', 'API token', 'secret']] },
  emby: { label: 'Emby', fields: [['url', 'Server URL'], ['user_id', 'User ID'], ['token', 'API token', 'secret']] },
  navidrome: {
    label: 'Navidrome',
    fields: [['url', 'Server URL'], ['user', 'Username', 'optional'], ['password', 'Password', 'secret optional'], ['api_key', 'API key (OpenSubsonic; replaces the two fields above)', 'secret optional']],
  },
  lyrion: { label: 'Lyrion', fields: [['url', 'Server URL'], ['user', 'Username (optional)', 'optional'], ['password', 'Password (optional)', 'secret optional']] },
  plex: { label: 'Plex', fields: [['url', 'Server URL'], ['token', 'Plex token', 'secret']] },
};
const MASK = '__unchanged__';
const PIN_POLL_MS = 1500;
const PIN_GIVE_UP_MS = 10 * 60 * 1000;

function plexClientId() {
  let id = localStorage.getItem('polyphony.plexClientId');
  if (!id) {
    id = 'polyphony-' + Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, '0')).join('');
    localStorage.setItem('polyphony.plexClientId', id);
  }
  return id;
}

function firstAdminForm() {
  const out = h('p', { class: 'msg' });
  const user = h('input', { name: 'username', autocomplete: 'username', required: true });
  const pw = h('input', { name: 'password', type: 'password', autocomplete: 'new-password', required: true, minlength: '8' });
  const pw2 = h('input', { name: 'password2', type: 'password', autocomplete: 'new-password', required: true });
  const button = h('button', { type: 'submit', class: 'primary', text: 'Create admin' });
  const form = h('form', { class: 'card wide' }, field('Admin username', user), field('Admin password', pw, 'At least 8 characters'), field('Repeat password', pw2), button, out);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (pw.value !== pw2.value) return say(out, 'The passwords differ.', 'error');
    busy(button, out, async () => {
      await api('/api/setup/admin', { method: 'POST', body: { username: user.value.trim(), password: pw.value } });
      location.hash = '#/setup'; // signed in now: the response set the session cookie
      location.reload();
    });
  });
  return h(
    'section',
    { 'aria-labelledby': 'admin-h' },
    h('h2', { id: 'admin-h', text: 'Create the admin account' }),
    h('p', { text: 'No admin account exists yet. You can add and test music servers now; create the admin account to finish setup.' }),
    form,
  );
}

export default {
  title: 'Setup',
  tag: 'CATALOGUE',
  admin: true,
  render(root, { refreshServers, kickTasks }) {
    const out = h('p', { class: 'msg', role: 'status' });
    const list = h('div');
    const formHost = h('div');
    const addButton = h('button', { type: 'button', class: 'primary', text: 'Add server', onclick: () => openForm(null) });
    const alignButton = h('button', {
      type: 'button',
      text: 'Align all servers',
      onclick: () =>
        busy(alignButton, out, async () => {
          await api('/api/servers/align', { method: 'POST', body: {} });
          say(out, 'Alignment of every server started.', 'ok');
          kickTasks();
        }),
    });
    if (state.setupMode) root.append(firstAdminForm());
    root.append(
      h('section', { 'aria-labelledby': 'ms-h' }, h('h2', { id: 'ms-h', text: 'Music Servers' }), h('div', { class: 'toolbar' }, addButton, alignButton), out, list),
      formHost,
    );
    let stopPin = () => {};

    const action = (label, name, fn, extra = {}) => h('button', { type: 'button', class: 'small', text: label, 'aria-label': `${label} ${name}`, onclick: (e) => busy(e.currentTarget, out, fn), ...extra });

    function drawList() {
      if (state.servers.length === 0) {
        list.replaceChildren(h('p', { class: 'muted', text: 'No music server yet. Add one: the first server becomes the default.' }));
        return;
      }
      const rows = state.servers.map((s) => {
        const libs = s.music_libraries?.length ? `${s.music_libraries.length} selected` : 'all';
        const matched = s.matched_count === null || s.matched_count === undefined ? '—' : `${s.matched_count}${s.track_count ? ` / ${s.track_count}` : ''}`;
        const name = h('span', {}, s.name, s.is_default ? h('span', { class: 'badge', text: 'default' }) : null);
        const actions = h(
          'div',
          { class: 'actions' },
          action('Edit', s.name, async () => openForm(s)),
          s.is_default
            ? null
            : action('Make default', s.name, async () => {
                await api(`/api/servers/${encodeURIComponent(s.id)}/default`, { method: 'POST', body: {} });
                await reload(`${s.name} is now the default server.`);
              }),
          action('Sweep', s.name, async () => {
            await api(`/api/servers/${encodeURIComponent(s.id)}/sweep`, { method: 'POST', body: {} });
            say(out, `Sweep of ${s.name} started.`, 'ok');
            kickTasks();
          }),
          action(
            'Delete',
            s.name,
            async () => {
              if (!confirm(`Delete the server "${s.name}"? Its track mappings are removed; analyzed songs stay.`)) return;
              await api(`/api/servers/${encodeURIComponent(s.id)}`, { method: 'DELETE' });
              await reload(`${s.name} deleted.`);
            },
            { disabled: s.is_default, title: s.is_default ? 'The default server cannot be deleted; make another server the default first' : null },
          ),
        );
        return [name, KINDS[s.server_type]?.label ?? s.server_type, s.creds?.url ?? '', libs, matched, actions];
      });
      const t = h(
        'table',
        { class: 'servers' },
        h('thead', {}, h('tr', {}, ['Name', 'Type', 'URL', 'Libraries', 'Matched', 'Actions'].map((x) => h('th', { scope: 'col', text: x })))),
        h('tbody', {}, rows.map((r, i) => h('tr', { 'data-server-id': state.servers[i].id }, r.map((c) => h('td', {}, c))))),
      );
      list.replaceChildren(t);
    }

    async function reload(message) {
      await refreshServers();
      drawList();
      if (message) say(out, message, 'ok');
    }

    /** Add (server = null) or edit form. Secrets are never prefilled: blank keeps the stored value. */
    function openForm(server) {
      stopPin();
      const editing = Boolean(server);
      const result = h('p', { class: 'msg', role: 'status' });
      const warnings = h('ul', { class: 'warnings', 'aria-label': 'Warnings' });
      const name = h('input', { name: 'name', required: true, maxlength: '100', value: server?.name ?? '' });
      const type = h('select', { name: 'server_type', disabled: editing }, Object.entries(KINDS).map(([k, v]) => h('option', { value: k, text: v.label })));
      type.value = server?.server_type ?? 'jellyfin';
      const credsBox = h('fieldset', {}, h('legend', { text: 'Connection' }));
      const libsList = h('div', { class: 'libs' });
      let selected = new Set(server?.music_libraries ?? []);
      let known = null; // [{id,name}] once loaded
      const inputs = {};

      const drawLibs = () => {
        const entries = known ?? [...selected].map((id) => ({ id, name: id }));
        if (entries.length === 0) {
          libsList.replaceChildren(h('p', { class: 'muted small', text: 'No filter: every library is used. Load the libraries to choose some.' }));
          return;
        }
        libsList.replaceChildren(
          ...entries.map((l) =>
            h('label', { class: 'check' }, h('input', { type: 'checkbox', value: l.id, checked: selected.has(l.id), onchange: (e) => (e.target.checked ? selected.add(l.id) : selected.delete(l.id)) }), l.name || l.id),
          ),
        );
      };
      const drawCreds = () => {
        stopPin();
        for (const k of Object.keys(inputs)) delete inputs[k];
        const kind = KINDS[type.value];
        const stored = server?.server_type === type.value ? server.creds ?? {} : {};
        const nodes = kind.fields.map(([key, label, flags = '']) => {
          const secret = flags.includes('secret');
          const storedValue = stored[key];
          const input = h('input', {
            name: `creds.${key}`,
            type: secret ? 'password' : key === 'url' ? 'url' : 'text',
            autocomplete: secret ? 'new-password' : 'off',
            required: !flags.includes('optional') && !(secret && editing) ? true : null,
            placeholder: secret && editing && storedValue === MASK ? 'unchanged' : key === 'url' ? 'http://host:port' : null,
            value: !secret && storedValue !== undefined && storedValue !== MASK ? storedValue : '',
          });
          inputs[key] = input;
          return field(label, input, secret && editing ? 'Leave blank to keep the stored value.' : null);
        });
        credsBox.replaceChildren(h('legend', { text: 'Connection' }), ...nodes);
        if (type.value === 'plex') credsBox.append(plexSignIn());
        if (type.value === 'jellyfin' || type.value === 'emby') credsBox.append(passwordSignIn());
        known = null;
        if (!editing) selected = new Set();
        drawLibs();
      };

      /** PIN linking: POST /api/plex/pin, show the code and link, poll every 1.5 s, fill the token. */
      const plexSignIn = () => {
        const status = h('p', { class: 'msg', role: 'status' });
        const button = h('button', { type: 'button', text: 'Sign in with Plex' });
        button.addEventListener('click', () =>
          busy(button, status, async () => {
            stopPin();
            const clientId = plexClientId();
            const pin = await api('/api/plex/pin', { method: 'POST', body: { client_id: clientId } });
            const link = /^https?:\/\//i.test(pin.link_url ?? '') ? h('a', { href: pin.link_url, target: '_blank', rel: 'noopener noreferrer', text: pin.link_url }) : 'the Plex link page';
            status.replaceChildren('Open ', link, ' and enter the code ', h('strong', { class: 'pin', text: pin.code }), '. Waiting for approval…');
            status.className = 'msg msg-info';
            const started = Date.now();
            let timer;
            let stopped = false;
            stopPin = () => {
              stopped = true;
              clearTimeout(timer);
            };
            const poll = async () => {
              if (stopped) return;
              try {
                const r = await api(`/api/plex/pin/${encodeURIComponent(pin.id)}`, { query: { client_id: clientId } });
                if (r?.token) {
                  if (inputs.token) inputs.token.value = r.token;
                  say(status, 'Signed in to Plex: the token is filled in. Test and save the server.', 'ok');
                  return;
                }
              } catch (err) {
                return say(status, err.message, 'error');
              }
              if (Date.now() - started > PIN_GIVE_UP_MS) return say(status, 'The sign-in code expired; start again.', 'error');
              timer = setTimeout(poll, PIN_POLL_MS);
            };
            timer = setTimeout(poll, PIN_POLL_MS);
          }),
        );
        return h('div', { class: 'pin-box' }, button, status);
      };

      /**
       * Jellyfin/Emby sign-in with username and password: POST /api/servers/signin stores the
       * token and user id the server hands out (never the password) and saves the server.
       */
      const passwordSignIn = () => {
        const status = h('p', { class: 'msg', role: 'status' });
        const user = h('input', { name: 'signin.username', autocomplete: 'off' });
        const pass = h('input', { name: 'signin.password', type: 'password', autocomplete: 'new-password' });
        const button = h('button', { type: 'button', text: 'Sign in and save' });
        button.addEventListener('click', () =>
          busy(button, status, async () => {
            const body = { server_type: type.value, url: inputs.url.value.trim(), username: user.value.trim(), password: pass.value, music_libraries: libraries() };
            const saved = editing
              ? await api('/api/servers/signin', { method: 'POST', body: { ...body, server_id: server.id } })
              : await api('/api/servers/signin', { method: 'POST', body: { ...body, name: name.value.trim() } });
            pass.value = '';
            close();
            await reload(`${saved.name} signed in and saved${saved.is_default ? ' (default server)' : ''}. Matching runs in the background.`);
            kickTasks();
          }),
        );
        return h(
          'div',
          { class: 'pin-box' },
          h('p', { class: 'muted small', text: 'Or sign in with a user name and password instead of a user id and token:' }),
          field('Sign-in user name', user),
          field('Sign-in password', pass, 'Used once to obtain a token; not stored.'),
          button,
          status,
        );
      };

      const collectCreds = () => {
        const creds = {};
        for (const [key, , flags = ''] of KINDS[type.value].fields) {
          const secret = flags.includes('secret');
          const v = secret ? inputs[key].value : inputs[key].value.trim();
          if (v === '' && !editing) continue; // blank optional value on add: not sent
          creds[key] = v; // on edit a blank secret means "keep the stored one"
        }
        return creds;
      };
      const probeBody = () => ({ server_type: type.value, creds: collectCreds(), ...(editing ? { server_id: server.id } : {}) });
      const libraries = () => (known ? [...selected].filter((id) => known.some((l) => l.id === id)) : [...selected]);

      const testButton = h('button', { type: 'button', text: 'Test connection' });
      testButton.addEventListener('click', () =>
        busy(testButton, result, async () => {
          say(result, 'Testing…');
          const r = await api('/api/servers/test', { method: 'POST', body: { ...probeBody(), music_libraries: libraries() } });
          if (r.ok) say(result, `Connection OK${r.server_name ? ` to ${r.server_name}` : ''}: ${r.sample_count} sample tracks, ${r.path_format} paths.`, 'ok');
          else say(result, `${r.auth_failed ? 'Credentials rejected' : 'Connection failed'}: ${r.error ?? 'unknown error'}`, 'error');
          warnings.replaceChildren(...(r.warnings ?? []).map((w) => h('li', { text: w })));
          if (r.libraries?.length) {
            known = r.libraries;
            drawLibs();
          }
        }),
      );
      const libsButton = h('button', { type: 'button', class: 'small', text: 'Load libraries' });
      libsButton.addEventListener('click', () =>
        busy(libsButton, result, async () => {
          const r = await api('/api/servers/libraries', { method: 'POST', body: probeBody() });
          known = r.libraries ?? [];
          drawLibs();
        }),
      );
      const saveButton = h('button', { type: 'submit', class: 'primary', text: 'Save' });
      const cancelButton = h('button', { type: 'button', text: 'Cancel', onclick: () => close() });
      const form = h(
        'form',
        { class: 'card wide', 'aria-labelledby': 'form-h' },
        h('h2', { id: 'form-h', text: editing ? `Edit ${server.name}` : 'Add a music server' }),
        field('Name', name, 'Unique display name, also usable as the server parameter of the API.'),
        field('Type', type),
        credsBox,
        h('fieldset', {}, h('legend', { text: 'Library filter (optional)' }), libsButton, libsList),
        h('div', { class: 'toolbar' }, testButton, saveButton, cancelButton),
        result,
        warnings,
      );
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        busy(saveButton, result, async () => {
          const body = { name: name.value.trim(), creds: collectCreds(), music_libraries: libraries() };
          const saved = editing
            ? await api(`/api/servers/${encodeURIComponent(server.id)}`, { method: 'PUT', body })
            : await api('/api/servers', { method: 'POST', body: { ...body, server_type: type.value } });
          close();
          await reload(`${saved.name} saved${saved.is_default ? ' (default server)' : ''}. Matching runs in the background.`);
          kickTasks();
        });
      });
      type.addEventListener('change', drawCreds);
      const close = () => {
        stopPin();
        form.reset();
        formHost.replaceChildren();
        addButton.disabled = false;
      };
      drawCreds();
      addButton.disabled = true;
      formHost.replaceChildren(form);
      name.focus();
    }

    drawList();
    const onServers = () => drawList();
    window.addEventListener('servers-changed', onServers);
    const onTaskEnd = () => refreshServers().catch((err) => say(out, err.message, 'error'));
    window.addEventListener('task-finished', onTaskEnd);
    return () => {
      stopPin();
      window.removeEventListener('servers-changed', onServers);
      window.removeEventListener('task-finished', onTaskEnd);
    };
  },
};

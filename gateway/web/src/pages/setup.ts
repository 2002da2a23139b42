/**
 * Setup (CATALOGUE, admin): Music Servers list (default marked), add (type first, then that kind's
 * fields; library filter from the server's live libraries; Test connection; Save), edit (blank
 * secret = keep), make default, delete (not the default), sweep one, align all; Plex PIN sign-in
 * fills the token; Jellyfin/Emby sign-in with username and password. Also: learned-model status
 * (GET /api/analysis/model and GET /api/models) and the AI provider settings with a test button. First run (no admin yet): the
 * form that creates the first admin account.
 */
import type { z } from 'zod';
import { authRoutes, probeRoutes, serverRoutes, SECRET_MASK, taskRoutes, type ServerTestResult } from '@polyphony/contracts';
import { call } from '../api';
import { busy, errText, field, h, msg, nodes, say, section } from '../dom';
import type { Page, PageContext } from '../page';
import { state, type Server } from '../state';
import { aiSettings } from './ai-settings';
import { credentialFields, KIND_LABELS, type ServerKind } from '../server-kinds';

const PIN_POLL_MS = 1500;
const PIN_GIVE_UP_MS = 10 * 60 * 1000;

/** A stable per-browser Plex client identifier (plex.tv ties a PIN to the client that asked). */
export function plexClientId(): string {
  let id = localStorage.getItem('polyphony.plexClientId');
  if (!id) {
    id = 'polyphony-' + Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, '0')).join('');
    localStorage.setItem('polyphony.plexClientId', id);
  }
  return id;
}

function firstAdminForm(): HTMLElement {
  const out = h('p', { class: 'msg' });
  const user = h('input', { name: 'username', autocomplete: 'username', required: true });
  const pw = h('input', { name: 'password', type: 'password', autocomplete: 'new-password', required: true, minlength: '8' });
  const pw2 = h('input', { name: 'password2', type: 'password', autocomplete: 'new-password', required: true });
  const button = h('button', { type: 'submit', class: 'primary', text: 'Create admin' });
  const form = h('form', { class: 'card wide' }, field('Admin username', user), field('Admin password', pw, 'At least 8 characters'), field('Repeat password', pw2), button, out);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (pw.value !== pw2.value) return say(out, 'The passwords differ.', 'error');
    void busy(button, out, async () => {
      await call(authRoutes.setupAdmin, { body: { username: user.value.trim(), password: pw.value } });
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

/**
 * Learned-model status: what the analysis worker has loaded (GET /api/analysis/model: present with its
 * id and backend, or the reason and how to add it) and how many songs carry each model's features
 * (GET /api/models).
 */
function modelStatus(): HTMLElement {
  const body = h('div', {}, h('p', { class: 'muted', text: 'Loading…' }));
  Promise.all([call(taskRoutes.analysisModel, {}), call(probeRoutes.models, {})])
    .then(([worker, models]) => {
      const entries = Object.entries(models);
      const present = worker.status === 'ready';
      const headline =
        worker.status === 'ready'
          ? `Present: ${worker.model ?? 'MusiCNN'}${worker.backend ? ` on the ${worker.backend} backend` : ''}${worker.precision ? ` (${worker.precision})` : ''}${worker.patchesPerTrack ? `, ${worker.patchesPerTrack} patches per track` : ''}. Moods, tags and the text search are computed by the analysis.`
          : worker.status === 'loading'
            ? 'The analysis worker is still loading the model.'
            : `Not present${worker.reason ? `: ${worker.reason}` : ''}. Similarity uses the built-in audio features only; moods, tags and the text search need the MusiCNN model.`;
      body.replaceChildren(
        ...nodes(
          h('p', { class: `msg msg-${present ? 'ok' : worker.status === 'error' ? 'error' : 'info'}`, 'data-model-status': worker.status, text: headline }),
          present ? null : h('p', {}, h('strong', { text: 'How to add it: ' }), worker.howToInstall, ' The next analysis then adds the learned features to every song.'),
          entries.length
            ? h(
                'ul',
                { class: 'plain' },
                entries.map(([name, m]) => h('li', {}, h('strong', { text: name }), `: ${m.enabled ? 'enabled' : 'not installed'} · ${m.global.count} of ${m.global.total} songs (${m.global.percentage.toFixed(1)}%)`)),
              )
            : null,
        ),
      );
    })
    .catch((err: unknown) => body.replaceChildren(h('p', { class: 'msg msg-error', role: 'alert', text: errText(err) })));
  return section('Learned model', body);
}

type TestResult = z.infer<typeof ServerTestResult>;

const page: Page = {
  title: 'Setup',
  tag: 'CATALOGUE',
  admin: true,
  render(root, ctx) {
    return renderSetup(root, ctx);
  },
};
export default page;

function renderSetup(root: HTMLElement, { refreshServers, kickTasks }: PageContext): () => void {
  const out = msg();
  const list = h('div');
  const formHost = h('div');
  const addButton = h('button', { type: 'button', class: 'primary', text: 'Add server', onclick: () => openForm(null) });
  const alignButton = h('button', { type: 'button', text: 'Align all servers' });
  alignButton.addEventListener('click', () =>
    busy(alignButton, out, async () => {
      await call(serverRoutes.align, {});
      say(out, 'Alignment of every server started.', 'ok');
      kickTasks();
    }),
  );
  if (state.setupMode) root.append(firstAdminForm());
  root.append(h('section', { 'aria-labelledby': 'ms-h' }, h('h2', { id: 'ms-h', text: 'Music Servers' }), h('div', { class: 'toolbar' }, addButton, alignButton), out, list), formHost);
  if (!state.setupMode) root.append(modelStatus(), aiSettings());
  let stopPin: () => void = () => undefined;

  const action = (label: string, name: string, fn: () => Promise<unknown>, extra: Record<string, string | boolean | null> = {}) => {
    const b = h('button', { type: 'button', class: 'small', text: label, 'aria-label': `${label} ${name}`, ...extra });
    b.addEventListener('click', () => void busy(b, out, fn));
    return b;
  };

  function drawList(): void {
    if (state.servers.length === 0) {
      list.replaceChildren(h('p', { class: 'muted', text: 'No music server yet. Add one: the first server becomes the default.' }));
      return;
    }
    const rows = state.servers.map((s) => {
      const libs = s.music_libraries?.length ? `${s.music_libraries.length} selected` : 'all';
      const matched = s.matched_count === null ? '—' : `${s.matched_count}${s.track_count ? ` / ${s.track_count}` : ''}`;
      const name = h('span', {}, s.name, s.is_default ? h('span', { class: 'badge', text: 'default' }) : null);
      const actions = h(
        'div',
        { class: 'actions' },
        action('Edit', s.name, async () => openForm(s)),
        s.is_default
          ? null
          : action('Make default', s.name, async () => {
              await call(serverRoutes.makeDefault, { params: { id: s.id } });
              await reload(`${s.name} is now the default server.`);
            }),
        action('Sweep', s.name, async () => {
          await call(serverRoutes.sweep, { params: { id: s.id } });
          say(out, `Sweep of ${s.name} started.`, 'ok');
          kickTasks();
        }),
        action(
          'Delete',
          s.name,
          async () => {
            if (!confirm(`Delete the server "${s.name}"? Its track mappings are removed; analyzed songs stay.`)) return;
            await call(serverRoutes.remove, { params: { id: s.id } });
            await reload(`${s.name} deleted.`);
          },
          { disabled: s.is_default, title: s.is_default ? 'The default server cannot be deleted; make another server the default first' : null },
        ),
      );
      return h('tr', { 'data-server-id': s.id }, ...[name, KIND_LABELS[s.server_type], s.creds?.url ?? '', libs, matched, actions].map((c) => h('td', {}, c)));
    });
    list.replaceChildren(
      h('table', { class: 'servers' }, h('thead', {}, h('tr', {}, ['Name', 'Type', 'URL', 'Libraries', 'Matched', 'Actions'].map((x) => h('th', { scope: 'col', text: x })))), h('tbody', {}, rows)),
    );
  }

  async function reload(message?: string): Promise<void> {
    await refreshServers();
    drawList();
    if (message) say(out, message, 'ok');
  }

  /** Add (server = null) or edit form. Secrets are never prefilled: blank keeps the stored value. */
  function openForm(server: Server | null): void {
    stopPin();
    const editing = server !== null;
    const result = msg();
    const warnings = h('ul', { class: 'warnings', 'aria-label': 'Warnings' });
    const name = h('input', { name: 'name', required: true, maxlength: '100', value: server?.name ?? '' });
    const type = h('select', { name: 'server_type', disabled: editing }, (Object.keys(KIND_LABELS) as ServerKind[]).map((k) => h('option', { value: k, text: KIND_LABELS[k] })));
    type.value = server?.server_type ?? 'jellyfin';
    const credsBox = h('fieldset', {}, h('legend', { text: 'Connection' }));
    const libsList = h('div', { class: 'libs' });
    let selected = new Set(server?.music_libraries ?? []);
    let known: Array<{ id: string; name: string }> | null = null;
    const inputs: Record<string, HTMLInputElement> = {};
    const kind = () => type.value as ServerKind;

    const drawLibs = () => {
      const entries = known ?? [...selected].map((id) => ({ id, name: id }));
      if (entries.length === 0) {
        libsList.replaceChildren(h('p', { class: 'muted small', text: 'No filter: every library is used. Load the libraries to choose some.' }));
        return;
      }
      libsList.replaceChildren(
        ...entries.map((l) => {
          const box = h('input', { type: 'checkbox', value: l.id, checked: selected.has(l.id) });
          box.addEventListener('change', () => (box.checked ? selected.add(l.id) : selected.delete(l.id)));
          return h('label', { class: 'check' }, box, l.name || l.id);
        }),
      );
    };
    const drawCreds = () => {
      stopPin();
      for (const k of Object.keys(inputs)) delete inputs[k];
      const stored = server?.server_type === kind() ? (server.creds ?? {}) : {};
      const nodes = credentialFields(kind()).map((f) => {
        const storedValue = stored[f.key];
        const input = h('input', {
          name: `creds.${f.key}`,
          type: f.secret ? 'password' : f.key === 'url' ? 'url' : 'text',
          autocomplete: f.secret ? 'new-password' : 'off',
          required: !f.optional && !(f.secret && editing) ? true : null,
          placeholder: f.secret && editing && storedValue === SECRET_MASK ? 'unchanged' : f.key === 'url' ? 'http://host:port' : null,
          value: !f.secret && storedValue !== undefined && storedValue !== SECRET_MASK ? storedValue : '',
        });
        inputs[f.key] = input;
        return field(f.label, input, f.secret && editing ? 'Leave blank to keep the stored value.' : null);
      });
      credsBox.replaceChildren(h('legend', { text: 'Connection' }), ...nodes);
      if (kind() === 'plex') credsBox.append(plexSignIn());
      if (kind() === 'jellyfin' || kind() === 'emby') credsBox.append(passwordSignIn());
      known = null;
      if (!editing) selected = new Set();
      drawLibs();
    };

    /** PIN linking: POST /api/plex/pin, show the code and link, poll every 1.5 s, fill the token. */
    const plexSignIn = () => {
      const status = msg();
      const button = h('button', { type: 'button', text: 'Sign in with Plex' });
      button.addEventListener('click', () =>
        busy(button, status, async () => {
          stopPin();
          const clientId = plexClientId();
          const pin = (await call(serverRoutes.plexPin, { body: { client_id: clientId } })) as { id: string | number; code: string; link_url?: string };
          const link = /^https?:\/\//i.test(pin.link_url ?? '') ? h('a', { href: pin.link_url!, target: '_blank', rel: 'noopener noreferrer', text: pin.link_url! }) : 'the Plex link page';
          status.replaceChildren('Open ', link, ' and enter the code ', h('strong', { class: 'pin', text: pin.code }), '. Waiting for approval…');
          status.className = 'msg msg-info';
          const started = Date.now();
          let timer: ReturnType<typeof setTimeout> | undefined;
          let stopped = false;
          stopPin = () => {
            stopped = true;
            clearTimeout(timer);
          };
          const poll = async () => {
            if (stopped) return;
            try {
              const r = (await call(serverRoutes.plexPinPoll, { params: { id: String(pin.id) }, query: { client_id: clientId } })) as { token?: string | null } | null;
              if (r?.token) {
                if (inputs.token) inputs.token.value = r.token;
                say(status, 'Signed in to Plex: the token is filled in. Test and save the server.', 'ok');
                return;
              }
            } catch (err) {
              return say(status, errText(err), 'error');
            }
            if (Date.now() - started > PIN_GIVE_UP_MS) return say(status, 'The sign-in code expired; start again.', 'error');
            timer = setTimeout(() => void poll(), PIN_POLL_MS);
          };
          timer = setTimeout(() => void poll(), PIN_POLL_MS);
        }),
      );
      return h('div', { class: 'pin-box' }, button, status);
    };

    /** Jellyfin/Emby: POST /api/servers/signin stores the token and user id the server hands out (never the password). */
    const passwordSignIn = () => {
      const status = msg();
      const user = h('input', { name: 'signin.username', autocomplete: 'off' });
      const pass = h('input', { name: 'signin.password', type: 'password', autocomplete: 'new-password' });
      const button = h('button', { type: 'button', text: 'Sign in and save' });
      button.addEventListener('click', () =>
        busy(button, status, async () => {
          const body = { server_type: kind() as 'jellyfin' | 'emby', url: inputs.url?.value.trim() ?? '', username: user.value.trim(), password: pass.value, music_libraries: libraries() };
          const saved = await call(serverRoutes.signIn, { body: editing ? { ...body, server_id: server.id } : { ...body, name: name.value.trim() } });
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
      const creds: Record<string, string> = {};
      for (const f of credentialFields(kind())) {
        const input = inputs[f.key];
        if (!input) continue;
        const v = f.secret ? input.value : input.value.trim();
        if (v === '' && !editing) continue; // blank optional value on add: not sent
        creds[f.key] = v; // on edit a blank secret means "keep the stored one"
      }
      return creds;
    };
    const probeBody = () => ({ server_type: kind(), creds: collectCreds(), ...(editing ? { server_id: server.id } : {}) });
    const libraries = () => (known ? [...selected].filter((id) => known!.some((l) => l.id === id)) : [...selected]);

    const testButton = h('button', { type: 'button', text: 'Test connection' });
    testButton.addEventListener('click', () =>
      busy(testButton, result, async () => {
        say(result, 'Testing…');
        const r: TestResult = await call(serverRoutes.test, { body: { ...probeBody(), music_libraries: libraries() } });
        if (r.ok) say(result, `Connection OK${r.server_name ? ` to ${r.server_name}` : ''}: ${r.library_count} libraries, ${r.sample_count} sample tracks, ${r.path_format} paths.`, 'ok');
        else say(result, `${r.auth_failed ? 'Credentials rejected' : 'Connection failed'}: ${r.error ?? 'unknown error'}`, 'error');
        warnings.replaceChildren(...r.warnings.map((w) => h('li', { text: w })));
        if (r.libraries.length) {
          known = r.libraries;
          drawLibs();
        }
      }),
    );
    const libsButton = h('button', { type: 'button', class: 'small', text: 'Load libraries' });
    libsButton.addEventListener('click', () =>
      busy(libsButton, result, async () => {
        const r = (await call(serverRoutes.libraries, { body: probeBody() })) as { libraries?: Array<{ id: string; name: string }> } | null;
        known = r?.libraries ?? [];
        drawLibs();
        if (known.length === 0) say(result, 'The server lists no libraries: every track is used.', 'info');
      }),
    );
    const saveButton = h('button', { type: 'submit', class: 'primary', text: 'Save' });
    const cancelButton = h('button', { type: 'button', text: 'Cancel', onclick: () => close() });
    const form = h(
      'form',
      { class: 'card wide', 'aria-labelledby': 'form-h' },
      h('h2', { id: 'form-h', text: editing ? `Edit ${server.name}` : 'Add a music server' }),
      field('Type', type, editing ? null : 'Choose the kind first: its connection fields follow.'),
      field('Name', name, 'Unique display name, also usable as the server parameter of the API.'),
      credsBox,
      h('fieldset', {}, h('legend', { text: 'Library filter (optional)' }), libsButton, libsList),
      h('div', { class: 'toolbar' }, testButton, saveButton, cancelButton),
      result,
      warnings,
    );
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void busy(saveButton, result, async () => {
        const body = { name: name.value.trim(), creds: collectCreds(), music_libraries: libraries() };
        const saved = editing ? await call(serverRoutes.update, { params: { id: server.id }, body }) : await call(serverRoutes.create, { body: { ...body, server_type: kind() } });
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
    (editing ? name : type).focus();
  }

  drawList();
  const onServers = () => drawList();
  window.addEventListener('servers-changed', onServers);
  const onTaskEnd = () => void refreshServers().catch((err: unknown) => say(out, errText(err), 'error'));
  window.addEventListener('task-finished', onTaskEnd);
  return () => {
    stopPin();
    window.removeEventListener('servers-changed', onServers);
    window.removeEventListener('task-finished', onTaskEnd);
  };
}

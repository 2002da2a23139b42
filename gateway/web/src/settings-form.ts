/**
 * Editor of config-store settings (GET /api/config/settings, PUT /api/config): one labelled control
 * per setting (checkbox, select, number or text), its description and source; secrets are
 * write-only (blank or the mask keeps them; the stored value never reaches the browser).
 */
import { SETTING_SECRET_MASK, settingsRoutes, type SettingDto } from '@polyphony/contracts';
import { call } from './api';
import { busy, errText, field, h, msg, say } from './dom';
import { settingInputKind, settingsChanges } from './settings-logic';

export interface SettingsFormOptions {
  /** Which settings to show (all when absent). */
  filter?: (s: SettingDto) => boolean;
  /** Extra controls next to Save (e.g. the AI test button). */
  extra?: HTMLElement[];
}

/** The settings form; loads itself. */
export function settingsForm(opts: SettingsFormOptions = {}): HTMLElement {
  const out = msg();
  const host = h('div', {}, h('p', { class: 'muted', text: 'Loading…' }));
  const save = h('button', { type: 'submit', class: 'primary', text: 'Save settings' });
  const form = h('form', { class: 'settings' }, host, h('div', { class: 'toolbar' }, save, ...(opts.extra ?? [])), out);
  let shown: SettingDto[] = [];
  const controls = new Map<string, HTMLInputElement | HTMLSelectElement>();

  const draw = (settings: SettingDto[]) => {
    shown = settings.filter(opts.filter ?? (() => true));
    controls.clear();
    host.replaceChildren(
      ...shown.map((s) => {
        const kind = settingInputKind(s);
        let control: HTMLInputElement | HTMLSelectElement;
        if (kind.type === 'boolean') control = h('input', { type: 'checkbox', checked: s.value === true || s.value === 'true' });
        else if (kind.type === 'enum') {
          control = h('select', {}, kind.options.map((o) => h('option', { value: o, text: o })));
          control.value = String(s.value ?? '');
        } else if (s.secret) control = h('input', { type: 'password', autocomplete: 'new-password', placeholder: s.value === SETTING_SECRET_MASK ? 'set (unchanged)' : 'not set', value: '' });
        else control = h('input', { type: kind.type === 'number' ? 'number' : 'text', step: 'any', value: s.value === null ? '' : String(s.value) });
        control.name = s.key;
        controls.set(s.key, control);
        const hint = `${s.description}. Source: ${s.source}${s.live ? '' : '; applies after a restart'}${s.secret ? '; write-only, leave blank to keep' : ''}.`;
        return field(s.key, control, hint);
      }),
    );
  };
  const load = () =>
    call(settingsRoutes.settingsList, {})
      .then((r) => draw(r.settings))
      .catch((err: unknown) => say(out, errText(err), 'error'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void busy(save, out, async () => {
      const values = new Map<string, string | boolean>();
      for (const [k, c] of controls) values.set(k, c instanceof HTMLInputElement && c.type === 'checkbox' ? c.checked : c.value);
      const changes = settingsChanges(shown, values);
      if (Object.keys(changes).length === 0) return say(out, 'Nothing changed.', 'info');
      const r = await call(settingsRoutes.settingsUpdate, { body: changes });
      draw(r.settings);
      say(out, `Saved: ${r.updated.join(', ')}${r.restart_required.length ? `. Restart needed for ${r.restart_required.join(', ')}` : ''}.`, 'ok');
    });
  });
  void load();
  return form;
}

/**
 * Schedules (CATALOGUE, admin): cron schedules of batch tasks (/api/cron) with next run, last run
 * and result, recent firings; add/edit with a next-run preview (/api/cron/preview), enable/disable,
 * delete. Scheduled tasks always run over every server.
 */
import { opsRoutes, SCHEDULE_KINDS, type ScheduleDto } from '@polyphony/contracts';
import { call } from '../api';
import { busy, errText, field, h, msg, say, section, select, table } from '../dom';
import type { Page } from '../page';
import { scheduleOverlaps } from '../cron-overlap';

const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

const page: Page = {
  title: 'Schedules',
  tag: 'CATALOGUE',
  admin: true,
  render(root) {
    const out = msg();
    const list = h('div', {}, h('p', { class: 'muted', text: 'Loading…' }));
    // Warns (never refuses) when two enabled schedules can start in the same minute (cron-overlap.ts).
    const overlapBox = h('div', { class: 'warnings overlap-warning', role: 'status' });
    const formOut = msg();
    let editing: ScheduleDto | null = null;
    const name = h('input', { required: true, maxlength: '100' });
    const kind = select(SCHEDULE_KINDS.map((k): [string, string] => [k, k]), 'analysis');
    const cron = h('input', { required: true, value: '0 3 * * *', spellcheck: 'false', autocomplete: 'off' });
    const defaultTz = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
    const tz = h('input', { required: true, value: defaultTz });
    const enabled = h('input', { type: 'checkbox', checked: true, id: 'sched-enabled' });
    const params = h('textarea', { rows: '2', spellcheck: 'false', placeholder: '{"keep": 7}' });
    const preview = h('ul', { class: 'plain', 'aria-label': 'Next runs' });
    const previewButton = h('button', { type: 'button', text: 'Preview next runs' });
    const save = h('button', { type: 'submit', class: 'primary', text: 'Add schedule' });
    const cancelEdit = h('button', { type: 'button', text: 'Cancel edit', hidden: true });
    const heading = h('h2', { id: 'sched-form-h', text: 'New schedule' });
    const form = h(
      'form',
      { class: 'card wide', 'aria-labelledby': 'sched-form-h' },
      heading,
      field('Name', name),
      field('Task', kind, 'Runs over every server, one after the other.'),
      field('Cron expression', cron, 'minute hour day-of-month month day-of-week (optionally seconds first), e.g. 0 3 * * * = 03:00 daily'),
      field('Time zone', tz, 'IANA name, e.g. Europe/Berlin'),
      h('label', { class: 'check', for: 'sched-enabled' }, enabled, 'Enabled'),
      field('Task parameters (JSON, optional)', params, 'e.g. {"keep": 7} for backups (archives kept), {"num_recent_albums": 50} for analysis, {"clean_catalogue": false} for cleaning; checked when saved'),
      h('div', { class: 'toolbar' }, previewButton, save, cancelEdit),
      preview,
      formOut,
    );
    const resetForm = () => {
      editing = null;
      form.reset();
      cron.value = '0 3 * * *';
      tz.value = defaultTz;
      enabled.checked = true;
      heading.textContent = 'New schedule';
      save.textContent = 'Add schedule';
      cancelEdit.hidden = true;
      preview.replaceChildren();
    };
    cancelEdit.addEventListener('click', resetForm);
    previewButton.addEventListener('click', () =>
      busy(previewButton, formOut, async () => {
        const r = await call(opsRoutes.cronPreview, { body: { cron: cron.value, timezone: tz.value, count: 5 } });
        preview.replaceChildren(...r.next.map((n) => h('li', { text: new Date(n).toLocaleString() })));
        say(formOut, '');
      }),
    );
    const body = () => {
      let p: Record<string, unknown> = {};
      if (params.value.trim()) {
        try {
          p = JSON.parse(params.value) as Record<string, unknown>;
        } catch {
          throw new Error('Task parameters must be a JSON object');
        }
      }
      return { name: name.value.trim(), kind: kind.value as ScheduleDto['kind'], cron: cron.value.trim(), timezone: tz.value.trim(), enabled: enabled.checked, params: p };
    };
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void busy(save, formOut, async () => {
        const saved = editing ? await call(opsRoutes.cronUpdate, { params: { id: editing.id }, body: body() }) : await call(opsRoutes.cronCreate, { body: body() });
        resetForm();
        say(formOut, `Saved "${saved.name}"; next run ${when(saved.next_run_at)}.`, 'ok');
        await load();
      });
    });
    const edit = (s: ScheduleDto) => {
      editing = s;
      name.value = s.name;
      kind.value = s.kind;
      cron.value = s.cron;
      tz.value = s.timezone;
      enabled.checked = s.enabled;
      params.value = Object.keys(s.params).length ? JSON.stringify(s.params) : '';
      heading.textContent = `Edit ${s.name}`;
      save.textContent = 'Save schedule';
      cancelEdit.hidden = false;
      name.focus();
    };
    const load = async () => {
      const { schedules } = await call(opsRoutes.cronList, {});
      const overlaps = scheduleOverlaps(schedules);
      overlapBox.replaceChildren(
        ...overlaps.map((o) => h('p', { text: `"${o.a}" and "${o.b}" can start in the same minute (first at ${o.example}); they will run side by side.` })),
      );
      if (schedules.length === 0) {
        list.replaceChildren(h('p', { class: 'muted', text: 'No schedule yet.' }));
        return;
      }
      list.replaceChildren(
        table(
          null,
          ['Name', 'Task', 'When', 'Next run', 'Last run', 'Last result', 'History', 'Actions'],
          schedules.map((s) => {
            const toggle = h('button', { type: 'button', class: 'small', text: s.enabled ? 'Disable' : 'Enable', 'aria-label': `${s.enabled ? 'Disable' : 'Enable'} ${s.name}` });
            toggle.addEventListener('click', () =>
              busy(toggle, out, async () => {
                await call(opsRoutes.cronUpdate, { params: { id: s.id }, body: { name: s.name, kind: s.kind, cron: s.cron, timezone: s.timezone, enabled: !s.enabled, params: s.params } });
                await load();
              }),
            );
            const del = h('button', { type: 'button', class: 'small danger', text: 'Delete', 'aria-label': `Delete ${s.name}` });
            del.addEventListener('click', () =>
              busy(del, out, async () => {
                if (!confirm(`Delete the schedule "${s.name}"?`)) return;
                await call(opsRoutes.cronDelete, { params: { id: s.id } });
                await load();
              }),
            );
            const editButton = h('button', { type: 'button', class: 'small', text: 'Edit', 'aria-label': `Edit ${s.name}`, onclick: () => edit(s) });
            const history = s.history.length
              ? h('details', {}, h('summary', { text: `${s.history.length} firings` }), h('ul', { class: 'plain small' }, s.history.map((r) => h('li', { text: `${when(r.fired_at)}: ${r.outcome}${r.message ? ` (${r.message})` : ''}` }))))
              : '—';
            return [s.name, s.kind, `${s.cron} (${s.timezone})${s.enabled ? '' : ' · disabled'}`, when(s.next_run_at), when(s.last_run_at), s.last_result ?? '—', history, h('div', { class: 'actions' }, editButton, toggle, del)];
          }),
          { class: 'schedules' },
        ),
      );
    };
    root.append(section('Schedules', out, overlapBox, list), form);
    load().catch((err: unknown) => say(out, errText(err), 'error'));
  },
};
export default page;

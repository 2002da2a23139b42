/**
 * Cleaning (CATALOGUE, admin): removes each server's stale mappings, reports orphans (songs on no
 * server), deletes them only when asked and safe, then rebuilds the index. Over every server.
 */
import { taskRoutes } from '@polyphony/contracts';
import { call } from '../api';
import { h, table } from '../dom';
import type { Page } from '../page';
import { taskPanel } from '../task-panel';
import type { TaskView } from '../task-logic';

function summary(t: TaskView): Node | null {
  const d = t.details ?? {};
  if (!('orphaned_tracks_count' in d) && !('pruned_mappings' in d)) return null;
  const v = (k: string) => (d[k] === null || d[k] === undefined ? '—' : String(d[k]));
  const sample = (Array.isArray(d.orphan_sample) ? d.orphan_sample : []) as Array<{ title?: string; artist?: string; author?: string }>;
  return h(
    'div',
    {},
    table(
      'Summary',
      ['Tracks on the servers', 'Songs in the catalogue', 'Orphans', 'Orphan albums', 'Stale mappings removed', 'Unbound', 'Orphans deleted'],
      [[v('total_media_server_tracks'), v('total_catalogue_tracks'), v('orphaned_tracks_count'), v('orphaned_albums'), v('pruned_mappings'), v('unbound_mappings'), v('deleted_count')]],
    ),
    sample.length ? h('details', {}, h('summary', { text: `Orphan sample (${sample.length})` }), h('ul', {}, sample.map((s) => h('li', { text: `${s.title ?? '?'} — ${s.artist ?? s.author ?? '?'}` })))) : null,
  );
}

const page: Page = {
  title: 'Cleaning',
  tag: 'CATALOGUE',
  admin: true,
  render(root, { kickTasks, isAdmin }) {
    const del = h('input', { type: 'checkbox', id: 'clean-orphans' });
    const panel = taskPanel({ kind: 'cleaning', startLabel: 'Start cleaning', isAdmin, kickTasks, details: summary, start: () => call(taskRoutes.cleaningStart, { body: del.checked ? { clean_catalogue: true } : {} }) });
    root.append(
      h('p', { text: 'Cleaning reads every server’s full track list (library filter applied) and removes only that server’s stale mappings; a server that cannot be read completely is skipped. Songs mapped on no server (orphans) are reported and stay hidden. Every run ends with the full similarity-index rebuild.' }),
      h(
        'div',
        { class: 'field' },
        h('label', { class: 'check', for: 'clean-orphans' }, del, 'Delete orphan songs in this run'),
        h('small', { class: 'hint', id: 'clean-orphans-hint', text: 'Guard: refused anyway unless every server was read completely and the orphans are fewer than half of the catalogue. A deleted orphan is analyzed again if its file comes back. Unchecked: the CLEANING_CATALOGUE setting decides (off by default: orphans are only reported).' }),
      ),
      panel.element,
    );
    del.setAttribute('aria-describedby', 'clean-orphans-hint');
    return panel.stop;
  },
};
export default page;

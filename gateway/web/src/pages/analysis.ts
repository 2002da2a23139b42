/**
 * Analysis (CATALOGUE): start one analysis over every server (default first), follow it with a
 * progress bar and per-server counts, cancel it. No server selector: batch tasks run on all servers.
 * Per-run options (blank = the NUM_RECENT_ALBUMS / TOP_N_MOODS settings): `num_recent_albums` and
 * `top_n_moods` of POST /api/analysis/start (AnalysisStartRequest; the service answers 400 for bad values).
 */
import { taskRoutes, type AnalysisStartRequest } from '@polyphony/contracts';
import { call } from '../api';
import { h } from '../dom';
import type { Page } from '../page';
import { taskPanel } from '../task-panel';

/** The start body from the option fields: blank fields are left out (the setting applies). */
export function analysisStartBody(recentAlbums: string, topMoods: string): AnalysisStartRequest {
  const body: AnalysisStartRequest = {};
  if (recentAlbums.trim() !== '') body.num_recent_albums = Number(recentAlbums);
  if (topMoods.trim() !== '') body.top_n_moods = Number(topMoods);
  return body;
}

const page: Page = {
  title: 'Analysis',
  tag: 'CATALOGUE',
  render(root, { kickTasks, isAdmin }) {
    const recent = h('input', { type: 'number', id: 'analysis-recent-albums', min: '0', step: '1', placeholder: 'setting' });
    const moods = h('input', { type: 'number', id: 'analysis-top-moods', min: '1', max: '50', step: '1', placeholder: 'setting' });
    const panel = taskPanel({ kind: 'analysis', startLabel: 'Start analysis', isAdmin, kickTasks, start: () => call(taskRoutes.analysisStart, { body: analysisStartBody(recent.value, moods.value) }) });
    root.append(
      h('p', { text: 'Analysis runs over every configured server, one after the other, default server first. Songs already analyzed from another server are only mapped, never analyzed twice. The similarity index is rebuilt once at the end.' }),
      h(
        'details',
        { class: 'options' },
        h('summary', { text: 'Options for this run' }),
        h('div', { class: 'field' }, h('label', { for: 'analysis-recent-albums', text: 'Only the newest albums per server (0 = all; blank = the NUM_RECENT_ALBUMS setting)' }), recent),
        h('div', { class: 'field' }, h('label', { for: 'analysis-top-moods', text: 'Moods kept per song (1-50; blank = the TOP_N_MOODS setting)' }), moods),
      ),
      panel.element,
    );
    return panel.stop;
  },
};
export default page;

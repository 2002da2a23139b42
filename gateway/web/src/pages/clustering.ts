/**
 * Clustering (CATALOGUE, admin): algorithm and parameters, start over every server (one after the
 * other, default first), per-server results: playlists with their names and sizes.
 */
import { CLUSTERS_MAX, CLUSTERS_MIN, playlistRoutes } from '@polyphony/contracts';
import { call } from '../api';
import { field, h, numberInput, select, table } from '../dom';
import type { Page } from '../page';
import { taskPanel } from '../task-panel';
import type { TaskView } from '../task-logic';

interface Report {
  serverName?: string;
  serverId?: string;
  status?: string;
  songs?: number;
  clusters?: number;
  playlists?: string[];
  playlistSizes?: number[];
  tracksUnavailable?: number;
  algorithm?: string;
  score?: number;
  naming?: string;
  error?: string;
}

/** Per-server clustering reports (task details.clustering). */
function reports(t: TaskView): Node | null {
  const list = (Array.isArray(t.details?.clustering) ? t.details.clustering : []) as Report[];
  if (list.length === 0) return null;
  return h(
    'div',
    {},
    ...list.map((r) =>
      h(
        'section',
        { class: 'card' },
        h('h3', { text: `${r.serverName ?? r.serverId ?? '?'} · ${r.status ?? ''}` }),
        h('p', { class: 'muted small', text: [`${r.songs ?? 0} songs`, `${r.clusters ?? 0} clusters`, r.algorithm ? `algorithm ${r.algorithm}` : '', r.score !== undefined ? `score ${r.score.toFixed(3)}` : '', r.naming ? `names from ${r.naming === 'llm' ? 'the AI provider' : 'tags'}` : '', r.tracksUnavailable ? `${r.tracksUnavailable} unavailable tracks dropped` : ''].filter(Boolean).join(' · ') }),
        r.error ? h('p', { class: 'msg msg-error', text: r.error }) : null,
        r.playlists?.length ? table('Playlists', ['Name', 'Songs'], r.playlists.map((n, i) => [`${n}_automatic`, String(r.playlistSizes?.[i] ?? '')])) : h('p', { class: 'muted', text: 'No playlist written.' }),
      ),
    ),
  );
}

const page: Page = {
  title: 'Clustering',
  tag: 'CATALOGUE',
  admin: true,
  render(root, { kickTasks, isAdmin }) {
    const method = select([['kmeans', 'k-means'], ['gmm', 'Gaussian mixture'], ['dbscan', 'DBSCAN']], 'kmeans');
    const k = h('input', { type: 'number', min: String(CLUSTERS_MIN), max: String(CLUSTERS_MAX), placeholder: 'automatic' });
    const kMin = numberInput(CLUSTERS_MIN, CLUSTERS_MIN, CLUSTERS_MAX);
    const kMax = numberInput(40, CLUSTERS_MIN, CLUSTERS_MAX);
    const maxSongs = numberInput(200, 1, 5000);
    const minSongs = numberInput(3, 1, 1000);
    const topN = h('input', { type: 'number', min: '1', max: String(CLUSTERS_MAX), placeholder: 'all' });
    const runs = numberInput(6, 1, 20);
    const pca = numberInput(0, 0, 199);
    const eps = h('input', { type: 'number', min: '0.01', max: '1', step: '0.01', placeholder: 'searched' });
    const minSamples = h('input', { type: 'number', min: '2', max: '100', placeholder: 'searched' });
    const dbscanBox = h('fieldset', { hidden: true }, h('legend', { text: 'DBSCAN' }), field('Radius (cosine distance)', eps), field('Core size', minSamples));
    method.addEventListener('change', () => (dbscanBox.hidden = method.value !== 'dbscan'));
    const num = (i: HTMLInputElement) => (i.value.trim() === '' ? undefined : Number(i.value));
    const panel = taskPanel({
      kind: 'clustering',
      startLabel: 'Start clustering',
      isAdmin,
      kickTasks,
      details: reports,
      start: () =>
        call(playlistRoutes.clusteringStart, {
          body: {
            clustering_method: method.value as 'kmeans' | 'gmm' | 'dbscan',
            num_clusters: num(k),
            num_clusters_min: num(kMin),
            num_clusters_max: num(kMax),
            max_songs_per_playlist: num(maxSongs),
            min_songs_per_playlist: num(minSongs),
            top_n_playlists: num(topN),
            search_runs: num(runs),
            pca_components: num(pca),
            dbscan_eps: method.value === 'dbscan' ? num(eps) : undefined,
            dbscan_min_samples: method.value === 'dbscan' ? num(minSamples) : undefined,
          },
        }),
    });
    root.append(
      h('p', { text: 'Groups each server’s songs by sound and writes one "<name>_automatic" playlist per cluster on that server, replacing the previous ones. Servers run one after the other, default first.' }),
      h(
        'fieldset',
        {},
        h('legend', { text: 'Algorithm and parameters' }),
        h('div', { class: 'toolbar' }, field('Algorithm', method), field('Clusters (exact)', k, 'Blank: chosen by the search'), field('Fewest clusters', kMin), field('Most clusters', kMax)),
        h('div', { class: 'toolbar' }, field('Songs per playlist', maxSongs), field('Smallest playlist', minSongs), field('Keep largest N', topN), field('Search runs', runs), field('PCA components (0 = none)', pca)),
        dbscanBox,
      ),
      panel.element,
    );
    return panel.stop;
  },
};
export default page;

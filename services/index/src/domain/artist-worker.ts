/**
 * Worker-thread side of the artist mixture fit (`ArtistModel.fit` with workers, artist-model.ts): each message
 * `{points, counts, rows, dim, prior}` holds consecutive artists' songs (`counts[i]` songs each, their rows and
 * unit vectors concatenated); the answer is `{fits}` (one `fitArtistPoints` result per artist, same order) or
 * `{error}`. Messages are answered one at a time, in order.
 */
import { parentPort } from 'node:worker_threads';
import { fitArtistPoints } from './artist-model';

parentPort?.on('message', (task: { points: Float32Array; counts: Int32Array; rows: Int32Array; dim: number; prior: Float32Array }) => {
  try {
    const fits = [];
    let o = 0;
    for (const n of task.counts) {
      fits.push(fitArtistPoints(task.points, o * task.dim, task.rows.subarray(o, o + n), task.dim, task.prior));
      o += n;
    }
    parentPort?.postMessage({ fits });
  } catch (err) {
    parentPort?.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
});

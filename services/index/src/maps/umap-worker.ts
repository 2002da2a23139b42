/**
 * Worker-thread side of the map layout (`fitSampleInWorker` in umap-projection.ts): receives one sample
 * `{sample, m, dim}`, runs `fitSample` (no event loop to share here) and answers `{embedding}` (2 floats per
 * sample row, transferred) or `{error}`.
 */
import { parentPort } from 'node:worker_threads';
import { fitSample } from './umap-projection';

parentPort?.once('message', (task: { sample: Float32Array; m: number; dim: number }) => {
  fitSample(task.sample, task.m, task.dim)
    .then((embedding) => parentPort?.postMessage({ embedding }, [embedding.buffer as ArrayBuffer]))
    .catch((err: unknown) => parentPort?.postMessage({ error: err instanceof Error ? err.message : String(err) }));
});

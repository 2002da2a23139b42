import { SyntheticMixture } from '@polyphony/testkit';
import { IvfBuildAbortedError } from './errors';
import { buildIvfIndex, type VectorBatch } from './ivf-build';

function batches(count: number): VectorBatch[] {
  const out: VectorBatch[] = [];
  for (const b of new SyntheticMixture({ seed: 5 }).batches(count, 3000)) out.push({ ids: b.ids, vectors: b.vectors });
  return out;
}

describe('parallel IVF build (worker_threads over a SharedArrayBuffer)', () => {
  it('gives the same centroids and cells as the in-thread build (two-level training, tree assignment)', async () => {
    const data = batches(6000);
    const serial = await buildIvfIndex(data, { expectedCount: 6000 });
    const parallel = await buildIvfIndex(data, { expectedCount: 6000, workers: 2 });
    expect(serial.report.nlist).toBeGreaterThanOrEqual(256); // two-level path
    expect(parallel.report.nlist).toBe(serial.report.nlist);
    expect(parallel.report.trainingDotProducts).toBe(serial.report.trainingDotProducts);
    for (let c = 0; c < serial.report.nlist; c += 37) {
      expect([...parallel.index.centroid(c)]).toEqual([...serial.index.centroid(c)]);
      expect([...parallel.index.cellRows(c)]).toEqual([...serial.index.cellRows(c)]);
    }
    for (const r of [0, 1, 999, 5999]) expect(parallel.index.cellOf(r)).toBe(serial.index.cellOf(r));
  });

  it('an aborted parallel build rejects and leaves no worker running', async () => {
    const abort = new AbortController();
    let abortedAt = 0;
    const build = buildIvfIndex(batches(6000), {
      expectedCount: 6000,
      workers: 2,
      signal: abort.signal,
      onProgress: (p) => {
        if (p.phase === 'assign' && !abortedAt) {
          abortedAt = Date.now();
          abort.abort();
        }
      },
    });
    await expect(build).rejects.toThrow(IvfBuildAbortedError);
    expect(abortedAt).toBeGreaterThan(0);
    expect(Date.now() - abortedAt).toBeLessThan(3000); // the running tasks are abandoned, not awaited
  });
});

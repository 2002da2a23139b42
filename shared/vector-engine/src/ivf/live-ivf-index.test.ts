import { SyntheticMixture } from '@polyphony/testkit';
import { IvfBuildAbortedError, IvfNotReadyError } from './errors';
import { VectorBatch, buildIvfIndex } from './ivf-build';
import { LiveIvfIndex } from './live-ivf-index';

const COUNT = 1500;

function batches(prefix: string, stream: number): VectorBatch[] {
  const out: VectorBatch[] = [];
  for (const b of new SyntheticMixture({ seed: 99 }).batches(COUNT, 250, stream)) {
    out.push({ ids: b.ids.map((id) => `${prefix}:${id}`), vectors: b.vectors });
  }
  return out;
}

/** Ids of the 5 nearest rows to row 0 of the live generation, plus that generation's number. */
function probe(live: LiveIvfIndex): { generation: number; ids: string[] } {
  const index = live.require();
  return { generation: index.generation, ids: index.searchByRow(0, { k: 5 }).map((h) => index.idOf(h.row)) };
}

describe(LiveIvfIndex.name, () => {
  const setA = batches('a', 1);
  const setB = batches('b', 2);

  it('When nothing was published yet, then require() throws IvfNotReadyError', () => {
    expect(() => new LiveIvfIndex().require()).toThrow(IvfNotReadyError);
  });

  it('When queries run during a rebuild, then the old generation answers them until the swap', async () => {
    const live = new LiveIvfIndex((await buildIvfIndex(setA, { generation: 1 })).index);
    const during: { generation: number; ids: string[]; phase: string }[] = [];
    let finished = false;
    const timerAnswers: number[] = [];
    async function* source(): AsyncGenerator<VectorBatch> {
      for (const b of setB) {
        during.push({ ...probe(live), phase: 'ingest' });
        yield b;
      }
    }
    const rebuilding = live.rebuild(source(), {
      sliceMs: 2,
      onProgress: (p) => {
        if (p.phase === 'train' && timerAnswers.length === 0) {
          // A request arriving while k-means runs: it must be served before the build ends.
          setTimeout(() => {
            if (!finished) timerAnswers.push(probe(live).generation);
          }, 0);
        }
      },
      onCell: (cellId) => {
        if (cellId === 0) during.push({ ...probe(live), phase: 'emit' });
      },
    });
    expect(live.isBuilding).toBe(true);
    const result = await rebuilding;
    finished = true;
    expect(during.length).toBe(setB.length + 1);
    for (const d of during) {
      expect(d.generation).toBe(1);
      expect(d.ids.every((id) => id.startsWith('a:'))).toBe(true);
    }
    expect(timerAnswers).toEqual([1]);
    expect(result.index.generation).toBe(2);
    expect(live.current()).toBe(result.index);
    const after = probe(live);
    expect(after.generation).toBe(2);
    expect(after.ids.every((id) => id.startsWith('b:'))).toBe(true);
    expect(live.isBuilding).toBe(false);
  });

  it('When a rebuild fails or is aborted, then the previous generation stays live', async () => {
    const initial = (await buildIvfIndex(setA, { generation: 1 })).index;
    const live = new LiveIvfIndex(initial);
    async function* failing(): AsyncGenerator<VectorBatch> {
      yield setB[0]!;
      throw new Error('database connection lost');
    }
    await expect(live.rebuild(failing())).rejects.toThrow('database connection lost');
    expect(live.current()).toBe(initial);
    const controller = new AbortController();
    const aborted = live.rebuild(setB, { signal: controller.signal, sliceMs: 1, onProgress: (p) => p.phase === 'train' && controller.abort() });
    await expect(aborted).rejects.toThrow(IvfBuildAbortedError);
    expect(live.current()).toBe(initial);
    expect(live.isBuilding).toBe(false);
  });

  it('When two rebuilds are requested at once, then they run one after the other and the last one wins', async () => {
    const live = new LiveIvfIndex();
    const first = live.rebuild(setA);
    const second = live.rebuild(setB);
    const [r1, r2] = await Promise.all([first, second]);
    expect(r1.index.generation).toBe(1);
    expect(r2.index.generation).toBe(2);
    expect(live.current()).toBe(r2.index);
  });
});

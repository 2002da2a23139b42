/**
 * The live library on an empty index (issue 35, gap 1), with fake ports: a burst of songs requests one full build after
 * the debounce; none while a full analysis run is live, while a build runs anywhere, or while the run state cannot be
 * read (asked again at the next recheck); the songs stay pending until a generation holds them.
 */
import type { SnapshotTrackBytes } from '@polyphony/contracts';
import { createLogger } from '@polyphony/platform';
import { mixturePoints } from '../../__tests__/mixture-points';
import { buildIvfIndex } from '@polyphony/vector-engine';
import { ArtistLinks, emptyGeneration, IndexState, type Generation } from '../../core/generation';
import { GenerationMaps } from '../../maps/generation-maps';
import { TrackMetaStore } from '../../maps/track-meta-store';
import type { DeltaRecord } from './ports';
import { LiveLibraryService, type LiveLibraryDeps } from './live-library.service';
import { DEFAULT_LIVE_LIBRARY } from './settings';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(ok: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(10);
  }
}

function subject(over: Partial<LiveLibraryDeps> = {}) {
  const requests: string[] = [];
  const deps: LiveLibraryDeps = {
    state: new IndexState(emptyGeneration()),
    store: { append: () => Promise.reject(new Error('not expected')), after: () => Promise.resolve([]) },
    catalogue: { tracksByIds: () => Promise.reject(new Error('not expected: nothing to append to')) },
    tracks: { upsertSnapshot: () => Promise.reject(new Error('not expected')), metadata: () => Promise.resolve(new Map()) },
    publish: () => Promise.resolve(),
    requestRebuild: (reason) => requests.push(reason),
    rebuildBusy: () => false,
    logger: createLogger({ service: 'live-test', level: 'error' }),
    settings: { ...DEFAULT_LIVE_LIBRARY, debounceMs: 30, recheckMs: 40 },
    ...over,
  };
  return { live: new LiveLibraryService(deps), requests };
}

describe('live library: an empty index', () => {
  it('When a burst of songs arrives and no run is live, then one full build is requested and the songs stay pending', async () => {
    let asked = 0;
    const requested: string[] = [];
    const { live, requests } = subject({
      analysisRunLive: async () => {
        asked++;
        return false;
      },
      // The requested build runs from the moment it is requested (here or on another replica).
      rebuildBusyAnywhere: async () => requested.length > 0,
      requestRebuild: (reason) => requested.push(reason),
    });
    for (let i = 0; i < 50; i++) live.noteAdded(`song-${i}`);
    await until(() => requested.length > 0);
    await sleep(200);
    expect(requested).toEqual(['live library: first songs of an empty index']);
    expect(requests).toHaveLength(0);
    expect(asked).toBe(1);
    expect(live.pendingCount).toBe(50);
    expect(live.firstBuildsRequested).toBe(1);
    live.stop();
  });

  it('When a full analysis run is live, or its state cannot be read, then no build is requested; once it is not live, one is', async () => {
    let runState: 'live' | 'error' | 'idle' = 'live';
    const { live, requests } = subject({
      analysisRunLive: async () => {
        if (runState === 'error') throw new Error('analysis worker unreachable');
        return runState === 'live';
      },
    });
    live.noteAdded('a');
    live.noteAdded('b');
    await sleep(200);
    expect(requests).toHaveLength(0);
    runState = 'error';
    await sleep(200);
    expect(requests).toHaveLength(0);
    runState = 'idle';
    await until(() => requests.length > 0);
    expect(live.pendingCount).toBe(2);
    live.stop();
  });
});

describe('live library: drift after each batch', () => {
  it('When batches arrive, then the probe recall is measured on the first and again only once probeEvery of the built rows was appended; cell imbalance and growth every time', async () => {
    const DIM = 16;
    const BUILT = 2000;
    const vectorsOf = (count: number, streamSeed: number) => mixturePoints(count, streamSeed, { dim: DIM, clusters: 8, intrinsicDim: 5, seed: 6 });
    const built = vectorsOf(BUILT, 1);
    const index = (await buildIvfIndex([{ ids: built.ids, vectors: built.vectors }], { expectedCount: BUILT, nlist: 16, dim: DIM })).index;
    const gen: Generation = { ...emptyGeneration(DIM), generation: 3, index, links: new ArtistLinks(), coords: new Float32Array(BUILT * 2), maps: new GenerationMaps(index), meta: new TrackMetaStore(BUILT) };
    // The catalogue and the stores, in memory.
    const catalogueRows = new Map<string, SnapshotTrackBytes>();
    const stored: DeltaRecord[] = [];
    const { live } = subject({
      state: new IndexState(gen),
      catalogue: { tracksByIds: async (ids: readonly string[]) => ids.flatMap((id) => (catalogueRows.has(id) ? [catalogueRows.get(id)!] : [])) },
      tracks: { upsertSnapshot: async (t: readonly SnapshotTrackBytes[]) => ({ written: t.length, skipped: [] }), metadata: async () => new Map() },
      store: {
        append: async (generation, itemIds, vectors, mappings, mappingSeq) => {
          stored.push({ seq: stored.length + 1, generation, itemIds: [...itemIds], vectors, mappings: mappings.map((m) => [...m]), mappingSeq });
          return stored.length;
        },
        after: async (generation, seq) => stored.filter((r) => r.generation === generation && r.seq > seq),
      },
      settings: { ...DEFAULT_LIVE_LIBRARY, debounceMs: 10_000, drift: { ...DEFAULT_LIVE_LIBRARY.drift, probeEvery: 0.01 } },
    } as Partial<LiveLibraryDeps>);
    const add = async (count: number, streamSeed: number) => {
      const p = vectorsOf(count, streamSeed);
      p.ids.forEach((itemId, i) => {
        catalogueRows.set(itemId, { itemId, vector: new Uint8Array(p.vectors.slice(i * DIM, (i + 1) * DIM).buffer), title: itemId, artist: 'A', mappings: [] } as unknown as SnapshotTrackBytes);
        live.noteAdded(itemId);
      });
      await live.flush();
      return live.lastDrift!;
    };
    // 1% of 2000 built rows = 20 songs between two probe measures: measured at 2005 rows, not at 2010, again at 2026.
    const first = await add(5, 2);
    const second = await add(5, 3);
    const third = await add(16, 4);
    expect([first.probed, second.probed, third.probed]).toEqual([true, false, true]);
    expect(second.probeRecall).toBe(first.probeRecall);
    expect([first.growth, second.growth, third.growth].map((g) => Math.round(g * BUILT))).toEqual([5, 10, 26]);
    expect(first.probes).toBe(100);
    live.stop();
  });
});

import type { SnapshotTrackBytes } from '@polyphony/contracts';
import { createLogger } from '@polyphony/platform';
import { mulberry32 } from '@polyphony/vectors';
import type { IndexState } from '../core/generation';
import type { CataloguePort } from '../core/ports';
import type { MapFollower } from '../maps/generation-maps';
import type { SnapshotPageBytes } from '../maps/wire';
import { BuildRun, type BuildHost } from './build-run';
import type { GenerationStore, TrackCopy } from './ports';
import { DEFAULT_DRIFT } from './live/drift';

/**
 * The build fed from the snapshot pages (SnapshotFeed) must END when the snapshot stops after page 1: the fed IVF
 * build waits for page 2 inside the feed, so an error handler that awaits it without failing the feed first never
 * returns (issue 29: the coordination never ended, its lease was renewed forever, TaskHost.stop() never returned).
 */

const DIM = 200;

function track(i: number, rnd: () => number): SnapshotTrackBytes {
  const v = new Float32Array(DIM);
  for (let d = 0; d < DIM; d++) v[d] = rnd() - 0.5;
  return {
    itemId: `song-${String(i).padStart(5, '0')}`,
    vector: new Uint8Array(v.buffer),
    embedderVersion: 'v1',
    title: `Song ${i}`,
    artist: `Artist ${i % 7}`,
    album: null,
    albumArtist: null,
    year: null,
    rating: null,
    durationSeconds: 200,
    tempo: null,
    key: null,
    scale: null,
    energy: null,
    learned: null,
    hasLyrics: false,
    mappings: [{ serverId: 's1', providerId: `p${i}`, artistId: null }],
  };
}

/** A host whose catalogue answers page 1 (50 songs of 150, `next` set) and then `secondPage()`. */
function hostWith(secondPage: () => Promise<SnapshotPageBytes>, progress: BuildHost['progress']): { host: BuildHost; pagesAsked: () => number } {
  const rnd = mulberry32(7);
  const first: SnapshotPageBytes = { tracks: Array.from({ length: 50 }, (_, i) => track(i, rnd)), next: 'song-00049', total: 150 };
  let asked = 0;
  const catalogue = {
    snapshotPage: (after: string | null) => {
      asked++;
      return after === null ? Promise.resolve(first) : secondPage();
    },
  } as unknown as CataloguePort;
  const tracks = { upsertSnapshot: async (t: readonly SnapshotTrackBytes[]) => ({ written: t.length, skipped: [] }) } as unknown as TrackCopy;
  const generations = { saveTrained: async () => undefined, saveCells: async () => undefined } as unknown as GenerationStore;
  const state = { current: () => ({ generation: 0, index: { size: 0 } }) } as unknown as IndexState;
  const host: BuildHost = {
    catalogue,
    tracks,
    generations,
    state,
    maps: {} as MapFollower,
    logger: createLogger({ service: 'build-run-test', level: 'error' }),
    vectors: { mode: 'float', pqM: 25, buildWorkers: 0 },
    settings: { snapshotPageSize: 50, vectorBatchSize: 2000, snapshotWriters: 2, cellFlushBytes: 4 << 20, feedFromSnapshot: true, reuseMaxChanged: 0, reuseMaxCellImbalance: DEFAULT_DRIFT.maxCellImbalance, reuseMaxDrift: 0.25 },
    note: () => undefined,
    progress,
  };
  return { host, pagesAsked: () => asked };
}

/** Settles `p` or reports that it did not within `ms` (a hang is the failure this suite is about). */
async function settledWithin<T>(p: Promise<T>, ms: number): Promise<{ settled: true; error?: Error } | { settled: false }> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<{ settled: false }>((r) => (timer = setTimeout(() => r({ settled: false }), ms)));
  try {
    return await Promise.race([p.then(() => ({ settled: true as const }), (error: Error) => ({ settled: true as const, error })), hung]);
  } finally {
    clearTimeout(timer);
  }
}

describe('BuildRun: a snapshot that stops after page 1 ends the build fed from it', () => {
  test('When the build is aborted while page 1 progress is written, then run() rejects (aborted) instead of waiting for page 2', async () => {
    const abort = new AbortController();
    let page2Asked = false;
    const { host } = hostWith(
      () => {
        page2Asked = true;
        // The catalogue is slow: page 2 comes only after the stop.
        return new Promise<SnapshotPageBytes>(() => undefined);
      },
      async (_percent, message) => {
        // The stop lands while page 1's progress is being written (the reproduction of the hang: a slow write), after
        // the fed build has ingested page 1 and waits in the feed for page 2.
        if (message.startsWith('catalogue snapshot')) {
          await new Promise((r) => setTimeout(r, 300));
          abort.abort();
        }
      },
    );
    const run = new BuildRun(host, 1, abort.signal).run();
    const outcome = await settledWithin(run, 10_000);
    expect(page2Asked).toBe(true);
    expect(outcome.settled).toBe(true);
    expect(outcome.settled && outcome.error?.message).toMatch(/aborted/);
  });

  test('When catalogue page 2 fails, then run() rejects with that error instead of waiting for page 2 forever', async () => {
    // The failure comes after the fed build has ingested page 1 and waits in the feed for page 2.
    const failLater = () => new Promise<SnapshotPageBytes>((_, reject) => setTimeout(() => reject(new Error('catalogue unavailable (503)')), 300));
    const { host, pagesAsked } = hostWith(failLater, async () => undefined);
    const run = new BuildRun(host, 1, new AbortController().signal).run();
    const outcome = await settledWithin(run, 10_000);
    expect(pagesAsked()).toBe(2);
    expect(outcome.settled).toBe(true);
    expect(outcome.settled && outcome.error?.message).toBe('catalogue unavailable (503)');
  });
});

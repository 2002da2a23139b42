/**
 * The live library on an empty index (issue 35, gap 1), with fake ports: a burst of songs requests one full build after
 * the debounce; none while a full analysis run is live, while a build runs anywhere, or while the run state cannot be
 * read (asked again at the next recheck); the songs stay pending until a generation holds them.
 */
import { createLogger } from '@polyphony/platform';
import { emptyGeneration, IndexState } from '../../core/generation';
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

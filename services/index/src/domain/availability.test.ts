import { createLogger } from '@polyphony/platform';
import { AvailabilityCache } from './availability';
import { emptyGeneration, type Generation } from './generation';
import { buildIvfIndex } from './ivf/ivf-build';
import type { CataloguePort } from './ports';

const logger = createLogger({ service: 'test', level: 'error' });

async function generation(n: number, number = 1): Promise<Generation> {
  const ids = Array.from({ length: n }, (_, i) => `id-${i}`);
  const vectors = Float32Array.from({ length: n * 4 }, (_, i) => 1 + (i % 7));
  const { index } = await buildIvfIndex([{ ids, vectors }], { dim: 4, generation: number });
  return { ...emptyGeneration(4), generation: number, index };
}

function catalogue(available: () => string[]) {
  let release: (() => void) | undefined;
  const port: CataloguePort & { calls: number; hold: boolean; version: number } = {
    calls: 0,
    hold: false,
    version: 1,
    async availability() {
      port.calls++;
      const ids = available();
      if (port.hold) await new Promise<void>((r) => (release = r));
      return { version: port.version, itemIds: ids };
    },
    availabilityVersion: async () => port.version,
    resolveArtist: () => Promise.reject(new Error('unused')),
    mapArtists: () => Promise.reject(new Error('unused')),
    snapshotPage: () => Promise.reject(new Error('unused')),
    resolveInput: () => Promise.reject(new Error('unused')),
    mapOutput: () => Promise.reject(new Error('unused')),
  };
  return { port, release: () => release?.() };
}

describe('AvailabilityCache', () => {
  it('When a mask is asked twice, then the catalogue is called once; concurrent loads are coalesced', async () => {
    const gen = await generation(10);
    const { port } = catalogue(() => ['id-1', 'id-3', 'unknown']);
    const cache = new AvailabilityCache(port, logger, { minReloadIntervalMs: 0 });
    const [a, b] = await Promise.all([cache.maskFor('s1', gen), cache.maskFor('s1', gen)]);
    expect(a).toBe(b);
    expect(a.toRows()).toEqual(Int32Array.from([1, 3]));
    await cache.maskFor('s1', gen);
    expect(port.calls).toBe(1);
  });

  it('When the server is invalidated, then only its mask reloads; invalidating all reloads every server', async () => {
    const gen = await generation(10);
    let ids = ['id-1'];
    const { port } = catalogue(() => ids);
    const cache = new AvailabilityCache(port, logger, { minReloadIntervalMs: 0 });
    await cache.maskFor('s1', gen);
    await cache.maskFor('s2', gen);
    ids = ['id-2'];
    cache.invalidate('s1');
    expect((await cache.maskFor('s1', gen)).toRows()).toEqual(Int32Array.from([2]));
    expect((await cache.maskFor('s2', gen)).toRows()).toEqual(Int32Array.from([1]));
    expect(port.calls).toBe(3);
    cache.invalidate();
    expect((await cache.maskFor('s2', gen)).toRows()).toEqual(Int32Array.from([2]));
  });

  it('When an invalidation arrives during a load, then the loaded mask is kept as stale and reloaded next time', async () => {
    const gen = await generation(10);
    const { port, release } = catalogue(() => ['id-1']);
    const cache = new AvailabilityCache(port, logger, { minReloadIntervalMs: 0 });
    port.hold = true;
    const pending = cache.maskFor('s1', gen);
    await new Promise((r) => setImmediate(r));
    cache.invalidate('s1');
    release();
    await pending;
    port.hold = false;
    await cache.maskFor('s1', gen);
    expect(port.calls).toBe(2);
  });

  it('When invalidations come faster than the minimum reload interval, then the cached mask is served meanwhile', async () => {
    const gen = await generation(10);
    const { port } = catalogue(() => ['id-1']);
    const cache = new AvailabilityCache(port, logger, { minReloadIntervalMs: 60_000 });
    await cache.maskFor('s1', gen);
    cache.invalidate('s1');
    await cache.maskFor('s1', gen);
    expect(port.calls).toBe(1);
  });

  it('When a mask ages, then it is revalidated with the change counter and reloaded only when the counter moved', async () => {
    const gen = await generation(10);
    let ids = ['id-1'];
    const { port } = catalogue(() => ids);
    const cache = new AvailabilityCache(port, logger, { minReloadIntervalMs: 0, maxAgeMs: 0 });
    await cache.maskFor('s1', gen);
    ids = ['id-2'];
    expect((await cache.maskFor('s1', gen)).toRows()).toEqual(Int32Array.from([1]));
    expect(cache.revalidations).toBe(1);
    expect(port.calls).toBe(1);
    port.version = 2;
    expect((await cache.maskFor('s1', gen)).toRows()).toEqual(Int32Array.from([2]));
    expect(port.calls).toBe(2);
  });

  it('When the generation changes, then the mask is rebuilt for the new rows; without a server nothing is available', async () => {
    const g1 = await generation(10, 1);
    const g2 = await generation(20, 2);
    const { port } = catalogue(() => ['id-15']);
    const cache = new AvailabilityCache(port, logger, { minReloadIntervalMs: 0 });
    expect((await cache.maskFor('s1', g1)).count).toBe(0);
    expect((await cache.maskFor('s1', g2)).toRows()).toEqual(Int32Array.from([15]));
    const none = await cache.maskFor(undefined, g2);
    expect(none.count).toBe(0);
    expect(none.size).toBe(20);
  });
});

import { AppError } from '@polyphony/platform';
import { AvailabilityMask } from '@polyphony/vector-engine';
import type { Generation } from './generation';
import { LIBRARY_SCOPE_CACHE_MS, LibraryFilter, LibraryScopes, UNLIMITED_STALE_MS, intersectMasks, type LibraryScopeSource } from './library-scope';
import { RequestScope } from './scope';

/** A generation of `ids` (row = position) whose server `s1` maps row r to provider id `p<r>` for the rows in `onServer`. */
function fakeGeneration(ids: string[], onServer: number[]): Generation {
  const rows = new Map(ids.map((id, r) => [id, r]));
  const server = AvailabilityMask.fromRows(ids.length, onServer);
  return {
    index: { size: ids.length, rowOf: (id: string) => rows.get(id) ?? -1, idOf: (r: number) => ids[r]! },
    maps: {
      mask: (s: string | undefined) => (s === 's1' ? server : AvailabilityMask.fromRows(ids.length, [])),
      providerOf: (s: string | undefined, r: number) => (s === 's1' && server.has(r) ? `p${r}` : undefined),
      rowOfProvider: () => -1,
    },
    meta: { get: (r: number) => ({ title: `T${r}`, artist: 'A', album: null, albumArtist: null, moodVector: '', otherFeatures: '' }) },
  } as unknown as Generation;
}

/** A source whose answers the test sets, counting calls. */
function source(scope: () => Promise<{ limited: boolean; libraries: string[] | null }>, items: Record<string, string[]> = {}) {
  const calls = { scope: 0, items: 0 };
  const s: LibraryScopeSource = {
    libraryScope: () => {
      calls.scope++;
      return scope();
    },
    libraryItems: (_serverId, libs) => {
      calls.items++;
      return Promise.resolve({ itemIds: libs.flatMap((l) => items[l] ?? []), unknownLibrary: 0 });
    },
  };
  return { s, calls };
}

describe('LibraryScopes (issue 34: results limited to the libraries a user account sees)', () => {
  const gen = fakeGeneration(['a', 'b', 'c', 'd', 'e'], [0, 1, 2, 3]);

  it('When the user has not asked for the limit, then there is no filter and the registry is asked once per cache period', async () => {
    let t = 0;
    const { s, calls } = source(async () => ({ limited: false, libraries: null }));
    const scopes = new LibraryScopes(s, LIBRARY_SCOPE_CACHE_MS, () => t);
    expect(await scopes.filterFor('s1', 'u1')).toBeUndefined();
    expect(await scopes.filterFor('s1', 'u1')).toBeUndefined();
    expect(calls.scope).toBe(1);
    t += LIBRARY_SCOPE_CACHE_MS;
    expect(await scopes.filterFor('s1', 'u1')).toBeUndefined();
    expect(calls.scope).toBe(2);
    expect(calls.items).toBe(0);
  });

  it('When the user is limited, then the filter holds the songs of their libraries only and a request ranks over server AND libraries', async () => {
    const { s, calls } = source(async () => ({ limited: true, libraries: ['20', '10'] }), { '10': ['a', 'e'], '20': ['c'], '30': ['b'] });
    const scopes = new LibraryScopes(s);
    const filter = await scopes.filterFor('s1', 'u1');
    expect(filter?.libraries).toEqual(['10', '20']);
    // 'e' is in a library of the user but not on the server (row 4 is not in the server mask): it stays out.
    const scope = new RequestScope(gen, 's1', { tracks: {} as never }, 'u1', filter);
    expect(Array.from(scope.maskNow().toRows())).toEqual([0, 2]);
    expect(scope.presentNow([0, 1, 2, 3].map((row) => ({ row, distance: 0.1 }))).map((r) => r.item_id)).toEqual(['p0', 'p2']);
    expect([scope.providerOf('a'), scope.providerOf('b')]).toEqual(['p0', undefined]);
    // The same library set is one catalogue call for every user and request within the cache period.
    await scopes.filterFor('s1', 'u2');
    expect(calls.items).toBe(1);
    // Without a filter the same scope is the server's mask, as before.
    expect(Array.from(new RequestScope(gen, 's1', { tracks: {} as never }).maskNow().toRows())).toEqual([0, 1, 2, 3]);
  });

  it('When the registry fails, then a user who had not asked keeps the unlimited answer for a while, and a limited user gets the error', async () => {
    let t = 0;
    let answer: () => Promise<{ limited: boolean; libraries: string[] | null }> = async () => ({ limited: false, libraries: null });
    const { s } = source(() => answer(), { '10': ['a'] });
    const scopes = new LibraryScopes(s, LIBRARY_SCOPE_CACHE_MS, () => t);
    await scopes.filterFor('s1', 'free');
    answer = async () => ({ limited: true, libraries: ['10'] });
    await scopes.filterFor('s1', 'bound');
    const down = new AppError('library_scope_unavailable', 'the media server did not answer', 502);
    answer = () => Promise.reject(down);
    t += LIBRARY_SCOPE_CACHE_MS;
    expect(await scopes.filterFor('s1', 'free')).toBeUndefined();
    await expect(scopes.filterFor('s1', 'bound')).rejects.toBe(down);
    await expect(scopes.filterFor('s1', 'never-seen')).rejects.toBe(down);
    t += UNLIMITED_STALE_MS;
    await expect(scopes.filterFor('s1', 'free')).rejects.toBe(down);
  });

  it('When two masks are intersected, then only rows in both remain; masks of different sizes are refused', () => {
    const a = AvailabilityMask.fromRows(70, [0, 33, 64, 69]);
    const b = AvailabilityMask.fromRows(70, [33, 64, 65]);
    expect(Array.from(intersectMasks(a, b).toRows())).toEqual([33, 64]);
    expect(Array.from(a.toRows())).toEqual([0, 33, 64, 69]);
    expect(() => intersectMasks(a, AvailabilityMask.fromRows(71, []))).toThrow(RangeError);
  });

  it('When a filter is used over a generation, then songs absent from it are skipped and the masks are built once per generation and server mask', () => {
    const f = new LibraryFilter('s1', ['10'], ['b', 'zz', 'd']);
    const m = f.rowsOf(gen);
    expect(Array.from(m.toRows())).toEqual([1, 3]);
    expect(f.rowsOf(gen)).toBe(m);
    const server = gen.maps.mask('s1');
    const within = f.within(gen, server);
    expect(Array.from(within.toRows())).toEqual([1, 3]);
    expect(f.within(gen, server)).toBe(within);
  });
});

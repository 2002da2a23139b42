import { AppError, InMemoryBus, createLogger } from '@polyphony/platform';
import type { MediaServerClient, ProviderTrack } from '@polyphony/media-servers';
import type { RemovalCheckResponse } from '@polyphony/contracts';
import { ChangeWatchService, type WatchCataloguePort, type WatchRunStore } from './change-watch.service';
import type { ChangeWatchStore, RegistryPort, ServerInfo } from './ports';

const track = (id: string, album = 'A'): ProviderTrack => ({ id, title: `T${id}`, artist: 'X', album, durationSeconds: 180 });

function server(over: Partial<ServerInfo> = {}): ServerInfo {
  return { id: 's1', name: 'S', type: 'navidrome', isDefault: true, connection: { type: 'navidrome', creds: {} }, changeDetection: { mode: 'poll', intervalSeconds: 30, pushTokenSha256: null }, ...over };
}

/** A media server whose token and newest albums the test sets. */
function fakeClient(state: { token: string; albums: ProviderTrack[][] }): MediaServerClient {
  return {
    libraryChangeToken: async () => state.token,
    async *iterateRecentAlbumTracks(n: number) {
      for (const a of state.albums.slice(0, n)) yield a;
    },
  } as unknown as MediaServerClient;
}

function setup(opts: { mapped?: string[]; stamps?: Record<string, string>; inFlight?: string[]; removal?: Partial<RemovalCheckResponse>; maxTracksPerCheck?: number } = {}) {
  const bus = new InMemoryBus();
  const published: Array<{ taskId: string; track: { id: string; fileStamp?: string }; changedFile?: boolean }> = [];
  bus.publish = (async (_key: string, payload: unknown) => {
    published.push(payload as (typeof published)[number]);
  }) as InMemoryBus['publish'];
  const mapped = new Set(opts.mapped ?? []);
  const stampLookups: string[][] = [];
  const catalogue: WatchCataloguePort = {
    mappedProviderIds: async (_s, ids) => new Set(ids.filter((i) => mapped.has(i))),
    // The catalogue's rule (mapping.repository lookupChanged): mapped, a stored stamp, and a different listed one.
    changedProviderIds: async (_s, tracks) => {
      stampLookups.push(tracks.map((t) => t.id));
      return new Set(tracks.filter((t) => mapped.has(t.id) && opts.stamps?.[t.id] !== undefined && t.fileStamp !== undefined && opts.stamps[t.id] !== t.fileStamp).map((t) => t.id));
    },
    removalCheck: async () => ({ fetched: 10, storedMappings: 10, pruned: 0, refused: false, unmapped: [], unmappedTotal: 0, changed: [], changedTotal: 0, stampsFilled: 0, ...opts.removal }),
  };
  const queued: string[] = [];
  const runs: WatchRunStore = {
    isExcluded: async () => new Set(),
    enqueue: async (_r, _s, ids) => {
      queued.push(...ids);
      return ids;
    },
    markPublished: async () => undefined,
  };
  const store = { inFlight: async (_s: string, ids: string[]) => new Set(ids.filter((i) => opts.inFlight?.includes(i))) } as unknown as ChangeWatchStore;
  const registry: RegistryPort = { listServers: async () => [server()], getServer: async () => server() };
  const state = { token: 't1', albums: [] as ProviderTrack[][] };
  const watch = new ChangeWatchService(store, runs, registry, catalogue, () => fakeClient(state), bus, createLogger({ service: 'test', level: 'error' }), { maxTracksPerCheck: opts.maxTracksPerCheck });
  return { watch, state, published, queued, stampLookups };
}

describe(ChangeWatchService.name, () => {
  it('When a server is checked the first time, then its token is the baseline and nothing is analysed', async () => {
    const { watch, state, published } = setup();
    state.albums = [[track('1')]];
    const r = await watch.check(server(), null);
    expect(r).toMatchObject({ token: 't1', baseline: true, changed: false, added: 0 });
    expect(published).toHaveLength(0);
  });

  it('When the token did not move, then no album is read and nothing is published', async () => {
    const { watch, state, published } = setup();
    state.albums = [[track('1')]];
    expect(await watch.check(server(), 't1')).toMatchObject({ changed: false, added: 0 });
    expect(published).toHaveLength(0);
  });

  it('When the library changed, then the unmapped, not queued tracks of the newest albums are published under one batch id, stopping after 3 known albums', async () => {
    const { watch, state, published } = setup({ mapped: ['2', 'k1', 'k2', 'k3'], inFlight: ['3'], removal: { pruned: 2 } });
    state.token = 't2';
    state.albums = [[track('1'), track('2'), track('3')], [track('k1')], [track('k2')], [track('k3')], [track('old')]];
    const r = await watch.check(server(), 't1');
    expect(r).toMatchObject({ token: 't2', changed: true, added: 1, removed: 2 });
    expect(published.map((p) => p.track.id)).toEqual(['1']);
    expect(published[0]!.taskId).toBe(r.batchId);
  });

  it('When the removal check lists unmapped files, then they are published too, at most maxTracksPerCheck per change (the rest counted as left over)', async () => {
    const { watch, state, published } = setup({ maxTracksPerCheck: 2, removal: { unmapped: [track('a'), track('b'), track('c')], unmappedTotal: 5 } });
    state.token = 't2';
    const r = await watch.check(server(), 't1');
    expect(published.map((p) => p.track.id)).toEqual(['a', 'b']);
    expect(r).toMatchObject({ added: 2, leftOver: 1 + 2 });
  });

  it('When a mapped file of the newest albums lists another stamp than the stored one (changed in place), then it is published with changedFile; same stamps and unstamped files are not', async () => {
    const stamped = (id: string, stamp?: string): ProviderTrack => ({ ...track(id), ...(stamp ? { fileStamp: stamp } : {}) });
    const { watch, state, published } = setup({ mapped: ['m1', 'm2', 'm3'], stamps: { m1: 'size:10', m2: 'size:20', m3: 'size:30' } });
    state.token = 't2';
    state.albums = [[stamped('new', 'size:5'), stamped('m1', 'size:11'), stamped('m2', 'size:20'), stamped('m3')]];
    const r = await watch.check(server(), 't1');
    expect(published.map((p) => [p.track.id, p.changedFile === true, p.track.fileStamp])).toEqual([
      ['new', false, 'size:5'],
      ['m1', true, 'size:11'],
    ]);
    expect(r).toMatchObject({ added: 1, changedFiles: 1 });
    expect(published.every((p) => p.taskId === r.batchId)).toBe(true);
  });

  it('When the removal check names changed files, then they are re-analysed with changedFile unless already queued, within maxTracksPerCheck', async () => {
    const changed = [{ ...track('c1'), fileStamp: 'size:2' }, { ...track('c2'), fileStamp: 'size:3' }, { ...track('c3'), fileStamp: 'size:4' }];
    const { watch, state, published } = setup({ mapped: ['c1', 'c2', 'c3'], stamps: { c1: 'size:1', c2: 'size:1', c3: 'size:1' }, inFlight: ['c2'], maxTracksPerCheck: 1, removal: { changed, changedTotal: 4 } });
    state.token = 't2';
    const r = await watch.check(server(), 't1');
    expect(published.map((p) => [p.track.id, p.changedFile])).toEqual([['c1', true]]);
    // c3 did not fit (1 per change), and one more changed file was beyond the removal check's list.
    expect(r).toMatchObject({ added: 0, changedFiles: 1, leftOver: 1 + 1 });
  });

  it('When a webhook names an unknown server or brings a wrong token, then 404 or 401', async () => {
    const { watch } = setup();
    const registry = (watch as unknown as { registry: RegistryPort }).registry;
    registry.getServer = async () => {
      throw new AppError('not_found', 'Server x not found', 404);
    };
    await expect(watch.nudge('x', 'whatever-token-123456')).rejects.toMatchObject({ httpStatus: 404 });
    registry.getServer = async () => server({ changeDetection: { mode: 'push', intervalSeconds: 30, pushTokenSha256: 'ab'.repeat(32) } });
    await expect(watch.nudge('s1', 'wrong-token-123456789')).rejects.toMatchObject({ httpStatus: 401 });
    await expect(watch.nudge('s1', undefined)).rejects.toMatchObject({ httpStatus: 401 });
  });
});

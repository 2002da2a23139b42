/**
 * The cleaning task inside the catalogue service: real PostgreSQL, the in-process bus, fake media
 * servers over HTTP, the registry and index faked over HTTP. Per-server pruning with a failing server,
 * orphans (reported, re-bound, deleted only when asked and safe: refused at exactly half), the inline
 * index rebuild, admission (202/409/403) and the schedule run by one process.
 */
import { InMemoryBus } from '@polyphony/platform';
import { ArrayCatalogue, createFakeJellyfin, createFakeSubsonic, type FakeTrack, type StartedFake } from '@polyphony/testkit';
import type { SweepHooks } from '../src';
import { Board, FakePeers, LIBRARIES, fakeTrack, mappingsOf, requestSweep, resetCatalogue, seedSongs, startBatchCatalogue, stopBatchCatalogue } from './batch-helpers';
import type { StartedCatalogue } from './helpers';

interface CleaningDetails {
  per_server: Array<{ serverId: string; status: string; pruned: number; fetched: number; error?: string }>;
  orphaned_tracks_count: number;
  orphan_sample: Array<{ itemId: string }>;
  pruned_mappings: number;
  failed_servers: Array<{ serverId: string }>;
  prune_refused_servers: Array<{ serverId: string }>;
  deleted_count: number;
  catalogue_deletion: { requested: boolean; outcome: string; reason?: string; deleted: number };
  index: { state: string; generation: number; items: number };
}

describe('cleaning (PostgreSQL, fake media servers)', () => {
  jest.setTimeout(120_000);
  const bus = new InMemoryBus();
  const board = new Board();
  const peers = new FakePeers(board);
  const fakes: StartedFake[] = [];
  let c: StartedCatalogue;
  let afterChunk: SweepHooks['afterChunk'];

  beforeAll(async () => {
    await board.attach(bus);
    await peers.start();
    c = await startBatchCatalogue(bus, peers, { INDEX_REBUILD_POLL_MS: '10' }, () => afterChunk);
    peers.itemsOfNextBuild = async () => (await c.sql(`SELECT 1 FROM catalogue.score`)).length;
  });
  afterAll(() => stopBatchCatalogue(c, peers, fakes));
  beforeEach(async () => {
    afterChunk = undefined;
    peers.servers = [];
    peers.failBuilds = false;
    peers.buildMs = 30;
    await c.svc.settings.set('CLEANING_CATALOGUE', 'false');
    await resetCatalogue(c);
  });

  const songs = (n: number, prefix = 'Song') => Array.from({ length: n }, (_, i) => ({ id: `${prefix.toLowerCase()}-${i}`, title: `${prefix} ${i}` }));
  const tracks = (n: number, prefix = 'Song') => Array.from({ length: n }, (_, i) => fakeTrack(`${prefix.toLowerCase()}-t${i}`, { title: `${prefix} ${i}` }));

  async function jellyfin(list: FakeTrack[], id = 'jf', isDefault = true) {
    const fake = createFakeJellyfin({ catalogue: new ArrayCatalogue(LIBRARIES, list) });
    const started = await fake.start();
    fakes.push(started);
    return { fake, info: { id, name: `Jellyfin ${id}`, type: 'jellyfin' as const, isDefault, connection: { type: 'jellyfin' as const, creds: { url: started.url, user_id: fake.userId, token: fake.token } } } };
  }
  async function subsonic(list: FakeTrack[], id = 'navi') {
    const fake = createFakeSubsonic({ catalogue: new ArrayCatalogue(LIBRARIES, list) });
    const started = await fake.start();
    fakes.push(started);
    return { fake, info: { id, name: `Navidrome ${id}`, type: 'navidrome' as const, isDefault: false, connection: { type: 'navidrome' as const, creds: { url: started.url, user: fake.user, password: fake.password } } } };
  }
  async function align(): Promise<void> {
    const id = await requestSweep(bus, {});
    expect((await board.waitFor(id)).state).toBe('SUCCESS');
  }
  async function clean(body: object = {}): Promise<{ state: string; message: string; details: CleaningDetails }> {
    const res = await c.post('/api/cleaning/start', body).expect(202);
    expect(res.body).toEqual({ task_id: expect.any(String), task_type: 'cleaning', status: 'NEW' });
    const done = await board.waitFor(res.body.task_id);
    expect(done).toMatchObject({ type: 'cleaning', owner: 'catalogue' });
    return { state: done.state, message: done.message, details: done.details as unknown as CleaningDetails };
  }
  const scoreIds = async () => (await c.sql<{ item_id: string }>(`SELECT item_id FROM catalogue.score ORDER BY item_id`)).map((r) => r.item_id);

  it('When one server fails mid-cleaning, then it is skipped and reported while the others are cleaned, and orphan deletion is refused', async () => {
    await seedSongs(c, songs(6));
    const a = await jellyfin(tracks(6), 'jf', true);
    const b = await subsonic(tracks(6), 'navi');
    peers.servers = [a.info, b.info];
    await align();
    expect((await mappingsOf(c, 'jf')).size).toBe(6);
    expect((await mappingsOf(c, 'navi')).size).toBe(6);
    // B now lists 4 of its 6 tracks; A cannot be read.
    const smaller = await subsonic(tracks(4), 'navi');
    peers.servers = [a.info, smaller.info];
    a.fake.failAfterPages(0);
    const rebuildsBefore = peers.rebuildRequests;
    const done = await clean({ clean_catalogue: true });
    a.fake.failAfterPages(null);
    expect(done.state).toBe('SUCCESS');
    expect(done.details.per_server.map((s) => [s.serverId, s.status, s.pruned])).toEqual([
      ['jf', 'failed', 0],
      ['navi', 'done', 2],
    ]);
    expect(done.details.failed_servers.map((s) => s.serverId)).toEqual(['jf']);
    expect(done.details.pruned_mappings).toBe(2);
    expect(done.details.catalogue_deletion).toMatchObject({ requested: true, outcome: 'refused', deleted: 0 });
    expect(done.details.catalogue_deletion.reason).toMatch(/not every server was read completely/);
    // Only B's stale rows went; A's rows and every song stay.
    expect((await mappingsOf(c, 'jf')).size).toBe(6);
    expect([...(await mappingsOf(c, 'navi')).keys()].sort()).toEqual(tracks(4).map((t) => smaller.fake.idOf(t.id)).sort());
    expect(await scoreIds()).toHaveLength(6);
    expect(peers.rebuildRequests).toBe(rebuildsBefore + 1);
    expect(done.details.index).toMatchObject({ state: 'SUCCESS', generation: peers.generation, items: 6 });
  });

  it('When orphans are exactly half the catalogue, then their deletion is refused; below half it runs, and a deleted song is unmapped so its returning file is analyzed again', async () => {
    await seedSongs(c, songs(10));
    const five = await jellyfin(tracks(5));
    peers.servers = [five.info];
    await align();
    // Default: orphans are reported only.
    let done = await clean();
    expect(done.details).toMatchObject({ orphaned_tracks_count: 5, catalogue_deletion: { requested: false, outcome: 'not_requested' } });
    expect(done.details.orphan_sample.map((o) => o.itemId)).toEqual(['song-5', 'song-6', 'song-7', 'song-8', 'song-9']);
    // Asked, but 5 of 10 is not fewer than half.
    done = await clean({ clean_catalogue: true });
    expect(done.state).toBe('SUCCESS');
    expect(done.details.catalogue_deletion).toMatchObject({ requested: true, outcome: 'refused', deleted: 0 });
    expect(done.details.catalogue_deletion.reason).toMatch(/5 orphans are not fewer than half of the 10 songs/);
    expect(await scoreIds()).toHaveLength(10);
    // One more song mapped: 4 of 10 orphans; the setting asks for deletion this time.
    const six = await jellyfin(tracks(6));
    peers.servers = [six.info];
    await align();
    await c.svc.settings.set('CLEANING_CATALOGUE', 'true');
    done = await clean();
    expect(done.details.catalogue_deletion).toMatchObject({ requested: true, outcome: 'deleted', deleted: 4 });
    expect(await scoreIds()).toEqual(['song-0', 'song-1', 'song-2', 'song-3', 'song-4', 'song-5']);
    expect((await c.sql(`SELECT 1 FROM catalogue.track_server_map`)).length).toBe(6);
    // The index was rebuilt after the deletion: its build saw the cleaned catalogue.
    expect(done.details.index).toMatchObject({ state: 'SUCCESS', items: 6 });
    // A deleted song's file comes back: nothing maps it (no local song to match), so analysis will pick it up.
    const seven = await jellyfin(tracks(7));
    peers.servers = [seven.info];
    await align();
    const returning = seven.fake.idOf('song-t6');
    const lookup = await c.post('/internal/mappings/lookup', { serverId: 'jf', providerIds: [returning, seven.fake.idOf('song-t0')] }).expect(200);
    expect(lookup.body.mapped).toEqual([seven.fake.idOf('song-t0')]);
  });

  it('When a song disappears from its only server, then cleaning leaves it as an orphan and it is re-bound when it returns', async () => {
    await seedSongs(c, songs(6));
    const full = await jellyfin(tracks(6));
    peers.servers = [full.info];
    await align();
    const before = await mappingsOf(c, 'jf');
    const lost = await jellyfin(tracks(5));
    peers.servers = [lost.info];
    const done = await clean();
    expect(done.details).toMatchObject({ pruned_mappings: 1, orphaned_tracks_count: 1 });
    expect(done.details.orphan_sample.map((o) => o.itemId)).toEqual(['song-5']);
    expect(await scoreIds()).toHaveLength(6);
    peers.servers = [full.info];
    await align();
    const after = await mappingsOf(c, 'jf');
    // Re-bound to the same song (no new score row), by the file path the default server gave it earlier.
    expect(after.get(full.fake.idOf('song-t5'))).toMatchObject({ itemId: 'song-5', tier: 'path' });
    expect(after.size).toBe(before.size);
    expect((await clean()).details.orphaned_tracks_count).toBe(0);
  });

  it('When a sweep or a cleaning is live, then a cleaning start is refused with 409; a non-admin caller gets 403', async () => {
    await seedSongs(c, songs(6));
    const jf = await jellyfin(tracks(6));
    peers.servers = [jf.info];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let reached!: () => void;
    const atChunk = new Promise<void>((r) => (reached = r));
    afterChunk = async () => {
      reached();
      await held;
    };
    const sweepId = await requestSweep(bus, { serverId: 'jf' });
    await atChunk;
    const refused = await c.post('/api/cleaning/start', {}).expect(409);
    expect(refused.body.code).toBe('task_running');
    afterChunk = undefined;
    release();
    expect((await board.waitFor(sweepId)).state).toBe('SUCCESS');

    peers.buildMs = 400;
    const started = await c.post('/api/cleaning/start', { clean_catalogue: false }).expect(202);
    await c.post('/api/cleaning/start', {}).expect(409);
    // A sweep requested meanwhile waits for the cleaning to end.
    const queuedSweep = await requestSweep(bus, { serverId: 'jf' });
    expect((await board.waitFor(queuedSweep, ['NEW'])).state).toBe('NEW');
    const cleaned = await board.waitFor(started.body.task_id);
    expect(cleaned.state).toBe('SUCCESS');
    const sweepDone = await board.waitFor(queuedSweep);
    expect(sweepDone.state).toBe('SUCCESS');
    expect(Date.parse(sweepDone.startedAt!)).toBeGreaterThanOrEqual(Date.parse(cleaned.finishedAt!) - 5);

    await c.post('/api/cleaning/start', {}, 'user').expect(403);
    await c.post('/api/cleaning/start', { clean_catalogue: 'yes' }).expect(400);
  });

  it('When the index rebuild fails, then the cleaning ends FAIL after its pruning', async () => {
    await seedSongs(c, songs(3));
    const jf = await jellyfin(tracks(3));
    peers.servers = [jf.info];
    await align();
    peers.failBuilds = true;
    const done = await clean();
    expect(done.state).toBe('FAIL');
    expect(done.message).toMatch(/Index rebuild failed/);
    expect(done.details.index.state).toBe('FAIL');
  });
});

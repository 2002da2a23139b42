/**
 * Live library on an EMPTY index (issue 35, gap 1): songs that arrive by change detection (analysis.track.completed.v1
 * without a full analysis run) on a new install whose index holds no songs are served after ONE full build, requested
 * by the live library after its debounce (one build for the burst, two replicas); while a full analysis run is live
 * no build is requested for them, so a first run still builds exactly once, at its end.
 * Real PostgreSQL, in-process bus, fake catalogue / registry / analysis worker (FakePeers).
 */
import request from 'supertest';
import { createBus, createLogger, signIdentity, type Bus } from '@polyphony/platform';
import { RoutingKeys, type AnalysisTrackCompleted } from '@polyphony/contracts';
import { createTestDatabase, FakePeers, syntheticSongs, toSnapshotTrack, type SyntheticSong, type TestDatabase } from '@polyphony/testkit';
import { buildIndex, loadIndexConfig, type IndexService } from '../src';

const SECRET = 'index-test-internal-secret-0123456789abcdef';
const NAVI = 'srv-navi';

interface World {
  db: TestDatabase;
  peers: FakePeers;
  bus: Bus;
  replicas: IndexService[];
  songs: SyntheticSong[];
  close(): Promise<void>;
}

/** A new install: one server, an empty catalogue, `replicas` index replicas started (each requests its start-up build). */
async function world(replicas: number, seed: number): Promise<World> {
  const peers = new FakePeers();
  peers.addServer({ id: NAVI, name: 'Navidrome', type: 'navidrome', isDefault: true, connection: { type: 'navidrome', creds: { url: 'http://127.0.0.1:9', user: 'u', password: 'p' } } });
  const url = await peers.start();
  const db = await createTestDatabase('index_live_empty');
  const bus = createBus({});
  const logger = createLogger({ service: 'index-test', level: 'error' });
  const built: IndexService[] = [];
  for (let i = 0; i < replicas; i++) {
    const svc = buildIndex(loadIndexConfig({ DATABASE_URL: db.url, INTERNAL_SECRET: SECRET, LOG_LEVEL: 'error', INDEX_LIVE_DEBOUNCE_MS: '200', INDEX_LIVE_RECHECK_MS: '250' }), {
      logger,
      bus,
      peers: () => ({ registry: url, catalogue: url, analysis: url, index: url, playlist: url }),
      migrateOnStart: true,
      rebuild: { snapshotPageSize: 400, vectorBatchSize: 300, cellFlushBytes: 64 * 1024 },
      mapPollMs: 500,
    });
    await svc.start();
    built.push(svc);
  }
  for (const s of built) await s.rebuild.idle();
  const songs = [...syntheticSongs(240, { songsPerArtist: 12, songsPerAlbum: 6, seed })];
  return {
    db,
    peers,
    bus,
    replicas: built,
    songs,
    async close() {
      for (const s of built) await s.stop();
      await bus.close();
      await peers.stop();
      await db.drop();
    },
  };
}

/** The songs reach the catalogue (analysed and mapped) and their completions are published, as a change batch does. */
async function arrive(w: World, songs: readonly SyntheticSong[]): Promise<void> {
  for (const s of songs) {
    const { mappings: _none, ...row } = toSnapshotTrack(s, []);
    w.peers.addSong(row);
    w.peers.map(NAVI, s.itemId, `nd-${s.itemId.slice(-6)}`, `ar-${s.artist}`);
  }
  for (const s of songs) {
    const event: AnalysisTrackCompleted = { taskId: 'change-batch', serverId: NAVI, providerId: `nd-${s.itemId.slice(-6)}`, outcome: 'analyzed', itemId: s.itemId };
    await w.bus.publish(RoutingKeys.analysisTrackCompleted, event);
  }
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 90_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const served = (svc: IndexService, songs: readonly SyntheticSong[]) => songs.every((s) => svc.state.current().index.rowOf(s.itemId) >= 0);
const as = signIdentity({ sub: 'u-1', username: 'tester', role: 'user', via: 'bearer', serverId: NAVI }, SECRET);

describe('live library: the first songs of an empty index', () => {
  jest.setTimeout(240_000);

  it('When songs arrive by change detection on an empty index (no analysis run), then one full build serves them on both replicas', async () => {
    const w = await world(2, 5);
    try {
      const [a, b] = w.replicas as [IndexService, IndexService];
      // Both replicas serve the (empty) generation of the start-up builds.
      await until('both replicas on one generation', () => a.state.current().generation === b.state.current().generation);
      const g0 = a.state.current().generation;
      expect(a.state.current().index.size).toBe(0);
      await arrive(w, w.songs);
      await until('both replicas to serve every song', () => served(a, w.songs) && served(b, w.songs));
      for (const s of w.replicas) await s.rebuild.idle();
      // One build for the burst, whichever replica batched which song.
      expect(a.state.current().generation).toBe(g0 + 1);
      expect(b.state.current().generation).toBe(g0 + 1);
      expect(a.live.firstBuildsRequested + b.live.firstBuildsRequested).toBeGreaterThanOrEqual(1);
      const title = w.songs[17]!.title;
      for (const svc of w.replicas) {
        const found = await request(svc.http).get(`/api/search_tracks?search_query=${encodeURIComponent(title)}`).set(as).expect(200);
        expect(found.body.map((r: { title: string }) => r.title)).toContain(title);
      }
      // Later songs of the now built index are appended in place: no second build.
      const later = [...syntheticSongs(3, { seed: 99 })].map((s, i) => ({ ...s, itemId: `fp_4${'f'.repeat(44)}${String(i).padStart(6, '0')}`, title: `Later ${i}` }));
      await arrive(w, later);
      await until('the later songs on both replicas', () => served(a, later) && served(b, later));
      expect(a.state.current().generation).toBe(g0 + 1);
      expect(a.state.current().revision).toBeGreaterThan(0);
    } finally {
      await w.close();
    }
  });

  it('When a first full analysis run is live, then its songs request no build; its own end-of-run rebuild is the one build and serves them', async () => {
    const w = await world(1, 6);
    try {
      const svc = w.replicas[0]!;
      const g0 = svc.state.current().generation;
      w.peers.analysisRunLive = true;
      const before = w.peers.calls.analysisRun;
      // The run's tracks complete in two bursts, several debounce and recheck windows apart.
      await arrive(w, w.songs.slice(0, 120));
      await sleep(1500);
      await arrive(w, w.songs.slice(120));
      await sleep(1500);
      expect(svc.state.current().generation).toBe(g0);
      expect(svc.rebuild.busy).toBe(false);
      expect(svc.live.firstBuildsRequested).toBe(0);
      expect(svc.live.pendingCount).toBe(w.songs.length);
      // It asked the analysis worker (more than once: the songs are looked at again while they wait).
      expect(w.peers.calls.analysisRun - before).toBeGreaterThan(1);
      // The run's end: its one rebuild request (the run is live until that build is served).
      await svc.rebuild.request('analysis run finished', 'run-1');
      await svc.rebuild.idle();
      expect(svc.state.current().generation).toBe(g0 + 1);
      expect(served(svc, w.songs)).toBe(true);
      w.peers.analysisRunLive = false;
      await sleep(1500);
      expect(svc.state.current().generation).toBe(g0 + 1);
      expect(svc.rebuild.busy).toBe(false);
      expect(svc.live.firstBuildsRequested).toBe(0);
      expect(svc.live.pendingCount).toBe(0);
    } finally {
      await w.close();
    }
  });
});

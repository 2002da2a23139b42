/**
 * Helpers of the sweep and cleaning integration tests: the catalogue's peers faked over HTTP (the
 * registry's server list and task board, the index's rebuild and status endpoints), the task board fed
 * from the bus, fake-media-server tracks, and direct SQL seeding of local songs.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { RoutingKeys, TaskUpdatedEvent, type SweepRequestedEvent } from '@polyphony/contracts';
import { createMediaServerClient, type ServerConnection } from '@polyphony/media-servers';
import type { Bus } from '@polyphony/platform';
import type { FakeLibrary, FakeTrack } from '@polyphony/testkit';
import type { ServerInfo, SweepHooks } from '../src';
import { startCatalogue, type StartedCatalogue } from './helpers';

/** Libraries of the test catalogues. */
export const LIBRARIES: FakeLibrary[] = [
  { id: 'lib-music', name: 'Music', path: '/srv/music/music' },
  { id: 'lib-extras', name: 'Extras', path: '/srv/music/extras' },
];

/** A real Ogg file for the fakes' download endpoint (never requested by a sweep). */
export const AUDIO_FILE = '/usr/share/games/wesnoth/1.16/data/core/music/victory.ogg';

const slug = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-');

/** A fake-server track; `path` defaults to `<library path>/<album artist>/<album>/<NN> <title>.flac`. */
export function fakeTrack(id: string, over: Partial<FakeTrack> & { title: string }): FakeTrack {
  const artist = over.artist ?? 'Band';
  const album = over.album ?? 'Album';
  const albumArtist = over.albumArtist ?? artist;
  const library = LIBRARIES.find((l) => l.id === (over.library ?? 'lib-music'))!;
  return {
    id,
    artist,
    artistId: `ar-${slug(artist)}`,
    album,
    albumId: `al-${slug(album)}`,
    albumArtist,
    albumArtistId: `ar-${slug(albumArtist)}`,
    year: 2001,
    rating: 4,
    durationSeconds: 200,
    path: `${library.path}/${albumArtist}/${album}/${over.title}.flac`,
    audioFile: AUDIO_FILE,
    library: library.id,
    playCount: 0,
    addedAt: '2024-01-01T00:00:00.000Z',
    ...over,
  };
}

/** Task board entries kept from task.status.updated.v1 (highest seq per task, like the registry). */
export class Board {
  readonly tasks = new Map<string, TaskUpdatedEvent>();
  readonly history: TaskUpdatedEvent[] = [];

  async attach(bus: Bus, queue = 'test.task-board'): Promise<void> {
    await bus.consume({
      queue,
      bindings: [RoutingKeys.taskUpdated],
      schema: TaskUpdatedEvent,
      handler: async (e) => {
        this.history.push(e);
        const prev = this.tasks.get(e.taskId);
        if (!prev || prev.seq < e.seq) this.tasks.set(e.taskId, e);
      },
    });
  }

  /** Waits until the task reaches one of `states` (and `also` holds of its snapshot). @throws on timeout with the last snapshot. */
  async waitFor(taskId: string, states: string[] = ['SUCCESS', 'FAIL', 'REVOKED'], timeoutMs = 30_000, also: (t: TaskUpdatedEvent) => boolean = () => true): Promise<TaskUpdatedEvent> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const t = this.tasks.get(taskId);
      if (t && states.includes(t.state) && also(t)) return t;
      if (Date.now() > until) throw new Error(`task ${taskId} did not reach ${states.join('/')}: ${JSON.stringify(t ?? null).slice(0, 2000)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/**
 * The registry and the index, faked on one HTTP server: `GET /internal/servers` (mutable `servers`),
 * `GET /api/status/:id` (from `board`), `POST /api/index/rebuild` and `GET /api/index/status` (a build
 * takes `buildMs` and goes live, or fails when `failBuilds` is set; a request during a build is
 * coalesced into one follow-up build, like the real index).
 */
export class FakePeers {
  servers: ServerInfo[] = [];
  generation = 0;
  items = 0;
  buildMs = 30;
  failBuilds = false;
  /** Items the next live generation reports (default: unchanged). */
  itemsOfNextBuild?: () => Promise<number>;
  rebuildRequests = 0;
  private running?: string;
  private pending?: string;
  private builds = 0;
  private server?: Server;
  url = '';

  constructor(readonly board: Board) {}

  async start(): Promise<string> {
    const app = express();
    app.use(express.json());
    app.get('/internal/servers', (_req, res) => {
      res.json({ servers: this.servers });
    });
    app.get('/api/status/:id', (req, res) => {
      const t = this.board.tasks.get(req.params.id);
      if (!t) return void res.status(404).json({ error: 'Task not found', code: 'not_found', request_id: 'x' });
      res.json({ task_id: t.taskId, state: t.state, status: t.state, status_message: t.message, progress: t.progress, details: t.details });
    });
    app.post('/api/index/rebuild', (_req, res) => {
      this.rebuildRequests++;
      if (!this.running) {
        const id = this.startBuild();
        return void res.status(202).json({ task_id: id, task_type: 'index_build', status: 'RUNNING', coalesced: false });
      }
      this.pending ??= `build-${++this.builds}`;
      res.status(202).json({ task_id: this.pending, task_type: 'index_build', status: 'NEW', coalesced: true });
    });
    app.get('/api/index/status', (_req, res) => {
      res.json({ generation: this.generation, items: this.items, nlist: 1, dim: 200, built_at: null, building: Boolean(this.running || this.pending), task_id: this.running ?? null });
    });
    await new Promise<void>((resolve) => {
      this.server = app.listen(0, '127.0.0.1', () => resolve());
    });
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
    return this.url;
  }

  private startBuild(id = `build-${++this.builds}`): string {
    this.running = id;
    setTimeout(() => {
      void (async () => {
        const ok = !this.failBuilds;
        if (ok) {
          this.generation++;
          if (this.itemsOfNextBuild) this.items = await this.itemsOfNextBuild();
        }
        const prior = this.board.tasks.get(id);
        this.board.tasks.set(id, { taskId: id, type: 'index_build', owner: 'index', state: ok ? 'SUCCESS' : 'FAIL', progress: 100, message: ok ? 'index rebuilt' : 'failed', servers: [], log: [], details: {}, seq: (prior?.seq ?? 0) + 1 });
        this.running = undefined;
        const next = this.pending;
        this.pending = undefined;
        if (next) this.startBuild(next);
      })();
    }, this.buildMs);
    return id;
  }

  /** Peer URLs for the catalogue (registry and index here; the others unused). */
  peers() {
    return { registry: this.url, index: this.url, catalogue: 'http://127.0.0.1:9', analysis: 'http://127.0.0.1:9', playlist: 'http://127.0.0.1:9' };
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

/** Media-server clients without retries (a fake's HTTP 500 fails at once). */
export const quickClients = (conn: ServerConnection) => createMediaServerClient(conn, { retries: 0, backoffMs: 1, timeoutMs: 10_000 });

/** A local song to seed: a score row, and optionally a mapping row on a server that is not swept (its path is then a known path of the song). */
export interface SeedSong {
  id: string;
  title: string;
  artist?: string;
  album?: string | null;
  /** score.file_path. */
  filePath?: string | null;
  durationSeconds?: number | null;
  /** A file path of the song on the server `origin` (mapping row origin/o-<id>). */
  originPath?: string;
}

/** Inserts local songs (score rows, and origin mapping rows where given). */
export async function seedSongs(c: StartedCatalogue, songs: SeedSong[]): Promise<void> {
  await c.sql(
    `INSERT INTO catalogue.score (item_id, title, artist, album, file_path, duration_seconds, embedder_version)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::float8[], $7::text[])`,
    [
      songs.map((s) => s.id),
      songs.map((s) => s.title),
      songs.map((s) => s.artist ?? 'Band'),
      songs.map((s) => (s.album === undefined ? 'Album' : s.album)),
      songs.map((s) => s.filePath ?? null),
      songs.map((s) => (s.durationSeconds === undefined ? 200 : s.durationSeconds)),
      songs.map(() => 'test-v1'),
    ],
  );
  const origin = songs.filter((s) => s.originPath);
  if (origin.length) {
    await c.sql(
      `INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id, file_path, match_tier) SELECT 'origin', 'o-' || id, id, p, 'analysis' FROM unnest($1::text[], $2::text[]) AS t(id, p)`,
      [origin.map((s) => s.id), origin.map((s) => s.originPath!)],
    );
  }
}

/** Empties every table the batch tasks touch (between tests of one file). */
export async function resetCatalogue(c: StartedCatalogue): Promise<void> {
  await c.sql(`TRUNCATE catalogue.score, catalogue.track_server_map, catalogue.chromaprint, catalogue.artist_server_map, catalogue.batch_task, catalogue.schedule_state, catalogue.server_availability CASCADE`);
}

/** Mapping rows of a server: provider id -> [item id, tier]. */
export async function mappingsOf(c: StartedCatalogue, serverId: string): Promise<Map<string, { itemId: string; tier: string; filePath: string | null }>> {
  const rows = await c.sql<{ provider_id: string; item_id: string; match_tier: string; file_path: string | null }>(
    `SELECT provider_id, item_id, match_tier, file_path FROM catalogue.track_server_map WHERE server_id = $1`,
    [serverId],
  );
  return new Map(rows.map((r) => [r.provider_id, { itemId: r.item_id, tier: r.match_tier, filePath: r.file_path }]));
}

let seq = 0;
/** Publishes a sweep request as the registry does; returns its task id. */
export async function requestSweep(bus: Bus, over: Partial<SweepRequestedEvent> = {}): Promise<string> {
  const taskId = over.taskId ?? `sweep-${Date.now().toString(36)}-${++seq}`;
  await bus.publish(RoutingKeys.sweepRequested, { taskId, fullRefresh: true, cancelRunning: false, ...over } satisfies SweepRequestedEvent);
  return taskId;
}

/** Requests whose path looks like an audio download or stream (never expected from a sweep). */
export function downloadRequests(requests: ReadonlyArray<{ path: string }>): string[] {
  return requests.map((r) => r.path).filter((p) => /download|stream|\/file|\/parts\//i.test(p));
}

/**
 * The batch suites' catalogue: a private database, the fake peers as registry and index, quick media
 * clients, 3-song sweep chunks, progress written at once; `afterChunk()` is read at every chunk (a test
 * sets it to pause or fail a sweep). Attach the board and start the peers first.
 */
export function startBatchCatalogue(bus: Bus, peers: FakePeers, env: Record<string, string>, afterChunk: () => SweepHooks['afterChunk']): Promise<StartedCatalogue> {
  return startCatalogue({ SWEEP_CHUNK_SIZE: '3', TASK_PROGRESS_INTERVAL_MS: '0', BATCH_RECHECK_MS: '200', ...env }, undefined, bus, {
    peers: () => peers.peers(),
    clientFactory: quickClients,
    sweepHooks: { afterChunk: (info) => afterChunk()?.(info) ?? Promise.resolve() },
  });
}

/** Stops what {@link startBatchCatalogue} and the suite started: the catalogue, its database, the peers, the fake servers. */
export async function stopBatchCatalogue(c: StartedCatalogue | undefined, peers: FakePeers, fakes: ReadonlyArray<{ close(): Promise<void> }>): Promise<void> {
  await c?.stop();
  await c?.db.drop();
  await peers.close();
  for (const f of fakes) await f.close();
}

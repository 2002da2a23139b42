/**
 * Benchmark of the alignment sweep (issue 7 "Performance"): align an N-track media server against an
 * N-song catalogue on real PostgreSQL; prints wall time per phase and the process's RSS growth.
 *
 *   npx tsc -b services/catalogue-identity
 *   node bench/dist/catalogue-identity/sweep-500k.js [N=500000]
 *
 * Needs PostgreSQL at BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres); a fresh
 * database is created and dropped (KEEP_DB=1 keeps it).
 *
 * Setup (not timed): N score rows inserted with one INSERT ... SELECT generate_series ("Song i" by
 * "Artist floor(i/50)" on "Album floor(i/10)"), each with a mapping row on a server that is not swept
 * (origin), whose path `/mnt/music/Artist a/Album b/NN Song i.flac` is the song's known file path.
 *
 * The swept server is an IN-PROCESS client (no HTTP): its iterateTracks() generates pages of 500
 * ProviderTracks on the fly, so the figures are those of the sweep itself (fetch condensing, keyset
 * streaming, matching, chunk writes, artist upsert, metadata refresh), not of a fake HTTP server. Per
 * 20 tracks: 14 share the song's relative path under another mount (path tier), 2 sit under a deeper
 * unknown root (tail tier), 2 have an unrelated path and exact metadata (exact tier), 1 has a noise-word
 * title and a leading "The" (normalised tier), 1 matches nothing.
 *
 * The sweep runs through the real service (bus request -> batch lane -> SweepExecutor) with the default
 * chunk of 20000 local songs. RSS is sampled every 50 ms from just before the request to the task's end;
 * "growth" is peak minus that baseline.
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { RoutingKeys, TaskUpdatedEvent, type SweepRequestedEvent } from '@polyphony/contracts';
import type { MediaServerClient, ProviderTrack } from '@polyphony/media-servers';
import { InMemoryBus, createLogger } from '@polyphony/platform';
import { Client } from 'pg';
import { buildCatalogue, loadCatalogueConfig } from '@polyphony/catalogue-identity';
import { createDb } from './bench-db';
import type { ServerSweepReport } from '@polyphony/catalogue-identity';

const PAGE = 500;
let liveHeapPeak = 0;
let phase = 'start';

const pad = (n: number) => String(n).padStart(2, '0');
const localPath = (i: number) => `/mnt/music/Artist ${Math.floor(i / 50)}/Album ${Math.floor(i / 10)}/${pad(i % 10)} Song ${i}.flac`;

/** The swept server's track at position i (see module doc for the tier mix). */
function remoteTrack(i: number): ProviderTrack {
  const artist = `Artist ${Math.floor(i / 50)}`;
  const album = `Album ${Math.floor(i / 10)}`;
  const base = { id: `b${i}`, artistId: `ar${Math.floor(i / 50)}`, album, albumArtist: artist, year: 1990 + (i % 30), rating: i % 6, durationSeconds: 120 + (i % 300) };
  const rel = `${artist}/${album}/${pad(i % 10)} Song ${i}.flac`;
  switch (i % 20) {
    case 14:
    case 15:
      return { ...base, title: `Song ${i} (server)`, artist, path: `/volume2/share/deep/${rel}` };
    case 16:
    case 17:
      return { ...base, title: `Song ${i}`, artist, path: `/srv/other/b-${i}.flac` };
    case 18:
      return { ...base, title: `Song ${i} (Remastered 2011)`, artist: `The ${artist}`, path: `/srv/other/b-${i}.flac` };
    case 19:
      return { ...base, title: `Other ${i}`, artist, path: `/srv/other/b-${i}.flac` };
    default:
      return { ...base, title: `Song ${i} (server)`, artist, path: `/srv/music/${rel}` };
  }
}

/** An in-process media server of `n` tracks: only iterateTracks is used by a sweep. */
function inProcessServer(n: number): MediaServerClient {
  const unused = () => Promise.reject(new Error('not used by a sweep'));
  return {
    type: 'jellyfin',
    testConnection: unused,
    listLibraries: unused,
    visibleLibraries: unused,
    listArtists: unused,
    downloadTrack: unused,
    createPlaylist: unused,
    listPlaylists: unused,
    deletePlaylist: unused,
    getListeningHistory: unused,
    getLyrics: unused,
    libraryChangeToken: unused,
    async *iterateRecentAlbumTracks() {
      throw new Error('not used by a sweep');
    },
    async *iterateTracks() {
      for (let off = 0; off < n; off += PAGE) {
        const page: ProviderTrack[] = [];
        for (let i = off; i < Math.min(n, off + PAGE); i++) page.push(remoteTrack(i));
        yield page;
        await new Promise((r) => setImmediate(r));
      }
    },
  };
}

async function seed(url: string, n: number): Promise<void> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(
      `INSERT INTO catalogue.score (item_id, title, artist, album, embedder_version)
       SELECT 'fp_4' || lpad(to_hex(i), 50, '0'), 'Song ' || i, 'Artist ' || (i / 50), 'Album ' || (i / 10), 'bench' FROM generate_series(0, $1 - 1) AS i`,
      [n],
    );
    await c.query(
      `INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id, file_path, match_tier)
       SELECT 'origin', 'o' || i, 'fp_4' || lpad(to_hex(i), 50, '0'),
              '/mnt/music/Artist ' || (i / 50) || '/Album ' || (i / 10) || '/' || lpad((i % 10)::text, 2, '0') || ' Song ' || i || '.flac', 'analysis'
         FROM generate_series(0, $1 - 1) AS i`,
      [n],
    );
    await c.query('ANALYZE catalogue.score');
    await c.query('ANALYZE catalogue.track_server_map');
  } finally {
    await c.end();
  }
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 500_000);
  if (!Number.isInteger(n) || n <= 0) throw new Error('usage: sweep-500k.js [N]');
  if (localPath(0) !== '/mnt/music/Artist 0/Album 0/00 Song 0.flac') throw new Error('path layout drifted from the SQL seed');
  const db = await createDb();
  const bus = new InMemoryBus();
  // SWEEP_CHUNK_SIZE / SWEEP_REFRESH_CHUNK_SIZE from the environment override the defaults (20000 / 5000).
  const chunkEnv = { SWEEP_CHUNK_SIZE: process.env.SWEEP_CHUNK_SIZE, SWEEP_REFRESH_CHUNK_SIZE: process.env.SWEEP_REFRESH_CHUNK_SIZE };
  const svc = buildCatalogue(loadCatalogueConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'warn', DB_POOL_SIZE: '5', ...chunkEnv }), {
    migrateOnStart: true,
    bus,
    logger: createLogger({ service: 'bench', level: 'warn' }),
    registryPort: { listServers: async () => [{ id: 'bench', name: 'Bench', type: 'jellyfin', isDefault: false, connection: { type: 'jellyfin', creds: {} } }] },
    clientFactory: () => inProcessServer(n),
    indexPort: { rebuildAndWait: () => Promise.reject(new Error('not used')) },
    // With --expose-gc: a full collection after every matching chunk measures the LIVE heap (what the
    // sweep really holds), separate from garbage V8 has not collected yet.
    sweepHooks: {
      afterChunk: async () => {
        if (!global.gc) return;
        global.gc();
        const m = process.memoryUsage();
        liveHeapPeak = Math.max(liveHeapPeak, m.heapUsed + m.external);
      },
    },
  });
  try {
    await svc.start();
    const t0 = Date.now();
    await seed(db.url, n);
    console.log(`seeded ${n} songs (+${n} origin mappings) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    const done = new Promise<TaskUpdatedEvent>((resolve) => {
      void bus.consume({
        queue: 'bench.board',
        bindings: [RoutingKeys.taskUpdated],
        schema: TaskUpdatedEvent,
        handler: async (e) => {
          phase = /reading/.test(e.message) ? 'fetch' : /matching/.test(e.message) ? 'match' : /refreshing/.test(e.message) ? 'refresh' : phase;
          if (['SUCCESS', 'FAIL', 'REVOKED'].includes(e.state)) resolve(e);
        },
      });
    });
    global.gc?.();
    const baseline = process.memoryUsage();
    let peakRss = baseline.rss;
    let peakHeap = baseline.heapUsed;
    const byPhase: Record<string, number> = {};
    let atPeak = baseline;
    const sampler = setInterval(() => {
      const m = process.memoryUsage();
      if (m.rss > peakRss) atPeak = m;
      peakRss = Math.max(peakRss, m.rss);
      peakHeap = Math.max(peakHeap, m.heapUsed);
      byPhase[phase] = Math.max(byPhase[phase] ?? 0, m.rss);
    }, 50);
    const t1 = Date.now();
    await bus.publish(RoutingKeys.sweepRequested, { taskId: randomUUID(), serverId: 'bench', fullRefresh: true, cancelRunning: false } satisfies SweepRequestedEvent);
    const final = await done;
    const wall = Date.now() - t1;
    clearInterval(sampler);
    const report = (final.details as { per_server: ServerSweepReport[] }).per_server[0]!;
    const mb = (b: number) => (b / 1024 / 1024).toFixed(0);
    console.log(`state ${final.state}: ${final.message}`);
    console.log(`N=${n}: wall ${(wall / 1000).toFixed(1)} s (fetch ${(report.phaseMs.fetch / 1000).toFixed(1)} s, match ${(report.phaseMs.match / 1000).toFixed(1)} s, artists ${(report.phaseMs.artists / 1000).toFixed(1)} s, refresh ${(report.phaseMs.refresh / 1000).toFixed(1)} s)`);
    console.log(`matched ${report.matched} (path ${report.byTier.path}, tail ${report.byTier.tail}, exact ${report.byTier.exact_meta}, normalised ${report.byTier.norm_meta}); ambiguous ${report.ambiguous}; metadata refreshed ${report.metadataRefreshed}; artists ${report.artistsUpserted}`);
    console.log(`RSS baseline ${mb(baseline.rss)} MB, peak ${mb(peakRss)} MB, growth ${mb(peakRss - baseline.rss)} MB; heap used baseline ${mb(baseline.heapUsed)} MB, peak ${mb(peakHeap)} MB`);
    console.log(`at the RSS peak: heap used ${mb(atPeak.heapUsed)} MB of ${mb(atPeak.heapTotal)} MB, external ${mb(atPeak.external)} MB (array buffers ${mb(atPeak.arrayBuffers)} MB)`);
    console.log(`peak RSS by phase: ${Object.entries(byPhase).map(([k, v]) => `${k} ${mb(v)} MB`).join(', ')}`);
    if (global.gc) console.log(`live heap + external after a full GC at each matching chunk: peak ${mb(liveHeapPeak)} MB (growth ${mb(liveHeapPeak - baseline.heapUsed - baseline.external)} MB)`);
    // Sanity: the tier mix is known exactly (per 20 tracks: 14 path, 2 tail, 2 exact, 1 normalised, 1 none).
    const per = (k: number[]) => Array.from({ length: n }, (_, i) => i % 20).filter((r) => k.includes(r)).length;
    const want = { path: per([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]), tail: per([14, 15]), exact_meta: per([16, 17]), norm_meta: per([18]) };
    if ((Object.keys(want) as Array<keyof typeof want>).some((k) => report.byTier[k] !== want[k])) throw new Error(`tier counts ${JSON.stringify(report.byTier)} differ from ${JSON.stringify(want)}`);
  } finally {
    await svc.stop();
    await db.drop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

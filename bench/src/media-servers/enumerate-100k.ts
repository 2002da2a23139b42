/**
 * Memory benchmark: enumerate 100 000 synthetic tracks with each client and report the peak RSS
 * growth of the enumerating process. Goal: < 150 MB per kind.
 *
 * Layout: the orchestrator (no arguments) runs, per kind, a paging server in one child process and
 * the enumerating client in another (started with --expose-gc so the baseline is taken after a
 * full GC), so the figure is the client's alone. Servers generate every page on the fly from the
 * track index; no catalogue or giant JSON string is ever held.
 *
 * Run: `npm run build && node bench/dist/media-servers/enumerate-100k.js [count]`
 * Output: one line per kind (tracks, seconds, tracks/s, baseline RSS, peak RSS growth, peak heap
 * growth) and a PASS/FAIL verdict; exit code 1 when a kind fails.
 */
import { fork } from 'node:child_process';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMediaServerClient } from '@polyphony/media-servers';
import type { ServerConnection, ServerType } from '@polyphony/media-servers';

const GOAL_MB = 150;
const SAMPLE_MS = 10;
const MB = 1024 * 1024;
const KINDS: ServerType[] = ['jellyfin', 'emby', 'navidrome', 'lyrion', 'plex'];

/** Deterministic synthetic metadata for track `i`. */
function meta(i: number): { id: string; title: string; artist: string; album: string; path: string; year: number; secs: number } {
  const artist = `Artist ${i % 5000}`;
  const album = `Album ${Math.floor(i / 12)}`;
  return {
    id: `${(0x10000000 + i).toString(16)}${'0'.repeat(24)}`,
    title: `Track number ${i} of the synthetic catalogue`,
    artist,
    album,
    path: `/srv/music/${artist}/${album}/${String(i % 12).padStart(2, '0')} - Track number ${i}.flac`,
    year: 1960 + (i % 60),
    secs: 120 + (i % 300),
  };
}

function jellyfinItem(i: number): unknown {
  const m = meta(i);
  return {
    Name: m.title, Id: m.id, Type: 'Audio', MediaType: 'Audio', RunTimeTicks: m.secs * 10_000_000, ProductionYear: m.year,
    Album: m.album, AlbumId: `al${Math.floor(i / 12)}`, Artists: [m.artist], ArtistItems: [{ Name: m.artist, Id: `ar${i % 5000}` }],
    AlbumArtist: m.artist, AlbumArtists: [{ Name: m.artist, Id: `ar${i % 5000}` }], Container: 'flac', IndexNumber: i % 12,
    ParentIndexNumber: 1, Path: m.path,
    UserData: { PlaybackPositionTicks: 0, PlayCount: i % 7, IsFavorite: false, Played: i % 7 > 0, Key: m.id, ItemId: m.id },
  };
}

function subsonicSong(i: number): unknown {
  const m = meta(i);
  return {
    id: m.id, parent: `al${Math.floor(i / 12)}`, isDir: false, title: m.title, album: m.album, artist: m.artist, track: i % 12,
    year: m.year, genre: 'Synth', size: 20_000_000, contentType: 'audio/flac', suffix: 'flac', duration: m.secs, bitRate: 880,
    path: m.path.slice('/srv/music/'.length), albumId: `al${Math.floor(i / 12)}`, artistId: `ar${i % 5000}`, type: 'music',
    mediaType: 'song', displayAlbumArtist: m.artist,
  };
}

function lmsTitle(i: number): unknown {
  const m = meta(i);
  return {
    id: i + 1, title: m.title, artist: m.artist, artist_id: i % 5000, albumartist: m.artist, album: m.album,
    album_id: Math.floor(i / 12), duration: m.secs + 0.137, year: m.year, url: `file://${encodeURI(m.path)}`, rating: (i % 6) * 20, playcount: i % 7,
  };
}

function plexTrack(i: number): unknown {
  const m = meta(i);
  return {
    ratingKey: String(100000 + i), key: `/library/metadata/${100000 + i}`, type: 'track', title: m.title, grandparentTitle: m.artist,
    grandparentRatingKey: String(i % 5000), parentTitle: m.album, parentRatingKey: String(Math.floor(i / 12)), parentYear: m.year,
    index: i % 12, parentIndex: 1, duration: m.secs * 1000, viewCount: i % 7 || undefined, addedAt: 1678816282, librarySectionID: 1,
    Media: [{ container: 'flac', audioCodec: 'flac', bitrate: 880, Part: [{ key: `/library/parts/${i}/1/file.flac`, file: m.path, size: 20_000_000, container: 'flac' }] }],
  };
}

function page<T>(total: number, start: number, size: number, gen: (i: number) => T): T[] {
  const out: T[] = [];
  for (let i = start; i < Math.min(total, start + size); i++) out.push(gen(i));
  return out;
}

function send(res: http.ServerResponse, body: unknown): void {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Minimal paging server for one kind (only the calls `iterateTracks` makes). */
function serve(kind: ServerType, total: number): http.Server {
  return http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://bench');
      const q = u.searchParams;
      switch (kind) {
        case 'jellyfin':
        case 'emby': {
          const start = Number(q.get('StartIndex') ?? 0);
          return send(res, { Items: page(total, start, Number(q.get('Limit') ?? 500), jellyfinItem), TotalRecordCount: total, StartIndex: start });
        }
        case 'navidrome': {
          const song = page(total, Number(q.get('songOffset') ?? 0), Number(q.get('songCount') ?? 20), subsonicSong);
          return send(res, { 'subsonic-response': { status: 'ok', version: '1.16.1', type: 'navidrome', searchResult3: song.length ? { song } : {} } });
        }
        case 'lyrion': {
          const rpc = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: number; params: [string, Array<string | number>] };
          const cmd = rpc.params[1];
          const loop = page(total, Number(cmd[1]), Number(cmd[2]), lmsTitle);
          return send(res, { id: rpc.id, method: 'slim.request', params: rpc.params, result: { count: total, titles_loop: loop } });
        }
        case 'plex': {
          if (u.pathname === '/library/sections') {
            return send(res, { MediaContainer: { size: 1, Directory: [{ key: '1', type: 'artist', title: 'Music' }] } });
          }
          const start = Number(req.headers['x-plex-container-start'] ?? 0);
          const size = Number(req.headers['x-plex-container-size'] ?? 50);
          const items = page(total, start, size, plexTrack);
          return send(res, { MediaContainer: { size: items.length, totalSize: total, offset: start, Metadata: items } });
        }
      }
    });
  });
}

function connection(kind: ServerType, url: string): ServerConnection {
  switch (kind) {
    case 'jellyfin':
    case 'emby':
      return { type: kind, creds: { url, user_id: 'u', token: 't' } };
    case 'navidrome':
      return { type: kind, creds: { url, user: 'u', password: 'p' } };
    case 'lyrion':
      return { type: kind, creds: { url } };
    case 'plex':
      return { type: kind, creds: { url, token: 't' } };
  }
}

interface Figures { kind: ServerType; tracks: number; seconds: number; baselineMb: number; rssGrowthMb: number; heapGrowthMb: number }

/** Enumerates with the client and samples RSS / heap every 10 ms. */
async function enumerate(kind: ServerType, url: string): Promise<Figures> {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const base = process.memoryUsage();
  let peakRss = base.rss;
  let peakHeap = base.heapUsed;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    if (m.rss > peakRss) peakRss = m.rss;
    if (m.heapUsed > peakHeap) peakHeap = m.heapUsed;
  }, SAMPLE_MS);
  const t0 = process.hrtime.bigint();
  let tracks = 0;
  const client = createMediaServerClient(connection(kind, url), { retries: 0, timeoutMs: 60_000 });
  for await (const batch of client.iterateTracks()) tracks += batch.length;
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  clearInterval(timer);
  const end = process.memoryUsage();
  peakRss = Math.max(peakRss, end.rss);
  peakHeap = Math.max(peakHeap, end.heapUsed);
  return { kind, tracks, seconds, baselineMb: base.rss / MB, rssGrowthMb: (peakRss - base.rss) / MB, heapGrowthMb: (peakHeap - base.heapUsed) / MB };
}

function child(args: string[], execArgv: string[] = []): Promise<{ proc: ReturnType<typeof fork>; first: unknown }> {
  const proc = fork(__filename, args, { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    proc.once('message', (first) => resolve({ proc, first }));
    proc.once('error', reject);
    proc.once('exit', (code) => reject(new Error(`child ${args.join(' ')} exited with ${code}`)));
  });
}

async function orchestrate(total: number): Promise<void> {
  console.log(`enumerate-100k: ${total} synthetic tracks per kind; goal: peak RSS growth < ${GOAL_MB} MB`);
  console.log('kind       tracks    seconds  tracks/s  baseline-RSS  peak-RSS-growth  peak-heap-growth  verdict');
  let failed = false;
  for (const kind of KINDS) {
    const server = await child(['--serve', kind, String(total)]);
    const port = (server.first as { port: number }).port;
    try {
      const result = await child(['--enumerate', kind, `http://127.0.0.1:${port}`], ['--expose-gc']);
      const f = result.first as Figures;
      const pass = f.tracks === total && f.rssGrowthMb < GOAL_MB;
      failed ||= !pass;
      console.log(
        `${f.kind.padEnd(9)} ${String(f.tracks).padStart(7)} ${f.seconds.toFixed(2).padStart(10)} ${Math.round(f.tracks / f.seconds).toString().padStart(9)}` +
          ` ${`${f.baselineMb.toFixed(1)} MB`.padStart(13)} ${`${f.rssGrowthMb.toFixed(1)} MB`.padStart(16)} ${`${f.heapGrowthMb.toFixed(1)} MB`.padStart(17)}  ${pass ? 'PASS' : 'FAIL'}`,
      );
      result.proc.kill();
    } finally {
      server.proc.removeAllListeners('exit');
      server.proc.kill();
    }
  }
  process.exitCode = failed ? 1 : 0;
}

async function main(): Promise<void> {
  const [mode, kind, arg] = process.argv.slice(2);
  if (mode === '--serve') {
    const srv = serve(kind as ServerType, Number(arg));
    srv.listen(0, '127.0.0.1', () => process.send?.({ port: (srv.address() as AddressInfo).port }));
    return;
  }
  if (mode === '--enumerate') {
    const figures = await enumerate(kind as ServerType, arg ?? '');
    process.send?.(figures, () => process.exit(0));
    return;
  }
  await orchestrate(mode ? Number(mode) : 100_000);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

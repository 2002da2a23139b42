import 'reflect-metadata';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { startSupysonic, WESNOTH_MUSIC_DIR } from '@polyphony/testkit';
import { SeededRandom } from '@polyphony/vectors';
import { startBenchInstall } from '../standalone/bench-install';

/**
 * Album creation quality (issue 31 "Measure what you ship"): cohesion and artist spread of 20 albums from random
 * seeds (POST /api/album_creation/generate, 12 tracks) against 20 random 12-track draws and against each seed
 * with its 11 nearest neighbours, all over the songs of one server.
 *
 *   cohesion      mean pairwise cosine of the tracks' unit embeddings (the album's own `stats.cohesion`);
 *   seed sim.     mean cosine of the other tracks with the seed (how much the album stays on its seed);
 *   artists       distinct track artists per album;  top share: the largest share of one artist.
 *
 * Two modes:
 *  - a running install: DATABASE_URL, API_TOKEN (and POLYPHONY_URL, default http://127.0.0.1:8000;
 *    ALBUM_SERVER, default the default server) -- measures its analysed library;
 *  - none given: a scratch install in this process (TEST_DATABASE_URL's server) analyses the Wesnoth corpus
 *    (every file of WESNOTH_MUSIC_DIR, served by supysonic) with the MusiCNN model (MODELS_DIR, default
 *    <repo>/../shared/models; MUSICNN_PATCHES=2 as the golden suite) and measures it. Several minutes of CPU.
 * Usage: node bench/dist/index/album-quality.js [albums=20]
 */
const LENGTH = 12;

interface Song {
  itemId: string;
  provider: string;
  artist: string;
  vector: Float32Array;
}

function unit(buf: Buffer): Float32Array {
  const v = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n) || 1;
  return v.map((x) => x / n);
}

const cos = (a: Float32Array, b: Float32Array) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
};

interface Figures {
  cohesion: number;
  seedSim: number;
  artists: number;
  topShare: number;
  tracks: number;
}

function figures(songs: readonly Song[]): Figures {
  let sum = 0;
  let pairs = 0;
  for (let i = 0; i < songs.length; i++) for (let j = i + 1; j < songs.length; j++, pairs++) sum += cos(songs[i]!.vector, songs[j]!.vector);
  const seedSim = songs.slice(1).reduce((s, x) => s + cos(songs[0]!.vector, x.vector), 0) / Math.max(1, songs.length - 1);
  const counts = new Map<string, number>();
  for (const s of songs) counts.set(s.artist.toLowerCase(), (counts.get(s.artist.toLowerCase()) ?? 0) + 1);
  return { cohesion: pairs ? sum / pairs : 1, seedSim, artists: counts.size, topShare: Math.max(...counts.values()) / songs.length, tracks: songs.length };
}

function summary(label: string, rows: Figures[]): string {
  const mean = (k: keyof Figures) => rows.reduce((s, r) => s + r[k], 0) / Math.max(1, rows.length);
  const sd = (k: keyof Figures) => Math.sqrt(rows.reduce((s, r) => s + (r[k] - mean(k)) ** 2, 0) / Math.max(1, rows.length));
  const f = (x: number, d = 3) => x.toFixed(d);
  return `| ${label} | ${rows.length} | ${f(mean('tracks'), 1)} | ${f(mean('cohesion'))} ± ${f(sd('cohesion'))} | ${f(mean('seedSim'))} | ${f(mean('artists'), 1)} | ${f(mean('topShare'), 2)} |`;
}

/** Measures one server of an install. */
async function measure(databaseUrl: string, baseUrl: string, token: string, serverName: string | undefined, albums: number): Promise<void> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const server = (await db.query<{ id: string; name: string }>(serverName ? `SELECT id, name FROM registry.music_servers WHERE name = $1` : `SELECT id, name FROM registry.music_servers ORDER BY is_default DESC, name LIMIT 1`, serverName ? [serverName] : [])).rows[0];
    if (!server) throw new Error(`No server ${serverName ?? '(default)'}`);
    const rows = (
      await db.query<{ item_id: string; provider_id: string; artist: string; vector: Buffer }>(
        `SELECT t.item_id, m.provider_id, t.artist, t.vector FROM index.tracks t JOIN catalogue.track_server_map m ON m.item_id = t.item_id AND m.server_id = $1 ORDER BY t.item_id`,
        [server.id],
      )
    ).rows;
    const songs: Song[] = rows.map((r) => ({ itemId: r.item_id, provider: r.provider_id, artist: r.artist ?? '', vector: unit(r.vector) }));
    const byProvider = new Map(songs.map((s) => [s.provider, s]));
    const artistCount = new Set(songs.map((s) => s.artist.toLowerCase())).size;
    console.log(`Server "${server.name}": ${songs.length} songs by ${artistCount} artists, ${albums} albums of ${LENGTH} tracks`);
    if (songs.length < LENGTH) throw new Error(`Only ${songs.length} songs: at least ${LENGTH} are needed`);
    const rnd = new SeededRandom(31);
    const pickIndex = (n: number) => rnd.nextUint32() % n;
    const seeds: Song[] = [];
    const pool = [...songs];
    while (seeds.length < albums && pool.length) seeds.push(pool.splice(pickIndex(pool.length), 1)[0]!);

    const built: Figures[] = [];
    const targets: number[] = [];
    const styles = new Map<string, number>();
    let cpu = 0;
    for (const seed of seeds) {
      const t0 = process.cpuUsage();
      const res = await fetch(new URL(`/api/album_creation/generate?server=${encodeURIComponent(server.name)}`, baseUrl), {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ seed_type: 'song', item_id: seed.provider, length: LENGTH }),
      });
      const d = process.cpuUsage(t0);
      cpu += d.user + d.system;
      if (!res.ok) throw new Error(`generate answered ${res.status}: ${await res.text()}`);
      const album = (await res.json()) as { tracks: Array<{ item_id: string }>; stats: { target_cohesion: number; opener_style: string } };
      // Seed first, then the album's other tracks (seed similarity is measured against it).
      const tracks = [seed, ...album.tracks.map((t) => byProvider.get(t.item_id)!).filter((s) => s && s !== seed)];
      built.push(figures(tracks));
      targets.push(album.stats.target_cohesion);
      styles.set(album.stats.opener_style, (styles.get(album.stats.opener_style) ?? 0) + 1);
    }
    const random: Figures[] = [];
    for (let i = 0; i < albums; i++) {
      const p = [...songs];
      const draw: Song[] = [];
      while (draw.length < LENGTH) draw.push(p.splice(pickIndex(p.length), 1)[0]!);
      random.push(figures(draw));
    }
    const nearest: Figures[] = seeds.map((seed) => {
      const others = songs.filter((s) => s !== seed).sort((a, b) => cos(seed.vector, b.vector) - cos(seed.vector, a.vector) || (a.itemId < b.itemId ? -1 : 1));
      return figures([seed, ...others.slice(0, LENGTH - 1)]);
    });
    console.log('');
    console.log('| selection | albums | tracks | cohesion (mean ± sd) | seed sim. | artists | top share |');
    console.log('|---|---|---|---|---|---|---|');
    console.log(summary('album creation', built));
    console.log(summary('random 12-track draw', random));
    console.log(summary('seed + 11 nearest', nearest));
    console.log('');
    console.log(`target cohesion (calibrated per seed): mean ${(targets.reduce((s, x) => s + x, 0) / targets.length).toFixed(3)}, min ${Math.min(...targets).toFixed(3)}, max ${Math.max(...targets).toFixed(3)}`);
    console.log(`opener styles: ${[...styles].map(([k, v]) => `${k} ${v}`).join(', ')}`);
    console.log(`CPU of this process per request (includes the in-process stack in the self-contained mode; noisy under load): ${(cpu / 1000 / albums).toFixed(1)} ms`);
  } finally {
    await db.end();
  }
}

/** Scratch install with supysonic serving the Wesnoth corpus, analysed with MusiCNN. */
async function selfContained(albums: number): Promise<void> {
  const models = process.env.MODELS_DIR ? resolve(process.env.MODELS_DIR) : resolve(__dirname, '../../../..', 'shared', 'models');
  if (!existsSync(join(models, 'musicnn', 'MSD_musicnn.h5'))) {
    console.log(`album-quality SKIPPED: no MusiCNN weights at ${models} and no DATABASE_URL/API_TOKEN of an analysed install`);
    return;
  }
  const music = mkdtempSync(join(tmpdir(), 'album-quality-'));
  for (const f of readdirSync(WESNOTH_MUSIC_DIR).filter((x) => x.endsWith('.ogg'))) copyFileSync(join(WESNOTH_MUSIC_DIR, f), join(music, f));
  const supysonic = await startSupysonic({ musicDir: music, user: 'alice', password: 'alice-pass' });
  const install = await startBenchInstall('album', { env: { MODELS_DIR: models, MUSICNN_PATCHES: '2' } });
  const { call, base, token } = install;
  try {
    await call('POST', '/api/servers', { name: 'Supysonic', server_type: 'navidrome', creds: { url: supysonic.url, user: 'alice', password: 'alice-pass' } });
    const t0 = Date.now();
    const start = await call('POST', '/api/analysis/start', {});
    for (;;) {
      const s = await call('GET', `/api/status/${String(start.task_id)}`);
      if (['SUCCESS', 'FAIL', 'REVOKED'].includes(String(s.state))) {
        if (s.state !== 'SUCCESS') throw new Error(`analysis ended ${String(s.state)}`);
        break;
      }
      await new Promise((r) => setTimeout(r, 2000));
    }
    // The analysis ends with an index build; wait until the index serves every analysed song.
    for (;;) {
      const st = await call('GET', '/api/index/status');
      if (!st.building && Number(st.items) > 0) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    console.log(`Wesnoth corpus analysed in ${Math.round((Date.now() - t0) / 1000)} s (wall, under whatever load the machine has)`);
    await measure(install.databaseUrl, base, token, 'Supysonic', albums);
  } finally {
    await install.stop();
    await supysonic.close();
    rmSync(music, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const albums = Number(process.argv[2] ?? 20);
  const db = process.env.DATABASE_URL;
  const token = process.env.API_TOKEN;
  if (db && token) await measure(db, process.env.POLYPHONY_URL ?? 'http://127.0.0.1:8000', token, process.env.ALBUM_SERVER, albums);
  else await selfContained(albums);
}

main().catch((err: unknown) => {
  const e = err as Error & { cause?: unknown };
  console.error(e.message, e.cause ?? '', e.stack);
  process.exit(1);
});

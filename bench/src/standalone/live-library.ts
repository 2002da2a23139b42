/**
 * Live library latency (issue 35): how long after a song appears on a real Subsonic server (supysonic, its folder
 * rescanned by its CLI) the song is mapped, analysed, and returned by /api/similar_tracks and /api/search_tracks,
 * with the server polled every `interval` seconds and no full analysis run or rebuild; then how long a removed file
 * takes to lose its mapping. The standalone stack on a private PostgreSQL, the learned model from MODELS_DIR (or
 * shared/models) when present.
 *
 * Usage: node bench/dist/standalone/live-library.js [rounds=3] [interval_seconds=30] [base_songs=10] [serve_wait_seconds=90]
 * Prints one line per round and a summary (median and worst per stage). "served: no" = not returned within
 * serve_wait_seconds (an index that applies no additions in place serves a new song only after a rebuild).
 */
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path, { resolve } from 'node:path';
import { Client } from 'pg';
import { PrivatePostgres, startSupysonic, wesnothFiles } from '@polyphony/testkit';
import { startBenchInstall } from './bench-install';

const rounds = Number(process.argv[2] ?? 3);
const interval = Number(process.argv[3] ?? 30);
const baseSongs = Number(process.argv[4] ?? 10);
const serveWaitSeconds = Number(process.argv[5] ?? 90);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` every 250 ms until it returns a value; undefined after `timeoutMs`. */
async function until<T>(probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T | undefined> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(250)) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
  }
  return undefined;
}

function stats(xs: number[]): string {
  if (xs.length === 0) return 'n/a';
  const s = [...xs].sort((a, b) => a - b);
  return `median ${s[Math.floor((s.length - 1) / 2)]!.toFixed(1)} s, worst ${s[s.length - 1]!.toFixed(1)} s`;
}

async function main(): Promise<void> {
  const files = wesnothFiles();
  if (files.length < baseSongs + rounds + 1) throw new Error(`need ${baseSongs + rounds + 1} Wesnoth songs, have ${files.length}`);
  const root = await mkdtemp(path.join(tmpdir(), 'polyphony-live-library-'));
  await mkdir(path.join(root, 'music'));
  for (const f of files.slice(0, baseSongs)) await copyFile(f, path.join(root, 'music', path.basename(f)));
  const postgres = await PrivatePostgres.start();
  const supysonic = await startSupysonic({ musicDir: root, user: 'bench', password: 'bench-pass' });
  const models = process.env.MODELS_DIR ?? resolve(__dirname, '../../../..', 'shared', 'models');
  const install = await startBenchInstall('live', { adminUrl: postgres.url, env: existsSync(models) ? { MODELS_DIR: models } : {} });
  const pg = new Client({ connectionString: install.databaseUrl });
  await pg.connect();
  const q = async <T>(text: string, params: unknown[] = []) => (await pg.query(text, params)).rows as T[];
  try {
    const server = await install.call('POST', '/api/servers', {
      name: 'Live',
      server_type: 'navidrome',
      creds: { url: supysonic.url, user: 'bench', password: 'bench-pass' },
      change_detection: { mode: 'poll', interval_seconds: interval },
    });
    const run = await install.call('POST', '/api/analysis/start', {});
    for (;;) {
      const s = await install.send('GET', `/api/status/${run.task_id}`);
      const state = s.status === 200 ? (JSON.parse(s.text) as { state: string }).state : '';
      if (['SUCCESS', 'FAIL', 'REVOKED'].includes(state)) {
        if (state !== 'SUCCESS') throw new Error(`full analysis ended ${state}`);
        break;
      }
      await sleep(2000);
    }
    const runs = (await q<{ n: number }>(`SELECT count(*)::int AS n FROM analysis.runs`))[0]!.n;
    const builds = (await q<{ n: number }>(`SELECT count(*)::int AS n FROM registry.tasks WHERE type = 'index_build'`))[0]!.n;
    await until(async () => ((await q<{ token: string | null }>(`SELECT token FROM analysis.change_watch WHERE server_id = $1`, [server.id]))[0]?.token ? true : undefined), 120_000);
    console.log(`setup: ${baseSongs} songs analysed by a full run, server polled every ${interval} s, load ${loadavg()[0]!.toFixed(1)} (${process.env.MODELS_DIR || existsSync(models) ? 'MusiCNN on' : 'DSP only'})`);

    const mapped: number[] = [];
    const analysed: number[] = [];
    const served: number[] = [];
    let notServed = 0;
    for (let i = 0; i < rounds; i++) {
      const file = files[baseSongs + i]!;
      const name = path.basename(file);
      await copyFile(file, path.join(root, 'music', name));
      // A random phase against the poll, as a real addition has.
      await sleep(Math.random() * interval * 1000);
      const t0 = Date.now();
      await supysonic.rescan();
      const row = await until(async () => (await q<{ item_id: string; provider_id: string }>(`SELECT item_id, provider_id FROM catalogue.track_server_map WHERE server_id = $1 AND file_path LIKE $2`, [server.id, `%${name}`]))[0], 180_000);
      if (!row) {
        console.log(`round ${i + 1}: ${name} not mapped within 180 s`);
        continue;
      }
      const tMapped = (Date.now() - t0) / 1000;
      const done = await until(async () => (await q(`SELECT 1 FROM analysis.run_tracks WHERE server_id = $1 AND outcome IN ('analyzed','mapped_existing') AND item_id = $2`, [server.id, row.item_id]))[0], 60_000);
      const tAnalysed = done ? (Date.now() - t0) / 1000 : NaN;
      const title = (await q<{ title: string }>(`SELECT title FROM catalogue.score WHERE item_id = $1`, [row.item_id]))[0]?.title ?? '';
      const shown = await until(async () => {
        // The API answers in the server's own ids (provider ids), not the catalogue's content ids.
        const sim = await install.send('GET', `/api/similar_tracks?item_id=${encodeURIComponent(row.provider_id)}&n=5`);
        const search = await install.send('GET', `/api/search_tracks?search_query=${encodeURIComponent(title)}`);
        const found = sim.status === 200 && search.status === 200 && (JSON.parse(search.text) as Array<{ item_id: string }>).some((r) => r.item_id === row.provider_id);
        return found ? true : undefined;
      }, serveWaitSeconds * 1000);
      const tServed = shown ? (Date.now() - t0) / 1000 : NaN;
      mapped.push(tMapped);
      if (done) analysed.push(tAnalysed);
      if (shown) served.push(tServed);
      else notServed++;
      console.log(`round ${i + 1}: ${name}: mapped ${tMapped.toFixed(1)} s, analysed ${done ? tAnalysed.toFixed(1) : '?'} s, served by similar_tracks + search_tracks ${shown ? `${tServed.toFixed(1)} s` : `no (not within ${serveWaitSeconds} s)`} after the rescan (load ${loadavg()[0]!.toFixed(1)})`);
    }
    // A removal: the file goes, the folder is rescanned, the mapping goes at the next check.
    const victim = path.basename(files[0]!);
    await rm(path.join(root, 'music', victim));
    const t0 = Date.now();
    await supysonic.rescan();
    const gone = await until(async () => ((await q(`SELECT 1 FROM catalogue.track_server_map WHERE server_id = $1 AND file_path LIKE $2`, [server.id, `%${victim}`])).length === 0 ? true : undefined), 180_000);
    const tRemoved = (Date.now() - t0) / 1000;
    const runsAfter = (await q<{ n: number }>(`SELECT count(*)::int AS n FROM analysis.runs`))[0]!.n;
    const buildsAfter = (await q<{ n: number }>(`SELECT count(*)::int AS n FROM registry.tasks WHERE type = 'index_build'`))[0]!.n;
    console.log(`removal: mapping of ${victim} ${gone ? `gone ${tRemoved.toFixed(1)} s after the rescan` : 'still there after 180 s'}`);
    console.log(`summary (poll ${interval} s, ${rounds} additions): mapped ${stats(mapped)}; analysed ${stats(analysed)}; served ${served.length ? stats(served) : 'never'}${notServed ? ` (${notServed} not served within ${serveWaitSeconds} s)` : ''}; full runs started ${runsAfter - runs}, index builds ${buildsAfter - builds}`);
  } finally {
    await pg.end();
    await install.stop();
    await supysonic.close();
    await postgres.destroy();
    await rm(root, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

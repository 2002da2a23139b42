import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { PrivatePostgres } from '@polyphony/testkit';
import { SeededRandom } from '@polyphony/vectors';
import { startBenchInstall, type BenchInstall } from '../standalone/bench-install';

/**
 * Restore drill (issue 36 "Restores that are proven"; docs/architecture.md "Backup and restore"): a backup of an
 * N-song install (default 100,000 synthetic songs: 200-d float32 vectors in 64 Gaussian clusters, 2,000 artists,
 * one server; a private PostgreSQL unless PG_ADMIN_URL is set) restored onto a fresh install answers the same similar-songs and search calls identically.
 *
 * Steps, each timed: seed install A by SQL (the rows analysis writes: score, embedding, mapping), build its index;
 * ask `probes` similar-songs calls (n=10) and 20 searches; back up A (`POST /api/backup`, with a passphrase) and
 * download the archive; start a fresh install B; send B a truncated copy of the archive (must be refused with a
 * 4xx and change nothing) and then one with a flipped byte; restore the whole archive onto B; wait for B's rebuilt
 * index; ask the same calls and compare the answers byte for byte.
 * Printed: archive size (bytes per song), backup time, download time, restore time, rebuild time, identical
 * answers, and the refusals. Figures depend on the machine's load: run it on a quiet machine.
 * Usage: node bench/dist/ops/restore-drill.js [songs=100000] [probes=200]
 */
async function main(): Promise<void> {
  const songs = Number(process.argv[2] ?? 100_000);
  const probes = Number(process.argv[3] ?? 200);
  // A private PostgreSQL unless PG_ADMIN_URL names one: two installs need more connections than a shared server may have free.
  const postgres = process.env.PG_ADMIN_URL ? undefined : await PrivatePostgres.start();
  const adminUrl = process.env.PG_ADMIN_URL ?? postgres!.url;
  const dirs: string[] = [];
  const installs: BenchInstall[] = [];
  const install = async (name: string) => {
    const backupDir = mkdtempSync(join(tmpdir(), `polyphony-drill-${name}-`));
    dirs.push(backupDir);
    const it = await startBenchInstall(`drill_${name}`, { adminUrl, env: { BACKUP_DIR: backupDir } });
    installs.push(it);
    return it;
  };
  const seconds = (t0: number) => ((performance.now() - t0) / 1000).toFixed(1);
  try {
    const a = await install('a');
    const server = await a.call<{ id: string }>('POST', '/api/servers', { name: 'Drill', server_type: 'navidrome', creds: { url: 'http://127.0.0.1:9', user: 'u', password: 'drill-secret' } });
    const db = new Client({ connectionString: a.databaseUrl });
    await db.connect();
    let t0 = performance.now();
    const rng = new SeededRandom(42);
    const gauss = () => rng.nextGaussian();
    const centres = Array.from({ length: 64 }, () => Float32Array.from({ length: 200 }, () => gauss()));
    const batch = 5000;
    for (let start = 0; start < songs; start += batch) {
      const n = Math.min(batch, songs - start);
      const ids: string[] = [];
      const titles: string[] = [];
      const artists: string[] = [];
      const vectors: string[] = [];
      const providers: string[] = [];
      const paths: string[] = [];
      for (let k = 0; k < n; k++) {
        const i = start + k;
        const c = centres[i % 64]!;
        const v = Float32Array.from(c, (x) => x + 0.6 * gauss());
        ids.push(`fp_drill${i.toString(16).padStart(8, '0')}`);
        titles.push(`Song ${i}`);
        artists.push(`Artist ${i % 2000}`);
        vectors.push(Buffer.from(v.buffer).toString('base64'));
        providers.push(`p-${i}`);
        paths.push(`/music/Artist ${i % 2000}/Album ${i % 9000}/${i}.flac`);
      }
      await db.query(
        `INSERT INTO catalogue.score (item_id, title, artist, album, duration_seconds, file_path, embedder_version, source_server_id, source_provider_id)
         SELECT u.id, u.title, u.artist, u.artist || ' album', 180 + length(u.id) % 120, u.path, 'drill-synthetic', $6, u.p
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(id, title, artist, path, p)`,
        [ids, titles, artists, paths, providers, server.id],
      );
      await db.query(`INSERT INTO catalogue.embedding (item_id, vector, embedder_version) SELECT id, decode(v, 'base64'), 'drill-synthetic' FROM unnest($1::text[], $2::text[]) AS u(id, v)`, [ids, vectors]);
      await db.query(`INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id, file_path) SELECT $1, p, i, f FROM unnest($2::text[], $3::text[], $4::text[]) AS u(p, i, f)`, [
        server.id,
        providers,
        ids,
        paths,
      ]);
    }
    await db.end();
    console.log(`seeded ${songs} songs in ${seconds(t0)} s`);
    t0 = performance.now();
    await a.rebuildIndex(songs);
    console.log(`install A: index built in ${seconds(t0)} s`);
    const paths = [
      ...Array.from({ length: probes }, (_, i) => `/api/similar_tracks?item_id=p-${(i * 7919) % songs}&n=10`),
      ...Array.from({ length: 20 }, (_, i) => `/api/search_tracks?search_query=${encodeURIComponent(`Artist ${i * 97}`)}`),
    ];
    const answers = async (it: BenchInstall) => Promise.all(paths.map(async (p) => (await it.send('GET', p)).text));
    const before = await answers(a);

    t0 = performance.now();
    const started = await a.call('POST', '/api/backup', { passphrase: 'drill passphrase' });
    let ready: Record<string, any> | undefined;
    while (!ready) {
      const list = (await a.call('GET', '/api/backup')).backups as Array<Record<string, any>>;
      ready = list.find((x) => x.id === started.backup_id && x.status === 'ready');
      if (list.some((x) => x.id === started.backup_id && x.status === 'failed')) throw new Error('backup failed');
      if (!ready) await new Promise((r) => setTimeout(r, 500));
    }
    const backupS = seconds(t0);
    t0 = performance.now();
    const res = await fetch(new URL(`/api/backup/${ready.id}`, a.base), { headers: { authorization: `Bearer ${a.token}` } });
    const archive = Buffer.from(await res.arrayBuffer());
    const downloadS = seconds(t0);
    const size = archive.length;

    const b = await install('b');
    const bDb = new Client({ connectionString: b.databaseUrl });
    await bDb.connect();
    const countB = async () => Number((await bDb.query(`SELECT count(*)::int AS n FROM catalogue.score`)).rows[0].n);
    const restore = (body: Buffer) => b.send('POST', '/api/backup/restore', body, { 'content-type': 'application/gzip', 'x-backup-passphrase': 'drill passphrase' });
    const truncated = await restore(archive.subarray(0, Math.floor(archive.length * 0.6)));
    const truncatedSongs = await countB();
    const flipped = Buffer.from(archive);
    flipped[Math.floor(flipped.length / 2)]! ^= 0xff;
    const damaged = await restore(flipped);
    const damagedSongs = await countB();
    t0 = performance.now();
    const restored = await restore(archive);
    if (restored.status !== 200) throw new Error(`restore answered ${restored.status}: ${restored.text}`);
    const restoreS = seconds(t0);
    t0 = performance.now();
    await b.waitForIndex(songs, 0);
    const rebuildS = seconds(t0);
    const after = await answers(b);
    await bDb.end();
    const same = before.filter((x, i) => x === after[i]).length;
    console.log('\nRestore drill (synthetic songs; figures depend on the machine load)');
    console.log(`| songs | archive | per song | backup | download | restore | index rebuild after restore | identical answers | truncated archive | damaged archive |`);
    console.log(`|---|---|---|---|---|---|---|---|---|---|`);
    console.log(
      `| ${songs} | ${(size / 1048576).toFixed(1)} MiB | ${(size / songs).toFixed(0)} B | ${backupS} s | ${downloadS} s | ${restoreS} s | ${rebuildS} s | ${same}/${paths.length} | ${truncated.status}, ${truncatedSongs} songs written | ${damaged.status}, ${damagedSongs} songs written |`,
    );
    if (same !== paths.length) {
      const i = before.findIndex((x, k) => x !== after[k]);
      console.log(`first difference: ${paths[i]}\n  before: ${before[i]!.slice(0, 400)}\n  after:  ${after[i]!.slice(0, 400)}`);
    }
  } finally {
    for (const it of installs) await it.stop().catch(() => undefined);
    await postgres?.destroy();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error((err as Error).stack ?? (err as Error).message);
  process.exit(1);
});

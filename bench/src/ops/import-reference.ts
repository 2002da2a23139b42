/**
 * Import from the reference (issue 34): time per 10k songs. Builds a database in the reference's v3.x schema on a
 * PRIVATE PostgreSQL (testkit PrivatePostgres; the shared server's connections are not used) with synthetic rows:
 * N songs (200-d float32 vectors from a seeded Gaussian mixture, fp_ ids, features), 2 servers with one mapping
 * per song on the first and a merged copy of every 10th song on the second, a Chromaprint per 5th song, N/100
 * exclusions, a 100-track playlist, users; then starts the standalone stack on the same private server and runs
 * the import through its API (connection string): a dry run, the import, and the import again (idempotent).
 * Prints the rows per table, the wall time of each run and seconds per 10k songs, with the machine load.
 *
 * Usage: node bench/dist/ops/import-reference.js [songs=10000,50000]
 */
import { loadavg } from 'node:os';
import { Client } from 'pg';
import { PrivatePostgres, SyntheticMixture, insertReferenceRows, referenceChromaprintBytes, referenceSchemaSql, referenceVectorBytes } from '@polyphony/testkit';
import { startBenchInstall } from '../standalone/bench-install';

const sizes = (process.argv[2] ?? '10000,50000').split(',').map(Number);

function fpId(i: number): string {
  return `fp_4${i.toString(16).padStart(50, '0')}`;
}

async function buildReference(pg: PrivatePostgres, n: number): Promise<string> {
  const name = `reference_${n}`;
  const admin = new Client({ connectionString: pg.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = pg.url.replace(/\/postgres$/, `/${name}`);
  const c = new Client({ connectionString: url });
  await c.connect();
  for (const sql of referenceSchemaSql('multi-server')) await c.query(sql);
  await insertReferenceRows(c, 'music_servers', [
    { server_id: 'a'.repeat(32), name: 'Main', server_type: 'navidrome', creds: JSON.stringify({ url: 'http://127.0.0.1:9/main', user: 'u', password: 'p' }), music_libraries: '', is_default: true },
    { server_id: 'b'.repeat(32), name: 'Second', server_type: 'jellyfin', creds: JSON.stringify({ url: 'http://127.0.0.1:9/second', user_id: 'u', token: 't' }), music_libraries: '', is_default: false },
  ]);
  const mix = new SyntheticMixture({ dim: 200, seed: 34 });
  let off = 0;
  for (const vecs of mix.batches(n, 2000)) {
    const count = vecs.ids.length;
    const rows = Array.from({ length: count }, (_, k) => off + k);
    await insertReferenceRows(c, 'score', rows.map((i) => ({ item_id: fpId(i), title: `Song ${i}`, author: `Artist ${i % 997}`, album: `Album ${i % 4001}`, tempo: 90 + (i % 60), key: 'C', scale: 'major', energy: 0.5, mood_vector: 'rock:0.55,pop:0.52', other_features: 'danceable:0.5', year: 2000 + (i % 20), rating: i % 6, duration: 120 + (i % 200) })));
    await insertReferenceRows(c, 'embedding', rows.map((i, k) => ({ item_id: fpId(i), embedding: referenceVectorBytes(vecs.vectors.subarray(k * 200, (k + 1) * 200)) })));
    await insertReferenceRows(c, 'track_server_map', [
      ...rows.map((i) => ({ item_id: fpId(i), server_id: 'a'.repeat(32), provider_track_id: `main-${i}`, match_tier: 'analysis', file_path: `/music/${i % 4001}/${i}.flac` })),
      ...rows.filter((i) => i % 10 === 0).map((i) => ({ item_id: fpId(i), server_id: 'b'.repeat(32), provider_track_id: `second-${i}`, match_tier: 'fingerprint', file_path: `/media/${i % 4001}/${i}.flac` })),
    ]);
    await insertReferenceRows(c, 'chromaprint', rows.filter((i) => i % 5 === 0).map((i) => ({ server_id: 'a'.repeat(32), provider_track_id: `main-${i}`, fingerprint: referenceChromaprintBytes(Array.from({ length: 950 }, (_, w) => (i * 2654435761 + w * 40503) >>> 0)) })));
    off += count;
  }
  await insertReferenceRows(c, 'analysis_exclusions', Array.from({ length: Math.floor(n / 100) }, (_, i) => ({ server_id: 'a'.repeat(32), provider_item_id: `bad-${i}`, title: `Bad ${i}`, artist: 'X', reason_code: 'undecodable' })));
  await insertReferenceRows(c, 'playlist', Array.from({ length: 100 }, (_, i) => ({ playlist_name: 'Mix_automatic', item_id: fpId(i), title: `Song ${i}`, author: 'A', server_id: 'a'.repeat(32) })));
  await insertReferenceRows(c, 'audiomuse_users', Array.from({ length: 5 }, (_, i) => ({ username: `user${i}`, role: 'user', password_hash: '$argon2id$v=19$m=1024,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA' })));
  await c.end();
  return url;
}

async function main(): Promise<void> {
  const pg = await PrivatePostgres.start();
  try {
    for (const n of sizes) {
      const t0 = Date.now();
      const ref = await buildReference(pg, n);
      console.log(`reference database with ${n} songs built in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      const install = await startBenchInstall(`import${n}`, { adminUrl: pg.url });
      try {
        for (const [label, dry] of [['dry run', true], ['import', false], ['import again', false]] as const) {
          const load = loadavg()[0]!.toFixed(1);
          const t = Date.now();
          const { task_id } = await install.call<{ task_id: string }>('POST', '/api/import/audiomuse', { connection_string: ref, dry_run: dry });
          let status: Record<string, any>;
          let resets = 0;
          for (;;) {
            try {
              status = await install.call('GET', '/api/import/audiomuse/status');
            } catch (err) {
              // A kept-alive socket the busy one-process stack closed meanwhile (ECONNRESET): poll again, and say how often.
              if (++resets > 20) throw err;
              await new Promise((r) => setTimeout(r, 1000));
              continue;
            }
            if (status.task_id === task_id && ['SUCCESS', 'FAIL', 'REVOKED'].includes(status.state)) break;
            await new Promise((r) => setTimeout(r, 500));
          }
          const s = (Date.now() - t) / 1000;
          const r = status.report;
          console.log(`${n} songs, ${label}: ${status.state} in ${s.toFixed(1)} s (task incl. index rebuild for the import), import step ${(r?.elapsed_ms / 1000).toFixed(1)} s = ${((r?.elapsed_ms / 1000) * (10000 / n)).toFixed(1)} s per 10k songs; load ${load}${resets ? `; ${resets} status polls reset` : ''}`);
          if (r) console.log(`  tables: ${Object.entries(r.tables as Record<string, { read: number; imported: number; existing: number; skipped: number }>).map(([t, c]) => `${t} ${c.read}/${c.imported}/${c.existing}/${c.skipped}`).join(', ')} (read/imported/existing/skipped)`);
        }
      } finally {
        await install.stop();
      }
    }
  } finally {
    await pg.destroy();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

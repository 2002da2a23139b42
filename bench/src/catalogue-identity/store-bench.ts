/**
 * Benchmark of the catalogue store on real PostgreSQL (not a timed test; prints figures).
 *
 *   npx tsc -b services/catalogue-identity
 *   node bench/dist/catalogue-identity/store-bench.js resolve [rows=100000]
 *   node bench/dist/catalogue-identity/store-bench.js relabel [rows=100000]
 *
 * Needs PostgreSQL at BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres); a fresh
 * database is created and dropped (KEEP_DB=1 keeps it).
 *
 * Synthetic catalogue: `rows` songs with 200-d embeddings drawn as N(0,1) plus a fixed per-dimension
 * bias (0.6 x a fixed N(0,1) vector), so signature bits are skewed like real embeddings' and band
 * buckets are uneven; rows are bulk-inserted (score, embedding, signature_band, track_server_map) in
 * 5000-row statements.
 *
 * resolve: latency through PgIdentityRepository.resolve (the same transaction the HTTP route runs) for
 *   (a) new songs, (b) copies of stored songs (merge: mapping row only), (c) redeliveries (fast path),
 *   and the band lookup alone with its candidate count. p50/p95/p99 in ms.
 * relabel: the rows are stored under fp_3 ids with scheme state 3, then the service starts with
 *   CATALOGUE_ID_SCHEME_VERSION=4: wall time of the start-time relabel and peak RSS / heap of the process
 *   while it runs (sampled every 50 ms).
 */
import 'reflect-metadata';
import { Client } from 'pg';
import { buildCatalogue, loadCatalogueConfig } from '@polyphony/catalogue-identity';
import { createDb } from './bench-db';
import { bandKeys, bandLayoutForTolerance, DEFAULT_IDENTITY_CONFIG, computeSignature, formatCanonicalId, encodeVector, signatureParam, PgIdentityRepository, PgCandidateSource } from '@polyphony/catalogue-identity/identity';
import { mulberry32 as prng } from '@polyphony/vectors';

const rand = prng(12345);
const gauss = (): number => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
const BIAS = Array.from({ length: 200 }, () => 0.6 * gauss());
const song = (): Float32Array => Float32Array.from(BIAS, (b) => b + gauss());
const copy = (e: Float32Array): Float32Array => Float32Array.from(e, (v) => v + 0.02 * gauss());

function pct(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
}
const fmt = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(2)} ms, p95 ${pct(xs, 95).toFixed(2)} ms, p99 ${pct(xs, 99).toFixed(2)} ms (n=${xs.length})`;

/** Bulk-inserts `rows` synthetic songs with ids of `version`; returns a sample of (id, embedding). */
async function seed(url: string, rows: number, version: number): Promise<Array<{ id: string; embedding: Float32Array }>> {
  const layout = bandLayoutForTolerance(DEFAULT_IDENTITY_CONFIG.signatureMaxHamming);
  const c = new Client({ connectionString: url });
  await c.connect();
  const sample: Array<{ id: string; embedding: Float32Array }> = [];
  const started = Date.now();
  for (let done = 0; done < rows; ) {
    const n = Math.min(5000, rows - done);
    const ids: string[] = [];
    const vectors: Buffer[] = [];
    const sigs: string[] = [];
    const bIds: string[] = [];
    const bNos: number[] = [];
    const bVals: number[] = [];
    const servers: string[] = [];
    const pids: string[] = [];
    for (let i = 0; i < n; i++) {
      const e = song();
      const s = computeSignature(e);
      if (!s.ok) continue;
      const id = formatCanonicalId(version, s.code);
      if (ids.includes(id)) continue;
      ids.push(id);
      vectors.push(encodeVector(e));
      sigs.push(signatureParam(s.code));
      for (const k of bandKeys(s.code, layout)) {
        bIds.push(id);
        bNos.push(k.band);
        bVals.push(k.value);
      }
      servers.push('bench-server');
      pids.push(`p${done + i}`);
      if (sample.length < 2000 && rand() < 0.05) sample.push({ id, embedding: e });
    }
    await c.query('BEGIN');
    await c.query(
      `INSERT INTO catalogue.score (item_id, title, artist, duration_seconds, embedder_version, file_path) SELECT id, 'T', 'A', 200, 'bench', '/m/' || id || '.flac' FROM unnest($1::text[]) AS id ON CONFLICT DO NOTHING`,
      [ids],
    );
    await c.query(`INSERT INTO catalogue.embedding (item_id, vector, signature, embedder_version) SELECT i, v, s::bit(200), 'bench' FROM unnest($1::text[], $2::bytea[], $3::text[]) AS t(i, v, s) ON CONFLICT DO NOTHING`, [ids, vectors, sigs]);
    await c.query(
      `INSERT INTO catalogue.signature_band (song_no, band_no, band_value)
       SELECT s.song_no, t.b, t.v FROM unnest($1::text[], $2::smallint[], $3::int[]) AS t(i, b, v) JOIN catalogue.score s ON s.item_id = t.i ON CONFLICT DO NOTHING`,
      [bIds, bNos, bVals],
    );
    await c.query(
      `INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id, file_path, duration_seconds) SELECT s, p, i, '/m/' || i || '.flac', 200 FROM unnest($1::text[], $2::text[], $3::text[]) AS t(s, p, i) ON CONFLICT DO NOTHING`,
      [servers, pids, ids],
    );
    await c.query('COMMIT');
    done += n;
    if (done % 50000 === 0 || done === rows) process.stdout.write(`  seeded ${done} rows (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
  }
  await c.query('ANALYZE');
  await c.end();
  return sample;
}

async function benchResolve(rows: number): Promise<void> {
  const db = await createDb();
  const config = loadCatalogueConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'error', DB_POOL_SIZE: '4' });
  const svc = buildCatalogue(config, { migrateOnStart: true });
  try {
    await svc.start();
    console.log(`resolve benchmark: ${rows} synthetic songs in PostgreSQL`);
    const sample = await seed(config.databaseUrl, rows, 4);
    const scheme = svc.identity.activeScheme;
    if (!scheme) throw new Error('not started');
    const store = new PgIdentityRepository(svc.runtime.ds);
    const opts = { config: { ...DEFAULT_IDENTITY_CONFIG, schemeVersion: scheme.version }, layout: scheme.layout };
    const req = (serverId: string, providerId: string, e: Float32Array) => ({
      serverId,
      providerId,
      embedding: Array.from(e),
      embedderVersion: 'bench',
      durationSeconds: 200,
      metadata: { title: 'T', artist: 'A', filePath: `/bench/${serverId}/${providerId}.flac` },
      descriptors: {},
    });
    // Warm-up.
    for (let i = 0; i < 20; i++) await store.resolve(req('warm', `w${i}`, song()), opts);

    const lookup: number[] = [];
    const cands: number[] = [];
    for (let i = 0; i < 300; i++) {
      const e = i % 2 === 0 ? song() : copy((sample[i % sample.length] as { embedding: Float32Array }).embedding);
      const s = computeSignature(e);
      if (!s.ok) continue;
      const src = new PgCandidateSource(svc.runtime.ds, scheme.layout.id, 'bench');
      const t = process.hrtime.bigint();
      const found = await src.findBySignatureBands({ signature: s.code, bands: bandKeys(s.code, scheme.layout), maxHamming: opts.config.signatureMaxHamming, layoutId: scheme.layout.id });
      lookup.push(Number(process.hrtime.bigint() - t) / 1e6);
      cands.push(found.length);
    }
    console.log(`band lookup + evidence load: ${fmt(lookup)}; candidates per lookup mean ${(cands.reduce((a, b) => a + b, 0) / cands.length).toFixed(2)}, max ${Math.max(...cands)}`);

    const time = async (label: string, n: number, make: (i: number) => ReturnType<typeof req>, expect: 'new' | 'existing') => {
      const xs: number[] = [];
      let wrong = 0;
      for (let i = 0; i < n; i++) {
        const r = make(i);
        const t = process.hrtime.bigint();
        const res = await store.resolve(r, opts);
        xs.push(Number(process.hrtime.bigint() - t) / 1e6);
        if (res.outcome !== expect) wrong++;
      }
      console.log(`${label}: ${fmt(xs)}${wrong ? `; ${wrong} unexpected outcomes` : ''}`);
    };
    await time('resolve new song', 500, (i) => req('bench-2', `new${i}`, song()), 'new');
    await time('resolve copy of a stored song (merge)', 500, (i) => req('bench-3', `copy${i}`, copy((sample[i % sample.length] as { embedding: Float32Array }).embedding)), 'existing');
    await time('resolve redelivery (already mapped)', 500, (i) => req('bench-3', `copy${i}`, song()), 'existing');
    const sizes = (await svc.runtime.ds.query(`SELECT pg_size_pretty(pg_database_size(current_database())) AS size`)) as Array<{ size: string }>;
    console.log(`database size: ${sizes[0]?.size}`);
  } finally {
    await svc.stop();
    await db.drop();
  }
}

async function benchRelabel(rows: number): Promise<void> {
  const db = await createDb();
  try {
    const v3 = buildCatalogue(loadCatalogueConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'error', CATALOGUE_ID_SCHEME_VERSION: '3' }), { migrateOnStart: true });
    await v3.start();
    console.log(`relabel benchmark: ${rows} synthetic fp_3 songs in PostgreSQL -> fp_4`);
    await seed(db.url, rows, 3);
    await v3.stop();
    const c = new Client({ connectionString: db.url });
    await c.connect();
    await c.query(`UPDATE catalogue.settings SET value = '4' WHERE key = 'CATALOGUE_ID_SCHEME_VERSION'`);
    await c.end();

    global.gc?.();
    const base = process.memoryUsage();
    let peakRss = base.rss;
    let peakHeap = base.heapUsed;
    const timer = setInterval(() => {
      const m = process.memoryUsage();
      peakRss = Math.max(peakRss, m.rss);
      peakHeap = Math.max(peakHeap, m.heapUsed);
    }, 50);
    const v4 = buildCatalogue(loadCatalogueConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'error', RELABEL_CHUNK_SIZE: process.env.RELABEL_CHUNK_SIZE ?? '5000' }), { migrateOnStart: true });
    const t = Date.now();
    await v4.start();
    const wall = Date.now() - t;
    clearInterval(timer);
    const r = v4.schemeReport();
    const mb = (b: number) => `${(b / 1048576).toFixed(0)} MB`;
    console.log(`relabel at start: ${(wall / 1000).toFixed(1)} s wall (scheme check ${((r?.elapsedMs ?? 0) / 1000).toFixed(1)} s: plan ${((r?.planMs ?? 0) / 1000).toFixed(1)} s, apply ${((r?.applyMs ?? 0) / 1000).toFixed(1)} s), action ${r?.action}`);
    console.log(`  summary ${JSON.stringify(r?.summary)}`);
    console.log(`  applied ${JSON.stringify(r?.applied)}`);
    console.log(`  process RSS ${mb(base.rss)} before, peak ${mb(peakRss)}; heap used ${mb(base.heapUsed)} before, peak ${mb(peakHeap)}`);
    await v4.stop();
    const again = buildCatalogue(loadCatalogueConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'error' }), { migrateOnStart: true });
    const t2 = Date.now();
    await again.start();
    console.log(`next start: action ${again.schemeReport()?.action}, ${Date.now() - t2} ms`);
    await again.stop();
  } finally {
    await db.drop();
  }
}

const [mode = 'resolve', n = '100000'] = process.argv.slice(2);
const rows = Number(n);
(mode === 'relabel' ? benchRelabel(rows) : benchResolve(rows)).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

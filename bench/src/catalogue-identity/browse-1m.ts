import 'reflect-metadata';
import { Client } from 'pg';
import { BROWSE_COUNT_CAP, BROWSE_PAGE_SIZE } from '@polyphony/contracts';
import { buildCatalogue, loadCatalogueConfig } from '@polyphony/catalogue-identity';
import { BrowseRepository } from '@polyphony/catalogue-identity/identity';
import { InMemoryBus, createLogger } from '@polyphony/platform';
import { createDb } from './bench-db';

/**
 * Browse at scale (issue 32): GET /internal/browse's queries (BrowseRepository: a page of BROWSE_PAGE_SIZE + 1
 * rows and the count up to BROWSE_COUNT_CAP, as BrowseService runs them) over a synthetic catalogue of N songs
 * (default 1,000,000; 50 songs an artist, 10 an album) on two servers: "a" holds every song, every 10th with a
 * second file (duplicates); "b" holds every other song; 1% of the songs are on no server (orphans).
 * Prints the wall time of each selection on page 1 and on page 500 (OFFSET 49,900), median of 3 runs.
 * Wall time of PostgreSQL on this machine: noisy under load, compare the selections with each other.
 * Usage: node bench/dist/catalogue-identity/browse-1m.js [N]
 */
async function seed(url: string, n: number): Promise<void> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(
      `INSERT INTO catalogue.score (item_id, title, artist, album, year, duration_seconds, embedder_version)
       SELECT 'fp_4' || lpad(to_hex(i), 50, '0'), 'Song ' || i, 'Artist ' || (i / 50), 'Album ' || (i / 10), 1960 + i % 60, 120 + i % 200, 'bench'
         FROM generate_series(0, $1 - 1) AS i`,
      [n],
    );
    await c.query(
      `INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id, file_path, match_tier)
       SELECT 'a', 'a' || i, 'fp_4' || lpad(to_hex(i), 50, '0'), '/music/' || i || '.flac', 'analysis' FROM generate_series(0, $1 - 1) AS i WHERE i % 100 <> 99
       UNION ALL
       SELECT 'a', 'a' || i || 'b', 'fp_4' || lpad(to_hex(i), 50, '0'), '/music/copies/' || i || '.flac', 'analysis' FROM generate_series(0, $1 - 1) AS i WHERE i % 10 = 0
       UNION ALL
       SELECT 'b', 'b' || i, 'fp_4' || lpad(to_hex(i), 50, '0'), '/nas/' || i || '.mp3', 'analysis' FROM generate_series(0, $1 - 1) AS i WHERE i % 2 = 0 AND i % 100 <> 99`,
      [n],
    );
    await c.query('ANALYZE catalogue.score');
    await c.query('ANALYZE catalogue.track_server_map');
  } finally {
    await c.end();
  }
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 1_000_000);
  if (!Number.isInteger(n) || n <= 0) throw new Error('usage: browse-1m.js [N]');
  const db = await createDb();
  const svc = buildCatalogue(loadCatalogueConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'warn', DB_POOL_SIZE: '3' }), { migrateOnStart: true, bus: new InMemoryBus(), logger: createLogger({ service: 'bench', level: 'warn' }) });
  try {
    await svc.start();
    const t0 = performance.now();
    await seed(db.url, n);
    console.log(`seeded ${n} songs in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const repo = new BrowseRepository(svc.runtime.ds);
    const cases: Array<{ label: string; sel: Parameters<BrowseRepository['rows']>[0] }> = [
      { label: 'songs all, server a', sel: { kind: 'songs', filter: 'all', serverId: 'a' } },
      { label: 'songs all, every server', sel: { kind: 'songs', filter: 'all' } },
      { label: 'songs duplicates, server a', sel: { kind: 'songs', filter: 'duplicates', serverId: 'a' } },
      { label: 'songs unique, server b', sel: { kind: 'songs', filter: 'unique', serverId: 'b' } },
      { label: 'songs orphan', sel: { kind: 'songs', filter: 'orphan' } },
      { label: 'songs all, server a, q="song 12345"', sel: { kind: 'songs', filter: 'all', serverId: 'a', q: 'song 12345' } },
      { label: 'artists all, server a', sel: { kind: 'artists', filter: 'all', serverId: 'a' } },
      { label: 'albums all, every server', sel: { kind: 'albums', filter: 'all' } },
    ];
    console.log(`| selection | page 1 (ms) | page 500 (ms) | total |`);
    console.log(`|---|---|---|---|`);
    for (const c of cases) {
      const times: number[][] = [[], []];
      let total = 0;
      for (let run = 0; run < 3; run++) {
        for (const [i, page] of [1, 500].entries()) {
          const s = performance.now();
          const [, count] = await Promise.all([repo.rows(c.sel, BROWSE_PAGE_SIZE + 1, (page - 1) * BROWSE_PAGE_SIZE), repo.count(c.sel, BROWSE_COUNT_CAP)]);
          times[i]!.push(performance.now() - s);
          total = count;
        }
      }
      const med = (a: number[]) => a.sort((x, y) => x - y)[1]!.toFixed(0);
      console.log(`| ${c.label} | ${med(times[0]!)} | ${med(times[1]!)} | ${total > BROWSE_COUNT_CAP ? `${BROWSE_COUNT_CAP}+` : total} |`);
    }
  } finally {
    await svc.stop();
    await db.drop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

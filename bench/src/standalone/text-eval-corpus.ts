import 'reflect-metadata';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { MTT_TAGS, OTHER_FEATURE_LABELS, formatLabelScores, moodVectorOf } from '@polyphony/contracts';
import { evaluateInstall, formatEvalReport, type EvalSong } from '@polyphony/testkit';
import { startBenchInstall } from './bench-install';

/**
 * Text-search precision@10 on a held-out corpus with real MusiCNN tags (issue 14 "Tests and measures").
 *
 * Input: a directory of per-track MusiCNN outputs as the analysis worker's corpus cache writes them
 * (`musicnn-cache` benchmark: JSON with `name` "<group>/<stem>", per-patch `msdTags`, `mttTags` and `msdPen`),
 * computed from the Debian game soundtracks (none of which was used to write the text-search vocabulary).
 * Per track, as the analysis does: tag probabilities = mean over patches; `mood_vector` = top MSD tags;
 * `other_features` from the analysis worker's own rule when its build is present, else 0. The embedding is
 * the mean MSD penultimate vector. Title = the file stem, artist and album = the game.
 *
 * The whole product runs in this process on a scratch database (created and dropped here): the songs are
 * written to the catalogue, one server maps them, the index is rebuilt, and every evaluation query goes
 * through the gateway's `POST /api/clap/search` with the API token (evaluateInstall, the `text-eval` benchmark's
 * code), so the figure is the shipped scorer's.
 * Ground truth and metric: shared/testkit/src/text-eval/text-eval.ts.
 * Usage: node bench/dist/standalone/text-eval-corpus.js <cache dir>
 *   (PG_ADMIN_URL, default postgres://postgres@127.0.0.1:5432/postgres; TEXT_EVAL_MIN_TRACKS, default 20)
 */
interface CacheFile {
  name: string;
  group?: string;
  msdTags: number[][];
  mttTags?: number[][];
  msdPen?: number[][];
}

function mean(rows: number[][]): number[] {
  const out = new Array<number>(rows[0]?.length ?? 0).fill(0);
  for (const r of rows) r.forEach((v, i) => (out[i]! += v / rows.length));
  return out;
}

/** The analysis worker's other-features rule (noisy-OR over named tags) when built, else undefined. */
function otherFeaturesRule(): ((msd: number[], mtt?: number[]) => Array<[string, number]>) | undefined {
  try {
    return (require('@polyphony/analysis-worker/engine') as { otherFeatures: (msd: number[], mtt?: number[]) => Array<[string, number]> }).otherFeatures;
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const dir = process.argv[2];
  if (!dir) throw new Error('Usage: text-eval-corpus.js <musicnn cache dir>');
  if (!existsSync(dir)) {
    // `bench.sh all` runs every benchmark: without the analysis worker's cache, say so and stop cleanly.
    console.log(`text-eval-corpus SKIPPED: no MusiCNN corpus cache at ${dir} (fill it with node bench/dist/analysis-worker/musicnn-cache.js)`);
    return;
  }
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  const rule = otherFeaturesRule();
  // TEXT_EVAL_MTT=0 stores MSD tags only, as an install with MUSICNN_MTT=0 does; the ground
  // truth still uses every tag of the cache.
  const withMtt = process.env.TEXT_EVAL_MTT !== '0';
  const tracks = files.map((f, i) => {
    const c = JSON.parse(readFileSync(join(dir, f), 'utf8')) as CacheFile;
    const msd = mean(c.msdTags);
    const mtt = c.mttTags?.length ? mean(c.mttTags) : MTT_TAGS.map(() => 0);
    const other = rule ? new Map(rule(msd, withMtt && c.mttTags?.length ? mtt : undefined)) : new Map<string, number>();
    const truthOther = rule ? new Map(rule(msd, c.mttTags?.length ? mtt : undefined)) : other;
    const [group, stem] = c.name.includes('/') ? c.name.split('/', 2) : [c.group ?? 'corpus', c.name];
    const pen = c.msdPen?.length ? mean(c.msdPen) : msd;
    return {
      id: `fp_eval${i.toString(16).padStart(8, '0')}`,
      provider: `t-${i}`,
      title: stem!.replace(/[-_]+/g, ' '),
      group: group!,
      msd,
      mtt,
      other: OTHER_FEATURE_LABELS.map((l) => other.get(l) ?? 0),
      truth: { id: `t-${i}`, msd, mtt, other: OTHER_FEATURE_LABELS.map((l) => truthOther.get(l) ?? 0) } satisfies EvalSong,
      pen,
    };
  });
  const minTracks = Number(process.env.TEXT_EVAL_MIN_TRACKS ?? 20);
  if (tracks.length < minTracks) throw new Error(`Only ${tracks.length} tracks in ${dir}: at least ${minTracks} are needed for a meaningful precision@10 (TEXT_EVAL_MIN_TRACKS)`);
  console.log(`${tracks.length} tracks (${[...new Set(tracks.map((t) => t.group))].join(', ')}); stored tags: ${withMtt ? 'MSD + MTT' : 'MSD only (TEXT_EVAL_MTT=0)'}; other features: ${rule ? 'analysis rule' : 'not available (0)'}`);

  const install = await startBenchInstall('texteval');
  const { call, base, token } = install;
  const db = new Client({ connectionString: install.databaseUrl });
  await db.connect();
  try {
    const server = await call('POST', '/api/servers', { name: 'Corpus', server_type: 'navidrome', creds: { url: 'http://127.0.0.1:9', user: 'u', password: 'p' } });
    await db.query(
      `INSERT INTO catalogue.score (item_id, title, artist, album, embedder_version, mood_vector, other_features, tag_scores, tags_model)
       SELECT u.id, u.title, u.artist, u.artist, 'musicnn-pen', u.mv, u.ofs, u.tags::jsonb, 'musicnn-eval'
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS u(id, title, artist, mv, ofs, tags)`,
      [
        tracks.map((t) => t.id),
        tracks.map((t) => t.title),
        tracks.map((t) => t.group),
        tracks.map((t) => moodVectorOf(t.msd)),
        tracks.map((t) => formatLabelScores(OTHER_FEATURE_LABELS.map((l, i) => [l, t.other[i]!] as const))),
        tracks.map((t) => JSON.stringify(withMtt ? { msd: t.msd, mtt: t.mtt } : { msd: t.msd })),
      ],
    );
    await db.query(`INSERT INTO catalogue.embedding (item_id, vector, embedder_version) SELECT id, decode(v, 'base64'), 'musicnn-pen' FROM unnest($1::text[], $2::text[]) AS u(id, v)`, [
      tracks.map((t) => t.id),
      tracks.map((t) => Buffer.from(Float32Array.from(t.pen).buffer).toString('base64')),
    ]);
    await db.query(`INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id) SELECT $1, p, i FROM unnest($2::text[], $3::text[]) AS u(p, i)`, [server.id, tracks.map((t) => t.provider), tracks.map((t) => t.id)]);
    await install.rebuildIndex(tracks.length, 300_000);
    // The same evaluation as `bench.sh text-eval` against any running install: tags read back from the catalogue.
    console.log(formatEvalReport(await evaluateInstall({ databaseUrl: install.databaseUrl, baseUrl: base, token, server: 'Corpus', truth: tracks.map((t) => t.truth) })));
  } finally {
    await db.end();
    await install.stop();
  }
}

main().catch((err: unknown) => {
  console.error((err as Error).message);
  process.exit(1);
});

import 'reflect-metadata';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { MSD_TAGS, MTT_TAGS, OTHER_FEATURE_LABELS, foldConcept, parseLabelScores, type LearnedFeatures } from '@polyphony/contracts';
import { DEFAULT_MUSICNN_PATCHES, DefaultEmbedder, FusionEmbedder, MusicnnAnalyser, decodeToPcm, learnedFeatures } from '@polyphony/analysis-worker/engine';
import { EVAL_QUERIES } from '@polyphony/testkit';
import { startBenchInstall } from './bench-install';
import { BENCH_SCRATCH_DIR, wesnothTracks } from '../analysis-worker/corpus';
import { benchBackend, benchModelsDir } from '../analysis-worker/musicnn-cache';

/**
 * How far steering moves text search towards (or away from) a concept while staying on the query (issue 31
 * "Steerable text search"), on the real corpus: the 41 Wesnoth tracks analysed here as the analysis worker
 * analyses a song (decode, dsp-v1, MusiCNN MSD + MTT with DEFAULT_MUSICNN_PATCHES patches, learned features and the
 * fusion embedding the index searches), cached in <scratch>/steering-wesnoth-<patches>.json.
 *
 * The whole product runs in this process on a scratch database (created and dropped here): the songs are written
 * to the catalogue, one server maps them, the index is rebuilt, and every call goes through the gateway with the
 * API token. For every steerable concept (GET /api/clap/concepts) and every query of the text-search evaluation
 * (EVAL_QUERIES, 14 everyday queries), POST /api/clap/search with limit 10: unsteered, steered +0.5, +1 and -1.
 * Per concept (means over the queries that return results):
 *  - carry: share of the results carrying the concept (normalised score >= 0.5, the index's rule restated below);
 *    "carry max" = min(songs carrying it, 10) / 10, the most a top 10 can reach;
 *  - overlap: share of the unsteered top 10 still in the steered top 10;
 *  - on-query: mean unsteered similarity of the steered results / that of the unsteered results (1 = as close
 *    to the query's words as the unsteered answer).
 * Usage: node bench/dist/standalone/steering-eval.js   (PG_ADMIN_URL, default postgres://postgres@127.0.0.1:5432/postgres;
 *   MODELS_DIR; MUSICNN_BACKEND; STEER_EVAL_PATCHES, default DEFAULT_MUSICNN_PATCHES)
 */
interface AnalysedTrack {
  name: string;
  learned: LearnedFeatures;
  embedding: number[];
  tempo: number | null;
  energy: number | null;
  key: string | null;
  scale: string | null;
  duration: number;
}

const PATCHES = Number(process.env.STEER_EVAL_PATCHES ?? DEFAULT_MUSICNN_PATCHES);
const WEIGHTS = [0.5, 1, -1] as const;
const K = 10;

/** The corpus analysed as the worker does (cached per patch budget). */
async function analyseCorpus(): Promise<AnalysedTrack[]> {
  mkdirSync(BENCH_SCRATCH_DIR, { recursive: true });
  const cache = join(BENCH_SCRATCH_DIR, `steering-wesnoth-${PATCHES}.json`);
  if (existsSync(cache)) return JSON.parse(readFileSync(cache, 'utf8')) as AnalysedTrack[];
  const tracks = wesnothTracks();
  if (tracks.length === 0) throw new Error('no Wesnoth music found (Debian package wesnoth-1.16-music)');
  const analyser = await MusicnnAnalyser.load({ modelsDir: benchModelsDir(), backend: benchBackend(), maxPatches: PATCHES });
  if (!analyser.hasMtt) throw new Error('the MTT network is needed for the fusion embedding');
  const dsp = new DefaultEmbedder();
  const fusion = new FusionEmbedder();
  const out: AnalysedTrack[] = [];
  for (const [i, t] of tracks.entries()) {
    const t0 = performance.now();
    const pcm = await decodeToPcm(t.path);
    const analysis = dsp.analyseTrack(pcm.samples, pcm.sampleRate);
    const outputs = await analyser.analyse(pcm.samples);
    const d = analysis.descriptors;
    out.push({
      name: t.name,
      learned: learnedFeatures(outputs, analyser.modelId),
      embedding: Array.from(fusion.embedTrack(outputs, analysis.embedding)),
      tempo: d.tempoBpm ?? null,
      energy: d.energy ?? null,
      key: d.key ?? null,
      scale: d.scale ?? null,
      duration: pcm.durationSeconds,
    });
    process.stderr.write(`analysed ${i + 1}/${tracks.length} ${t.name} in ${Math.round(performance.now() - t0)} ms\n`);
  }
  writeFileSync(cache, JSON.stringify(out));
  return out;
}

/**
 * Which songs carry each concept: the index's rule (services/index/src/semantic: steering.ts CARRY_THRESHOLD and the
 * text search's column normalisation) restated over the whole corpus: per column clamp((p - p5) / max(p99 - p5, 0.25))
 * with linear-interpolated percentiles, a concept carried when one of its columns reaches 0.5.
 */
function carriers(tracks: readonly AnalysedTrack[]): Map<string, Set<number>> {
  const columns: Array<{ concept: string; values: number[] }> = [];
  MSD_TAGS.forEach((l, i) => columns.push({ concept: foldConcept(l), values: tracks.map((t) => Math.round(t.learned.tags.msd[i]! * 255) / 255) }));
  MTT_TAGS.forEach((l, i) => columns.push({ concept: foldConcept(l), values: tracks.map((t) => Math.round((t.learned.tags.mtt?.[i] ?? 0) * 255) / 255) }));
  const others = tracks.map((t) => new Map(parseLabelScores(t.learned.otherFeatures) ?? []));
  OTHER_FEATURE_LABELS.forEach((l) => columns.push({ concept: l, values: others.map((o) => o.get(l) ?? 0) }));
  const pct = (sorted: number[], q: number) => {
    const pos = q * (sorted.length - 1);
    const i = Math.floor(pos);
    return sorted[i]! + (pos - i) * ((sorted[Math.min(i + 1, sorted.length - 1)] ?? sorted[i]!) - sorted[i]!);
  };
  const out = new Map<string, Set<number>>();
  for (const { concept, values } of columns) {
    const sorted = [...values].sort((a, b) => a - b);
    const lo = pct(sorted, 0.05);
    const hi = Math.max(pct(sorted, 0.99), lo + 0.25);
    const set = out.get(concept) ?? new Set<number>();
    values.forEach((p, i) => {
      if ((p - lo) / (hi - lo) >= 0.5) set.add(i);
    });
    out.set(concept, set);
  }
  return out;
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);
const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');

async function main(): Promise<void> {
  const tracks = await analyseCorpus();
  const carry = carriers(tracks);
  const install = await startBenchInstall('steer');
  const { call } = install;
  const db = new Client({ connectionString: install.databaseUrl });
  await db.connect();
  try {
    const server = await call<{ id: string }>('POST', '/api/servers', { name: 'Wesnoth', server_type: 'navidrome', creds: { url: 'http://127.0.0.1:9', user: 'u', password: 'p' } });
    const ids = tracks.map((_, i) => `fp_steer${i.toString(16).padStart(8, '0')}`);
    const version = new FusionEmbedder().version;
    await db.query(
      `INSERT INTO catalogue.score (item_id, title, artist, album, embedder_version, mood_vector, other_features, tag_scores, tags_model, tempo, energy, key, scale, duration_seconds)
       SELECT u.id, u.title, 'Wesnoth', 'Wesnoth', $7, u.mv, u.ofs, u.tags::jsonb, $8, u.tempo, u.energy, u.key, u.scale, u.duration
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::real[], $9::real[], $10::text[], $11::text[], $12::real[]) AS u(id, title, mv, ofs, tags, tempo, energy, key, scale, duration)`,
      [
        ids,
        tracks.map((t) => t.name.split('/')[1]!.replace(/[-_]+/g, ' ')),
        tracks.map((t) => t.learned.moodVector),
        tracks.map((t) => t.learned.otherFeatures),
        tracks.map((t) => JSON.stringify(t.learned.tags)),
        tracks.map((t) => t.tempo),
        version,
        tracks[0]!.learned.tagsModel,
        tracks.map((t) => t.energy),
        tracks.map((t) => t.key),
        tracks.map((t) => t.scale),
        tracks.map((t) => t.duration),
      ],
    );
    await db.query(`INSERT INTO catalogue.embedding (item_id, vector, embedder_version) SELECT id, decode(v, 'base64'), $3 FROM unnest($1::text[], $2::text[]) AS u(id, v)`, [
      ids,
      tracks.map((t) => Buffer.from(Float32Array.from(t.embedding).buffer).toString('base64')),
      version,
    ]);
    await db.query(`INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id) SELECT $1, p, i FROM unnest($2::text[], $3::text[]) AS u(p, i)`, [server.id, ids.map((_, i) => `w-${i}`), ids]);
    await install.rebuildIndex(tracks.length, 300_000);
    const indexOf = new Map(ids.map((id, i) => [`w-${i}`, i]));
    type Answer = { results: Array<{ item_id: string; similarity: number }> };
    const search = async (query: string, limit: number, steering?: Array<{ concept: string; weight: number }>) =>
      (await call<Answer>('POST', '/api/clap/search?server=Wesnoth', { query, limit, ...(steering ? { steering } : {}) })).results.map((r) => ({ i: indexOf.get(r.item_id)!, s: r.similarity }));
    const concepts = (await call<{ concepts: Array<{ name: string; kind: string; songs: number; steerable: boolean }>; tagged_songs: number }>('GET', '/api/clap/concepts?server=Wesnoth')).concepts.filter((c) => c.steerable);
    // The unsteered similarity of every song per query (limit 500 > corpus).
    const queries = EVAL_QUERIES.map((q) => q.query);
    const plain = new Map<string, { top: number[]; sim: Map<number, number> }>();
    for (const q of queries) {
      const all = await search(q, 500);
      plain.set(q, { top: all.slice(0, K).map((r) => r.i), sim: new Map(all.map((r) => [r.i, r.s])) });
    }
    console.log(`${tracks.length} Wesnoth tracks (MusiCNN MSD + MTT, ${PATCHES} patches, ${version}); ${concepts.length} steerable concepts; ${queries.length} queries; top ${K}`);
    console.log('carry = share of the top 10 carrying the concept (max = min(songs, 10) / 10); overlap = share of the unsteered top 10 kept; on-query = mean unsteered similarity of the answer / of the unsteered answer');
    const header = ['concept', 'kind', 'songs', 'carry max', 'carry plain', 'carry +0.5', 'carry +1', 'carry -1', 'overlap +0.5', 'overlap +1', 'on-query +0.5', 'on-query +1'];
    console.log(`| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`);
    const all: number[][] = [];
    for (const c of concepts) {
      const has = carry.get(c.name) ?? new Set<number>();
      const share = (rows: readonly number[]) => (rows.length ? rows.filter((i) => has.has(i)).length / rows.length : Number.NaN);
      const cols: number[][] = Array.from({ length: 8 }, () => []);
      for (const q of queries) {
        const p = plain.get(q)!;
        if (p.top.length === 0) continue;
        const simOf = (rows: readonly number[]) => mean(rows.map((i) => p.sim.get(i) ?? 0));
        cols[0]!.push(share(p.top));
        const steered = new Map<number, number[]>();
        for (const w of WEIGHTS) steered.set(w, (await search(q, K, [{ concept: c.name, weight: w }])).map((r) => r.i));
        cols[1]!.push(share(steered.get(0.5)!));
        cols[2]!.push(share(steered.get(1)!));
        cols[3]!.push(share(steered.get(-1)!));
        const overlap = (rows: readonly number[]) => rows.filter((i) => p.top.includes(i)).length / p.top.length;
        cols[4]!.push(overlap(steered.get(0.5)!));
        cols[5]!.push(overlap(steered.get(1)!));
        cols[6]!.push(simOf(steered.get(0.5)!) / simOf(p.top));
        cols[7]!.push(simOf(steered.get(1)!) / simOf(p.top));
      }
      const m = cols.map(mean);
      all.push(m);
      console.log(`| ${c.name} | ${c.kind} | ${c.songs} | ${f2(Math.min(c.songs, K) / K)} | ${m.map(f2).join(' | ')} |`);
    }
    const overall = Array.from({ length: 8 }, (_, j) => mean(all.map((m) => m[j]!)));
    console.log(`| **mean of ${all.length} concepts** | | | ${f2(mean(concepts.map((c) => Math.min(c.songs, K) / K)))} | ${overall.map(f2).join(' | ')} |`);
  } finally {
    await db.end();
    await install.stop();
  }
}

main().catch((err: unknown) => {
  console.error((err as Error).stack ?? (err as Error).message);
  process.exit(1);
});

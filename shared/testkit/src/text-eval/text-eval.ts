/**
 * Evaluation of the text search (issue 14 "Tests and measures"): natural-language queries with a
 * tag-derived ground truth, precision@10 on a music set that was not used to write the vocabulary.
 *
 * Ground truth (independent of the scorer's synonym table and normalisation): each query names groups of
 * MusiCNN labels (MSD, MTT or other-feature labels). For a label, a song's percentile rank is the fraction
 * of the evaluated songs whose probability is strictly lower. A song meets a group when its best
 * percentile rank over the group's labels is at least RELEVANT_PERCENTILE (top 20% of the set for one of
 * them); it is relevant when it meets every group of the query. So "sad piano" needs a song in the top 20%
 * for "sad" and for "piano". What this measures: how well the query words are turned into the tags that
 * describe the music (vocabulary, synonyms, combination, descriptors). It does not measure the tagger's
 * own accuracy (MusiCNN's published figures) since the ground truth comes from the same tags.
 */
import { MSD_TAGS, MTT_TAGS, OTHER_FEATURE_LABELS } from '@polyphony/contracts';

/** A song is relevant for a group when in the top (1 - 0.8) = 20% of the set for one of its labels. */
export const RELEVANT_PERCENTILE = 0.8;
/** Cut-off of the precision. */
export const EVAL_K = 10;

export interface EvalQuery {
  query: string;
  /** Every group must be met; a group is met by any of its labels. */
  groups: string[][];
}

/** The queries: everyday wording, ground truth in MusiCNN labels (written apart from vocabulary.ts). */
export const EVAL_QUERIES: EvalQuery[] = [
  { query: 'something calm to relax to', groups: [['chill', 'Mellow', 'chillout', 'ambient', 'relaxed', 'soft', 'easy listening']] },
  { query: 'epic orchestral music', groups: [['classical', 'strings', 'violin', 'cello', 'choir', 'choral']] },
  { query: 'fast and loud', groups: [['fast'], ['loud']] },
  { query: 'sad piano', groups: [['sad'], ['piano']] },
  { query: 'happy upbeat tunes', groups: [['happy', 'party', 'catchy', 'danceable']] },
  { query: 'aggressive heavy metal', groups: [['aggressive', 'metal', 'heavy metal', 'hard rock']] },
  { query: 'acoustic guitar', groups: [['acoustic', 'guitar']] },
  { query: 'electronic dance music', groups: [['electronic', 'dance', 'electro', 'techno', 'House', 'danceable']] },
  { query: 'instrumental without vocals', groups: [['instrumental', 'no vocals', 'no vocal', 'no voice']] },
  { query: 'female singer', groups: [['female vocalists', 'female vocalist', 'female', 'female vocal', 'female voice', 'woman']] },
  { query: 'slow ambient', groups: [['slow'], ['ambient']] },
  { query: 'medieval flute', groups: [['flute', 'harpsichord', 'harp']] },
  { query: 'dark and strange', groups: [['weird', 'experimental', 'sad']] },
  { query: 'drums and percussion', groups: [['drums', 'beat', 'beats']] },
];

/** One evaluated song: its id as the search answers it, and its learned probabilities. */
export interface EvalSong {
  id: string;
  msd: number[];
  mtt: number[];
  /** other_features values in OTHER_FEATURE_LABELS order (missing = 0). */
  other: number[];
}

export interface QueryReport {
  query: string;
  relevant: number;
  returned: number;
  hits: number;
  /** hits in the first EVAL_K results / EVAL_K. */
  precision: number;
  /** Best reachable: min(EVAL_K, relevant) / EVAL_K. */
  ideal: number;
  /** Expected precision of a random order: relevant / songs. */
  random: number;
}

export interface EvalReport {
  songs: number;
  queries: QueryReport[];
  /** Means over the queries that have at least one relevant song. */
  meanPrecision: number;
  meanIdeal: number;
  meanRandom: number;
  /** Queries left out of the means (no relevant song in this set). */
  skipped: string[];
}

/** Probability of a label for a song (labels found in several models: the highest). @throws Error for an unknown label */
function labelValues(label: string): (s: EvalSong) => number {
  const getters: Array<(s: EvalSong) => number> = [];
  const m = (MSD_TAGS as readonly string[]).indexOf(label);
  if (m >= 0) getters.push((s) => s.msd[m] ?? 0);
  const t = (MTT_TAGS as readonly string[]).indexOf(label);
  if (t >= 0) getters.push((s) => s.mtt[t] ?? 0);
  const o = (OTHER_FEATURE_LABELS as readonly string[]).indexOf(label);
  if (o >= 0) getters.push((s) => s.other[o] ?? 0);
  if (getters.length === 0) throw new Error(`Unknown MusiCNN label "${label}"`);
  return (s) => Math.max(...getters.map((g) => g(s)));
}

/** Percentile rank of each song for a label (fraction of songs with a strictly lower probability). */
function percentileRanks(songs: readonly EvalSong[], label: string): Float64Array {
  const value = labelValues(label);
  const values = songs.map(value);
  const sorted = [...values].sort((a, b) => a - b);
  const lowerCount = (v: number) => {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (sorted[mid]! < v) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return Float64Array.from(values, (v) => lowerCount(v) / Math.max(1, songs.length - 1));
}

/** Ids of the songs relevant to a query (see the module comment). */
export function relevantIds(songs: readonly EvalSong[], q: EvalQuery): Set<string> {
  const groupMet = q.groups.map((labels) => {
    const ranks = labels.map((l) => percentileRanks(songs, l));
    return songs.map((_, i) => Math.max(...ranks.map((r) => r[i]!)) >= RELEVANT_PERCENTILE);
  });
  return new Set(songs.filter((_, i) => groupMet.every((g) => g[i])).map((s) => s.id));
}

/** Precision at k of a ranked id list (fewer than k results count as misses). */
export function precisionAt(k: number, ranked: readonly string[], relevant: ReadonlySet<string>): number {
  return ranked.slice(0, k).filter((id) => relevant.has(id)).length / k;
}

/**
 * Runs every query through `search` (the first EVAL_K ids it ranks, ids as in `songs`) and reports
 * precision@10 per query and on average, with the best reachable and the random-order expectation.
 */
export async function evaluateTextSearch(songs: readonly EvalSong[], search: (query: string) => Promise<string[]>, queries: readonly EvalQuery[] = EVAL_QUERIES): Promise<EvalReport> {
  const reports: QueryReport[] = [];
  const skipped: string[] = [];
  for (const q of queries) {
    const relevant = relevantIds(songs, q);
    if (relevant.size === 0) {
      skipped.push(q.query);
      continue;
    }
    const ranked = await search(q.query);
    const hits = ranked.slice(0, EVAL_K).filter((id) => relevant.has(id)).length;
    reports.push({
      query: q.query,
      relevant: relevant.size,
      returned: Math.min(EVAL_K, ranked.length),
      hits,
      precision: hits / EVAL_K,
      ideal: Math.min(EVAL_K, relevant.size) / EVAL_K,
      random: relevant.size / songs.length,
    });
  }
  const mean = (f: (r: QueryReport) => number) => (reports.length ? reports.reduce((s, r) => s + f(r), 0) / reports.length : 0);
  return { songs: songs.length, queries: reports, meanPrecision: mean((r) => r.precision), meanIdeal: mean((r) => r.ideal), meanRandom: mean((r) => r.random), skipped };
}

/** The report as printed by the evaluation script. */
export function formatEvalReport(r: EvalReport): string {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const lines = r.queries.map((q) => `${q.query.padEnd(32)} relevant ${String(q.relevant).padStart(4)}  P@10 ${pct(q.precision).padStart(6)}  (best ${pct(q.ideal)}, random ${pct(q.random)})`);
  if (r.skipped.length) lines.push(`no relevant song in this set (left out): ${r.skipped.join('; ')}`);
  lines.push(`mean P@10 over ${r.queries.length} queries on ${r.songs} songs: ${pct(r.meanPrecision)} (best reachable ${pct(r.meanIdeal)}, random order ${pct(r.meanRandom)})`);
  return lines.join('\n');
}

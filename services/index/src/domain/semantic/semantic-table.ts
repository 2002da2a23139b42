/**
 * The learned features of one index generation in row order, with the per-column normalisation of the
 * text search and the mood centroids. Built from `index.tracks` (tags, other_features, tempo, energy) the
 * first time a generation is used and again for every new generation (SemanticTables listens to swaps),
 * so mood centroids are recomputed with each index generation.
 */
import { MOOD_NAMES, MSD_TAGS, OTHER_FEATURE_LABELS, type MoodName } from '@polyphony/contracts';
import { dot, lloydKMeansSync, normaliseInto } from '@polyphony/vectors';
import type { Generation } from '../generation';
import { FEATURE_COLUMNS, MSD_OFFSET, OTHER_OFFSET } from './vocabulary';

/**
 * Smallest probability spread a column is normalised over (see `norm`): a tag whose probabilities only range
 * 0.02-0.06 over the library (never really present) then scores at most 0.16, not 1.
 */
export const MIN_SPREAD = 0.25;

/** Rows of the sample the per-column percentiles are estimated from. */
const NORM_SAMPLE = 20_000;

/**
 * Songs per mood centroid: the `max(5, min(200, ceil(5% of tagged songs)))` songs with the highest score for
 * the mood (other_features column; for "danceable" etc. directly, see MOOD_COLUMN). Fewer when fewer songs
 * are tagged.
 */
export function moodCentroidSize(tagged: number): number {
  return Math.min(tagged, Math.max(5, Math.min(200, Math.ceil(0.05 * tagged))));
}

/** Feature column of each mood seed: the other_features label of the same name. */
export const MOOD_COLUMN: Record<MoodName, number> = Object.fromEntries(MOOD_NAMES.map((m) => [m, OTHER_OFFSET + OTHER_FEATURE_LABELS.indexOf(m)])) as Record<MoodName, number>;

/** One row of the tracks table as the loader reads it. */
export interface SemanticRowSource {
  itemId: string;
  /** 100 quantised tag bytes (null = untagged). */
  tags: Buffer | null;
  other: number[] | null;
  tempo: number | null;
  energy: number | null;
}

export interface MoodCentroid {
  mood: MoodName;
  /** Unit vector (index dim). */
  vector: Float32Array;
  songs: number;
  minScore: number;
  /**
   * Centroids of the mood that `centroid_index` picks: [0] is the whole mood (this vector), then the clusters
   * of its songs (see moodClusters), largest first.
   */
  clusters: MoodCluster[];
}

/** One centroid of a mood: a unit vector, the songs it is the mean of, and their three strongest MSD tags. */
export interface MoodCluster {
  index: number;
  vector: Float32Array;
  songs: number;
  topTags: string[];
}

/** Largest number of clusters per mood, and the fewest songs per cluster (fewer songs: the mood alone). */
export const MOOD_MAX_CLUSTERS = 3;
export const MOOD_CLUSTER_MIN_SONGS = 5;
/** Lloyd iterations of the mood clusters (the mood's songs are at most 200). */
const MOOD_CLUSTER_ITERATIONS = 15;

/** Probability of a stored tag byte: BYTE_PROBABILITY[b] = b / 255 rounded to float32, as the table held it before. */
const BYTE_PROBABILITY = Float32Array.from({ length: 256 }, (_, b) => b / 255);
/** Columns after the MSD and MTT tags (the other features). */
const OTHER_COLUMNS = FEATURE_COLUMNS - OTHER_OFFSET;

/** The per-row columns of a SemanticTable, filled from rows in any number of batches. */
class ColumnFill {
  readonly tagBytes: Uint8Array;
  readonly others: Float32Array;
  readonly tagged: Uint8Array;
  readonly tempo: Float32Array;
  readonly energy: Float32Array;
  taggedCount = 0;

  constructor(size: number, private readonly rowOf: (id: string) => number) {
    this.tagBytes = new Uint8Array(size * OTHER_OFFSET);
    this.others = new Float32Array(size * OTHER_COLUMNS);
    this.tagged = new Uint8Array(size);
    this.tempo = new Float32Array(size).fill(Number.NaN);
    this.energy = new Float32Array(size).fill(Number.NaN);
  }

  /** Adds rows (ids the generation does not hold are skipped; rows without exactly 100 tag bytes stay untagged). */
  add(rows: Iterable<SemanticRowSource>): void {
    for (const r of rows) {
      const row = this.rowOf(r.itemId);
      if (row < 0) continue;
      if (r.tempo !== null) this.tempo[row] = r.tempo;
      if (r.energy !== null) this.energy[row] = r.energy;
      if (!r.tags || r.tags.length !== OTHER_OFFSET) continue;
      this.tagBytes.set(r.tags.subarray(0, OTHER_OFFSET), row * OTHER_OFFSET);
      for (let c = 0; c < OTHER_COLUMNS; c++) this.others[row * OTHER_COLUMNS + c] = Math.max(0, Math.min(1, r.other?.[c] ?? 0));
      if (this.tagged[row] !== 1) this.taggedCount++;
      this.tagged[row] = 1;
    }
  }
}

export class SemanticTable {
  /**
   * The 100 MSD + MTT tag probabilities per row as the bytes the catalogue stores (value b/255): 100 bytes per
   * song instead of 400 as float32 (1M songs: 95 MiB instead of 381). Read through `value`.
   */
  private readonly tagBytes: Uint8Array;
  /** The other features per row (OTHER_COLUMNS float32 values in [0, 1]). */
  private readonly others: Float32Array;
  /** 1 when the row carries tags (its columns are defined), else 0: untagged columns read NaN. */
  readonly tagged: Uint8Array;
  readonly taggedCount: number;
  readonly tempo: Float32Array;
  readonly energy: Float32Array;
  /** Per column: low = 5th percentile over tagged songs, high = max(99th percentile, low + MIN_SPREAD); normalised value clamp((p - low) / (high - low)). */
  readonly low: Float32Array;
  readonly high: Float32Array;
  /** 5th / 95th percentiles of energy (dB) and tempo (BPM) over analysed songs. */
  readonly energyRange: [number, number];
  readonly moods: Map<MoodName, MoodCentroid>;

  private constructor(readonly generation: number, size: number, fill: ColumnFill, vectorOf: (row: number) => Float32Array) {
    this.tagBytes = fill.tagBytes;
    this.others = fill.others;
    this.tagged = fill.tagged;
    this.tempo = fill.tempo;
    this.energy = fill.energy;
    const tagged = fill.taggedCount;
    this.taggedCount = tagged;
    this.low = new Float32Array(FEATURE_COLUMNS);
    this.high = new Float32Array(FEATURE_COLUMNS).fill(1);
    const taggedRows: number[] = [];
    for (let r = 0; r < size; r++) if (this.tagged[r]) taggedRows.push(r);
    const stride = Math.max(1, Math.ceil(taggedRows.length / NORM_SAMPLE));
    const sample = taggedRows.filter((_, i) => i % stride === 0);
    for (let c = 0; c < FEATURE_COLUMNS; c++) {
      const values = Float32Array.from(sample, (r) => this.value(r, c)).sort();
      if (values.length === 0) continue;
      const lo = percentile(values, 0.05);
      const hi = percentile(values, 0.99);
      // A column that barely varies over this catalogue must not turn its noise into full scores: the
      // spread is at least MIN_SPREAD of probability.
      this.low[c] = lo;
      this.high[c] = Math.max(hi, lo + MIN_SPREAD);
    }
    const energies = Float32Array.from(this.energy.filter(Number.isFinite)).sort();
    this.energyRange = energies.length ? [percentile(energies, 0.05), percentile(energies, 0.95)] : [0, 1];
    this.moods = new Map();
    const k = moodCentroidSize(tagged);
    if (k > 0) {
      for (const mood of MOOD_NAMES) {
        const col = MOOD_COLUMN[mood];
        const ranked = taggedRows.map((r) => [r, this.value(r, col)] as const).sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, k);
        const sum = new Float64Array(vectorOf(ranked[0]![0]).length);
        for (const [r] of ranked) {
          const v = vectorOf(r);
          for (let d = 0; d < v.length; d++) sum[d]! += v[d]!;
        }
        let norm = 0;
        for (let d = 0; d < sum.length; d++) norm += sum[d]! * sum[d]!;
        norm = Math.sqrt(norm);
        if (norm === 0) continue;
        const vector = Float32Array.from(sum, (x) => x / norm);
        const rows = ranked.map(([r]) => r);
        const clusters: MoodCluster[] = [{ index: 0, vector, songs: rows.length, topTags: this.topTags(rows) }];
        for (const members of moodClusters(rows, vectorOf)) clusters.push({ index: clusters.length, vector: unitMean(members, vectorOf), songs: members.length, topTags: this.topTags(members) });
        this.moods.set(mood, { mood, vector, songs: ranked.length, minScore: ranked[ranked.length - 1]![1], clusters });
      }
    }
  }

  /** Builds the table of a generation from its tracks' rows. */
  static build(gen: Generation, rows: Iterable<SemanticRowSource>): SemanticTable {
    const fill = new ColumnFill(gen.index.size, (id) => gen.index.rowOf(id));
    fill.add(rows);
    return new SemanticTable(gen.generation, gen.index.size, fill, (r) => gen.index.getVector(r));
  }

  /**
   * Builds the table from pages of rows as they are read (`SemanticRepository.semanticPages`): only one page of
   * row objects is alive at a time (at 1M songs, materialising every row first held ~1 GiB more at the peak).
   */
  static async buildFromPages(gen: Generation, pages: AsyncIterable<readonly SemanticRowSource[]>): Promise<SemanticTable> {
    const fill = new ColumnFill(gen.index.size, (id) => gen.index.rowOf(id));
    for await (const page of pages) fill.add(page);
    return new SemanticTable(gen.generation, gen.index.size, fill, (r) => gen.index.getVector(r));
  }

  /** The three MSD tags with the highest mean probability over the rows. */
  private topTags(rows: readonly number[]): string[] {
    const means = MSD_TAGS.map((label, i) => {
      let sum = 0;
      for (const r of rows) sum += this.value(r, MSD_OFFSET + i);
      return { label, mean: sum / Math.max(1, rows.length) };
    });
    return means
      .sort((a, b) => b.mean - a.mean || (a.label < b.label ? -1 : 1))
      .slice(0, 3)
      .map((m) => m.label);
  }

  /** Normalised value in [0, 1] of column c for a row (0 when untagged). */
  norm(row: number, c: number): number {
    const p = this.value(row, c);
    if (Number.isNaN(p)) return 0;
    const lo = this.low[c]!;
    const hi = this.high[c]!;
    return Math.max(0, Math.min(1, (p - lo) / (hi - lo)));
  }

  /** Raw probability of column c (NaN when untagged). */
  raw(row: number, c: number): number {
    return this.value(row, c);
  }

  /** Column c of a row: a tag probability (stored byte / 255), an other feature, or NaN when the row is untagged. */
  private value(row: number, c: number): number {
    if (this.tagged[row] !== 1) return Number.NaN;
    return c < OTHER_OFFSET ? BYTE_PROBABILITY[this.tagBytes[row * OTHER_OFFSET + c]!]! : this.others[row * OTHER_COLUMNS + c - OTHER_OFFSET]!;
  }

  /** Bytes held by the per-row columns (tags, other features, tempo, energy, tagged flags). */
  byteLength(): number {
    return this.tagBytes.byteLength + this.others.byteLength + this.tempo.byteLength + this.energy.byteLength + this.tagged.byteLength;
  }

  /** Mean raw score of each other feature over tagged songs (the dashboard's moods_coverage). */
  moodsCoverage(): Array<{ label: string; score: number }> {
    return OTHER_FEATURE_LABELS.map((label, i) => {
      let sum = 0;
      for (let r = 0; r < this.tagged.length; r++) if (this.tagged[r]) sum += this.value(r, OTHER_OFFSET + i);
      return { label, score: this.taggedCount ? Math.round((sum / this.taggedCount) * 1000) / 1000 : 0 };
    });
  }

  /** MSD probability of column i (tests). */
  msd(row: number, i: number): number {
    return this.raw(row, MSD_OFFSET + i);
  }
}

/** Linear-interpolated percentile of sorted values, q in [0, 1]. */
export function percentile(sorted: Float32Array, q: number): number {
  if (sorted.length === 1) return sorted[0]!;
  const pos = q * (sorted.length - 1);
  const i = Math.floor(pos);
  const f = pos - i;
  return sorted[i]! + f * ((sorted[Math.min(i + 1, sorted.length - 1)] ?? sorted[i]!) - sorted[i]!);
}

/** Unit vector of the mean of the rows' vectors (zero vector when they cancel out). */
function unitMean(rows: readonly number[], vectorOf: (row: number) => Float32Array): Float32Array {
  const first = vectorOf(rows[0]!);
  const sum = new Float64Array(first.length);
  for (const r of rows) {
    const v = vectorOf(r);
    for (let d = 0; d < v.length; d++) sum[d]! += v[d]!;
  }
  let norm = 0;
  for (let d = 0; d < sum.length; d++) norm += sum[d]! * sum[d]!;
  norm = Math.sqrt(norm) || 1;
  return Float32Array.from(sum, (x) => x / norm);
}

/**
 * Clusters of a mood's songs (the reference keeps several centroids per mood; `centroid_index` picks one):
 * spherical k-means with k = min(MOOD_MAX_CLUSTERS, floor(songs / MOOD_CLUSTER_MIN_SONGS)) on the shared
 * engine (`lloydKMeansSync` of `@polyphony/vectors`) over the songs' vectors scaled to unit length, with a
 * deterministic farthest-point start (the first row given, i.e. the song scoring highest for the mood, then
 * each time the song least similar to every chosen seed), at most MOOD_CLUSTER_ITERATIONS Lloyd steps on
 * cosine similarity, an empty cluster keeping its centre. Clusters with fewer than MOOD_CLUSTER_MIN_SONGS
 * songs are dropped; the rest come largest first (ties by their first row). Empty when k < 2: the mood is
 * then only its whole centroid. Cost O(MOOD_CLUSTER_ITERATIONS * songs * k * dim).
 */
export function moodClusters(rows: readonly number[], vectorOf: (row: number) => Float32Array): number[][] {
  const k = Math.min(MOOD_MAX_CLUSTERS, Math.floor(rows.length / MOOD_CLUSTER_MIN_SONGS));
  if (k < 2) return [];
  const dim = vectorOf(rows[0]!).length;
  const data = new Float32Array(rows.length * dim);
  rows.forEach((r, i) => normaliseInto(vectorOf(r), 0, data, i * dim, dim));
  const centres = new Float32Array(k * dim);
  centres.set(data.subarray(0, dim));
  // Farthest-point start: best[i] = similarity of song i to its most similar chosen seed.
  const best = new Float64Array(rows.length).fill(-Infinity);
  for (let j = 1; j < k; j++) {
    let worst = -1;
    let worstSim = Infinity;
    for (let i = 0; i < rows.length; i++) {
      best[i] = Math.max(best[i]!, dot(centres, (j - 1) * dim, data, i * dim, dim));
      if (best[i]! < worstSim) {
        worstSim = best[i]!;
        worst = i;
      }
    }
    centres.set(data.subarray(worst * dim, worst * dim + dim), j * dim);
  }
  const points = { data, dim, rows: Int32Array.from(rows, (_, i) => i) };
  const { assignment } = lloydKMeansSync(points, k, { geometry: 'spherical', initialCentroids: centres, maxIterations: MOOD_CLUSTER_ITERATIONS, emptyClusters: 'keep' });
  const groups = Array.from({ length: k }, (_, j) => rows.filter((_, i) => assignment[i] === j));
  return groups.filter((g) => g.length >= MOOD_CLUSTER_MIN_SONGS).sort((a, b) => b.length - a.length || a[0]! - b[0]!);
}

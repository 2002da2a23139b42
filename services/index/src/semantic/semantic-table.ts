/**
 * The learned features of one index generation in row order, with the per-column normalisation of the
 * text search and the mood centroids. Built from `index.tracks` (tags, other_features, tempo, energy) the
 * first time a generation is used and again for every new generation (SemanticTables listens to swaps),
 * so mood centroids are recomputed with each index generation.
 */
import { MOOD_NAMES, MSD_TAGS, OTHER_FEATURE_LABELS, type ConceptKind, type MoodName } from '@polyphony/contracts';
import type { Generation } from '../core/generation';
import { ByteLog, CooperativeScheduler } from '@polyphony/vector-engine';
import { FEATURE_COLUMNS, MSD_OFFSET, OTHER_OFFSET } from './vocabulary';
import { percentile } from './percentile';
import { CARRY_THRESHOLD, type ConceptDirection } from './steering';
import { bytePosting, postingsCap, rowsInIdOrder, scorePosting, type Posting } from './postings';

export { rowsInIdOrder };
import { descriptorScore } from './descriptors';
import { ColumnFill, OTHER_COLUMNS, takeSemanticSeed } from './column-fill';
import { buildConcepts, carrierBitsets, topRowsByValue } from './table-passes';
import { moodClusters, unitMean } from './mood-clusters';

export { MOOD_CLUSTER_MIN_SONGS, MOOD_MAX_CLUSTERS, moodClusters } from './mood-clusters';

export { SemanticRows, seedSemanticDelta, seedSemanticRows } from './column-fill';
import type { Descriptor } from './vocabulary';

export { percentile };

/**
 * Smallest probability spread a column is normalised over (see `norm`): a tag whose probabilities only range
 * 0.02-0.06 over the library (never really present) then scores at most 0.16, not 1.
 */
export const MIN_SPREAD = 0.25;

/** Bytes of a row the column pass moves at a time (16 tag-byte columns or 4 float columns; `size` x this of buffer). */
const TRANSPOSE_BYTES = 16;

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


/** One steering concept of a generation (steering.ts; GET /api/clap/concepts). */
export interface SteerConcept {
  /** Folded label (STEER_CONCEPTS). */
  name: string;
  kind: ConceptKind;
  /** Feature columns of the label (one, or two when MSD and MTT both carry it). */
  columns: number[];
  /** Rows carrying the concept (normalised score >= CARRY_THRESHOLD), as bitset words (bit row & 31 of word row >>> 5). */
  carriers: Uint32Array;
  /** Number of rows carrying it. */
  songs: number;
  /** Its direction in the index space; null when too few songs carry or lack it. */
  direction: ConceptDirection | null;
}

/** Probability of a stored tag byte: BYTE_PROBABILITY[b] = b / 255 rounded to float32, as the table held it before. */
const BYTE_PROBABILITY = Float32Array.from({ length: 256 }, (_, b) => b / 255);
/** Columns after the MSD and MTT tags (the other features). */

/** Where the per-row columns of a table live: a file in `dir` once they are longer than `residentMaxBytes`. */
export interface SemanticStorage {
  /** Directory of the file (`INDEX_VECTOR_DIR`; default `$TMPDIR/polyphony-index`). */
  dir?: string;
  /** Longest column log kept in memory, bytes (`INDEX_TABLE_RESIDENT_MIB`); default: no limit (always in memory). */
  residentMaxBytes?: number;
}

/** Scores of one column for a query: the normalised value in [0, 1] of a row (0 when untagged). */
export type ColumnScore = (row: number) => number;

/** What `SemanticTable.compute` makes of the filled columns (the table's fields; see the class). */
interface TableParts {
  columns: ByteLog;
  tagged: Uint8Array;
  taggedCount: number;
  low: Float32Array;
  high: Float32Array;
  energyRange: [number, number];
  moods: Map<MoodName, MoodCentroid>;
  concepts: Map<string, SteerConcept>;
  postings: Posting[];
  descriptorPostings: Record<Descriptor, Posting>;
  coverage: Array<{ label: string; score: number }>;
}

export class SemanticTable {
  /**
   * The per-row columns, column after column (issue 19 "Bounded memory"): the 100 MSD + MTT tag columns as the
   * bytes the catalogue stores (value b/255, `size` bytes each), the OTHER_COLUMNS other features (float32 in
   * [0, 1], `4 size` bytes each), then tempo and energy (float32, NaN = unknown). 132 bytes a song (126 MiB at 1M);
   * in memory up to the storage budget, else in an unlinked local file of which a text query reads only the
   * columns its terms need (a concept of 1-8 columns reads 1-8 MiB at 1M songs from the page cache).
   */
  private readonly columns: ByteLog;
  /** 1 when the row carries tags (its columns are defined), else 0: untagged columns read NaN. Kept in memory (1 byte a row). */
  readonly tagged: Uint8Array;
  readonly taggedCount: number;
  /** Per column: low = 5th percentile over tagged songs, high = max(99th percentile, low + MIN_SPREAD); normalised value clamp((p - low) / (high - low)). */
  readonly low: Float32Array;
  readonly high: Float32Array;
  /** 5th / 95th percentiles of energy (dB) and tempo (BPM) over analysed songs. */
  readonly energyRange: [number, number];
  readonly moods: Map<MoodName, MoodCentroid>;
  /** The steering concepts, in STEER_CONCEPTS order (directions derived from the normalisation sample). */
  readonly concepts: Map<string, SteerConcept>;
  /**
   * Pre-sorted postings (postings.ts): per feature column the tagged rows of the highest values, best first, and
   * the rows of known tempo and energy in both directions (`postingsCap(size)` rows each). Text search reads
   * them instead of scoring every row.
   */
  private readonly postings: Posting[];
  private readonly descriptorPostings: Record<Descriptor, Posting>;
  /** Mean raw score of each other feature over tagged songs (computed with the table). */
  private readonly coverage: Array<{ label: string; score: number }>;

  private constructor(
    readonly generation: number,
    readonly size: number,
    /** Rows are numbered in canonical-id order (`rowsInIdOrder`): postings then list ties in id order. */
    readonly rowsInIdOrder: boolean,
    parts: TableParts,
  ) {
    this.columns = parts.columns;
    this.tagged = parts.tagged;
    this.taggedCount = parts.taggedCount;
    this.low = parts.low;
    this.high = parts.high;
    this.energyRange = parts.energyRange;
    this.moods = parts.moods;
    this.concepts = parts.concepts;
    this.postings = parts.postings;
    this.descriptorPostings = parts.descriptorPostings;
    this.coverage = parts.coverage;
  }

  /**
   * Computes the table's parts from the filled columns, yielding to `scheduler` between columns and passes (a table
   * is built while the generation before it still answers queries: the prepare of a build's activation, a replica's
   * load, every live-library revision; ~0.6 s of CPU at 200k songs in one piece before session 21, seconds at 1M).
   * Same arithmetic in the same order as before, so the same values.
   */
  private static async compute(
    size: number,
    fill: ColumnFill,
    vectorOf: (row: number) => Float32Array,
    storage: SemanticStorage,
    rowsInIdOrder: boolean,
    scheduler: { maybeYield(): Promise<void> },
  ): Promise<TableParts> {
    const taggedFlags = fill.tagged;
    const tagged = fill.taggedCount;
    // Column c of a row while building: a tag probability (stored byte / 255), an other feature, or NaN when the row is untagged.
    const value = (row: number, c: number): number => {
      if (fill.tagged[row] !== 1) return Number.NaN;
      return c < OTHER_OFFSET ? BYTE_PROBABILITY[fill.tagBytes[row * OTHER_OFFSET + c]!]! : fill.others[row * OTHER_COLUMNS + c - OTHER_OFFSET]!;
    };
    const low = new Float32Array(FEATURE_COLUMNS);
    const high = new Float32Array(FEATURE_COLUMNS).fill(1);
    const taggedRows: number[] = [];
    for (let r = 0; r < size; r++) if (taggedFlags[r]) taggedRows.push(r);
    const stride = Math.max(1, Math.ceil(taggedRows.length / NORM_SAMPLE));
    const sample = taggedRows.filter((_, i) => i % stride === 0);
    for (let c = 0; c < FEATURE_COLUMNS; c++) {
      const values = new Float32Array(sample.length);
      for (let i = 0; i < sample.length; i++) values[i] = value(sample[i]!, c);
      values.sort();
      if (values.length === 0) continue;
      const lo = percentile(values, 0.05);
      const hi = percentile(values, 0.99);
      // A column that barely varies over this catalogue must not turn its noise into full scores: the
      // spread is at least MIN_SPREAD of probability.
      low[c] = lo;
      high[c] = Math.max(hi, lo + MIN_SPREAD);
      await scheduler.maybeYield();
    }
    const energies = Float32Array.from(fill.energy.filter(Number.isFinite)).sort();
    const energyRange: [number, number] = energies.length ? [percentile(energies, 0.05), percentile(energies, 0.95)] : [0, 1];
    const topTags = (rows: readonly number[]): string[] => {
      const means = MSD_TAGS.map((label, i) => {
        let sum = 0;
        for (const r of rows) sum += value(r, MSD_OFFSET + i);
        return { label, mean: sum / Math.max(1, rows.length) };
      });
      return means
        .sort((a, b) => b.mean - a.mean || (a.label < b.label ? -1 : 1))
        .slice(0, 3)
        .map((m) => m.label);
    };
    const moods = new Map<MoodName, MoodCentroid>();
    const k = moodCentroidSize(tagged);
    if (k > 0) {
      for (const mood of MOOD_NAMES) {
        const col = MOOD_COLUMN[mood];
        // The k best rows by the mood's column, ties by row (the first k of sorting every tagged row; topRowsByValue).
        const ranked = topRowsByValue(taggedRows, (r) => value(r, col), k);
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
        const clusters: MoodCluster[] = [{ index: 0, vector, songs: rows.length, topTags: topTags(rows) }];
        for (const members of moodClusters(rows, vectorOf)) clusters.push({ index: clusters.length, vector: unitMean(members, vectorOf), songs: members.length, topTags: topTags(members) });
        moods.set(mood, { mood, vector, songs: ranked.length, minScore: ranked[ranked.length - 1]![1], clusters });
        await scheduler.maybeYield();
      }
    }
    await scheduler.maybeYield();
    const concepts = buildConcepts(size, sample, carrierBitsets(fill, taggedRows, size, low, high, CARRY_THRESHOLD), vectorOf);
    await scheduler.maybeYield();
    const coverage = OTHER_FEATURE_LABELS.map((label, i) => {
      let sum = 0;
      for (let r = 0; r < size; r++) if (taggedFlags[r]) sum += value(r, OTHER_OFFSET + i);
      return { label, score: tagged ? Math.round((sum / tagged) * 1000) / 1000 : 0 };
    });
    // The columns, one after the other (the fill's arrays are dropped with the fill).
    const columns = new ByteLog(storage.dir, storage.residentMaxBytes ?? Number.POSITIVE_INFINITY, 'semantic');
    const postings: Posting[] = [];
    // The fill's row-major arrays are read TRANSPOSE_BYTES bytes of a row at a time (16 tag columns, 4 other-feature
    // columns) into as many column buffers: one sequential pass per block instead of one strided pass per column.
    const block = Buffer.allocUnsafeSlow(size * TRANSPOSE_BYTES);
    const cap = postingsCap(size);
    const isTagged = (r: number) => taggedFlags[r] === 1;
    for (let c0 = 0; c0 < OTHER_OFFSET; c0 += TRANSPOSE_BYTES) {
      const n = Math.min(TRANSPOSE_BYTES, OTHER_OFFSET - c0);
      for (let r = 0; r < size; r++) {
        const o = r * OTHER_OFFSET + c0;
        for (let j = 0; j < n; j++) block[j * size + r] = fill.tagBytes[o + j]!;
      }
      for (let j = 0; j < n; j++) {
        const c = c0 + j;
        const column = block.subarray(j * size, (j + 1) * size);
        columns.append(column);
        const lo = low[c]!;
        const hi = high[c]!;
        // The normalised score of normColumn, as a function of the stored byte.
        postings.push(bytePosting(column, size, isTagged, (b) => Math.max(0, Math.min(1, (BYTE_PROBABILITY[b]! - lo) / (hi - lo))), cap, rowsInIdOrder));
        await scheduler.maybeYield();
      }
    }
    const floats = new Float32Array(block.buffer, block.byteOffset, size * (TRANSPOSE_BYTES / 4));
    for (let c0 = 0; c0 < OTHER_COLUMNS; c0 += TRANSPOSE_BYTES / 4) {
      const n = Math.min(TRANSPOSE_BYTES / 4, OTHER_COLUMNS - c0);
      for (let r = 0; r < size; r++) {
        const o = r * OTHER_COLUMNS + c0;
        for (let j = 0; j < n; j++) floats[j * size + r] = fill.others[o + j]!;
      }
      for (let j = 0; j < n; j++) {
        const c = c0 + j;
        const f32 = floats.subarray(j * size, (j + 1) * size);
        columns.append(new Uint8Array(f32.buffer, f32.byteOffset, size * 4));
        const lo = low[OTHER_OFFSET + c]!;
        const hi = high[OTHER_OFFSET + c]!;
        postings.push(scorePosting(size, isTagged, (r) => Math.max(0, Math.min(1, (f32[r]! - lo) / (hi - lo))), cap, rowsInIdOrder));
        await scheduler.maybeYield();
      }
    }
    const any = () => true;
    const posted = (d: Descriptor) => scorePosting(size, any, descriptorScore(d, fill.tempo, fill.energy, energyRange), cap, rowsInIdOrder);
    const descriptorPostings = {} as Record<Descriptor, Posting>;
    for (const d of ['slow', 'fast', 'loud', 'quiet'] as const) {
      descriptorPostings[d] = posted(d);
      await scheduler.maybeYield();
    }
    columns.append(new Uint8Array(fill.tempo.buffer, fill.tempo.byteOffset, size * 4));
    columns.append(new Uint8Array(fill.energy.buffer, fill.energy.byteOffset, size * 4));
    return { columns, tagged: taggedFlags, taggedCount: tagged, low, high, energyRange, moods, concepts, postings, descriptorPostings, coverage };
  }

  /** Builds the table of a generation from its tracks' rows; `storage`: where the per-row columns live (default: in memory). */
  static build(gen: Generation, rows: Iterable<SemanticRowSource>, storage: SemanticStorage = {}): Promise<SemanticTable> {
    const fill = new ColumnFill(gen.index.size, (id) => gen.index.rowOf(id));
    fill.add(rows);
    return SemanticTable.of(gen, fill, storage);
  }

  /**
   * Builds the table from pages of rows as they are read (`SemanticRepository.semanticPages`), or from the rows a
   * build filled from the snapshot pages (`seedSemanticRows`; `pages` is then not read): only one page of
   * row objects is alive at a time (at 1M songs, materialising every row first held ~1 GiB more at the peak).
   * The columns are filled in memory (~126 MiB at 1M, released once they are written to `storage`).
   */
  static async buildFromPages(gen: Generation, pages: AsyncIterable<readonly SemanticRowSource[]>, storage: SemanticStorage = {}): Promise<SemanticTable> {
    // The rows the build filled from the snapshot pages, when it did (seedSemanticRows): no read of index.tracks.
    const seeded = takeSemanticSeed(gen);
    if (seeded) return SemanticTable.of(gen, seeded.columnsOf(gen.index.size), storage);
    const fill = new ColumnFill(gen.index.size, (id) => gen.index.rowOf(id));
    for await (const page of pages) fill.add(page);
    return SemanticTable.of(gen, fill, storage);
  }

  /**
   * The table of `gen` over the filled columns `fill` (its rows = the generation's rows; e.g. `carriedFill`'s), built
   * in slices of `sliceMs` (10 ms; `TableParts`), so the queries of the generation still serving keep being answered.
   */
  static async of(gen: Generation, fill: ColumnFill, storage: SemanticStorage = {}, sliceMs = 10): Promise<SemanticTable> {
    const inIdOrder = rowsInIdOrder(gen);
    const scheduler = new CooperativeScheduler(sliceMs);
    const parts = await SemanticTable.compute(gen.index.size, fill, (r) => gen.index.getVector(r), storage, inIdOrder, scheduler);
    return new SemanticTable(gen.generation, gen.index.size, inIdOrder, parts);
  }

  /** The stored bytes of column c (`size` tag bytes, or `size` float32 other features), read once. */
  rawColumn(c: number): ArrayBuffer {
    return this.readColumn(this.columnSpan(c).at, this.columnSpan(c).bytes);
  }

  /** Posting of feature column c: tagged rows of normalised score above 0, best first (ties in row order), cut at `postingsCap`. */
  posting(c: number): Posting {
    return this.postings[c]!;
  }

  /** Rows scoring above 0 on a tempo or energy word (`descriptorScore`), best first, cut at `postingsCap`. */
  descriptorPosting(d: Descriptor): Posting {
    return this.descriptorPostings[d];
  }

  /** Bytes held by the postings. */
  get postingBytes(): number {
    let b = 0;
    for (const p of [...this.postings, ...Object.values(this.descriptorPostings)]) b += p.rows.byteLength;
    return b;
  }

  /** Bytes of column c in the log, and where it starts. */
  private columnSpan(c: number): { at: number; bytes: number } {
    const n = this.size;
    if (c < OTHER_OFFSET) return { at: c * n, bytes: n };
    return { at: OTHER_OFFSET * n + (c - OTHER_OFFSET) * 4 * n, bytes: 4 * n };
  }

  /** Reads `bytes` bytes from `at` of the column log into a fresh buffer (one read call per column from the file). */
  private readColumn(at: number, bytes: number): ArrayBuffer {
    const out = new ArrayBuffer(bytes);
    this.columns.read(at, bytes, new Uint8Array(out));
    return out;
  }

  /**
   * The normalised score of column c for every row, as a function of the row, reading the column once (from memory
   * or the table's file): clamp((p - low[c]) / (high[c] - low[c])) with p the stored probability, 0 for an untagged
   * row. Holds the column (`size` or `4 size` bytes) until dropped: call it once per query and column.
   */
  normColumn(c: number): ColumnScore {
    const { at, bytes } = this.columnSpan(c);
    const lo = this.low[c]!;
    const hi = this.high[c]!;
    const tagged = this.tagged;
    if (c < OTHER_OFFSET) {
      const b = new Uint8Array(this.readColumn(at, bytes));
      return (row) => (tagged[row] !== 1 ? 0 : Math.max(0, Math.min(1, (BYTE_PROBABILITY[b[row]!]! - lo) / (hi - lo))));
    }
    const f = new Float32Array(this.readColumn(at, bytes));
    return (row) => (tagged[row] !== 1 ? 0 : Math.max(0, Math.min(1, (f[row]! - lo) / (hi - lo))));
  }

  /** Tempo (BPM) of every row, NaN when unknown, read once from memory or the table's file. */
  tempoColumn(): Float32Array {
    return new Float32Array(this.readColumn((OTHER_OFFSET + 4 * OTHER_COLUMNS) * this.size, 4 * this.size));
  }

  /** Energy (dB) of every row, NaN when unknown, read once from memory or the table's file. */
  energyColumn(): Float32Array {
    return new Float32Array(this.readColumn((OTHER_OFFSET + 4 * OTHER_COLUMNS + 4) * this.size, 4 * this.size));
  }

  /** Normalised value in [0, 1] of column c for a row (0 when untagged). One read per call: tests and single rows only. */
  norm(row: number, c: number): number {
    const p = this.value(row, c);
    if (Number.isNaN(p)) return 0;
    const lo = this.low[c]!;
    const hi = this.high[c]!;
    return Math.max(0, Math.min(1, (p - lo) / (hi - lo)));
  }

  /** Raw probability of column c (NaN when untagged). One read per call. */
  raw(row: number, c: number): number {
    return this.value(row, c);
  }

  /** Column c of a row: a tag probability (stored byte / 255), an other feature, or NaN when the row is untagged. */
  private value(row: number, c: number): number {
    if (this.tagged[row] !== 1) return Number.NaN;
    const { at, bytes } = this.columnSpan(c);
    const width = bytes / this.size;
    const b = new Uint8Array(width);
    this.columns.read(at + row * width, width, b);
    return c < OTHER_OFFSET ? BYTE_PROBABILITY[b[0]!]! : new Float32Array(b.buffer)[0]!;
  }

  /** Bytes held in memory: the tagged flags plus the column log's memory (all columns while resident, a write buffer once on disk). */
  byteLength(): number {
    return this.tagged.byteLength + this.columns.residentBytes + this.postingBytes;
  }

  /** Bytes of the per-row columns (tags, other features, tempo, energy), in memory or on disk, plus the tagged flags. */
  columnBytes(): number {
    return this.columns.bytes + this.tagged.byteLength;
  }

  /** True when the columns live in a file. */
  get onDisk(): boolean {
    return this.columns.spilled;
  }

  /** Releases the columns' memory and file now (later column reads throw). Otherwise the file closes when the table is garbage-collected. */
  close(): void {
    this.columns.close();
  }

  /** Mean raw score of each other feature over tagged songs (the dashboard's moods_coverage). */
  moodsCoverage(): Array<{ label: string; score: number }> {
    return this.coverage.map((c) => ({ ...c }));
  }

  /** MSD probability of column i (tests). */
  msd(row: number, i: number): number {
    return this.raw(row, MSD_OFFSET + i);
  }
}

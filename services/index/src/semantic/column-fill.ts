import type { Generation } from '../core/generation';
import type { SemanticRowSource } from './semantic-table';
import { FEATURE_COLUMNS, OTHER_OFFSET } from './vocabulary';

/** Other-feature columns (float32 each) after the OTHER_OFFSET tag-byte columns. */
export const OTHER_COLUMNS = FEATURE_COLUMNS - OTHER_OFFSET;

/** The per-row columns of a SemanticTable, filled from rows in any number of batches. */
export class ColumnFill {
  tagBytes: Uint8Array;
  others: Float32Array;
  tagged: Uint8Array;
  tempo: Float32Array;
  energy: Float32Array;
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
      if (row >= 0) this.set(row, r.tags, r.other, r.tempo, r.energy);
    }
  }

  /** Sets one row: the columns `add` fills from a tracks row (the same rules). */
  set(row: number, tags: Uint8Array | null, other: readonly number[] | null, tempo: number | null, energy: number | null): void {
    if (tempo !== null) this.tempo[row] = tempo;
    if (energy !== null) this.energy[row] = energy;
    if (!tags || tags.length !== OTHER_OFFSET) return;
    this.tagBytes.set(tags.subarray(0, OTHER_OFFSET), row * OTHER_OFFSET);
    for (let c = 0; c < OTHER_COLUMNS; c++) this.others[row * OTHER_COLUMNS + c] = Math.max(0, Math.min(1, other?.[c] ?? 0));
    if (this.tagged[row] !== 1) this.taggedCount++;
    this.tagged[row] = 1;
  }

  /** Row capacity. */
  get capacity(): number {
    return this.tagged.length;
  }

  /** The same rows in arrays of `size` rows (grown: new rows unset; shrunk: rows from `size` on dropped). */
  resize(size: number): void {
    const copy = <A extends Uint8Array | Float32Array>(a: A, per: number, make: (n: number) => A): A => {
      const out = make(size * per);
      out.set(a.subarray(0, Math.min(a.length, size * per)));
      return out;
    };
    const keep = Math.min(size, this.capacity);
    let dropped = 0;
    for (let r = keep; r < this.capacity; r++) dropped += this.tagged[r]!;
    this.taggedCount -= dropped;
    this.tagBytes = copy(this.tagBytes, OTHER_OFFSET, (n) => new Uint8Array(n));
    this.others = copy(this.others, OTHER_COLUMNS, (n) => new Float32Array(n));
    this.tagged = copy(this.tagged, 1, (n) => new Uint8Array(n));
    this.tempo = copy(this.tempo, 1, (n) => new Float32Array(n).fill(Number.NaN));
    this.energy = copy(this.energy, 1, (n) => new Float32Array(n).fill(Number.NaN));
  }
}

/**
 * The text search's per-row columns filled while a build reads the catalogue's snapshot (row = build order, as the
 * build fed from the pages numbers its rows), so the table of the new generation is built from memory instead of
 * reading `index.tracks` back (`SemanticService.table` takes it once: `seedSemanticRows`). The values are the ones the
 * copy stores and `semanticPages` would read: the tag bytes of `encodeTags`, the other features of `otherFeaturesOf`
 * as float32, tempo and energy as float32 (same columns, same rules: `ColumnFill.set`). 132 bytes a song.
 */
export class SemanticRows {
  private fill: ColumnFill;
  private count = 0;

  constructor(expected: number) {
    this.fill = new ColumnFill(Math.max(16, expected), () => -1);
  }

  /** Sets row `row` (rows arrive in order; the arrays grow when full). */
  set(row: number, tags: Uint8Array | null, other: readonly number[] | null, tempo: number | null, energy: number | null): void {
    if (row >= this.fill.capacity) this.fill.resize(Math.max(2 * this.fill.capacity, row + 1));
    this.fill.set(row, tags, other, tempo, energy);
    this.count = Math.max(this.count, row + 1);
  }

  /** Rows set so far (highest row + 1). */
  get size(): number {
    return this.count;
  }

  /** The columns of `size` rows for the table (the fill itself: this object is used once). */
  columnsOf(size: number): ColumnFill {
    if (this.fill.capacity !== size) this.fill.resize(size);
    return this.fill;
  }
}

/**
 * Seeds a build hands to the text search of the generation it made, by the served index they belong to (dropped with
 * it), taken once by the table's build: `sizeOf` must equal the index's row count, and a generation with live-library
 * rows on top (revision > 0) takes none.
 */
class SeedShelf<T> {
  private readonly seeds = new WeakMap<object, T>();

  constructor(private readonly sizeOf: (seed: T) => number) {}

  put(index: Generation['index'], seed: T): void {
    if (this.sizeOf(seed) === index.size) this.seeds.set(index, seed);
  }

  take(gen: Generation): T | undefined {
    if ((gen.revision ?? 0) !== 0) return undefined;
    const seed = this.seeds.get(gen.index);
    if (seed === undefined || this.sizeOf(seed) !== gen.index.size) return undefined;
    this.seeds.delete(gen.index);
    return seed;
  }
}

const rowSeeds = new SeedShelf<SemanticRows>((rows) => rows.size);

/**
 * Hands the rows a build filled from the snapshot pages to the text search of the generation serving `index`: its
 * table is then built from them (once) instead of from `index.tracks`. `rows.size` must be the index's row count.
 */
export function seedSemanticRows(index: Generation['index'], rows: SemanticRows): void {
  rowSeeds.put(index, rows);
}

/** Takes the seed of a generation as built (no live-library rows on top), once; undefined when there is none. */
export function takeSemanticSeed(gen: Generation): SemanticRows | undefined {
  return rowSeeds.take(gen);
}

/** A changed row's columns as `ColumnFill.set` takes them: row, tag bytes, other features, tempo, energy. */
export type ChangedColumns = [row: number, tags: Uint8Array | null, other: readonly number[] | null, tempo: number | null, energy: number | null];

/**
 * The text-search seed of a build fed by the catalogue's change feed (generation/delta-snapshot.ts): the new
 * generation's rows are the serving generation's kept rows (`sourceRow[row]` = the base row, in `base`) and changed
 * rows read by id (`sourceRow[row]` = -1), whose columns `changed` lists. The table is then made by carrying the base
 * table's columns over (`carriedFill`) instead of reading `index.tracks` (~26 s at 1M songs, session 19).
 */
export interface SemanticDeltaSeed {
  base: Generation;
  sourceRow: Int32Array;
  changed: ChangedColumns[];
}

const deltaSeeds = new SeedShelf<SemanticDeltaSeed>((seed) => seed.sourceRow.length);

/** Hands a delta build's seed to the text search of the generation serving `index` (ignored unless it has one source per row). */
export function seedSemanticDelta(index: Generation['index'], seed: SemanticDeltaSeed): void {
  deltaSeeds.put(index, seed);
}

/** Takes the delta seed of a generation as built (no live-library rows on top), once; undefined when there is none. */
export function takeSemanticDeltaSeed(gen: Generation): SemanticDeltaSeed | undefined {
  return deltaSeeds.take(gen);
}

/** What `carriedFill` reads of the serving generation's table (SemanticTable). */
export interface CarriedColumns {
  readonly tagged: Uint8Array;
  rawColumn(c: number): ArrayBuffer;
  tempoColumn(): Float32Array;
  energyColumn(): Float32Array;
}

/**
 * The columns of a delta build's `n` rows: a kept row's (`seed.sourceRow[row]` >= 0) every column, tagged flag, tempo
 * and energy copied from its base row of `old`, a changed row's set from `seed.changed` (its snapshot row's values,
 * `ColumnFill.set` rules), so they equal a fill from `index.tracks` wherever `old`'s did. Reads each column of `old`
 * once (from memory or its file).
 */
export function carriedFill(old: CarriedColumns, seed: SemanticDeltaSeed, n: number): ColumnFill {
  const src = seed.sourceRow;
  const fill = new ColumnFill(n, () => -1);
  for (const [row, tags, other, tempo, energy] of seed.changed) fill.set(row, tags, other, tempo, energy);
  for (let c = 0; c < FEATURE_COLUMNS; c++) {
    const raw = old.rawColumn(c);
    if (c < OTHER_OFFSET) {
      const col = new Uint8Array(raw);
      for (let r = 0; r < n; r++) if (src[r]! >= 0) fill.tagBytes[r * OTHER_OFFSET + c] = col[src[r]!]!;
    } else {
      const col = new Float32Array(raw);
      const o = c - OTHER_OFFSET;
      for (let r = 0; r < n; r++) if (src[r]! >= 0) fill.others[r * OTHER_COLUMNS + o] = col[src[r]!]!;
    }
  }
  const tempo = old.tempoColumn();
  const energy = old.energyColumn();
  for (let r = 0; r < n; r++) {
    const s = src[r]!;
    if (s < 0) continue;
    fill.tempo[r] = tempo[s]!;
    fill.energy[r] = energy[s]!;
    if (old.tagged[s] === 1 && fill.tagged[r] !== 1) {
      fill.tagged[r] = 1;
      fill.taggedCount++;
    }
  }
  return fill;
}

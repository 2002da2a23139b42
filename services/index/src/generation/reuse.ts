import { ProductQuantiser, type CooperativeScheduler, type IvfIndex, type KeptCells, type KeptCodes } from '@polyphony/vector-engine';
import { normaliseInto } from '@polyphony/vectors';
import type { ArtistReuse, KeptMixture } from '../artists/artist-model';
import type { Generation, MapMethod, ReuseLineage } from '../core/generation';
import { placeOnUmap, UMAP_MIN_SAMPLES } from '../maps/umap-projection';
import { projectPoint, type PcaBasis } from '../maps/projection';
import type { BallBasis } from '../hyperbolic/ball';
import { seedBallReuse } from '../hyperbolic/ball-seed';

/** Serving-generation rows read at once by `RowMatcher` (a run of consecutive rows; 512 x 200 floats = 400 KiB). */
const MATCH_READ_ROWS = 512;

/** Cells probed when a new or changed row is placed on the reused map (a neighbour search for position only). */
export const REUSE_PLACE_NPROBE = 8;

/**
 * The row correspondence between a new build and the generation it replaces (issue 35: "map and artist mixtures
 * reusing the previous generation where songs did not change"). A new row is **unchanged** when the serving
 * generation holds the same canonical id with a bitwise-identical vector; everything else is **changed** (new id,
 * or new vector under the same id). The plan exists only when the serving generation has the same embedder
 * version and dimension and a stored basis; `fraction` is (changed + removed) / new rows.
 */
export class GenerationReuse {
  private constructor(
    readonly prev: Generation,
    /** Per new row: the serving generation's row of the same id and vector, or -1 (changed). */
    readonly prevRowOfNew: Int32Array,
    /** Per serving-generation row: the new row it is unchanged in, or -1. */
    readonly newRowOfPrev: Int32Array,
    readonly changed: number,
    readonly removed: number,
  ) {}

  /**
   * Matches every row of `index` (the new float generation) with the serving generation `prev`: one id lookup
   * and one vector comparison per row (the serving generation's float copy, resident or one positional read).
   * @returns undefined when `prev` is empty or of another embedder version or dimension, or has no PCA basis
   */
  static async plan(prev: Generation, index: IvfIndex, embedderVersion: string | null, scheduler?: CooperativeScheduler): Promise<GenerationReuse | undefined> {
    if (!GenerationReuse.usable(prev, embedderVersion, index.dim)) return undefined;
    const size = index.size;
    const prevRowOfNew = new Int32Array(size).fill(-1);
    const newRowOfPrev = new Int32Array(prev.index.size).fill(-1);
    let changed = 0;
    for (let r = 0; r < size; r++) {
      const p = prev.index.rowOf(index.idOf(r));
      if (p >= 0 && sameVector(index.getVector(r), prev.index.getVector(p))) {
        prevRowOfNew[r] = p;
        newRowOfPrev[p] = r;
      } else changed++;
      if ((r & 4095) === 4095) await scheduler?.maybeYield();
    }
    let kept = 0;
    for (let p = 0; p < newRowOfPrev.length; p++) if (newRowOfPrev[p]! >= 0) kept++;
    return new GenerationReuse(prev, prevRowOfNew, newRowOfPrev, changed, prev.index.size - kept);
  }

  /** True when a build of `embedderVersion` vectors of `dim` may take anything over from `prev` (not empty, same space, a basis). */
  static usable(prev: Generation, embedderVersion: string | null, dim: number): boolean {
    return prev.generation !== 0 && prev.index.size > 0 && prev.pca !== undefined && prev.embedderVersion === embedderVersion && prev.index.dim === dim;
  }

  /**
   * The plan from rows matched while the snapshot streamed (`RowMatcher`, same rule as `plan`), for a build of
   * `size` rows; undefined when `prev` is not usable (see `usable`) or the matcher did not see exactly `size` rows.
   */
  static fromMatcher(m: RowMatcher, size: number, embedderVersion: string | null, dim: number): GenerationReuse | undefined {
    if (m.failure !== undefined || m.count !== size || !GenerationReuse.usable(m.prev, embedderVersion, dim)) return undefined;
    return new GenerationReuse(m.prev, m.prevRowOfNew.slice(0, size), m.newRowOfPrev, m.changed, m.prev.index.size - m.kept);
  }

  /** (changed + removed) / new rows: the share of the catalogue this build does not take over. */
  get fraction(): number {
    return this.prevRowOfNew.length === 0 ? 1 : (this.changed + this.removed) / this.prevRowOfNew.length;
  }

  /**
   * The serving generation's IVF cells for the new build (`IvfBuildOptions.keptCells`, issue 35): its centroids and,
   * per new row, the cell its unchanged row is in (-1 = changed: the build places it at its nearest centroid, as the
   * live library appends). Kept cells make the new generation's cells those of the serving one minus the removed
   * rows plus the placed ones: no k-means, no assignment of unchanged rows. Similar-songs answers are then those of
   * the serving generation's cells (IVF is approximate: a freshly trained build may differ at the recall margin).
   * @returns undefined (the build trains k-means) when the serving generation has no cells or its largest cell is
   *   more than `maxImbalance` times the mean (the live library's drift rule); else the cells and that imbalance
   */
  keptCells(maxImbalance: number): { cells: KeptCells; imbalance: number } | undefined {
    const parts = this.prev.index.parts();
    const { nlist, cellOffsets, rowOfSlot } = parts;
    if (nlist < 1 || rowOfSlot.length === 0) return undefined;
    let largest = 0;
    for (let c = 0; c < nlist; c++) largest = Math.max(largest, cellOffsets[c + 1]! - cellOffsets[c]!);
    const imbalance = largest / (rowOfSlot.length / nlist);
    if (!(imbalance <= maxImbalance)) return undefined;
    const prevCell = new Int32Array(rowOfSlot.length);
    for (let c = 0; c < nlist; c++) for (let s = cellOffsets[c]!; s < cellOffsets[c + 1]!; s++) prevCell[rowOfSlot[s]!] = c;
    const cellOfRow = new Int32Array(this.prevRowOfNew.length);
    for (let r = 0; r < cellOfRow.length; r++) {
      const p = this.prevRowOfNew[r]!;
      cellOfRow[r] = p >= 0 ? prevCell[p]! : -1;
    }
    return { cells: { nlist, centroids: parts.centroids, cellOfRow, coarse: parts.groups ?? null }, imbalance };
  }

  /**
   * The serving generation's Poincaré ball basis for the new generation `index` (issue 35: activation reuse), with its
   * unchanged rows handed to the hyperbolic service (`seedBallReuse`: it copies their points from the serving ball, an
   * unchanged row having the same id and a bitwise-identical `getVector`, the match rule above). Only for a build that
   * kept the map (within the threshold). @returns undefined when the serving generation has no stored basis (then the
   * new ball fits its own) or one of another dimension
   */
  keptBallBasis(index: IvfIndex): BallBasis | undefined {
    const basis = this.prev.ballBasis;
    if (!basis || basis.inputDim !== index.dim || this.prevRowOfNew.length !== index.size) return undefined;
    seedBallReuse(index, { prev: this.prev, prevRowOfNew: this.prevRowOfNew });
    return basis;
  }

  /**
   * The serving generation's quantiser and codes for a build that kept its cells (`keptCells`; `quantiseKeepingCodes`):
   * per new row the serving generation's slot of its unchanged row (-1 = changed: encoded). Only valid after a build
   * on kept cells (an unchanged row is then in the same cell under the same centroids, so its code is the same bytes).
   * @returns undefined when the serving generation is not quantised in `mode` (or, pq, with another `pqM`)
   */
  keptCodes(mode: 'int8' | 'pq', pqM: number): KeptCodes | undefined {
    const parts = this.prev.index.parts();
    const q = parts.quantised;
    if (!q || q.quantiser.kind !== mode) return undefined;
    if (q.quantiser instanceof ProductQuantiser && q.quantiser.m !== pqM) return undefined;
    const oldSlotOfRow = new Int32Array(this.prevRowOfNew.length);
    for (let r = 0; r < oldSlotOfRow.length; r++) {
      const p = this.prevRowOfNew[r]!;
      oldSlotOfRow[r] = p >= 0 ? parts.slotOfRow[p]! : -1;
    }
    return { quantiser: q.quantiser, codes: q.codes, oldSlotOfRow };
  }

  /**
   * The map of the new generation from the serving one: unchanged rows keep their position; a changed row is
   * placed the way a song outside UMAP's fit sample is (the membership-weighted mean of its nearest rows of the
   * serving generation, `placeOnUmap` at `REUSE_PLACE_NPROBE`), or projected on the kept basis for a PCA map.
   * The basis (and with it the artist prior) is the serving generation's.
   * @returns undefined when a full build would lay out with another method than the serving generation's
   */
  async map(index: IvfIndex, scheduler?: CooperativeScheduler): Promise<{ pca: PcaBasis; coords: Float32Array; mapMethod: MapMethod } | undefined> {
    const prev = this.prev;
    const method: MapMethod = index.size >= UMAP_MIN_SAMPLES ? 'umap' : 'pca';
    if (method !== prev.mapMethod || prev.coords.length < 2 * prev.index.size || !prev.pca) return undefined;
    const coords = new Float32Array(index.size * 2);
    for (let r = 0; r < index.size; r++) {
      const p = this.prevRowOfNew[r]!;
      if (p >= 0) {
        coords[2 * r] = prev.coords[2 * p]!;
        coords[2 * r + 1] = prev.coords[2 * p + 1]!;
        continue;
      }
      const v = index.getVector(r);
      const [x, y] = method === 'umap' ? placeOnUmap(prev.index, prev.coords, v, REUSE_PLACE_NPROBE) : projectPoint(prev.pca, v);
      coords[2 * r] = x;
      coords[2 * r + 1] = y;
      if ((r & 255) === 255) await scheduler?.maybeYield();
    }
    return { pca: prev.pca, coords, mapMethod: method };
  }

  /**
   * The artist reuse rule for `ArtistModel.fit` (valid only with the serving generation's basis, so the prior is
   * the same): an artist whose songs are exactly the songs of the same artist key in the serving generation, each
   * unchanged, gets the serving generation's mixture with its rows renumbered; any other artist is fitted.
   */
  artists(): ArtistReuse {
    const prevArtists = this.prev.artists;
    return (key: string, rows: Int32Array): KeptMixture | undefined => {
      const pa = prevArtists.indexOfKey(key);
      if (pa < 0) return undefined;
      if (prevArtists.rows(pa).length !== rows.length) return undefined;
      for (const r of rows) {
        const p = this.prevRowOfNew[r]!;
        if (p < 0 || prevArtists.artistOfRow[p] !== pa) return undefined;
      }
      // The stored mixture is copied as it is (ArtistModelBuilder.addKept); only its song rows are renumbered.
      const prevRows = prevArtists.rows(pa);
      const songRows = new Int32Array(prevRows.length);
      for (let i = 0; i < songRows.length; i++) {
        const r = this.newRowOfPrev[prevRows[i]!]!;
        if (r < 0) return undefined;
        songRows[i] = r;
      }
      return { from: prevArtists, artist: pa, songRows };
    };
  }
}

/**
 * The reuse lineage after a build over `plan` (the new generation's `lineage`) and its drift: rows placed without
 * training since the root over the root's rows. The serving generation's lineage is its stored one, or itself as root
 * (its rows as built: live appends are changed rows of this build).
 * @param plan the build's row match with the serving generation
 * @returns `carried`: the lineage if this build keeps the serving generation's cells or map; `drift`: its placed / trained
 */
export function reuseLineage(plan: Pick<GenerationReuse, 'prev' | 'changed' | 'removed'>): { carried: ReuseLineage; drift: number } {
  const prev = plan.prev;
  const root = prev.lineage ?? { trainedRows: prev.builtRows ?? prev.index.size, placedRows: 0 };
  const carried = { trainedRows: root.trainedRows, placedRows: root.placedRows + plan.changed + plan.removed };
  return { carried, drift: root.trainedRows > 0 ? carried.placedRows / root.trainedRows : Infinity };
}

/**
 * Reads `rows` consecutive rows of `gen` from row `first` into `out` (row-major, `rows * dim` floats): the stored unit
 * vectors, from the vector file in row order (quantised modes) or from the cells (float mode).
 */
export function rowRunReader(gen: Generation): (first: number, rows: number, out: Float32Array) => void {
  const dim = gen.index.dim;
  const parts = gen.index.parts();
  const file = parts.quantised?.file;
  return file
    ? (first, rows, out) => file.readRows(first, rows, out)
    : (first, rows, out) => {
        for (let k = 0; k < rows; k++) {
          const o = parts.slotOfRow[first + k]! * dim;
          out.set(parts.vectors.subarray(o, o + dim), k * dim);
        }
      };
}

/** True when `a` equals the `a.length` floats of `b` from `bo` (default 0; with no offset the lengths must agree). */
function sameVector(a: Float32Array, b: Float32Array, bo?: number): boolean {
  if (bo === undefined && a.length !== b.length) return false;
  const o = bo ?? 0;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[o + i]) return false;
  return true;
}

/**
 * The row match of `GenerationReuse.plan` done while the snapshot streams (issue 35): each row the fed build receives
 * is looked up in the serving generation `prev` (captured when the snapshot started; later live appends to the
 * serving generation are new objects and count as changed here) as it arrives, with its vector normalised by the
 * build's own rule (`normaliseInto`, so the comparison is bitwise against the stored unit vector). The work runs on
 * the snapshot loop between pages, i.e. mostly while the build waits for the catalogue, instead of after the IVF
 * build (7.3 s wall at 1M, session 16). Rows must be added in build order (row 0 first).
 */
export class RowMatcher {
  /** Rows added so far (= the next row number). */
  count = 0;
  changed = 0;
  /** Serving-generation rows matched by some new row. */
  kept = 0;
  /** Wall ms spent matching (on the snapshot loop). */
  ms = 0;
  /** Why matching stopped (e.g. the serving generation's vector file closed under it); the build then matches after the IVF build. */
  failure: string | undefined;
  prevRowOfNew: Int32Array;
  readonly newRowOfPrev: Int32Array;
  private readonly unit: Float32Array;
  private readonly stored: Float32Array;
  /** Reads `rows` consecutive serving-generation rows from `first` into `out` (row-major). */
  private readonly readRun: (first: number, rows: number, out: Float32Array) => void;

  constructor(
    readonly prev: Generation,
    expected: number,
  ) {
    const dim = prev.index.dim;
    this.prevRowOfNew = new Int32Array(Math.max(1024, expected));
    this.newRowOfPrev = new Int32Array(prev.index.size).fill(-1);
    this.unit = new Float32Array(dim);
    this.stored = new Float32Array(MATCH_READ_ROWS * dim);
    this.readRun = rowRunReader(prev);
  }

  /**
   * Matches the next `ids.length` rows: ids in build order and their raw vectors (`ids.length * dim` floats, the
   * values the fed build normalises). A vector of another length than the serving generation's dim matches nothing.
   * @param known per row (when given): the serving row it is known to be unchanged in, or -1 (looked up as usual).
   *   The caller vouches for such a row: the serving row holds its id, and its vector is that row's stored unit vector
   *   or normalises to it bitwise (the delta snapshot's kept rows, `DeltaBatch.baseRows`: checked by `planDelta`); it
   *   is then matched without an id lookup or a vector read, unless an earlier row already took that serving row.
   */
  add(ids: readonly string[], vectors: Float32Array, known?: Int32Array): void {
    if (this.failure) return;
    const t = performance.now();
    try {
      this.match(ids, vectors, known);
    } catch (err) {
      this.failure = (err as Error).message;
    }
    this.ms += performance.now() - t;
  }

  private match(ids: readonly string[], vectors: Float32Array, known: Int32Array | undefined): void {
    const dim = this.unit.length;
    const n = ids.length;
    if (this.count + n > this.prevRowOfNew.length) {
      const grown = new Int32Array(Math.max(this.count + n, 2 * this.prevRowOfNew.length));
      grown.set(this.prevRowOfNew.subarray(0, this.count));
      this.prevRowOfNew = grown;
    }
    const sameDim = vectors.length === n * dim;
    const isKnown = (i: number) => sameDim && known !== undefined && known[i]! >= 0;
    const prevRow = new Int32Array(n);
    for (let i = 0; i < n; i++) prevRow[i] = !sameDim ? -1 : isKnown(i) ? known![i]! : this.prev.index.rowOf(ids[i]!);
    // Both generations number rows in canonical-id byte order, so the serving rows of a page mostly form runs of
    // consecutive rows: one read per run (up to MATCH_READ_ROWS rows) instead of one positional read per row.
    // Known rows form runs of their own, read nothing and compare nothing.
    for (let i = 0; i < n; ) {
      let end = i + 1;
      const vouched = isKnown(i);
      if (vouched) while (end < n && isKnown(end)) end++;
      else if (prevRow[i]! >= 0) {
        while (end < n && end - i < MATCH_READ_ROWS && !isKnown(end) && prevRow[end] === prevRow[end - 1]! + 1) end++;
        this.readRun(prevRow[i]!, end - i, this.stored);
      }
      for (let k = i; k < end; k++) {
        const r = this.count + k;
        const p = prevRow[k]!;
        let match = false;
        if (p >= 0 && this.newRowOfPrev[p]! < 0) {
          if (vouched) match = true;
          else {
            normaliseInto(vectors, k * dim, this.unit, 0, dim);
            match = sameVector(this.unit, this.stored, (k - i) * dim);
          }
        }
        if (match) {
          this.prevRowOfNew[r] = p;
          this.newRowOfPrev[p] = r;
          this.kept++;
        } else {
          this.prevRowOfNew[r] = -1;
          this.changed++;
        }
      }
      i = end;
    }
    this.count += n;
  }

}

import type { CooperativeScheduler, IvfIndex } from '@polyphony/vector-engine';
import type { ArtistFit } from '../artists/artist-fit';
import type { ArtistReuse } from '../artists/artist-model';
import type { Generation, MapMethod } from '../core/generation';
import { placeOnUmap, UMAP_MIN_SAMPLES } from '../maps/umap-projection';
import { projectPoint, type PcaBasis } from '../maps/projection';

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
    if (prev.generation === 0 || prev.index.size === 0 || !prev.pca) return undefined;
    if (prev.embedderVersion !== embedderVersion || prev.index.dim !== index.dim) return undefined;
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

  /** (changed + removed) / new rows: the share of the catalogue this build does not take over. */
  get fraction(): number {
    return this.prevRowOfNew.length === 0 ? 1 : (this.changed + this.removed) / this.prevRowOfNew.length;
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
    return (key: string, rows: Int32Array): ArtistFit | undefined => {
      const pa = prevArtists.indexOfKey(key);
      if (pa < 0) return undefined;
      if (prevArtists.rows(pa).length !== rows.length) return undefined;
      for (const r of rows) {
        const p = this.prevRowOfNew[r]!;
        if (p < 0 || prevArtists.artistOfRow[p] !== pa) return undefined;
      }
      const rec = prevArtists.record(pa);
      const songRows = new Int32Array(rec.songRows.length);
      for (let i = 0; i < songRows.length; i++) {
        const r = this.newRowOfPrev[rec.songRows[i]!]!;
        if (r < 0) return undefined;
        songRows[i] = r;
      }
      return { weights: rec.weights, means: rec.means, variances: rec.variances, songRows, componentSizes: rec.componentSizes };
    };
  }
}

function sameVector(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

import { PRIOR_FRACTION, fitDiagonalGmm, type MixtureView } from './artist-gmm';
import type { CooperativeScheduler } from './ivf/cooperative';
import type { IvfIndex } from './ivf/ivf-index';

/** One artist's profile as stored per generation (`index.artist_profiles`). */
export interface ArtistProfileRecord {
  key: string;
  name: string;
  /** k mixing weights. */
  weights: Float32Array;
  /** k * dim means and variances. */
  means: Float32Array;
  variances: Float32Array;
  /** Rows of the artist's songs, grouped by component, nearest to the component mean first. */
  songRows: Int32Array;
  /** k component sizes (songRows is their concatenation). */
  componentSizes: Int32Array;
}

/**
 * Every artist of one index generation, summarised by a diagonal Gaussian mixture (artist-gmm.ts), in
 * packed arrays. Artists are identified by their folded name (`artistKey`) and numbered 0..count-1;
 * components are numbered globally, artist a owning components `[compStart[a], compStart[a+1])`.
 * Memory: 8 * dim bytes per component + 4 bytes per song + 4 bytes per row.
 */
export class ArtistModel {
  readonly count: number;
  private readonly keyIndex = new Map<string, number>();
  /** Σ ln variance of every component. */
  private readonly logDet: Float64Array;

  private constructor(
    readonly dim: number,
    readonly names: string[],
    readonly keys: string[],
    private readonly compStart: Int32Array,
    private readonly weights: Float32Array,
    private readonly means: Float32Array,
    private readonly variances: Float32Array,
    /** Song range of each component inside songRows: `[songStart[c], songStart[c+1])`. */
    private readonly songStart: Int32Array,
    private readonly songRows: Int32Array,
    /** Artist of every index row (-1 when unknown). */
    readonly artistOfRow: Int32Array,
  ) {
    this.count = names.length;
    keys.forEach((k, i) => this.keyIndex.set(k, i));
    const comps = compStart[this.count] ?? 0;
    this.logDet = new Float64Array(comps);
    for (let c = 0; c < comps; c++) {
      let s = 0;
      for (let d = 0; d < dim; d++) s += Math.log(variances[c * dim + d]!);
      this.logDet[c] = s;
    }
  }

  /** A model with no artists over `size` rows. */
  static empty(dim: number, size: number): ArtistModel {
    return new ArtistModel(dim, [], [], new Int32Array(1), new Float32Array(0), new Float32Array(0), new Float32Array(0), new Int32Array(1), new Int32Array(0), new Int32Array(size).fill(-1));
  }

  /**
   * Assembles a model from stored profiles (in artist order). Rows that belong to no profile get artist -1.
   * @throws RangeError when a profile's arrays disagree with its component count or a row is out of range
   */
  static fromRecords(dim: number, size: number, records: readonly ArtistProfileRecord[]): ArtistModel {
    let comps = 0;
    let songs = 0;
    for (const r of records) {
      const k = r.weights.length;
      if (k < 1 || r.means.length !== k * dim || r.variances.length !== k * dim || r.componentSizes.length !== k) throw new RangeError(`artist profile ${r.key}: inconsistent sizes`);
      let sum = 0;
      for (const s of r.componentSizes) sum += s;
      if (sum !== r.songRows.length) throw new RangeError(`artist profile ${r.key}: component sizes do not add up`);
      comps += k;
      songs += r.songRows.length;
    }
    const compStart = new Int32Array(records.length + 1);
    const weights = new Float32Array(comps);
    const means = new Float32Array(comps * dim);
    const variances = new Float32Array(comps * dim);
    const songStart = new Int32Array(comps + 1);
    const songRows = new Int32Array(songs);
    const artistOfRow = new Int32Array(size).fill(-1);
    let c = 0;
    let s = 0;
    records.forEach((r, a) => {
      compStart[a] = c;
      weights.set(r.weights, c);
      means.set(r.means, c * dim);
      variances.set(r.variances, c * dim);
      for (let j = 0; j < r.weights.length; j++) {
        songStart[c + j] = s;
        s += r.componentSizes[j]!;
        songStart[c + j + 1] = s;
      }
      songRows.set(r.songRows, songStart[c]!);
      for (const row of r.songRows) {
        if (row < 0 || row >= size) throw new RangeError(`artist profile ${r.key}: row ${row} outside [0, ${size})`);
        artistOfRow[row] = a;
      }
      c += r.weights.length;
    });
    compStart[records.length] = c;
    return new ArtistModel(
      dim,
      records.map((r) => r.name),
      records.map((r) => r.key),
      compStart,
      weights,
      means,
      variances,
      songStart,
      songRows,
      artistOfRow,
    );
  }

  /**
   * Fits every artist of a generation. `artistOfRow[row]` numbers the artists 0..names.length-1 (-1 = no
   * artist); vectors come from the index (unit vectors). The prior variance of every mixture is
   * PRIOR_FRACTION times the catalogue variance `catalogueVariance` (dim values).
   * Cost: O(EM_ITERATIONS * size * MAX_COMPONENTS * dim); yields to the event loop between artists.
   */
  static async fit(
    index: IvfIndex,
    artistOfRow: Int32Array,
    keys: readonly string[],
    names: readonly string[],
    catalogueVariance: Float32Array,
    scheduler?: CooperativeScheduler,
  ): Promise<ArtistModel> {
    const dim = index.dim;
    const prior = new Float32Array(dim);
    for (let d = 0; d < dim; d++) prior[d] = Math.max(PRIOR_FRACTION * catalogueVariance[d]!, 1e-9);
    const a = keys.length;
    // Counting sort of rows by artist.
    const start = new Int32Array(a + 1);
    for (let r = 0; r < artistOfRow.length; r++) if (artistOfRow[r]! >= 0) start[artistOfRow[r]! + 1]!++;
    for (let i = 0; i < a; i++) start[i + 1]! += start[i]!;
    const fill = start.slice(0, a);
    const byArtist = new Int32Array(start[a]!);
    for (let r = 0; r < artistOfRow.length; r++) if (artistOfRow[r]! >= 0) byArtist[fill[artistOfRow[r]!]!++] = r;
    const records: ArtistProfileRecord[] = [];
    for (let i = 0; i < a; i++) {
      const rows = byArtist.subarray(start[i]!, start[i + 1]!);
      if (rows.length === 0) continue;
      records.push(fitArtist(index, keys[i]!, names[i]!, rows, prior));
      await scheduler?.maybeYield();
    }
    return ArtistModel.fromRecords(dim, index.size, records);
  }

  /** Artist number of a folded name, or -1. */
  indexOfKey(key: string): number {
    return this.keyIndex.get(key) ?? -1;
  }

  /** The stored form of artist `a` (copies). */
  record(a: number): ArtistProfileRecord {
    const c0 = this.compStart[a]!;
    const c1 = this.compStart[a + 1]!;
    const k = c1 - c0;
    const sizes = new Int32Array(k);
    for (let j = 0; j < k; j++) sizes[j] = this.songStart[c0 + j + 1]! - this.songStart[c0 + j]!;
    return {
      key: this.keys[a]!,
      name: this.names[a]!,
      weights: this.weights.slice(c0, c1),
      means: this.means.slice(c0 * this.dim, c1 * this.dim),
      variances: this.variances.slice(c0 * this.dim, c1 * this.dim),
      songRows: this.songRows.slice(this.songStart[c0]!, this.songStart[c1]!),
      componentSizes: sizes,
    };
  }

  /** Mixture of artist `a` as a view for `mixtureDivergence`. */
  view(a: number): MixtureView {
    const c0 = this.compStart[a]!;
    const c1 = this.compStart[a + 1]!;
    return {
      k: c1 - c0,
      dim: this.dim,
      weights: this.weights.subarray(c0, c1),
      offset: c0 * this.dim,
      means: this.means,
      variances: this.variances,
      logDet: this.logDet.subarray(c0, c1),
    };
  }

  /** Number of components of artist `a`. */
  components(a: number): number {
    return this.compStart[a + 1]! - this.compStart[a]!;
  }

  /** Rows of component `j` of artist `a`, nearest to the component mean first (a view). */
  componentRows(a: number, j: number): Int32Array {
    const c = this.compStart[a]! + j;
    return this.songRows.subarray(this.songStart[c]!, this.songStart[c + 1]!);
  }

  /** Every row of artist `a` (a view). */
  rows(a: number): Int32Array {
    return this.songRows.subarray(this.songStart[this.compStart[a]!]!, this.songStart[this.compStart[a + 1]!]!);
  }

  /** Weighted mean of the component means of artist `a` (dim floats, not normalised). */
  centroid(a: number): Float32Array {
    const out = new Float32Array(this.dim);
    const c0 = this.compStart[a]!;
    const c1 = this.compStart[a + 1]!;
    for (let c = c0; c < c1; c++) {
      const w = this.weights[c]!;
      for (let d = 0; d < this.dim; d++) out[d]! += w * this.means[c * this.dim + d]!;
    }
    return out;
  }

  /** Mean of component `j` of artist `a` (a copy). */
  componentMean(a: number, j: number): Float32Array {
    const c = this.compStart[a]! + j;
    return this.means.slice(c * this.dim, (c + 1) * this.dim);
  }
}

function fitArtist(index: IvfIndex, key: string, name: string, rows: Int32Array, prior: Float32Array): ArtistProfileRecord {
  const dim = index.dim;
  const n = rows.length;
  const points = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) points.set(index.getVector(rows[i]!), i * dim);
  const fit = fitDiagonalGmm(points, n, dim, prior);
  const order = Array.from({ length: n }, (_, i) => i).sort((x, y) => fit.assignment[x]! - fit.assignment[y]! || fit.sqDistance[x]! - fit.sqDistance[y]! || rows[x]! - rows[y]!);
  const songRows = Int32Array.from(order, (i) => rows[i]!);
  const sizes = new Int32Array(fit.k);
  for (let i = 0; i < n; i++) sizes[fit.assignment[i]!]!++;
  // Drop components that ended up with no hard-assigned song (they cannot show representative songs).
  const keep: number[] = [];
  for (let c = 0; c < fit.k; c++) if (sizes[c]! > 0) keep.push(c);
  let wsum = 0;
  for (const c of keep) wsum += fit.weights[c]!;
  const weights = Float32Array.from(keep, (c) => fit.weights[c]! / wsum);
  const means = new Float32Array(keep.length * dim);
  const variances = new Float32Array(keep.length * dim);
  keep.forEach((c, j) => {
    means.set(fit.means.subarray(c * dim, (c + 1) * dim), j * dim);
    variances.set(fit.variances.subarray(c * dim, (c + 1) * dim), j * dim);
  });
  return { key, name, weights, means, variances, songRows, componentSizes: Int32Array.from(keep, (c) => sizes[c]!) };
}

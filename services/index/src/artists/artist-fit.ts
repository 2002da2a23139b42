import { fitArtistMixture } from './artist-gmm';

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

/** What `fitArtistPoints` returns: an artist's stored mixture without its key and name. */
export type ArtistFit = Omit<ArtistProfileRecord, 'key' | 'name'>;

/**
 * The mixture of one artist from its songs' unit vectors (`rows.length * dim` floats of `points` from float
 * `offset`, in the order of `rows`): what `ArtistModel.fit` stores, without the key and name. Pure (the artist
 * worker threads run it too; same result in any thread).
 */
export function fitArtistPoints(points: Float32Array, offset: number, rows: Int32Array, dim: number, prior: Float32Array): ArtistFit {
  const n = rows.length;
  const fit = fitArtistMixture(offset === 0 && points.length === n * dim ? points : points.subarray(offset, offset + n * dim), n, dim, prior);
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
  return { weights, means, variances, songRows, componentSizes: Int32Array.from(keep, (c) => sizes[c]!) };
}

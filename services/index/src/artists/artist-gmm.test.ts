import { bhattacharyyaDiag, componentCount, fitArtistMixture, mixtureDivergence, type MixtureView } from './artist-gmm';
import { SeededRandom } from '@polyphony/vectors';

const DIM = 8;

function cloud(centres: number[][], perCentre: number, sd: number, seed: number): Float32Array {
  const rng = new SeededRandom(seed);
  const out = new Float32Array(centres.length * perCentre * DIM);
  let o = 0;
  for (const c of centres) for (let i = 0; i < perCentre; i++) for (let d = 0; d < DIM; d++) out[o++] = c[d]! + sd * rng.nextGaussian();
  return out;
}

function viewOf(fit: ReturnType<typeof fitArtistMixture>): MixtureView {
  const logDet = Array.from({ length: fit.k }, (_, c) => {
    let s = 0;
    for (let d = 0; d < DIM; d++) s += Math.log(fit.variances[c * DIM + d]!);
    return s;
  });
  return { k: fit.k, dim: DIM, weights: fit.weights, offset: 0, means: fit.means, variances: fit.variances, logDet };
}

const prior = new Float32Array(DIM).fill(0.01);
const A = [1, 0, 0, 0, 0, 0, 0, 0];
const B = [0, 1, 0, 0, 0, 0, 0, 0];
const C = [0, 0, 1, 0, 0, 0, 0, 0];

describe('componentCount', () => {
  it.each([
    [1, 1],
    [9, 1],
    [10, 2],
    [25, 3],
    [1000, 3],
  ])('When an artist has %i songs, then it gets %i components', (n, k) => {
    expect(componentCount(n)).toBe(k);
  });
});

describe('fitArtistMixture', () => {
  it('When songs form two separated groups, then two components recover the group means and weights', () => {
    const pts = cloud([A, A, A, B], 6, 0.02, 1); // 18 near A, 6 near B
    const fit = fitArtistMixture(pts, 24, DIM, prior, 2);
    expect(fit.k).toBe(2);
    const nearA = fit.means[0]! > 0.5 ? 0 : 1;
    expect(fit.means[nearA * DIM]!).toBeCloseTo(1, 1);
    expect(fit.means[(1 - nearA) * DIM + 1]!).toBeCloseTo(1, 1);
    expect(fit.weights[nearA]!).toBeCloseTo(0.75, 2);
    // Hard assignment follows the groups.
    for (let i = 0; i < 18; i++) expect(fit.assignment[i]).toBe(nearA);
    for (let i = 18; i < 24; i++) expect(fit.assignment[i]).toBe(1 - nearA);
  });

  it('When an artist has one song, then the component is that song with the shrunk prior variance', () => {
    const pts = Float32Array.from(A);
    const fit = fitArtistMixture(pts, 1, DIM, prior);
    expect(fit.k).toBe(1);
    expect(Array.from(fit.means)).toEqual(A);
    for (let d = 0; d < DIM; d++) expect(fit.variances[d]!).toBeCloseTo(0.005, 6);
    expect(fit.sqDistance[0]).toBe(0);
  });

  it('When sizes disagree or the prior is not positive, then it throws', () => {
    expect(() => fitArtistMixture(new Float32Array(7), 1, DIM, prior)).toThrow(RangeError);
    expect(() => fitArtistMixture(new Float32Array(DIM), 1, DIM, new Float32Array(DIM))).toThrow(RangeError);
  });
});

describe('mixtureDivergence', () => {
  const fa = fitArtistMixture(cloud([A, B], 8, 0.03, 2), 16, DIM, prior, 2);
  const fa2 = fitArtistMixture(cloud([A, B], 8, 0.03, 3), 16, DIM, prior, 2);
  const fc = fitArtistMixture(cloud([C], 16, 0.03, 4), 16, DIM, prior, 1);

  it('When a mixture is compared with itself, then the divergence is 0', () => {
    expect(mixtureDivergence(viewOf(fa), viewOf(fa)).divergence).toBeCloseTo(0, 9);
  });

  it('When two artists share their song groups, then they are closer than an artist elsewhere, symmetrically', () => {
    const same = mixtureDivergence(viewOf(fa), viewOf(fa2)).divergence;
    const other = mixtureDivergence(viewOf(fa), viewOf(fc)).divergence;
    expect(same).toBeLessThan(other);
    expect(mixtureDivergence(viewOf(fc), viewOf(fa)).divergence).toBeCloseTo(other, 9);
  });

  it('When components are matched, then each component of the first meets its nearest in the second', () => {
    const { matches } = mixtureDivergence(viewOf(fa), viewOf(fa2));
    for (const m of matches) {
      const mi = fa.means[m.i * DIM]! > 0.5;
      const mj = fa2.means[m.j * DIM]! > 0.5;
      expect(mi).toBe(mj);
    }
  });

  it('When two Gaussians share their variance, then the Bhattacharyya distance is an eighth of the squared Mahalanobis distance', () => {
    const m1 = new Float32Array([0, 0]);
    const m2 = new Float32Array([2, 0]);
    const v = new Float32Array([4, 1]);
    const ld = Math.log(4) + Math.log(1);
    expect(bhattacharyyaDiag(m1, v, 0, ld, m2, v, 0, ld, 2)).toBeCloseTo((1 / 8) * (4 / 4), 9);
  });
});

import fc from 'fast-check';
import { mixtureDivergence, type MixtureView } from './artist-gmm';
import { SeededRandom } from '@polyphony/vectors';
import { ArtistModel, ArtistModelBuilder, type ArtistProfileRecord } from './artist-model';
import { buildIvfIndex } from '@polyphony/vector-engine';

const DIM = 6;

/** Profiles over rows [0, size): artist i gets `songs[i]` consecutive rows split over `k[i]` components. */
function profiles(spec: Array<{ k: number; songs: number; seed: number }>): { size: number; records: ArtistProfileRecord[] } {
  let row = 0;
  const records = spec.map(({ k, songs, seed }, a) => {
    const n = Math.max(k, songs);
    const sizes = new Int32Array(k);
    for (let i = 0; i < n; i++) sizes[i % k]!++;
    const songRows = Int32Array.from({ length: n }, (_, i) => row + ((i * 7 + seed) % n));
    row += n;
    const weights = Float32Array.from(sizes, (s) => s / n);
    const means = Float32Array.from({ length: k * DIM }, (_, i) => Math.sin(seed + i * 0.37));
    const variances = Float32Array.from({ length: k * DIM }, (_, i) => 0.01 + Math.abs(Math.cos(seed * 3 + i)));
    return { key: `artist ${a}`, name: `Artist ${a}`, weights, means, variances, songRows, componentSizes: sizes };
  });
  return { size: row + 3, records };
}

/** The mixture of a record as an in-memory view (what the model held before its parameters moved to disk). */
function viewOf(r: ArtistProfileRecord): MixtureView {
  const k = r.weights.length;
  const logDet = Array.from({ length: k }, (_, c) => {
    let s = 0;
    for (let d = 0; d < DIM; d++) s += Math.log(r.variances[c * DIM + d]!);
    return s;
  });
  return { k, dim: DIM, weights: r.weights, offset: 0, means: r.means, variances: r.variances, logDet };
}

const specArb = fc.array(fc.record({ k: fc.integer({ min: 1, max: 3 }), songs: fc.integer({ min: 1, max: 12 }), seed: fc.integer({ min: 0, max: 1000 }) }), { minLength: 1, maxLength: 12 });

describe('ArtistModel with its mixtures on disk', () => {
  it('gives back every stored profile exactly, and rows map to their artist (fast-check)', () => {
    fc.assert(
      fc.property(specArb, (spec) => {
        const { size, records } = profiles(spec);
        const model = ArtistModel.fromRecords(DIM, size, records);
        expect(model.count).toBe(records.length);
        records.forEach((r, a) => {
          const back = model.record(a);
          expect(back.key).toBe(r.key);
          expect(back.name).toBe(r.name);
          expect([...back.weights]).toEqual([...r.weights]);
          expect([...back.means]).toEqual([...r.means]);
          expect([...back.variances]).toEqual([...r.variances]);
          expect([...back.songRows]).toEqual([...r.songRows]);
          expect([...back.componentSizes]).toEqual([...r.componentSizes]);
          expect(model.indexOfKey(r.key)).toBe(a);
          for (const row of r.songRows) expect(model.artistOfRow[row]).toBe(a);
          for (let j = 0; j < r.weights.length; j++) expect([...model.componentMean(a, j)]).toEqual([...r.means.subarray(j * DIM, (j + 1) * DIM)]);
        });
        expect(model.artistOfRow[size - 1]).toBe(-1);
      }),
      { numRuns: 60 },
    );
  });

  it('divergences from views read off disk equal those of the in-memory parameters (fast-check)', () => {
    fc.assert(
      fc.property(specArb, (spec) => {
        const { size, records } = profiles(spec);
        const model = ArtistModel.fromRecords(DIM, size, records);
        for (let a = 0; a < records.length; a++) {
          for (let b = 0; b < records.length; b++) {
            const got = mixtureDivergence(model.view(a), model.view(b));
            const want = mixtureDivergence(viewOf(records[a]!), viewOf(records[b]!));
            expect(got.divergence).toBe(want.divergence);
            expect(got.matches).toEqual(want.matches);
          }
        }
      }),
      { numRuns: 30 },
    );
  });

  it('centroid is the weighted mean of the component means', () => {
    const { size, records } = profiles([{ k: 3, songs: 9, seed: 5 }]);
    const model = ArtistModel.fromRecords(DIM, size, records);
    const r = records[0]!;
    const want = new Float32Array(DIM);
    for (let c = 0; c < 3; c++) for (let d = 0; d < DIM; d++) want[d]! += r.weights[c]! * r.means[c * DIM + d]!;
    expect([...model.centroid(0)]).toEqual([...want]);
  });

  it('keeps only weights, log-determinants and song lists in memory; the parameters are on disk', () => {
    const { size, records } = profiles([
      { k: 3, songs: 30, seed: 1 },
      { k: 2, songs: 4, seed: 2 },
    ]);
    const model = ArtistModel.fromRecords(DIM, size, records);
    expect(model.diskBytes).toBe(5 * 2 * DIM * 4);
    // compStart 3 + weights 5 + logDet 5 (f64) + songStart 6 + songRows 34 + artistOfRow `size`.
    expect(model.bytes).toBe(3 * 4 + 5 * 4 + 5 * 8 + 6 * 4 + 34 * 4 + size * 4);
  });

  it('rejects inconsistent profiles, rows out of range and capacity overflow', () => {
    const { size, records } = profiles([{ k: 2, songs: 4, seed: 1 }]);
    const r = records[0]!;
    expect(() => ArtistModel.fromRecords(DIM, size, [{ ...r, means: r.means.subarray(1) }])).toThrow(RangeError);
    expect(() => ArtistModel.fromRecords(DIM, size, [{ ...r, componentSizes: Int32Array.of(1, 1) }])).toThrow(RangeError);
    expect(() => ArtistModel.fromRecords(DIM, 2, [r])).toThrow(/outside/);
    const b = new ArtistModelBuilder(DIM, size, 1, 2, 4);
    b.add(r);
    expect(() => b.add({ ...r, key: 'other' })).toThrow(/capacity/);
    b.abandon();
  });

  it('an empty model has no artists and every row unknown', () => {
    const model = ArtistModel.empty(DIM, 4);
    expect(model.count).toBe(0);
    expect([...model.artistOfRow]).toEqual([-1, -1, -1, -1]);
  });
});

describe('ArtistModel.fit in worker threads', () => {
  /**
   * 2,600 random 16-d songs (seeded) in an IVF index and 300 artists of ~8-9 songs each, so worker tasks of ~2000
   * songs hold many artists and there are two of them.
   */
  async function threeHundredArtists(seed: number) {
    const dim = 16;
    const rng = new SeededRandom(seed);
    const n = 2600;
    const ids = Array.from({ length: n }, (_, i) => `id-${String(i).padStart(5, '0')}`);
    const vectors = Float32Array.from({ length: n * dim }, () => rng.nextGaussian());
    const index = (await buildIvfIndex([{ ids, vectors }], { dim })).index;
    const artists = 300;
    const artistOfRow = Int32Array.from({ length: n }, (_, r) => (r * 7919) % artists);
    const keys = Array.from({ length: artists }, (_, a) => `artist ${a}`);
    return { index, artistOfRow, keys, variance: new Float32Array(dim).fill(1 / dim) };
  }

  it('When the artists are fitted in 2 worker threads, then every profile equals the one fitted in this thread', async () => {
    const { index, artistOfRow, keys, variance } = await threeHundredArtists(5);
    const inThread = await ArtistModel.fit(index, artistOfRow, keys, keys, variance);
    const pooled = await ArtistModel.fit(index, artistOfRow, keys, keys, variance, undefined, undefined, 2, 0);
    expect(pooled.count).toBe(inThread.count);
    for (let a = 0; a < inThread.count; a++) {
      const x = inThread.record(a);
      const y = pooled.record(a);
      expect(y.key).toBe(x.key);
      expect([...y.weights]).toEqual([...x.weights]);
      expect([...y.means]).toEqual([...x.means]);
      expect([...y.variances]).toEqual([...x.variances]);
      expect([...y.songRows]).toEqual([...x.songRows]);
    }
    expect([...pooled.artistOfRow]).toEqual([...inThread.artistOfRow]);
  }, 60_000);

  it('When a reuse rule keeps some artists, then worker threads and this thread give the same model: kept mixtures as given, the rest fitted', async () => {
    const { index, artistOfRow, keys, variance } = await threeHundredArtists(9);
    const full = await ArtistModel.fit(index, artistOfRow, keys, keys, variance);
    // Every third artist comes back as stored, with its weights halved so a kept mixture is told apart from a refit
    // one; then every artist (no job at all).
    for (const kept of [(a: number) => a % 3 === 0, () => true]) {
      const reuse = (key: string) => {
        const a = full.indexOfKey(key);
        if (!kept(a)) return undefined;
        const { key: _k, name: _n, ...fit } = full.record(a);
        return { ...fit, weights: fit.weights.map((w) => w / 2) };
      };
      const inThread = await ArtistModel.fit(index, artistOfRow, keys, keys, variance, undefined, undefined, 0, undefined, reuse);
      const pooled = await ArtistModel.fit(index, artistOfRow, keys, keys, variance, undefined, undefined, 2, 0, reuse);
      expect(pooled.count).toBe(full.count);
      for (let a = 0; a < full.count; a++) {
        const x = full.record(a);
        const expected = kept(a) ? { ...x, weights: x.weights.map((w) => w / 2) } : x;
        expect(inThread.record(a)).toEqual(expected);
        expect(pooled.record(a)).toEqual(expected);
      }
    }
  }, 60_000);

  it('When the reuse rule answers kept mixtures (copied as stored), then the model equals the one built from their records, in this thread and in workers', async () => {
    const { index, artistOfRow, keys, variance } = await threeHundredArtists(13);
    const full = await ArtistModel.fit(index, artistOfRow, keys, keys, variance);
    const kept = (a: number) => a % 4 !== 1;
    const asRecord = (key: string) => {
      const a = full.indexOfKey(key);
      if (!kept(a)) return undefined;
      const { key: _k, name: _n, ...fit } = full.record(a);
      return fit;
    };
    const asStored = (key: string) => {
      const a = full.indexOfKey(key);
      return kept(a) ? { from: full, artist: a, songRows: full.rows(a).slice() } : undefined;
    };
    const byRecord = await ArtistModel.fit(index, artistOfRow, keys, keys, variance, undefined, undefined, 0, undefined, asRecord);
    for (const workers of [0, 2]) {
      const copied = await ArtistModel.fit(index, artistOfRow, keys, keys, variance, undefined, undefined, workers, 0, asStored);
      expect(copied.count).toBe(byRecord.count);
      for (let a = 0; a < byRecord.count; a++) {
        expect(copied.record(a)).toEqual(byRecord.record(a));
        expect(copied.view(a).logDet).toEqual(byRecord.view(a).logDet);
      }
      expect([...copied.artistOfRow]).toEqual([...byRecord.artistOfRow]);
    }
  }, 60_000);

  it('addKept renumbers the song rows and refuses rows that disagree with the kept mixture', () => {
    const { size, records } = profiles([
      { k: 2, songs: 5, seed: 3 },
      { k: 3, songs: 7, seed: 11 },
    ]);
    const from = ArtistModel.fromRecords(DIM, size, records);
    const b = new ArtistModelBuilder(DIM, size + 10, 2, 5, 12);
    // Artist 1's songs moved by 10 rows in the new generation.
    b.addKept('artist 1', 'Artist 1', { from, artist: 1, songRows: from.rows(1).map((r) => r + 10) });
    expect(() => b.addKept('artist 0', 'Artist 0', { from, artist: 0, songRows: new Int32Array(4) })).toThrow(RangeError);
    const model = b.finish();
    const back = model.record(0);
    expect([...back.songRows]).toEqual([...records[1]!.songRows].map((r) => r + 10));
    expect([...back.means]).toEqual([...records[1]!.means]);
    expect([...back.variances]).toEqual([...records[1]!.variances]);
    expect([...back.componentSizes]).toEqual([...records[1]!.componentSizes]);
    expect(Array.from(model.view(0).logDet)).toEqual(viewOf(records[1]!).logDet);
    for (const r of back.songRows) expect(model.artistOfRow[r]).toBe(0);
  });

  it('fits the same mixtures in worker threads (the artist-fit job of the engine pool) as in this thread', async () => {
    const dim = 8;
    const rnd = new SeededRandom(11);
    const n = 120;
    const data = new Float32Array(n * dim);
    const artistOfRow = new Int32Array(n);
    for (let r = 0; r < n; r++) {
      artistOfRow[r] = r % 5 === 4 ? -1 : r % 7;
      for (let d = 0; d < dim; d++) data[r * dim + d] = Math.sin(artistOfRow[r]! * 1.3 + d) + 0.3 * rnd.nextGaussian();
    }
    const { index } = await buildIvfIndex([{ ids: Array.from({ length: n }, (_, i) => `s${i}`), vectors: data }], { dim, expectedCount: n });
    const keys = Array.from({ length: 7 }, (_, i) => `a${i}`);
    const variance = new Float32Array(dim).fill(0.2);
    const inThread = await ArtistModel.fit(index, artistOfRow, keys, keys, variance);
    const inWorkers = await ArtistModel.fit(index, artistOfRow, keys, keys, variance, undefined, undefined, 2, 1);
    expect(inWorkers.count).toBe(inThread.count);
    for (let a = 0; a < inThread.count; a++) expect(inWorkers.record(a)).toEqual(inThread.record(a));
  }, 120000);
});

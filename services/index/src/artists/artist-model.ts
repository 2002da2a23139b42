import { MAX_COMPONENTS, PRIOR_FRACTION, type MixtureView } from './artist-gmm';
import { fitArtistPoints, type ArtistFit, type ArtistProfileRecord } from './artist-fit';
import { ARTIST_FIT_JOB, type ArtistFitJob } from './artist-fit.job';
import { type CooperativeScheduler, type IvfIndex, VectorFile, IvfWorkerPool, moduleFile } from '@polyphony/vector-engine';

export type { ArtistProfileRecord } from './artist-fit';

/**
 * A build's rule for taking over an artist's mixture from the serving generation instead of fitting it
 * (generation/reuse.ts): given the artist's folded key and its rows (ascending), the mixture with rows of this
 * generation, or undefined to fit.
 */
export type ArtistReuse = (key: string, rows: Int32Array) => ArtistFit | KeptMixture | undefined;

/**
 * An artist's mixture taken over as stored from another model (the serving generation's): artist `artist` of `from`,
 * whose songs are `songRows` in the new generation (the same songs, in `from`'s component order). The builder copies
 * its weights, log-determinants and mixture-file rows as they are (`ArtistModelBuilder.addKept`): no record, no
 * per-component allocation or logarithm. Issue 35 (at 1M ~50k kept artists a 1 % rebuild).
 */
export interface KeptMixture {
  from: ArtistModel;
  artist: number;
  songRows: Int32Array;
}

/** True when a reuse answer is a mixture to copy as stored (not a fit). */
export function isKeptMixture(x: ArtistFit | KeptMixture): x is KeptMixture {
  return (x as KeptMixture).from !== undefined;
}

/**
 * Every artist of one index generation, summarised by a diagonal Gaussian mixture (artist-gmm.ts), in
 * packed arrays. Artists are identified by their folded name (`artistKey`) and numbered 0..count-1;
 * components are numbered globally, artist a owning components `[compStart[a], compStart[a+1])`.
 *
 * Memory (issue 19, bounded replica memory): the mixture means and variances (`8 * dim` bytes per component,
 * 240 MB for 50k artists x 3 components at 200-d) live on local disk in a `VectorFile` (row `c` = the mean
 * then the variances of component c, `2 * dim` float32), read back per artist when a query needs it (one
 * positional read of `k * 8 * dim` bytes); in memory stay the weights and `Σ ln variance` of every component
 * (12 bytes), 4 bytes per song and per row, and the names. Build it with `ArtistModelBuilder` (streaming) or
 * `fromRecords`.
 */
export class ArtistModel {
  readonly count: number;
  private readonly keyIndex = new Map<string, number>();

  /** @internal use ArtistModelBuilder */
  constructor(
    readonly dim: number,
    readonly names: string[],
    readonly keys: string[],
    private readonly compStart: Int32Array,
    private readonly weights: Float32Array,
    /** Row c: the `dim` means then the `dim` variances of component c. */
    private readonly params: VectorFile,
    /** Σ ln variance of every component. */
    private readonly logDet: Float64Array,
    /** Song range of each component inside songRows: `[songStart[c], songStart[c+1])`. */
    private readonly songStart: Int32Array,
    private readonly songRows: Int32Array,
    /** Artist of every index row (-1 when unknown). */
    readonly artistOfRow: Int32Array,
  ) {
    this.count = names.length;
    keys.forEach((k, i) => this.keyIndex.set(k, i));
  }

  /** Bytes of the typed arrays in memory (weights, log-determinants, song lists, row -> artist); names and keys are JS strings on the heap and not counted, the means and variances are on disk. */
  get bytes(): number {
    return [this.compStart, this.weights, this.logDet, this.songStart, this.songRows, this.artistOfRow].reduce((t, a) => t + a.byteLength, 0);
  }

  /** Bytes of the means and variances on disk. */
  get diskBytes(): number {
    return (this.compStart[this.count] ?? 0) * this.params.dim * 4;
  }

  /** A model with no artists over `size` rows. */
  static empty(dim: number, size: number): ArtistModel {
    return new ArtistModelBuilder(dim, size, 0, 0, 0).finish();
  }

  /**
   * Assembles a model from stored profiles (in artist order). Rows that belong to no profile get artist -1.
   * @param dir directory of the mixture file (default `$TMPDIR/polyphony-index`)
   * @throws RangeError when a profile's arrays disagree with its component count or a row is out of range
   */
  static fromRecords(dim: number, size: number, records: readonly ArtistProfileRecord[], dir?: string): ArtistModel {
    let comps = 0;
    let songs = 0;
    for (const r of records) {
      comps += r.weights.length;
      songs += r.songRows.length;
    }
    const b = new ArtistModelBuilder(dim, size, records.length, comps, songs, dir);
    try {
      for (const r of records) b.add(r);
      return b.finish();
    } catch (err) {
      b.abandon();
      throw err;
    }
  }

  /**
   * Fits every artist of a generation. `artistOfRow[row]` numbers the artists 0..names.length-1 (-1 = no
   * artist); vectors come from the index (unit vectors). The prior variance of every mixture is
   * PRIOR_FRACTION times the catalogue variance `catalogueVariance` (dim values).
   * Cost: O(EM_ITERATIONS * size * MAX_COMPONENTS * dim); yields to the event loop between artists. With `workers` > 0
   * and at least `minWorkerSongs` songs the artists are fitted in that many worker threads (`fitInWorkers`), same result.
   * `dir`: directory of the mixture file.
   */
  static async fit(
    index: IvfIndex,
    artistOfRow: Int32Array,
    keys: readonly string[],
    names: readonly string[],
    catalogueVariance: Float32Array,
    scheduler?: CooperativeScheduler,
    dir?: string,
    workers = 0,
    minWorkerSongs = ARTIST_WORKER_MIN_SONGS,
    reuse?: ArtistReuse,
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
    let fitted = 0;
    for (let i = 0; i < a; i++) if (start[i + 1]! > start[i]!) fitted++;
    // Each fitted artist is written to the builder (mixture file) at once: no list of every profile is held.
    const b = new ArtistModelBuilder(dim, index.size, fitted, fitted * MAX_COMPONENTS, start[a]!, dir);
    try {
      if (workers > 0 && fitted > 1 && start[a]! >= minWorkerSongs) {
        await fitInWorkers(index, byArtist, start, keys, names, prior, workers, b, scheduler, reuse);
        return b.finish();
      }
      for (let i = 0; i < a; i++) {
        const rows = byArtist.subarray(start[i]!, start[i + 1]!);
        if (rows.length === 0) continue;
        const kept = reuse?.(keys[i]!, rows);
        if (kept && isKeptMixture(kept)) b.addKept(keys[i]!, names[i]!, kept);
        else b.add(kept ? { key: keys[i]!, name: names[i]!, ...kept } : fitArtist(index, keys[i]!, names[i]!, rows, prior));
        await scheduler?.maybeYield();
      }
      return b.finish();
    } catch (err) {
      b.abandon();
      throw err;
    }
  }

  /** Artist number of a folded name, or -1. */
  indexOfKey(key: string): number {
    return this.keyIndex.get(key) ?? -1;
  }

  /** The stored form of artist `a` (copies; the means and variances are read from the mixture file). */
  record(a: number): ArtistProfileRecord {
    const c0 = this.compStart[a]!;
    const c1 = this.compStart[a + 1]!;
    const k = c1 - c0;
    const sizes = new Int32Array(k);
    for (let j = 0; j < k; j++) sizes[j] = this.songStart[c0 + j + 1]! - this.songStart[c0 + j]!;
    const { means, variances } = this.readParams(c0, c1);
    return {
      key: this.keys[a]!,
      name: this.names[a]!,
      weights: this.weights.slice(c0, c1),
      means,
      variances,
      songRows: this.songRows.slice(this.songStart[c0]!, this.songStart[c1]!),
      componentSizes: sizes,
    };
  }

  /** Mixture of artist `a` as a view for `mixtureDivergence` (its means and variances read from disk: one read). */
  view(a: number): MixtureView {
    const c0 = this.compStart[a]!;
    const c1 = this.compStart[a + 1]!;
    const { means, variances } = this.readParams(c0, c1);
    return {
      k: c1 - c0,
      dim: this.dim,
      weights: this.weights.subarray(c0, c1),
      offset: 0,
      means,
      variances,
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
    const { means } = this.readParams(c0, c1);
    for (let c = c0; c < c1; c++) {
      const w = this.weights[c]!;
      for (let d = 0; d < this.dim; d++) out[d]! += w * means[(c - c0) * this.dim + d]!;
    }
    return out;
  }

  /** Mean of component `j` of artist `a` (a copy). */
  componentMean(a: number, j: number): Float32Array {
    const c = this.compStart[a]! + j;
    return this.readParams(c, c + 1).means;
  }

  /**
   * @internal The stored form of artist `a` for `ArtistModelBuilder.addKept`: its components' mixture-file rows read
   * into `rowsOut` (`k * 2 * dim` floats: mean then variances per component) and views of its weights,
   * log-determinants and component song offsets (`k + 1` values). No allocation but the views.
   */
  storedMixture(a: number, rowsOut: Float32Array): { k: number; weights: Float32Array; logDet: Float64Array; songStart: Int32Array } {
    const c0 = this.compStart[a]!;
    const c1 = this.compStart[a + 1]!;
    if (c1 > c0) this.params.readRows(c0, c1 - c0, rowsOut);
    return { k: c1 - c0, weights: this.weights.subarray(c0, c1), logDet: this.logDet.subarray(c0, c1), songStart: this.songStart.subarray(c0, c1 + 1) };
  }

  /** Means and variances of components [c0, c1), `(c1 - c0) * dim` floats each. */
  private readParams(c0: number, c1: number): { means: Float32Array; variances: Float32Array } {
    const dim = this.dim;
    const k = c1 - c0;
    const means = new Float32Array(k * dim);
    const variances = new Float32Array(k * dim);
    if (k === 0) return { means, variances };
    const buf = new Float32Array(k * 2 * dim);
    this.params.readRows(c0, k, buf);
    for (let j = 0; j < k; j++) {
      means.set(buf.subarray(j * 2 * dim, j * 2 * dim + dim), j * dim);
      variances.set(buf.subarray(j * 2 * dim + dim, (j + 1) * 2 * dim), j * dim);
    }
    return { means, variances };
  }
}

/**
 * Assembles an ArtistModel one profile at a time (artist order), writing the means and variances straight to
 * the model's mixture file, so neither a load nor a fit holds every profile in memory. Capacities are upper
 * bounds (the arrays are trimmed by `finish`).
 */
export class ArtistModelBuilder {
  private readonly names: string[] = [];
  private readonly keys: string[] = [];
  private readonly compStart: Int32Array;
  private readonly weights: Float32Array;
  private readonly logDet: Float64Array;
  private readonly songStart: Int32Array;
  private readonly songRows: Int32Array;
  private readonly artistOfRow: Int32Array;
  private readonly params: VectorFile;
  private readonly row: Float32Array;
  /** Mixture-file rows of one kept artist (`addKept`), allocated on first use. */
  private copyRows: Float32Array | undefined;
  private comps = 0;
  private songs = 0;

  /**
   * @param size rows of the generation
   * @param maxArtists, maxComponents, maxSongs capacities
   * @param dir directory of the mixture file (default `$TMPDIR/polyphony-index`)
   */
  constructor(
    private readonly dim: number,
    private readonly size: number,
    private readonly maxArtists: number,
    maxComponents: number,
    maxSongs: number,
    dir?: string,
  ) {
    this.compStart = new Int32Array(maxArtists + 1);
    this.weights = new Float32Array(maxComponents);
    this.logDet = new Float64Array(maxComponents);
    this.songStart = new Int32Array(maxComponents + 1);
    this.songRows = new Int32Array(maxSongs);
    this.artistOfRow = new Int32Array(size).fill(-1);
    this.params = new VectorFile(2 * dim, maxComponents, dir);
    this.row = new Float32Array(2 * dim);
  }

  /**
   * Appends the next artist's profile.
   * @throws RangeError when its arrays disagree with its component count, a row is out of range, or a capacity is exceeded
   */
  add(r: ArtistProfileRecord): void {
    const dim = this.dim;
    const k = r.weights.length;
    if (k < 1 || r.means.length !== k * dim || r.variances.length !== k * dim || r.componentSizes.length !== k) throw new RangeError(`artist profile ${r.key}: inconsistent sizes`);
    let sum = 0;
    for (const s of r.componentSizes) sum += s;
    if (sum !== r.songRows.length) throw new RangeError(`artist profile ${r.key}: component sizes do not add up`);
    const a = this.names.length;
    if (a >= this.maxArtists || this.comps + k > this.weights.length || this.songs + sum > this.songRows.length) throw new RangeError('artist model capacity exceeded');
    for (const row of r.songRows) if (row < 0 || row >= this.size) throw new RangeError(`artist profile ${r.key}: row ${row} outside [0, ${this.size})`);
    const c = this.comps;
    this.compStart[a] = c;
    this.weights.set(r.weights, c);
    for (let j = 0; j < k; j++) {
      let ld = 0;
      for (let d = 0; d < dim; d++) ld += Math.log(r.variances[j * dim + d]!);
      this.logDet[c + j] = ld;
      this.row.set(r.means.subarray(j * dim, (j + 1) * dim), 0);
      this.row.set(r.variances.subarray(j * dim, (j + 1) * dim), dim);
      this.params.writeRows(c + j, this.row, 0, 1);
      this.songStart[c + j] = this.songs;
      this.songs += r.componentSizes[j]!;
      this.songStart[c + j + 1] = this.songs;
    }
    this.songRows.set(r.songRows, this.songStart[c]!);
    for (const row of r.songRows) this.artistOfRow[row] = a;
    this.comps += k;
    this.compStart[a + 1] = this.comps;
    this.names.push(r.name);
    this.keys.push(r.key);
  }

  /**
   * Appends the next artist as a mixture copied from another model (`KeptMixture`): the same model `add` builds from
   * `kept.from.record(kept.artist)` with its song rows replaced by `kept.songRows`, without decoding the record
   * (weights, log-determinants and mixture-file rows copied as stored; test artist-model.test.ts).
   * @throws RangeError when the song rows disagree with the kept artist's, a row is out of range, or a capacity is exceeded
   */
  addKept(key: string, name: string, kept: KeptMixture): void {
    if (kept.from.dim !== this.dim) throw new RangeError(`artist profile ${key}: kept from a model of ${kept.from.dim} dimensions`);
    const need = kept.from.components(kept.artist) * 2 * this.dim;
    if (!this.copyRows || this.copyRows.length < need) this.copyRows = new Float32Array(Math.max(need, MAX_COMPONENTS * 2 * this.dim));
    const m = kept.from.storedMixture(kept.artist, this.copyRows);
    const k = m.k;
    const n = kept.songRows.length;
    if (k < 1 || m.songStart[k]! - m.songStart[0]! !== n) throw new RangeError(`artist profile ${key}: kept song rows disagree with the kept mixture`);
    const a = this.names.length;
    if (a >= this.maxArtists || this.comps + k > this.weights.length || this.songs + n > this.songRows.length) throw new RangeError('artist model capacity exceeded');
    for (const row of kept.songRows) if (row < 0 || row >= this.size) throw new RangeError(`artist profile ${key}: row ${row} outside [0, ${this.size})`);
    const c = this.comps;
    this.compStart[a] = c;
    this.weights.set(m.weights, c);
    this.logDet.set(m.logDet, c);
    this.params.writeRows(c, this.copyRows, 0, k);
    for (let j = 0; j < k; j++) {
      this.songStart[c + j] = this.songs;
      this.songs += m.songStart[j + 1]! - m.songStart[j]!;
      this.songStart[c + j + 1] = this.songs;
    }
    this.songRows.set(kept.songRows, this.songStart[c]!);
    for (const row of kept.songRows) this.artistOfRow[row] = a;
    this.comps += k;
    this.compStart[a + 1] = this.comps;
    this.names.push(name);
    this.keys.push(key);
  }

  /** The model of every profile added (the builder must not be used afterwards). */
  finish(): ArtistModel {
    const a = this.names.length;
    const c = this.comps;
    const fit = <T extends Int32Array | Float32Array | Float64Array>(arr: T, n: number): T => (arr.length === n ? arr : (arr.slice(0, n) as T));
    return new ArtistModel(
      this.dim,
      this.names,
      this.keys,
      fit(this.compStart, a + 1),
      fit(this.weights, c),
      this.params,
      fit(this.logDet, c),
      fit(this.songStart, c + 1),
      fit(this.songRows, this.songs),
      this.artistOfRow,
    );
  }

  /** Releases the mixture file of a builder that will not finish. */
  abandon(): void {
    this.params.close();
  }
}

function fitArtist(index: IvfIndex, key: string, name: string, rows: Int32Array, prior: Float32Array): ArtistProfileRecord {
  const dim = index.dim;
  const n = rows.length;
  const points = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) points.set(index.getVector(rows[i]!), i * dim);
  return { key, name, ...fitArtistPoints(points, 0, rows, dim, prior) };
}

/**
 * Below this many songs `ArtistModel.fit` stays in the calling thread even when given workers: the whole fit takes
 * well under a second there, less than starting the worker threads (which, under ts-jest, also transpile their sources).
 */
export const ARTIST_WORKER_MIN_SONGS = 20_000;
/** Songs per task handed to an artist worker (about 1.6 MB of vectors at 200-d). */
const ARTIST_TASK_SONGS = 2000;

/**
 * `ArtistModel.fit`'s loop over artists in `workers` worker threads (the IVF build pool, job `ARTIST_FIT_JOB`, artist-fit.job.ts): the main thread
 * gathers the vectors of consecutive artists into tasks of about `ARTIST_TASK_SONGS` songs, at most two tasks
 * in flight per worker, and adds the answers to the builder in artist order, so the model is the one the
 * in-thread loop builds (same `fitArtistPoints`). The workers are terminated before returning.
 */
async function fitInWorkers(
  index: IvfIndex,
  byArtist: Int32Array,
  start: Int32Array,
  keys: readonly string[],
  names: readonly string[],
  prior: Float32Array,
  workers: number,
  builder: ArtistModelBuilder,
  scheduler?: CooperativeScheduler,
  reuse?: ArtistReuse,
): Promise<void> {
  const dim = index.dim;
  const a = keys.length;
  const pool = new IvfWorkerPool(workers, undefined, [moduleFile(__dirname, 'artist-fit.job')]);
  // `kept`: mixtures taken over (no job); `artists` lists every artist of the task in order, the job answers the others.
  const inFlight: Array<{ artists: number[]; kept: Map<number, ArtistFit | KeptMixture>; reply: Promise<ArtistFit[]> }> = [];
  const drain = async () => {
    const next = inFlight.shift()!;
    const fits = await next.reply;
    let j = 0;
    for (const i of next.artists) {
      const kept = next.kept.get(i);
      if (kept && isKeptMixture(kept)) builder.addKept(keys[i]!, names[i]!, kept);
      else builder.add({ key: keys[i]!, name: names[i]!, ...(kept ?? fits[j++]!) });
    }
    await scheduler?.maybeYield();
  };
  try {
    let i = 0;
    while (i < a) {
      const artists: number[] = [];
      const kept = new Map<number, ArtistFit | KeptMixture>();
      let songs = 0;
      for (; i < a && (songs === 0 || songs + start[i + 1]! - start[i]! <= ARTIST_TASK_SONGS); i++) {
        const n = start[i + 1]! - start[i]!;
        if (n === 0) continue;
        artists.push(i);
        const fit = reuse?.(keys[i]!, byArtist.subarray(start[i]!, start[i + 1]!));
        if (fit) kept.set(i, fit);
        else songs += n;
      }
      if (artists.length === 0) break;
      const fitted = artists.filter((x) => !kept.has(x));
      if (fitted.length === 0) {
        inFlight.push({ artists, kept, reply: Promise.resolve([]) });
        if (inFlight.length >= 2 * workers) await drain();
        continue;
      }
      const points = new Float32Array(songs * dim);
      const rows = new Int32Array(songs);
      const counts = Int32Array.from(fitted, (x) => start[x + 1]! - start[x]!);
      let o = 0;
      for (const x of fitted) {
        for (let k = start[x]!; k < start[x + 1]!; k++, o++) {
          rows[o] = byArtist[k]!;
          points.set(index.getVector(byArtist[k]!), o * dim);
        }
      }
      inFlight.push({ artists, kept, reply: pool.runJob<ArtistFit[]>(ARTIST_FIT_JOB, { points, counts, rows, dim, prior } satisfies ArtistFitJob) });
      if (inFlight.length >= 2 * workers) await drain();
      scheduler?.throwIfAborted();
    }
    while (inFlight.length) await drain();
  } finally {
    for (const x of inFlight) x.reply.catch(() => undefined);
    await pool.close();
  }
}

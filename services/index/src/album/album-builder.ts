/**
 * Album creation, the pure part (issue 31): choosing the tracks (a greedy pass towards a cohesion target under
 * a pair floor, artist caps, an era window and a track-length range) and sequencing them (opener, two singles,
 * closer, a smooth middle). No I/O: the service (album.service.ts) draws the pool from the index and the
 * learned tags and hands plain candidates here. Design and measured figures: docs/architecture.md
 * "Album creation".
 *
 * The starting point is the reference's measured design (issue 31): 12 tracks, lengths 100-600 s, a greedy pass
 * towards a cohesion of 0.86 with a pair floor of 0.75 over ~150 nearest neighbours, at most 2 tracks per other
 * artist, a 15-year era window, the calmest least typical track last, the two most intense in slots 2-3, an
 * "intro" opener for hip-hop, R&B, metal and electronic and a "bang" otherwise. Those cosines belong to the
 * reference's embedding; polyphony's learned embedding scores lower and its scale depends on the library (on the
 * Wesnoth corpus random pairs average 0.49 and a seed with its 11 nearest neighbours 0.64, where a 0.75 floor
 * refuses most pairs), so target and floor are placed on each seed's own scale instead (`calibrate`): between the
 * library's random-pair cohesion and the cohesion of the seed's nearest neighbours.
 */
import { dot } from '@polyphony/vectors';

/** One song the album may use. */
export interface AlbumCandidate {
  /** Index row (identity of the candidate). */
  row: number;
  /** Unit embedding. */
  vector: Float32Array;
  /** Artist identity (e.g. the artist model's index, or a folded name); -1 / '' = unknown (never capped). */
  artist: number;
  /** Seconds; null = unknown (allowed). */
  duration: number | null;
  /** Release year; null = unknown (allowed). */
  year: number | null;
  /** Intensity in [0, 1] (energy, aggressiveness, danceability); 0.5 when unknown. */
  intensity: number;
}

/** Tunables of the selection (defaults: ALBUM_DEFAULTS). */
export interface AlbumSelectOptions {
  length: number;
  /** Mean pairwise cosine the greedy pass aims at. */
  target: number;
  /** Every pair of tracks must be at least this similar (cosine) in the strict stage. */
  pairFloor: number;
  /** Most tracks per artist other than the seed's. */
  maxPerArtist: number;
  /** Most tracks of the seed's artist (the seed included). */
  maxSeedArtist: number;
  /** Largest spread of known release years, years. */
  eraWindow: number;
  /** Allowed track lengths, seconds (unknown lengths pass). */
  minDuration: number;
  maxDuration: number;
  /**
   * Text seeds: the candidate rows of each query concept. Step k of the greedy pass takes its track from
   * `turns[k % turns.length]` when one of them qualifies ("taking turns" between genre and instrument words).
   */
  turns?: Array<ReadonlySet<number>>;
  /** Gaps to the target within this much count as equal, and the candidate nearer the first pick wins (default 1e-12). */
  gapTolerance?: number;
}

/** The reference's constants, and the placements of target and floor on a seed's scale (see `calibrate`). */
export const ALBUM_DEFAULTS = {
  length: 12,
  /** The reference's absolute cohesion target and pair floor (its embedding's cosines). */
  referenceTarget: 0.86,
  referencePairFloor: 0.75,
  /** Target = random + TARGET_FRACTION x (neighbours - random); floor likewise with FLOOR_FRACTION. */
  targetFraction: 0.85,
  floorFraction: 0.4,
  maxPerArtist: 2,
  eraWindow: 15,
  minDuration: 100,
  maxDuration: 600,
  /** Nearest neighbours drawn around the seed, and around each of the farthest picks when widening. */
  pool: 150,
  widenPicks: 3,
  widenK: 50,
  /**
   * Gaps to the target within 0.05 count as equal and the candidate nearest the first pick wins: on the Wesnoth
   * corpus (bench/src/index/album-quality.ts) this kept the cohesion on target (0.618 for a mean target of 0.620)
   * and raised the mean similarity to the seed from 0.536 (exact gaps) to 0.579 (0.572 at 0.02), artists unchanged.
   */
  gapTolerance: 0.05,
} as const;

/** Most tracks of the seed's artist: a third of the album, at least 2. */
export function seedArtistCap(length: number): number {
  return Math.max(2, Math.ceil(length / 3));
}

/**
 * Places the cohesion target and the pair floor on the seed's own scale: `random` is the mean cosine of random
 * pairs of the library, `neighbours` the cohesion (mean pairwise cosine) of the seed and its `length - 1`
 * nearest neighbours, the most cohesive album the seed has. Target = random + 0.85 (neighbours - random),
 * floor = random + 0.4 (neighbours - random); neither is above the reference's absolute values (0.86, 0.75),
 * which were measured on an embedding whose cosines sit higher.
 */
export function calibrate(random: number, neighbours: number): { target: number; pairFloor: number } {
  const span = Math.max(0, neighbours - random);
  return {
    target: Math.min(ALBUM_DEFAULTS.referenceTarget, random + ALBUM_DEFAULTS.targetFraction * span),
    pairFloor: Math.min(ALBUM_DEFAULTS.referencePairFloor, random + ALBUM_DEFAULTS.floorFraction * span),
  };
}

/** Mean pairwise cosine of unit vectors (1 for fewer than two). */
export function cohesionOf(vectors: readonly Float32Array[]): number {
  if (vectors.length < 2) return 1;
  let sum = 0;
  let pairs = 0;
  for (let i = 0; i < vectors.length; i++) {
    for (let j = i + 1; j < vectors.length; j++) {
      sum += dot(vectors[i]!, 0, vectors[j]!, 0, vectors[i]!.length);
      pairs++;
    }
  }
  return sum / pairs;
}

/** What the selection did: the chosen candidates in pick order and the relaxation stage it needed (0 = strict). */
export interface AlbumSelection {
  picks: AlbumCandidate[];
  /** 0 strict; 1 pair floor dropped; 2 era window and artist caps dropped as well; 3 the length range too. */
  stage: number;
}

/**
 * Greedy selection. `first` is the album's first pick (the seed song, or the best match of a text seed); each
 * further step adds the qualifying candidate that brings the album's mean pairwise cosine closest to `target`
 * (ties: the more similar to the first pick, then the lower row). A candidate qualifies when its length is in
 * range, the artist caps and the era window still hold with it, and (strict stage) its cosine with every pick
 * is at least `pairFloor`. When the strict stage cannot fill the album, the floor is dropped (stage 1), then
 * the era window and the artist caps (stage 2), then the length range (stage 3: a library too small for the
 * rules still gets an album), keeping the picks made so far. O(pool x length).
 */
export function selectAlbum(first: AlbumCandidate, pool: readonly AlbumCandidate[], o: AlbumSelectOptions): AlbumSelection {
  const picks: AlbumCandidate[] = [first];
  const taken = new Set<number>([first.row]);
  const byArtist = new Map<number, number>();
  const bump = (c: AlbumCandidate) => {
    if (c.artist >= 0) byArtist.set(c.artist, (byArtist.get(c.artist) ?? 0) + 1);
  };
  bump(first);
  let yearLo = first.year ?? Number.POSITIVE_INFINITY;
  let yearHi = first.year ?? Number.NEGATIVE_INFINITY;
  const cands = pool.filter((c) => c.row !== first.row);
  const lengthOk = cands.map((c) => c.duration === null || (c.duration >= o.minDuration && c.duration <= o.maxDuration));
  // Running sums over the picks: similarity sum and minimum per candidate, the album's pairwise sum.
  const simSum = new Float64Array(cands.length);
  const simMin = new Float64Array(cands.length).fill(Number.POSITIVE_INFINITY);
  const simFirst = new Float64Array(cands.length);
  const addPick = (p: AlbumCandidate) => {
    for (let i = 0; i < cands.length; i++) {
      const s = dot(p.vector, 0, cands[i]!.vector, 0, p.vector.length);
      simSum[i]! += s;
      if (s < simMin[i]!) simMin[i] = s;
    }
  };
  for (let i = 0; i < cands.length; i++) simFirst[i] = dot(first.vector, 0, cands[i]!.vector, 0, first.vector.length);
  addPick(first);
  let pairSum = 0;
  let stage = 0;
  while (picks.length < o.length) {
    const n = picks.length;
    const pairsAfter = ((n + 1) * n) / 2;
    const turn = o.turns && o.turns.length ? o.turns[(n - 1) % o.turns.length] : undefined;
    let best = -1;
    let bestInTurn = false;
    let bestGap = Number.POSITIVE_INFINITY;
    for (let i = 0; i < cands.length; i++) {
      const c = cands[i]!;
      if (taken.has(c.row)) continue;
      if (stage < 3 && !lengthOk[i]) continue;
      if (stage < 2) {
        if (c.artist >= 0) {
          const cap = c.artist === first.artist ? o.maxSeedArtist : o.maxPerArtist;
          if ((byArtist.get(c.artist) ?? 0) >= cap) continue;
        }
        if (c.year !== null && Math.max(yearHi, c.year) - Math.min(yearLo, c.year) > o.eraWindow) continue;
      }
      if (stage === 0 && simMin[i]! < o.pairFloor) continue;
      const inTurn = turn ? turn.has(c.row) : false;
      const gap = Math.abs((pairSum + simSum[i]!) / pairsAfter - o.target);
      const tol = o.gapTolerance ?? 1e-12;
      const better =
        best < 0 ||
        (inTurn && !bestInTurn) ||
        (inTurn === bestInTurn && (gap < bestGap - tol || (Math.abs(gap - bestGap) <= tol && (simFirst[i]! > simFirst[best]! || (simFirst[i] === simFirst[best] && c.row < cands[best]!.row)))));
      if (better) {
        best = i;
        bestInTurn = inTurn;
        bestGap = gap;
      }
    }
    if (best < 0) {
      if (stage === 3) break;
      stage++;
      continue;
    }
    const c = cands[best]!;
    pairSum += simSum[best]!;
    picks.push(c);
    taken.add(c.row);
    bump(c);
    if (c.year !== null) {
      yearLo = Math.min(yearLo, c.year);
      yearHi = Math.max(yearHi, c.year);
    }
    addPick(c);
  }
  return { picks, stage };
}

/** Opener styles: a calm typical "intro", or the most intense track first ("bang"). */
export type OpenerStyle = 'intro' | 'bang';

/**
 * Genres whose albums open with an intro (the reference's rule: hip-hop, R&B, metal, electronic), as folded
 * MSD/MTT genre labels; any other dominant genre (or none known) opens with a bang.
 */
export const INTRO_GENRES: ReadonlySet<string> = new Set(['hip-hop', 'hip hop', 'rnb', 'soul', 'metal', 'heavy metal', 'electronic', 'electronica', 'electro', 'techno', 'house']);

/** A sequenced track: the candidate, its 1-based slot and its role. */
export interface SequencedTrack {
  candidate: AlbumCandidate;
  slot: number;
  role: 'opener' | 'single' | 'track' | 'closer';
}

/**
 * Sequencing (at least 4 tracks; fewer are returned in pick order, all `track` but the first and last):
 *  - typicality of a track = cosine with the album's mean direction;
 *  - closer (last slot) = the track with the best rank sum of calmness (1 - intensity) and atypicality;
 *  - "bang": the three most intense of the rest open the album (slot 1, then singles in slots 2-3);
 *    "intro": slot 1 = the most typical of the calmer half of the rest, slots 2-3 = the two most intense;
 *  - the middle follows the nearest-neighbour chain from slot 3 (each next track the most similar remaining
 *    one, a different artist from the previous track when one is left), for smooth transitions.
 * Ties by row, so the order is deterministic.
 */
export function sequenceAlbum(picks: readonly AlbumCandidate[], style: OpenerStyle): SequencedTrack[] {
  const n = picks.length;
  if (n < 4) return picks.map((c, i) => ({ candidate: c, slot: i + 1, role: i === 0 ? 'opener' : i === n - 1 && n > 1 ? 'closer' : 'track' }));
  const dim = picks[0]!.vector.length;
  const mean = new Float64Array(dim);
  for (const p of picks) for (let d = 0; d < dim; d++) mean[d]! += p.vector[d]!;
  const norm = Math.sqrt(mean.reduce((s, x) => s + x * x, 0)) || 1;
  const typ = new Map<number, number>();
  for (const p of picks) {
    let s = 0;
    for (let d = 0; d < dim; d++) s += (p.vector[d]! * mean[d]!) / norm;
    typ.set(p.row, s);
  }
  const rankOf = (list: readonly AlbumCandidate[], key: (c: AlbumCandidate) => number): Map<number, number> => {
    const sorted = [...list].sort((a, b) => key(a) - key(b) || a.row - b.row);
    return new Map(sorted.map((c, i) => [c.row, i]));
  };
  // Closer: calmest and least typical (lowest rank sum of intensity and typicality).
  const rI = rankOf(picks, (c) => c.intensity);
  const rT = rankOf(picks, (c) => typ.get(c.row)!);
  const closer = [...picks].sort((a, b) => rI.get(a.row)! + rT.get(a.row)! - (rI.get(b.row)! + rT.get(b.row)!) || a.intensity - b.intensity || a.row - b.row)[0]!;
  let rest = picks.filter((c) => c !== closer);
  const byIntensity = (list: readonly AlbumCandidate[]) => [...list].sort((a, b) => b.intensity - a.intensity || a.row - b.row);
  let opener: AlbumCandidate;
  if (style === 'bang') {
    opener = byIntensity(rest)[0]!;
  } else {
    const calm = [...rest].sort((a, b) => a.intensity - b.intensity || a.row - b.row).slice(0, Math.max(1, Math.ceil(rest.length / 2)));
    opener = calm.sort((a, b) => typ.get(b.row)! - typ.get(a.row)! || a.row - b.row)[0]!;
  }
  rest = rest.filter((c) => c !== opener);
  const singles = byIntensity(rest).slice(0, 2);
  rest = rest.filter((c) => !singles.includes(c));
  const order: AlbumCandidate[] = [opener, ...singles];
  while (rest.length) {
    const prev = order[order.length - 1]!;
    const others = rest.filter((c) => c.artist < 0 || c.artist !== prev.artist);
    const from = others.length ? others : rest;
    let best = from[0]!;
    let bestSim = Number.NEGATIVE_INFINITY;
    for (const c of from) {
      const s = dot(prev.vector, 0, c.vector, 0, dim);
      if (s > bestSim || (s === bestSim && c.row < best.row)) [best, bestSim] = [c, s];
    }
    order.push(best);
    rest = rest.filter((c) => c !== best);
  }
  order.push(closer);
  return order.map((c, i) => ({ candidate: c, slot: i + 1, role: i === 0 ? 'opener' : i <= 2 ? 'single' : i === order.length - 1 ? 'closer' : 'track' }));
}

import { SERVICE_DEFAULTS, type FindPathResponse, type TrackRowDto } from '@polyphony/contracts';
import { NotFoundError, ValidationError } from '@polyphony/platform';
import type { TrackReader } from '../core/ports';
import { dot } from '@polyphony/vectors';
import type { RankedRow, RequestScope } from '../core/scope';
import { roundDistance } from '../core/scope';
import { foldText, songKey } from '../core/text';
import type { TrackTitleArtist } from '../maps/track-meta-store';

/** Reference defaults (reference-implementation.md 2.7, "Similar songs" and "Path"). */
export const DEFAULT_SIMILAR_N = 10;

/**
 * Defaults of query parameters a request leaves out. An admin changes them with PUT /api/config
 * (settings MAX_SONGS_PER_ARTIST, PATH_DEFAULT_LENGTH, ALCHEMY_DEFAULT_N_RESULTS, ALCHEMY_TEMPERATURE,
 * ALCHEMY_SUBTRACT_DISTANCE_ANGULAR); STATIC_QUERY_DEFAULTS holds the shipped values
 * (reference-implementation.md 2.7).
 */
export interface QueryDefaults {
  maxSongsPerArtist: number;
  pathSteps: number;
  alchemyN: number;
  alchemyTemperature: number;
  /** Cosine distance. */
  alchemySubtractDistance: number;
}
export const STATIC_QUERY_DEFAULTS: QueryDefaults = {
  maxSongsPerArtist: SERVICE_DEFAULTS.maxSongsPerArtist,
  pathSteps: SERVICE_DEFAULTS.pathDefaultLength,
  alchemyN: SERVICE_DEFAULTS.alchemyDefaultN,
  alchemyTemperature: SERVICE_DEFAULTS.alchemyTemperature,
  alchemySubtractDistance: SERVICE_DEFAULTS.alchemySubtractDistanceAngular,
};
/** Candidates examined around each path waypoint (reference PATH_CANDIDATES_PER_STEP). */
export const PATH_CANDIDATES_PER_STEP = 25;

/** Options of `similarTracks`. */
export interface SimilarOptions {
  n: number;
  /** Drop songs with the same folded title and artist as the seed or an earlier result. */
  eliminateDuplicates: boolean;
  /** At most this many results per (folded) artist; 0 = unlimited. */
  maxPerArtist: number;
}

/**
 * One end of a path: a song (provider id of the selected server, or canonical), or a point of the embedding
 * space (a mood centroid or an anchor; `label` names it in errors).
 */
export type PathEnd = { songId: string } | { vector: Float32Array; label: string };

/** How a seed is given: an id (provider id of the selected server, or canonical), or title + artist. */
export interface SeedInput {
  itemId?: string;
  title?: string;
  artist?: string;
}

/**
 * Similar songs, farthest song, single-track lookups and song paths over the shared index.
 * Every method takes the request's scope (generation snapshot, server, mask, id translation).
 */
export class SimilarityService {
  constructor(private readonly tracks: TrackReader) {}

  /**
   * Row of a seed in the scope's generation.
   * With an id: resolved through the catalogue's input resolver. With title + artist: exact match on the
   * folded title and artist; among several copies, one available on the selected server is preferred.
   * @throws ValidationError when neither an id nor both title and artist are given
   * @throws NotFoundError when the seed is not in the index
   */
  async seedRow(scope: RequestScope, seed: SeedInput): Promise<number> {
    if (seed.itemId) return this.seedRowById(scope, seed.itemId);
    if (!seed.title || !seed.artist) throw new ValidationError('Give item_id, or both title and artist');
    const ids = await this.tracks.findByTitleArtist(foldText(seed.title), foldText(seed.artist));
    const rows = ids.map((id) => scope.gen.index.rowOf(id)).filter((r) => r >= 0);
    if (rows.length === 0) throw new NotFoundError('Target track not found in index');
    const mask = await scope.mask();
    return rows.find((r) => mask.has(r)) ?? rows[0]!;
  }

  /** `seedRow` of an id, synchronously. @throws NotFoundError when the id is not in the index */
  private seedRowById(scope: RequestScope, itemId: string): number {
    const row = scope.rowOfInput(itemId);
    if (row < 0) throw new NotFoundError('Target track not found in index');
    return row;
  }

  /**
   * The n songs nearest to the seed that are available on the selected server, nearest first, with the
   * seed itself, duplicates (same folded title + artist, when asked) and songs beyond the per-artist cap
   * removed. Candidate pool as in the reference (`n + max(20, 3n) + 1` with filtering, else
   * `n + max(3, 0.2n) + 1`), grown 4x while the filters leave fewer than n songs and more candidates exist.
   * @throws NotFoundError / ValidationError from `seedRow`
   */
  async similarTracks(scope: RequestScope, seed: SeedInput, options: SimilarOptions): Promise<TrackRowDto[]> {
    // By item id (what the plugins send) the seed, mask and rows are read synchronously: no promise per step.
    const seedRow = seed.itemId ? this.seedRowById(scope, seed.itemId) : await this.seedRow(scope, seed);
    const mask = scope.maskNow();
    const index = scope.gen.index;
    const seedId = scope.idOf(seedRow);
    const filtering = options.eliminateDuplicates || options.maxPerArtist > 0;
    let pool = filtering ? options.n + Math.max(20, 3 * options.n) + 1 : options.n + Math.max(3, Math.ceil(0.2 * options.n)) + 1;
    let selected: RankedRow[] = [];
    for (;;) {
      const k = Math.max(1, Math.min(pool, mask.count));
      const hits = mask.count === 0 ? [] : index.searchByRow(seedRow, { k, mask });
      // Metadata is read lazily from the generation's in-memory store (only candidates looked at are decoded).
      selected = selectRows(scope, hits, scope.metaAt(seedRow, seedId), options);
      if (selected.length >= options.n || hits.length < k || k >= mask.count) break;
      pool *= 4;
    }
    return scope.presentNow(selected);
  }

  /**
   * The n songs nearest to a point of the embedding space (a mood centroid or a saved anchor,
   * `similar_tracks?mood=` / `?anchor_id=`) available on the selected server, nearest first, with the same
   * duplicate and per-artist filters and candidate pool growth as `similarTracks`. Songs within an
   * exclusion's radius (cosine distance < its distance) are dropped. An empty list when the server has no song.
   */
  async similarToPoint(scope: RequestScope, point: Float32Array, options: SimilarOptions, exclusions: ReadonlyArray<{ vector: Float32Array; distance: number }> = []): Promise<TrackRowDto[]> {
    const mask = await scope.mask();
    if (mask.count === 0) return [];
    const index = scope.gen.index;
    const dim = index.dim;
    const filtering = options.eliminateDuplicates || options.maxPerArtist > 0 || exclusions.length > 0;
    let pool = filtering ? options.n + Math.max(20, 3 * options.n) + 1 : options.n + Math.max(3, Math.ceil(0.2 * options.n)) + 1;
    let selected: RankedRow[] = [];
    for (;;) {
      const k = Math.max(1, Math.min(pool, mask.count));
      const hits = index.search(point, { k, mask }).filter((h) => {
        const v = index.getVector(h.row);
        return !exclusions.some((e) => 1 - dot(e.vector, 0, v, 0, dim) < e.distance);
      });
      selected = selectRows(scope, hits, undefined, options);
      if (selected.length >= options.n || k >= mask.count) break;
      pool *= 4;
    }
    return scope.present(selected);
  }

  /**
   * The song available on the selected server farthest from the seed (exact scan of the server's songs:
   * the farthest from q is the nearest to -q, since 1 - cos(q, v) = 2 - (1 - cos(-q, v))).
   * @returns max_distance 0 and farthest_item_id null when the server has no other song
   */
  async maxDistance(scope: RequestScope, itemId: string): Promise<{ max_distance: number; farthest_item_id: string | null }> {
    const row = await this.seedRow(scope, { itemId });
    const mask = await scope.mask();
    const index = scope.gen.index;
    const q = index.getVector(row);
    for (let d = 0; d < q.length; d++) q[d] = -q[d]!;
    if (mask.count === 0) return { max_distance: 0, farthest_item_id: null };
    const hits = index.exactSearch(q, { k: 2, mask, exclude: [row] });
    const far = hits[0];
    if (!far) return { max_distance: 0, farthest_item_id: null };
    const id = scope.idOf(far.row);
    const mapped = await scope.mapOutput([id]);
    return { max_distance: roundDistance(2 - far.distance), farthest_item_id: mapped.get(id) ?? null };
  }

  /**
   * Canonical id of an input id and the id to report for it: the caller's own id when it was a provider id
   * of the selected server, otherwise the server's provider id. 404 when the track is unknown or not on the server.
   */
  async locate(scope: RequestScope, inputId: string): Promise<{ canonical: string; reportedId: string }> {
    const [canonical] = await scope.resolveInput([inputId]);
    if (!canonical) throw new NotFoundError('Track not found');
    const mapped = await scope.mapOutput([canonical]);
    const provider = mapped.get(canonical);
    if (!provider) throw new NotFoundError('Track not found on the selected server');
    return { canonical, reportedId: canonical !== inputId ? inputId : provider };
  }

  /**
   * Song path (reference "Path", reference-implementation.md 2.7): `steps` songs from start to end.
   * Waypoints are spherically interpolated (slerp) between the two unit embeddings at t = i / (steps - 1);
   * at each interior waypoint the nearest available song not used yet (and, by folded title + artist, not
   * a duplicate of one used) is taken from its PATH_CANDIDATES_PER_STEP nearest; a waypoint with no
   * unused candidate is skipped, so the path may be shorter than `steps`. Start and end are included.
   * Each row's distance is the cosine distance to the previous song of the path (0 for the start);
   * total_distance is their sum.
   * @throws NotFoundError when start or end is unknown
   */
  async findPath(scope: RequestScope, startId: string, endId: string, steps: number): Promise<FindPathResponse> {
    return this.findPathBetween(scope, { songId: startId }, { songId: endId }, steps);
  }

  /**
   * `findPath` between any two ends. A point end (mood centroid, anchor) is replaced by the available song
   * nearest to it (other than the other end's song), so the path always starts and ends with songs of the
   * selected server.
   * @throws NotFoundError when a song end is unknown, or no song is available near a point end
   */
  async findPathBetween(scope: RequestScope, start: PathEnd, end: PathEnd, steps: number): Promise<FindPathResponse> {
    const songIds = [start, end].flatMap((e) => ('songId' in e ? [e.songId] : []));
    const songRows = await scope.rowsOfInput(songIds);
    const index = scope.gen.index;
    const mask = await scope.mask();
    let next = 0;
    const rowOfEnd = (e: PathEnd, which: 'Start' | 'End', other: number): number => {
      if ('songId' in e) {
        const r = songRows[next++];
        if (r === undefined || r < 0) throw new NotFoundError(`${which} song not found in index`);
        return r;
      }
      const hit = mask.count === 0 ? undefined : index.search(e.vector, { k: 1, mask, exclude: other >= 0 ? [other] : [] })[0];
      if (!hit) throw new NotFoundError(`No song available near the ${which.toLowerCase()} ${e.label}`);
      return hit.row;
    };
    const startRow = rowOfEnd(start, 'Start', -1);
    const endRow = rowOfEnd(end, 'End', startRow);
    const u0 = index.getVector(startRow);
    const u1 = index.getVector(endRow);
    const candidateLists: number[][] = [];
    if (startRow !== endRow) {
      for (let i = 1; i < steps - 1; i++) {
        const w = slerp(u0, u1, i / (steps - 1));
        const hits = mask.count === 0 ? [] : index.search(w, { k: Math.min(PATH_CANDIDATES_PER_STEP, mask.count), mask, exclude: [startRow, endRow] });
        candidateLists.push(hits.map((h) => h.row));
      }
    }
    const keyOf = (row: number): string => {
      const m = scope.metaAt(row);
      return m ? songKey(m.title, m.artist) : `row:${row}`;
    };
    const usedRows = new Set<number>([startRow, endRow]);
    const usedKeys = new Set<string>([keyOf(startRow), keyOf(endRow)]);
    const pathRows: number[] = [startRow];
    for (const list of candidateLists) {
      const pick = list.find((r) => !usedRows.has(r) && !usedKeys.has(keyOf(r)) && scope.gen.maps.providerOf(scope.serverId, r) !== undefined);
      if (pick === undefined) continue;
      usedRows.add(pick);
      usedKeys.add(keyOf(pick));
      pathRows.push(pick);
    }
    if (endRow !== startRow) pathRows.push(endRow);
    const ranked: RankedRow[] = [];
    let total = 0;
    let prev: Float32Array | undefined;
    for (const row of pathRows) {
      const v = index.getVector(row);
      const d = prev ? Math.max(0, 1 - dot(prev, 0, v, 0, v.length)) : 0;
      total += d;
      ranked.push({ row, distance: d });
      prev = v;
    }
    const path = await scope.present(ranked);
    return { path, total_distance: roundDistance(total) };
  }
}

/**
 * The first n candidates (ascending distance) that are on the selected server and pass the duplicate and
 * per-artist filters. Only title and artist of a candidate are read
 * (`titleArtistAt`): the caller presents the rows kept, in the same synchronous step.
 */
function selectRows(scope: RequestScope, hits: readonly RankedRow[], seedMeta: TrackTitleArtist | undefined, options: SimilarOptions): RankedRow[] {
  const seen = new Set<string>();
  if (options.eliminateDuplicates && seedMeta) seen.add(songKey(seedMeta.title, seedMeta.artist));
  const perArtist = new Map<string, number>();
  const out: RankedRow[] = [];
  for (const h of hits) {
    if (!scope.gen.maps.providerOf(scope.serverId, h.row)) continue;
    const m = scope.titleArtistAt(h.row);
    if (!m) continue;
    // The folded artist serves both keys (songKey = folded title + NUL + folded artist, artistKey = folded artist).
    const artist = options.eliminateDuplicates || options.maxPerArtist > 0 ? foldText(m.artist) : '';
    if (options.eliminateDuplicates) {
      const key = `${foldText(m.title)}\u0000${artist}`;
      if (seen.has(key)) continue;
      seen.add(key);
    }
    if (options.maxPerArtist > 0) {
      const c = perArtist.get(artist) ?? 0;
      if (c >= options.maxPerArtist) continue;
      perArtist.set(artist, c + 1);
    }
    out.push(h);
    if (out.length >= options.n) break;
  }
  return out;
}

/**
 * Spherical linear interpolation between unit vectors a and b at t in [0, 1] (Shoemake, "Animating
 * rotation with quaternion curves", SIGGRAPH 1985). Falls back to normalised linear interpolation when the
 * angle is ~0 or ~π (sin Ω ≈ 0).
 */
export function slerp(a: Float32Array, b: Float32Array, t: number): Float32Array {
  const dim = a.length;
  const c = Math.max(-1, Math.min(1, dot(a, 0, b, 0, dim)));
  const omega = Math.acos(c);
  const s = Math.sin(omega);
  const out = new Float32Array(dim);
  if (s < 1e-6) {
    let norm = 0;
    for (let d = 0; d < dim; d++) {
      out[d] = (1 - t) * a[d]! + t * b[d]!;
      norm += out[d]! * out[d]!;
    }
    if (norm > 0) for (let d = 0; d < dim; d++) out[d]! /= Math.sqrt(norm);
    else out.set(a);
    return out;
  }
  const wa = Math.sin((1 - t) * omega) / s;
  const wb = Math.sin(t * omega) / s;
  for (let d = 0; d < dim; d++) out[d] = wa * a[d]! + wb * b[d]!;
  return out;
}

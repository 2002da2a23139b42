import { randomInt } from 'node:crypto';
import { ANCHOR_MAX_EXCLUSION_VECTORS, type AlchemyItem, type AlchemyResponse } from '@polyphony/contracts';
import { NotFoundError, ValidationError } from '@polyphony/platform';
import type { ArtistResolver } from '../artists/artist.service';
import { dot, normaliseInto, SeededRandom } from '@polyphony/vectors';
import { mapPosition } from '../maps/umap-projection';
import type { NamedSeedSource, PlaylistPort } from '../core/ports';
import type { RankedRow, RequestScope } from '../core/scope';

/** filtered_out lists at most this many rows. */
export const ALCHEMY_FILTERED_LIST_MAX = 100;
/** Exclusions listed in the answer (the rest still apply); the bound of an anchor's stored exclusions. */
export const ALCHEMY_EXCLUSIONS_LISTED_MAX = ANCHOR_MAX_EXCLUSION_VECTORS;
const round6 = (x: number) => Math.round(x * 1e6) / 1e6;
/** Songs of a playlist item taken into account (reference ALCHEMY_PLAYLIST_MAX_SONGS). */
export const ALCHEMY_PLAYLIST_MAX_SONGS = 500;

export interface AlchemyOptions {
  n: number;
  temperature: number;
  subtractDistance: number;
  /** Seed of the sampling; random when undefined. */
  seed?: number;
}

/** Points of an alchemy request (see AlchemyService.resolvePoints). */
export interface ResolvedPoints {
  add: AlchemyPoint[];
  sub: AlchemyPoint[];
  unresolved: string[];
  /** Exclusions carried by ADD anchor items (distance null = the request's subtract_distance). */
  exclusions: Array<{ vector: Float32Array; distance: number | null }>;
}

/** One resolved alchemy item. */
export interface AlchemyPoint {
  input: AlchemyItem;
  /** Unit vector of the anchor (song vector, or normalised artist centroid). */
  vector: Float32Array;
  /** Rows the anchor stands for (the song, or the artist's songs). */
  rows: number[];
  title: string | null;
  author: string | null;
}

/**
 * Song alchemy (reference "Alchemy", reference-implementation.md 2.7):
 *  1. every ADD item becomes one anchor: a song's unit embedding, an artist's mixture centroid
 *     (normalised), or a playlist's mean direction (see playlistAnchor); the query is the normalised mean
 *     of the ADD anchors, each weighted 1; a mood or anchor item is its unit vector (NamedSeedSource);
 *  2. candidates: the `max(3n, n + 50)` nearest available songs to the centroid, plus, with several ADD
 *     anchors, the `max(ceil(n/4), ceil(3n/p))` nearest to each anchor (p = anchors); ADD songs excluded;
 *  3. SUBTRACT: a candidate within `subtractDistance` (cosine) of any SUBTRACT song (an artist counts as
 *     all its songs) is dropped and listed in `filtered_out`;
 *  4. sampling: n candidates without replacement with probability ∝ exp(-distance / T), using the
 *     Gumbel-top-k trick (keys -d/T + Gumbel noise, keep the n largest; Kool, van Hoof & Welling,
 *     "Stochastic Beams and Where to Find Them", ICML 2019), seeded; T = 0 is the deterministic top n.
 *     Results are returned nearest first.
 * Unknown ids are ignored and listed in `unresolved`.
 */
export class AlchemyService {
  constructor(
    private readonly artists: ArtistResolver,
    private readonly playlists?: PlaylistPort,
    private readonly seeds: NamedSeedSource = {},
  ) {}

  /**
   * A playlist item: the playlist (written by this service on the selected server, by id or name) stands
   * for its first ALCHEMY_PLAYLIST_MAX_SONGS songs that are in the index; its vector is the normalised mean
   * of their unit embeddings (one centroid; the reference splits large playlists into up to 10). Undefined
   * when the playlist is unknown or none of its songs is indexed.
   */
  private async playlistAnchor(scope: RequestScope, item: AlchemyItem): Promise<AlchemyPoint | undefined> {
    if (!this.playlists || scope.serverId === undefined) return undefined;
    const found = await this.playlists.playlistTracks(scope.serverId, item.id, scope.viewer);
    if (!found) return undefined;
    const index = scope.gen.index;
    const rows = [...new Set(found.itemIds.map((id) => index.rowOf(id)).filter((r) => r >= 0))].slice(0, ALCHEMY_PLAYLIST_MAX_SONGS);
    if (rows.length === 0) return undefined;
    const sum = new Float32Array(index.dim);
    for (const r of rows) {
      const v = index.getVector(r);
      for (let d = 0; d < sum.length; d++) sum[d]! += v[d]!;
    }
    const unit = new Float32Array(index.dim);
    if (!(normaliseInto(sum, 0, unit, 0, unit.length) > 0)) return undefined;
    return { input: item, vector: unit, rows, title: found.name, author: null };
  }

  /**
   * Resolves alchemy items to points of the embedding space (step 1 above), without searching: ADD and
   * SUBTRACT points, the ids that matched nothing, and the exclusions carried by ADD anchor items.
   * @throws ValidationError for a mood or anchor item when that seed kind is not available; AppError
   *   4xx from the seed source (unknown mood or anchor)
   */
  async resolvePoints(scope: RequestScope, items: readonly AlchemyItem[]): Promise<ResolvedPoints> {
    const gen = scope.gen;
    const index = gen.index;
    const songItems = items.filter((i) => i.type === 'song');
    const songRows = await scope.rowsOfInput(songItems.map((i) => i.id));
    const rowOfSong = new Map<AlchemyItem, number>();
    songItems.forEach((item, i) => rowOfSong.set(item, songRows[i]!));
    const songMeta = await scope.metadata(songRows.filter((r) => r >= 0).map((r) => scope.idOf(r)));
    const unresolved: string[] = [];
    const add: AlchemyPoint[] = [];
    const sub: AlchemyPoint[] = [];
    const exclusions: Array<{ vector: Float32Array; distance: number | null }> = [];
    for (const item of items) {
      let anchor: AlchemyPoint | undefined;
      if (item.type === 'song') {
        const row = rowOfSong.get(item)!;
        if (row >= 0) {
          const m = songMeta.get(scope.idOf(row));
          anchor = { input: item, vector: index.getVector(row), rows: [row], title: m?.title ?? null, author: m?.artist ?? null };
        }
      } else if (item.type === 'playlist') {
        anchor = await this.playlistAnchor(scope, item);
      } else if (item.type === 'mood') {
        if (!this.seeds.mood) throw new ValidationError('Mood items are not available: no mood centroids in this deployment');
        anchor = { input: item, vector: await this.seeds.mood(gen, item.id), rows: [], title: item.id, author: null };
      } else if (item.type === 'anchor') {
        if (!this.seeds.anchor) throw new ValidationError('Anchor items are not available: no anchors in this deployment');
        const a = await this.seeds.anchor(item.id, gen);
        anchor = { input: item, vector: a.vector, rows: [], title: a.name, author: null };
        // A saved anchor's exclusions come with it when it is added (reference: re-applied on use).
        if (item.op === 'ADD') exclusions.push(...a.exclusions);
      } else {
        const a = await this.artists.resolve(scope, item.id);
        if (a >= 0) {
          const v = gen.artists.centroid(a);
          const unit = new Float32Array(v.length);
          normaliseInto(v, 0, unit, 0, v.length);
          const name = gen.artists.names[a]!;
          anchor = { input: item, vector: unit, rows: [...gen.artists.rows(a)], title: name, author: name };
        }
      }
      if (!anchor) unresolved.push(item.id);
      else (item.op === 'ADD' ? add : sub).push(anchor);
    }
    return { add, sub, unresolved, exclusions };
  }

  /** Unit vector of the ADD points' mean (each weighted 1); the first point when they cancel out. */
  static centroidOf(add: readonly AlchemyPoint[], dim: number): Float32Array {
    const centroid = new Float32Array(dim);
    const sum = new Float32Array(dim);
    for (const a of add) for (let d = 0; d < dim; d++) sum[d]! += a.vector[d]!;
    if (!(normaliseInto(sum, 0, centroid, 0, dim) > 0)) centroid.set(add[0]!.vector);
    return centroid;
  }

  /**
   * The vectors a SUBTRACT point excludes around: each of its songs (a song, artist or playlist) or its
   * own point (a mood or anchor).
   */
  static subtractVectors(scope: RequestScope, s: AlchemyPoint): Float32Array[] {
    return s.rows.length === 0 ? [s.vector] : s.rows.map((r) => scope.gen.index.getVector(r));
  }

  /**
   * @throws ValidationError when no ADD item is given
   * @throws NotFoundError when none of the ADD items is in the index
   */
  async run(scope: RequestScope, items: readonly AlchemyItem[], options: AlchemyOptions): Promise<AlchemyResponse> {
    if (!items.some((i) => i.op === 'ADD')) throw new ValidationError('Alchemy needs at least one ADD item');
    const gen = scope.gen;
    const index = gen.index;
    const { add, sub, unresolved, exclusions } = await this.resolvePoints(scope, items);
    if (add.length === 0) throw new NotFoundError('None of the ADD items is in the index');

    const dim = index.dim;
    const centroid = AlchemyService.centroidOf(add, dim);
    const mask = await scope.mask();
    const exclude = new Set<number>();
    // Seed songs (a song item, or the songs of a playlist item) never come back as results.
    for (const a of add) if (a.input.type === 'song' || a.input.type === 'playlist') for (const r of a.rows) exclude.add(r);
    const n = options.n;
    const candidates = new Set<number>();
    if (mask.count > 0) {
      const k = Math.min(Math.max(3 * n, n + 50), mask.count);
      for (const h of index.search(centroid, { k, mask, exclude })) candidates.add(h.row);
      if (add.length > 1) {
        const per = Math.min(Math.max(Math.ceil(n / 4), Math.ceil((3 * n) / add.length)), mask.count);
        for (const a of add) for (const h of index.search(a.vector, { k: per, mask, exclude })) candidates.add(h.row);
      }
    }
    // A song, artist or playlist subtracts around each of its songs; a mood or anchor around its point;
    // an ADD anchor's saved exclusions around theirs, with their own radius.
    const subVectors: Array<{ v: Float32Array; d: number }> = [];
    for (const s of sub) for (const v of AlchemyService.subtractVectors(scope, s)) subVectors.push({ v, d: options.subtractDistance });
    for (const e of exclusions) subVectors.push({ v: e.vector, d: e.distance ?? options.subtractDistance });
    const kept: RankedRow[] = [];
    const filtered: RankedRow[] = [];
    for (const row of candidates) {
      const v = index.getVector(row);
      const distance = Math.max(0, 1 - dot(centroid, 0, v, 0, dim));
      const tooClose = subVectors.some((s) => 1 - dot(s.v, 0, v, 0, dim) < s.d);
      (tooClose ? filtered : kept).push({ row, distance });
    }
    kept.sort((a, b) => a.distance - b.distance || a.row - b.row);
    filtered.sort((a, b) => a.distance - b.distance || a.row - b.row);
    const chosen = sampleRows(kept, n, options.temperature, options.seed ?? randomInt(0, 2 ** 32 - 1));
    const shownFiltered = filtered.slice(0, ALCHEMY_FILTERED_LIST_MAX);
    // One metadata and one output-mapping call for results and filtered rows together.
    const presented = await scope.presentRanked([...chosen, ...shownFiltered]);
    const chosenRows = new Set(chosen.map((c) => c.row));
    const coords = gen.coords;
    const results = presented
      .filter((p) => chosenRows.has(p.row))
      .map((p) => (coords.length ? { ...p.dto, embedding_2d: [coords[2 * p.row]!, coords[2 * p.row + 1]!] as [number, number] } : p.dto));
    const filteredRows = presented.filter((p) => !chosenRows.has(p.row)).map((p) => p.dto);
    const point = (a: AlchemyPoint) => ({
      item_id: a.input.id,
      type: a.input.type,
      title: a.title,
      author: a.author,
      embedding_2d: mapPosition(gen, a.vector) ?? ([0, 0] as [number, number]),
    });
    return {
      results,
      filtered_out: filteredRows,
      add_points: add.map(point),
      sub_points: sub.map(point),
      centroid_2d: mapPosition(gen, centroid) ?? null,
      // What the reference UI saves as an anchor ({name, centroid: add_centroid_vector, exclusions}).
      add_centroid_vector: Array.from(centroid, round6),
      exclusions: subVectors.slice(0, ALCHEMY_EXCLUSIONS_LISTED_MAX).map((x) => ({ vector: Array.from(x.v, round6), distance: x.d })),
      unresolved,
    };
  }
}

/**
 * n of the ranked rows (ascending distance): the first n when temperature is 0, otherwise a sample
 * without replacement with P ∝ exp(-d / T) via Gumbel-top-k; returned in ascending distance.
 */
export function sampleRows(ranked: readonly RankedRow[], n: number, temperature: number, seed: number): RankedRow[] {
  if (temperature <= 0 || ranked.length <= n) return ranked.slice(0, n);
  const rng = new SeededRandom(seed);
  const keyed = ranked.map((r) => {
    // Gumbel(0,1) = -ln(-ln U), U in (0, 1).
    const u = Math.min(1 - 1e-12, Math.max(1e-12, rng.nextFloat()));
    return { r, key: -r.distance / temperature - Math.log(-Math.log(u)) };
  });
  keyed.sort((a, b) => b.key - a.key);
  return keyed
    .slice(0, n)
    .map((k) => k.r)
    .sort((a, b) => a.distance - b.distance || a.row - b.row);
}

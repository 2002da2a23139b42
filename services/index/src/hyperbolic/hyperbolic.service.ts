import {
  HYPERBOLIC_DEFAULT_JOURNEY,
  HYPERBOLIC_DEFAULT_LIMIT,
  HYPERBOLIC_DEFAULT_SPREAD,
  type HyperbolicCacheStatus,
  type HyperbolicJourneyBody,
  type HyperbolicJourneyResponse,
  type HyperbolicPointsResponse,
  type HyperbolicSimilarBody,
  type HyperbolicSimilarResponse,
  type HyperbolicTreeResponse,
  type HyperbolicWarmupResponse,
} from '@polyphony/contracts';
import { NotFoundError, ValidationError, type Logger } from '@polyphony/platform';
import { CooperativeScheduler, type AvailabilityMask } from '@polyphony/vector-engine';
import { hashString32 } from '@polyphony/vectors';
import { earlierRowsOf, generationKey, grewFrom, type Generation, type IndexState } from '../core/generation';
import type { RequestScope } from '../core/scope';
import type { TrackMeta } from '../core/ports';
import { TopScored } from '../semantic/top-scored';
import { BALL_COMPACT_MIN_ROWS, BALL_DIM, BALL_RIM_RADIUS, ballBytes, ballDisc, ballDistanceTo, ballNorm2, ballPoint, ballRadius, buildPoincareBall, type BallReuse, type PoincareBall } from './ball';
import { noteBallBasis, takeBallSeed, type BallSeed } from './ball-seed';
import { ballInputOf } from './ball-input';
import { buildTree, round6, topGenreOf, treeNode, type Tree } from './hyperbolic-tree';
import { geodesicPoint, mobiusScale, poincareDistance, radiusToDistance, samplePathVia } from './poincare';

export { TREE_CLUSTER_SIZE, TREE_MAX_CLUSTERS, TREE_MAX_TRACKS, topGenreOf, topMoodOf } from './hyperbolic-tree';

/** Points of a journey's drawn path (`path`). */
export const JOURNEY_PATH_POINTS = 33;
/** Songs of /api/hyperbolic/points without `n`. */
export const POINTS_DEFAULT_N = 5000;
/** Seed of the id hash that picks the points subset (fixed: the subset is stable per generation). */
const POINTS_SEED = 0x6879_7065;
/** Trees kept (per server and generation). */
const TREE_CACHE_ENTRIES = 8;

/** Build state of one generation's ball. */
interface BallEntry {
  generation: number;
  promise: Promise<PoincareBall>;
  ball?: PoincareBall;
  error?: string;
  buildMs: number | null;
  /** Rows copied from the serving generation's ball (issue 35 reuse; 0 = every row projected). */
  reused?: number;
}

/** Position on the 2-D disc of a ball point: its radius, the angle of its first two coordinates. */
export function discOf(p: ArrayLike<number>): [number, number] {
  let r2 = 0;
  for (let i = 0; i < p.length; i++) r2 += p[i]! * p[i]!;
  const r = Math.sqrt(r2);
  const x = p[0] ?? 0;
  const y = p.length > 1 ? p[1]! : 0;
  const h = Math.hypot(x, y);
  return h > 1e-12 ? [round6((x / h) * r), round6((y / h) * r)] : [round6(r), 0];
}

/**
 * Hyperbolic exploration (issue 32; routes: hyperbolic.routes.ts, shapes: shared/contracts/src/hyperbolic.ts).
 * Each index generation gets its Poincaré ball (ball.ts) before it is served (`IndexState.onPrepare`: part of a
 * build's activation and of a replica's load; deterministic from the vectors, so it is not stored); every
 * query reads it from memory, restricted to the selected server's availability mask and answered in its ids.
 */
export class HyperbolicService {
  private readonly balls = new Map<string, BallEntry>();
  /**
   * Per generation number, the newest revision whose ball was asked for: the ball a live-library revision copies its
   * first rows from (its revisions only append rows). Other generations' entries are dropped at the swap.
   */
  private readonly newestBall = new Map<number, { gen: Generation; entry: BallEntry }>();
  private readonly trees = new Map<string, Tree>();
  /** `points` answers per server and `n` (the subset costs a hash and a sort of every available song). */
  private readonly pointAnswers = new Map<string, { gen: Generation; mask: AvailabilityMask; response: HyperbolicPointsResponse }>();

  constructor(
    private readonly state: IndexState,
    private readonly logger: Logger,
  ) {
    state.onPrepare(async (g) => {
      await this.ball(g).then(
        () => undefined,
        (err: unknown) => this.logger.warn('hyperbolic ball not built; built on first use', { generation: g.generation, err: (err as Error).message }),
      );
    }, 'ball');
    state.onSwap((g) => {
      for (const k of this.balls.keys()) if (k !== generationKey(g)) this.balls.delete(k);
      for (const n of this.newestBall.keys()) if (n !== g.generation) this.newestBall.delete(n);
      for (const [k, t] of this.trees) if (t.gen !== g) this.trees.delete(k);
      for (const [k, p] of this.pointAnswers) if (p.gen !== g) this.pointAnswers.delete(k);
      if (!this.balls.has(generationKey(g))) void this.ball(g).catch(() => undefined);
    });
  }

  /**
   * Bytes held by the balls built so far (typed-array capacities of every generation still cached: the live one, plus
   * the next one while it is prepared). For the memory accounting of benchmarks (`generationMemory` does not see it).
   */
  memoryBytes(): number {
    let b = 0;
    for (const e of this.balls.values()) if (e.ball) b += ballBytes(e.ball);
    return b;
  }

  /** The ball of a generation (built once per generation; a failed build is retried on the next call). */
  ball(gen: Generation): Promise<PoincareBall> {
    let e = this.balls.get(generationKey(gen));
    if (!e || e.error !== undefined) {
      const started = performance.now();
      const entry: BallEntry = { generation: gen.generation, buildMs: null, promise: Promise.resolve(undefined as unknown as PoincareBall) };
      // A build that reused the serving generation's rows hands them over (ball-seed.ts): those rows are copied from
      // its ball when the new generation is laid out with the same basis (`gen.ballBasis`, stored with the generation).
      // A live-library revision laid out with its generation's basis copies its first rows from the revision it grew from.
      const built = takeBallSeed(gen);
      const live = built ? undefined : this.liveSeed(gen);
      const seed = built ?? live?.seed;
      const prevBall = built ? this.balls.get(generationKey(built.prev))?.ball : live?.ball;
      const reuse: BallReuse | undefined = seed && prevBall ? { ball: prevBall, input: seed.prev.index, prevRowOfNew: seed.prevRowOfNew } : undefined;
      // Shares the event loop with queries (10 ms slices) while it projects every row.
      entry.promise = buildPoincareBall(ballInputOf(gen.index), new CooperativeScheduler(10), BALL_DIM, BALL_COMPACT_MIN_ROWS, gen.ballBasis, reuse).then(
        (b) => {
          entry.ball = b;
          entry.buildMs = Math.round(performance.now() - started);
          entry.reused = b.reused;
          if ((gen.revision ?? 0) === 0) noteBallBasis(gen.index, b.basis);
          this.logger.info('hyperbolic ball built', { generation: gen.generation, songs: b.size, dim: b.dim, reused: b.reused, ms: entry.buildMs });
          return b;
        },
        (err: unknown) => {
          entry.error = (err as Error).message;
          throw err;
        },
      );
      this.balls.set(generationKey(gen), entry);
      const newest = this.newestBall.get(gen.generation);
      if (!newest || (newest.gen.revision ?? 0) <= (gen.revision ?? 0)) this.newestBall.set(gen.generation, { gen, entry });
      e = entry;
    }
    return e.promise;
  }

  /**
   * The reuse seed of a live-library revision (issue 35): the newest earlier revision of its generation whose ball is
   * built, when both are laid out with the generation's stored basis (`gen.ballBasis`: generation reuse on) and that
   * revision's rows are `gen`'s first rows (the live library only appends; checked on up to 65 spread ids, and
   * `buildPoincareBall` compares 64 rows' vectors before it copies any): rows below its size map to themselves, the
   * appended rows are projected. Without a basis (reuse off) every revision's ball is fitted from its own rows, as before.
   */
  private liveSeed(gen: Generation): { seed: BallSeed; ball: PoincareBall } | undefined {
    if ((gen.revision ?? 0) === 0 || !gen.ballBasis) return undefined;
    const prev = this.newestBall.get(gen.generation);
    // The basis is compared by value in buildPoincareBall (`reusable`): a fresh build's ball was fitted before the basis
    // was set on the generation it serves, so the earlier revision's object may not carry it.
    if (!prev?.entry.ball || !grewFrom(gen, prev.gen)) return undefined;
    return { seed: { prev: prev.gen, prevRowOfNew: earlierRowsOf(gen, prev.gen) }, ball: prev.entry.ball };
  }

  /**
   * Songs near the seed, its roots or its niche (contracts HyperbolicSimilarBody for the modes and `radial_spread`).
   * `distance` is always the Poincaré distance from the seed. Ranking: `similar` by distance + (1 - spread) x the
   * change of hyperbolic radius 2 artanh(r); `roots` (songs with a smaller radius than the seed) and `niche` (a larger
   * one) by the distance to the target point on the seed's ray at the target radius. Ties by canonical id. The seed
   * is never a result. O(available songs x ball dim).
   * @throws NotFoundError (404) for a seed unknown or not on the selected server
   */
  async similar(scope: RequestScope, body: HyperbolicSimilarBody): Promise<HyperbolicSimilarResponse> {
    const mode = body.mode ?? 'similar';
    const limit = body.limit ?? HYPERBOLIC_DEFAULT_LIMIT;
    const spread = body.radial_spread ?? HYPERBOLIC_DEFAULT_SPREAD;
    const seed = this.seedRow(scope, body.item_id);
    const ball = await this.ball(scope.gen);
    const rs = ballRadius(ball, seed);
    const seedPoint = ballPoint(ball, seed);
    const s2 = ballNorm2(ball, seed);
    // Target point on the seed's ray (the ray through the origin is a geodesic).
    let target = Float32Array.from(seedPoint);
    if (mode !== 'similar') {
      const rim = Math.max(BALL_RIM_RADIUS, ball.maxRadius);
      const rt = mode === 'roots' ? rs * (1 - spread) : rs + spread * (rim - rs);
      target = rs > 1e-9 ? target.map((v) => (v / rs) * rt) : target.map((_, i) => (i === 0 ? rt : 0));
    }
    let t2 = 0;
    for (const v of target) t2 += v * v;
    const rhoS = radiusToDistance(rs);
    const mask = scope.maskNow();
    const best = new TopScored(limit + 8, (row) => scope.idOf(row));
    mask.forEachRow((row) => {
      if (row === seed) return;
      const r = ballRadius(ball, row);
      if (mode === 'roots' && !(r < rs)) return;
      if (mode === 'niche' && !(r > rs)) return;
      let score: number;
      if (mode === 'similar') score = ballDistanceTo(ball, seedPoint, s2, row) + (1 - spread) * Math.abs(radiusToDistance(r) - rhoS);
      else score = ballDistanceTo(ball, target, t2, row);
      best.offer(row, -score);
    });
    const results: HyperbolicSimilarResponse['results'] = [];
    for (const { row } of best.sorted()) {
      if (results.length >= limit) break;
      const song = this.song(scope, ball, row, ballDistanceTo(ball, seedPoint, s2, row));
      if (song) results.push(song);
    }
    return {
      results,
      count: results.length,
      mode,
      seed_item_id: this.reportedId(scope, seed, body.item_id),
      seed_radius: round6(rs),
      radial_spread: spread,
      seed_disc: ballDisc(ball, seed).map(round6) as [number, number],
    };
  }

  /**
   * A journey between two songs: `length` points evenly spaced in hyperbolic length along the path start -> apex -> end
   * (apex = the geodesic's midpoint m, or (1 - ancestry_dive) ⊗ m when diving: poincare.ts samplePathVia); at each
   * interior point the available song nearest to it (Poincaré distance) not used yet; the two ends are the songs
   * themselves. A point whose every song is used is skipped (the journey may be shorter). `distance` = the song's
   * distance to its path point (0 at the ends). O(length x available songs x ball dim).
   * @throws ValidationError (400) when both ends are the same song; NotFoundError (404) for an unknown end
   */
  async journey(scope: RequestScope, body: HyperbolicJourneyBody): Promise<HyperbolicJourneyResponse> {
    const length = body.length ?? HYPERBOLIC_DEFAULT_JOURNEY;
    const dive = body.ancestry_dive ?? 0;
    const a = this.seedRow(scope, body.start_item_id);
    const b = this.seedRow(scope, body.end_item_id);
    if (a === b) throw new ValidationError('start_item_id and end_item_id are the same song: a journey needs two different songs');
    const ball = await this.ball(scope.gen);
    const pointOf = (row: number) => Array.from(ballPoint(ball, row));
    const pa = pointOf(a);
    const pb = pointOf(b);
    const mid = geodesicPoint(pa, pb, 0.5);
    const via = dive > 0 ? mobiusScale(1 - dive, mid) : mid;
    const samples = samplePathVia(pa, via, pb, length);
    const drawn = samplePathVia(pa, via, pb, JOURNEY_PATH_POINTS);
    const mask = scope.maskNow();
    const used = new Set<number>([a, b]);
    const results: HyperbolicJourneyResponse['results'] = [];
    const push = (row: number, t: number, distance: number, isEnd: boolean) => {
      const song = this.song(scope, ball, row, distance);
      if (song) results.push({ ...song, step: results.length, t: round6(t), is_endpoint: isEnd });
    };
    push(a, 0, 0, true);
    for (let i = 1; i < samples.points.length - 1; i++) {
      const { t, point } = samples.points[i]!;
      let p2 = 0;
      for (const v of point) p2 += v * v;
      let bestRow = -1;
      let bestD = Infinity;
      mask.forEachRow((row) => {
        if (used.has(row) || !scope.gen.maps.providerOf(scope.serverId, row)) return;
        const d = ballDistanceTo(ball, point, p2, row);
        if (d < bestD || (d === bestD && bestRow >= 0 && scope.idOf(row) < scope.idOf(bestRow))) [bestRow, bestD] = [row, d];
      });
      if (bestRow < 0) continue;
      used.add(bestRow);
      push(bestRow, t, bestD, false);
    }
    push(b, 1, 0, true);
    let apex = { radius: Infinity, t: 0, disc: [0, 0] as [number, number] };
    if (dive > 0) {
      const l1 = poincareDistance(pa, via);
      apex = { radius: Math.hypot(...via), t: samples.length > 0 ? l1 / samples.length : 0.5, disc: discOf(via) };
    } else {
      for (const { t, point } of drawn.points) {
        const r = Math.hypot(...point);
        if (r < apex.radius) apex = { radius: r, t, disc: discOf(point) };
      }
    }
    return {
      results,
      count: results.length,
      geodesic_length: round6(samples.length),
      start_radius: round6(ballRadius(ball, a)),
      end_radius: round6(ballRadius(ball, b)),
      apex: { radius: round6(apex.radius), t: round6(apex.t), disc: apex.disc },
      path: drawn.points.map(({ t, point }) => ({ t: round6(t), radius: round6(Math.hypot(...point)), disc: discOf(point) })),
      ancestry_dive: dive,
    };
  }

  /**
   * One node of the browsable tree of the selected server's songs: `root` -> moods (the strongest of the six
   * other_features; "untagged" without) -> genres (the first MSD_GENRES tag of mood_vector; "no genre") -> clusters
   * (k-means, k = ceil(songs / TREE_CLUSTER_SIZE) up to TREE_MAX_CLUSTERS, on the songs' tangent vectors at the
   * origin log₀(p), ordered centre first by mean radius) -> songs (most generic first, at most TREE_MAX_TRACKS
   * listed). Folders are ordered by song count (moods, genres) or radius (clusters). Built once per server and
   * generation (and again when the server's availability changes).
   * @throws ValidationError (400) for an unknown or malformed node_id
   */
  async tree(scope: RequestScope, nodeId = 'root'): Promise<HyperbolicTreeResponse> {
    const ball = await this.ball(scope.gen);
    return treeNode(scope, ball, await this.treeOf(scope, ball), nodeId);
  }

  /**
   * The selected server's songs on the 2-D disc: every available song, or the `n` whose seeded id hash is smallest
   * (a stable subset per generation, as /api/map's `n`); default POINTS_DEFAULT_N. Answers are cached per server and
   * `n` (TREE_CACHE_ENTRIES of them) while the generation and the server's availability mask stay the same.
   */
  async points(scope: RequestScope, n = POINTS_DEFAULT_N): Promise<HyperbolicPointsResponse> {
    const ball = await this.ball(scope.gen);
    const mask = scope.maskNow();
    const key = `${scope.serverId ?? ''}|${n}`;
    const hit = this.pointAnswers.get(key);
    if (hit && hit.gen === scope.gen && hit.mask === mask) return hit.response;
    let rows: number[] = [];
    mask.forEachRow((row) => rows.push(row));
    const total = rows.length;
    if (rows.length > n) {
      const keyed = rows.map((row) => ({ row, h: hashString32(scope.idOf(row), POINTS_SEED) }));
      keyed.sort((x, y) => x.h - y.h || x.row - y.row);
      rows = keyed.slice(0, n).map((x) => x.row);
    }
    const items: HyperbolicPointsResponse['items'] = [];
    for (const row of rows) {
      const provider = scope.gen.maps.providerOf(scope.serverId, row);
      const m = provider ? scope.metaAt(row) : undefined;
      if (!provider || !m) continue;
      items.push({ item_id: provider, title: m.title, author: m.artist, hyperbolic_radius: round6(ballRadius(ball, row)), top_genre: topGenreOf(m.moodVector), disc: ballDisc(ball, row).map(round6) as [number, number] });
    }
    const response = { items, count: items.length, total, generation: scope.gen.generation };
    this.pointAnswers.delete(key);
    this.pointAnswers.set(key, { gen: scope.gen, mask, response });
    while (this.pointAnswers.size > TREE_CACHE_ENTRIES) this.pointAnswers.delete(this.pointAnswers.keys().next().value as string);
    return response;
  }

  /** `/external/get_embedding`'s hyperbolic fields of an input id (nulls when the song is not in the generation). */
  async embeddingFields(scope: RequestScope, inputId: string): Promise<{ poincare_embedding: number[] | null; hyperbolic_radius: number | null }> {
    const row = scope.rowOfInput(inputId);
    if (row < 0) return { poincare_embedding: null, hyperbolic_radius: null };
    const ball = await this.ball(scope.gen);
    if (row >= ball.size) return { poincare_embedding: null, hyperbolic_radius: null };
    return { poincare_embedding: Array.from(ballPoint(ball, row), round6), hyperbolic_radius: round6(ballRadius(ball, row)) };
  }

  /** Builds the live generation's ball now (when it is not built) and reports it. */
  async warmup(): Promise<HyperbolicWarmupResponse> {
    const gen = this.state.current();
    await this.ball(gen).catch(() => undefined);
    return this.warmupStatus();
  }

  /** State of the live generation's ball, without building it. */
  warmupStatus(): HyperbolicWarmupResponse {
    const gen = this.state.current();
    const e = this.balls.get(generationKey(gen));
    const status = gen.index.size === 0 ? 'empty' : !e ? 'building' : e.error !== undefined ? 'failed' : e.ball ? 'ready' : 'building';
    return { status, generation: gen.generation, songs: e?.ball?.size ?? 0, dim: e?.ball?.dim ?? 0, build_ms: e?.buildMs ?? null, error: e?.error ?? null };
  }

  /** The ball's figures for the selected server (building it when needed). */
  async cacheStatus(scope: RequestScope): Promise<HyperbolicCacheStatus> {
    const ball = await this.ball(scope.gen);
    const bytes = ballBytes(ball);
    return {
      generation: scope.gen.generation,
      ready: true,
      songs: ball.size,
      available: scope.maskNow().count,
      dim: ball.dim,
      explained_variance: round6(ball.explainedVariance),
      radius_scale: { low: round6(ball.scale.low), high: round6(ball.scale.high), rim_radius: BALL_RIM_RADIUS },
      memory_bytes: bytes,
      trees_cached: [...this.trees.values()].filter((t) => t.gen === scope.gen).length,
    };
  }

  /** Row of an input id available on the selected server. @throws NotFoundError */
  private seedRow(scope: RequestScope, inputId: string): number {
    const row = scope.rowOfInput(inputId);
    if (row < 0) throw new NotFoundError('Track not found');
    if (!scope.gen.maps.providerOf(scope.serverId, row)) throw new NotFoundError('Track not found on the selected server');
    return row;
  }

  /** The id a seed is reported under: the caller's own id when it named a content id, else the server's id. */
  private reportedId(scope: RequestScope, row: number, inputId: string): string {
    const provider = scope.gen.maps.providerOf(scope.serverId, row)!;
    return scope.idOf(row) === inputId ? inputId : provider;
  }

  /** A result row (undefined when the song is not on the server or has no metadata). */
  private song(scope: RequestScope, ball: PoincareBall, row: number, distance: number): HyperbolicSimilarResponse['results'][number] | undefined {
    const provider = scope.gen.maps.providerOf(scope.serverId, row);
    const m: TrackMeta | undefined = provider ? scope.metaAt(row) : undefined;
    if (!provider || !m) return undefined;
    return {
      item_id: provider,
      title: m.title,
      author: m.artist,
      album: m.album,
      distance: round6(distance),
      hyperbolic_radius: round6(ballRadius(ball, row)),
      top_genre: topGenreOf(m.moodVector),
      disc: ballDisc(ball, row).map(round6) as [number, number],
    };
  }

  /** The scope's server's tree (cached per server, generation and availability mask; hyperbolic-tree.ts `buildTree`). */
  private async treeOf(scope: RequestScope, ball: PoincareBall): Promise<Tree> {
    const key = scope.serverId ?? '';
    const hit = this.trees.get(key);
    if (hit && hit.gen === scope.gen && hit.mask === scope.maskNow()) return hit;
    const tree = await buildTree(scope, ball);
    this.trees.delete(key);
    this.trees.set(key, tree);
    while (this.trees.size > TREE_CACHE_ENTRIES) this.trees.delete(this.trees.keys().next().value as string);
    return tree;
  }
}

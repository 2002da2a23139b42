import { defineRoute } from './openapi';
import { z } from './zod';

/**
 * Hyperbolic exploration (issue 32; index service): every song of the live index generation placed in a
 * Poincaré ball, generic songs near the centre and niche ones near the rim (derivation: docs/architecture.md,
 * "Hyperbolic exploration"; services/index/src/hyperbolic/ball.ts). Every answer is restricted to the songs
 * available on the selected server and names them by that server's ids.
 *
 * Units: `hyperbolic_radius` is the Euclidean norm of a song's point in the unit ball, in [0, 1) (0 = the
 * centre); `distance` is the hyperbolic (Poincaré) distance, in [0, ∞); `disc` is a song's position on the 2-D
 * Poincaré disc of the UI ([x, y], same radius as the song's).
 */

const IdValue = z.preprocess((v) => (typeof v === 'number' ? String(v) : v), z.string().min(1).max(500));
const blank = (v: unknown) => (v === '' || v === null ? undefined : v);
const intIn = (min: number, max: number) => z.preprocess(blank, z.coerce.number().int().min(min).max(max).optional());
const numIn = (min: number, max: number) => z.preprocess(blank, z.coerce.number().min(min).max(max).optional());

/** Default and largest `limit` of /api/hyperbolic/similar. */
export const HYPERBOLIC_DEFAULT_LIMIT = 50;
export const HYPERBOLIC_MAX_LIMIT = 500;
/** Default `radial_spread`. */
export const HYPERBOLIC_DEFAULT_SPREAD = 0.5;
/** Default and largest `length` of /api/hyperbolic/journey. */
export const HYPERBOLIC_DEFAULT_JOURNEY = 10;
export const HYPERBOLIC_MAX_JOURNEY = 100;

export const HyperbolicMode = z.enum(['similar', 'roots', 'niche']);
export type HyperbolicMode = z.infer<typeof HyperbolicMode>;

const Disc = z.tuple([z.number(), z.number()]).openapi({ description: 'Position on the 2-D Poincaré disc [x, y] (norm = hyperbolic_radius)' });

export const HyperbolicSimilarBody = z
  .object({
    /** Seed song: the selected server's id (or a content id). */
    item_id: IdValue,
    /**
     * `similar`: the songs nearest the seed in the ball; `roots`: songs nearer the centre than the seed (more generic),
     * nearest first to a target point on the seed's ray; `niche`: songs farther out than the seed (more specific).
     */
    mode: z.preprocess(blank, HyperbolicMode.optional()),
    limit: intIn(1, HYPERBOLIC_MAX_LIMIT),
    /**
     * 0-0.99 (default 0.5). `roots`: the target radius is seed_radius * (1 - radial_spread) (0 = just inside the
     * seed, 0.99 = the centre); `niche`: seed_radius + radial_spread * (rim - seed_radius); `similar`: how freely the
     * results may change radius (score = distance + (1 - radial_spread) * |radial distance change|).
     */
    radial_spread: numIn(0, 0.99),
  })
  .passthrough()
  .openapi('HyperbolicSimilarBody');
export type HyperbolicSimilarBody = z.infer<typeof HyperbolicSimilarBody>;

export const HyperbolicSong = z.object({
  item_id: z.string(),
  title: z.string().nullable(),
  author: z.string().nullable(),
  album: z.string().nullable(),
  /** Poincaré distance from the seed (similar) or from the path (journey). */
  distance: z.number(),
  hyperbolic_radius: z.number(),
  /** The first genre (MSD_GENRES) of the song's mood_vector; null without tags or genre. */
  top_genre: z.string().nullable(),
  disc: Disc,
});

export const HyperbolicSimilarResponse = z
  .object({
    results: z.array(HyperbolicSong),
    count: z.number().int(),
    mode: HyperbolicMode,
    seed_item_id: z.string(),
    seed_radius: z.number(),
    radial_spread: z.number(),
    /** The seed's position on the disc. */
    seed_disc: Disc,
  })
  .openapi('HyperbolicSimilarResponse');
export type HyperbolicSimilarResponse = z.infer<typeof HyperbolicSimilarResponse>;

export const HyperbolicJourneyBody = z
  .object({
    start_item_id: IdValue,
    end_item_id: IdValue,
    /** Songs on the journey, both ends included (3-100, default 10). */
    length: intIn(3, HYPERBOLIC_MAX_JOURNEY),
    /**
     * 0-0.95 (default 0): how far the path dives towards the centre between the ends. 0 follows the geodesic; d > 0
     * goes through the apex (1 - d) ⊗ m (m = the geodesic's midpoint, ⊗ the Möbius scalar multiple): a detour
     * through the songs both ends descend from.
     */
    ancestry_dive: numIn(0, 0.95),
  })
  .passthrough()
  .openapi('HyperbolicJourneyBody');
export type HyperbolicJourneyBody = z.infer<typeof HyperbolicJourneyBody>;

export const HyperbolicJourneyResponse = z
  .object({
    /** The songs in path order. */
    results: z.array(
      HyperbolicSong.extend({
        step: z.number().int(),
        /** Fraction of the path's hyperbolic length where this song's sample point lies, in [0, 1]. */
        t: z.number(),
        is_endpoint: z.boolean(),
      }),
    ),
    count: z.number().int(),
    /** Hyperbolic length of the path (through the apex when ancestry_dive > 0). */
    geodesic_length: z.number(),
    start_radius: z.number(),
    end_radius: z.number(),
    /** The path's point nearest the centre (the apex of the dive; the geodesic's midpoint without one). */
    apex: z.object({ radius: z.number(), t: z.number(), disc: Disc }),
    /** The path sampled evenly in hyperbolic length (for drawing), ends included. */
    path: z.array(z.object({ t: z.number(), radius: z.number(), disc: Disc })),
    ancestry_dive: z.number(),
  })
  .openapi('HyperbolicJourneyResponse');
export type HyperbolicJourneyResponse = z.infer<typeof HyperbolicJourneyResponse>;

export const HyperbolicTreeQuery = z
  .object({
    /** `root` (default), `mood:<mood>`, `genre:<mood>:<genre>` or `cluster:<mood>:<genre>:<n>` (ids come from a parent's items). */
    node_id: z.preprocess(blank, z.string().max(300).optional()),
  })
  .passthrough();

const TreeItem = z.object({
  /** Folder: a node_id to open; track: the selected server's song id. */
  id: z.string(),
  name: z.string(),
  type: z.enum(['folder', 'track']),
  /** Songs below a folder (0 for a track). */
  children_count: z.number().int(),
  /** A track's radius; a folder's mean radius. */
  hyperbolic_radius: z.number(),
  author: z.string().nullable().optional(),
  album: z.string().nullable().optional(),
});

export const HyperbolicTreeResponse = z
  .object({
    node: z.object({
      id: z.string(),
      name: z.string(),
      type: z.enum(['folder', 'track']),
      children_count: z.number().int(),
      /** The parent's node_id (null at the root). */
      parent_id: z.string().nullable(),
      items: z.array(TreeItem),
    }),
  })
  .openapi('HyperbolicTreeResponse');
export type HyperbolicTreeResponse = z.infer<typeof HyperbolicTreeResponse>;

export const HyperbolicPointsQuery = z
  .object({
    /** Songs kept (the ones with the smallest id hash, as /api/map's `n`); default every available song up to 5000. */
    n: intIn(1, 20000),
  })
  .passthrough();

export const HyperbolicPointsResponse = z
  .object({
    items: z.array(z.object({ item_id: z.string(), title: z.string().nullable(), author: z.string().nullable(), hyperbolic_radius: z.number(), top_genre: z.string().nullable(), disc: Disc })),
    count: z.number().int(),
    /** Songs available on the server (count may be smaller: `n`). */
    total: z.number().int(),
    generation: z.number().int(),
  })
  .openapi('HyperbolicPointsResponse');
export type HyperbolicPointsResponse = z.infer<typeof HyperbolicPointsResponse>;

/** State of the live generation's ball: `ready`, `building`, `failed` (error says why) or `empty` (no song). */
export const HyperbolicWarmupResponse = z
  .object({
    status: z.enum(['ready', 'building', 'failed', 'empty']),
    generation: z.number().int(),
    songs: z.number().int(),
    dim: z.number().int(),
    /** Milliseconds the build took (null before it finished). */
    build_ms: z.number().nullable(),
    error: z.string().nullable(),
  })
  .openapi('HyperbolicWarmupStatus');
export type HyperbolicWarmupResponse = z.infer<typeof HyperbolicWarmupResponse>;

export const HyperbolicCacheStatus = z
  .object({
    generation: z.number().int(),
    ready: z.boolean(),
    songs: z.number().int(),
    /** Songs of the ball available on the selected server. */
    available: z.number().int(),
    dim: z.number().int(),
    /** Share of the embedding's variance the ball's principal axes hold, in [0, 1]. */
    explained_variance: z.number(),
    /** Distances to the catalogue centroid mapped to radius 0 and to the rim radius 0.95 (1st and 99th percentiles). */
    radius_scale: z.object({ low: z.number(), high: z.number(), rim_radius: z.number() }),
    /** Bytes the ball holds in memory. */
    memory_bytes: z.number().int(),
    /** Trees cached (one per server and generation). */
    trees_cached: z.number().int(),
  })
  .openapi('HyperbolicCacheStatus');
export type HyperbolicCacheStatus = z.infer<typeof HyperbolicCacheStatus>;

const tags = ['hyperbolic'];
export const hyperbolicRoutes = {
  similar: defineRoute({ method: 'post', path: '/api/hyperbolic/similar', summary: 'Songs near a seed in the Poincaré ball, or its roots (more generic) or niche songs (more specific)', tags, access: 'user', service: 'index', body: HyperbolicSimilarBody, response: HyperbolicSimilarResponse }),
  journey: defineRoute({ method: 'post', path: '/api/hyperbolic/journey', summary: 'Songs along the hyperbolic geodesic between two songs, optionally diving towards the centre', tags, access: 'user', service: 'index', body: HyperbolicJourneyBody, response: HyperbolicJourneyResponse }),
  tree: defineRoute({ method: 'get', path: '/api/hyperbolic/tree', summary: 'Browsable tree of the ball: root -> mood -> genre -> cluster -> songs', tags, access: 'user', service: 'index', query: HyperbolicTreeQuery, response: HyperbolicTreeResponse }),
  points: defineRoute({ method: 'get', path: '/api/hyperbolic/points', summary: 'Songs on the 2-D Poincaré disc (for the plot)', tags, access: 'user', service: 'index', query: HyperbolicPointsQuery, response: HyperbolicPointsResponse }),
  warmup: defineRoute({ method: 'post', path: '/api/hyperbolic/warmup', summary: "Builds the live generation's ball now if it is not built (it normally is, before the generation is served)", tags, access: 'user', service: 'index', body: z.object({}).passthrough(), response: HyperbolicWarmupResponse }),
  warmupStatus: defineRoute({ method: 'get', path: '/api/hyperbolic/warmup/status', summary: "State of the live generation's ball", tags, access: 'user', service: 'index', response: HyperbolicWarmupResponse }),
  cacheStatus: defineRoute({ method: 'get', path: '/api/hyperbolic/cache_status', summary: "The ball's figures and caches for the selected server", tags, access: 'user', service: 'index', response: HyperbolicCacheStatus }),
};

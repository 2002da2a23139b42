import { defineRoute } from './openapi';
import { OTHER_FEATURE_LABELS } from './learned';
import { SERVICE_DEFAULTS } from './probes';
import { z } from './zod';

/**
 * Public API of the index service: similarity, path, alchemy, artists, fingerprint, search, map,
 * sync and the external endpoints (reference-implementation.md section 3; plugin-calls.md).
 *
 * Rules every schema here follows, because existing plugins depend on them:
 * - query schemas are `.passthrough()`: unknown parameters (`count`, `mood_pct`, `ef_search`,
 *   `server`, ...) are accepted and ignored;
 * - ids are JSON strings; `distance` is always a number;
 * - list endpoints answer a bare JSON array.
 * The optional `server` parameter is resolved by the gateway; services never read it.
 */

/** Empty strings in a query mean "absent". */
const blankToUndefined = (v: unknown): unknown => (v === '' ? undefined : v);

/** Optional integer query parameter in [min, max] (decimal text). */
export function intParam(min: number, max: number) {
  return z.preprocess(blankToUndefined, z.coerce.number().int().min(min).max(max).optional());
}

/** Optional number query/body parameter in [min, max]. */
export function numberParam(min: number, max: number) {
  return z.preprocess(blankToUndefined, z.coerce.number().min(min).max(max).optional());
}

/** Optional boolean query parameter: true/false, 1/0, yes/no, on/off (any case), or a JSON boolean. */
export const boolParam = z.preprocess((v) => {
  if (v === '' || v === undefined) return undefined;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (['true', '1', 'yes', 'on'].includes(s)) return true;
    if (['false', '0', 'no', 'off'].includes(s)) return false;
  }
  return v;
}, z.boolean().optional());

/** Optional non-empty string parameter (max 1000 characters); numbers are turned into strings. */
const textParam = z.preprocess((v) => (v === '' ? undefined : typeof v === 'number' ? String(v) : v), z.string().max(1000).optional());

/** A track id as callers send it: provider id of the selected server or canonical id; numbers accepted. */
const IdValue = z.preprocess((v) => (typeof v === 'number' ? String(v) : v), z.string().min(1).max(500));

/**
 * The fields every song row of a result list starts with (plugin shape: `author` is the track artist;
 * metadata is null when the catalogue does not know it). Spread into TrackRowDto, ScoreDto and the
 * lyrics and SemGrove rows.
 */
export const SongRowFields = {
  item_id: z.string(),
  title: z.string().nullable(),
  author: z.string().nullable(),
  album: z.string().nullable(),
  album_artist: z.string().nullable(),
};

/** One track of a result list (plugin shape: `author` is the track artist). */
export const TrackRowDto = z
  .object({
    ...SongRowFields,
    /** Cosine distance `1 - cos` to the query, in [0, 2]; never null. */
    distance: z.number(),
    /** Reference `mood_vector` (`label:prob,...`, top MSD tags); null when the song has no learned features. */
    mood_vector: z.string().nullable(),
    /** Reference `other_features` (`danceable:p,aggressive:p,happy:p,party:p,relaxed:p,sad:p`); null likewise. */
    other_features: z.string().nullable(),
  })
  .openapi('TrackRow');
export type TrackRowDto = z.infer<typeof TrackRowDto>;

/** A search hit (no distance). */
export const SearchRowDto = z
  .object({ item_id: z.string(), title: z.string().nullable(), author: z.string().nullable(), album: z.string().nullable(), album_artist: z.string().nullable() })
  .openapi('SearchRow');
export type SearchRowDto = z.infer<typeof SearchRowDto>;

export const SimilarTracksQuery = z
  .object({
    item_id: textParam,
    title: textParam,
    artist: textParam,
    /** Results wanted, 1-1000 (Jellyfin asks n=199), default 10. */
    n: intParam(1, 1000),
    /** Drop songs with the same title and artist as the seed or an earlier result (default true). */
    eliminate_duplicates: boolParam,
    /** At most this many songs per artist, 0 = unlimited (default 3). */
    max_songs_per_artist: intParam(0, 1000),
    /** Accepted for compatibility; results are always ordered by distance. */
    radius_similarity: boolParam,
    /** Mood seed instead of a song (danceable, aggressive, happy, party, relaxed, sad); checked by the route (400 for another word). */
    mood: textParam,
    /** Which centroid of the mood (GET /api/mood_centroids `<mood>[].index`; 0 = the whole mood, the default). */
    centroid_index: z.preprocess(blankToUndefined, z.coerce.number({ invalid_type_error: 'centroid_index must be an integer' }).int('centroid_index must be an integer').min(0, 'centroid_index must be 0 or greater').max(1000).optional()),
    /** Saved anchor seed (id, or name) instead of a song. */
    anchor_id: textParam,
  })
  .passthrough();
export type SimilarTracksQuery = z.infer<typeof SimilarTracksQuery>;

/**
 * The moods accepted as path ends (`find_path?start_mood`): the six `other_features` labels, the same list as
 * semantic.ts MOOD_NAMES and GET /api/mood_centroids (danceable, aggressive, happy, party, relaxed, sad).
 */
export const PATH_MOODS = OTHER_FEATURE_LABELS;
const PathMood = z.preprocess(
  (v) => (v === '' ? undefined : typeof v === 'string' ? v.trim().toLowerCase() : v),
  z.enum(PATH_MOODS, { errorMap: () => ({ message: `mood must be one of ${PATH_MOODS.join(', ')}` }) }).optional(),
);

/** Each end is exactly one of a song id, a mood or an anchor id (checked by the route: 400 otherwise). */
export const FindPathQuery = z
  .object({
    start_song_id: z.preprocess(blankToUndefined, IdValue.optional()),
    end_song_id: z.preprocess(blankToUndefined, IdValue.optional()),
    start_mood: PathMood,
    end_mood: PathMood,
    start_anchor: textParam,
    end_anchor: textParam,
    /** Songs in the path including start and end, 2-200, default 25. */
    max_steps: intParam(2, 200),
  })
  .passthrough();
export type FindPathQuery = z.infer<typeof FindPathQuery>;

export const FindPathResponse = z.object({ path: z.array(TrackRowDto), total_distance: z.number() }).openapi('FindPathResponse');
export type FindPathResponse = z.infer<typeof FindPathResponse>;

/** Alchemy item kinds (reference): mood and anchor items need the semantic features (else 400). */
export const ALCHEMY_ITEM_TYPES = ['song', 'artist', 'playlist', 'mood', 'anchor'] as const;
export type AlchemyItemType = (typeof ALCHEMY_ITEM_TYPES)[number];

export const AlchemyItem = z
  .object({
    id: IdValue,
    op: z.preprocess((v) => (typeof v === 'string' ? v.toUpperCase() : v), z.enum(['ADD', 'SUBTRACT'])),
    /**
     * song (track id), artist (name or provider artist id), playlist (a playlist this service wrote on the
     * selected server: its id or name), mood (danceable, aggressive, happy, party, relaxed, sad; `<mood>:<centroid index>`
     * as the reference sends it picks one of the mood's centroids), anchor (anchor id or name).
     */
    type: z.preprocess((v) => (typeof v === 'string' ? v.toLowerCase() : v), z.enum(ALCHEMY_ITEM_TYPES).default('song')),
  })
  .passthrough();
export type AlchemyItem = z.infer<typeof AlchemyItem>;

export const AlchemyBody = z
  .object({
    items: z.array(AlchemyItem).min(1).max(1000),
    /** Results wanted, 1-500 (SERVICE_DEFAULTS.alchemyMaxN), default 100. */
    n: intParam(1, SERVICE_DEFAULTS.alchemyMaxN),
    /** Softmax temperature over -distance; 0 = deterministic top-n. Default 1. */
    temperature: numberParam(0, 100),
    /** Cosine distance around each SUBTRACT song inside which results are dropped, default 0.2. */
    subtract_distance: numberParam(0, 2),
    /** Seed of the temperature sampling (default: random). */
    seed: intParam(0, 2 ** 32 - 1),
  })
  .passthrough();
export type AlchemyBody = z.infer<typeof AlchemyBody>;

export const AlchemyPointDto = z.object({
  item_id: z.string(),
  type: z.enum(ALCHEMY_ITEM_TYPES),
  title: z.string().nullable(),
  author: z.string().nullable(),
  embedding_2d: z.tuple([z.number(), z.number()]),
});
export const AlchemyResponse = z
  .object({
    results: z.array(TrackRowDto.extend({ embedding_2d: z.tuple([z.number(), z.number()]).optional() })),
    /** Candidates dropped for being within `subtract_distance` of a SUBTRACT item (at most 100 listed). */
    filtered_out: z.array(TrackRowDto),
    add_points: z.array(AlchemyPointDto),
    sub_points: z.array(AlchemyPointDto),
    centroid_2d: z.tuple([z.number(), z.number()]).nullable(),
    /** Ids that matched nothing in the index (ignored). */
    unresolved: z.array(z.string()),
    /** Unit vector of the ADD centroid (reference field; POST /api/anchors accepts it as `centroid`). */
    add_centroid_vector: z.array(z.number()).optional(),
    /** The SUBTRACT regions applied (unit vector, cosine radius; at most 500 listed), as POST /api/anchors takes them. */
    exclusions: z.array(z.object({ vector: z.array(z.number()), distance: z.number() })).optional(),
  })
  .openapi('AlchemyResponse');
export type AlchemyResponse = z.infer<typeof AlchemyResponse>;

export const SimilarArtistsQuery = z
  .object({
    /** Artist name, or a provider artist id of the selected server (the Navidrome plugin sends its id here). */
    artist: textParam,
    /** Provider artist id of the selected server. */
    artist_id: textParam,
    n: intParam(1, 200),
    include_component_matches: boolParam,
  })
  .passthrough();
export type SimilarArtistsQuery = z.infer<typeof SimilarArtistsQuery>;

const RepresentativeSong = z.object({ item_id: z.string(), title: z.string().nullable() });
export const ComponentMatchDto = z.object({
  artist1_representative_songs: z.array(RepresentativeSong),
  artist2_representative_songs: z.array(RepresentativeSong),
  /** Bhattacharyya distance between the two matched mixture components. */
  distance: z.number(),
});
export const SimilarArtistDto = z
  .object({
    artist: z.string(),
    /** Provider artist id on the selected server; null when the server gave none. */
    artist_id: z.string().nullable(),
    divergence: z.number(),
    component_matches: z.array(ComponentMatchDto).optional(),
  })
  .openapi('SimilarArtist');
export type SimilarArtistDto = z.infer<typeof SimilarArtistDto>;

export const FingerprintParams = z
  .object({
    /** Results wanted including the seeds, 1-1000, default 100. */
    n: intParam(1, 1000),
    jellyfin_user_identifier: textParam,
    jellyfin_token: textParam,
    navidrome_user: textParam,
    navidrome_password: textParam,
  })
  .passthrough();
export type FingerprintParams = z.infer<typeof FingerprintParams>;

/** Index names `search_tracks?index=` accepts. */
export const SEARCH_INDEXES = ['musicnn', 'clap', 'sem_grove', 'lyrics', 'neural'] as const;
export type SearchIndex = (typeof SEARCH_INDEXES)[number];

export const SearchTracksQuery = z
  .object({
    search_query: textParam,
    /** Legacy parameters (Jellyfin, Lyrion); combined into one query. */
    title: textParam,
    artist: textParam,
    album: textParam,
    /** 0-based first result (default 0). */
    start: intParam(0, 1_000_000),
    /** Exclusive end: `end - start` results, at most 500; `end < start` is a 400, `end = start` an empty page. */
    end: intParam(0, 1_000_000),
    /** Page size when `end` is absent, 1-500, default 20. */
    limit: intParam(1, 500),
    /**
     * Only songs the named index holds (empty when it is not built): `musicnn`/`clap` = songs with learned
     * tags, `sem_grove`/`lyrics` = songs with lyrics, `neural` = songs with a recording fingerprint (the
     * reference's name for its recording-search index; search by recording, recording.ts).
     */
    index: z.preprocess(blankToUndefined, z.enum(SEARCH_INDEXES, { errorMap: () => ({ message: `index must be one of ${SEARCH_INDEXES.join(', ')}` }) }).optional()),
  })
  .passthrough();
export type SearchTracksQuery = z.infer<typeof SearchTracksQuery>;

export const MapQuery = z
  .object({
    percent: z.preprocess(blankToUndefined, z.coerce.number().refine((p) => [25, 50, 75, 100].includes(p), 'percent must be 25, 50, 75 or 100').optional()),
    n: intParam(1, 10_000_000),
  })
  .passthrough();
export type MapQuery = z.infer<typeof MapQuery>;

export const MapResponse = z
  .object({
    items: z.array(
      z.object({
        item_id: z.string(),
        title: z.string().nullable(),
        author: z.string().nullable(),
        embedding_2d: z.tuple([z.number(), z.number()]),
        mood_vector: z.string().nullable(),
        other_features: z.string().nullable(),
        /** Tempo in BPM and energy as stored by the analysis (for colouring the map); null when unknown. */
        tempo: z.number().nullable().optional(),
        energy: z.number().nullable().optional(),
      }),
    ),
    /** Layout of `embedding_2d`: 'umap' (umap-js, n_neighbors 15, 100 epochs, computed once per index generation) or 'pca' below the documented minimum song count (services/index UMAP_MIN_SAMPLES). */
    projection: z.enum(['umap', 'pca']),
  })
  .openapi('MapResponse');
export type MapResponse = z.infer<typeof MapResponse>;

export const SyncQuery = z
  .object({
    /** Comma-separated ids of the selected server (at most 500). */
    ids: z.preprocess(blankToUndefined, z.string().max(100_000).optional()),
    after: textParam,
    next_page: textParam,
    /** 1-based page number (reference paging); pages are `limit` rows of the server's tracks in a stable order. Not with next_page/after. */
    page: intParam(1, 100_000_000),
    /** Page size: at most 500 (1000 with fields=index), default 500. */
    limit: intParam(1, 1000),
    fields: textParam,
    include_embeddings: boolParam,
  })
  .passthrough();
export type SyncQuery = z.infer<typeof SyncQuery>;

export const SyncTrackDto = z
  .object({
    id: z.string(),
    fp: z.string(),
    title: z.string().optional(),
    artist: z.string().optional(),
    album: z.string().nullable().optional(),
    album_artist: z.string().nullable().optional(),
    year: z.number().nullable().optional(),
    rating: z.number().nullable().optional(),
    duration: z.number().nullable().optional(),
    tempo: z.number().nullable().optional(),
    key: z.string().nullable().optional(),
    scale: z.string().nullable().optional(),
    energy: z.number().nullable().optional(),
    /** Reference format `label:prob,...`; null when the song has no learned features. */
    mood_vector: z.string().nullable().optional(),
    other_features: z.string().nullable().optional(),
    umap_x: z.number().nullable().optional(),
    umap_y: z.number().nullable().optional(),
    /** base64 of little-endian float32[200]. */
    embedding: z.string().optional(),
  })
  .openapi('SyncTrack');
export const SyncResponse = z
  .object({
    tracks: z.array(SyncTrackDto),
    total_tracks: z.number().int(),
    provider_type: z.string().nullable(),
    has_more: z.boolean(),
    /** Opaque cursor of the next page (pass it back as `next_page`); null on the last page. Also given in page mode. */
    next_page: z.string().nullable(),
    /** Page mode only: the page answered and the number of pages at this page size. */
    page: z.number().int().optional(),
    total_pages: z.number().int().optional(),
  })
  .openapi('SyncResponse');
export type SyncResponse = z.infer<typeof SyncResponse>;

export const ExternalIdQuery = z.object({ id: IdValue }).passthrough();
export const ItemIdQuery = z.object({ item_id: IdValue }).passthrough();

export const ScoreDto = z
  .object({
    ...SongRowFields,
    year: z.number().nullable(),
    rating: z.number().nullable(),
    duration: z.number().nullable(),
    tempo: z.number().nullable(),
    key: z.string().nullable(),
    scale: z.string().nullable(),
    energy: z.number().nullable(),
    /** Reference `mood_vector` (`label:prob,...`); null when the song has no learned features. */
    mood_vector: z.string().nullable(),
    /** Reference `other_features`; null when the song has no learned features. */
    other_features: z.string().nullable(),
  })
  .openapi('Score');
export type ScoreDto = z.infer<typeof ScoreDto>;

/** GET /api/track: the score row (the reference's `get_score` shape) plus the song's learned tags. */
export const TrackDto = ScoreDto.extend({
    /**
     * Every learned tag of the song with its probability in [0, 1] (3 decimals; stored as a byte, so steps of 1/255):
     * the 50 MSD labels, and the 50 MTT labels when the song was analysed with the MTT model (MUSICNN_MTT), keyed by
     * the models' labels (e.g. `{"piano": 0.41, "Mellow": 0.12}`); a label both models carry ("rock", "electronic",
     * "pop", "dance", "country", "metal", "ambient", "guitar") holds the higher of the two. Null without learned tags.
     */
    tags: z.record(z.number()).nullable(),
}).openapi('Track');
export type TrackDto = z.infer<typeof TrackDto>;

export const EmbeddingDto = z
  .object({
    item_id: z.string(),
    embedding: z.array(z.number()),
    /** The song's point in the generation's Poincaré ball (16 values, norm < 1; /api/hyperbolic/*); null when the ball is not built. */
    poincare_embedding: z.array(z.number()).nullable(),
    /** Its Euclidean norm in [0, 1): 0 = the most generic songs (centre), towards 1 = niche; null likewise. */
    hyperbolic_radius: z.number().nullable(),
  })
  .openapi('Embedding');
export const MaxDistanceDto = z.object({ max_distance: z.number(), farthest_item_id: z.string().nullable() }).openapi('MaxDistance');

export const IndexRebuildAccepted = z.object({ task_id: z.string(), task_type: z.literal('index_build'), status: z.string(), coalesced: z.boolean() }).openapi('IndexRebuildAccepted');
export const IndexStatusDto = z
  .object({
    generation: z.number().int(),
    items: z.number().int(),
    nlist: z.number().int(),
    dim: z.number().int(),
    built_at: z.string().nullable(),
    building: z.boolean(),
    task_id: z.string().nullable(),
    /** The last build's failure (e.g. the heap limit reached), null when it succeeded or none ran; the previous generation stays live. */
    last_build_error: z.string().nullable().optional(),
  })
  .openapi('IndexStatus');

const tags = ['similarity'];
export const featureRoutes = {
  similarTracks: defineRoute({ method: 'get', path: '/api/similar_tracks', summary: 'Songs nearest to a seed (by id, or title + artist), available on the selected server', tags, access: 'user', service: 'index', query: SimilarTracksQuery, response: z.array(TrackRowDto) }),
  findPath: defineRoute({ method: 'get', path: '/api/find_path', summary: 'A path of songs between two songs through the embedding space', tags, access: 'user', service: 'index', query: FindPathQuery, response: FindPathResponse }),
  alchemy: defineRoute({ method: 'post', path: '/api/alchemy', summary: 'Songs near the centroid of ADD items and away from SUBTRACT items', tags, access: 'user', service: 'index', bodyLimit: 262144, body: AlchemyBody, response: AlchemyResponse }),
  similarArtists: defineRoute({ method: 'get', path: '/api/similar_artists', summary: 'Artists ranked by the divergence between their song-embedding mixtures', tags, access: 'user', service: 'index', query: SimilarArtistsQuery, response: z.array(SimilarArtistDto) }),
  fingerprintGet: defineRoute({ method: 'get', path: '/api/sonic_fingerprint/generate', summary: "Songs near the recency-weighted centroid of the selected server's listening history, seeds first", tags, access: 'user', service: 'index', query: FingerprintParams, response: z.array(TrackRowDto) }),
  fingerprintPost: defineRoute({ method: 'post', path: '/api/sonic_fingerprint/generate', summary: 'Same as the GET form, parameters in the JSON body', tags, access: 'user', service: 'index', body: FingerprintParams, response: z.array(TrackRowDto) }),
  searchTracks: defineRoute({ method: 'get', path: '/api/search_tracks', summary: 'Accent- and case-insensitive track search (title 3, artist 2, album 1)', tags: ['search'], access: 'user', service: 'index', query: SearchTracksQuery, response: z.array(SearchRowDto) }),
  externalSearch: defineRoute({ method: 'get', path: '/external/search', summary: 'Same as /api/search_tracks', tags: ['external'], access: 'user', service: 'index', query: SearchTracksQuery, response: z.array(SearchRowDto) }),
  map: defineRoute({ method: 'get', path: '/api/map', summary: '2-D PCA projection of the catalogue, filtered to the selected server', tags, access: 'user', service: 'index', query: MapQuery, response: MapResponse }),
  sync: defineRoute({ method: 'get', path: '/api/sync', summary: "Tracks of the selected server under its own ids, paged", tags: ['external'], access: 'user', service: 'index', query: SyncQuery, response: SyncResponse }),
  getScore: defineRoute({ method: 'get', path: '/external/get_score', summary: "Analysis row of a track, by the selected server's id", tags: ['external'], access: 'user', service: 'index', query: ExternalIdQuery, response: ScoreDto }),
  getEmbedding: defineRoute({ method: 'get', path: '/external/get_embedding', summary: "Raw embedding of a track, by the selected server's id", tags: ['external'], access: 'user', service: 'index', query: ExternalIdQuery, response: EmbeddingDto }),
  track: defineRoute({ method: 'get', path: '/api/track', summary: 'One track, with every learned tag and its probability', tags, access: 'user', service: 'index', query: ItemIdQuery, response: TrackDto }),
  maxDistance: defineRoute({ method: 'get', path: '/api/max_distance', summary: 'Distance to the farthest song available on the selected server', tags, access: 'user', service: 'index', query: ItemIdQuery, response: MaxDistanceDto }),
  rebuild: defineRoute({ method: 'post', path: '/api/index/rebuild', summary: 'Rebuild the shared index (202; requests during a build are coalesced)', tags: ['tasks'], access: 'admin', service: 'index', body: z.object({}).passthrough(), response: IndexRebuildAccepted, status: 202 }),
  status: defineRoute({ method: 'get', path: '/api/index/status', summary: 'Live index generation and build state', tags: ['tasks'], access: 'user', service: 'index', response: IndexStatusDto }),
};

/** Autocomplete paging shared by the artist and playlist searches (reference `start`/`end`, default 20 rows). */
export const AutocompleteQuery = z
  .object({
    /** Part of the name (folded: case, accents and punctuation are ignored); empty = no results. */
    query: textParam,
    /** Alias of `query`. */
    search_query: textParam,
    start: intParam(0, 1_000_000),
    /** Exclusive end: at most 500 rows per page; `end < start` is a 400. */
    end: intParam(0, 1_000_000),
  })
  .passthrough();
export type AutocompleteQuery = z.infer<typeof AutocompleteQuery>;

export const SearchArtistDto = z
  .object({
    artist: z.string(),
    /** Provider artist id on the selected server; null when the server gave none. */
    artist_id: z.string().nullable(),
    /** Songs of the artist available on the selected server. */
    track_count: z.number().int(),
  })
  .openapi('SearchArtist');

export const SearchPlaylistDto = z
  .object({ id: z.string(), name: z.string(), count: z.number().int().nullable() })
  .openapi('SearchPlaylist');

export const ArtistTracksQuery = z.object({ artist: textParam, artist_id: textParam }).passthrough();
export const ArtistTrackDto = z.object({ item_id: z.string(), title: z.string().nullable(), author: z.string().nullable() }).openapi('ArtistTrack');

export const ArtistProjectionsResponse = z
  .object({
    components: z.array(
      z.object({
        /** Provider artist id on the selected server, else the artist name (accepted by similar_artists). */
        artist_id: z.string(),
        artist_name: z.string(),
        component_idx: z.number().int(),
        weight: z.number(),
        /** The component mean in the map's 2-D PCA frame. */
        projection: z.tuple([z.number(), z.number()]),
      }),
    ),
    count: z.number().int(),
  })
  .openapi('ArtistProjections');
export const ArtistProjectionBuilt = z.object({ status: z.literal('success'), message: z.string(), count: z.number().int() }).openapi('ArtistProjectionBuilt');

export const MapCacheStatusDto = z
  .object({
    ok: z.boolean(),
    /** Present when ok is false: why nothing is cached. */
    reason: z.string().optional(),
    /** Cached map answers of the selected server, keyed by percent ('25', '50', '75', '100'). */
    buckets: z.record(z.object({ count: z.number().int(), json_bytes: z.number().int(), projection: z.string() })),
  })
  .openapi('MapCacheStatus');
export const MapCacheRebuilt = z.object({ ok: z.literal(true), message: z.string(), buckets: MapCacheStatusDto.shape.buckets }).openapi('MapCacheRebuilt');

const artistTags = ['artists'];
export const parityRoutes = {
  searchArtists: defineRoute({ method: 'get', path: '/api/search_artists', summary: 'Artists with songs on the selected server whose folded name contains the query, most songs first', tags: artistTags, access: 'user', service: 'index', query: AutocompleteQuery, response: z.array(SearchArtistDto) }),
  searchPlaylists: defineRoute({ method: 'get', path: '/api/search_playlists', summary: "The selected server's playlists whose name contains the query, by name", tags: ['playlists'], access: 'user', service: 'index', query: AutocompleteQuery, response: z.array(SearchPlaylistDto) }),
  artistTracks: defineRoute({ method: 'get', path: '/api/artist_tracks', summary: "Songs of an artist (name or provider artist id) available on the selected server", tags: artistTags, access: 'user', service: 'index', query: ArtistTracksQuery, response: z.array(ArtistTrackDto) }),
  artistProjections: defineRoute({ method: 'get', path: '/api/artist_projections', summary: "2-D projections of the artists' mixture components (artists with songs on the selected server)", tags: artistTags, access: 'user', service: 'index', response: ArtistProjectionsResponse }),
  buildArtistProjection: defineRoute({ method: 'post', path: '/api/build_artist_projection', summary: 'Recompute the artist component projections of the live index generation', tags: artistTags, access: 'admin', service: 'index', body: z.object({}).passthrough(), response: ArtistProjectionBuilt }),
  mapCacheStatus: defineRoute({ method: 'get', path: '/api/map_cache_status', summary: "Map answers cached for the selected server", tags, access: 'user', service: 'index', response: MapCacheStatusDto }),
  rebuildMapCache: defineRoute({ method: 'post', path: '/api/rebuild_map_cache', summary: 'Recompute the 25/50/75/100 % map answers of the selected server', tags, access: 'admin', service: 'index', body: z.object({}).passthrough(), response: MapCacheRebuilt }),
};

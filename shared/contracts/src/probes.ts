import { MSD_TAGS, TOP_N_MOODS } from './learned';
import { defineRoute, ServerParam } from './openapi';
import { z } from './zod';

/**
 * Probe and configuration endpoints that API clients (mobile and desktop players, radio programmers,
 * the beets plugin, ...) call before they show a feature (reference-implementation.md section 3;
 * issue "Every call the reference's API clients make"). Each answers 200 in the reference's shape also
 * when the feature is not ready (`loaded: false`, `song_count: 0`), never 404.
 */

/** Version of the product reported by `GET /api/version` and the OpenAPI document. */
export const APP_VERSION = '0.1.0';

/**
 * The labels the reference lists as `mood_labels` (reference `config.MOOD_LABELS`): the 50 MSD tags of
 * the learned-feature contract, in model output order.
 */
export const MOOD_LABELS: readonly string[] = MSD_TAGS;

/**
 * Defaults this service actually applies, in one place so `/api/config` reports the values the
 * routes use (the index and playlist services import them). Sources: reference-implementation.md 2.7
 * unless noted.
 */
export const SERVICE_DEFAULTS = {
  /** MSD tags kept in `mood_vector` (reference TOP_N_MOODS). */
  topNMoods: TOP_N_MOODS,
  /** Most recently added albums per server an analysis run looks at; 0 = all (reference NUM_RECENT_ALBUMS). */
  numRecentAlbums: 0,
  /** Similar songs: at most this many per artist (reference MAX_SONGS_PER_ARTIST). */
  maxSongsPerArtist: 3,
  /** Alchemy results when `n` is absent (reference ALCHEMY_DEFAULT_N_RESULTS). */
  alchemyDefaultN: 100,
  /** Largest alchemy `n` this service accepts (the reference caps at 200; 500 here, see AlchemyBody). */
  alchemyMaxN: 500,
  /** Alchemy softmax temperature (reference ALCHEMY_TEMPERATURE). */
  alchemyTemperature: 1.0,
  /** Cosine distance around a SUBTRACT item inside which candidates drop (reference ALCHEMY_SUBTRACT_DISTANCE_ANGULAR). */
  alchemySubtractDistanceAngular: 0.2,
  /** Reference ALCHEMY_SUBTRACT_DISTANCE_EUCLIDEAN; reported for clients, this service measures cosine distance only. */
  alchemySubtractDistanceEuclid: 5.0,
  /** Path distance metric (reference PATH_DISTANCE_METRIC "angular"; this service uses cosine distance 1 - cos). */
  pathDistanceMetric: 'angular',
  /** Path length when `max_steps` is absent (reference PATH_DEFAULT_LENGTH). */
  pathDefaultLength: 25,
  /** Clustering: algorithm of this service's runs (k-means). */
  clusterAlgorithm: 'kmeans',
  /** Automatic k bounds of this service's clustering (playlist service clustering-params.ts). */
  numClustersMin: 2,
  numClustersMax: 100,
  /** Songs per clustered playlist at most (reference auto-calibration target 200). */
  maxSongsPerClusterPlaylist: 200,
  /** Clustering playlists kept per server (reference TOP_N_CLUSTERING_PLAYLIST 10); 0 here = all kept unless asked. */
  topNClusteringPlaylist: 0,
  /** Reference ENABLE_CLUSTERING_EMBEDDINGS: this service always clusters on embeddings. */
  enableClusteringEmbeddings: true,
} as const;

/**
 * Public fields of `GET /api/config`, answered to every authenticated caller (reference field names).
 * Never carries a media-server URL, user or secret; admins (session cookie) additionally get the
 * general config store (see the registry's ConfigService).
 */
export const PublicConfigDto = z
  .object({
    ai_model_provider: z.string(),
    ollama_model_name: z.string(),
    openai_model_name: z.string(),
    gemini_model_name: z.string(),
    mistral_model_name: z.string(),
    mood_labels: z.array(z.string()),
    top_n_moods: z.number().int(),
    max_songs_per_artist: z.number().int(),
    cluster_algorithm: z.string(),
    num_clusters_min: z.number().int(),
    num_clusters_max: z.number().int(),
    max_songs_per_cluster: z.number().int(),
    top_n_clustering_playlist: z.number().int(),
    enable_clustering_embeddings: z.boolean(),
    path_distance_metric: z.string(),
    path_default_length: z.number().int(),
    alchemy_default_n_results: z.number().int(),
    alchemy_max_n_results: z.number().int(),
    alchemy_temperature: z.number(),
    alchemy_subtract_distance_angular: z.number(),
    alchemy_subtract_distance_euclid: z.number(),
    app_version: z.string(),
    /**
     * The learned (MusiCNN) model as the analysis worker reports it (GET /api/analysis/model): status
     * ready | missing | error | loading | unknown (worker unreachable), model id, and when missing the
     * reason and how to install the files.
     */
    learned_model: z.object({ status: z.string(), model: z.string().nullish(), reason: z.string().nullish(), howToInstall: z.string().optional() }).passthrough().optional(),
  })
  .passthrough()
  .openapi('PublicConfig');
export type PublicConfigDto = z.infer<typeof PublicConfigDto>;

/**
 * `GET /api/config/defaults`: the selected server's kind and default user, for every authenticated caller (a
 * player pre-fills its sonic-fingerprint account with it). Never a secret: no password, token or API key.
 */
export const ConfigDefaultsDto = z
  .object({
    server_type: z.string().nullable(),
    /** Jellyfin/Emby user id of the stored credentials; null for other kinds. */
    default_user_id: z.string().nullable(),
    /** Subsonic (navidrome) or Lyrion user name of the stored credentials; null for other kinds and for a Subsonic server reached by API key. */
    default_user: z.string().nullable(),
  })
  .openapi('ConfigDefaults');

/** `GET /chat/api/config_defaults`: the configured AI provider and default model names (never keys or URLs). */
export const ChatConfigDefaultsDto = z
  .object({
    default_ai_provider: z.string(),
    default_ollama_model_name: z.string(),
    default_openai_model_name: z.string(),
    default_gemini_model_name: z.string(),
    default_mistral_model_name: z.string(),
  })
  .openapi('ChatConfigDefaults');

export const VersionDto = z.object({ app_version: z.string() }).openapi('Version');

/** Text search probe (`GET /api/clap/stats`). */
export const ClapStatsDto = z
  .object({ clap_enabled: z.boolean(), loaded: z.boolean(), song_count: z.number().int(), embedding_dimension: z.number().int() })
  .openapi('ClapStats');
/** Lyrics search probe (`GET /api/lyrics/stats`). */
export const LyricsStatsDto = z
  .object({ lyrics_enabled: z.boolean(), loaded: z.boolean(), song_count: z.number().int(), embedding_dimension: z.number().int() })
  .openapi('LyricsStats');
/** SemGrove probe (`GET /api/sem_grove/stats`). */
export const SemGroveStatsDto = z
  .object({ loaded: z.boolean(), song_count: z.number().int(), audio_dim: z.number().int(), lyrics_dim: z.number().int(), w_audio: z.number(), w_lyrics: z.number() })
  .openapi('SemGroveStats');

const Coverage = z.object({ count: z.number().int(), total: z.number().int(), percentage: z.number() });
/** One learned model's coverage: over the whole catalogue and over the selected server's songs. */
export const ModelCoverageDto = z.object({ enabled: z.boolean(), global: Coverage, local: Coverage.optional() });
/** `GET /api/models`: coverage per learned model, keyed by model name. */
export const ModelsDto = z.record(ModelCoverageDto).openapi('Models');
export type ModelsDto = z.infer<typeof ModelsDto>;

const ServerQuery = z.object({ server: ServerParam }).passthrough();
const tags = ['probes'];
export const probeRoutes = {
  config: defineRoute({ method: 'get', path: '/api/config', summary: 'Public configuration (reference field names); session admins also get the general config store', tags, access: 'user', service: 'registry', firstRun: true, query: ServerQuery, response: PublicConfigDto }),
  configDefaults: defineRoute({ method: 'get', path: '/api/config/defaults', summary: "The selected server's kind and default user", tags, access: 'user', service: 'registry', firstRun: true, query: ServerQuery, response: ConfigDefaultsDto }),
  chatConfigDefaults: defineRoute({ method: 'get', path: '/chat/api/config_defaults', summary: 'Configured AI provider and default model names', tags, access: 'user', service: 'registry', response: ChatConfigDefaultsDto }),
  version: defineRoute({ method: 'get', path: '/api/version', summary: 'Product version', tags, access: 'user', service: 'registry', response: VersionDto }),
  clapStats: defineRoute({ method: 'get', path: '/api/clap/stats', summary: 'Text search readiness: songs it can rank', tags, access: 'user', service: 'catalogue', response: ClapStatsDto }),
  lyricsStats: defineRoute({ method: 'get', path: '/api/lyrics/stats', summary: 'Lyrics search readiness: songs with lyrics', tags, access: 'user', service: 'catalogue', response: LyricsStatsDto }),
  semGroveStats: defineRoute({ method: 'get', path: '/api/sem_grove/stats', summary: 'SemGrove readiness: songs with lyrics and audio', tags, access: 'user', service: 'catalogue', response: SemGroveStatsDto }),
  models: defineRoute({ method: 'get', path: '/api/models', summary: 'Coverage of each learned model over the catalogue and the selected server', tags, access: 'user', service: 'catalogue', query: ServerQuery, response: ModelsDto }),
};

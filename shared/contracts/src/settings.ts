import { defineRoute } from './openapi';
import { MSD_TAGS } from './learned';
import { SERVICE_DEFAULTS } from './probes';
import { z } from './zod';

/**
 * The settings an admin edits without a shell (`GET|PUT /api/config`). The registry's config store
 * (`registry.app_config`) is the one editing surface; a setting owned by another service is also
 * sent to it on the bus (`SettingsChangedEvent`) and written into that service's own settings
 * table, which it reads with a short cache, so the change takes effect without a restart unless
 * `live` is false (the answer then lists the key under `restart_required`).
 *
 * To add a setting: add an entry here (the schema validates PUT bodies and the stored value alike)
 * and read it in the owning service.
 */
export interface SettingSpec {
  key: string;
  /** Service that applies it. */
  owner: 'registry' | 'catalogue' | 'analysis' | 'index' | 'playlist';
  /** Validates a submitted value; stored as its string form. */
  schema: z.ZodTypeAny;
  /** Default in effect when neither the environment (first start) nor an admin set it; null = unset. */
  default: string | number | boolean | null;
  /** Write-only: answered masked, never logged. */
  secret?: boolean;
  /** Takes effect without a restart. */
  live: boolean;
  description: string;
}

const bool = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);
const num = (min: number, max: number) => z.coerce.number().finite().min(min).max(max);
const text = (max = 500) => z.string().trim().max(max);
/** Size of the MSD vocabulary: the largest TOP_N_MOODS. */
const MSD_TAG_COUNT = MSD_TAGS.length;
const url = z.union([z.literal(''), z.string().trim().url().max(2000)]);

export const SETTINGS: readonly SettingSpec[] = [
  // Content identity (catalogue; defaults and their calibration in docs/architecture.md).
  { key: 'DUPLICATE_DISTANCE_THRESHOLD_COSINE', owner: 'catalogue', schema: num(0, 1), default: 0.04, live: true, description: 'Largest cosine distance between two files of one song (identity gate)' },
  { key: 'DURATION_TOLERANCE_SECONDS', owner: 'catalogue', schema: num(0, 60), default: 1, live: true, description: 'Largest duration difference between two files of one song, seconds' },
  { key: 'CHROMAPRINT_GATE_ENABLED', owner: 'catalogue', schema: bool, default: true, live: true, description: 'Require Chromaprint agreement (>= 0.95) before merging two files' },
  { key: 'CATALOGUE_ID_SCHEME_VERSION', owner: 'catalogue', schema: z.coerce.number().int().min(2).max(4), default: 4, live: false, description: 'Canonical id scheme; a newer version relabels the catalogue at the next start' },
  // Cleaning (catalogue).
  { key: 'CLEANING_CATALOGUE', owner: 'catalogue', schema: bool, default: false, live: true, description: 'Let cleaning delete orphan songs (only when every server was read and orphans are fewer than half)' },
  // CLEANING_SCHEDULE_HOURS (the catalogue's own cleaning timer) is retired: its value became the built-in
  // "Cleaning" schedule of /api/cron, once per install (services/registry/src/domain/default-schedules.ts).
  // Analysis (analysis worker): applied to every run that does not override them in POST /api/analysis/start.
  { key: 'TOP_N_MOODS', owner: 'analysis', schema: z.coerce.number().int().min(1).max(MSD_TAG_COUNT), default: SERVICE_DEFAULTS.topNMoods, live: true, description: 'MSD tags kept in a song\'s mood_vector when it is analyzed (reference TOP_N_MOODS; songs analyzed before keep theirs)' },
  { key: 'NUM_RECENT_ALBUMS', owner: 'analysis', schema: z.coerce.number().int().min(0).max(1_000_000), default: SERVICE_DEFAULTS.numRecentAlbums, live: true, description: 'Analysis looks only at the N most recently added albums of each server (0 = the whole catalogue; reference NUM_RECENT_ALBUMS)' },
  // Similarity defaults (index): what a request gets when it leaves the parameter out. Sources: reference-implementation.md 2.7.
  { key: 'MAX_SONGS_PER_ARTIST', owner: 'index', schema: z.coerce.number().int().min(0).max(100), default: SERVICE_DEFAULTS.maxSongsPerArtist, live: true, description: 'Similar songs: at most this many songs per artist when the request does not say (0 = no limit)' },
  { key: 'PATH_DEFAULT_LENGTH', owner: 'index', schema: z.coerce.number().int().min(2).max(200), default: SERVICE_DEFAULTS.pathDefaultLength, live: true, description: 'Song path: number of songs when max_steps is absent' },
  { key: 'ALCHEMY_DEFAULT_N_RESULTS', owner: 'index', schema: z.coerce.number().int().min(1).max(SERVICE_DEFAULTS.alchemyMaxN), default: SERVICE_DEFAULTS.alchemyDefaultN, live: true, description: 'Song alchemy: results when n is absent' },
  { key: 'ALCHEMY_TEMPERATURE', owner: 'index', schema: num(0, 10), default: SERVICE_DEFAULTS.alchemyTemperature, live: true, description: 'Song alchemy: softmax temperature when the request does not say (0 = plain nearest neighbours)' },
  { key: 'ALCHEMY_SUBTRACT_DISTANCE_ANGULAR', owner: 'index', schema: num(0, 2), default: SERVICE_DEFAULTS.alchemySubtractDistanceAngular, live: true, description: 'Song alchemy: cosine distance around a SUBTRACT item inside which candidates drop, when the request does not say' },
  // Clustering defaults (playlist): the values of a run whose request leaves them out.
  { key: 'NUM_CLUSTERS_MIN', owner: 'playlist', schema: z.coerce.number().int().min(1).max(1000), default: SERVICE_DEFAULTS.numClustersMin, live: true, description: 'Clustering: lower bound of the automatic number of clusters' },
  { key: 'NUM_CLUSTERS_MAX', owner: 'playlist', schema: z.coerce.number().int().min(1).max(1000), default: SERVICE_DEFAULTS.numClustersMax, live: true, description: 'Clustering: upper bound of the automatic number of clusters' },
  { key: 'MAX_SONGS_PER_CLUSTER_PLAYLIST', owner: 'playlist', schema: z.coerce.number().int().min(1).max(10_000), default: SERVICE_DEFAULTS.maxSongsPerClusterPlaylist, live: true, description: 'Clustering: songs per playlist at most (nearest to the centroid first)' },
  { key: 'TOP_N_CLUSTERING_PLAYLIST', owner: 'playlist', schema: z.coerce.number().int().min(0).max(1000), default: SERVICE_DEFAULTS.topNClusteringPlaylist, live: true, description: 'Clustering: keep only the N largest clusters per server (0 = all)' },
  // AI provider (chat playlists, cluster naming).
  { key: 'AI_MODEL_PROVIDER', owner: 'registry', schema: z.enum(['NONE', 'OPENAI', 'OLLAMA', 'GEMINI', 'MISTRAL']), default: 'NONE', live: true, description: 'LLM provider for instant playlists and cluster names' },
  { key: 'AI_REQUEST_TIMEOUT_SECONDS', owner: 'registry', schema: num(1, 600), default: 60, live: true, description: 'Timeout of one LLM request, seconds' },
  { key: 'OPENAI_SERVER_URL', owner: 'registry', schema: url, default: 'https://api.openai.com/v1', live: true, description: 'Any OpenAI-compatible chat-completions base URL (OpenAI, OpenRouter, Ollama /v1, LM Studio, vLLM)' },
  { key: 'OPENAI_MODEL_NAME', owner: 'registry', schema: text(200), default: 'gpt-4o-mini', live: true, description: 'Model name at the OpenAI-compatible endpoint' },
  { key: 'OPENAI_API_KEY', owner: 'registry', schema: text(1000), default: null, secret: true, live: true, description: 'API key of the OpenAI-compatible endpoint' },
  { key: 'OLLAMA_SERVER_URL', owner: 'registry', schema: url, default: 'http://localhost:11434', live: true, description: 'Ollama server URL (native API)' },
  { key: 'OLLAMA_MODEL_NAME', owner: 'registry', schema: text(200), default: 'qwen3.5:9b', live: true, description: 'Ollama model name' },
  { key: 'GEMINI_API_KEY', owner: 'registry', schema: text(1000), default: null, secret: true, live: true, description: 'Google Gemini API key' },
  { key: 'GEMINI_SERVER_URL', owner: 'registry', schema: url, default: null, live: true, description: 'Gemini API base URL (blank: Google)' },
  { key: 'GEMINI_MODEL_NAME', owner: 'registry', schema: text(200), default: 'gemini-2.5-flash', live: true, description: 'Gemini model name' },
  { key: 'MISTRAL_API_KEY', owner: 'registry', schema: text(1000), default: null, secret: true, live: true, description: 'Mistral API key' },
  { key: 'MISTRAL_SERVER_URL', owner: 'registry', schema: url, default: null, live: true, description: 'Mistral API base URL (blank: https://api.mistral.ai)' },
  { key: 'MISTRAL_MODEL_NAME', owner: 'registry', schema: text(200), default: 'mistral-small-latest', live: true, description: 'Mistral model name' },
  // Media-server linking.
  { key: 'PLEX_TV_URL', owner: 'registry', schema: url, default: 'https://plex.tv', live: true, description: 'plex.tv base URL used by the Plex PIN sign-in' },
];

/** The value a secret setting is answered with when set (send it back unchanged to keep it). */
export const SETTING_SECRET_MASK = '__unchanged__';

export const SettingDto = z
  .object({
    key: z.string(),
    value: z.union([z.string(), z.number(), z.boolean(), z.null()]),
    /** default | env (imported on first start) | database (set by an admin) */
    source: z.enum(['default', 'env', 'database']),
    owner: z.string(),
    secret: z.boolean(),
    live: z.boolean(),
    description: z.string(),
  })
  .openapi('Setting');
export type SettingDto = z.infer<typeof SettingDto>;

/** Body of PUT /api/config: key -> new value (null resets to the default). */
export const SettingsUpdateBody = z.record(z.string().max(100), z.union([z.string().max(2000), z.number(), z.boolean(), z.null()])).openapi('SettingsUpdate');

/** settings.changed.v1: values (as strings; null = reset) of settings owned by other services. */
export const SettingsChangedEvent = z.object({ values: z.record(z.string().nullable()) });
export type SettingsChangedEvent = z.infer<typeof SettingsChangedEvent>;

export const settingsRoutes = {
  settingsList: defineRoute({ method: 'get', path: '/api/config/settings', summary: 'Every editable setting with value (secrets masked), source and whether it applies live', tags: ['config'], access: 'admin', service: 'registry', firstRun: true, response: z.object({ settings: z.array(SettingDto) }) }),
  settingsUpdate: defineRoute({
    method: 'put',
    path: '/api/config',
    summary: 'Change settings (validated; unknown keys or wrong types: 400 and nothing stored; secrets write-only, the mask keeps them)',
    tags: ['config'],
    access: 'admin', service: 'registry', firstRun: true,
    body: SettingsUpdateBody,
    response: z.object({ updated: z.array(z.string()), restart_required: z.array(z.string()), settings: z.array(SettingDto) }),
  }),
};

/**
 * GET /internal/settings/:owner (registry; services only, never routed by the gateway): the effective
 * values (database, else first-start environment, else default) of the non-secret settings the
 * service `owner` applies, typed like their defaults. Services read it through a short cache
 * (`SettingsReader` in @polyphony/platform), so an admin's change applies within seconds on every replica.
 */
export const OwnerSettingsDto = z.object({ values: z.record(z.union([z.string(), z.number(), z.boolean(), z.null()])) });
export type OwnerSettingsDto = z.infer<typeof OwnerSettingsDto>;
/** Path parameter of GET /internal/settings/:owner. */
export const SettingsOwnerParam = z.object({ owner: z.enum(['registry', 'catalogue', 'analysis', 'index', 'playlist']) });

/** The settings of one owner as `{KEY: default}` (what a service applies when the registry cannot be reached). */
export function defaultSettingsOf(owner: SettingSpec['owner']): Record<string, string | number | boolean | null> {
  return Object.fromEntries(SETTINGS.filter((s) => s.owner === owner && !s.secret).map((s) => [s.key, s.default]));
}

import { APP_VERSION, LEGACY_SERVER_KEYS, MOOD_LABELS, REQUIRED_CREDS, SERVICE_DEFAULTS, SETTINGS, SETTING_SECRET_MASK, type PublicConfigDto } from '@polyphony/contracts';
import { SERVER_TYPES, type ServerType } from '@polyphony/media-servers';
import type { Logger } from '@polyphony/platform';
import type { ServerStore } from './ports';

/**
 * Legacy media-server config keys (single-server installs) and the registry credential each feeds.
 * An old install kept these in app_config or the environment.
 */
const LEGACY_KEYS: Record<ServerType, Record<string, string>> = LEGACY_SERVER_KEYS;
const LIBRARY_KEY = 'MUSIC_LIBRARIES';
/**
 * AI provider settings of the public answers (values in app_config, edited with PUT /api/config; defaults
 * from the SETTINGS table). Model names and the provider only: keys and server URLs are never part of a
 * public answer.
 */
export const AI_CONFIG_KEYS = ['AI_MODEL_PROVIDER', 'OLLAMA_MODEL_NAME', 'OPENAI_MODEL_NAME', 'GEMINI_MODEL_NAME', 'MISTRAL_MODEL_NAME'] as const;

/** Default of a setting from the SETTINGS table (text). */
function settingDefault(key: string): string {
  const d = SETTINGS.find((s) => s.key === key)?.default;
  return d === null || d === undefined ? '' : String(d);
}

/** The AI provider and default model name per provider in effect (app_config values over SERVICE_DEFAULTS). */
export interface AiDefaults {
  provider: string;
  ollama: string;
  openai: string;
  gemini: string;
  mistral: string;
}
export const LEGACY_MEDIA_KEYS = ['MEDIASERVER_TYPE', LIBRARY_KEY, ...Object.values(LEGACY_KEYS).flatMap((m) => Object.keys(m))];

/** Keys of the classic config that the projection of the default server answers (read-only). */
const PROJECTION: Record<ServerType, Record<string, string>> = Object.fromEntries(
  SERVER_TYPES.map((t: ServerType) => [t, Object.fromEntries(Object.entries(LEGACY_KEYS[t] ?? {}).filter(([, c]) => c !== 'token' && c !== 'password'))]),
) as Record<ServerType, Record<string, string>>;

/** One key/value row of the general config (registry.app_config). */
export interface ConfigRow {
  key: string;
  value: string;
}

/**
 * What the first-start migration reads and writes, inside one transaction that holds the server-registry
 * lock (so two registry replicas starting together migrate once).
 */
export interface ConfigMigrationTx {
  /** Whether the environment was imported by an earlier start. */
  envImported(): Promise<boolean>;
  /** Records that the environment has been imported (idempotent). */
  markEnvImported(): Promise<void>;
  /** Stores an environment seed value unless the key already has one (source `env`). */
  importEnvValue(key: string, value: string): Promise<void>;
  /** The stored rows of these keys. */
  read(keys: readonly string[]): Promise<ConfigRow[]>;
  /** Deletes the rows of these keys. */
  delete(keys: readonly string[]): Promise<void>;
  /** How many media servers the registry holds. */
  serverCount(): Promise<number>;
  /** Inserts a media server in this transaction; returns its id. */
  insertServer(s: { name: string; type: string; creds: Record<string, string>; musicLibraries: string[]; isDefault: boolean }): Promise<{ id: string }>;
}

/** Port of the general config store (registry.app_config); implemented by store/config.repository.ts. */
export interface ConfigStorePort {
  /** Stored rows, ordered by key: every row, or those of `keys`. */
  read(keys?: readonly string[]): Promise<ConfigRow[]>;
  /** Sets one value (insert or update). */
  set(key: string, value: string): Promise<void>;
  /** Runs `fn` in one transaction holding the server-registry lock; commits when it resolves. */
  migrate<T>(fn: (tx: ConfigMigrationTx) => Promise<T>): Promise<T>;
}

/**
 * General config (app_config, through {@link ConfigStorePort}) and the legacy migration:
 * - environment variables are imported on first start only (never overwriting the database);
 * - media-server keys found in app_config or the environment become the default registry row and
 *   are deleted from app_config, so the registry is their only home;
 * - the classic values stay readable as a read-only projection of the default row (no secrets).
 */
export class ConfigService {
  constructor(
    private readonly store: ConfigStorePort,
    private readonly servers: Pick<ServerStore, 'findDefault'>,
    private readonly logger: Logger,
    /** Effective values of the settings one service applies (SettingsService.valuesOf). */
    private readonly settingValues: (owner: 'index' | 'playlist' | 'analysis') => Promise<Record<string, string | number | boolean | null>>,
  ) {}

  async all(): Promise<Record<string, string>> {
    const rows = await this.store.read();
    return Object.fromEntries(rows.map((r) => [r.key, r.value]));
  }

  async set(key: string, value: string): Promise<void> {
    if (LEGACY_MEDIA_KEYS.includes(key)) throw new Error(`${key} is managed through the server registry`);
    await this.store.set(key, value);
  }

  /**
   * First-start work, idempotent: import env seeds (non-media keys) into app_config when absent,
   * then migrate legacy media-server keys (app_config first, then env) into the registry.
   */
  async migrateAtStart(env: Record<string, string | undefined>, generalKeys: string[]): Promise<void> {
    await this.store.migrate(async (tx) => {
      const firstStart = !(await tx.envImported());
      if (firstStart) {
        for (const key of generalKeys) {
          const v = env[key];
          if (v !== undefined) await tx.importEnvValue(key, v);
        }
      }
      await this.migrateLegacyServer(tx, env, firstStart);
      if (firstStart) await tx.markEnvImported();
    });
  }

  private async migrateLegacyServer(tx: ConfigMigrationTx, env: Record<string, string | undefined>, firstStart: boolean): Promise<void> {
    const rows = await tx.read(LEGACY_MEDIA_KEYS);
    const fromDb = Object.fromEntries(rows.map((r) => [r.key, r.value]));
    const source: Record<string, string | undefined> = { ...(firstStart ? env : {}), ...fromDb };
    const type = source.MEDIASERVER_TYPE?.trim().toLowerCase() as ServerType | undefined;
    const count = await tx.serverCount();
    if (type && (SERVER_TYPES as readonly string[]).includes(type) && count === 0) {
      const creds: Record<string, string> = {};
      for (const [key, cred] of Object.entries(LEGACY_KEYS[type] ?? {})) if (source[key]) creds[cred] = source[key]!;
      const complete = REQUIRED_CREDS[type].every((k: string) => creds[k]);
      const libraries = (source[LIBRARY_KEY] ?? '').split(',').map((s) => s.trim()).filter(Boolean);
      const name = type.charAt(0).toUpperCase() + type.slice(1);
      // An incomplete legacy config becomes the credential-less seed entry the first real server replaces.
      const server = await tx.insertServer({ name, type, creds: complete ? creds : {}, musicLibraries: libraries, isDefault: true });
      this.logger.info('legacy media-server config migrated to the registry', { serverId: server.id, type, complete });
    }
    if (rows.length) {
      await tx.delete(LEGACY_MEDIA_KEYS);
      this.logger.info('legacy media-server keys removed from app_config', { keys: rows.map((r) => r.key) });
    }
  }

  /** The AI provider and model names in effect: app_config values when set, the SETTINGS defaults otherwise. */
  async aiDefaults(): Promise<AiDefaults> {
    const rows = await this.store.read(AI_CONFIG_KEYS);
    const stored = Object.fromEntries(rows.map((r) => [r.key, r.value.trim()]).filter(([, value]) => value !== ''));
    const v = (key: (typeof AI_CONFIG_KEYS)[number]) => stored[key] ?? settingDefault(key);
    return {
      provider: (v('AI_MODEL_PROVIDER') || 'NONE').toUpperCase(),
      ollama: v('OLLAMA_MODEL_NAME'),
      openai: v('OPENAI_MODEL_NAME'),
      gemini: v('GEMINI_MODEL_NAME'),
      mistral: v('MISTRAL_MODEL_NAME'),
    };
  }

  /**
   * The public `/api/config` answer (reference field names, values this service applies): safe for
   * every authenticated caller, so it carries no media-server value, no URL and no secret.
   */
  async publicView(): Promise<PublicConfigDto> {
    const ai = await this.aiDefaults();
    const d = SERVICE_DEFAULTS;
    // Defaults an admin can change (PUT /api/config): the values the index, playlist and analysis services apply.
    const [index, playlist, analysis] = await Promise.all([this.settingValues('index'), this.settingValues('playlist'), this.settingValues('analysis')]);
    const values = { ...index, ...playlist, ...analysis };
    const n = (key: string): number => Number(values[key] ?? settingDefault(key));
    return {
      ai_model_provider: ai.provider,
      ollama_model_name: ai.ollama,
      openai_model_name: ai.openai,
      gemini_model_name: ai.gemini,
      mistral_model_name: ai.mistral,
      mood_labels: [...MOOD_LABELS],
      top_n_moods: n('TOP_N_MOODS'),
      max_songs_per_artist: n('MAX_SONGS_PER_ARTIST'),
      cluster_algorithm: d.clusterAlgorithm,
      num_clusters_min: n('NUM_CLUSTERS_MIN'),
      num_clusters_max: n('NUM_CLUSTERS_MAX'),
      max_songs_per_cluster: n('MAX_SONGS_PER_CLUSTER_PLAYLIST'),
      top_n_clustering_playlist: n('TOP_N_CLUSTERING_PLAYLIST'),
      enable_clustering_embeddings: d.enableClusteringEmbeddings,
      path_distance_metric: d.pathDistanceMetric,
      path_default_length: n('PATH_DEFAULT_LENGTH'),
      alchemy_default_n_results: n('ALCHEMY_DEFAULT_N_RESULTS'),
      alchemy_max_n_results: d.alchemyMaxN,
      alchemy_temperature: n('ALCHEMY_TEMPERATURE'),
      alchemy_subtract_distance_angular: n('ALCHEMY_SUBTRACT_DISTANCE_ANGULAR'),
      alchemy_subtract_distance_euclid: d.alchemySubtractDistanceEuclid,
      app_version: APP_VERSION,
    };
  }

  /**
   * What a session admin reads from `GET /api/config` besides the public fields: the classic view with every
   * secret setting (SETTINGS `secret: true`, e.g. OPENAI_API_KEY) replaced by the mask when set, so no
   * secret is ever returned.
   */
  async adminView(): Promise<Record<string, string>> {
    const out = await this.view();
    for (const spec of SETTINGS) if (spec.secret && spec.key in out) out[spec.key] = out[spec.key] ? SETTING_SECRET_MASK : '';
    return out;
  }

  /** Classic config values: app_config plus the read-only projection of the default server (no secrets). */
  async view(): Promise<Record<string, string>> {
    const out = await this.all();
    const def = await this.servers.findDefault();
    if (def) {
      out.MEDIASERVER_TYPE = def.type;
      for (const [key, cred] of Object.entries(PROJECTION[def.type] ?? {})) if (def.creds[cred]) out[key] = def.creds[cred]!;
      if (def.musicLibraries.length) out[LIBRARY_KEY] = def.musicLibraries.join(',');
    }
    return out;
  }
}

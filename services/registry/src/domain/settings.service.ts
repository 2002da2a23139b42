import { RoutingKeys, SETTINGS, SETTING_SECRET_MASK, type AiSettingsDto, type SettingDto, type SettingSpec, type SettingsChangedEvent } from '@polyphony/contracts';
import { ValidationError, formatZodError, type Bus, type Logger } from '@polyphony/platform';

/** A stored config value and where it came from. */
export interface StoredSetting {
  key: string;
  value: string;
  source: 'env' | 'database';
}

/** Port: the registry's config store (registry.app_config). */
export interface SettingsStorePort {
  read(keys: string[]): Promise<StoredSetting[]>;
  /** Writes values (null deletes the row: back to the default) in one transaction. */
  write(values: Record<string, string | null>): Promise<void>;
}

const BY_KEY = new Map(SETTINGS.map((s) => [s.key, s]));

/**
 * Admin settings: every setting with its value, source and whether it applies live (secrets masked),
 * and validated updates. A value owned by another service is published on the bus
 * (`registry.settings.changed.v1`) and written into that service's own settings table.
 */
export class SettingsService {
  constructor(
    private readonly store: SettingsStorePort,
    private readonly bus: Bus,
    private readonly logger: Logger,
  ) {}

  async list(): Promise<SettingDto[]> {
    const stored = new Map((await this.store.read(SETTINGS.map((s) => s.key))).map((r) => [r.key, r]));
    return SETTINGS.map((spec) => {
      const row = stored.get(spec.key);
      const value = row ? typed(spec, row.value) : spec.default;
      return {
        key: spec.key,
        value: spec.secret ? (row && row.value !== '' ? SETTING_SECRET_MASK : null) : value,
        source: row ? row.source : 'default',
        owner: spec.owner,
        secret: Boolean(spec.secret),
        live: spec.live,
        description: spec.description,
      };
    });
  }

  /** The AI provider settings with their keys (for the services' internal use only; never routed publicly). */
  async aiSettings(): Promise<AiSettingsDto> {
    const keys = SETTINGS.filter((s) => /^(AI_|OPENAI_|OLLAMA_|GEMINI_|MISTRAL_)/.test(s.key)).map((s) => s.key);
    const stored = new Map((await this.store.read(keys)).map((r) => [r.key, r]));
    const v = (k: string) => effective(stored, k);
    const opt = (k: string) => v(k) || undefined;
    return {
      provider: (v('AI_MODEL_PROVIDER') || 'NONE').toUpperCase() as AiSettingsDto['provider'],
      timeoutSeconds: Number(v('AI_REQUEST_TIMEOUT_SECONDS')) || 60,
      openai: { url: v('OPENAI_SERVER_URL'), model: v('OPENAI_MODEL_NAME'), apiKey: opt('OPENAI_API_KEY') },
      ollama: { url: v('OLLAMA_SERVER_URL'), model: v('OLLAMA_MODEL_NAME') },
      gemini: { model: v('GEMINI_MODEL_NAME'), apiKey: opt('GEMINI_API_KEY'), url: opt('GEMINI_SERVER_URL') },
      mistral: { model: v('MISTRAL_MODEL_NAME'), apiKey: opt('MISTRAL_API_KEY'), url: opt('MISTRAL_SERVER_URL') },
    };
  }

  /**
   * Effective values of the non-secret settings `owner` applies (stored, else default), typed like
   * their defaults: the answer of GET /internal/settings/:owner.
   */
  async valuesOf(owner: SettingSpec['owner']): Promise<Record<string, string | number | boolean | null>> {
    const specs = SETTINGS.filter((s) => s.owner === owner && !s.secret);
    const stored = new Map((await this.store.read(specs.map((s) => s.key))).map((r) => [r.key, r]));
    return Object.fromEntries(specs.map((spec) => {
      const row = stored.get(spec.key);
      return [spec.key, row ? typed(spec, row.value) : spec.default];
    }));
  }

  /**
   * Validates every key first (unknown keys and wrong types: ValidationError, nothing stored), then
   * stores them together. A secret sent back as the mask (or blank) keeps its stored value.
   * @returns the keys changed and those that need a restart to take effect.
   */
  async update(patch: Record<string, string | number | boolean | null>): Promise<{ updated: string[]; restart_required: string[] }> {
    const values: Record<string, string | null> = {};
    const problems: string[] = [];
    for (const [key, raw] of Object.entries(patch)) {
      const spec = BY_KEY.get(key);
      if (!spec) {
        problems.push(`${key}: unknown setting`);
        continue;
      }
      if (spec.secret && (raw === SETTING_SECRET_MASK || raw === '')) continue;
      if (raw === null) {
        values[key] = null;
        continue;
      }
      const parsed = spec.schema.safeParse(raw);
      if (!parsed.success) problems.push(`${key}: ${formatZodError(parsed.error)}`);
      else values[key] = String(parsed.data);
    }
    if (problems.length) throw new ValidationError(`Invalid settings: ${problems.join('; ')}`);
    const keys = Object.keys(values);
    if (!keys.length) return { updated: [], restart_required: [] };
    await this.store.write(values);
    const foreign = Object.fromEntries(keys.filter((k) => BY_KEY.get(k)!.owner !== 'registry').map((k) => [k, values[k] ?? null]));
    if (Object.keys(foreign).length) await this.bus.publish(RoutingKeys.settingsChanged, { values: foreign } satisfies SettingsChangedEvent);
    // Names only: values may be secrets.
    this.logger.info('settings changed', { keys });
    return { updated: keys, restart_required: keys.filter((k) => !BY_KEY.get(k)!.live) };
  }
}

/** Effective value of a key: stored, else the default ('' when neither). */
function effective(stored: Map<string, StoredSetting>, key: string): string {
  const row = stored.get(key);
  if (row) return row.value;
  const d = BY_KEY.get(key)?.default;
  return d === null || d === undefined ? '' : String(d);
}

function typed(spec: SettingSpec, value: string): string | number | boolean {
  if (typeof spec.default === 'number') return Number(value);
  if (typeof spec.default === 'boolean') return value === 'true';
  return value;
}

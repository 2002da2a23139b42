/**
 * Tunables of the catalogue service, stored in `catalogue.settings` (spec "Resources": configuration
 * names; only connection settings stay in the environment). The environment seeds them on first start
 * only ({@link SettingsStore.seedOnce}); afterwards the database is the source of truth.
 *
 * Defaults come from the identity domain's constants (domain/identity/constants.ts), where each value
 * is documented with its source.
 */
import type { DataSource } from 'typeorm';
import { SettingsStore } from '@polyphony/platform';
import { DEFAULT_IDENTITY_CONFIG, type IdentityConfig, identityConfigProblems } from './domain/identity/constants';

/** Setting keys this service owns, as the spec names them. */
export const CATALOGUE_SETTING_KEYS = [
  'DUPLICATE_DISTANCE_THRESHOLD_COSINE',
  'DURATION_TOLERANCE_SECONDS',
  'CHROMAPRINT_GATE_ENABLED',
  'CATALOGUE_ID_SCHEME_VERSION',
  'CLEANING_CATALOGUE',
] as const;
export type CatalogueSettingKey = (typeof CATALOGUE_SETTING_KEYS)[number];

/** Effective tunables. */
export interface CatalogueTunables {
  /** Identity decision config; `schemeVersion` is the TARGET version (relabel runs at start when the catalogue is behind). */
  readonly identity: IdentityConfig;
  /** CLEANING_CATALOGUE: opt-in orphan deletion (read by the cleaning task). Default false. */
  readonly cleaningCatalogue: boolean;
}

/**
 * Defaults: the domain constants, orphan deletion off. (When cleaning runs is a schedule of the
 * registry's /api/cron, the built-in "Cleaning" one; the old CLEANING_SCHEDULE_HOURS timer is gone.)
 */
export const DEFAULT_TUNABLES: CatalogueTunables = Object.freeze({ identity: DEFAULT_IDENTITY_CONFIG, cleaningCatalogue: false });

function parseBool(v: string): boolean | undefined {
  const s = v.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(s)) return true;
  if (['0', 'false', 'no', 'off'].includes(s)) return false;
  return undefined;
}

function parseNumber(v: string): number | undefined {
  if (v.trim() === '') return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * Parses stored (or environment) setting strings into tunables. Missing keys take the default;
 * unparsable or out-of-range values are reported in `problems` and replaced by the default, so one bad
 * row never stops the service.
 *
 * @param raw key -> string value (extra keys ignored).
 * @returns the tunables and one message per rejected value.
 */
export function parseCatalogueSettings(raw: Record<string, string | undefined>): { tunables: CatalogueTunables; problems: string[] } {
  const problems: string[] = [];
  const d = DEFAULT_IDENTITY_CONFIG;
  /** The parsed value of `key`, else `fallback` (missing, or unparsable: reported as "not a <kind>"). */
  const value = <T>(key: CatalogueSettingKey, fallback: T, parse: (v: string) => T | undefined, kind: string): T => {
    const v = raw[key];
    if (v === undefined) return fallback;
    const parsed = parse(v);
    if (parsed === undefined) problems.push(`${key}: not a ${kind}: ${JSON.stringify(v)}`);
    return parsed ?? fallback;
  };
  const num = (key: CatalogueSettingKey, fallback: number) => value(key, fallback, parseNumber, 'number');
  const bool = (key: CatalogueSettingKey, fallback: boolean) => value(key, fallback, parseBool, 'boolean');
  let identity: IdentityConfig = {
    ...d,
    duplicateDistanceThresholdCosine: num('DUPLICATE_DISTANCE_THRESHOLD_COSINE', d.duplicateDistanceThresholdCosine),
    durationToleranceSeconds: num('DURATION_TOLERANCE_SECONDS', d.durationToleranceSeconds),
    chromaprintGateEnabled: bool('CHROMAPRINT_GATE_ENABLED', d.chromaprintGateEnabled),
    schemeVersion: num('CATALOGUE_ID_SCHEME_VERSION', d.schemeVersion),
  };
  // Range checks per field: a bad field falls back alone.
  const checks: Array<[CatalogueSettingKey, keyof IdentityConfig]> = [
    ['DUPLICATE_DISTANCE_THRESHOLD_COSINE', 'duplicateDistanceThresholdCosine'],
    ['DURATION_TOLERANCE_SECONDS', 'durationToleranceSeconds'],
    ['CATALOGUE_ID_SCHEME_VERSION', 'schemeVersion'],
  ];
  for (const [key, field] of checks) {
    const probe = { ...d, [field]: identity[field] } as IdentityConfig;
    const p = identityConfigProblems(probe);
    if (p.length > 0) {
      problems.push(`${key}: ${p.join('; ')}`);
      identity = { ...identity, [field]: d[field] };
    }
  }
  return { tunables: { identity, cleaningCatalogue: bool('CLEANING_CATALOGUE', false) }, problems };
}

/**
 * Reads the tunables from `catalogue.settings`, caching them for `ttlMs` so a resolve does not pay a
 * query each time. A change made in the database is seen within `ttlMs`.
 */
export class CatalogueSettings {
  private readonly store: SettingsStore;
  private cached?: { at: number; tunables: CatalogueTunables };

  /**
   * @param ds DataSource of the catalogue schema.
   * @param onProblem called with each rejected stored value (logged by the caller).
   * @param ttlMs cache lifetime in ms (default 5000).
   */
  constructor(
    ds: DataSource,
    private readonly onProblem: (problem: string) => void = () => undefined,
    private readonly ttlMs = 5000,
  ) {
    this.store = new SettingsStore(ds, 'catalogue');
  }

  /** First-start import of the environment values (existing rows are never overwritten). */
  async seed(env: Partial<Record<CatalogueSettingKey, string | undefined>>): Promise<void> {
    const seed: Record<string, string | undefined> = {};
    for (const k of CATALOGUE_SETTING_KEYS) seed[k] = env[k];
    await this.store.seedOnce(seed);
  }

  /** Current tunables (cached up to ttlMs). */
  async get(): Promise<CatalogueTunables> {
    const now = Date.now();
    if (this.cached && now - this.cached.at < this.ttlMs) return this.cached.tunables;
    const { tunables, problems } = parseCatalogueSettings(await this.store.all());
    for (const p of problems) this.onProblem(p);
    this.cached = { at: now, tunables };
    return tunables;
  }

  /** Stores one value (validated first) and drops the cache. @throws RangeError for an invalid value. */
  async set(key: CatalogueSettingKey, value: string): Promise<void> {
    const { problems } = parseCatalogueSettings({ [key]: value });
    if (problems.length > 0) throw new RangeError(problems.join('; '));
    await this.store.set(key, value);
    this.cached = undefined;
  }

  /** Removes a stored value (back to the default) and drops the cache. */
  async reset(key: CatalogueSettingKey): Promise<void> {
    await this.store.remove(key);
    this.cached = undefined;
  }

  /** Forgets the cached values. */
  invalidate(): void {
    this.cached = undefined;
  }
}

import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { baseEnvShape, databaseUrlFrom, envBool, parseConfig, readEnv } from '@polyphony/platform';

const Env = z.object({
  ...baseEnvShape,
  /** Public HTTP port (standalone and distributed). */
  PORT: z.coerce.number().int().min(0).max(65535).default(8000),
  /** Bind address. */
  HOST: z.string().default('0.0.0.0'),
  /** First-boot seeds (imported into auth.settings once; the database is the source of truth afterwards). */
  AUTH_ENABLED: z.string().optional(),
  SERVICE_USER: z.string().min(1).optional(),
  SERVICE_PASSWORD: z.string().min(1).optional(),
  API_TOKEN: z.string().min(8).optional(),
  JWT_SECRET: z.string().min(16).optional(),
  /** Session lifetime in hours. */
  SESSION_TTL_HOURS: z.coerce.number().positive().max(24 * 365).default(24 * 7),
  /** Owning services (distributed mode); the standalone launcher passes them directly. */
  REGISTRY_URL: z.string().url().default('http://registry:8080'),
  CATALOGUE_URL: z.string().url().default('http://catalogue-identity:8080'),
  ANALYSIS_URL: z.string().url().default('http://analysis-worker:8080'),
  INDEX_URL: z.string().url().default('http://index:8080'),
  PLAYLIST_URL: z.string().url().default('http://playlist:8080'),
});

/** Parsed gateway configuration (environment holds connection settings and first-boot seeds only). */
export function loadGatewayConfig(env: Record<string, string | undefined> = readEnv()) {
  const e = parseConfig(Env, env);
  const authEnabledSeed = e.AUTH_ENABLED === undefined ? undefined : String(envBool(true).parse(e.AUTH_ENABLED));
  return Object.freeze({
    port: e.PORT,
    host: e.HOST,
    databaseUrl: databaseUrlFrom(e),
    logLevel: e.LOG_LEVEL,
    logPretty: e.LOG_FORMAT === 'pretty',
    dbPoolSize: e.DB_POOL_SIZE,
    /** Random per process when not configured: only valid for the standalone mode. */
    internalSecret: e.INTERNAL_SECRET ?? randomBytes(32).toString('hex'),
    sessionTtlSeconds: Math.round(e.SESSION_TTL_HOURS * 3600),
    seeds: {
      AUTH_ENABLED: authEnabledSeed,
      SERVICE_USER: e.SERVICE_USER,
      SERVICE_PASSWORD: e.SERVICE_PASSWORD,
      API_TOKEN: e.API_TOKEN,
      JWT_SECRET: e.JWT_SECRET,
    },
    services: {
      registry: e.REGISTRY_URL,
      catalogue: e.CATALOGUE_URL,
      analysis: e.ANALYSIS_URL,
      index: e.INDEX_URL,
      playlist: e.PLAYLIST_URL,
    },
  });
}
export type GatewayConfig = ReturnType<typeof loadGatewayConfig>;
export type ServiceName = keyof GatewayConfig['services'];

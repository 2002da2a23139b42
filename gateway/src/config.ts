import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { baseEnvShape, databaseUrlFrom, envBool, parseConfig, readEnv } from '@polyphony/platform';
import { parseHttpsSetting } from './http/https';

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
  /** Verify-only previous session signing secret (rotation: sessions signed with it stay valid until they refresh). */
  JWT_SECRET_PREVIOUS: z.string().min(16).optional(),
  /** Idle session lifetime in hours: a session unused this long ends; each use in its second half extends it. */
  SESSION_TTL_HOURS: z.coerce.number().positive().max(24 * 365).default(24 * 7),
  /** Absolute session lifetime in hours, however often it is used. */
  SESSION_MAX_HOURS: z.coerce.number().positive().max(24 * 365).default(24 * 30),
  /**
   * Which peers may set X-Forwarded-For/-Proto/-Host: unset or `false` = nobody; otherwise a
   * comma-separated list of addresses, CIDR subnets or the keywords loopback, linklocal, uniquelocal.
   */
  TRUST_PROXY: z.string().optional(),
  /** When set, /metrics is served only on this port (bind it to an internal interface); else /metrics needs the bearer token. */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** Failed logins allowed per client address and per account in LOGIN_RATE_WINDOW_MINUTES. */
  LOGIN_RATE_IP_MAX: z.coerce.number().int().positive().default(30),
  LOGIN_RATE_ACCOUNT_MAX: z.coerce.number().int().positive().default(10),
  LOGIN_RATE_WINDOW_MINUTES: z.coerce.number().positive().default(15),
  /** Owning services (distributed mode); the standalone launcher passes them directly. */
  REGISTRY_URL: z.string().url().default('http://registry:8080'),
  CATALOGUE_URL: z.string().url().default('http://catalogue-identity:8080'),
  ANALYSIS_URL: z.string().url().default('http://analysis-worker:8080'),
  /** One URL, or several comma-separated replicas (balanced over the ready ones, with failover; proxy/upstream-pool.ts). */
  INDEX_URL: z
    .string()
    .refine((v) => v.split(',').every((u) => u.trim() === '' || URL.canParse(u.trim())) && v.split(',').some((u) => u.trim() !== ''), 'a URL or a comma-separated list of URLs')
    .default('http://index:8080'),
  PLAYLIST_URL: z.string().url().default('http://playlist:8080'),
  /** Data directory (standalone: the embedded PostgreSQL's); the self-signed HTTPS certificate is kept in `<DATA_DIR>/tls`. */
  DATA_DIR: z.string().default('./data'),
  /** TLS on the public port: `off` (default), `self-signed` (made once, kept in DATA_DIR) or `custom` (HTTPS_CERT + HTTPS_KEY); http/https.ts. */
  HTTPS: z.string().optional(),
  /** PEM certificate (chain) and private key files of `HTTPS=custom`. */
  HTTPS_CERT: z.string().optional(),
  HTTPS_KEY: z.string().optional(),
  /** Extra names and IP addresses (comma-separated) the self-signed certificate must cover, e.g. `music.lan,192.168.1.20`. */
  HTTPS_HOSTNAMES: z.string().optional(),
});

/**
 * Parsed gateway configuration (environment holds connection settings and first-boot seeds only).
 * `mode: 'distributed'` (the gateway's own entry point, one of several processes or replicas) refuses
 * to start without INTERNAL_SECRET: the services verify the identity header with it, so an invented
 * value would be rejected by every service (or, worse, differ between gateway replicas).
 * @throws Error with a message naming the missing variable
 */
export function loadGatewayConfig(env: Record<string, string | undefined> = readEnv(), mode: 'standalone' | 'distributed' = 'standalone') {
  const e = parseConfig(Env, env);
  if (mode === 'distributed' && !e.INTERNAL_SECRET) {
    throw new Error('gateway: INTERNAL_SECRET is required in the distributed mode (every service verifies the signed identity header with it). Set the same random value (32+ characters) on the gateway and every service, e.g. from the polyphony-secrets Secret.');
  }
  const authEnabledSeed = e.AUTH_ENABLED === undefined ? undefined : String(envBool(true).parse(e.AUTH_ENABLED));
  return Object.freeze({
    port: e.PORT,
    host: e.HOST,
    databaseUrl: databaseUrlFrom(e),
    logLevel: e.LOG_LEVEL,
    logPretty: e.LOG_FORMAT === 'pretty',
    accessLogSample: e.ACCESS_LOG_SAMPLE,
    dbPoolSize: e.DB_POOL_SIZE,
    dbConnectTimeoutMs: e.DB_CONNECT_TIMEOUT_MS,
    dbRequestQueryTimeoutMs: e.DB_REQUEST_QUERY_TIMEOUT_MS,
    /** Random per process when not configured: only reachable in the standalone mode (see `mode`). */
    internalSecret: e.INTERNAL_SECRET ?? randomBytes(32).toString('hex'),
    sessionTtlSeconds: Math.round(e.SESSION_TTL_HOURS * 3600),
    sessionMaxSeconds: Math.round(Math.max(e.SESSION_MAX_HOURS, e.SESSION_TTL_HOURS) * 3600),
    trustProxy: parseTrustProxy(e.TRUST_PROXY),
    metricsPort: e.METRICS_PORT,
    /** TLS on the public port (`HTTPS`, `HTTPS_CERT`, `HTTPS_KEY`, `HTTPS_HOSTNAMES`, `DATA_DIR`). */
    https: parseHttpsSetting(e),
    loginRate: { perIp: e.LOGIN_RATE_IP_MAX, perAccount: e.LOGIN_RATE_ACCOUNT_MAX, windowMs: Math.round(e.LOGIN_RATE_WINDOW_MINUTES * 60_000) },
    /** Environment secrets: when given they win over the stored ones at every start (rotation). */
    secrets: { apiToken: e.API_TOKEN, jwtSecret: e.JWT_SECRET, jwtSecretPrevious: e.JWT_SECRET_PREVIOUS },
    seeds: {
      AUTH_ENABLED: authEnabledSeed,
      SERVICE_USER: e.SERVICE_USER,
      SERVICE_PASSWORD: e.SERVICE_PASSWORD,
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
/**
 * TRUST_PROXY to an express `trust proxy` value: unset/`false`/empty = trust nobody; `true` is
 * refused (anyone could then forge X-Forwarded-For and dodge the login rate limit).
 */
export function parseTrustProxy(value: string | undefined): false | string[] {
  const v = value?.trim() ?? '';
  if (v === '' || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '*') throw new Error('TRUST_PROXY=true would trust X-Forwarded-* from anyone: list the proxy addresses or subnets (or loopback)');
  return v.split(',').map((x) => x.trim()).filter(Boolean);
}
export type GatewayConfig = ReturnType<typeof loadGatewayConfig>;
export type ServiceName = keyof GatewayConfig['services'];

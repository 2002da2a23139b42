import { readFileSync } from 'node:fs';
import { z, type ZodRawShape } from 'zod';
import { formatZodError } from './http';

/** Settings that may be given as `<NAME>_FILE` (a path whose content is the value: Docker/Kubernetes secrets). */
export const FILE_ENV_KEYS = ['DATABASE_URL', 'PGPASSWORD', 'AMQP_URL', 'INTERNAL_SECRET', 'SERVICE_USER', 'SERVICE_PASSWORD', 'API_TOKEN', 'JWT_SECRET'];

/**
 * Reads the environment, replacing `NAME` by the trimmed content of the file named in `NAME_FILE`
 * for the secret-bearing names in FILE_ENV_KEYS. Empty values count as unset. The only place that
 * reads process.env.
 */
export function readEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(env)) out[key] = value === '' ? undefined : value;
  for (const key of FILE_ENV_KEYS) {
    const file = env[`${key}_FILE`];
    if (file) out[key] = readFileSync(file, 'utf8').trim();
  }
  return out;
}

/** Boolean env values: 1/true/yes/on and 0/false/no/off, case-insensitive. */
export const envBool = (dflt: boolean) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return dflt;
      const s = v.trim().toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(s)) return true;
      if (['0', 'false', 'no', 'off'].includes(s)) return false;
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected a boolean, got "${v}"` });
      return z.NEVER;
    });

/** Connection settings every service reads from the environment (the only env-held settings besides TZ). */
export const baseEnvShape = {
  /** PostgreSQL URL; alternatively the libpq variables PGHOST/PGPORT/PGUSER/PGPASSWORD/PGDATABASE. */
  DATABASE_URL: z.string().url().optional(),
  PGHOST: z.string().optional(),
  PGPORT: z.coerce.number().int().positive().optional(),
  PGUSER: z.string().optional(),
  PGPASSWORD: z.string().optional(),
  PGDATABASE: z.string().optional(),
  /** RabbitMQ URL; absent means the in-process bus (standalone mode only). */
  AMQP_URL: z.string().optional(),
  /** Namespace of exchanges and queue names when several installs share one RabbitMQ vhost (default none). */
  BUS_NAMESPACE: z.string().regex(/^[\w.-]{1,100}$/).optional(),
  /** Shared secret of the gateway's signed identity header (distributed mode). */
  INTERNAL_SECRET: z.string().min(16).optional(),
  /** HTTP port of this process (0 = any free port). */
  PORT: z.coerce.number().int().min(0).max(65535).optional(),
  LOG_LEVEL: z.enum(['error', 'warn', 'info', 'debug']).default('info'),
  /**
   * Share (0..1) of successful requests (status < 400) that get an access-log line at `info` (default 1, every
   * request; 4xx/5xx always get theirs). A busy query path writes thousands of lines a second otherwise.
   */
  ACCESS_LOG_SAMPLE: z.coerce.number().min(0).max(1).default(1),
  /** json (default) or pretty. */
  LOG_FORMAT: z.enum(['json', 'pretty']).default('json'),
  /** Connections per process to PostgreSQL. */
  DB_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(5),
  /** Longest wait for a database connection (pool slot or new connection), ms; 0 = for ever (issue 36, frozen database). */
  DB_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(4000),
  /** Longest wait for one query's answer while an HTTP request waits, ms; 0 = none (background work is never timed). */
  DB_REQUEST_QUERY_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(4000),
  /** Messages in flight per consumer. */
  BUS_PREFETCH: z.coerce.number().int().min(1).max(1000).default(4),
} satisfies ZodRawShape;

/** Builds a postgres URL from DATABASE_URL or the PG* variables; undefined when neither is set. */
export function databaseUrlFrom(env: { DATABASE_URL?: string; PGHOST?: string; PGPORT?: number; PGUSER?: string; PGPASSWORD?: string; PGDATABASE?: string }): string | undefined {
  if (env.DATABASE_URL) return env.DATABASE_URL;
  if (!env.PGHOST) return undefined;
  const auth = env.PGUSER ? `${encodeURIComponent(env.PGUSER)}${env.PGPASSWORD ? `:${encodeURIComponent(env.PGPASSWORD)}` : ''}@` : '';
  return `postgres://${auth}${env.PGHOST}:${env.PGPORT ?? 5432}/${env.PGDATABASE ?? 'polyphony'}`;
}

/** Thrown when configuration is invalid; lists every bad key at once. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Parses env with a zod object schema into a frozen typed object, failing fast with every invalid key listed. */
export function parseConfig<S extends z.ZodTypeAny>(schema: S, env: Record<string, string | undefined> = readEnv()): Readonly<z.output<S>> {
  const result = schema.safeParse(env);
  if (!result.success) throw new ConfigError(`Invalid configuration: ${formatZodError(result.error)}`);
  return Object.freeze(result.data);
}

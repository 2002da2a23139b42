import winston from 'winston';
import { currentContext } from './context';

/** Keys whose values are never written to a log line, at any depth. */
const SECRET_KEY = /pass(word)?|token|secret|authorization|cookie|api[_-]?key|creds|^p$|^t$|^s$/i;

/** Replaces values of secret-looking keys with '[redacted]' (deep, cycle-safe, bounded depth). */
export function redactSecrets(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
  if (value === null || typeof value !== 'object' || depth > 6) return value;
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  if (seen.has(value)) return '[circular]';
  seen.add(value);
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v, depth + 1, seen));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = SECRET_KEY.test(k) ? '[redacted]' : redactSecrets(v, depth + 1, seen);
  }
  return out;
}

const redactFormat = winston.format((info) => {
  for (const key of Object.keys(info)) {
    if (key === 'level' || key === 'message') continue;
    (info as Record<string, unknown>)[key] = SECRET_KEY.test(key) ? '[redacted]' : redactSecrets(info[key]);
  }
  return info;
});

const contextFormat = winston.format((info) => {
  const ctx = currentContext();
  if (ctx) {
    if (info.requestId === undefined) info.requestId = ctx.requestId;
    if (ctx.userId && info.userId === undefined) info.userId = ctx.userId;
  }
  return info;
});

export type Logger = winston.Logger;

export interface LoggerOptions {
  service: string;
  /** winston level: error, warn, info, debug. */
  level?: string;
  /** Human-readable lines instead of JSON (development). */
  pretty?: boolean;
}

/**
 * Structured logger: JSON lines in production, `requestId`/`userId` added from the async context,
 * values of secret-looking keys (password, token, secret, authorization, cookie, api key, creds) redacted.
 * Use a constant message and put variables in meta: `log.info('track analyzed', { trackId })`.
 */
export function createLogger(options: LoggerOptions): Logger {
  const formats = [contextFormat(), redactFormat(), winston.format.timestamp()];
  return winston.createLogger({
    level: options.level ?? 'info',
    defaultMeta: { service: options.service },
    format: options.pretty
      ? winston.format.combine(...formats, winston.format.colorize(), winston.format.simple())
      : winston.format.combine(...formats, winston.format.json()),
    transports: [new winston.transports.Console({ stderrLevels: ['error', 'warn'] })],
  });
}

import { createHash } from 'node:crypto';
import type { RequestHandler } from 'express';
import { rateLimit, ipKeyGenerator, type IncrementResponse, type Options, type Store } from 'express-rate-limit';
import type { DataSource } from 'typeorm';
import { queryRows, type Logger } from '@polyphony/platform';

/**
 * express-rate-limit store on PostgreSQL (auth.rate_limits), so every gateway replica counts into
 * the same fixed windows. One upsert per counted request; expired rows are swept every 200 increments.
 */
export class PgRateLimitStore implements Store {
  /** Counters are shared across processes. */
  readonly localKeys = false;
  private windowMs = 60_000;
  private increments = 0;

  constructor(
    private readonly ds: DataSource,
    readonly prefix: string,
  ) {}

  init(options: Options): void {
    this.windowMs = options.windowMs;
  }

  private key(key: string): string {
    return `${this.prefix}${key}`;
  }

  async get(key: string): Promise<IncrementResponse | undefined> {
    const rows: Array<{ hits: number; reset_at: Date }> = await this.ds.query(`SELECT hits, reset_at FROM auth.rate_limits WHERE key = $1 AND reset_at > clock_timestamp()`, [this.key(key)]);
    return rows[0] ? { totalHits: rows[0].hits, resetTime: rows[0].reset_at } : undefined;
  }

  async increment(key: string): Promise<IncrementResponse> {
    if (++this.increments % 200 === 0) await this.ds.query(`DELETE FROM auth.rate_limits WHERE reset_at < clock_timestamp() - interval '1 minute'`);
    const rows: Array<{ hits: number; reset_at: Date }> = await this.ds.query(
      `INSERT INTO auth.rate_limits AS r (key, hits, reset_at) VALUES ($1, 1, clock_timestamp() + make_interval(secs => $2))
       ON CONFLICT (key) DO UPDATE SET
         hits = CASE WHEN r.reset_at <= clock_timestamp() THEN 1 ELSE r.hits + 1 END,
         reset_at = CASE WHEN r.reset_at <= clock_timestamp() THEN EXCLUDED.reset_at ELSE r.reset_at END
       RETURNING hits, reset_at`,
      [this.key(key), this.windowMs / 1000],
    );
    return { totalHits: rows[0]!.hits, resetTime: rows[0]!.reset_at };
  }

  async decrement(key: string): Promise<void> {
    await queryRows(this.ds, `UPDATE auth.rate_limits SET hits = greatest(hits - 1, 0) WHERE key = $1 AND reset_at > clock_timestamp() RETURNING key`, [this.key(key)]);
  }

  async resetKey(key: string): Promise<void> {
    await this.ds.query(`DELETE FROM auth.rate_limits WHERE key = $1`, [this.key(key)]);
  }

  async resetAll(): Promise<void> {
    await this.ds.query(`DELETE FROM auth.rate_limits WHERE starts_with(key, $1)`, [this.prefix]);
  }
}

export interface LoginRateOptions {
  /** Failed attempts allowed per client address per window. */
  perIp: number;
  /** Failed attempts allowed per account (username, case-insensitive) per window. */
  perAccount: number;
  windowMs: number;
}

/** Account key: a hash of the lower-cased username, so a password typed into the username field is never stored. */
function accountKey(username: unknown): string | undefined {
  if (typeof username !== 'string' || username === '') return undefined;
  return createHash('sha256').update(username.toLowerCase(), 'utf8').digest('base64url');
}

/**
 * Brute-force protection of the credential endpoints (/login, /auth, /api/setup/admin):
 * `byIp` runs before the body is parsed and counts failed attempts per client address (req.ip,
 * which honours X-Forwarded-For only from TRUST_PROXY addresses; IPv6 grouped per /56);
 * `byAccount` runs after parsing and counts failed attempts per username. Successful attempts are
 * not counted. Over the limit: 429 in the error shape with `Retry-After` (seconds), and one warning
 * log line per event with the address and username (never the password).
 */
export function loginRateLimiters(ds: DataSource, options: LoginRateOptions, logger: Logger): { byIp: RequestHandler; byAccount: RequestHandler } {
  const make = (prefix: string, limit: number, keyOf: (req: import('express').Request) => string | undefined, what: string) =>
    rateLimit({
      windowMs: options.windowMs,
      limit,
      store: new PgRateLimitStore(ds, prefix),
      standardHeaders: 'draft-7',
      legacyHeaders: false,
      skipSuccessfulRequests: true,
      skip: (req) => keyOf(req) === undefined,
      keyGenerator: (req) => keyOf(req)!,
      // TRUST_PROXY is validated by the gateway config; the library's own X-Forwarded-For check would log to the console.
      validate: { xForwardedForHeader: false },
      logger: {
        error: (err, message) => logger.warn(message ?? 'rate limit store error', { err: err instanceof Error ? err.message : String(err) }),
        warn: (err, message) => logger.warn(message ?? 'rate limit warning', { err: err instanceof Error ? err.message : String(err) }),
      },
      handler: (req, res, _next, used) => {
        const resetTime = (req as { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
        const retryAfter = Math.max(1, Math.ceil(((resetTime?.getTime() ?? Date.now() + used.windowMs) - Date.now()) / 1000));
        const body = req.body as { username?: unknown; user?: unknown } | undefined;
        const username = typeof body?.username === 'string' ? body.username : typeof body?.user === 'string' ? body.user : undefined;
        logger.warn('login rate limit reached', { limit: what, ip: req.ip, username: username?.slice(0, 200), retryAfterSeconds: retryAfter });
        res.setHeader('Retry-After', String(retryAfter));
        res.status(429).json({ error: { code: 'rate_limited', message: `Too many failed login attempts; try again in ${retryAfter} s`, requestId: req.requestId } });
      },
    });
  return {
    byIp: make('login-ip:', options.perIp, (req) => ipKeyGenerator(req.ip ?? 'unknown'), 'client address'),
    byAccount: make('login-account:', options.perAccount, (req) => {
      const body = req.body as { username?: unknown; user?: unknown } | undefined;
      return accountKey(body?.username ?? body?.user);
    }, 'account'),
  };
}

import { createHash } from 'node:crypto';
import type { RequestHandler } from 'express';
import { rateLimit, ipKeyGenerator, type IncrementResponse, type Options, type Store } from 'express-rate-limit';
import { sendError, type Logger } from '@polyphony/platform';
import type { RateLimitRepository } from '../store/rate-limit.repository';

/**
 * express-rate-limit store over the gateway's `RateLimitRepository` (auth.rate_limits), so every gateway
 * replica counts into the same fixed windows. One upsert per counted request; expired rows are swept every
 * 200 increments.
 */
export class SharedRateLimitStore implements Store {
  /** Counters are shared across processes. */
  readonly localKeys = false;
  private windowMs = 60_000;
  private increments = 0;

  constructor(
    private readonly counters: RateLimitRepository,
    readonly prefix: string,
  ) {}

  init(options: Options): void {
    this.windowMs = options.windowMs;
  }

  private key(key: string): string {
    return `${this.prefix}${key}`;
  }

  async get(key: string): Promise<IncrementResponse | undefined> {
    const c = await this.counters.get(this.key(key));
    return c ? { totalHits: c.hits, resetTime: c.resetAt } : undefined;
  }

  async increment(key: string): Promise<IncrementResponse> {
    if (++this.increments % 200 === 0) await this.counters.sweepExpired();
    const c = await this.counters.increment(this.key(key), this.windowMs / 1000);
    return { totalHits: c.hits, resetTime: c.resetAt };
  }

  async decrement(key: string): Promise<void> {
    await this.counters.decrement(this.key(key));
  }

  async resetKey(key: string): Promise<void> {
    await this.counters.reset(this.key(key));
  }

  async resetAll(): Promise<void> {
    await this.counters.resetPrefix(this.prefix);
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
 * not counted. A counter store that fails (database unreachable) lets the attempt through uncounted (fail open; the
 * login itself then needs the database). Over the limit: 429 in the error envelope with `Retry-After` (seconds), and one warning
 * log line per event with the address and username (never the password).
 */
export function loginRateLimiters(counters: RateLimitRepository, options: LoginRateOptions, logger: Logger): { byIp: RequestHandler; byAccount: RequestHandler } {
  const make = (prefix: string, limit: number, keyOf: (req: import('express').Request) => string | undefined, what: string) =>
    rateLimit({
      windowMs: options.windowMs,
      limit,
      store: new SharedRateLimitStore(counters, prefix),
      standardHeaders: 'draft-7',
      legacyHeaders: false,
      skipSuccessfulRequests: true,
      // Fail open (issue 36): when the counters' database is unreachable the attempt is not counted and goes on to
      // the credential check, which needs the same database and answers 503 with Retry-After; a store fault must
      // never turn into a 500 of its own.
      passOnStoreError: true,
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
        sendError(res, 429, 'rate_limited', `Too many failed login attempts; try again in ${retryAfter} s`, req.requestId);
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

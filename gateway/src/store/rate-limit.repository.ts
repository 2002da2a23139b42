import type { DataSource } from 'typeorm';
import { queryRows } from '@polyphony/platform';

/** One counter: hits in the current fixed window and when the window ends. */
export interface RateCounter {
  hits: number;
  resetAt: Date;
}

/**
 * Persistence of auth.rate_limits: fixed-window counters keyed by a string (`<prefix><key>`), shared by every
 * gateway replica. Windows use the database clock (`clock_timestamp()`), so replicas agree on them.
 */
export class RateLimitRepository {
  constructor(private readonly ds: DataSource) {}

  /** The live counter of `key` (its window not yet over), or undefined. */
  async get(key: string): Promise<RateCounter | undefined> {
    const rows = await queryRows<{ hits: number; reset_at: Date }>(this.ds, `SELECT hits, reset_at FROM auth.rate_limits WHERE key = $1 AND reset_at > clock_timestamp()`, [key]);
    return rows[0] ? { hits: rows[0].hits, resetAt: rows[0].reset_at } : undefined;
  }

  /** Counts one hit on `key`: a new window of `windowSeconds` when none is live, else one more in the live one (one upsert). */
  async increment(key: string, windowSeconds: number): Promise<RateCounter> {
    const rows = await queryRows<{ hits: number; reset_at: Date }>(
      this.ds,
      `INSERT INTO auth.rate_limits AS r (key, hits, reset_at) VALUES ($1, 1, clock_timestamp() + make_interval(secs => $2))
       ON CONFLICT (key) DO UPDATE SET
         hits = CASE WHEN r.reset_at <= clock_timestamp() THEN 1 ELSE r.hits + 1 END,
         reset_at = CASE WHEN r.reset_at <= clock_timestamp() THEN EXCLUDED.reset_at ELSE r.reset_at END
       RETURNING hits, reset_at`,
      [key, windowSeconds],
    );
    return { hits: rows[0]!.hits, resetAt: rows[0]!.reset_at };
  }

  /** Takes one hit back from the live counter of `key` (never below 0). */
  async decrement(key: string): Promise<void> {
    await queryRows(this.ds, `UPDATE auth.rate_limits SET hits = greatest(hits - 1, 0) WHERE key = $1 AND reset_at > clock_timestamp() RETURNING key`, [key]);
  }

  /** Forgets the counter of `key`. */
  async reset(key: string): Promise<void> {
    await this.ds.query(`DELETE FROM auth.rate_limits WHERE key = $1`, [key]);
  }

  /** Forgets every counter whose key starts with `prefix`. */
  async resetPrefix(prefix: string): Promise<void> {
    await this.ds.query(`DELETE FROM auth.rate_limits WHERE starts_with(key, $1)`, [prefix]);
  }

  /** Deletes counters whose window ended more than a minute ago. */
  async sweepExpired(): Promise<void> {
    await this.ds.query(`DELETE FROM auth.rate_limits WHERE reset_at < clock_timestamp() - interval '1 minute'`);
  }
}

import type { DataSource } from 'typeorm';
import { queryRows } from '@polyphony/platform';
import { type UserRecord, type UserRow, toUser, userColumns } from './user.repository';

/** A live session joined with its user (epoch milliseconds for the times). */
export interface SessionWithUser {
  id: string;
  expiresAt: number;
  maxExpiresAt: number;
  user: UserRecord;
}

interface Row extends UserRow {
  sid: string;
  expires_ms: string;
  max_ms: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Persistence of auth.sessions. A session is valid while its row exists and both expiry times are
 * in the future; role and password changes delete a user's rows by trigger (migration 1732200000000).
 */
export class SessionRepository {
  private sweeps = 0;

  constructor(private readonly ds: DataSource) {}

  /** Creates a session for `userId` ending after `ttlSeconds` of idleness or `maxSeconds` in all. */
  async create(userId: string, ttlSeconds: number, maxSeconds: number): Promise<{ id: string; expiresAt: number }> {
    if (++this.sweeps % 100 === 1) await this.ds.query(`DELETE FROM auth.sessions WHERE expires_at < now() OR max_expires_at < now()`);
    const rows: Array<{ id: string; expires_ms: string }> = await this.ds.query(
      `INSERT INTO auth.sessions (user_id, expires_at, max_expires_at)
       VALUES ($1, now() + make_interval(secs => $2), now() + make_interval(secs => $3))
       RETURNING id, (extract(epoch from expires_at) * 1000)::bigint AS expires_ms`,
      [userId, ttlSeconds, maxSeconds],
    );
    return { id: rows[0]!.id, expiresAt: Number(rows[0]!.expires_ms) };
  }

  /** The live session `id` with its user; undefined when unknown, revoked or expired. */
  async findLive(id: string): Promise<SessionWithUser | undefined> {
    if (!UUID.test(id)) return undefined;
    const rows: Row[] = await this.ds.query(
      `SELECT s.id AS sid, (extract(epoch from s.expires_at) * 1000)::bigint AS expires_ms, (extract(epoch from s.max_expires_at) * 1000)::bigint AS max_ms,
              ${userColumns('u')}
         FROM auth.sessions s JOIN auth.service_users u ON u.id = s.user_id
        WHERE s.id = $1 AND s.expires_at > now() AND s.max_expires_at > now()`,
      [id],
    );
    const r = rows[0];
    if (!r) return undefined;
    return {
      id: r.sid,
      expiresAt: Number(r.expires_ms),
      maxExpiresAt: Number(r.max_ms),
      user: toUser(r),
    };
  }

  /** Moves the idle expiry to now + ttlSeconds (never past the absolute end); returns the new expiry. */
  async extend(id: string, ttlSeconds: number): Promise<number | undefined> {
    const rows = await queryRows<{ expires_ms: string }>(
      this.ds,
      `UPDATE auth.sessions SET expires_at = least(max_expires_at, now() + make_interval(secs => $2))
        WHERE id = $1 RETURNING (extract(epoch from expires_at) * 1000)::bigint AS expires_ms`,
      [id, ttlSeconds],
    );
    return rows[0] ? Number(rows[0].expires_ms) : undefined;
  }

  /** Ends one session (logout). */
  async revoke(id: string): Promise<void> {
    if (!UUID.test(id)) return;
    await this.ds.query(`DELETE FROM auth.sessions WHERE id = $1`, [id]);
  }

  /** Ends every session of a user. */
  async revokeAllOf(userId: string): Promise<void> {
    await this.ds.query(`DELETE FROM auth.sessions WHERE user_id = $1`, [userId]);
  }
}

import type { DataSource } from 'typeorm';
import { mapUniqueViolation, queryRows } from '@polyphony/platform';

export interface UserRecord {
  id: string;
  username: string;
  role: 'admin' | 'user';
  passwordHash: string;
  /** Epoch milliseconds. */
  passwordChangedAt: number;
  createdAt: Date;
}

/** A service_users row as {@link userColumns} selects it. */
export interface UserRow {
  id: string;
  username: string;
  role: 'admin' | 'user';
  password_hash: string;
  changed_ms: string;
  created_at: Date;
}

/** The select list of a {@link UserRow}, columns qualified by `alias` when given (joins). */
export const userColumns = (alias?: string): string => {
  const c = alias ? `${alias}.` : '';
  return `${c}id, ${c}username, ${c}role, ${c}password_hash, (extract(epoch from ${c}password_changed_at) * 1000)::bigint AS changed_ms, ${c}created_at`;
};
const COLUMNS = userColumns();
/** The record of a {@link UserRow}. */
export const toUser = (r: UserRow): UserRecord => ({ id: r.id, username: r.username, role: r.role, passwordHash: r.password_hash, passwordChangedAt: Number(r.changed_ms), createdAt: r.created_at });

/** Persistence of auth.service_users. Usernames are unique case-insensitively. */
export class UserRepository {
  constructor(private readonly ds: DataSource) {}

  async findById(id: string): Promise<UserRecord | undefined> {
    if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
    const rows: UserRow[] = await this.ds.query(`SELECT ${COLUMNS} FROM auth.service_users WHERE id = $1`, [id]);
    return rows[0] && toUser(rows[0]);
  }

  async findByUsername(username: string): Promise<UserRecord | undefined> {
    const rows: UserRow[] = await this.ds.query(`SELECT ${COLUMNS} FROM auth.service_users WHERE lower(username) = lower($1)`, [username]);
    return rows[0] && toUser(rows[0]);
  }

  async list(): Promise<UserRecord[]> {
    const rows: UserRow[] = await this.ds.query(`SELECT ${COLUMNS} FROM auth.service_users ORDER BY created_at, username`);
    return rows.map(toUser);
  }

  async countAdmins(): Promise<number> {
    const rows: Array<{ n: string }> = await this.ds.query(`SELECT count(*) AS n FROM auth.service_users WHERE role = 'admin'`);
    return Number(rows[0]?.n ?? 0);
  }

  /** Inserts a user; ConflictError on a duplicate username. */
  async create(username: string, role: 'admin' | 'user', passwordHash: string): Promise<UserRecord> {
    try {
      const rows: UserRow[] = await this.ds.query(`INSERT INTO auth.service_users (username, role, password_hash) VALUES ($1, $2, $3) RETURNING ${COLUMNS}`, [username, role, passwordHash]);
      return toUser(rows[0]!);
    } catch (err) {
      mapUniqueViolation(err, `User "${username}" already exists`);
    }
  }

  /** Sets a new hash and password_changed_at = now; returns the new change time (epoch ms). */
  async setPassword(id: string, passwordHash: string): Promise<number> {
    const rows = await queryRows<{ changed_ms: string }>(this.ds,
      `UPDATE auth.service_users SET password_hash = $2, password_changed_at = clock_timestamp() WHERE id = $1 RETURNING (extract(epoch from password_changed_at) * 1000)::bigint AS changed_ms`,
      [id, passwordHash],
    );
    return Number(rows[0]?.changed_ms ?? Date.now());
  }

  /**
   * Deletes a user unless that would remove the last admin. Serialised with a transaction-level
   * advisory lock so two concurrent deletions cannot both pass the last-admin check.
   * Returns 'deleted', 'not_found' or 'last_admin'.
   */
  async deleteGuardingLastAdmin(id: string): Promise<'deleted' | 'not_found' | 'last_admin'> {
    return this.ds.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtext('polyphony-auth-users'))`);
      const rows: Array<{ role: string }> = await m.query(`SELECT role FROM auth.service_users WHERE id = $1`, [id]);
      if (!rows[0]) return 'not_found';
      if (rows[0].role === 'admin') {
        const n: Array<{ n: string }> = await m.query(`SELECT count(*) AS n FROM auth.service_users WHERE role = 'admin'`);
        if (Number(n[0]?.n) <= 1) return 'last_admin';
      }
      await m.query(`DELETE FROM auth.service_users WHERE id = $1`, [id]);
      return 'deleted';
    });
  }
}

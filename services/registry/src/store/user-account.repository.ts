import type { DataSource } from 'typeorm';
import { queryRows } from '@polyphony/platform';
import type { UserAccount, UserAccountStore } from '../domain/account.service';

interface Row {
  user_id: string;
  server_id: string;
  creds: Record<string, string>;
  account_name: string | null;
  libraries: Array<{ id: string; name: string }>;
  limit_to_libraries: boolean | null;
  created_at: Date;
  updated_at: Date;
}

const toAccount = (r: Row): UserAccount => ({
  userId: r.user_id,
  serverId: r.server_id,
  creds: r.creds ?? {},
  accountName: r.account_name,
  libraries: r.libraries ?? [],
  limitToLibraries: r.limit_to_libraries === true,
  linkedAt: r.updated_at,
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Persistence of registry.user_accounts (one row per polyphony user and media server). */
export class PgUserAccountRepository implements UserAccountStore {
  constructor(private readonly ds: DataSource) {}

  async listForUser(userId: string): Promise<UserAccount[]> {
    const rows: Row[] = await this.ds.query(`SELECT * FROM registry.user_accounts WHERE user_id = $1`, [userId]);
    return rows.map(toAccount);
  }

  async find(userId: string, serverId: string): Promise<UserAccount | undefined> {
    if (!UUID.test(serverId)) return undefined;
    const rows: Row[] = await this.ds.query(`SELECT * FROM registry.user_accounts WHERE user_id = $1 AND server_id = $2`, [userId, serverId]);
    return rows[0] && toAccount(rows[0]);
  }

  async setLimitToLibraries(userId: string, serverId: string, on: boolean): Promise<boolean> {
    if (!UUID.test(serverId)) return false;
    const rows = await queryRows(this.ds, `UPDATE registry.user_accounts SET limit_to_libraries = $3, updated_at = now() WHERE user_id = $1 AND server_id = $2 RETURNING server_id`, [userId, serverId, on]);
    return rows.length > 0;
  }

  /** Re-linking keeps the account's `limit_to_libraries` choice. */
  async upsert(a: Omit<UserAccount, 'linkedAt' | 'limitToLibraries'>): Promise<UserAccount> {
    const rows: Row[] = await this.ds.query(
      `INSERT INTO registry.user_accounts (user_id, server_id, creds, account_name, libraries) VALUES ($1, $2, $3::jsonb, $4, $5::jsonb)
       ON CONFLICT (user_id, server_id) DO UPDATE SET creds = EXCLUDED.creds, account_name = EXCLUDED.account_name, libraries = EXCLUDED.libraries, updated_at = now()
       RETURNING *`,
      [a.userId, a.serverId, JSON.stringify(a.creds), a.accountName, JSON.stringify(a.libraries)],
    );
    return toAccount(rows[0]!);
  }

  async removeUser(userId: string): Promise<number> {
    return (await queryRows(this.ds, `DELETE FROM registry.user_accounts WHERE user_id = $1 RETURNING server_id`, [userId])).length;
  }

  async remove(userId: string, serverId: string): Promise<boolean> {
    if (!UUID.test(serverId)) return false;
    const rows = await queryRows(this.ds, `DELETE FROM registry.user_accounts WHERE user_id = $1 AND server_id = $2 RETURNING server_id`, [userId, serverId]);
    return rows.length > 0;
  }
}

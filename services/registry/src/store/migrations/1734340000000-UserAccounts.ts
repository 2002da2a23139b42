import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Households (issue 34): each polyphony user's own account on a media server. `creds` holds the account's
 * credentials without the url (the server's stored url is always used) under the same keys as
 * `music_servers.creds`, so backups seal their secrets the same way (encrypted with a passphrase, else left
 * out; an account left without its secret reads as `needs_relink`). `user_id` is the gateway's
 * `auth.service_users.id` (another unit's schema: no foreign key; an unknown user's rows are never read).
 */
export class UserAccounts1734340000000 implements MigrationInterface {
  name = 'UserAccounts1734340000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS registry.user_accounts (
      user_id text NOT NULL,
      server_id uuid NOT NULL REFERENCES registry.music_servers(id) ON DELETE CASCADE,
      creds jsonb NOT NULL,
      account_name text,
      libraries jsonb NOT NULL DEFAULT '[]'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (user_id, server_id)
    )`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE registry.user_accounts');
  }
}

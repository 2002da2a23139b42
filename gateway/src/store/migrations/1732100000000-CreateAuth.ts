import type { MigrationInterface, QueryRunner } from 'typeorm';
import { settingsTableSql } from '@polyphony/platform';

/** auth schema: service_users (login accounts) and settings (auth seeds: AUTH_ENABLED, API_TOKEN, JWT_SECRET, ...). */
export class CreateAuth1732100000000 implements MigrationInterface {
  name = 'CreateAuth1732100000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE auth.service_users (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      username text NOT NULL,
      role text NOT NULL CHECK (role IN ('admin', 'user')),
      password_hash text NOT NULL,
      password_changed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      created_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE UNIQUE INDEX service_users_username_ci ON auth.service_users (lower(username))`);
    await q.query(settingsTableSql('auth'));
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE auth.settings');
    await q.query('DROP TABLE auth.service_users');
  }
}

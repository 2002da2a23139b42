import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * auth.sessions: one row per login, checked on every cookie request (logout deletes it; a role or
 * password change deletes every session of the user, by trigger so no code path can forget it;
 * deleting the user cascades). auth.rate_limits: fixed-window counters of the login rate limiter,
 * shared by every gateway replica.
 */
export class SessionsAndRateLimits1732200000000 implements MigrationInterface {
  name = 'SessionsAndRateLimits1732200000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE auth.sessions (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      user_id uuid NOT NULL REFERENCES auth.service_users(id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      max_expires_at timestamptz NOT NULL
    )`);
    await q.query(`CREATE INDEX sessions_user ON auth.sessions (user_id)`);
    await q.query(`CREATE INDEX sessions_expiry ON auth.sessions (expires_at)`);
    await q.query(`CREATE FUNCTION auth.end_sessions_of_user() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM auth.sessions WHERE user_id = NEW.id;
        RETURN NEW;
      END $$`);
    await q.query(`CREATE TRIGGER service_users_credentials_changed
      AFTER UPDATE OF role, password_hash ON auth.service_users
      FOR EACH ROW WHEN (OLD.role IS DISTINCT FROM NEW.role OR OLD.password_hash IS DISTINCT FROM NEW.password_hash)
      EXECUTE FUNCTION auth.end_sessions_of_user()`);
    await q.query(`CREATE TABLE auth.rate_limits (
      key text PRIMARY KEY,
      hits integer NOT NULL,
      reset_at timestamptz NOT NULL
    )`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE auth.rate_limits');
    await q.query('DROP TRIGGER service_users_credentials_changed ON auth.service_users');
    await q.query('DROP FUNCTION auth.end_sessions_of_user()');
    await q.query('DROP TABLE auth.sessions');
  }
}

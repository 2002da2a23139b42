import type { MigrationInterface, QueryRunner } from 'typeorm';
import { settingsTableSql } from '@polyphony/platform';

/**
 * registry schema: music_servers (the only home of media-server settings), app_config (general
 * key/value store), tasks (the task board) and settings (service settings seeded from env).
 * "Exactly one default" is enforced by the database: a partial unique index allows at most one,
 * and a deferred constraint trigger requires one whenever any server exists.
 */
export class CreateRegistry1732100000000 implements MigrationInterface {
  name = 'CreateRegistry1732100000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE registry.music_servers (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      name text NOT NULL CHECK (length(trim(name)) > 0),
      server_type text NOT NULL CHECK (server_type IN ('jellyfin','emby','navidrome','lyrion','plex')),
      creds jsonb NOT NULL DEFAULT '{}'::jsonb,
      music_libraries jsonb NOT NULL DEFAULT '[]'::jsonb,
      is_default boolean NOT NULL DEFAULT false,
      track_count integer,
      matched_count integer,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE UNIQUE INDEX music_servers_name_ci ON registry.music_servers (lower(name))`);
    await q.query(`CREATE UNIQUE INDEX music_servers_one_default ON registry.music_servers ((true)) WHERE is_default`);
    await q.query(`CREATE FUNCTION registry.check_one_default() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM registry.music_servers) AND NOT EXISTS (SELECT 1 FROM registry.music_servers WHERE is_default) THEN
          RAISE EXCEPTION 'exactly one default music server is required' USING ERRCODE = '23514';
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE CONSTRAINT TRIGGER music_servers_default_required AFTER INSERT OR UPDATE OR DELETE ON registry.music_servers
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION registry.check_one_default()`);
    await q.query(`CREATE TABLE registry.app_config (key text PRIMARY KEY, value text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE TABLE registry.tasks (
      id text PRIMARY KEY,
      type text NOT NULL,
      owner text NOT NULL,
      state text NOT NULL,
      progress real NOT NULL DEFAULT 0,
      message text NOT NULL DEFAULT '',
      servers jsonb NOT NULL DEFAULT '[]'::jsonb,
      log jsonb NOT NULL DEFAULT '[]'::jsonb,
      details jsonb NOT NULL DEFAULT '{}'::jsonb,
      seq integer NOT NULL DEFAULT 0,
      started_at timestamptz,
      finished_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE INDEX tasks_recent ON registry.tasks (created_at DESC)`);
    await q.query(settingsTableSql('registry'));
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE registry.settings');
    await q.query('DROP TABLE registry.tasks');
    await q.query('DROP TABLE registry.app_config');
    await q.query('DROP TRIGGER music_servers_default_required ON registry.music_servers');
    await q.query('DROP FUNCTION registry.check_one_default()');
    await q.query('DROP TABLE registry.music_servers');
  }
}

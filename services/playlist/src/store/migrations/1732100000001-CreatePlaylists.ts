import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Playlists this service wrote on media servers (so that only OUR playlists are ever deleted: a
 * user's own playlists are never touched, whatever their name), their tracks (canonical id and the
 * provider id sent to the server), and clustering runs (at most one live, enforced by a unique
 * partial index).
 */
export class CreatePlaylists1732100000001 implements MigrationInterface {
  name = 'CreatePlaylists1732100000001';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE playlist.playlists (
      id uuid PRIMARY KEY,
      server_id text NOT NULL,
      provider_playlist_id text NOT NULL,
      name text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('instant','automatic')),
      run_id uuid,
      track_count integer NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (server_id, provider_playlist_id)
    )`);
    await q.query(`CREATE INDEX playlists_server_kind ON playlist.playlists (server_id, kind)`);
    await q.query(`CREATE TABLE playlist.playlist_tracks (
      playlist_id uuid NOT NULL REFERENCES playlist.playlists(id) ON DELETE CASCADE,
      position integer NOT NULL,
      item_id text NOT NULL,
      provider_id text NOT NULL,
      title text,
      author text,
      PRIMARY KEY (playlist_id, position)
    )`);
    await q.query(`CREATE TABLE playlist.clustering_runs (
      id uuid PRIMARY KEY,
      state text NOT NULL CHECK (state IN ('NEW','RUNNING','SUCCESS','FAIL','REVOKED')),
      message text NOT NULL DEFAULT '',
      progress real NOT NULL DEFAULT 0,
      params jsonb NOT NULL DEFAULT '{}'::jsonb,
      servers jsonb NOT NULL DEFAULT '[]'::jsonb,
      details jsonb NOT NULL DEFAULT '{}'::jsonb,
      log jsonb NOT NULL DEFAULT '[]'::jsonb,
      seq integer NOT NULL DEFAULT 0,
      cancel_requested boolean NOT NULL DEFAULT false,
      started_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz,
      heartbeat_at timestamptz NOT NULL DEFAULT now()
    )`);
    // At most one live run: a second start is refused by the database, not only by a check.
    await q.query(`CREATE UNIQUE INDEX clustering_runs_one_live ON playlist.clustering_runs ((true)) WHERE state IN ('NEW','RUNNING')`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE playlist.clustering_runs');
    await q.query('DROP TABLE playlist.playlist_tracks');
    await q.query('DROP TABLE playlist.playlists');
  }
}

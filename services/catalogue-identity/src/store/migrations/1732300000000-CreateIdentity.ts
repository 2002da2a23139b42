import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * catalogue schema, content identity (spec "Content identity", "Resources": score, track mapping,
 * artist mapping):
 *
 * - score: one row per distinct song under its canonical id (fp_<v><50 hex>). `source_server_id` /
 *   `source_provider_id` name the provider file the row was analysed from (redelivery of that file
 *   answers 'new' again, so an interrupted pipeline is re-run).
 * - embedding: raw 200-d float32 little-endian vector, its 200-bit signature (bit(200), NULL for an
 *   unsignable embedding) and the embedder version.
 * - signature_band: the band index of the Hamming-tolerant candidate lookup (domain bands.ts): one row
 *   per (song, band) with the band's value; the layout it was built with is in id_scheme_state. It is
 *   keyed by score.song_no, a surrogate that never changes, so a relabel (which renames item ids)
 *   never rewrites the band rows (11 per song: the bulk of the index).
 * - track_server_map: one row per provider file, PK (server_id, provider_id); `folder` is the
 *   normalised parent folder of `file_path` (same-folder veto); `duration_seconds` is the metadata
 *   duration from the server's listing (duration back-fill).
 * - chromaprint: raw Chromaprint of a provider file (fpcalc -raw words as signed int4), removed with
 *   its mapping row.
 * - artist_server_map: provider artist ids per server, with the artist name and its normalised form.
 * - server_availability: per-server change counter of the mapping set (the index's mask cache key).
 * - deleted_server: tombstones of servers deleted from the registry (late resolves are refused).
 * - id_scheme_state: single row, the scheme version the ids were minted under and the band layout.
 * - relabel_map: old id -> new id of every relabel run, written in the relabel's transaction so the
 *   index can repoint its ids (GET /internal/ids/relabel-map).
 *
 * embedding and track_server_map reference score with ON UPDATE CASCADE so a relabel renames a song in
 * one statement.
 */
export class CreateIdentity1732300000000 implements MigrationInterface {
  name = 'CreateIdentity1732300000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE catalogue.score (
      item_id text PRIMARY KEY,
      song_no bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
      title text NOT NULL DEFAULT '',
      artist text NOT NULL DEFAULT '',
      album text,
      album_artist text,
      year integer,
      rating real,
      duration_seconds double precision,
      file_path text,
      tempo real,
      key text,
      scale text,
      energy real,
      lyrics text,
      embedder_version text NOT NULL,
      source_server_id text,
      source_provider_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE TABLE catalogue.embedding (
      item_id text PRIMARY KEY REFERENCES catalogue.score (item_id) ON DELETE CASCADE ON UPDATE CASCADE,
      vector bytea NOT NULL,
      signature bit(200),
      embedder_version text NOT NULL
    )`);
    await q.query(`CREATE TABLE catalogue.signature_band (
      song_no bigint NOT NULL REFERENCES catalogue.score (song_no) ON DELETE CASCADE,
      band_no smallint NOT NULL,
      band_value integer NOT NULL,
      PRIMARY KEY (song_no, band_no)
    )`);
    await q.query(`CREATE INDEX signature_band_lookup ON catalogue.signature_band (band_no, band_value, song_no)`);
    await q.query(`CREATE TABLE catalogue.track_server_map (
      server_id text NOT NULL,
      provider_id text NOT NULL,
      item_id text NOT NULL REFERENCES catalogue.score (item_id) ON DELETE CASCADE ON UPDATE CASCADE,
      file_path text,
      folder text,
      artist_id text,
      match_tier text NOT NULL DEFAULT 'analysis',
      duration_seconds double precision,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (server_id, provider_id)
    )`);
    await q.query(`CREATE INDEX track_server_map_item ON catalogue.track_server_map (item_id, server_id)`);
    await q.query(`CREATE INDEX track_server_map_server_item ON catalogue.track_server_map (server_id, item_id)`);
    await q.query(`CREATE TABLE catalogue.chromaprint (
      server_id text NOT NULL,
      provider_id text NOT NULL,
      fingerprint integer[] NOT NULL,
      duration_seconds double precision,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (server_id, provider_id),
      FOREIGN KEY (server_id, provider_id) REFERENCES catalogue.track_server_map (server_id, provider_id) ON DELETE CASCADE
    )`);
    await q.query(`CREATE TABLE catalogue.artist_server_map (
      server_id text NOT NULL,
      provider_artist_id text NOT NULL,
      artist_name text NOT NULL,
      artist_norm text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (server_id, provider_artist_id)
    )`);
    await q.query(`CREATE INDEX artist_server_map_name ON catalogue.artist_server_map (server_id, artist_norm)`);
    await q.query(`CREATE TABLE catalogue.server_availability (
      server_id text PRIMARY KEY,
      version bigint NOT NULL DEFAULT 0,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE TABLE catalogue.deleted_server (
      server_id text PRIMARY KEY,
      deleted_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE TABLE catalogue.id_scheme_state (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      version integer NOT NULL,
      band_layout_id text NOT NULL,
      relabelled_at timestamptz,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE TABLE catalogue.relabel_map (
      to_version integer NOT NULL,
      old_id text NOT NULL,
      new_id text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('relabel', 'merge', 'unsignable')),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (to_version, old_id)
    )`);
  }
  async down(q: QueryRunner): Promise<void> {
    for (const t of ['relabel_map', 'id_scheme_state', 'deleted_server', 'server_availability', 'artist_server_map', 'chromaprint', 'track_server_map', 'signature_band', 'embedding', 'score']) {
      await q.query(`DROP TABLE catalogue.${t}`);
    }
  }
}

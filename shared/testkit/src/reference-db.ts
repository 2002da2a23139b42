/**
 * A database in the reference implementation's schema (AudioMuse-AI; reference-implementation.md 1.3), for
 * the import tests and the import benchmark: the tables the import reads, in the v3.x multi-server layout
 * (`music_servers`, `track_server_map`, `artist_server_map`) or the older single-server one (provider ids as
 * `score.item_id`, `score.file_path`, server settings in `app_config`). Written from the documented columns.
 */
import { deflateSync } from 'node:zlib';
import type { Client } from 'pg';

/** DDL of the reference tables (both layouts share all but the multi-server ones). */
export function referenceSchemaSql(layout: 'multi-server' | 'single-server'): string[] {
  const common = [
    `CREATE TABLE score (item_id TEXT PRIMARY KEY, title TEXT, author TEXT, album TEXT, album_artist TEXT, tempo REAL, key TEXT, scale TEXT, mood_vector TEXT,
       created_at TIMESTAMP DEFAULT now(), energy REAL, other_features TEXT, year INTEGER, rating INTEGER, file_path TEXT, duration DOUBLE PRECISION, search_u TEXT)`,
    `CREATE TABLE embedding (item_id TEXT PRIMARY KEY REFERENCES score (item_id) ON DELETE CASCADE, embedding BYTEA, poincare_embedding BYTEA, hyperbolic_radius DOUBLE PRECISION)`,
    `CREATE TABLE lyrics_embedding (item_id TEXT PRIMARY KEY REFERENCES score (item_id) ON DELETE CASCADE, embedding BYTEA, axis_vector BYTEA, updated_at TIMESTAMP DEFAULT now())`,
    `CREATE TABLE app_config (key TEXT PRIMARY KEY, value TEXT, updated_at TIMESTAMP DEFAULT now())`,
    `CREATE TABLE audiomuse_users (id SERIAL PRIMARY KEY, username TEXT UNIQUE NOT NULL, password_hash TEXT NOT NULL, role TEXT NOT NULL DEFAULT 'user', created_at TIMESTAMP DEFAULT now(), password_changed_at TIMESTAMP)`,
    `CREATE TABLE playlist (id SERIAL PRIMARY KEY, playlist_name TEXT, item_id TEXT, title TEXT, author TEXT${layout === 'multi-server' ? ', server_id TEXT' : ''})`,
    `CREATE TABLE alchemy_anchors (name TEXT PRIMARY KEY, centroid JSONB, exclusions JSONB)`,
    `CREATE TABLE alchemy_radios (id SERIAL PRIMARY KEY, anchor_name TEXT, temperature REAL, n_results INTEGER, enabled BOOLEAN DEFAULT true)`,
    `CREATE TABLE cron (id SERIAL PRIMARY KEY, name TEXT, task_type TEXT, cron_expr TEXT, enabled BOOLEAN DEFAULT true, last_run TIMESTAMP)`,
  ];
  if (layout === 'single-server') {
    return [
      ...common,
      `CREATE TABLE chromaprint (provider_track_id TEXT PRIMARY KEY, fingerprint BYTEA, updated_at TIMESTAMP DEFAULT now())`,
      `CREATE TABLE analysis_exclusions (provider_item_id TEXT PRIMARY KEY, duration_seconds DOUBLE PRECISION, title TEXT, artist TEXT, reason_code TEXT, created_at TIMESTAMP DEFAULT now(), updated_at TIMESTAMP DEFAULT now())`,
    ];
  }
  return [
    ...common,
    `CREATE TABLE music_servers (server_id TEXT PRIMARY KEY, name TEXT, server_type TEXT, creds JSONB, music_libraries TEXT, is_default BOOLEAN DEFAULT false,
       created_at TIMESTAMP DEFAULT now(), updated_at TIMESTAMP DEFAULT now(), track_count INTEGER)`,
    `CREATE TABLE track_server_map (item_id TEXT REFERENCES score (item_id) ON UPDATE CASCADE ON DELETE CASCADE, server_id TEXT REFERENCES music_servers (server_id) ON DELETE CASCADE,
       provider_track_id TEXT, match_tier TEXT, file_path TEXT, updated_at TIMESTAMP DEFAULT now(), PRIMARY KEY (server_id, provider_track_id))`,
    `CREATE TABLE artist_server_map (artist_name TEXT, server_id TEXT, provider_artist_id TEXT, updated_at TIMESTAMP DEFAULT now(), PRIMARY KEY (artist_name, server_id), UNIQUE (server_id, provider_artist_id))`,
    `CREATE TABLE chromaprint (server_id TEXT, provider_track_id TEXT, fingerprint BYTEA, updated_at TIMESTAMP DEFAULT now(), PRIMARY KEY (server_id, provider_track_id))`,
    `CREATE TABLE analysis_exclusions (server_id TEXT, provider_item_id TEXT, duration_seconds DOUBLE PRECISION, title TEXT, artist TEXT, reason_code TEXT,
       created_at TIMESTAMP DEFAULT now(), updated_at TIMESTAMP DEFAULT now(), PRIMARY KEY (server_id, provider_item_id))`,
  ];
}

/** The reference's `embedding` bytes: raw little-endian float32 (numpy `tobytes`). */
export function referenceVectorBytes(v: ArrayLike<number>): Buffer {
  const b = Buffer.alloc(v.length * 4);
  for (let i = 0; i < v.length; i++) b.writeFloatLE(v[i]!, i * 4);
  return b;
}

/** The reference's `chromaprint.fingerprint`: zlib of the raw uint32 words (little-endian). */
export function referenceChromaprintBytes(words: ArrayLike<number>): Buffer {
  const b = Buffer.alloc(words.length * 4);
  for (let i = 0; i < words.length; i++) b.writeUInt32LE(words[i]! >>> 0, i * 4);
  return deflateSync(b);
}

/** Inserts rows into a reference table in multi-row statements of `chunk` rows. */
export async function insertReferenceRows(c: Client, table: string, rows: Array<Record<string, unknown>>, chunk = 500): Promise<void> {
  if (rows.length === 0) return;
  const cols = Object.keys(rows[0]!);
  for (let i = 0; i < rows.length; i += chunk) {
    const part = rows.slice(i, i + chunk);
    const params: unknown[] = [];
    const values = part.map((r) => `(${cols.map((col) => (params.push(r[col] ?? null), `$${params.length}`)).join(', ')})`);
    await c.query(`INSERT INTO ${table} (${cols.join(', ')}) VALUES ${values.join(', ')}`, params);
  }
}

import type { DataSource, EntityManager } from 'typeorm';
import { ConflictError, mapUniqueViolation, queryRows } from '@polyphony/platform';
import type { ServerStore } from '../domain/ports';
import type { MusicServer } from '../domain/server';

interface Row {
  id: string;
  name: string;
  server_type: MusicServer['type'];
  creds: Record<string, string>;
  music_libraries: string[];
  is_default: boolean;
  track_count: number | null;
  matched_count: number | null;
  change_detection_mode: MusicServer['changeDetection']['mode'];
  change_detection_interval_seconds: number;
  change_push_token_sha256: string | null;
  created_at: Date;
  updated_at: Date;
}
const toServer = (r: Row): MusicServer => ({
  id: r.id,
  name: r.name,
  type: r.server_type,
  creds: r.creds ?? {},
  musicLibraries: r.music_libraries ?? [],
  isDefault: r.is_default,
  trackCount: r.track_count,
  matchedCount: r.matched_count,
  changeDetection: { mode: r.change_detection_mode, intervalSeconds: r.change_detection_interval_seconds, pushTokenSha256: r.change_push_token_sha256 },
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Persistence of registry.music_servers. Mutations run in transactions under one advisory lock so default rules hold under concurrency. */
export class ServerRepository implements ServerStore {
  constructor(private readonly ds: DataSource) {}

  async list(): Promise<MusicServer[]> {
    const rows: Row[] = await this.ds.query(`SELECT * FROM registry.music_servers ORDER BY is_default DESC, lower(name)`);
    return rows.map(toServer);
  }

  async findById(id: string, m: EntityManager | DataSource = this.ds): Promise<MusicServer | undefined> {
    if (!UUID.test(id)) return undefined;
    const rows: Row[] = await m.query(`SELECT * FROM registry.music_servers WHERE id = $1`, [id]);
    return rows[0] && toServer(rows[0]);
  }

  /** By internal id, or by display name (case-insensitive). */
  async findByIdOrName(value: string): Promise<MusicServer | undefined> {
    const byId = await this.findById(value);
    if (byId) return byId;
    const rows: Row[] = await this.ds.query(`SELECT * FROM registry.music_servers WHERE lower(name) = lower($1)`, [value]);
    return rows[0] && toServer(rows[0]);
  }

  async findDefault(): Promise<MusicServer | undefined> {
    const rows: Row[] = await this.ds.query(`SELECT * FROM registry.music_servers WHERE is_default`);
    return rows[0] && toServer(rows[0]);
  }

  /** Runs `fn` in a transaction holding the registry's write lock. */
  async write<T>(fn: (m: EntityManager) => Promise<T>): Promise<T> {
    return this.ds.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtext('polyphony-registry-servers'))`);
      return fn(m);
    });
  }

  async insert(m: EntityManager, s: { name: string; type: string; creds: Record<string, string>; musicLibraries: string[]; isDefault: boolean; changeDetection: MusicServer['changeDetection'] }): Promise<MusicServer> {
    try {
      const cd = s.changeDetection;
      const rows: Row[] = await m.query(
        `INSERT INTO registry.music_servers (name, server_type, creds, music_libraries, is_default, change_detection_mode, change_detection_interval_seconds, change_push_token_sha256)
         VALUES ($1, $2, $3::jsonb, $4::jsonb, $5, $6, $7, $8) RETURNING *`,
        [s.name, s.type, JSON.stringify(s.creds), JSON.stringify(s.musicLibraries), s.isDefault, cd.mode, cd.intervalSeconds, cd.pushTokenSha256],
      );
      return toServer(rows[0]!);
    } catch (err) {
      mapUniqueViolation(err, `A server named "${s.name}" already exists`);
    }
  }

  async update(m: EntityManager, id: string, s: { name: string; type: string; creds: Record<string, string>; musicLibraries: string[]; changeDetection: MusicServer['changeDetection'] }): Promise<MusicServer> {
    try {
      const cd = s.changeDetection;
      const rows = await queryRows<Row>(m,
        `UPDATE registry.music_servers SET name = $2, server_type = $3, creds = $4::jsonb, music_libraries = $5::jsonb,
                change_detection_mode = $6, change_detection_interval_seconds = $7, change_push_token_sha256 = $8, updated_at = now() WHERE id = $1 RETURNING *`,
        [id, s.name, s.type, JSON.stringify(s.creds), JSON.stringify(s.musicLibraries), cd.mode, cd.intervalSeconds, cd.pushTokenSha256],
      );
      if (!rows[0]) throw new ConflictError('Server vanished during update');
      return toServer(rows[0]);
    } catch (err) {
      if (err instanceof ConflictError) throw err;
      mapUniqueViolation(err, `A server named "${s.name}" already exists`);
    }
  }

  /** Moves the default flag to `id` (both updates in one transaction; the deferred trigger checks at commit). */
  async setDefault(m: EntityManager, id: string): Promise<void> {
    await m.query(`UPDATE registry.music_servers SET is_default = false, updated_at = now() WHERE is_default AND id <> $1`, [id]);
    await m.query(`UPDATE registry.music_servers SET is_default = true, updated_at = now() WHERE id = $1`, [id]);
  }

  async delete(m: EntityManager, id: string): Promise<void> {
    await m.query(`DELETE FROM registry.music_servers WHERE id = $1`, [id]);
  }

  async count(m: EntityManager | DataSource = this.ds): Promise<number> {
    const rows: Array<{ n: string }> = await m.query(`SELECT count(*) AS n FROM registry.music_servers`);
    return Number(rows[0]?.n ?? 0);
  }

  /** Removes the credential-less seed entry a fresh install starts with. */
  async deleteSeedEntries(m: EntityManager): Promise<number> {
    const rows = await queryRows(m, `DELETE FROM registry.music_servers WHERE creds = '{}'::jsonb RETURNING id`);
    return rows.length;
  }

  /** Stores counts reported by the catalogue (track count from the last full fetch, matched songs). */
  async setCounts(id: string, trackCount: number | null, matchedCount: number | null): Promise<void> {
    await this.ds.query(
      `UPDATE registry.music_servers SET track_count = COALESCE($2, track_count), matched_count = COALESCE($3, matched_count) WHERE id = $1`,
      [id, trackCount, matchedCount],
    );
  }
}

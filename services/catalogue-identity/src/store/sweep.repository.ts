/**
 * SQL of the sweep and the cleaning (spec "Setup-time alignment", "Cleaning"): keyset streams of the
 * local catalogue and of one server's mapping rows, and the chunk writes. Every write transaction holds
 * the catalogue write lock and the server's lock SHARED (like an analysis resolve: a relabel or a server
 * deletion waits for it) and refuses a server deleted meanwhile.
 *
 * Only mapping rows are ever removed by a sweep or a cleaning prune; score rows go only through
 * {@link SweepRepository.deleteOrphansIf} (opt-in orphan deletion of the cleaning).
 */
import type { DataSource } from 'typeorm';
import { ConflictError, queryRows } from '@polyphony/platform';
import type { LocalSong, Match } from '../domain/sweep/matcher';
import type { MappedRow, RefreshPlan } from '../domain/sweep/refresh';
import type { RemoteIndex, Tier } from '../domain/sweep/remote-index';
import { normaliseArtistName } from '../domain/names';
import { normalisePath, parentFolder } from '../domain/identity/gates';
import { bumpAvailability } from './identity.repository';
import { CATALOGUE_WRITE_LOCK, lockExclusive, lockShared, serverLockKey } from './locks';
import type { Queryable } from './sql';
import type { ChunkWriteResult, OrphanReport, RefreshWriteResult, SweepStore } from '../domain/ports';

/** Thrown when the server was deleted from the registry while a sweep or cleaning worked on it. */
export class ServerDeletedDuringTaskError extends ConflictError {
  constructor(serverId: string) {
    super(`Server ${serverId} was deleted while the task ran`, 'server_deleted');
  }
}

function countTiers(rows: Array<{ match_tier: Tier }>): Partial<Record<Tier, number>> {
  const out: Partial<Record<Tier, number>> = {};
  for (const r of rows) out[r.match_tier] = (out[r.match_tier] ?? 0) + 1;
  return out;
}

/**
 * SQL boolean: whether server `server` speaks for the metadata (album, album artist, year, rating) of the song
 * row `s` when its sweep refreshes it. A song held by several servers is described by one of them, so its
 * stored metadata never becomes a mix of servers (issue 30: the album of a tagless copy on server B written
 * over the tagged song of the default server A left the song's title/artist/album key matching no tagged
 * copy, and a third server's sweep left those songs unmapped). In order: the default server (when it holds
 * the song: the rule the file path follows); else the server the song was analysed from
 * (`source_server_id`), when it still holds it; else every server holding it.
 */
export function metadataAuthoritySql(s: string, server: string, defaultServer: string): string {
  return `(CASE WHEN ${defaultServer} IS NULL OR ${server} = ${defaultServer} THEN true
               WHEN EXISTS (SELECT 1 FROM catalogue.track_server_map d WHERE d.item_id = ${s}.item_id AND d.server_id = ${defaultServer}) THEN false
               WHEN ${s}.source_server_id = ${server} THEN true
               WHEN ${s}.source_server_id IS NOT NULL AND EXISTS (SELECT 1 FROM catalogue.track_server_map o WHERE o.item_id = ${s}.item_id AND o.server_id = ${s}.source_server_id) THEN false
               ELSE true END)`;
}

/** Persistence of the sweep and the cleaning (the domain's SweepStore port, SQL over `catalogue`). */
export class SweepRepository implements SweepStore {
  constructor(private readonly ds: DataSource) {}

  private async serverWrite<T>(serverId: string, work: (m: Queryable) => Promise<T>): Promise<T> {
    return this.ds.transaction(async (m) => {
      await lockShared(m, [CATALOGUE_WRITE_LOCK, serverLockKey(serverId)]);
      const dead = await m.query(`SELECT 1 FROM catalogue.deleted_server WHERE server_id = $1`, [serverId]);
      if ((dead as unknown[]).length > 0) throw new ServerDeletedDuringTaskError(serverId);
      return work(m);
    });
  }

  /** Songs in the catalogue (score rows). */
  async songCount(): Promise<number> {
    const rows = await queryRows<{ n: string }>(this.ds, `SELECT count(*) AS n FROM catalogue.score`);
    return Number(rows[0]?.n ?? 0);
  }

  /** Mapping rows of the server. */
  async mappingCount(serverId: string): Promise<number> {
    const rows = await queryRows<{ n: string }>(this.ds, `SELECT count(*) AS n FROM catalogue.track_server_map WHERE server_id = $1`, [serverId]);
    return Number(rows[0]?.n ?? 0);
  }

  /** The database clock (mapping rows written before it are older than a listing fetched after it). */
  async now(): Promise<Date> {
    const rows = await queryRows<{ t: Date }>(this.ds, `SELECT clock_timestamp() AS t`);
    return rows[0]!.t;
  }

  /**
   * Flags in `remote` every provider id the server already has a mapping for (keyset pages of
   * `pageSize`; memory: one page).
   * @returns stored mapping rows and how many of them are in the listing.
   */
  async markMapped(serverId: string, remote: RemoteIndex, pageSize: number): Promise<{ stored: number; listed: number }> {
    let after: string | null = null;
    let stored = 0;
    let listed = 0;
    for (;;) {
      const rows: Array<{ provider_id: string }> = await queryRows(
        this.ds,
        `SELECT provider_id FROM catalogue.track_server_map WHERE server_id = $1 AND ($2::text IS NULL OR provider_id > $2) ORDER BY provider_id LIMIT $3`,
        [serverId, after, pageSize],
      );
      for (const r of rows) {
        stored++;
        if (remote.markMapped(r.provider_id)) listed++;
      }
      if (rows.length < pageSize) return { stored, listed };
      after = rows[rows.length - 1]!.provider_id;
    }
  }

  /**
   * One chunk of the local catalogue for a sweep of `serverId`: songs NOT mapped on that server, after
   * `after` in id order, with every file path known for them (the song's own path and each mapping row's,
   * across all servers).
   * @returns the songs and the keyset cursor of the next chunk (null at the end).
   */
  async localChunk(serverId: string, after: string | null, limit: number): Promise<{ songs: LocalSong[]; next: string | null; scanned: number }> {
    const rows: Array<{ item_id: string; title: string; artist: string; album: string | null; paths: string[]; mapped_here: boolean }> = await queryRows(
      this.ds,
      `SELECT s.item_id, s.title, s.artist, s.album,
              ARRAY(SELECT DISTINCT p FROM (SELECT s.file_path AS p UNION ALL SELECT m.file_path FROM catalogue.track_server_map m WHERE m.item_id = s.item_id) x WHERE p IS NOT NULL) AS paths,
              EXISTS (SELECT 1 FROM catalogue.track_server_map h WHERE h.item_id = s.item_id AND h.server_id = $1) AS mapped_here
         FROM catalogue.score s
        WHERE ($2::text IS NULL OR s.item_id > $2::text)
        ORDER BY s.item_id LIMIT $3`,
      [serverId, after, limit],
    );
    const songs: LocalSong[] = [];
    for (const r of rows) if (!r.mapped_here) songs.push({ itemId: r.item_id, title: r.title, artist: r.artist, album: r.album, paths: r.paths });
    return { songs, next: rows.length === limit ? rows[rows.length - 1]!.item_id : null, scanned: rows.length };
  }

  /**
   * Writes one chunk's matches: retractions first (rows of this sweep that turned ambiguous or were
   * taken over; only rows carrying the sweep's tier for that song, so an analysis row is never touched),
   * then the new rows with the match tier, the server's own path (and folder), artist id and listed
   * duration. Bumps the server's availability counter when anything changed.
   */
  async writeMatches(serverId: string, writes: readonly Match[], retracts: readonly Match[], remote: RemoteIndex): Promise<ChunkWriteResult> {
    if (writes.length === 0 && retracts.length === 0) return { written: 0, retracted: 0, writtenByTier: {}, retractedByTier: {} };
    return this.serverWrite(serverId, async (m) => {
      let retracted: Array<{ match_tier: Tier }> = [];
      if (retracts.length > 0) {
        retracted = await queryRows(
          m,
          `DELETE FROM catalogue.track_server_map t USING unnest($2::text[], $3::text[], $4::text[]) AS u(pid, item, tier)
            WHERE t.server_id = $1 AND t.provider_id = u.pid AND t.item_id = u.item AND t.match_tier = u.tier RETURNING t.match_tier`,
          [serverId, retracts.map((r) => r.providerId), retracts.map((r) => r.itemId), retracts.map((r) => r.tier)],
        );
      }
      let written: Array<{ match_tier: Tier }> = [];
      if (writes.length > 0) {
        const paths: Array<string | null> = [];
        const folders: Array<string | null> = [];
        const artists: Array<string | null> = [];
        const durations: Array<number | null> = [];
        const libraries: Array<string | null> = [];
        const stamps: Array<string | null> = [];
        for (const w of writes) {
          const path = remote.path(w.remote);
          const norm = normalisePath(path);
          paths.push(path ?? null);
          folders.push(norm === null ? null : parentFolder(norm));
          artists.push(remote.artistId(w.remote) ?? null);
          durations.push(remote.duration(w.remote) ?? null);
          libraries.push(remote.libraryId(w.remote) ?? null);
          stamps.push(remote.fileStamp(w.remote) ?? null);
        }
        written = await queryRows(
          m,
          `INSERT INTO catalogue.track_server_map (server_id, provider_id, item_id, file_path, folder, artist_id, match_tier, duration_seconds, library_id, file_stamp)
           SELECT $1, u.pid, u.item, u.path, u.folder, u.artist, u.tier, u.d, u.lib, u.stamp
             FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::float8[], $9::text[], $10::text[]) AS u(pid, item, path, folder, artist, tier, d, lib, stamp)
            WHERE EXISTS (SELECT 1 FROM catalogue.score s WHERE s.item_id = u.item)
           ON CONFLICT (server_id, provider_id) DO NOTHING RETURNING match_tier`,
          [serverId, writes.map((w) => w.providerId), writes.map((w) => w.itemId), paths, folders, artists, writes.map((w) => w.tier), durations, libraries, stamps],
        );
      }
      if (written.length > 0 || retracted.length > 0) await bumpAvailability(m, [serverId]);
      return { written: written.length, retracted: retracted.length, writtenByTier: countTiers(written), retractedByTier: countTiers(retracted) };
    });
  }

  /**
   * One chunk of the server's mapping rows for the refresh/prune pass: the rows of up to `limit` songs
   * after `after` (song id order), grouped by song, provider ids in byte order; `olderThanListing` when
   * the row was written before `listingStartedAt`; `metadataAuthority` when this server speaks for the
   * song's metadata (see {@link metadataAuthoritySql}; `defaultServerId` = the default server, null when
   * none is known).
   */
  async mappedChunk(serverId: string, after: string | null, limit: number, listingStartedAt: Date, defaultServerId: string | null = null): Promise<{ rows: MappedRow[]; next: string | null }> {
    const rows: Array<{ item_id: string; provider_id: string; older: boolean; duration_seconds: number | null; authority: boolean; file_stamp: string | null }> = await queryRows(
      this.ds,
      `WITH items AS (
         SELECT DISTINCT item_id FROM catalogue.track_server_map WHERE server_id = $1 AND ($2::text IS NULL OR item_id > $2::text) ORDER BY item_id LIMIT $3
       )
       SELECT m.item_id, m.provider_id, m.created_at < $4 AS older, s.duration_seconds, ${metadataAuthoritySql('s', '$1', '$5::text')} AS authority, m.file_stamp
         FROM items i JOIN catalogue.track_server_map m ON m.server_id = $1 AND m.item_id = i.item_id
         JOIN catalogue.score s ON s.item_id = i.item_id
        ORDER BY m.item_id, m.provider_id COLLATE "C"`,
      [serverId, after, limit, listingStartedAt, defaultServerId],
    );
    const items = new Set(rows.map((r) => r.item_id));
    return {
      rows: rows.map((r) => ({ itemId: r.item_id, providerId: r.provider_id, olderThanListing: r.older, itemDurationSeconds: r.duration_seconds, metadataAuthority: r.authority, fileStamp: r.file_stamp })),
      next: items.size === limit ? rows[rows.length - 1]!.item_id : null,
    };
  }

  /**
   * Writes the listed file stamp of mappings that have none yet (issue 35: mappings written before stamps existed, or
   * by a kind that listed none then), so a later change of the file is seen. A stored stamp is never overwritten here:
   * a different one means the file changed and waits for its re-analysis. `stamps` aligned with `providerIds`.
   * @returns rows written.
   */
  async fillMissingStamps(serverId: string, providerIds: readonly string[], stamps: readonly string[]): Promise<number> {
    if (providerIds.length === 0) return 0;
    return this.serverWrite(serverId, async (m) => {
      const rows = await queryRows(
        m,
        `UPDATE catalogue.track_server_map t SET file_stamp = u.stamp, updated_at = now()
           FROM unnest($2::text[], $3::text[]) AS u(pid, stamp)
          WHERE t.server_id = $1 AND t.provider_id = u.pid AND t.file_stamp IS NULL AND u.stamp IS NOT NULL
          RETURNING t.provider_id`,
        [serverId, providerIds, stamps],
      );
      return rows.length;
    });
  }

  /**
   * Writes one refresh chunk (see domain/sweep/refresh.ts): song metadata (stored values kept where the
   * server reports none), mapping rows, back-filled durations, and the stale rows' deletion (only rows
   * older than `listingStartedAt`). Bumps the availability counter when rows were deleted.
   */
  async applyRefresh(serverId: string, plan: RefreshPlan, listingStartedAt: Date): Promise<RefreshWriteResult> {
    if (plan.scores.length === 0 && plan.mappings.length === 0 && plan.scoreDurations.length === 0 && plan.stale.length === 0) {
      return { scoresUpdated: 0, mappingsUpdated: 0, durationsFilled: 0, pruned: 0 };
    }
    return this.serverWrite(serverId, async (m) => {
      let scoresUpdated = 0;
      let mappingsUpdated = 0;
      let durationsFilled = 0;
      let pruned = 0;
      if (plan.stale.length > 0) {
        const rows = await queryRows(
          m,
          `DELETE FROM catalogue.track_server_map WHERE server_id = $1 AND provider_id = ANY($2::text[]) AND created_at < $3 RETURNING provider_id`,
          [serverId, plan.stale, listingStartedAt],
        );
        pruned = rows.length;
      }
      if (plan.scores.length > 0) {
        const s = plan.scores;
        const rows = await queryRows(
          m,
          `UPDATE catalogue.score s SET album = COALESCE(u.album, s.album), album_artist = COALESCE(u.aa, s.album_artist), year = COALESCE(u.year, s.year),
                  rating = COALESCE(u.rating, s.rating), file_path = COALESCE(u.path, s.file_path), updated_at = now()
             FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::real[], $6::text[]) AS u(id, album, aa, year, rating, path)
            WHERE s.item_id = u.id
              AND (s.album IS DISTINCT FROM COALESCE(u.album, s.album) OR s.album_artist IS DISTINCT FROM COALESCE(u.aa, s.album_artist)
                   OR s.year IS DISTINCT FROM COALESCE(u.year, s.year) OR s.rating IS DISTINCT FROM COALESCE(u.rating, s.rating)
                   OR s.file_path IS DISTINCT FROM COALESCE(u.path, s.file_path))
           RETURNING 1`,
          [s.map((x) => x.itemId), s.map((x) => x.album ?? null), s.map((x) => x.albumArtist ?? null), s.map((x) => x.year ?? null), s.map((x) => x.rating ?? null), s.map((x) => x.filePath ?? null)],
        );
        scoresUpdated = rows.length;
      }
      if (plan.mappings.length > 0) {
        const p = plan.mappings;
        const rows = await queryRows(
          m,
          `UPDATE catalogue.track_server_map t SET file_path = CASE WHEN u.has_path THEN u.path ELSE t.file_path END,
                  folder = CASE WHEN u.has_path THEN u.folder ELSE t.folder END,
                  artist_id = COALESCE(u.artist, t.artist_id), duration_seconds = COALESCE(u.d, t.duration_seconds),
                  library_id = COALESCE(u.lib, t.library_id), file_stamp = COALESCE(t.file_stamp, u.stamp), updated_at = now()
             FROM unnest($2::text[], $3::bool[], $4::text[], $5::text[], $6::text[], $7::float8[], $8::text[], $9::text[]) AS u(pid, has_path, path, folder, artist, d, lib, stamp)
            WHERE t.server_id = $1 AND t.provider_id = u.pid
              AND ((u.has_path AND (t.file_path IS DISTINCT FROM u.path OR t.folder IS DISTINCT FROM u.folder))
                   OR t.artist_id IS DISTINCT FROM COALESCE(u.artist, t.artist_id) OR t.duration_seconds IS DISTINCT FROM COALESCE(u.d, t.duration_seconds)
                   OR t.library_id IS DISTINCT FROM COALESCE(u.lib, t.library_id) OR (t.file_stamp IS NULL AND u.stamp IS NOT NULL))
           RETURNING 1`,
          [
            serverId,
            p.map((x) => x.providerId),
            p.map((x) => x.filePath !== undefined),
            p.map((x) => x.filePath ?? null),
            p.map((x) => x.folder ?? null),
            p.map((x) => x.artistId ?? null),
            p.map((x) => x.durationSeconds ?? null),
            p.map((x) => x.libraryId ?? null),
            p.map((x) => x.fileStamp ?? null),
          ],
        );
        mappingsUpdated = rows.length;
      }
      if (plan.scoreDurations.length > 0) {
        const rows = await queryRows(
          m,
          `UPDATE catalogue.score s SET duration_seconds = u.d, updated_at = now()
             FROM unnest($1::text[], $2::float8[]) AS u(id, d)
            WHERE s.item_id = u.id AND (s.duration_seconds IS NULL OR s.duration_seconds <= 0 OR s.duration_seconds = 'NaN') RETURNING 1`,
          [plan.scoreDurations.map((x) => x.itemId), plan.scoreDurations.map((x) => x.durationSeconds)],
        );
        durationsFilled = rows.length;
      }
      if (pruned > 0) await bumpAvailability(m, [serverId]);
      return { scoresUpdated, mappingsUpdated, durationsFilled, pruned };
    });
  }

  /**
   * Upserts the server's artist links (provider artist id -> name) in statements of `batch` rows; a row
   * whose name did not change is not rewritten.
   * @returns rows inserted or renamed.
   */
  async upsertArtists(serverId: string, links: ReadonlyMap<string, string>, batch = 5000): Promise<number> {
    const entries = [...links.entries()];
    let changed = 0;
    for (let i = 0; i < entries.length; i += batch) {
      const part = entries.slice(i, i + batch);
      changed += await this.serverWrite(serverId, async (m) => {
        const rows = await queryRows(
          m,
          `INSERT INTO catalogue.artist_server_map (server_id, provider_artist_id, artist_name, artist_norm)
           SELECT $1, t.id, t.name, t.norm FROM unnest($2::text[], $3::text[], $4::text[]) AS t(id, name, norm)
           ON CONFLICT (server_id, provider_artist_id) DO UPDATE SET artist_name = EXCLUDED.artist_name, artist_norm = EXCLUDED.artist_norm, updated_at = now()
           WHERE catalogue.artist_server_map.artist_name IS DISTINCT FROM EXCLUDED.artist_name RETURNING 1`,
          [serverId, part.map(([id]) => id), part.map(([, name]) => name), part.map(([, name]) => normaliseArtistName(name))],
        );
        return rows.length;
      });
    }
    return changed;
  }

  /** Distinct songs mapped on the server. */
  async matchedCount(serverId: string): Promise<number> {
    const rows = await queryRows<{ n: string }>(this.ds, `SELECT count(DISTINCT item_id) AS n FROM catalogue.track_server_map WHERE server_id = $1`, [serverId]);
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Orphans: songs mapped on no server (spec "Cleaning" 3). One statement for the counts, one for the
   * sample.
   */
  async orphanReport(sampleLimit: number): Promise<OrphanReport> {
    const counts = await queryRows<{ catalogue: string; orphans: string; albums: string }>(
      this.ds,
      `SELECT (SELECT count(*) FROM catalogue.score) AS catalogue,
              count(*) AS orphans, count(DISTINCT lower(coalesce(s.album, ''))) FILTER (WHERE s.album IS NOT NULL) AS albums
         FROM catalogue.score s WHERE NOT EXISTS (SELECT 1 FROM catalogue.track_server_map m WHERE m.item_id = s.item_id)`,
    );
    const sample = await queryRows<{ item_id: string; title: string; artist: string; album: string | null }>(
      this.ds,
      `SELECT s.item_id, s.title, s.artist, s.album FROM catalogue.score s
        WHERE NOT EXISTS (SELECT 1 FROM catalogue.track_server_map m WHERE m.item_id = s.item_id) ORDER BY s.item_id LIMIT $1`,
      [sampleLimit],
    );
    const c = counts[0];
    return {
      catalogue: Number(c?.catalogue ?? 0),
      orphans: Number(c?.orphans ?? 0),
      orphanAlbums: Number(c?.albums ?? 0),
      sample: sample.map((r) => ({ itemId: r.item_id, title: r.title, artist: r.artist, album: r.album })),
    };
  }

  /**
   * Deletes the orphan songs (score rows mapped on no server; their embedding and band rows go with
   * them) when `allowed(orphans, catalogue)` still holds for the counts taken inside the same
   * transaction. The transaction holds the catalogue write lock EXCLUSIVE, so no resolve, relabel or
   * server deletion changes the mappings between the re-count and the deletion (resolves wait for the
   * few seconds it takes).
   * @returns the re-counted figures, whether the deletion was refused on them, and songs deleted.
   */
  async deleteOrphansIf(allowed: (orphans: number, catalogue: number) => boolean): Promise<{ orphans: number; catalogue: number; refused: boolean; deleted: number }> {
    return this.ds.transaction(async (m) => {
      await lockExclusive(m, [CATALOGUE_WRITE_LOCK]);
      const counts = await queryRows<{ catalogue: string; orphans: string }>(
        m,
        `SELECT (SELECT count(*) FROM catalogue.score) AS catalogue,
                (SELECT count(*) FROM catalogue.score s WHERE NOT EXISTS (SELECT 1 FROM catalogue.track_server_map t WHERE t.item_id = s.item_id)) AS orphans`,
      );
      const orphans = Number(counts[0]?.orphans ?? 0);
      const catalogue = Number(counts[0]?.catalogue ?? 0);
      if (!allowed(orphans, catalogue)) return { orphans, catalogue, refused: true, deleted: 0 };
      const rows = await queryRows<{ n: string }>(
        m,
        `WITH d AS (DELETE FROM catalogue.score s WHERE NOT EXISTS (SELECT 1 FROM catalogue.track_server_map t WHERE t.item_id = s.item_id) RETURNING 1)
         SELECT count(*) AS n FROM d`,
      );
      return { orphans, catalogue, refused: false, deleted: Number(rows[0]?.n ?? 0) };
    });
  }
}

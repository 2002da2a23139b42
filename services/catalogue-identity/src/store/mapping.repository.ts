/**
 * Reads and bulk writes of track_server_map and its companions: provider <-> canonical id
 * translation in batch (one SQL statement per call, `unnest`/`ANY` over the whole id list),
 * availability, server deletion, duration back-fill.
 */
import type { DataSource } from 'typeorm';
import { type DurationBackfillPlan, type ListedDuration, planDurationBackfill } from '../domain/durations';
import type { BackfillResult, MappingStore, ServerDeletionResult } from '../domain/ports';
import { bumpAvailability } from './identity.repository';
import { CATALOGUE_WRITE_LOCK, lockExclusive, lockShared, serverLockKey } from './locks';
import { returnedRows } from './sql';



/** Persistence of the track mapping. */
export class MappingRepository implements MappingStore {
  constructor(private readonly ds: DataSource) {}

  /** The subset of `providerIds` that has a mapping row on the server (each id at most once, input order). */
  async lookupMapped(serverId: string, providerIds: readonly string[]): Promise<string[]> {
    if (providerIds.length === 0) return [];
    const rows: Array<{ id: string }> = await this.ds.query(
      `SELECT t.id FROM unnest($2::text[]) WITH ORDINALITY AS t(id, n)
        WHERE EXISTS (SELECT 1 FROM catalogue.track_server_map m WHERE m.server_id = $1 AND m.provider_id = t.id)
        ORDER BY t.n`,
      [serverId, providerIds],
    );
    return [...new Set(rows.map((r) => r.id))];
  }

  /**
   * Files changed in place (issue 35): the ids of `providerIds` mapped on the server whose stored `file_stamp` is set and
   * differs from the listed stamp at the same position of `stamps` (null = the listing gave none: never "changed").
   * A mapping without a stored stamp is not "changed" (nothing to compare with; the removal check and the sweep fill it).
   */
  async lookupChanged(serverId: string, providerIds: readonly string[], stamps: ReadonlyArray<string | null>): Promise<string[]> {
    if (providerIds.length === 0) return [];
    const rows: Array<{ id: string }> = await this.ds.query(
      `SELECT DISTINCT t.id FROM unnest($2::text[], $3::text[]) AS t(id, stamp)
         JOIN catalogue.track_server_map m ON m.server_id = $1 AND m.provider_id = t.id
        WHERE t.stamp IS NOT NULL AND m.file_stamp IS NOT NULL AND m.file_stamp <> t.stamp`,
      [serverId, providerIds, stamps],
    );
    return rows.map((r) => r.id);
  }

  /**
   * Input resolver (spec "Selecting a server at runtime" 5): each id that is a provider id of the server
   * becomes its canonical id; canonical and unknown ids pass through unchanged. Same order and length.
   * Without a server every id passes through (the gateway always resolves the selected server).
   * Never throws for unknown ids.
   */
  async resolveInput(serverId: string | undefined, ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0 || serverId === undefined) return [...ids];
    const rows: Array<{ provider_id: string; item_id: string }> = await this.ds.query(
      `SELECT m.provider_id, m.item_id FROM catalogue.track_server_map m
        WHERE m.server_id = $1 AND m.provider_id = ANY($2::text[])`,
      [serverId, [...new Set(ids)]],
    );
    const map = new Map(rows.map((r) => [r.provider_id, r.item_id]));
    return ids.map((id) => map.get(id) ?? id);
  }

  /**
   * Output mapping: canonical id -> the server's provider id. Ids not on the server are absent. When
   * several files of one song are on the server, the smallest provider id (byte order) is chosen, so the
   * answer is deterministic.
   */
  async mapOutput(serverId: string, itemIds: readonly string[]): Promise<Record<string, string>> {
    if (itemIds.length === 0) return {};
    const rows: Array<{ item_id: string; provider_id: string }> = await this.ds.query(
      `SELECT m.item_id, min(m.provider_id COLLATE "C") AS provider_id FROM catalogue.track_server_map m
        WHERE m.server_id = $1 AND m.item_id = ANY($2::text[]) GROUP BY m.item_id`,
      [serverId, [...new Set(itemIds)]],
    );
    const out: Record<string, string> = {};
    for (const r of rows) out[r.item_id] = r.provider_id;
    return out;
  }

  /** Distinct songs mapped on the server (the dashboard's matched-song count). */
  async matchedCount(serverId: string): Promise<number> {
    const rows: Array<{ n: string }> = await this.ds.query(`SELECT count(DISTINCT item_id) AS n FROM catalogue.track_server_map WHERE server_id = $1`, [serverId]);
    return Number(rows[0]?.n ?? 0);
  }

  /** Availability counter of a server (0 when it never had a mapping). */
  async availabilityVersion(serverId: string): Promise<number> {
    const rows: Array<{ version: string }> = await this.ds.query(`SELECT version FROM catalogue.server_availability WHERE server_id = $1`, [serverId]);
    return rows[0] ? Number(rows[0].version) : 0;
  }

  /**
   * Songs mapped on the server (sorted, distinct) and the availability counter, read in one statement
   * so the list and the counter belong to the same snapshot.
   */
  async availability(serverId: string): Promise<{ version: number; itemIds: string[] }> {
    const rows: Array<{ version: string | null; ids: string[] }> = await this.ds.query(
      `SELECT (SELECT version FROM catalogue.server_availability WHERE server_id = $1) AS version,
              ARRAY(SELECT DISTINCT item_id FROM catalogue.track_server_map WHERE server_id = $1 ORDER BY 1) AS ids`,
      [serverId],
    );
    const r = rows[0];
    return { version: r?.version ? Number(r.version) : 0, itemIds: r?.ids ?? [] };
  }

  /**
   * Songs with at least one file on the server in one of `libraryIds` (issue 34), distinct and sorted, and the count of
   * the server's songs none of whose files has a recorded library (NULL `library_id`: not listed since the column came,
   * or a kind without libraries). One statement, served by `track_server_map_library_idx`.
   */
  async libraryAvailability(serverId: string, libraryIds: readonly string[]): Promise<{ itemIds: string[]; unknownLibrary: number }> {
    const rows: Array<{ ids: string[]; unknown: string }> = await this.ds.query(
      `SELECT ARRAY(SELECT DISTINCT item_id FROM catalogue.track_server_map WHERE server_id = $1 AND library_id = ANY($2::text[]) ORDER BY 1) AS ids,
              (SELECT count(*) FROM (SELECT item_id FROM catalogue.track_server_map WHERE server_id = $1 GROUP BY item_id HAVING bool_and(library_id IS NULL)) u) AS unknown`,
      [serverId, [...new Set(libraryIds)]],
    );
    return { itemIds: rows[0]?.ids ?? [], unknownLibrary: Number(rows[0]?.unknown ?? 0) };
  }

  /**
   * Removes everything the catalogue holds for a server deleted from the registry: its mapping rows
   * (its Chromaprint rows go with them), its artist rows; writes a tombstone so later resolves for it are
   * refused, and bumps its availability counter. Score rows are never touched: songs mapped nowhere else
   * become orphans, hidden by every availability mask and re-bound when the song returns. Idempotent.
   */
  async deleteServer(serverId: string): Promise<ServerDeletionResult> {
    return this.ds.transaction(async (m) => {
      await lockShared(m, [CATALOGUE_WRITE_LOCK]);
      await lockExclusive(m, [serverLockKey(serverId)]);
      await m.query(`INSERT INTO catalogue.deleted_server (server_id) VALUES ($1) ON CONFLICT DO NOTHING`, [serverId]);
      const deleted = returnedRows<{ item_id: string }>(await m.query(`DELETE FROM catalogue.track_server_map WHERE server_id = $1 RETURNING item_id`, [serverId]));
      const artists = returnedRows(await m.query(`DELETE FROM catalogue.artist_server_map WHERE server_id = $1 RETURNING 1`, [serverId]));
      const items = [...new Set(deleted.map((r) => r.item_id))];
      let orphaned = 0;
      if (items.length > 0) {
        const rows: Array<{ n: string }> = await m.query(
          `SELECT count(*) AS n FROM unnest($1::text[]) AS t(id) WHERE NOT EXISTS (SELECT 1 FROM catalogue.track_server_map m WHERE m.item_id = t.id)`,
          [items],
        );
        orphaned = Number(rows[0]?.n ?? 0);
      }
      await bumpAvailability(m, [serverId]);
      return { mappingsDeleted: deleted.length, artistsDeleted: artists.length, orphaned };
    });
  }

  /**
   * Duration back-fill of one server from its whole-catalogue listing (domain/durations.ts decides):
   * mapping rows get the listed duration; songs without a duration get one when their files agree.
   * One read of the server's mappings, then two set-based updates in one transaction.
   */
  async backfillDurations(serverId: string, listing: readonly ListedDuration[], toleranceSeconds: number): Promise<BackfillResult> {
    const mapped: Array<{ provider_id: string; item_id: string; duration_seconds: number | null }> = await this.ds.query(
      `SELECT m.provider_id, m.item_id, s.duration_seconds FROM catalogue.track_server_map m JOIN catalogue.score s ON s.item_id = m.item_id WHERE m.server_id = $1`,
      [serverId],
    );
    const plan: DurationBackfillPlan = planDurationBackfill(
      listing,
      mapped.map((r) => ({ providerId: r.provider_id, itemId: r.item_id, itemDurationSeconds: r.duration_seconds })),
      toleranceSeconds,
    );
    return this.ds.transaction(async (m) => {
      let mappingsUpdated = 0;
      let scoresFilled = 0;
      if (plan.mappingDurations.length > 0) {
        const rows = returnedRows(await m.query(
          `UPDATE catalogue.track_server_map m SET duration_seconds = u.d, updated_at = now()
             FROM unnest($2::text[], $3::float8[]) AS u(pid, d)
            WHERE m.server_id = $1 AND m.provider_id = u.pid AND m.duration_seconds IS DISTINCT FROM u.d RETURNING 1`,
          [serverId, plan.mappingDurations.map((x) => x.providerId), plan.mappingDurations.map((x) => x.durationSeconds)],
        ));
        mappingsUpdated = rows.length;
      }
      if (plan.scoreDurations.length > 0) {
        const rows = returnedRows(await m.query(
          `UPDATE catalogue.score s SET duration_seconds = u.d, updated_at = now()
             FROM unnest($1::text[], $2::float8[]) AS u(id, d)
            WHERE s.item_id = u.id AND (s.duration_seconds IS NULL OR s.duration_seconds <= 0 OR s.duration_seconds = 'NaN') RETURNING 1`,
          [plan.scoreDurations.map((x) => x.itemId), plan.scoreDurations.map((x) => x.durationSeconds)],
        ));
        scoresFilled = rows.length;
      }
      return { mappingsUpdated, scoresFilled, rejectedEntries: plan.rejectedEntries, conflictingItems: plan.conflictingItems.length };
    });
  }
}

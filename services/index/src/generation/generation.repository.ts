import type { DataSource } from 'typeorm';
import { LeaseLostError, type Lease } from '@polyphony/platform';
import type { ArtistProfileRecord } from '../artists/artist-model';
import type { MapMethod, ReuseLineage } from '../core/generation';
import type { StoredCell } from '@polyphony/vector-engine';
import { bufferToF32, bufferToI32, bytesOf, packBlobs, typedToBuffer } from '../core/codec';
import type { TrackRepository } from '../core/track.repository';
import { carryDeltas } from './live/delta.repository';
import { LinkRecorder, type FeedBase } from './snapshot-delta';
import type { BuildRecord, CellRecord, GenerationStore, StoredQuantiserRecord } from './ports';

export type { BuildRecord, CellRecord, StoredQuantiserRecord } from './ports';

const S = '"index"';

/**
 * Persistence of index generations: build rows, centroids, cells (written as they complete), the map
 * projection, artist profiles and artist links. Exactly one build is `live` (partial unique index);
 * `activate` flips it in one transaction together with the catalogue-copy cleanup.
 */
export class GenerationRepository implements GenerationStore {
  constructor(
    private readonly ds: DataSource,
    private readonly tracks: TrackRepository,
  ) {}

  /** Inserts a `building` row and returns its generation number (a bigserial, so numbers only grow). */
  async createBuild(taskId: string, reason: string): Promise<number> {
    const rows: Array<{ generation: string }> = await this.ds.query(
      `INSERT INTO ${S}.builds (state, task_id, reason) VALUES ('building', $1, $2) RETURNING generation`,
      [taskId, reason.slice(0, 500)],
    );
    return Number(rows[0]!.generation);
  }

  /** Records the trained centroids and sizes of a build. */
  async saveTrained(generation: number, dim: number, nlist: number, count: number, centroids: Float32Array): Promise<void> {
    await this.ds.query(`UPDATE ${S}.builds SET dim = $2, nlist = $3, item_count = $4, centroids = $5 WHERE generation = $1`, [
      generation,
      dim,
      nlist,
      count,
      typedToBuffer(centroids),
    ]);
  }

  /** Records the build's reuse lineage (`Generation.lineage`; migration AddBuildLineage1734700000000). */
  async saveLineage(generation: number, lineage: ReuseLineage): Promise<void> {
    await this.ds.query(`UPDATE ${S}.builds SET lineage_trained_rows = $2, lineage_placed_rows = $3 WHERE generation = $1`, [generation, lineage.trainedRows, lineage.placedRows]);
  }

  /**
   * Records the build's delta base (migration AddBuildFeedMark1734800000000): the change-feed mark taken before its
   * snapshot and the catalogue it belongs to, its row count and its link contributions (`LinkRecorder.encode`).
   */
  async saveFeedBase(generation: number, base: FeedBase): Promise<void> {
    await this.ds.query(`UPDATE ${S}.builds SET feed_mark = $2, feed_catalogue = $3, feed_rows = $4, feed_links = $5 WHERE generation = $1`, [generation, base.mark, base.catalogue, base.rows, base.links.encode()]);
  }

  /**
   * The delta base stored with `generation` (`saveFeedBase`); undefined when the build row is gone or has none (a build
   * from before the columns, without a change feed, or whose rows were not all fed and recorded).
   * @throws when the stored link contributions are unreadable (`LinkRecorder.decode`)
   */
  async feedBase(generation: number): Promise<FeedBase | undefined> {
    const rows: Array<{ feed_mark: string | null; feed_catalogue: string | null; feed_rows: number | null; feed_links: Buffer | null }> = await this.ds.query(
      `SELECT feed_mark, feed_catalogue, feed_rows, feed_links FROM ${S}.builds WHERE generation = $1`,
      [generation],
    );
    const r = rows[0];
    if (!r || r.feed_mark === null || r.feed_catalogue === null || r.feed_rows === null || r.feed_links === null) return undefined;
    return { generation, mark: r.feed_mark, catalogue: r.feed_catalogue, rows: Number(r.feed_rows), links: LinkRecorder.decode(r.feed_links) };
  }

  /**
   * Writes completed cells in one multi-row INSERT: row ids and vectors travel as two binary parameters
   * cut per cell by offset/length; item ids as one newline-joined text per cell (canonical ids never
   * contain newlines; unnest cannot take an array of arrays of varying length).
   */
  async saveCells(generation: number, cells: readonly CellRecord[]): Promise<void> {
    if (cells.length === 0) return;
    const rows = packBlobs(cells.map((c) => bytesOf(c.rowIds)));
    const vecs = packBlobs(cells.map((c) => bytesOf(c.vectors)));
    await this.ds.query(
      `INSERT INTO ${S}.cells (generation, cell_id, row_ids, item_ids, vectors)
       SELECT $1, u.cell_id, substring($2::bytea FROM u.ro FOR u.rl), string_to_array(u.ids, E'\\n'), substring($3::bytea FROM u.vo FOR u.vl)
         FROM unnest($4::int[], $5::int[], $6::int[], $7::int[], $8::int[], $9::text[]) AS u(cell_id, ro, rl, vo, vl, ids)`,
      [generation, rows.blob, vecs.blob, cells.map((c) => c.cellId), rows.offsets, rows.lengths, vecs.offsets, vecs.lengths, cells.map((c) => c.ids.join('\n'))],
    );
  }

  /**
   * Stores the quantiser and the codes of a quantised generation (issue 19: replicas load them instead of
   * encoding again). `cells` yields the codes of every non-empty cell (`codeSize` bytes per row, rows
   * ascending within the cell; `cellsOfCodes` cuts them from a slot-ordered array); written in multi-row
   * INSERTs of about `flushBytes` bytes, so a lazily encoded stream is never held whole. Replaces an earlier
   * copy of the same mode.
   */
  async saveQuantised(
    generation: number,
    q: StoredQuantiserRecord,
    cells: Iterable<{ cellId: number; codes: Uint8Array }> | AsyncIterable<{ cellId: number; codes: Uint8Array }>,
    flushBytes = 4 * 1048576,
  ): Promise<void> {
    await this.ds.query(`DELETE FROM ${S}.quantisers WHERE generation = $1 AND mode = $2`, [generation, q.mode]);
    await this.ds.query(`INSERT INTO ${S}.quantisers (generation, mode, pq_m, code_size, params) VALUES ($1, $2, $3, $4, $5)`, [generation, q.mode, q.pqM, q.codeSize, typedToBuffer(q.params)]);
    let cellIds: number[] = [];
    let parts: Uint8Array[] = [];
    let bytes = 0;
    const flush = async () => {
      if (cellIds.length === 0) return;
      const packed = packBlobs(parts);
      await this.ds.query(
        `INSERT INTO ${S}.cell_codes (generation, mode, cell_id, codes)
         SELECT $1, $2, u.cell_id, substring($3::bytea FROM u.o FOR u.l) FROM unnest($4::int[], $5::int[], $6::int[]) AS u(cell_id, o, l)`,
        [generation, q.mode, packed.blob, cellIds, packed.offsets, packed.lengths],
      );
      cellIds = [];
      parts = [];
      bytes = 0;
    };
    for await (const cell of cells) {
      if (cell.codes.byteLength === 0) continue;
      cellIds.push(cell.cellId);
      parts.push(cell.codes);
      bytes += cell.codes.byteLength;
      if (bytes >= flushBytes) await flush();
    }
    await flush();
  }

  /** The stored quantiser of a generation in `mode`, or undefined. */
  async quantiser(generation: number, mode: 'int8' | 'pq'): Promise<StoredQuantiserRecord | undefined> {
    const rows: Array<{ mode: 'int8' | 'pq'; pq_m: number | null; code_size: number; params: Buffer }> = await this.ds.query(
      `SELECT mode, pq_m, code_size, params FROM ${S}.quantisers WHERE generation = $1 AND mode = $2`,
      [generation, mode],
    );
    const r = rows[0];
    return r ? { mode: r.mode, pqM: r.pq_m, codeSize: r.code_size, params: bufferToF32(r.params) } : undefined;
  }

  /** Streams the stored codes of a generation in `mode`, 256 cells per query, in cell order. */
  async *cellCodes(generation: number, mode: 'int8' | 'pq'): AsyncGenerator<{ cellId: number; codes: Uint8Array }> {
    let after = -1;
    for (;;) {
      const rows: Array<{ cell_id: number; codes: Buffer }> = await this.ds.query(
        `SELECT cell_id, codes FROM ${S}.cell_codes WHERE generation = $1 AND mode = $2 AND cell_id > $3 ORDER BY cell_id LIMIT 256`,
        [generation, mode, after],
      );
      if (rows.length === 0) return;
      for (const r of rows) yield { cellId: r.cell_id, codes: r.codes };
      after = rows[rows.length - 1]!.cell_id;
    }
  }

  /** Stores the map projection (2 floats per row, made by `method`) and the PCA basis of a generation. */
  async saveProjection(generation: number, coords: Float32Array, basis: Float32Array | null, method: MapMethod = 'pca'): Promise<void> {
    await this.ds.query(
      `INSERT INTO ${S}.map_projections (generation, coords, method) VALUES ($1, $2, $3) ON CONFLICT (generation) DO UPDATE SET coords = EXCLUDED.coords, method = EXCLUDED.method`,
      [generation, typedToBuffer(coords), method],
    );
    await this.ds.query(`UPDATE ${S}.builds SET pca = $2 WHERE generation = $1`, [generation, basis ? typedToBuffer(basis) : null]);
  }

  /** Stores the Poincaré ball's basis of a generation (`encodeBallBasis` bytes; issue 35 generation reuse). */
  async saveBallBasis(generation: number, basis: Buffer): Promise<void> {
    await this.ds.query(`UPDATE ${S}.builds SET ball = $2 WHERE generation = $1`, [generation, basis]);
  }

  /**
   * Stores artist profiles of a generation, `ordinal` = artist number (the iteration order); batches of 2000
   * rows, arrays as packed binary parameters. The records are consumed lazily, one batch at a time.
   */
  async saveArtists(generation: number, records: Iterable<ArtistProfileRecord>): Promise<void> {
    let chunk: ArtistProfileRecord[] = [];
    let i = 0;
    const flush = async () => {
      if (chunk.length === 0) return;
      const fields = (['weights', 'means', 'variances', 'songRows', 'componentSizes'] as const).map((k) => packBlobs(chunk.map((r) => bytesOf(r[k]))));
      const params: unknown[] = [generation, chunk.map((_, j) => i + j), chunk.map((r) => r.key), chunk.map((r) => r.name)];
      for (const f of fields) params.push(f.blob, f.offsets, f.lengths);
      await this.ds.query(
        `INSERT INTO ${S}.artist_profiles (generation, ordinal, artist_key, artist_name, weights, means, variances, song_rows, component_sizes)
         SELECT $1, u.ordinal, u.k, u.n, substring($5::bytea FROM u.o1 FOR u.l1), substring($8::bytea FROM u.o2 FOR u.l2), substring($11::bytea FROM u.o3 FOR u.l3),
                substring($14::bytea FROM u.o4 FOR u.l4), substring($17::bytea FROM u.o5 FOR u.l5)
           FROM unnest($2::int[], $3::text[], $4::text[], $6::int[], $7::int[], $9::int[], $10::int[], $12::int[], $13::int[], $15::int[], $16::int[], $18::int[], $19::int[])
                AS u(ordinal, k, n, o1, l1, o2, l2, o3, l3, o4, l4, o5, l5)`,
        params,
      );
      i += chunk.length;
      chunk = [];
    };
    for (const r of records) {
      chunk.push(r);
      if (chunk.length >= 2000) await flush();
    }
    await flush();
  }

  /** Stores the provider artist links of a generation; batches of 5000. */
  async saveLinks(generation: number, links: Iterable<{ serverId: string; key: string; providerId: string }>): Promise<void> {
    let batch: Array<{ serverId: string; key: string; providerId: string }> = [];
    const flush = async () => {
      if (batch.length === 0) return;
      await this.ds.query(
        `INSERT INTO ${S}.artist_links (generation, server_id, artist_key, provider_artist_id)
         SELECT $1, u.* FROM unnest($2::text[], $3::text[], $4::text[]) AS u ON CONFLICT DO NOTHING`,
        [generation, batch.map((l) => l.serverId), batch.map((l) => l.key), batch.map((l) => l.providerId)],
      );
      batch = [];
    };
    for (const l of links) {
      batch.push(l);
      if (batch.length >= 5000) await flush();
    }
    await flush();
  }

  /** Marks a build failed (its partial rows are removed by the next successful activation). */
  async markFailed(generation: number, error: string): Promise<void> {
    await this.ds.query(`UPDATE ${S}.builds SET state = 'failed', finished_at = now(), error = $2 WHERE generation = $1 AND state = 'building'`, [
      generation,
      error.slice(0, 2000),
    ]);
  }

  /**
   * Makes `generation` the live one in a single transaction: the previous live build is retired, the
   * catalogue copy loses every track the build did not see (except live-library songs of older generations' batches
   * the build missed: they become a batch of this generation, `carryDeltas`), and every OLDER generation's rows
   * (retired, failed, abandoned) are deleted (cells, projections, artists and batches go by cascade).
   * `embedderVersion` is recorded on the build (the space its vectors, and anchors saved against it, live in).
   * `removed` (a delta build, snapshot-delta.ts: its snapshot marked only the changed songs) deletes exactly those ids
   * from the catalogue copy instead of every row the build did not mark.
   * @returns number of catalogue-copy rows deleted
   */
  async activate(generation: number, embedderVersion: string | null, fence?: Lease, removed?: readonly string[]): Promise<number> {
    return this.ds.transaction(async (m) => {
      if (fence) {
        // The run's row stays locked until commit: a cancel or a takeover either waits for this or wins before it.
        const held = await m.query(`SELECT 1 FROM ${S}.build_runs WHERE id = $1 AND lease_generation = $2 AND state = 'RUNNING' FOR UPDATE`, [fence.runId, fence.generation]);
        if (!held.length) throw new LeaseLostError(fence.runId);
      }
      await m.query(`UPDATE ${S}.builds SET state = 'retired' WHERE state = 'live'`);
      await m.query(`UPDATE ${S}.builds SET state = 'live', finished_at = now(), embedder_version = $2 WHERE generation = $1`, [generation, embedderVersion]);
      // Live-library songs of older generations the build's snapshot missed stay (a batch of this generation).
      await carryDeltas(m, generation);
      const deleted = removed ? await this.tracks.deleteIds(m, removed, generation) : await this.tracks.deleteNotSeen(m, generation);
      // The older builds' rows (cells, codes, artists, ...) go after the swap, outside this transaction: dropOlderBuilds.
      return deleted;
    });
  }

  /**
   * Deletes the builds older than `generation` with their cells, codes, artists, projections and deltas (ON DELETE
   * CASCADE). Called once `generation` is live and served (issue 35: at 1M songs this delete took ~7 s inside the
   * activation's transaction, delaying the swap); only older builds go, a newer one (a build that started after this
   * one) keeps its rows. Idempotent: an interrupted clean-up is finished by the next activation's.
   * @returns the number of builds deleted
   */
  async dropOlderBuilds(generation: number): Promise<number> {
    const res: unknown = await this.ds.query(`DELETE FROM ${S}.builds WHERE generation < $1 RETURNING generation`, [generation]);
    const rows = Array.isArray(res) && Array.isArray(res[0]) ? res[0] : res;
    return Array.isArray(rows) ? rows.length : 0;
  }

  /** When the build of `generation` started (its snapshot began after this instant); undefined when unknown. */
  async buildStartedAt(generation: number): Promise<Date | undefined> {
    const rows: Array<{ created_at: Date }> = await this.ds.query(`SELECT created_at FROM ${S}.builds WHERE generation = $1`, [generation]);
    return rows[0]?.created_at;
  }

  /**
   * Marks failed every build still `building` whose build run is not RUNNING (the run ended, was never recorded, or
   * predates build runs); a build of a RUNNING run is its coordinator's, or its takeover's, to end.
   */
  async failInterrupted(): Promise<number[]> {
    const res: unknown = await this.ds.query(
      `UPDATE ${S}.builds b SET state = 'failed', finished_at = now(), error = 'interrupted (process stopped during the build)'
        WHERE b.state = 'building' AND NOT EXISTS (SELECT 1 FROM ${S}.build_runs r WHERE r.id::text = b.task_id AND r.state = 'RUNNING') RETURNING generation`,
    );
    // TypeORM answers UPDATE ... RETURNING with [rows, affectedCount].
    const rows = (Array.isArray(res) && Array.isArray(res[0]) ? res[0] : res) as Array<{ generation: string }>;
    return rows.map((r) => Number(r.generation));
  }

  /** The live build, or undefined. */
  async live(): Promise<BuildRecord | undefined> {
    // Not the delta base's columns (feed_links can be megabytes): feedBase reads those.
    const rows: Array<Record<string, unknown>> = await this.ds.query(
      `SELECT generation, state, task_id, dim, nlist, item_count, centroids, pca, created_at, finished_at, embedder_version, lineage_trained_rows, lineage_placed_rows, ball FROM ${S}.builds WHERE state = 'live'`,
    );
    const r = rows[0];
    if (!r) return undefined;
    return {
      generation: Number(r.generation),
      state: r.state as BuildRecord['state'],
      taskId: (r.task_id as string | null) ?? null,
      dim: (r.dim as number | null) ?? null,
      nlist: (r.nlist as number | null) ?? null,
      itemCount: (r.item_count as number | null) ?? null,
      centroids: r.centroids ? bufferToF32(r.centroids as Buffer) : null,
      pca: r.pca ? bufferToF32(r.pca as Buffer) : null,
      createdAt: r.created_at as Date,
      finishedAt: (r.finished_at as Date | null) ?? null,
      embedderVersion: (r.embedder_version as string | null) ?? null,
      ...(r.lineage_trained_rows != null ? { lineage: { trainedRows: Number(r.lineage_trained_rows), placedRows: Number(r.lineage_placed_rows ?? 0) } } : {}),
      ball: (r.ball as Buffer | null) ?? null,
    };
  }

  /**
   * Streams the stored cells of a generation, 64 per query, in cell order. The item ids of a cell come as one
   * newline-joined text (canonical ids contain no newline; one split instead of node-postgres' character-level
   * array parser over a million ids).
   */
  async *cells(generation: number): AsyncGenerator<StoredCell> {
    let after = -1;
    for (;;) {
      const rows: Array<{ cell_id: number; row_ids: Buffer; ids: string; vectors: Buffer }> = await this.ds.query(
        `SELECT cell_id, row_ids, array_to_string(item_ids, E'\n') AS ids, vectors FROM ${S}.cells WHERE generation = $1 AND cell_id > $2 ORDER BY cell_id LIMIT 64`,
        [generation, after],
      );
      if (rows.length === 0) return;
      for (const r of rows) yield { cellId: r.cell_id, rowIds: bufferToI32(r.row_ids), ids: r.ids === '' ? [] : r.ids.split('\n'), vectors: bufferToF32(r.vectors) };
      after = rows[rows.length - 1]!.cell_id;
    }
  }

  /** Stored map coordinates of a generation and the method that made them, or undefined. */
  async projection(generation: number): Promise<{ coords: Float32Array; method: MapMethod } | undefined> {
    const rows: Array<{ coords: Buffer; method: MapMethod }> = await this.ds.query(`SELECT coords, method FROM ${S}.map_projections WHERE generation = $1`, [generation]);
    return rows[0] ? { coords: bufferToF32(rows[0].coords), method: rows[0].method } : undefined;
  }

  /** Artists, mixture components and songs of the stored profiles of a generation (capacities for a streaming load). */
  async artistTotals(generation: number): Promise<{ artists: number; components: number; songs: number }> {
    const rows: Array<{ a: string; c: string | null; s: string | null }> = await this.ds.query(
      `SELECT count(*) AS a, sum(length(weights)) / 4 AS c, sum(length(song_rows)) / 4 AS s FROM ${S}.artist_profiles WHERE generation = $1`,
      [generation],
    );
    const r = rows[0];
    return { artists: Number(r?.a ?? 0), components: Number(r?.c ?? 0), songs: Number(r?.s ?? 0) };
  }

  /** Streams the stored artist profiles of a generation in artist order, keyset paged by ordinal (`pageSize` per query). */
  async *artists(generation: number, pageSize = 2000): AsyncGenerator<ArtistProfileRecord> {
    let after = -1;
    for (;;) {
      const rows: Array<Record<string, Buffer | string | number>> = await this.ds.query(
        `SELECT ordinal, artist_key, artist_name, weights, means, variances, song_rows, component_sizes FROM ${S}.artist_profiles
          WHERE generation = $1 AND ordinal > $2 ORDER BY ordinal LIMIT $3`,
        [generation, after, pageSize],
      );
      for (const r of rows) {
        yield {
          key: String(r.artist_key),
          name: String(r.artist_name),
          weights: bufferToF32(r.weights as Buffer),
          means: bufferToF32(r.means as Buffer),
          variances: bufferToF32(r.variances as Buffer),
          songRows: bufferToI32(r.song_rows as Buffer),
          componentSizes: bufferToI32(r.component_sizes as Buffer),
        };
      }
      if (rows.length < pageSize) return;
      after = Number(rows[rows.length - 1]!.ordinal);
    }
  }

  /** Stored artist links of a generation. */
  async links(generation: number): Promise<Array<{ serverId: string; key: string; providerId: string }>> {
    const rows: Array<{ server_id: string; artist_key: string; provider_artist_id: string }> = await this.ds.query(
      `SELECT server_id, artist_key, provider_artist_id FROM ${S}.artist_links WHERE generation = $1`,
      [generation],
    );
    return rows.map((r) => ({ serverId: r.server_id, key: r.artist_key, providerId: r.provider_artist_id }));
  }
}

/**
 * Id-scheme state and the storage side of the one-time relabel (spec "Content identity" 4,
 * "Versioning" 2; domain relabel.ts plans, this module reads rows for it and applies its plans).
 *
 * Reading: {@link PgRelabelSource} scans score rows in keyset chunks. The chunk boundaries are computed
 * first (one window query over the ids), so up to `concurrency` chunks are fetched in parallel on pool
 * connections while the planner works on the current one: a bounded worker pool whose memory is at most
 * `concurrency + 1` chunks of rows. Reads happen outside the relabel's transaction, which is safe
 * because that transaction holds the catalogue write lock exclusively (no resolve can write) and changes
 * nothing until the plan is applied.
 *
 * Applying ({@link RelabelWriter}): each chunk plan goes into two temporary tables of the relabel
 * transaction; at the end one set-based statement per step writes every table: detached mappings
 * deleted, renamed songs updated (embedding and mappings follow by ON UPDATE CASCADE; band rows are keyed
 * by the unchanging song_no and are not rewritten), merged
 * songs' mappings repointed and the merged rows deleted, the old -> new map recorded in relabel_map for
 * the index, availability counters bumped, and the new version stored, all in that one transaction.
 */
import { RELABEL_MAP_MAX_LIMIT } from '@polyphony/contracts';
import type { DataSource, QueryRunner } from 'typeorm';
import { type BandLayout, bandKeys } from '../domain/identity/bands';
import type { RelabelChunkPlan, RelabelMapping, RelabelRow, RelabelRowSource, RowSelection } from '../domain/identity/relabel';
import type { SchemeVersion } from '../domain/identity/scheme';
import type { AppliedRelabel, RelabelMapPage, RelabelPlanWriter, SchemeState, SchemeStorePort, SchemeTx } from '../domain/scheme.service';
import { computeSignature } from '../domain/identity/signature';
import { decodeVector, signatureFromBits, signatureParam } from './codec';
import { CATALOGUE_WRITE_LOCK, lockExclusive } from './locks';
import { returnedRows, type Queryable } from './sql';


/** Reads the single state row (null on a fresh schema). */
export async function readSchemeState(m: Queryable, forUpdate = false): Promise<SchemeState | null> {
  const rows: Array<{ version: number; band_layout_id: string; relabelled_at: Date | null }> = await m.query(
    `SELECT version, band_layout_id, relabelled_at FROM catalogue.id_scheme_state${forUpdate ? ' FOR UPDATE' : ''}`,
  );
  const r = rows[0];
  return r ? { version: r.version, bandLayoutId: r.band_layout_id, relabelledAt: r.relabelled_at } : null;
}

/** Writes the state row. `relabelled` stamps relabelled_at. */
export async function writeSchemeState(m: Queryable, version: number, bandLayoutId: string, relabelled: boolean): Promise<void> {
  await m.query(
    `INSERT INTO catalogue.id_scheme_state (singleton, version, band_layout_id, relabelled_at) VALUES (true, $1, $2, CASE WHEN $3 THEN now() END)
     ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version, band_layout_id = EXCLUDED.band_layout_id,
       relabelled_at = COALESCE(EXCLUDED.relabelled_at, catalogue.id_scheme_state.relabelled_at), updated_at = now()`,
    [version, bandLayoutId, relabelled],
  );
}

/** Number of score rows. */
export async function countScores(m: Queryable): Promise<number> {
  const rows: Array<{ n: string }> = await m.query(`SELECT count(*) AS n FROM catalogue.score`);
  return Number(rows[0]?.n ?? 0);
}

/** SQL predicate (on alias s) of rows whose id is current for version $1: fp_<v> or fp_0 with 50 hex. */
const CURRENT_SQL = `(s.item_id ~ '^fp_[0-9][0-9a-f]{50}$' AND substr(s.item_id, 4, 1) IN ($1::text, '0'))`;

interface RelabelDbRow {
  item_id: string;
  duration_seconds: number | null;
  file_path: string | null;
  vector: Buffer | null;
  mappings: Array<[string, string, string | null, number | null]>;
  fingerprint: number[] | null;
}

const ROW_SELECT = `SELECT s.item_id, s.duration_seconds, s.file_path, e.vector,
    COALESCE((SELECT json_agg(json_build_array(m.server_id, m.provider_id, m.file_path, m.duration_seconds) ORDER BY m.created_at, m.server_id, m.provider_id)
              FROM catalogue.track_server_map m WHERE m.item_id = s.item_id), '[]'::json) AS mappings,
    (SELECT c.fingerprint FROM catalogue.track_server_map m
       JOIN catalogue.chromaprint c ON c.server_id = m.server_id AND c.provider_id = m.provider_id
      WHERE m.item_id = s.item_id ORDER BY m.created_at, m.server_id, m.provider_id LIMIT 1) AS fingerprint
  FROM catalogue.score s LEFT JOIN catalogue.embedding e ON e.item_id = s.item_id`;

function toRelabelRow(r: RelabelDbRow): RelabelRow {
  return {
    oldId: r.item_id,
    embedding: r.vector ? decodeVector(r.vector) : null,
    durationSeconds: r.duration_seconds,
    chromaprint: r.fingerprint,
    filePath: r.file_path,
    // Mapping order: oldest first. The default server is analysed first, so its file is usually first.
    mappings: r.mappings.map(([serverId, providerId, path, durationSeconds]): RelabelMapping => ({ serverId, providerId, path, durationSeconds })),
  };
}

/**
 * {@link RelabelRowSource} over the catalogue tables, reading through the DataSource pool with a
 * bounded number of chunk reads in flight (see module docs).
 */
export class PgRelabelSource implements RelabelRowSource {
  /** Rows read by scans and loadRows (diagnostics). */
  rowsRead = 0;

  /** @param concurrency chunk reads in flight at most (>= 1). */
  constructor(
    private readonly ds: DataSource,
    private readonly concurrency: number,
  ) {}

  /** {@inheritDoc RelabelRowSource.scan} */
  async *scan(request: { readonly selection: RowSelection; readonly targetVersion: SchemeVersion; readonly chunkSize: number }): AsyncIterable<readonly RelabelRow[]> {
    const where = request.selection === 'current' ? CURRENT_SQL : `NOT ${CURRENT_SQL}`;
    const starts: Array<{ item_id: string }> = await this.ds.query(
      `SELECT item_id FROM (SELECT s.item_id, row_number() OVER (ORDER BY s.item_id) AS rn FROM catalogue.score s WHERE ${where}) t
        WHERE (rn - 1) % $2 = 0 ORDER BY item_id`,
      [String(request.targetVersion), request.chunkSize],
    );
    const bounds = starts.map((r, i) => [r.item_id, starts[i + 1]?.item_id ?? null] as const);
    const fetchChunk = async (k: number): Promise<RelabelRow[]> => {
      const [from, to] = bounds[k] as readonly [string, string | null];
      const rows: RelabelDbRow[] = await this.ds.query(
        `${ROW_SELECT} WHERE ${where} AND s.item_id >= $2 AND ($3::text IS NULL OR s.item_id < $3::text) ORDER BY s.item_id`,
        [String(request.targetVersion), from, to],
      );
      this.rowsRead += rows.length;
      return rows.map(toRelabelRow);
    };
    const inFlight: Array<Promise<RelabelRow[]>> = [];
    let next = 0;
    const fill = (): void => {
      while (inFlight.length < this.concurrency && next < bounds.length) {
        const p = fetchChunk(next++);
        p.catch(() => undefined); // surfaced when awaited below
        inFlight.push(p);
      }
    };
    fill();
    while (inFlight.length > 0) {
      const chunk = await (inFlight.shift() as Promise<RelabelRow[]>);
      fill();
      yield chunk;
    }
  }

  /** {@inheritDoc RelabelRowSource.loadRows} */
  async loadRows(oldIds: readonly string[]): Promise<readonly RelabelRow[]> {
    if (oldIds.length === 0) return [];
    const rows: RelabelDbRow[] = await this.ds.query(`${ROW_SELECT} WHERE s.item_id = ANY($1::text[])`, [[...new Set(oldIds)]]);
    this.rowsRead += rows.length;
    return rows.map(toRelabelRow);
  }
}


/**
 * Collects chunk plans in temporary tables of the relabel transaction and applies them at the end
 * (see module docs). Use: `begin()`, `sink` per chunk (passed to planRelabel), `apply()`, commit.
 */
export class RelabelWriter implements RelabelPlanWriter {
  constructor(
    private readonly q: QueryRunner,
    private readonly layout: BandLayout,
    private readonly chunkSize: number,
  ) {}

  /** Creates the temporary tables (dropped at commit). */
  async begin(): Promise<void> {
    await this.q.query(`CREATE TEMP TABLE relabel_plan_tmp (old_id text PRIMARY KEY, new_id text NOT NULL, kind text NOT NULL) ON COMMIT DROP`);
    await this.q.query(`CREATE TEMP TABLE relabel_detached_tmp (old_id text NOT NULL, server_id text NOT NULL, provider_id text NOT NULL, reason text NOT NULL) ON COMMIT DROP`);
  }

  /** Stores one chunk plan (two INSERTs). */
  readonly sink = async (plan: RelabelChunkPlan): Promise<void> => {
    if (plan.relabels.length > 0) {
      await this.q.query(`INSERT INTO relabel_plan_tmp (old_id, new_id, kind) SELECT * FROM unnest($1::text[], $2::text[], $3::text[])`, [
        plan.relabels.map((r) => r.oldId),
        plan.relabels.map((r) => r.newId),
        plan.relabels.map((r) => r.kind),
      ]);
    }
    if (plan.detached.length > 0) {
      await this.q.query(`INSERT INTO relabel_detached_tmp (old_id, server_id, provider_id, reason) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])`, [
        plan.detached.map((d) => d.oldId),
        plan.detached.map((d) => d.serverId),
        plan.detached.map((d) => d.providerId),
        plan.detached.map((d) => d.reason),
      ]);
    }
  };

  /**
   * Applies every stored plan and records the map for `toVersion`.
   * @returns counts; database errors propagate (the caller rolls back).
   */
  async apply(toVersion: number): Promise<AppliedRelabel> {
    const q = this.q;
    await q.query(`ANALYZE relabel_plan_tmp`);
    const detached = returnedRows(
      await q.query(
        `DELETE FROM catalogue.track_server_map m USING relabel_detached_tmp d
          WHERE m.server_id = d.server_id AND m.provider_id = d.provider_id AND m.item_id = d.old_id RETURNING 1`,
      ),
    ).length;
    // Renames first: merge targets renamed in this run must exist before mappings are repointed to them.
    const renamed = returnedRows(
      await q.query(`UPDATE catalogue.score s SET item_id = p.new_id, updated_at = now() FROM relabel_plan_tmp p WHERE p.kind <> 'merge' AND s.item_id = p.old_id RETURNING 1`),
    ).length;
    await q.query(
      `UPDATE catalogue.track_server_map m SET item_id = p.new_id, updated_at = now() FROM relabel_plan_tmp p WHERE p.kind = 'merge' AND m.item_id = p.old_id`,
    );
    const merged = returnedRows(await q.query(`DELETE FROM catalogue.score s USING relabel_plan_tmp p WHERE p.kind = 'merge' AND s.item_id = p.old_id RETURNING 1`)).length;
    // Unsignable rows carry no signature and no bands.
    await q.query(`UPDATE catalogue.embedding e SET signature = NULL FROM relabel_plan_tmp p WHERE p.kind = 'unsignable' AND e.item_id = p.new_id AND e.signature IS NOT NULL`);
    await q.query(
      `DELETE FROM catalogue.signature_band b USING catalogue.score s, relabel_plan_tmp p WHERE p.kind = 'unsignable' AND s.item_id = p.new_id AND b.song_no = s.song_no`,
    );
    const signaturesIndexed = await this.indexMissingSignatures();
    await q.query(
      `INSERT INTO catalogue.relabel_map (to_version, old_id, new_id, kind) SELECT $1, old_id, new_id, kind FROM relabel_plan_tmp
       ON CONFLICT (to_version, old_id) DO UPDATE SET new_id = EXCLUDED.new_id, kind = EXCLUDED.kind, created_at = now()`,
      [toVersion],
    );
    const servers: Array<{ server_id: string }> = await q.query(
      `SELECT server_id FROM catalogue.server_availability UNION SELECT DISTINCT server_id FROM catalogue.track_server_map`,
    );
    if (servers.length > 0) {
      await q.query(
        `INSERT INTO catalogue.server_availability (server_id, version) SELECT s, 1 FROM unnest($1::text[]) AS s
         ON CONFLICT (server_id) DO UPDATE SET version = catalogue.server_availability.version + 1, updated_at = now()`,
        [servers.map((s) => s.server_id).sort()],
      );
    }
    return { renamed, merged, detachedMappings: detached, signaturesIndexed };
  }

  /**
   * Signatures and band rows of renamed signable songs that have none (legacy rows keyed by provider
   * ids, imported without them), computed in chunks from the stored embeddings.
   */
  private async indexMissingSignatures(): Promise<number> {
    let after = '';
    let total = 0;
    for (;;) {
      const rows: Array<{ item_id: string; song_no: string; vector: Buffer }> = await this.q.query(
        `SELECT e.item_id, s.song_no, e.vector FROM catalogue.embedding e JOIN relabel_plan_tmp p ON p.new_id = e.item_id AND p.kind = 'relabel'
           JOIN catalogue.score s ON s.item_id = e.item_id
          WHERE e.signature IS NULL AND e.item_id > $1 ORDER BY e.item_id LIMIT $2`,
        [after, this.chunkSize],
      );
      if (rows.length === 0) return total;
      after = (rows[rows.length - 1] as { item_id: string }).item_id;
      const ids: string[] = [];
      const sigs: string[] = [];
      const bandSongs: string[] = [];
      const bandNos: number[] = [];
      const bandVals: number[] = [];
      for (const r of rows) {
        const sig = computeSignature(decodeVector(r.vector));
        if (!sig.ok) continue;
        ids.push(r.item_id);
        sigs.push(signatureParam(sig.code));
        for (const k of bandKeys(sig.code, this.layout)) {
          bandSongs.push(r.song_no);
          bandNos.push(k.band);
          bandVals.push(k.value);
        }
      }
      if (ids.length > 0) {
        await this.q.query(`UPDATE catalogue.embedding e SET signature = u.sig::bit(200) FROM unnest($1::text[], $2::text[]) AS u(id, sig) WHERE e.item_id = u.id`, [ids, sigs]);
        await this.q.query(
          `INSERT INTO catalogue.signature_band (song_no, band_no, band_value) SELECT * FROM unnest($1::bigint[], $2::smallint[], $3::int[]) ON CONFLICT DO NOTHING`,
          [bandSongs, bandNos, bandVals],
        );
      }
      total += ids.length;
    }
  }
}

/**
 * Rebuilds signature_band for a new band layout from the stored signatures, in keyset chunks (run at
 * start, inside the caller's transaction, when the stored layout id differs from the code's).
 * @returns songs indexed.
 */
export async function rebuildBandIndex(q: Queryable, layout: BandLayout, chunkSize: number): Promise<number> {
  await q.query(`DELETE FROM catalogue.signature_band`);
  let after = '';
  let total = 0;
  for (;;) {
    const rows: Array<{ item_id: string; song_no: string; signature: string }> = await q.query(
      `SELECT e.item_id, s.song_no, e.signature::text AS signature FROM catalogue.embedding e JOIN catalogue.score s ON s.item_id = e.item_id
        WHERE e.signature IS NOT NULL AND e.item_id > $1 ORDER BY e.item_id LIMIT $2`,
      [after, chunkSize],
    );
    if (rows.length === 0) return total;
    after = (rows[rows.length - 1] as { item_id: string }).item_id;
    const ids: string[] = [];
    const nos: number[] = [];
    const vals: number[] = [];
    for (const r of rows) {
      for (const k of bandKeys(signatureFromBits(r.signature), layout)) {
        ids.push(r.song_no);
        nos.push(k.band);
        vals.push(k.value);
      }
    }
    await q.query(`INSERT INTO catalogue.signature_band (song_no, band_no, band_value) SELECT * FROM unnest($1::bigint[], $2::smallint[], $3::int[])`, [ids, nos, vals]);
    total += rows.length;
  }
}


/**
 * One page of the old -> new map of the relabel to `toVersion`, keyset-paged by old id.
 * @returns entries and the last old id of a full page (null at the end).
 */
export async function relabelMapPage(
  q: Queryable,
  toVersion: number,
  after: string | undefined,
  limit: number,
): Promise<RelabelMapPage> {
  const n = Math.max(1, Math.min(RELABEL_MAP_MAX_LIMIT, Math.floor(limit)));
  const rows: Array<{ old_id: string; new_id: string; kind: 'relabel' | 'merge' | 'unsignable' }> = await q.query(
    `SELECT old_id, new_id, kind FROM catalogue.relabel_map WHERE to_version = $1 AND ($2::text IS NULL OR old_id > $2::text) ORDER BY old_id LIMIT $3`,
    [toVersion, after ?? null, n],
  );
  return { entries: rows.map((r) => ({ oldId: r.old_id, newId: r.new_id, kind: r.kind })), next: rows.length === n ? (rows[rows.length - 1] as { old_id: string }).old_id : null };
}

/** {@link SchemeStorePort} over PostgreSQL: the scheme transaction on one pool connection, chunk reads on others. */
export class PgSchemeRepository implements SchemeStorePort {
  constructor(private readonly ds: DataSource) {}

  async underWriteLock<T>(fn: (tx: SchemeTx) => Promise<T>): Promise<T> {
    const q = this.ds.createQueryRunner();
    await q.connect();
    try {
      await q.startTransaction();
      try {
        await lockExclusive(q, [CATALOGUE_WRITE_LOCK]);
        const result = await fn({
          readState: () => readSchemeState(q, true),
          writeState: (version, bandLayoutId, relabelled) => writeSchemeState(q, version, bandLayoutId, relabelled),
          countScores: () => countScores(q),
          rebuildBandIndex: (layout, chunkSize) => rebuildBandIndex(q, layout, chunkSize),
          relabelWriter: async (layout, chunkSize) => {
            const writer = new RelabelWriter(q, layout, chunkSize);
            await writer.begin();
            return writer;
          },
          relabelSource: (concurrency) => new PgRelabelSource(this.ds, concurrency),
        });
        await q.commitTransaction();
        return result;
      } catch (err) {
        await q.rollbackTransaction();
        throw err;
      }
    } finally {
      await q.release();
    }
  }

  relabelMap(toVersion: number, after: string | undefined, limit: number): Promise<RelabelMapPage> {
    return relabelMapPage(this.ds, toVersion, after, limit);
  }
}

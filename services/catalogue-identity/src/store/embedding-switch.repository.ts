/**
 * Embedder versions of the catalogue and the switch between them (issue 13, "Embedder versions";
 * docs/architecture.md "Embedder versions").
 *
 * Every song has exactly one SERVED vector (`catalogue.embedding`: vector, signature, bands); all served vectors
 * are of one version, `embedding_state.served_version`, so the index and the identity gate only ever compare
 * vectors of one version. Vectors of other versions live in `catalogue.embedding_alt`. The TARGET version is the
 * one the analysis workers produce now (the primary `embedderVersion` of their requests: the learned embedder
 * when its model is loaded, else dsp-v1). While target != served the catalogue is switching: re-analysis adds
 * target vectors to the alternates (re-analysis of mapped songs by the normal analysis run), and once every song
 * has one, {@link PgEmbeddingSwitchRepository.promoteIfCovered} swaps them in one transaction (EXCLUSIVE catalogue write
 * lock, so no resolve runs meanwhile): the served vectors move to the alternates, the target vectors become the
 * served ones with their signatures and bands recomputed. Song ids, mappings and playlists are not touched (ids
 * are never parsed back into signatures, signature.ts). The index serves the generation it has until its next
 * build, which then reads the new version (one version per snapshot, rebuild.service.ts).
 *
 * A worker without the model (dsp-v1) after a switch makes dsp-v1 the target again; since workers with the model
 * send their dsp-v1 vector too, every song normally has one and the catalogue switches back at once.
 */
import type { DataSource } from 'typeorm';
import type { EmbeddingSwitchStatus, VersionedEmbedding } from '@polyphony/contracts';
import { storeAlternateVectors } from './identity.repository';
import type { Logger } from '@polyphony/platform';
import { type BandLayout, bandKeys } from '../domain/identity/bands';
import { computeSignature } from '../domain/identity/signature';
import { decodeVector, encodeVector, signatureParam } from './codec';
import { CATALOGUE_WRITE_LOCK, lockExclusive } from './locks';
import type { EmbeddingState, EmbeddingVersionStore } from '../domain/ports';
import type { Queryable } from './sql';


/** Rows re-signed per statement during a switch. */
const PROMOTE_BATCH = 2000;

/** See module docs. */
export class PgEmbeddingSwitchRepository implements EmbeddingVersionStore {
  private lastCheck = 0;
  private pendingCheck?: NodeJS.Timeout;

  constructor(
    private readonly ds: DataSource,
    private readonly layout: () => BandLayout,
    private readonly logger?: Logger,
    /** Least time between two coverage checks after resolves (ms); the status route always checks. */
    private readonly checkEveryMs = 5000,
  ) {}

  /** The state row (a missing row reads as an empty catalogue). */
  async state(m: Queryable = this.ds): Promise<EmbeddingState> {
    const rows: Array<{ served_version: string | null; target_version: string | null; switched_at: Date | null }> = await m.query(
      `SELECT served_version, target_version, switched_at FROM catalogue.embedding_state WHERE id = 1`,
    );
    const r = rows[0];
    return { servedVersion: r?.served_version ?? null, targetVersion: r?.target_version ?? null, switchedAt: r?.switched_at ?? null };
  }

  /**
   * Records the version the workers produce now (and, on an empty catalogue, serves it at once). Cheap when
   * nothing changes (one SELECT). Runs outside the resolve transaction.
   */
  async noteTarget(version: string): Promise<EmbeddingState> {
    const s = await this.state();
    if (s.targetVersion === version && s.servedVersion !== null) return s;
    await this.ds.transaction(async (m) => {
      await m.query(`INSERT INTO catalogue.embedding_state (id) VALUES (1) ON CONFLICT (id) DO NOTHING`);
      const empty = ((await m.query(`SELECT NOT EXISTS (SELECT 1 FROM catalogue.embedding) AS empty`)) as Array<{ empty: boolean }>)[0]!.empty;
      // On an empty catalogue the served version is simply the workers' one (a fresh install with the model); vectors
      // written without a state (restored or loaded by a tool) are served as they are (their most common version).
      await m.query(
        `UPDATE catalogue.embedding_state SET target_version = $1,
                served_version = CASE WHEN $2::boolean THEN $1
                                      ELSE COALESCE(served_version, (SELECT embedder_version FROM catalogue.embedding GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1)) END,
                updated_at = now()
          WHERE id = 1`,
        [version, empty],
      );
    });
    if (s.targetVersion !== null && s.targetVersion !== version) this.logger?.warn('embedder target version changed', { from: s.targetVersion, to: version, served: s.servedVersion });
    return this.state();
  }

  /**
   * Stores a re-analysed song's vector of `vector.embedderVersion` as an alternate (a vector of the served version
   * is left as it is: the song already has one). Notes the version as the target and checks coverage (throttled).
   * @returns false when the song does not exist.
   */
  async storeVector(itemId: string, vector: VersionedEmbedding): Promise<boolean> {
    const s = await this.noteTarget(vector.embedderVersion);
    const stored = await this.ds.transaction(async (m) => {
      const exists: unknown[] = await m.query(`SELECT 1 FROM catalogue.score WHERE item_id = $1 FOR SHARE`, [itemId]);
      if (exists.length === 0) return false;
      // A vector of the served version is already there (re-analysis is only asked for songs lacking the target).
      await storeAlternateVectors(m, itemId, [vector], s.servedVersion ?? '', true);
      return true;
    });
    if (stored) this.scheduleCheck();
    return stored;
  }

  /** Coverage of the target version (songs with a served or alternate vector of it) and the whole state. */
  async status(): Promise<EmbeddingSwitchStatus> {
    await this.promoteIfCovered();
    const s = await this.state();
    const rows: Array<{ total: number; covered: number }> = await this.ds.query(
      `SELECT (SELECT count(*) FROM catalogue.embedding)::int AS total,
              ((SELECT count(*) FROM catalogue.embedding WHERE embedder_version = $1)
               + (SELECT count(*) FROM catalogue.embedding_alt a JOIN catalogue.embedding e ON e.item_id = a.item_id AND e.embedder_version <> $1
                   WHERE a.embedder_version = $1))::int AS covered`,
      [s.targetVersion ?? ''],
    );
    const r = rows[0]!;
    return {
      servedVersion: s.servedVersion,
      targetVersion: s.targetVersion,
      covered: s.targetVersion === null ? 0 : r.covered,
      total: r.total,
      switching: s.targetVersion !== null && s.targetVersion !== s.servedVersion,
      switchedAt: s.switchedAt ? s.switchedAt.toISOString() : null,
    };
  }

  /** Runs {@link promoteIfCovered} now, or once `checkEveryMs` after the previous check (at most one pending). */
  scheduleCheck(): void {
    const wait = this.lastCheck + this.checkEveryMs - Date.now();
    if (wait <= 0) {
      this.lastCheck = Date.now();
      void this.promoteIfCovered().catch((err: unknown) => this.logger?.warn('embedder switch check failed', { err: (err as Error).message }));
      return;
    }
    if (this.pendingCheck) return;
    this.pendingCheck = setTimeout(() => {
      this.pendingCheck = undefined;
      this.scheduleCheck();
    }, wait);
    this.pendingCheck.unref();
  }

  /** Stops a pending check (service shutdown, tests). */
  close(): void {
    if (this.pendingCheck) clearTimeout(this.pendingCheck);
    this.pendingCheck = undefined;
  }

  /**
   * Switches the served version to the target when every song has a target vector (see module docs).
   * @returns true when this call switched.
   */
  async promoteIfCovered(): Promise<boolean> {
    const pre = await this.state();
    if (pre.targetVersion === null || pre.targetVersion === pre.servedVersion) return false;
    if (await this.missing(this.ds, pre.targetVersion)) return false;
    const layout = this.layout();
    return this.ds.transaction(async (m) => {
      await lockExclusive(m, [CATALOGUE_WRITE_LOCK]);
      const s = await this.state(m);
      const target = s.targetVersion;
      if (target === null || target === s.servedVersion || (await this.missing(m, target))) return false;
      let moved = 0;
      for (;;) {
        const rows: Array<{ item_id: string; song_no: string; vector: Buffer }> = await m.query(
          `SELECT a.item_id, s.song_no, a.vector FROM catalogue.embedding_alt a
             JOIN catalogue.embedding e ON e.item_id = a.item_id AND e.embedder_version <> $1
             JOIN catalogue.score s ON s.item_id = a.item_id
            WHERE a.embedder_version = $1 ORDER BY a.item_id LIMIT $2`,
          [target, PROMOTE_BATCH],
        );
        if (rows.length === 0) break;
        const ids = rows.map((r) => r.item_id);
        // The served vectors become alternates (kept: a switch back needs no re-analysis), the target ones served.
        await m.query(
          `INSERT INTO catalogue.embedding_alt (item_id, embedder_version, vector)
           SELECT item_id, embedder_version, vector FROM catalogue.embedding WHERE item_id = ANY($1::text[])
           ON CONFLICT (item_id, embedder_version) DO UPDATE SET vector = EXCLUDED.vector`,
          [ids],
        );
        await this.writeServed(m, rows.map((r) => ({ itemId: r.item_id, songNo: r.song_no, vector: decodeVector(r.vector) })), target, layout);
        await m.query(`DELETE FROM catalogue.embedding_alt WHERE embedder_version = $1 AND item_id = ANY($2::text[])`, [target, ids]);
        moved += rows.length;
      }
      await m.query(`UPDATE catalogue.embedding_state SET served_version = $1, switched_at = now(), updated_at = now() WHERE id = 1`, [target]);
      this.logger?.info('embedder switched', { from: s.servedVersion, to: target, songs: moved });
      return true;
    });
  }

  /** Whether any song with a served vector lacks a vector of `version` (songs without any vector are not indexed and do not count). */
  private async missing(m: Queryable, version: string): Promise<boolean> {
    const rows: Array<{ missing: boolean }> = await m.query(
      `SELECT EXISTS (SELECT 1 FROM catalogue.embedding e
         WHERE e.embedder_version <> $1
           AND NOT EXISTS (SELECT 1 FROM catalogue.embedding_alt a WHERE a.item_id = e.item_id AND a.embedder_version = $1)) AS missing`,
      [version],
    );
    return rows[0]!.missing;
  }

  /** Writes served vectors of `version` (upsert), their signatures, band rows and the score's version column. */
  private async writeServed(m: Queryable, rows: ReadonlyArray<{ itemId: string; songNo: string; vector: Float32Array }>, version: string, layout = this.layout()): Promise<void> {
    const sigs = rows.map((r) => computeSignature(r.vector));
    await m.query(
      `INSERT INTO catalogue.embedding (item_id, vector, signature, embedder_version)
       SELECT i, v, s::bit(200), $4 FROM unnest($1::text[], $2::bytea[], $3::text[]) AS t(i, v, s)
       ON CONFLICT (item_id) DO UPDATE SET vector = EXCLUDED.vector, signature = EXCLUDED.signature, embedder_version = EXCLUDED.embedder_version`,
      [rows.map((r) => r.itemId), rows.map((r) => encodeVector(r.vector)), sigs.map((s) => (s.ok ? signatureParam(s.code) : null)), version],
    );
    await m.query(`UPDATE catalogue.score SET embedder_version = $2, updated_at = now() WHERE item_id = ANY($1::text[])`, [rows.map((r) => r.itemId), version]);
    const songNos = rows.map((r) => r.songNo);
    await m.query(`DELETE FROM catalogue.signature_band WHERE song_no = ANY($1::bigint[])`, [songNos]);
    const bandSong: string[] = [];
    const bandNo: number[] = [];
    const bandValue: number[] = [];
    rows.forEach((r, i) => {
      const sig = sigs[i]!;
      if (!sig.ok) return;
      for (const k of bandKeys(sig.code, layout)) {
        bandSong.push(r.songNo);
        bandNo.push(k.band);
        bandValue.push(k.value);
      }
    });
    if (bandSong.length > 0) {
      await m.query(`INSERT INTO catalogue.signature_band (song_no, band_no, band_value) SELECT * FROM unnest($1::bigint[], $2::smallint[], $3::int[])`, [bandSong, bandNo, bandValue]);
    }
  }
}

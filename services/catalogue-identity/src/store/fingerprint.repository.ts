import type { DataSource } from 'typeorm';
import type { FingerprintMissingResponse, FingerprintPage, StoredFingerprint } from '@polyphony/contracts';
import type { FingerprintStore } from '../domain/fingerprint.service';

/**
 * Recording fingerprints of songs (`catalogue.fingerprint`, migration CreateFingerprints): the landmarks codec's
 * bytes per song, written by the analysis worker, read by the index in keyset pages.
 */
export class FingerprintRepository implements FingerprintStore {
  constructor(private readonly ds: DataSource) {}

  /** Stores (or replaces) a song's fingerprint. Returns false when the song does not exist. */
  async put(itemId: string, f: { codec: number; landmarks: number; seconds: number; blob: Buffer }): Promise<boolean> {
    const rows: unknown[] = await this.ds.query(
      `INSERT INTO catalogue.fingerprint (item_id, codec, landmarks, seconds, blob)
       SELECT s.item_id, $2, $3, $4, $5 FROM catalogue.score s WHERE s.item_id = $1
       ON CONFLICT (item_id) DO UPDATE SET codec = EXCLUDED.codec, landmarks = EXCLUDED.landmarks, seconds = EXCLUDED.seconds, blob = EXCLUDED.blob, updated_at = now()
       RETURNING item_id`,
      [itemId, f.codec, f.landmarks, f.seconds, f.blob],
    );
    return rows.length > 0;
  }

  /** One song's fingerprint (blob in base64), or undefined when it has none. */
  async get(itemId: string): Promise<StoredFingerprint | undefined> {
    const rows: Array<{ item_id: string; codec: number; landmarks: number; seconds: number; blob: Buffer }> = await this.ds.query(
      `SELECT item_id, codec, landmarks, seconds, blob FROM catalogue.fingerprint WHERE item_id = $1`,
      [itemId],
    );
    const r = rows[0];
    return r ? { itemId: r.item_id, codec: Number(r.codec), landmarks: Number(r.landmarks), seconds: Number(r.seconds), blob: r.blob.toString('base64') } : undefined;
  }

  /** One keyset page of fingerprints by item id (blobs in base64). */
  async page(after: string | undefined, limit: number): Promise<FingerprintPage> {
    const rows: Array<{ item_id: string; codec: number; blob: Buffer }> = await this.ds.query(
      `SELECT item_id, codec, blob FROM catalogue.fingerprint WHERE ($1::text IS NULL OR item_id > $1) ORDER BY item_id LIMIT $2`,
      [after ?? null, limit],
    );
    return {
      items: rows.map((r) => ({ itemId: r.item_id, codec: Number(r.codec), blob: r.blob.toString('base64') })),
      next: rows.length === limit ? rows[rows.length - 1]!.item_id : null,
    };
  }

  /**
   * Of the server's provider ids, those mapped to a song without a fingerprint (one provider id per song, the smallest).
   * With `codec`, a song whose fingerprint has another codec version counts as without one (it is re-fingerprinted).
   */
  async missing(serverId: string, providerIds: string[], codec?: number): Promise<FingerprintMissingResponse> {
    if (providerIds.length === 0) return { missing: [] };
    const rows: Array<{ provider_id: string; item_id: string }> = await this.ds.query(
      `SELECT min(m.provider_id) AS provider_id, m.item_id
         FROM catalogue.track_server_map m
        WHERE m.server_id = $1 AND m.provider_id = ANY($2::text[])
          AND NOT EXISTS (SELECT 1 FROM catalogue.fingerprint f WHERE f.item_id = m.item_id AND ($3::int IS NULL OR f.codec = $3))
        GROUP BY m.item_id ORDER BY 1`,
      [serverId, providerIds, codec ?? null],
    );
    return { missing: rows.map((r) => ({ providerId: r.provider_id, itemId: r.item_id })) };
  }

  /** Deletes every fingerprint (tests of the backfill; no route). */
  async clear(): Promise<void> {
    await this.ds.query(`DELETE FROM catalogue.fingerprint`);
  }
}

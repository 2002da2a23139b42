import type { DataSource } from 'typeorm';
import { LANDMARK_CODEC_VERSION } from '@polyphony/landmarks';
import type { CoverageCounts, CoverageStore } from '../domain/ports';

/**
 * Counts of catalogue.score rows for the readiness probes (`/api/clap/stats`, `/api/lyrics/stats`,
 * `/api/sem_grove/stats`, `/api/models`, with songs holding a recording fingerprint of the current landmark codec
 * version, `LANDMARK_CODEC_VERSION`: a print of another version is ignored by the index and re-made by the backfill,
 * the rule of `FingerprintRepository.missing`). One aggregate scan of the score table (with the mapping table
 * for one server), so a probe costs one query.
 */
export class CoverageRepository implements CoverageStore {
  constructor(private readonly ds: DataSource) {}

  /** Counts over every song of the catalogue. */
  async global(): Promise<CoverageCounts> {
    const rows: Array<{ songs: string; tagged: string; lyrics: string; fingerprinted: string }> = await this.ds.query(
      `SELECT count(*) AS songs,
              count(*) FILTER (WHERE s.tags_model IS NOT NULL) AS tagged,
              count(*) FILTER (WHERE EXISTS (SELECT 1 FROM catalogue.lyrics l WHERE l.item_id = s.item_id AND l.status = 'found')) AS lyrics,
              count(*) FILTER (WHERE EXISTS (SELECT 1 FROM catalogue.fingerprint f WHERE f.item_id = s.item_id AND f.codec = $1)) AS fingerprinted
         FROM catalogue.score s`,
      [LANDMARK_CODEC_VERSION],
    );
    return toCounts(rows[0]);
  }

  /** Counts over the songs mapped on one server (each song once, however many files map to it). */
  async forServer(serverId: string): Promise<CoverageCounts> {
    const rows: Array<{ songs: string; tagged: string; lyrics: string; fingerprinted: string }> = await this.ds.query(
      `SELECT count(*) AS songs,
              count(*) FILTER (WHERE s.tags_model IS NOT NULL) AS tagged,
              count(*) FILTER (WHERE EXISTS (SELECT 1 FROM catalogue.lyrics l WHERE l.item_id = s.item_id AND l.status = 'found')) AS lyrics,
              count(*) FILTER (WHERE EXISTS (SELECT 1 FROM catalogue.fingerprint f WHERE f.item_id = s.item_id AND f.codec = $2)) AS fingerprinted
         FROM catalogue.score s
        WHERE EXISTS (SELECT 1 FROM catalogue.track_server_map m WHERE m.server_id = $1 AND m.item_id = s.item_id)`,
      [serverId, LANDMARK_CODEC_VERSION],
    );
    return toCounts(rows[0]);
  }
}

function toCounts(r: { songs: string; tagged: string; lyrics: string; fingerprinted: string } | undefined): CoverageCounts {
  return { songs: Number(r?.songs ?? 0), tagged: Number(r?.tagged ?? 0), lyrics: Number(r?.lyrics ?? 0), fingerprinted: Number(r?.fingerprinted ?? 0) };
}

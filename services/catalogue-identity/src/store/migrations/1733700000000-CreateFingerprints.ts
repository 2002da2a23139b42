import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * catalogue schema, recording fingerprints (issue 33, docs/architecture.md "Search by recording"):
 *
 * - fingerprint: one row per song with a landmark fingerprint (`@polyphony/landmarks` codec bytes, ~3 bytes per
 *   landmark, ~4-7 KB for a 4-minute song), its codec version, landmark count and the seconds of audio it
 *   covers. Written by the analysis worker for every new song and by the backfill (the analysis run's pass over
 *   mapped songs without one); read in keyset pages by the index service per generation. A relabel renames it
 *   with the song (ON UPDATE CASCADE); a deleted song takes it along.
 */
export class CreateFingerprints1733700000000 implements MigrationInterface {
  name = 'CreateFingerprints1733700000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE catalogue.fingerprint (
      item_id text PRIMARY KEY REFERENCES catalogue.score (item_id) ON DELETE CASCADE ON UPDATE CASCADE,
      codec smallint NOT NULL,
      landmarks integer NOT NULL,
      seconds real NOT NULL,
      blob bytea NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE catalogue.fingerprint`);
  }
}

import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * index.tracks gains the learned features copied from the catalogue snapshot (reference score row fields
 * `mood_vector`, `other_features` in the `label:prob,...` format; `tags_model` names the model, NULL when
 * the song was analysed without it) and whether the song has lyrics. They feed the mood fields of result
 * rows and the `index=` filter of track search. Filled by the next rebuild.
 */
export class AddTrackFeatures1732800000000 implements MigrationInterface {
  name = 'AddTrackFeatures1732800000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "index".tracks
      ADD COLUMN mood_vector text,
      ADD COLUMN other_features text,
      ADD COLUMN tags_model text,
      ADD COLUMN has_lyrics boolean NOT NULL DEFAULT false`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "index".tracks DROP COLUMN mood_vector, DROP COLUMN other_features, DROP COLUMN tags_model, DROP COLUMN has_lyrics`);
  }
}

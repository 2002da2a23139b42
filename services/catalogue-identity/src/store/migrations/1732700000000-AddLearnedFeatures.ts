import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * catalogue schema, learned audio features per song (issue 13; reference `score.mood_vector`,
 * `score.other_features`):
 *
 * - mood_vector: top 5 MSD MusiCNN tags as `label:prob,...` (reference format, real probabilities).
 * - other_features: `danceable:p,aggressive:p,happy:p,party:p,relaxed:p,sad:p`.
 * - tag_scores: every tag probability, `{"msd": number[50], "mtt"?: number[50]}` in the model's output
 *   order (contracts MSD_TAGS / MTT_TAGS), kept for text and mood search.
 * - tags_model: which model files produced them; all four are NULL for songs analysed without the model.
 */
export class AddLearnedFeatures1732700000000 implements MigrationInterface {
  name = 'AddLearnedFeatures1732700000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE catalogue.score
      ADD COLUMN mood_vector text,
      ADD COLUMN other_features text,
      ADD COLUMN tag_scores jsonb,
      ADD COLUMN tags_model text`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE catalogue.score DROP COLUMN mood_vector, DROP COLUMN other_features, DROP COLUMN tag_scores, DROP COLUMN tags_model`);
  }
}

import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * index schema, households (issue 34): the polyphony user who created a radio (`created_by_user_id`, the gateway's
 * `auth.service_users.id`, no cross-schema key). A radio run writes the radio's playlist with that user's own linked
 * account on a server when there is one (docs/architecture.md "Households and portable playlists"). NULL for radios
 * saved before this migration, imported from the reference or created by the API token: they keep being written with
 * the server's account, as before.
 */
export class AddRadioCreators1734350000000 implements MigrationInterface {
  name = 'AddRadioCreators1734350000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "index".radios ADD COLUMN IF NOT EXISTS created_by_user_id text`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "index".radios DROP COLUMN created_by_user_id`);
  }
}

import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Households (issue 34): a user's choice to have answers limited to the libraries their own linked account can see
 * (`user_accounts.limit_to_libraries`, off by default: results stay the server's libraries as before).
 */
export class AccountLibraryScope1734600000000 implements MigrationInterface {
  name = 'AccountLibraryScope1734600000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE registry.user_accounts ADD COLUMN IF NOT EXISTS limit_to_libraries boolean NOT NULL DEFAULT false');
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE registry.user_accounts DROP COLUMN IF EXISTS limit_to_libraries');
  }
}

import { analysisMigrations } from '@polyphony/analysis-worker';
import { catalogueMigrations } from '@polyphony/catalogue-identity';
import { authMigrations } from '@polyphony/gateway';
import { indexMigrations } from '@polyphony/index';
import type { MigrationClass } from '@polyphony/platform';
import { playlistMigrations } from '@polyphony/playlist';
import { registryMigrations } from '@polyphony/registry';

/**
 * Every schema and its migrations, in the order `npm run migrate` (src/migrate.ts) applies them; each service owns
 * exactly one schema. Also the template databases of the stack tests (test/helpers.ts) are migrated from this list.
 */
export const ALL_SCHEMAS: ReadonlyArray<readonly [string, MigrationClass[]]> = [
  ['auth', authMigrations],
  ['registry', registryMigrations],
  ['catalogue', catalogueMigrations],
  ['analysis', analysisMigrations],
  ['index', indexMigrations],
  ['playlist', playlistMigrations],
];

import 'reflect-metadata';
import { z } from 'zod';
import { analysisMigrations } from '@polyphony/analysis-worker';
import { catalogueMigrations } from '@polyphony/catalogue-identity';
import { authMigrations } from '@polyphony/gateway';
import { indexMigrations } from '@polyphony/index';
import { baseEnvShape, createServiceDataSource, databaseUrlFrom, migrateSchema, parseConfig, readEnv, type MigrationClass } from '@polyphony/platform';
import { playlistMigrations } from '@polyphony/playlist';
import { registryMigrations } from '@polyphony/registry';

/** Every schema and its migrations (each service owns exactly one schema). */
const SCHEMAS: Array<[string, MigrationClass[]]> = [
  ['auth', authMigrations],
  ['registry', registryMigrations],
  ['catalogue', catalogueMigrations],
  ['analysis', analysisMigrations],
  ['index', indexMigrations],
  ['playlist', playlistMigrations],
];

/**
 * `npm run migrate`: applies every schema's migrations against DATABASE_URL, each under its own
 * advisory lock and migrations table. Distributed installs run it once per release (compose
 * `migrate` service, Kubernetes Job); per-service `npm run migrate -w <service>` does one schema.
 */
async function main(): Promise<void> {
  const env = parseConfig(z.object(baseEnvShape), readEnv());
  const url = databaseUrlFrom(env);
  if (!url) throw new Error('DATABASE_URL (or PGHOST, PGUSER, ...) is required');
  for (const [schema, migrations] of SCHEMAS) {
    const ds = createServiceDataSource({ url, schema, migrations });
    await ds.initialize();
    try {
      process.stdout.write(`${JSON.stringify({ schema, applied: await migrateSchema(ds) })}\n`);
    } finally {
      await ds.destroy();
    }
  }
}
main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

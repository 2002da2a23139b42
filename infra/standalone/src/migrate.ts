import 'reflect-metadata';
import { z } from 'zod';
import { ALL_SCHEMAS } from './schemas';
import { baseEnvShape, createServiceDataSource, databaseUrlFrom, migrateSchema, parseConfig, readEnv } from '@polyphony/platform';

/**
 * `npm run migrate`: applies every schema's migrations against DATABASE_URL, each under its own
 * advisory lock and migrations table. Distributed installs run it once per release (compose
 * `migrate` service, Kubernetes Job); per-service `npm run migrate -w <service>` does one schema.
 */
async function main(): Promise<void> {
  const env = parseConfig(z.object(baseEnvShape), readEnv());
  const url = databaseUrlFrom(env);
  if (!url) throw new Error('DATABASE_URL (or PGHOST, PGUSER, ...) is required');
  for (const [schema, migrations] of ALL_SCHEMAS) {
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

import 'reflect-metadata';
import { createServiceDataSource, migrateSchema, databaseUrlFrom, parseConfig, baseEnvShape, readEnv } from '@polyphony/platform';
import { z } from 'zod';
import { registryMigrations } from '@polyphony/registry';

/** Applies every schema's migrations against DATABASE_URL (distributed installs may use this instead of per-service jobs). */
async function main(): Promise<void> {
  const env = parseConfig(z.object(baseEnvShape), readEnv());
  const url = databaseUrlFrom(env);
  if (!url) throw new Error('DATABASE_URL is required');
  for (const [schema, migrations] of [['registry', registryMigrations]] as const) {
    const ds = createServiceDataSource({ url, schema, migrations: [...migrations] });
    await ds.initialize();
    console.log(JSON.stringify({ schema, applied: await migrateSchema(ds) }));
    await ds.destroy();
  }
}
main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

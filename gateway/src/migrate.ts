import 'reflect-metadata';
import { createServiceDataSource, migrateSchema } from '@polyphony/platform';
import { loadGatewayConfig } from './config';
import { authMigrations } from './store/migrations';

/** `npm run migrate -w gateway`: applies the auth schema's migrations (Kubernetes Job / initContainer). */
async function main(): Promise<void> {
  const config = loadGatewayConfig();
  if (!config.databaseUrl) throw new Error('DATABASE_URL (or PGHOST...) is required');
  const ds = createServiceDataSource({ url: config.databaseUrl, schema: 'auth', migrations: authMigrations });
  await ds.initialize();
  const applied = await migrateSchema(ds);
  console.log(JSON.stringify({ schema: 'auth', applied }));
  await ds.destroy();
}
main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

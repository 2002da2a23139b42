import { createServiceDataSource, migrateSchema, type ServiceDatabaseOptions } from '@polyphony/platform';
import type { TestDatabase } from './pg';

/**
 * A unit's DataSource on a test database with the unit's real migrations applied (`createServiceDataSource`,
 * `initialize`, `migrateSchema`): what an integration test of one repository or domain service starts from.
 * The caller destroys it (`ds.destroy()`) before dropping the database.
 */
export async function migratedDataSource(db: TestDatabase, schema: string, migrations: ServiceDatabaseOptions['migrations']): Promise<ReturnType<typeof createServiceDataSource>> {
  const ds = createServiceDataSource({ url: db.url, schema, migrations });
  await ds.initialize();
  await migrateSchema(ds);
  return ds;
}

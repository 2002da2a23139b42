import 'reflect-metadata';
import { runMigrateCommand } from '@polyphony/platform';
import { registryMigrations } from './store/migrations';

runMigrateCommand('registry', 'registry', registryMigrations).catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

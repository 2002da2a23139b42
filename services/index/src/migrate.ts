import 'reflect-metadata';
import { runMigrateCommand } from '@polyphony/platform';
import { indexMigrations } from './core/migrations';

runMigrateCommand('index', 'index', indexMigrations).catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

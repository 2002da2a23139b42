import 'reflect-metadata';
import { runMigrateCommand } from '@polyphony/platform';
import { catalogueMigrations } from './store/migrations';

runMigrateCommand('catalogue-identity', 'catalogue', catalogueMigrations).catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

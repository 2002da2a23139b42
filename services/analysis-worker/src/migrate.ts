import 'reflect-metadata';
import { runMigrateCommand } from '@polyphony/platform';
import { analysisMigrations } from './store/migrations';

runMigrateCommand('analysis-worker', 'analysis', analysisMigrations).catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

import 'reflect-metadata';
import { runMigrateCommand } from '@polyphony/platform';
import { playlistMigrations } from './store/migrations';

runMigrateCommand('playlist', 'playlist', playlistMigrations).catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

import 'reflect-metadata';
import { runMigrateCommand } from '@polyphony/platform';
import { authMigrations } from './store/migrations';

/** `npm run migrate -w @polyphony/gateway`: applies the auth schema's migrations (Kubernetes Job / initContainer). */
runMigrateCommand('gateway', 'auth', authMigrations).catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

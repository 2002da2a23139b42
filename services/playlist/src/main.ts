import 'reflect-metadata';
import { onShutdownSignal } from '@polyphony/platform';
import { buildPlaylist } from './app';
import { loadPlaylistConfig } from './config';

async function main(): Promise<void> {
  const svc = buildPlaylist(loadPlaylistConfig());
  await svc.start();
  const port = await svc.listen();
  svc.runtime.logger.info('playlist listening', { port });
  onShutdownSignal(svc.runtime.logger, () => svc.stop());
}
main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

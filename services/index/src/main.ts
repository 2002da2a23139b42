import 'reflect-metadata';
import { onShutdownSignal } from '@polyphony/platform';
import { buildIndex } from './app';
import { loadIndexConfig } from './config';

async function main(): Promise<void> {
  const svc = buildIndex(loadIndexConfig());
  await svc.start();
  const port = await svc.listen();
  svc.runtime.logger.info('index listening', { port });
  onShutdownSignal(svc.runtime.logger, () => svc.stop());
}
main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

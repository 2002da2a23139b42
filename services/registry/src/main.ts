import 'reflect-metadata';
import { onShutdownSignal } from '@polyphony/platform';
import { buildRegistry } from './app';
import { loadRegistryConfig } from './config';

async function main(): Promise<void> {
  const svc = buildRegistry(loadRegistryConfig());
  await svc.start();
  const port = await svc.listen();
  svc.runtime.logger.info('registry listening', { port });
  onShutdownSignal(svc.runtime.logger, () => svc.stop());
}
main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

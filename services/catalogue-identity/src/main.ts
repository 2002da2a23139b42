import 'reflect-metadata';
import { onShutdownSignal } from '@polyphony/platform';
import { buildCatalogue } from './app';
import { loadCatalogueConfig } from './config';

async function main(): Promise<void> {
  const svc = buildCatalogue(loadCatalogueConfig());
  await svc.start();
  const port = await svc.listen();
  svc.runtime.logger.info('catalogue-identity listening', { port });
  onShutdownSignal(svc.runtime.logger, () => svc.stop());
}
main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

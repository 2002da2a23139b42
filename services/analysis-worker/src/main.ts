import 'reflect-metadata';
import { onShutdownSignal } from '@polyphony/platform';
import { buildAnalysis } from './app';
import { loadAnalysisConfig } from './config';

async function main(): Promise<void> {
  const svc = buildAnalysis(loadAnalysisConfig());
  await svc.start();
  const port = await svc.listen();
  svc.runtime.logger.info('analysis-worker listening', { port });
  onShutdownSignal(svc.runtime.logger, () => svc.stop());
}
main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

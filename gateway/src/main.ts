import 'reflect-metadata';
import { createLogger, onShutdownSignal } from '@polyphony/platform';
import { buildGateway } from './app';
import { loadGatewayConfig } from './config';

/** Distributed mode: the gateway on its own, in front of the services named by *_URL variables. */
async function main(): Promise<void> {
  const config = loadGatewayConfig();
  const logger = createLogger({ service: 'gateway', level: config.logLevel, pretty: config.logPretty });
  const gateway = buildGateway(config, { logger });
  await gateway.start();
  const port = await gateway.listen();
  logger.info('gateway listening', { port });
  onShutdownSignal(logger, () => gateway.stop());
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

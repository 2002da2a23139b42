import 'reflect-metadata';
import { createLogger, onShutdownSignal } from '@polyphony/platform';
import { buildGateway } from './app';
import { loadGatewayConfig } from './config';

/** Distributed mode: the gateway on its own, in front of the services named by *_URL variables. */
async function main(): Promise<void> {
  const config = loadGatewayConfig(undefined, 'distributed');
  const logger = createLogger({ service: 'gateway', level: config.logLevel, pretty: config.logPretty });
  const gateway = buildGateway(config, { logger });
  await gateway.start();
  // Several gateway replicas must sign sessions with one key: a per-process random key would make a
  // session valid on one replica only. Refuse to serve instead.
  if (gateway.auth.sessionKeyIsEphemeral) {
    await gateway.stop();
    throw new Error('gateway: JWT_SECRET is required in the distributed mode (set it once, 32+ random characters; it is stored in auth.settings on first start and shared by every replica).');
  }
  const port = await gateway.listen();
  logger.info('gateway listening', { port });
  onShutdownSignal(logger, () => gateway.stop());
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

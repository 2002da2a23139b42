import { randomBytes } from 'node:crypto';
import { buildAnalysis, loadAnalysisConfig } from '@polyphony/analysis-worker';
import { buildCatalogue, loadCatalogueConfig } from '@polyphony/catalogue-identity';
import { buildGateway, loadGatewayConfig, type Gateway } from '@polyphony/gateway';
import { buildIndex, loadIndexConfig } from '@polyphony/index';
import { busNamespace, createBus, type Bus, type Logger, type PeerName } from '@polyphony/platform';
import { buildPlaylist, loadPlaylistConfig } from '@polyphony/playlist';
import { buildRegistry, loadRegistryConfig } from '@polyphony/registry';

interface Unit {
  name: string;
  start(): Promise<void>;
  listen(port?: number, host?: string): Promise<number>;
  stop(): Promise<void>;
}

export interface StackOptions {
  databaseUrl: string;
  amqpUrl?: string;
  /** Gateway port (0 = any). */
  port: number;
  host?: string;
  /** Environment (first-boot seeds such as SERVICE_USER, API_TOKEN, JWT_SECRET). */
  env: Record<string, string | undefined>;
  logger: Logger;
  /**
   * Namespace of exchanges and queues on a shared broker (tests run several stacks against one
   * RabbitMQ). Empty in production.
   */
  busNamespace?: string;
  /** Services run in this process (default all); the others run elsewhere (fault tests run analysis workers as their own processes). */
  units?: PeerName[];
}

/**
 * Every unit in one process, one code path with the distributed mode: each service is built by its
 * own composition root, listens on a loopback port, and the gateway proxies to those ports. One bus
 * is shared (in-process unless AMQP_URL is given), migrations are applied at start.
 */
export async function startStack(options: StackOptions) {
  const internalSecret = randomBytes(32).toString('hex');
  const env = { ...options.env, DATABASE_URL: options.databaseUrl, AMQP_URL: options.amqpUrl, INTERNAL_SECRET: internalSecret, PORT: '0' };
  const ns = busNamespace(options.busNamespace);
  const bus: Bus = createBus({ amqpUrl: options.amqpUrl, logger: options.logger.child({ component: 'bus' }), ...ns.exchangeOptions });
  const ports: Partial<Record<PeerName, number>> = {};
  const peers = () => {
    const url = (p: PeerName) => `http://127.0.0.1:${ports[p] ?? 0}`;
    return { registry: url('registry'), catalogue: url('catalogue'), analysis: url('analysis'), index: url('index'), playlist: url('playlist') };
  };
  const common = { bus, peers, migrateOnStart: true, queuePrefix: ns.queuePrefix };
  const units: Array<[PeerName, Unit]> = [
    ['registry', buildRegistry(loadRegistryConfig(env), { ...common, logger: options.logger.child({ service: 'registry' }) })],
    ['catalogue', buildCatalogue(loadCatalogueConfig(env), { ...common, logger: options.logger.child({ service: 'catalogue-identity' }) })],
    ['index', buildIndex(loadIndexConfig(env), { ...common, logger: options.logger.child({ service: 'index' }) })],
    ['analysis', buildAnalysis(loadAnalysisConfig(env), { ...common, logger: options.logger.child({ service: 'analysis-worker' }) })],
    ['playlist', buildPlaylist(loadPlaylistConfig(env), { ...common, logger: options.logger.child({ service: 'playlist' }) })],
  ];
  if (options.units) {
    const keep = new Set(options.units);
    units.splice(0, units.length, ...units.filter(([peer]) => keep.has(peer)));
  }
  for (const [peer, unit] of units) ports[peer] = await unit.listen(0, '127.0.0.1');
  const started: Unit[] = [];
  let gateway: Gateway | undefined;
  const stop = async () => {
    if (gateway) await gateway.stop();
    for (const unit of started.reverse()) await unit.stop();
    await bus.close();
  };
  try {
    for (const [, unit] of units) {
      await unit.start();
      started.push(unit);
    }
    gateway = buildGateway(loadGatewayConfig({ ...env, PORT: String(options.port) }), { logger: options.logger.child({ service: 'gateway' }), targets: peers, migrateOnStart: true });
    await gateway.start();
    const port = await gateway.listen(options.port, options.host ?? '0.0.0.0');
    // `units`: each service's composition root by name (tests reach a service's internals through it, e.g. to stop
    // the index service's recording match thread as a crash would).
    return { port, gateway, bus, stop, peers, internalSecret, units: Object.fromEntries(units) as Partial<Record<PeerName, Unit>> };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}
export type Stack = Awaited<ReturnType<typeof startStack>>;

import { ServiceRuntime, type ConsumerHandle, type RuntimeDeps } from '@polyphony/platform';
import { consumeServerCounts } from './bus/server-counts.consumer';
import { consumeTaskUpdates } from './bus/task-updated.consumer';
import { GENERAL_CONFIG_KEYS, type RegistryConfig } from './config';
import { ConfigService } from './domain/config.service';
import { PlexLinkService } from './domain/plex-link.service';
import { ServerService, type ClientFactory } from './domain/server.service';
import { serverRoutes } from './http/servers.routes';
import { taskRoutes } from './http/tasks.routes';
import { registryMigrations } from './store/migrations';
import { ServerRepository } from './store/server.repository';
import { TaskRepository } from './store/task.repository';

export interface RegistryDeps extends RuntimeDeps {
  clientFactory?: ClientFactory;
}

/** Composition root of the registry service: server registry, config store, Plex linking, task board. */
export function buildRegistry(config: RegistryConfig, deps: RegistryDeps = {}) {
  const rt = new ServiceRuntime(config, registryMigrations, deps);
  const serverRepo = new ServerRepository(rt.ds);
  const tasks = new TaskRepository(rt.ds);
  const servers = new ServerService(serverRepo, rt.bus, rt.logger.child({ component: 'ServerService' }), deps.clientFactory);
  const configService = new ConfigService(rt.ds, serverRepo, rt.logger.child({ component: 'ConfigService' }));
  const plex = new PlexLinkService(async () => (await configService.all()).PLEX_TV_URL ?? 'https://plex.tv');
  rt.app.use(serverRoutes(servers, configService, plex));
  rt.app.use(taskRoutes(tasks, rt.bus));
  rt.finishRoutes();

  const consumers: ConsumerHandle[] = [];
  rt.onStart(async () => {
    await configService.migrateAtStart(config.seedEnv, GENERAL_CONFIG_KEYS);
    consumers.push(await consumeTaskUpdates(rt.bus, tasks, config.busPrefetch));
    consumers.push(await consumeServerCounts(rt.bus, serverRepo, config.busPrefetch));
  });
  rt.onStop(async () => {
    for (const c of consumers) await c.stop();
  });
  return { name: 'registry', runtime: rt, http: rt.app, servers, tasks, configService, start: () => rt.start(), stop: () => rt.stop(), listen: (port?: number, host?: string) => rt.listen(port, host) };
}
export type Registry = ReturnType<typeof buildRegistry>;

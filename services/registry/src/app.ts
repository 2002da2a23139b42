import { APP_VERSION, type RouteDef, type ScheduleKind, api, routesOf, z } from '@polyphony/contracts';
import { PeerClient, ServiceRuntime, type ConsumerHandle, type PeerName, type RuntimeDeps, mountRoutes, type RouteHandlers } from '@polyphony/platform';
import { createMediaServerClient, signInWithPassword } from '@polyphony/media-servers';
import { consumeServerCounts } from './bus/server-counts.consumer';
import { consumeTaskUpdates } from './bus/task-updated.consumer';
import { GENERAL_CONFIG_KEYS, type RegistryConfig } from './config';
import { AccountService } from './domain/account.service';
import { ConfigService } from './domain/config.service';
import { BackupService } from './domain/backup.service';
import { BrowseService } from './domain/browse.service';
import { DashboardService } from './domain/dashboard.service';
import { DeadLetterService } from './domain/dead-letters.service';
import { PlexLinkService } from './domain/plex-link.service';
import { ScheduleService } from './domain/schedule.service';
import { SettingsService } from './domain/settings.service';
import { ServerService, type ClientFactory, type SignInFunction } from './domain/server.service';
import { TaskBoardService } from './domain/task-board.service';
import { accountRoutes } from './http/accounts.routes';
import { opsRoutesRouter } from './http/ops.routes';
import { probeRoutesRouter } from './http/probes.routes';
import { dashboardRoutes } from './http/dashboard.routes';
import { serverRoutes } from './http/servers.routes';
import { taskRoutes } from './http/tasks.routes';
import { PgBackupRepository } from './store/backup.repository';
import { PgConfigRepository } from './store/config.repository';
import { registryMigrations } from './store/migrations';
import { PgScheduleRepository } from './store/schedule.repository';
import { PgSettingsRepository } from './store/settings.repository';
import { ServerRepository } from './store/server.repository';
import { TaskRepository } from './store/task.repository';
import { PgUserAccountRepository } from './store/user-account.repository';

/** Where a scheduled kind is started (the owning service's public start route, from the route table). */
const SCHEDULED_STARTS: Record<Exclude<ScheduleKind, 'backup' | 'sweep' | 'album_of_the_week'>, { route: RouteDef; body?: Record<string, unknown> }> = {
  analysis: { route: api.tasks.analysisStart },
  clustering: { route: api.playlists.clusteringStart },
  cleaning: { route: api.tasks.cleaningStart },
  index_rebuild: { route: api.features.rebuild },
  // The radio run answers 202 with its task id at once (the API's default waits for the summary).
  radios: { route: api.anchors.runRadios, body: { wait: false } },
};

/** What the scheduler reads of a start answer: the started task's id (absent when nothing started). */
const StartedTask = z.object({ task_id: z.string().optional() }).passthrough().optional();

/** Task-board types that make a schedule of a kind skip ("skipped: busy"). */
const BUSY_TYPES: Record<ScheduleKind, string[]> = {
  analysis: ['analysis'],
  clustering: ['clustering'],
  cleaning: ['cleaning'],
  sweep: ['sweep', 'alignment'],
  radios: ['radios'],
  index_rebuild: ['index_build'],
  backup: ['backup', 'restore'],
  // Runs inside the start call (no task on the board): never busy.
  album_of_the_week: [],
};

export interface RegistryDeps extends RuntimeDeps {
  clientFactory?: ClientFactory;
  signIn?: SignInFunction;
}

/** Composition root of the registry service: server registry, config store, Plex linking, task board. */
export function buildRegistry(config: RegistryConfig, deps: RegistryDeps = {}) {
  const rt = new ServiceRuntime(config, registryMigrations, deps);
  const serverRepo = new ServerRepository(rt.ds);
  const tasks = new TaskRepository(rt.ds);
  const clientFactory: ClientFactory = deps.clientFactory ?? createMediaServerClient;
  const signIn: SignInFunction = deps.signIn ?? signInWithPassword;
  const servers = new ServerService(serverRepo, rt.bus, rt.logger.child({ component: 'ServerService' }), clientFactory, signIn);
  const settings = new SettingsService(new PgSettingsRepository(rt.ds), rt.bus, rt.logger.child({ component: 'SettingsService' }));
  const configService = new ConfigService(new PgConfigRepository(rt.ds, serverRepo), serverRepo, rt.logger.child({ component: 'ConfigService' }), (owner) => settings.valuesOf(owner));
  const plex = new PlexLinkService(async () => (await configService.all()).PLEX_TV_URL ?? 'https://plex.tv');
  const backupRepo = new PgBackupRepository(rt.ds);
  const backups = new BackupService(backupRepo, tasks, { dir: config.backupDir, appVersion: APP_VERSION /* version written into backup headers */, requestIndexRebuild: async () => (await rt.peer('index').callAs(api.features.rebuild, StartedTask, { body: {} }))?.task_id ?? null }, rt.logger.child({ component: 'BackupService' }));
  const startTask = async (kind: ScheduleKind, params: Record<string, unknown>): Promise<string | null> => {
    if (kind === 'backup') return (await backups.start({ keep: typeof params.keep === 'number' ? params.keep : undefined })).task_id;
    if (kind === 'sweep') return servers.requestAlignment(false);
    if (kind === 'album_of_the_week') {
      // Answers once every server's playlist is written (one album per server: seconds), without a task id;
      // a run that wrote no playlist at all is recorded as failed with the servers' reasons.
      const run = await rt.peer('index', 120_000).call(api.album.weeklyRun, { body: {} });
      if (run.status === 'FAILURE') throw new Error(`Album of the Week wrote no playlist: ${run.servers.map((x) => `${x.server_name}: ${x.error}`).join('; ') || 'no server configured'}`);
      return null;
    }
    const target = SCHEDULED_STARTS[kind];
    const answer = await rt.peer(target.route.service as PeerName).callAs(target.route, StartedTask, { body: { ...params, ...target.body } });
    return answer?.task_id ?? null;
  };
  const busy = async (kind: ScheduleKind) => (await tasks.active()).some((t) => BUSY_TYPES[kind].includes(t.type));
  const schedules = new ScheduleService(new PgScheduleRepository(rt.ds), startTask, busy, rt.logger.child({ component: 'Scheduler' }));
  const routeSets: RouteHandlers[] = [];
  routeSets.push(serverRoutes(servers, plex));
  const accounts = new AccountService(new PgUserAccountRepository(rt.ds), servers, plex, clientFactory, signIn, rt.logger.child({ component: 'AccountService' }));
  routeSets.push(accountRoutes(accounts));
  // The learned-model status shown with /api/config (analysis worker GET /api/analysis/model), cached 10 s.
  // Fail fast (no retries): a missing worker is reported as 'unknown', not waited for. Passed through as answered.
  const analysisPeer = new PeerClient(rt.client('analysis', 2000), 'analysis', { maxAttempts: 0 });
  let learnedCache: { at: number; value: unknown } | undefined;
  const learnedModel = async (): Promise<unknown> => {
    if (learnedCache && Date.now() - learnedCache.at < 10_000) return learnedCache.value;
    const value = await analysisPeer.callAs(api.tasks.analysisModel, z.unknown()).catch(() => ({ status: 'unknown', reason: 'the analysis worker did not answer' }));
    learnedCache = { at: Date.now(), value };
    return value;
  };
  routeSets.push(probeRoutesRouter(servers, configService, learnedModel, () => settings.list()));
  routeSets.push(taskRoutes(new TaskBoardService(tasks, rt.bus), new DeadLetterService(rt.bus)));
  routeSets.push(opsRoutesRouter(schedules, backups, settings));
  const dashboard = new DashboardService(serverRepo, tasks, rt.peer('catalogue', 15_000), rt.peer('index', 15_000), rt.peer('analysis', 15_000), rt.logger.child({ component: 'DashboardService' }));
  routeSets.push(dashboardRoutes(dashboard, new BrowseService(serverRepo, rt.peer('catalogue', 15_000), rt.peer('analysis', 15_000))));
  // Every route this service owns in the contracts table, with its handler (throws when one is missing).
  mountRoutes(rt.app, routesOf('registry'), routeSets);
  rt.finishRoutes();

  const consumers: ConsumerHandle[] = [];
  rt.onStart(async () => {
    await configService.migrateAtStart(config.seedEnv, GENERAL_CONFIG_KEYS);
    // After the env import: the built-in cleaning schedule is converted from CLEANING_SCHEDULE_HOURS once per install.
    const zone = config.seedEnv.TZ || Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
    await schedules.seedDefaults(zone);
    await schedules.seedAlbumOfTheWeek(zone);
    consumers.push(await consumeTaskUpdates(rt.bus, tasks, config.busPrefetch));
    consumers.push(await consumeServerCounts(rt.bus, serverRepo, config.busPrefetch));
    await backupRepo.failAbandoned();
    schedules.startLoop(config.schedulerTickMs);
  });
  rt.onStop(async () => {
    await schedules.stopLoop();
    await backups.idle();
    for (const c of consumers) await c.stop();
  });
  return { name: 'registry', runtime: rt, http: rt.app, servers, tasks, configService, schedules, backups, start: () => rt.start(), stop: () => rt.stop(), listen: (port?: number, host?: string) => rt.listen(port, host) };
}
export type Registry = ReturnType<typeof buildRegistry>;

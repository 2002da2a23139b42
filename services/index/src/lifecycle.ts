import { RoutingKeys, TaskCancelRequestedEvent, type IndexRebuilt } from '@polyphony/contracts';
import type { ConsumerHandle, ServiceRuntime } from '@polyphony/platform';
import type { RadioService } from './alchemy/radio.service';
import type { IndexState } from './core/generation';
import type { ServerInfoCache } from './core/server-info';
import { consumeRelabels } from './generation/ids-relabelled.consumer';
import { consumeRebuildRequests } from './generation/rebuild-requested.consumer';
import type { RebuildService } from './generation/rebuild.service';
import { consumeReplicaEvents, replicaQueueName } from './generation/replica.consumer';
import type { ReplicaReporter } from './generation/replica-reporter';
import type { RepointService } from './generation/repoint.service';
import type { MapFollower } from './maps/generation-maps';
import { consumeLiveLibrary } from './generation/live/live-library.consumer';
import type { LiveLibraryService } from './generation/live/live-library.service';

/** What the index replica's start and stop act on. */
export interface ReplicaLifecycleDeps {
  rt: ServiceRuntime;
  state: IndexState;
  maps: MapFollower;
  rebuild: RebuildService;
  repoint: RepointService;
  servers: ServerInfoCache;
  radios: RadioService;
  reporter: ReplicaReporter;
  /** Request a build at start when the database holds no live generation (default true). */
  rebuildOnStart?: boolean;
  /** Safety poll of the catalogue's mapping log when no nudge arrives, ms (default 5000; 0 = off). */
  mapPollMs?: number;
  /** The live library (new songs added in place); its catch-up also runs on the mapping safety poll. */
  live?: LiveLibraryService;
}

/**
 * Start and stop of one index replica, registered on the runtime (`rt.onStart`, `rt.onStop`): subscribe to
 * replica events (mapping nudges, generations published elsewhere, server changes), load the live generation,
 * consume rebuild requests, relabels and radio / build cancels, scan for radio runs and builds to take over, request a build when
 * none is stored or one was interrupted, then report readiness and heartbeats; stopping turns readiness off first.
 * @returns `isReady`: false until the generation and its maps are loaded; false again once stopping
 */
export function attachReplicaLifecycle(d: ReplicaLifecycleDeps): { isReady: () => boolean } {
  const { rt, state, maps, rebuild, repoint, servers, radios, reporter, live } = d;
  const consumers: ConsumerHandle[] = [];
  const log = rt.logger.child({ component: 'replica' });
  // Readiness (issue 19): the stored generation is loaded (or none exists) and its maps were caught up with
  // the catalogue's mapping log at least once. Stopping turns it off first, so balancers drain this replica.
  let ready = false;
  rt.addReadiness('index', () => ready);
  const catchUp = async (): Promise<void> => {
    await maps.catchUp(state.current().maps);
  };
  let pollTimer: NodeJS.Timeout | undefined;
  rt.onStart(async () => {
    // Where a start's time goes (logged once ready): process start -> this hook, then each step, ms.
    const steps: Record<string, number> = { sinceProcessStart: Math.round(process.uptime() * 1000) };
    let tStep = performance.now();
    const step = (name: string) => {
      const now = performance.now();
      steps[name] = Math.round(now - tStep);
      tStep = now;
    };
    // Subscribe before loading, so no change logged during the load is missed (catch-ups are idempotent).
    consumers.push(
      await consumeReplicaEvents(
        rt.bus,
        replicaQueueName(),
        {
          mappingsChanged: catchUp,
          generationPublished: async (event: IndexRebuilt) => {
            if (event.generation === state.current().generation && !event.repointed) {
              // Built here: the batches its activation carried over from the previous generation (songs its snapshot missed).
              await live?.catchUp();
              return;
            }
            if (rebuild.busy && event.generation <= state.current().generation) return;
            log.info('generation published by another replica; loading it', { generation: event.generation, serving: state.current().generation });
            await rebuild.loadLive({ markInterrupted: false });
            await live?.catchUp();
          },
          serverChanged: (serverId) => servers.invalidate(serverId),
          deltaApplied: async () => {
            await live?.catchUp();
          },
        },
        log,
      ),
    );
    step('subscribe');
    const { loaded, interrupted } = await rebuild.loadLive();
    step('load');
    // The live library's stored batches of that generation, before this replica turns ready.
    if (loaded) await live?.catchUp();
    step('liveCatchUp');
    consumers.push(await consumeRebuildRequests(rt.bus, rebuild));
    if (live) consumers.push(await consumeLiveLibrary(rt.bus, live));
    consumers.push(
      await consumeRelabels(rt.bus, rebuild, repoint, async () => {
        const g = state.current();
        await rt.bus.publish(RoutingKeys.indexRebuilt, { generation: g.generation, items: g.index.size, repointed: true } satisfies IndexRebuilt);
      }),
    );
    // Radio runs and index builds: cancel requests from the task board, and takeover of runs whose coordinator died.
    consumers.push(
      await rt.bus.consume({
        queue: 'index.task-cancel',
        bindings: [RoutingKeys.taskCancelRequested],
        schema: TaskCancelRequestedEvent,
        handler: async (e) => {
          if (e.type === 'radios') await radios.cancel(e.taskId);
          else if (e.type === 'index_build') await rebuild.cancel(e.taskId);
        },
      }),
    );
    radios.host.startScanning();
    // Index builds: a queued build, or one whose replica stopped, is claimed here (takeover) when none runs.
    rebuild.startScanning();
    step('consumers');
    if ((!loaded || interrupted > 0) && d.rebuildOnStart !== false) {
      await rebuild.request(loaded ? 'a build was interrupted by a restart' : 'start-up: no stored index generation');
    }
    if (!loaded) await catchUp().catch((err: unknown) => log.warn('mapping catch-up failed', { err: (err as Error).message }));
    ready = true;
    step('mapCatchUp');
    log.info('index replica ready', { generation: state.current().generation, items: state.current().index.size, ms: steps });
    // Reported only once serving: a replica that is not ready takes no queries, so no run waits for it.
    await reporter.start();
    const pollMs = d.mapPollMs ?? 5000;
    if (pollMs > 0) {
      pollTimer = setInterval(() => {
        void catchUp().catch((err: unknown) => log.warn('mapping catch-up failed', { err: (err as Error).message }));
        void live?.catchUp();
      }, pollMs);
      pollTimer.unref();
    }
  });
  rt.onStop(async () => {
    ready = false;
    await reporter.stop();
    if (pollTimer) clearInterval(pollTimer);
    live?.stop();
    for (const c of consumers) await c.stop();
    await radios.host.stop();
    await rebuild.stop();
  });
  return { isReady: () => ready };
}

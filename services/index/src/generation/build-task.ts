import { RoutingKeys, type IndexRebuilt } from '@polyphony/contracts';
import { LeaseLostError, type Bus, type Logger, type TaskContext, type TaskEnd, type TaskExecutor } from '@polyphony/platform';
import { drainKernelMemoryPool } from '@polyphony/vector-engine';
import type { VectorStoreSettings } from '../config';
import type { IndexState } from '../core/generation';
import type { CataloguePort } from '../core/ports';
import type { MapFollower } from '../maps/generation-maps';
import { BuildRun, type BuildSettings, type RebuildOutcome } from './build-run';
import { guardHeap } from './heap-guard';
import { LIVE_DRIFT_REASON } from './live/drift';
import type { FeedBase, FeedBaseHolder } from './snapshot-delta';
import type { BuildQueue, GenerationStore, TrackCopy } from './ports';

/** The working state of one coordination of a build run. */
export interface BuildWork {
  reasons: string[];
  /** Task ids of the requesters (e.g. the analysis or cleaning task), echoed in index.rebuild.completed.v1. */
  requesters: string[];
  /** The generation this coordination builds (`index.builds`), once created. */
  generation?: number;
  /** Whether the covering check (first step) ran. */
  checked: boolean;
}

/** What the build executor uses of its service. */
export interface BuildTaskDeps {
  catalogue: CataloguePort;
  tracks: TrackCopy;
  generations: GenerationStore;
  queue: BuildQueue;
  state: IndexState;
  maps: MapFollower;
  bus: Bus;
  logger: Logger;
  vectors: VectorStoreSettings;
  settings: BuildSettings;
  /** A build stops (HeapLimitError, run FAIL, previous generation live) when used heap / heap limit passes this (`guardHeap`). */
  heapFraction: number;
  /** Loads the live generation from the database (after a covering build of another replica). */
  loadLive(): Promise<unknown>;
  /** Told the outcome of every build that ran here (status, benchmarks). */
  ended(outcome: { ok: RebuildOutcome } | { error: string }): void;
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/**
 * The index build as a platform task executor (issue 29; task type `index_build`, table `index.build_runs`):
 * - `start`: reads the run's reasons and requesters; a run taken over from a coordinator that stopped marks that
 *   coordinator's unfinished generation failed (its rows go with the next activation) and builds from the start:
 *   a build keeps its work in memory, so a takeover restarts it rather than resuming a phase;
 * - step 1, covering: when the live generation's build started at or after the run's last request (another
 *   replica's build, or the previous coordinator's that activated before it stopped), that generation is loaded
 *   if this replica does not serve it, the requesters are told, and the run ends SUCCESS without building;
 * - step 2, the build (`BuildRun`: snapshot, IVF build, map, artists, quantisation, activation fenced by the run's
 *   lease), then `index.rebuild.completed.v1` for every requester (one without a task id when there is none).
 *   A failed build ends the run FAIL (the previous generation stays live); a lost lease, a cancel or a shutdown
 *   stops it (the host hands the lease back on shutdown, and a replica takes the run over);
 * - `cancel`: the unfinished generation is marked failed.
 */
export class BuildTaskExecutor implements TaskExecutor<BuildWork> {
  /**
   * The change-feed base of the generation the last build made live (snapshot-delta.ts): memory only, so the first build
   * after a start (or after a build that could not record one) reads the full snapshot.
   */
  private readonly feedBase: FeedBaseHolder = (() => {
    let base: FeedBase | undefined;
    return { get: () => base, set: (b) => void (base = b) };
  })();

  constructor(private readonly d: BuildTaskDeps) {}

  async start(ctx: TaskContext): Promise<BuildWork> {
    const details = ctx.run.details;
    const work: BuildWork = { reasons: strings(details.reasons), requesters: strings(details.requesters), checked: false };
    const earlier = typeof details.generation === 'number' ? details.generation : undefined;
    if (ctx.resumed && earlier !== undefined) {
      await this.d.generations.markFailed(earlier, 'interrupted: the replica building it stopped; the run builds again');
      ctx.note(`generation ${earlier} of the previous coordinator abandoned; building again`);
    }
    return work;
  }

  async step(work: BuildWork, ctx: TaskContext): Promise<TaskEnd | undefined> {
    if (!work.checked) {
      work.checked = true;
      return this.covered(work, ctx);
    }
    return this.build(work, ctx);
  }

  async cancel(work: BuildWork, ctx: TaskContext): Promise<void> {
    if (work.generation !== undefined) await this.d.generations.markFailed(work.generation, 'cancelled').catch(() => undefined);
    ctx.note('cancelled; the previous generation stays live');
    this.d.ended({ error: 'cancelled' });
  }

  /** Step 1: ends the run when a build that started after its last request is live already. */
  private async covered(work: BuildWork, ctx: TaskContext): Promise<TaskEnd | undefined> {
    const covering = await this.d.queue.coveringGeneration(ctx.run.id);
    if (covering === undefined) return undefined;
    if (this.d.state.current().generation !== covering) await this.d.loadLive();
    const items = this.d.state.current().index.size;
    // Requesters waiting for index.rebuild.completed.v1 with their task id still get it.
    for (const taskId of work.requesters) await this.publish(RoutingKeys.indexRebuilt, { generation: covering, items, taskId } satisfies IndexRebuilt);
    ctx.note(`served by generation ${covering}, whose build started after this request`);
    return { state: 'SUCCESS', message: `index rebuilt (generation ${covering}, a build that started after this request)`, details: { generation: covering, coveredBy: covering } };
  }

  /** Step 2: one build of a new generation. */
  private async build(work: BuildWork, ctx: TaskContext): Promise<TaskEnd> {
    const d = this.d;
    await ctx.report({ message: 'reading the catalogue snapshot', progress: 0 });
    // A build that would exhaust the heap stops with a HeapLimitError instead of V8 ending the process (issue 36):
    // its signal follows the run's (cancel, lost lease, shutdown) and also fires past the heap fraction.
    const heap = guardHeap(ctx.signal, { fraction: d.heapFraction });
    try {
      work.generation = await d.generations.createBuild(ctx.run.id, work.reasons.join('; '));
      await ctx.report({ message: 'reading the catalogue snapshot', progress: 1, details: { generation: work.generation } });
      const run = new BuildRun(
        {
          catalogue: d.catalogue,
          tracks: d.tracks,
          generations: d.generations,
          state: d.state,
          maps: d.maps,
          logger: d.logger,
          vectors: d.vectors,
          settings: d.settings,
          // A build the live library asked for because of measured drift trains afresh (nothing kept).
          fresh: work.reasons.some((r) => r.startsWith(LIVE_DRIFT_REASON)),
          feedBase: this.feedBase,
          fence: ctx.lease,
          note: (line) => ctx.note(line),
          // Progress is informative: a write refused (lease lost) stops the build through ctx.signal instead.
          progress: (percent, message) =>
            ctx.report({ message, progress: percent }).then(
              () => undefined,
              (err: unknown) => {
                if (!(err instanceof LeaseLostError)) d.logger.warn('index build progress not written', { err: (err as Error).message });
              },
            ),
        },
        work.generation,
        heap.signal,
      );
      const outcome = await run.run().catch((err: unknown) => {
        throw heap.tripped() ?? err;
      });
      d.ended({ ok: outcome });
      for (const taskId of work.requesters.length ? work.requesters : [undefined]) {
        await this.publish(RoutingKeys.indexRebuilt, { generation: outcome.generation, items: outcome.items, ...(taskId ? { taskId } : {}) } satisfies IndexRebuilt);
      }
      ctx.note(`generation ${outcome.generation} live: ${outcome.items} songs, ${outcome.nlist} cells, ${Math.round(outcome.timingsMs.total)} ms`);
      return { state: 'SUCCESS', message: 'index rebuilt', details: { ...outcome } };
    } catch (err) {
      const message = (err as Error).message ?? String(err);
      d.ended({ error: message });
      // Stopped (lease lost, cancelled, shutting down): the host ends this coordination; a takeover builds again.
      if (ctx.signal.aborted || err instanceof LeaseLostError) throw err;
      d.logger.error('index build failed', { taskId: ctx.run.id, generation: work.generation, err: message });
      if (work.generation !== undefined) await d.generations.markFailed(work.generation, message).catch(() => undefined);
      ctx.note(`failed: ${message}`);
      return { state: 'FAIL', message: `index build failed: ${message}`.slice(0, 500) };
    } finally {
      heap.stop();
      // The build's kernel memories (k-means in this thread) go back to the OS instead of staying pooled (issue 35).
      drainKernelMemoryPool();
    }
  }

  /** Bus failures never fail a build: the index is what matters, the events are informative. */
  private async publish(key: string, payload: unknown): Promise<void> {
    try {
      await this.d.bus.publish(key, payload);
    } catch (err) {
      this.d.logger.warn('bus publish failed', { key, err: (err as Error).message });
    }
  }
}
